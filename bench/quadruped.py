"""jaxmor vs MuJoCo (C, ``mujoco.rollout``) vs MJX on the shipped quadruped (bench/scenario.py), and jaxmor's gradient.

Cases, per N of ``--sizes``: ``jaxmor`` (``jaxmor.rollout_batch`` in chunks of ``--jaxmor-chunk`` worlds, the API
for big batches) and, above one chunk, ``jaxmor-vmap`` (one ``jax.vmap`` of ``jaxmor.rollout`` over all worlds);
``mujoco`` (``mujoco.rollout`` on all cores) and ``mujoco-1t`` (the calling thread); ``mjx`` (``jax.vmap`` of a
``lax.scan`` of ``mjx.step``, skipped above ``--mjx-max-worlds``). Then one gradient case: ``jax.value_and_grad``
of the sum of the final joint velocities of ``--grad-worlds`` worlds x ``--grad-steps`` steps with respect to
every motor's resistance, torque constant and velocity constant. ``--baseline REV`` runs jaxmor at the git revision
``REV`` too (``jaxmor@REV``, :func:`bench.runner.revision_checkouts`), right after each chunked forward case and the
gradient case, so the speed-up over it is measured in the same run.
"""

from __future__ import annotations

import argparse
import inspect
import os
import time

from bench import report
from bench import scenario as sc
from bench.runner import Scenario, sizes_of

DEFAULT_MJX_MAX = 1024


def add_comparison_options(g, jaxmor_vmap: bool) -> None:
    """The three-engine comparison's options (this scenario's and the Go2's)."""
    g.add_argument(
        "--jaxmor-vmap",
        action=argparse.BooleanOptionalAction,
        default=jaxmor_vmap,
        help="above one chunk, time one vmap of jaxmor.rollout over all worlds too (default %(default)s)",
    )
    g.add_argument(
        "--jaxmor-cores",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --host-devices 1 on a machine of several cores, time jaxmor a second time with one CPU device per "
        'core, its worlds split over them (docs/worlds.md, "Many devices"), as MuJoCo runs a thread per core; a '
        "GPU run passes --no-jaxmor-cores (default %(default)s)",
    )
    g.add_argument(
        "--mujoco-single-thread",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time MuJoCo on the calling thread too, beside all cores (default %(default)s)",
    )
    g.add_argument(
        "--host-devices",
        type=int,
        default=1,
        help="JAX engines on the CPU: split the worlds over this many CPU devices (XLA's forced host device count), "
        'which run side by side (docs/design/performance.md, "One CPU device per core"); 1: one device, XLA\'s '
        "threads inside its operations (default %(default)s)",
    )
    g.add_argument(
        "--mjx-max-worlds",
        type=int,
        default=DEFAULT_MJX_MAX,
        help="skip MJX and MJWarp above this N (0: no cap; default %(default)s)",
    )
    g.add_argument(
        "--like-for-like",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="MJX and MJWarp also at the settings RL users run them at (bench/mujoco_settings.py like_for_like: "
        "Playground's 1 solver iteration and 5 line-search iterations; the Go2 with only its feet colliding) "
        "(default %(default)s)",
    )


def add_options(g) -> None:
    add_comparison_options(g, jaxmor_vmap=True)
    g.add_argument("--grad-worlds", type=int, default=64, help="worlds G of the gradient case (0: none; default 64)")
    g.add_argument("--grad-steps", type=int, default=50, help="steps K of the gradient case (default 50)")
    g.add_argument(
        "--grad-chunk",
        type=int,
        default=0,
        help="vmap the gradient's worlds in chunks of this many (lax.map); 0 or >= G: one vmap (the default: the step "
        "calls no LAPACK routine, so a vmap of all G cannot meet docs/design/cpu-deadlock.md's hang)",
    )
    g.add_argument(
        "--baseline",
        metavar="REV",
        help="also time jaxmor at the git revision REV (its jaxmor package with this checkout's bench, robot and "
        "inputs), each case right after this checkout's chunked forward case of the same N and its gradient case",
    )


