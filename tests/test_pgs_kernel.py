"""The Pallas PGS kernel (``jaxmor.sim.pgs_kernel``, interpret mode) against the solver's XLA sweeps.

Reference: ``jax.vmap`` of :func:`jaxmor.sim.solver.solve_all` with its sweeps done by the XLA loops,
:func:`jaxmor.sim.solver._xla_iterate` (``fori_loop`` trips of :func:`jaxmor.sim.solver._sweep`), on problems of
real steps: the shipped quadruped on the ground, three worlds from its standing pose with different heights and
velocities, after a few steps (warm starts from the last step's impulses; feet resting and in the air). The
kernel path is the same ``solve_all`` with :func:`jaxmor.sim.solver._iterate` replaced by
:func:`jaxmor.sim.pgs_kernel.iterate` (interpret mode), so both see identical inputs (the same inverse
diagonal and tangential eigenvalues) and only the sweeps differ.

Sizes: the tests keep the principal sub-problem of three contact slots (two of the most loaded, one
inactive) and three joints of each real problem (12 velocity rows, 6 position rows): the same rows,
entries and laws, fewer of them, so that the reference's compile (its rows unrolled) stays short; the
full problems were measured the same way (figures below, docs/design/pgs-kernel.md).

Tolerance. Both paths perform the same row updates in the same order on the same numbers; they differ
only in how a few sums are associated (the start velocity ``A lam + b``, a contact's three-column update),
each off by a few roundings ``eps`` of its terms, which the sweeps carry along without amplifying them.
Measured (largest difference over all impulses of a kind, in eps of that kind's largest impulse): at most
1.7 here, 7.3 (float32) and 1.7 (float64) on the full 36- and 20-row problems; ``TOL_EPS = 16``. What a
wrong sweep does, measured with the contacts swept in reverse order: 500-11,000 eps in float32 and above
1e11 in float64. Converged sweeps forget the order (the velocity problem after its 20 warm-started sweeps
moved by under 1 eps in float32), so a second case starts from zero impulses and stops after 3 and 2
sweeps, where every row's update still shows.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.sim import pgs_kernel, solver
from jaxmor.sim.constraint import Impulses, Problem
from jaxmor.sim.pipeline import stages

#: Agreement in units of the dtype's machine epsilon times the largest impulse (module docstring).
TOL_EPS = 16
#: Joints kept in the sub-problems (one leg's hip, thigh and knee).
JOINTS = (0, 1, 2)


def _sub_problem(p: Problem, slots, joints) -> Problem:
    """The principal sub-problem of contact ``slots`` and ``joints`` (arrays with a leading world axis)."""
    m, nc = p.rows_per_contact, p.contact_target.shape[1]
    rows = np.array([m * k + j for k in slots for j in range(m)] + [m * nc + i for i in joints])
    s, j = np.array(slots), np.array(joints)
    return Problem(
        delassus=p.delassus[:, rows[:, None], rows[None, :]],
        free_velocity=p.free_velocity[:, rows],
        contact_target=p.contact_target[:, s],
        friction=p.friction[:, s],
        friction_bound=p.friction_bound[:, j],
        limit_low=p.limit_low[:, j],
        limit_high=p.limit_high[:, j],
        rows_per_contact=m,
    )


@pytest.fixture(scope="module")
def step_problems(quadruped_ground):
    """(velocity problem, position problem, warm start, sweep counts) of three worlds' real steps, float64."""
    model = quadruped_ground
    q0 = np.asarray(jaxmor.robots.quadruped_standing_q(model))
    rng = np.random.default_rng(7)
    qs = np.stack([q0 + np.eye(model.nq)[2] * dz for dz in (-0.004, 0.0, 0.01)])
    us = rng.normal(0.0, 0.3, (3, model.nv))
    states = jax.vmap(lambda q, u: jaxmor.init_state(model, q=q, u=u))(jnp.asarray(qs), jnp.asarray(us))

    @jax.jit
    def advance(s):
        return jax.vmap(lambda w: (jaxmor.step(model, w), stages(model, w).constraints))(s)

    for _ in range(4):
        states, cons = advance(states)
    loaded = np.argsort(-np.asarray(cons.start.contact[:, :, 0]).mean(axis=0))
    slots = (int(loaded[0]), int(loaded[1]), int(loaded[-1]))
    velocity, position = (_sub_problem(p, slots, JOINTS) for p in (cons.velocity, cons.position))
    start = Impulses(
        cons.start.contact[:, slots, :],
        cons.start.friction[:, JOINTS],
        cons.start.limit[:, JOINTS],
        cons.start.equality,
    )
    counts = (model.opt.solver_iterations, model.opt.position_iterations)
    return velocity, position, start, counts


