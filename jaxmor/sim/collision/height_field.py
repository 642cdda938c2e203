"""The ground's height field (:class:`~jaxmor.types.HeightField`): the surface under a point, and the gaps of the
ground slots to it.

The surface is MuJoCo's: two triangles per grid cell, split by the diagonal from vertex ``(i, j)`` to ``(i + 1,
j + 1)``, so a plane sampled on the grid is that plane exactly (the closed forms of a tilted plane hold on it) and
each triangle has one normal. A bilinear patch would be smoother but curved, its normals varying inside a cell:
rest heights and slopes on a sampled plane would no longer be exact, and MuJoCo's rest heights on the same grid
would differ by the patch's bulge.

Each ground point of a geom (:mod:`jaxmor.sim.collision.ground`) looks up the one cell under it: the cost per step
follows the ground points, never the grid's size, and so does the compiled program (one gather of four heights).
A sphere's or a capsule's point is moved to ``c - r n``, ``n`` the surface normal under its centre ``c``, so that
on a slope it is the point that touches (its gap ``n . (c - q) - r`` is then exact on a planar triangle). The gap of
a point ``p`` over the surface point ``q`` below it is ``n_z (p_z - q_z)``, its distance along the normal to the
triangle's plane. Outside the grid the field has no surface (an infinite gap): only the plane is there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.types import HeightField, Model


def surface(field: HeightField, xy: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(height (n,), normal (n, 3), inside (n,) bool)``: the field's surface under each point ``xy`` (n, 2) [m]:
    its height [m], the unit normal of its triangle, and whether the point lies over the grid (outside, the
    values are the nearest edge cell's, unused)."""
    dtype = xy.dtype
    heights = field.heights.astype(dtype)
    ny, nx = heights.shape
    scaled = (xy - field.origin.astype(dtype)) / field.spacing.astype(dtype)
    limit = jnp.array([nx - 1, ny - 1], dtype)
    inside = jnp.all((scaled >= 0) & (scaled <= limit), axis=-1)
    cell = jnp.clip(jnp.floor(jax.lax.stop_gradient(scaled)), 0, limit - 1).astype(np.int32)
    fraction = scaled - cell.astype(dtype)
    j, i = cell[:, 0], cell[:, 1]
    h00, h10 = heights[i, j], heights[i, j + 1]  # (i, j), one step along x
    h01, h11 = heights[i + 1, j], heights[i + 1, j + 1]
    fx, fy = fraction[:, 0], fraction[:, 1]
    lower = fx >= fy  # the triangle (00, 10, 11), else (00, 11, 01)
    slope_x = jnp.where(lower, h10 - h00, h11 - h01)  # dz per cell along x
    slope_y = jnp.where(lower, h11 - h10, h01 - h00)
    height = h00 + slope_x * fx + slope_y * fy
    spacing = field.spacing.astype(dtype)
    normal = jnp.stack([-slope_x / spacing[0], -slope_y / spacing[1], jnp.ones_like(fx)], axis=-1)
    normal = normal / jnp.linalg.norm(normal, axis=-1, keepdims=True)
    return height, normal, inside


def ground_heights(model: Model, xy: jax.Array) -> jax.Array:
    """(n,) the height of the ground's surface under the points ``xy`` (n, 2) [m]: the plane's, or the height field's
    where it lies over the grid and above the plane (a height scan of the terrain, e.g. around a robot's base).

    Raises:
        ValueError: the model has no ground.
    """
    if not model.ground:
        raise ValueError("ground_heights needs a model with a ground (jaxmor.add_ground or a height field)")
    xy = jnp.asarray(xy)
    plane = jnp.broadcast_to(jnp.asarray(model.ground_height, xy.dtype), xy.shape[:1])
    if model.height_field is None:
        return plane
    height, _, inside = surface(model.height_field, xy)
    return jnp.where(inside, jnp.maximum(height, plane), plane)


