"""Making a world's :class:`State`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxmor.collision import contact_count
from jaxmor.errors import ArgumentError
from jaxmor.model import joint_dof_indices, neutral_q
from jaxmor.types import ActuatorState, Model, State


def zero_actuator_state(na: int, dtype=None) -> ActuatorState:
    """Actuator states of a world that has not stepped yet: all zero, saturation NONE."""
    zero = jnp.zeros((na,), dtype)
    return ActuatorState(
        motor_speed=zero,
        average_motor_speed=zero,
        commanded_motor_torque=zero,
        motor_torque=zero,
        joint_loss_torque=zero,
        saturation=jnp.zeros((na,), jnp.int32),
    )


def _vector(x, n: int, name: str, dtype):
    arr = jnp.asarray(x, dtype=dtype)
    if arr.shape != (n,):
        raise ArgumentError(f"{name} must have shape ({n},), got {arr.shape}")
    return arr


def init_state(model: Model, q: jnp.ndarray | None = None, u: jnp.ndarray | None = None) -> State:
    """A world's state at time 0: at rest in the neutral configuration unless ``q``/``u`` are given.

    Actuator torques and controls are zero, bus voltages are the robot description's, and the motor
    operating regions are enforced.

    Args:
        model: the model.
        q: (nq,) generalized coordinates; default :func:`jaxmor.neutral_q`.
        u: (nv,) generalized velocities; default zero.

    Returns:
        The state, in the model's floating dtype.

    Raises:
        ArgumentError: ``q`` or ``u`` has the wrong shape.
    """
    dtype = model.body_mass.dtype
    q = neutral_q(model) if q is None else _vector(q, model.nq, "q", dtype)
    u = jnp.zeros((model.nv,), dtype) if u is None else _vector(u, model.nv, "u", dtype)
    zero_v = jnp.zeros((model.nv,), dtype)
    return State(
        q=q,
        u=u,
        time=jnp.zeros((), dtype),
        actuator_torque=jnp.zeros((model.na,), dtype),
        bus_voltage=jnp.asarray(model.actuators.motor.bus_voltage, dtype),
        mor_enforced=jnp.asarray(True),
        actuator_state=zero_actuator_state(model.na, dtype),
        ctrl=jnp.zeros((model.nu,), dtype),
        generalized_force=zero_v,
        pd_p_gain=zero_v,
        pd_d_gain=zero_v,
        pd_position_target=zero_v,
        pd_velocity_target=zero_v,
        actuation_limit=jnp.asarray(model.dof_effort_limit, dtype),
        external_force=zero_v,
        contact_impulse=jnp.zeros((contact_count(model), 3), dtype),
        friction_impulse=zero_v,
        limit_impulse=zero_v,
        nonfinite=jnp.asarray(False),
    )


def _is_concrete(x) -> bool:
    """Whether ``x`` holds values (outside ``jit``), so value checks can run."""
    return not isinstance(x, jax.core.Tracer)


def _finite_vector(x, n: int, name: str, dtype) -> jnp.ndarray:
    arr = _vector(x, n, name, dtype)
    if _is_concrete(arr) and not bool(jnp.all(jnp.isfinite(arr))):
        raise ArgumentError(f"{name} must be finite, got {arr.tolist()}")
    return arr


def _joint_only(model: Model, arr: jnp.ndarray, name: str) -> None:
    if not model.floating_base or not _is_concrete(arr):
        return
    if bool(jnp.any(arr[:6] != 0)):
        raise ArgumentError(f"{name} must be zero on the floating base's six velocities, got {arr[:6].tolist()}")


def set_generalized_force(model: Model, state: State, force: ArrayLike) -> State:
    """Set the feed-forward generalized force (nv,) [N, Nm]; it holds until set again.

    It is clamped, together with the explicit part of the built-in PD torque, to the actuation
    limits (:func:`set_actuation_limits`); the motor operating regions do not clip it.

    Raises:
        ArgumentError: wrong shape, or non-finite (checked outside ``jit``).
    """
    return state.replace(generalized_force=_finite_vector(force, model.nv, "force", state.u.dtype))


def set_pd_gains(model: Model, state: State, p_gain: ArrayLike, d_gain: ArrayLike) -> State:
    """Set the built-in joint PD controller's gains, each (nv,) [Nm/rad, Nm s/rad or N/m, N s/m].

    The PD torque is integrated implicitly (stable for any gain) and its explicit part is clamped to
    the actuation limits; it is not an actuator torque and the motor regions do not clip it.

    Raises:
        ArgumentError: wrong shapes, negative or non-finite gains, or gains on a floating base.
    """
    kp = _finite_vector(p_gain, model.nv, "p_gain", state.u.dtype)
    kd = _finite_vector(d_gain, model.nv, "d_gain", state.u.dtype)
    for name, arr in (("p_gain", kp), ("d_gain", kd)):
        if _is_concrete(arr) and bool(jnp.any(arr < 0)):
            raise ArgumentError(f"{name} must not be negative, got {arr.tolist()}")
        _joint_only(model, arr, name)
    return state.replace(pd_p_gain=kp, pd_d_gain=kd)


def set_pd_targets(model: Model, state: State, position_target: ArrayLike, velocity_target: ArrayLike) -> State:
    """Set the PD targets: ``position_target`` (nq,) like ``q`` (the floating base's entries are
    ignored) [rad or m], ``velocity_target`` (nv,) [rad/s or m/s].

    Raises:
        ArgumentError: wrong shapes or non-finite values.
    """
    qt = _finite_vector(position_target, model.nq, "position_target", state.u.dtype)
    vt = _finite_vector(velocity_target, model.nv, "velocity_target", state.u.dtype)
    q_idx, v_idx = joint_dof_indices(model)
    per_dof = jnp.zeros(model.nv, state.u.dtype).at[v_idx].set(qt[q_idx])
    return state.replace(pd_position_target=per_dof, pd_velocity_target=vt)


def set_actuation_limits(model: Model, state: State, limit: ArrayLike) -> State:
    """Set the limits (nv,) of ``|generalized force + explicit PD|`` [Nm or N]; ``inf`` for none.

    They do not clip actuator torques (the motor operating regions do).

    Raises:
        ArgumentError: wrong shape, or a negative or NaN limit.
    """
    arr = _vector(limit, model.nv, "limit", state.u.dtype)
    if _is_concrete(arr) and bool(jnp.any(jnp.isnan(arr) | (arr < 0))):
        raise ArgumentError(f"limit must be non-negative (inf allowed), got {arr.tolist()}")
    return state.replace(actuation_limit=arr)


def set_external_force(
    model: Model,
    state: State,
    link: str | int,
    force: ArrayLike,
    point: ArrayLike | None = None,
    torque: ArrayLike | None = None,
) -> State:
    """Apply a world-frame force [N] at a point of a link (and optionally a torque [Nm]) for the next
    step. Forces set before one step add up; the step clears them. They are not clipped.

    Args:
        model: the model.
        state: the state (its ``q`` places the point).
        link: link name or index.
        force: (3,) force in world coordinates [N].
        point: (3,) application point in the link's frame [m]; default its origin.
        torque: (3,) optional world-frame torque [Nm].

    Raises:
        ArgumentError: unknown link, wrong shapes or non-finite values.
    """
    from jaxmor.kinematics import point_jacobian

    f = _finite_vector(force, 3, "force", state.u.dtype)
    p = None if point is None else _finite_vector(point, 3, "point", state.u.dtype)
    jac = point_jacobian(model, state.q, link, p, angular=True)
    wrench = jnp.concatenate(
        [f, jnp.zeros(3, f.dtype) if torque is None else _finite_vector(torque, 3, "torque", f.dtype)]
    )
    return state.replace(external_force=state.external_force + jac.T @ wrench)
