"""Go1 with every geom touching the ground against its feet only: contact slots and world-steps/s.

The figures of docs/design/performance.md, "Ground-contact filtering". Run: ``python -m bench.tools.ground_filter``
(needs example-robot-data). Each configuration is compiled, then timed 3 times; two rounds.
"""

from __future__ import annotations

import argparse
import site
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxmor

N_WORLDS, N_STEPS = 64, 20


def go1_urdf() -> Path:
    for root in site.getsitepackages():
        path = Path(root) / "cmeel.prefix/share/example-robot-data/robots/go1_description/urdf/go1.urdf"
        if path.is_file():
            return path
    raise SystemExit("example-robot-data's go1.urdf was not found (pip install example-robot-data)")


def rate(model: jaxmor.Model, n_worlds: int = N_WORLDS, n_steps: int = N_STEPS) -> tuple[float, float]:
    """(compile + first call [s], median world-steps/s)."""
    state = jaxmor.init_state(model)
    state = state.replace(q=state.q.at[2].set(0.4))
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (n_worlds, *x.shape)), state)
    run = jax.jit(jax.vmap(lambda s: jaxmor.rollout(model, s, n_steps=n_steps)[0]))
    start = time.perf_counter()
    jax.block_until_ready(run(states))
    first = time.perf_counter() - start
    times = []
    for _ in range(3):
        start = time.perf_counter()
        jax.block_until_ready(run(states))
        times.append(time.perf_counter() - start)
    return first, n_worlds * n_steps / float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tools.ground_filter", description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=N_WORLDS, help=f"worlds per call (default {N_WORLDS})")
    p.add_argument("--steps", type=int, default=N_STEPS, help=f"steps per call (default {N_STEPS})")
    args = p.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = jaxmor.add_ground(jaxmor.load_urdf(go1_urdf()))
    feet = jaxmor.with_ground_contact(every, ["*_foot"])
    slots = jaxmor.contact_count(every), jaxmor.contact_count(feet)
    print(f"go1: {every.ng} geoms, ground slots: every geom {slots[0]}, feet {slots[1]}")
    for round_ in (1, 2):
        for name, model in (("every geom", every), ("feet only", feet)):
            first, ws = rate(model, args.worlds, args.steps)
            print(f"round {round_}, {name}: compile + first call {first:.1f} s, {ws:,.0f} world-steps/s")

    return 0


if __name__ == "__main__":
    raise SystemExit(main())
