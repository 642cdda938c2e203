"""Benchmark runner: jaxmor vs MuJoCo (C, ``mujoco.rollout``) vs MJX on the quadruped.

``python -m bench --help`` (or ``python bench/run.py``). Every case runs in a fresh subprocess
(:mod:`bench.case`), prints one progress line, and is appended to a JSON-lines file with the
machine, device, versions and date; at the end ``bench/README.md``'s table is regenerated from the
cases of this run. See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata as _md
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):  # `python bench/run.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.case import MARKER, PHASE  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
README = BENCH_DIR / "README.md"
TABLE_START = "<!-- bench-table:start -->"
TABLE_END = "<!-- bench-table:end -->"

DEFAULT_SIZES = "1,64,1024,4096"
DEFAULT_MJX_MAX = 1024
# Retried with when a case deadlocks (jaxlib 0.10.2's LAPACK kernels on a small CPU thread pool; see README).
RETRY_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
SCHEMA = 1


# ------------------------------------------------------------------------------------------ environment


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine_info() -> dict:
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": affinity,
        "mem_gib": _mem_total_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def _version(dist: str) -> str | None:
    try:
        return _md.version(dist)
    except _md.PackageNotFoundError:
        return None


def _jaxmor_commit() -> str | None:
    """The checkout's commit, read from .git without running git (None if unavailable)."""
    head = ROOT / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            path = ROOT / ".git" / ref[5:]
            if path.exists():
                return path.read_text().strip()
            packed = ROOT / ".git" / "packed-refs"
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref[5:]):
                    return line.split()[0]
            return None
        return ref
    except OSError:
        return None


def versions() -> dict:
    return {
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "jaxmor": _version("jaxmor"),
        "jaxmor_commit": _jaxmor_commit(),
        "mujoco": _version("mujoco"),
        "mujoco_mjx": _version("mujoco-mjx"),
        "numpy": _version("numpy"),
    }


