"""Ground points: the points of a geom that may touch the ground plane, a fixed number per geom type.

Each kernel maps ``n`` geoms of its type ``(centre (n, 3) [m], rotation (n, 3, 3), size (n, 3) [m], hull)`` to
their ``(n, slots, 3)`` world points [m] (``hull``: the ``(vertices, planes, valid)`` of mesh geoms in their
frames, ``None`` for the other types). The points, and why those of a box and a cylinder are exact:
``docs/design/collision.md``, "Ground contacts" and "Box ground contacts".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.sim.collision.contacts import kernel, up
from jaxmor.sim.collision.polytope import BOX_SIGNS
from jaxmor.sim.collision.primitive import segment_ends

#: ``BOX_CORNERS[k, side]`` (4, 3): the sign vectors of the corners of the box face perpendicular to
#: axis ``k`` on the side ``-1`` (``side = 0``) or ``+1`` (``side = 1``), in their order in :data:`BOX_SIGNS`.
BOX_CORNERS = np.array([[BOX_SIGNS[BOX_SIGNS[:, k] == s] for s in (-1.0, 1.0)] for k in range(3)])

#: Below this sine of the tilt of its axis from the vertical, a cylinder's rim points start from its local
#: x axis instead of its lowest direction (which is undefined when it stands upright).
CYLINDER_UPRIGHT = 1e-6

#: The vertices of a hull that touch the ground, its lowest.
HULL_POINTS = 4


@kernel(slots=1)
def sphere_points(centre, rotation, size, hull):
    """The lowest point of each sphere."""
    return (centre - size[:, :1] * up(centre.dtype))[:, None, :]


@kernel(slots=2)
def capsule_points(centre, rotation, size, hull):
    """The lowest points of each capsule's two end spheres."""
    e0, e1 = segment_ends(centre, rotation, size[:, 1])
    return jnp.stack([e0, e1], 1) - size[:, None, :1] * up(centre.dtype)


def _box_face_signs(rotation, size):
    """(n, 4, 3) corner signs of the face of each of ``n`` boxes nearest the ground.

    ``rotation`` (n, 3, 3) world rotations; ``size`` (n, 3) half-extents. The selection is integer-valued
    and carries no gradient.
    """
    a = jax.lax.stop_gradient(rotation[:, 2, :])  # r_i . z
    c = jax.lax.stop_gradient(size) * jnp.abs(a)
    top = c >= jnp.max(c, axis=-1, keepdims=True)
    k = jnp.argmax(jnp.where(top, jnp.abs(a), -1.0), axis=-1)  # ties: larger |a_i|, then lower index
    a_k = jnp.take_along_axis(a, k[:, None], axis=-1)[:, 0]
    side = jnp.where(a_k > 0, 0, 1)  # the face whose outward normal points down: s_k = -sign(a_k)
    return jnp.asarray(BOX_CORNERS, rotation.dtype)[k, side]


@kernel(slots=4)
def box_points(centre, rotation, size, hull):
    """The 4 corners of each box's face nearest the ground (:data:`BOX_CORNERS`)."""
    local = _box_face_signs(rotation, size) * size[:, None, :]
    return centre[:, None, :] + jnp.einsum("nij,nkj->nki", rotation, local)


@kernel(slots=8)
def cylinder_points(centre, rotation, size, hull):
    """On each rim circle of each cylinder, the lowest point and the points a quarter, a half and three
    quarters of the circle from it."""
    dtype = centre.dtype
    axis, local_x = rotation[:, :, 2], rotation[:, :, 0]
    down = jnp.array([0.0, 0.0, -1.0], dtype)
    # -z projected onto the face plane: the direction from a rim's centre to its lowest point.
    proj = down[None, :] - jnp.sum(axis * down, -1, keepdims=True) * axis
    norm2 = jnp.sum(proj * proj, -1, keepdims=True)
    tilted = norm2 > CYLINDER_UPRIGHT**2
    d = jnp.where(tilted, proj / jnp.sqrt(jnp.where(tilted, norm2, 1.0)), local_x)  # upright: the local x axis
    e = jnp.cross(axis, d)
    r, hl = size[:, None, 0:1], size[:, None, 1:2]
    rim = jnp.stack([d, e, -d, -e], 1) * r  # (n, 4, 3)
    faces = jnp.stack([-axis, axis], 1)[:, :, None, :] * hl[:, :, None]  # (n, 2, 1, 3)
    return (centre[:, None, None, :] + faces + rim[:, None, :, :]).reshape(-1, 8, 3)


def ellipsoid_support(centre, rotation, radii, direction) -> tuple[jax.Array, jax.Array]:
    """An ellipsoid's support against a unit ``direction`` (..., 3): ``(point, reach)``, the point whose outward
    normal is ``-direction``, ``c - R A^2 R^T n / |A R^T n|`` (..., 3), and how far the ellipsoid reaches along
    ``direction`` from its centre, ``|A R^T n|`` (...,) [m]; ``A = diag(radii)``, ``rotation`` (..., 3, 3)."""
    local = jnp.einsum("...ji,...j->...i", rotation, direction) * radii  # A R^T n
    reach = jnp.sqrt(jnp.sum(local * local, -1))
    return centre - jnp.einsum("...ij,...j->...i", rotation, local * radii) / reach[..., None], reach


@kernel(slots=1)
def ellipsoid_points(centre, rotation, size, hull):
    """The lowest point of each ellipsoid (:func:`ellipsoid_support` against ``+z``)."""
    return ellipsoid_support(centre, rotation, size, up(centre.dtype, centre.shape[:-1]))[0][:, None, :]


@kernel(slots=HULL_POINTS)
def hull_points(centre, rotation, size, hull):
    """The :data:`HULL_POINTS` lowest of each hull's world vertices (lowest first; ties to the lower index).
    The selection is integer-valued and carries no gradient; the points carry the pose's."""
    vertices, valid = hull[0], hull[2]
    world = centre[:, None, :] + jnp.einsum("nij,nvj->nvi", rotation, vertices)
    _, index = jax.lax.top_k(jnp.where(valid, -jax.lax.stop_gradient(world[..., 2]), -jnp.inf), HULL_POINTS)
    return jnp.take_along_axis(world, index[..., None], axis=1)
