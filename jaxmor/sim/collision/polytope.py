"""Contact kernels on convex polytopes: box-box and every pair of a box, a cylinder's prism or a mesh (its convex
hull) with a box, a prism or a mesh, by the separating-axis manifold (:mod:`.separating_axis`).

Kernels take two batches of geoms as :mod:`~jaxmor.sim.collision.primitive`'s do, a mesh geom's size being its
hull ``(vertices (..., V, 3) [m], planes (..., P, 4), valid (..., V) bool, faces (..., P, K) int, edges (..., E, 2)
int)`` in the geom's frame (``valid`` marks the real vertices; padding rows are the hull's centroid, inside it, so
they never decide an axis or a contact; :func:`padded_topology` pads faces and edges). The method
and its limits: ``docs/design/collision.md``, "Polytope contacts".
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.sim.collision.contacts import kernel
from jaxmor.sim.collision.primitive import deepest_on_segment, segment_ends
from jaxmor.sim.collision.separating_axis import polytope_manifold


def padded_topology(
    faces: Sequence[tuple[tuple[int, ...], ...]], edges: Sequence[tuple[tuple[int, int], ...]], planes: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(faces (n, planes, K), edges (n, E, 2))`` int32 of ``n`` hulls' rings and edges (``planes`` the Model's padded
    plane count), ``K`` and ``E`` the most of any of them: rings padded by repeating their last vertex, the
    missing planes' faces by the first face (as :func:`jaxmor.io.mesh.padded` repeats the first plane), the edges
    by the first edge (a repeated edge adds no axis)."""
    k = max((len(r) for f in faces for r in f), default=3)
    e = max((len(x) for x in edges), default=1)
    out_f = np.zeros((len(faces), planes, k), np.int32)
    out_e = np.zeros((len(edges), e, 2), np.int32)
    for i, (rings, sides) in enumerate(zip(faces, edges, strict=True)):
        rows = [list(r) + [r[-1]] * (k - len(r)) for r in rings]
        out_f[i] = rows[0]
        out_f[i, : len(rows)] = rows
        out_e[i] = sides[0]
        out_e[i, : len(sides)] = sides
    return out_f, out_e


#: (8, 3) the corner sign vectors of a box, ``s_x`` varying slowest and ``s_z`` fastest.
BOX_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))


def _box_faces() -> np.ndarray:
    """(6, 4) the corners (rows of :data:`BOX_SIGNS`) of the faces ``-x, -y, -z, +x, +y, +z``, in order around
    each face."""
    faces = []
    for side in (-1.0, 1.0):
        for k in range(3):
            u, v = (k + 1) % 3, (k + 2) % 3
            ring = []
            for su, sv in ((-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)):
                sign = np.zeros(3)
                sign[[k, u, v]] = side, su, sv
                ring.append(int(np.flatnonzero(np.all(BOX_SIGNS == sign, axis=1))[0]))
            faces.append(ring)
    return np.array(faces, dtype=np.int32)


#: (6, 4) int the corners of each face of a box (:func:`box_polytope`'s face order), in order around it.
BOX_FACES = _box_faces()

#: (12, 2) int the edges of a box as pairs of corners (rows of :data:`BOX_SIGNS` differing in one sign).
BOX_EDGES = np.array(
    [(i, j) for i in range(8) for j in range(i + 1, 8) if np.sum(BOX_SIGNS[i] != BOX_SIGNS[j]) == 1], dtype=np.int32
)


