"""The touch sensor's rule (MuJoCo's): the normal force of every contact on the site's body whose ray, from the
contact point along the normal away from that body, meets the site's zone (the site's shape and size: a sphere,
capsule, ellipsoid, cylinder or box; a ray that starts inside the zone meets it).

Each shape gives the interval ``[t_in, t_out]`` of the ray ``p + t d`` inside it (empty: ``t_in > t_out``); the
ray meets the zone when ``t_out >= max(t_in, 0)``. The forces are the step's normal impulses over the time step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmor.math import safe_div, safe_sqrt
from jaxmor.types import Model

_FAR = 1e30


def touch_force(model: Model, run, site: int, body: int, rotation: jax.Array, position: jax.Array) -> jax.Array:
    """() the sum of the normal forces [N] of the contacts of ``run`` (:func:`jaxmor.sim.pipeline.stages`) on
    ``body`` whose ray meets site ``site``'s zone, the site at ``(rotation (3, 3), position (3,))`` in the world."""
    contacts, impulses = run.contacts, run.impulses
    dtype = position.dtype
    force = impulses.contact[:, 0] / jnp.asarray(model.opt.timestep, dtype)
    on_a, on_b = contacts.body_a == body, contacts.body_b == body
    normal = contacts.frame[:, 0]
    ray = jnp.where(on_b[:, None], -normal, normal)  # from the contact point towards the other body
    start = (contacts.position - position) @ rotation  # in the site's frame
    direction = ray @ rotation
    size = model.sites.size[site].astype(dtype)
    t_in, t_out = _interval(model.sites.shape[site], size, start, direction)
    meets = t_out >= jnp.maximum(t_in, 0.0)
    return jnp.sum(jnp.where((on_a | on_b) & meets & (force > 0), force, 0.0))


def _interval(shape: str, size: jax.Array, p: jax.Array, d: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(n,), (n,): the interval of each ray ``p + t d`` (n, 3) inside a zone of ``shape`` and ``size`` (3,)."""
    if shape in ("sphere", "ellipsoid"):
        radii = jnp.full(3, size[0]) if shape == "sphere" else size
        return _ball(p / radii, d / radii)
    if shape == "box":
        return _slabs(p, d, size)
    # A cylinder (and a capsule's middle): a disc of radius size[0] swept along z over +-size[1].
    radial = _disc(p[:, :2], d[:, :2], size[0])
    along = _slabs(p[:, 2:], d[:, 2:], size[1:2])
    t_in, t_out = jnp.maximum(radial[0], along[0]), jnp.minimum(radial[1], along[1])
    if shape == "capsule":
        for end in (-1.0, 1.0):
            cap = _ball((p - jnp.array([0.0, 0.0, end]) * size[1]) / size[0], d / size[0])
            t_in, t_out = _union(t_in, t_out, *cap)
    return t_in, t_out


def _ball(p: jax.Array, d: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The interval inside the unit ball."""
    a = jnp.sum(d * d, axis=-1)
    b = jnp.sum(p * d, axis=-1)
    c = jnp.sum(p * p, axis=-1) - 1.0
    disc = b * b - a * c
    root = safe_sqrt(disc)
    ok = (disc >= 0) & (a > 0)
    return jnp.where(ok, safe_div(-b - root, a), _FAR), jnp.where(ok, safe_div(-b + root, a), -_FAR)


def _disc(p: jax.Array, d: jax.Array, radius: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The interval inside the infinite cylinder ``x^2 + y^2 <= radius^2`` (``p``, ``d``: (n, 2))."""
    a = jnp.sum(d * d, axis=-1)
    b = jnp.sum(p * d, axis=-1)
    c = jnp.sum(p * p, axis=-1) - radius * radius
    disc = b * b - a * c
    root = safe_sqrt(disc)
    moving = a > 0
    inside = c <= 0  # a ray along the axis stays inside or outside
    t_in = jnp.where(moving, jnp.where(disc >= 0, safe_div(-b - root, a), _FAR), jnp.where(inside, -_FAR, _FAR))
    t_out = jnp.where(moving, jnp.where(disc >= 0, safe_div(-b + root, a), -_FAR), jnp.where(inside, _FAR, -_FAR))
    return t_in, t_out


def _slabs(p: jax.Array, d: jax.Array, half: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The interval inside ``|x_k| <= half_k`` on every axis ``k`` of ``p``, ``d`` (n, k)."""
    moving = d != 0
    t1 = safe_div(-half - p, d, moving)
    t2 = safe_div(half - p, d, moving)
    inside = jnp.abs(p) <= half
    low = jnp.where(moving, jnp.minimum(t1, t2), jnp.where(inside, -_FAR, _FAR))
    high = jnp.where(moving, jnp.maximum(t1, t2), jnp.where(inside, _FAR, -_FAR))
    return jnp.max(low, axis=-1), jnp.min(high, axis=-1)


def _union(in_a, out_a, in_b, out_b) -> tuple[jax.Array, jax.Array]:
    """An interval that meets ``[0, inf)`` exactly when one of the two does (enough for the touch rule)."""
    meets_a = out_a >= jnp.maximum(in_a, 0.0)
    meets_b = out_b >= jnp.maximum(in_b, 0.0)
    return jnp.where(meets_a | meets_b, 0.0, _FAR), jnp.where(meets_a | meets_b, 1.0, -_FAR)
