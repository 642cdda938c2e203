"""Stage 7, the integrator: the position update and the state at the end of a step.

Velocity level, with ``h = model.opt.timestep``: the free motion (:mod:`jaxmor.sim.free_motion`) and the
constraint impulses give ``u_{t+1}``, and ``q_{t+1} = q_t (+) h (u_{t+1} + u_pos)``
(:func:`integrate_positions`; ``u_pos`` the position-correction pseudo-velocity).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.actuation.motor_dynamics import MotorState, lugre_coefficients, next_cutout, resistance_factor, thermal_step
from jaxmor.checks import as_vector
from jaxmor.math import quat_integrate
from jaxmor.sim.constraint import Impulses
from jaxmor.sim.forces import Forces
from jaxmor.types import ActuatorState, Model, State


def integrate_positions(model: Model, q: jax.Array, u: jax.Array, dt: ArrayLike) -> jax.Array:
    """The position update ``q (+) dt u``.

    Joint coordinates advance by ``dt u``; a free base's position by ``dt v`` (world frame) and its
    quaternion by the exponential map of the world-frame rotation ``dt w``.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.
        dt: time step [s].

    Returns:
        (nq,) the updated coordinates, with unit quaternions.

    Raises:
        ArgumentError: wrong shapes.
    """
    q = as_vector(q, model.nq, "q")
    u = as_vector(u, model.nv, "u", q.dtype)
    q_next = q
    if model.nb == 0:
        return q
    if model.nj:
        q_next = q_next.at[np.array(model.joint_q, dtype=np.int32)].add(dt * u[np.array(model.joint_u, dtype=np.int32)])
    for qs, vs in zip(model.free_q, model.free_u, strict=True):
        q_next = q_next.at[qs : qs + 3].add(dt * u[vs : vs + 3])
        q_next = q_next.at[qs + 3 : qs + 7].set(quat_integrate(q[qs + 3 : qs + 7], u[vs + 3 : vs + 6], dt))
    return q_next


def advance(model: Model, state: State, frc: Forces, u_next: jax.Array, u_pos: jax.Array, impulses: Impulses) -> State:
    """The state at the end of the step, as computed: the step's last stage before :func:`accept`.

    Integrates the positions, adds the time step to the time with compensated (Kahan) summation, stores
    the impulses (the next warm start), completes the actuator states (average motor speed, joint loss
    torque) and clears the external forces.

    Args:
        model: the model.
        state: the state at the beginning of the step.
        frc: the step's forces.
        u_next: (nv,) the end-of-step velocity.
        u_pos: (nv,) the position-correction pseudo-velocity.
        impulses: the velocity problem's impulses.
    """
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    q, u = state.q, state.u
    dofs = np.array(model.joint_u, dtype=np.int32)
    friction_impulse = jnp.zeros(model.nv, dtype).at[dofs].set(impulses.friction)
    limit_impulse = jnp.zeros(model.nv, dtype).at[dofs].set(impulses.limit)
    loss = -0.5 * frc.damping * (u + u_next) + friction_impulse / h
    drive = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
    motor_state, lugre_torque = advance_motors(model, state, frc.actuator_state, u_next, h)
    act_state = frc.actuator_state.replace(
        average_motor_speed=model.actuators.transmission.astype(dtype) @ (0.5 * (u + u_next)),
        joint_loss_torque=loss[drive] + lugre_torque,
    )
    increment = h - state.time_compensation
    time = state.time + increment
    bus_voltage = state.bus_voltage
    if model.battery.enabled:
        battery = model.battery
        current = supply_current(model, state, act_state)
        sag = (
            jnp.asarray(battery.open_circuit_voltage, dtype) - jnp.asarray(battery.internal_resistance, dtype) * current
        )
        bus_voltage = jnp.broadcast_to(sag, bus_voltage.shape)
    return state.replace(
        bus_voltage=bus_voltage,
        q=integrate_positions(model, q, u_next + u_pos, h),
        u=u_next,
        time=time,
        time_compensation=(time - state.time) - increment,
        actuator_state=act_state,
        motor_state=motor_state,
        external_force=jnp.zeros_like(state.external_force),
        contact_impulse=impulses.contact,
        friction_impulse=friction_impulse,
        limit_impulse=limit_impulse,
        invalid=state.invalid | ~jnp.all(frc.actuator_state.valid),
    )


def advance_motors(
    model: Model, state: State, act_state: ActuatorState, u_next: jax.Array, h: jax.Array
) -> tuple[MotorState, jax.Array]:
    """The motors' state after the step (:mod:`jaxmor.actuation.motor_dynamics`) and the LuGre torque on each driven
    joint
    over it (na,) [Nm or N, zero without LuGre].

    The current is the step's (``motor_torque / Kt``); the windings heat by ``R(T) i^2`` held over the step
    (:func:`jaxmor.actuation.motor_dynamics.thermal_step`), the cut-off flag follows the new winding temperature, and
    the bristles deflect to ``a (z + h v')`` at the end velocity ``v'`` of the driven joints.
    """
    ms = state.motor_state
    dyn = model.actuators.dynamics
    dtype = state.u.dtype
    ms = ms.replace(current=act_state.current)
    lugre_torque = jnp.zeros_like(act_state.current)
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
        drive = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
        offset, slope, keep = lugre_coefficients(dyn, ms.bristle, state.u[drive], h)
        lugre_torque = -(offset + slope * u_next[drive])
        on = np.asarray(dyn.lugre, bool)
        # The continuous model keeps |z| <= F_S / sigma0; a step that starts at rest (no decay yet) under a large
        # acceleration can deflect the bristles past it, so the stored deflection is projected back onto that set.
        reach = jnp.asarray(dyn.lugre_static, dtype) / jnp.where(on, jnp.asarray(dyn.lugre_stiffness, dtype), 1.0)
        bristle = jnp.clip(keep * (ms.bristle + h * u_next[drive]), -reach, reach)
        ms = ms.replace(bristle=jnp.where(on, bristle, ms.bristle))
    return ms, lugre_torque


def supply_current(model: Model, state: State, act_state) -> jax.Array:
    """() the current [A] the DC motors drew from their supply over a step.

    Each motor's winding current is ``i = tau_m / Kt``; it takes the electrical power ``(R i + w / Kv) i``
    (``w`` the step's average motor speed), drawn from the bus at its voltage, so the supply current is the
    sum of ``(R i + w / Kv) i / V_bus`` (negative when braking motors return energy). With a thermal model or
    an inductance the power is the driver's voltage times the current, ``V i`` (:attr:`ActuatorState.voltage`).
    An invalid actuator draws nothing.
    """
    dtype = state.u.dtype
    valid = act_state.valid
    dyn = model.actuators.dynamics
    if dyn.any_thermal or dyn.any_inductive:
        # The driver's voltage times the winding current: the resistance at the winding temperature and the
        # inductance's stored energy included.
        power = act_state.voltage * act_state.current
        return jnp.sum(jnp.where(valid, power / jnp.where(valid, state.bus_voltage, 1.0), 0.0))
    motor = model.actuators.motor
    kt = jnp.asarray(motor.torque_constant, dtype)
    current = jnp.where(valid, act_state.motor_torque / jnp.where(valid, kt, 1.0), 0.0)
    emf = act_state.average_motor_speed / jnp.where(valid, jnp.asarray(motor.velocity_constant, dtype), 1.0)
    power = (jnp.asarray(motor.resistance, dtype) * current + emf) * current
    return jnp.sum(jnp.where(valid, power / jnp.where(valid, state.bus_voltage, 1.0), 0.0))
