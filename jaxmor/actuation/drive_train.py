"""The drive train of one step, from the commands as set to the motors at the step's end, carried as one pytree.

:func:`begin`, stage 0 of :func:`jaxmor.step`, runs at the step's start, in this order:

1. the commands delayed (:func:`jaxmor.actuation.latency.delayed`; the commands as set are kept to be put back);
2. the state as the actuators read it (:func:`jaxmor.actuation.backlash.rotor_view`: a rotor's angle and speed where
   an actuator has backlash), computed once;
3. the drive controllers updated at it (:func:`jaxmor.actuation.controller.update`) and the step counted;
4. the motors' part (:func:`jaxmor.actuation.drive.begin`: torques clipped to their regions, cogging, LuGre, the
   learned residual) at it;
5. the motors' torques split between the joints and the rotors of the actuators with backlash (:func:`split`, the
   one place that masks them), and those rotors' motion without the gears' teeth
   (:func:`jaxmor.actuation.backlash.free_rotor_velocity`).

The stages read what they need from the :class:`DriveTrain`: the forces stage its joint torques, the constraint
stage its rotors, the integrator hands it the step's end velocities, and :func:`end` completes it: the gears' play,
the motors' states at their rotors' end velocity (:func:`jaxmor.actuation.drive.end`) and the commands as set.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxmor.actuation import controller, latency
from jaxmor.actuation.backlash import (
    active_mask,
    backlash_actuators,
    backlash_dofs,
    free_rotor_velocity,
    next_play,
    rotor_velocities,
    rotor_velocity_view,
    rotor_view,
)
from jaxmor.actuation.drive import Drive
from jaxmor.actuation.drive import begin as motors_begin
from jaxmor.actuation.drive import end as motors_end
from jaxmor.actuation.motor_dynamics import cogging_torque
from jaxmor.model import joint_coordinates
from jaxmor.types import Model, State


@struct.dataclass
class DriveTrain:
    """The drive train's part of a step, decided at its start (:func:`begin`) and completed at its end (:func:`end`).

    Attributes:
        given: the commands as set (:data:`jaxmor.actuation.latency.MOTOR_COMMANDS` and ``ctrl``), which the end
            state keeps; empty without a delay.
        motors: the motors' part (:class:`jaxmor.actuation.drive.Drive`), computed at the state as the actuators read
            it (commands delayed, controllers updated, the backlash joints at their rotors:
            :func:`jaxmor.actuation.backlash.rotor_view`).
        joint_torque: (nv,) the clipped motor torques on the joints, ``T^T tau_m``, of the actuators without backlash
            [N, Nm].
        passive_torque: (nv,) their cogging and explicit LuGre friction on the joints [N, Nm].
        implicit: (nv,) their LuGre slope on the joints [N s/m, Nm s/rad].
        rotor_torque: (nb,) the torque on the rotors of the actuators with backlash, joint side: gear ratio times
            motor torque and cogging, plus LuGre friction [Nm or N].
        rotor_slope: (nb,) the LuGre slope on those rotors [Nm s/rad or N s/m].
        rotor_velocity: (nb,) the rotors' end-of-step velocity without the teeth's impulse [rad/s or m/s].
        rotor_inverse_inertia: (nb,) the inverse of their effective inertia [1/(kg m^2) or 1/kg].
    """

    given: dict
    motors: Drive
    joint_torque: jax.Array
    passive_torque: jax.Array
    implicit: jax.Array
    rotor_torque: jax.Array
    rotor_slope: jax.Array
    rotor_velocity: jax.Array
    rotor_inverse_inertia: jax.Array


def begin(model: Model, state: State) -> tuple[State, DriveTrain]:
    """The drive train at the start of the step that starts at ``state`` (module docstring).

    Returns:
        ``(state, drive_train)``: the state the other stages act on (commands delayed, controllers updated, the step
        counted) and the :class:`DriveTrain`.
    """
    given = {}
    if model.max_delay:
        given = {name: getattr(state, name) for name in (*latency.MOTOR_COMMANDS, "ctrl")}
    state = latency.delayed(model, state)
    view = rotor_view(model, state)
    state = controller.update(model, state, view)
    state = state.replace(step_count=state.step_count + 1)
    view = state.replace(q=view.q, u=view.u) if model.actuators.backlash.any_active else state
    motors = motors_begin(model, view)
    (joint, passive, slope), (rotor_torque, rotor_slope) = split(model, view, motors)
    rotor, inverse = free_rotor_velocity(model, state, rotor_torque, rotor_slope)
    train = DriveTrain(given, motors, joint, passive, slope, rotor_torque, rotor_slope, rotor, inverse)
    return state, train


def split(model: Model, view: State, motors: Drive) -> tuple[tuple[jax.Array, ...], tuple[jax.Array, jax.Array]]:
    """The motors' generalized forces without the actuators that have backlash, and what those put on their rotors.

    Args:
        model: the model.
        view: the state as the actuators read it (:func:`jaxmor.actuation.backlash.rotor_view`).
        motors: the motors' part of the step, computed at ``view``.

    Returns:
        ``((motor, passive, slope), (rotor_torque, rotor_slope))``: the (nv,) motor torque ``T^T tau_m``, cogging plus
        explicit LuGre friction, and LuGre slope of the other actuators, then the (nb,) torque and LuGre slope on the
        rotors, joint side (``G`` times the motor torque and cogging, plus the LuGre friction of the driven joint).
    """
    motor, passive, slope = motors.joint_torque, motors.passive_torque, motors.implicit
    act, dofs = backlash_actuators(model), backlash_dofs(model)
    if not act.size:
        return (motor, passive, slope), (motor[:0], slope[:0])
    dtype = view.u.dtype
    transmission = model.actuators.transmission.astype(dtype)
    rotor = active_mask(model, dtype) > 0
    torque = motors.actuator_state.motor_torque
    dyn = model.actuators.dynamics
    cogging = jnp.zeros_like(torque)
    if dyn.any_cogging:
        cogging = cogging_torque(dyn, transmission @ joint_coordinates(model, view.q))
    motor = joint_motor_torque(model, motor, torque)
    passive = passive - transmission.T @ jnp.where(rotor, cogging, 0.0)
    gear = model.actuators.gear_ratio.astype(dtype)[act]
    lugre = passive[dofs] if dyn.any_lugre else jnp.zeros(act.size, dtype)
    rotor_torque = gear * (torque + cogging)[act] + lugre
    return (motor, passive.at[dofs].set(0.0), slope.at[dofs].set(0.0)), (rotor_torque, slope[dofs])


def joint_motor_torque(model: Model, joint_torque: jax.Array, motor_torque: jax.Array) -> jax.Array:
    """(nv,) the motors' torque on the joints, ``T^T tau_m``, without the actuators that have backlash (they push
    their rotors): ``joint_torque`` itself where none has.

    Args:
        model: the model.
        joint_torque: (nv,) ``T^T tau_m`` of every actuator [N, Nm].
        motor_torque: (na,) the motor torques ``tau_m`` [Nm or N].
    """
    if not model.actuators.backlash.any_active:
        return joint_torque
    rotor = active_mask(model, motor_torque.dtype) > 0
    return model.actuators.transmission.astype(motor_torque.dtype).T @ jnp.where(rotor, 0.0, motor_torque)


def end(
    model: Model,
    state: State,
    train: DriveTrain,
    u_next: jax.Array,
    u_pos: jax.Array,
    teeth: tuple[jax.Array, jax.Array],
    joint_loss: jax.Array,
) -> dict[str, jax.Array]:
    """The drive train at the end of the step.

    Args:
        model: the model.
        state: the state the step acted on (:func:`begin`'s).
        train: the step's :class:`DriveTrain`.
        u_next: (nv,) the end-of-step velocity.
        u_pos: (nv,) the position-correction pseudo-velocity.
        teeth: (nb,) the gear teeth rows' impulses of the velocity and the position problems [Nm s or N s].
        joint_loss: (nv,) the joints' damping and friction torque over the step [Nm or N].

    Returns:
        The end state's drive-train fields: the actuator and motor states, the bus voltages, the residual's history,
        the gears' play and its rate, and the commands as set.
    """
    rotor = rotor_velocities(train.rotor_velocity, train.rotor_inverse_inertia, *teeth)
    play, rate = next_play(model, state, u_next, u_pos, rotor)
    motors = rotor_velocity_view(model, u_next, rate)
    # The view built again here rather than carried from begin: the same numbers, but XLA then compiles the average
    # motor speed's product as before, keeping every bench final state bit-identical (docs/design/drive-train.md).
    view = rotor_view(model, state)
    act_state, motor_state, bus_voltage = motors_end(model, view, train.motors, motors, joint_loss)
    return dict(
        train.given,
        actuator_state=act_state,
        motor_state=motor_state,
        bus_voltage=bus_voltage,
        actuator_history=train.motors.history,
        backlash_play=play,
        backlash_rate=rate,
    )
