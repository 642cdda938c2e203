"""The benchmark scenario, shared by every engine: robot, initial state, controls, and the MuJoCo model.

Everything here is plain numpy (and MuJoCo's MjSpec), so the engines' case runners can build the
same inputs without importing each other.

Scenario: jaxmor's quadruped (``jaxmor/robots/quadruped/quadruped.urdf``) dropped from its documented
standing pose with the base ``DROP`` higher (0.54 m instead of 0.5202 m), on a flat ground plane
(friction 0.8), time step ``dt`` (default 2 ms). World ``i`` gets the open-loop actuator torques (at
the gear outputs) ``tau_a(t) = AMPLITUDE * effort_a * sin(2 pi FREQUENCY t + phase_ia)``, with the
phases drawn once from a fixed seed: every world differs, every run is the same.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
URDF = ROOT / "jaxmor" / "robots" / "quadruped" / "quadruped.urdf"

LEGS = ("LF", "RF", "LH", "RH")
JOINTS = tuple(f"{leg}_{j}" for leg in LEGS for j in ("HAA", "HFE", "KFE"))
STAND_HFE, STAND_KFE = 0.6, -1.2
STAND_HEIGHT = 2 * 0.3 * math.cos(STAND_HFE) + 0.025  # 0.520201 m (jaxmor/robots/quadruped/README.md)
DROP = 0.02  # the base starts this much above the standing height [m]
FRICTION = 0.8  # ground and geoms (jaxmor's default geom friction; combined as sqrt / max: 0.8 either way)
AMPLITUDE = 0.5  # fraction of each actuator's effort limit
FREQUENCY = 2.0  # [Hz]
SEED = 0


def standing_qpos() -> np.ndarray:
    """(19,) q of the drop: base at STAND_HEIGHT + DROP, level (w x y z), legs in the standing pose."""
    q = np.zeros(7 + len(JOINTS))
    q[2] = STAND_HEIGHT + DROP
    q[3] = 1.0
    for k, name in enumerate(JOINTS):
        q[7 + k] = {"HAA": 0.0, "HFE": STAND_HFE, "KFE": STAND_KFE}[name.split("_")[1]]
    return q


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
    gears = _urdf_gears()
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


def _urdf_gears() -> dict[str, float]:
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
