"""The benchmark runner (bench/): the one command and its scenarios end to end on tiny cases (the case protocol:
a process per case, the records' fields, the paired rounds, the README's tables), the README's tables as the code
regenerates them from bench/results/, and the HLO reader of bench/tools/iterations.py on a small saved program.
No timing assertions."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from models import ROOT

if str(ROOT) not in sys.path:  # the bench package lives in the checkout, beside jaxmor
    sys.path.insert(0, str(ROOT))

DATA = Path(__file__).resolve().parent / "data" / "bench"
#: The Go2 scene the go2 scenario reads by default (``$JAXMOR_GO2_DIR`` overrides it there and here).
GO2_XML = (
    Path(os.environ["JAXMOR_GO2_DIR"]) if os.environ.get("JAXMOR_GO2_DIR") else ROOT / "tests" / "data" / "unitree_go2"
) / "scene_mjx.xml"

COMMON_KEYS = {
    "schema",
    "run_id",
    "command",
    "date",
    "machine",
    "device",
    "versions",
    "scenario",
    "engine",
    "engine_label",
    "kind",
    "n_worlds",
    "n_steps",
    "status",
    "peak_rss_mb",
}
TIMING_KEYS = {
    "compile_s",
    "times_s",
    "repeats",
    "median_s",
    "min_s",
    "max_s",
    "world_steps",
    "wsps_median",
    "wsps_min",
    "wsps_max",
    "check",
    "settings",
}


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _bench(args: list[str], tmp_path: Path, timeout: float) -> tuple[subprocess.CompletedProcess, list[dict], str]:
    """``python -m bench ARGS --out tmp --readme tmp``: the process, its records and the README it wrote."""
    out, readme = tmp_path / "results.jsonl", tmp_path / "README.md"
    readme.write_text("# bench\n")
    cmd = [sys.executable, "-m", "bench", *args, "--out", str(out), "--readme", str(readme)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    for r in records:
        assert COMMON_KEYS <= r.keys(), COMMON_KEYS - r.keys()
        assert r["status"] == "ok", r.get("error")
        assert TIMING_KEYS <= r.keys(), TIMING_KEYS - r.keys()
        assert r["scenario"] == args[0] and r["command"].startswith(f"python -m bench {args[0]} ")
        assert r["versions"]["jax"] and r["machine"]["cores"] >= 1 and r["schema"] == 2
    assert len({r["run_id"] for r in records}) == 1
    # One progress line per case.
    assert sum(line.startswith("[") for line in proc.stdout.splitlines()) == len(records)
    return proc, records, readme.read_text()


def test_help_lists_the_scenarios():
    proc = subprocess.run([sys.executable, "-m", "bench", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for name in ("quadruped", "go2", "motor-dynamics", "envs"):
        assert re.search(rf"^\s+{name}\b", proc.stdout, re.M), proc.stdout
    from bench.runner import build_parser

    # One option set: every scenario takes the shared case options.
    parser = build_parser()
    for name in ("quadruped", "go2", "motor-dynamics", "envs"):
        args = parser.parse_args([name, "--repeats", "2", "--case-budget", "1", "--no-retry-hung", "--no-readme"])
        assert (args.repeats, args.case_budget, args.retry_hung, args.no_readme) == (2, 1.0, False, True)
        assert args.hang_timeout == 120.0 and args.from_results is None


@pytest.mark.parametrize("table", ["bench", "go2", "motor-dynamics", "envs"])
def test_readme_tables_are_regenerated_from_the_results(table):
    """Each table of bench/README.md is what the runner's ``--from-results`` writes from the run its header names."""
    from bench import report
    from bench.runner import README, scenarios

    sc = next(s for s in scenarios().values() if s.table == table)
    start, end = report.markers(table)
    text = README.read_text()
    block = text.split(start, 1)[1].split(end, 1)[0].strip("\n")
    run_id, results = re.match(r"Run `([^`]+)` \([^)]*\), results in `([^`]+)`", block).groups()
    records = report.load_run(ROOT / results, run_id)
    assert block == f"{report.header(records, ROOT / results)}\n\n{sc.render(records)}"


