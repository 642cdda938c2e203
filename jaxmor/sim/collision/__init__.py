"""Stage 5a, collision: contact candidates of the collision geoms against the ground plane and each other.

``driver`` (:func:`collide`, the slot layout, the pair checks, the friction rules) runs the kernels of ``ground``
(ground points, met by the plane or the ground's height field, ``height_field``), ``primitive`` (sphere, capsule and
box pairs) and ``polytope`` (box-box and mesh pairs) and the terrain grids' lookup (``terrain``: world geoms binned
by ``(x, y)``, ``Model.terrain``); ``contacts`` holds the result type; ``budget`` (:func:`select`) fills the
solver's fixed number of contact slots from the candidates, nearest first. Imports run one way: ``contacts`` <-
``primitive`` <- ``polytope`` <- ``ground`` <- ``driver`` <- ``budget``, and ``terrain`` and ``height_field`` <-
``driver``. The design and its proofs: ``docs/design/collision.md``.
"""

from jaxmor.sim.collision.budget import contact_budget, default_budget, select
from jaxmor.sim.collision.contacts import Contacts, tangent_frame
from jaxmor.sim.collision.driver import (
    FRICTION_RULES,
    GROUND_POINTS,
    PAIR_SLOTS,
    check_pairs,
    collide,
    combine_friction,
    contact_bodies,
    contact_count,
    pair_slot_count,
    pair_supported,
)

__all__ = [
    "FRICTION_RULES",
    "GROUND_POINTS",
    "PAIR_SLOTS",
    "check_pairs",
    "collide",
    "combine_friction",
    "contact_bodies",
    "contact_budget",
    "contact_count",
    "Contacts",
    "default_budget",
    "pair_slot_count",
    "pair_supported",
    "select",
    "tangent_frame",
]
