"""The accelerated projected Jacobi solver (``Options.solver="jacobi"``) against projected Gauss-Seidel.

Both solve the same problem: a solution is a fixed point of one PGS sweep, ``F(lam) = lam``. The check is therefore
the fixed-point residual ``max_r A_rr |F(lam) - lam|_r`` (a velocity, m/s or rad/s), computed by the sweep, not by
the Jacobi code, and the contact laws themselves (:func:`jaxmor.sim.solver.contact_residuals`: cone, Signorini,
normal velocity). Problems: the bench quadruped's velocity and position problems after 60 steps of its scenario
(``bench/tools/residuals.py``), float64, 16 worlds, each warm-started as the step does.

Tolerances: 1e-9 m/s for the Jacobi solver's fixed-point residual after 150 iterations (measured: below 1e-11 on
these problems, docs/design/solver.md), and PGS's own after 20 sweeps as the bar it must beat in the worst world
(PGS alternates between two iterates in some worlds of this scenario, its residual stays above 1e-2 m/s there).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from bench.scenario import standing_qpos
from bench.tools.residuals import fixed_point_residual, problems
from jaxmor.errors import ArgumentError
from jaxmor.sim.solver import contact_residuals, solve

WORLDS, STEPS = 16, 60
#: Fixed-point residual the Jacobi solver reaches in 150 iterations here [m/s or rad/s].
TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def step_problems():
    return problems(WORLDS, STEPS, 0.002)


def _solve(cons, warm, solver: str, count: int):
    jacobi = count if solver == "jacobi" else None
    sweeps = count if solver == "pgs" else 20
    velocity = jax.vmap(lambda c, w: solve(c.velocity, w, sweeps, solver, jacobi))(cons, warm)
    position = jax.vmap(lambda c: solve(c.position, c.position.zero_impulses(), sweeps, solver, jacobi))(cons)
    return velocity, position


def test_jacobi_reaches_a_fixed_point_of_the_sweep_where_pgs_does_not(step_problems):
    cons, warm = step_problems
    velocity, position = jax.jit(lambda: _solve(cons, warm, "jacobi", 150))()
    fixed = np.asarray(jax.vmap(fixed_point_residual)(cons.velocity, velocity))
    fixed_position = np.asarray(jax.vmap(fixed_point_residual)(cons.position, position))
    assert fixed.max() < TOLERANCE and fixed_position.max() < TOLERANCE, (fixed.max(), fixed_position.max())
    pgs, _ = jax.jit(lambda: _solve(cons, warm, "pgs", 20))()
    assert fixed.max() < np.asarray(jax.vmap(fixed_point_residual)(cons.velocity, pgs)).max()
    laws = jax.vmap(contact_residuals)(cons.velocity, velocity)
    assert float(jnp.max(laws["cone"])) < 1e-12
    assert float(jnp.min(laws["normal_velocity"])) > -TOLERANCE
    assert float(jnp.max(laws["signorini"])) < TOLERANCE


def test_the_two_solutions_differ_by_what_pgs_has_left(step_problems):
    """The velocity change of the Jacobi solution against 60 PGS sweeps': within 20 times PGS's fixed-point residual
    in every world (measured: 6-12 times), so where PGS converged (13 of the 16 worlds: residual < 1e-12 m/s) the
    two agree to 1e-10 m/s; in the world where PGS alternates (residual 0.18 m/s) they differ by 0.29 m/s."""
    cons, warm = step_problems
    jac, _ = jax.jit(lambda: _solve(cons, warm, "jacobi", 150))()
    pgs, _ = jax.jit(lambda: _solve(cons, warm, "pgs", 60))()
    left = np.asarray(jax.vmap(fixed_point_residual)(cons.velocity, pgs))
    dv = jax.vmap(lambda c, a, b: c.response @ (c.velocity.rows(a) - c.velocity.rows(b)))(cons, jac, pgs)
    dv = np.abs(np.asarray(dv)).max(-1)
    assert (dv <= 20 * left + 1e-12).all(), (dv, left)
    converged = left < 1e-12
    assert converged.sum() >= WORLDS // 2 and dv[converged].max() < 1e-10


@pytest.mark.parametrize("count", [1, 3])
def test_every_iterate_it_returns_keeps_the_laws_sets(step_problems, count):
    """Cut short, the impulses are still admissible: normal >= 0, tangent pair on its disk, joint friction within
    its bounds."""
    cons, warm = step_problems
    velocity, position = jax.jit(lambda: _solve(cons, warm, "jacobi", count))()
    lam = np.asarray(velocity.contact)
    mu = np.asarray(cons.velocity.friction)
    assert lam[..., 0].min() >= 0.0 and np.asarray(position.contact)[..., 0].min() >= 0.0
    assert (np.linalg.norm(lam[..., 1:], axis=-1) <= mu * lam[..., 0] * (1 + 1e-12) + 1e-300).all()
    bound = np.asarray(cons.velocity.friction_bound)[:, : velocity.friction.shape[1]]
    assert (np.abs(np.asarray(velocity.friction)) <= bound * (1 + 1e-12)).all()


def test_the_step_with_either_solver_and_its_gradient(quadruped_ground):
    """The quadruped standing on its feet: the same next state from both solvers (converged: 1e-9), and the same
    gradient of a one-step loss (the derivative: the sweep linearized at the final impulses, either solver)."""
    state = jaxmor.init_state(quadruped_ground, jnp.asarray(standing_qpos(quadruped_ground)))

    def loss(model, q):
        nxt = jaxmor.step(model, state.replace(q=q))
        return jnp.sum(nxt.q) + jnp.sum(nxt.u)

    results = []
    for solver in ("pgs", "jacobi"):
        model = jaxmor.with_options(quadruped_ground, solver=solver, solver_iterations=60, position_iterations=30)
        results.append(jax.jit(jax.value_and_grad(lambda q, model=model: loss(model, q)))(state.q))
    (value_pgs, grad_pgs), (value_jac, grad_jac) = results
    assert abs(float(value_pgs - value_jac)) < 1e-9
    np.testing.assert_allclose(np.asarray(grad_jac), np.asarray(grad_pgs), rtol=1e-6, atol=1e-6)


def test_a_bad_solver_is_refused_naming_the_option(quadruped_ground):
    with pytest.raises(ArgumentError, match="opt.solver must be one of"):
        jaxmor.with_options(quadruped_ground, solver="newton")
    with pytest.raises(ArgumentError, match="opt.jacobi_iterations must be an int >= 1"):
        jaxmor.with_options(quadruped_ground, jacobi_iterations=0)


def test_where_a_contact_pushes_a_joint_past_its_limit_the_limit_wins():
    """The arm of ``test_stages`` 5 mm in the ground with its hinge limit 0.5 mrad away: the contact and the limit
    conflict (no impulses satisfy both; they drift with the iterations in either solver). As in PGS, whose sweep
    ends with the joint rows, the Jacobi solver's final joint sweep stops the hinge at the limit (1e-9 rad)."""
    from test_stages import ARM_URDF, limited_arm

    angle = float(np.arcsin(0.5 - 0.05 + 0.005))
    for urdf in (ARM_URDF, limited_arm(angle - 5e-4)):
        model = jaxmor.add_ground(jaxmor.load_urdf(urdf))
        model = jaxmor.with_options(model, solver="jacobi", gravity=jnp.zeros(3))
        moved = jax.jit(jaxmor.step)(model, jaxmor.init_state(model, q=jnp.array([angle])))
        if urdf is ARM_URDF:
            free = float(moved.q[0])
            assert angle - free > 1e-3  # the position pass turns the free arm out by 1.1 mrad
        else:
            assert float(moved.q[0]) == pytest.approx(angle - 5e-4, abs=1e-9)
