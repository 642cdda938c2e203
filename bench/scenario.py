"""The quadruped's benchmark scenario, shared by every engine: robot, initial state, controls, and the MuJoCo model.

Scenario: jaxmor's quadruped (``robots/quadruped/quadruped.urdf``) dropped from its documented
standing pose (:func:`jaxmor.robots.quadruped_standing_q`) with the base ``DROP`` higher (0.54 m instead of
0.5202 m), on a flat ground plane (friction 0.8), time step ``dt`` (default 2 ms). World ``i`` gets the
open-loop actuator torques (at the gear outputs) ``tau_a(t) = AMPLITUDE * effort_a * sin(2 pi FREQUENCY t +
phase_ia)``, with the phases drawn once from a fixed seed: every world differs, every run is the same.

The controls and the MuJoCo model are plain numpy and MuJoCo's MjSpec; the start pose comes from jaxmor (the
MuJoCo and MJX cases get it in their spec, computed once by the runner, so that their processes do not import
JAX: :func:`standing_qpos_subprocess`). The quadruped scenario (:mod:`bench.quadruped`), the motor-dynamics
scenario, :mod:`bench.final_states` and the analysis tools build their models and states here.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "robots" / "quadruped" / "quadruped.urdf"

LEGS = ("LF", "RF", "LH", "RH")
#: The actuated joints in actuator order (the URDF's, jaxmor's and the MjSpec's), for the controls' columns.
JOINTS = tuple(f"{leg}_{j}" for leg in LEGS for j in ("HAA", "HFE", "KFE"))
DROP = 0.02  # the base starts this much above the standing height [m]
FRICTION = 0.8  # ground and geoms (jaxmor's default geom friction; combined as sqrt / max: 0.8 either way)
AMPLITUDE = 0.5  # fraction of each actuator's effort limit
FREQUENCY = 2.0  # [Hz]
SEED = 0


def jaxmor_model(dt: float, dtype=None):
    """The quadruped with a ground plane (friction FRICTION), time step ``dt`` in the model's dtype (or ``dtype``)."""
    import jax.numpy as jnp

    import jaxmor

    model = jaxmor.add_ground(jaxmor.load_urdf(str(URDF)), friction=FRICTION)
    dtype = model.opt.timestep.dtype if dtype is None else dtype
    return model.replace(opt=model.opt.replace(timestep=jnp.asarray(dt, dtype)))


def check_jaxmor_source(spec: dict) -> None:
    """In a case process: the imported ``jaxmor`` is this checkout's, or, for a case of ``spec["jaxmor_rev"]``, not
    this checkout's (a case must never time the wrong package).

    Raises:
        RuntimeError: the package was imported from the wrong place.
    """
    import jaxmor

    here = Path(jaxmor.__file__).resolve().is_relative_to(ROOT)
    if here == bool(spec.get("jaxmor_rev")):
        where = "this checkout's" if here else f"{Path(jaxmor.__file__).parent}"
        raise RuntimeError(f"case of jaxmor_rev={spec.get('jaxmor_rev')!r} imported {where} jaxmor")


def standing_qpos(model=None) -> np.ndarray:
    """(19,) float64 q of the drop: :func:`jaxmor.robots.quadruped_standing_q` (base level, legs in the standing
    pose, feet on z = 0) with the base DROP higher. ``model``: the jaxmor quadruped (loaded if None)."""
    import jaxmor

    q = jaxmor.robots.quadruped_standing_q(jaxmor.load_urdf(str(URDF)) if model is None else model)
    q[2] += DROP
    return q


def standing_qpos_subprocess() -> list[float]:
    """:func:`standing_qpos` computed in a subprocess on the CPU (this process imports no JAX), as a list that
    JSON carries exactly (the runner puts it in the MuJoCo and MJX cases' specs)."""
    from bench.runner import python_json

    code = "import json; from bench import scenario; print(json.dumps(scenario.standing_qpos().tolist()))"
    return python_json(code, JAX_PLATFORMS="cpu")


def jaxmor_states(model, n: int, q=None):
    """n copies of the model's state at ``q`` (default :func:`standing_qpos`), materialized (not broadcast views),
    as a batch of independent worlds would be."""
    import jax
    import jax.numpy as jnp

    import jaxmor

    q = standing_qpos(model) if q is None else q
    state = jaxmor.init_state(model, jnp.asarray(q, model.body_mass.dtype))
    return jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n, *x.shape))), state)


def urdf_joints() -> dict[str, dict[str, float]]:
    """Per revolute joint of the URDF: effort, damping, friction, rotor_inertia (read with ElementTree)."""
    out = {}
    for el in ET.parse(URDF).getroot().findall("joint"):
        if el.get("type") != "revolute":
            continue
        limit = el.find("limit")
        dyn = el.find("dynamics")
        out[el.get("name")] = {
            "effort": float(limit.get("effort")),
            "damping": float(dyn.get("damping", 0.0)),
            "friction": float(dyn.get("friction", 0.0)),
            "rotor_inertia": float(dyn.get("rotor_inertia", 0.0)),
        }
    return out