def field_gaps(field: HeightField, points: jax.Array, radius: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(gap (n,), position (n, 3), normal (n, 3))`` of ground points against the field.

    Args:
        field: the height field.
        points: (n, 3) the ground points [m]: a sphere's or a capsule's lowest point ``c - r z``, else a vertex.
        radius: (n,) the radius of the sphere each point lies on (0 for a vertex) [m].

    Returns:
        The gap along the surface normal (``inf`` off the grid) [m], the point that touches (``c - r n`` on a
        sphere) and the normal of the triangle under it.
    """
    up = jnp.array([0.0, 0.0, 1.0], points.dtype)
    centre = points + radius[:, None] * up
    _, normal, _ = surface(field, centre[:, :2])
    touching = centre - radius[:, None] * normal
    height, normal, inside = surface(field, touching[:, :2])
    gap = normal[:, 2] * (touching[:, 2] - height)
    return jnp.where(inside, gap, jnp.inf), touching, normal


#: Contact slots of each box and hull geom for the field's vertices inside it: the deepest of them.
VERTEX_SLOTS = 4

#: A face looks down when the world ``z`` of its outward normal is below ``-DOWNWARD``: only such a face lets a
#: field vertex out of a geom (:func:`vertices_inside`).
DOWNWARD = 0.1

#: The largest :attr:`~jaxmor.types.HeightField.window`: 16 x 16 field vertices searched per box or hull geom.
MAX_WINDOW = 16


def _window_vertices(field: HeightField, window: int, centre: jax.Array) -> jax.Array:
    """(n, K, 3) the field's vertices [m] in the square of ``window`` per side (fewer where the grid is smaller)
    around each of ``n`` centres ``centre`` (n, 3), kept inside the grid."""
    dtype = centre.dtype
    heights = field.heights.astype(dtype)
    ny, nx = heights.shape
    kx, ky = min(window, nx), min(window, ny)
    origin, spacing = field.origin.astype(dtype), field.spacing.astype(dtype)
    cell = jnp.floor(jax.lax.stop_gradient((centre[:, :2] - origin) / spacing)).astype(np.int32)
    start_x = jnp.clip(cell[:, 0] - (kx // 2 - 1), 0, nx - kx)
    start_y = jnp.clip(cell[:, 1] - (ky // 2 - 1), 0, ny - ky)
    ix = start_x[:, None] + np.arange(kx, dtype=np.int32)  # (n, kx)
    iy = start_y[:, None] + np.arange(ky, dtype=np.int32)  # (n, ky)
    z = heights[iy[:, :, None], ix[:, None, :]]  # (n, ky, kx)
    x = jnp.broadcast_to((origin[0] + ix * spacing[0])[:, None, :], z.shape)
    y = jnp.broadcast_to((origin[1] + iy * spacing[1])[:, :, None], z.shape)
    return jnp.stack([x, y, z], axis=-1).reshape(centre.shape[0], -1, 3)


def _exit_faces(signed: jax.Array, inside: jax.Array, normal_z: jax.Array) -> jax.Array:
    """(n, K) int: the face through which each vertex leaves its geom (:func:`vertices_inside`): inside, the
    downward face of least lift; outside, the lowest face.

    Args:
        signed: (n, K, P) each vertex's signed distance to each face plane [m] (no gradient).
        inside: (n, K) whether the vertex lies inside every plane.
        normal_z: (n, P) the world ``z`` of each face's outward normal.
    """
    nz = jax.lax.stop_gradient(normal_z)[:, None, :]
    down = nz < -DOWNWARD
    lift = jnp.where(down, signed / jnp.where(down, nz, -1.0), jnp.inf)
    lowest = jnp.broadcast_to(jnp.argmin(nz, axis=-1), inside.shape)
    return jnp.where(inside, jnp.argmin(lift, axis=-1), lowest)


def vertices_inside(
    field: HeightField, window: int, centre: jax.Array, rotation: jax.Array, planes: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(gap, position, normal)``, each ``(n, VERTEX_SLOTS, ...)``: the field's vertices deepest inside ``n`` convex
    geoms, searched in the square of ``window`` vertices per side around each geom's centre.

    The field lies below: a vertex inside a geom leaves it through a face that looks down, and the one chosen is
    the face whose plane it leaves by the least lift of the geom (``s / n_z``, ``s`` the vertex's signed distance
    to the face plane, ``n_z < -DOWNWARD`` the world ``z`` of its outward normal). A side face is never chosen, so a
    vertex level with a box's sunk bottom face does not catch its side as it slides over it. The vertex's gap is
    its signed distance to that face (negative), its normal, from the field to the geom, the face's outward normal
    reversed, its position the point on that face. A vertex outside has the largest of its distances as its gap
    (a lower bound of the true one) and the lowest face's normal. The choices carry no gradient; gaps, positions
    and normals carry the pose's and the heights'.

    Args:
        field: the height field.
        window: vertices per side of the searched square (:attr:`HeightField.window`).
        centre: (n, 3) the geoms' centres [m].
        rotation: (n, 3, 3) their rotations (geom frame to world).
        planes: (n, P, 4) their face planes in their frames: outward unit normal and offset, ``n . x <= d`` inside.
    """
    vertices = _window_vertices(field, window, centre)
    local = jnp.einsum("nji,nkj->nki", rotation, vertices - centre[:, None, :])
    signed = jnp.einsum("npi,nki->nkp", planes[..., :3], local) - planes[:, None, :, 3]  # (n, K, P)
    fixed = jax.lax.stop_gradient(signed)
    inside = jnp.max(fixed, axis=-1) < 0
    face = _exit_faces(fixed, inside, jnp.einsum("ni,npi->np", rotation[:, 2, :], planes[..., :3]))
    gap = jnp.where(inside, jnp.take_along_axis(signed, face[..., None], axis=-1)[..., 0], jnp.max(signed, axis=-1))
    _, chosen = jax.lax.top_k(-jax.lax.stop_gradient(gap), VERTEX_SLOTS)  # a grid has at least 4 vertices
    face = jnp.take_along_axis(face, chosen, axis=1)
    gap = jnp.take_along_axis(gap, chosen, axis=1)
    outward = jnp.take_along_axis(planes[..., :3], face[..., None], axis=1)  # (n, S, 3) in the geom frame
    normal = -jnp.einsum("nij,nsj->nsi", rotation, outward)
    position = jnp.take_along_axis(vertices, chosen[..., None], axis=1) + gap[..., None] * normal
    return gap, position, normal
