"""jaxmor vs MuJoCo (C, ``mujoco.rollout``) vs MJX and MJWarp on the Unitree Go2 MJCF, its 12 servos driven per step.

All the engines read the same file (Menagerie's ``scene_mjx.xml``: 12 ``<general>`` position servos, kp 50, a
``home`` keyframe), unchanged: by default ``tests/data/unitree_go2/scene_mjx.xml`` of this repository,
``$JAXMOR_GO2_DIR/scene_mjx.xml`` if that is set, or ``--xml``. Every world starts at the home keyframe with the
base ``DROP`` higher and gets ``ctrl(t) = home ctrl + AMPLITUDE sin(2 pi FREQUENCY t + phase_ij)`` [rad], the
phases drawn once from a fixed seed; ``--steps`` steps per call, at the file's time step. jaxmor:
``jaxmor.rollout_batch(model, states, controls={"ctrl": (N, steps, nu)}, chunk_size=...)`` (and with
``--jaxmor-vmap`` one ``jax.vmap`` of ``jaxmor.rollout(model, state, controls={"ctrl": ...})``); MuJoCo:
``mujoco.rollout`` with per-step controls; MJX: a ``lax.scan`` of ``mjx.step`` setting ``ctrl``; MJWarp
(``--engines ...,mjwarp``, the ``mjwarp`` extra): ``mujoco_warp.step`` setting ``ctrl``, captured as one CUDA graph
on a GPU (:mod:`bench.mjwarp`). MJX and MJWarp also run like for like (``--like-for-like``): only the feet
collide, 1 solver iteration and 5 line-search iterations, as MuJoCo Playground's Go1; jaxmor then also runs with
only its feet touching the ground (``jaxmor.with_ground_contact``), its solver as it is.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import numpy as np

from bench import report
from bench.quadruped import add_comparison_options, comparison_cases, jaxmor_forward
from bench.runner import ROOT, Scenario

#: The Go2 scene: the repository's copy, or ``$JAXMOR_GO2_DIR/scene_mjx.xml`` (``--xml`` overrides both).
XML = (
    Path(os.environ["JAXMOR_GO2_DIR"]) / "scene_mjx.xml"
    if os.environ.get("JAXMOR_GO2_DIR")
    else ROOT / "tests" / "data" / "unitree_go2" / "scene_mjx.xml"
)
KEY = "home"
FEET = ("FL", "FR", "RL", "RR")  # the foot geoms: the only ones colliding in the like-for-like cases
DROP = 0.02  # the base starts this much above the keyframe's [m]
AMPLITUDE = 0.3  # [rad]
FREQUENCY = 2.0  # [Hz]
SEED = 0


def controls(home_ctrl: np.ndarray, n_worlds: int, n_steps: int, dt: float) -> np.ndarray:
    """(n_worlds, n_steps, nu) position targets, float64; the first n worlds are the same for every N."""
    phase = np.random.default_rng(SEED).uniform(0.0, 2 * np.pi, size=(n_worlds, home_ctrl.size))
    t = np.arange(n_steps) * dt
    return home_ctrl + AMPLITUDE * np.sin(2 * np.pi * FREQUENCY * t[None, :, None] + phase[:, None, :])


def add_options(g) -> None:
    g.add_argument("--xml", type=Path, default=XML, help=f"the Go2 MJCF scene (default {XML})")
    add_comparison_options(g, jaxmor_vmap=False)


def prepare(args, engines: list[str]) -> dict:
    """The file and its time step (read with MuJoCo, as every engine must step at the same one)."""
    if not Path(args.xml).is_file():
        raise SystemExit(f"{args.xml}: no such file (set $JAXMOR_GO2_DIR or pass --xml)")
    try:
        import mujoco
    except ImportError as exc:
        raise SystemExit(f"the go2 scenario reads the file's time step with MuJoCo: {exc}") from None
    return {"xml": str(Path(args.xml).resolve()), "dt": float(mujoco.MjModel.from_xml_path(str(args.xml)).opt.timestep)}


def plan(args, engines: list[str]) -> list[dict]:
    return comparison_cases(args, engines, jaxmor_feet=True)


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
    if spec.get("like_for_like"):  # only the feet touch the ground, as in MJX's and MJWarp's like-for-like cases
        model = jaxmor.with_ground_contact(model, list(FEET))
    _check_dt(spec, float(model.opt.timestep))
    s0 = jaxmor.set_keyframe(model, jaxmor.init_state(model), KEY)
    s0 = s0.replace(q=s0.q.at[2].add(DROP))
    states = jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n, *x.shape))), s0)
    ctrl = jnp.asarray(controls(np.asarray(s0.ctrl, np.float64), n, steps, spec["dt"]), s0.ctrl.dtype)
    return jaxmor_forward(model, states, {"ctrl": ctrl}, spec, {"base_z_start": float(s0.q[2])})


def _mujoco_start(spec: dict):
    """(model, load seconds, home qpos with the base DROP higher, home ctrl)."""
    import mujoco

    t = time.perf_counter()
    model = mujoco.MjModel.from_xml_path(spec["xml"])
    load_s = time.perf_counter() - t
    _check_dt(spec, model.opt.timestep)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, KEY))
    data.qpos[2] += DROP
    return model, load_s, data, data.ctrl.copy()


def run_mujoco(spec: dict) -> dict:
    import mujoco

    from bench import case

    n, steps = spec["n_worlds"], spec["n_steps"]
    model, load_s, data, home_ctrl = _mujoco_start(spec)
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    s0 = np.zeros(mujoco.mj_stateSize(model, full))
    mujoco.mj_getState(model, data, s0, full)  # the keyframe's time, qpos, qvel, act, ... with the drop
    ctrl = controls(home_ctrl, n, steps, spec["dt"])
    program = case.mujoco_program(model, np.tile(s0, (n, 1)), ctrl, int(spec["nthread"]), load_s)
    return case.run_single(program, spec)


def run_mjx(spec: dict) -> dict:
    """MJX's or MJWarp's case (``spec["engine"]``), with ``like_for_like`` only the feet colliding."""
    from bench import case, mjwarp, mujoco_settings

    n, steps = spec["n_worlds"], spec["n_steps"]
    mj_model, load_s, data, home_ctrl = _mujoco_start(spec)
    if spec.get("like_for_like"):
        mj_model = mujoco_settings.like_for_like(mj_model, FEET)
    qpos = np.tile(data.qpos, (n, 1))
    ctrl = controls(home_ctrl, n, steps, spec["dt"])
    if spec["engine"] == "mjwarp":
        return case.run_single(mjwarp.program(mj_model, qpos, ctrl, load_s), spec)
    program = case.mjx_program(mj_model, qpos, ctrl, 0.0, spec)
    program.timing["load_s"] = load_s
    return case.run_single(program, spec)


RUNNERS = {
    ("jaxmor", "forward"): run_jaxmor,
    ("mujoco", "forward"): run_mujoco,
    ("mjx", "forward"): run_mjx,
    ("mjwarp", "forward"): run_mjx,
}


# ---------------------------------------------------------------------------------------------- tables


def render(records: list[dict]) -> str:
    """The three-engine tables, then the sanity check: mean final base height per engine and N."""
    labels = [x for x in report.ENGINE_NAMES if any(r["engine_label"] == x for r in records)]
    sizes = sorted({r["n_worlds"] for r in records})
    by = {(r["engine_label"], r["n_worlds"]): r for r in records}
    names = {**report.ENGINE_NAMES, "mujoco": "MuJoCo", "mujoco-1t": "MuJoCo 1t"}

    def z(r):
        if not report.ok(r):
            return "-" if r is None else r["status"]
        c = r["check"]
        return f"{c['base_z_mean']:.4f}" + (f" ({c['nonfinite_worlds']} non-finite)" if c["nonfinite_worlds"] else "")

    starts = ", ".join(sorted({f"{r['check']['base_z_start']:.4f}" for r in records if report.ok(r)}))
    lines = report.engine_tables(records, "`MjModel.from_xml_path`")
    lines += [
        "",
        f"Mean final base height [m] after {records[0]['n_steps']} steps, from {starts} m (the keyframe's plus "
        f"{DROP} m).",
        "",
        "| N | " + " | ".join(names[x] for x in labels) + " |",
        "|" + "---|" * (len(labels) + 1),
    ]
    lines += [f"| {n:,} | " + " | ".join(z(by.get((x, n))) for x in labels) + " |" for n in sizes]
    return "\n".join(lines + report.retry_footnote(records))


SCENARIO = Scenario(
    name="go2",
    summary="jaxmor vs MuJoCo vs MJX on the Unitree Go2 MJCF, position servos (about 10 min on 2 cores)",
    description=__doc__,
    results_prefix="go2-",
    table="go2",
    defaults={
        "sizes": "1,64,1024",
        "steps": 100,
        "repeats": 5,
        "case_budget": 120.0,
        "case_timeout": 1800.0,
        "engines": "jaxmor,mujoco,mjx",
        "engine_choices": ("jaxmor", "mujoco", "mjx", "mjwarp"),
    },
    plan=plan,
    render=render,
    add_options=add_options,
    prepare=prepare,
)
