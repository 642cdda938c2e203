"""On a GPU: the kernels and copies one step launches, counted from a profiler trace, and its time, per case.

``python -m bench.tools.gpu_trace [--sizes 8192] [--calls 5] [--out DIR]``

The cases of ``python -m bench gpu-plan`` (``bench/gpu_plan.py``: the jaxmor quadruped, the jaxmor Go2 and the
MJX Go2, ``jax.vmap`` of one step over N worlds, the model shared), run for real: two warm-up calls, then
``--calls`` calls timed (``block_until_ready``, the median) and ``--calls`` more under ``jax.profiler.trace``
(a Perfetto trace). In the trace, every complete event of a process named after a GPU is one launch on the
device: a copy or a memset when its name says so, else a kernel; each count is divided by the traced calls.
Prints one JSON line per case (with the most frequent kernel names) and, with ``--out``, writes them to
``DIR/gpu-trace.jsonl``. Needs a GPU and, for MJX, mujoco-mjx.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import statistics
import tempfile
import time
from pathlib import Path


def launches(trace_file: str) -> collections.Counter:
    """Event names and counts of the GPU processes' complete events in a Perfetto (Chrome JSON) trace."""
    with gzip.open(trace_file, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name" and "GPU" in str(e.get("args", {}).get("name", ""))
    }
    return collections.Counter(e.get("name", "?") for e in events if e.get("ph") == "X" and e.get("pid") in gpu)


def is_copy(name: str) -> bool:
    """Whether a device event counts as a copy or a memset rather than a kernel: a memcpy or memset, or an XLA kernel
    whose name starts with ``copy`` (a copy fusion)."""
    low = name.lower()
    return "memcpy" in low or "memset" in low or "copy" in low.split("_")[0]


def run(engine: str, kind: str, n: int, calls: int) -> dict:
    """One case: its time per call and its launches per call."""
    import jax
    import jax.numpy as jnp

    from bench.gpu_plan import _jaxmor_step, _mjx_step

    spec = {"engine": engine, "kind": kind}
    step, model, world = (_mjx_step if engine == "mjx" else _jaxmor_step)(spec)
    states = jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n, *jnp.shape(x)))), world)
    fn = jax.jit(jax.vmap(step, in_axes=(None, 0)))
    start = time.perf_counter()
    compiled = fn.lower(model, states).compile()
    compile_s = time.perf_counter() - start
    for _ in range(2):
        jax.block_until_ready(compiled(model, states))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(compiled(model, states))
        times.append(time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            for _ in range(calls):
                jax.block_until_ready(compiled(model, states))
        found = glob.glob(f"{tmp}/**/perfetto_trace.json.gz", recursive=True)
        names = launches(found[0]) if found else collections.Counter()
    copies = sum(c for name, c in names.items() if is_copy(name))
    median = statistics.median(times)
    return {
        "engine": engine,
        "kind": kind,
        "n_worlds": n,
        "compile_s": compile_s,
        "ms_per_step": 1e3 * median,
        "world_steps_per_s": n / median,
        "kernels_per_step": (sum(names.values()) - copies) / calls,
        "copies_per_step": copies / calls,
        "top_kernels": [[name, c / calls] for name, c in names.most_common(25) if not is_copy(name)],
        "trace_found": bool(found),
        "device": str(jax.devices()[0]),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.tools.gpu_trace", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8192")
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--engines", default="jaxmor,mjx")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    cases = [("jaxmor", "quadruped"), ("jaxmor", "go2"), ("mjx", "go2")]
    engines = args.engines.split(",")
    for n in (int(x) for x in args.sizes.split(",")):
        for engine, kind in cases:
            if engine not in engines:
                continue
            try:
                row = run(engine, kind, n, args.calls)
            except Exception as exc:  # noqa: BLE001 (a case that fails is reported, the others still run)
                row = {"engine": engine, "kind": kind, "n_worlds": n, "error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(row), flush=True)
            if args.out:
                args.out.mkdir(parents=True, exist_ok=True)
                with open(args.out / "gpu-trace.jsonl", "a") as f:
                    f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
