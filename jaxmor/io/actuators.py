"""Actuators in a URDF: ``<actuator>`` elements, actuator files and their search path.

An actuator is a DC/BLDC motor behind a gear that drives one revolute, continuous or prismatic joint
(the actuator spec). This module reads the actuators of a robot
description into plain Python :class:`ActuatorDefinition` objects and checks them against the joints of
the robot. Compiling them into arrays (transmission matrix, motor constants) is the model builder's job.

Format
------
An ``<actuator>`` element placed directly under ``<robot>`` puts one actuator on one joint. Its model
either lives in an actuator file with an ``<actuator_model>`` root::

    <robot name="quadruped">
      <actuator joint="LF_HFE" file="hound_leg_actuator.xml"/>
      <actuator joint="LF_KFE" file="hound_leg_actuator.xml">
        <coupling joint="LF_HFE" ratio="1"/>
      </actuator>
    </robot>

    <!-- actuators/hound_leg_actuator.xml -->
    <actuator_model name="hound_leg" gear_ratio="10">
      <motor resistance="0.4" torque_constant="0.1" velocity_constant="10" bus_voltage="24"
             peak_torque="3"/>
    </actuator_model>

or is written on the ``<actuator>`` itself (an inline model: the ``<actuator_model>`` attributes, an
optional ``model`` name and one ``<motor>`` child)::

    <actuator joint="wheel" gear_ratio="8">
      <motor resistance="0.2" torque_constant="0.1" back_emf_constant="0.1" bus_voltage="48"/>
    </actuator>

``<actuator>``
    ``joint`` (required) the driven joint; ``name`` (default: the joint name), unique within the robot;
    ``file`` an actuator file; ``model`` the model name of an inline model (informational);
    ``<coupling>`` children (any number).
``<actuator_model>`` (the root of an actuator file, or the attributes of an inline ``<actuator>``)
    ``name`` model name (informational); ``gear_ratio`` (required, positive): motor speed per unit speed
    of the driven joint; ``output_damping`` [Nm s/rad] and ``output_friction`` [Nm] (optional, default 0,
    non-negative): the actuator's viscous damping and Coulomb friction measured at its output, i.e. at
    the joint side (they add to the joint's own ``<dynamics damping friction>``; for a prismatic joint
    the units are N s/m and N); exactly one ``<motor>`` child.
``<motor>`` (rotor side, SI units)
    ``resistance`` R [Ohm], ``torque_constant`` Kt [Nm/A], ``bus_voltage`` V_bus [V] (all required,
    positive); exactly one of ``velocity_constant`` Kv [rad/s/V] and ``back_emf_constant`` 1/Kv
    [V s/rad] (positive); ``peak_torque`` [Nm] (optional, positive; without it only the voltage limits
    apply, i.e. ``inf``).
    ``inductance`` L [H] (optional, non-negative, default 0: the current follows the voltage within the step).
``<thermal>``, ``<cogging>``, ``<lugre>`` (optional children of a model, at most one each;
:mod:`jaxmor.actuation.motor_dynamics`)
    ``<thermal thermal_resistance heat_capacity [housing_thermal_resistance housing_heat_capacity]
    [ambient_temperature reference_temperature resistance_tempco flux_tempco] [max_temperature limit_start
    limit]/>``: the winding's thermal network [K/W, J/K] (a housing node when ``housing_heat_capacity`` > 0),
    temperatures in degC (defaults 25), ``resistance_tempco`` [1/K] (default 0.00393, copper), ``flux_tempco``
    [1/K] (default 0), a temperature limit ``max_temperature`` (default ``inf``: none) with ``limit="derate"``
    (from ``limit_start``) or ``"cut"`` (back on below ``limit_start``), which needs a finite ``peak_torque``.
    ``<cogging amplitude periods [phase]/>`` [Nm, -, rad] on the rotor. ``<lugre stiffness damping coulomb
    static stribeck_velocity/>`` at the output [Nm/rad, Nm s/rad, Nm, Nm, rad/s; N and m for a prismatic
    joint], ``static >= coulomb``. Files without them are the quasi-static motor, as before.
``delay`` and ``<controller>`` (optional, on the ``<actuator>`` element, with a file or an inline model)
    ``delay`` the command delay in physics steps (an integer ``>= 0``, default 0: :mod:`jaxmor.actuation.latency`);
    ``<controller p_gain [i_gain d_gain period side]/>`` (at most one) a drive controller at the actuator
    (:mod:`jaxmor.actuation.controller`): gains ``>= 0`` (``p_gain`` required, the others default 0), ``period``
    in physics steps (an integer ``>= 1``, default 1), ``side`` ``"joint"`` (default) or ``"motor"``.
``<backlash width [inertia]/>`` (optional, at most one, on the ``<actuator>`` element)
    the gear's dead band (:mod:`jaxmor.actuation.backlash`): ``width`` its full width at the joint [rad or m]
    (required, ``>= 0``), ``inertia`` the rotor's inertia reflected to the joint [kg m^2 or kg] (``> 0``). Without
    ``inertia`` the driven joint's rotor inertia (URDF ``rotor_inertia``, MJCF ``armature``) moves to the rotor;
    with it the joint keeps its own (exported files give it, for the model they were written from).
``<residual file/>`` (optional, at most one, a direct child of ``<robot>`` or of an ``<actuators>`` root)
    a learned torque residual: ``file`` its weights file, looked up like an actuator file
    (:mod:`jaxmor.io.residual_file`, which reads it; the model's build checks it against the actuators).
``<coupling>``
    ``joint`` (required) another revolute or prismatic joint the motor also turns with; ``ratio``
    (required, finite, any sign): motor speed per unit speed of that joint.

Only the ``<actuator>`` elements that are direct children of ``<robot>`` are read: ROS
``<transmission>`` and ``<gazebo>`` elements, and any ``<actuator>`` nested inside them, are ignored.
Unknown attributes (except namespaced ones such as ``xacro:...``) and unknown child elements of the
four elements above are errors, so that a misspelled ``peak_torqe`` is not silently dropped.

Search path
-----------
A relative ``file`` is searched, first hit wins, in ``base_dir``, ``base_dir/actuator``,
``base_dir/actuators``, ``base_dir/..`` and ``base_dir/../actuators``, where ``base_dir`` is the
directory of the URDF file, or, for a URDF given as a string, the ``resource_dir`` passed by the caller,
then in the caller's ``actuator_dirs``. Robot files are untrusted: a file is read only where it really
lies (links resolved) in the robot's tree (``base_dir`` and below), in ``base_dir/../actuators`` and
below, directly in ``base_dir/..``, or in an ``actuator_dirs`` tree; an absolute ``file`` too. A file
outside them, missing or unreadable gets one and the same error, which does not tell them apart. Actuator files
are parsed with :func:`jaxmor.io.xml.parse_xml` (no entities, no DTD, no network, size limit), and a file
linked by several actuators is read once per call.

Errors
------
Every invalid actuator raises :class:`jaxmor.errors.ModelError` whose message starts with
``file:line:``. Errors inside an actuator file name that file and the line of the offending element in
it; errors of an ``<actuator>`` element (or of an inline model) name the URDF source and the element's
line. (Lines are lxml's ``sourceline``: for a start tag written over several lines, libxml2 reports the
line on which the start tag ends.) :func:`parse_actuators` rejects:

* an ``<actuator>`` without a ``joint``; an empty ``file``; an actuator file that is not found (the
  message lists the directories searched, or says that a ``resource_dir`` is needed);
* an ``<actuator>`` with both a ``file`` and an inline model (a ``<motor>`` child or one of the
  attributes ``gear_ratio``, ``output_damping``, ``output_friction``, ``model``);
* an actuator file whose root is not ``<actuator_model>``, or that is not well-formed XML;
* a missing ``gear_ratio`` or one that is not positive;
* negative ``output_damping`` or ``output_friction``;
* a model without exactly one ``<motor>`` (none, or a second one: the second is named);
* a missing ``resistance``, ``torque_constant`` or ``bus_voltage``; neither or both of
  ``velocity_constant`` and ``back_emf_constant``;
* a motor parameter that is not positive (R, Kt, Kv or 1/Kv, V_bus, peak torque), or whose derived
  constants (Kt/R, Kt V_bus/R, Kt/(R Kv), Kv V_bus, and Kv = 1/back_emf_constant) overflow or underflow;
* a ``<coupling>`` without a ``joint`` or without a finite ``ratio``; a ``<coupling>`` in a model file;
* a negative ``inductance``; a second ``<thermal>``, ``<cogging>`` or ``<lugre>``; one missing a required
  attribute or with a value its model refuses (:meth:`ThermalModel.problem
  <jaxmor.actuation.motor_dynamics.ThermalModel.problem>`
  and the others: non-positive resistances or capacities, a limit without a finite peak torque or with
  ``limit_start >= max_temperature``, an unknown ``limit``, ``static < coulomb``);
* a ``delay`` that is not an integer ``>= 0``; a second ``<controller>``, one without ``p_gain``, a negative gain, a
  ``period`` that is not an integer ``>= 1``, a ``side`` other than ``joint`` and ``motor``; a second ``<backlash>``,
  one without ``width``, a negative width, a non-positive inertia, or (when the model is built) no inertia for a
  joint without rotor inertia, or a joint that another actuator drives too;
* any attribute value that is not a finite number where a number is expected; unknown attributes and
  unknown child elements.

:func:`validate_actuators` does the checks that need the robot's joints when the model is built (its
docstring lists them).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

from jaxmor.actuation.definitions import (
    MAX_DELAY,
    ActuatorCoupling,
    ActuatorDefinition,
    BacklashDefinition,
    DriveControllerDefinition,
)
from jaxmor.actuation.motor import DcMotorParameters, motor_problem
from jaxmor.actuation.motor_dynamics import CoggingModel, LugreModel, ThermalModel
from jaxmor.errors import ModelError
from jaxmor.io.files import confined_file, shortened
from jaxmor.io.xml import (
    check_attributes,
    check_children,
    nonnegative,
    number,
    parse_float,
    parse_xml,
    positive,
    required_number,
    tag,
)

__all__ = [
    "actuator_search_dirs",
    "actuators_from_xml",
    "actuators_to_xml",
    "locate_actuator_file",
    "parse_actuators",
    "resolve_actuator_file",
]


#: Sub-directories of the base directory searched for actuator files, in order.
_SEARCH_SUBDIRS = (".", "actuator", "actuators", "..", os.path.join("..", "actuators"))

_MODEL_ATTRIBUTES = ("gear_ratio", "output_damping", "output_friction")
_ACTUATOR_ATTRIBUTES = frozenset({"joint", "name", "file", "model", "delay", *_MODEL_ATTRIBUTES})
_CONTROLLER_ATTRIBUTES = frozenset({"p_gain", "i_gain", "d_gain", "period", "side"})
_ACTUATOR_MODEL_ATTRIBUTES = frozenset({"name", *_MODEL_ATTRIBUTES})
_MOTOR_ATTRIBUTES = frozenset(
    {
        "resistance",
        "torque_constant",
        "velocity_constant",
        "back_emf_constant",
        "bus_voltage",
        "peak_torque",
        "inductance",
    }
)
#: The optional children of a model beside its ``<motor>``: the dynamic features
#: (:mod:`jaxmor.actuation.motor_dynamics`).
_THERMAL_ATTRIBUTES = frozenset(f.name for f in dataclasses.fields(ThermalModel))
_COGGING_ATTRIBUTES = frozenset(f.name for f in dataclasses.fields(CoggingModel))
_LUGRE_ATTRIBUTES = frozenset(f.name for f in dataclasses.fields(LugreModel))
_FEATURES = ("thermal", "cogging", "lugre")
_COUPLING_ATTRIBUTES = frozenset({"joint", "ratio"})

#: Child elements whose misplacement gets its own message.
_MISPLACED = {"coupling": "<coupling> belongs on the <actuator> element, not in the actuator model"}

# --------------------------------------------------------------------------------------------------------------
# Search path.


def actuator_search_dirs(base_dir: str | os.PathLike) -> list[Path]:
    """The directories searched for a relative actuator file, in order.

    ``base_dir``, ``base_dir/actuator``, ``base_dir/actuators``, ``base_dir/..``, ``base_dir/../actuators``.
    """
    base = Path(base_dir)
    return [Path(os.path.normpath(base / sub)) for sub in _SEARCH_SUBDIRS]


def resolve_actuator_file(
    file: str, base_dir: str | os.PathLike | None, extra_dirs: Sequence[str | os.PathLike] = ()
) -> Path | None:
    """The path of an actuator file, or ``None`` if it is not found, not readable or not allowed.

    A relative ``file`` is searched in :func:`actuator_search_dirs` (first hit wins), then in
    ``extra_dirs``. Whatever the path says (``..``, symbolic links, an absolute path), the file is
    accepted only where it really lies (after resolving links) in the robot's directory tree
    (``base_dir`` and below), in ``base_dir/../actuators`` and below, directly in ``base_dir/..``, or
    in an ``extra_dirs`` tree, and only if it is a readable regular file (:func:`jaxmor.io.files.confined_file`).
    """
    trees = [Path(d) for d in extra_dirs]
    parents = []
    if base_dir is not None:
        base = Path(base_dir).resolve()
        trees += [base, base.parent / "actuators"]
        parents.append(base.parent)
    path = Path(file)
    if path.is_absolute():
        return confined_file([path], trees, parents)
    dirs = ([] if base_dir is None else actuator_search_dirs(base_dir)) + [Path(d) for d in extra_dirs]
    return confined_file([directory / path for directory in dirs], trees, parents)


# --------------------------------------------------------------------------------------------------------------
# Parsing.


def _parse_motor(element, source: str) -> DcMotorParameters:
    """One ``<motor>`` element; every error names ``source`` and the element's line."""
    check_attributes(element, _MOTOR_ATTRIBUTES, source)
    check_children(element, (), source, _MISPLACED)
    resistance = positive(element, "resistance", required_number(element, "resistance", source), source)
    torque_constant = positive(element, "torque_constant", required_number(element, "torque_constant", source), source)
    has_kv = element.get("velocity_constant") is not None
    has_ke = element.get("back_emf_constant") is not None
    if has_kv and has_ke:
        raise ModelError(
            source,
            element.sourceline,
            "<motor> gives both velocity_constant and back_emf_constant; give exactly one of them",
        )
    if not has_kv and not has_ke:
        raise ModelError(
            source,
            element.sourceline,
            "<motor> needs a motor constant: give exactly one of velocity_constant and back_emf_constant",
        )
    if has_kv:
        velocity_constant = positive(
            element, "velocity_constant", required_number(element, "velocity_constant", source), source
        )
    else:
        back_emf = positive(element, "back_emf_constant", required_number(element, "back_emf_constant", source), source)
        velocity_constant = 1.0 / back_emf
    bus_voltage = positive(element, "bus_voltage", required_number(element, "bus_voltage", source), source)
    peak = number(element, "peak_torque", source)
    peak_torque = math.inf if peak is None else positive(element, "peak_torque", peak, source)
    motor = DcMotorParameters(
        resistance=float(resistance),
        torque_constant=float(torque_constant),
        velocity_constant=float(velocity_constant),
        bus_voltage=float(bus_voltage),
        peak_torque=float(peak_torque),
    )
    problem = motor_problem(motor)
    if problem is not None:
        raise ModelError(source, element.sourceline, f"invalid motor: {problem}")
    return motor


