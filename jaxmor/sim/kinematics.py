"""Forward kinematics and Jacobians.

Body ``i``'s frame is the child-link frame of its joint. Its pose relative to its parent body is
``X_tree(i) * X_joint(q_i)``: the joint's fixed placement, then the joint motion (a rotation
about the axis for revolute joints, a translation along it for prismatic ones, the rotation of its
quaternion for ball joints). A free base's pose is ``q[0:3]`` and the quaternion ``q[3:7]``
(``w x y z``) directly.

Velocities follow jaxmor's convention: a free base's ``u[0:3]`` is the world-frame velocity of
its origin and ``u[3:6]`` its world-frame angular velocity; a ball joint's three velocities are its
body's angular velocity relative to the parent in the body's own frame. Jacobians are world-aligned at the point
(Pinocchio's ``LOCAL_WORLD_ALIGNED``): a point's world-frame velocity is ``J @ u``.

The step computes :func:`kinematics` once and hands it to the dynamics, the collision and the
constraint stages.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.checks import as_vector, refuse_traced
from jaxmor.errors import ArgumentError
from jaxmor.math import axis_angle_to_rotation, quat_to_rotation, take_static
from jaxmor.model import ball_joints
from jaxmor.types import JointType, Model


@struct.dataclass
class Poses:
    """World poses of a set of frames.

    Attributes:
        rotation: (n, 3, 3) rotation of each frame, frame axes to world axes.
        position: (n, 3) origin of each frame in the world [m].
    """

    rotation: jax.Array
    position: jax.Array


@struct.dataclass
class Kinematics:
    """The kinematics of one configuration, shared by the stages of a step.

    Attributes:
        relative: each body's pose in its parent body's frame (the world's for root bodies), (nb, ...).
        body: each body's world pose, (nb, ...).
    """

    relative: Poses
    body: Poses


#: Trees with more levels than this are traversed in a ``lax.scan`` over their levels
#: (:func:`parent_first`); shallower ones have each level written out in the program.
UNROLLED_LEVELS = 16


@functools.cache
def tree_levels(body_parent: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[int, ...] | None], ...]:
    """The bodies by depth in the tree: per level ``(bodies, parents)``, ``bodies`` the indices of the bodies
    at that depth and ``parents`` the position of each one's parent among the bodies of the level above
    (``None`` for the roots, depth 0). Static; computed once per tree."""
    depth: list[int] = []
    for parent in body_parent:
        depth.append(0 if parent < 0 else depth[parent] + 1)
    levels: list[tuple[tuple[int, ...], tuple[int, ...] | None]] = []
    for d in range(max(depth, default=-1) + 1):
        bodies = tuple(i for i, di in enumerate(depth) if di == d)
        above = levels[-1][0] if levels else ()
        parents = None if d == 0 else tuple(above.index(body_parent[i]) for i in bodies)
        levels.append((bodies, parents))
    return tuple(levels)


@functools.cache
def level_slots(body_parent: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The levels of :func:`tree_levels` as a padded table, for a traversal that loops over the levels.

    Returns:
        ``(body, parent, slot)``: (L, W) the body in each slot of each level (W the widest level; a level's
        spare slots repeat its first body, whose value there is computed and never read), (L, W) the slot of
        each slot's parent in the level above (0 for roots and spare slots), and (nb,) each body's slot in
        the table flattened to (L W,).
    """
    levels = tree_levels(body_parent)
    width = max(len(bodies) for bodies, _ in levels)
    body = np.array([bodies + (bodies[0],) * (width - len(bodies)) for bodies, _ in levels], dtype=np.int32)
    parent = np.array([(parents or (0,) * len(bodies)) + (0,) * (width - len(bodies)) for bodies, parents in levels])
    slot = np.empty(len(body_parent), dtype=np.int32)
    for level, (bodies, _) in enumerate(levels):
        slot[np.asarray(bodies)] = level * width + np.arange(len(bodies))
    return body, parent.astype(np.int32), slot


def _parent_first_scanned(body_parent: tuple[int, ...], combine, world, per_body):
    """:func:`parent_first` for a deep tree: the roots' level, then one ``lax.scan`` step per further level
    (each level's bodies vmapped over the padded slots of :func:`level_slots`), so the program's length does
    not grow with the depth."""
    body, parent, slot = level_slots(body_parent)
    entries = jax.tree.map(lambda x: x[body], per_body)  # (L, W, ...)
    roots = jax.vmap(lambda e: combine(world, e))(jax.tree.map(lambda x: x[0], entries))

    def level(above, inputs):
        parents, own = inputs
        value = jax.vmap(combine)(jax.tree.map(lambda v: v[parents], above), own)
        return value, value

    rest = jax.tree.map(lambda x: x[1:], entries)
    _, deeper = jax.lax.scan(level, roots, (jnp.asarray(parent[1:]), rest))
    stacked = jax.tree.map(lambda r, d: jnp.concatenate([r[None], d]), roots, deeper)
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:])[slot], stacked)


