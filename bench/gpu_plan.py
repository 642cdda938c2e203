"""The GPU program of one step, planned by XLA for an NVIDIA H200 on a machine without a GPU (deviceless AOT).

Cases, per N of ``--sizes``: ``jax.vmap`` of ONE step over N worlds, float32, of jaxmor on the shipped quadruped
with its ground (bench/scenario.py), of jaxmor on the Go2 MJCF (``tests/data/unitree_go2/scene_mjx.xml``, home
keyframe, as bench/go2.py builds it), and of ``mjx.step`` on the same Go2 file, both also with only the Go2's feet
colliding (kind ``go2-feet``, the like-for-like setting); the model is an input shared by
the worlds (``in_axes=(None, 0)``; ``--no-model-input``: closed over, its values constants XLA folds). Each case
compiles for the H200 target (``bench/gpu_target/h200.txtpb``) in its own process (``CUDA_VISIBLE_DEVICES=-1``,
JAX on the CPU, ``XLA_FLAGS=--xla_dump_to=...``) and reads the compiler's plan (:mod:`bench.tools.thunks`):
kernels, device-to-device copies, CUDA-graph launches and loops per step, their GFLOP and GB (XLA's cost
analysis, each loop body times its trip count), and the estimate
``t = max(flops / 67e12, bytes / 4.8e12) + 3e-6 * kernels`` [s].

MJWarp (``mjwarp`` cases, the Go2 as in the file and with only its feet colliding,
:func:`bench.mujoco_settings.like_for_like`) has no such plan: its kernels are Warp's, not XLA's. Its cases count
the kernel launches of one step on Warp's CPU device (:func:`bench.mjwarp.launches`), which on a GPU MJWarp replays
as one CUDA graph.

Nothing runs on a GPU: the counts are the compiler's plan, the times are estimates. Needs the CUDA wheels
(``pip install -e ".[gpu-plan]"`` in a separate virtual environment; bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bench import go2, report
from bench.runner import ROOT, Scenario, sizes_of
from bench.tools.thunks import _round

TARGET = Path(__file__).resolve().parent / "gpu_target" / "h200.txtpb"
GO2_XML = ROOT / "tests" / "data" / "unitree_go2" / "scene_mjx.xml"
#: The first-order model's H200 figures: dense float32 FLOP/s, HBM bytes/s, seconds per kernel launch.
PEAK_FLOPS = 67e12
PEAK_BYTES = 4.8e12
LAUNCH_S = 3e-6
#: jaxmor's stage scopes (jaxmor/sim/pipeline.py ``step`` and ``stages``), for the per-stage breakdown.
JAXMOR_STAGES = (
    "guard",
    "commands",
    "kinematics",
    "dynamics",
    "forces",
    "free_motion",
    "collision",
    "constraint",
    "solver",
    "integrator",
)
#: MJX's stage scopes (``mjx.forward``'s ``fwd_*`` and ``solve``, ``mjx.step``'s ``euler``).
MJX_STAGES = ("fwd_position", "fwd_velocity", "fwd_actuation", "fwd_acceleration", "solve", "euler")
#: The cases: (engine, kind) -> label.
CASES = {
    ("jaxmor", "quadruped"): "jaxmor quadruped",
    ("jaxmor", "go2"): "jaxmor Go2",
    ("mjx", "go2"): "MJX Go2",
    ("jaxmor", "go2-feet"): "jaxmor Go2, feet only",
    ("mjx", "go2-feet"): "MJX Go2, feet only",
    ("mjwarp", "go2"): "MJWarp Go2",
    ("mjwarp", "go2-feet"): "MJWarp Go2, feet only",
}


def add_options(g) -> None:
    g.add_argument(
        "--model-input",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the model an input of the compiled step (shared by the worlds), or closed over: its values constants "
        "XLA folds (default %(default)s)",
    )
    g.add_argument(
        "--scan",
        type=int,
        default=8,
        metavar="K",
        help="also compile each jaxmor and MJX case as a lax.scan of K steps, as a rollout or a training loop runs "
        "it, and report per step: one trip of the scan's loop (no copies of the fields a step passes through); 0: "
        "off (default %(default)s)",
    )
    g.add_argument(
        "--keep-dump", type=Path, help="copy each case's XLA dump (HLO, thunk sequence) into DIR/<engine>-<kind>-<N>"
    )
    g.add_argument(
        "--solver",
        choices=("auto", "pgs", "jacobi"),
        help="Options.solver of the jaxmor cases (default: the model's, auto: the Jacobi iteration on CUDA)",
    )
    g.add_argument(
        "--xml",
        type=Path,
        help=f"the Go2 scene of the Go2 cases (default {GO2_XML.relative_to(ROOT)}; e.g. one with a "
        "height field, bench/tools/hfield_scene.py)",
    )


def plan(args, engines: list[str]) -> list[dict]:
    cases = []
    for (engine, kind), label in CASES.items():
        if engine not in engines:
            continue
        for n in sizes_of(args):
            case = {"engine": engine, "kind": kind, "engine_label": label, "n_worlds": n, "n_steps": 1}
            case["model_input"] = args.model_input
            if args.solver and engine == "jaxmor":
                case["solver"] = args.solver
            if args.xml:
                case["xml"] = str(Path(args.xml).resolve())
            if args.keep_dump:
                case["keep_dump"] = str(Path(args.keep_dump).resolve() / f"{engine}-{kind}-{n}")
            cases.append(case)
            if args.scan > 1 and engine != "mjwarp":
                label_k = f"{label}, per step of a {args.scan}-step scan"
                dump = case.get("keep_dump") and case["keep_dump"] + f"-scan{args.scan}"
                cases.append({**case, "engine_label": label_k, "n_steps": args.scan, "keep_dump": dump})
    return cases


# ---------------------------------------------------------------------------------------------- the compile


def _deviceless(dump: str):
    """Import JAX on the CPU with XLA dumping into ``dump``; the H200 target's sharding for the inputs."""
    if "jax" in sys.modules:
        raise RuntimeError("JAX was imported before the XLA flags were set")
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump}".strip()
    import jax
    from jax.experimental import topologies

    jax.config.update("jax_platforms", "cpu")
    topo = topologies.get_topology_desc(platform="cuda", target_config=TARGET.read_text(), topology="1x1x1")
    mesh = topologies.make_mesh(topo, (1,), ("x",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())


def _abstract(tree, n: int, sharding):
    """``tree``'s arrays as ShapeDtypeStructs with a leading axis of ``n`` worlds, on the target."""
    import jax

    return jax.tree.map(lambda x: jax.ShapeDtypeStruct((n, *x.shape), x.dtype, sharding=sharding), tree)


def _jaxmor_step(spec: dict):
    """(``jaxmor.step``, the model, one world's state) of the case's jaxmor scene (kind ``go2-feet``: only the
    Go2's feet touching the ground)."""
    import jaxmor

    if spec["kind"] == "quadruped":
        from bench import scenario

        model = scenario.jaxmor_model(0.002)
        state = jaxmor.init_state(model, scenario.standing_qpos(model).astype("float32"))
    else:
        with warnings.catch_warnings():  # the feet's condim 6: jaxmor keeps their sliding friction only
            warnings.filterwarnings("ignore", message=".*no torsional or rolling friction")
            model = jaxmor.load_mjcf(spec.get("xml", str(GO2_XML)))
        if spec["kind"] == "go2-feet":  # before the state: its contact slots follow the model's
            model = jaxmor.with_ground_contact(model, list(go2.FEET))
        state = jaxmor.set_keyframe(model, jaxmor.init_state(model), "home")
    if spec.get("solver"):
        model = jaxmor.with_options(model, solver=spec["solver"])
    return jaxmor.step, model, state


def _mjx_step(spec: dict):
    """(``mjx.step``, the model, one world's Data at the Go2's home keyframe) on the same file (kind
    ``go2-feet``: only the feet colliding, :func:`bench.mujoco_settings.like_for_like`)."""
    import jax.numpy as jnp
    from mujoco import mjx

    mj_model, data = _go2_mujoco(spec)
    d = mjx.put_data(mj_model, data)
    d = d.replace(qpos=jnp.asarray(d.qpos, jnp.float32), qvel=jnp.asarray(d.qvel, jnp.float32))
    return mjx.step, mjx.put_model(mj_model), d


def _go2_mujoco(spec: dict):
    """(the case's Go2 ``MjModel``, its ``MjData`` at the home keyframe): as the file sets it or, for kind
    ``go2-feet``, like for like (:func:`bench.mujoco_settings.like_for_like`, only the feet colliding)."""
    import mujoco

    from bench import mujoco_settings

    mj_model = mujoco.MjModel.from_xml_path(spec.get("xml", str(GO2_XML)))
    if spec["kind"] == "go2-feet":
        mj_model = mujoco_settings.like_for_like(mj_model, go2.FEET)
    data = mujoco.MjData(mj_model)
    mujoco.mj_resetDataKeyframe(mj_model, data, mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_KEY, "home"))
    return mj_model, data


