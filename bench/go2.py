"""jaxmor vs MuJoCo (C, ``mujoco.rollout``) vs MJX on the Unitree Go2 MJCF: ``python -m bench.go2 --help``.

All three engines read the same file (Menagerie's ``scene_mjx.xml``: 12 ``<general>`` position servos,
kp 50, a ``home`` keyframe), unchanged. Scenario: every world starts at the home keyframe with the base
``DROP`` higher and gets ``ctrl(t) = home ctrl + AMPLITUDE sin(2 pi FREQUENCY t + phase_ij)`` [rad], the phases
drawn once from a fixed seed; ``--steps`` steps per call, the file's time step. The protocol is bench/run.py's,
reused: a fresh process per case (``python -m bench.go2 --case SPEC`` runs :func:`bench.case.main` with this
module's runners), compile timed apart, a warm-up call, timed calls blocked on their outputs, hang detection
and a rerun with ``RETRY_FLAG``, JSON lines in ``bench/results/go2-<UTC date>.jsonl``. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import time
import uuid
import warnings
from pathlib import Path

import numpy as np

from bench import case, run

#: The Menagerie Go2 beside the repository (``../shared/robots/unitree_go2``), or ``$JAXMOR_GO2_DIR`` (``--xml``).
XML = Path(os.environ.get("JAXMOR_GO2_DIR", run.ROOT.parent / "shared" / "robots" / "unitree_go2")) / "scene_mjx.xml"
KEY = "home"
DROP = 0.02  # the base starts this much above the keyframe's [m]
AMPLITUDE = 0.3  # [rad]
FREQUENCY = 2.0  # [Hz]
SEED = 0
NAMES = {
    "jaxmor": "jaxmor",
    "jaxmor-vmap": "jaxmor (one vmap)",
    "mujoco": "MuJoCo",
    "mujoco-1t": "MuJoCo 1t",
    "mjx": "MJX",
}
TABLE_START, TABLE_END = "<!-- go2-table:start -->", "<!-- go2-table:end -->"


def controls(home_ctrl: np.ndarray, n_worlds: int, n_steps: int, dt: float) -> np.ndarray:
    """(n_worlds, n_steps, nu) position targets, float64; the first n worlds are the same for every N."""
    phase = np.random.default_rng(SEED).uniform(0.0, 2 * np.pi, size=(n_worlds, home_ctrl.size))
    t = np.arange(n_steps) * dt
    return home_ctrl + AMPLITUDE * np.sin(2 * np.pi * FREQUENCY * t[None, :, None] + phase[:, None, :])


def _check_dt(spec: dict, dt: float) -> None:
    if abs(dt - spec["dt"]) > 1e-9:
        raise ValueError(f"time step {dt} differs from MuJoCo's {spec['dt']} for the same file")


# ---------------------------------------------------------------------------------------------- cases


def run_jaxmor(spec: dict) -> dict:
    import jax
    import jax.numpy as jnp

    import jaxmor

    n, steps = spec["n_worlds"], spec["n_steps"]
    with warnings.catch_warnings():  # the feet's condim 6: jaxmor keeps their sliding friction only
        warnings.filterwarnings("ignore", message=".*no torsional or rolling friction")
        model = jaxmor.load_mjcf(spec["xml"])
    _check_dt(spec, float(model.opt.timestep))
    s0 = jaxmor.set_keyframe(model, jaxmor.init_state(model), KEY)
    s0 = s0.replace(q=s0.q.at[2].add(DROP))
    states = jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n, *x.shape))), s0)
    ctrl = jnp.asarray(controls(np.asarray(s0.ctrl, np.float64), n, steps, spec["dt"]), s0.ctrl.dtype)
    jax.block_until_ready((states, ctrl))
    baseline = case._current_rss_mb()

    def world(s, c):  # c: (steps, nu), one ctrl per step
        return jax.lax.scan(lambda s, c_t: (jaxmor.step(model, s.replace(ctrl=c_t)), None), s, c)[0]

    chunk = min(int(spec.get("chunk") or n), n)
    if n % chunk:
        raise ValueError(f"N = {n} is not a multiple of the chunk size {chunk}")

    def worlds(s, c):  # chunks of `chunk` vmapped worlds, one after the other (as jaxmor.rollout_batch)
        split = jax.tree.map(lambda x: x.reshape((n // chunk, chunk, *x.shape[1:])), (s, c))
        out = jax.lax.map(lambda a: jax.vmap(world)(*a), split)
        return jax.tree.map(lambda x: x.reshape((n, *x.shape[2:])), out)

    final, timing = case._compile_and_time(jax.jit(worlds), (states, ctrl), spec)
    return {
        **timing,
        "baseline_rss_mb": baseline,
        "check": {
            "base_z_start": float(s0.q[2]),
            "base_z_mean": float(jnp.mean(final.q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(final.nonfinite)),
        },
        "settings": {
            "chunk": spec.get("chunk") or None,
            "solver_iterations": int(model.opt.solver_iterations),
            "position_iterations": int(model.opt.position_iterations),
            "dtype": str(final.q.dtype),
        },
        **case._jax_device_memory(),
    }


def _mujoco_start(spec: dict):
    """(model, load seconds, home state with the base DROP higher, home ctrl)."""
    import mujoco

    t = time.perf_counter()
    model = mujoco.MjModel.from_xml_path(spec["xml"])
    load_s = time.perf_counter() - t
    _check_dt(spec, model.opt.timestep)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, KEY))
    data.qpos[2] += DROP
    return model, load_s, data, data.ctrl.copy()


def _mujoco_settings(model) -> dict:
    o = model.opt
    keys = ("integrator", "solver", "iterations", "ls_iterations", "cone")
    return {**{k: int(getattr(o, k)) for k in keys}, "impratio": float(o.impratio)}


def run_mujoco(spec: dict) -> dict:
    import mujoco
    from mujoco import rollout

    n, steps, nthread = spec["n_worlds"], spec["n_steps"], int(spec["nthread"])
    model, load_s, data, home_ctrl = _mujoco_start(spec)
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    s0 = np.zeros(mujoco.mj_stateSize(model, full))
    mujoco.mj_getState(model, data, s0, full)
    initial = np.tile(s0, (n, 1))
    ctrl = np.ascontiguousarray(controls(home_ctrl, n, steps, spec["dt"]))
    states = np.empty((n, steps, s0.size))
    sensordata = np.empty((n, steps, model.nsensordata))
    datas = [mujoco.MjData(model) for _ in range(max(nthread, 1))]
    baseline = case._current_rss_mb()
    runner = rollout.Rollout(nthread=nthread)
    try:

        def call():
            runner.rollout(model, datas, initial, ctrl, state=states, sensordata=sensordata, nstep=steps)

        warm, times = case._time_calls(call, spec)
    finally:
        runner.close()
    final = states[:, -1]  # FULLPHYSICS: time, qpos, qvel, ...
    return {
        "compile_s": load_s,
        "warmup_s": warm,
        "times_s": times,
        "baseline_rss_mb": baseline,
        "check": {
            "base_z_start": float(s0[1 + 2]),
            "base_z_mean": float(np.mean(final[:, 1 + 2])),
            "nonfinite_worlds": int(np.sum(~np.all(np.isfinite(final), axis=1))),
        },
        "settings": {"nthread": nthread, **_mujoco_settings(model), "dtype": "float64"},
    }


def run_mjx(spec: dict) -> dict:
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    n, steps = spec["n_worlds"], spec["n_steps"]
    mj_model, load_s, data, home_ctrl = _mujoco_start(spec)
    t = time.perf_counter()
    mx = mjx.put_model(mj_model)
    put_s = time.perf_counter() - t
    qpos = jnp.array(jnp.broadcast_to(jnp.asarray(data.qpos, jnp.float32), (n, mj_model.nq)))
    ctrl = jnp.asarray(controls(home_ctrl, n, steps, spec["dt"]), jnp.float32)

    def world(q, c):
        d = mjx.make_data(mx).replace(qpos=q)
        d = jax.lax.scan(lambda d, c_t: (mjx.step(mx, d.replace(ctrl=c_t)), None), d, c)[0]
        return d.qpos, d.qvel

    jax.block_until_ready((qpos, ctrl))
    baseline = case._current_rss_mb()
    (q, v), timing = case._compile_and_time(jax.jit(jax.vmap(world)), (qpos, ctrl), spec)
    finite = jnp.all(jnp.isfinite(q), 1) & jnp.all(jnp.isfinite(v), 1)
    return {
        **timing,
        "load_s": load_s,
        "put_model_s": put_s,
        "baseline_rss_mb": baseline,
        "check": {
            "base_z_start": float(data.qpos[2]),
            "base_z_mean": float(jnp.mean(q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(~finite)),
        },
        "settings": {"impl": str(getattr(mx, "impl", "")), **_mujoco_settings(mj_model), "dtype": str(q.dtype)},
        **case._jax_device_memory(),
    }


RUNNERS = {("jaxmor", "forward"): run_jaxmor, ("mujoco", "forward"): run_mujoco, ("mjx", "forward"): run_mjx}


# ---------------------------------------------------------------------------------------------- runner


def measure(args) -> tuple[list[dict], Path]:
    import mujoco

    now = _dt.datetime.now(_dt.timezone.utc)
    out = Path(args.out) if args.out else run.BENCH_DIR / "results" / f"go2-{now:%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    run_id = f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    machine, vers, device = run.machine_info(), run.versions(), run.device_info()
    available = run.engine_availability([x.strip() for x in args.engines.split(",")])
    print(f"go2 bench run {run_id}: {machine['cpu']} ({machine['cores']} cores), {device.get('backend')}; -> {out}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(run.ROOT), env.get("PYTHONPATH", "")) if x)

    # bench.run's plan (labels, MuJoCo's 1-thread row, the MJX cap), at the file's time step, no gradient.
    args.dt = float(mujoco.MjModel.from_xml_path(str(args.xml)).opt.timestep)
    args.grad_worlds, args.mujoco_single_thread = 0, True
    cases = [c for c in run.plan_cases(args, available) if args.jaxmor_vmap or c["engine_label"] != "jaxmor-vmap"]
    context = {"run_id": run_id, "machine": machine, "device": device, "versions": vers}
    extra = {"scenario": "go2", "xml": str(args.xml)}
    records = run.run_cases(cases, args, env, out, context, ("-m", "bench.go2", "--case"), extra)
    return records, out


def render(records: list[dict]) -> str:
    """bench.run's tables, then the sanity check: mean final base height per engine and N."""
    labels = [x for x in NAMES if any(r["engine_label"] == x for r in records)]
    sizes = sorted({r["n_worlds"] for r in records})
    by = {(r["engine_label"], r["n_worlds"]): r for r in records}

    def z(r):
        if r is None or r.get("status") != "ok":
            return "-" if r is None else r["status"]
        c = r["check"]
        return f"{c['base_z_mean']:.4f}" + (f" ({c['nonfinite_worlds']} non-finite)" if c["nonfinite_worlds"] else "")

    starts = ", ".join(sorted({f"{r['check']['base_z_start']:.4f}" for r in records if r.get("status") == "ok"}))
    loads = [r["loadavg_1min_before"] for r in records if r.get("loadavg_1min_before") is not None]
    lines = [
        run.render_table(records).replace("MuJoCo: `MjSpec.compile`", "MuJoCo: `MjModel.from_xml_path`"),
        "",
        f"Mean final base height [m] after {records[0]['n_steps']} steps, from {starts} m (the keyframe's plus "
        f"{DROP} m); 1-minute load average before the cases: {min(loads):.2f}-{max(loads):.2f}.",
        "",
        "| N | " + " | ".join(NAMES[x] for x in labels) + " |",
        "|" + "---|" * (len(labels) + 1),
    ]
    lines += [f"| {n:,} | " + " | ".join(z(by.get((x, n))) for x in labels) + " |" for n in sizes]
    return "\n".join(lines)


