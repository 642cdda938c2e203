"""The motors' work in a step: the torques they apply at its start, their states at its end.

At the start (:func:`begin`, called by the forces stage): each actuator's motor turns at ``w = T u_t``
(transmission matrix ``T``, na x nv: gear ratio on the driven joint, coupling ratios on coupled joints); the
commanded motor torque ``tau_a / G`` (the actuator torque as set plus the actuator PD's) is clipped to the
motor operating region at ``w`` with the State's bus voltages (:mod:`jaxmor.actuation.motor`; unless only
monitored, ``State.mor_enforced`` false) and acts on the joints as ``T^T tau_m``, constant over the step. With
motor dynamics (:mod:`jaxmor.actuation.motor_dynamics`, each optional per actuator) the region is evaluated
with the resistance, flux and derated peak at the winding temperature of the step's start and, with an
inductance, is the set of currents reachable within the step; cogging adds ``T^T tau_cog(T q_t)`` (not
clipped); LuGre friction on the driven joint adds ``-(offset + slope u_t)`` explicitly and ``slope`` to the
implicit diagonal of the effective mass.

At the end (:func:`end`, called by the integrator): the actuator states are completed (average motor speed
over the step, the driven joint's loss torque), the windings heat by ``R(T) i^2`` over the step, the cut-off
follows the winding temperature, the LuGre bristles deflect with the end velocity (the coefficients of the
start, computed once), and a battery's terminal voltage sags with the current the motors drew.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.actuation.backlash import rotor_view
from jaxmor.actuation.motor import (
    DcMotorParameters,
    MotorSaturation,
    MotorTorqueBounds,
    motor_torque_bounds,
    motor_torque_bounds_from_constants,
    motor_validity,
)
from jaxmor.actuation.motor_dynamics import (
    MotorState,
    cogging_torque,
    current_decay,
    derating_factor,
    lugre_coefficients,
    motor_at_temperature,
    next_cutout,
    resistance_factor,
    thermal_step,
)
from jaxmor.actuation.residual import next_history, residual_torque, signals
from jaxmor.model import joint_coordinates
from jaxmor.types import ActuatorState, Model, State


@struct.dataclass
class Drive:
    """What the motors do in a step, decided at its start.

    Attributes:
        joint_torque: (nv,) ``T^T tau_m``, the motors' clipped torques on the joints [N, Nm].
        passive_torque: (nv,) cogging and the explicit LuGre friction on the joints [N, Nm] (zero without them).
        implicit: (nv,) the LuGre slope on the driven joints [N s/m, Nm s/rad], for the effective mass.
        actuator_state: the actuators' states with the fields known at the start (see :func:`actuate`).
        lugre_offset: (na,) the LuGre friction's offset at the start [Nm or N] (zero without LuGre).
        lugre_slope: (na,) its slope on the end velocity [Nm s/rad or N s/m].
        lugre_keep: (na,) the bristles' decay factor over the step.
        history: (na, history - 1, 3) the learned residual's history after the step (:attr:`State.actuator_history`).
    """

    joint_torque: jax.Array
    passive_torque: jax.Array
    implicit: jax.Array
    actuator_state: ActuatorState
    lugre_offset: jax.Array
    lugre_slope: jax.Array
    lugre_keep: jax.Array
    history: jax.Array


def begin(model: Model, state: State) -> Drive:
    """The motors' part of the step that starts at ``state`` (module docstring)."""
    dtype = state.u.dtype
    joint_torque, act_state = actuate(model, state)
    passive = jnp.zeros(model.nv, dtype)
    implicit = jnp.zeros(model.nv, dtype)
    zero = jnp.zeros(model.na, dtype)
    offset, slope, keep = zero, zero, jnp.ones(model.na, dtype)
    dyn = model.actuators.dynamics
    if dyn.any_cogging:
        passive = passive + cogging_joint_torque(model, state)
    if dyn.any_lugre:
        drive = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
        h = jnp.asarray(model.opt.timestep, dtype)
        offset, slope, keep = lugre_coefficients(dyn, state.motor_state.bristle, state.u[drive], h)
        passive = passive.at[drive].add(-offset - slope * state.u[drive])
        implicit = implicit.at[drive].add(slope)
    history = state.actuator_history
    if model.actuators.residual.enabled:
        history = next_history(residual_signals(model, state), history)
    return Drive(joint_torque, passive, implicit, act_state, offset, slope, keep, history)


