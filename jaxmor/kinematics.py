"""Forward kinematics, Jacobians and the position update.

Body ``i``'s frame is the child-link frame of its joint. Its pose relative to its parent body is
``X_tree(i) * X_joint(q_i)``: the joint's fixed placement, then the joint motion (a rotation
about the axis for revolute joints, a translation along it for prismatic ones). A free base's
pose is ``q[0:3]`` and the quaternion ``q[3:7]`` (``w x y z``) directly.

Velocities follow jaxmor's convention: a free base's ``u[0:3]`` is the world-frame velocity of
its origin and ``u[3:6]`` its world-frame angular velocity.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.typing import ArrayLike

from jaxmor.errors import ArgumentError
from jaxmor.math import axis_angle_to_rotation, quat_integrate, quat_to_rotation, skew
from jaxmor.model import joint_dof_indices
from jaxmor.types import JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, Model


@struct.dataclass
class Poses:
    """World poses of a set of frames.

    Attributes:
        rotation: (n, 3, 3) rotation of each frame, frame axes to world axes.
        position: (n, 3) origin of each frame in the world [m].
    """

    rotation: jnp.ndarray
    position: jnp.ndarray


def _joint_q_index(model: Model) -> np.ndarray:
    return np.array([model.body_q_start[i] for i in range(model.nb)], dtype=np.int32)


def joint_transforms(model: Model, q: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Pose of every body in its parent body's frame.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        ``(rotation (nb, 3, 3), translation (nb, 3))``: body ``i``'s axes and origin in its parent's
        frame (the world's for root bodies).
    """
    if model.nb == 0:
        return jnp.zeros((0, 3, 3), q.dtype), jnp.zeros((0, 3), q.dtype)
    kinds = model.body_joint_type
    revolute = np.array([k == JOINT_REVOLUTE for k in kinds])
    prismatic = np.array([k == JOINT_PRISMATIC for k in kinds])
    angle = q[_joint_q_index(model)]
    zero = jnp.zeros_like(angle)
    axis = model.body_axis.astype(q.dtype)
    r_joint = axis_angle_to_rotation(axis, jnp.where(revolute, angle, zero))
    p_joint = axis * jnp.where(prismatic, angle, zero)[:, None]
    tree_r = model.body_tree_rotation.astype(q.dtype)
    rotation = tree_r @ r_joint
    translation = model.body_tree_translation.astype(q.dtype) + jnp.einsum("bij,bj->bi", tree_r, p_joint)
    for i, kind in enumerate(kinds):
        if kind == JOINT_FREE:
            s = model.body_q_start[i]
            rotation = rotation.at[i].set(quat_to_rotation(q[s + 3 : s + 7]))
            translation = translation.at[i].set(q[s : s + 3])
    return rotation, translation


def body_poses(model: Model, q: jnp.ndarray) -> Poses:
    """World pose of every body, (nb, ...) arrays."""
    rel_r, rel_p = joint_transforms(model, q)
    rots, poss = [], []
    for i, parent in enumerate(model.body_parent):
        if parent < 0:
            rots.append(rel_r[i])
            poss.append(rel_p[i])
        else:
            rots.append(rots[parent] @ rel_r[i])
            poss.append(poss[parent] + rots[parent] @ rel_p[i])
    if not rots:
        return Poses(jnp.zeros((0, 3, 3), q.dtype), jnp.zeros((0, 3), q.dtype))
    return Poses(jnp.stack(rots), jnp.stack(poss))


def _check_q(model: Model, q) -> jnp.ndarray:
    q = jnp.asarray(q)
    if q.shape != (model.nq,):
        raise ArgumentError(f"q must have shape ({model.nq},), got {q.shape}")
    return q


def forward_kinematics(model: Model, q: jnp.ndarray) -> Poses:
    """World pose of every link (frame), including links merged by fixed joints.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        :class:`Poses` with (nl, 3, 3) rotations and (nl, 3) positions, in ``model.link_names`` order.

    Raises:
        ArgumentError: ``q`` has the wrong shape.
    """
    q = _check_q(model, q)
    bodies = body_poses(model, q)
    idx = np.array(model.link_body, dtype=np.int32)
    eye = jnp.eye(3, dtype=q.dtype)
    body_r = jnp.concatenate([eye[None], bodies.rotation])[idx + 1]
    body_p = jnp.concatenate([jnp.zeros((1, 3), q.dtype), bodies.position])[idx + 1]
    link_r = model.link_rotation.astype(q.dtype)
    link_p = model.link_translation.astype(q.dtype)
    return Poses(body_r @ link_r, body_p + jnp.einsum("lij,lj->li", body_r, link_p))


def link_index(model: Model, link: str | int) -> int:
    """Index of a link in ``model.link_names``.

    Raises:
        ArgumentError: no such link.
    """
    if isinstance(link, (int, np.integer)):
        if not 0 <= int(link) < model.nl:
            raise ArgumentError(f"link index {link} is out of range [0, {model.nl})")
        return int(link)
    try:
        return model.link_names.index(link)
    except ValueError:
        raise ArgumentError(f"unknown link {link!r}; the model has {list(model.link_names)}") from None


