"""Contact candidates: collision geoms against the ground plane and against each other.

:func:`collide` turns body poses into a fixed number of contact *candidates* (:class:`Contacts`),
one per slot; the step's solver decides which are active from their signed distances. The number
of slots (:func:`contact_count`) and what each slot means depend only on the model's static fields
(geom types, ``ground``, ``contact_pairs``), so shapes never depend on the data and ``collide``
runs under ``jax.jit``, ``jax.vmap`` and ``jax.grad`` in any float dtype (that of the poses).

Slot layout, in this order:

1. Ground contacts, only when the model has a ground (:func:`add_ground`): for every geom on a
   moving body (``geom_body >= 0``) that touches the ground (``Model.geom_ground``:
   :func:`jaxmor.with_ground_contact`), in geom order, a fixed number of points of the geom:

   * sphere, 1: its lowest point, ``centre - r z``;
   * capsule, 2: the lowest points of its two end spheres, ``end - r z``;
   * box, 4: the corners of its face nearest the ground (:data:`BOX_CORNERS`; see "Box ground
     contacts" below);
   * cylinder, 8: on each of its two rim circles, the circle's lowest point (its centre plus ``r``
     times ``-z`` projected onto the face plane, normalized) and the points a quarter, a half and three
     quarters of the circle from it. Exact: the lowest point of a cylinder is the lowest point of one
     of its rims, so lying on its side it touches the ground along its two lowest rim points and rolls
     like the closed form; tilted, the lower rim's lowest point touches; standing on a face (axis
     within 1e-6 of vertical, where the lowest direction is undefined) the four points of that rim
     start from the geom's local ``x`` axis and support it as a square inscribed in the face;
   * mesh (a convex hull, :mod:`jaxmor.io.mesh`), 4: its 4 lowest vertices, lowest first (ties to the
     lower vertex index; the choice carries no gradient, the points carry the pose's). Exact for the
     lowest point and for a hull resting on an edge or a face of at most 4 vertices; on a larger face
     the 4 chosen span part of it, and the hull tips until another vertex comes lower (by at most the
     face's flatness: the hull stands still once the 4 lowest support it).

   Each has ``body_a = -1`` (the ground), ``body_b`` the geom's body, the normal ``+z``, the
   distance ``point_z - ground_height`` and the position the point itself. Geoms welded to the
   world (``geom_body == -1``) get no ground slots.

2. Self-collision contacts, for each pair of ``model.contact_pairs`` (:func:`with_self_collision`,
   :func:`jaxmor.add_free_body`, :func:`jaxmor.combine`), in that order, a fixed number of slots that
   depends on the pair's types (:data:`PAIR_SLOTS`; :func:`pair_slot_count`). For the pair ``(a, b)`` of
   geom indices, ``body_a = geom_body[a]`` and ``body_b = geom_body[b]``; the normal points from geom
   ``a``'s surface to geom ``b``'s, and the position is the point of geom ``b``'s surface closest to (or
   deepest in) geom ``a``. Supported, in either order:

   * sphere-sphere, 1 slot;
   * sphere-capsule, 1: the closest point of the capsule's segment;
   * capsule-capsule, 1: the closest points of the two segments; for parallel segments the middle of
     their overlap;
   * sphere-box, 1: the closest point of the box; a sphere centre inside the box is pushed out through
     the face of least penetration;
   * capsule-box, 3: the capsule's two end spheres against the box (as sphere-box), then the sphere about
     the point of the capsule's segment deepest in the box (smallest signed distance to the box, found by
     :data:`GOLDEN_SECTION_STEPS` golden-section steps: the signed distance to a convex set is convex
     along a segment). Slots in that order, whichever order the pair is given in;
   * box-box, 8: vertex-face contacts both ways (:func:`polytope_contacts`): slots 0-3 the 4 corners of
     the pair's second box deepest in the first box, slots 4-7 the 4 corners of the first box deepest in
     the second (each as an ``(a, b)`` slot: normal from ``a`` to ``b``);
   * with a mesh (its convex hull, a polytope of ``Model.mesh_vertex_count`` vertices and its face planes;
     padding rows are never chosen): sphere-mesh, 1: the sphere's centre against the hull's planes (its
     distance ``max_j s_j`` below, minus the radius; the normal that face's); capsule-mesh, 3: as
     capsule-box, with the hull's plane distance; box-mesh and mesh-mesh, 8: as box-box.

   Polytope (box-box, mesh) contacts. A vertex ``v`` of one polytope is tested against the face planes
   ``n_j . x = d_j`` (outward unit normals ``n_j``) of the other: its distance is ``s_j = n_j . v - d_j`` of one
   face ``j`` near the maximum ``max_j s_j``, and the normal that face's. ``max_j s_j`` is the exact signed
   distance of ``v`` inside the polytope and wherever ``v`` projects onto a face; outside near an edge or a
   vertex it is a lower bound of the true distance (e.g. ``1/sqrt(2)`` of it diagonally off an edge), so a
   contact may look closer than it is there; it is exact at zero (``max_j s_j = 0`` only on the surface).
   The face: among the faces whose ``s_j`` is within :data:`POLYTOPE_TIE` times the size of the polytope
   (its vertices' bounding-box diagonal) of the maximum, the one along whose normal the other polytope
   penetrates least (``min`` over the other's vertices of ``s_j``: the separating-axis test's face). That
   breaks the ties of a vertex on an edge of the other polytope (two equal boxes stacked exactly: the lower
   box's top corners lie on the upper box's side planes too) in favour of the face the bodies touch by;
   the distance is that face's ``s_j``, within the tolerance of the maximum. The selections (face, the
   deepest vertices) are integer-valued and carry no gradient; distances, normals and points have the
   gradients of the chosen vertex and face.

Conventions of every slot: ``distance`` is the signed gap [m], negative when the geoms overlap;
``frame``'s rows are the unit normal ``n``, pointing from A to B (a positive normal impulse pushes B
along ``n`` and A along ``-n``), and two unit tangents ``t1, t2`` with ``t1 x t2 = n``; the
position lies on B's surface and ``position - distance n`` on A's. The tangents are a fixed smooth
function of ``n`` (Frisvad's basis, built about ``+z`` for ``n_z >= -0.5`` and about ``-z`` below);
for the ground's ``n = +z`` they are the world ``x`` and ``y`` axes.

Combination rules (:func:`combine_friction`). Friction: a surface whose description gives no friction
(every URDF geom: ``Model.geom_friction_given`` is false until :func:`jaxmor.with_geom_properties` or
:func:`jaxmor.randomize` sets it) takes the other surface's, so ``add_ground(friction=mu)`` gives ``mu``
on a URDF robot; two given coefficients combine by ``model.opt.friction_rule``: the geometric mean
``sqrt(mu_a mu_b)`` (default; a frictionless surface is then frictionless against everything), the
mean, the minimum or the maximum. The ground's friction is always given. Of two surfaces of different
priority (``Model.geom_priority``, MJCF's ``priority``; the ground and URDF geoms have 0), the one of higher
priority gives its friction, whatever the rule. Restitution: the larger of the two, ``max(e_a, e_b)`` (URDF
geoms have 0, which leaves the other surface's).

Degenerate geometry (coincident sphere centres, a sphere centre on a capsule's axis, intersecting
capsule axes, zero-length segments, zero-size boxes, coincident or exactly stacked boxes, a capsule through
a box's centre) yields finite values and finite gradients: where a normal is undefined a deterministic
fallback is used (``+z``, or for crossing capsules the common perpendicular of their axes); box-box normals
are face normals, always defined.

Limitations: only the pair kinds above; any pair with a cylinder is not supported yet, and asking for
one (:func:`with_self_collision`, or a hand-made ``contact_pairs`` given to :func:`collide`) raises an
:class:`~jaxmor.errors.ArgumentError` rather than being ignored. One slot per sphere and capsule pair: two
long capsules lying side by side touch at a single point (the middle of their overlap), which holds them
apart but resists their relative rotation only through friction; a capsule lying on a box face touches
it at its end spheres and at one point of its segment, so one longer than the face rests on a single
point. Box-box contacts are vertex-face only: two boxes whose edges cross without a corner of either
inside the other (edge-edge contact) are not held apart, and at most 4 corners per direction are kept (a
box resting on a larger one keeps its 4 bottom corners; corners of one face are never more than 4).
Ground contacts are points: exact for spheres, capsules, boxes and cylinders (their lowest
points are among them; for boxes see below). Gaps are
computed for every slot whatever its size; the solver decides which candidates are active. A hull's
contacts with other geoms share the polytope limits (vertex-face only; distances outside near an edge are
lower bounds), and a sphere or capsule near an edge of a hull sees the nearest face's plane.

Box ground contacts. Let the box have axes ``r_i`` (the columns of its world rotation), half-extents
``h_i >= 0``, let ``n = +z`` be the ground normal, ``a_i = r_i . n`` and ``c_i = h_i |a_i|``. The
4 slots are the corners of the face perpendicular to the axis ``k`` that maximizes ``c_i`` (exact ties
go to the axis with the larger ``|a_i|``, then to the lower index), on the side facing the ground: its
corners have the sign ``s_k = -1`` on axis ``k`` if ``a_k > 0``, else ``+1``. The 4 slots hold these
corners in the order they have among the 8 sign vectors ``(s_x, s_y, s_z)`` in ``{-1, 1}^3`` with
``s_x`` varying slowest and ``s_z`` fastest (:data:`BOX_CORNERS`); the corner is ``centre + R (s * h)``.
The choice is piecewise constant in the pose (integer selection, no gradient flows through it), so
distances and positions have the gradients of the chosen corners, finite at the ties too.

What this keeps, exactly. A corner with signs ``s`` lies ``sum_i s_i h_i a_i`` above the centre, so
its height above the lowest corner (``s_i = -sign(a_i)`` for all ``i``) is ``sum of 2 c_i`` over the
axes ``i`` on which it is on the upper side. With ``j, l`` the two axes other than ``k``, the chosen
corners are therefore ``0, 2 c_j, 2 c_l, 2 c_j + 2 c_l`` above the lowest corner, and each of the 4
other corners is the mirror image of a chosen one across the box's mid-plane perpendicular to ``r_k``,
exactly ``2 c_k`` higher than it. Hence:

* the lowest corner is always one of the 4 slots, so the box's lowest point and smallest gap are the
  same as with all 8 corners;
* every corner not in a slot is at least ``2 c_k = 2 max_i h_i |a_i|`` above the lowest corner, and since
  ``sum_i a_i^2 = 1``, ``max_i h_i |a_i| >= 1 / sqrt(sum_i h_i^-2) >= h_min / sqrt(3)`` (``h_min`` the
  smallest half-extent, the middle term 0 if some ``h_i = 0``; the first bound is attained when all
  ``c_i`` are equal, both for a cube standing on a corner). So for any threshold ``delta``, a corner
  left out has a gap ``<= delta`` only if the lowest corner's gap is ``<= delta - 2 h_min / sqrt(3)``:
  the 8 corners put a corner in contact that the 4 slots miss only when the box already penetrates
  the ground by at least ``2 h_min / sqrt(3)`` (58 % of its shortest edge) beyond ``delta``;
* the 4 slots are exactly the 4 lowest corners (as a multiset of heights) if and only if
  ``c_k >= c_j + c_l``, which holds whenever one box axis is horizontal (resting on a face or an edge:
  some ``c_i = 0``). Otherwise they are not, whatever the gap between the 4th and 5th lowest heights: a cube
  standing on a corner (``c_i`` all equal, ``c``) has the corners ``0, 2c, 2c, 2c, 4c, 4c, 4c, 6c``
  above the lowest and the slots hold ``0, 2c, 2c, 4c``; the corners left out are still ``2c``
  (``= 2 h / sqrt(3)``) or more above the lowest.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.errors import ArgumentError
from jaxmor.math import safe_div, safe_sqrt
from jaxmor.sim.kinematics import Poses
from jaxmor.types import GeomType, Model

#: Geom types and the number of ground-contact points of each.
GROUND_POINTS = {GeomType.SPHERE: 1, GeomType.CAPSULE: 2, GeomType.BOX: 4, GeomType.CYLINDER: 8, GeomType.MESH: 4}

#: The 8 corner sign vectors of a box, ``s_x`` varying slowest and ``s_z`` fastest.
_BOX_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))

#: ``BOX_CORNERS[k, side]`` (4, 3): the sign vectors of the corners of the box face perpendicular to
#: axis ``k`` on the side ``-1`` (``side = 0``) or ``+1`` (``side = 1``), in their order in ``_BOX_SIGNS``.
BOX_CORNERS = np.array([[_BOX_SIGNS[_BOX_SIGNS[:, k] == s] for s in (-1.0, 1.0)] for k in range(3)])

#: Below this sine of the tilt of its axis from the vertical, a cylinder's rim points start from its local
#: x axis instead of its lowest direction (which is undefined when it stands upright).
_CYLINDER_UPRIGHT = 1e-6


@struct.dataclass
class Contacts:
    """Contact candidates, one per slot (``nc`` slots; see the module docstring for the layout).

    Attributes:
        distance: (nc,) signed gap [m]; negative = penetration.
        position: (nc, 3) world contact point, on body B's surface (B's point deepest in A) [m].
        frame: (nc, 3, 3) rows: unit normal ``n`` (from A to B), unit tangents ``t1``, ``t2``;
            orthonormal and right-handed (``t1 x t2 = n``).
        friction: (nc,) combined Coulomb friction coefficient ``sqrt(mu_a mu_b)`` [-].
        restitution: (nc,) combined coefficient of restitution ``max(e_a, e_b)`` [-].
        body_a: body A of each slot, ``-1`` for the world / ground (static).
        body_b: body B of each slot, ``-1`` for the world (static).
    """

    distance: jnp.ndarray
    position: jnp.ndarray
    frame: jnp.ndarray
    friction: jnp.ndarray
    restitution: jnp.ndarray
    body_a: tuple[int, ...] = struct.field(pytree_node=False)
    body_b: tuple[int, ...] = struct.field(pytree_node=False)


# --------------------------------------------------------------------------------------------------
# slot layout


def _ground_geoms(model: Model) -> list[int]:
    if not model.ground:
        return []
    return [g for g in range(model.ng) if model.geom_body[g] >= 0 and model.geom_ground[g]]


def _check_types(model: Model) -> None:
    for g, t in enumerate(model.geom_type):
        if t not in GROUND_POINTS:
            raise ArgumentError(f"geom {model.geom_names[g]!r} has the unsupported type {t!r}")


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


def contact_count(model: Model) -> int:
    """Number of contact slots ``nc`` of :func:`collide` (static)."""
    _check_types(model)
    ground = sum(GROUND_POINTS[model.geom_type[g]] for g in _ground_geoms(model))
    return ground + sum(pair_slot_count(model, pair) for pair in model.contact_pairs)


def contact_bodies(model: Model) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(body_a, body_b)`` of every slot (static), as in :class:`Contacts`."""
    body_a, body_b = [], []
    for g in _ground_geoms(model):
        n = GROUND_POINTS[model.geom_type[g]]
        body_a += [-1] * n
        body_b += [model.geom_body[g]] * n
    for a, b in model.contact_pairs:
        k = pair_slot_count(model, (a, b))
        body_a += [model.geom_body[a]] * k
        body_b += [model.geom_body[b]] * k
    return tuple(body_a), tuple(body_b)