@dataclass(frozen=True)
class _Model:
    """The contents of an ``<actuator_model>`` (or of an inline model)."""

    name: str
    gear_ratio: float
    output_damping: float
    output_friction: float
    motor: DcMotorParameters
    inductance: float = 0.0
    thermal: ThermalModel | None = None
    cogging: CoggingModel | None = None
    lugre: LugreModel | None = None


def _parse_feature(element, kind, attributes, source: str):
    """One ``<thermal>``, ``<cogging>`` or ``<lugre>`` element as its model; errors name the element's line."""
    check_attributes(element, attributes, source)
    check_children(element, (), source, _MISPLACED)
    values = {}
    for f in dataclasses.fields(kind):
        text = element.get(f.name)
        if text is None:
            continue
        if f.name == "limit":
            values[f.name] = text.strip()
        elif f.name == "max_temperature" and text.strip().lower() == "inf":
            values[f.name] = math.inf
        else:
            values[f.name] = float(parse_float(text, source, element, f"{f.name} of <{tag(element)}>"))
    required = [f.name for f in dataclasses.fields(kind) if f.default is dataclasses.MISSING]
    missing = [name for name in required if name not in values]
    if missing:
        raise ModelError(source, element.sourceline, f"<{tag(element)}> needs {', '.join(missing)}")
    return kind(**values)