def urdf_couplings() -> dict[str, tuple[str, float]]:
    """Per actuated joint with a ``<coupling>``: (coupled joint, ratio)."""
    out = {}
    for el in ET.parse(URDF).getroot().findall("actuator"):
        c = el.find("coupling")
        if c is not None:
            out[el.get("joint")] = (c.get("joint"), float(c.get("ratio")))
    return out


def efforts() -> np.ndarray:
    """(12,) effort limits of the actuated joints, in actuator order [Nm]."""
    j = urdf_joints()
    return np.array([j[n]["effort"] for n in JOINTS])


def controls(n_worlds: int, n_steps: int, dt: float) -> np.ndarray:
    """(n_worlds, n_steps, 12) actuator torques at the gear outputs, float64 (see the module docstring)."""
    rng = np.random.default_rng(SEED)
    phase = rng.uniform(0.0, 2 * np.pi, size=(max(n_worlds, 1), len(JOINTS)))[:n_worlds]
    t = np.arange(n_steps) * dt
    return AMPLITUDE * efforts() * np.sin(2 * np.pi * FREQUENCY * t[None, :, None] + phase[:, None, :])


# ---------------------------------------------------------------------------------------------- MuJoCo


def mujoco_spec(dt: float):
    """The same robot as an ``mujoco.MjSpec``, read from the URDF and completed (see bench/README.md).

    - fusestatic off while parsing, so the root link ``base`` stays a body and gets a free joint; on at
      compile time, so each massless foot frame merges into its shank, as in jaxmor;
      ``inertiafromgeom`` off, so the feet stay massless (MuJoCo would give them 65 g of water each).
    - ``dof_armature`` = the URDF's ``rotor_inertia`` (MuJoCo's URDF reader ignores it); damping and
      friction (``frictionloss``) come from the URDF.
    - a ground plane; robot geoms collide with the ground only (jaxmor has no self-collision by
      default); friction 0.8 on both sides.
    - 12 ``motor`` actuators whose ctrl is the torque at the gear output, ``ctrlrange`` = +-effort (a
      box, not jaxmor's motor operating region). A knee coupled to its hip (``<coupling ratio>``) acts
      through a fixed tendon ``q_KFE + (ratio / gear) q_HFE``, so its torque also loads the hip as
      jaxmor's ``T^T`` does.
    """
    import mujoco

    text = URDF.read_text()
    text = text.replace(
        '<robot name="quadruped">',
        '<robot name="quadruped">\n  <mujoco><compiler fusestatic="false" discardvisual="true"/></mujoco>',
        1,
    )
    spec = mujoco.MjSpec.from_string(text)
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.fusestatic = True
    base = spec.worldbody.first_body()
    assert base.name == "base", base.name
    base.add_freejoint()
    spec.option.timestep = dt

    joints = urdf_joints()
    for name, p in joints.items():
        spec.joint(name).armature = p["rotor_inertia"]
    for g in spec.geoms:
        g.contype, g.conaffinity = 1, 0
        g.friction = [FRICTION, 0.005, 0.0001]
    spec.worldbody.add_geom(
        name="ground",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[0, 0, 0.05],
        contype=0,
        conaffinity=1,
        friction=[FRICTION, 0.005, 0.0001],
    )

    couplings = urdf_couplings()
    gears = urdf_gears()
    for name in JOINTS:
        effort = joints[name]["effort"]
        act = spec.add_actuator(name=name)
        act.set_to_motor()
        act.ctrllimited = True
        act.ctrlrange = [-effort, effort]
        if name in couplings:
            other, ratio = couplings[name]
            tendon = spec.add_tendon(name=f"{name}_drive")
            tendon.wrap_joint(name, 1.0)
            tendon.wrap_joint(other, ratio / gears[name])
            act.trntype = mujoco.mjtTrn.mjTRN_TENDON
            act.target = tendon.name
        else:
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            act.target = name
    return spec


def urdf_gears() -> dict[str, float]:
    """Gear ratio per actuated joint, from the actuator files (``gear_ratio`` attribute)."""
    root = ET.parse(URDF).getroot()
    out = {}
    for el in root.findall("actuator"):
        path = URDF.parent / "actuators" / el.get("file")
        doc = ET.parse(path).getroot()
        gear = None
        for node in doc.iter():
            for key in ("gear_ratio", "gear"):
                if node.get(key) is not None:
                    gear = float(node.get(key))
        if gear is None:
            raise ValueError(f"no gear ratio in {path}")
        out[el.get("joint")] = gear
    return out