def parent_first(model: Model, combine: Callable[[Any, Any], Any], world: Any, per_body: Any) -> Any:
    """Values propagated down the tree, parents first: the one tree traversal of jaxmor.

    Body ``i`` gets ``combine(value of its parent, per_body[i])``, with ``world`` as the value of the
    world (the parent of root bodies). Values are pytrees; the results are stacked over the bodies.
    A ``world`` of ``None`` is passed as is: ``combine`` then gives a root body its value from its own
    entries alone (no product with a constant world value, whose derivative would tie the root's
    value to its entries for nothing).

    The bodies of one depth are combined together (``combine`` vmapped over them, :func:`tree_levels`), so
    the program has one step per level of the tree, not one per body: a quadruped's 13 bodies are 4 levels.

    Args:
        model: the model (its static ``body_parent``).
        combine: ``(parent value, body's entries) -> body value``, for one body (it is vmapped).
        world: the value of the world, or ``None``.
        per_body: a pytree whose leaves have a leading axis of size ``nb``.

    Returns:
        The bodies' values, each leaf with a leading axis of size ``nb``.
    """
    levels = tree_levels(tuple(model.body_parent))
    if len(levels) > UNROLLED_LEVELS:
        return _parent_first_scanned(tuple(model.body_parent), combine, world, per_body)
    values = []
    for bodies, parents in levels:
        entries = jax.tree.map(lambda x, b=bodies: take_static(x, b), per_body)
        if parents is None:
            values.append(jax.vmap(lambda e: combine(world, e))(entries))
        else:
            above = jax.tree.map(lambda x, p=parents: take_static(x, p), values[-1])
            values.append(jax.vmap(combine)(above, entries))
    stacked = jax.tree.map(lambda *x: jnp.concatenate(x), *values)
    order = tuple(int(i) for i in np.argsort(np.concatenate([np.asarray(b) for b, _ in levels])))
    if order == tuple(range(len(order))):
        return stacked
    return jax.tree.map(lambda x: take_static(x, order), stacked)


def joint_transforms(model: Model, q: jax.Array) -> Poses:
    """Pose of every body in its parent body's frame.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        :class:`Poses` with (nb, 3, 3) rotations and (nb, 3) origins: body ``i``'s axes and origin in
        its parent's frame (the world's for root bodies).
    """
    if model.nb == 0:
        return Poses(jnp.zeros((0, 3, 3), q.dtype), jnp.zeros((0, 3), q.dtype))
    kinds = model.body_joint_type
    revolute = np.array([k == JointType.REVOLUTE for k in kinds])
    prismatic = np.array([k == JointType.PRISMATIC for k in kinds])
    angle = q[np.array(model.body_q_start, dtype=np.int32)]
    zero = jnp.zeros_like(angle)
    axis = model.body_axis.astype(q.dtype)
    r_joint = axis_angle_to_rotation(axis, jnp.where(revolute, angle, zero))
    p_joint = axis * jnp.where(prismatic, angle, zero)[:, None]
    tree_r = model.body_tree_rotation.astype(q.dtype)
    rotation = tree_r @ r_joint
    translation = model.body_tree_translation.astype(q.dtype) + jnp.einsum("bij,bj->bi", tree_r, p_joint)
    for b, s in zip(model.free_body, model.free_q, strict=True):
        rotation = rotation.at[b].set(quat_to_rotation(q[s + 3 : s + 7]))
        translation = translation.at[b].set(q[s : s + 3])
    for b, s, _ in ball_joints(model):
        rotation = rotation.at[b].set(tree_r[b] @ quat_to_rotation(q[s : s + 4]))
    return Poses(rotation, translation)


