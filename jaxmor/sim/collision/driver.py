"""The collision stage: body poses to a fixed number of contact candidates (:class:`Contacts`), one per slot.

:func:`collide` runs the kernels of :mod:`~jaxmor.sim.collision.ground` (geoms against the ground plane) and of
:mod:`~jaxmor.sim.collision.primitive` / :mod:`~jaxmor.sim.collision.polytope` (geom pairs), each batched over
the geoms or pairs of one type (pair), then the same pair kernels on each terrain grid's candidates (each robot
geom against the world geoms listed in its cell, :mod:`~jaxmor.sim.collision.terrain`), and puts their contacts in
slot order; the slot count of each geom or pair is its kernel's ``slots``. The slots depend only on the model's
static fields, so ``collide`` runs under ``jax.jit``, ``jax.vmap`` and ``jax.grad`` in the poses' float dtype.
Lengths are in metres. The slot layout, the conventions, the combination rules and the limitations:
``docs/design/collision.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.math import quat_to_rotation, safe_sqrt
from jaxmor.sim.collision.contacts import UNUSED_GAP, Contacts, tangent_frame, up
from jaxmor.sim.collision.ellipsoid import box_ellipsoid, cylinder_ellipsoid, ellipsoid_mesh
from jaxmor.sim.collision.ground import (
    box_points,
    capsule_points,
    cylinder_points,
    ellipsoid_points,
    ellipsoid_support,
    hull_points,
    sphere_points,
)
from jaxmor.sim.collision.height_field import MAX_WINDOW, VERTEX_SLOTS, field_gaps, surface, vertices_inside
from jaxmor.sim.collision.polytope import (
    box_box,
    box_cylinder,
    box_mesh,
    capsule_mesh,
    cylinder_cylinder,
    cylinder_mesh,
    mesh_mesh,
    padded_topology,
    sphere_mesh,
)
from jaxmor.sim.collision.primitive import (
    capsule_box,
    capsule_capsule,
    capsule_cylinder,
    sphere_box,
    sphere_capsule,
    sphere_cylinder,
    sphere_sphere,
)
from jaxmor.sim.collision.terrain import check_current, lookup, terrain_count
from jaxmor.sim.kinematics import Poses
from jaxmor.types import GeomType, Model

#: The ground kernel of each geom type (each kernel's ``slots``: its points per geom).
GROUND_KERNELS = {
    GeomType.SPHERE: sphere_points,
    GeomType.CAPSULE: capsule_points,
    GeomType.BOX: box_points,
    GeomType.CYLINDER: cylinder_points,
    GeomType.MESH: hull_points,
    GeomType.ELLIPSOID: ellipsoid_points,
}

#: Geom types and the number of ground-contact points of each (read off :data:`GROUND_KERNELS`).
GROUND_POINTS = {kind: function.slots for kind, function in GROUND_KERNELS.items()}

#: The supported self-collision type pairs (either order) and their kernels.
PAIR_KERNELS = {
    (GeomType.SPHERE, GeomType.SPHERE): sphere_sphere,
    (GeomType.SPHERE, GeomType.CAPSULE): sphere_capsule,
    (GeomType.CAPSULE, GeomType.CAPSULE): capsule_capsule,
    (GeomType.SPHERE, GeomType.BOX): sphere_box,
    (GeomType.CAPSULE, GeomType.BOX): capsule_box,
    (GeomType.BOX, GeomType.BOX): box_box,
    (GeomType.SPHERE, GeomType.MESH): sphere_mesh,
    (GeomType.CAPSULE, GeomType.MESH): capsule_mesh,
    (GeomType.BOX, GeomType.MESH): box_mesh,
    (GeomType.MESH, GeomType.MESH): mesh_mesh,
    (GeomType.SPHERE, GeomType.CYLINDER): sphere_cylinder,
    (GeomType.CAPSULE, GeomType.CYLINDER): capsule_cylinder,
    (GeomType.BOX, GeomType.CYLINDER): box_cylinder,
    (GeomType.CYLINDER, GeomType.CYLINDER): cylinder_cylinder,
    (GeomType.CYLINDER, GeomType.MESH): cylinder_mesh,
    # An ellipsoid meets a polytope's faces exactly (its support function), the rest as its hull
    # (jaxmor.io.mesh.ellipsoid_hull: within 3.4% of its radii): jaxmor.sim.collision.ellipsoid.
    (GeomType.SPHERE, GeomType.ELLIPSOID): sphere_mesh,
    (GeomType.CAPSULE, GeomType.ELLIPSOID): capsule_mesh,
    (GeomType.BOX, GeomType.ELLIPSOID): box_ellipsoid,
    (GeomType.CYLINDER, GeomType.ELLIPSOID): cylinder_ellipsoid,
    (GeomType.ELLIPSOID, GeomType.MESH): ellipsoid_mesh,
    (GeomType.ELLIPSOID, GeomType.ELLIPSOID): mesh_mesh,
}

#: The geom types whose pair kernels take a hull (``Model.geom_mesh``) for their shape (an ellipsoid's with its
#: radii after it: :mod:`jaxmor.sim.collision.ellipsoid`).
HULL_SHAPED = (GeomType.MESH, GeomType.ELLIPSOID)

#: Contact slots of each supported type pair (either order; read off :data:`PAIR_KERNELS`).
PAIR_SLOTS = {kinds: function.slots for kinds, function in PAIR_KERNELS.items()}

#: The key stride of a terrain candidate (``(robot geom, world geom)``'s keys are ``stride`` apart): the most slots
#: of any type pair.
TERRAIN_KEY_STRIDE = max(PAIR_SLOTS.values())

#: The rules that combine two given friction coefficients (``Options.friction_rule``).
FRICTION_RULES = {
    "geometric_mean": lambda a, b: safe_sqrt(a * b),
    "mean": lambda a, b: 0.5 * (a + b),
    "min": jnp.minimum,
    "max": jnp.maximum,
}


# --------------------------------------------------------------------------------------------------
# slot layout and pair checks (static)


def _ground_geoms(model: Model) -> list[int]:
    if not model.ground:
        return []
    return [g for g in range(model.ng) if model.geom_body[g] >= 0 and model.geom_ground[g]]


def vertex_geoms(model: Model) -> list[int]:
    """The ground geoms that the height field's vertices can enter (boxes and hulls), each with
    :data:`VERTEX_SLOTS` slots after the ground slots; none without a field (static)."""
    if model.height_field is None:
        return []
    return [g for g in _ground_geoms(model) if model.geom_type[g] in (GeomType.BOX, GeomType.MESH)]


def _check_types(model: Model) -> None:
    for g, t in enumerate(model.geom_type):
        if t not in GROUND_POINTS:
            raise ArgumentError(f"geom {model.geom_names[g]!r} has the unsupported type {t!r}")


def pair_supported(ta: GeomType, tb: GeomType) -> bool:
    """Whether geoms of the types ``ta`` and ``tb`` collide with each other (in either order)."""
    return (ta, tb) in PAIR_KERNELS or (tb, ta) in PAIR_KERNELS


def _supported_text() -> str:
    return ", ".join(f"{a.label}-{b.label}" for a, b in PAIR_KERNELS)


def pair_slot_count(model: Model, pair: tuple[int, int]) -> int:
    """Number of contact slots of the pair ``(a, b)`` of geom indices (:data:`PAIR_SLOTS`; static).

    Raises:
        ArgumentError: the pair's types are not supported.
    """
    ta, tb = model.geom_type[pair[0]], model.geom_type[pair[1]]
    key = (ta, tb) if (ta, tb) in PAIR_SLOTS else (tb, ta)
    if key not in PAIR_SLOTS:
        check_pairs(model, [pair])
    return PAIR_SLOTS[key]


def _listed_count(model: Model) -> int:
    """Number of ground and pair slots (static): those before the terrain candidates."""
    _check_types(model)
    ground_slots = sum(GROUND_POINTS[model.geom_type[g]] for g in _ground_geoms(model))
    ground_slots += VERTEX_SLOTS * len(vertex_geoms(model))
    return ground_slots + sum(pair_slot_count(model, pair) for pair in model.contact_pairs)


def _kinds(ta: GeomType, tb: GeomType) -> tuple[tuple[GeomType, GeomType], bool]:
    """The :data:`PAIR_KERNELS` key of the type pair ``(ta, tb)`` and whether it is the other way round."""
    return ((ta, tb), False) if (ta, tb) in PAIR_KERNELS else ((tb, ta), True)


def contact_count(model: Model) -> int:
    """Number of contact slots ``nc`` of :func:`collide` (static): ground, pair and terrain candidates."""
    return _listed_count(model) + terrain_count(model, lambda ta, tb: PAIR_SLOTS[_kinds(ta, tb)[0]])


def _terrain_groups(model: Model):
    """For each terrain grid and each robot geom type in it, in slot order (static): ``(grid, rows, kinds,
    flipped, key offset)``, ``rows`` the indices into ``grid.robot`` of that type, world geom as A."""
    offset = _listed_count(model)
    for grid in model.terrain:
        nw = int(grid.world.shape[0])
        for kind in GeomType:
            rows = np.array([i for i, g in enumerate(grid.robot) if model.geom_type[g] == kind], dtype=np.int32)
            if rows.size:
                yield (grid, rows, *_kinds(grid.kind, kind), offset)
        offset += len(grid.robot) * nw * TERRAIN_KEY_STRIDE


def contact_bodies(model: Model) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(body_a, body_b)`` of every slot (static), as in :class:`Contacts`."""
    body_a, body_b = [], []
    for g in _ground_geoms(model):
        n = GROUND_POINTS[model.geom_type[g]]
        body_a += [-1] * n
        body_b += [model.geom_body[g]] * n
    for g in vertex_geoms(model):
        body_a += [-1] * VERTEX_SLOTS
        body_b += [model.geom_body[g]] * VERTEX_SLOTS
    for a, b in model.contact_pairs:
        k = pair_slot_count(model, (a, b))
        body_a += [model.geom_body[a]] * k
        body_b += [model.geom_body[b]] * k
    for grid, rows, kinds, _, _ in _terrain_groups(model):
        k = grid.capacity * PAIR_SLOTS[kinds]
        body_a += [-1] * (rows.size * k)
        body_b += [model.geom_body[grid.robot[r]] for r in rows for _ in range(k)]
    return tuple(body_a), tuple(body_b)


