"""Every generalized force of a step: the DC-motor actuators (:mod:`jaxmor.actuation.drive`: clipped to their
regions, cogging, LuGre), the built-in PD, the feed-forward force, affine actuators, external forces, joint springs
and the passive joint losses.

Composition (the actuator spec's "What happens in a simulation step"), at ``q_t, u_t``::

    tau = clamp(tau_ff + tau_PD_explicit, +-limit) + clamp(T^T tau_m + tau_affine, actuator range)
          + tau_ext + tau_spring - b_j u_t
    tau_PD_explicit = kp (q_ref - q_t - h u_t) + kd (u_ref - u_t)
    tau_spring = k (q_spring - q_t - h u_t)        (a ball joint's: -k (r_t + h u_t))
          + J^T f_tendon                            (the fixed tendons' springs and dampers, jaxmor.sim.tendons)

(the PD torque at ``t+1`` with ``u_t`` for ``u_{t+1}``; the joint springs, ``Model.dof_stiffness`` ``k`` and
``Model.dof_springref`` ``q_spring``, the same way; a ball joint's spring pulls its rotation vector ``r`` to zero,
as MuJoCo's, linearized in ``u`` as ``r_{t+1} ~ r_t + h u_{t+1}``, exact to first order in the angle), with ``b_j``
the joint's plus its actuator's output damping, ``T^T tau_m`` the motors' torques and the actuator range the
joints' ``actuatorfrcrange`` (``Model.dof_actuator_force_lower``/``upper``, infinite unless an MJCF joint sets one).
The rest of the PD and spring torques, ``-(kd + h kp + h k) du``, and of the trapezoidal damping, ``-(b_j / 2) du``
(``du = u_{t+1} - u_t``), are implicit: :class:`Forces` carries their diagonal for the effective mass. The
region clips only actuator torques; the effort limits clamp only the feed-forward and PD torques.

The actuator PD (``State.actuator_p_gain`` etc.) is a different controller: it commands the motors
(:func:`jaxmor.actuation.drive.actuator_pd`), and the region clips its torque with the actuator torque as set.

An actuator with backlash (:mod:`jaxmor.actuation.backlash`) computes all of this at its rotor's angle and speed and
applies it to the rotor (:attr:`jaxmor.actuation.drive_train.DriveTrain.rotor_torque`); its joint feels it through
the gear's teeth, a constraint row.

Output damping and friction are kept per actuator and added to the driven joint's own damping and
friction here (:func:`joint_damping`, :func:`joint_friction`), so replacing the actuators never leaves
stale losses on a joint.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.actuation.affine import affine_generalized_force, affine_law, joint_state, law_inputs, to_dofs
from jaxmor.actuation.backlash import rotor_view
from jaxmor.actuation.drive import actuate
from jaxmor.actuation.drive_train import DriveTrain, joint_motor_torque
from jaxmor.math import quat_rotation_vector
from jaxmor.model import ball_joints, joint_coordinates, joint_mask
from jaxmor.sim.tendons import actuator_coordinates, actuator_moment, tendon_passive
from jaxmor.types import ActuatorState, Model, State


@struct.dataclass
class Forces:
    """The forces stage's result: what the integrator needs of a step's generalized forces.

    Attributes:
        applied: (nv,) explicit generalized force of the step [N, Nm], the bias excluded (see the module
            docstring).
        implicit: (nv,) the diagonal ``kd + h kp + h k + b_j / 2`` (plus the LuGre slope) of the implicit PD,
            spring, damping and friction terms [N s/m, Nm s/rad]; the effective mass adds ``h`` times it.
        coupled: (nv, nv) the fixed tendons' implicit term ``(h k + b / 2) J^T J``
            (:func:`jaxmor.sim.tendons.tendon_passive`), ``None`` without tendons; the effective mass adds ``h``
            times it [N s/m, Nm s/rad].
        damping: (nv,) viscous damping of each joint, its actuator's output damping included.
        friction: (nv,) Coulomb friction of each joint, its actuator's output friction included.
        drive: the step's drive train (:class:`jaxmor.actuation.drive_train.DriveTrain`), whose joint torques this
            stage adds; the rotors of actuators with backlash get theirs.
    """

    applied: jax.Array
    implicit: jax.Array
    damping: jax.Array
    friction: jax.Array
    drive: DriveTrain
    coupled: jax.Array | None = None

    @property
    def actuator_state(self) -> ActuatorState:
        """The actuators' states known before integration (:func:`jaxmor.actuation.drive.actuate`)."""
        return self.drive.motors.actuator_state


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
    """(nv,) generalized force of the affine actuators at the state's ``ctrl`` (or its activations ``act``, for those
    with activation dynamics), ``q`` and ``u`` (an actuator on a tendon through the tendon's Jacobian,
    :mod:`jaxmor.sim.tendons`)."""
    act = model.affine
    if not act.on_tendons and not act.activated:
        return affine_generalized_force(act, state.ctrl, state.q, state.u, model.nv)
    if act.on_tendons:
        position, velocity = actuator_coordinates(model, state.q, state.u)
    else:
        position, velocity = joint_state(act, state.q, state.u)
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    force = affine_law(act, law_inputs(act, state.ctrl, state.act, h), position, velocity)
    torque = act.gear.astype(force.dtype) * force
    if act.on_tendons:
        return actuator_moment(model, force.dtype).T @ torque
    return to_dofs(act, torque, model.nv)


