"""Making a world's :class:`State`."""

from __future__ import annotations

import jax.numpy as jnp

from jaxmor.errors import ArgumentError
from jaxmor.model import neutral_q
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
    return State(
        q=q,
        u=u,
        time=jnp.zeros((), dtype),
        actuator_torque=jnp.zeros((model.na,), dtype),
        bus_voltage=jnp.asarray(model.actuators.motor.bus_voltage, dtype),
        mor_enforced=jnp.asarray(True),
        actuator_state=zero_actuator_state(model.na, dtype),
        ctrl=jnp.zeros((model.nu,), dtype),
    )