def test_hlo_loops_of_a_saved_program():
    """The HLO reader on loops.hlo.txt (written by loops.py beside it). Counted by hand in that file: 5 ``while``
    instructions with ``known_trip_count`` 3, 5, 7, 4 and 2; the 5-trip loop is in the 3-trip loop's body; the
    4- and 2-trip loops are the branches of the one ``conditional``, of which one runs. Dependent iterations:
    3 x (1 + 5) + 7 + max(4, 2) = 29."""
    from bench.tools.iterations import count_iterations, format_table

    text = (DATA / "loops.hlo.txt").read_text()
    assert text.count(" while(") == 5 and text.count(" conditional(") == 1
    for derive in (False, True):  # XLA's known_trip_count, or read off each loop's `i < constant`, start and step
        result = count_iterations(text, derive=derive)
        assert result["n_while"] == 5
        top = {loop.trip_count: loop for loop in result["loops"] if loop.depth == 0}
        assert sorted(top) == [2, 3, 4, 7]
        assert [(x.trip_count, x.depth) for x in top[3].inner] == [(5, 1)]
        assert all(not top[n].inner for n in (2, 4, 7))
        assert {loop.trip_source for top_loop in result["loops"] for loop in top_loop.flat()} == {
            "derived" if derive else "known"
        }
        assert (top[3].dependent, top[7].dependent) == (18, 7)
        assert result["total"] == 29
        assert format_table(result["loops"], result["total"]).splitlines()[-1 - derive].endswith(": 29")


@pytest.mark.slow
def test_quadruped_tiny_case(tmp_path):
    engines = "jaxmor,mujoco" if _has("mujoco") else "jaxmor"
    args = ["quadruped", "--sizes", "2", "--steps", "5", "--repeats", "1", "--engines", engines]
    args += ["--grad-worlds", "0", "--no-mujoco-single-thread"]
    args += ["--jaxmor-chunk", "1"]  # N = 2: jaxmor.rollout_batch in two chunks of one world, and one vmap
    args += ["--baseline", "HEAD"]  # the committed jaxmor from a worktree, right after the chunked case
    args += ["--host-devices", "2"]  # one world per CPU device
    proc, records, readme = _bench(args, tmp_path, timeout=400)
    labels = ["jaxmor", "jaxmor@HEAD", "jaxmor-vmap"] + (["mujoco"] if "mujoco" in engines else [])
    assert [r["engine_label"] for r in records] == labels
    assert [r["settings"].get("chunk") for r in records[:3]] == [1, 1, None]
    for r in records:
        split = r["engine"] == "jaxmor"
        assert ("--xla_force_host_platform_device_count=2" in r["xla_flags"]) == split
        assert r["settings"].get("devices") == (2 if split else None)
    assert "split over 2 CPU devices" in readme
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert records[1]["jaxmor_rev"] == "HEAD" and records[1]["jaxmor_rev_commit"].startswith(head)
    assert "jaxmor_rev" not in records[0] and "jaxmor_rev" not in records[2]
    row = re.search(r"^\| forward \| 2 \| [\d,.]+ \([^)]*\) \| [\d,.]+ \([^)]*\) \| ([\d.]+) \|", readme, re.M)
    assert row and float(row.group(1)) == pytest.approx(records[0]["wsps_median"] / records[1]["wsps_median"], 1e-2)
    records = [records[0], *records[2:]]
    for r in records:
        assert r["kind"] == "forward" and r["n_worlds"] == 2 and r["n_steps"] == 5
        assert r["repeats"] == 1 and len(r["times_s"]) == 1
        assert r["world_steps"] == 10 and r["wsps_median"] > 0
        assert r["check"]["nonfinite_worlds"] == 0
        assert 0.3 < r["check"]["base_z_mean"] < 0.6  # the base barely moves in 10 ms
    if "mujoco" in engines:  # the same start (jaxmor.robots.quadruped_standing_q, 2 cm up) in both engines
        assert records[2]["check"]["base_z_start"] == records[2]["qpos0"][2]
        assert abs(records[2]["check"]["base_z_mean"] - records[0]["check"]["base_z_mean"]) < 1e-3
    assert "<!-- bench-table:start -->" in readme and "| 2 |" in readme


