"""The effective mass's inverse on a CUDA GPU: Gauss-Jordan elimination, one world per program, in one Pallas kernel.

The same elimination as :func:`jaxmor.math.gauss_jordan` on ``[a | I]`` (no pivoting; pivot row ``i`` scaled, then
taken from every other row), with a world's matrix held on chip for all ``n`` steps: XLA runs each step as its own
kernels, each reading and writing the whole ``(n, 2n)`` matrix (the free-motion stage's bytes); here the matrix is
read once and its inverse written once.

Layout: ``a`` comes in padded to ``(P, P)``, ``P`` the power of two at least ``n`` (Triton's tensor sizes), with
ones on the padding's diagonal: ``[[a, 0], [0, I]]``, whose inverse is ``[[a^-1, 0], [0, I]]``. The program holds the
left ``(P, P)`` tile (``a``, eliminated to ``I``) and the right one (``I``, turned into ``a^-1``) and runs the ``n``
steps of the real pivots; a step picks its pivot row and column with masks (no dynamic indexing of a tile).

Entry point: :func:`inverse`, one matrix, whose ``vmap`` is one launch for the batch
(``jax.custom_batching.custom_vmap``); forward only (:func:`jaxmor.sim.free_motion.inverse` owns the derivative).
"""

from __future__ import annotations

from functools import cache, partial

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from jaxmor.math import pow2
from jaxmor.sim.batched_launch import one_launch_per_batch

#: Largest matrix the kernel takes: its two ``(P, P)`` tiles spread over a program's 128 threads are 64 values a thread
#: at ``P = 64``; past it XLA's elimination runs.
MAX_SIZE = 64
#: Warps per program (one world each).
WARPS = 4


def _eliminate(n: int, a_ref, out_ref) -> None:
    """Invert this program's padded matrix: ``n`` Gauss-Jordan steps on ``[left | right]``."""
    left = a_ref[0, :, :]
    rows = jax.lax.broadcasted_iota(jnp.int32, left.shape, 0)
    cols = jax.lax.broadcasted_iota(jnp.int32, left.shape, 1)
    lanes = jax.lax.broadcasted_iota(jnp.int32, left.shape[:1], 0)
    right = jnp.where(rows == cols, 1.0, 0.0).astype(left.dtype)

    def step(i, tiles):
        left, right = tiles
        at_row = rows == i
        pivot_left = jnp.sum(jnp.where(at_row, left, 0.0), axis=0)
        pivot_right = jnp.sum(jnp.where(at_row, right, 0.0), axis=0)
        pivot = jnp.sum(jnp.where(lanes == i, pivot_left, 0.0))
        pivot_left, pivot_right = pivot_left / pivot, pivot_right / pivot
        factors = jnp.sum(jnp.where((cols == i) & ~at_row, left, 0.0), axis=1)
        left = jnp.where(at_row, pivot_left[None, :], left - factors[:, None] * pivot_left[None, :])
        right = jnp.where(at_row, pivot_right[None, :], right - factors[:, None] * pivot_right[None, :])
        return left, right

    _, right = jax.lax.fori_loop(0, n, step, (left, right))
    out_ref[0, :, :] = right


def inverse_batch(a: jax.Array, *, warps: int = WARPS, interpret: bool = False) -> jax.Array:
    """``a^-1`` for a batch of matrices, one launch (one program per matrix).

    Args:
        a: (N, n, n) matrices, ``1 <= n <=`` :data:`MAX_SIZE` (see :func:`jaxmor.math.gauss_jordan` for the ones
            elimination without pivoting handles).
        warps: warps per program.
        interpret: run in Pallas's interpreter (any platform; for tests).

    Returns:
        (N, n, n) the inverses.

    Raises:
        ValueError: ``a`` is not a batch of square matrices of a size the kernel takes.
    """
    if a.ndim != 3 or a.shape[1] != a.shape[2] or not 1 <= a.shape[1] <= MAX_SIZE:
        raise ValueError(f"inverse_batch: a must be (N, n, n) with 1 <= n <= {MAX_SIZE}, got {a.shape}")
    n = a.shape[1]
    p = pow2(n)
    padded = jnp.pad(a, ((0, 0), (0, p - n), (0, p - n)))
    if p > n:
        padded = padded + jnp.diag((jnp.arange(p) >= n).astype(a.dtype))
    out = pl.pallas_call(
        lambda a_ref, out_ref: _eliminate(n, a_ref, out_ref),
        out_shape=jax.ShapeDtypeStruct(padded.shape, a.dtype),
        grid=(a.shape[0],),
        in_specs=[pl.BlockSpec((1, p, p), lambda i: (i, 0, 0))],
        out_specs=pl.BlockSpec((1, p, p), lambda i: (i, 0, 0)),
        compiler_params=pltriton.CompilerParams(num_warps=warps, num_stages=1),
        interpret=interpret,
        name="effective_mass_inverse",
    )(padded)
    return out[:, :n, :n]


@cache
def _batched(warps: int, interpret: bool):
    """The one-matrix inverse whose ``vmap`` is one :func:`inverse_batch` over the batch (cached per options)."""
    return one_launch_per_batch(partial(inverse_batch, warps=warps, interpret=interpret))


def inverse(a: jax.Array, *, warps: int = WARPS, interpret: bool = False) -> jax.Array:
    """``a^-1`` of one (n, n) matrix (:func:`inverse_batch`; under ``jax.vmap`` one launch for the batch)."""
    return _batched(warps, interpret)(a)