def actuator_joint_force(model: Model, state: State, motor_torque: jax.Array) -> jax.Array:
    """(nv,) the actuators' generalized force [Nm or N]: the DC motors' joint torque ``motor_torque`` (nv,) plus
    the affine actuators' force, clamped to ``[Model.dof_actuator_force_lower, dof_actuator_force_upper]``
    (MJCF ``actuatorfrcrange``; MuJoCo clamps its ``qfrc_actuator`` so, an undriven joint's zero included)."""
    dtype = state.u.dtype
    total = motor_torque + affine_joint_force(model, state)
    return jnp.clip(total, model.dof_actuator_force_lower.astype(dtype), model.dof_actuator_force_upper.astype(dtype))


def explicit_pd(model: Model, state: State) -> jax.Array:
    """(nv,) explicit part of the built-in PD torque: ``kp (q_ref - q - h u) + kd (u_ref - u)`` on joints."""
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    q_joint = joint_coordinates(model, state.q)
    mask = joint_mask(model, state.u.dtype)
    pd = state.pd_p_gain * (state.pd_position_target - q_joint - h * state.u) + state.pd_d_gain * (
        state.pd_velocity_target - state.u
    )
    return pd * mask


def spring_stiffness(model: Model, dtype) -> jax.Array:
    """(nv,) the stiffness ``k`` of the joint springs [Nm/rad or N/m]: ``Model.dof_stiffness`` on the 1-DoF and ball
    joints' velocities, 0 on free joints'."""
    mask = joint_mask(model, dtype)
    for _, _, v in ball_joints(model):
        mask = mask.at[v : v + 3].set(1.0)
    return model.dof_stiffness.astype(dtype) * mask


def spring_force(model: Model, q: jax.Array) -> jax.Array:
    """(nv,) the joint springs' torque at ``q`` [Nm or N]: ``k (springref - q)`` on a 1-DoF joint, ``-k r`` on a ball
    joint's body-frame velocities, ``r`` its rotation vector (angle times axis: MuJoCo's spring, whose reference is
    the identity, ``qpos0``)."""
    offset = model.dof_springref.astype(q.dtype) - joint_coordinates(model, q)
    for _, s, v in ball_joints(model):
        offset = offset.at[v : v + 3].set(-quat_rotation_vector(q[s : s + 4]))
    return spring_stiffness(model, q.dtype) * offset


def joint_spring(model: Model, state: State) -> jax.Array:
    """(nv,) explicit part of the joint springs' torque: ``k (springref - q - h u)`` on a 1-DoF joint,
    ``-k (r + h u)`` on a ball joint (:func:`spring_force`) [Nm or N]; ``h k`` enters the effective mass."""
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    return spring_force(model, state.q) - h * spring_stiffness(model, state.u.dtype) * state.u


def clamped_force(model: Model, state: State) -> jax.Array:
    """(nv,) ``clamp(feedforward_force + explicit PD, +-actuation_limit)``."""
    limit = state.actuation_limit
    return jnp.clip(state.feedforward_force + explicit_pd(model, state), -limit, limit)


def generalized_force(model: Model, state: State) -> jax.Array:
    """What the spec's ``getGeneralizedForce()`` returns (nv,) [N, Nm].

    The effort-clamped feed-forward force plus the explicit built-in PD torque, plus the actuator
    torques clipped to their regions at the current motor speeds (mapped by ``T^T``; an actuator with backlash
    pushes its rotor, not its joint), plus the affine actuators' force. Passive damping, springs, friction and
    contacts are excluded; the PD part is approximate because the PD is integrated implicitly.
    """
    view = rotor_view(model, state)
    joint_torque, act_state = actuate(model, view)
    joint_torque = joint_motor_torque(model, joint_torque, act_state.motor_torque)
    return clamped_force(model, state) + actuator_joint_force(model, state, joint_torque)


def forces(model: Model, state: State, drive: DriveTrain) -> Forces:
    """The forces stage: the generalized forces of the step that starts at ``state`` (module docstring).

    Args:
        model: the model.
        state: the world's state at the beginning of the step (its commands delayed).
        drive: the step's drive train (:func:`jaxmor.actuation.drive_train.begin`).

    Returns:
        :class:`Forces`.
    """
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    motor, passive, slope = drive.joint_torque, drive.passive_torque, drive.implicit
    damping = joint_damping(model).astype(dtype)
    actuated = actuator_joint_force(model, state, motor)
    applied = clamped_force(model, state) + actuated + state.external_force
    applied = applied + joint_spring(model, state) - damping * state.u
    pd = (state.pd_d_gain + h * state.pd_p_gain) * joint_mask(model, dtype)
    implicit = pd + h * spring_stiffness(model, dtype) + 0.5 * damping
    dyn = model.actuators.dynamics
    if dyn.any_cogging or dyn.any_lugre:
        applied = applied + passive
        implicit = implicit + slope
    coupled = None
    if model.tendons.nt:
        tendon_force, coupled = tendon_passive(model, state.q, state.u)
        applied = applied + tendon_force
    return Forces(
        applied=applied,
        implicit=implicit,
        coupled=coupled,
        damping=damping,
        friction=joint_friction(model).astype(dtype),
        drive=drive,
    )