def check_pairs(model: Model, pairs) -> None:
    """Raise for out-of-range, same-body or unsupported pairs."""
    bad = []
    for pair in pairs:
        if len(pair) != 2:
            raise ArgumentError(f"contact pair {pair!r} must hold two geom indices")
        a, b = (int(x) for x in pair)
        for g in (a, b):
            if not 0 <= g < model.ng:
                raise ArgumentError(f"contact pair {pair!r}: geom index {g} is out of range [0, {model.ng})")
        if model.geom_body[a] == model.geom_body[b]:
            raise ArgumentError(
                f"contact pair ({model.geom_names[a]!r}, {model.geom_names[b]!r}): both geoms are on the same body"
            )
        if not pair_supported(model.geom_type[a], model.geom_type[b]):
            bad.append((a, b))
        for g in (a, b):
            if model.geom_type[g] == GeomType.ELLIPSOID and model.geom_mesh[g] < 0:
                raise ArgumentError(
                    f"contact pair: ellipsoid geom {model.geom_names[g]!r} has no hull for its pairs (a model saved "
                    "before jaxmor gave ellipsoids one): load it from its file again"
                )
    if bad:
        a, b = bad[0]
        na, nb = model.geom_names[a], model.geom_names[b]
        ta, tb = model.geom_type[a].label, model.geom_type[b].label
        more = ""
        if len(bad) > 1:
            others = ", ".join(f"({model.geom_names[x]!r}, {model.geom_names[y]!r})" for x, y in bad[1:])
            more = f"; {len(bad) - 1} more unsupported pair(s): {others}"
        raise ArgumentError(
            f"self-collision between geom {na!r} ({ta}) and geom {nb!r} ({tb}) "
            f"is not supported (supported: {_supported_text()}); exclude the pair, e.g. "
            f"with_self_collision(model, exclude=[({na!r}, {nb!r})]){more}"
        )


