"""Actuator definitions: what one actuator is before it is compiled into arrays, and its validity.

:class:`ActuatorDefinition` (a motor behind a gear driving one joint, the actuator spec's
``ActuatorDefinition``), its couplings, drive controller and backlash, as plain frozen dataclasses with Python
floats; :func:`definition_problem` checks one on its own (the spec's ``isValid``) and :func:`validate_actuators`
checks a list against a robot's joints. The readers (:mod:`jaxmor.io.actuators`, :mod:`jaxmor.io.mjcf_actuators`)
produce them from files; :mod:`jaxmor.actuation.compile` turns them into the model's arrays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field

from jaxmor.actuation.motor import DcMotorParameters, motor_problem
from jaxmor.actuation.motor_dynamics import CoggingModel, LugreModel, ThermalModel
from jaxmor.errors import ModelError

__all__ = [
    "AFFINE_DYNAMICS",
    "API_SOURCE",
    "CONTROLLER_SIDES",
    "DRIVABLE_JOINT_TYPES",
    "MAX_DELAY",
    "ActuatorCoupling",
    "ActuatorDefinition",
    "BacklashDefinition",
    "DriveControllerDefinition",
    "definition_is_valid",
    "definition_problem",
    "validate_actuators",
]

#: The activation dynamics an affine actuator can have (MuJoCo's ``dyntype`` names;
#: :class:`jaxmor.AffineActuatorDefinition`).
AFFINE_DYNAMICS = ("none", "integrator", "filter", "filterexact")

#: Joint types an actuator can drive or be coupled to (one degree of freedom each).
DRIVABLE_JOINT_TYPES = frozenset({"revolute", "continuous", "prismatic"})

#: Source used in messages for definitions made in Python (they have no file or line).
API_SOURCE = "<api>"


#: The longest command delay jaxmor takes [physics steps] (actuator files, MJCF ``nsample``, ``with_command_delay``):
#: 1 s at a 1 ms step; the State's buffers hold ``(max_delay + 1, na, 3)`` values per world.
MAX_DELAY = 1000

#: The sides a drive controller can work on.
CONTROLLER_SIDES = ("joint", "motor")


@dataclass(frozen=True)
class DriveControllerDefinition:
    """One actuator's drive controller as a description gives it (an actuator file's ``<controller>``).

    Attributes:
        p_gain, i_gain, d_gain: the PID's gains (:class:`jaxmor.DriveController`'s units), ``>= 0`` and finite.
        period: its period in physics steps, an int ``>= 1``.
        side: ``"joint"`` or ``"motor"``.
        line: the line of its element, ``None`` when unknown (not compared).
    """

    p_gain: float
    i_gain: float = 0.0
    d_gain: float = 0.0
    period: int = 1
    side: str = "joint"
    line: int | None = field(default=None, compare=False)

    def problem(self) -> str | None:
        """Why the definition is invalid, or ``None``."""
        for name in ("p_gain", "i_gain", "d_gain"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                return f"the controller's {name} must be finite and >= 0, got {value!r}"
        if not isinstance(self.period, int) or isinstance(self.period, bool) or self.period < 1:
            return f"the controller's period must be an int >= 1 [steps], got {self.period!r}"
        if self.side not in CONTROLLER_SIDES:
            return f"the controller's side must be one of {CONTROLLER_SIDES}, got {self.side!r}"
        return None


@dataclass(frozen=True)
class BacklashDefinition:
    """One actuator's gear backlash as a description gives it (an actuator file's ``<backlash>``;
    :func:`jaxmor.with_backlash`).

    Attributes:
        width: the dead band's full width at the joint [rad or m], finite and ``>= 0``.
        inertia: the rotor's inertia reflected to the joint [kg m^2 or kg], finite and ``> 0``; ``None`` moves the
            driven joint's rotor inertia (URDF ``rotor_inertia``, MJCF ``armature``) to the rotor.
        line: the line of its element, ``None`` when unknown (not compared).
    """

    width: float
    inertia: float | None = None
    line: int | None = field(default=None, compare=False)

    def problem(self) -> str | None:
        """Why the definition is invalid, or ``None``."""
        if not isinstance(self.width, (int, float)) or not math.isfinite(self.width) or self.width < 0:
            return f"the backlash width must be finite and >= 0 [rad or m], got {self.width!r}"
        inertia = self.inertia
        if inertia is not None and (
            not isinstance(inertia, (int, float)) or not math.isfinite(inertia) or inertia <= 0
        ):
            return f"the backlash inertia must be finite and > 0 [kg m^2 or kg], got {inertia!r}"
        return None


@dataclass(frozen=True)
class ActuatorCoupling:
    """A joint, other than the driven one, that an actuator's motor also turns with.

    The motor speed is ``gear_ratio * u_joint + sum(ratio_c * u_c)`` over the couplings, and the motor
    torque ``tau_m`` acts on the coupled joint with ``ratio * tau_m``.

    Attributes:
        joint: name of the coupled revolute, continuous or prismatic joint.
        ratio: motor speed per unit speed of the coupled joint [rad/s per rad/s, or rad/s per m/s];
            finite, any sign.
        line: line of the ``<coupling>`` element in the definition's source, ``None`` when unknown
            (not compared).
    """

    joint: str
    ratio: float
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ActuatorDefinition:
    """One actuator: a DC/BLDC motor with its gear, driving one joint (the spec's ``ActuatorDefinition``).

    Its torque is commanded at the gear output (the motor torque times ``gear_ratio``).

    Attributes:
        joint: name of the driven revolute, continuous or prismatic joint.
        gear_ratio: motor speed per unit speed of the driven joint (positive, finite).
        motor: the motor inside the actuator, rotor side, with python ``float`` fields.
        name: actuator name, unique within the robot; ``""`` means the joint name (see :attr:`label`).
        model: model name, e.g. the ``name`` of its ``<actuator_model>`` (informational).
        couplings: joints other than the driven one that the motor also turns with.
        output_damping: viscous damping measured at the actuator output, i.e. at the joint
            [Nm s/rad, or N s/m for a prismatic joint]; adds to the joint's damping.
        output_friction: Coulomb friction torque measured at the actuator output [Nm, or N]; adds to
            the joint's friction.
        inductance: winding inductance ``L`` [H] (0: the current follows the voltage at once;
            :mod:`jaxmor.actuation.motor_dynamics`).
        thermal: the motor's thermal network and temperature limit, or ``None`` (no heating).
        cogging: the motor's cogging torque, or ``None``.
        lugre: LuGre friction at the actuator output, or ``None``.
        delay: the delay of its commands [physics steps], an int ``>= 0`` (:mod:`jaxmor.actuation.latency`).
        controller: its drive controller (:class:`DriveControllerDefinition`), or
            ``None``.
        backlash: its gear's backlash (:class:`BacklashDefinition`), or ``None``.
        source: where the definition came from (a file path or ``"<string>"``); ``None`` for
            definitions made in Python (not compared).
        line: line of its ``<actuator>`` element in ``source``, or ``None`` (not compared).
    """

    joint: str
    gear_ratio: float
    motor: DcMotorParameters
    _: KW_ONLY
    name: str = ""
    model: str = ""
    couplings: tuple[ActuatorCoupling, ...] = ()
    output_damping: float = 0.0
    output_friction: float = 0.0
    inductance: float = 0.0
    thermal: ThermalModel | None = None
    cogging: CoggingModel | None = None
    lugre: LugreModel | None = None
    delay: int = 0
    controller: DriveControllerDefinition | None = None
    backlash: BacklashDefinition | None = None
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Accept any iterable of couplings (e.g. a list), stored as a tuple so the definition is hashable.
        if not isinstance(self.couplings, tuple):
            object.__setattr__(self, "couplings", tuple(self.couplings))

    @property
    def label(self) -> str:
        """The actuator's name: :attr:`name`, or the joint name when it is empty."""
        return self.name or self.joint

    def replace(self, **changes) -> ActuatorDefinition:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


# --------------------------------------------------------------------------------------------------------------
# Validity of a motor and of a definition (plain Python floats, mirrors the spec's isValid()).


def _as_float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def definition_problem(defn: ActuatorDefinition) -> str | None:
    """Why a definition is invalid on its own, or ``None`` (the spec's ``ActuatorDefinition::isValid``).

    Valid means: a valid motor (:func:`motor_problem`), a positive finite gear ratio, finite coupling
    ratios and non-negative finite output losses. Joint names are checked by :func:`validate_actuators`.
    """
    problem = motor_problem(defn.motor)
    if problem is not None:
        return f"invalid motor: {problem}"
    gear = _as_float(defn.gear_ratio)
    if gear is None or not math.isfinite(gear) or gear <= 0.0:
        return f"gear_ratio must be positive and finite, got {defn.gear_ratio!r}"
    for coupling in defn.couplings:
        ratio = _as_float(coupling.ratio)
        if ratio is None or not math.isfinite(ratio):
            return f"the ratio of the coupling to joint '{coupling.joint}' must be finite, got {coupling.ratio!r}"
    for attr in ("output_damping", "output_friction", "inductance"):
        value = _as_float(getattr(defn, attr))
        if value is None or not math.isfinite(value) or value < 0.0:
            return f"{attr} must be non-negative and finite, got {getattr(defn, attr)!r}"
    for attr, kind in (("thermal", ThermalModel), ("cogging", CoggingModel), ("lugre", LugreModel)):
        part = getattr(defn, attr)
        if part is None:
            continue
        if not isinstance(part, kind):
            return f"{attr} must be a jaxmor.{kind.__name__} or None, got {type(part).__name__}"
        problem = part.problem(defn.motor.peak_torque) if attr == "thermal" else part.problem()
        if problem is not None:
            return problem
    return _drive_problem(defn)


def _drive_problem(defn: ActuatorDefinition) -> str | None:
    """Why a definition's command delay or drive controller is invalid, or ``None``."""
    if not isinstance(defn.delay, int) or isinstance(defn.delay, bool) or not 0 <= defn.delay <= MAX_DELAY:
        return f"delay must be an int in [0, {MAX_DELAY}] [steps], got {defn.delay!r}"
    if defn.controller is None:
        return None
    if not isinstance(defn.controller, DriveControllerDefinition):
        return f"controller must be a jaxmor.DriveControllerDefinition or None, got {type(defn.controller).__name__}"
    return defn.controller.problem()


def definition_is_valid(defn: ActuatorDefinition) -> bool:
    """Whether a definition is valid on its own (the spec's ``ActuatorDefinition::isValid``).

    True if the motor is valid (R, Kt, Kv, V_bus positive and finite, peak torque positive or
    infinite, derived constants positive and finite), the gear ratio is positive and finite, the
    coupling ratios are finite and the output losses are non-negative and finite.
    """
    return definition_problem(defn) is None


# --------------------------------------------------------------------------------------------------------------
# Checks against a robot's joints.


def _joint_problem(joint: str, joints: Mapping[str, str]) -> str | None:
    if not joint:
        return "names no joint"
    if joint not in joints:
        return f"names an unknown joint '{joint}'"
    kind = joints[joint]
    if kind == "fixed":
        return f"joint '{joint}' is fixed; actuators drive only revolute, continuous or prismatic joints"
    if kind not in DRIVABLE_JOINT_TYPES:
        return f"joint '{joint}' is {kind}; actuators drive only revolute, continuous or prismatic joints"
    return None


def validate_actuators(definitions: Sequence[ActuatorDefinition], joints: Mapping[str, str], source: str) -> None:
    """Check actuator definitions against the joints of a robot, as when the robot is built.

    Args:
        definitions: the actuators, in order (from :func:`jaxmor.io.actuators.parse_actuators` or made in Python).
        joints: joint name -> URDF joint type (``"revolute"``, ``"continuous"``, ``"prismatic"``,
            ``"fixed"``, ``"floating"``, ``"planar"``, ``"spherical"``, ...).
        source: the location used in messages for definitions without their own ``source``
            (e.g. ``"<api>"`` for definitions made in Python).

    Raises:
        ModelError: at the first problem, in definition order, naming the definition's source and line
            (the ``<coupling>`` line for a coupling problem, when known) and the actuator: an invalid
            definition (:func:`definition_problem`), an unknown, fixed or multi-DOF joint (driven or
            coupled), a joint driven by two actuators, a coupling to the driven joint or two couplings to
            one joint, or a duplicate actuator name (unnamed actuators are named after their joints).
    """
    driven: dict[str, ActuatorDefinition] = {}
    names: dict[str, ActuatorDefinition] = {}

    def where(defn: ActuatorDefinition) -> str:
        src = defn.source if defn.source is not None else source
        return f"{src}:{defn.line}" if defn.line is not None else src

    for defn in definitions:
        src = defn.source if defn.source is not None else source
        label = defn.label
        reason, line = _definition_error(defn, joints, driven, names, where)
        if reason is not None:
            raise ModelError(src, line if line is not None else defn.line, f"actuator '{label}': {reason}")
        driven[defn.joint] = defn
        names[label] = defn


def _definition_error(
    defn: ActuatorDefinition,
    joints: Mapping[str, str],
    driven: Mapping[str, ActuatorDefinition],
    names: Mapping[str, ActuatorDefinition],
    where: Callable[[ActuatorDefinition], str],
) -> tuple[str | None, int | None]:
    """The first build-time problem of one definition, with the line of a <coupling> it concerns."""
    problem = definition_problem(defn) or _joint_problem(defn.joint, joints)
    if problem is not None:
        return problem, None
    if defn.joint in driven:
        other = driven[defn.joint]
        return f"joint '{defn.joint}' is already driven by actuator '{other.label}' ({where(other)})", None
    coupled: set[str] = set()
    for coupling in defn.couplings:
        if coupling.joint == defn.joint:
            return f"couples to its own driven joint '{defn.joint}'", coupling.line
        if coupling.joint in coupled:
            return f"couples twice to joint '{coupling.joint}'", coupling.line
        problem = _joint_problem(coupling.joint, joints)
        if problem is not None:
            return f"coupling {problem}", coupling.line
        coupled.add(coupling.joint)
    if defn.label in names:
        return f"duplicate actuator name '{defn.label}' (also used by the actuator at {where(names[defn.label])})", None
    return None, None
