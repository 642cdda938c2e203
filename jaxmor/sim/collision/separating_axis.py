"""Contacts of two convex polytopes by the separating-axis test and face clipping: a manifold, not single points.

A polytope is given in the world frame as ``(vertices (V, 3) [m], planes (P, 4), faces (P, K) int, edges (E, 2)
int)``: its vertices, its face planes ``(n, d)`` (outward unit normal, ``n . x <= d`` inside), each face's
vertices in order around it (a face of fewer than ``K`` vertices repeats its last), and its edges as vertex
pairs. The axes tested are every face normal of both and the cross product of every pair of edges; the one
along which the polytopes overlap least (or are farthest apart) decides the contact:

* a **face** of one (the reference face): the most opposed face of the other (the incident face) is clipped to
  it, and the corners of their overlap (incident vertices over the reference face, reference vertices under
  the incident face, crossings of their edges) are the candidates: the deepest kept, then the ``slots - 1`` that
  spread farthest from those kept (apart, without an overlap along the normal, the incident polytope's nearest
  vertex);
* an **edge pair**, only where it beats every face by :data:`EDGE_PREFERENCE` of the pair's size: one contact
  at the closest points of the two supporting edges, along their common normal.

``polytope_manifold`` returns ``(distance (slots,), normal (slots, 3), point on A, point on B)``, the normal from A to
B, ``point on B - distance normal = point on A``; unused slots have the distance :data:`UNUSED_GAP`. The
choices (axis, faces, kept points) carry no gradient; distances and points carry the poses'. Why this method
and its limits: ``docs/design/collision.md``, "Polytope contacts".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.math import safe_div
from jaxmor.sim.collision.contacts import UNUSED_GAP
from jaxmor.sim.collision.primitive import closest_on_segments

#: Relative tolerance (of the pair's size, the larger bounding-box diagonal) of "on or inside a face" and of
#: the preference for A's face over an equally good face of B.
INSIDE = 1e-5

#: An edge-pair axis is chosen only where the polytopes overlap less along it (or are farther apart) than along
#: every face normal by this fraction of the pair's size: faces win ties, which a resting face needs.
EDGE_PREFERENCE = 1e-3

#: Two edges are parallel (their cross product is no axis) where the squared sine of their angle is below this.
EDGE_PARALLEL = 1e-6


def _face_separations(planes, other):
    """(P,) how far ``other``'s vertices (V, 3) lie outside each face plane at least [m] (negative: overlap)."""
    return jnp.min(other @ planes[:, :3].T, 0) - planes[:, 3]


def _edge_separations(va, ea, vb, eb):
    """``(separation (Ea, Eb), axis (Ea, Eb, 3))`` along each edge pair's unit cross product, oriented from A to B
    (the better of its two signs); ``-inf`` for parallel edges."""
    da = va[ea[:, 1]] - va[ea[:, 0]]
    db = vb[eb[:, 1]] - vb[eb[:, 0]]
    axis = jnp.cross(da[:, None, :], db[None, :, :])
    sq = jnp.sum(axis * axis, -1)
    ok = sq > EDGE_PARALLEL * jnp.sum(da * da, -1)[:, None] * jnp.sum(db * db, -1)[None, :]
    axis = axis / jnp.sqrt(jnp.where(ok, sq, 1.0))[..., None]
    pa, pb = jnp.einsum("vj,efj->efv", va, axis), jnp.einsum("vj,efj->efv", vb, axis)
    forward = jnp.min(pb, -1) - jnp.max(pa, -1)
    backward = jnp.min(pa, -1) - jnp.max(pb, -1)
    axis = jnp.where((backward > forward)[..., None], -axis, axis)
    return jnp.where(ok, jnp.maximum(forward, backward), -jnp.inf), axis


def _inside(points, planes, skip, tol):
    """(n,) whether ``points`` (n, 3) are within ``tol`` of inside every plane but the ``skip``-th."""
    s = points @ planes[:, :3].T - planes[:, 3]
    return jnp.all((s <= tol) | (jnp.arange(planes.shape[0]) == skip), -1)


