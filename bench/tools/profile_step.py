"""Where jaxmor's step spends its time: ablations of the benchmark's rollout, black-box.

``python -m bench.tools.profile_step [--n 256] [--steps 100] [--iterations 30,10,1] [--repeats 3]``

Runs the quadruped scenario's jaxmor case (:mod:`bench.quadruped`) at one N with the PGS sweep count
(``Model.opt.solver_iterations``, used by both the velocity and the position solve) set to each value of
``--iterations``, and once without the ground (no contacts: only the joint friction and limit rows
remain). A straight line through the iteration timings splits a step into the cost of one sweep and
everything else (kinematics, CRBA/RNEA, collision, the LU factorization and solves, the Delassus
matrix, the actuator model). The figures are from separately compiled programs, in one process, and
noisy (see docs/design/performance.md); they locate the cost, they are not benchmark results.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench import scenario as sc


def _time(fn, args, repeats: int) -> tuple[float, float]:
    import jax

    t = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - t)
    return statistics.median(times), compile_s


def _row(label: str, med: float, comp: float, work: int) -> None:
    print(f"{label:<34} {med * 1e3:10.1f} {med / work * 1e6:14.2f} {work / med:14,.0f} {comp:10.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tools.profile_step", description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--dt", type=float, default=0.002)
    p.add_argument("--iterations", default="30,10,1")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument(
        "--chunks",
        default="",
        help="comma-separated chunk sizes: also time the default step with the worlds vmapped in chunks "
        "of this many (jax.lax.map(..., batch_size=chunk))",
    )
    p.add_argument("--no-ground-variant", dest="no_ground", action="store_false", help="skip the no-ground variant")
    args = p.parse_args(argv)

    import jax
    import jax.numpy as jnp

    import jaxmor

    n, steps, dt = args.n, args.steps, args.dt
    base = sc.jaxmor_model(dt)
    states = sc.jaxmor_states(base, n)
    controls = jnp.asarray(sc.controls(n, steps, dt), base.body_mass.dtype)
    default_iters = int(base.opt.solver_iterations)
    work = n * steps
    print(f"jaxmor step ablations, N={n}, {steps} steps, dt={dt}; default solver_iterations={default_iters}")
    print(f"{'variant':<34} {'ms/call':>10} {'us/world-step':>14} {'world-steps/s':>14} {'compile s':>10}")

    rows = []
    for it in [int(x) for x in args.iterations.split(",")]:
        model = base.replace(opt=base.opt.replace(solver_iterations=it))

        def fn(s, c, model=model):
            return jax.vmap(lambda s1, c1: jaxmor.rollout(model, s1, c1, steps)[0])(s, c)

        med, comp = _time(fn, (states, controls), args.repeats)
        rows.append((it, med))
        _row(f"PGS sweeps = {it}", med, comp, work)

    for chunk in [int(x) for x in args.chunks.split(",") if x.strip()]:

        def fn_chunk(s, c, chunk=chunk):
            def one(a):
                final = jaxmor.rollout(base, a[0], a[1], steps)[0]
                return final.q, final.u  # lax.map can't stack the empty ctrl leaf

            return jax.lax.map(one, (s, c), batch_size=chunk)

        med, comp = _time(fn_chunk, (states, controls), args.repeats)
        _row(f"{default_iters} sweeps, chunks of {chunk} worlds", med, comp, work)

    if args.no_ground:
        no_ground = base.replace(ground=False)
        s_ng = sc.jaxmor_states(no_ground, n)

        def fn_ng(s, c):
            return jax.vmap(lambda s1, c1: jaxmor.rollout(no_ground, s1, c1, steps)[0])(s, c)

        med, comp = _time(fn_ng, (s_ng, controls), args.repeats)
        _row(f"no ground ({default_iters} sweeps, no contacts)", med, comp, work)

    if len(rows) >= 2:
        its = np.array([r[0] for r in rows], float)
        ts = np.array([r[1] for r in rows], float) / work * 1e6
        slope, intercept = np.polyfit(its, ts, 1)
        at_default = slope * default_iters + intercept
        print(
            f"fit: {intercept:.2f} us/world-step outside the sweeps + {slope:.3f} us per sweep (x2 solves); "
            f"at {default_iters} sweeps the sweeps are {slope * default_iters / at_default:.0%} of the step"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
