"""MJCF actuators -> jaxmor's affine actuators: ``<motor>``, ``<position>``, ``<velocity>`` and ``<general>`` on
a joint (:mod:`jaxmor.io.mjcf` reads the rest of the model).

Each becomes an :class:`~jaxmor.io.description.AffineActuator` with MuJoCo's gain and bias parameters. The
actuator shortcuts of a default class share one actuator default, as in MuJoCo: the attributes common to all
(``ctrlrange``, ``gear``, ...) pass from any shortcut's default to any element, a shortcut's own parameters
(``kp``, ``gainprm``, ...) only to an element of the same shortcut (a ``<motor>`` default resets a
``<general>``'s gain and bias, as MuJoCo's does); passing them to another shortcut is refused, since MuJoCo's
result there depends on the order of the defaults.

MuJoCo's ``<dcmotor>`` on a hinge or slide becomes a jaxmor DC-motor actuator
(:class:`~jaxmor.actuation.definitions.ActuatorDefinition`, :func:`dc_motor`): the same motor, its thermal model,
inductance, cogging and LuGre friction, with the constants MuJoCo's compiler derives (``mjs_setToDCMotor``):

* ``K``: ``motorconst="Kt Ke"``, the geometric mean when both are positive, else the positive one; a
  ``nominal="V tau0 w0"`` without ``Ke`` gives ``Ke = V / w0`` (MuJoCo's rule without actuator damping);
  ``torque_constant = K``, ``velocity_constant = 1 / K``. ``R``: ``resistance``, else ``K V / tau0``.
* the bus voltage: ``max(|ctrlrange|)`` where the control is limited, else the nominal voltage (jaxmor's motor
  needs one). **Semantics**: MuJoCo commands the terminal voltage (``ctrl``); jaxmor's driver commands a torque
  (the actuator torque, at the gear output) and applies the voltage in ``[-V_bus, V_bus]`` that makes it, or the
  nearest torque of the region. The motor and its operating region are the same; a torque command beyond the
  region (e.g. ``1e6`` without a peak torque) means the full bus voltage. A ``ctrlrange`` that is not symmetric
  still gives the symmetric band ``+-max(|ctrlrange|)``; a keyframe's voltage for a dcmotor is dropped (the
  command is a world's state in jaxmor).
* ``peak_torque``: ``saturation`` ``torque``, else ``K current`` (MuJoCo's ``forcerange``; a symmetric
  ``forcerange`` a default class passes on counts as well). MuJoCo clips the force ``K i`` and lets the current
  run on; jaxmor's driver regulates the current to the peak (the same torque, not the same heating).
* ``inductance``: ``L``, else ``timeconst R``. MuJoCo's current decays with ``te = L / R`` fixed at the reference
  resistance, jaxmor's with ``R(T) / L``: the same at the reference temperature.
* ``thermal="R_th C timeconst alpha T_ref T_ambient"``: :class:`~jaxmor.actuation.motor_dynamics.ThermalModel`, the
  time constant resolved as MuJoCo 4's compiler does (with ``R_th``: ``C = timeconst / R_th``, else
  ``R_th = timeconst / C``), no flux change. MuJoCo integrates the temperature by explicit Euler heated by the
  current of the step's beginning, jaxmor exactly with the step's current: both first order in the time step.
* ``cogging="A N phi"``: ``A sin(N G q + phi)`` on the rotor in both (MuJoCo's actuator length is ``G q``).
* ``lugre="sigma0 sigma1 F_C F_S v_S"`` is at MuJoCo's actuator (rotor) side, jaxmor's LuGre at the output:
  :func:`lugre_at_output` converts it.

Refused, naming the element and its line: the on-board controller (``controller``, ``input`` other than
``voltage``), ``saturation``'s current rate, actuator ``damping`` and ``armature`` (as for the other
actuators), ``nominal`` with actuator damping (MuJoCo then solves a quadratic for ``K``), a gear that is not
positive, LuGre constants jaxmor's model refuses (``F_S < F_C``, ``v_S <= 0``), dcmotor defaults.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxmor.actuation.definitions import AFFINE_DYNAMICS, MAX_DELAY, ActuatorDefinition
from jaxmor.actuation.motor import DcMotorParameters
from jaxmor.actuation.motor_dynamics import CoggingModel, LugreModel, ThermalModel
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.io.description import AffineActuator
from jaxmor.io.mjcf_document import (
    CLASS_ROOT,
    Compiler,
    Document,
    Values,
    attributes,
    check_known,
    check_refused,
    class_chain,
)
from jaxmor.io.mjcf_schema import ACTUATOR_OWN, ACTUATOR_SPECS, DCMOTOR_SPEC, REFUSED_ELEMENTS
from jaxmor.io.xml import tag

#: The actuator elements read in ``<actuator>``: the affine shortcuts and MuJoCo's DC motor.
ELEMENT_SPECS = {**ACTUATOR_SPECS, "dcmotor": DCMOTOR_SPEC}


def _actuator_values(doc: Document, classes, el, kind: str) -> Values:
    """An actuator's attributes after its class's actuator defaults (the module docstring's rule)."""
    spec = ELEMENT_SPECS[kind]
    own = attributes(el)
    check_known(doc, el, spec)
    cls_name = own.pop("class", None) or CLASS_ROOT
    attrs: dict[str, str] = {}
    own_kind_set = False
    for cls in class_chain(doc, classes, cls_name, el):
        for default_kind, default_attrs in cls.actuators:
            specific = ACTUATOR_OWN[default_kind]
            for name, text in default_attrs.items():
                if name not in specific:
                    attrs[name] = text
                elif kind == default_kind:
                    attrs[name] = text
                    own_kind_set = True
                elif kind != "motor":
                    raise doc.error(
                        el,
                        f"<{kind}> would inherit {name}={brief_repr(text)} of a <{default_kind}> default (class "
                        f"{cls_name!r}); one shortcut's parameters passed to another are not supported: give "
                        "them on the element",
                    )
            if default_kind == "motor" and kind in ("general", "position", "velocity", "intvelocity"):
                if own_kind_set and kind != "general":
                    raise doc.error(
                        el,
                        f"<{kind}>: a <motor> default overrides a <{kind}> default of "
                        f"class {cls_name!r}; that order is not supported",
                    )
                for name in ACTUATOR_OWN["general"]:
                    attrs.pop(name, None)  # a motor default resets the gain and bias
    attrs.update(own)
    check_refused(doc, el, spec, attrs)
    return Values(doc, el, attrs)


def read_actuators(
    doc: Document,
    classes,
    compiler: Compiler,
    joint_kinds: dict[str, str],
    section,
    joint_ranges=None,
    tendon_ranges=None,
) -> list[AffineActuator | ActuatorDefinition]:
    """The actuators of one ``<actuator>`` section, in document order (MuJoCo's actuator order): the affine
    ones, and jaxmor DC motors for the ``<dcmotor>`` elements (``joint_kinds``: MJCF joint name -> its type,
    for the checks; ``joint_ranges``: limited joint name -> its ``(lower, upper)`` range [rad or m], for
    ``inheritrange``; ``tendon_ranges``: fixed tendon name -> its range or ``None``)."""
    out, names, driven = [], set(), {}
    for el in section:
        kind = tag(el)
        if kind is None:
            continue
        if kind in REFUSED_ELEMENTS and kind != "dcmotor":
            raise doc.error(el, f"<{kind}>: {REFUSED_ELEMENTS[kind]}")
        if kind not in ELEMENT_SPECS:
            raise doc.error(el, f"unexpected element <{kind}> in <actuator>")
        v = _actuator_values(doc, classes, el, kind)
        index = len(out)
        name = v.text("name") or doc.unnamed("actuator", index, "actuator")
        if name in names:
            raise doc.error(el, f"duplicate actuator name {name!r}")
        names.add(name)
        joint = v.text("joint") or v.text("jointinparent")
        tendon = v.text("tendon")
        if tendon is not None and kind != "dcmotor":
            inherited = _inherited(doc, classes, el, v, name) if kind == "position" else False
            actuator = _on_tendon(v, kind, name, (tendon, joint), tendon_ranges or {}, compiler.autolimits, inherited)
            out.append(_with_delay(v, actuator))
            continue
        if not joint:
            raise v.error(f"actuator {name!r} needs a joint or a fixed tendon (the transmissions jaxmor supports)")
        if joint not in joint_kinds:
            raise v.error(f"actuator {name!r} drives an unknown joint {joint!r}")
        if joint_kinds[joint] in ("free", "ball"):
            raise v.error(f"actuator {name!r}: actuators on a {joint_kinds[joint]} joint are not supported")
        if joint in driven:
            raise v.error(
                f"actuator {name!r}: joint {joint!r} is already driven by actuator {driven[joint]!r} "
                "(jaxmor takes one actuator per joint)"
            )
        driven[joint] = name
        gear = float(v.numbers("gear", 1, 6, default=(1.0,))[0])
        if kind == "dcmotor":
            out.append(dc_motor(v, name, joint, gear, compiler.autolimits))
            continue
        gain, bias = _law(v, kind, name)
        inherited = _inherited(doc, classes, el, v, name) if kind == "position" else False
        if inherited:
            ctrl = _inherited_range(v, name, joint, (joint_ranges or {}).get(joint), compiler.autolimits)
        else:
            ctrl = limited_range(v, "ctrl", name, compiler.autolimits)
        force = limited_range(v, "force", name, compiler.autolimits)
        dynamics = _activation(v, kind, name, compiler.autolimits)
        out.append(_with_delay(v, AffineActuator(name, joint, v.line, gear, gain, bias, ctrl, force, **dynamics)))
    return out


#: MuJoCo's interpolations of a delayed control between its samples.
INTERPOLATIONS = ("zoh", "linear", "cubic")


def _with_delay(v: Values, actuator: AffineActuator) -> AffineActuator:
    """``actuator`` with the element's ``delay`` [s], ``nsample`` and ``interp`` (checked here; turned into whole
    steps with the model's time step by :func:`delay_steps`)."""
    delay = v.number("delay", 0.0)
    nsample = v.integer("nsample", 0)
    interp = v.text("interp", "zoh")
    if not (math.isfinite(delay) and delay >= 0):
        raise v.error(f"actuator {actuator.name!r}: delay must be finite and >= 0 [s], got {delay!r}")
    if not 0 <= nsample <= MAX_DELAY:
        raise v.error(
            f"actuator {actuator.name!r}: nsample must be in [0, {MAX_DELAY}] (jaxmor's MAX_DELAY), got {nsample}"
        )
    if interp not in INTERPOLATIONS:
        raise v.error(f"actuator {actuator.name!r}: interp must be one of {INTERPOLATIONS}, got {interp!r}")
    if delay > 0 and nsample < 1:
        raise v.error(f"actuator {actuator.name!r}: a delay needs a history: nsample >= 1 (MuJoCo's rule)")
    return dataclasses.replace(actuator, delay=delay, nsample=nsample, interp=interp)


#: MuJoCo's ``mjMINVAL`` [s]: its history read takes two times closer than this for one sample's. A delay within it
#: of a whole number ``k`` of time steps reads the sample of ``k`` steps back (checked in float64); one further past
#: it reads the sample before (measured against MuJoCo 4.0: ``1.5e-15 s`` past ``k`` steps already reads ``k + 1``).
WHOLE_STEP_TOLERANCE = 1e-15


def delay_steps(actuator: AffineActuator, timestep: float) -> int:
    """The whole physics steps that MuJoCo delays ``actuator``'s control by at ``timestep`` [s] (the file's, float64).

    A delay within :data:`WHOLE_STEP_TOLERANCE` of ``k`` time steps is ``k`` steps with every ``interp``; between
    steps, ``interp="zoh"`` holds the sample before ``t - delay``: ``ceil(delay / timestep)`` steps. Any positive delay
    is at least one step (MuJoCo reads before it writes), at most ``nsample`` (the history's oldest sample). Measured
    against MuJoCo 4.0 (tests/test_drive_train.py; where MuJoCo's clock makes it differ,
    docs/design/drive-train.md).

    Raises:
        ArgumentError: a delay between two steps with ``interp`` ``"linear"`` or ``"cubic"`` (MuJoCo then blends
            two samples; jaxmor delays by whole steps).
    """
    if actuator.delay == 0:
        return 0
    ratio = actuator.delay / timestep
    whole = round(ratio)
    if abs(actuator.delay - whole * timestep) > WHOLE_STEP_TOLERANCE:
        if actuator.interp != "zoh":
            raise ArgumentError(
                f"delay {actuator.delay!r} s is {ratio:.6g} time steps: interp={actuator.interp!r} would blend two "
                "samples, and jaxmor delays by whole steps; give a multiple of the time step (within "
                f'{WHOLE_STEP_TOLERANCE:g} s) or interp="zoh"'
            )
        whole = math.ceil(ratio)
    return min(max(whole, 1), actuator.nsample)


def _on_tendon(v: Values, kind: str, name: str, target, tendon_ranges, autolimits: bool, inherited: bool):
    """An affine actuator pulling a fixed tendon (``target``: the element's ``(tendon, joint)``; ``inheritrange``
    takes the tendon's range, as MuJoCo's)."""
    tendon, joint = target
    if joint:
        raise v.error(f"actuator {name!r} has both a joint and a tendon: give one transmission")
    if tendon not in tendon_ranges:
        raise v.error(
            f"actuator {name!r} pulls an unknown tendon {tendon!r} (fixed tendons: "
            f"{', '.join(tendon_ranges) or 'none'})"
        )
    gear = float(v.numbers("gear", 1, 6, default=(1.0,))[0])
    gain, bias = _law(v, kind, name)
    if inherited:
        ctrl = _inherited_range(v, name, tendon, tendon_ranges[tendon], autolimits, "tendon")
    else:
        ctrl = limited_range(v, "ctrl", name, autolimits)
    force = limited_range(v, "force", name, autolimits)
    dynamics = _activation(v, kind, name, autolimits)
    return AffineActuator(name, "", v.line, gear, gain, bias, ctrl, force, tendon=tendon, **dynamics)


# --------------------------------------------------------------------------------------------------
# MuJoCo's <dcmotor>.


def _padded(v: Values, name: str, size: int) -> list[float]:
    """The 1 to ``size`` numbers of attribute ``name``, the rest 0 (MuJoCo reads a shorter value that way)."""
    given = v.numbers(name, 1, size, default=(0.0,))
    return [float(x) for x in given] + [0.0] * (size - len(given))


def lugre_at_output(gear: float, stiffness, damping, coulomb, static, stribeck) -> LugreModel:
    """MuJoCo's LuGre constants (actuator side, velocity ``G v``) as jaxmor's at the output (joint velocity ``v``).

    MuJoCo: ``dz_a/dt = G v - sigma0 |G v| z_a / g_a(G v)``, ``g_a(w) = F_C + (F_S - F_C) exp(-(w / v_S)^2)``,
    force ``F_a = sigma0 z_a + sigma1 dz_a/dt`` on the actuator, ``G F_a`` on the joint. With ``z = z_a / G``:
    ``dz/dt = v - (G sigma0 / g_a(G v)) |v| z``, and ``G sigma0 / g_a(G v) = (G^2 sigma0) / g(v)`` with
    ``g(v) = G g_a(G v) = G F_C + (G F_S - G F_C) exp(-(v / (v_S / G))^2)``; the joint torque is
    ``G F_a = G^2 sigma0 z + G^2 sigma1 dz/dt``. So ``sigma0' = G^2 sigma0``, ``sigma1' = G^2 sigma1``,
    ``F_C' = G F_C``, ``F_S' = G F_S``, ``v_S' = v_S / G``: the same friction, the same bristle (in joint units).
    """
    g = float(gear)
    return LugreModel(
        stiffness=g * g * float(stiffness),
        damping=g * g * float(damping),
        coulomb=g * float(coulomb),
        static=g * float(static),
        stribeck_velocity=float(stribeck) / g,
    )


def dc_motor(v: Values, name: str, joint: str, gear: float, autolimits: bool) -> ActuatorDefinition:
    """A ``<dcmotor>``'s jaxmor DC-motor actuator (the module docstring), with the constants MuJoCo compiles."""
    what = f"dcmotor {name!r}"
    if not (math.isfinite(gear) and gear > 0):
        raise v.error(f"{what}: gear {gear!r} must be positive (jaxmor's gear ratio; reverse the joint axis instead)")
    k, resistance, volts = _motor_constants(v, what)
    bus = _bus_voltage(v, what, name, autolimits, volts)
    peak = _peak_torque(v, what, name, autolimits, k)
    inductance = _inductance(v, what, resistance)
    return ActuatorDefinition(
        joint,
        gear,
        DcMotorParameters(
            resistance=resistance,
            torque_constant=k,
            velocity_constant=1.0 / k,
            bus_voltage=bus,
            peak_torque=peak,
        ),
        name=name,
        model="mujoco dcmotor",
        inductance=inductance,
        thermal=_thermal(v, what),
        cogging=_cogging(v),
        lugre=_lugre(v, what, gear),
        source=v.doc.source(v.element),
        line=v.line,
    )


def _motor_constants(v: Values, what: str) -> tuple[float, float, float]:
    """The motor constant ``K``, the resistance ``R`` and the nominal voltage, as MuJoCo derives them."""
    kt, ke = _padded(v, "motorconst", 2)
    resistance = v.number("resistance", 0.0)
    volts, stall, no_load = _padded(v, "nominal", 3)
    if kt < 0 or ke < 0:
        given = brief_repr(v.text("motorconst"))
        raise v.error(f"{what}: motor constants must be non-negative, got motorconst={given}")
    derive = volts > 0 and ke <= 0 and no_load > 0  # MuJoCo's Ke from the nominal no-load speed
    if np.any(v.numbers("damping", 1, 3, default=(0.0,)) != 0):
        if derive:
            raise v.error(
                f"{what}: nominal with actuator damping: MuJoCo then derives the motor constant by solving a "
                "quadratic in it (the damping in the no-load speed), and jaxmor does not model actuator "
                "damping; give motorconst (and the joint's damping)"
            )
        raise v.error(f"{what}: actuator damping is not supported: give the joint's damping (gear^2 times it)")
    if derive:
        ke = volts / no_load
    k = math.sqrt(kt * ke) if kt > 0 and ke > 0 else (kt if kt > 0 else ke)
    if resistance == 0 and volts > 0 and stall > 0 and k > 0:
        resistance = k * volts / stall
    if not k > 0:
        raise v.error(f"{what}: the motor constant K must be positive: give motorconst or nominal")
    if not resistance > 0:
        raise v.error(f"{what}: the resistance R must be positive: give resistance or nominal")
    return k, resistance, volts


def _bus_voltage(v: Values, what: str, name: str, autolimits: bool, volts: float) -> float:
    """``max(|ctrlrange|)`` where the control is limited, else the nominal voltage."""
    ctrl = limited_range(v, "ctrl", name, autolimits)
    if ctrl is not None:
        return max(abs(ctrl[0]), abs(ctrl[1]))
    if volts > 0:
        return volts
    raise v.error(f"{what}: jaxmor's DC motor needs a bus voltage: give ctrlrange or nominal")


def _peak_torque(v: Values, what: str, name: str, autolimits: bool, k: float) -> float:
    """``saturation``'s torque, else ``K current``, else a symmetric ``forcerange`` of a default class, else inf."""
    torque, current, rate = _padded(v, "saturation", 3)
    if rate > 0:
        raise v.error(f"{what}: a current rate limit (saturation current_rate={rate!r}) is not supported")
    peak = math.inf
    if torque > 0:
        peak = torque
    elif current > 0:
        peak = k * current
    else:
        force = limited_range(v, "force", name, autolimits)  # from a default class (a dcmotor has no forcerange)
        if force is not None:
            if force[0] != -force[1]:
                raise v.error(f"{what}: forcerange {list(force)} from its default class is not symmetric")
            peak = force[1]
    return peak


def _inductance(v: Values, what: str, resistance: float) -> float:
    """The winding inductance ``L``, else ``timeconst R``."""
    inductance, time_constant = _padded(v, "inductance", 2)
    if inductance < 0 or time_constant < 0:
        given = brief_repr(v.text("inductance"))
        raise v.error(f"{what}: inductance and its time constant must be non-negative, got {given}")
    if inductance == 0:
        inductance = time_constant * resistance
    return inductance


def _thermal(v: Values, what: str) -> ThermalModel | None:
    """``thermal="R_th C timeconst alpha T_ref T_ambient"``, its time constant resolved as MuJoCo 4 does."""
    r_th, capacity, time_constant, alpha, reference, ambient = _padded(v, "thermal", 6)
    if min(r_th, capacity, time_constant) < 0:
        raise v.error(f"{what}: thermal resistance, capacitance and timeconst must be non-negative")
    if r_th == 0 and capacity == 0 and time_constant == 0:
        return None
    if time_constant > 0 and r_th > 0:
        capacity = time_constant / r_th
    elif time_constant > 0 and capacity > 0:
        r_th = time_constant / capacity
    if r_th <= 0 or capacity <= 0:
        raise v.error(f"{what}: thermal needs two of the thermal resistance, capacitance and timeconst")
    return ThermalModel(
        thermal_resistance=r_th,
        heat_capacity=capacity,
        ambient_temperature=ambient,
        reference_temperature=reference,
        resistance_tempco=alpha,
        flux_tempco=0.0,
    )


def _cogging(v: Values) -> CoggingModel | None:
    """``cogging="A N phi"``: off when ``A = 0``, as in MuJoCo."""
    amplitude, periods, phase = _padded(v, "cogging", 3)
    return CoggingModel(amplitude, periods, phase) if amplitude != 0 else None


def _lugre(v: Values, what: str, gear: float) -> LugreModel | None:
    """``lugre="sigma0 sigma1 F_C F_S v_S"`` (actuator side; off unless ``sigma0 > 0``, as in MuJoCo), at the output."""
    stiffness, damping, coulomb, static, stribeck = _padded(v, "lugre", 5)
    if not stiffness > 0:
        return None
    if damping < 0:
        raise v.error(f"{what}: lugre damping must be non-negative, got {damping!r}")
    if not coulomb > 0:
        raise v.error(f"{what}: jaxmor's LuGre friction needs a positive coulomb friction, got {coulomb!r}")
    if static < coulomb:
        raise v.error(f"{what}: jaxmor's LuGre friction needs static >= coulomb, got {static!r} < {coulomb!r}")
    if not stribeck > 0:
        raise v.error(f"{what}: jaxmor's LuGre friction needs a positive Stribeck velocity, got {stribeck!r}")
    return lugre_at_output(gear, stiffness, damping, coulomb, static, stribeck)


def _law(v: Values, kind: str, name: str) -> tuple[float, tuple[float, float, float]]:
    """``(gainprm[0], biasprm[0:3])`` of an affine actuator."""
    if kind == "motor":
        return 1.0, (0.0, 0.0, 0.0)
    if kind == "position":
        kp, kv = v.nonnegative("kp", 1.0), v.nonnegative("kv", 0.0)
        return kp, (0.0, -kp, -kv)
    if kind == "velocity":
        kv = v.nonnegative("kv", 1.0)
        return kv, (0.0, 0.0, -kv)
    if kind == "intvelocity":
        kp, kv = v.nonnegative("kp", 1.0), v.nonnegative("kv", 0.0)
        return kp, (0.0, -kp, -kv)
    if v.choice("gaintype", ("fixed", "affine", "muscle", "user"), "fixed") != "fixed":
        raise v.error(f"actuator {name!r}: only gaintype='fixed' is supported")
    biastype = v.choice("biastype", ("none", "affine", "muscle", "user"), "none")
    if biastype not in ("none", "affine"):
        raise v.error(f"actuator {name!r}: only biastype 'none' and 'affine' are supported")
    gain = v.numbers("gainprm", 1, 10, default=(1.0,))
    if np.any(gain[1:] != 0):
        raise v.error(f"actuator {name!r}: only gainprm[0] is used by a fixed gain; the others must be 0")
    bias = np.zeros(3)
    if biastype == "affine":
        given = v.numbers("biasprm", 1, 10, default=(0.0,))
        if np.any(given[3:] != 0):
            raise v.error(f"actuator {name!r}: an affine bias uses biasprm[0:3]; the others must be 0")
        bias[: min(3, len(given))] = given[:3]
    return float(gain[0]), (float(bias[0]), float(bias[1]), float(bias[2]))


def _activation(v: Values, kind: str, name: str, autolimits: bool) -> dict:
    """The activation dynamics of an affine actuator element, as :class:`AffineActuator` fields: a ``<general>``'s
    ``dyntype``, ``dynprm[0]``, ``actrange`` (where ``actlimited``) and ``actearly``; an ``<intvelocity>`` integrates
    its control (MuJoCo's rule); a ``<position>`` with a positive ``timeconst`` filters it exactly."""
    if kind == "position":
        tau = v.nonnegative("timeconst", 0.0)
        return {"dyntype": "filterexact", "dynprm": tau} if tau > 0 else {}
    if kind not in ("general", "intvelocity"):
        return {}
    dyntype = (
        "integrator" if kind == "intvelocity" else v.choice("dyntype", (*AFFINE_DYNAMICS, "muscle", "user"), "none")
    )
    if dyntype not in AFFINE_DYNAMICS:
        raise v.error(f"actuator {name!r}: dyntype {dyntype!r} is not supported (only {', '.join(AFFINE_DYNAMICS)})")
    if dyntype == "none":
        if v.has("actrange") and v.choice("actlimited", ("auto", "true", "false"), "auto") != "false":
            raise v.error(f"actuator {name!r}: an actrange needs activation dynamics (dyntype), as in MuJoCo")
        return {}
    tau = float(v.numbers("dynprm", 1, 10, default=(1.0,))[0])
    if dyntype != "integrator" and not (math.isfinite(tau) and tau > 0):
        raise v.error(f"actuator {name!r}: a {dyntype} needs a positive time constant dynprm[0] [s], got {tau!r}")
    return {
        "dyntype": dyntype,
        "dynprm": tau if dyntype != "integrator" else 1.0,
        "act_range": limited_range(v, "act", name, autolimits),
        "act_early": v.flag("actearly", False),
    }


def limited_range(
    v: Values, which: str, name: str, autolimits: bool, what: str = "actuator"
) -> tuple[float, float] | None:
    """``{which}range`` where ``{which}limited`` (``auto``: where the range is given, if the compiler's
    ``autolimits``), else ``None``; ``what`` and ``name`` name the element in errors."""
    limited = v.choice(f"{which}limited", ("auto", "true", "false"), "auto")
    given = v.has(f"{which}range")
    if limited == "auto":
        if given and not autolimits:
            raise v.error(
                f"{what} {name!r} has a {which}range but {which}limited='auto' while the compiler's "
                "autolimits is false; set it"
            )
        limited = "true" if given else "false"
    if limited == "false":
        return None
    low, high = (float(x) for x in v.numbers(f"{which}range", 2, default=(0.0, 0.0)))
    if low >= high:
        raise v.error(f"{what} {name!r}: {which}range lower {low!r} >= upper {high!r}")
    return low, high


def _inherited(doc: Document, classes, el, v: Values, name: str) -> bool:
    """Whether a ``<position>``'s control range comes from ``inheritrange``, by MuJoCo's rule: along its class's
    actuator defaults and then the element, a ``<position>`` that sets ``ctrlrange`` cancels an inherited
    ``inheritrange`` and one that sets ``inheritrange`` replaces an inherited ``ctrlrange``; one element setting
    both, or an ``inheritrange`` left with another shortcut's ``ctrlrange`` after it, is an error."""
    own = attributes(el)
    levels = [(k, a) for c in class_chain(doc, classes, own.get("class") or CLASS_ROOT, el) for k, a in c.actuators]
    active = ranged = False
    for kind, attrs in [*levels, ("position", own)]:
        sets_range, sets_inherit = "ctrlrange" in attrs, "inheritrange" in attrs
        if kind == "position" and sets_range and sets_inherit:
            raise v.error(f"actuator {name!r}: ctrlrange and inheritrange cannot both be set on one <position>")
        if sets_inherit:
            active, ranged = True, False
        if sets_range:
            active, ranged = active and kind != "position", True
    if not active or not v.number("inheritrange", 0.0) > 0:  # MuJoCo ignores inheritrange <= 0
        return False
    if ranged:
        raise v.error(f"actuator {name!r}: ctrlrange and inheritrange cannot both be set (one from a default class)")
    return True


def _inherited_range(
    v: Values, name: str, joint: str, joint_range, autolimits: bool, what: str = "joint"
) -> tuple[float, float] | None:
    """MuJoCo's ``<position inheritrange="s">``: the joint's range scaled by ``s`` about its midpoint, the control
    limited unless ``ctrllimited="false"``."""
    if joint_range is None:
        raise v.error(
            f"actuator {name!r}: inheritrange needs {what} {joint!r} to be limited (MuJoCo refuses a {what} "
            "without a range and takes an unlimited joint's range in the file's units, unconverted)"
        )
    limited = v.choice("ctrllimited", ("auto", "true", "false"), "auto")
    if limited == "auto" and not autolimits:
        raise v.error(
            f"actuator {name!r} inherits a ctrlrange but ctrllimited='auto' while the compiler's autolimits is "
            "false; set it"
        )
    if limited == "false":
        return None
    scale, (low, high) = v.number("inheritrange"), joint_range
    centre, half = 0.5 * (low + high), 0.5 * scale * (high - low)
    return float(centre - half), float(centre + half)