def box_polytope(centre: jax.Array, rotation: jax.Array, half: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A box as a convex polytope: ``(vertices (..., 8, 3), planes (..., 6, 4))``.

    Args:
        centre: (..., 3) the box's centre [m].
        rotation: (..., 3, 3) its orientation (columns: its axes in the world frame).
        half: (..., 3) its half-extents [m].

    Returns:
        The 8 corners ``centre + R (s * half)`` in the order of the sign vectors ``s`` of :data:`BOX_SIGNS`,
        and the 6 face planes ``(n, d)``: outward unit normal ``n`` [-] and offset ``d = n . centre + half_k``
        [m], a point ``x`` being inside where ``n . x <= d`` for all faces; faces ``-x, -y, -z, +x, +y, +z``.
    """
    signs = jnp.asarray(BOX_SIGNS, centre.dtype)
    vertices = centre[..., None, :] + jnp.einsum("...ij,...kj->...ki", rotation, signs * half[..., None, :])
    axes = jnp.swapaxes(rotation, -1, -2)  # rows: the box axes
    normals = jnp.concatenate([-axes, axes], -2)
    offsets = jnp.einsum("...kj,...j->...k", normals, centre) + jnp.concatenate([half, half], -1)
    return vertices, jnp.concatenate([normals, offsets[..., None]], -1)


def hull_polytope(centre, rotation, hull):
    """A mesh geom's hull in the world: ``(vertices (..., V, 3), planes (..., P, 4))``; ``hull`` its
    ``(vertices, planes, ...)`` in the geom frame."""
    vertices, planes = hull[:2]
    world = centre[..., None, :] + jnp.einsum("...ij,...vj->...vi", rotation, vertices)
    normals = jnp.einsum("...ij,...pj->...pi", rotation, planes[..., :3])
    offsets = planes[..., 3] + jnp.einsum("...pi,...i->...p", normals, centre)
    return world, jnp.concatenate([normals, offsets[..., None]], -1)


def _plane_distance(x, planes):
    """``(max_j n_j . x - d_j, that face's normal)``: a point's signed distance to a polytope's faces (exact
    inside and in face regions, a lower bound near edges; the face choice carries no gradient)."""
    s = jnp.einsum("...pj,...j->...p", planes[..., :3], x) - planes[..., 3]
    face = jnp.argmax(jax.lax.stop_gradient(s), -1)
    dist = jnp.take_along_axis(s, face[..., None], -1)[..., 0]
    return dist, jnp.take_along_axis(planes[..., :3], face[..., None, None], -2)[..., 0, :]


#: Side faces of the prism that stands in for a cylinder against boxes, cylinders and meshes: its caps are exact,
#: its side the circumscribed regular prism (touching the cylinder along each side face's middle line).
CYLINDER_SIDES = 16


def _prism_topology(sides: int) -> tuple[np.ndarray, np.ndarray]:
    """``(faces (sides + 2, sides), edges (3 sides, 2))`` of the cylinder's prism: vertices ``0..sides-1`` on the
    bottom rim, ``sides..2 sides-1`` above them; faces: the sides (side ``k`` between rim vertices ``k - 1`` and
    ``k``; 4 corners, the last repeated), then the bottom and top caps."""
    k = np.arange(sides)
    ring = [[(j - 1) % sides, j, sides + j, sides + (j - 1) % sides] for j in k]
    faces = [r + [r[-1]] * (sides - 4) for r in ring] + [list(k), list(sides + k)]
    edges = [(j, (j + 1) % sides) for j in k] + [(sides + j, sides + (j + 1) % sides) for j in k]
    edges += [(j, sides + j) for j in k]
    return np.array(faces, dtype=np.int32), np.array(edges, dtype=np.int32)


PRISM_FACES, PRISM_EDGES = _prism_topology(CYLINDER_SIDES)


def cylinder_polytope(centre: jax.Array, rotation: jax.Array, size: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A cylinder's prism (:data:`CYLINDER_SIDES`): ``(vertices (..., 2 sides, 3), planes (..., sides + 2, 4))`` in
    the world, ``size`` (..., 2+) its radius and half length [m]; side ``k``'s outward normal at the angle
    ``2 pi k / sides`` from the local x axis, at the radius's distance from the axis."""
    dtype = centre.dtype
    n = CYLINDER_SIDES
    face_angle = 2.0 * np.pi * np.arange(n) / n
    corner_angle = face_angle + np.pi / n
    r, half = size[..., 0, None], size[..., 1, None]
    out = r / np.cos(np.pi / n)
    x, y = out * jnp.asarray(np.cos(corner_angle), dtype), out * jnp.asarray(np.sin(corner_angle), dtype)
    rim = jnp.concatenate(
        [
            jnp.stack([x, y, -jnp.broadcast_to(half, x.shape)], -1),
            jnp.stack([x, y, jnp.broadcast_to(half, x.shape)], -1),
        ],
        -2,
    )
    vertices = centre[..., None, :] + jnp.einsum("...ij,...kj->...ki", rotation, rim)
    normals = np.concatenate(
        [np.stack([np.cos(face_angle), np.sin(face_angle), np.zeros(n)], -1), [[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]]]
    )
    world = jnp.einsum("...ij,kj->...ki", rotation, jnp.asarray(normals, dtype))
    offsets = jnp.einsum("...kj,...j->...k", world, centre) + jnp.concatenate(
        [jnp.broadcast_to(r, r.shape[:-1] + (n,)), half, half], -1
    )
    return vertices, jnp.concatenate([world, offsets[..., None]], -1)


def _manifold(first, second, slots: int):
    """The separating-axis manifold (:func:`polytope_manifold`) of batches of two polytopes: each a function of one
    geom's ``(centre, rotation, size)`` to its ``(vertices, planes, faces, edges)`` and those batches."""
    (make_a, ca, ra, sa), (make_b, cb, rb, sb) = first, second
    shape = jnp.broadcast_shapes(ca.shape[:-1], cb.shape[:-1])

    def flat(x, batch):  # x's dims after its ``batch`` leading ones are one geom's
        x = jnp.asarray(x)
        return jnp.broadcast_to(x, shape + x.shape[batch:]).reshape((-1,) + x.shape[batch:])

    side_a = jax.tree.map(lambda x: flat(x, ca.ndim - 1), (ca, ra, sa))
    side_b = jax.tree.map(lambda x: flat(x, cb.ndim - 1), (cb, rb, sb))
    out = _pairs(make_a, make_b, slots, *side_a, *side_b)
    return tuple(x.reshape(shape + x.shape[1:]) for x in out)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _pairs(make_a, make_b, slots, ca, ra, sa, cb, rb, sb):
    """:func:`polytope_manifold` over a batch of pairs; jitted so that a call outside ``jit`` compiles it once, not
    op by op (inside a traced step it is inlined)."""
    return jax.vmap(lambda *g: polytope_manifold(make_a(*g[:3]), make_b(*g[3:]), slots))(ca, ra, sa, cb, rb, sb)


def _box(centre, rotation, size):
    return (*box_polytope(centre, rotation, size), BOX_FACES, BOX_EDGES)


def _prism(centre, rotation, size):
    return (*cylinder_polytope(centre, rotation, size), PRISM_FACES, PRISM_EDGES)


def _hull(centre, rotation, hull):
    return (*hull_polytope(centre, rotation, hull), hull[3], hull[4])


@kernel(slots=8)
def box_cylinder(ca, ra_rot, sa, cb, rb_rot, sb):
    """Box A against cylinder B (its prism), 8 slots: the separating-axis manifold."""
    return _manifold((_box, ca, ra_rot, sa), (_prism, cb, rb_rot, sb), box_cylinder.slots)


@kernel(slots=8)
def cylinder_cylinder(ca, ra_rot, sa, cb, rb_rot, sb):
    """Cylinder A against cylinder B (their prisms), 8 slots: the separating-axis manifold."""
    return _manifold((_prism, ca, ra_rot, sa), (_prism, cb, rb_rot, sb), cylinder_cylinder.slots)


@kernel(slots=8)
def cylinder_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Cylinder A (its prism) against mesh B, 8 slots: the separating-axis manifold."""
    return _manifold((_prism, ca, ra_rot, sa), (_hull, cb, rb_rot, hull_b), cylinder_mesh.slots)


@kernel(slots=8)
def box_box(ca, ra_rot, sa, cb, rb_rot, sb):
    """Box A against box B, 8 slots (..., 8): the separating-axis manifold (:mod:`.separating_axis`)."""
    return _manifold((_box, ca, ra_rot, sa), (_box, cb, rb_rot, sb), box_box.slots)


@kernel(slots=1)
def sphere_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Sphere A against mesh B: its centre against B's face planes."""
    _, planes = hull_polytope(cb, rb_rot, hull_b)
    dist, n_face = _plane_distance(ca, planes)  # n_face points out of B, towards A
    r = sa[..., 0]
    return dist - r, -n_face, ca - r[..., None] * n_face, ca - dist[..., None] * n_face


@kernel(slots=3)
def capsule_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Capsule A against mesh B, 3 slots: its end spheres, then the sphere about its segment's deepest point."""
    _, planes = hull_polytope(cb, rb_rot, hull_b)
    p0, p1 = segment_ends(ca, ra_rot, sa[..., 1])
    t = deepest_on_segment(p0, p1, lambda x: _plane_distance(x, planes)[0])
    centres = jnp.stack([p0, p1, p0 + t[..., None] * (p1 - p0)], -2)
    hull3 = (hull_b[0][..., None, :, :], hull_b[1][..., None, :, :], None)  # the same hull for the 3 spheres
    return sphere_mesh(centres, None, sa[..., None, :], cb[..., None, :], rb_rot[..., None, :, :], hull3)


@kernel(slots=8)
def box_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Box A against mesh B, 8 slots: the separating-axis manifold."""
    return _manifold((_box, ca, ra_rot, sa), (_hull, cb, rb_rot, hull_b), box_mesh.slots)


@kernel(slots=8)
def mesh_mesh(ca, ra_rot, hull_a, cb, rb_rot, hull_b):
    """Mesh A against mesh B, 8 slots: the separating-axis manifold."""
    return _manifold((_hull, ca, ra_rot, hull_a), (_hull, cb, rb_rot, hull_b), mesh_mesh.slots)
