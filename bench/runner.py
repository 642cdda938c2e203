"""``python -m bench SCENARIO [options]``: the benchmark runner, one command for every scenario.

Every case runs in a fresh Python process (``python -m bench.case SPEC``, :mod:`bench.case`): its compilation
caches, threads and peak memory stay its own. This process plans the cases, starts them one after the other,
kills one that hangs (no CPU use for ``--hang-timeout`` seconds) and reruns it once with :data:`RETRY_FLAG`,
appends one JSON line per case to ``bench/results/<prefix><UTC date>.jsonl`` with the machine, device,
versions, commit and command, prints a progress line per case, and at the end the scenario's tables, which it
also writes into bench/README.md between the scenario's markers. It never initializes a JAX backend itself
(what it needs from JAX it asks a subprocess), so it holds no device memory that the cases need.

``--from-results FILE [--run-id ID]`` runs nothing: it tabulates a results file's run (the latest by default)
and regenerates the README's table from it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import importlib
import importlib.metadata as _md
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import report
from bench.case import MARKER, PHASE, SCENARIOS

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
README = BENCH_DIR / "README.md"
RESULTS = BENCH_DIR / "results"
#: Retried with when a case deadlocks (jaxlib 0.10.2's LAPACK kernels on a small CPU thread pool; see
#: docs/design/cpu-deadlock.md).
RETRY_FLAG = report.RETRY_FLAG
#: XLA's flag for the number of CPU devices; a case's ``host_devices`` above 1 sets it in the case's process.
HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
#: 2: ``versions.jaxmor`` is the version of the checkout the cases import (its pyproject.toml); schema 1
#: recorded the installed distribution's metadata, which an editable install leaves behind (see report.header).
SCHEMA = 2


@dataclass(frozen=True)
class Scenario:
    """One benchmark scenario: its cases, how they run (``RUNNERS`` of its module, in the case process) and its
    tables.

    ``defaults`` sets the shared options' defaults (:func:`add_case_options`): ``sizes``, ``steps``,
    ``repeats``, ``case_budget``, ``case_timeout``, ``engines`` and ``engine_choices``, and ``dt`` where the
    scenario takes a time step (absent: no ``--dt``); ``steps_help`` says what a step is.
    """

    name: str
    summary: str
    description: str
    results_prefix: str  # bench/results/<prefix><UTC date>.jsonl
    table: str  # bench/README.md's markers: <!-- TABLE-table:start --> ... <!-- TABLE-table:end -->
    defaults: dict
    plan: Callable[[argparse.Namespace, list[str]], list[dict]]
    render: Callable[[list[dict]], str]
    add_options: Callable[[argparse.ArgumentParser], None] | None = None
    #: Fields computed once here and added to every case's spec (e.g. the start pose), or None.
    prepare: Callable[[argparse.Namespace, list[str]], dict] | None = None
    steps_help: str = "steps per call, one lax.scan"
    #: Environment variables of the case processes and of the device query (e.g. JAX on the CPU), or None.
    env: dict | None = None


def scenarios() -> dict[str, Scenario]:
    return {name: importlib.import_module(module).SCENARIO for name, module in SCENARIOS.items()}


# ------------------------------------------------------------------------------------------ options


def add_case_options(parser: argparse.ArgumentParser, sc: Scenario) -> None:
    """The options every scenario shares, with the scenario's defaults."""
    d = sc.defaults
    g = parser.add_argument_group("cases (shared by every scenario)")
    g.add_argument("--sizes", default=d["sizes"], help="comma-separated world counts N (default %(default)s)")
    g.add_argument("--steps", type=int, default=d["steps"], help=f"{sc.steps_help} (default %(default)s)")
    if "dt" in d:
        g.add_argument("--dt", type=float, default=d["dt"], help="time step [s] (default %(default)s)")
    g.add_argument(
        "--engines",
        default=d["engines"],
        help=f"comma-separated, of {', '.join(d['engine_choices'])} (default %(default)s)",
    )
    g.add_argument(
        "--jaxmor-chunk",
        type=int,
        default=256,
        help="worlds per vmapped chunk of jaxmor.rollout_batch (and of the chunked cases) (default %(default)s)",
    )
    g.add_argument(
        "--repeats", type=int, default=d["repeats"], help="timed calls per case after one warm-up (default %(default)s)"
    )
    g.add_argument(
        "--min-repeats", type=int, default=3, help="fewest timed calls under --case-budget (default %(default)s)"
    )
    g.add_argument(
        "--case-budget",
        type=float,
        default=d["case_budget"],
        help="seconds of timed calls per case: slower cases make fewer calls, at least --min-repeats "
        "(0: off; default %(default)s)",
    )
    g.add_argument(
        "--case-timeout",
        type=float,
        default=d["case_timeout"],
        help="kill a case after this many seconds (default %(default)s)",
    )
    g.add_argument(
        "--hang-timeout",
        type=float,
        default=120.0,
        help="kill a case whose process uses no CPU for this many seconds: a deadlock (0: off; default %(default)s)",
    )
    g.add_argument(
        "--no-retry-hung",
        dest="retry_hung",
        action="store_false",
        help=f"don't rerun a hung case once with XLA_FLAGS+={RETRY_FLAG}",
    )
    r = parser.add_argument_group("results")
    r.add_argument(
        "--out",
        help=f"JSON-lines file to append to (default bench/results/{sc.results_prefix}<UTC date>.jsonl)",
    )
    r.add_argument("--no-readme", action="store_true", help="don't regenerate bench/README.md's table")
    r.add_argument("--readme", default=str(README), help=argparse.SUPPRESS)
    r.add_argument(
        "--from-results",
        metavar="FILE",
        help="run nothing: tabulate FILE's latest run (or --run-id's) and regenerate the README's table from it",
    )
    r.add_argument("--run-id", help="with --from-results: the run to tabulate (default the file's latest)")