# --------------------------------------------------------------------------------------------------
# surface properties


def combine_friction(
    rule: str,
    mu_a: jax.Array,
    given_a: np.ndarray,
    mu_b: jax.Array,
    given_b: np.ndarray,
    priority_a: np.ndarray | int = 0,
    priority_b: np.ndarray | int = 0,
) -> jax.Array:
    """The friction coefficient of contacts between surfaces A and B.

    The surface of higher priority (MJCF ``priority``; URDF geoms and the ground have 0) gives its friction.
    Of equal priorities: both given, ``rule`` combines them; one given, that one (a surface whose description
    gives no friction, like every URDF geom, takes the other surface's); neither,
    :data:`jaxmor.modeling.builder.DEFAULT_FRICTION`, which is what a geom without a given friction holds.

    Args:
        rule: a key of :data:`FRICTION_RULES`.
        mu_a, mu_b: the coefficients, broadcastable.
        given_a, given_b: static bool arrays of the same shapes: whether each coefficient was given.
        priority_a, priority_b: int arrays (or ints) of the same shapes: the surfaces' priorities (static, or
            gathered for the terrain's world geoms).
    """
    both = FRICTION_RULES[rule](mu_a, mu_b)
    equal = jnp.where(given_a & given_b, both, jnp.where(given_a, mu_a, mu_b))
    if not isinstance(priority_a, jax.Array) and not isinstance(priority_b, jax.Array):
        priority_a, priority_b = np.asarray(priority_a), np.asarray(priority_b)
        if np.all(priority_a == priority_b):
            return equal
    return jnp.where(priority_a > priority_b, mu_a, jnp.where(priority_a < priority_b, mu_b, equal))


