"""DC-motor actuators: their compiled form, their functional API and the per-step actuation.

An actuator's motor turns at ``w_m = G u_j + sum_c r_c u_c`` (gear ratio ``G`` on the driven joint,
coupling ratios ``r_c`` on coupled joints); for all actuators at once ``w_m = T u`` with the
transmission matrix ``T`` (na x nv). A motor torque ``tau_m`` acts on the joints with ``T^T tau_m``.
Actuator torques are commanded at the gear output (``G tau_m``), and every step clips the motor
torque to the motor operating region at the motor speed of the beginning of the step
(:func:`jaxmor.motor.clip_motor_torque`), unless the region is only monitored.

Where things live:

* the model (:class:`jaxmor.MotorActuators`): ``T``, gear ratios, motor constants, output losses,
  and the bus voltages of the robot description (defaults);
* the state: the commanded actuator torques, the bus voltages now (the power supply's, so they can
  change every step and be randomized per world), the enforcement flag, the last step's
  :class:`jaxmor.ActuatorState`.

Output damping and friction are kept per actuator and added to the driven joint's own damping and
friction by the step (:func:`joint_damping`, :func:`joint_friction`), so replacing the actuators
never leaves stale losses on a joint.

Functional API: setters return a new ``State`` or ``Model``. Checks of shapes and values raise
:class:`jaxmor.ArgumentError` when the arguments are concrete (outside ``jit``); under ``jit`` only
shapes are checked.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.affine import AffineActuatorDefinition, affine_generalized_force, compile_affine
from jaxmor.errors import ArgumentError
from jaxmor.io.actuators import (
    API_SOURCE,
    ActuatorCoupling,
    ActuatorDefinition,
    actuators_from_xml,
    actuators_to_xml,
    validate_actuators,
)
from jaxmor.model import joint_index
from jaxmor.motor import DcMotorParameters, MotorSaturation, motor_torque_bounds
from jaxmor.state import _finite_vector, _is_concrete, zero_actuator_state
from jaxmor.types import JOINT_FREE, ActuatorState, Model, MotorActuators, State


def empty_actuators(nv: int) -> MotorActuators:
    """A :class:`MotorActuators` without actuators for a model with ``nv`` velocities."""
    zero = jnp.zeros((0,))
    return MotorActuators(
        names=(),
        models=(),
        joints=(),
        couplings=(),
        joint_v_index=(),
        transmission=jnp.zeros((0, nv)),
        gear_ratio=zero,
        motor=DcMotorParameters(zero, zero, zero, zero, zero),
        output_damping=zero,
        output_friction=zero,
    )


def _joint_types(model: Model) -> dict[str, str]:
    kinds = dict(model.urdf_joints)
    for b, kind in enumerate(model.body_joint_type):
        if kind == JOINT_FREE:
            joint = model.body_joint_name[b]
            if joint:  # a URDF joint from 'world' made free
                kinds[joint] = "floating"
            else:
                # An implicit floating base has no URDF joint; it is known by its link's name, unless a
                # joint has that name (links and joints have separate namespaces in a URDF).
                kinds.setdefault(model.body_names[b], "floating")
    return kinds


def compile_actuators(model: Model, definitions: Sequence[ActuatorDefinition]) -> MotorActuators:
    """Validate actuator definitions against a model's joints and compile them into arrays.

    Raises:
        ModelError: an invalid definition, an unknown/fixed/multi-DoF joint, a joint driven twice,
            a bad coupling or a duplicate name (see :func:`jaxmor.io.actuators.validate_actuators`).
    """
    definitions = list(definitions)
    for d in definitions:
        if not isinstance(d, ActuatorDefinition):
            raise ArgumentError(f"definitions must be ActuatorDefinition objects, got {type(d).__name__}")
    if not definitions:
        return empty_actuators(model.nv)
    validate_actuators(definitions, _joint_types(model), API_SOURCE)
    for d in definitions:
        taken = _affine_joints(model)
        if d.joint in taken:
            raise ArgumentError(
                f"actuator '{d.label}': joint '{d.joint}' is already driven by the affine actuator '{taken[d.joint]}'"
                " (one actuator per joint)"
            )
    na, nv = len(definitions), model.nv
    t = np.zeros((na, nv))
    for i, d in enumerate(definitions):
        t[i, joint_index(model, d.joint)] = d.gear_ratio
        for c in d.couplings:
            t[i, joint_index(model, c.joint)] = c.ratio

    def col(values):
        return jnp.asarray(np.asarray(values, dtype=np.float64))

    motors = [d.motor for d in definitions]
    return MotorActuators(
        names=tuple(d.label for d in definitions),
        models=tuple(d.model for d in definitions),
        joints=tuple(d.joint for d in definitions),
        couplings=tuple(tuple(c.joint for c in d.couplings) for d in definitions),
        joint_v_index=tuple(joint_index(model, d.joint) for d in definitions),
        transmission=jnp.asarray(t),
        gear_ratio=col([d.gear_ratio for d in definitions]),
        motor=DcMotorParameters(
            resistance=col([float(m.resistance) for m in motors]),
            torque_constant=col([float(m.torque_constant) for m in motors]),
            velocity_constant=col([float(m.velocity_constant) for m in motors]),
            bus_voltage=col([float(m.bus_voltage) for m in motors]),
            peak_torque=col([float(m.peak_torque) for m in motors]),
        ),
        output_damping=col([d.output_damping for d in definitions]),
        output_friction=col([d.output_friction for d in definitions]),
    )


def _affine_joints(model: Model) -> dict[str, str]:
    """Joint name -> name of the affine actuator driving it."""
    by_v = {v: name for v, name in zip(model.affine.v_index, model.affine.names, strict=True)}
    return {j: by_v[joint_index(model, j)] for j in model.joint_names if joint_index(model, j) in by_v}


def _reset_actuator_fields(model: Model, state: State) -> State:
    dtype = state.q.dtype
    return state.replace(
        actuator_torque=jnp.zeros((model.na,), dtype),
        bus_voltage=jnp.asarray(model.actuators.motor.bus_voltage, dtype),
        actuator_state=zero_actuator_state(model.na, dtype),
    )


def set_actuators(model: Model, definitions: Sequence[ActuatorDefinition], state: State | None = None):
    """Replace all actuators of a model (an empty list removes them).

    Args:
        model: the model.
        definitions: one :class:`ActuatorDefinition` per actuator, in the order of every
            per-actuator array. Unnamed actuators are named after their joints.
        state: optional state of a world of this model; its actuator torques are zeroed, its bus
            voltages reset to the definitions' and its actuator states cleared, as the actuators'
            count and order may change.

    Returns:
        The new model, or ``(model, state)`` when a state is given.

    Raises:
        ModelError: invalid definitions (the message names the actuator, and the file and line for
            definitions read from a file).
    """
    new_model = model.replace(actuators=compile_actuators(model, definitions))
    if state is None:
        return new_model
    return new_model, _reset_actuator_fields(new_model, state)


def get_actuators(model: Model, state: State | None = None) -> list[ActuatorDefinition]:
    """The actuator definitions of a model, with the bus voltages of ``state`` when given.

    Args:
        model: an unbatched model.
        state: an unbatched state whose bus voltages (set since loading) replace the model's.
    """
    act = model.actuators
    t = np.asarray(act.transmission)
    volts = np.asarray(act.motor.bus_voltage if state is None else state.bus_voltage, dtype=float)
    out = []
    for i, name in enumerate(act.names):
        couplings = tuple(ActuatorCoupling(j, float(t[i, joint_index(model, j)])) for j in act.couplings[i])
        motor = DcMotorParameters(
            resistance=float(act.motor.resistance[i]),
            torque_constant=float(act.motor.torque_constant[i]),
            velocity_constant=float(act.motor.velocity_constant[i]),
            bus_voltage=float(volts[i]),
            peak_torque=float(act.motor.peak_torque[i]),
        )
        out.append(
            ActuatorDefinition(
                act.joints[i],
                float(act.gear_ratio[i]),
                motor,
                name=name,
                model=act.models[i],
                couplings=couplings,
                output_damping=float(act.output_damping[i]),
                output_friction=float(act.output_friction[i]),
            )
        )
    return out


def actuator_names(model: Model) -> list[str]:
    """Actuator names in the order of every per-actuator array."""
    return list(model.actuators.names)


def actuator_index(model: Model, name: str) -> int:
    """Position of an actuator name, ``-1`` if there is no such actuator (as the spec's ``size_t(-1)``)."""
    try:
        return model.actuators.names.index(name)
    except ValueError:
        return -1


def transmission_matrix(model: Model) -> jnp.ndarray:
    """(na, nv) transmission matrix ``T``: motor speeds ``T u``, joint torques ``T^T tau_m``."""
    return model.actuators.transmission


def _actuator(model: Model, name_or_index: str | int) -> int:
    if isinstance(name_or_index, str):
        i = actuator_index(model, name_or_index)
        if i < 0:
            raise ArgumentError(f"unknown actuator {name_or_index!r}; the actuators are {list(model.actuators.names)}")
        return i
    i = int(name_or_index)
    if not 0 <= i < model.na:
        raise ArgumentError(f"actuator index {i} is out of range [0, {model.na})")
    return i


def set_actuator_torques(state: State, torques: ArrayLike) -> State:
    """Set every actuator torque at the gear outputs [Nm or N]; they hold until set again.

    Args:
        state: the state.
        torques: (na,) finite torques, in :func:`actuator_names` order.

    Raises:
        ArgumentError: wrong shape, or a non-finite value (checked outside ``jit``).
    """
    n = state.actuator_torque.shape[-1]
    return state.replace(actuator_torque=_finite_vector(torques, n, "torques", state.actuator_torque.dtype))


def set_actuator_torque(model: Model, state: State, name_or_index: str | int, torque: ArrayLike) -> State:
    """Set one actuator's torque at its gear output [Nm or N], by name or index.

    Raises:
        ArgumentError: unknown actuator, or a non-scalar or non-finite torque.
    """
    i = _actuator(model, name_or_index)
    value = jnp.asarray(torque, dtype=state.actuator_torque.dtype)
    if value.shape != ():
        raise ArgumentError(f"torque must be a scalar, got shape {value.shape}")
    if _is_concrete(value) and not bool(jnp.isfinite(value)):
        raise ArgumentError(f"torque must be finite, got {float(value)}")
    return state.replace(actuator_torque=state.actuator_torque.at[..., i].set(value))


def actuator_torques(state: State) -> jnp.ndarray:
    """(na,) actuator torques as set [Nm or N], not clipped."""
    return state.actuator_torque


def _motor_now(model: Model, state: State) -> DcMotorParameters:
    return model.actuators.motor.replace(bus_voltage=state.bus_voltage)


def motor_speeds(model: Model, u: jnp.ndarray) -> jnp.ndarray:
    """(na,) motor speeds ``T u`` [rad/s] at generalized velocities ``u``."""
    return model.actuators.transmission.astype(u.dtype) @ u


def actuator_torque_bounds(model: Model, state: State) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Admissible actuator torques now, at the gear outputs: the motor region at the current motor
    speeds times the gear ratio. Exactly the bounds the next step clips to; ``(-inf, inf)`` in
    monitor mode.

    Returns:
        ``(lower, upper)``, each (na,) [Nm or N].
    """
    bounds = motor_torque_bounds(_motor_now(model, state), motor_speeds(model, state.u))
    gear = model.actuators.gear_ratio.astype(state.u.dtype)
    inf = jnp.asarray(jnp.inf, state.u.dtype)
    lower = jnp.where(state.mor_enforced, gear * bounds.lower, -inf)
    upper = jnp.where(state.mor_enforced, gear * bounds.upper, inf)
    return lower, upper


def _check_voltage(model: Model, voltage: jnp.ndarray, which: np.ndarray) -> None:
    """Reject voltages that make any selected motor invalid (the spec's isValid).

    Checked only when the voltage and the motor constants are concrete: under ``jit``/``vmap`` (e.g. a
    model batched per world with a Python-float voltage) it is skipped rather than concretizing a tracer.
    A model batched without ``vmap`` (fields of shape (..., na)) is checked in every world.
    """
    m = model.actuators.motor
    constants = (m.resistance, m.torque_constant, m.velocity_constant)
    if not all(_is_concrete(x) for x in (voltage, *constants)):
        return
    cols = np.flatnonzero(which)
    if cols.size == 0:
        return
    v = float(voltage)
    with np.errstate(all="ignore"):
        r, kt, kv = (np.asarray(x, dtype=float)[..., cols] for x in constants)
        stall, no_load = kt * v / r, kv * v
    ok = np.isfinite(stall) & (stall > 0) & np.isfinite(no_load) & (no_load > 0)
    bad = (~ok).reshape(-1, cols.size).any(axis=0)
    if not (math.isfinite(v) and v > 0) or bad.any():
        i = int(cols[int(np.argmax(bad))]) if bad.any() else int(cols[0])
        raise ArgumentError(
            f"bus voltage {v} is invalid for actuator '{model.actuators.names[i]}': it must be positive and "
            "finite, with a finite positive stall torque and no-load speed"
        )


def set_bus_voltage(model: Model, state: State, voltage: ArrayLike, name: str | None = None) -> State:
    """Change the bus voltage [V] of all actuators, or of the one named.

    Only the stored voltage changes; it can be called every step (and batched per world).

    Raises:
        ArgumentError: unknown actuator, non-scalar voltage, or a voltage that makes a motor invalid
            (not positive and finite, or overflowing its stall torque or no-load speed; checked
            outside ``jit``).
    """
    value = jnp.asarray(voltage, dtype=state.bus_voltage.dtype)
    if value.shape != ():
        raise ArgumentError(f"voltage must be a scalar, got shape {value.shape}")
    if name is None:
        _check_voltage(model, value, np.ones(model.na, bool))
        return state.replace(bus_voltage=jnp.full_like(state.bus_voltage, value))
    i = _actuator(model, name)
    _check_voltage(model, value, np.arange(model.na) == i)
    return state.replace(bus_voltage=state.bus_voltage.at[..., i].set(value))


def actuator_states(state: State) -> ActuatorState:
    """The actuator states of the last step (each field (na,))."""
    return state.actuator_state


def set_motor_operating_region_enforced(state: State, enforce: ArrayLike) -> State:
    """Clip actuator torques to their motor operating regions (``True``, the default) or only
    monitor them (``False``: torques are applied as commanded, the states still report the motor
    quantities and the bound that the command exceeds)."""
    return state.replace(mor_enforced=jnp.asarray(enforce, dtype=bool))


def is_motor_operating_region_enforced(state: State) -> jnp.ndarray:
    """Whether actuator torques are clipped to their regions (a bool array, per world when batched)."""
    return state.mor_enforced


def joint_damping(model: Model) -> jnp.ndarray:
    """(nv,) total viscous damping of each joint: its own plus its actuator's output damping."""
    act = model.actuators
    idx = np.asarray(act.joint_v_index, dtype=np.int32)
    return model.dof_damping.at[idx].add(act.output_damping.astype(model.dof_damping.dtype))


def joint_friction(model: Model) -> jnp.ndarray:
    """(nv,) total Coulomb friction of each joint: its own plus its actuator's output friction."""
    act = model.actuators
    idx = np.asarray(act.joint_v_index, dtype=np.int32)
    return model.dof_friction.at[idx].add(act.output_friction.astype(model.dof_friction.dtype))


def actuate(model: Model, state: State) -> tuple[jnp.ndarray, ActuatorState]:
    """The actuation of one step, at the velocities ``u_t`` of its beginning.

    Motor speeds ``w = T u_t``; commanded motor torques ``tau_a / G``; motor torques clipped to the
    region at ``w`` with the state's bus voltages (or as commanded in monitor mode); joint torques
    ``T^T tau_m``, constant over the step.

    Returns:
        ``(joint_torque (nv,), actuator_state)``. The actuator state holds the fields known before
        integration (``motor_speed``, ``commanded_motor_torque``, ``motor_torque``, ``saturation``);
        ``average_motor_speed`` is set to ``motor_speed`` and ``joint_loss_torque`` to zero until the
        step completes them.
    """
    dtype = state.u.dtype
    act = model.actuators
    speed = motor_speeds(model, state.u)
    commanded = state.actuator_torque / act.gear_ratio.astype(dtype)
    bounds = motor_torque_bounds(_motor_now(model, state), speed)
    clipped, saturation = bounds.clip(commanded)
    motor_torque = jnp.where(state.mor_enforced, clipped, commanded)
    joint_torque = act.transmission.astype(dtype).T @ motor_torque
    states = ActuatorState(
        motor_speed=speed,
        average_motor_speed=speed,
        commanded_motor_torque=commanded,
        motor_torque=motor_torque,
        joint_loss_torque=jnp.zeros_like(speed),
        saturation=saturation.astype(jnp.int32),
    )
    return joint_torque, states


def export_actuators(model: Model, state: State) -> str:
    """The current actuators as an ``<actuators>`` XML element (the spec's world export).

    It holds every actuator with its model inline (including actuators set with
    :func:`set_actuators`), the bus voltages of ``state``, each nonzero commanded torque as a
    ``torque`` attribute, and the monitor mode. :func:`import_actuators` reads it back exactly.

    Args:
        model: an unbatched model.
        state: an unbatched state of a world of it.
    """
    torques = np.asarray(state.actuator_torque, dtype=float)
    enforced = bool(np.asarray(state.mor_enforced))
    return actuators_to_xml(get_actuators(model, state), torques, enforced)


def import_actuators(
    model: Model, state: State, path_or_xml: str | os.PathLike, *, resource_dir: str | os.PathLike | None = None
) -> tuple[Model, State]:
    """Replace a model's actuators with those of an ``<actuators>`` element (see :func:`export_actuators`).

    The state gets the element's bus voltages, commanded torques and monitor mode.

    Args:
        model: the model.
        state: a state of a world of it.
        path_or_xml: a file or the XML text.
        resource_dir: directory searched for actuator files linked by relative paths.

    Raises:
        ModelError: an invalid element or actuator (file and line named), or actuators that do not fit
            the model's joints.
    """
    base_dir = resource_dir
    if base_dir is None and not (isinstance(path_or_xml, str) and path_or_xml.lstrip().startswith("<")):
        base_dir = os.path.dirname(os.path.abspath(path_or_xml))
    definitions, torques, enforced = actuators_from_xml(path_or_xml, base_dir=base_dir)
    new_model, new_state = set_actuators(model, definitions, state)
    dtype = new_state.actuator_torque.dtype
    new_state = new_state.replace(
        actuator_torque=jnp.asarray(np.asarray(torques, dtype=float).reshape(len(definitions)), dtype),
        mor_enforced=jnp.asarray(enforced),
    )
    return new_model, new_state


def set_affine_actuators(model: Model, definitions: Sequence[AffineActuatorDefinition], state: State | None = None):
    """Replace the affine (MuJoCo-style) actuators of a model; an empty list removes them.

    A robot may mix both kinds, one actuator per joint: a joint driven by a DC-motor actuator
    cannot also take an affine one.

    Args:
        model: the model.
        definitions: the affine actuators, in the order of ``State.ctrl``.
        state: optional state of a world of this model; its controls are reset to zero.

    Returns:
        The new model, or ``(model, state)`` when a state is given.

    Raises:
        ArgumentError: an unknown joint, two actuators on one joint, or a duplicate name.
    """
    q_index = {j: model.body_q_start[b] for b, j in enumerate(model.body_joint_name) if j in model.joint_names}
    v_index = {j: model.body_v_start[b] for b, j in enumerate(model.body_joint_name) if j in model.joint_names}
    affine = compile_affine(definitions, q_index, v_index)
    motor_joints = set(model.actuators.joints)
    for name, v in zip(affine.names, affine.v_index, strict=True):
        joint = next(j for j, vi in v_index.items() if vi == v)
        if joint in motor_joints:
            raise ArgumentError(
                f"affine actuator '{name}': joint '{joint}' is already driven by a DC-motor actuator (one per joint)"
            )
    new_model = model.replace(affine=affine)
    if state is None:
        return new_model
    return new_model, state.replace(ctrl=jnp.zeros((new_model.nu,), state.q.dtype))


def set_ctrl(state: State, ctrl: ArrayLike) -> State:
    """Set the controls of the affine actuators.

    Args:
        state: the state.
        ctrl: (nu,) finite controls, in the order of the affine actuators.

    Raises:
        ArgumentError: wrong shape, or a non-finite value (checked outside ``jit``).
    """
    return state.replace(ctrl=_finite_vector(ctrl, state.ctrl.shape[-1], "ctrl", state.ctrl.dtype))


def affine_joint_force(model: Model, state: State) -> jnp.ndarray:
    """(nv,) generalized force of the affine actuators at the state's ``ctrl``, ``q`` and ``u``."""
    return affine_generalized_force(model.affine, state.ctrl, state.q, state.u, model.nv)


__all__ = [
    "MotorSaturation",
    "actuate",
    "affine_joint_force",
    "actuator_index",
    "actuator_names",
    "actuator_states",
    "actuator_torque_bounds",
    "actuator_torques",
    "compile_actuators",
    "empty_actuators",
    "export_actuators",
    "get_actuators",
    "import_actuators",
    "is_motor_operating_region_enforced",
    "joint_damping",
    "joint_friction",
    "motor_speeds",
    "set_actuator_torque",
    "set_actuator_torques",
    "set_actuators",
    "set_affine_actuators",
    "set_ctrl",
    "set_bus_voltage",
    "set_motor_operating_region_enforced",
    "transmission_matrix",
]