def build_parser() -> argparse.ArgumentParser:
    all_ = scenarios()
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__.split("\n\n")[0].replace("``", "")
        + "\n\n`python -m bench SCENARIO --help` lists a scenario's options; bench/README.md describes the protocol.",
        epilog="Also: python -m bench.final_states --save/--compare NPZ (the bench rollout's final states, a check "
        "that a refactor kept the physics), and the analysis tools python -m bench.tools.{iterations, residuals, "
        "profile_step, implicit_cost, ground_filter}.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="scenario", metavar="SCENARIO", required=True)
    for name, sc in all_.items():
        sp = sub.add_parser(
            name, help=sc.summary, description=sc.description, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        add_case_options(sp, sc)
        if sc.add_options is not None:
            sc.add_options(sp.add_argument_group(f"{name} options"))
    return p


def engines_of(args, sc: Scenario) -> list[str]:
    engines = [x.strip() for x in args.engines.split(",") if x.strip()]
    for e in engines:
        if e not in sc.defaults["engine_choices"]:
            choices = ", ".join(sc.defaults["engine_choices"])
            raise SystemExit(f"unknown engine {e!r} for {sc.name} (choose from {choices})")
    return engines


def sizes_of(args) -> list[int]:
    return [int(x) for x in args.sizes.split(",") if x.strip()]


# ------------------------------------------------------------------------------------------ environment


def git_commit(where: Path = ROOT) -> str | None:
    """The commit checked out at ``where`` (a git worktree too), with ``+dirty`` when tracked files under ``where``
    differ from it; None outside a checkout or without git. Every bench record and tool reads its commit here."""
    try:
        head = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=20, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) if head else None


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


def _source_version() -> str | None:
    """The version in the checkout's pyproject.toml: the jaxmor the cases import (PYTHONPATH = the checkout)."""
    try:
        m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def versions() -> dict:
    return {
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "jaxmor": _source_version(),
        "jaxmor_installed": _version("jaxmor"),
        "jaxmor_commit": git_commit(ROOT),
        "mujoco": _version("mujoco"),
        "mujoco_mjx": _version("mujoco-mjx"),
        "numpy": _version("numpy"),
    }


