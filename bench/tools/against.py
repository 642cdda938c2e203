"""This checkout against an earlier commit: the quadruped's forward rollout and the gradient, in alternating processes.

``python -m bench.tools.against REV [--sizes 1024,4096] [--rounds 2] [--host-devices K] [--out FILE]``

Checks ``REV`` out into a temporary git worktree (:func:`bench.runner.revision_checkouts`) and runs, for each case
and round, one fresh process on ``REV`` and one on this checkout (``PYTHONPATH`` picks the package), one after the
other, so that the
machine's drift between minutes (about 1.5x on the project's shared VMs, docs/design/performance.md)
falls on both alike. Each process runs :func:`case` below, which uses only the public API that both
sides have (``load_urdf``, ``add_ground``, ``init_state``, ``rollout``, ``rollout_batch``) and reads its
inputs from a file this process writes (the quadruped scenario's start pose and controls, :mod:`bench.scenario`),
so both sides run the same worlds:

* ``forward N``: ``jax.jit`` of ``rollout_batch`` in chunks of 256 over N worlds x 100 steps, dt = 2 ms,
  float32: compile (``lower`` + ``compile``) and world-steps/s (median of 3 calls after a warm-up);
* ``grad``: ``jax.value_and_grad`` of the sum of the final joint velocities of 64 worlds x 50 steps, one
  vmap, with respect to every motor's resistance, torque constant and velocity constant: compile and
  seconds per call (median of 5).

Prints one JSON line per process and the per-round ratios (this checkout over ``REV``); ``--out`` appends
the lines to a results file.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def case(kind: str, n_worlds: int, inputs: str) -> dict:
    """One timed case in this process, with whichever ``jaxmor`` is importable (see the module docstring)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxmor

    data = np.load(inputs)
    model = jaxmor.add_ground(jaxmor.load_urdf(str(jaxmor.robots.path("quadruped"))), friction=0.8)
    model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(0.002, model.opt.timestep.dtype)))
    state = jaxmor.init_state(model, jnp.asarray(data["q"], jnp.float32))
    states = jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n_worlds, *x.shape))), state)
    if kind == "forward":
        controls = jnp.asarray(data["controls"][:n_worlds], jnp.float32)
        groups = {}
        if jax.device_count() > 1 and n_worlds % jax.device_count() == 0:  # --host-devices: as bench.case does
            mesh = jax.sharding.Mesh(np.array(jax.devices()), ("worlds",))
            states, controls = jax.device_put(
                (states, controls), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("worlds"))
            )
            if "groups" in inspect.signature(jaxmor.rollout_batch).parameters:
                groups = {"groups": jax.device_count()}
        fn = lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=256, **groups)[0]  # noqa: E731
        args, repeats = (states, controls), 3
    else:
        steps, nv, na = 50, model.nv, model.na
        controls = jnp.asarray(data["controls"][:n_worlds, :steps], jnp.float32)
        motor = model.actuators.motor

        def loss(p):
            m = model.replace(
                actuators=model.actuators.replace(
                    motor=motor.replace(resistance=p[0], torque_constant=p[1], velocity_constant=p[2])
                )
            )
            final = jax.vmap(lambda s, c: jaxmor.rollout(m, s, c, steps)[0])(states, controls)
            return jnp.sum(final.u[:, nv - na :])

        fn, args, repeats = (
            jax.value_and_grad(loss),
            ((motor.resistance, motor.torque_constant, motor.velocity_constant),),
            5,
        )
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    out = {"kind": kind, "n_worlds": n_worlds, "compile_s": compile_s, "median_s": median, "times_s": times}
    if kind == "forward":
        out["wsps"] = n_worlds * 100 / median
    return out


def _inputs(path: Path, n_worlds: int) -> None:
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from bench import scenario as sc

    np.savez(path, q=sc.standing_qpos(), controls=sc.controls(n_worlds, 100, 0.002))


def _run(source: Path, kind: str, n: int, inputs: Path, host_devices: int = 1) -> dict:
    """:func:`case` in a fresh process that imports ``jaxmor`` from ``source`` (this file run as a script, so
    no ``bench`` package of ``source`` is imported), its forward worlds split over ``host_devices`` CPU devices."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    if host_devices > 1 and kind == "forward":
        flag = f"--xla_force_host_platform_device_count={host_devices}"
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flag}".strip()
    command = [sys.executable, __file__, "--case", kind, str(n), str(inputs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tools.against", description=__doc__.splitlines()[0])
    p.add_argument("rev", nargs="?", help="the earlier commit")
    p.add_argument("--sizes", default="1024,4096", help="world counts of the forward case")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--no-grad", dest="grad", action="store_false")
    p.add_argument("--host-devices", type=int, default=1, help="split the forward cases' worlds over K CPU devices")
    p.add_argument("--out", type=Path, help="append the JSON lines here")
    p.add_argument("--case", nargs=3, metavar=("KIND", "N", "INPUTS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.case is None and args.rev is None:
        p.error("give the earlier commit REV")
    if args.case:
        print(json.dumps(case(args.case[0], int(args.case[1]), args.case[2])))
        return 0
    cases = [("forward", int(n)) for n in args.sizes.split(",")] + ([("grad", 64)] if args.grad else [])
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    sys.path.insert(0, str(ROOT))
    from bench.runner import revision_checkouts

    # The revision's folder holds only a link to its jaxmor package: on PYTHONPATH, it gives the case that package.
    with tempfile.TemporaryDirectory() as tmp, revision_checkouts({args.rev}) as revisions:
        old = Path(revisions[args.rev][0])
        inputs = Path(tmp) / "inputs.npz"
        _inputs(inputs, max(n for _, n in cases))
        for kind, n in cases:
            for r in range(args.rounds):
                pair = {}
                for label, source in (("before", old), ("after", ROOT)):
                    row = {"label": label, "rev": args.rev if label == "before" else commit, "round": r}
                    row.update(_run(source, kind, n, inputs, args.host_devices))
                    pair[label] = row
                    print(json.dumps(row), flush=True)
                    if args.out:
                        with open(args.out, "a") as f:
                            f.write(json.dumps(row) + "\n")
                b, a = pair["before"], pair["after"]
                print(
                    f"{kind} N={n} round {r}: speed after/before {b['median_s'] / a['median_s']:.2f}x, "
                    f"compile {b['compile_s']:.1f} -> {a['compile_s']:.1f} s",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