def end(
    model: Model, state: State, drive: Drive, u_next: jax.Array, joint_loss: jax.Array
) -> tuple[ActuatorState, MotorState, jax.Array]:
    """The motors at the end of the step.

    Args:
        model: the model.
        state: the state at the start of the step.
        drive: the step's :class:`Drive`.
        u_next: (nv,) the end-of-step velocity.
        joint_loss: (nv,) the joints' damping and friction torque over the step [Nm or N].

    Returns:
        ``(actuator_state, motor_state, bus_voltage)``: the completed actuator states, the motors' state
        after the step, and the (na,) bus voltages for the next step (a battery's sagged terminal voltage).
    """
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    idx = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
    lugre_torque = jnp.zeros_like(drive.lugre_offset)
    if model.actuators.dynamics.any_lugre:
        lugre_torque = -(drive.lugre_offset + drive.lugre_slope * u_next[idx])
    act_state = drive.actuator_state.replace(
        average_motor_speed=model.actuators.transmission.astype(dtype) @ (0.5 * (state.u + u_next)),
        joint_loss_torque=joint_loss[idx] + lugre_torque,
    )
    motor_state = _next_motor_state(model, state, drive, u_next[idx], h)
    bus_voltage = state.bus_voltage
    if model.battery.enabled:
        battery = model.battery
        power = jnp.sum(_motor_powers(model, state, act_state))
        voltage = battery_voltage(
            jnp.asarray(battery.open_circuit_voltage, dtype), jnp.asarray(battery.internal_resistance, dtype), power
        )
        bus_voltage = jnp.broadcast_to(voltage, bus_voltage.shape)
    return act_state, motor_state, bus_voltage


def _next_motor_state(model: Model, state: State, drive: Drive, speed_next: jax.Array, h: jax.Array) -> MotorState:
    """The motors' state after the step (:mod:`jaxmor.actuation.motor_dynamics`).

    The current is the step's (``motor_torque / Kt``); the windings heat by ``R(T) i^2`` held over the step
    (:func:`~jaxmor.actuation.motor_dynamics.thermal_step`), the cut-off flag follows the new winding
    temperature, and the bristles deflect to ``a (z + h v')`` at the end velocity ``v'`` of the driven joints.
    """
    act_state = drive.actuator_state
    dyn = model.actuators.dynamics
    dtype = state.u.dtype
    ms = state.motor_state.replace(current=act_state.current)
    if dyn.any_thermal:
        resistance = jnp.asarray(model.actuators.motor.resistance, dtype) * resistance_factor(
            dyn, ms.winding_temperature
        )
        power = jnp.where(act_state.valid, resistance * act_state.current**2, 0.0)
        winding, housing = thermal_step(dyn, ms.winding_temperature, ms.housing_temperature, power, h)
        ms = ms.replace(
            winding_temperature=winding, housing_temperature=housing, cutout=next_cutout(dyn, winding, ms.cutout)
        )
    if dyn.any_lugre:
        on = np.asarray(dyn.lugre, bool)
        # The continuous model keeps |z| <= F_S / sigma0; a step that starts at rest (no decay yet) under a large
        # acceleration can deflect the bristles past it, so the stored deflection is projected back onto that set.
        reach = jnp.asarray(dyn.lugre_static, dtype) / jnp.where(on, jnp.asarray(dyn.lugre_stiffness, dtype), 1.0)
        bristle = jnp.clip(drive.lugre_keep * (ms.bristle + h * speed_next), -reach, reach)
        ms = ms.replace(bristle=jnp.where(on, bristle, ms.bristle))
    return ms


def _motor_now(model: Model, state: State) -> DcMotorParameters:
    """The motors' constants now: the state's bus voltages and, for motors with a thermal model, the
    resistance and flux at the winding temperature (:mod:`jaxmor.actuation.motor_dynamics`)."""
    motor = model.actuators.motor.replace(bus_voltage=state.bus_voltage)
    dyn = model.actuators.dynamics
    if not dyn.any_thermal:
        return motor
    return motor_at_temperature(motor, dyn, state.motor_state.winding_temperature)