def _parse_model(element, name: str, source: str) -> _Model:
    """The model attributes and the single ``<motor>`` child of ``element`` (an ``<actuator_model>`` or an
    inline ``<actuator>``); attribute and child names are checked by the caller."""
    gear_ratio = positive(element, "gear_ratio", required_number(element, "gear_ratio", source), source)
    losses = [nonnegative(element, attr, source, 0.0) for attr in ("output_damping", "output_friction")]
    motors = [child for child in element if tag(child) == "motor"]
    if not motors:
        raise ModelError(source, element.sourceline, f"<{element.tag}> needs exactly one <motor>, found none")
    if len(motors) > 1:
        raise ModelError(
            source,
            motors[1].sourceline,
            f"<{element.tag}> needs exactly one <motor>, found {len(motors)} (a second one here)",
        )
    motor = _parse_motor(motors[0], source)
    inductance = nonnegative(motors[0], "inductance", source, 0.0)
    features = {}
    for feature, kind, attributes in (
        ("thermal", ThermalModel, _THERMAL_ATTRIBUTES),
        ("cogging", CoggingModel, _COGGING_ATTRIBUTES),
        ("lugre", LugreModel, _LUGRE_ATTRIBUTES),
    ):
        found = [child for child in element if tag(child) == feature]
        if len(found) > 1:
            raise ModelError(source, found[1].sourceline, f"<{element.tag}> has a second <{feature}>; give at most one")
        if found:
            model = _parse_feature(found[0], kind, attributes, source)
            problem = model.problem(motor.peak_torque) if feature == "thermal" else model.problem()
            if problem is not None:
                raise ModelError(source, found[0].sourceline, problem)
            features[feature] = model
    return _Model(name, float(gear_ratio), float(losses[0]), float(losses[1]), motor, float(inductance), **features)


