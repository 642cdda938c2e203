"""Contact kernels of the primitive pairs: sphere-sphere, sphere-capsule, capsule-capsule, sphere-box, capsule-box.

Every kernel maps two batches of geoms ``(centre (..., 3) [m], rotation (..., 3, 3), size (..., 3) [m])`` to
``(distance (..., k) [m], normal (..., k, 3), point on A (..., k, 3) [m], point on B)``, with ``k`` its
``slots`` (without the ``k`` axis when it is 1); the normal points from A to B. Pure JAX, any float dtype,
finite values and gradients at degenerate poses. What each kernel computes: ``docs/design/collision.md``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxmor.math import safe_div, safe_sqrt
from jaxmor.sim.collision.contacts import kernel, up

#: Golden-section steps of the capsule-box search for the segment's deepest point: the bracket shrinks to
#: ``0.618^40 = 4e-9`` of the segment.
GOLDEN_SECTION_STEPS = 40

#: Two segments are parallel where the squared sine of the angle between them is at most this, or at most
#: :data:`PARALLEL_ROUND_OFF` times the dtype's epsilon when that is larger (the round-off of the squared sine).
PARALLEL_SINE_SQUARED = 1e-6
PARALLEL_ROUND_OFF = 100.0


def _parallel_tolerance(dtype) -> float:
    """The squared sine below which two segments are parallel, for ``dtype`` (:data:`PARALLEL_SINE_SQUARED`)."""
    return max(PARALLEL_SINE_SQUARED, PARALLEL_ROUND_OFF * float(jnp.finfo(dtype).eps))


def _tiny(dtype) -> float:
    """Squared length below which a direction is treated as undefined."""
    return float(jnp.finfo(dtype).eps) ** 2


def _normalize(v: jnp.ndarray, fallback: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``(v / |v|, ok)``, or ``(fallback, False)`` where ``|v|`` is (almost) zero; finite gradients."""
    sq = jnp.sum(v * v, axis=-1, keepdims=True)
    ok = sq > _tiny(v.dtype)
    safe = jnp.where(ok, sq, 1.0)
    return jnp.where(ok, v / jnp.sqrt(safe), fallback), ok[..., 0]


def _to_local(x, centre, rotation):
    """Points ``x`` (..., 3) in the frame of a geom at ``centre`` turned by ``rotation`` [m]."""
    return jnp.einsum("...ji,...j->...i", rotation, x - centre)


def _spheres(ca, ra, cb, rb, fallback=None):
    """Two spheres: ``(distance, n, point on a's surface, point on b's surface)``."""
    if fallback is None:
        fallback = up(ca.dtype, ca.shape[:-1])
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


def closest_on_segments(p0, p1, q0, q1):
    """``(point on p0 p1, point on q0 q1, p1 - p0, q1 - q0)``: the closest points of the two segments (the middle
    of their overlap when parallel) and their directions."""
    tiny = _tiny(p0.dtype)
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a = jnp.sum(d1 * d1, -1)
    e = jnp.sum(d2 * d2, -1)
    b = jnp.sum(d1 * d2, -1)
    c = jnp.sum(d1 * r, -1)
    f = jnp.sum(d2 * r, -1)
    a_ok, e_ok = a > tiny, e > tiny
    denom = a * e - b * b  # |d1|^2 |d2|^2 sin^2 of their angle
    general = denom > _parallel_tolerance(p0.dtype) * a * e
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


def segment_ends(centre, rotation, half_length):
    """The two ends of a capsule's (or cylinder's) axis segment, along the geom's local ``z`` [m]."""
    axis = rotation[..., :, 2]
    return centre - half_length[..., None] * axis, centre + half_length[..., None] * axis


@kernel(slots=1)
def sphere_sphere(ca, ra_rot, sa, cb, rb_rot, sb):
    """Sphere A against sphere B."""
    return _spheres(ca, sa[..., 0], cb, sb[..., 0])


@kernel(slots=1)
def sphere_capsule(ca, ra_rot, sa, cb, rb_rot, sb):
    """Sphere A against capsule B: the closest point of the capsule's segment."""
    q0, q1 = segment_ends(cb, rb_rot, sb[..., 1])
    return _spheres(ca, sa[..., 0], _segment_point(q0, q1, ca), sb[..., 0])


@kernel(slots=1)
def capsule_capsule(ca, ra_rot, sa, cb, rb_rot, sb):
    """Capsule A against capsule B: the closest points of their segments."""
    p0, p1 = segment_ends(ca, ra_rot, sa[..., 1])
    q0, q1 = segment_ends(cb, rb_rot, sb[..., 1])
    pa, pb, d1, d2 = closest_on_segments(p0, p1, q0, q1)
    # Intersecting axes: the common perpendicular (then +z) stands in for the undefined direction.
    perp, _ = _normalize(jnp.cross(d1, d2), up(ca.dtype, ca.shape[:-1]))
    return _spheres(pa, sa[..., 0], pb, sb[..., 0], fallback=perp)


