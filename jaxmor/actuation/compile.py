"""DC-motor actuator definitions compiled into a Model's :class:`~jaxmor.types.MotorActuators` arrays.

:func:`compile_actuators` validates the definitions against the model's joints and refuses a number the
model's float dtype cannot hold (:func:`check_representable`, also used by the model builder for every
array it makes); :func:`empty_actuators` is the value of a model without DC motors.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.backlash import with_backlash
from jaxmor.actuation.controller import compile_controllers
from jaxmor.actuation.definitions import API_SOURCE, ActuatorDefinition, validate_actuators
from jaxmor.actuation.motor import DcMotorParameters, motor_problem
from jaxmor.actuation.motor_dynamics import compile_dynamics
from jaxmor.actuation.residual import no_residual
from jaxmor.checks import model_dtype, stored_failure, stored_problem
from jaxmor.errors import ArgumentError, ModelError
from jaxmor.types import Model, MotorActuators, no_backlash, no_controllers


def check_representable(
    values: np.ndarray, dtype, source: str, lines: Sequence[int | None], what: str, coordinates: bool = False
) -> None:
    """Refuse a value that the model's dtype cannot hold (:func:`jaxmor.checks.stored_problem`): a finite one
    that overflows, a nonzero one that underflows to zero or to a subnormal number (e.g. a rotor inertia of
    1e39 in float32 would freeze its joint without a word). ``coordinates`` accept underflows.

    Args:
        values: float64 values, the leading axis matching ``lines``.
        dtype: the model's float dtype.
        source, lines: the file and the line of each leading entry, for the message.
        what: the quantity, for the message.
        coordinates: accept underflows.

    Raises:
        ModelError: at the first entry that does not survive the conversion.
    """
    values = np.asarray(values, dtype=np.float64)
    problem = stored_problem(values, dtype, coordinates=coordinates)
    if problem is None:
        return
    index, reason = problem
    raise ModelError(
        source,
        lines[index[0]] if values.ndim else lines[0],
        f"{what} {float(values[index])!r} {stored_failure(reason, dtype)}; enable jax_enable_x64 before loading "
        "for float64, or rescale the model",
    )


def empty_actuators(nv: int) -> MotorActuators:
    """A :class:`MotorActuators` without actuators for a model with ``nv`` velocities."""
    zero = jnp.zeros((0,))
    return MotorActuators(
        names=(),
        models=(),
        joints=(),
        couplings=(),
        joint_v_index=(),
        coupling_actuator=(),
        coupling_v_index=(),
        nv=nv,
        gear_ratio=zero,
        coupling_ratio=zero,
        motor=DcMotorParameters(zero, zero, zero, zero, zero),
        output_damping=zero,
        output_friction=zero,
        dynamics=compile_dynamics([], [], [], []),
        delay=jnp.zeros((0,)),
        controller=no_controllers(0),
        backlash=no_backlash(0),
    )


def joint_kinds(model: Model) -> dict[str, str]:
    """Joint name -> the description's joint type, as the actuator checks need them.

    A free joint is ``"floating"``; an implicit floating base has no joint and is known by its link's
    name, unless a joint has that name (links and joints have separate namespaces in a URDF).
    """
    kinds = dict(model.urdf_joints)
    for b in model.free_body:
        joint = model.body_joint_name[b]
        if joint:  # a URDF joint from 'world' made free
            kinds[joint] = "floating"
        else:
            kinds.setdefault(model.body_names[b], "floating")
    return kinds


def _check_joints(model: Model, definitions: list[ActuatorDefinition]) -> None:
    """Validate the definitions against the model's joints, and refuse a joint an affine actuator drives."""
    validate_actuators(definitions, joint_kinds(model), API_SOURCE)
    v_index = dict(zip(model.joint_names, model.joint_u, strict=True))
    affine_on = {v: name for v, name in zip(model.affine.v_index, model.affine.names, strict=True)}
    for d in definitions:
        if v_index[d.joint] in affine_on:
            raise ArgumentError(
                f"actuator '{d.label}': joint '{d.joint}' is already driven by the affine actuator "
                f"'{affine_on[v_index[d.joint]]}' (one actuator per joint)"
            )