def _parse_coupling(element, source: str) -> ActuatorCoupling:
    check_attributes(element, _COUPLING_ATTRIBUTES, source)
    check_children(element, (), source, _MISPLACED)
    joint = element.get("joint")
    if not joint:
        raise ModelError(source, element.sourceline, "<coupling> needs a joint attribute")
    ratio = element.get("ratio")
    if ratio is None:
        raise ModelError(source, element.sourceline, f"<coupling> to joint '{joint}' needs a finite ratio attribute")
    value = parse_float(ratio, source, element, f"ratio of <coupling> to joint '{joint}'")
    return ActuatorCoupling(joint, float(value), line=element.sourceline)


def _read_model_file(path: Path) -> _Model:
    root, file_source = parse_xml(path)
    if tag(root) != "actuator_model":
        raise ModelError(
            file_source, root.sourceline, f"an actuator file needs an <actuator_model> root, not <{root.tag}>"
        )
    check_attributes(root, _ACTUATOR_MODEL_ATTRIBUTES, file_source)
    check_children(root, ("motor", *_FEATURES), file_source, _MISPLACED)
    return _parse_model(root, root.get("name", ""), file_source)


def locate_actuator_file(
    file: str,
    base_dir: str | os.PathLike | None,
    extra_dirs: Sequence[str | os.PathLike],
    source: str,
    element,
    *,
    kind: str = "actuator file",
) -> Path:
    """The actuator file (or another file an actuator file names) :func:`resolve_actuator_file` finds.

    Args:
        file: the file as written; base_dir, extra_dirs: as for :func:`resolve_actuator_file`.
        source: the description that names the file, and ``element`` the element naming it (for messages).
        kind: what the file is, in the message (``"residual file"``: :mod:`jaxmor.io.residual_file`).

    Returns:
        The resolved path.

    Raises:
        ModelError: at ``source`` and the element's line, one message for "missing", "not readable" and "not
            allowed" alike, so it never tells whether a file exists outside the allowed directories.
    """
    path = resolve_actuator_file(file, base_dir, extra_dirs)
    if path is not None:
        return path
    dirs = ([] if base_dir is None else actuator_search_dirs(base_dir)) + [Path(d) for d in extra_dirs]
    where = ", ".join(str(d) for d in dirs) or "none (pass a resource_dir with a URDF given as a string)"
    raise ModelError(
        source,
        element.sourceline,
        f"{kind} {shortened(file)!r} not found or not readable in the allowed directories (searched: {where}; "
        "files are read only within the robot's directory tree and the search path, or actuator_dirs)",
    )


