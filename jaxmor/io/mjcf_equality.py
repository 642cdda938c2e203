"""Equality constraints (MJCF ``<equality>``) as jaxmor reads them: ``connect``, ``weld``, ``joint`` and ``tendon``.

Each is read with MuJoCo's semantics into a :class:`~jaxmor.io.description.PointEquality`,
:class:`~jaxmor.io.description.JointEquality` or :class:`~jaxmor.io.description.TendonEquality` (the builder turns
them into the Model's rows, :mod:`jaxmor.modeling.equality`). Their ``solref`` and ``solimp`` (MuJoCo's soft
constraints) are read and not followed: jaxmor holds an equality exactly, as bilateral rows of its solver, and the
load's :class:`~jaxmor.io.mjcf_differences.MujocoDifferenceWarning` says so. ``<default><equality>`` gives every
constraint of its class ``active``, ``solref`` and ``solimp``; ``<option><flag equality="disable">`` keeps the
constraints, inactive. Flex equalities are refused.
"""

from __future__ import annotations

import numpy as np

from jaxmor.io.description import JointEquality, PointEquality, TendonEquality
from jaxmor.io.mjcf_document import Values
from jaxmor.io.mjcf_schema import EQUALITY_SPECS, REFUSED_EQUALITIES
from jaxmor.io.xml import tag

#: MuJoCo's name of the world body.
WORLD = "world"
#: MuJoCo's default ``polycoef``: ``q1 - q1_ref = q2 - q2_ref``.
POLYCOEF = (0.0, 1.0, 0.0, 0.0, 0.0)


def read_equalities(reader, sections) -> list[PointEquality | JointEquality | TendonEquality]:
    """The constraints of the ``<equality>`` sections, in document order.

    Args:
        reader: the MJCF reader (its ``resolve`` for class defaults, ``doc`` for messages).
        sections: the ``<equality>`` elements.

    Raises:
        ModelError: a refused or unknown element, or a constraint that is not well formed (file and line).
    """
    out = []
    for section in sections:
        for el in section:
            kind = tag(el)
            if kind is None:
                continue
            if kind in REFUSED_EQUALITIES:
                raise reader.doc.error(el, f"<equality><{kind}>: {REFUSED_EQUALITIES[kind]}")
            if kind not in EQUALITY_SPECS:
                raise reader.doc.error(el, f"unexpected element <{kind}> in <equality>")
            v = reader.resolve(el, EQUALITY_SPECS[kind], "equality", None)
            name = v.text("name", "") or reader.doc.unnamed(
                "equality", len(out), "equality"
            )  # MuJoCo's id names an unnamed one
            out.append(_coupling(v, name, kind) if kind in ("joint", "tendon") else _point(v, kind, name))
    return out


def _point(v: Values, kind: str, name: str) -> PointEquality:
    """A ``connect`` or a ``weld``: by two bodies (body2 the world when absent) or by two sites."""
    line, active = v.element.sourceline, v.flag("active", True)
    sites = (v.text("site1"), v.text("site2"))
    bodies = (v.text("body1"), v.text("body2"))
    if any(sites):
        if not all(sites) or any(bodies):
            raise v.error(f"<{kind}> by sites needs site1 and site2 and no body1 or body2")
        if v.has("anchor") or v.has("relpose"):
            raise v.error(f"<{kind}> by sites takes its points (and orientations) from the sites: drop anchor/relpose")
        torque_scale = _torque_scale(v) if kind == "weld" else 1.0
        return PointEquality(kind, name, line, None, None, np.zeros(3), None, torque_scale, *sites, active=active)
    if not bodies[0]:
        raise v.error(f"<{kind}> needs body1 (or site1 and site2)")
    links = tuple(None if b in (None, WORLD) else b for b in bodies)
    if links[0] is None and links[1] is None:
        raise v.error(f"<{kind}> constrains the world to itself")
    if kind == "connect":
        if not v.has("anchor"):
            raise v.error("<connect> needs an anchor (or site1 and site2)")
        return PointEquality(kind, name, line, *links, v.numbers("anchor", 3), active=active)
    relpose = None
    if v.has("relpose"):
        pose = v.numbers("relpose", 7)
        if np.linalg.norm(pose[3:]) > 0:  # MuJoCo: a zero quaternion means "the reference configuration's"
            relpose = np.concatenate([pose[:3], pose[3:] / np.linalg.norm(pose[3:])])
    anchor = v.numbers("anchor", 3, default=(0.0, 0.0, 0.0))
    return PointEquality(kind, name, line, *links, anchor, relpose, _torque_scale(v), active=active)


def _torque_scale(v: Values) -> float:
    scale = v.number("torquescale", 1.0)
    if not scale >= 0:
        raise v.error(f"<weld> torquescale must not be negative, got {scale!r}")
    return float(scale)


def _coupling(v: Values, name: str, kind: str) -> JointEquality | TendonEquality:
    """A ``joint`` or ``tendon`` coupling: two joints' positions or two tendons' lengths related by a polynomial (or
    the first held at a constant)."""
    first, second = v.text(f"{kind}1"), v.text(f"{kind}2")
    if not first:
        raise v.error(f"<equality><{kind}> needs {kind}1")
    if first == second:
        raise v.error(f"<equality><{kind}> couples {kind} {first!r} with itself")
    polycoef = np.array(POLYCOEF)  # MuJoCo keeps its defaults past the numbers given
    given = v.numbers("polycoef", 1, 5, default=POLYCOEF)
    polycoef[: len(given)] = given
    if not np.all(np.isfinite(polycoef)):
        raise v.error(f"<equality><{kind}> polycoef must be finite, got {polycoef.tolist()}")
    made = JointEquality if kind == "joint" else TendonEquality
    return made(name, v.element.sourceline, first, second or None, polycoef, v.flag("active", True))
