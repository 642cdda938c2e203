"""Rigid-body dynamics: mass matrix, bias forces, forward and inverse dynamics.

Formulation. The recursions run in body coordinates with 6-D spatial vectors ordered
``[angular; linear]`` (Featherstone). A free base is first treated in *local* coordinates
``nu = [v_b, w_b]`` (base-origin velocity and angular velocity in the base frame), where its motion
subspace is constant. jaxmor's public convention uses world-frame base velocities
``u = [v, w]``; the two are related by ``nu = T u`` with ``T = blockdiag(R^T, R^T, I)`` and ``R``
the base rotation. Since ``dT/dt u = [-w_b x v_b; 0; 0] =: c``, the equations of motion
``M_l dnu/dt + b_l = T^-T tau`` become

    M(q) = T^T M_l T,        b(q, u) = T^T (b_l + M_l c) = T^T RNEA_l(q, nu, c).

A ball joint needs no such change: its velocities are already its body's angular velocity in the body
frame, where its motion subspace ``[I; 0]`` is constant (``T`` is the identity on them).

With body Jacobians ``J_i`` (``v_i = J_i nu``, carried down the tree), ``M_l = sum_i J_i^T I_i J_i``
(the same matrix the composite-rigid-body algorithm computes, assembled from few large operations)
and ``b_l = sum_i J_i^T f_i`` with ``f_i = I_i a_i + v_i x* I_i v_i`` (the recursive Newton-Euler
algorithm's forward pass for ``a_i``; its backward pass is the sum over ``J_i^T``). Rotor inertia
(``dof_armature``) is added to the diagonal of ``M``, the fixed tendons' armature as ``a J^T J``
(:func:`jaxmor.sim.tendon.tendon_inertia`). Gravity enters as a fictitious upward
acceleration of the world.

The velocity derivative ``D = db/du = T^T D_l T`` (the implicit integrator's term) is the same sums
differentiated in closed form, ``nv`` columns at once: with ``S_i`` (6, nv) body ``i``'s own motion
subspace, ``s_i = S_i nu`` its joint's velocity, ``X_i`` the transform from its parent,

    D_l = sum_i J_i^T (I_i A_i + K_i J_i),    A_i = X_i A_parent + [v_i x] S_i - [s_i x] J_i + S_i N,

where ``A_i`` (6, nv) is ``d a_i / d nu`` (one more pass down the tree, zero for the world),
``K_i dv = v_i x* I_i dv + dv x* I_i v_i`` (6, 6), and ``N = d c / d nu`` (nv, nv), nonzero only in a free
base's linear rows: ``[-[w_b]x, [v_b]x]``. Every term is a dense product of per-body (6, 6) and (6, nv)
blocks, the shapes the mass matrix already uses.

Everything is pure JAX: jit-, vmap- and grad-able, in float32 or float64 (the dtype of ``q``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.checks import as_vector
from jaxmor.math import gauss_jordan, skew
from jaxmor.sim.kinematics import Kinematics, kinematics, parent_first
from jaxmor.sim.tendon import tendon_inertia
from jaxmor.types import JointType, Model


@struct.dataclass
class Dynamics:
    """The dynamics stage's result at ``(q, u)``.

    Attributes:
        mass: (nv, nv) mass matrix ``M(q)`` [kg, kg m, kg m^2], rotor inertia included.
        bias: (nv,) bias force ``b(q, u)``: gravity, Coriolis and centrifugal terms [N, Nm].
        bias_jacobian: (nv, nv) ``D = db/du`` [kg/s, kg m/s, kg m^2/s], the derivative of the Coriolis,
            centrifugal and gyroscopic terms with respect to the velocity, for the whole tree; ``None``
            when not computed (``model.opt.implicit_bias`` other than ``"kahan"``).
    """

    mass: jax.Array
    bias: jax.Array
    bias_jacobian: jax.Array | None = None


def _spatial_transforms(kin: Kinematics) -> jax.Array:
    """(nb, 6, 6) motion transforms from each parent's coordinates to the body's."""
    rel_r, rel_p = kin.relative.rotation, kin.relative.position
    e = jnp.swapaxes(rel_r, -1, -2)
    zero = jnp.zeros_like(e)
    top = jnp.concatenate([e, zero], -1)
    bottom = jnp.concatenate([-e @ skew(rel_p), e], -1)
    return jnp.concatenate([top, bottom], -2)


def _spatial_inertias(model: Model, dtype) -> jax.Array:
    """(nb, 6, 6) spatial inertia of each body about its origin, body coordinates."""
    mass = model.body_mass.astype(dtype)[:, None, None]
    cx = skew(model.body_com.astype(dtype))
    cxt = jnp.swapaxes(cx, -1, -2)
    eye = jnp.eye(3, dtype=dtype)
    top = jnp.concatenate([model.body_inertia.astype(dtype) + mass * cx @ cxt, mass * cx], -1)
    bottom = jnp.concatenate([mass * cxt, mass * eye], -1)
    return jnp.concatenate([top, bottom], -2)


#: Motion subspace of a free joint for ``nu = [v_b, w_b]`` in ``[angular; linear]`` body coordinates.
_FREE_SUBSPACE = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])
#: Motion subspace of a ball joint, whose velocities are the body-frame angular velocity (constant: no ``T``).
_BALL_SUBSPACE = np.block([[np.eye(3)], [np.zeros((3, 3))]])


def _joint_subspaces(model: Model, dtype) -> jax.Array:
    """(nb, 6, nv) each body's own motion subspace, placed at its velocities (body coordinates)."""
    axis = model.body_axis.astype(dtype)
    revolute = np.array([k == JointType.REVOLUTE for k in model.body_joint_type])[:, None]
    zero = jnp.zeros_like(axis)
    cols = jnp.concatenate([jnp.where(revolute, axis, zero), jnp.where(revolute, zero, axis)], -1)
    kinds, start = model.body_joint_type, np.asarray(model.body_v_start)
    single = np.array([k not in (JointType.FREE, JointType.BALL) for k in kinds])
    at_own_velocity = (jnp.arange(model.nv) == start[:, None]) & single[:, None]  # (nb, nv), no (nb, nv) constant
    own = jnp.where(at_own_velocity[:, None, :], cols[:, :, None], jnp.zeros((), dtype))
    for kind, block in ((JointType.FREE, _FREE_SUBSPACE), (JointType.BALL, _BALL_SUBSPACE)):
        bodies = np.flatnonzero([k == kind for k in kinds])
        if bodies.size:
            columns = start[bodies][:, None, None] + np.arange(block.shape[1])
            own = own.at[bodies[:, None, None], np.arange(6)[:, None], columns].set(jnp.asarray(block, dtype))
    return own