def _surfaces(model: Model, dtype) -> tuple[jax.Array, np.ndarray, np.ndarray, jax.Array]:
    """Every geom's ``(friction, friction given, priority, restitution)``."""
    return (
        model.geom_friction.astype(dtype),
        np.array(model.geom_friction_given, dtype=bool),
        np.array(model.geom_priority, dtype=np.int64),
        model.geom_restitution.astype(dtype),
    )


# --------------------------------------------------------------------------------------------------
# collide


def _checked_poses(model: Model, poses: Poses) -> tuple[jax.Array, jax.Array]:
    """The body poses ``(position (nb, 3), rotation (nb, 3, 3))`` in their common float dtype."""
    position = jnp.asarray(poses.position)
    rotation = jnp.asarray(poses.rotation)
    if position.shape != (model.nb, 3) or rotation.shape != (model.nb, 3, 3):
        raise ArgumentError(
            f"poses must be body poses of shapes ({model.nb}, 3, 3) and ({model.nb}, 3), "
            f"got {rotation.shape} and {position.shape}"
        )
    dtype = jnp.result_type(position.dtype, rotation.dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    return position.astype(dtype), rotation.astype(dtype)


def _geom_poses(
    model: Model, position: jax.Array, rotation: jax.Array, mocap=None
) -> tuple[jax.Array, jax.Array, np.ndarray]:
    """World ``(position (n, 3), rotation (n, 3, 3))`` of the geoms that need them (with a terrain: those of the
    ground and pair slots and the terrain's robot geoms, not its world geoms; else all; geoms welded to the world
    keep their poses, those of mocap bodies are moved to ``mocap``: ``(mocap_pos, mocap_quat)``, the file's poses
    without it), and ``at`` (ng,) int32 the row of each geom (static)."""
    dtype = position.dtype
    used = np.arange(model.ng)
    geom_r, geom_t = model.geom_rotation.astype(dtype), model.geom_translation.astype(dtype)
    if model.terrain:
        listed = {g for pair in model.contact_pairs for g in pair} | {g for grid in model.terrain for g in grid.robot}
        used = np.array(sorted(listed | set(_ground_geoms(model))), dtype=np.int32)
        geom_r, geom_t = geom_r[used], geom_t[used]
    at = np.zeros(model.ng, np.int32)
    at[used] = np.arange(used.size, dtype=np.int32)
    gb = np.array(model.geom_body, dtype=np.int32)[used] + 1  # index 0 of the padded body arrays is the world
    body_r = jnp.concatenate([jnp.eye(3, dtype=dtype)[None], rotation])[gb]
    body_p = jnp.concatenate([jnp.zeros((1, 3), dtype), position])[gb]
    geom_p, geom_r = body_p + jnp.einsum("gij,gj->gi", body_r, geom_t), body_r @ geom_r
    if mocap is not None and model.mocap_links:
        geom_p, geom_r = _mocap_geom_poses(model, used, geom_p, geom_r, mocap)
    return geom_p, geom_r, at


def _mocap_geom_poses(model: Model, used: np.ndarray, geom_p, geom_r, mocap) -> tuple[jax.Array, jax.Array]:
    """The poses of the geoms of mocap bodies among ``used`` moved with their bodies: each geom keeps its pose in
    its mocap body's frame (``Model.link_rotation``/``link_translation``: the body's pose in the file), which is
    put where the State's ``mocap_pos`` and (normalized) ``mocap_quat`` say."""
    mocap_of = {link: m for m, link in enumerate(model.mocap_links)}
    rows = np.array([k for k, g in enumerate(used) if model.geom_link[g] in mocap_of], dtype=np.int32)
    if not rows.size:
        return geom_p, geom_r
    dtype = geom_p.dtype
    links = np.array([model.geom_link[used[k]] for k in rows], dtype=np.int32)
    which = np.array([mocap_of[int(link)] for link in links], dtype=np.int32)
    link_r, link_t = model.link_rotation.astype(dtype)[links], model.link_translation.astype(dtype)[links]
    local_r = jnp.swapaxes(link_r, 1, 2) @ geom_r[rows]
    local_t = jnp.einsum("gji,gj->gi", link_r, geom_p[rows] - link_t)
    pos, quat = (jnp.asarray(x, dtype) for x in mocap)
    body_r = quat_to_rotation(quat[which])
    moved_p = pos[which] + jnp.einsum("gij,gj->gi", body_r, local_t)
    return geom_p.at[rows].set(moved_p), geom_r.at[rows].set(body_r @ local_r)


def _hulls(model: Model, geoms, dtype) -> tuple:
    """``(vertices (n, V, 3), planes (n, P, 4), valid (n, V) bool, faces (n, P, K) int, edges (n, E, 2) int)`` of the
    mesh geoms ``geoms``, in their frames; ``valid`` marks which rows are vertices (the rest is padding, never
    chosen); faces and edges padded by :func:`jaxmor.sim.collision.polytope.padded_topology`."""
    hulls = np.array([model.geom_mesh[g] for g in geoms], dtype=np.int32)
    count = np.array(model.mesh_vertex_count, dtype=np.int32)[hulls]
    valid = np.arange(model.mesh_vertices.shape[1])[None, :] < count[:, None]
    faces, edges = padded_topology(model.mesh_faces, model.mesh_edges, model.mesh_planes.shape[1])
    vertices, planes = model.mesh_vertices.astype(dtype)[hulls], model.mesh_planes.astype(dtype)[hulls]
    return vertices, planes, valid, faces[hulls], edges[hulls]


def _pair_shapes(model: Model, geoms, dtype):
    """The shapes the pair kernels take for the geoms ``geoms`` (one type): sizes (n, 3) [m] of primitives, the
    hulls of meshes (:func:`_hulls`), the hulls of ellipsoids with their radii (n, 3) [m] after them."""
    kind = model.geom_type[geoms[0]]
    size = model.geom_size.astype(dtype)[np.asarray(geoms, dtype=np.int32)]
    if kind not in HULL_SHAPED:
        return size
    hulls = _hulls(model, geoms, dtype)
    return (*hulls, size) if kind == GeomType.ELLIPSOID else hulls


def _ground_points(model: Model, geoms: list[int], geom_p: jax.Array, geom_r: jax.Array, at) -> jax.Array:
    """(n, 3) the ground points of the geoms ``geoms``, in geom order: each type's kernel runs once on the
    geoms of that type, and its points are put back in place."""
    dtype = geom_p.dtype
    size = model.geom_size.astype(dtype)
    blocks, order = [], []
    for kind, points in GROUND_KERNELS.items():
        idx = [g for g in geoms if model.geom_type[g] == kind]
        if not idx:
            continue
        sel = np.array(idx, dtype=np.int32)
        hull = _hulls(model, idx, dtype) if kind == GeomType.MESH else None
        blocks.append(points(geom_p[at[sel]], geom_r[at[sel]], size[sel], hull).reshape(-1, 3))
        order += [(g, k) for g in idx for k in range(points.slots)]
    slot_of = {key: i for i, key in enumerate(order)}
    perm = np.array([slot_of[(g, k)] for g in geoms for k in range(GROUND_POINTS[model.geom_type[g]])], dtype=np.int32)
    return jnp.concatenate(blocks)[perm]


def _ground_contacts(model: Model, geom_p: jax.Array, geom_r: jax.Array, at) -> tuple[jax.Array, ...]:
    """``(distance, position, normal, friction, restitution)`` of the ground slots."""
    dtype = geom_p.dtype
    geoms = _ground_geoms(model)
    pts = _ground_points(model, geoms, geom_p, geom_r, at)
    geom_of_slot = np.array([g for g in geoms for _ in range(GROUND_POINTS[model.geom_type[g]])], dtype=np.int32)
    n_ground = pts.shape[0]
    f, restitution = _against_ground(model, model.ground_friction, model.ground_restitution, geom_of_slot, dtype)
    plane = (pts[:, 2] - model.ground_height.astype(dtype), pts, up(dtype, (n_ground,)), f, restitution)
    if model.height_field is None:
        return plane
    pts = _ellipsoids_facing_the_field(model, pts, geom_of_slot, geom_p, geom_r, at)
    return _nearer(plane, _field_contacts(model, pts, geom_of_slot))


def _ellipsoids_facing_the_field(model: Model, pts, geom_of_slot: np.ndarray, geom_p, geom_r, at) -> jax.Array:
    """``pts`` with each ellipsoid's ground point moved to its support point against the height field's normal
    under it, ``c - R A^2 R^T n / |A R^T n|`` (the point whose outward normal is ``-n``; on a slope the lowest point
    in ``z`` lies off the surface's nearest one); the other slots' points as they are."""
    slots = np.flatnonzero(np.array([model.geom_type[g] == GeomType.ELLIPSOID for g in geom_of_slot], dtype=bool))
    if not slots.size:
        return pts
    geoms = geom_of_slot[slots]
    size, rotation = model.geom_size.astype(pts.dtype)[geoms], geom_r[at[geoms]]
    _, normal, _ = surface(model.height_field, pts[slots, :2])
    support, _ = ellipsoid_support(geom_p[at[geoms]], rotation, size, normal)
    return pts.at[slots].set(support)


def _against_ground(model: Model, friction, restitution, geom_of_slot: np.ndarray, dtype) -> tuple[jax.Array, ...]:
    """``(friction, restitution)`` (n,) of ground slots on a ground surface (the plane or the height field) of
    ``friction`` and ``restitution``: a given friction (priority 0), combined with each slot's geom's by
    ``model.opt.friction_rule``; the larger restitution."""
    mu, given, priority, rest = _surfaces(model, dtype)
    f = combine_friction(
        model.opt.friction_rule,
        friction.astype(dtype),
        np.True_,
        mu[geom_of_slot],
        given[geom_of_slot],
        0,
        priority[geom_of_slot],
    )
    return jnp.broadcast_to(f, geom_of_slot.shape), jnp.maximum(restitution.astype(dtype), rest[geom_of_slot])


def _field_contacts(model: Model, pts: jax.Array, geom_of_slot: np.ndarray) -> tuple[jax.Array, ...]:
    """The ground slots' ``(distance, position, normal, friction, restitution)`` against the height field
    (:mod:`jaxmor.sim.collision.height_field`): a sphere's and a capsule's points on their spheres' radii."""
    dtype = pts.dtype
    field = model.height_field
    rounded = np.array([model.geom_type[g] in (GeomType.SPHERE, GeomType.CAPSULE) for g in geom_of_slot], dtype=bool)
    radius = jnp.where(rounded, model.geom_size.astype(dtype)[geom_of_slot, 0], 0.0)
    gap, position, normal = field_gaps(field, pts, radius)
    return gap, position, normal, *_against_ground(model, field.friction, field.restitution, geom_of_slot, dtype)


def _vertex_contacts(model: Model, geom_p: jax.Array, geom_r: jax.Array, at) -> tuple[jax.Array, ...]:
    """The vertex slots' ``(distance, position, normal, friction, restitution)``: the height field's vertices
    deepest inside each box and hull on the ground (:func:`jaxmor.sim.collision.height_field.vertices_inside`), in
    :func:`_vertex_geoms` order."""
    dtype = geom_p.dtype
    field = model.height_field
    window = field.window or MAX_WINDOW  # 0: the geoms came after the field; search the most
    geoms = vertex_geoms(model)
    blocks, order = [], []
    for kind in (GeomType.BOX, GeomType.MESH):
        idx = [g for g in geoms if model.geom_type[g] == kind]
        if not idx:
            continue
        sel = np.array(idx, dtype=np.int32)
        planes = (
            _box_planes(model.geom_size.astype(dtype)[sel]) if kind == GeomType.BOX else _hulls(model, idx, dtype)[1]
        )
        blocks.append(vertices_inside(field, window, geom_p[at[sel]], geom_r[at[sel]], planes))
        order += idx
    perm = np.argsort(np.array([geoms.index(g) for g in order]), kind="stable")
    gap, position, normal = (
        jnp.concatenate(part)[perm].reshape(-1, *part[0].shape[2:]) for part in zip(*blocks, strict=True)
    )
    geom_of_slot = np.repeat(np.array(geoms, dtype=np.int32), VERTEX_SLOTS)
    return gap, position, normal, *_against_ground(model, field.friction, field.restitution, geom_of_slot, dtype)


def _box_planes(size: jax.Array) -> jax.Array:
    """(n, 6, 4) the face planes of boxes of half-sizes ``size`` (n, 3) [m] in their frames: ``(+-e_i, size_i)``."""
    normals = np.concatenate([np.eye(3), -np.eye(3)])
    offsets = jnp.concatenate([size, size], axis=-1)  # (n, 6)
    return jnp.concatenate(
        [jnp.broadcast_to(jnp.asarray(normals, size.dtype), (*size.shape[:1], 6, 3)), offsets[..., None]], -1
    )


def _nearer(a: tuple[jax.Array, ...], b: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
    """Per slot, the candidate of ``a`` or ``b`` (``(distance, position, normal, friction, restitution)``) whose
    distance is smaller."""
    take_b = b[0] < a[0]
    return tuple(jnp.where(take_b.reshape(take_b.shape + (1,) * (x.ndim - 1)), y, x) for x, y in zip(a, b, strict=True))


def _pair_groups(model: Model) -> dict[tuple, list[int]]:
    """The pairs' indices grouped by the type pair of :data:`PAIR_KERNELS` they run on, and whether the pair is
    given the other way round (static)."""
    groups: dict[tuple, list[int]] = {}
    for index, (a, b) in enumerate(model.contact_pairs):
        groups.setdefault(_kinds(model.geom_type[a], model.geom_type[b]), []).append(index)
    return groups


def _run_pairs(kinds, flipped: bool, a: tuple, b: tuple) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(distance (n, k), normal (n, k, 3), position (n, k, 3))`` of ``n`` pairs of geoms A and B, each given as
    ``(centre, rotation, shape)``: ``kinds``' kernel (on ``(B, A)`` when ``flipped``), the normal from A to B."""
    first, second = (b, a) if flipped else (a, b)
    d, n, p_first, p_second = PAIR_KERNELS[kinds](*first, *second)
    k = PAIR_KERNELS[kinds].slots
    d, n = d.reshape(-1, k), n.reshape(-1, k, 3)
    return (d, -n, p_first.reshape(-1, k, 3)) if flipped else (d, n, p_second.reshape(-1, k, 3))


def _pair_geometry(model: Model, geom_p: jax.Array, geom_r: jax.Array, at, counts: list[int]) -> tuple[jax.Array, ...]:
    """``(distance, normal, position)`` of the pair slots, in slot order (each pair's slots consecutive): each
    kernel runs once on its group of pairs."""
    dtype = geom_p.dtype
    pairs = model.contact_pairs
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])

    def geoms(indices):
        """``(centre, rotation, shape)`` of geoms of one kind: the shape is the size of a primitive, the
        hull of a mesh (:func:`_hulls`)."""
        return geom_p[at[indices]], geom_r[at[indices]], _pair_shapes(model, indices, dtype)

    outs, order = [], []
    for (kinds, flipped), members in _pair_groups(model).items():
        a = np.array([pairs[s][0] for s in members], dtype=np.int32)
        b = np.array([pairs[s][1] for s in members], dtype=np.int32)
        d, n, p = _run_pairs(kinds, flipped, geoms(a), geoms(b))
        outs.append((d.reshape(-1), n.reshape(-1, 3), p.reshape(-1, 3)))
        order += [start[s] + j for s in members for j in range(PAIR_KERNELS[kinds].slots)]
    inverse = np.argsort(np.array(order))
    return tuple(jnp.concatenate([o[i] for o in outs])[inverse] for i in range(3))


