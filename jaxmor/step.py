"""One time step, composed from the stages, and rollouts.

The step is velocity-level and semi-implicit (``h = model.timestep``), as the actuator spec's
"What happens in a simulation step" describes:

1. Kinematics and dynamics at ``q_t``: ``M``, bias ``b(q_t, u_t)``, contact candidates.
2. Actuators at ``u_t`` (:func:`jaxmor.actuate`): motor torques clipped to their regions (as commanded
   in monitor mode), mapped by ``T^T``; affine actuators at ``ctrl``, ``q_t``, ``u_t``.
3. Explicit torque ``tau = clamp(tau_ff + tau_PD_explicit, +-limit) + tau_act + tau_affine + tau_ext
   - b_j u_t`` with ``tau_PD_explicit = kp (q_ref - q_t - h u_t) + kd (u_ref - u_t)`` (the PD torque
   at ``t+1`` with ``u_t`` for ``u_{t+1}``) and ``b_j`` the joint's plus the actuator's damping.
4. The rest of the PD torque, ``-(kd + h kp) du``, and of the trapezoidal damping, ``-(b_j/2) du``
   (``du = u_{t+1} - u_t``), are implicit: ``M_eff = M + h diag(kd + h kp + b_j/2)``. A floating
   base's gyroscopic term is linearized too (see below). ``u_free = u_t + M_eff^-1 h (tau - b)``.
5. Projected Gauss-Seidel on impulses (:mod:`jaxmor.solver`): contacts, joint friction, joint limits.
6. ``q_{t+1} = q_t (+) h (u_{t+1} + u_pos)`` (``u_pos``: the position-correction pseudo-velocity).
7. Actuator states of the completed step.

Implicit gyroscopic term. With ``b`` explicit, a torque-free spinning body gains energy (about 9%
in 500 steps of 10 ms) and a fast spin about its major axis diverges. The step therefore adds
``h * d b / d u`` over the floating base's six velocities (the derivative of the bias with respect
to the base velocity, Coriolis and gyroscopic terms, at fixed ``q``) to ``M_eff``'s base block:
one linearized backward-Euler step of the base's velocity-dependent forces. This makes ``M_eff``
non-symmetric, so it is factorized with LU. Joint velocities keep their explicit Coriolis terms.

Constraint matrices. One LU factorization of ``M_eff`` and one solve with ``nv + 1`` right-hand sides
give ``u_free`` and ``M_eff^-1``: a single chain of batched LAPACK calls per step (jaxlib 0.10.2 can
deadlock its CPU thread pool when two large batched solves run at once; bench/README.md). A joint's
row of ``J`` selects one velocity, so the joint rows' part of ``A = J M_eff^-1 J^T`` is read off
``M_eff^-1`` and only the contact rows need products (about half the arithmetic of solving for
``M_eff^-1 J^T`` row by row and forming ``J Y``).

Non-finite states. If a step yields a non-finite ``q`` or ``u`` (a diverging model, NaN inputs under
``jit``), the world keeps its previous ``q`` and ``u``, does not advance in time, and
``State.nonfinite`` is set, per world, so one bad world cannot poison a batch silently.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.actuation import actuate, affine_joint_force, joint_damping, joint_friction
from jaxmor.collision import collide
from jaxmor.dynamics import mass_matrix_and_bias
from jaxmor.errors import ArgumentError
from jaxmor.kinematics import ancestor_dofs, body_poses, dof_axes, integrate_positions, rotational_dofs
from jaxmor.math import skew
from jaxmor.model import joint_dof_indices
from jaxmor.solver import (
    PENETRATION_ALLOWANCE,
    POSITION_CORRECTION,
    RESTITUTION_THRESHOLD,
    Problem,
    row_impulses,
    solve,
)
from jaxmor.types import JOINT_FREE, Model, State


def _joint_coordinates(model: Model, q: jnp.ndarray) -> jnp.ndarray:
    """(nv,) position of each 1-DoF joint at its velocity index; zero on a floating base."""
    q_idx, v_idx = joint_dof_indices(model)
    return jnp.zeros(model.nv, q.dtype).at[v_idx].set(q[q_idx])


def _joint_mask(model: Model, dtype) -> jnp.ndarray:
    """(nv,) 1 on 1-DoF joints, 0 on a floating base."""
    mask = np.zeros(model.nv)
    mask[joint_dof_indices(model)[1]] = 1.0
    return jnp.asarray(mask, dtype)


def explicit_pd(model: Model, state: State) -> jnp.ndarray:
    """(nv,) explicit part of the built-in PD torque: ``kp (q_ref - q - h u) + kd (u_ref - u)`` on joints."""
    h = model.timestep.astype(state.u.dtype)
    q_joint = _joint_coordinates(model, state.q)
    mask = _joint_mask(model, state.u.dtype)
    pd = state.pd_p_gain * (state.pd_position_target - q_joint - h * state.u) + state.pd_d_gain * (
        state.pd_velocity_target - state.u
    )
    return pd * mask


def clamped_force(model: Model, state: State) -> jnp.ndarray:
    """(nv,) ``clamp(generalized_force + explicit PD, +-actuation_limit)``."""
    limit = state.actuation_limit
    return jnp.clip(state.generalized_force + explicit_pd(model, state), -limit, limit)


def generalized_force(model: Model, state: State) -> jnp.ndarray:
    """What the spec's ``getGeneralizedForce()`` returns (nv,) [N, Nm].

    The effort-clamped feed-forward force plus the explicit built-in PD torque, plus the actuator
    torques clipped to their regions at the current motor speeds (mapped by ``T^T``), plus the
    affine actuators' force. Passive damping, springs, friction and contacts are excluded; the PD
    part is approximate because the PD is integrated implicitly.
    """
    joint_torque, _ = actuate(model, state)
    return clamped_force(model, state) + joint_torque + affine_joint_force(model, state)


def _contact_rows(model: Model, poses, contacts) -> jnp.ndarray:
    """(3 nc, nv) Jacobian of the contact rows (normal, t1, t2 per contact), all contacts at once.

    A velocity moves contact ``k`` of bodies A and B relatively if it moves B but not A, or A but not
    B (``ancestor_dofs``); the point's velocity per unit velocity is ``axis x (p - origin)`` or
    ``axis`` (:func:`jaxmor.kinematics.dof_axes`).
    """
    nc = contacts.distance.shape[0]
    if nc == 0:
        return jnp.zeros((0, model.nv), poses.position.dtype)
    axis, origin = dof_axes(model, poses)
    ancestors = ancestor_dofs(model)
    select = ancestors[np.array(contacts.body_b) + 1] - ancestors[np.array(contacts.body_a) + 1]
    arm = contacts.position[:, None, :] - origin[None]
    cols = jnp.where(rotational_dofs(model)[None, :, None], jnp.cross(axis[None], arm), axis[None])
    cols = cols * jnp.asarray(select, cols.dtype)[:, :, None]
    return jnp.einsum("kij,kdj->kid", contacts.frame, cols).reshape(3 * nc, model.nv)


def _gyroscopic_jacobian(model: Model, mass: jnp.ndarray, u: jnp.ndarray) -> jnp.ndarray:
    """(nv, nv) derivative of the floating base's velocity-dependent forces w.r.t. its velocity.

    The robot is taken as locked into one rigid body whose inertia is the base block of ``M``
    (``[[m I, -m [c]x], [m [c]x, I_o]]`` in world coordinates at the base origin, ``c`` the centre
    of mass relative to it). Such a body's velocity-dependent forces are ``m w x (w x c)`` and
    ``w x I_o w``; their derivatives with respect to ``w`` fill the base block (zero elsewhere).
    Exact for a single free body; for a robot, the joints' own velocity terms stay explicit.
    """
    out = jnp.zeros((model.nv, model.nv), u.dtype)
    for b, kind in enumerate(model.body_joint_type):
        if kind != JOINT_FREE:
            continue
        v = model.body_v_start[b]
        block = mass[v : v + 6, v : v + 6]
        m = block[0, 0]
        cx = -block[0:3, 3:6] / jnp.where(m > 0, m, 1.0)
        c = jnp.stack([cx[2, 1], cx[0, 2], cx[1, 0]])
        inertia = block[3:6, 3:6]
        w = u[v + 3 : v + 6]
        d_lin = -m * (skew(jnp.cross(w, c)) + skew(w) @ skew(c))
        d_ang = skew(w) @ inertia - skew(inertia @ w)
        out = out.at[v : v + 3, v + 3 : v + 6].set(d_lin).at[v + 3 : v + 6, v + 3 : v + 6].set(d_ang)
    return out


def step(model: Model, state: State) -> State:
    """Advance one world by one time step (``model.timestep``).

    Pure: jit-, vmap- (over states, and over models for randomized worlds) and grad-able.

    Args:
        model: the model.
        state: the world's state at the beginning of the step.

    Returns:
        The state at the end of the step, with the actuator states of the completed step, the
        solver's impulses (the next warm start), and external forces cleared.
    """
    dtype = state.u.dtype
    h = model.timestep.astype(dtype)
    q, u = state.q, state.u
    poses = body_poses(model, q)

    # Forces.
    mass, bias = mass_matrix_and_bias(model, q, u)
    act_torque, act_state = actuate(model, state)
    damping = joint_damping(model).astype(dtype)
    friction = joint_friction(model).astype(dtype)
    tau = clamped_force(model, state) + act_torque + affine_joint_force(model, state) + state.external_force
    tau = tau - damping * u

    # Effective mass and the unconstrained velocity.
    mask = _joint_mask(model, dtype)
    implicit = (state.pd_d_gain + h * state.pd_p_gain) * mask + 0.5 * damping
    m_eff = mass + h * jnp.diag(implicit) + h * _gyroscopic_jacobian(model, mass, u)
    # One LU factorization and one solve with nv + 1 right-hand sides give M_eff^-1 and u_free: a single
    # chain of batched LAPACK calls per step (two independent batched solves can deadlock jaxlib 0.10.2's
    # CPU thread pool on a 2-core machine, bench/README.md).
    rhs = jnp.concatenate([h * (tau - bias)[:, None], jnp.eye(model.nv, dtype=dtype)], axis=1)
    solved = jax.scipy.linalg.lu_solve(jax.scipy.linalg.lu_factor(m_eff), rhs)
    u_free = u + solved[:, 0]
    m_inv = solved[:, 1:]

    # Constraints: three rows per contact, then one row per 1-DoF joint (its friction and its limit).
    # The joint rows select a velocity, so their part of ``A = J M_eff^-1 J^T`` is read off the inverse.
    contacts = collide(model, poses)
    nc = contacts.distance.shape[0]
    dofs = joint_dof_indices(model)[1]
    nj = dofs.size
    contact_rows = _contact_rows(model, poses, contacts)
    y_contact = m_inv @ contact_rows.T  # M_eff^-1 J_c^T
    y = jnp.concatenate([y_contact, m_inv[:, dofs]], axis=1)  # M_eff^-1 J^T
    delassus = jnp.concatenate([contact_rows @ y, y[dofs]])
    v_free = jnp.concatenate([contact_rows @ u_free, u_free[dofs]])
    v_now = contact_rows[::3] @ u
    gap = contacts.distance
    target = -jnp.maximum(gap, 0.0) / h
    restitution = contacts.restitution.astype(dtype)
    impact = (
        (v_now < -RESTITUTION_THRESHOLD) & (gap > PENETRATION_ALLOWANCE) & (gap + h * v_now <= 0.0) & (restitution > 0)
    )
    target = jnp.where(impact, jnp.maximum(target, -restitution * v_now), target)
    q_joint = _joint_coordinates(model, q)[dofs]
    lower = model.dof_lower.astype(dtype)[dofs]
    upper = model.dof_upper.astype(dtype)[dofs]
    problem = Problem(
        delassus=delassus,
        free_velocity=v_free,
        contact_target=target,
        friction=contacts.friction.astype(dtype),
        friction_bound=friction[dofs] * h,
        limit_low=jnp.minimum((lower - q_joint) / h, 0.0),
        limit_high=jnp.maximum((upper - q_joint) / h, 0.0),
    )
    warm = jnp.concatenate([state.contact_impulse.reshape(-1), state.friction_impulse[dofs], state.limit_impulse[dofs]])
    lam = solve(problem, warm, model.solver_iterations)
    u_next = u_free + y @ row_impulses(problem, lam)

    # Position correction by pseudo-velocities (split impulses): frictionless, on the normal and joint
    # rows only, moves q only.
    depth = jnp.maximum(-gap - PENETRATION_ALLOWANCE, 0.0)
    below = jnp.maximum(lower - q_joint - PENETRATION_ALLOWANCE, 0.0)
    above = jnp.maximum(q_joint - upper - PENETRATION_ALLOWANCE, 0.0)
    rows = np.concatenate([np.arange(0, 3 * nc, 3), 3 * nc + np.arange(nj)]).astype(np.int32)
    correction = Problem(
        delassus=delassus[rows[:, None], rows[None, :]],
        free_velocity=jnp.zeros(rows.size, dtype),
        contact_target=POSITION_CORRECTION * depth / h,
        friction=jnp.zeros_like(problem.friction),
        friction_bound=jnp.zeros_like(problem.friction_bound),
        limit_low=POSITION_CORRECTION * below / h,
        limit_high=-POSITION_CORRECTION * above / h,
    )
    lam_pos = solve(correction, jnp.zeros(rows.size, dtype), model.solver_iterations, with_friction=False)
    u_pos = y[:, rows] @ lam_pos
    q_next = integrate_positions(model, q, u_next + u_pos, h)
    friction_impulse = jnp.zeros(model.nv, dtype).at[dofs].set(lam[3 * nc : 3 * nc + nj])
    limit_impulse = jnp.zeros(model.nv, dtype).at[dofs].set(lam[3 * nc + nj :])

    # Actuator states of the completed step.
    loss = -0.5 * damping * (u + u_next) + friction_impulse / h
    drive = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
    act_state = act_state.replace(
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
        contact_impulse=jnp.where(finite, lam[: 3 * nc].reshape(nc, 3), state.contact_impulse),
        friction_impulse=jnp.where(finite, friction_impulse, state.friction_impulse),
        limit_impulse=jnp.where(finite, limit_impulse, state.limit_impulse),
        nonfinite=state.nonfinite | ~finite,
    )


def rollout(model: Model, state: State, controls: jnp.ndarray | None = None, n_steps: int | None = None):
    """Run ``n_steps`` steps with ``lax.scan``.

    Args:
        model: the model.
        state: the initial state.
        controls: optional (n_steps, na) actuator torques at the gear outputs, set before each step;
            ``None`` keeps the state's torques.
        n_steps: number of steps; defaults to ``controls.shape[0]``.

    Returns:
        ``(final_state, trajectory)`` where ``trajectory`` is the stacked state after each step
        (under ``jit``, unused parts of the trajectory are not materialized).

    Raises:
        ArgumentError: ``controls`` of the wrong shape, or neither ``controls`` nor ``n_steps``.
    """
    xs = None
    if controls is not None:
        xs = jnp.asarray(controls, state.u.dtype)
        if xs.ndim != 2 or xs.shape[1] != model.na or (n_steps is not None and xs.shape[0] != n_steps):
            steps = "n_steps" if n_steps is None else n_steps
            raise ArgumentError(f"controls must have shape ({steps}, {model.na}), got {xs.shape}")
        n_steps = xs.shape[0]
    if n_steps is None or int(n_steps) < 0:
        raise ArgumentError(f"rollout needs a non-negative n_steps or controls, got n_steps={n_steps}")

    def body(s, torque):
        if torque is not None:
            s = s.replace(actuator_torque=torque)
        s = step(model, s)
        return s, s

    return jax.lax.scan(body, state, xs, length=int(n_steps))


def _split_worlds(tree, n_chunks: int, chunk: int):
    """Leading world axis (n_chunks * chunk, ...) -> (n_chunks, chunk, ...) (explicit shapes: empty leaves work)."""
    return jax.tree.map(lambda x: x.reshape((n_chunks, chunk) + x.shape[1:]), tree)


def _merge_worlds(tree):
    return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), tree)


def _is_none(x) -> bool:
    return x is None


def rollout_batch(
    model: Model,
    states: State,
    controls: jnp.ndarray | None = None,
    n_steps: int | None = None,
    *,
    chunk_size: int = 256,
    model_axes: Model | None = None,
):
    """:func:`rollout` of a batch of worlds, ``chunk_size`` worlds at a time.

    The same as ``jax.vmap(lambda m, s, c: rollout(m, s, c, n_steps), in_axes=(model_axes, 0, 0))``,
    but the worlds are vmapped in chunks of ``chunk_size`` that run one after the other
    (``lax.scan`` over the chunks; the remainder, if any, is one more vmapped call). On a CPU a
    chunk's working set stays in the caches for all its steps: at 4096 worlds on a 2-core CPU this
    ran the benchmark about 1.7x faster than one vmap over all worlds (bench/README.md). On a GPU,
    prefer ``chunk_size`` = the number of worlds, which is the plain vmap.

    Args:
        model: the model; with ``model_axes``, some of its leaves carry a leading world axis.
        states: the initial states, every leaf with a leading world axis of size ``n``.
        controls: optional (n, n_steps, na) actuator torques at the gear outputs, per world and step;
            ``None`` keeps each state's torques.
        n_steps: number of steps; defaults to ``controls.shape[1]``.
        chunk_size: worlds per vmapped chunk (static, >= 1).
        model_axes: ``None`` (one model for all worlds) or a pytree like ``model`` holding ``0`` for
            leaves batched over the worlds (e.g. per-world motor resistance) and ``None`` for shared
            leaves, as ``jax.vmap``'s ``in_axes``.

    Returns:
        ``(final_states, trajectories)`` with a leading world axis (trajectories: (n, n_steps, ...));
        under ``jit``, parts of the trajectories that are not used are not computed.

    Raises:
        ArgumentError: a bad ``chunk_size`` or ``model_axes`` entry, states without a common leading
            world axis, ``controls`` or batched model leaves whose leading axis is not the number of
            worlds, or neither ``controls`` nor ``n_steps``.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ArgumentError(f"chunk_size must be a positive int, got {chunk_size!r}")
    sizes = {x.shape[0] if x.ndim else None for x in jax.tree.leaves(states)}
    if len(sizes) != 1 or None in sizes:
        got = sorted(str(x) for x in sizes)
        raise ArgumentError(f"states must all have a leading world axis of the same size, got sizes {got}")
    n = sizes.pop()
    if controls is not None:
        controls = jnp.asarray(controls, states.u.dtype)
        if controls.ndim != 3 or controls.shape[0] != n or (n_steps is not None and controls.shape[1] != n_steps):
            steps = "n_steps" if n_steps is None else n_steps
            raise ArgumentError(f"controls must have shape ({n}, {steps}, {model.na}), got {controls.shape}")
        n_steps = controls.shape[1]
    if n_steps is None:
        raise ArgumentError("rollout_batch needs n_steps or controls")

    # The batched leaves of the model (None elsewhere) travel with the worlds; the rest is shared.
    if model_axes is None:
        batched = None
    else:

        def pick(axis, x):
            if axis is None:
                return None
            if axis != 0 or isinstance(axis, bool):
                raise ArgumentError(f"model_axes entries must be 0 or None, got {axis!r}")
            if jnp.ndim(x) < 1 or jnp.shape(x)[0] != n:
                raise ArgumentError(f"a batched model leaf needs a leading world axis of size {n}, got {jnp.shape(x)}")
            return x

        try:
            batched = jax.tree.map(pick, model_axes, model, is_leaf=_is_none)
        except ValueError as e:
            raise ArgumentError(f"model_axes must have the structure of model: {e}") from None

    def run(part, s, c):
        def world(p, s1, c1):
            m = (
                model
                if model_axes is None
                else jax.tree.map(lambda ax, x, b: x if ax is None else b, model_axes, model, p, is_leaf=_is_none)
            )
            return rollout(m, s1, c1, n_steps)

        return jax.vmap(world)(part, s, c)

    args = (batched, states, controls)
    chunk = min(chunk_size, n) if n else 1
    n_chunks, rest = divmod(n, chunk)
    outs = []
    if n_chunks:
        split = _split_worlds(jax.tree.map(lambda x: x[: n_chunks * chunk], args), n_chunks, chunk)
        outs.append(_merge_worlds(jax.lax.scan(lambda _, a: (None, run(*a)), None, split)[1]))
    if rest or not n_chunks:
        outs.append(run(*jax.tree.map(lambda x: x[n_chunks * chunk :], args)))
    if len(outs) == 1:
        return outs[0]
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), *outs)