def _compose(parent: tuple[jax.Array, jax.Array] | None, child: Poses) -> tuple[jax.Array, jax.Array]:
    if parent is None:  # a root body: its pose relative to the world is its world pose
        return child.rotation, child.position
    rotation, position = parent
    return rotation @ child.rotation, position + rotation @ child.position


def kinematics(model: Model, q: jax.Array) -> Kinematics:
    """The kinematics stage: every body's relative and world pose at ``q`` (joint transforms computed once).

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        :class:`Kinematics`.
    """
    relative = joint_transforms(model, q)
    if model.nb == 0:
        return Kinematics(relative, relative)
    rotation, position = parent_first(model, _compose, None, relative)
    return Kinematics(relative, Poses(rotation, position))


def body_poses(model: Model, q: jax.Array) -> Poses:
    """World pose of every body, (nb, ...) arrays."""
    return kinematics(model, q).body


def link_poses(model: Model, bodies: Poses) -> Poses:
    """World pose of every link, in ``model.link_names`` order, from the world poses of the bodies."""
    dtype = bodies.position.dtype
    idx = np.array(model.link_body, dtype=np.int32)
    eye = jnp.eye(3, dtype=dtype)
    body_r = jnp.concatenate([eye[None], bodies.rotation])[idx + 1]
    body_p = jnp.concatenate([jnp.zeros((1, 3), dtype), bodies.position])[idx + 1]
    link_r = model.link_rotation.astype(dtype)
    link_p = model.link_translation.astype(dtype)
    return Poses(body_r @ link_r, body_p + jnp.einsum("lij,lj->li", body_r, link_p))


def forward_kinematics(model: Model, q: jax.Array) -> Poses:
    """World pose of every link (frame), including links merged by fixed joints.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        :class:`Poses` with (nl, 3, 3) rotations and (nl, 3) positions, in ``model.link_names`` order.

    Raises:
        ArgumentError: ``q`` has the wrong shape.
    """
    q = as_vector(q, model.nq, "q")
    return link_poses(model, body_poses(model, q))


def link_index(model: Model, link: str | int) -> int:
    """Index of a link in ``model.link_names``.

    Raises:
        ArgumentError: no such link, or a traced index.
    """
    refuse_traced(link, "link")
    if isinstance(link, (int, np.integer)):
        if not 0 <= int(link) < model.nl:
            raise ArgumentError(f"link index {link} is out of range [0, {model.nl})")
        return int(link)
    try:
        return model.link_names.index(link)
    except ValueError:
        raise ArgumentError(f"unknown link {link!r}; the model has {list(model.link_names)}") from None


def dof_axes(model: Model, bodies: Poses) -> tuple[jax.Array, jax.Array]:
    """World axis and origin of every velocity's motion, to build Jacobians of many points at once.

    Args:
        model: the model.
        bodies: the world poses of the bodies (:attr:`Kinematics.body`).

    Returns:
        ``(axis (nv, 3), origin (nv, 3))``: a point ``p`` moved only by velocity ``d`` moves with
        ``axis[d] x (p - origin[d])`` if ``d`` is rotational (``model.dof_rotational``), else with
        ``axis[d]``. A free base's linear velocities move along the world axes; its angular ones
        rotate about the world axes through the base origin; a ball joint's rotate about its body's axes
        through the body's origin (the joint's centre).
    """
    dtype = bodies.position.dtype
    axes, origins = [], []
    eye = jnp.eye(3, dtype=dtype)
    for b, kind in enumerate(model.body_joint_type):
        if kind == JointType.FREE:
            axes.extend([eye, eye])
            origins.append(jnp.broadcast_to(bodies.position[b], (6, 3)))
        elif kind == JointType.BALL:
            axes.append(bodies.rotation[b].T)  # row k: the body's axis k in the world
            origins.append(jnp.broadcast_to(bodies.position[b], (3, 3)))
        else:
            axes.append((bodies.rotation[b] @ model.body_axis[b].astype(dtype))[None])
            origins.append(bodies.position[b][None])
    if not axes:
        return jnp.zeros((0, 3), dtype), jnp.zeros((0, 3), dtype)
    return jnp.concatenate(axes), jnp.concatenate(origins)