def _transport(parent: jax.Array | None, body: tuple[jax.Array, jax.Array]) -> jax.Array:
    """A body's value from its parent's: ``X_i parent + own_i`` (Jacobians, accelerations); ``own_i`` for
    a root body of a quantity that is zero in the world (``parent`` None)."""
    x, own = body
    return own if parent is None else x @ parent + own


def _local_transform(model: Model, kin: Kinematics) -> jax.Array:
    """(nv, nv) matrix ``T`` with ``nu_local = T u``: the free bases' velocities in their own frames."""
    t = jnp.eye(model.nv, dtype=kin.relative.position.dtype)
    for b, v in zip(model.free_body, model.free_u, strict=True):
        rt = kin.relative.rotation[b].T  # a free body is a root: its relative pose is its world pose
        t = t.at[v : v + 3, v : v + 3].set(rt).at[v + 3 : v + 6, v + 3 : v + 6].set(rt)
    return t


def _cross_motion(v: jax.Array, m: jax.Array) -> jax.Array:
    """Batched spatial cross product ``v x m`` of motion vectors (..., 6)."""
    w, lin = v[..., :3], v[..., 3:]
    return jnp.concatenate([jnp.cross(w, m[..., :3]), jnp.cross(w, m[..., 3:]) + jnp.cross(lin, m[..., :3])], -1)


def _cross_force(v: jax.Array, f: jax.Array) -> jax.Array:
    """Batched spatial cross product ``v x* f`` of a motion and a force vector (..., 6)."""
    w, lin = v[..., :3], v[..., 3:]
    return jnp.concatenate([jnp.cross(w, f[..., :3]) + jnp.cross(lin, f[..., 3:]), jnp.cross(w, f[..., 3:])], -1)


def _motion_cross_matrix(v: jax.Array) -> jax.Array:
    """(..., 6, 6) matrix of ``m -> v x m`` for motion vectors ``v`` (..., 6)."""
    w, lin = skew(v[..., :3]), skew(v[..., 3:])
    return jnp.concatenate([jnp.concatenate([w, jnp.zeros_like(w)], -1), jnp.concatenate([lin, w], -1)], -2)


def _force_cross_jacobian(v: jax.Array, inertia: jax.Array) -> jax.Array:
    """(..., 6, 6) ``K`` with ``K dv = d(v x* I v)``: ``v x* (I dv) + dv x* (I v)`` for body velocities
    ``v`` (..., 6) and spatial inertias ``I`` (..., 6, 6)."""
    h = jnp.einsum("...kl,...l->...k", inertia, v)
    ha, hl = skew(h[..., :3]), skew(h[..., 3:])
    # dv x* h = [-[h_a]x dw - [h_l]x dl; -[h_l]x dw]
    bar = jnp.concatenate([jnp.concatenate([ha, hl], -1), jnp.concatenate([hl, jnp.zeros_like(hl)], -1)], -2)
    # v x* f = -[v x]^T f
    return -jnp.swapaxes(_motion_cross_matrix(v), -1, -2) @ inertia - bar