def parse_actuators(
    robot_root,
    source: str,
    *,
    base_dir: str | os.PathLike | None,
    extra_dirs: Sequence[str | os.PathLike] = (),
) -> list[ActuatorDefinition]:
    """Read the ``<actuator>`` elements that are direct children of ``robot_root``.

    Args:
        robot_root: the ``<robot>`` element (lxml), e.g. from :func:`jaxmor.io.xml.parse_xml`. Nested
            ``<actuator>`` elements (inside ``<transmission>``, ``<gazebo>``, ...) are ignored.
        source: the name of the robot description in messages (its path or ``"<string>"``).
        base_dir: the directory searched for relative actuator files: the URDF file's directory, or the
            caller's resource directory for a URDF string (see :func:`resolve_actuator_file`).
        extra_dirs: more directory trees where actuator files may be read (searched after the spec's).

    Returns:
        One definition per ``<actuator>``, in document order. Names default to the joint name; a linked
        file's ``<actuator_model name>`` becomes :attr:`ActuatorDefinition.model`. ``source``/``line``
        are those of the ``<actuator>`` element.

    Raises:
        ModelError: for every invalid element (see the module documentation), naming the file and line.
    """
    definitions: list[ActuatorDefinition] = []
    cache: dict[Path, _Model] = {}
    for element in robot_root:
        if tag(element) != "actuator":
            continue
        line = element.sourceline
        check_attributes(element, _ACTUATOR_ATTRIBUTES, source)
        check_children(element, ("motor", "coupling", "controller", "backlash", *_FEATURES), source)
        joint = element.get("joint")
        if not joint:
            raise ModelError(source, line, "<actuator> needs a joint attribute")
        file = element.get("file")
        if file is not None:
            inline = [f"<{tag(c)}>" for c in element if tag(c) in ("motor", *_FEATURES)]
            inline += [a for a in ("model", *_MODEL_ATTRIBUTES) if element.get(a) is not None]
            if inline:
                raise ModelError(
                    source,
                    line,
                    f"<actuator> for joint '{joint}' has both a file and an inline model ({', '.join(inline)}); "
                    "give one of them",
                )
            if not file.strip():
                raise ModelError(source, line, f"<actuator> for joint '{joint}' has an empty file attribute")
            path = locate_actuator_file(file, base_dir, extra_dirs, source, element)
            key = path.resolve()
            if key not in cache:
                cache[key] = _read_model_file(path)
            model = cache[key]
        else:
            model = _parse_model(element, element.get("model", ""), source)
        couplings = tuple(_parse_coupling(c, source) for c in element if tag(c) == "coupling")
        definitions.append(
            ActuatorDefinition(
                joint,
                model.gear_ratio,
                model.motor,
                name=element.get("name") or joint,
                model=model.name,
                couplings=couplings,
                output_damping=model.output_damping,
                output_friction=model.output_friction,
                inductance=model.inductance,
                thermal=model.thermal,
                cogging=model.cogging,
                lugre=model.lugre,
                delay=_delay(element, source),
                controller=_controller(element, source),
                backlash=_backlash(element, source),
                source=source,
                line=line,
            )
        )
    return definitions