# --------------------------------------------------------------------------------------------------
# geometry helpers (pure JAX, gradient-safe)


def _tiny(dtype) -> float:
    """Squared length below which a direction is treated as undefined."""
    return float(jnp.finfo(dtype).eps) ** 2


def _normalize(v: jnp.ndarray, fallback: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``(v / |v|, ok)``, or ``(fallback, False)`` where ``|v|`` is (almost) zero; finite gradients."""
    sq = jnp.sum(v * v, axis=-1, keepdims=True)
    ok = sq > _tiny(v.dtype)
    safe = jnp.where(ok, sq, 1.0)
    return jnp.where(ok, v / jnp.sqrt(safe), fallback), ok[..., 0]


def tangent_frame(normal: jnp.ndarray) -> jnp.ndarray:
    """(..., 3, 3) rows ``n, t1, t2``: an orthonormal right-handed frame from unit normals (..., 3).

    Frisvad's construction about ``+z`` for ``n_z >= -0.5`` (``n = +z`` gives ``t1 = x, t2 = y``)
    and its mirror about ``-z`` below; smooth in ``n`` within each region.
    """
    x, y, z = normal[..., 0], normal[..., 1], normal[..., 2]
    north = z >= -0.5
    a = 1.0 / jnp.where(north, 1.0 + z, 1.0)
    b = -x * y * a
    t1_n = jnp.stack([1.0 - x * x * a, b, -x], -1)
    t2_n = jnp.stack([b, 1.0 - y * y * a, -y], -1)
    c = 1.0 / jnp.where(north, 1.0, 1.0 - z)
    d = x * y * c
    t1_s = jnp.stack([1.0 - x * x * c, -d, x], -1)
    t2_s = jnp.stack([d, y * y * c - 1.0, -y], -1)
    t1 = jnp.where(north[..., None], t1_n, t1_s)
    t2 = jnp.where(north[..., None], t2_n, t2_s)
    return jnp.stack([normal, t1, t2], -2)


def _z(dtype, shape=()) -> jnp.ndarray:
    return jnp.broadcast_to(jnp.array([0.0, 0.0, 1.0], dtype), (*shape, 3))


def _spheres(ca, ra, cb, rb, fallback=None):
    """Two spheres: ``(distance, n, point on a's surface, point on b's surface)``."""
    if fallback is None:
        fallback = _z(ca.dtype, ca.shape[:-1])
    d = cb - ca
    n, _ = _normalize(d, fallback)
    dist = jnp.sum(n * d, -1) - ra - rb
    return dist, n, ca + ra[..., None] * n, cb - rb[..., None] * n


def _segment_point(p0, p1, c):
    """Closest point to ``c`` on the segment ``p0 p1`` (a point when ``p0 == p1``)."""
    d = p1 - p0
    dd = jnp.sum(d * d, -1)
    t = jnp.clip(safe_div(jnp.sum((c - p0) * d, -1), dd, dd > _tiny(d.dtype)), 0.0, 1.0)
    return p0 + t[..., None] * d


def _segments(p0, p1, q0, q1):
    """Closest points of the segments ``p0 p1`` and ``q0 q1``; the middle of the overlap when parallel."""
    tiny = _tiny(p0.dtype)
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a = jnp.sum(d1 * d1, -1)
    e = jnp.sum(d2 * d2, -1)
    b = jnp.sum(d1 * d2, -1)
    c = jnp.sum(d1 * r, -1)
    f = jnp.sum(d2 * r, -1)
    a_ok, e_ok = a > tiny, e > tiny
    denom = a * e - b * b
    parallel_tol = max(1e-6, 100.0 * float(jnp.finfo(p0.dtype).eps))
    general = denom > parallel_tol * a * e
    s_general = jnp.clip(safe_div(b * f - c * e, denom, general & a_ok & e_ok), 0.0, 1.0)
    # Parallel: the middle of the part of segment p that faces segment q.
    u0 = safe_div(-c, a, a_ok)  # q0 on p's parameter
    u1 = safe_div(b - c, a, a_ok)  # q1
    lo = jnp.maximum(jnp.minimum(u0, u1), 0.0)
    hi = jnp.minimum(jnp.maximum(u0, u1), 1.0)
    s_parallel = jnp.clip(0.5 * (lo + hi), 0.0, 1.0)
    s = jnp.where(general, s_general, s_parallel)
    t = jnp.clip(safe_div(b * s + f, e, e_ok), 0.0, 1.0)
    s = jnp.clip(safe_div(b * t - c, a, a_ok), 0.0, 1.0)
    return p0 + s[..., None] * d1, q0 + t[..., None] * d2, d1, d2


def _ends(centre, rotation, half_length):
    axis = rotation[..., :, 2]
    return centre - half_length[..., None] * axis, centre + half_length[..., None] * axis


def _sphere_sphere(ca, ra_rot, sa, cb, rb_rot, sb):
    return _spheres(ca, sa[..., 0], cb, sb[..., 0])


def _sphere_capsule(ca, ra_rot, sa, cb, rb_rot, sb):
    q0, q1 = _ends(cb, rb_rot, sb[..., 1])
    return _spheres(ca, sa[..., 0], _segment_point(q0, q1, ca), sb[..., 0])


def _capsule_capsule(ca, ra_rot, sa, cb, rb_rot, sb):
    p0, p1 = _ends(ca, ra_rot, sa[..., 1])
    q0, q1 = _ends(cb, rb_rot, sb[..., 1])
    pa, pb, d1, d2 = _segments(p0, p1, q0, q1)
    # Intersecting axes: the common perpendicular (then +z) stands in for the undefined direction.
    perp, _ = _normalize(jnp.cross(d1, d2), _z(ca.dtype, ca.shape[:-1]))
    return _spheres(pa, sa[..., 0], pb, sb[..., 0], fallback=perp)


def _sphere_box(ca, ra_rot, sa, cb, rb_rot, sb):
    """Sphere A against box B: ``(distance, n, point on A, point on B)``."""
    r = sa[..., 0]
    h = sb
    local = jnp.einsum("...ji,...j->...i", rb_rot, ca - cb)  # sphere centre in box axes
    closest = jnp.clip(local, -h, h)
    # Outside (or on the surface): from the sphere centre to the closest point of the box.
    n_out, outside = _normalize(closest - local, _z(ca.dtype, ca.shape[:-1]))
    dist_out = jnp.sum(n_out * (closest - local), -1) - r
    # Inside: out through the face of least penetration; the box is pushed the other way.
    depth = h - jnp.abs(local)
    k = jnp.argmin(depth, axis=-1)
    onehot = jax.nn.one_hot(k, 3, dtype=ca.dtype)
    sign = jnp.where(local >= 0.0, 1.0, -1.0).astype(ca.dtype)
    n_in = -sign * onehot
    face = jnp.where(onehot > 0, sign * h, local)
    dist_in = -jnp.sum(onehot * depth, -1) - r
    n_local = jnp.where(outside[..., None], n_out, n_in)
    dist = jnp.where(outside, dist_out, dist_in)
    point_b_local = jnp.where(outside[..., None], closest, face)
    n = jnp.einsum("...ij,...j->...i", rb_rot, n_local)
    point_b = cb + jnp.einsum("...ij,...j->...i", rb_rot, point_b_local)
    return dist, n, ca + r[..., None] * n, point_b


#: Golden-section steps of the capsule-box search for the segment's deepest point: the bracket shrinks to
#: ``0.618^40 = 4e-9`` of the segment.
GOLDEN_SECTION_STEPS = 40


def _box_signed_distance(x, centre, rotation, half):
    """Signed distance [m] from points ``x`` to a box (negative inside); convex in ``x``."""
    local = jnp.einsum("...ji,...j->...i", rotation, x - centre)
    q = jnp.abs(local) - half
    outside = jnp.sqrt(jnp.sum(jnp.maximum(q, 0.0) ** 2, -1))
    return outside + jnp.minimum(jnp.max(q, -1), 0.0)


def _deepest_on_segment(p0, p1, distance):
    """(...,) parameter ``t`` in [0, 1] of the point of the segment ``p0 p1`` where the convex function
    ``distance`` (points (..., 3) -> (...,)) is smallest, by :data:`GOLDEN_SECTION_STEPS` golden-section steps
    (no gradient: the distance at the minimum has the gradient of its point, the envelope theorem)."""
    p0, p1 = jax.lax.stop_gradient((p0, p1))
    g = (math.sqrt(5.0) - 1.0) / 2.0

    def f(t):
        return jax.lax.stop_gradient(distance(p0 + t[..., None] * (p1 - p0)))

    def shrink(_, bracket):
        lo, hi = bracket
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        left = f(c) < f(d)  # the minimum lies in [lo, d]; else in [c, hi]
        return jnp.where(left, lo, c), jnp.where(left, d, hi)

    lo, hi = jnp.zeros(p0.shape[:-1], p0.dtype), jnp.ones(p0.shape[:-1], p0.dtype)
    lo, hi = jax.lax.fori_loop(0, GOLDEN_SECTION_STEPS, shrink, (lo, hi))
    return 0.5 * (lo + hi)


def _capsule_box(ca, ra_rot, sa, cb, rb_rot, sb):
    """Capsule A against box B, 3 slots (..., 3): its end spheres, then the sphere about its segment's
    deepest point (module docstring)."""
    p0, p1 = _ends(ca, ra_rot, sa[..., 1])
    t = _deepest_on_segment(p0, p1, lambda x: _box_signed_distance(x, cb, rb_rot, sb))
    centres = jnp.stack([p0, p1, p0 + t[..., None] * (p1 - p0)], -2)
    return _sphere_box(centres, None, sa[..., None, :], cb[..., None, :], rb_rot[..., None, :, :], sb[..., None, :])


#: Relative tolerance of the face choice of a polytope contact (module docstring, "Polytope contacts"):
#: faces within this fraction of the polytope's size of the deepest are tied.
POLYTOPE_TIE = 1e-3


def box_polytope(centre: jax.Array, rotation: jax.Array, half: jax.Array) -> tuple[jax.Array, jax.Array]:
    """A box as a convex polytope: ``(vertices (..., 8, 3), planes (..., 6, 4))``.

    Args:
        centre: (..., 3) the box's centre [m].
        rotation: (..., 3, 3) its orientation (columns: its axes in the world frame).
        half: (..., 3) its half-extents [m].

    Returns:
        The 8 corners ``centre + R (s * half)`` in the order of the sign vectors ``s`` with ``s_x`` varying
        slowest (as :data:`BOX_CORNERS`), and the 6 face planes ``(n, d)``: outward unit normal ``n`` [-]
        and offset ``d = n . centre + half_k`` [m], a point ``x`` being inside where ``n . x <= d`` for all
        faces; faces ``-x, -y, -z, +x, +y, +z``.
    """
    signs = jnp.asarray(_BOX_SIGNS, centre.dtype)
    vertices = centre[..., None, :] + jnp.einsum("...ij,...kj->...ki", rotation, signs * half[..., None, :])
    axes = jnp.swapaxes(rotation, -1, -2)  # rows: the box axes
    normals = jnp.concatenate([-axes, axes], -2)
    offsets = jnp.einsum("...kj,...j->...k", normals, centre) + jnp.concatenate([half, half], -1)
    return vertices, jnp.concatenate([normals, offsets[..., None]], -1)


def _vertices_against_planes(vertices, planes, owner_vertices, points, valid=None):
    """The ``points`` vertices deepest in the polytope ``planes`` (module docstring): ``(distance (..., k),
    owner's outward normal (..., k, 3), point on the owner's surface, the vertex)``; ``valid`` (..., V) bool
    marks the real vertices (``None``: all), the others (padding) are never chosen."""
    s = jnp.einsum("...vj,...pj->...vp", vertices, planes[..., :3]) - planes[..., None, :, 3]
    fixed = jax.lax.stop_gradient(s)
    separation = jnp.min(fixed, -2, keepdims=True)  # per face: the other polytope's deepest vertex
    extent = jax.lax.stop_gradient(jnp.max(owner_vertices, -2) - jnp.min(owner_vertices, -2))
    tol = POLYTOPE_TIE * jnp.sqrt(jnp.sum(extent * extent, -1))[..., None, None]
    tied = fixed >= jnp.max(fixed, -1, keepdims=True) - tol
    face = jnp.argmax(jnp.where(tied, separation, -jnp.inf), -1)  # (..., V)
    dist = jnp.take_along_axis(s, face[..., None], -1)[..., 0]
    score = -jax.lax.stop_gradient(dist)
    if valid is not None:
        score = jnp.where(valid, score, -jnp.inf)
    _, deepest = jax.lax.top_k(score, points)  # (..., k)
    dist = jnp.take_along_axis(dist, deepest, -1)
    face = jnp.take_along_axis(face, deepest, -1)
    normal = jnp.take_along_axis(planes[..., :3], face[..., None], -2)
    vertex = jnp.take_along_axis(vertices, deepest[..., None], -2)
    return dist, normal, vertex - dist[..., None] * normal, vertex


def polytope_contacts(
    vertices_a: jax.Array,
    planes_a: jax.Array,
    vertices_b: jax.Array,
    planes_b: jax.Array,
    points: int = 4,
    valid_a: jax.Array | None = None,
    valid_b: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Vertex-face contacts between two convex polytopes, both ways (module docstring, "Polytope contacts").

    Args:
        vertices_a, vertices_b: (..., V, 3) the vertices of A and B [m] (world frame).
        planes_a, planes_b: (..., P, 4) their face planes ``(n, d)``: outward unit normal and offset, ``x``
            inside where ``n . x <= d`` for every face [-, m].
        points: vertices kept per direction (static, ``<=`` each polytope's vertex count).
        valid_a, valid_b: (..., V) bool, which rows of ``vertices_a``/``vertices_b`` are vertices (the others are
            padding, never chosen); ``None``: all.

    Returns:
        ``(distance (..., 2 points), normal (..., 2 points, 3), point on A, point on B)``: first the ``points``
        vertices of B deepest in A, then those of A deepest in B; the normal points from A to B, each point
        pair lies on the two surfaces (``point on B - distance n = point on A``; exact in face regions).
    """
    d_b, n_a, on_a, vert_b = _vertices_against_planes(vertices_b, planes_a, vertices_a, points, valid_b)
    d_a, n_b, on_b, vert_a = _vertices_against_planes(vertices_a, planes_b, vertices_b, points, valid_a)
    return (
        jnp.concatenate([d_b, d_a], -1),
        jnp.concatenate([n_a, -n_b], -2),
        jnp.concatenate([on_a, vert_a], -2),
        jnp.concatenate([vert_b, on_b], -2),
    )


def _box_box(ca, ra_rot, sa, cb, rb_rot, sb):
    """Box A against box B, 8 slots (..., 8): corners of B in A, then corners of A in B."""
    return polytope_contacts(*box_polytope(ca, ra_rot, sa), *box_polytope(cb, rb_rot, sb))


def _hull_polytope(centre, rotation, hull):
    """A mesh geom's hull in the world: ``(vertices (..., V, 3), planes (..., P, 4))``; ``hull`` its
    ``(vertices, planes, valid)`` in the geom frame (``valid``: which rows are vertices, not padding)."""
    vertices, planes, _ = hull
    world = centre[..., None, :] + jnp.einsum("...ij,...vj->...vi", rotation, vertices)
    normals = jnp.einsum("...ij,...pj->...pi", rotation, planes[..., :3])
    offsets = planes[..., 3] + jnp.einsum("...pi,...i->...p", normals, centre)
    return world, jnp.concatenate([normals, offsets[..., None]], -1)


def _plane_distance(x, planes):
    """``(max_j n_j . x - d_j, that face's normal)``: a point's signed distance to a polytope's faces (module
    docstring, "Polytope contacts"; the face choice carries no gradient)."""
    s = jnp.einsum("...pj,...j->...p", planes[..., :3], x) - planes[..., 3]
    face = jnp.argmax(jax.lax.stop_gradient(s), -1)
    dist = jnp.take_along_axis(s, face[..., None], -1)[..., 0]
    return dist, jnp.take_along_axis(planes[..., :3], face[..., None, None], -2)[..., 0, :]


def _sphere_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Sphere A against mesh B: its centre against B's face planes, 1 slot."""
    _, planes = _hull_polytope(cb, rb_rot, hull_b)
    dist, n_face = _plane_distance(ca, planes)  # n_face points out of B, towards A
    r = sa[..., 0]
    return dist - r, -n_face, ca - r[..., None] * n_face, ca - dist[..., None] * n_face


def _capsule_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Capsule A against mesh B, 3 slots: its end spheres, then the sphere about its segment's deepest point."""
    _, planes = _hull_polytope(cb, rb_rot, hull_b)
    p0, p1 = _ends(ca, ra_rot, sa[..., 1])
    t = _deepest_on_segment(p0, p1, lambda x: _plane_distance(x, planes)[0])
    centres = jnp.stack([p0, p1, p0 + t[..., None] * (p1 - p0)], -2)
    hull3 = (hull_b[0][..., None, :, :], hull_b[1][..., None, :, :], None)  # the same hull for the 3 spheres
    return _sphere_mesh(centres, None, sa[..., None, :], cb[..., None, :], rb_rot[..., None, :, :], hull3)


def _box_mesh(ca, ra_rot, sa, cb, rb_rot, hull_b):
    """Box A against mesh B, 8 slots: as box-box."""
    return polytope_contacts(*box_polytope(ca, ra_rot, sa), *_hull_polytope(cb, rb_rot, hull_b), valid_b=hull_b[2])


def _mesh_mesh(ca, ra_rot, hull_a, cb, rb_rot, hull_b):
    """Mesh A against mesh B, 8 slots: as box-box."""
    return polytope_contacts(
        *_hull_polytope(ca, ra_rot, hull_a), *_hull_polytope(cb, rb_rot, hull_b), valid_a=hull_a[2], valid_b=hull_b[2]
    )


#: The supported self-collision type pairs (either order) and their distance functions.
_PAIR_FUNCTIONS = {
    (GeomType.SPHERE, GeomType.SPHERE): _sphere_sphere,
    (GeomType.SPHERE, GeomType.CAPSULE): _sphere_capsule,
    (GeomType.CAPSULE, GeomType.CAPSULE): _capsule_capsule,
    (GeomType.SPHERE, GeomType.BOX): _sphere_box,
    (GeomType.CAPSULE, GeomType.BOX): _capsule_box,
    (GeomType.BOX, GeomType.BOX): _box_box,
    (GeomType.SPHERE, GeomType.MESH): _sphere_mesh,
    (GeomType.CAPSULE, GeomType.MESH): _capsule_mesh,
    (GeomType.BOX, GeomType.MESH): _box_mesh,
    (GeomType.MESH, GeomType.MESH): _mesh_mesh,
}

#: Contact slots of each supported type pair (either order).
PAIR_SLOTS = {kinds: 1 for kinds in _PAIR_FUNCTIONS} | {
    (GeomType.CAPSULE, GeomType.BOX): 3,
    (GeomType.BOX, GeomType.BOX): 8,
    (GeomType.CAPSULE, GeomType.MESH): 3,
    (GeomType.BOX, GeomType.MESH): 8,
    (GeomType.MESH, GeomType.MESH): 8,
}


def _pair_supported(ta: GeomType, tb: GeomType) -> bool:
    return (ta, tb) in _PAIR_FUNCTIONS or (tb, ta) in _PAIR_FUNCTIONS


def _supported_text() -> str:
    return ", ".join(f"{a.label}-{b.label}" for a, b in _PAIR_FUNCTIONS)


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
        if not _pair_supported(model.geom_type[a], model.geom_type[b]):
            bad.append((a, b))
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
# collide


def _box_face_signs(rotation, size):
    """(n, 4, 3) corner signs of the face of each of ``n`` boxes nearest the ground (module docstring).

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


def _ground_points(kind: GeomType, centre, rotation, size, hull):
    """(n, k, 3) world points of ``n`` geoms of one type (see the module docstring); ``hull`` the hulls of mesh
    geoms (:func:`_lowest_vertices`; ``None`` for other types)."""
    dtype = centre.dtype
    z = jnp.array([0.0, 0.0, 1.0], dtype)
    if kind == GeomType.MESH:
        return _lowest_vertices(centre, rotation, hull, GROUND_POINTS[GeomType.MESH])
    if kind == GeomType.SPHERE:
        return (centre - size[:, :1] * z)[:, None, :]
    if kind == GeomType.CAPSULE:
        e0, e1 = _ends(centre, rotation, size[:, 1])
        return jnp.stack([e0, e1], 1) - size[:, None, :1] * z
    if kind == GeomType.BOX:
        local = _box_face_signs(rotation, size) * size[:, None, :]
    else:  # cylinder
        return _cylinder_points(centre, rotation, size)
    return centre[:, None, :] + jnp.einsum("nij,nkj->nki", rotation, local)


def _cylinder_points(centre, rotation, size):
    """(n, 8, 3) the ground points of ``n`` cylinders: on each rim circle, the lowest point and the points a
    quarter, a half and three quarters of the circle from it (module docstring)."""
    dtype = centre.dtype
    axis, local_x = rotation[:, :, 2], rotation[:, :, 0]
    down = jnp.array([0.0, 0.0, -1.0], dtype)
    # -z projected onto the face plane: the direction from a rim's centre to its lowest point.
    proj = down[None, :] - jnp.sum(axis * down, -1, keepdims=True) * axis
    norm2 = jnp.sum(proj * proj, -1, keepdims=True)
    tilted = norm2 > _CYLINDER_UPRIGHT**2
    d = jnp.where(tilted, proj / jnp.sqrt(jnp.where(tilted, norm2, 1.0)), local_x)  # upright: the local x axis
    e = jnp.cross(axis, d)
    r, hl = size[:, None, 0:1], size[:, None, 1:2]
    rim = jnp.stack([d, e, -d, -e], 1) * r  # (n, 4, 3)
    faces = jnp.stack([-axis, axis], 1)[:, :, None, :] * hl[:, :, None]  # (n, 2, 1, 3)
    return (centre[:, None, None, :] + faces + rim[:, None, :, :]).reshape(-1, 8, 3)


def _hulls(model: Model, geoms, dtype) -> tuple[jax.Array, jax.Array, np.ndarray]:
    """``(vertices (n, V, 3), planes (n, P, 4), valid (n, V) bool)`` of the mesh geoms ``geoms``, in their frames;
    ``valid`` marks which rows are vertices (the rest is padding, never chosen)."""
    hulls = np.array([model.geom_mesh[g] for g in geoms], dtype=np.int32)
    count = np.array(model.mesh_vertex_count, dtype=np.int32)[hulls]
    valid = np.arange(model.mesh_vertices.shape[1])[None, :] < count[:, None]
    return model.mesh_vertices.astype(dtype)[hulls], model.mesh_planes.astype(dtype)[hulls], valid


def _lowest_vertices(centre, rotation, hull, k: int):
    """(n, k, 3) the ``k`` lowest of each hull's world vertices (lowest first; ties to the lower index); ``hull``
    the ``(vertices, planes, valid)`` of ``n`` hulls in their frames. The selection is integer-valued and
    carries no gradient; the points carry the pose's."""
    vertices, _, valid = hull
    world = centre[:, None, :] + jnp.einsum("nij,nvj->nvi", rotation, vertices)
    _, index = jax.lax.top_k(jnp.where(valid, -jax.lax.stop_gradient(world[..., 2]), -jnp.inf), k)
    return jnp.take_along_axis(world, index[..., None], axis=1)


#: The rules that combine two given friction coefficients (``Options.friction_rule``).
FRICTION_RULES = {
    "geometric_mean": lambda a, b: safe_sqrt(a * b),
    "mean": lambda a, b: 0.5 * (a + b),
    "min": jnp.minimum,
    "max": jnp.maximum,
}


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
    :data:`jaxmor.build.builder.DEFAULT_FRICTION`, which is what a geom without a given friction holds.

    Args:
        rule: a key of :data:`FRICTION_RULES`.
        mu_a, mu_b: the coefficients, broadcastable.
        given_a, given_b: static bool arrays of the same shapes: whether each coefficient was given.
        priority_a, priority_b: static int arrays (or ints) of the same shapes: the surfaces' priorities.
    """
    both = FRICTION_RULES[rule](mu_a, mu_b)
    equal = jnp.where(given_a & given_b, both, jnp.where(given_a, mu_a, mu_b))
    priority_a, priority_b = np.asarray(priority_a), np.asarray(priority_b)
    if np.all(priority_a == priority_b):
        return equal
    return jnp.where(priority_a > priority_b, mu_a, jnp.where(priority_a < priority_b, mu_b, equal))


def collide(model: Model, poses: Poses) -> Contacts:
    """Contact candidates of every slot (see the module docstring for the layout and conventions).

    Args:
        model: the model.
        poses: world poses of the bodies (:func:`jaxmor.sim.kinematics.body_poses`), (nb, 3, 3) and (nb, 3);
            their dtype is the result's.

    Returns:
        :class:`Contacts` with :func:`contact_count` slots.

    Raises:
        ArgumentError: the poses have the wrong shape, or ``model.contact_pairs`` holds an
            unsupported pair (trace-time checks).
    """
    _check_types(model)
    check_pairs(model, model.contact_pairs)
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
    position, rotation = position.astype(dtype), rotation.astype(dtype)
    body_a, body_b = contact_bodies(model)
    nc = len(body_a)
    if nc == 0:
        return Contacts(
            jnp.zeros((0,), dtype),
            jnp.zeros((0, 3), dtype),
            jnp.zeros((0, 3, 3), dtype),
            jnp.zeros((0,), dtype),
            jnp.zeros((0,), dtype),
            body_a,
            body_b,
        )

    # World pose of every geom; index 0 of the padded body arrays is the world.
    gb = np.array(model.geom_body, dtype=np.int32) + 1
    body_r = jnp.concatenate([jnp.eye(3, dtype=dtype)[None], rotation])[gb]
    body_p = jnp.concatenate([jnp.zeros((1, 3), dtype), position])[gb]
    geom_r = body_r @ model.geom_rotation.astype(dtype)
    geom_p = body_p + jnp.einsum("gij,gj->gi", body_r, model.geom_translation.astype(dtype))
    size = model.geom_size.astype(dtype)
    mu = model.geom_friction.astype(dtype)
    given = np.array(model.geom_friction_given, dtype=bool)
    priority = np.array(model.geom_priority, dtype=np.int64)
    rest = model.geom_restitution.astype(dtype)

    distance, point, normal, friction, restitution = [], [], [], [], []

    # 1. Ground: points grouped by type, then put back in geom order.
    ground = _ground_geoms(model)
    if ground:
        blocks, order = [], []
        for kind in GROUND_POINTS:
            idx = [g for g in ground if model.geom_type[g] == kind]
            if not idx:
                continue
            sel = np.array(idx, dtype=np.int32)
            hull = _hulls(model, idx, dtype) if kind == GeomType.MESH else None
            blocks.append(_ground_points(kind, geom_p[sel], geom_r[sel], size[sel], hull).reshape(-1, 3))
            order += [(g, k) for g in idx for k in range(GROUND_POINTS[kind])]
        slot_of = {key: i for i, key in enumerate(order)}
        perm = np.array(
            [slot_of[(g, k)] for g in ground for k in range(GROUND_POINTS[model.geom_type[g]])], dtype=np.int32
        )
        pts = jnp.concatenate(blocks)[perm]
        geom_of_slot = np.array([g for g in ground for _ in range(GROUND_POINTS[model.geom_type[g]])], dtype=np.int32)
        n_ground = pts.shape[0]
        distance.append(pts[:, 2] - model.ground_height.astype(dtype))
        point.append(pts)
        normal.append(_z(dtype, (n_ground,)))
        f = combine_friction(
            model.opt.friction_rule,
            model.ground_friction.astype(dtype),
            np.True_,
            mu[geom_of_slot],
            given[geom_of_slot],
            0,
            priority[geom_of_slot],
        )
        friction.append(jnp.broadcast_to(f, (n_ground,)))
        restitution.append(jnp.maximum(model.ground_restitution.astype(dtype), rest[geom_of_slot]))

    # 2. Pairs, grouped by canonical type pair (and whether the pair is given the other way round); each
    # pair's slots are consecutive.
    pairs = model.contact_pairs
    if pairs:
        counts = [pair_slot_count(model, pair) for pair in pairs]
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        groups: dict[tuple, list[int]] = {}
        for slot, (a, b) in enumerate(pairs):
            ta, tb = model.geom_type[a], model.geom_type[b]
            key = ((ta, tb), False) if (ta, tb) in _PAIR_FUNCTIONS else ((tb, ta), True)
            groups.setdefault(key, []).append(slot)
        outs, order = [], []

        def shape(geoms):
            """The size of primitive geoms, the ``(vertices, planes, valid)`` of mesh geoms (static kind per group)."""
            if model.geom_type[geoms[0]] != GeomType.MESH:
                return size[geoms]
            return _hulls(model, geoms, dtype)

        for (kinds, flipped), slots in groups.items():
            first = np.array([pairs[s][1] if flipped else pairs[s][0] for s in slots], dtype=np.int32)
            second = np.array([pairs[s][0] if flipped else pairs[s][1] for s in slots], dtype=np.int32)
            d, n, p_first, p_second = _PAIR_FUNCTIONS[kinds](
                geom_p[first], geom_r[first], shape(first), geom_p[second], geom_r[second], shape(second)
            )
            d, n = d.reshape(-1), n.reshape(-1, 3)
            outs.append((d, -n, p_first.reshape(-1, 3)) if flipped else (d, n, p_second.reshape(-1, 3)))
            order += [start[s] + j for s in slots for j in range(PAIR_SLOTS[kinds])]
        inverse = np.argsort(np.array(order))
        ga = np.repeat(np.array([a for a, _ in pairs], dtype=np.int32), counts)
        gb_ = np.repeat(np.array([b for _, b in pairs], dtype=np.int32), counts)
        distance.append(jnp.concatenate([o[0] for o in outs])[inverse])
        normal.append(jnp.concatenate([o[1] for o in outs])[inverse])
        point.append(jnp.concatenate([o[2] for o in outs])[inverse])
        friction.append(
            combine_friction(
                model.opt.friction_rule, mu[ga], given[ga], mu[gb_], given[gb_], priority[ga], priority[gb_]
            )
        )
        restitution.append(jnp.maximum(rest[ga], rest[gb_]))

    normal = jnp.concatenate(normal)
    return Contacts(
        distance=jnp.concatenate(distance),
        position=jnp.concatenate(point),
        frame=tangent_frame(normal),
        friction=jnp.concatenate(friction),
        restitution=jnp.concatenate(restitution),
        body_a=body_a,
        body_b=body_b,
    )
