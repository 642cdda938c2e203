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