def _solve(iterate, velocity, position, start, counts):
    """``jax.vmap`` of ``solve_all`` on both problems with the solver's sweeps replaced by ``iterate``."""
    saved = solver._iterate
    solver._iterate = iterate
    try:
        fn = jax.jit(jax.vmap(lambda v, p, s: solver.solve_all((v, p), (s, p.zero_impulses()), counts)))
        return fn(velocity, position, start)
    finally:
        solver._iterate = saved


def _interpreted(counts, params, x0):
    return pgs_kernel.iterate(counts, params, x0, interpret=True)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
@pytest.mark.parametrize("warm", [True, False], ids=["warm-model-sweeps", "cold-3-2-sweeps"])
def test_the_kernel_sweeps_equal_the_xla_sweeps_on_real_steps(step_problems, dtype, warm):
    """Every impulse of both problems (velocity: contacts, joint friction and limits; position: normals
    and limits) equals the XLA sweeps' to ``TOL_EPS`` eps of the largest impulse of its kind: from the
    step's warm start with the model's sweep counts, and from zero with 3 and 2 sweeps."""
    velocity, position, start = jax.tree.map(lambda x: x.astype(dtype), step_problems[:3])
    counts = step_problems[3] if warm else (3, 2)
    if warm:
        assert np.asarray(start.contact[:, :, 0]).max() > 0  # warm starts of resting feet: live contacts
    else:
        start = jax.tree.map(jnp.zeros_like, start)
    want = _solve(solver._xla_iterate, velocity, position, start, counts)
    got = _solve(_interpreted, velocity, position, start, counts)
    eps = float(jnp.finfo(dtype).eps)
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
        assert g.dtype == dtype and g.shape == w.shape
        if w.size == 0:  # the quadruped has no equality constraints
            continue
        scale = max(float(np.abs(w).max()), float(np.finfo(dtype).tiny))
        np.testing.assert_allclose(g, w, rtol=0, atol=TOL_EPS * eps * scale)
    normal = np.asarray(want[0].contact[:, :, 0])
    assert normal.max() > 0 and (normal == 0).any()  # both active and inactive contacts were exercised


def test_one_world_without_vmap_is_a_batch_of_one(step_problems):
    """``iterate`` on one world's unbatched arrays (no ``vmap``) gives that world's impulses of the batch."""
    velocity, position, start, counts = step_problems
    params, x0 = [], []
    for p, s in ((velocity, start), (position, None)):
        one = jax.tree.map(lambda x: x[0], p)
        warm = jax.tree.map(lambda x: x[0], s) if s is not None else one.zero_impulses()
        params.append(solver._rows_of(one))
        x0.append(one.start(warm))
    want = jax.jit(lambda p, x: solver._xla_iterate(counts, p, x))(tuple(params), tuple(x0))
    got = jax.jit(lambda p, x: _interpreted(counts, p, x))(tuple(params), tuple(x0))
    eps = float(jnp.finfo(jnp.float64).eps)
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=TOL_EPS * eps * float(np.abs(w).max()))


def test_the_cpu_keeps_the_xla_loop(step_problems):
    """The solver's sweeps lowered for the CPU hold no Pallas kernel and give the XLA loop's impulses exactly."""
    velocity, position, start, counts = step_problems
    want = _solve(solver._xla_iterate, velocity, position, start, counts)
    got = _solve(solver._iterate, velocity, position, start, counts)
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
        np.testing.assert_array_equal(g, w)
    text = jax.jit(jax.vmap(lambda v, s: solver.solve_all((v,), (s,), counts[:1]))).lower(velocity, start).as_text()
    assert "triton" not in text and "pallas" not in text
