"""Cost of each ``Options.implicit_bias`` on the benchmark's quadruped, one mode and one kind per process.

``python -m bench.tools.implicit_cost MODE fwd|grad`` (MODE: kahan, predicted, base) prints one JSON line:

* ``fwd``: the quadruped scenario (:mod:`bench.scenario`), N = 256 worlds x 100 steps, dt = 2 ms, float32,
  one ``jax.jit(jax.vmap(rollout))``: compile time (``lower`` + ``compile``) and world-steps/s, median
  (min-max) of 5 timed calls after a warm-up;
* ``grad``: ``jax.value_and_grad`` of the sum of the final joint velocities of 32 worlds x 50 steps with
  respect to every motor's resistance, torque and velocity constants (the benchmark's gradient case with
  one vmap of 32 worlds): compile time and milliseconds per call, median of 3.

Run the modes one after the other in fresh processes, several rounds: the figures are noisy
(docs/design/performance.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from jaxmor.checks import IMPLICIT_BIAS


def _timed(fn, args, repeats: int):
    import jax

    t = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t
    out = jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t)
    return compile_s, times, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tools.implicit_cost", description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=IMPLICIT_BIAS)
    p.add_argument("kind", choices=("fwd", "grad"))
    args = p.parse_args(argv)

    import jax
    import jax.numpy as jnp

    import jaxmor
    from bench import scenario as sc

    base = sc.jaxmor_model(0.002)
    model = base.replace(opt=base.opt.replace(implicit_bias=args.mode))
    n, steps = (256, 100) if args.kind == "fwd" else (32, 50)
    states = sc.jaxmor_states(model, n)
    controls = jnp.asarray(sc.controls(n, steps, 0.002), model.body_mass.dtype)
    row = {"mode": args.mode, "kind": args.kind, "n_worlds": n, "n_steps": steps}
    if args.kind == "fwd":

        def fn(s, c):
            return jax.vmap(lambda s1, c1: jaxmor.rollout(model, s1, c1, steps)[0])(s, c)

        compile_s, times, out = _timed(fn, (states, controls), 5)
        row["check"] = {"base_z_mean": float(jnp.mean(out.q[:, 2])), "nonfinite": int(jnp.sum(out.nonfinite))}
    else:
        motor = model.actuators.motor
        params = (motor.resistance, motor.torque_constant, motor.velocity_constant)
        drive = slice(model.nv - model.na, None)

        def loss(p):
            m = model.replace(
                actuators=model.actuators.replace(
                    motor=motor.replace(resistance=p[0], torque_constant=p[1], velocity_constant=p[2])
                )
            )
            return jnp.sum(jax.vmap(lambda s, c: jaxmor.rollout(m, s, c, steps)[0].u[drive])(states, controls))

        compile_s, times, out = _timed(jax.value_and_grad(loss), (params,), 3)
        row["check"] = {"loss": float(out[0]), "grad_abs_sum": float(sum(jnp.sum(jnp.abs(g)) for g in out[1]))}
    med = statistics.median(times)
    row.update(
        compile_s=compile_s,
        ms_per_call=med * 1e3,
        wsps_median=n * steps / med,
        wsps_min=n * steps / max(times),
        wsps_max=n * steps / min(times),
    )
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
