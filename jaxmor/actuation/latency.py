"""Command delay: each actuator's commands reach it a whole number of physics steps after they are set.

A DC-motor actuator's torque ``State.actuator_torque`` and its PD targets (``actuator_position_target``,
``actuator_velocity_target``) are delayed by ``Model.actuators.delay`` steps, an affine actuator's control
``State.ctrl`` by ``Model.affine.delay`` steps. At the start of step ``k`` (``k = State.step_count``) the commands
as set are written to slot ``k % nd`` of a ring buffer of ``nd = Model.max_delay + 1`` slots
(``State.command_history``, ``State.ctrl_history``) and the step acts on the commands of step ``k - d``, read from
slot ``(k - d) % nd`` with ``d = min(clip(delay, 0, max_delay), k)``: before ``d`` commands were written, the first
one is repeated. The buffer's length is static, the delays are traced (float leaves holding whole numbers, rounded
where used, so that ``jax.grad`` of a whole model works; per world, drawn by :func:`jaxmor.randomize`). The state
the step returns keeps the commands as set (they hold until set again); only the step itself sees the delayed ones
(the drive controllers, the actuator PD, the motor region, the affine forces). A model with ``max_delay == 0`` has
no buffers and steps exactly as without this module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.actuation.definitions import MAX_DELAY
from jaxmor.checks import concrete, is_traced
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.types import Model, State

#: The State fields a motor actuator's delay applies to, in the order of ``State.command_history``'s last axis.
MOTOR_COMMANDS = ("actuator_torque", "actuator_position_target", "actuator_velocity_target")


def _ring(history: jax.Array, current: jax.Array, delay: jax.Array, count: jax.Array, max_delay: int):
    """Write ``current`` (n, ...) at slot ``count % nd`` of ``history`` (nd, n, ...) and read each entry ``d`` steps
    back (``d = min(clip(delay, 0, max_delay), count)``). Returns ``(history, delayed)``."""
    slots = history.shape[0]
    write = count % slots
    history = jax.lax.dynamic_update_index_in_dim(history, current.astype(history.dtype), write, axis=0)
    lag = jnp.minimum(jnp.clip(jnp.round(delay).astype(jnp.int32), 0, max_delay), count)
    read = (write - lag) % slots
    return history, history[read, np.arange(current.shape[0])]


def delayed(model: Model, state: State) -> State:
    """The state the step acts on: the commands replaced by the delayed ones, the ring buffers written.

    Args:
        model: the model (``max_delay`` static, the delays leaves).
        state: the state at the start of the step.

    Returns:
        ``state`` with ``actuator_torque``, the PD targets and ``ctrl`` delayed and the new ``command_history``
        and ``ctrl_history``; ``state`` itself when ``model.max_delay == 0``.
    """
    if model.max_delay == 0:
        return state
    count = state.step_count
    current = jnp.stack([getattr(state, name) for name in MOTOR_COMMANDS], axis=-1)
    history, commands = _ring(state.command_history, current, model.actuators.delay, count, model.max_delay)
    ctrl_history, ctrl = _ring(state.ctrl_history, state.ctrl, model.affine.delay, count, model.max_delay)
    fields = {name: commands[:, i] for i, name in enumerate(MOTOR_COMMANDS)}
    return state.replace(**fields, ctrl=ctrl, command_history=history, ctrl_history=ctrl_history)


def restored(model: Model, given: State, end: State) -> State:
    """``end`` (the state after a step that acted on :func:`delayed` commands) with the commands as set in ``given``
    (they hold until set again)."""
    if model.max_delay == 0:
        return end
    return end.replace(**{name: getattr(given, name) for name in (*MOTOR_COMMANDS, "ctrl")})


def _steps(value: ArrayLike, n: int, name: str) -> np.ndarray:
    """``value`` as (n,) int32 delays ``>= 0`` (a scalar is broadcast).

    Raises:
        ArgumentError: traced, not integers, negative, or of another shape than () or (n,).
    """
    if is_traced(value):
        raise ArgumentError(f"with_command_delay: {name} must be concrete (set per-world delays with jaxmor.randomize)")
    array = concrete(value)
    if array is None or array.dtype.kind not in "iu" or array.ndim > 1 or (array.ndim == 1 and array.shape != (n,)):
        raise ArgumentError(
            f"with_command_delay: {name} must be an int or ({n},) ints [steps], got {brief_repr(value)}"
        )
    if np.any(array < 0) or np.any(array > MAX_DELAY):
        raise ArgumentError(
            f"with_command_delay: {name} must be in [0, {MAX_DELAY}] [steps] (MAX_DELAY), "
            f"got {brief_repr(array.tolist())}"
        )
    return np.broadcast_to(array, (n,)).astype(np.int32)


def with_command_delay(
    model: Model, steps: ArrayLike = 0, ctrl_steps: ArrayLike = 0, max_delay: int | None = None
) -> Model:
    """A model whose actuators' commands act ``steps`` physics steps after they are set (module docstring).

    Args:
        model: the model (unbatched).
        steps: the delay of the DC-motor actuators' torques and PD targets [steps], an int or (na,) ints ``>= 0``.
        ctrl_steps: the delay of the affine actuators' controls [steps], an int or (nu,) ints ``>= 0``.
        max_delay: the longest delay the State's buffers hold (static; traced per-world delays are clamped to it);
            default the longest of ``steps`` and ``ctrl_steps``.

    Returns:
        The model with ``actuators.delay``, ``affine.delay`` and ``max_delay`` set. A State made for the old model
        does not fit it when ``max_delay`` changed: make it again with :func:`jaxmor.init_state`.

    Raises:
        ArgumentError: a delay that is not a non-negative integer of the right shape, or a ``max_delay`` that is not
            an int ``>= 0`` or is shorter than a delay; a delay or ``max_delay`` above
            :data:`jaxmor.actuation.definitions.MAX_DELAY` (1,000 steps).
    """
    motor = _steps(steps, model.na, "steps")
    ctrl = _steps(ctrl_steps, model.nu, "ctrl_steps")
    longest = int(max(motor.max(initial=0), ctrl.max(initial=0)))
    if max_delay is None:
        max_delay = longest
    integral = isinstance(max_delay, (int, np.integer)) and not isinstance(max_delay, (bool, np.bool_))
    if not integral or not longest <= max_delay <= MAX_DELAY:
        raise ArgumentError(
            f"with_command_delay: max_delay must be an int in [the longest delay ({longest}), {MAX_DELAY}], "
            f"got {brief_repr(max_delay)}"
        )
    return model.replace(
        actuators=model.actuators.replace(delay=jnp.asarray(motor, model.actuators.delay.dtype)),
        affine=model.affine.replace(delay=jnp.asarray(ctrl, model.affine.delay.dtype)),
        max_delay=int(max_delay),
    )


def fitted_max_delay(model: Model) -> Model:
    """``model`` with ``max_delay`` raised to its longest delay (concrete; traced delays leave it unchanged)."""
    delays = [concrete(d) for d in (model.actuators.delay, model.affine.delay)]
    longest = max((int(d.max(initial=0)) for d in delays if d is not None), default=0)
    return model.replace(max_delay=max(model.max_delay, longest))
