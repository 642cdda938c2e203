"""One benchmark case, in a fresh process: ``python -m bench.case '<json spec>'`` (started by :mod:`bench.runner`).

A fresh process per case keeps the peak resident memory (``ru_maxrss``) a per-case figure and keeps one engine's
compilation caches and threads out of another's timings. The spec names its scenario, whose module's
``RUNNERS[(engine, kind)]`` runs it; the case prints one line ``BENCH_RESULT {json}`` on stdout, and progress
lines ``BENCH_PHASE ...`` on stderr (so that a case that hangs says where).

The protocol, the same for every engine and scenario:

* **one case** (:func:`run_single`): build the inputs; compile (JAX engines: ``lower`` then ``compile``, both
  timed; MuJoCo: its model's compile or load); one warm-up call, excluded; then ``repeats`` calls, each
  blocked on its outputs (``block_until_ready``; MuJoCo's rollout returns when done). When the warm-up call
  shows that ``repeats`` calls would exceed ``budget_s``, fewer calls are made, but never fewer than
  ``min_repeats``.
* **paired** (:func:`run_paired`): several programs compiled in one process, one warm-up call each, then
  ``rounds`` rounds that call every program once, in an order rotated by one from round to round (or the same
  order, for the envs scenario's protocol); each program's time over the baseline's of the same round is a
  ratio that the machine's drift between processes and over time cancels from.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable

import numpy as np

from bench import mujoco_settings

MARKER = "BENCH_RESULT "
PHASE = "BENCH_PHASE "


def phase(text: str) -> None:
    """Report progress on stderr, so that a case that hangs says where (the runner reads it)."""
    sys.stderr.write(f"{PHASE}{text}\n")
    sys.stderr.flush()


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far [MiB] (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return float("nan")


def device_memory() -> dict:
    """The first JAX device's memory statistics, if JAX is in use in this process and reports them (GPUs)."""
    if "jax" not in sys.modules:
        return {}
    import jax

    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # noqa: BLE001 - CPU devices may raise or return None
        stats = None
    if not stats:
        return {}
    keep = ("peak_bytes_in_use", "bytes_in_use", "bytes_limit")
    return {f"device_{k}": int(stats[k]) for k in keep if k in stats}


class Program:
    """One compiled program of a case: ``call()`` runs it once, blocked on its outputs; ``check()`` reads the last
    call's outputs into a dict of sanity figures; ``compile_s``; ``settings`` (what ran); ``timing`` (more
    compile-time fields); ``baseline_rss_mb`` (the process's RSS with the inputs built, before compiling);
    ``close()`` frees what the program holds (MuJoCo's thread pool)."""

    def __init__(self, call, check, compile_s, settings=None, timing=None, baseline_rss_mb=None, close=None):
        self.call, self.check, self.compile_s = call, check, compile_s
        self.settings, self.timing = dict(settings or {}), dict(timing or {})
        self.baseline_rss_mb = baseline_rss_mb
        self.close = close or (lambda: None)
        self.compiled = None  # the JAX engines' Compiled object


def jax_program(fn: Callable, args: tuple, check: Callable[[object], dict], settings: dict | None = None) -> Program:
    """``jax.jit(fn)`` for ``args``, lowered and compiled (both timed) after the inputs are blocked on."""
    import jax

    jax.block_until_ready(args)
    baseline = current_rss_mb()
    fn = fn if hasattr(fn, "lower") else jax.jit(fn)
    t = time.perf_counter()
    lowered = fn.lower(*args)
    lower_s = time.perf_counter() - t
    t = time.perf_counter()
    compiled = lowered.compile()
    xla_s = time.perf_counter() - t
    out = {}

    def call():
        out["r"] = jax.block_until_ready(compiled(*args))

    timing = {"lower_s": lower_s, "xla_compile_s": xla_s}
    program = Program(call, lambda: check(out["r"]), lower_s + xla_s, settings, timing, baseline)
    program.compiled = compiled
    return program


