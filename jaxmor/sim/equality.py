"""The equality constraints' rows (:class:`~jaxmor.types.Equalities`): residuals and Jacobians, MuJoCo's.

Each constraint contributes rows with a residual ``e`` (zero when it holds) and its exact derivative ``J`` (``de/dt
= J u``), the same as MuJoCo's ``efc_pos`` and ``efc_J`` (``tests/test_equality.py`` compares them):

* ``connect``, 3 rows: ``e = p1 - p2`` (world frame), ``p_i = x_i + R_i a_i`` the anchor of body ``i``;
  ``J = J_1(p1) - J_2(p2)``, the two points' translational Jacobians.
* ``weld``: the 3 rows of a connect (the weld's two anchors), then 3 orientation rows ``e = s imag(q_err)``,
  ``q_err = q_f2^* q_f1`` (``q_fi`` the world orientation of the weld's frame on body ``i``, ``s`` the
  ``torquescale``); ``J = (s / 2) (w I - [v]x) F2^T (W_1 - W_2)`` with ``(w, v) = q_err``, ``F2`` frame 2's
  rotation and ``W_i`` body ``i``'s angular-velocity Jacobian (from ``d q_err / dt = (1/2) [0, F2^T (w1 - w2)]
  q_err``).
* ``joint``, 1 row: ``e = (q1 - r1) - sum_k c_k (q2 - r2)^k``, ``J = e_u1 - p'(q2 - r2) e_u2``.
* ``tendon``, 1 row: the same with two fixed tendons' lengths ``L1``, ``L2`` for ``q1``, ``q2`` and their Jacobian
  rows for ``e_u1``, ``e_u2`` (:mod:`jaxmor.sim.tendons`), ``r1``, ``r2`` their lengths at the reference.

A side on a mocap body has its anchor and frame in that body's frame, placed where the State's ``mocap_pos`` and
``mocap_quat`` say, and no Jacobian (the body has no degrees of freedom). The rows of an inactive constraint are
zero. The constraint stage holds the rows as bilateral rows of the velocity
problem (:mod:`jaxmor.sim.constraint`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.math import quat_to_rotation, safe_div, safe_sqrt, skew
from jaxmor.sim.kinematics import Poses, angular_jacobians, relative_point_jacobians
from jaxmor.sim.tendons import tendon_jacobian, tendon_lengths
from jaxmor.types import Model


def equality_rows(
    model: Model, bodies: Poses, q: jax.Array, mocap: tuple[jax.Array, jax.Array] | None = None
) -> tuple[jax.Array, jax.Array]:
    """The equality constraints' rows at the configuration ``q`` (body poses ``bodies``).

    Args:
        model: the model.
        bodies: the bodies' world poses at ``q`` (:func:`jaxmor.sim.kinematics.kinematics`' ``body``).
        q: (nq,) the joint positions.
        mocap: ``(mocap_pos (nmocap, 3) [m], mocap_quat (nmocap, 4))`` the mocap bodies' poses (the State's); None:
            where the description puts them.

    Returns:
        ``(J, e)``: (ne, nv) the rows' Jacobian and (ne,) their residuals [m, or rad and m for joint couplings],
        points first (each connect's 3 rows, each weld's 3 position and 3 or 0 orientation rows), then the joint
        couplings, then the tendon couplings; ``ne = model.equality.rows``.
    """
    eq = model.equality
    dtype = bodies.position.dtype
    parts = []
    if eq.point_body:
        parts.append(_point_rows(model, bodies, mocap))
    if eq.joint_q:
        parts.append(_joint_rows(model, q))
    if eq.tendon:
        parts.append(_tendon_rows(model, q))
    if not parts:
        return jnp.zeros((0, model.nv), dtype), jnp.zeros((0,), dtype)
    jac = jnp.concatenate([p[0] for p in parts])
    residual = jnp.concatenate([p[1] for p in parts])
    active = jnp.repeat(eq.active != 0, np.asarray(row_counts(model)), total_repeat_length=eq.rows)
    return jnp.where(active[:, None], jac, 0.0), jnp.where(active, residual, 0.0)


def row_counts(model: Model) -> tuple[int, ...]:
    """Each constraint's number of rows, in ``model.equality.names`` order (static)."""
    eq = model.equality
    return tuple(6 if rot else 3 for rot in eq.point_rotation_rows) + (1,) * (len(eq.joint_q) + len(eq.tendon))


def _side_frames(model: Model, bodies: Poses, mocap) -> tuple[jax.Array, jax.Array, np.ndarray]:
    """Every point constraint side's frame: ``rotation (k, 2, 3, 3)`` and ``position (k, 2, 3)`` in the world (the
    world's, a body's or a mocap body's), and ``body (k, 2)`` int32 the side's body (``-1``: none)."""
    eq = model.equality
    dtype = bodies.position.dtype
    body = np.asarray(eq.point_body, dtype=np.int32).reshape(-1, 2)
    rotations = [jnp.eye(3, dtype=dtype)[None], bodies.rotation]
    positions = [jnp.zeros((1, 3), dtype), bodies.position]
    if model.mocap_links:
        links = np.asarray(model.mocap_links, dtype=np.int32)
        if mocap is None:
            rotations.append(model.link_rotation.astype(dtype)[links])
            positions.append(model.link_translation.astype(dtype)[links])
        else:
            rotations.append(quat_to_rotation(jnp.asarray(mocap[1], dtype)))  # normalizes
            positions.append(jnp.asarray(mocap[0], dtype))
    which = np.asarray(eq.point_mocap, dtype=np.int32).reshape(-1, 2)
    row = np.where(which >= 0, 1 + bodies.position.shape[0] + which, body + 1)
    return jnp.concatenate(rotations)[row], jnp.concatenate(positions)[row], body