def ancestor_mask(model: Model) -> np.ndarray:
    """(nb + 1, nv) bool: row ``b + 1`` marks the velocities that move body ``b`` (its joint's and its
    ancestors'); row 0 is the world. From the static tables, in NumPy (O(nb nv), at trace time)."""
    mask = np.zeros((model.nb + 1, model.nv), dtype=bool)
    for b, (parent, kind) in enumerate(zip(model.body_parent, model.body_joint_type, strict=True)):
        v = model.body_v_start[b]
        mask[b + 1] = mask[parent + 1]
        mask[b + 1, v : v + kind.dof_width()] = True
    return mask


def angular_jacobians(model: Model, bodies: Poses, body: np.ndarray) -> jax.Array:
    """(k, 3, nv) the world angular velocity of each body of ``body`` (k,) per unit velocity (the world's: 0)."""
    axis, _ = dof_axes(model, bodies)
    turns = ancestor_mask(model)[body + 1] & np.asarray(model.dof_rotational, dtype=bool)[None]  # (k, nv)
    return jnp.swapaxes(jnp.where(turns[:, :, None], axis[None], 0.0), 1, 2)


def relative_point_jacobians(
    model: Model, bodies: Poses, points: jax.Array, body_a: jax.Array, body_b: jax.Array
) -> jax.Array:
    """Jacobians of the velocity of points fixed on bodies B relative to the coincident points of bodies A.

    Args:
        model: the model.
        bodies: the world poses of the bodies.
        points: (k, 3) the points, in world coordinates [m].
        body_a, body_b: (k,) ints, the two bodies of each point, ``-1`` for the world (static or traced).

    Returns:
        (k, nv, 3): entry ``[i, d]`` is the world-frame velocity of point ``i`` on B relative to A per
        unit velocity ``d`` (the transpose of each point's (3, nv) Jacobian).
    """
    axis, origin = dof_axes(model, bodies)
    dofs = ancestor_mask(model).astype(float)
    if isinstance(body_a, np.ndarray | tuple) and isinstance(body_b, np.ndarray | tuple):
        select = dofs[np.asarray(body_b) + 1] - dofs[np.asarray(body_a) + 1]
    else:
        dofs = jnp.asarray(dofs, points.dtype)
        select = dofs[jnp.asarray(body_b) + 1] - dofs[jnp.asarray(body_a) + 1]
    arm = points[:, None, :] - origin[None]
    rotational = np.array(model.dof_rotational, dtype=bool)
    cols = jnp.where(rotational[None, :, None], jnp.cross(axis[None], arm), axis[None])
    return cols * jnp.asarray(select, cols.dtype)[:, :, None]


def link_jacobian(model: Model, q: jax.Array, link: str | int) -> jax.Array:
    """(6, nv) Jacobian of a link frame: rows 0-2 the world velocity of its origin, rows 3-5 its
    world angular velocity.

    Raises:
        ArgumentError: unknown link or wrong shape of ``q``.
    """
    return point_jacobian(model, q, link, None, angular=True)


def point_jacobian(
    model: Model, q: jax.Array, link: str | int, point: jax.Array | None = None, *, angular: bool = False
) -> jax.Array:
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
    q = as_vector(q, model.nq, "q")
    li = link_index(model, link)
    local = jnp.zeros(3, q.dtype) if point is None else as_vector(point, 3, "point", q.dtype)
    bodies = body_poses(model, q)
    frames = link_poses(model, bodies)
    world = frames.position[li] + frames.rotation[li] @ local
    body = model.link_body[li]
    lin = relative_point_jacobians(model, bodies, world[None], (-1,), (body,))[0].T
    if not angular:
        return lin
    axis, _ = dof_axes(model, bodies)
    moves = ancestor_mask(model)[body + 1] & np.array(model.dof_rotational, dtype=bool)
    ang = jnp.where(moves[None, :], axis.T, 0.0)
    return jnp.concatenate([lin, ang])