def _check_numbers(definitions: list[ActuatorDefinition]) -> None:
    """Refuse a number of a definition that the model's float dtype cannot hold, and a motor whose region
    (stall torque, no-load speed...) that dtype cannot hold (:func:`jaxmor.actuation.motor.motor_problem`)."""
    dtype = model_dtype()
    for d in definitions:
        m = d.motor
        numbers = {
            "gear_ratio": d.gear_ratio,
            "resistance": m.resistance,
            "torque_constant": m.torque_constant,
            "velocity_constant": m.velocity_constant,
            "bus_voltage": m.bus_voltage,
            "peak_torque": m.peak_torque,
            "output_damping": d.output_damping,
            "output_friction": d.output_friction,
            "inductance": d.inductance,
            **{f"ratio of the coupling to joint '{c.joint}'": c.ratio for c in d.couplings},
        }
        source = d.source if d.source is not None else API_SOURCE
        for what, value in numbers.items():
            check_representable(np.asarray([float(value)]), dtype, source, [d.line], f"actuator '{d.label}': {what}")
        problem = motor_problem(m, dtype)
        if problem is not None:
            raise ModelError(source, d.line, f"actuator '{d.label}': the motor is invalid: {problem}")


def compile_actuators(model: Model, definitions: Sequence[ActuatorDefinition]) -> MotorActuators:
    """Validate actuator definitions against a model's joints and compile them into arrays.

    Raises:
        ModelError: an invalid definition, an unknown/fixed/multi-DoF joint, a joint driven twice,
            a bad coupling or a duplicate name (see :func:`jaxmor.actuation.definitions.validate_actuators`),
            naming the definition's file and line, or ``<api>`` for definitions made in Python.
        ArgumentError: an entry that is not an :class:`ActuatorDefinition`, or a joint already driven
            by an affine actuator.
    """
    definitions = list(definitions)
    for d in definitions:
        if not isinstance(d, ActuatorDefinition):
            raise ArgumentError(f"definitions must be ActuatorDefinition objects, got {type(d).__name__}")
    if not definitions:
        return empty_actuators(model.nv)
    _check_joints(model, definitions)
    _check_numbers(definitions)
    v_index = dict(zip(model.joint_names, model.joint_u, strict=True))
    couplings = [(i, v_index[c.joint], c.ratio) for i, d in enumerate(definitions) for c in d.couplings]

    def col(values):
        return jnp.asarray(np.asarray(values, dtype=np.float64))

    motors = [d.motor for d in definitions]
    return MotorActuators(
        names=tuple(d.label for d in definitions),
        models=tuple(d.model for d in definitions),
        joints=tuple(d.joint for d in definitions),
        couplings=tuple(tuple(c.joint for c in d.couplings) for d in definitions),
        joint_v_index=tuple(v_index[d.joint] for d in definitions),
        coupling_actuator=tuple(i for i, _, _ in couplings),
        coupling_v_index=tuple(v for _, v, _ in couplings),
        nv=model.nv,
        gear_ratio=col([d.gear_ratio for d in definitions]),
        coupling_ratio=col([r for _, _, r in couplings]),
        motor=DcMotorParameters(
            resistance=col([float(m.resistance) for m in motors]),
            torque_constant=col([float(m.torque_constant) for m in motors]),
            velocity_constant=col([float(m.velocity_constant) for m in motors]),
            bus_voltage=col([float(m.bus_voltage) for m in motors]),
            peak_torque=col([float(m.peak_torque) for m in motors]),
        ),
        output_damping=col([d.output_damping for d in definitions]),
        output_friction=col([d.output_friction for d in definitions]),
        dynamics=compile_dynamics(
            [float(d.inductance) for d in definitions],
            [d.thermal for d in definitions],
            [d.cogging for d in definitions],
            [d.lugre for d in definitions],
        ),
        delay=jnp.asarray(np.asarray([d.delay for d in definitions], np.float64)),
        controller=compile_controllers([d.controller for d in definitions]),
        residual=no_residual(len(definitions)),
        backlash=no_backlash(len(definitions)),
    )


def with_backlash_definitions(model: Model, definitions: Sequence[ActuatorDefinition]) -> Model:
    """``model`` (its actuators compiled from ``definitions``) with each definition's backlash set
    (:func:`jaxmor.actuation.backlash.with_backlash`).

    Raises:
        ModelError: a backlash the model refuses (no inertia for a joint without rotor inertia, a joint driven by two
            actuators), naming the definition's file and line.
    """
    for d in definitions:
        if d.backlash is None:
            continue
        try:
            model = with_backlash(model, d.backlash.width, d.backlash.inertia, actuators=[d.label])
        except ArgumentError as error:
            raise ModelError(d.source or API_SOURCE, d.backlash.line or d.line, str(error)) from None
    return model