def _whole(element, attr: str, source: str, default: int, minimum: int, maximum: int | None = None) -> int:
    """An integer attribute in ``[minimum, maximum]`` (``default`` when absent); errors name the element's line."""
    text = element.get(attr)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ModelError(
            source, element.sourceline, f"{attr} of <{tag(element)}> must be an integer {bounds}, got {text!r}"
        )
    return value


def _delay(element, source: str) -> int:
    """An ``<actuator>``'s ``delay`` [physics steps], 0 when absent."""
    return _whole(element, "delay", source, 0, 0, MAX_DELAY)


def _single_child(element, name: str, source: str):
    """The ``<name>`` child of an ``<actuator>``, ``None`` without one; a second one is a ModelError at its line."""
    found = [child for child in element if tag(child) == name]
    if len(found) > 1:
        raise ModelError(source, found[1].sourceline, f"<actuator> has a second <{name}>; give at most one")
    return found[0] if found else None


def _controller(element, source: str) -> DriveControllerDefinition | None:
    """The ``<controller>`` child of an ``<actuator>`` (at most one), or ``None``."""
    el = _single_child(element, "controller", source)
    if el is None:
        return None
    check_attributes(el, _CONTROLLER_ATTRIBUTES, source)
    check_children(el, (), source, _MISPLACED)
    gains = [nonnegative(el, name, source, 0.0) for name in ("i_gain", "d_gain")]
    p_gain = nonnegative(el, "p_gain", source, 0.0) if el.get("p_gain") is not None else None
    if p_gain is None:
        raise ModelError(source, el.sourceline, "<controller> needs p_gain")
    side = el.get("side", "joint").strip()
    defn = DriveControllerDefinition(
        p_gain, *gains, period=_whole(el, "period", source, 1, 1), side=side, line=el.sourceline
    )
    problem = defn.problem()
    if problem is not None:
        raise ModelError(source, el.sourceline, problem)
    return defn


