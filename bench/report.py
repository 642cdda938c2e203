"""The bench's tables: formatting, the one header of every README block, the three-engine tables, reading a run
back from a results file, and writing a block between its markers in bench/README.md. Plain Python (no JAX)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RETRY_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
#: The engines' columns of the three-engine tables, in order, with their names.
ENGINE_NAMES = {
    "jaxmor": "jaxmor",
    "jaxmor-vmap": "jaxmor (one vmap)",
    "jaxmor-cores": "jaxmor (a device per core)",
    "jaxmor-rl": "jaxmor (feet only)",
    "mujoco": "MuJoCo (all cores)",
    "mujoco-1t": "MuJoCo (1 thread)",
    "mjx": "MJX",
    "mjx-rl": "MJX (RL settings)",
    "mjwarp": "MJWarp",
    "mjwarp-rl": "MJWarp (RL settings)",
}
MUJOCO_SOLVERS = {0: "PGS", 1: "CG", 2: "Newton"}  # mjtSolver
#: The settings written side by side per engine (:func:`settings_table`): label -> record keys, first found.
SETTING_COLUMNS = {
    "time step [s]": ("timestep",),
    "solver": ("solver",),
    "iterations": ("solver_iterations", "iterations"),
    "line search / position iterations": ("position_iterations", "ls_iterations"),
    "Jacobi iterations / tolerance": ("jacobi_iterations", "tolerance"),
    "contact pairs (MuJoCo family) / collision geoms (jaxmor)": ("collision_pairs", "collision_geoms"),
    "contact slots per step (jaxmor) / contacts allocated per world (MJWarp)": ("contact_budget", "nconmax"),
    "dtype": ("dtype",),
}


def fmt_rate(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def ok(rec: dict | None) -> bool:
    return rec is not None and rec.get("status") == "ok"


def mark(rec: dict) -> str:
    """A dagger on a case that ran with a non-default XLA flag (retried after a deadlock)."""
    return " \u2020" if RETRY_FLAG in (rec.get("xla_flags") or "") else ""


def rate_cell(rec: dict | None) -> str:
    """World-steps/s, median (min-max), of a record with ``wsps_*`` fields."""
    if rec is None:
        return "-"
    if rec.get("status", "ok") != "ok":
        return rec.get("status", "-")
    return f"{fmt_rate(rec['wsps_median'])} ({fmt_rate(rec['wsps_min'])}-{fmt_rate(rec['wsps_max'])}){mark(rec)}"


def time_cell(rec: dict | None) -> str:
    """Milliseconds per call, median (min-max)."""
    if not ok(rec):
        return "-" if rec is None else rec.get("status", "-")
    return f"{rec['median_s'] * 1e3:,.1f} ({rec['min_s'] * 1e3:,.1f}-{rec['max_s'] * 1e3:,.1f})"


def ratio_cell(a: dict | None, b: dict | None) -> str:
    if not (ok(a) and ok(b)):
        return "-"
    return f"{a['wsps_median'] / b['wsps_median']:.3g}"


def retry_footnote(records: list[dict]) -> list[str]:
    if not any(mark(r) for r in records):
        return []
    return [
        "",
        "\u2020 deadlocked with the default XLA flags (jaxlib 0.10.2, docs/design/cpu-deadlock.md) and was rerun "
        f"with `XLA_FLAGS={RETRY_FLAG}`.",
    ]


def _ratios(present: list[str]) -> list[tuple[str, str, str]]:
    """The ratio columns (numerator, denominator, header) of the engines present: jaxmor over each other engine,
    and the like-for-like cases over each other (jaxmor's own where it ran like for like)."""
    others = {"mujoco": "MuJoCo", "mujoco-1t": "MuJoCo 1t", "mjx": "MJX", "mjwarp": "MJWarp"}
    cols = [("jaxmor", x, f"jaxmor / {n}") for x, n in others.items()]
    cols += [("jaxmor-cores", "mujoco", "jaxmor per core / MuJoCo")]
    ours = "jaxmor-rl" if "jaxmor-rl" in present else "jaxmor"
    cols += [(ours, f"{x}-rl", f"{ENGINE_NAMES[ours]} / {n} RL") for x, n in others.items() if x in ("mjx", "mjwarp")]
    return [(a, b, n) for a, b, n in cols if a in present and b in present]


def engine_tables(records: list[dict], compile_label: str) -> list[str]:
    """The forward cases of the three-engine comparison (labels of :data:`ENGINE_NAMES`): world-steps/s per N with
    the ratios of jaxmor's to the others', then compile time, time per call and peak memory per case.
    ``compile_label`` says what MuJoCo's compile time is."""
    fwd = [r for r in records if r["kind"] == "forward"]
    if not fwd:
        return []
    by = {(r["engine_label"], r["n_worlds"]): r for r in fwd}
    sizes = sorted({r["n_worlds"] for r in fwd})
    present = [x for x in ENGINE_NAMES if any(k[0] == x for k in by)]
    chunks = {(r.get("settings") or {}).get("chunk") for r in fwd if r["engine_label"] == "jaxmor" and ok(r)}
    chunk = next(iter(chunks)) if len(chunks) == 1 else None
    names = {**ENGINE_NAMES, "jaxmor": f"jaxmor (chunks of {chunk})" if chunk else "jaxmor"}
    steps = fwd[0]["n_steps"]
    against = _ratios(present)
    split = sorted({(r.get("settings") or {}).get("devices") or 1 for r in fwd if r["engine"] != "mujoco" and ok(r)})
    devices = (
        f" The JAX engines' worlds are split over {'/'.join(map(str, split))} CPU devices that run side by side "
        "(`--host-devices`; 1: one device)."
        if split and split != [1]
        else ""
    )
    lines = [
        f"World-steps/s, median (min-max) over the timed calls; each call is N worlds x {steps} steps. "
        f"Ratios are of the medians.{devices}",
        "",
    ]
    head = ["N"] + [names[x] for x in present] + [n for _, _, n in against]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for n in sizes:
        row = [f"{n:,}"] + [rate_cell(by.get((x, n))) for x in present]
        row += [ratio_cell(by.get((a, n)), by.get((b, n))) for a, b, _ in against]
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        f"Per case: compile time (JAX: `lower` + `compile`; MuJoCo: {compile_label}), milliseconds per call, "
        "median (min-max), timed calls, and the case process's peak resident memory (its RSS before the "
        "timed code in brackets).",
        "",
        "| engine | N | compile [s] | ms per call | calls | peak RSS [MB] |",
        "|---|---|---|---|---|---|",
    ]
    for x in present:
        for n in sizes:
            r = by.get((x, n))
            if r is None:
                continue
            if not ok(r):
                lines.append(f"| {names[x]} | {n:,} | {r.get('status')} | {r.get('error', '')} | | |")
                continue
            base = r.get("baseline_rss_mb")
            mem = f"{r['peak_rss_mb']:,.0f}" + (f" ({base:,.0f})" if base is not None else "")
            lines.append(
                f"| {names[x]}{mark(r)} | {n:,} | {r.get('compile_s', float('nan')):.3g} | {time_cell(r)} | "
                f"{r['repeats']} | {mem} |"
            )
    return lines + settings_table(fwd)


