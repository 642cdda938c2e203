"""Every generalized force of a step: DC-motor actuators (clipped to their regions), the built-in PD,
the feed-forward force, affine actuators, external forces and the passive joint losses.

Actuators. An actuator's motor turns at ``w_m = G u_j + sum_c r_c u_c`` (gear ratio ``G`` on the
driven joint, coupling ratios ``r_c`` on coupled joints); for all actuators at once ``w_m = T u`` with
the transmission matrix ``T`` (na x nv). A motor torque ``tau_m`` acts on the joints with
``T^T tau_m``. Actuator torques are commanded at the gear output (``G tau_m``), and every step clips
the motor torque to the motor operating region at the motor speed of the beginning of the step
(:func:`jaxmor.actuation.motor.clip_motor_torque`) with the State's bus voltages, unless the region is only
monitored (``State.mor_enforced`` false).

Composition (the actuator spec's "What happens in a simulation step"), at ``q_t, u_t``::

    tau = clamp(tau_ff + tau_PD_explicit, +-limit) + T^T tau_m + tau_affine + tau_ext + tau_spring - b_j u_t
    tau_PD_explicit = kp (q_ref - q_t - h u_t) + kd (u_ref - u_t)
    tau_spring = k (q_spring - q_t - h u_t)

(the PD torque at ``t+1`` with ``u_t`` for ``u_{t+1}``; the joint springs, ``Model.dof_stiffness`` ``k`` and
``Model.dof_springref`` ``q_spring``, the same way), with ``b_j`` the joint's plus its actuator's output
damping. The rest of the PD and spring torques, ``-(kd + h kp + h k) du``, and of the trapezoidal damping,
``-(b_j / 2) du`` (``du = u_{t+1} - u_t``), are implicit: :class:`Forces` carries their diagonal for
the effective mass. The region clips only actuator torques; the effort limits clamp only the
feed-forward and PD torques.

The actuator PD (``State.actuator_p_gain`` etc.) is a different controller: it commands the motors. Its
torque ``kp_a (q_ref,a - q_j) + kd_a (u_ref,a - u_j)`` on each actuator's driven joint is computed
explicitly at ``q_t, u_t``, added to the actuator torque as set, and the sum is what the region clips
(the spec's advice for a position-target policy: compute the PD explicitly, send it as actuator torque).

Motor dynamics (:mod:`jaxmor.actuation.motor_dynamics`, each optional per actuator): the region of a motor with a
thermal model is evaluated with its resistance, flux and derated peak at the winding temperature of the step's
start, and with an inductance it is the set of currents reachable within the step; cogging adds
``T^T tau_cog(T q_t)`` to the applied force (not clipped), and LuGre friction on the driven joint adds
``-(offset + slope u_t)`` to it and ``slope`` to the implicit diagonal
(:func:`jaxmor.actuation.motor_dynamics.lugre_coefficients`).

Output damping and friction are kept per actuator and added to the driven joint's own damping and
friction here (:func:`joint_damping`, :func:`joint_friction`), so replacing the actuators never leaves
stale losses on a joint.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.actuation.affine import affine_generalized_force
from jaxmor.actuation.motor import (
    DcMotorParameters,
    MotorSaturation,
    MotorTorqueBounds,
    motor_torque_bounds,
    motor_torque_bounds_from_constants,
    motor_validity,
)
from jaxmor.actuation.motor_dynamics import (
    cogging_torque,
    current_decay,
    derating_factor,
    lugre_coefficients,
    motor_at_temperature,
)
from jaxmor.types import ActuatorState, Model, State


@struct.dataclass
class Forces:
    """The forces stage's result: what the integrator needs of a step's generalized forces.

    Attributes:
        applied: (nv,) explicit generalized force of the step [N, Nm], the bias excluded (see the module
            docstring).
        implicit: (nv,) the diagonal ``kd + h kp + h k + b_j / 2`` of the implicit PD, spring and damping
            terms [N s/m, Nm s/rad]; the effective mass adds ``h`` times it.
        damping: (nv,) viscous damping of each joint, its actuator's output damping included.
        friction: (nv,) Coulomb friction of each joint, its actuator's output friction included.
        actuator_state: the actuators' states, with the fields known before integration (see
            :func:`actuate`).
    """

    applied: jax.Array
    implicit: jax.Array
    damping: jax.Array
    friction: jax.Array
    actuator_state: ActuatorState


def _joint_coordinates(model: Model, q: jax.Array) -> jax.Array:
    """(nv,) position of each 1-DoF joint at its velocity index; zero on a floating base."""
    v_idx = np.array(model.joint_u, dtype=np.int32)
    return jnp.zeros(model.nv, q.dtype).at[v_idx].set(q[np.array(model.joint_q, dtype=np.int32)])


def _joint_mask(model: Model, dtype) -> jax.Array:
    """(nv,) 1 on 1-DoF joints, 0 on a floating base."""
    mask = np.zeros(model.nv)
    mask[np.array(model.joint_u, dtype=np.int32)] = 1.0
    return jnp.asarray(mask, dtype)


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
    speeds times the gear ratio. Exactly the bounds the next step clips to; ``(-inf, inf)`` in
    monitor mode; ``(0, 0)`` for an actuator that is not valid now (it applies no torque).

    Returns:
        ``(lower, upper)``, each (na,) [Nm or N].
    """
    bounds, _ = _region(model, state, _motor_now(model, state), motor_speeds(model, state.u))
    gear = model.actuators.gear_ratio.astype(state.u.dtype)
    inf = jnp.asarray(jnp.inf, state.u.dtype)
    lower = jnp.where(state.mor_enforced, gear * bounds.lower, -inf)
    upper = jnp.where(state.mor_enforced, gear * bounds.upper, inf)
    valid = actuator_validity(model, state)
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
    them: the torques as set plus the actuator PD's (:func:`actuator_pd`)."""
    return state.actuator_torque + actuator_pd(model, state)