def _bias_local(model: Model, xs, inertia, jac, nu: jax.Array, vel: jax.Array) -> jax.Array:
    """(nv,) ``RNEA_l(q, nu, c)``: the bias in local coordinates (``b = T^T`` of it), from the bodies'
    velocities ``vel`` (nb, 6) = ``J nu``."""
    dtype = nu.dtype
    a_world = jnp.concatenate([jnp.zeros(3, dtype), -model.opt.gravity.astype(dtype)])
    # Velocity of each joint alone, S_i nu_i, as the body velocity minus the transported parent's.
    above = jnp.concatenate([jnp.zeros((1, 6), dtype), vel])[np.asarray(model.body_parent) + 1]  # the world's is 0
    parent_vel = jnp.einsum("bij,bj->bi", xs, above)
    product = _cross_motion(vel, vel - parent_vel)
    # dT/dt u for a free base: the local velocity coordinates rotate with the base.
    nu_dot = jnp.zeros(model.nv, dtype)
    for v in model.free_u:
        nu_dot = nu_dot.at[v : v + 3].set(-jnp.cross(nu[v + 3 : v + 6], nu[v : v + 3]))
    acc = parent_first(model, _transport, a_world, (xs, product)) + jnp.einsum("bkn,n->bk", jac, nu_dot)
    momentum = jnp.einsum("bkl,bl->bk", inertia, vel)
    force = jnp.einsum("bkl,bl->bk", inertia, acc) + _cross_force(vel, momentum)
    return jnp.einsum("bkn,bk->n", jac, force)


def _bias_jacobian_local(model: Model, xs, inertia, jac, own, nu: jax.Array, vel: jax.Array) -> jax.Array:
    """(nv, nv) ``D_l = d RNEA_l / d nu`` (``D = T^T D_l T``), closed form (see the module docstring)."""
    dtype = nu.dtype
    # d(nu_dot)/d nu: for a free base, d(-w_b x v_b) = [v_b]x dw_b - [w_b]x dv_b (rows of v_b only).
    nu_dot_jac = jnp.zeros((model.nv, model.nv), dtype)
    for v in model.free_u:
        lin, ang = slice(v, v + 3), slice(v + 3, v + 6)
        nu_dot_jac = nu_dot_jac.at[lin, lin].set(-skew(nu[ang])).at[lin, ang].set(skew(nu[lin]))
    joint_vel = jnp.einsum("bkn,n->bk", own, nu)
    # d(v_i x s_i) = v_i x S_i dnu - s_i x J_i dnu; plus S_i d(nu_dot), whose sum down the tree is J_i d(nu_dot).
    product = (
        _motion_cross_matrix(vel) @ own
        - _motion_cross_matrix(joint_vel) @ jac
        + jnp.einsum("bkn,nm->bkm", own, nu_dot_jac)
    )
    acc = parent_first(model, _transport, None, (xs, product))
    force = inertia @ acc + _force_cross_jacobian(vel, inertia) @ jac
    return jnp.einsum("bkn,bkm->nm", jac, force)


def _terms(
    model: Model, kin: Kinematics, u: jax.Array | None, jacobian: bool = False
) -> tuple[jax.Array, jax.Array | None, jax.Array | None]:
    """Mass matrix, (if ``u`` is given) bias force and (if ``jacobian``) the bias's derivative ``db/du``,
    in jaxmor's coordinates (see the module docstring)."""
    dtype = kin.relative.position.dtype
    if model.nb == 0:
        zero = jnp.zeros((model.nv, model.nv), dtype)
        return zero, (None if u is None else jnp.zeros(model.nv, dtype)), (zero if jacobian else None)
    xs = _spatial_transforms(kin)
    inertia = _spatial_inertias(model, dtype)
    own = _joint_subspaces(model, dtype)
    jac = parent_first(model, _transport, None, (xs, own))
    t = _local_transform(model, kin)
    m_local = jnp.einsum("bkn,bkl,blm->nm", jac, inertia, jac)
    mass = t.T @ m_local @ t + jnp.diag(model.dof_armature.astype(dtype))
    if model.tendons.nt:
        mass = mass + tendon_inertia(model, dtype)
    if u is None:
        return mass, None, None
    nu = t @ u
    vel = jnp.einsum("bkn,n->bk", jac, nu)
    bias = t.T @ _bias_local(model, xs, inertia, jac, nu, vel)
    if not jacobian:
        return mass, bias, None
    return mass, bias, t.T @ _bias_jacobian_local(model, xs, inertia, jac, own, nu, vel) @ t


