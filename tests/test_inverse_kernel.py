"""The effective mass's inverse in one Pallas kernel (``jaxmor.sim.inverse_kernel``, interpret mode).

Reference: ``numpy.linalg.inv`` (LAPACK's LU with partial pivoting, another algorithm) on the same matrices, in
float64: SPD matrices plus a non-symmetric perturbation a tenth of their scale, as the effective mass is (the mass
matrix, positive diagonal terms and ``(h/2) D``). Both are backward stable on these matrices (condition numbers
below 1e3 here), so they agree to about ``cond * n * eps``: tolerance 1e-11 relative to the inverse's largest entry
(an entry of a wrong row or column, or a step skipped, is off by 1e-2 or more). The kernel runs the same arithmetic
as :func:`jaxmor.math.gauss_jordan` (the CPU's path), so the two agree to roundings: 1e-13.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.math import gauss_jordan
from jaxmor.sim import inverse_kernel
from jaxmor.sim.batched_launch import one_launch_per_batch

REFERENCE = 1e-11
SAME_ARITHMETIC = 1e-13


def _matrices(n: int, count: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + n)
    b = rng.normal(size=(count, n, n))
    spd = b @ np.swapaxes(b, 1, 2) + n * np.eye(n)
    return spd + 0.1 * np.sqrt(n) * rng.normal(size=(count, n, n))


def _kernel(a: np.ndarray) -> np.ndarray:
    return np.asarray(jax.jit(jax.vmap(lambda m: inverse_kernel.inverse(m, interpret=True)))(jnp.asarray(a)))


@pytest.fixture(autouse=True, scope="module")
def float64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("n", [1, 3, 18, 32, 33, 64])
def test_the_kernel_inverts_as_lapack_does(n):
    """Sizes at and between Triton's powers of two (the padding's identity block) up to the largest taken."""
    a = _matrices(n)
    got, want = _kernel(a), np.linalg.inv(a)
    assert np.linalg.cond(a).max() < 1e3
    np.testing.assert_allclose(got, want, rtol=0, atol=REFERENCE * np.abs(want).max())
    np.testing.assert_allclose(np.einsum("bij,bjk->bik", a, got), np.broadcast_to(np.eye(n), a.shape), atol=1e-11)


def test_the_kernel_runs_the_cpu_elimination():
    a = _matrices(18)
    cpu = np.asarray(jax.vmap(lambda m: gauss_jordan(m, jnp.eye(18)))(jnp.asarray(a)))
    np.testing.assert_allclose(_kernel(a), cpu, rtol=0, atol=SAME_ARITHMETIC * np.abs(cpu).max())


def test_one_matrix_shared_by_the_batch_and_a_batch_of_batches():
    """``vmap`` over something else than the matrix (its batching rule broadcasts it), and ``vmap`` of ``vmap``."""
    a = jnp.asarray(_matrices(5))
    scales = jnp.arange(1.0, 4.0)
    shared = jax.jit(jax.vmap(lambda s: s * inverse_kernel.inverse(a[0], interpret=True)))(scales)
    np.testing.assert_allclose(np.asarray(shared), np.asarray(scales)[:, None, None] * np.linalg.inv(a[0]), atol=1e-12)
    nested = jax.jit(jax.vmap(jax.vmap(lambda m: inverse_kernel.inverse(m, interpret=True))))(a.reshape(2, 2, 5, 5))
    np.testing.assert_allclose(np.asarray(nested).reshape(4, 5, 5), np.linalg.inv(np.asarray(a)), atol=1e-12)


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 3), (2, 65, 65), (2, 0, 0)])
def test_a_batch_of_another_shape_is_refused_naming_it(shape):
    with pytest.raises(ValueError, match=r"a must be \(N, n, n\) with 1 <= n <= 64"):
        inverse_kernel.inverse_batch(jnp.zeros(shape), interpret=True)


def test_the_cuda_step_inverts_in_the_kernel_and_the_cpu_step_does_not():
    """Lowered for CUDA the step calls the kernel once; lowered for the CPU, it does not (XLA's elimination there)."""
    from bench.tools.iterations import build_scene

    model, state = build_scene("quadruped", "float32")
    step = jax.jit(jax.vmap(jaxmor.step, in_axes=(None, 0)))
    states = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    cuda = step.trace(model, states).lower(lowering_platforms=("cuda",)).as_text()
    cpu = step.trace(model, states).lower(lowering_platforms=("cpu",)).as_text()
    assert cuda.count('"effective_mass_inverse"') == 1
    assert "effective_mass_inverse" not in cpu


def test_a_batched_launch_traces_its_function_once_per_shape():
    """The shared vmap rule of the kernels (``one_launch_per_batch``): one call of the batched function for a vmap,
    unbatched inputs broadcast, and a function traced again at the same shapes (as the step is under jvp, vmap and
    grad) reuses the first trace."""
    shapes = []

    def batch(x, y):
        shapes.append((x.shape, y.shape))
        return 2 * x + y

    one = one_launch_per_batch(batch)
    x, y = jnp.arange(15.0).reshape(5, 3), jnp.arange(3.0)
    f = jax.vmap(one, in_axes=(0, None))
    np.testing.assert_array_equal(f(x, y), 2 * x + y)
    # traced for the one-world form (a batch of one) and for the vmap (y widened to the batch)
    assert sorted(shapes) == [((1, 3), (1, 3)), ((5, 3), (5, 3))]
    jax.jit(f).lower(x, y)
    jax.jit(lambda a, b: f(a, b) + 1).lower(x, y)
    np.testing.assert_array_equal(one(x[0], y), 2 * x[0] + y)
    assert len(shapes) == 2  # three more traces of f and a one-world call: no new trace of batch
