"""The semi-implicit integrator: the effective mass and the unconstrained velocity, the position update,
and the state at the end of a step.

Velocity level, with ``h = model.opt.timestep``:

* ``M_eff = M + h diag(kd + h kp + b_j / 2) + K``: the implicit PD and trapezoidal damping terms
  (:class:`jaxmor.sim.forces.Forces`) and ``K``, the velocity-dependent forces' term
  (:func:`velocity_term`), chosen by ``model.opt.implicit_bias``:

  - ``"kahan"`` (default): ``K = (h/2) D`` with ``D = db/du`` the derivative of the bias for the whole tree
    (:attr:`jaxmor.sim.dynamics.Dynamics.bias_jacobian`). The Coriolis, centrifugal and gyroscopic part of
    ``b`` is a quadratic form ``c(u, u)`` (``D(u) v = 2 c(u, v)``), so ``M (u' - u) = h (tau - g) - h c(u, u')``:
    Kahan's (Hirota-Kimura) discretization, the quadratic term evaluated at the old and new velocities.
    It does not dissipate: a torque-free body keeps a modified energy ``E + O(h^2)``.
  - ``"euler"``: ``K = h D``, the linearized backward Euler step, which dissipates kinetic energy.
  - ``"base"``: ``K = h`` times a floating base's gyroscopic block of the robot locked into one rigid
    body (:func:`jaxmor.sim.dynamics.base_velocity_jacobian`), every joint's velocity terms explicit.

  ``M_eff`` is not symmetric; one Gauss-Jordan elimination (:func:`gauss_jordan`, plain array
  operations, no LAPACK) gives ``M_eff^-1`` and ``u_free = u_t + M_eff^-1 h (tau - b(q_t, u_t))``.
* the constraint impulses then give ``u_{t+1}``, and ``q_{t+1} = q_t (+) h (u_{t+1} + u_pos)``
  (:func:`integrate_positions`; ``u_pos`` the position-correction pseudo-velocity).

The guard. A world that cannot run (:func:`runnable`: already flagged, non-finite inputs, coordinates or
velocities beyond :data:`DIVERGENCE_BOUND`, a time step that is not positive) or whose step yields a
non-finite ``q`` or ``u`` keeps its previous state (``q``, ``u``, time, impulses, actuator states), and
``State.nonfinite`` (``State.invalid`` for the time step) is set, per world, so one bad world cannot
poison a batch silently; a flagged world stays where it is until the flag is cleared. A world that cannot
run is stepped at a harmless stand-in (a "double where"), so its derivatives are zero rather than NaN and
a diverged world masked out of a loss leaves the batch's gradient finite. (A step that overflows from
inputs within the bound is still rejected, but its derivatives can be NaN.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.typing import ArrayLike

from jaxmor.actuation.motor_dynamics import MotorState, lugre_coefficients, next_cutout, resistance_factor, thermal_step
from jaxmor.checks import as_vector
from jaxmor.math import quat_integrate
from jaxmor.sim.dynamics import Dynamics, base_velocity_jacobian
from jaxmor.sim.forces import Forces
from jaxmor.types import ActuatorState, Model, State

if TYPE_CHECKING:
    from jaxmor.sim.constraint import Impulses


@struct.dataclass
class FreeMotion:
    """The step without constraints.

    Attributes:
        velocity: (nv,) ``u_free``, the end-of-step velocity without constraint impulses.
        inverse_mass: (nv, nv) ``M_eff^-1``.
    """

    velocity: jax.Array
    inverse_mass: jax.Array


def free_motion(model: Model, state: State, dyn: Dynamics, frc: Forces) -> FreeMotion:
    """The effective mass stage: ``u_free`` and ``M_eff^-1`` (see the module docstring)."""
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    m_eff = dyn.mass + h * jnp.diag(frc.implicit) + velocity_term(model, dyn, state.u)
    inverse_mass = inverse(m_eff)
    return FreeMotion(velocity=state.u + inverse_mass @ (h * (frc.applied - dyn.bias)), inverse_mass=inverse_mass)


def velocity_term(model: Model, dyn: Dynamics, u: jax.Array) -> jax.Array:
    """(nv, nv) the velocity-dependent forces' part of the effective mass, by ``model.opt.implicit_bias``:
    ``(h/2) D`` (``"kahan"``), ``h D`` (``"euler"``), or ``h`` times the floating base's locked-body
    gyroscopic block (``"base"``, :func:`jaxmor.sim.dynamics.base_velocity_jacobian`) [kg, kg m, kg m^2].

    Raises:
        ValueError: ``"kahan"`` or ``"euler"`` with ``dyn.bias_jacobian`` not computed.
    """
    h = jnp.asarray(model.opt.timestep, u.dtype)
    mode = model.opt.implicit_bias
    if mode == "base":
        return h * base_velocity_jacobian(model, dyn.mass, u)
    if dyn.bias_jacobian is None:
        raise ValueError(f"opt.implicit_bias={mode!r} needs Dynamics.bias_jacobian (jaxmor.sim.dynamics.dynamics)")
    return (0.5 * h if mode == "kahan" else h) * dyn.bias_jacobian


@jax.custom_jvp
def inverse(a: jax.Array) -> jax.Array:
    """``a^-1`` by :func:`gauss_jordan`, with the derivative ``d(a^-1) = -a^-1 da a^-1`` (two products: the
    elimination itself is not differentiated, which keeps the compiled gradient small).

    Args:
        a: (n, n) the effective mass (see :func:`gauss_jordan` for the matrices it handles).

    Returns:
        (n, n) its inverse.
    """
    return gauss_jordan(a, jnp.eye(a.shape[0], dtype=a.dtype))


@inverse.defjvp
def _inverse_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    inv = inverse(a)
    return inv, -inv @ da @ inv


#: Largest number of velocities whose elimination is unrolled (above it, a ``fori_loop`` of the same steps).
UNROLL_LIMIT = 64


def gauss_jordan(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a^-1 b`` by Gauss-Jordan elimination without pivoting, in plain array operations (no LAPACK).

    ``a`` is the effective mass: the symmetric positive-definite mass matrix plus positive diagonal terms
    and the velocity-dependent forces' term (``h D`` or ``(h/2) D``), a small non-symmetric perturbation
    while ``h`` times the speeds is small. Elimination
    without pivoting is stable for such matrices (every leading block stays positive definite for the
    symmetric part). Each of the ``n`` steps scales the pivot row and subtracts it from every other row of
    ``[a | b]``: ``n (n + k) n`` multiply-adds, unrolled for ``n <= UNROLL_LIMIT``, a ``fori_loop``
    above (18 velocities: 18 fused steps). Plain operations batch and differentiate like any others, and
    avoid jaxlib 0.10.2's batched LAPACK kernels, which can deadlock a small CPU (``docs/design/cpu-deadlock.md``).

    Args:
        a: (n, n) the matrix.
        b: (n, k) the right-hand sides.

    Returns:
        (n, k) the solution.
    """
    n = a.shape[0]
    aug = jnp.concatenate([a, b], axis=1)

    def eliminate(i, aug):
        pivot_row = jax.lax.dynamic_index_in_dim(aug, i, keepdims=False)
        pivot_row = pivot_row / jax.lax.dynamic_index_in_dim(pivot_row, i, keepdims=False)
        column = jax.lax.dynamic_index_in_dim(aug, i, axis=1, keepdims=False)
        factors = column.at[i].set(0.0)
        aug = aug - factors[:, None] * pivot_row[None, :]
        return jax.lax.dynamic_update_index_in_dim(aug, pivot_row, i, axis=0)

    if n <= UNROLL_LIMIT:
        for i in range(n):
            aug = eliminate(i, aug)
    else:
        aug = jax.lax.fori_loop(0, n, eliminate, aug)
    return aug[:, n:]


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


