"""Drive controllers at the actuators: a PID that runs every ``period`` physics steps, its torque held in between.

For each actuator with a controller (``Model.actuators.controller``, :class:`jaxmor.DriveController`), at the start
of step ``k`` (``k = State.step_count``), when ``k % period == 0``, with ``T = period h``, the scale ``s = G`` on the
motor side (the error in motor angle ``G q_j``, the output a motor torque) and ``s = 1`` on the joint side:

* ``e = s (r - q_j)``, ``e_d = s (r_d - u_j)``: the errors at the start of the step, ``r`` and ``r_d`` the actuator
  PD's targets after the command delay (:mod:`jaxmor.actuation.latency`);
* ``I' = I + T e`` (the integral, rectangle rule); ``tau' = s (kp e + ki I' + kd e_d)`` at the gear output;
* anti-windup by conditional integration: when the total command ``tau_cmd + tau'`` (``tau_cmd`` the delayed
  actuator torque plus the actuator PD's) lies beyond the region's bound (:func:`jaxmor.actuator_torque_bounds`) on
  the side the error pushes to (above the upper bound with ``e > 0``, below the lower with ``e < 0``), the integral
  holds: ``I' = I`` and ``tau'`` is recomputed with it;
* ``State.controller_integral = I'``, ``State.controller_torque = tau'``.

Between updates both hold (zero-order hold). The held torque adds to the actuator torque and the actuator PD's, and
the motor region clips the sum every step (:func:`jaxmor.actuation.drive.commanded_actuator_torque`). The update is
a ``jnp.where`` on ``k % period == 0`` (no data-dependent control flow), so gradients flow through it.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.actuation.backlash import rotor_coordinates
from jaxmor.actuation.definitions import CONTROLLER_SIDES as SIDES
from jaxmor.actuation.definitions import DriveControllerDefinition
from jaxmor.actuation.drive import actuator_joint_q_index, actuator_pd, torque_bounds_at
from jaxmor.checks import concrete, is_traced
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.types import DriveController, Model, State


def compile_controllers(definitions: Sequence[DriveControllerDefinition | None]) -> DriveController:
    """The :class:`jaxmor.DriveController` of actuators with these definitions (``None``: no controller)."""
    present = [d or DriveControllerDefinition(0.0) for d in definitions]

    def col(name):
        return jnp.asarray(np.asarray([float(getattr(d, name)) for d in present], np.float64))

    return DriveController(
        p_gain=col("p_gain"),
        i_gain=col("i_gain"),
        d_gain=col("d_gain"),
        period=jnp.asarray(np.asarray([d.period for d in present], np.float64)),
        active=tuple(d is not None for d in definitions),
        motor_side=tuple(d.side == "motor" for d in present),
    )


def controller_definition(controller: DriveController, i: int) -> DriveControllerDefinition | None:
    """Actuator ``i``'s controller as a definition (an unbatched model), ``None`` without one."""
    if not controller.active[i]:
        return None
    gains = [float(np.asarray(getattr(controller, n))[i]) for n in ("p_gain", "i_gain", "d_gain")]
    side = "motor" if controller.motor_side[i] else "joint"
    return DriveControllerDefinition(*gains, period=int(np.asarray(controller.period)[i]), side=side)


def update(model: Model, state: State, view: State) -> State:
    """The controllers' integral and held torque for the step that starts at ``state`` (module docstring).

    Args:
        model: the model.
        state: the state at the start of the step, its commands already delayed.
        view: ``state`` as the actuators read it (:func:`jaxmor.actuation.backlash.rotor_view`).

    Returns:
        ``state`` with ``controller_integral`` and ``controller_torque`` updated where a controller is due;
        ``state`` itself when no actuator has a controller.
    """
    ctl = model.actuators.controller
    if not ctl.any_active:
        return state
    dtype = state.u.dtype
    scale = jnp.where(np.asarray(ctl.motor_side, bool), model.actuators.gear_ratio.astype(dtype), 1.0)
    q_j = state.q[actuator_joint_q_index(model)]
    u_j = state.u[np.asarray(model.actuators.joint_v_index, dtype=np.int32)]
    if model.actuators.backlash.any_active:  # a motor-side controller reads the rotor, past the gear's play
        rotor_q, rotor_u = rotor_coordinates(model, view)
        q_j = jnp.where(np.asarray(ctl.motor_side, bool), rotor_q, q_j)
        u_j = jnp.where(np.asarray(ctl.motor_side, bool), rotor_u, u_j)
    error = scale * (state.actuator_position_target - q_j)
    rate_error = scale * (state.actuator_velocity_target - u_j)
    period = jnp.maximum(jnp.round(ctl.period).astype(jnp.int32), 1)
    interval = period.astype(dtype) * jnp.asarray(model.opt.timestep, dtype)
    kp, ki, kd = (jnp.asarray(g, dtype) for g in (ctl.p_gain, ctl.i_gain, ctl.d_gain))

    def law(integral):
        return scale * (kp * error + ki * integral + kd * rate_error)

    integral = state.controller_integral + interval * error
    lower, upper = torque_bounds_at(model, view)
    total = state.actuator_torque + actuator_pd(model, view) + law(integral)
    hold = ((total > upper) & (error > 0)) | ((total < lower) & (error < 0))
    integral = jnp.where(hold, state.controller_integral, integral)
    due = (state.step_count % period == 0) & np.asarray(ctl.active, bool)
    return state.replace(
        controller_integral=jnp.where(due, integral, state.controller_integral),
        controller_torque=jnp.where(due, law(integral), state.controller_torque),
    )