def _pair_contacts(model: Model, geom_p: jax.Array, geom_r: jax.Array, at) -> tuple[jax.Array, ...]:
    """``(distance, position, normal, friction, restitution)`` of the pair slots."""
    pairs = model.contact_pairs
    counts = [pair_slot_count(model, pair) for pair in pairs]
    distance, normal, position = _pair_geometry(model, geom_p, geom_r, at, counts)
    mu, given, priority, rest = _surfaces(model, geom_p.dtype)
    ga = np.repeat(np.array([a for a, _ in pairs], dtype=np.int32), counts)
    gb = np.repeat(np.array([b for _, b in pairs], dtype=np.int32), counts)
    rule = model.opt.friction_rule
    friction = combine_friction(rule, mu[ga], given[ga], mu[gb], given[gb], priority[ga], priority[gb])
    return distance, position, normal, friction, jnp.maximum(rest[ga], rest[gb])


def _world_shapes(model: Model, kind: GeomType, world: jax.Array, dtype):
    """The shapes of the world geoms ``world`` (a traced index array) of one kind: sizes, or gathered hulls."""
    if kind != GeomType.MESH:
        return model.geom_size.astype(dtype)[world]
    hull = jnp.asarray(np.array(model.geom_mesh, dtype=np.int32))[world]
    count = jnp.asarray(np.array(model.mesh_vertex_count, dtype=np.int32))[hull]
    valid = jnp.arange(model.mesh_vertices.shape[1])[None, :] < count[:, None]
    topology = padded_topology(model.mesh_faces, model.mesh_edges, model.mesh_planes.shape[1])
    faces, edges = (jnp.asarray(x)[hull] for x in topology)
    return model.mesh_vertices.astype(dtype)[hull], model.mesh_planes.astype(dtype)[hull], valid, faces, edges


