"""The result type of the collision stage and the pieces every kernel shares.

:class:`Contacts` holds one contact candidate per slot; :func:`tangent_frame` completes a unit normal to the
frame a slot carries; :func:`kernel` attaches to a kernel the number of contacts it returns (its slots). The
conventions are in ``docs/design/collision.md``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
from flax import struct

#: The gap of an unused candidate (a terrain cell entry without a world geom, a pair the filters keep apart, a
#: polytope slot its manifold does not fill) [m]: finite, so that the solver's arithmetic stays finite, and far
#: beyond any reach, so it never acts.
UNUSED_GAP = 1.0e3


@struct.dataclass
class Contacts:
    """Contact candidates, one per slot (``nc`` slots; layout and conventions: ``docs/design/collision.md``).

    Attributes:
        distance: (nc,) signed gap [m]; negative = penetration.
        position: (nc, 3) world contact point, on body B's surface (B's point deepest in A) [m].
        frame: (nc, 3, 3) rows: unit normal ``n`` (from A to B), unit tangents ``t1``, ``t2``;
            orthonormal and right-handed (``t1 x t2 = n``).
        friction: (nc,) Coulomb friction coefficient of the two surfaces [-], combined by
            ``model.opt.friction_rule`` and ``Model.geom_priority``
            (:func:`jaxmor.sim.collision.driver.combine_friction`).
        restitution: (nc,) combined coefficient of restitution ``max(e_a, e_b)`` [-].
        body_a: (nc,) int32 body A of each slot, ``-1`` for the world / ground.
        body_b: (nc,) int32 body B of each slot, ``-1`` for the world.
        key: (nc,) int32 the candidate each slot holds (its slot among :func:`~jaxmor.sim.collision.collide`'s
            candidates), the same from step to step for the same contact.
        overflow: () int32 the candidates within ``opt.contact_reach`` that the contact budget left out
            (:mod:`jaxmor.sim.collision.budget`; 0 for the candidates themselves).
    """

    distance: jnp.ndarray
    position: jnp.ndarray
    frame: jnp.ndarray
    friction: jnp.ndarray
    restitution: jnp.ndarray
    body_a: jnp.ndarray
    body_b: jnp.ndarray
    key: jnp.ndarray
    overflow: jnp.ndarray


def kernel(slots: int) -> Callable[[Callable], Callable]:
    """Decorator: mark a contact kernel with ``slots``, the number of contacts it returns per geom (ground
    kernels) or per geom pair (pair kernels), read by the driver as the function's ``slots`` attribute."""

    def mark(function: Callable) -> Callable:
        function.slots = slots
        return function

    return mark


def up(dtype, shape=()) -> jnp.ndarray:
    """(*shape, 3) the world ``+z`` axis: the ground's normal, and the fallback of an undefined normal."""
    return jnp.broadcast_to(jnp.array([0.0, 0.0, 1.0], dtype), (*shape, 3))


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
