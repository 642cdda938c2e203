"""Writes loops.hlo.txt beside this file: XLA's optimized HLO of a small function with known loops, for
tests/test_bench.py's test of the HLO reader (bench/tools/iterations.py). Run: ``python tests/data/bench/loops.py``.

The loops, by construction (and as the file shows in each ``while``'s ``known_trip_count``):

* ``outer``: 3 trips, each running ``inner`` (5 trips): 3 x (1 + 5) = 18 dependent iterations;
* ``alone``: 7 trips: 7;
* a ``conditional`` whose true branch loops 4 times and whose false branch loops 2 times: one branch runs, 4 at most.

Total: 18 + 7 + 4 = 29 dependent loop iterations.
"""

from pathlib import Path

import jax
import jax.numpy as jnp


def f(x, flag):
    def inner(i, y):
        return jnp.sin(y) * i + jnp.cos(y)

    def outer(i, y):
        return jax.lax.fori_loop(0, 5, inner, y * i)

    y = jax.lax.fori_loop(0, 3, outer, x)
    y = jax.lax.fori_loop(0, 7, lambda i, z: jnp.tanh(z) + i, y)
    return jax.lax.cond(
        flag,
        lambda z: jax.lax.fori_loop(0, 4, lambda i, w: jnp.exp(-w) * i, z),
        lambda z: jax.lax.fori_loop(0, 2, lambda i, w: jnp.log1p(w * w) + i, z),
        y,
    )


if __name__ == "__main__":
    text = jax.jit(f).lower(jnp.ones(3, jnp.float32), True).compile().as_text()
    (Path(__file__).resolve().parent / "loops.hlo.txt").write_text(text)
