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

from jaxmor.actuation.affine import next_activation
from jaxmor.actuation.drive_train import end
from jaxmor.checks import as_vector
from jaxmor.math import quat_integrate, quat_integrate_local
from jaxmor.model import ball_joints
from jaxmor.sim.collision import Contacts
from jaxmor.sim.constraint import Impulses, rows_of
from jaxmor.sim.forces import Forces
from jaxmor.types import Model, State


def integrate_positions(model: Model, q: jax.Array, u: jax.Array, dt: ArrayLike) -> jax.Array:
    """The position update ``q (+) dt u``.

    Joint coordinates advance by ``dt u``; a free base's position by ``dt v`` (world frame) and its
    quaternion by the exponential map of the world-frame rotation ``dt w``; a ball joint's quaternion by the
    exponential map of its body-frame rotation ``dt w`` (``q * exp(dt w / 2)``, as MuJoCo's). Quaternions are
    renormalized.

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
    for _, qs, vs in ball_joints(model):
        q_next = q_next.at[qs : qs + 4].set(quat_integrate_local(q[qs : qs + 4], u[vs : vs + 3], dt))
    return q_next


def advance(
    model: Model,
    state: State,
    frc: Forces,
    u_next: jax.Array,
    u_pos: jax.Array,
    impulses: Impulses,
    contacts: Contacts,
    teeth: tuple[jax.Array, jax.Array] | None = None,
) -> State:
    """The state at the end of the step, as computed: the step's last stage before :func:`accept`.

    Integrates the positions, adds the time step to the time with compensated (Kahan) summation, stores
    the impulses (the next warm start), completes the drive train (:func:`jaxmor.actuation.drive_train.end`: the
    gears' play, the actuator and motor states, the commands as set), moves the affine actuators' activations
    (:func:`jaxmor.actuation.affine.next_activation`) and clears the external forces.

    Args:
        model: the model.
        state: the state at the beginning of the step.
        frc: the step's forces.
        u_next: (nv,) the end-of-step velocity.
        u_pos: (nv,) the position-correction pseudo-velocity.
        impulses: the velocity problem's impulses.
        contacts: the step's contact slots (their keys and the budget's overflow are kept).
        teeth: (nb,) the gear teeth rows' impulses of the velocity and the position problems
            (:func:`jaxmor.sim.constraint.teeth_impulse`); ``None`` (the default) for a model without backlash.
    """
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    q, u = state.q, state.u
    layout = rows_of(model)
    friction_impulse = jnp.zeros(model.nv, dtype).at[layout.friction_dofs].set(impulses.friction, mode="drop")
    limit_impulse = jnp.zeros(model.nv, dtype).at[layout.limit_dofs].set(impulses.limit, mode="drop")
    loss = -0.5 * frc.damping * (u + u_next) + friction_impulse / h
    if teeth is None:
        teeth = (jnp.zeros(0, dtype), jnp.zeros(0, dtype))
    drive = end(model, state, frc.drive, u_next, u_pos, teeth, loss)
    increment = h - state.time_compensation
    time = state.time + increment
    return state.replace(
        **drive,
        q=integrate_positions(model, q, u_next + u_pos, h),
        u=u_next,
        time=time,
        time_compensation=(time - state.time) - increment,
        external_force=jnp.zeros_like(state.external_force),
        contact_impulse=impulses.contact,
        contact_key=jnp.asarray(contacts.key, jnp.int32),
        contact_overflow=jnp.asarray(contacts.overflow, jnp.int32),
        friction_impulse=friction_impulse,
        limit_impulse=limit_impulse,
        equality_impulse=impulses.equality,
        invalid=state.invalid | ~jnp.all(frc.actuator_state.valid),
        act=next_activation(model.affine, state.ctrl, state.act, h),
    )