def device_info() -> dict:
    """JAX's devices, asked in a subprocess so this process never initializes a JAX backend."""
    code = (
        "import json, jax; d = jax.devices(); "
        "print(json.dumps({'backend': jax.default_backend(), 'devices': [str(x) for x in d], "
        "'device_kind': d[0].device_kind}))"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001
        return {"backend": "unknown", "error": str(exc)}


def engine_availability(engines: list[str]) -> dict[str, str | None]:
    """None where the engine imports; otherwise why not (checked in a subprocess, requested engines only)."""
    checks = {"mujoco": "import mujoco, mujoco.rollout", "mjx": "import mujoco, jax; from mujoco import mjx"}
    out = {"jaxmor": None}
    for name, code in checks.items():
        if name not in engines:
            continue
        try:
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
        except subprocess.TimeoutExpired:
            out[name] = "import timed out"
            continue
        if r.returncode == 0:
            out[name] = None
        else:
            lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
            out[name] = lines[-1] if lines else f"import failed (exit {r.returncode})"
    return out


# ------------------------------------------------------------------------------------------ running


def _cpu_ticks(pid: int) -> int | None:
    """utime + stime of a process, all threads (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def _last_phase(stderr: str) -> str | None:
    phases = [x for x in stderr.splitlines() if x.startswith(PHASE)]
    return phases[-1][len(PHASE) :].strip() if phases else None


def run_subprocess_case(
    spec: dict, timeout_s: float, env: dict, hang_s: float = 0.0, command: tuple[str, ...] = ("-m", "bench.case")
) -> dict:
    """Run one case in a fresh interpreter (``python COMMAND SPEC``); the result dict, with status
    timeout/hung/error on failure.

    ``hang_s`` > 0: a case process that uses (almost) no CPU for that many seconds is deadlocked
    (see bench/README.md) and is killed, with status ``hung``.
    """
    cmd = [sys.executable, *command, json.dumps(spec)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    tick_s = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
    history: list[tuple[float, int]] = []  # (wall time, CPU ticks) samples of the case process
    status = None
    while True:
        try:
            stdout, stderr = proc.communicate(timeout=5.0)
            break
        except subprocess.TimeoutExpired:
            now = time.perf_counter()
            ticks = _cpu_ticks(proc.pid)
            if ticks is not None:
                history.append((now, ticks))
            if now - t0 > timeout_s:
                status = ("timeout", f"no result within {timeout_s:.0f} s")
            elif hang_s > 0 and history and now - history[0][0] >= hang_s:
                # Hung: under 2% of one core over the last hang_s seconds (a deadlocked process still
                # ticks now and then: timer threads).
                old = [h for h in history if now - h[0] >= hang_s][-1]
                if (history[-1][1] - old[1]) * tick_s < 0.02 * (now - old[0]):
                    status = ("hung", f"used no CPU for {hang_s:.0f} s (deadlocked), killed")
            if status:
                proc.kill()
                stdout, stderr = proc.communicate()
                break
    wall = time.perf_counter() - t0
    if status is not None:
        phase = _last_phase(stderr or "")
        error = status[1] + (f"; last phase: {phase}" if phase else "")
        return {"status": status[0], "error": error, "stderr_tail": (stderr or "")[-2000:], "process_wall_s": wall}
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER) :])
            result["process_wall_s"] = wall
            return result
    return {
        "status": "error",
        "error": f"case process exited {proc.returncode} without a result",
        "stderr_tail": stderr[-2000:],
        "process_wall_s": wall,
    }


def summarize(result: dict, n_worlds: int, n_steps: int) -> dict:
    """Add median/min/max/IQR of the call times and the world-steps/s they imply."""
    times = result.get("times_s") or []
    if not times:
        return result
    ts = sorted(times)
    med = statistics.median(ts)
    work = n_worlds * n_steps
    result.update(
        {
            "repeats": len(ts),
            "median_s": med,
            "min_s": ts[0],
            "max_s": ts[-1],
            "world_steps": work,
            "wsps_median": work / med,
            "wsps_min": work / ts[-1],
            "wsps_max": work / ts[0],
        }
    )
    if len(ts) >= 4:
        q = statistics.quantiles(ts, n=4)
        result["q1_s"], result["q3_s"] = q[0], q[2]
    return result


def _fmt_rate(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def progress_line(i: int, total: int, rec: dict) -> str:
    head = f"[{i:2d}/{total}] {rec['engine_label']:<10} {rec['kind']:<7} N={rec['n_worlds']:<6} K={rec['n_steps']:<4}"
    if rec.get("status") != "ok":
        return f"{head} {rec.get('status', '?').upper()}: {rec.get('error', '')}"
    spread = f"{rec['min_s'] * 1e3:,.1f}-{rec['max_s'] * 1e3:,.1f}"
    return (
        f"{head} compile {rec.get('compile_s', float('nan')):7.3f} s | median {rec['median_s'] * 1e3:10,.1f} ms/call "
        f"(min-max {spread}, {rec['repeats']} reps) | {_fmt_rate(rec['wsps_median'])} world-steps/s | "
        f"peak {rec.get('peak_rss_mb', float('nan')):,.0f} MB"
    )


def plan_cases(args, available: dict[str, str | None]) -> list[dict]:
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    engines = [x.strip() for x in args.engines.split(",") if x.strip()]
    common = {"n_steps": args.steps, "dt": args.dt, "repeats": args.repeats, "min_repeats": args.min_repeats}
    common["budget_s"] = args.case_budget
    cases: list[dict] = []
    for engine in engines:
        if engine not in ("jaxmor", "mujoco", "mjx"):
            raise SystemExit(f"unknown engine {engine!r} (choose from jaxmor, mujoco, mjx)")
        for n in sizes:
            base = {**common, "n_worlds": n, "kind": "forward"}
            if engine == "jaxmor":
                # `jaxmor`: jaxmor.rollout_batch (vmapped chunks of --jaxmor-chunk worlds), the API for big
                # batches; above one chunk, one vmap over all worlds too (`jaxmor-vmap`), for comparison.
                chunk = args.jaxmor_chunk
                cases.append({**base, "engine": "jaxmor", "engine_label": "jaxmor", "chunk": chunk})
                if chunk and n > chunk:
                    cases.append({**base, "engine": "jaxmor", "engine_label": "jaxmor-vmap", "chunk": 0})
            elif engine == "mujoco":
                threads = os.cpu_count() or 1
                cases.append({**base, "engine": "mujoco", "engine_label": "mujoco", "nthread": threads})
                if args.mujoco_single_thread:
                    cases.append({**base, "engine": "mujoco", "engine_label": "mujoco-1t", "nthread": 0})
            elif engine == "mjx":
                case = {**base, "engine": "mjx", "engine_label": "mjx"}
                if args.mjx_max_worlds and n > args.mjx_max_worlds:
                    case.update(status="skipped", error=f"N > --mjx-max-worlds {args.mjx_max_worlds}")
                cases.append(case)
        if engine == "jaxmor" and args.grad_worlds > 0 and args.grad_steps > 0:
            cases.append(
                {
                    **common,
                    "engine": "jaxmor",
                    "engine_label": "jaxmor",
                    "kind": "grad",
                    "n_worlds": args.grad_worlds,
                    "n_steps": args.grad_steps,
                    "grad_chunk": args.grad_chunk,
                }
            )
    for case in cases:
        why = available.get(case["engine"])
        if why is not None and case.get("status") is None:
            case.update(status="skipped", error=f"{case['engine']} unavailable: {why}")
    return cases


def run_cases(
    cases: list[dict],
    args,
    env: dict,
    out: Path,
    context: dict,
    command: tuple[str, ...] = ("-m", "bench.case"),
    extra: dict | None = None,
) -> list[dict]:
    """Run the planned cases one process each (``python COMMAND SPEC``), rerun a hung one once with
    :data:`RETRY_FLAG`, and append each record (``context``: run id, machine, device, versions; ``extra``: more
    fields of the spec) to the JSON-lines file ``out``; returns the records."""
    records = []
    for i, case in enumerate(cases, 1):
        spec = {k: v for k, v in case.items() if k not in ("status", "error")}
        spec.update(extra or {})
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        flags = env.get("XLA_FLAGS", "")
        if case.get("status") == "skipped":
            result = {"status": "skipped", "error": case["error"]}
        else:
            result = run_subprocess_case(spec, args.case_timeout, env, args.hang_timeout, command)
            if result["status"] == "hung" and args.retry_hung and RETRY_FLAG not in flags:
                print(f"[{i:2d}/{len(cases)}] {result['error']}; retrying with XLA_FLAGS+={RETRY_FLAG}", flush=True)
                first = {k: result[k] for k in ("status", "error") if k in result}
                flags = f"{flags} {RETRY_FLAG}".strip()
                result = run_subprocess_case(
                    spec, args.case_timeout, {**env, "XLA_FLAGS": flags}, args.hang_timeout, command
                )
                result["retried_after_hang"] = first
        if "traceback" in result:
            result["traceback"] = result["traceback"][-4000:]
        rec = {
            "schema": SCHEMA,
            **context,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "xla_flags": flags,
            "loadavg_1min_before": load,
            **spec,
            **result,
        }
        rec = summarize(rec, rec["n_worlds"], rec["n_steps"])
        records.append(rec)
        with out.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(progress_line(i, len(cases), rec), flush=True)
    return records


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"comma-separated world counts (default {DEFAULT_SIZES})")
    p.add_argument("--steps", type=int, default=100, help="steps per rollout, one lax.scan (default 100)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per case, after one warm-up (default 5)")
    p.add_argument("--min-repeats", type=int, default=3, help="fewest timed calls under --case-budget (default 3)")
    p.add_argument(
        "--case-budget",
        type=float,
        default=240.0,
        help="seconds of timed calls per case; slower cases make fewer calls, >= --min-repeats (default 240; 0: off)",
    )
    p.add_argument("--engines", default="jaxmor,mujoco,mjx", help="comma-separated: jaxmor, mujoco, mjx")
    p.add_argument("--dt", type=float, default=0.002, help="time step [s] (default 0.002)")
    p.add_argument("--grad-worlds", type=int, default=64, help="worlds in the gradient case (0: no gradient case)")
    p.add_argument("--grad-steps", type=int, default=50, help="steps in the gradient case (default 50)")
    p.add_argument(
        "--grad-chunk",
        type=int,
        default=32,
        help="vmap the gradient's worlds in chunks of this many (lax.map); 0: one vmap (see README) (default 32)",
    )
    p.add_argument(
        "--jaxmor-chunk",
        type=int,
        default=256,
        help="jaxmor's forward cases use jaxmor.rollout_batch with chunks of this many worlds; above it, one "
        "vmap over all worlds is measured too (0: one vmap only) (default 256)",
    )
    p.add_argument(
        "--mjx-max-worlds", type=int, default=DEFAULT_MJX_MAX, help="skip MJX above this N (0: no cap; default 1024)"
    )
    p.add_argument(
        "--no-mujoco-single-thread",
        dest="mujoco_single_thread",
        action="store_false",
        help="skip MuJoCo's 1-thread row",
    )
    p.add_argument("--case-timeout", type=float, default=1800.0, help="kill a case after this many seconds")
    p.add_argument(
        "--hang-timeout",
        type=float,
        default=120.0,
        help="kill a case whose process uses no CPU for this many seconds: a deadlock (0: off; default 120)",
    )
    p.add_argument(
        "--no-retry-hung",
        dest="retry_hung",
        action="store_false",
        help=f"don't rerun a hung case once with XLA_FLAGS+={RETRY_FLAG}",
    )
    p.add_argument("--out", default=None, help="JSON-lines file to append to (default bench/results/<date>.jsonl)")
    p.add_argument("--no-readme", action="store_true", help="don't regenerate bench/README.md's table")
    p.add_argument("--readme", default=str(README), help=argparse.SUPPRESS)
    p.add_argument(
        "--from-results",
        metavar="FILE",
        help="run nothing: print the table of FILE's latest run (or --run-id) and regenerate the README from it",
    )
    p.add_argument("--run-id", help="with --from-results: the run to tabulate")
    args = p.parse_args(argv)

    if args.from_results:
        return table_from_results(Path(args.from_results), args.run_id, None if args.no_readme else Path(args.readme))

    now = _dt.datetime.now(_dt.timezone.utc)
    out = Path(args.out) if args.out else BENCH_DIR / "results" / f"{now:%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)

    run_id = f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    machine, vers, device = machine_info(), versions(), device_info()
    available = engine_availability([x.strip() for x in args.engines.split(",")])
    for name, why in available.items():
        if why is not None:
            print(f"note: {name} unavailable, its cases are skipped: {why}", flush=True)
    print(
        f"bench run {run_id}: {machine['cpu']} ({machine['cores']} cores), JAX {vers['jax']} on "
        f"{device.get('backend')} {device.get('devices')}; appending to {out}",
        flush=True,
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env.get("PYTHONPATH", "")) if x)

    cases = plan_cases(args, available)
    context = {"run_id": run_id, "machine": machine, "device": device, "versions": vers}
    records = run_cases(cases, args, env, out, context)
    print(render_table(records), flush=True)
    if not args.no_readme:
        update_readme(Path(args.readme), records, out)
        print(f"updated {args.readme}", flush=True)
    return 0


# ------------------------------------------------------------------------------------------ reporting


def table_from_results(path: Path, run_id: str | None, readme: Path | None) -> int:
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    if not records:
        raise SystemExit(f"{path}: no records")
    run_id = run_id or records[-1]["run_id"]
    records = [r for r in records if r["run_id"] == run_id]
    if not records:
        raise SystemExit(f"{path}: no records of run {run_id}")
    print(render_table(records))
    if readme is not None:
        update_readme(readme, records, path)
        print(f"updated {readme}")
    return 0


def _mark(rec: dict) -> str:
    """A dagger on a case that ran with a non-default XLA flag (retried after a deadlock)."""
    return " \u2020" if RETRY_FLAG in (rec.get("xla_flags") or "") else ""


def _cell(rec: dict | None) -> str:
    if rec is None:
        return "-"
    if rec.get("status") != "ok":
        return rec.get("status", "-")
    return f"{_fmt_rate(rec['wsps_median'])} ({_fmt_rate(rec['wsps_min'])}-{_fmt_rate(rec['wsps_max'])}){_mark(rec)}"


def _ratio(a: dict | None, b: dict | None) -> str:
    if not a or not b or a.get("status") != "ok" or b.get("status") != "ok":
        return "-"
    r = a["wsps_median"] / b["wsps_median"]
    return f"{r:.3g}"


def _time_cell(rec: dict | None) -> str:
    if rec is None or rec.get("status") != "ok":
        return "-" if rec is None else rec.get("status", "-")
    return f"{rec['median_s'] * 1e3:,.1f} ({rec['min_s'] * 1e3:,.1f}-{rec['max_s'] * 1e3:,.1f})"


def render_table(records: list[dict]) -> str:
    """Markdown tables of one run: throughput with ratios, then compile/memory, then the gradient."""
    fwd = [r for r in records if r["kind"] == "forward"]
    by = {(r["engine_label"], r["n_worlds"]): r for r in fwd}
    sizes = sorted({r["n_worlds"] for r in fwd})
    labels = ["jaxmor", "jaxmor-vmap", "mujoco", "mujoco-1t", "mjx"]
    present = [x for x in labels if any(k[0] == x for k in by)]
    chunks = {r.get("settings", {}).get("chunk") for r in fwd if r["engine_label"] == "jaxmor"}
    chunk = next(iter(chunks)) if len(chunks) == 1 else None
    names = {
        "jaxmor": f"jaxmor (chunks of {chunk})" if chunk else "jaxmor",
        "jaxmor-vmap": "jaxmor (one vmap)",
        "mujoco": "MuJoCo (all cores)",
        "mujoco-1t": "MuJoCo (1 thread)",
        "mjx": "MJX",
    }
    steps = fwd[0]["n_steps"] if fwd else None
    lines = []
    if fwd:
        lines.append(
            f"World-steps/s, median (min-max) over the timed calls; each call is N worlds x {steps} steps. "
            "Ratios are of the medians."
        )
        lines.append("")
        head = ["N"] + [names[x] for x in present]
        if "jaxmor" in present and "mujoco" in present:
            head.append("jaxmor / MuJoCo")
        if "jaxmor" in present and "mujoco-1t" in present:
            head.append("jaxmor / MuJoCo 1t")
        if "jaxmor" in present and "mjx" in present:
            head.append("jaxmor / MJX")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for n in sizes:
            row = [f"{n:,}"] + [_cell(by.get((x, n))) for x in present]
            if "jaxmor" in present and "mujoco" in present:
                row.append(_ratio(by.get(("jaxmor", n)), by.get(("mujoco", n))))
            if "jaxmor" in present and "mujoco-1t" in present:
                row.append(_ratio(by.get(("jaxmor", n)), by.get(("mujoco-1t", n))))
            if "jaxmor" in present and "mjx" in present:
                row.append(_ratio(by.get(("jaxmor", n)), by.get(("mjx", n))))
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        lines.append(
            "Per case: compile time (JAX: `lower` + `compile`; MuJoCo: `MjSpec.compile`), milliseconds per call, "
            "median (min-max), timed calls, and the case process's peak resident memory (its RSS before the "
            "timed code in brackets)."
        )
        lines.append("")
        lines.append("| engine | N | compile [s] | ms per call | calls | peak RSS [MB] |")
        lines.append("|---|---|---|---|---|---|")
        for x in present:
            for n in sizes:
                r = by.get((x, n))
                if r is None:
                    continue
                if r.get("status") != "ok":
                    lines.append(f"| {names[x]} | {n:,} | {r.get('status')} | {r.get('error', '')} | | |")
                    continue
                base = r.get("baseline_rss_mb")
                mem = f"{r['peak_rss_mb']:,.0f}" + (f" ({base:,.0f})" if base is not None else "")
                lines.append(
                    f"| {names[x]}{_mark(r)} | {n:,} | {r.get('compile_s', float('nan')):.3g} | {_time_cell(r)} | "
                    f"{r['repeats']} | {mem} |"
                )
    grads = [r for r in records if r["kind"] == "grad"]
    if grads:
        lines.append("")
        lines.append(
            "Gradient: `jax.value_and_grad` of the sum of the final joint velocities of G worlds x K steps with "
            "respect to every motor's resistance, torque constant and velocity constant."
        )
        lines.append("")
        lines.append("| engine | G x K | chunk | compile [s] | ms per call | calls | world-steps/s | peak RSS [MB] |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for r in grads:
            gk = f"{r['n_worlds']} x {r['n_steps']}"
            chunk = r.get("settings", {}).get("grad_chunk", r.get("grad_chunk")) or "none (one vmap)"
            if r.get("status") != "ok":
                lines.append(f"| {r['engine_label']} | {gk} | {chunk} | {r.get('status')} | {r.get('error', '')} |||")
                continue
            lines.append(
                f"| {r['engine_label']} | {gk} | {chunk} | {r['compile_s']:.2f} | {_time_cell(r)} | {r['repeats']} | "
                f"{_cell(r)} | {r['peak_rss_mb']:,.0f} |"
            )
    if any(_mark(r) for r in records):
        lines.append("")
        lines.append(
            f"\u2020 deadlocked with the default XLA flags (jaxlib 0.10.2; see the README) and was rerun with "
            f"`XLA_FLAGS={RETRY_FLAG}`."
        )
    return "\n".join(lines)


def update_readme(path: Path, records: list[dict], results_file: Path) -> None:
    """Replace the text between the table markers of ``path`` (appending the markers if absent)."""
    r0 = records[0] if records else {}
    m, v, d = r0.get("machine", {}), r0.get("versions", {}), r0.get("device", {})
    try:
        rel = results_file.resolve().relative_to(ROOT)
    except ValueError:
        rel = results_file
    header = (
        f"Run `{r0.get('run_id')}` ({r0.get('date', '')[:10]}), results in `{rel}`. "
        f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('mem_gib')} GiB; "
        f"JAX {v.get('jax')} on {d.get('backend')} ({', '.join(d.get('devices', []))}); "
        f"MuJoCo {v.get('mujoco')}, MJX {v.get('mujoco_mjx')}; jaxmor {v.get('jaxmor')}"
        + (f" ({v['jaxmor_commit'][:10]})" if v.get("jaxmor_commit") else "")
        + "."
    )
    write_block(path, TABLE_START, TABLE_END, f"{header}\n\n{render_table(records)}")


def write_block(path: Path, start: str, end: str, body: str) -> None:
    """Put ``body`` between the markers ``start`` and ``end`` of ``path`` (a README), replacing what was there, or
    append the markers with it (``path`` created as ``# bench`` if missing). Every bench's table goes in this way."""
    block = f"{start}\n{body}\n{end}"
    text = path.read_text() if path.exists() else "# bench\n\n"
    if start in text and end in text:
        text = text.split(start, 1)[0] + block + text.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
