"""The benchmark runner (bench/) works end to end on a tiny case. No timing assertions."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import ROOT

COMMON_KEYS = {
    "schema",
    "run_id",
    "date",
    "machine",
    "device",
    "versions",
    "engine",
    "engine_label",
    "kind",
    "n_worlds",
    "n_steps",
    "dt",
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


@pytest.mark.slow
def test_runner_tiny_case(tmp_path):
    engines = "jaxmor,mujoco" if _has("mujoco") else "jaxmor"
    out = tmp_path / "results.jsonl"
    readme = tmp_path / "README.md"
    readme.write_text("# bench\n")
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "--sizes",
        "2",
        "--steps",
        "5",
        "--repeats",
        "1",
        "--engines",
        engines,
        "--grad-worlds",
        "0",
        "--no-mujoco-single-thread",
        "--jaxmor-chunk",
        "1",  # N = 2: jaxmor.rollout_batch in two chunks of one world, and one vmap
        "--out",
        str(out),
        "--readme",
        str(readme),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, proc.stderr[-3000:]

    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    labels = ["jaxmor", "jaxmor-vmap"] + (["mujoco"] if "mujoco" in engines else [])
    assert [r["engine_label"] for r in records] == labels
    assert [r["settings"].get("chunk") for r in records[:2]] == [1, None]
    for r in records:
        assert COMMON_KEYS <= r.keys(), COMMON_KEYS - r.keys()
        assert r["status"] == "ok", r.get("error")
        assert TIMING_KEYS <= r.keys(), TIMING_KEYS - r.keys()
        assert r["kind"] == "forward" and r["n_worlds"] == 2 and r["n_steps"] == 5
        assert r["repeats"] == 1 and len(r["times_s"]) == 1
        assert r["world_steps"] == 10 and r["wsps_median"] > 0
        assert r["check"]["nonfinite_worlds"] == 0
        assert 0.3 < r["check"]["base_z_mean"] < 0.6  # the base barely moves in 10 ms
        assert r["versions"]["jax"] and r["machine"]["cores"] >= 1
    assert len({r["run_id"] for r in records}) == 1
    # One progress line per case, and the table in the README (between the markers).
    assert sum(line.startswith("[") for line in proc.stdout.splitlines()) == len(records)
    text = readme.read_text()
    assert "<!-- bench-table:start -->" in text and "| 2 |" in text


@pytest.mark.slow
def test_motor_dynamics_tiny_case(tmp_path):
    """bench.motor_dynamics end to end: the quasi-static motor and all options together, N = 2, 5 steps, one
    process per option and the paired process (both options interleaved) per engine."""
    engines = "jaxmor,mujoco" if _has("mujoco") else "jaxmor"
    out = tmp_path / "results.jsonl"
    readme = tmp_path / "README.md"
    readme.write_text("# bench\n")
    cmd = [sys.executable, "-m", "bench.motor_dynamics", "--sizes", "2", "--steps", "5", "--repeats", "1"]
    cmd += ["--mujoco-repeats", "1", "--paired-rounds", "2", "--mujoco-paired-rounds", "2"]
    cmd += ["--options", "quasi-static,all", "--engines", engines, "--out", str(out), "--readme", str(readme)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-3000:]

    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    labels = ["jaxmor/quasi-static", "jaxmor/all", "jaxmor/paired"]
    labels += ["mujoco-1t/quasi-static", "mujoco-1t/all", "mujoco-1t/paired"] if "mujoco" in engines else []
    assert [r["engine_label"] for r in records] == labels
    for r in records:
        assert COMMON_KEYS <= r.keys(), COMMON_KEYS - r.keys()
        assert r["status"] == "ok", r.get("error")
        assert TIMING_KEYS <= r.keys(), TIMING_KEYS - r.keys()
        assert r["n_worlds"] == 2 and r["n_steps"] == 5 and r["wsps_median"] > 0
        if r["kind"] == "paired":  # its own times are the baseline's, one per round
            assert set(r["paired"]) == {"quasi-static", "all"} and r["repeats"] == 2
            assert r["paired"]["quasi-static"]["ratio_median"] == 1.0 and r["paired"]["all"]["ratio_median"] > 0
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
    text = readme.read_text()
    assert "<!-- motor-dynamics-table:start -->" in text and "| (g) all" in text
