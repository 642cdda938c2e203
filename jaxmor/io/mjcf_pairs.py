"""Explicit contact pairs (MJCF ``<contact><pair geom1 geom2>``) as jaxmor reads them.

MuJoCo tests an explicit pair whatever the two geoms' ``contype``/``conaffinity`` and ``<exclude>`` say, so a geom
named in a pair is a collision geom even when its bit masks make it visual. jaxmor collides the pair as any other
candidate: against the ground plane as a ground contact, against another geom as a contact pair. The pair's own
``friction`` (default 1, MuJoCo's) and ``condim`` (default 3) replace the geoms' combination in MuJoCo; jaxmor
keeps the combination (``Options.friction_rule``), and where the two differ the load's
:class:`~jaxmor.io.mjcf_differences.MujocoDifferenceWarning` says so, pair by pair. Its soft-contact
parameters (``margin``, ``gap``, ``solref``, ``solimp``, ``solreffriction``) are read and not followed, as a
geom's.
"""

from __future__ import annotations

from jaxmor.io.description import ContactPair
from jaxmor.io.mjcf_document import Values
from jaxmor.io.xml import tag

#: MuJoCo's default friction of an explicit pair (sliding, the first of its five).
PAIR_FRICTION = 1.0


def read_pair(v: Values) -> ContactPair:
    """A ``<pair>`` from its resolved attributes (``v``: its class's defaults under its own), both geoms by name.

    Raises:
        ModelError: a missing geom, the same geom twice, a bad ``condim`` or a negative friction.
    """
    names = (v.text("geom1"), v.text("geom2"))
    if not all(names):
        raise v.error("<pair> needs geom1 and geom2")
    if names[0] == names[1]:
        raise v.error(f"<pair> pairs geom {names[0]!r} with itself")
    condim = v.integer("condim", 3)
    if condim not in (1, 3, 4, 6):
        raise v.error(f"<pair> condim must be 1, 3, 4 or 6, got {condim}")
    friction = v.numbers("friction", 1, 5, default=(PAIR_FRICTION,))
    if (friction < 0).any():
        raise v.error(f"<pair> friction must not be negative, got {friction.tolist()}")
    mu = float(friction[0]) if condim >= 3 else 0.0
    return ContactPair(names[0], names[1], mu, condim, v.element.sourceline)


def pair_elements(sections) -> list:
    """The ``<pair>`` elements of the ``<contact>`` sections, in document order."""
    return [el for section in sections for el in section if tag(el) == "pair"]


def difference_line(pair: ContactPair, ours: float, ground: str) -> str | None:
    """The warning's line for a pair whose friction (or condim) MuJoCo and jaxmor treat differently, else None.

    Args:
        pair: the pair.
        ours: the friction jaxmor's contacts of the pair take (the geoms' combination).
        ground: the name the line gives the ground plane (``pair.geom2`` ``None``).
    """
    said = []
    if abs(pair.friction - ours) > 1e-12 * max(1.0, abs(ours)):
        said.append(f"friction {pair.friction:g} (the pair's) where jaxmor uses {ours:g} (the geoms' combination)")
    if pair.condim > 3:
        said.append(f"condim {pair.condim}: jaxmor has no torsional or rolling friction")
    if not said:
        return None
    names = (pair.geom1, ground if pair.geom2 is None else pair.geom2)
    return f"explicit pair {names!r} at line {pair.line}: MuJoCo gives it " + "; ".join(said)