def comparison_cases(args, engines: list[str], jaxmor_feet: bool = False) -> list[dict]:
    """The forward cases of the engines per N (labels: report.ENGINE_NAMES); ``jaxmor_feet``: with
    ``--like-for-like`` jaxmor also runs with only the feet touching the ground (``jaxmor-rl``), as MJX's and
    MJWarp's like-for-like cases collide."""
    common = {"kind": "forward", "n_steps": args.steps, "repeats": args.repeats, "min_repeats": args.min_repeats}
    common["budget_s"] = args.case_budget
    cases, cores = [], os.cpu_count() or 1
    for engine in engines:
        for n in sizes_of(args):
            base = {**common, "n_worlds": n, "engine": engine}
            if engine in ("jaxmor", "mjx"):
                base["host_devices"] = args.host_devices
            if engine == "jaxmor":
                chunk = args.jaxmor_chunk
                cases.append({**base, "engine_label": "jaxmor", "chunk": chunk})
                if jaxmor_feet and args.like_for_like:
                    cases.append({**base, "engine_label": "jaxmor-rl", "chunk": chunk, "like_for_like": True})
                if chunk and n > chunk and args.jaxmor_vmap:
                    cases.append({**base, "engine_label": "jaxmor-vmap", "chunk": 0})
                if args.jaxmor_cores and args.host_devices == 1 and cores > 1 and n % cores == 0:
                    cases.append({**base, "engine_label": "jaxmor-cores", "chunk": chunk, "host_devices": cores})
            elif engine == "mujoco":
                cases.append({**base, "engine_label": "mujoco", "nthread": cores})
                if args.mujoco_single_thread:
                    cases.append({**base, "engine_label": "mujoco-1t", "nthread": 0})
            elif engine in ("mjx", "mjwarp"):
                cases += _mujoco_family(args, base, engine, n)
    return cases


def _mujoco_family(args, base: dict, engine: str, n: int) -> list[dict]:
    """MJX's or MJWarp's cases of one N: at the file's settings, and with ``--like-for-like`` at RL users' too."""
    cases = [{**base, "engine_label": engine}]
    if args.like_for_like:
        cases.append({**base, "engine_label": f"{engine}-rl", "like_for_like": True})
    if args.mjx_max_worlds and n > args.mjx_max_worlds:
        for case in cases:
            case.update(status="skipped", error=f"N > --mjx-max-worlds {args.mjx_max_worlds}")
    return cases


def plan(args, engines: list[str]) -> list[dict]:
    cases = [{**c, "dt": args.dt} for c in comparison_cases(args, engines)]
    if "jaxmor" in engines and args.grad_worlds > 0 and args.grad_steps > 0:
        cases.append(
            {
                "engine": "jaxmor",
                "engine_label": "jaxmor",
                "kind": "grad",
                "n_worlds": args.grad_worlds,
                "n_steps": args.grad_steps,
                "dt": args.dt,
                "grad_chunk": args.grad_chunk,
                "repeats": args.repeats,
                "min_repeats": args.min_repeats,
                "budget_s": args.case_budget,
            }
        )
    return with_baseline(cases, args.baseline)


def with_baseline(cases: list[dict], rev: str | None) -> list[dict]:
    """``cases`` with, after each of jaxmor's chunked forward cases and its gradient case, the same case on jaxmor at
    the git revision ``rev`` (label ``jaxmor@rev``; none without ``rev``)."""
    if not rev:
        return cases
    out = []
    for c in cases:
        out.append(c)
        if c["engine_label"] == "jaxmor" and (c["kind"] == "grad" or c.get("chunk")):
            out.append({**c, "engine_label": f"jaxmor@{rev}", "jaxmor_rev": rev})
    return out


def prepare(args, engines: list[str]) -> dict:
    """The start pose for the MuJoCo and MJX cases (their processes import no jaxmor)."""
    return {"qpos0": sc.standing_qpos_subprocess()} if {"mujoco", "mjx", "mjwarp"} & set(engines) else {}


# ---------------------------------------------------------------------------------------------- cases


