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
(:func:`jaxmor.sim.tendons.tendon_inertia`). Gravity enters as a fictitious upward
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

import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.checks import as_vector
from jaxmor.math import gauss_jordan, skew, take_static
from jaxmor.sim.kinematics import Kinematics, kinematics, parent_first
from jaxmor.sim.tendons import tendon_inertia
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


@functools.cache
def ancestor_columns(
    body_parent: tuple[int, ...], body_v_start: tuple[int, ...], body_dofs: tuple[int, ...]
) -> tuple[np.ndarray, tuple[int, ...], np.ndarray] | None:
    """The velocities each body's motion depends on: its ancestors' and its own, root first (static).

    A body's list is its parent's with its own velocities appended, so a velocity has the same place in every
    list that holds it: its place after the velocities of its joint's ancestors.

    Returns:
        ``(columns, place, held)``: (nb, K) the velocity indices of each body's list, padded with ``nv`` (K the
        longest list); (nv,) the place of each velocity in the lists; (nb, nv) whether a body's list holds a
        velocity. ``None`` when some list holds every velocity (a chain): the dense (6, nv) columns then waste
        nothing.
    """
    nv = sum(body_dofs)
    lists: list[list[int]] = []
    for parent, start, width in zip(body_parent, body_v_start, body_dofs, strict=True):
        lists.append((lists[parent] if parent >= 0 else []) + list(range(start, start + width)))
    k = max((len(c) for c in lists), default=0)
    if k >= nv:
        return None
    columns = np.full((len(lists), k), nv, dtype=np.int32)
    place = np.zeros(nv, dtype=np.int32)
    held = np.zeros((len(lists), nv), dtype=bool)
    for b, c in enumerate(lists):
        columns[b, : len(c)] = c
        place[c] = np.arange(len(c))
        held[b, c] = True
    return columns, tuple(int(p) for p in place), held


def _columns(model: Model) -> tuple[np.ndarray, tuple[int, ...], np.ndarray] | None:
    """:func:`ancestor_columns` of the model's tree."""
    widths = tuple(JointType(k).dof_width() for k in model.body_joint_type)
    return ancestor_columns(tuple(model.body_parent), tuple(model.body_v_start), widths)


def _padded(x: jax.Array) -> jax.Array:
    """``x`` (..., m) with a zero column appended: the value the tables' padding index ``m`` reads."""
    return jnp.concatenate([x, jnp.zeros(x.shape[:-1] + (1,), x.dtype)], -1)


def _per_body(table: np.ndarray, x: jax.Array) -> np.ndarray:
    """A static per-body table (nb, m) shaped to broadcast against a per-body ``x`` (nb, ..., m')."""
    return table.reshape((table.shape[0],) + (1,) * (x.ndim - 2) + (-1,))


def _own_columns(cols, x: jax.Array) -> jax.Array:
    """Body ``i``'s list of columns of ``x[i]``, for a per-body ``x`` (nb, ..., nv): (nb, ..., K)."""
    if cols is None:
        return x
    return jnp.take_along_axis(_padded(x), _per_body(cols[0], x), -1, mode="promise_in_bounds")


def _shared_columns(cols, nb: int, x: jax.Array) -> jax.Array:
    """Each body's list of columns of one ``x`` (..., nv): (nb, ..., K)."""
    if cols is None:
        return jnp.broadcast_to(x, (nb, *x.shape))
    return jnp.moveaxis(_padded(x)[..., cols[0]], -2, 0)


def _at_velocities(cols, x: jax.Array) -> jax.Array:
    """Per-body values on the bodies' columns (nb, ..., K) laid back at their velocities: (nb, ..., nv), zero at
    the velocities a body does not depend on (the inverse of :func:`_own_columns`). A velocity has the same
    place in every list (:func:`ancestor_columns`): slices of the columns and a static mask, no gather."""
    if cols is None:
        return x
    _, place, held = cols
    laid = take_static(x, place, axis=-1)
    return jnp.where(_per_body(held, x), laid, jnp.zeros((), x.dtype))


def _gram(cols, a: jax.Array, b: jax.Array) -> jax.Array:
    """(nv, nv) ``sum_i a_i^T b_i`` of per-body (nb, 6, K) columns (the mass matrix's and ``D``'s sums): one
    contraction of the (6, nv) columns laid out again (a sum of per-body (K, K) blocks gathered into place was
    3x slower on a CPU)."""
    return jnp.einsum("bkn,bkm->nm", _at_velocities(cols, a), _at_velocities(cols, b))


def _transport(parent: jax.Array | None, body: tuple[jax.Array, jax.Array]) -> jax.Array:
    """A body's value from its parent's: ``X_i parent + own_i`` (Jacobians, accelerations); ``own_i`` for
    a root body of a quantity that is zero in the world (``parent`` None)."""
    x, own = body
    return own if parent is None else x @ parent + own