def _clip(ref, face, incident, tol):
    """The candidates of the reference face ``face`` of ``ref`` clipped against the most opposed face of
    ``incident``: ``(depth (C,), point on the incident polytope (C, 3), valid (C,))``, depth along the face's
    normal (negative: below it)."""
    vr, pr, fr, _ = ref
    vi, pi, fi, _ = incident
    n, d = pr[face, :3], pr[face, 3]
    opposed = jnp.argmin(jax.lax.stop_gradient(pi[:, :3] @ n))
    rp, ip = vr[fr[face]], vi[fi[opposed]]
    # Incident vertices over the reference face.
    depth_i = ip @ n - d
    over = _inside(ip - depth_i[:, None] * n, pr, face, tol)
    # Reference vertices under the incident face, moved along n onto its plane.
    ni, di = pi[opposed, :3], pi[opposed, 3]
    cos = ni @ n
    t = safe_div(di - rp @ ni, cos, cos < -EDGE_PARALLEL)
    under_point = rp + t[:, None] * n
    under = _inside(under_point, pi, opposed, tol) & (cos < -EDGE_PARALLEL)
    # Crossings of the reference face's edges with the incident face's edges seen along n.
    proj = ip - depth_i[:, None] * n
    e = jnp.roll(rp, -1, 0) - rp
    g = jnp.roll(proj, -1, 0) - proj
    w = proj[None, :, :] - rp[:, None, :]
    den = jnp.cross(e[:, None, :], g[None, :, :]) @ n
    big = jnp.abs(den) > jnp.sqrt(EDGE_PARALLEL) * jnp.linalg.norm(e, axis=-1)[:, None] * jnp.linalg.norm(g, axis=-1)
    s = safe_div(jnp.cross(w, g[None, :, :]) @ n, den, big)
    u = safe_div(jnp.cross(w, e[:, None, :]) @ n, den, big)
    eps = INSIDE
    cross = big & (s >= -eps) & (s <= 1 + eps) & (u >= -eps) & (u <= 1 + eps)
    cross_point = (ip + u[..., None] * (jnp.roll(ip, -1, 0) - ip)[None, :, :]).reshape(-1, 3)
    points = jnp.concatenate([ip, under_point, cross_point])
    return points @ n - d, points, jnp.concatenate([over, under, cross.reshape(-1)])


def _spread_deepest(depth, points, valid, tol, slots):
    """``(index (slots,), used (slots,))``: candidates that span the overlap, and its deepest. The first is the one
    farthest from the valid candidates' centroid, each next the one farthest from those kept (greedy farthest-point
    order), and the last slot takes the deepest unless it is already among them. Spread, not depth, decides the
    others: on two nearly parallel faces every depth is about the same, and keeping the 8 deepest of a 16-gon's
    corners put them all on the side tilted down, so a stack of cylinders rocked from side to side; seeding the
    order from the centroid, not from the deepest point, keeps the choice from jumping as the faces rock. A
    candidate within ``tol`` of a kept one is a repeat (a corner two faces share is found several ways)."""
    weight = valid.astype(points.dtype)
    centroid = weight @ points / jnp.maximum(jnp.sum(weight), 1.0)
    first = jnp.argmax(jnp.where(valid, jnp.sum((points - centroid) ** 2, -1), -jnp.inf))
    reach = jnp.where(valid, jnp.sum((points - points[first]) ** 2, -1), -jnp.inf)
    keep, gaps = [first], [jnp.where(jnp.any(valid), jnp.inf, -jnp.inf)]
    deepest = jnp.argmin(jnp.where(valid, depth, jnp.inf))
    for k in range(slots - 1):
        pick = jnp.argmax(reach)
        if k == slots - 2:  # the last slot: the deepest, unless a kept one already stands for it
            pick = jnp.where(reach[deepest] > tol * tol, deepest, pick)
        keep.append(pick)
        gaps.append(reach[pick])
        reach = jnp.minimum(reach, jnp.sum((points - points[pick]) ** 2, -1))
    return jnp.stack(keep), jnp.stack(gaps) > tol * tol


def _face_contacts(ref, face, incident, tol, slots, ref_is_a):
    """The ``slots`` deepest candidates of :func:`_clip`, as ``(distance, normal, point on A, point on B)``."""
    depth, on_incident, valid = _clip(ref, face, incident, tol)
    n, d = ref[1][face, :3], ref[1][face, 3]
    # Apart, with no overlap seen along n: the incident polytope's nearest vertex stands in, in the first slot.
    vertex = incident[0][jnp.argmin(jax.lax.stop_gradient(incident[0] @ n))]
    apart = ~jnp.any(valid)
    depth = jnp.concatenate([(vertex @ n - d)[None], depth])
    on_incident = jnp.concatenate([vertex[None], on_incident])
    valid = jnp.concatenate([apart[None], valid])
    keep, used = _spread_deepest(jax.lax.stop_gradient(depth), jax.lax.stop_gradient(on_incident), valid, tol, slots)
    depth, on_incident = jnp.where(used, depth[keep], UNUSED_GAP), on_incident[keep]
    on_ref = on_incident - depth[:, None] * n
    normal = jnp.broadcast_to(jnp.where(ref_is_a, n, -n), on_ref.shape)
    on_a = jnp.where(ref_is_a, on_ref, on_incident)
    on_b = jnp.where(ref_is_a, on_incident, on_ref)
    return depth, normal, on_a, on_b


