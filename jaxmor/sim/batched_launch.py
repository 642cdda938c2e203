"""One kernel launch for a whole batch: the ``vmap`` rule shared by the Pallas kernels.

A kernel's entry point takes a batch (a leading world axis on every array); the step calls it on one world, and
``jax.vmap`` of the step should launch it once for all the worlds, not once per world. :func:`one_launch_per_batch`
wraps such a batched function as a one-world function whose ``vmap`` calls it once
(``jax.custom_batching.custom_vmap``), broadcasting the inputs the batch shares.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp


def one_launch_per_batch(batch: Callable) -> Callable:
    """A one-world function computing ``batch`` (a function of arrays with a leading batch axis, returning such
    arrays), whose ``jax.vmap`` is one call of ``batch``; unbatched inputs are broadcast to the batch.

    Args:
        batch: the batched function (positional pytree arguments).

    Returns:
        The one-world function: same arguments without the batch axis.
    """

    # Traced once per shape: a step is traced several times under jvp, vmap and grad, and a kernel's trace is costly.
    traced = jax.jit(batch)

    @jax.custom_batching.custom_vmap
    def run(*args):
        one = jax.tree.map(lambda x: x[None], args)
        return jax.tree.map(lambda x: x[0], traced(*one))

    @run.def_vmap
    def rule(axis_size, in_batched, *args):
        def widen(x, batched):
            return x if batched else jnp.broadcast_to(x, (axis_size, *x.shape))

        out = traced(*jax.tree.map(widen, args, tuple(in_batched)))
        return out, jax.tree.map(lambda _: True, out)

    return run