@pytest.mark.parametrize("cores", [1, 2, 3])
def test_jaxmor_per_core_case(monkeypatch, cores):
    """With one device (the default) on a machine of several cores, each N they divide gets a second jaxmor case with
    one CPU device per core; not with --no-jaxmor-cores, nor beside --host-devices above 1."""
    import argparse

    from bench import quadruped

    monkeypatch.setattr(quadruped.os, "cpu_count", lambda: cores)
    base = dict(steps=5, repeats=1, min_repeats=1, case_budget=10.0, sizes="1,4,6", jaxmor_chunk=2)
    base.update(jaxmor_vmap=False, like_for_like=False, host_devices=1, jaxmor_cores=True)

    def per_core(**changes):
        cases = quadruped.comparison_cases(argparse.Namespace(**{**base, **changes}), ["jaxmor"])
        return [(c["n_worlds"], c["host_devices"], c["chunk"]) for c in cases if c["engine_label"] == "jaxmor-cores"]

    expected = {1: [], 2: [(4, 2, 2), (6, 2, 2)], 3: [(6, 3, 2)]}[cores]
    assert per_core() == expected
    assert per_core(jaxmor_cores=False) == per_core(host_devices=2) == []


def test_a_revisions_case_refuses_this_checkouts_jaxmor():
    """A ``--baseline`` case that imported this checkout's jaxmor would time the wrong package: it stops."""
    from bench import scenario

    with pytest.raises(RuntimeError, match="jaxmor_rev='feb919b' imported this checkout's jaxmor"):
        scenario.check_jaxmor_source({"jaxmor_rev": "feb919b"})
    scenario.check_jaxmor_source({})  # this checkout's case, this checkout's jaxmor


@pytest.mark.slow
def test_go2_tiny_case(tmp_path):
    """The Go2's position servos driven through jaxmor.rollout_batch(controls={"ctrl": ...}), beside MuJoCo."""
    if not GO2_XML.is_file():
        pytest.skip(f"{GO2_XML} is not there")
    if not _has("mujoco"):
        pytest.skip("the go2 scenario reads the file's time step with MuJoCo")
    args = ["go2", "--sizes", "2", "--steps", "5", "--repeats", "1", "--engines", "jaxmor,mujoco"]
    args += ["--no-mujoco-single-thread", "--no-jaxmor-cores", "--xml", str(GO2_XML)]
    proc, records, readme = _bench(args, tmp_path, timeout=400)
    # --like-for-like (the default) adds jaxmor with only the feet touching the ground
    assert [r["engine_label"] for r in records] == ["jaxmor", "jaxmor-rl", "mujoco"]
    jaxmor, feet, mujoco = (r["check"] for r in records)
    assert records[1]["settings"]["contact_budget"] == 4 < records[0]["settings"]["contact_budget"]
    for ours in (jaxmor, feet):
        assert abs(ours["base_z_start"] - mujoco["base_z_start"]) < 1e-6  # the keyframe's, 2 cm up
        assert ours["nonfinite_worlds"] == mujoco["nonfinite_worlds"] == 0
        assert abs(ours["base_z_mean"] - mujoco["base_z_mean"]) < 5e-3  # 10 ms of falling
    assert "<!-- go2-table:start -->" in readme and "Mean final base height" in readme


