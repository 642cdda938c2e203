"""Contact kernels of an ellipsoid against a box, a cylinder's prism or a mesh: the polytope's faces against the
ellipsoid's support function, exact where a face of the polytope holds the contact, the ellipsoid's hull elsewhere.

An ellipsoid of centre ``c``, rotation ``R`` and semi-axes ``A = diag(radii)`` reaches along a unit direction ``n``
to ``n . c + |A R^T n|``, at the point ``c + R A^2 R^T n / |A R^T n|``. Against a face of outward normal ``n`` and
offset ``d`` (``n . x = d`` on it) its gap is therefore ``n . c - |A R^T n| - d``, exactly, at its support point
along ``-n``. The face of largest gap is the separating axis's best face axis; when the support point, put on that
face's plane, lies on the face (inside every other face plane), that face point lies in the polytope and the gap
is a lower bound of the distance (a separating axis), so the gap is the distance: the kernel returns that one exact
contact. Otherwise (an edge or a corner of the polytope against the ellipsoid), and where the hull's manifold shows
less overlap than the face by more than the hull's deviation (an ellipsoid sunk past an edge, pushed out sideways
more cheaply), it returns the separating-axis manifold of the polytope and the ellipsoid's hull
(``jaxmor.io.mesh.ellipsoid_hull``: within 3.4% of the radii). Its shape is its hull ``(vertices, planes, valid,
faces, edges)`` with its radii (3,) [m] after them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmor.sim.collision.contacts import UNUSED_GAP, kernel
from jaxmor.sim.collision.ground import ellipsoid_support
from jaxmor.sim.collision.polytope import (
    box_mesh,
    box_polytope,
    cylinder_mesh,
    cylinder_polytope,
    hull_polytope,
    mesh_mesh,
)

#: How far, at most, an ellipsoid's hull (``jaxmor.io.mesh.ellipsoid_hull``) strays from it, as a fraction of its
#: largest radius: its vertices lie 3.4% outside, its face middles as far inside (``tests/test_ellipsoid.py``).
HULL_DEVIATION = 0.035


def _face_contact(planes, centre, rotation, radii):
    """The best face of a polytope (its world ``planes`` (..., P, 4), outward) against an ellipsoid: ``(gap (...),
    normal (..., 3) out of the face, point on the face (..., 3), point on the ellipsoid (..., 3), on_face (...)
    bool)``; the face choice carries no gradient."""
    normals, offsets = planes[..., :3], planes[..., 3]
    points, reach = ellipsoid_support(centre[..., None, :], rotation[..., None, :, :], radii[..., None, :], normals)
    gap = jnp.einsum("...pj,...j->...p", normals, centre) - reach - offsets  # per face
    face = jnp.argmax(jax.lax.stop_gradient(gap), -1)
    n = jnp.take_along_axis(normals, face[..., None, None], -2)[..., 0, :]
    on_ellipsoid = jnp.take_along_axis(points, face[..., None, None], -2)[..., 0, :]
    distance = jnp.take_along_axis(gap, face[..., None], -1)[..., 0]
    on_face = on_ellipsoid - distance[..., None] * n
    others = jnp.einsum("...pj,...j->...p", normals, on_face) - offsets
    others = jnp.where(jnp.arange(planes.shape[-2]) == face[..., None], -jnp.inf, others)
    size = jax.lax.stop_gradient(jnp.max(jnp.abs(offsets), -1))
    inside = jax.lax.stop_gradient(jnp.max(others, -1)) <= 1e-9 * size
    return distance, n, on_face, on_ellipsoid, inside


def _one_or_manifold(exact, manifold, radii, ellipsoid_is_a: bool):
    """The kernel's slots: the exact face contact in slot 0 (the others unused) where it holds, else the hull's
    ``manifold`` ``(distance, normal from A to B, point on A, point on B)`` (``radii`` (..., 3) the ellipsoid's)."""
    distance, n, on_face, on_ellipsoid, inside = exact
    slots = manifold[0].shape[-1]
    deviation = jax.lax.stop_gradient(HULL_DEVIATION * jnp.max(radii, -1))
    inside &= jax.lax.stop_gradient(jnp.min(manifold[0], -1) <= distance + deviation)
    if ellipsoid_is_a:  # the normal from the ellipsoid into the polytope
        one = (distance, -n, on_ellipsoid, on_face)
    else:
        one = (distance, n, on_face, on_ellipsoid)
    first = jnp.arange(slots) == 0
    d = jnp.where(first, one[0][..., None], UNUSED_GAP)
    vectors = [jnp.broadcast_to(x[..., None, :], x.shape[:-1] + (slots, 3)) for x in one[1:]]
    out = (d, *vectors)
    return tuple(jnp.where(inside.reshape(inside.shape + (1,) * (x.ndim - inside.ndim)), x, y)
                 for x, y in zip(out, manifold, strict=True))  # fmt: skip


@kernel(slots=8)
def box_ellipsoid(ca, ra_rot, sa, cb, rb_rot, ellipsoid_b):
    """Box A against ellipsoid B, 8 slots: one exact contact on a face of the box, else the hull's manifold."""
    _, planes = box_polytope(ca, ra_rot, sa)
    exact = _face_contact(planes, cb, rb_rot, ellipsoid_b[5])
    return _one_or_manifold(exact, box_mesh(ca, ra_rot, sa, cb, rb_rot, ellipsoid_b), ellipsoid_b[5], False)


@kernel(slots=8)
def cylinder_ellipsoid(ca, ra_rot, sa, cb, rb_rot, ellipsoid_b):
    """Cylinder A (its prism) against ellipsoid B, 8 slots: one exact contact on a face of the prism, else the
    hull's manifold."""
    _, planes = cylinder_polytope(ca, ra_rot, sa)
    exact = _face_contact(planes, cb, rb_rot, ellipsoid_b[5])
    return _one_or_manifold(exact, cylinder_mesh(ca, ra_rot, sa, cb, rb_rot, ellipsoid_b), ellipsoid_b[5], False)


@kernel(slots=8)
def ellipsoid_mesh(ca, ra_rot, ellipsoid_a, cb, rb_rot, hull_b):
    """Ellipsoid A against mesh B, 8 slots: one exact contact on a face of the mesh's hull, else the two hulls'
    manifold."""
    _, planes = hull_polytope(cb, rb_rot, hull_b)
    exact = _face_contact(planes, ca, ra_rot, ellipsoid_a[5])
    return _one_or_manifold(exact, mesh_mesh(ca, ra_rot, ellipsoid_a, cb, rb_rot, hull_b), ellipsoid_a[5], True)