#: A world whose coordinates or velocities exceed this (in SI units) has diverged: it is stopped before
#: its numbers overflow (in float32 the square of a velocity overflows near 1.8e19), which keeps the
#: gradient of a batch finite when a diverging world is masked out of the loss.
DIVERGENCE_BOUND = 1e8


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


def runnable(model: Model, state: State) -> jax.Array:
    """() bool: whether a world can take a step: not flagged ``nonfinite``, a positive finite time step,
    finite ``q`` and ``u`` within :data:`DIVERGENCE_BOUND`, finite inputs and warm start, and no NaN
    actuation limit. Decided from the inputs alone, so a world that cannot run is stepped at a stand-in
    (:func:`stand_in`) and no NaN or infinite partial derivative of its own values enters the gradient."""
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    ok = ~state.nonfinite & jnp.isfinite(h) & (h > 0)
    for x in (state.q, state.u):
        ok = ok & jnp.all(jnp.isfinite(x) & (jnp.abs(x) < DIVERGENCE_BOUND))
    inputs = (
        state.actuator_torque,
        state.actuator_p_gain,
        state.actuator_d_gain,
        state.actuator_position_target,
        state.actuator_velocity_target,
        state.ctrl,
        state.feedforward_force,
        state.external_force,
        state.pd_p_gain,
        state.pd_d_gain,
        state.pd_position_target,
        state.pd_velocity_target,
        state.bus_voltage,
        state.contact_impulse,
        state.friction_impulse,
        state.limit_impulse,
        state.motor_state.winding_temperature,
        state.motor_state.housing_temperature,
        state.motor_state.current,
        state.motor_state.bristle,
    )
    for x in inputs:
        ok = ok & jnp.all(jnp.isfinite(x))
    return ok & ~jnp.any(jnp.isnan(state.actuation_limit))


def stand_in(model: Model, state: State) -> State:
    """A harmless state of the same shapes, stepped in place of a world that cannot run: the default pose
    (``model.q_default``) at rest, every input and impulse zero, the settings (flags, enforcement) of ``state``."""
    q = jnp.asarray(model.q_default, state.q.dtype)
    zeros = jax.tree.map(lambda x: jnp.zeros_like(x) if jnp.issubdtype(x.dtype, jnp.inexact) else x, state)
    return zeros.replace(q=q)


def finite(state: State) -> jax.Array:
    """() bool: whether ``q`` and ``u`` are finite."""
    return jnp.all(jnp.isfinite(state.q)) & jnp.all(jnp.isfinite(state.u))


def accept(model: Model, state: State, candidate: State, ok: jax.Array) -> State:
    """The guard of the step: ``candidate`` where ``ok``, else ``state`` kept (see the module docstring).

    A rejected step changes only the flags and clears the external forces: ``invalid`` for a time step
    that is not positive and finite, ``nonfinite`` otherwise (the world could not run, or its step went
    non-finite).
    """
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    good_step = jnp.isfinite(h) & (h > 0)
    kept = state.replace(external_force=candidate.external_force)
    out = jax.tree.map(lambda new, old: jnp.where(ok, new, old), candidate, kept)
    return out.replace(
        nonfinite=state.nonfinite | (good_step & ~ok),
        invalid=jnp.where(ok, candidate.invalid, state.invalid) | ~good_step,
    )