def _backlash(element, source: str) -> BacklashDefinition | None:
    """The ``<backlash>`` child of an ``<actuator>`` (at most one), or ``None``."""
    el = _single_child(element, "backlash", source)
    if el is None:
        return None
    check_attributes(el, frozenset({"width", "inertia"}), source)
    check_children(el, (), source, _MISPLACED)
    if el.get("width") is None:
        raise ModelError(source, el.sourceline, "<backlash> needs width (the dead band at the joint, rad or m)")
    width = nonnegative(el, "width", source, 0.0)
    inertia = nonnegative(el, "inertia", source, 0.0) if el.get("inertia") is not None else None
    defn = BacklashDefinition(width, inertia, line=el.sourceline)
    problem = defn.problem()
    if problem is not None:
        raise ModelError(source, el.sourceline, problem)
    return defn


# --------------------------------------------------------------------------------------------------------------
# Export and import of the current actuators (the spec's World::exportToXml() <actuators> element).


def _number_text(value: float) -> str:
    return repr(float(value))


def _feature_xml(name: str, model) -> str:
    """``<thermal .../>``, ``<cogging .../>`` or ``<lugre .../>``, every field not at its default, exactly."""
    attrs = []
    for f in dataclasses.fields(model):
        value = getattr(model, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        text = value if isinstance(value, str) else ("inf" if value == math.inf else _number_text(value))
        attrs.append(f'{f.name}="{text}"')
    return f"    <{name} {' '.join(attrs)}/>"


def _controller_xml(c: DriveControllerDefinition) -> str:
    """``<controller .../>``, its numbers exact."""
    gains = " ".join(f'{n}="{_number_text(getattr(c, n))}"' for n in ("p_gain", "i_gain", "d_gain"))
    return f'    <controller {gains} period="{int(c.period)}" side="{c.side}"/>'


def actuators_to_xml(
    definitions: Sequence[ActuatorDefinition],
    torques: Sequence[float] | None = None,
    enforced: bool = True,
    residual_file: str | None = None,
) -> str:
    """Write actuators as an ``<actuators>`` element: each ``<actuator>`` with its model inline.

    As the spec's world export: the current definitions (with the bus voltages in their motors), a
    ``torque`` attribute for each nonzero commanded actuator torque, and the monitor mode as the
    attribute ``motor_operating_region_enforced="false"``. Numbers are written exactly (``repr``).

    Args:
        definitions: the actuators, in order.
        torques: the commanded actuator torques at the gear outputs, one per actuator, or ``None``.
        enforced: whether the motor operating regions are enforced.
        residual_file: a learned residual's weights file to name (:mod:`jaxmor.io.residual_file`), or ``None``.

    Returns:
        The XML text.
    """
    lines = [f'<actuators motor_operating_region_enforced="{"true" if enforced else "false"}">']
    for i, d in enumerate(definitions):
        attrs = [
            f'name="{d.label}"',
            f'joint="{d.joint}"',
            f'model="{d.model}"' if d.model else "",
            f'gear_ratio="{_number_text(d.gear_ratio)}"',
            f'output_damping="{_number_text(d.output_damping)}"',
            f'output_friction="{_number_text(d.output_friction)}"',
        ]
        if torques is not None and float(torques[i]) != 0.0:
            attrs.append(f'torque="{_number_text(torques[i])}"')
        if d.delay:
            attrs.append(f'delay="{int(d.delay)}"')
        m = d.motor
        motor = [
            f'resistance="{_number_text(m.resistance)}"',
            f'torque_constant="{_number_text(m.torque_constant)}"',
            f'velocity_constant="{_number_text(m.velocity_constant)}"',
            f'bus_voltage="{_number_text(m.bus_voltage)}"',
        ]
        if math.isfinite(float(m.peak_torque)):
            motor.append(f'peak_torque="{_number_text(m.peak_torque)}"')
        if float(d.inductance) > 0:
            motor.append(f'inductance="{_number_text(d.inductance)}"')
        lines.append(f"  <actuator {' '.join(a for a in attrs if a)}>")
        lines.append(f"    <motor {' '.join(motor)}/>")
        lines.extend(_feature_xml(name, getattr(d, name)) for name in _FEATURES if getattr(d, name) is not None)
        lines.extend(f'    <coupling joint="{c.joint}" ratio="{_number_text(c.ratio)}"/>' for c in d.couplings)
        if d.controller is not None:
            lines.append(_controller_xml(d.controller))
        if d.backlash is not None:
            inertia = "" if d.backlash.inertia is None else f' inertia="{_number_text(d.backlash.inertia)}"'
            lines.append(f'    <backlash width="{_number_text(d.backlash.width)}"{inertia}/>')
        lines.append("  </actuator>")
    if residual_file is not None:
        lines.append(f"  <residual file={quoteattr(residual_file)}/>")
    lines.append("</actuators>")
    return "\n".join(lines) + "\n"


def actuators_from_xml(
    path_or_xml: str | os.PathLike,
    *,
    base_dir: str | os.PathLike | None = None,
    extra_dirs: Sequence[str | os.PathLike] = (),
) -> tuple[list[ActuatorDefinition], list[float], bool]:
    """Read an ``<actuators>`` element written by :func:`actuators_to_xml` (or by hand).

    Its ``<actuator>`` children follow the URDF format (inline models or files searched from
    ``base_dir``), plus an optional ``torque`` attribute.

    Returns:
        ``(definitions, torques, enforced)``: torques default to 0; ``enforced`` to ``True``.

    Raises:
        ModelError: invalid XML, a root other than ``<actuators>``, an invalid actuator or torque, or a
            ``motor_operating_region_enforced`` other than ``true``/``false``; naming the file and line.
    """
    root, source = parse_xml(path_or_xml)
    return actuators_from_element(root, source, base_dir=base_dir, extra_dirs=extra_dirs)


def actuators_from_element(
    root, source: str, *, base_dir: str | os.PathLike | None = None, extra_dirs: Sequence[str | os.PathLike] = ()
) -> tuple[list[ActuatorDefinition], list[float], bool]:
    """:func:`actuators_from_xml` of an ``<actuators>`` element already parsed (e.g. inside a world file);
    errors name ``source`` and the element's lines."""
    if tag(root) != "actuators":
        raise ModelError(source, root.sourceline, f"the root element is <{tag(root)}>, not <actuators>")
    check_attributes(root, ("motor_operating_region_enforced",), source)
    flag = root.get("motor_operating_region_enforced", "true").strip().lower()
    if flag not in ("true", "false"):
        raise ModelError(
            source, root.sourceline, f"motor_operating_region_enforced must be true or false, got {flag!r}"
        )
    torques = []
    for element in root:
        if tag(element) != "actuator":
            continue
        text = element.attrib.pop("torque", None)
        torques.append(0.0 if text is None else parse_float(text, source, element, "actuator torque"))
    definitions = parse_actuators(root, source, base_dir=base_dir, extra_dirs=extra_dirs)
    return definitions, torques, flag == "true"