def _edge_contact(a, b, axis, slots):
    """The contact of the supporting edges of A and B along ``axis`` (from A to B), in the first slot."""
    va, _, _, ea = a
    vb, _, _, eb = b
    high = jnp.min(jax.lax.stop_gradient(va @ axis)[ea], -1)  # A's edge highest along the axis
    low = jnp.max(jax.lax.stop_gradient(vb @ axis)[eb], -1)  # B's lowest
    edge_a, edge_b = ea[jnp.argmax(high)], eb[jnp.argmin(low)]
    pa, pb, _, _ = closest_on_segments(va[edge_a[0]], va[edge_a[1]], vb[edge_b[0]], vb[edge_b[1]])
    distance = (pb - pa) @ axis
    first = jnp.arange(slots) == 0
    on_b = jnp.broadcast_to(pb, (slots, 3))
    return (
        jnp.where(first, distance, UNUSED_GAP),
        jnp.broadcast_to(axis, (slots, 3)),
        on_b - distance * axis,
        on_b,
    )


def _size(vertices):
    extent = jnp.max(vertices, 0) - jnp.min(vertices, 0)
    return jnp.sqrt(jnp.sum(extent * extent))


def _same_topology(a: tuple, b: tuple) -> bool:
    """Whether A and B have the same array shapes and the same (static) faces and edges: then either can be the
    reference polytope of one clip."""
    shapes = all(x.shape == y.shape for x, y in zip(a, b, strict=True))
    static = all(isinstance(x, np.ndarray) for x in (*a[2:], *b[2:]))
    return shapes and static and all(np.array_equal(x, y) for x, y in zip(a[2:], b[2:], strict=True))


def polytope_manifold(a: tuple, b: tuple, slots: int) -> tuple[jax.Array, ...]:
    """The contacts of two convex polytopes A and B (one pair, the module docstring's layout).

    Args:
        a, b: ``(vertices (V, 3), planes (P, 4), faces (P, K) int, edges (E, 2) int)`` in the world frame.
        slots: contacts returned (static).

    Returns:
        ``(distance (slots,) [m], normal (slots, 3) from A to B, point on A (slots, 3), point on B)``, unused slots
        at :data:`UNUSED_GAP`.
    """
    same = _same_topology(a, b)
    a, b = (*a[:2], *map(jnp.asarray, a[2:])), (*b[:2], *map(jnp.asarray, b[2:]))
    size = jax.lax.stop_gradient(jnp.maximum(_size(a[0]), _size(b[0])))
    tol = INSIDE * size
    sep_a = jax.lax.stop_gradient(_face_separations(a[1], b[0]))
    sep_b = jax.lax.stop_gradient(_face_separations(b[1], a[0]))
    sep_e, axes = _edge_separations(a[0], a[3], b[0], b[3])
    sep_e = jax.lax.stop_gradient(sep_e)
    face_a, face_b = jnp.argmax(sep_a), jnp.argmax(sep_b)
    ref_is_a = sep_a[face_a] + tol >= sep_b[face_b]
    if same:  # one clip, of the reference and incident polytopes picked by the test
        ref = (*(jnp.where(ref_is_a, x, y) for x, y in zip(a[:2], b[:2], strict=True)), *a[2:])
        incident = (*(jnp.where(ref_is_a, y, x) for x, y in zip(a[:2], b[:2], strict=True)), *a[2:])
        face = _face_contacts(ref, jnp.where(ref_is_a, face_a, face_b), incident, tol, slots, ref_is_a)
    else:
        from_a = _face_contacts(a, face_a, b, tol, slots, True)
        from_b = _face_contacts(b, face_b, a, tol, slots, False)
        face = tuple(jnp.where(ref_is_a, x, y) for x, y in zip(from_a, from_b, strict=True))
    best_face = jnp.maximum(sep_a[face_a], sep_b[face_b])
    pair = jnp.unravel_index(jnp.argmax(sep_e), sep_e.shape)
    use_edge = sep_e[pair] > best_face + EDGE_PREFERENCE * size
    edge = _edge_contact(a, b, jax.lax.stop_gradient(axes[pair]), slots)
    return tuple(jnp.where(use_edge, x, y) for x, y in zip(edge, face, strict=True))