def _region(
    model: Model, state: State, motor: DcMotorParameters, speed: jax.Array
) -> tuple[MotorTorqueBounds, jax.Array]:
    """The region of the step at motor speeds ``speed``: the quasi-static one, with the peak torque derated for
    the winding temperature and the voltage band narrowed to the currents an inductance can reach within
    the step (:mod:`jaxmor.actuation.motor_dynamics`). Returns the bounds and the derating factor (na,)."""
    dyn = model.actuators.dynamics
    dtype = speed.dtype
    derating = jnp.ones_like(speed)
    if not (dyn.any_thermal or dyn.any_inductive):
        return motor_torque_bounds(motor, speed), derating
    stall, damping, peak = motor.stall_torque(), motor.back_emf_damping(), jnp.asarray(motor.peak_torque, dtype)
    if dyn.any_thermal:
        ms = state.motor_state
        derating = derating_factor(dyn, ms.winding_temperature, ms.cutout)
        limited = jnp.isfinite(peak) & (derating < 1.0)
        peak = jnp.where(limited, jnp.where(limited, peak, 1.0) * derating, peak)
    offset = None
    if dyn.any_inductive:
        h = jnp.asarray(model.opt.timestep, dtype)
        carried = current_decay(dyn, jnp.asarray(motor.resistance, dtype), h)
        stall, damping = (1.0 - carried) * stall, (1.0 - carried) * damping
        offset = carried * jnp.asarray(motor.torque_constant, dtype) * state.motor_state.current
    bounds = motor_torque_bounds_from_constants(stall, damping, peak, speed, offset)
    if dyn.any_thermal:
        temperature = int(MotorSaturation.TEMPERATURE)
        peak_label = int(MotorSaturation.PEAK_TORQUE)
        derated = derating < 1.0
        bounds = bounds.replace(
            lower_saturation=jnp.where(
                derated & (bounds.lower_saturation == peak_label), temperature, bounds.lower_saturation
            ),
            upper_saturation=jnp.where(
                derated & (bounds.upper_saturation == peak_label), temperature, bounds.upper_saturation
            ),
        )
    return bounds, derating


def motor_speeds(model: Model, u: jax.Array) -> jax.Array:
    """(na,) motor speeds ``T u`` [rad/s] at generalized velocities ``u``."""
    return model.actuators.transmission.astype(u.dtype) @ u


def actuator_torque_bounds(model: Model, state: State) -> tuple[jax.Array, jax.Array]:
    """Admissible actuator torques now, at the gear outputs: the motor region at the current motor
    speeds (a rotor's where the actuator has backlash) times the gear ratio. Exactly the bounds the next step clips
    to; ``(-inf, inf)`` in monitor mode; ``(0, 0)`` for an actuator that is not valid now (it applies no torque).

    Returns:
        ``(lower, upper)``, each (na,) [Nm or N].
    """
    return torque_bounds_at(model, rotor_view(model, state))


def torque_bounds_at(model: Model, view: State) -> tuple[jax.Array, jax.Array]:
    """:func:`actuator_torque_bounds` of the state whose view (:func:`jaxmor.actuation.backlash.rotor_view`) is
    ``view``."""
    bounds, _ = _region(model, view, _motor_now(model, view), motor_speeds(model, view.u))
    gear = model.actuators.gear_ratio.astype(view.u.dtype)
    inf = jnp.asarray(jnp.inf, view.u.dtype)
    lower = jnp.where(view.mor_enforced, gear * bounds.lower, -inf)
    upper = jnp.where(view.mor_enforced, gear * bounds.upper, inf)
    valid = actuator_validity(model, view)
    return jnp.where(valid, lower, 0.0), jnp.where(valid, upper, 0.0)


def actuator_validity(model: Model, state: State) -> jax.Array:
    """(na,) bool: whether each actuator can act now: its motor is valid with the state's bus voltage
    (:func:`jaxmor.actuation.motor.motor_validity`, the rule the setters apply outside ``jit``) and its gear ratio is
    positive and finite. Values that only exist under ``jit`` (a traced bus voltage, per-world motor
    constants) are checked here, every step."""
    valid = jnp.asarray(True)
    for _, _, ok in motor_validity(_motor_now(model, state), jnp):
        valid = valid & ok
    gear = model.actuators.gear_ratio
    return valid & jnp.isfinite(gear) & (gear > 0)


#: The motor that stands in for an invalid one while the bounds are computed (its torque is discarded), so
#: that no infinity or NaN of the invalid constants enters the values or the gradients.
_STAND_IN = DcMotorParameters(resistance=1.0, torque_constant=1.0, velocity_constant=1.0, bus_voltage=1.0)


def actuator_joint_q_index(model: Model) -> np.ndarray:
    """(na,) index in ``q`` of each actuator's driven joint (a 1-DoF joint: one coordinate per velocity)."""
    q_of_v = dict(zip(model.joint_u, model.joint_q, strict=True))
    return np.array([q_of_v[v] for v in model.actuators.joint_v_index], dtype=np.int32)