def case_env(**extra: str) -> dict:
    """The environment of the case processes: this one's, with the checkout first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env.get("PYTHONPATH", "")) if x)
    env.update(extra)
    return env


@contextlib.contextmanager
def revision_checkouts(revs: set[str]):
    """For each git revision of ``revs``: a detached worktree of this repository at it, and the case processes'
    ``(cwd, commit)``; the worktrees are removed on exit. The case process starts in a folder that holds only a
    link ``jaxmor`` to the revision's package (``python -m`` puts its folder first on the path), and finds this
    checkout's ``bench`` on ``PYTHONPATH``: the revision's jaxmor runs this checkout's cases, robot and inputs.

    Raises:
        SystemExit: a revision git cannot check out, or one without a ``jaxmor`` package.
    """
    out = {}
    with tempfile.TemporaryDirectory(prefix="bench-rev-") as tmp:
        made = []
        try:
            for i, rev in enumerate(sorted(revs)):
                tree, shim = Path(tmp) / f"tree{i}", Path(tmp) / f"cwd{i}"
                add = ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev]
                done = subprocess.run(add, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"--baseline {rev}: git worktree add failed: {done.stderr.strip()}")
                made.append(tree)
                if not (tree / "jaxmor" / "__init__.py").is_file():
                    raise SystemExit(f"--baseline {rev}: the revision has no jaxmor package")
                shim.mkdir()
                (shim / "jaxmor").symlink_to(tree / "jaxmor", target_is_directory=True)
                out[rev] = (str(shim), git_commit(tree))
            yield out
        finally:
            for tree in made:
                remove = ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)]
                subprocess.run(remove, capture_output=True)


def python_json(code: str, timeout: float = 300, **env: str):
    """Run ``python -c code`` in a subprocess (the checkout on its path) and return the JSON of its last line."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=case_env(**env),
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def device_info(**env: str) -> dict:
    """JAX's devices, asked in a subprocess so that this process never initializes a JAX backend."""
    code = (
        "import json, jax; d = jax.devices(); "
        "print(json.dumps({'backend': jax.default_backend(), 'devices': [str(x) for x in d], "
        "'device_kind': d[0].device_kind}))"
    )
    try:
        return python_json(code, timeout=120, **env)
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


def run_subprocess_case(spec: dict, timeout_s: float, env: dict, hang_s: float = 0.0, cwd: str | None = None) -> dict:
    """Run one case in a fresh interpreter (``python -m bench.case SPEC``, in ``cwd``: this checkout by default); the
    result dict, with status timeout/hung/error on failure.

    ``hang_s`` > 0: a case process that uses (almost) no CPU for that many seconds is deadlocked and is
    killed, with status ``hung``.
    """
    cmd = [sys.executable, "-m", "bench.case", json.dumps(spec)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd or ROOT, env=env)
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


