"""The Pallas Jacobi kernel (``jaxmor.sim.jacobi_kernel``, interpret mode) against the solver's XLA iteration.

Reference: ``jax.vmap`` of :func:`jaxmor.sim.solver._xla_iterate` with ``method="jacobi"`` on the bench quadruped's
velocity and position problems after 60 steps of its scenario (``bench/tools/residuals.py``), float64, 8 worlds;
the kernel path is :func:`jaxmor.sim.solver._jacobi_kernel` in Pallas's interpreter, on the same ``_Rows``. Both
run the same iteration on the same numbers in another row order (the kernel regroups the rows by kind) and sum
``A y`` in another association, so they differ by roundings: measured 1.7e-16 after 100 iterations, against
impulses of order 1; tolerance 1e-13 (what a wrong row does: a swapped tangent pair or a missing column changes
the first iteration's impulses by 1e-3 or more).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from bench.tools.residuals import problems
from jaxmor.sim import solver

TOLERANCE = 1e-13


@pytest.fixture(scope="module")
def rows_and_starts():
    cons, warm = problems(8, 60, 0.002)

    def setup(c, w):
        params = (solver._rows_of(c.velocity), solver._rows_of(c.position))
        return params, (c.velocity.start(w), c.position.start(c.position.zero_impulses()))

    return jax.jit(jax.vmap(setup))(cons, warm)


@pytest.mark.parametrize("counts", [(1, 1), (7, 3), (100, 50)])
def test_the_kernel_iterates_equal_the_xla_iterates(rows_and_starts, counts):
    params, x0 = rows_and_starts
    want = jax.jit(jax.vmap(lambda p, x: solver._xla_iterate(counts, p, x, method="jacobi")))(params, x0)
    got = jax.jit(jax.vmap(lambda p, x: solver._jacobi_kernel(counts, p, x, interpret=True)))(params, x0)
    assert float(jnp.max(jnp.abs(want[0][0]))) > 0.1  # impulses of order 1: the tolerance is relative to them
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=TOLERANCE)


def test_the_cuda_program_holds_the_kernel_and_the_cpu_program_does_not():
    """``solver="jacobi"`` lowered for CUDA calls the Triton kernel (one launch per problem) and no XLA loop over
    iterations; lowered for the CPU, the XLA loop and no kernel."""
    from bench.tools.iterations import build_scene

    model, state = build_scene("quadruped", "float32")
    model = jaxmor.with_options(model, solver="jacobi")
    step = jax.jit(jax.vmap(jaxmor.step, in_axes=(None, 0)))
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    cuda = step.trace(model, states).lower(lowering_platforms=("cuda",)).as_text()
    cpu = step.trace(model, states).lower(lowering_platforms=("cpu",)).as_text()
    assert cuda.count('"jacobi_iterations"') == 2 and "pgs_sweeps" not in cuda
    assert "jacobi_iterations" not in cpu and "triton" not in cpu


@pytest.mark.parametrize("scene", ["free box", "arm against its limit"])
def test_the_kernel_on_problems_without_joints_and_with_conflicting_rows(scene):
    """A free box tilted onto the ground (no joint rows: the kernel's joint tiles are empty) and the arm of
    ``test_stages`` whose contact pushes its hinge past a limit 0.5 mrad away (the rows conflict; the final joint
    sweep decides): the kernel's impulses equal the XLA iteration's (1e-13 relative)."""
    from jaxmor.sim.pipeline import stages

    if scene == "free box":
        model = jaxmor.add_ground(jaxmor.load_urdf('<robot name="s"><link name="world"/></robot>'))
        model = jaxmor.add_free_body(model, "box", "box", [0.05] * 3, 1.0, position=[0, 0, 0.04])
        q = (
            jaxmor.init_state(model)
            .q.at[3:7]
            .set(jnp.array([0.99, 0.1, 0.05, 0.0]) / np.linalg.norm([0.99, 0.1, 0.05]))
        )
    else:
        from test_stages import limited_arm

        angle = float(np.arcsin(0.5 - 0.05 + 0.005))
        model = jaxmor.add_ground(jaxmor.load_urdf(limited_arm(angle - 5e-4)))
        q = jnp.array([angle])
    cons = stages(model, jaxmor.init_state(model, q)).constraints
    params = (solver._rows_of(cons.velocity), solver._rows_of(cons.position))
    x0 = (cons.velocity.start(cons.start), cons.position.start(cons.position.zero_impulses()))
    one = jax.tree.map(lambda x: x[None], (params, x0))
    want = jax.jit(jax.vmap(lambda p, x: solver._xla_iterate((100, 50), p, x, method="jacobi")))(*one)
    got = jax.jit(jax.vmap(lambda p, x: solver._jacobi_kernel((100, 50), p, x, interpret=True)))(*one)
    scale = max(float(jnp.max(jnp.abs(w))) for w in jax.tree.leaves(want) if w.size)
    assert scale > 0.01
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=0, atol=1e-13 * scale)