def _terrain_contacts(model: Model, geom_p: jax.Array, geom_r: jax.Array, at) -> list[tuple[jax.Array, ...]]:
    """``(distance, position, normal, friction, restitution, key)`` of the terrain candidates, one tuple per
    group of :func:`_terrain_groups`: each robot geom against the ``capacity`` world geoms of its cell (world
    geom as A); padding entries get :data:`UNUSED_GAP` and the key ``-1``."""
    dtype = geom_p.dtype
    mu, given, priority, rest = _surfaces(model, dtype)
    out, found = [], {}
    for grid, rows, kinds, flipped, offset in _terrain_groups(model):
        c, k, nw = grid.capacity, PAIR_KERNELS[kinds].slots, grid.world.shape[0]
        if offset not in found:  # one lookup per grid, for all its robot geoms
            found[offset] = lookup(grid, geom_p[at[np.array(grid.robot, dtype=np.int32)]])
        robot = np.array(grid.robot, dtype=np.int32)[rows]
        local, valid = (x[rows].reshape(-1) for x in found[offset])
        world = grid.world[local]
        r = np.repeat(robot, c)
        shape_r = _pair_shapes(model, r, dtype)
        a = (model.geom_translation.astype(dtype)[world], model.geom_rotation.astype(dtype)[world])
        d, n, p = _run_pairs(
            kinds, flipped, (*a, _world_shapes(model, grid.kind, world, dtype)), (geom_p[at[r]], geom_r[at[r]], shape_r)
        )
        ok = valid[:, None]
        world_priority = {p for p, b in zip(model.geom_priority, model.geom_body, strict=True) if b < 0}
        prio = world_priority.pop() if len(world_priority) == 1 else jnp.asarray(priority)[world]
        friction = combine_friction(
            model.opt.friction_rule, mu[world], jnp.asarray(given)[world], mu[r], given[r], prio, priority[r]
        )
        key = offset + ((np.repeat(rows, c) * nw + local) * TERRAIN_KEY_STRIDE)[:, None] + np.arange(k)
        out.append(
            (
                jnp.where(ok, d, UNUSED_GAP).reshape(-1),
                jnp.where(ok[..., None], p, geom_p[at[r]][:, None, :]).reshape(-1, 3),
                jnp.where(ok[..., None], n, up(dtype)).reshape(-1, 3),
                jnp.repeat(friction, k),
                jnp.repeat(jnp.maximum(rest[world], rest[r]), k),
                jnp.where(ok, key, -1).astype(jnp.int32).reshape(-1),
            )
        )
    return out