def _program(spec: dict, sharding):
    """(the function to compile, its abstract inputs): ``jax.vmap`` of one step over the worlds (or of a
    ``lax.scan`` of ``spec["n_steps"]`` steps), the model an input shared by all (``spec["model_input"]``, the
    default) or closed over (its values then constants that XLA folds)."""
    import jax
    import jax.numpy as jnp

    one, model, world = (_mjx_step if spec["engine"] == "mjx" else _jaxmor_step)(spec)
    states = _abstract(world, int(spec["n_worlds"]), sharding)
    k = int(spec.get("n_steps", 1))

    def step(m, s):
        return one(m, s) if k == 1 else jax.lax.scan(lambda s, _: (one(m, s), None), s, None, length=k)[0]

    if not spec.get("model_input", True):
        return jax.vmap(lambda s: step(model, s)), (states,)
    shared = jax.tree.map(lambda x: jax.ShapeDtypeStruct(jnp.shape(x), jnp.asarray(x).dtype, sharding=sharding), model)
    return jax.vmap(step, in_axes=(None, 0)), (shared, states)


def run_case(spec: dict) -> dict:
    """Compile the case deviceless for the H200 and read its plan (:func:`bench.tools.thunks.plan_of`)."""
    dump = tempfile.mkdtemp(prefix="gpu-plan-")
    try:
        sharding = _deviceless(dump)
        import jax

        from bench.tools import thunks as counting

        fn, inputs = _program(spec, sharding)
        t = time.perf_counter()
        lowered = jax.jit(fn).lower(*inputs)
        lower_s = time.perf_counter() - t
        t = time.perf_counter()
        compiled = lowered.compile()
        xla_s = time.perf_counter() - t
        hlo = compiled.as_text()
        files = counting.dump_files(dump)
        stages = JAXMOR_STAGES if spec["engine"] == "jaxmor" else MJX_STAGES
        thunks, metadata = files["thunks"].read_text(), files["metadata"].read_text()
        result = counting.plan_of(hlo, thunks, metadata, counting.loop_costs(hlo), stages)
        if int(spec.get("n_steps", 1)) > 1:
            result = per_step(result, int(spec["n_steps"]))
        result.update(estimate(result, int(spec["n_worlds"])))
        if spec.get("keep_dump"):
            shutil.copytree(dump, spec["keep_dump"], dirs_exist_ok=True)
            Path(spec["keep_dump"], "optimized.hlo.txt").write_text(hlo)
        return {
            "compile_s": lower_s + xla_s,
            "lower_s": lower_s,
            "xla_compile_s": xla_s,
            "target": str(TARGET.relative_to(ROOT)),
            "thunk_file": files["thunks"].name,
            "cuda_plugin": _cuda_versions(),
            **result,
        }
    finally:
        shutil.rmtree(dump, ignore_errors=True)