def actuator_pd(model: Model, state: State) -> jax.Array:
    """(na,) torque of the actuator PD at the gear outputs [Nm or N], explicit at the start of the step:
    ``kp (position_target - q_j) + kd (velocity_target - u_j)`` on each actuator's driven joint
    (:func:`jaxmor.set_actuator_pd_gains`)."""
    q_j = state.q[actuator_joint_q_index(model)]
    u_j = state.u[np.asarray(model.actuators.joint_v_index, dtype=np.int32)]
    return state.actuator_p_gain * (state.actuator_position_target - q_j) + state.actuator_d_gain * (
        state.actuator_velocity_target - u_j
    )


def commanded_actuator_torque(model: Model, state: State) -> jax.Array:
    """(na,) actuator torques the step commands at the gear outputs [Nm or N], before the region clips
    them: the torques as set plus the actuator PD's (:func:`actuator_pd`) plus, where an actuator has one, its drive
    controller's held torque (``State.controller_torque``, :mod:`jaxmor.actuation.controller`)."""
    torque = state.actuator_torque + actuator_pd(model, state)
    if model.actuators.controller.any_active:
        torque = torque + jnp.where(np.asarray(model.actuators.controller.active, bool), state.controller_torque, 0.0)
    return torque


def residual_signals(model: Model, state: State) -> jax.Array:
    """(na, 3) the signals the learned residual reads at the start of the step
    (:func:`jaxmor.actuation.residual.signals`: commanded motor torque before the residual, motor speed, motor
    angle)."""
    act = model.actuators
    dtype = state.u.dtype
    command = commanded_actuator_torque(model, state)
    joints = joint_coordinates(model, state.q)
    return signals(act.transmission.astype(dtype), act.gear_ratio.astype(dtype), command, state.u, joints)


def actuate(model: Model, state: State) -> tuple[jax.Array, ActuatorState]:
    """The actuation of one step, at the velocities ``u_t`` of its beginning.

    Motor speeds ``w = T u_t``; commanded motor torques ``tau_a / G`` (``tau_a`` the actuator torques as
    set plus the actuator PD's, :func:`commanded_actuator_torque`) plus the learned residual where the model has
    one (:mod:`jaxmor.actuation.residual`); motor torques clipped to the
    region at ``w`` with the state's bus voltages (or as commanded in monitor mode); joint torques
    ``T^T tau_m``, constant over the step. An actuator that is not valid now (:func:`actuator_validity`:
    e.g. a negative bus voltage or a zero gear ratio set under ``jit``) applies no torque, whatever the
    mode, and its ``ActuatorState.valid`` is false.

    Returns:
        ``(joint_torque (nv,), actuator_state)``. The actuator state holds the fields known before
        integration (``motor_speed``, ``commanded_motor_torque``, ``motor_torque``, ``saturation``,
        ``valid``); ``average_motor_speed`` is set to ``motor_speed`` and ``joint_loss_torque`` to zero
        until the step completes them.
    """
    dtype = state.u.dtype
    act = model.actuators
    transmission = act.transmission.astype(dtype)
    speed = transmission @ state.u
    valid = actuator_validity(model, state)
    gear = act.gear_ratio.astype(dtype)
    commanded = jnp.where(valid, commanded_actuator_torque(model, state) / jnp.where(valid, gear, 1.0), 0.0)
    if act.residual.enabled:
        learned = residual_torque(act.residual, residual_signals(model, state), state.actuator_history)
        commanded = jnp.where(valid, commanded + learned, 0.0)
    motor = _motor_now(model, state)
    motor = jax.tree.map(lambda m, s: jnp.where(valid, m, s), motor, _STAND_IN)
    bounds, derating = _region(model, state, motor, speed)
    clipped, saturation = bounds.clip(commanded)
    motor_torque = jnp.where(valid, jnp.where(state.mor_enforced, clipped, commanded), 0.0)
    joint_torque = transmission.T @ motor_torque
    current = jnp.where(valid, motor_torque / jnp.asarray(motor.torque_constant, dtype), 0.0)
    states = ActuatorState(
        motor_speed=speed,
        average_motor_speed=speed,
        commanded_motor_torque=commanded,
        motor_torque=motor_torque,
        joint_loss_torque=jnp.zeros_like(speed),
        saturation=jnp.where(valid, saturation, int(MotorSaturation.NONE)).astype(jnp.int32),
        valid=valid,
        current=current,
        voltage=jnp.where(valid, _terminal_voltage(model, state, motor, speed, current), 0.0),
        derating=derating,
    )
    return joint_torque, states