@pytest.mark.slow
def test_motor_dynamics_tiny_case(tmp_path):
    """The motor-dynamics scenario: the quasi-static motor and all options together, N = 2, 5 steps, one process per
    option and the paired process (both options interleaved, the order rotated) per engine."""
    engines = "jaxmor,mujoco" if _has("mujoco") else "jaxmor"
    args = ["motor-dynamics", "--sizes", "2", "--steps", "5", "--repeats", "1", "--mujoco-repeats", "1"]
    args += ["--paired-rounds", "2", "--mujoco-paired-rounds", "2", "--options", "quasi-static,all"]
    args += ["--engines", engines]
    proc, records, readme = _bench(args, tmp_path, timeout=600)
    labels = ["jaxmor/quasi-static", "jaxmor/all", "jaxmor/paired"]
    labels += ["mujoco-1t/quasi-static", "mujoco-1t/all", "mujoco-1t/paired"] if "mujoco" in engines else []
    assert [r["engine_label"] for r in records] == labels
    for r in records:
        assert r["n_worlds"] == 2 and r["n_steps"] == 5 and r["wsps_median"] > 0
        if r["kind"] == "paired":  # its own times are the baseline's, one per round
            assert set(r["paired"]) == {"quasi-static", "all"} and r["repeats"] == 2
            assert r["settings"]["rotated"] and r["settings"]["rounds"] == 2
            assert r["paired"]["quasi-static"]["ratio_median"] == 1.0 and r["paired"]["all"]["ratio_median"] > 0
            assert r["times_s"] == r["paired"]["quasi-static"]["times_s"]
            checks = [x["check"] for x in r["paired"].values()]
        else:
            assert r["kind"] == "forward" and r["repeats"] == 1 and r["settings"]["option"] == r["option"]
            checks = [r["check"]]
        for c in checks:
            assert c["nonfinite_worlds"] == 0 and 0.3 < c["base_z_mean"] < 0.6
    plain, full = records[0], records[1]
    assert set(plain["settings"]["features"].values()) == {0}
    expected = {"thermal": 12, "housing": 12, "cut": 0, "inductive": 12, "cogging": 12, "lugre": 12}
    assert full["settings"]["features"] == expected
    assert full["check"]["winding_temperature_max"] > 90 and full["check"]["derating_min"] < 1  # started hot
    if "mujoco" in engines:
        assert records[3]["settings"]["na"] == 0 and records[4]["settings"]["na"] == 36  # current, T, bristle
    assert "<!-- motor-dynamics-table:start -->" in readme and "| (g) all" in readme


@pytest.mark.slow
def test_envs_tiny_case(tmp_path):
    """The envs scenario: one paired process (the cases called in the same order every round), N = 2 worlds, 2
    control steps, every world reset at each step."""
    args = ["envs", "--sizes", "2", "--steps", "2", "--episode-steps", "1", "--repeats", "2", "--jaxmor-chunk", "1"]
    proc, records, readme = _bench(args, tmp_path, timeout=600)
    (r,) = records
    assert r["kind"] == "paired" and r["control_steps"] == 2 and r["n_steps"] == 2 * r["substeps"]
    assert set(r["paired"]) == {"env", "env-chunks", "bare-vmap", "bare-chunks"}
    assert r["settings"]["baseline"] == "bare-vmap" and not r["settings"]["rotated"]
    assert r["paired"]["env-chunks"]["settings"]["chunk"] == 1 and r["paired"]["env"]["settings"]["chunk"] == 2
    for name, case in r["paired"].items():
        assert len(case["times_s"]) == 2 and case["check"]["nonfinite_worlds"] == 0, name
    assert r["paired"]["env"]["check"]["resets"] == 4  # 2 worlds x 2 control steps, each the time limit
    assert "<!-- envs-table:start -->" in readme and "| env, one vmap | 2 |" in readme


def test_like_for_like_ratios_pair_the_like_for_like_cases():
    """jaxmor over each engine at the file's settings; the RL columns pair jaxmor's feet-only case (where it ran)
    with MJX's and MJWarp's RL-settings cases."""
    from bench import report

    cols = report._ratios(["jaxmor", "jaxmor-rl", "mujoco", "mjx", "mjx-rl", "mjwarp-rl"])
    assert [(a, b) for a, b, _ in cols] == [
        ("jaxmor", "mujoco"),
        ("jaxmor", "mjx"),
        ("jaxmor-rl", "mjx-rl"),
        ("jaxmor-rl", "mjwarp-rl"),
    ]
    assert cols[2][2] == "jaxmor (feet only) / MJX RL"
    assert [(a, b) for a, b, _ in report._ratios(["jaxmor", "mjx-rl"])] == [("jaxmor", "mjx-rl")]