def actuate(model: Model, state: State) -> tuple[jax.Array, ActuatorState]:
    """The actuation of one step, at the velocities ``u_t`` of its beginning.

    Motor speeds ``w = T u_t``; commanded motor torques ``tau_a / G`` (``tau_a`` the actuator torques as
    set plus the actuator PD's, :func:`commanded_actuator_torque`); motor torques clipped to the
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
    inductance ``R (i' - e i) / (1 - e) + w / Kv`` (the zero-order-hold solution solved for the voltage)."""
    dtype = speed.dtype
    resistance = jnp.asarray(motor.resistance, dtype)
    emf = speed / jnp.asarray(motor.velocity_constant, dtype)
    dyn = model.actuators.dynamics
    if not dyn.any_inductive:
        return resistance * current + emf
    carried = current_decay(dyn, resistance, jnp.asarray(model.opt.timestep, dtype))
    return resistance * (current - carried * state.motor_state.current) / (1.0 - carried) + emf


def cogging_joint_torque(model: Model, state: State) -> jax.Array:
    """(nv,) generalized force of the motors' cogging at ``q_t``
    (:func:`jaxmor.actuation.motor_dynamics.cogging_torque` at
    the motor angles ``T q``, mapped by ``T^T``; not clipped by the region) [Nm or N]."""
    transmission = model.actuators.transmission.astype(state.q.dtype)
    angle = transmission @ _joint_coordinates(model, state.q)
    return transmission.T @ cogging_torque(model.actuators.dynamics, angle)


def joint_damping(model: Model) -> jax.Array:
    """(nv,) total viscous damping of each joint: its own plus its actuator's output damping."""
    act = model.actuators
    idx = np.asarray(act.joint_v_index, dtype=np.int32)
    return model.dof_damping.at[idx].add(act.output_damping.astype(model.dof_damping.dtype))


def joint_friction(model: Model) -> jax.Array:
    """(nv,) total Coulomb friction of each joint: its own plus its actuator's output friction."""
    act = model.actuators
    idx = np.asarray(act.joint_v_index, dtype=np.int32)
    return model.dof_friction.at[idx].add(act.output_friction.astype(model.dof_friction.dtype))


def affine_joint_force(model: Model, state: State) -> jax.Array:
    """(nv,) generalized force of the affine actuators at the state's ``ctrl``, ``q`` and ``u``."""
    return affine_generalized_force(model.affine, state.ctrl, state.q, state.u, model.nv)


def explicit_pd(model: Model, state: State) -> jax.Array:
    """(nv,) explicit part of the built-in PD torque: ``kp (q_ref - q - h u) + kd (u_ref - u)`` on joints."""
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    q_joint = _joint_coordinates(model, state.q)
    mask = _joint_mask(model, state.u.dtype)
    pd = state.pd_p_gain * (state.pd_position_target - q_joint - h * state.u) + state.pd_d_gain * (
        state.pd_velocity_target - state.u
    )
    return pd * mask


def joint_spring(model: Model, state: State) -> jax.Array:
    """(nv,) explicit part of the joint springs' torque: ``k (springref - q - h u)`` on joints [Nm or N]."""
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    stiffness = model.dof_stiffness.astype(state.u.dtype) * _joint_mask(model, state.u.dtype)
    return stiffness * (model.dof_springref.astype(state.u.dtype) - _joint_coordinates(model, state.q) - h * state.u)


def clamped_force(model: Model, state: State) -> jax.Array:
    """(nv,) ``clamp(feedforward_force + explicit PD, +-actuation_limit)``."""
    limit = state.actuation_limit
    return jnp.clip(state.feedforward_force + explicit_pd(model, state), -limit, limit)


def generalized_force(model: Model, state: State) -> jax.Array:
    """What the spec's ``getGeneralizedForce()`` returns (nv,) [N, Nm].

    The effort-clamped feed-forward force plus the explicit built-in PD torque, plus the actuator
    torques clipped to their regions at the current motor speeds (mapped by ``T^T``), plus the
    affine actuators' force. Passive damping, springs, friction and contacts are excluded; the PD
    part is approximate because the PD is integrated implicitly.
    """
    joint_torque, _ = actuate(model, state)
    return clamped_force(model, state) + joint_torque + affine_joint_force(model, state)


def forces(model: Model, state: State) -> Forces:
    """The forces stage: the generalized forces of the step that starts at ``state`` (module docstring).

    Args:
        model: the model.
        state: the world's state at the beginning of the step.

    Returns:
        :class:`Forces`.
    """
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    act_torque, act_state = actuate(model, state)
    damping = joint_damping(model).astype(dtype)
    applied = clamped_force(model, state) + act_torque + affine_joint_force(model, state) + state.external_force
    applied = applied + joint_spring(model, state) - damping * state.u
    stiffness = model.dof_stiffness.astype(dtype)
    implicit = (state.pd_d_gain + h * state.pd_p_gain + h * stiffness) * _joint_mask(model, dtype) + 0.5 * damping
    dyn = model.actuators.dynamics
    if dyn.any_cogging:
        applied = applied + cogging_joint_torque(model, state)
    if dyn.any_lugre:
        drive = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
        offset, slope, _ = lugre_coefficients(dyn, state.motor_state.bristle, state.u[drive], h)
        applied = applied.at[drive].add(-offset - slope * state.u[drive])
        implicit = implicit.at[drive].add(slope)
    return Forces(
        applied=applied,
        implicit=implicit,
        damping=damping,
        friction=joint_friction(model).astype(dtype),
        actuator_state=act_state,
    )