def spread_worlds(tree, n_worlds: int, spec: dict):
    """``tree`` (arrays with a leading world axis) split over the process's CPU devices along that axis, when the
    case asks for several (``spec["host_devices"]``, :data:`bench.runner.HOST_DEVICES_FLAG`), JAX runs on the CPU
    and ``n_worlds`` divides evenly; returns ``(tree, devices)``, ``devices`` 1 where nothing was split. The jit of
    the case then runs the devices' worlds side by side (XLA partitions the vmapped or grouped world axis)."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    count = jax.device_count()
    if int(spec.get("host_devices") or 1) < 2 or jax.default_backend() != "cpu" or count < 2 or n_worlds % count:
        return tree, 1
    sharding = NamedSharding(Mesh(np.array(jax.devices()), ("worlds",)), PartitionSpec("worlds"))
    return jax.device_put(tree, sharding), count


def mujoco_program(model, initial: np.ndarray, controls: np.ndarray, nthread: int, compile_s: float, settings=None):
    """``mujoco.rollout`` of ``model`` from the (n, state size) full-physics states ``initial`` under the (n, steps,
    nu) ``controls``, on ``nthread`` threads (0: the calling thread), into preallocated outputs. The check: the
    mean final base height (qpos[2]) and the count of non-finite worlds."""
    import mujoco
    from mujoco import rollout

    n, steps = controls.shape[:2]
    states = np.empty((n, steps, initial.shape[1]))
    sensordata = np.empty((n, steps, model.nsensordata))
    datas = [mujoco.MjData(model) for _ in range(max(nthread, 1))]
    controls = np.ascontiguousarray(controls)
    baseline = current_rss_mb()
    runner = rollout.Rollout(nthread=nthread)

    def call():
        runner.rollout(model, datas, initial, controls, state=states, sensordata=sensordata, nstep=steps)

    def check():
        final = states[:, -1]  # FULLPHYSICS: time, qpos, qvel, act, ...
        act = final[:, 1 + model.nq + model.nv : 1 + model.nq + model.nv + model.na]
        out = {
            "base_z_start": float(initial[0, 1 + 2]),
            "base_z_mean": float(np.mean(final[:, 1 + 2])),
            "nonfinite_worlds": int(np.sum(~np.all(np.isfinite(final), axis=1))),
        }
        out["act_abs_max"] = float(np.max(np.abs(act))) if model.na else 0.0
        return out

    settings = mujoco_settings.settings(
        model, {"nthread": nthread, "na": int(model.na), "dtype": "float64", **(settings or {})}
    )
    return Program(call, check, compile_s, settings, baseline_rss_mb=baseline, close=runner.close)


def mujoco_states(model, qpos: np.ndarray, n: int) -> np.ndarray:
    """(n, state size) MuJoCo full-physics states at ``qpos``, at rest (ctrl and everything else as MjData's
    defaults, or ``qpos`` and ctrl of a keyframe reset before), one per world."""
    import mujoco

    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    s0 = np.zeros(mujoco.mj_stateSize(model, full))
    mujoco.mj_getState(model, data, s0, full)
    return np.tile(s0, (n, 1))


def mjx_program(mj_model, qpos: np.ndarray, controls: np.ndarray, put_s: float, spec: dict | None = None) -> Program:
    """MJX: ``jax.jit(jax.vmap(...))`` of ``mjx.make_data`` at each world's ``qpos`` (n, nq) and a ``lax.scan`` of
    ``mjx.step`` setting ``ctrl`` from ``controls`` (n, steps, nu) before each step; float32; the worlds split over
    the CPU devices as jaxmor's are (:func:`spread_worlds`, ``spec``). ``put_s``: the time to make the MjModel and
    ``mjx.put_model`` it, recorded beside the compile time."""
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    t = time.perf_counter()
    mx = mjx.put_model(mj_model)
    put_s += time.perf_counter() - t
    (qpos, controls), devices = spread_worlds(
        (jnp.asarray(qpos, jnp.float32), jnp.asarray(controls, jnp.float32)), len(qpos), spec or {}
    )

    def one(q, c):
        d = mjx.make_data(mx).replace(qpos=q)
        d = jax.lax.scan(lambda d, u: (mjx.step(mx, d.replace(ctrl=u)), None), d, c)[0]
        return d.qpos, d.qvel

    def check(out):
        q, v = out
        finite = jnp.all(jnp.isfinite(q), 1) & jnp.all(jnp.isfinite(v), 1)
        return {
            "base_z_start": float(qpos[0, 2]),
            "base_z_mean": float(jnp.mean(q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(~finite)),
        }

    settings = mujoco_settings.settings(
        mj_model, {"impl": str(getattr(mx, "impl", "")), "dtype": "float32", "devices": devices}
    )
    program = jax_program(jax.vmap(one), (qpos, controls), check, settings)
    program.timing["put_model_s"] = put_s
    return program


# ---------------------------------------------------------------------------------------------- protocol


def time_calls(call: Callable[[], None], spec: dict) -> tuple[float, list[float]]:
    """(warm-up seconds, list of timed calls in seconds) per the module's protocol."""
    phase("warm-up call")
    t = time.perf_counter()
    call()
    warm = time.perf_counter() - t
    repeats = int(spec["repeats"])
    budget = float(spec.get("budget_s", 0) or 0)
    if budget > 0 and warm * repeats > budget:
        repeats = max(int(spec.get("min_repeats", 3)), int(budget // max(warm, 1e-9)))
        repeats = min(repeats, int(spec["repeats"]))
    times = []
    for i in range(repeats):
        phase(f"timed call {i + 1}/{repeats}")
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return warm, times


def run_single(program: Program, spec: dict) -> dict:
    """One program, the single-case protocol: a warm-up call, then the timed calls (:func:`time_calls`)."""
    try:
        warm, times = time_calls(program.call, spec)
    finally:
        program.close()
    return {
        "compile_s": program.compile_s,
        **program.timing,
        "warmup_s": warm,
        "times_s": times,
        "baseline_rss_mb": program.baseline_rss_mb,
        "check": program.check(),
        "settings": program.settings,
        **device_memory(),
    }


def run_paired(builders: dict[str, Callable[[], Program]], spec: dict, baseline: str, rotate: bool = True) -> dict:
    """The paired protocol: build and compile every program (``builders``, in order), one warm-up call each, then
    ``spec["rounds"]`` rounds calling each once, the order rotated by one per round if ``rotate``. Per program:
    its compile time, times, median, the median and range of its time over ``baseline``'s of the same round,
    check and settings. The record's own times, compile time and check are the baseline's."""
    import statistics

    names = list(builders)
    programs: dict[str, Program] = {}
    try:
        for name in names:
            phase(f"build and compile {name}")
            programs[name] = builders[name]()
        warm = {}
        for name in names:
            phase(f"warm-up call {name}")
            t = time.perf_counter()
            programs[name].call()
            warm[name] = time.perf_counter() - t
        times: dict[str, list[float]] = {n: [] for n in names}
        for r in range(int(spec["rounds"])):
            k = r % len(names) if rotate else 0
            for name in names[k:] + names[:k]:
                phase(f"round {r + 1}, {name}")
                t = time.perf_counter()
                programs[name].call()
                times[name].append(time.perf_counter() - t)
    finally:
        for p in programs.values():
            p.close()
    base = times[baseline]
    paired = {}
    for name in names:
        ratios = sorted(t / b for t, b in zip(times[name], base, strict=True))
        quart = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else (None, None, None)
        paired[name] = {
            "compile_s": programs[name].compile_s,
            **programs[name].timing,
            "warmup_s": warm[name],
            "times_s": times[name],
            "median_s": statistics.median(times[name]),
            "ratio_median": statistics.median(ratios),
            "ratio_min": ratios[0],
            "ratio_max": ratios[-1],
            "ratio_q1": quart[0],
            "ratio_q3": quart[2],
            "check": programs[name].check(),
            "settings": programs[name].settings,
        }
    return {
        "compile_s": programs[baseline].compile_s,
        "times_s": base,
        "baseline_rss_mb": programs[names[0]].baseline_rss_mb,
        "check": paired[baseline]["check"],
        "paired": paired,
        "settings": {"baseline": baseline, "programs": names, "rounds": int(spec["rounds"]), "rotated": rotate},
        **device_memory(),
    }


# ---------------------------------------------------------------------------------------------- entry

#: The scenarios by name: the module of each, with its ``SCENARIO`` (runner side) and ``RUNNERS`` (case side).
SCENARIOS = {
    "quadruped": "bench.quadruped",
    "go2": "bench.go2",
    "motor-dynamics": "bench.motor_dynamics",
    "envs": "bench.envs",
    "gpu-plan": "bench.gpu_plan",
}


def run_case(spec: dict) -> dict:
    """Run one case in this process; never raises (errors are reported in the result)."""
    result = {"status": "ok"}
    phase(f"start {spec['scenario']} {spec['engine']} {spec['kind']} N={spec['n_worlds']} (setup and compile)")
    try:
        runners = importlib.import_module(SCENARIOS[spec["scenario"]]).RUNNERS
        result.update(runners[(spec["engine"], spec["kind"])](spec))
    except Exception as exc:  # noqa: BLE001 - report, don't crash the whole benchmark
        result = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    result = run_case(json.loads(argv[0]))
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
