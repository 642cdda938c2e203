"""The robot descriptions shipped with jaxmor: the repository's top-level ``robots/`` folder, installed as the
data package ``jaxmor.robots.data`` (``setup.py`` and ``pyproject.toml`` map it), so they are there after any install.

* ``"turntable"``: the actuator spec's one-motor turntable (a disc on a continuous joint, gear 10).
* ``"quadruped"``: a KAIST-Hound-like quadruped, 12 DC-motor actuators, knees coupled to their hips
  (``robots/quadruped/README.md`` documents its numbers).
* ``"pendulum"``: a uniform rod on a revolute joint driven by one DC motor (``robots/pendulum/README.md``).
* ``"go2"``: the MuJoCo Menagerie's Unitree Go2 (MJCF, BSD-3-Clause), with a description of its 12 joint motors
  from Unitree's published figures; :func:`go2` loads it with those motors (``robots/go2/README.md``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from jaxmor.errors import ArgumentError

if TYPE_CHECKING:
    from jaxmor.types import Model

#: The shipped robots, by name.
NAMES = ("turntable", "quadruped", "pendulum", "go2")

#: The description file of each robot whose file is not ``<name>.urdf``.
_FILES = {"go2": "go2.xml"}

_HERE = Path(__file__).resolve().parent


def _root() -> Path:
    """The folder holding the robot folders: ``jaxmor/robots/data`` in an installed wheel, else the checkout's
    ``robots/`` beside ``jaxmor/`` (an editable install, whose ``jaxmor`` is the checkout's, or a source tree on
    ``sys.path``; a checkout's ``jaxmor/robots/`` has no ``data/``)."""
    installed = _HERE / "data"
    return installed if installed.is_dir() else _HERE.parents[1] / "robots"


def path(name: str) -> Path:
    """The description file of a shipped robot: its URDF, e.g. ``jaxmor.load_urdf(jaxmor.robots.path("quadruped"))``,
    or the Go2's MJCF (``"go2"``: the Menagerie's ``go2.xml``, for :func:`jaxmor.load_mjcf`; :func:`go2` adds its
    motors).

    Raises:
        ArgumentError: no shipped robot has that name (the message lists them).
    """
    if name not in NAMES:
        raise ArgumentError(f"unknown shipped robot {name!r}; the shipped robots are {list(NAMES)}")
    return _root() / name / _FILES.get(name, f"{name}.urdf")


#: The quadruped's standing pose (``robots/quadruped/README.md``): every leg at HAA 0, HFE 0.6, KFE -1.2 rad puts
#: its foot (radius 25 mm) right under its hip, so the level base stands ``2 * 0.3 cos(0.6) + 0.025`` m high.
QUADRUPED_STANDING = {"HAA": 0.0, "HFE": 0.6, "KFE": -1.2}
QUADRUPED_STANDING_HEIGHT = 2 * 0.3 * math.cos(0.6) + 0.025


def quadruped_standing_q(model) -> np.ndarray:
    """(nq,) float64 coordinates of the shipped quadruped standing level with its feet touching ``z = 0``
    [m, quaternion w x y z, rad], for a model loaded from ``path("quadruped")`` (any ground height aside).

    Raises:
        ArgumentError: the model's joints are not the quadruped's.
    """
    from jaxmor.model import joint_q_index  # the Model helpers import nothing from here

    expected = {f"{leg}_{joint}" for leg in ("LF", "RF", "LH", "RH") for joint in QUADRUPED_STANDING}
    if set(model.joint_names) != expected or not model.floating_base:
        raise ArgumentError("quadruped_standing_q needs the shipped quadruped (robots.path('quadruped')), floating")
    q = np.asarray(model.q_default, dtype=np.float64).copy()
    q[2] = QUADRUPED_STANDING_HEIGHT
    q[3:7] = (1.0, 0.0, 0.0, 0.0)
    for name in model.joint_names:
        q[joint_q_index(model, name)] = QUADRUPED_STANDING[name.rsplit("_", 1)[1]]
    return q


#: The Go2's standing pose: the MuJoCo Menagerie's keyframe ``"home"`` (``robots/go2/go2.xml``), every leg at hip
#: 0, thigh 0.9, calf -1.8 rad.
GO2_STANDING = {"hip": 0.0, "thigh": 0.9, "calf": -1.8}
#: The Go2's legs, in the Menagerie's order; each leg's foot sphere is the MJCF geom named after it.
GO2_LEGS = ("FL", "FR", "RL", "RR")

#: What the MJCF loader says about the Menagerie's file every time (``robots/go2/README.md`` documents both: no
#: torsional or rolling friction at the feet, hard contacts where MuJoCo's are soft); :func:`go2` does not repeat it.
_GO2_KNOWN_WARNINGS = (r".*no torsional or rolling friction", r".*MuJoCo would simulate this file differently")


def go2(with_motors: bool = True, *, ground: bool = True) -> Model:
    """The shipped Unitree Go2 (the MuJoCo Menagerie's ``go2.xml``) as a :class:`jaxmor.Model`, in one call.

    With ``with_motors``, its 12 torque actuators (MuJoCo ``<motor>``, affine) are replaced by jaxmor's DC motors
    (``robots/go2/actuators/go2_motors.xml``: Unitree's published figures, each source named there) and every
    driven joint's effort and velocity limits are set from its motor: the peak torque at the gear output (23.7 Nm
    hip and thigh, 45.43 Nm calf) and the no-load speed there (``Kv V_bus / G``: 30.1 and 15.70 rad/s), which is
    what Box-MOR (``jaxmor.envs.Locomotion(motor_model="box")``) reads. The keyframes keep their poses and lose
    their controls (the torque actuators are gone). Everything else is the Menagerie's: masses, joint damping,
    friction and armature, geoms, the 2 ms time step. The loader's warnings about the file (no torsional friction
    at the feet, MuJoCo's soft contacts: ``robots/go2/README.md``) are not repeated.

    Args:
        with_motors: replace the torque actuators by the DC motors (else the Menagerie's model as loaded: affine
            torque actuators, infinite effort and velocity limits).
        ground: add a ground plane ``z = 0`` (:func:`jaxmor.add_ground`, its default friction).

    Returns:
        The model: 19 coordinates (free base first, quaternion w x y z), 18 velocities, 12 actuators in the
        Menagerie's order (``FL_hip, FL_thigh, FL_calf, FR_hip, ..., RR_calf``).

    Raises:
        ArgumentError: ``with_motors`` or ``ground`` is not a bool.
    """
    from jaxmor.io.actuators import actuators_from_xml
    from jaxmor.modeling.actuators import with_actuators, with_affine_actuators
    from jaxmor.modeling.builder import load_mjcf
    from jaxmor.modeling.scene import add_ground

    for name, value in (("with_motors", with_motors), ("ground", ground)):
        if not isinstance(value, bool):
            raise ArgumentError(f"{name} must be a bool, got {value!r}")
    with warnings.catch_warnings():
        for message in _GO2_KNOWN_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        model = load_mjcf(path("go2"))
    if with_motors:
        motors = path("go2").parent / "actuators" / "go2_motors.xml"
        definitions, _, _ = actuators_from_xml(motors, base_dir=motors.parent)
        model = with_actuators(with_affine_actuators(model, []), definitions)
        frames = tuple(dataclasses.replace(frame, ctrl=(), act=None) for frame in model.keyframes)
        model = _with_motor_limits(model.replace(keyframes=frames))
    return add_ground(model) if ground else model


def _with_motor_limits(model: Model) -> Model:
    """``model`` whose driven joints' effort limits are their motors' peak torques at the gear output
    (``G tau_peak``) [Nm] and whose velocity limits are the no-load speeds there (``Kv V_bus / G``) [rad/s]."""
    act = model.actuators
    v = np.asarray(act.joint_v_index, dtype=np.int32)
    gear = act.gear_ratio
    effort = model.dof_effort_limit.at[v].set(act.motor.peak_torque * gear)
    velocity = model.dof_velocity_limit.at[v].set(act.motor.velocity_constant * act.motor.bus_voltage / gear)
    return model.replace(dof_effort_limit=effort, dof_velocity_limit=velocity)


def go2_standing_q(model: Model) -> np.ndarray:
    """(nq,) float64 coordinates of the Go2 standing level with its feet touching the ground [m, quaternion
    w x y z, rad]: the Menagerie's keyframe ``"home"`` (:data:`GO2_STANDING`), at the base height that puts the
    lowest point of every foot sphere on ``z = model.ground_height`` (``z = 0`` for a model without ground),
    from the model's own kinematics; for a model of :func:`go2` (or ``jaxmor.load_mjcf(path("go2"))``).

    Raises:
        ArgumentError: the model's joints or feet are not the Go2's, or its base is not floating.
    """
    import jax.numpy as jnp

    from jaxmor.model import joint_q_index
    from jaxmor.sim.kinematics import body_poses

    expected = {f"{leg}_{joint}_joint" for leg in GO2_LEGS for joint in GO2_STANDING}
    if set(model.joint_names) != expected or not model.floating_base or not set(GO2_LEGS) <= set(model.geom_names):
        raise ArgumentError("go2_standing_q needs the shipped Go2 (jaxmor.robots.go2()), floating")
    q = np.asarray(model.q_default, dtype=np.float64).copy()
    q[:7] = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    for name in model.joint_names:
        q[joint_q_index(model, name)] = GO2_STANDING[name.split("_")[1]]
    poses = body_poses(model, jnp.asarray(q, model.body_mass.dtype))
    feet = np.array([model.geom_names.index(leg) for leg in GO2_LEGS])
    body = np.array(model.geom_body)[feet]
    rotation, position = np.asarray(poses.rotation)[body], np.asarray(poses.position)[body]
    centre = position + np.einsum("fij,fj->fi", rotation, np.asarray(model.geom_translation)[feet])
    lowest = float(np.min(centre[:, 2] - np.asarray(model.geom_size)[feet, 0]))  # spheres: (r, 0, 0)
    q[2] = (float(model.ground_height) if model.ground else 0.0) - lowest
    return q