def per_step(plan: dict, k: int) -> dict:
    """A ``k``-step scan's plan as one step's: the scan loop's one trip (kernels, copies, graph launches; kernels
    inside the step's own loops apart), the loops inside it, the flops, bytes and stage figures divided by ``k``
    (what runs once outside the loop spread over the steps); the rollout's totals under ``"rollout"``.

    Raises:
        ValueError: the plan has no outermost loop of ``k`` trips.
    """
    scan = next((x for x in plan["loops"] if x["depth"] == 0 and x["trip_count"] == k), None)
    if scan is None:
        raise ValueError(f"no outer loop of {k} trips in the plan: not a {k}-step scan")
    inner = [x for x in plan["loops"] if x["depth"] > 0]
    trip = {key: _round(v) for key, v in scan["per_trip"].items()}
    inside = _round(sum(x["per_trip"]["kernels"] * x["trip_count"] for x in inner if x["depth"] == 1))
    keys = ("kernels", "kernels_outside", "kernels_inside", "copies", "graph_launches", "flops", "bytes")
    out = {**plan, "rollout": {key: plan[key] for key in keys}, "loops": inner}
    out.update(kernels=trip["kernels"], kernels_inside=inside, kernels_outside=_round(trip["kernels"] - inside))
    out.update(copies=trip["copies"], graph_launches=trip["graph_launches"])
    out.update(flops=plan["flops"] / k, bytes=plan["bytes"] / k)
    out["stages"] = {name: {key: v / k for key, v in st.items()} for name, st in plan["stages"].items()}
    return out