def jaxmor_forward(model, states, controls, spec: dict, check_extra: dict | None = None) -> dict:
    """jaxmor's forward case (the quadruped's and the Go2's): ``jaxmor.rollout_batch`` in chunks of
    ``spec["chunk"]`` worlds, or with chunk 0 one ``jax.vmap`` of ``jaxmor.rollout``; ``controls`` as those take
    them (an array of actuator torques, or a mapping of State inputs to per-step arrays)."""
    import jax
    import jax.numpy as jnp

    import jaxmor
    from bench import case

    chunk = int(spec.get("chunk", 0) or 0)
    (states, controls), devices = case.spread_worlds((states, controls), int(spec["n_worlds"]), spec)
    if chunk:
        # One group of worlds per device (a revision without the argument takes jax.device_count() itself).
        groups = {"groups": devices} if "groups" in inspect.signature(jaxmor.rollout_batch).parameters else {}
        fn = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=chunk, **groups)[0])
    else:
        fn = jax.jit(jax.vmap(lambda s, c: jaxmor.rollout(model, s, c)[0]))

    def check(final):
        return {
            **(check_extra or {}),
            "base_z_mean": float(jnp.mean(final.q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(final.nonfinite)),
        }

    o = model.opt
    solver = getattr(o, "solver", "pgs")  # a revision before the option: PGS
    jacobi = getattr(o, "jacobi_iterations", None)
    settings = {
        "timestep": float(o.timestep),
        # "auto" is chosen when the step is lowered: the Jacobi iteration for CUDA, PGS elsewhere
        "solver": solver if solver != "auto" else f"auto ({'jacobi' if jax.default_backend() == 'gpu' else 'pgs'})",
        "solver_iterations": int(o.solver_iterations),
        "position_iterations": int(o.position_iterations),
        "jacobi_iterations": None if jacobi is None else int(jacobi),
        "contact_budget": _budget(model),
        "collision_geoms": int(model.ng),
        "dtype": str(model.body_mass.dtype),
        "chunk": chunk or None,
        "devices": devices,
    }
    return case.run_single(case.jax_program(fn, (states, controls), check, settings), spec)


def _budget(model) -> int | None:
    """The contact slots jaxmor's solver works on per step (None: a revision without the function)."""
    try:
        from jaxmor.sim.collision.budget import contact_budget
    except ImportError:
        return model.opt.contact_budget
    return int(contact_budget(model))


def run_jaxmor_forward(spec: dict) -> dict:
    import jax.numpy as jnp

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    sc.check_jaxmor_source(spec)
    model = sc.jaxmor_model(dt)
    states = sc.jaxmor_states(model, n)
    controls = jnp.asarray(sc.controls(n, steps, dt), model.body_mass.dtype)
    return jaxmor_forward(model, states, controls, spec)


def run_jaxmor_grad(spec: dict) -> dict:
    """``jax.grad`` of the sum of the final joint velocities of G worlds x K steps w.r.t. R, Kt, Kv.

    ``grad_chunk`` > 0 maps over chunks of that many vmapped worlds (``jax.lax.map(batch_size=...)``);
    0 (the default) vmaps all G worlds at once.
    """
    import jax
    import jax.numpy as jnp

    import jaxmor
    from bench import case

    g, k, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    sc.check_jaxmor_source(spec)
    chunk = int(spec.get("grad_chunk", 0) or 0)
    chunk = chunk if 0 < chunk < g else 0  # a chunk of all G worlds is one vmap
    model = sc.jaxmor_model(dt)
    states = sc.jaxmor_states(model, g)
    controls = jnp.asarray(sc.controls(g, k, dt), model.body_mass.dtype)
    motor = model.actuators.motor
    params = (motor.resistance, motor.torque_constant, motor.velocity_constant)
    nv = model.nv

    def loss(p):
        m = model.replace(
            actuators=model.actuators.replace(
                motor=model.actuators.motor.replace(resistance=p[0], torque_constant=p[1], velocity_constant=p[2])
            )
        )

        def one(s, c):
            return jaxmor.rollout(m, s, c, k)[0].u[nv - model.na :]

        if chunk:
            final_u = jax.lax.map(lambda a: one(*a), (states, controls), batch_size=chunk)
        else:
            final_u = jax.vmap(one)(states, controls)
        return jnp.sum(final_u)

    def check(out):
        value, grads = out
        return {
            "loss": float(value),
            "grad_abs_sum": {
                "resistance": float(jnp.sum(jnp.abs(grads[0]))),
                "torque_constant": float(jnp.sum(jnp.abs(grads[1]))),
                "velocity_constant": float(jnp.sum(jnp.abs(grads[2]))),
            },
            "grad_finite": bool(all(bool(jnp.all(jnp.isfinite(x))) for x in grads)),
        }

    jax.block_until_ready((states, controls))
    settings = {"grad_chunk": chunk, "wrt": ["resistance", "torque_constant", "velocity_constant"]}
    program = case.jax_program(jax.value_and_grad(loss), (params,), check, settings)
    return case.run_single(program, spec)


def run_mujoco_forward(spec: dict) -> dict:
    import numpy as np

    from bench import case

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    t = time.perf_counter()
    model = sc.mujoco_spec(dt).compile()
    compile_s = time.perf_counter() - t
    initial = case.mujoco_states(model, np.asarray(spec["qpos0"]), n)
    controls = sc.controls(n, steps, dt)
    return case.run_single(case.mujoco_program(model, initial, controls, int(spec["nthread"]), compile_s), spec)


def run_mjx_forward(spec: dict) -> dict:
    import numpy as np

    from bench import case, mjwarp, mujoco_settings

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    t = time.perf_counter()
    mj_model = sc.mujoco_spec(dt).compile()
    compile_s = time.perf_counter() - t
    if spec.get("like_for_like"):  # the quadruped's robot geoms collide with the ground only, as the file has it
        mj_model = mujoco_settings.like_for_like(mj_model, None)
    qpos = np.tile(np.asarray(spec["qpos0"]), (n, 1))
    controls = sc.controls(n, steps, dt)
    if spec["engine"] == "mjwarp":
        return case.run_single(mjwarp.program(mj_model, qpos, controls, compile_s), spec)
    return case.run_single(case.mjx_program(mj_model, qpos, controls, compile_s, spec), spec)


RUNNERS = {
    ("jaxmor", "forward"): run_jaxmor_forward,
    ("jaxmor", "grad"): run_jaxmor_grad,
    ("mujoco", "forward"): run_mujoco_forward,
    ("mjx", "forward"): run_mjx_forward,
    ("mjwarp", "forward"): run_mjx_forward,
}


# ---------------------------------------------------------------------------------------------- tables


def render(records: list[dict]) -> str:
    """The three-engine tables, then the gradient's."""
    lines = report.engine_tables(records, "`MjSpec.compile`")
    grads = [r for r in records if r["kind"] == "grad"]
    if grads:
        lines += [
            "",
            "Gradient: `jax.value_and_grad` of the sum of the final joint velocities of G worlds x K steps with "
            "respect to every motor's resistance, torque constant and velocity constant.",
            "",
            "| engine | G x K | chunk | compile [s] | ms per call | calls | world-steps/s | peak RSS [MB] |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in grads:
            gk = f"{r['n_worlds']} x {r['n_steps']}"
            chunk = (r.get("settings") or {}).get("grad_chunk", r.get("grad_chunk")) or "none (one vmap)"
            if not report.ok(r):
                lines.append(f"| {r['engine_label']} | {gk} | {chunk} | {r.get('status')} | {r.get('error', '')} |||")
                continue
            lines.append(
                f"| {r['engine_label']} | {gk} | {chunk} | {r['compile_s']:.2f} | {report.time_cell(r)} | "
                f"{r['repeats']} | {report.rate_cell(r)} | {r['peak_rss_mb']:,.0f} |"
            )
    return "\n".join(lines + baseline_table(records) + report.retry_footnote(records))


def baseline_table(records: list[dict]) -> list[str]:
    """This checkout's jaxmor against ``--baseline``'s revision, case by case (none without such cases): the speed-up
    is this checkout's rate over the revision's, of the medians."""
    theirs = [r for r in records if r.get("jaxmor_rev")]
    if not theirs:
        return []
    ours = {(r["kind"], r["n_worlds"]): r for r in records if r["engine_label"] == "jaxmor"}
    rev, commit = theirs[0]["jaxmor_rev"], (theirs[0].get("jaxmor_rev_commit") or "")[:10]
    lines = [
        "",
        f"Against jaxmor at `{rev}` ({commit}), the same cases in the same run, each right after this checkout's: "
        "world-steps/s, median (min-max), and the speed-up (this checkout's median over the revision's).",
        "",
        f"| case | N | this checkout | {rev} | speed-up | compile [s]: this checkout, {rev} |",
        "|---|---|---|---|---|---|",
    ]
    for r in theirs:
        mine = ours.get((r["kind"], r["n_worlds"]))
        size = f"{r['n_worlds']:,}" + (f" x {r['n_steps']}" if r["kind"] == "grad" else "")
        compiles = ", ".join(f"{x['compile_s']:.3g}" if report.ok(x) else "-" for x in (mine, r))
        lines.append(
            f"| {r['kind']} | {size} | {report.rate_cell(mine)} | {report.rate_cell(r)} | "
            f"{report.ratio_cell(mine, r)} | {compiles} |"
        )
    return lines


SCENARIO = Scenario(
    name="quadruped",
    summary="jaxmor vs MuJoCo vs MJX on the shipped quadruped, and jaxmor's gradient (about 20 min on 2 cores)",
    description=__doc__,
    results_prefix="",
    table="bench",
    defaults={
        "sizes": "1,64,1024,4096",
        "steps": 100,
        "dt": 0.002,
        "repeats": 5,
        "case_budget": 240.0,
        "case_timeout": 1800.0,
        "engines": "jaxmor,mujoco,mjx",
        "engine_choices": ("jaxmor", "mujoco", "mjx", "mjwarp"),
    },
    plan=plan,
    render=render,
    add_options=add_options,
    prepare=prepare,
)