def _terminal_voltage(model: Model, state: State, motor: DcMotorParameters, speed: jax.Array, current: jax.Array):
    """(na,) the voltage the driver holds over the step [V] to make ``current``: ``R i + w / Kv``, or with an
    inductance ``R (i' - e i) / (1 - e) + w / Kv`` (the zero-order-hold solution solved for the voltage); where the
    region is enforced, clamped to the bus ``[-V_bus, V_bus]``: past the overspeed limit the braking the model
    caps at the peak would need more than the bus, and the driver is then saturated at it
    (:attr:`jaxmor.ActuatorState.voltage`)."""
    dtype = speed.dtype
    resistance = jnp.asarray(motor.resistance, dtype)
    emf = speed / jnp.asarray(motor.velocity_constant, dtype)
    dyn = model.actuators.dynamics
    if not dyn.any_inductive:
        needed = resistance * current + emf
    else:
        carried = current_decay(dyn, resistance, jnp.asarray(model.opt.timestep, dtype))
        needed = resistance * (current - carried * state.motor_state.current) / (1.0 - carried) + emf
    bus = jnp.asarray(motor.bus_voltage, dtype)
    return jnp.where(state.mor_enforced, jnp.clip(needed, -bus, bus), needed)


def cogging_joint_torque(model: Model, state: State) -> jax.Array:
    """(nv,) generalized force of the motors' cogging at ``q_t``
    (:func:`jaxmor.actuation.motor_dynamics.cogging_torque` at
    the motor angles ``T q``, mapped by ``T^T``; not clipped by the region) [Nm or N]."""
    transmission = model.actuators.transmission.astype(state.q.dtype)
    angle = transmission @ joint_coordinates(model, state.q)
    return transmission.T @ cogging_torque(model.actuators.dynamics, angle)


def _motor_powers(model: Model, state: State, act_state) -> jax.Array:
    """(na,) the electrical power [W] each motor took from the bus over a step.

    Each motor's winding current is ``i = tau_m / Kt``; it takes ``(R i + w / Kv) i`` (``w`` the step's average
    motor speed). With a thermal model or an inductance the power is the driver's voltage times the current,
    ``V i`` (:attr:`ActuatorState.voltage`: the resistance at the winding temperature and the inductance's stored
    energy included). 0 where the actuator is invalid, negative where a braking motor returns energy.
    """
    dtype = state.u.dtype
    valid = act_state.valid
    dyn = model.actuators.dynamics
    if dyn.any_thermal or dyn.any_inductive:
        return jnp.where(valid, act_state.voltage * act_state.current, 0.0)
    motor = model.actuators.motor
    kt = jnp.asarray(motor.torque_constant, dtype)
    current = jnp.where(valid, act_state.motor_torque / jnp.where(valid, kt, 1.0), 0.0)
    emf = act_state.average_motor_speed / jnp.where(valid, jnp.asarray(motor.velocity_constant, dtype), 1.0)
    return jnp.where(valid, (jnp.asarray(motor.resistance, dtype) * current + emf) * current, 0.0)


def battery_voltage(open_circuit_voltage: jax.Array, internal_resistance: jax.Array, power: jax.Array) -> jax.Array:
    """() the terminal voltage [V] of a battery delivering ``power``, in ``[V_oc / 2, V_oc]`` for any resistance.

    The terminal voltage ``V`` and the current ``I`` satisfy both the battery, ``V = V_oc - R_int I``, and the
    load, ``V I = P``, solved together (implicitly in ``V``): ``V^2 - V_oc V + R_int P = 0``, whose upper root is
    ``V = (V_oc + sqrt(V_oc^2 - 4 R_int P)) / 2`` (``V = V_oc`` at ``P = 0`` or ``R_int = 0``; for small
    ``R_int P / V_oc^2`` it is ``V_oc - R_int P / V_oc``). A demand beyond the battery's most power,
    ``P > V_oc^2 / (4 R_int)``, gets that most, at ``V = V_oc / 2``. Returned power (``P < 0``, braking motors)
    leaves the bus at ``V_oc`` (the driver's brake resistor takes it).

    Args:
        open_circuit_voltage: () ``V_oc`` [V] (``> 0``).
        internal_resistance: () ``R_int`` [Ohm] (``>= 0``).
        power: () ``P`` [W] the motors took from the bus.

    Returns:
        () ``V`` [V]; differentiable (its derivative in ``R_int`` and ``P`` is nonzero for
        ``0 < P < V_oc^2 / (4 R_int)``).
    """
    discriminant = open_circuit_voltage**2 - 4.0 * internal_resistance * jnp.maximum(power, 0.0)
    inside = discriminant > 0.0
    root = jnp.where(inside, jnp.sqrt(jnp.where(inside, discriminant, 1.0)), 0.0)
    return 0.5 * (open_circuit_voltage + root)