def estimate(plan: dict, n: int) -> dict:
    """The first-order model: ``t = max(flops / PEAK_FLOPS, bytes / PEAK_BYTES) + LAUNCH_S * kernels`` [s]."""
    t = max(plan["flops"] / PEAK_FLOPS, plan["bytes"] / PEAK_BYTES) + LAUNCH_S * plan["kernels"]
    return {"estimate_s": t, "estimate_wsps": n / t, "kb_per_world_step": plan["bytes"] / n / 1e3}


def _cuda_versions() -> dict:
    import importlib.metadata as md

    out = {}
    for dist in ("jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def run_mjwarp(spec: dict) -> dict:
    """MJWarp's kernel launches in one step of the Go2 at its home keyframe (:func:`bench.mjwarp.launches`), as
    the file sets it or (kind ``go2-feet``) with only the feet colliding."""
    from bench import mjwarp, mujoco_settings

    mj_model, data = _go2_mujoco(spec)
    result = mjwarp.launches(mj_model, int(spec["n_worlds"]), data.qpos.copy())
    return {"compile_s": result["build_s"], "settings": mujoco_settings.settings(mj_model), **result}


RUNNERS = {key: (run_mjwarp if key[0] == "mjwarp" else run_case) for key in CASES}


# ---------------------------------------------------------------------------------------------- tables


def _n(x: float) -> str:
    return f"{x:,.0f}"


def render(records: list[dict]) -> str:
    """The per-step figures of every case, then each case's loops and its kernels, copies and bytes by stage."""
    launched = [r for r in records if r["engine"] == "mjwarp"]
    records = [r for r in records if r["engine"] != "mjwarp"]
    ok = [r for r in records if report.ok(r)]
    lines = [
        "Per step (vmap of one step over N worlds, float32), as XLA plans it for an H200; no GPU ran. Kernels "
        "inside loops count once per iteration, a conditional's branches each for an equal share of its runs; GFLOP "
        "and GB are XLA's cost analysis with each loop body times its trip count, each conditional at the mean of "
        "its branches; the estimate is `max(flops / 67 TFLOP/s, bytes / 4.8 TB/s) + 3 us x kernels`.",
        "",
        "| case | N | kernels (outside + inside loops) | D2D copies | graph launches | loops (trips) | GFLOP | GB "
        "| KB per world-step | estimate [ms] | world-steps/s (estimate) | compile [s] |",
        "|" + "---|" * 12,
    ]
    lines += _rows(records, _plan_row) + _launch_table(launched)
    for r in ok:
        lines += ["", f"{r['engine_label']}, N = {r['n_worlds']:,}, by stage (loop iterations included):", ""]
        lines += ["| stage | kernels | D2D copies | GB (operands + results) |", "|---|---|---|---|"]
        for name, s in r["stages"].items():
            lines.append(f"| {name} | {_n(s['kernels'])} | {_n(s['copies'])} | {s['bytes'] / 1e9:.2f} |")
    return "\n".join(lines)


def _launch_table(records: list[dict]) -> list[str]:
    """MJWarp's kernel launches per step on Warp's CPU device, with the settings they ran at."""
    if not records:
        return []
    lines = [
        "",
        "MJWarp: kernel launches in one step on Warp's CPU device (grids with threads; MJWarp also calls the "
        "kernels of features the model lacks, on empty grids that launch nothing, counted apart), at the Go2's "
        "home keyframe. On a GPU MJWarp captures the step as one CUDA graph: one graph launch per step (or per "
        "captured rollout), these kernels inside it.",
        "",
        "| case | N | kernel launches | empty grids | distinct kernels | solver iterations (most in a world) "
        "| iterations / ls_iterations (caps) | collision pairs |",
        "|" + "---|" * 8,
    ]
    return lines + _rows(records, _launch_row)


def _rows(records: list[dict], row) -> list[str]:
    """One table row per record: ``row(record)``'s cells after the case and N, or the case's error."""
    return [
        f"| {r['engine_label']} | {r['n_worlds']:,} | "
        + (row(r) if report.ok(r) else f"{r.get('status')}: {r.get('error', '')}")
        + " |"
        for r in records
    ]


def _plan_row(r: dict) -> str:
    loops = ", ".join(f"{x['stage'] or '?'} {x['trip_count']}" for x in r["loops"]) or "none"
    return (
        f"{_n(r['kernels'])} ({_n(r['kernels_outside'])} + {_n(r['kernels_inside'])}) | {_n(r['copies'])} | "
        f"{_n(r['graph_launches'])} | {loops} | {r['flops'] / 1e9:.1f} | {r['bytes'] / 1e9:.1f} | "
        f"{r['kb_per_world_step']:,.0f} | {r['estimate_s'] * 1e3:.2f} | {report.fmt_rate(r['estimate_wsps'])} | "
        f"{r['compile_s']:.0f}"
    )


def _launch_row(r: dict) -> str:
    s = r["settings"]
    return (
        f"{r['launches']} | {r['empty']} | {r['distinct_kernels']} | {r['solver_iterations']} | "
        f"{s['iterations']} / {s['ls_iterations']} | {s['collision_pairs']}"
    )


SCENARIO = Scenario(
    name="gpu-plan",
    summary="the step's GPU program as XLA plans it for an H200, without a GPU (needs the gpu-plan extra; ~5 min)",
    description=__doc__,
    results_prefix="gpu-plan-",
    table="gpu-plan",
    defaults={
        "sizes": "8192",
        "steps": 1,
        "repeats": 0,
        "case_budget": 0.0,
        "case_timeout": 1800.0,
        "engines": "jaxmor,mjx,mjwarp",
        "engine_choices": ("jaxmor", "mjx", "mjwarp"),
    },
    plan=plan,
    render=render,
    add_options=add_options,
    steps_help="unused: one step is compiled (--scan K: a K-step scan besides)",
    env={"CUDA_VISIBLE_DEVICES": "-1", "JAX_PLATFORMS": "cpu"},
)
