"""The semi-implicit integrator: the effective mass and the unconstrained velocity, the position update,
and the state at the end of a step.

Velocity level, with ``h = model.opt.timestep``:

* ``M_eff = M + h diag(kd + h kp + b_j / 2) + h dB/du_base``: the implicit PD and trapezoidal damping
  terms (:class:`jaxmor.forces.Forces`) and the linearized velocity-dependent forces of a floating base
  (:func:`jaxmor.dynamics.base_velocity_jacobian`; with ``b`` explicit, a torque-free spinning body gains
  energy and a fast spin about its major axis diverges). ``M_eff`` is not symmetric (the gyroscopic
  block), so it is factorized with LU; one factorization and one solve with ``nv + 1`` right-hand sides
  give both ``u_free = u_t + M_eff^-1 h (tau - b)`` and ``M_eff^-1`` (a single chain of batched LAPACK
  calls per step: ``docs/design/cpu-deadlock.md``).
* the constraint impulses then give ``u_{t+1}``, and ``q_{t+1} = q_t (+) h (u_{t+1} + u_pos)``
  (:func:`integrate_positions`; ``u_pos`` the position-correction pseudo-velocity).

Non-finite states. If a step yields a non-finite ``q`` or ``u`` (a diverging model, NaN inputs under
``jit``), the world keeps its previous ``q`` and ``u``, does not advance in time, and
``State.nonfinite`` is set, per world, so one bad world cannot poison a batch silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.typing import ArrayLike

from jaxmor.checks import as_vector
from jaxmor.dynamics import Dynamics, base_velocity_jacobian
from jaxmor.forces import Forces
from jaxmor.math import quat_integrate
from jaxmor.types import Model, State

if TYPE_CHECKING:
    from jaxmor.constraint import Impulses


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
    h = model.opt.timestep.astype(dtype)
    m_eff = dyn.mass + h * jnp.diag(frc.implicit) + h * base_velocity_jacobian(model, dyn.mass, state.u)
    rhs = jnp.concatenate([h * (frc.applied - dyn.bias)[:, None], jnp.eye(model.nv, dtype=dtype)], axis=1)
    solved = jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(m_eff), rhs)
    return FreeMotion(velocity=state.u + solved[:, 0], inverse_mass=solved[:, 1:])


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
    """The last stage: the state at the end of the step, with its bookkeeping.

    Integrates the positions, stores the impulses (the next warm start), completes the actuator states
    (average motor speed, joint loss torque), clears the external forces, and keeps a world whose step
    went non-finite where it was (see the module docstring).

    Args:
        model: the model.
        state: the state at the beginning of the step.
        frc: the step's forces.
        u_next: (nv,) the end-of-step velocity.
        u_pos: (nv,) the position-correction pseudo-velocity.
        impulses: the velocity problem's impulses.
    """
    dtype = state.u.dtype
    h = model.opt.timestep.astype(dtype)
    q, u = state.q, state.u
    q_next = integrate_positions(model, q, u_next + u_pos, h)
    dofs = np.array(model.joint_u, dtype=np.int32)
    friction_impulse = jnp.zeros(model.nv, dtype).at[dofs].set(impulses.friction)
    limit_impulse = jnp.zeros(model.nv, dtype).at[dofs].set(impulses.limit)

    loss = -0.5 * frc.damping * (u + u_next) + friction_impulse / h
    drive = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
    act_state = frc.actuator_state.replace(
        average_motor_speed=model.actuators.transmission.astype(dtype) @ (0.5 * (u + u_next)),
        joint_loss_torque=loss[drive],
    )

    finite = jnp.all(jnp.isfinite(q_next)) & jnp.all(jnp.isfinite(u_next))
    return state.replace(
        q=jnp.where(finite, q_next, q),
        u=jnp.where(finite, u_next, u),
        time=jnp.where(finite, state.time + h, state.time),
        actuator_state=act_state,
        external_force=jnp.zeros_like(state.external_force),
        contact_impulse=jnp.where(finite, impulses.contact, state.contact_impulse),
        friction_impulse=jnp.where(finite, friction_impulse, state.friction_impulse),
        limit_impulse=jnp.where(finite, limit_impulse, state.limit_impulse),
        nonfinite=state.nonfinite | ~finite,
    )