def _rotate_free(model: Model, kin: Kinematics, x: jax.Array, axis: int, to_local: bool) -> jax.Array:
    """``x`` with each free base's two 3-blocks of velocity coordinates along ``axis`` rotated: by ``R^T``
    (``to_local``, world to base frame: ``T x`` along axis 0, ``x T^T`` along axis 1) or by ``R`` (``T^T x``
    along axis 0, ``x T`` along axis 1). ``T = blockdiag(R^T, R^T, I)`` is never formed: its products cost
    (nv, nv, nv) multiply-adds, these a few (3, 3) blocks."""
    if not model.free_body:
        return x
    x = jnp.moveaxis(x, axis, 0)
    pieces, start = [], 0
    for b, v in zip(model.free_body, model.free_u, strict=True):
        r = kin.relative.rotation[b]  # a free body is a root: its relative pose is its world pose
        r = r.T if to_local else r
        pieces += [x[start:v], jnp.tensordot(r, x[v : v + 3], 1), jnp.tensordot(r, x[v + 3 : v + 6], 1)]
        start = v + 6
    return jnp.moveaxis(jnp.concatenate([*pieces, x[start:]]), 0, axis)


def _to_world(model: Model, kin: Kinematics, x: jax.Array) -> jax.Array:
    """``T^T x T`` for an (nv, nv) ``x`` in local velocity coordinates (see :func:`_rotate_free`)."""
    return _rotate_free(model, kin, _rotate_free(model, kin, x, 0, False), 1, False)


# The column-wise cross products are rematerialized under differentiation (``jax.checkpoint``): a derivative keeps
# their two operands rather than every component slice (docs/design/performance.md, "The gradient's compile").


def _cross3(a: jax.Array, b: jax.Array) -> jax.Array:
    """Cross products of 3-vectors laid along axis -2 (..., 3, n), broadcasting (a column against columns)."""
    a0, a1, a2 = a[..., 0, :], a[..., 1, :], a[..., 2, :]
    b0, b1, b2 = b[..., 0, :], b[..., 1, :], b[..., 2, :]
    return jnp.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -2)


@partial(jax.checkpoint, prevent_cse=False)
def _cross_motion_columns(v: jax.Array, m: jax.Array) -> jax.Array:
    """``v x m`` for the columns of ``m`` (..., 6, n), motion vectors ``v`` (..., 6, 1) or (..., 6, n)."""
    w, lin = v[..., :3, :], v[..., 3:, :]
    return jnp.concatenate([_cross3(w, m[..., :3, :]), _cross3(w, m[..., 3:, :]) + _cross3(lin, m[..., :3, :])], -2)


@partial(jax.checkpoint, prevent_cse=False)
def _cross_force_columns(v: jax.Array, f: jax.Array) -> jax.Array:
    """``v x* f`` column by column, motion vectors ``v`` and force vectors ``f`` (..., 6, 1) or (..., 6, n)."""
    w, lin = v[..., :3, :], v[..., 3:, :]
    return jnp.concatenate([_cross3(w, f[..., :3, :]) + _cross3(lin, f[..., 3:, :]), _cross3(w, f[..., 3:, :])], -2)


def _bias_local(model: Model, cols, xs, inertia, jac, nu: jax.Array, vel: jax.Array) -> jax.Array:
    """(nv,) ``RNEA_l(q, nu, c)``: the bias in local coordinates (``b = T^T`` of it), from the bodies'
    velocities ``vel`` (nb, 6) = ``J nu`` (``jac`` the bodies' columns, :func:`ancestor_columns`)."""
    dtype = nu.dtype
    a_world = jnp.concatenate([jnp.zeros(3, dtype), -model.opt.gravity.astype(dtype)])
    # Velocity of each joint alone, S_i nu_i, as the body velocity minus the transported parent's.
    above = jnp.concatenate([jnp.zeros((1, 6), dtype), vel])[np.asarray(model.body_parent) + 1]  # the world's is 0
    parent_vel = jnp.einsum("bij,bj->bi", xs, above)
    product = _cross_motion_columns(vel[..., None], (vel - parent_vel)[..., None])[..., 0]
    # dT/dt u for a free base: the local velocity coordinates rotate with the base.
    nu_dot = jnp.zeros(model.nv, dtype)
    for v in model.free_u:
        nu_dot = nu_dot.at[v : v + 3].set(-jnp.cross(nu[v + 3 : v + 6], nu[v : v + 3]))
    acc = parent_first(model, _transport, a_world, (xs, product))
    if model.free_u:
        acc = acc + jnp.einsum("bkn,bn->bk", jac, _shared_columns(cols, model.nb, nu_dot))
    momentum = jnp.einsum("bkl,bl->bk", inertia, vel)
    force = jnp.einsum("bkl,bl->bk", inertia, acc) + _cross_force_columns(vel[..., None], momentum[..., None])[..., 0]
    return jnp.sum(_at_velocities(cols, jnp.einsum("bkn,bk->bn", jac, force)), 0)