def dynamics(model: Model, kin: Kinematics, u: jax.Array) -> Dynamics:
    """The dynamics stage: mass matrix and bias force at the configuration of ``kin`` and velocity ``u``,
    and the bias's derivative ``db/du`` when ``model.opt.implicit_bias`` asks for it (``"kahan"``).

    Args:
        model: the model.
        kin: :func:`jaxmor.sim.kinematics.kinematics` at ``q``.
        u: (nv,) generalized velocities.

    Returns:
        :class:`Dynamics`.
    """
    mass, bias, d = _terms(model, kin, u, jacobian=model.opt.implicit_bias == "kahan")
    return Dynamics(mass, bias, d)


def bias_derivative_along(model: Model, kin: Kinematics, u: jax.Array, direction: jax.Array) -> jax.Array:
    """(nv,) ``D(u) e``, the derivative of the bias force with respect to the velocity at ``u`` applied to
    one direction ``e`` [N, Nm per unit of ``e``]: one forward-mode pass of the bias recursion, not the
    ``nv`` columns of ``D``.

    Args:
        model: the model.
        kin: :func:`jaxmor.sim.kinematics.kinematics` at ``q``.
        u: (nv,) generalized velocities.
        direction: (nv,) the velocity direction ``e``.
    """
    return jax.jvp(lambda v: _terms(model, kin, v)[1], (u,), (direction,))[1]


def base_velocity_jacobian(model: Model, mass: jax.Array, u: jax.Array) -> jax.Array:
    """(nv, nv) derivative of the floating base's velocity-dependent forces w.r.t. its velocity.

    The robot is taken as locked into one rigid body whose inertia is the base block of ``M``
    (``[[m I, -m [c]x], [m [c]x, I_o]]`` in world coordinates at the base origin, ``c`` the centre
    of mass relative to it). Such a body's velocity-dependent forces are ``m w x (w x c)`` and
    ``w x I_o w``; their derivatives with respect to ``w`` fill the base block (zero elsewhere).
    Exact for a single free body; for a robot, the joints' own velocity terms stay explicit.
    """
    out = jnp.zeros((model.nv, model.nv), u.dtype)
    for v in model.free_u:
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


def _inputs(model: Model, q, u=None, tau=None) -> list[jax.Array]:
    q = as_vector(q, model.nq, "q")
    out = [q]
    for name, x in (("u", u), ("tau", tau)):
        if x is not None:
            out.append(as_vector(x, model.nv, name, q.dtype))
    return out


def mass_matrix(model: Model, q: jax.Array) -> jax.Array:
    """Joint-space inertia matrix ``M(q)`` in jaxmor's velocity coordinates.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        (nv, nv) symmetric positive-definite matrix [kg, kg m, kg m^2], rotor inertia included.

    Raises:
        ArgumentError: ``q`` has the wrong shape.
    """
    (q,) = _inputs(model, q)
    return _terms(model, kinematics(model, q), None)[0]


def bias_force(model: Model, q: jax.Array, u: jax.Array) -> jax.Array:
    """Bias force ``b(q, u)``: gravity plus Coriolis and centrifugal terms (inverse dynamics at zero acceleration).

    The equations of motion are ``M(q) du/dt + b(q, u) = tau``.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.

    Returns:
        (nv,) generalized force [N, Nm].

    Raises:
        ArgumentError: wrong shapes.
    """
    q, u = _inputs(model, q, u)
    return _terms(model, kinematics(model, q), u)[1]


def inverse_dynamics(model: Model, q: jax.Array, u: jax.Array, du: jax.Array) -> jax.Array:
    """Generalized force ``M(q) du + b(q, u)`` that produces the acceleration ``du`` (nv,).

    Raises:
        ArgumentError: wrong shapes.
    """
    q, u, du = _inputs(model, q, u, du)
    mass, bias, _ = _terms(model, kinematics(model, q), u)
    return mass @ du + bias


def forward_dynamics(model: Model, q: jax.Array, u: jax.Array, tau: jax.Array) -> jax.Array:
    """Generalized acceleration ``du/dt = M^-1 (tau - b)``, without constraints (one Gauss-Jordan elimination,
    :func:`jaxmor.math.gauss_jordan`: plain array operations, no LAPACK, so it is safe to vmap on any backend).

    Args:
        model: the model.
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.
        tau: (nv,) generalized force [N, Nm] in jaxmor's coordinates (for a free base: world-frame
            force at the base origin, then world-frame torque).

    Returns:
        (nv,) acceleration: for a free base the time derivative of the world-frame velocities.

    Raises:
        ArgumentError: wrong shapes.
    """
    q, u, tau = _inputs(model, q, u, tau)
    mass, bias, _ = _terms(model, kinematics(model, q), u)
    return gauss_jordan(mass, (tau - bias)[:, None])[:, 0]