def _point_rows(model: Model, bodies: Poses, mocap) -> tuple[jax.Array, jax.Array]:
    """The connects' and welds' rows, constraint by constraint."""
    eq = model.equality
    rotation, position, body = _side_frames(model, bodies, mocap)
    anchor = eq.point_anchor.astype(position.dtype)
    p = position + jnp.einsum("ksij,ksj->ksi", rotation, anchor)  # (k, 2, 3) the two anchors in the world
    p1, p2 = p[:, 0], p[:, 1]
    world = np.full(len(body), -1)
    j1 = relative_point_jacobians(model, bodies, p1, world, body[:, 0])  # (k, nv, 3)
    j2 = relative_point_jacobians(model, bodies, p2, world, body[:, 1])
    position_jac = jnp.swapaxes(j1 - j2, 1, 2)  # (k, 3, nv)
    rotation_jac, rotation_res = _weld_rotation_rows(model, bodies, body, rotation)
    jacs, residuals = [], []
    for i, rot in enumerate(eq.point_rotation_rows):
        jacs.append(position_jac[i])
        residuals.append(p1[i] - p2[i])
        if rot:
            jacs.append(rotation_jac[i])
            residuals.append(rotation_res[i])
    return jnp.concatenate(jacs), jnp.concatenate(residuals)


def _weld_rotation_rows(
    model: Model, bodies: Poses, body: np.ndarray, rotation: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(k, 3, nv) and (k, 3): every point constraint's orientation rows as a weld's (a connect's go unused), the
    sides' frames turned by ``rotation`` (k, 2, 3, 3)."""
    eq = model.equality
    dtype = bodies.position.dtype
    eye = jnp.eye(3, dtype=dtype)
    frame = quat_to_rotation(eq.point_frame.astype(dtype))  # (k, 2, 3, 3)
    f1 = rotation[:, 0] @ frame[:, 0]  # the two frames' world orientations
    f2 = rotation[:, 1] @ frame[:, 1]
    r_err = jnp.einsum("kji,kjl->kil", f2, f1)  # F2^T F1, the rotation of q_err = q_f2^* q_f1
    # Its quaternion with w >= 0 (continuous while the error is below half a turn).
    w = 0.5 * safe_sqrt(1.0 + jnp.trace(r_err, axis1=1, axis2=2))
    skew_part = r_err - jnp.swapaxes(r_err, 1, 2)
    v = safe_div(1.0, 4.0 * w)[:, None] * jnp.stack([skew_part[:, 2, 1], skew_part[:, 0, 2], skew_part[:, 1, 0]], 1)
    scale = eq.point_torque_scale.astype(dtype)[:, None]
    w_rel = angular_jacobians(model, bodies, body[:, 0]) - angular_jacobians(model, bodies, body[:, 1])
    factor = 0.5 * scale[:, :, None] * (w[:, None, None] * eye - skew(v))
    jac = jnp.einsum("kij,klj,kln->kin", factor, f2, w_rel)  # (s/2)(w I - [v]x) F2^T (W1 - W2)
    return jac, scale * v


def _joint_rows(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The joint couplings' rows: (m, nv) and (m,)."""
    eq = model.equality
    index = np.asarray(eq.joint_q, dtype=np.int32)  # (m, 2)
    vel = np.asarray(eq.joint_u, dtype=np.int32)
    unit = jnp.eye(model.nv, dtype=q.dtype)
    rows = unit[np.maximum(vel, 0)]  # (m, 2, nv)
    return _coupling_rows(
        q[index[:, 0]], q[np.maximum(index[:, 1], 0)], index[:, 1] >= 0, rows, eq.joint_polycoef, eq.joint_reference
    )


def _tendon_rows(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The tendon couplings' rows: (p, nv) and (p,)."""
    eq = model.equality
    index = np.asarray(eq.tendon, dtype=np.int32)  # (p, 2)
    length = tendon_lengths(model, q)[np.maximum(index, 0)]
    rows = tendon_jacobian(model, q.dtype)[np.maximum(index, 0)]
    return _coupling_rows(length[:, 0], length[:, 1], index[:, 1] >= 0, rows, eq.tendon_polycoef, eq.tendon_reference)


def _coupling_rows(x1, x2, has_second: np.ndarray, rows, polycoef, reference) -> tuple[jax.Array, jax.Array]:
    """Rows of couplings ``x1 - r1 = sum_k c_k (x2 - r2)^k`` of two coordinates ``x1``, ``x2`` (n,) whose Jacobian
    rows are ``rows`` (n, 2, nv) (without a second coordinate, ``x1 - r1 = c_0``): (n, nv) and (n,)."""
    dtype = x1.dtype
    coef = polycoef.astype(dtype)
    ref = reference.astype(dtype)
    x = jnp.where(has_second, x2 - ref[:, 1], 0.0)
    one = jnp.ones_like(x)
    powers = jnp.stack([one, x, x * x, x * x * x, x * x * x * x], axis=1)  # products: finite derivatives at x = 0
    poly = jnp.sum(coef * powers, axis=1)
    slope = jnp.sum(coef[:, 1:] * np.arange(1, 5)[None, :] * powers[:, :4], axis=1)
    residual = x1 - ref[:, 0] - poly
    jac = rows[:, 0] - jnp.where(has_second, slope, 0.0)[:, None] * rows[:, 1]
    return jac, residual