def _bias_jacobian_local(model: Model, cols, xs, inertia, jac, inertia_jac, own, nu: jax.Array, vel) -> jax.Array:
    """(nv, nv) ``D_l = d RNEA_l / d nu`` (``D = T^T D_l T``), closed form (see the module docstring), from the
    bodies' ``I_i J_i`` (``inertia_jac``, the mass matrix's); per-body arrays on the bodies' columns (``cols``,
    :func:`ancestor_columns`). The spatial cross products act on the (6, K) columns elementwise: as (6, 6)
    matrix products they were the slowest part on a CPU."""
    dtype = nu.dtype
    # d(nu_dot)/d nu: for a free base, d(-w_b x v_b) = [v_b]x dw_b - [w_b]x dv_b (rows of v_b only).
    # Only its rows of the free bases' linear velocities are not zero: S_i d(nu_dot) reads those rows alone.
    rows = np.array([r for v in model.free_u for r in range(v, v + 3)], dtype=int)
    nu_dot_jac = jnp.zeros((rows.size, model.nv), dtype)
    for k, v in enumerate(model.free_u):
        lin, ang = slice(3 * k, 3 * k + 3), slice(v + 3, v + 6)
        nu_dot_jac = nu_dot_jac.at[lin, v : v + 3].set(-skew(nu[ang])).at[lin, ang].set(skew(nu[v : v + 3]))
    joint_vel = jnp.einsum("bkn,bn->bk", own, _shared_columns(cols, model.nb, nu))
    # d(v_i x s_i) = v_i x S_i dnu - s_i x J_i dnu; plus S_i d(nu_dot), whose sum down the tree is J_i d(nu_dot).
    product = _cross_motion_columns(vel[..., None], own) - _cross_motion_columns(joint_vel[..., None], jac)
    if rows.size:
        own_rows = _at_velocities(cols, own)[:, :, rows]
        product = product + jnp.einsum("bkr,brm->bkm", own_rows, _shared_columns(cols, model.nb, nu_dot_jac))
    acc = parent_first(model, _transport, None, (xs, product))
    # K_i J_i with K_i dv = v_i x* (I_i dv) + dv x* (I_i v_i)
    momentum = jnp.einsum("bkl,bl->bk", inertia, vel)
    velocity_terms = _cross_force_columns(vel[..., None], inertia_jac) + _cross_force_columns(jac, momentum[..., None])
    force = inertia @ acc + velocity_terms
    return _gram(cols, jac, force)


def _terms(
    model: Model, kin: Kinematics, u: jax.Array | None, jacobian: bool = False
) -> tuple[jax.Array, jax.Array | None, jax.Array | None]:
    """Mass matrix, (if ``u`` is given) bias force and (if ``jacobian``) the bias's derivative ``db/du``,
    in jaxmor's coordinates (see the module docstring). The bodies' Jacobians hold only the columns of the
    velocities they depend on (:func:`ancestor_columns`)."""
    dtype = kin.relative.position.dtype
    if model.nb == 0:
        zero = jnp.zeros((model.nv, model.nv), dtype)
        return zero, (None if u is None else jnp.zeros(model.nv, dtype)), (zero if jacobian else None)
    cols = _columns(model)
    xs = _spatial_transforms(kin)
    inertia = _spatial_inertias(model, dtype)
    own = _own_columns(cols, _joint_subspaces(model, dtype))
    jac = parent_first(model, _transport, None, (xs, own))
    # Two contractions in this order: as one three-operand einsum XLA's CPU dot took 3x longer.
    inertia_jac = inertia @ jac
    mass = _to_world(model, kin, _gram(cols, jac, inertia_jac)) + jnp.diag(model.dof_armature.astype(dtype))
    if model.tendons.nt:
        mass = mass + tendon_inertia(model, dtype)
    if u is None:
        return mass, None, None
    nu = _rotate_free(model, kin, u, 0, True)
    vel = jnp.einsum("bkn,bn->bk", jac, _shared_columns(cols, model.nb, nu))
    bias = _rotate_free(model, kin, _bias_local(model, cols, xs, inertia, jac, nu, vel), 0, False)
    if not jacobian:
        return mass, bias, None
    d_local = _bias_jacobian_local(model, cols, xs, inertia, jac, inertia_jac, own, nu, vel)
    return mass, bias, _to_world(model, kin, d_local)


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