def summarize(rec: dict) -> dict:
    """Add median/min/max/IQR of the call times and the world-steps/s they imply (N x ``n_steps`` per call)."""
    times = rec.get("times_s") or []
    if not times or rec.get("n_steps") is None:
        return rec
    ts = sorted(times)
    med = statistics.median(ts)
    work = rec["n_worlds"] * rec["n_steps"]
    rec.update(
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
        rec["q1_s"], rec["q3_s"] = q[0], q[2]
    return rec


def progress_line(i: int, total: int, rec: dict) -> str:
    head = (
        f"[{i:2d}/{total}] {rec['engine_label']:<18} {rec['kind']:<7} N={rec['n_worlds']:<6} "
        f"K={rec.get('n_steps', '-')!s:<4}"
    )
    if rec.get("status") != "ok":
        return f"{head} {rec.get('status', '?').upper()}: {rec.get('error', '')}"
    if "launches" in rec:  # gpu-plan's MJWarp cases: kernel launches counted on Warp's CPU device
        return f"{head} build {rec['compile_s']:5.0f} s | {rec['launches']:,} kernel launches per step (Warp CPU)"
    if "kernels" in rec:  # gpu-plan: the compiler's plan, no timed calls
        return (
            f"{head} compile {rec['compile_s']:5.0f} s | {rec['kernels']:,} kernels, {rec['copies']:,} copies, "
            f"{rec['graph_launches']:,} graphs | {rec['bytes'] / 1e9:.1f} GB | estimate "
            f"{report.fmt_rate(rec['estimate_wsps'])} world-steps/s"
        )
    if "median_s" not in rec:
        return f"{head} ok"
    spread = f"{rec['min_s'] * 1e3:,.1f}-{rec['max_s'] * 1e3:,.1f}"
    return (
        f"{head} compile {rec.get('compile_s', float('nan')):7.3f} s | median {rec['median_s'] * 1e3:10,.1f} ms/call "
        f"(min-max {spread}, {rec['repeats']} reps) | {report.fmt_rate(rec['wsps_median'])} world-steps/s | "
        f"peak {rec.get('peak_rss_mb', float('nan')):,.0f} MB"
    )


def run_cases(
    cases: list[dict], args, env: dict, out: Path, context: dict, revisions: dict | None = None
) -> list[dict]:
    """Run the planned cases one process each, rerun a hung one once with :data:`RETRY_FLAG`, and append each
    record (``context``: run id, machine, device, versions, command; then the spec and the result) to the
    JSON-lines file ``out``; returns the records. A case with ``jaxmor_rev`` runs where ``revisions`` (of
    :func:`revision_checkouts`) puts that revision's jaxmor."""
    records = []
    for i, case in enumerate(cases, 1):
        spec = {k: v for k, v in case.items() if k not in ("status", "error")}
        cwd, commit = (revisions or {}).get(spec.get("jaxmor_rev"), (None, None))
        if commit:
            spec["jaxmor_rev_commit"] = commit
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        flags = env.get("XLA_FLAGS", "")
        if int(spec.get("host_devices") or 1) > 1:
            flags = f"{flags} {HOST_DEVICES_FLAG}={int(spec['host_devices'])}".strip()
        this_env = {**env, "XLA_FLAGS": flags}
        if case.get("status") == "skipped":
            result = {"status": "skipped", "error": case["error"]}
        else:
            result = run_subprocess_case(spec, args.case_timeout, this_env, args.hang_timeout, cwd)
            if result["status"] == "hung" and args.retry_hung and RETRY_FLAG not in flags:
                print(f"[{i:2d}/{len(cases)}] {result['error']}; retrying with XLA_FLAGS+={RETRY_FLAG}", flush=True)
                first = {k: result[k] for k in ("status", "error") if k in result}
                flags = f"{flags} {RETRY_FLAG}".strip()
                retry_env = {**this_env, "XLA_FLAGS": flags}
                result = run_subprocess_case(spec, args.case_timeout, retry_env, args.hang_timeout, cwd)
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
        rec = summarize(rec)
        records.append(rec)
        with out.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(progress_line(i, len(cases), rec), flush=True)
    return records


def measure(sc: Scenario, args, argv: list[str]) -> tuple[list[dict], Path]:
    """Plan the scenario's cases, run them (:func:`run_cases`) and return the records and the results file."""
    now = _dt.datetime.now(_dt.timezone.utc)
    out = Path(args.out) if args.out else RESULTS / f"{sc.results_prefix}{now:%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    engines = engines_of(args, sc)
    run_id = f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    machine, vers, device = machine_info(), versions(), device_info(**(sc.env or {}))
    available = engine_availability(engines)
    for name, why in available.items():
        if why is not None and name in engines:
            print(f"note: {name} unavailable, its cases are skipped: {why}", flush=True)
    print(
        f"bench {sc.name} run {run_id}: {machine['cpu']} ({machine['cores']} cores), JAX {vers['jax']} on "
        f"{device.get('backend')} {device.get('devices')}; appending to {out}",
        flush=True,
    )
    cases = sc.plan(args, engines)
    common = {"scenario": sc.name, **(sc.prepare(args, engines) if sc.prepare else {})}
    cases = [{**common, **c} for c in cases]
    for c in cases:
        why = available.get(c["engine"])
        if why is not None and c.get("status") is None:
            c.update(status="skipped", error=f"{c['engine']} unavailable: {why}")
    context = {
        "run_id": run_id,
        "command": " ".join(["python -m bench", *argv]),
        "machine": machine,
        "device": device,
        "versions": vers,
    }
    env = case_env(**(sc.env or {}))
    with revision_checkouts({c["jaxmor_rev"] for c in cases if c.get("jaxmor_rev")}) as revisions:
        return run_cases(cases, args, env, out, context, revisions), out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    sc = scenarios()[args.scenario]
    if args.from_results:
        out = Path(args.from_results)
        records = report.load_run(out, args.run_id)
    else:
        records, out = measure(sc, args, argv)
    print(sc.render(records), flush=True)
    if not args.no_readme:
        report.update_readme(Path(args.readme), sc.table, records, out, sc.render(records))
        print(f"updated {args.readme}", flush=True)
    return 0