def update_readme(path: Path, records: list[dict], results: Path) -> None:
    r0 = records[0]
    m, v, d = r0["machine"], r0["versions"], r0["device"]
    header = (
        f"Run `{r0['run_id']}` ({r0['date'][:10]}), results in `{results.resolve().relative_to(run.ROOT)}`. "
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['mem_gib']} GiB; JAX {v['jax']} on {d.get('backend')} "
        f"({', '.join(d.get('devices', []))}); MuJoCo {v['mujoco']}, MJX {v['mujoco_mjx']}; jaxmor {v['jaxmor']}"
        + (f" ({v['jaxmor_commit'][:10]})" if v.get("jaxmor_commit") else "")
        + "."
    )
    run.write_block(path, TABLE_START, TABLE_END, f"{header}\n\n{render(records)}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--case"]:  # one case, in this fresh process
        case.RUNNERS.update(RUNNERS)
        return case.main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m bench.go2", description=__doc__.splitlines()[0])
    p.add_argument("--xml", type=Path, default=XML, help=f"the Go2 MJCF scene (default {XML})")
    p.add_argument("--sizes", default="1,64,1024", help="comma-separated world counts (default 1,64,1024)")
    p.add_argument("--steps", type=int, default=100, help="steps per call (default 100)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per case after one warm-up (default 5)")
    p.add_argument("--min-repeats", type=int, default=3, help="fewest timed calls under --case-budget (default 3)")
    p.add_argument("--case-budget", type=float, default=120.0, help="seconds of timed calls per case (default 120)")
    p.add_argument("--engines", default="jaxmor,mujoco,mjx", help="comma-separated: jaxmor, mujoco, mjx")
    p.add_argument(
        "--jaxmor-chunk",
        type=int,
        default=256,
        help="jaxmor's worlds per vmapped chunk; a bigger N must be a multiple (0: one vmap)",
    )
    p.add_argument("--jaxmor-vmap", action="store_true", help="above one chunk, time one vmap over all worlds too")
    p.add_argument("--mjx-max-worlds", type=int, default=run.DEFAULT_MJX_MAX, help="skip MJX above this N (0: no cap)")
    p.add_argument("--case-timeout", type=float, default=1800.0, help="kill a case after this many seconds")
    p.add_argument("--hang-timeout", type=float, default=120.0, help="kill a case using no CPU this long (0: off)")
    p.add_argument("--no-retry-hung", dest="retry_hung", action="store_false", help="don't rerun a hung case")
    p.add_argument("--out", help="JSON-lines file to append to (default bench/results/go2-<UTC date>.jsonl)")
    p.add_argument("--no-readme", action="store_true", help="don't regenerate bench/README.md's Go2 table")
    p.add_argument("--from-results", type=Path, metavar="FILE", help="run nothing: tabulate FILE's latest run")
    args = p.parse_args(argv)
    if args.from_results:
        records = [json.loads(x) for x in args.from_results.read_text().splitlines() if x.strip()]
        records, out = [r for r in records if r["run_id"] == records[-1]["run_id"]], args.from_results
    else:
        records, out = measure(args)
    print(render(records))
    if not args.no_readme:
        update_readme(run.README, records, out)
        print(f"updated {run.README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