def settings_table(records: list[dict]) -> list[str]:
    """The settings each engine ran at (:data:`SETTING_COLUMNS`), from its first successful case (MuJoCo's
    solver by the name of its ``mjtSolver`` value)."""
    first = {}
    for r in records:
        if ok(r) and r.get("settings") and r["engine_label"] in ENGINE_NAMES:
            first.setdefault(r["engine_label"], r["settings"])
    if not first:
        return []

    def cell(s: dict, keys: tuple[str, ...]) -> str:
        value = next((s[k] for k in keys if s.get(k) is not None), "-")
        if keys == ("solver",) and isinstance(value, int):  # MuJoCo's mjtSolver
            return MUJOCO_SOLVERS.get(value, str(value))
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    lines = ["", "Settings side by side (what each engine ran at):", ""]
    lines += ["| engine | " + " | ".join(SETTING_COLUMNS) + " |", "|" + "---|" * (len(SETTING_COLUMNS) + 1)]
    for label in (x for x in ENGINE_NAMES if x in first):
        row = [cell(first[label], keys) for keys in SETTING_COLUMNS.values()]
        lines.append(f"| {ENGINE_NAMES[label]} | " + " | ".join(row) + " |")
    return lines


def header(records: list[dict], results_file: Path) -> str:
    """The first line of every README block: the run, its command and results file, the machine, the device, the
    versions of the engines that ran and of jaxmor with its commit, and the load before the cases."""
    r0 = records[0] if records else {}
    m, v, d = r0.get("machine", {}), r0.get("versions", {}), r0.get("device", {})
    try:
        rel = Path(results_file).resolve().relative_to(ROOT)
    except ValueError:
        rel = results_file
    engines = {r.get("engine") for r in records}
    libs = [f"JAX {v.get('jax')} on {d.get('backend')} ({', '.join(d.get('devices', []))})"]
    if "mujoco" in engines:
        libs.append(f"MuJoCo {v.get('mujoco')}")
    if "mjx" in engines:
        libs.append(f"MJX {v.get('mujoco_mjx')}")
    commit = v.get("jaxmor_commit")
    short = (commit[:10] + ("+dirty" if commit.endswith("+dirty") else "")) if commit else None
    # Schema 1 recorded the installed distribution's version, which an editable install does not update (it
    # said 0.1.0 for a 0.2.0 checkout): name only the commit there.
    if (r0.get("schema") or 1) >= 2 and v.get("jaxmor"):
        jaxmor = f"jaxmor {v['jaxmor']}" + (f" ({short})" if short else "")
    else:
        jaxmor = f"jaxmor at {short}" if short else "jaxmor (commit not recorded)"
    command = f", `{r0['command']}`" if r0.get("command") else ""
    loads = [r["loadavg_1min_before"] for r in records if r.get("loadavg_1min_before") is not None]
    if not loads:
        load = ""
    elif len(set(loads)) == 1:
        load = f" 1-minute load average before the run: {loads[0]:.2f}."
    else:
        load = (
            f" 1-minute load average before the cases: {min(loads):.2f}-{max(loads):.2f} (median "
            f"{statistics.median(loads):.2f})."
        )
    return (
        f"Run `{r0.get('run_id')}` ({r0.get('date', '')[:10]}{command}), results in `{rel}`. "
        f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('mem_gib')} GiB; "
        + "; ".join(libs)
        + f"; {jaxmor}.{load}"
    )


def load_run(path: Path, run_id: str | None = None) -> list[dict]:
    """The records of one run of a results file: ``run_id``'s, or the file's last run."""
    records = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    if not records:
        raise SystemExit(f"{path}: no records")
    run_id = run_id or records[-1]["run_id"]
    records = [r for r in records if r["run_id"] == run_id]
    if not records:
        raise SystemExit(f"{path}: no records of run {run_id}")
    return records


def markers(table: str) -> tuple[str, str]:
    return f"<!-- {table}-table:start -->", f"<!-- {table}-table:end -->"


def write_block(path: Path, start: str, end: str, body: str) -> None:
    """Put ``body`` between the markers ``start`` and ``end`` of ``path`` (a README), replacing what was there, or
    append the markers with it (``path`` created as ``# bench`` if missing)."""
    block = f"{start}\n{body}\n{end}"
    text = path.read_text() if path.exists() else "# bench\n\n"
    if start in text and end in text:
        text = text.split(start, 1)[0] + block + text.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def update_readme(path: Path, table: str, records: list[dict], results_file: Path, body: str) -> None:
    """The scenario's block of the README: :func:`header`, then ``body`` (its tables)."""
    write_block(path, *markers(table), f"{header(records, results_file)}\n\n{body}")