@kernel(slots=1)
def sphere_box(ca, ra_rot, sa, cb, rb_rot, sb):
    """Sphere A against box B: ``(distance, n, point on A, point on B)``."""
    r = sa[..., 0]
    h = sb
    local = _to_local(ca, cb, rb_rot)  # sphere centre in box axes
    closest = jnp.clip(local, -h, h)
    # Outside (or on the surface): from the sphere centre to the closest point of the box.
    n_out, outside = _normalize(closest - local, up(ca.dtype, ca.shape[:-1]))
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


def _box_signed_distance(x, centre, rotation, half):
    """Signed distance [m] from points ``x`` to a box (negative inside); convex in ``x``."""
    q = jnp.abs(_to_local(x, centre, rotation)) - half
    outside = jnp.sqrt(jnp.sum(jnp.maximum(q, 0.0) ** 2, -1))
    return outside + jnp.minimum(jnp.max(q, -1), 0.0)


def deepest_on_segment(p0, p1, distance):
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


@kernel(slots=3)
def capsule_box(ca, ra_rot, sa, cb, rb_rot, sb):
    """Capsule A against box B, 3 slots (..., 3): its end spheres, then the sphere about its segment's
    deepest point in the box."""
    p0, p1 = segment_ends(ca, ra_rot, sa[..., 1])
    t = deepest_on_segment(p0, p1, lambda x: _box_signed_distance(x, cb, rb_rot, sb))
    centres = jnp.stack([p0, p1, p0 + t[..., None] * (p1 - p0)], -2)
    return sphere_box(centres, None, sa[..., None, :], cb[..., None, :], rb_rot[..., None, :, :], sb[..., None, :])


def _cylinder_signed_distance(x, centre, rotation, size):
    """Signed distance [m] from points ``x`` to a cylinder (``size``: radius, half length; negative inside)."""
    local = _to_local(x, centre, rotation)
    xy, z = local[..., :2], local[..., 2]
    radial = safe_sqrt(jnp.sum(xy * xy, -1)) - size[..., 0]
    axial = jnp.abs(z) - size[..., 1]
    outside = safe_sqrt(jnp.maximum(radial, 0.0) ** 2 + jnp.maximum(axial, 0.0) ** 2)
    return outside + jnp.minimum(jnp.maximum(radial, axial), 0.0)


@kernel(slots=1)
def sphere_cylinder(ca, ra_rot, sa, cb, rb_rot, sb):
    """Sphere A against cylinder B: the closest point of the cylinder (outside), or the exit through its side or
    its nearer cap, whichever is shallower (inside)."""
    dtype = ca.dtype
    r, radius, half = sa[..., 0], sb[..., 0], sb[..., 1]
    local = _to_local(ca, cb, rb_rot)
    xy, z = local[..., :2], local[..., 2]
    across = jnp.array([1.0, 0.0], dtype)
    rho = safe_sqrt(jnp.sum(xy * xy, -1))
    direction, _ = _normalize(xy, jnp.broadcast_to(across, xy.shape))
    rim = radius[..., None] * direction
    side = jnp.sign(z) + (z == 0)  # the nearer cap; +z at the middle
    outside = (rho > radius) | (jnp.abs(z) > half)
    closest = jnp.concatenate([jnp.where((rho > radius)[..., None], rim, xy), jnp.clip(z, -half, half)[..., None]], -1)
    fallback = jnp.concatenate([direction, jnp.zeros_like(z)[..., None]], -1)
    n_out, _ = _normalize(local - closest, fallback)  # from the cylinder out to the sphere's centre
    d_out = jnp.sum(n_out * (local - closest), -1)
    through_side = radius - rho < half - jnp.abs(z)
    n_in = jnp.where(through_side[..., None], fallback, jnp.stack([jnp.zeros_like(z), jnp.zeros_like(z), side], -1))
    face = jnp.where(
        through_side[..., None],
        jnp.concatenate([rim, z[..., None]], -1),
        jnp.concatenate([xy, (side * half)[..., None]], -1),
    )
    d_in = -jnp.where(through_side, radius - rho, half - jnp.abs(z))
    n_local = jnp.where(outside[..., None], n_out, n_in)
    point_local = jnp.where(outside[..., None], closest, face)
    n = -jnp.einsum("...ij,...j->...i", rb_rot, n_local)  # from the sphere to the cylinder
    point_b = cb + jnp.einsum("...ij,...j->...i", rb_rot, point_local)
    return jnp.where(outside, d_out, d_in) - r, n, ca + r[..., None] * n, point_b


@kernel(slots=3)
def capsule_cylinder(ca, ra_rot, sa, cb, rb_rot, sb):
    """Capsule A against cylinder B, 3 slots: its end spheres, then the sphere about its segment's deepest point
    in the cylinder."""
    p0, p1 = segment_ends(ca, ra_rot, sa[..., 1])
    t = deepest_on_segment(p0, p1, lambda x: _cylinder_signed_distance(x, cb, rb_rot, sb))
    centres = jnp.stack([p0, p1, p0 + t[..., None] * (p1 - p0)], -2)
    return sphere_cylinder(centres, None, sa[..., None, :], cb[..., None, :], rb_rot[..., None, :, :], sb[..., None, :])