def collide(model: Model, poses: Poses, mocap: tuple[jax.Array, jax.Array] | None = None) -> Contacts:
    """Contact candidates of every slot (layout and conventions: ``docs/design/collision.md``).

    Args:
        model: the model.
        poses: world poses of the bodies (:func:`jaxmor.sim.kinematics.body_poses`), (nb, 3, 3) and (nb, 3);
            their dtype is the result's.
        mocap: ``(mocap_pos (nmocap, 3), mocap_quat (nmocap, 4))`` the mocap bodies' poses (``State``'s);
            ``None``: where the description puts them.

    Returns:
        :class:`Contacts` with :func:`contact_count` slots.

    Raises:
        ArgumentError: the poses have the wrong shape, or ``model.contact_pairs`` holds an
            unsupported pair (trace-time checks).
    """
    _check_types(model)
    check_pairs(model, model.contact_pairs)
    check_current(model)
    position, rotation = _checked_poses(model, poses)
    dtype = position.dtype
    body_a, body_b = (np.array(b, dtype=np.int32) for b in contact_bodies(model))
    key, overflow = np.arange(_listed_count(model), dtype=np.int32), np.zeros((), np.int32)
    if not body_a.size:
        empty = jnp.zeros((0,), dtype)
        shapes = (empty, jnp.zeros((0, 3), dtype), jnp.zeros((0, 3, 3), dtype), empty, empty)
        return Contacts(*shapes, body_a, body_b, key, overflow)
    geom_p, geom_r, at = _geom_poses(model, position, rotation, mocap)
    parts = []
    if _ground_geoms(model):
        parts.append(_ground_contacts(model, geom_p, geom_r, at))
    if vertex_geoms(model):
        parts.append(_vertex_contacts(model, geom_p, geom_r, at))
    if model.contact_pairs:
        parts.append(_pair_contacts(model, geom_p, geom_r, at))
    if model.terrain:
        terrain = _terrain_contacts(model, geom_p, geom_r, at)
        parts += [part[:5] for part in terrain]
        key = jnp.concatenate([jnp.asarray(key), *(part[5] for part in terrain)])
    distance, point, normal, friction, restitution = (jnp.concatenate(field) for field in zip(*parts, strict=True))
    return Contacts(
        distance=distance,
        position=point,
        frame=tangent_frame(normal),
        friction=friction,
        restitution=restitution,
        body_a=body_a,
        body_b=body_b,
        key=key,
        overflow=overflow,
    )