def _per_actuator(value: ArrayLike, n: int, name: str, integer: bool = False) -> np.ndarray:
    """``value`` as (n,) numbers (a scalar broadcast): finite and ``>= 0``, or ints ``>= 1`` with ``integer``.

    Raises:
        ArgumentError: naming ``name``, the expected shape and range.
    """
    array = None if is_traced(value) else concrete(value)
    kinds = "iu" if integer else "iuf"
    if array is None or array.dtype.kind not in kinds or array.ndim > 1 or (array.ndim == 1 and array.shape != (n,)):
        what = "an int or ints" if integer else "a number or numbers"
        raise ArgumentError(
            f"with_drive_controller: {name} must be {what} of shape () or ({n},), got {brief_repr(value)}"
        )
    bad = np.any(array < 1) if integer else not np.all(np.isfinite(array) & (array >= 0))
    if bad:
        rule = "ints >= 1 [steps]" if integer else "finite and >= 0"
        raise ArgumentError(f"with_drive_controller: {name} must be {rule}, got {array.tolist()}")
    return np.broadcast_to(array, (n,))


def with_drive_controller(
    model: Model,
    p_gain: ArrayLike,
    i_gain: ArrayLike = 0.0,
    d_gain: ArrayLike = 0.0,
    period: ArrayLike = 1,
    *,
    actuators: Sequence[str] | None = None,
    side: str = "joint",
) -> Model:
    """A model whose actuators run a drive controller (module docstring), replacing any they had.

    Args:
        model: the model (unbatched).
        p_gain: the proportional gain (:class:`jaxmor.DriveController`'s units), a number or one per selected
            actuator, finite and ``>= 0``.
        i_gain: the integral gain, likewise.
        d_gain: the derivative gain, likewise.
        period: the controllers' period [physics steps], an int or one per selected actuator, ``>= 1``.
        actuators: the names of the actuators that get it (``None``: all), in the order of the per-actuator values.
        side: ``"joint"`` or ``"motor"``.

    Returns:
        The model with ``actuators.controller`` set for the selected actuators (the others keep theirs).

    Raises:
        ArgumentError: an unknown actuator name, a value of the wrong shape or out of its range, an unknown side.
    """
    names = list(model.actuators.names if actuators is None else actuators)
    unknown = [n for n in names if n not in model.actuators.names]
    if unknown or isinstance(actuators, str):
        raise ArgumentError(
            f"with_drive_controller: unknown actuators {brief_repr(actuators)}; the actuators are "
            f"{list(model.actuators.names)}"
        )
    if side not in SIDES:
        raise ArgumentError(f"with_drive_controller: side must be one of {SIDES}, got {brief_repr(side)}")
    index = np.array([model.actuators.names.index(n) for n in names], dtype=np.int64)
    ctl = model.actuators.controller
    values = {
        "p_gain": _per_actuator(p_gain, len(names), "p_gain"),
        "i_gain": _per_actuator(i_gain, len(names), "i_gain"),
        "d_gain": _per_actuator(d_gain, len(names), "d_gain"),
        "period": _per_actuator(period, len(names), "period", integer=True),
    }
    leaves = {n: jnp.asarray(getattr(ctl, n)).at[index].set(v.astype(getattr(ctl, n).dtype)) for n, v in values.items()}
    active, motor = list(ctl.active), list(ctl.motor_side)
    for i in index:
        active[i], motor[i] = True, side == "motor"
    ctl = ctl.replace(**leaves, active=tuple(active), motor_side=tuple(motor))
    return model.replace(actuators=model.actuators.replace(controller=ctl))
