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