def body_jacobian(model: Model, poses: Poses, body: int, point: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Jacobians of a point fixed on a body, from precomputed body poses.

    Args:
        model: the model.
        poses: :func:`body_poses` at the configuration of interest.
        body: body index (static); ``-1`` (the world) gives zero Jacobians.
        point: (3,) the point, in world coordinates [m].

    Returns:
        ``(linear (3, nv), angular (3, nv))``: the point's world-frame velocity is ``linear @ u``
        and the body's world-frame angular velocity ``angular @ u``.
    """
    dtype = poses.position.dtype
    lin = jnp.zeros((3, model.nv), dtype)
    ang = jnp.zeros((3, model.nv), dtype)
    b = body
    while b >= 0:
        v = model.body_v_start[b]
        kind = model.body_joint_type[b]
        origin = poses.position[b]
        if kind == JOINT_FREE:
            lin = lin.at[:, v : v + 3].set(jnp.eye(3, dtype=dtype))
            lin = lin.at[:, v + 3 : v + 6].set(-skew(point - origin))
            ang = ang.at[:, v + 3 : v + 6].set(jnp.eye(3, dtype=dtype))
        else:
            axis = poses.rotation[b] @ model.body_axis[b].astype(dtype)
            if kind == JOINT_REVOLUTE:
                lin = lin.at[:, v].set(jnp.cross(axis, point - origin))
                ang = ang.at[:, v].set(axis)
            else:
                lin = lin.at[:, v].set(axis)
        b = model.body_parent[b]
    return lin, ang


def dof_axes(model: Model, poses: Poses) -> tuple[jnp.ndarray, jnp.ndarray]:
    """World axis and origin of every velocity's motion, to build Jacobians of many points at once.

    Args:
        model: the model.
        poses: :func:`body_poses` at the configuration of interest.

    Returns:
        ``(axis (nv, 3), origin (nv, 3))``: a point ``p`` moved only by velocity ``d`` moves with
        ``axis[d] x (p - origin[d])`` if ``d`` is rotational (:func:`rotational_dofs`), else with
        ``axis[d]``. A free base's linear velocities move along the world axes; its angular ones
        rotate about the world axes through the base origin.
    """
    dtype = poses.position.dtype
    axes, origins = [], []
    eye = jnp.eye(3, dtype=dtype)
    for b, kind in enumerate(model.body_joint_type):
        if kind == JOINT_FREE:
            axes.extend([eye, eye])
            origins.append(jnp.broadcast_to(poses.position[b], (6, 3)))
        else:
            axes.append((poses.rotation[b] @ model.body_axis[b].astype(dtype))[None])
            origins.append(poses.position[b][None])
    if not axes:
        return jnp.zeros((0, 3), dtype), jnp.zeros((0, 3), dtype)
    return jnp.concatenate(axes), jnp.concatenate(origins)


def rotational_dofs(model: Model) -> np.ndarray:
    """(nv,) bool: which velocities rotate (revolute joints, a free base's angular velocity)."""
    out = np.zeros(model.nv, dtype=bool)
    for b, kind in enumerate(model.body_joint_type):
        v = model.body_v_start[b]
        if kind == JOINT_FREE:
            out[v + 3 : v + 6] = True
        else:
            out[v] = kind == JOINT_REVOLUTE
    return out


def ancestor_dofs(model: Model) -> np.ndarray:
    """(nb + 1, nv) 0/1 matrix: row ``b + 1`` marks the velocities that move body ``b`` (row 0: the world)."""
    out = np.zeros((model.nb + 1, model.nv))
    for b in range(model.nb):
        parent = model.body_parent[b]
        out[b + 1] = out[parent + 1]
        v = model.body_v_start[b]
        out[b + 1, v : v + (6 if model.body_joint_type[b] == JOINT_FREE else 1)] = 1.0
    return out


def link_jacobian(model: Model, q: jnp.ndarray, link: str | int) -> jnp.ndarray:
    """(6, nv) Jacobian of a link frame: rows 0-2 the world velocity of its origin, rows 3-5 its
    world angular velocity.

    Raises:
        ArgumentError: unknown link or wrong shape of ``q``.
    """
    return point_jacobian(model, q, link, None, angular=True)


def point_jacobian(
    model: Model, q: jnp.ndarray, link: str | int, point: jnp.ndarray | None = None, *, angular: bool = False
) -> jnp.ndarray:
    """Jacobian of a point fixed on a link.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.
        link: link name or index.
        point: (3,) the point in the link's frame [m]; ``None`` for the link origin.
        angular: also return the angular rows.

    Returns:
        (3, nv) world-frame linear velocity Jacobian, or (6, nv) ``[linear; angular]`` with ``angular``.

    Raises:
        ArgumentError: unknown link, or wrong shapes.
    """
    q = _check_q(model, q)
    li = link_index(model, link)
    frames = forward_kinematics(model, q)
    local = jnp.zeros(3, q.dtype) if point is None else jnp.asarray(point, q.dtype)
    if local.shape != (3,):
        raise ArgumentError(f"point must have shape (3,), got {local.shape}")
    world = frames.position[li] + frames.rotation[li] @ local
    lin, ang = body_jacobian(model, body_poses(model, q), model.link_body[li], world)
    return jnp.concatenate([lin, ang]) if angular else lin


def integrate_positions(model: Model, q: jnp.ndarray, u: jnp.ndarray, dt: ArrayLike) -> jnp.ndarray:
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
    q = _check_q(model, q)
    u = jnp.asarray(u, dtype=q.dtype)
    if u.shape != (model.nv,):
        raise ArgumentError(f"u must have shape ({model.nv},), got {u.shape}")
    q_next = q
    if model.nb == 0:
        return q
    free = [i for i, k in enumerate(model.body_joint_type) if k == JOINT_FREE]
    joint_q, joint_v = joint_dof_indices(model)
    if joint_q.size:
        q_next = q_next.at[joint_q].add(dt * u[joint_v])
    for i in free:
        qs, vs = model.body_q_start[i], model.body_v_start[i]
        q_next = q_next.at[qs : qs + 3].add(dt * u[vs : vs + 3])
        q_next = q_next.at[qs + 3 : qs + 7].set(quat_integrate(q[qs + 3 : qs + 7], u[vs + 3 : vs + 6], dt))
    return q_next
