"""What MuJoCo does differently with an MJCF file: the settings the file sets (or MuJoCo's defaults it relies
on) that jaxmor ignores or treats differently, each with what a user comparing the two engines will see.

:func:`differences` reads them off the expanded document; :func:`jaxmor.load_mjcf` adds the self-collision
default and gives them in one :class:`MujocoDifferenceWarning`. ``docs/mjcf.md`` ("How MuJoCo's results
differ") has the measurements behind the figures quoted.
"""

from __future__ import annotations

from jaxmor.io.mjcf_document import Document
from jaxmor.io.xml import tag


class MujocoDifferenceWarning(UserWarning):
    """An MJCF file sets something MuJoCo follows and jaxmor does not (the message lists each, and what it
    changes); ``warnings.filterwarnings("ignore", category=jaxmor.MujocoDifferenceWarning)`` silences it."""


#: Soft-constraint attributes of contacts (geoms, explicit pairs, their defaults).
_SOFT_CONTACT = ("solref", "solimp", "solmix", "margin", "gap", "solreffriction", "solimpfriction")
#: Soft-constraint attributes of joint limits and friction loss.
_SOFT_JOINT = ("solreflimit", "solimplimit", "solreffriction", "solimpfriction", "margin")
#: ``<option>`` attributes of MuJoCo's constraint solver.
_SOLVER = ("solver", "iterations", "tolerance", "ls_iterations", "ls_tolerance")


def _short(value: str) -> str:
    """``value`` as the warning quotes it: at most 40 characters."""
    return value if len(value) <= 40 else value[:40] + "..."


def _option(doc: Document) -> dict[str, str]:
    """The attributes of the document's ``<option>`` elements (later ones override earlier ones)."""
    merged: dict[str, str] = {}
    for el in doc.root:
        if tag(el) == "option":
            merged.update({k: _short(v) for k, v in el.attrib.items() if not k.startswith("{")})
    return merged


def _count_set(doc: Document, tags: tuple[str, ...], names: tuple[str, ...]) -> int:
    """How many elements with one of ``tags`` (in the bodies, explicit pairs or defaults) set one of ``names``."""
    return sum(1 for el in doc.root.iter() if tag(el) in tags and any(n in el.attrib for n in names))


def _soft(doc: Document) -> list[str]:
    contacts = _count_set(doc, ("geom", "pair"), _SOFT_CONTACT)
    joints = _count_set(doc, ("joint", "tendon", "fixed"), _SOFT_JOINT)
    where = f" (the file sets them on {contacts} element(s))" if contacts else " (MuJoCo's defaults)"
    lines = [
        f"soft contacts{where}: MuJoCo lets touching geoms sink into each other under load (the Go2's feet "
        "by about 5 mm standing in its MJX scene), jaxmor's contacts are hard: bodies rest higher, "
        "impacts are shorter"
    ]
    if joints:
        lines.append(
            f"soft joint and tendon limits and friction loss ({joints} element(s) set solreflimit/solimplimit/"
            "solreffriction/margin): MuJoCo lets a joint or tendon pass its limit and creep under friction loss, "
            "jaxmor's limits and friction loss are hard"
        )
    return lines


def _equality(doc: Document) -> list[str]:
    """The line for the file's equality constraints (MuJoCo's are soft whatever the file sets)."""
    count = sum(1 for el in doc.root.iter() if tag(el) == "equality" for child in el if tag(child) is not None)
    if not count:
        return []
    return [
        f"soft equality constraints ({count} in <equality>, solref/solimp as the file sets them or MuJoCo's "
        "defaults): MuJoCo lets a connect, weld or joint coupling stretch under load (a spring of time constant "
        "solref, holding solimp's share of the force), jaxmor holds them exactly (bilateral rows, a violation "
        "shrinking by jaxmor.sim.constraint.EQUALITY_CORRECTION per step); a weld's torquescale only weighs rows"
    ]


def _cone(option: dict[str, str]) -> list[str]:
    cone, impratio = option.get("cone", "pyramidal"), option.get("impratio", "1")
    said = "cone and impratio as the file sets them" if "cone" in option or "impratio" in option else "defaults"
    try:
        elliptic_and_stiff = cone == "elliptic" and float(impratio) >= 10
    except ValueError:
        elliptic_and_stiff = False
    if elliptic_and_stiff:
        return []
    return [
        f'friction cone="{cone}" impratio="{impratio}" (MuJoCo\'s {said}): MuJoCo\'s friction is soft and lets '
        "feet slip (a collapsing quadruped splays its legs), jaxmor's is Coulomb's disk with stiction; "
        'cone="elliptic" impratio="100" brings MuJoCo close'
    ]


def _solver(option: dict[str, str]) -> list[str]:
    lines = []
    integrator = option.get("integrator", "Euler")
    if integrator != "Euler":
        lines.append(
            f'integrator="{integrator}": jaxmor steps semi-implicit Euler (implicit in its PD and '
            "velocity-dependent forces) whatever the file says: trajectories differ by O(timestep)"
        )
    if option.get("noslip_iterations", "0").strip() not in ("", "0"):
        lines.append(
            f'noslip_iterations="{option["noslip_iterations"]}": jaxmor has no no-slip pass (its friction '
            "sticks within its sweeps)"
        )
    solver = [name for name in _SOLVER if name in option]
    if solver:
        lines.append(
            f"solver settings ({', '.join(solver)}) are not used: jaxmor runs its own solver (Options.solver: "
            "20 projected Gauss-Seidel sweeps on a CPU, 100 accelerated Jacobi iterations on a GPU by default)"
        )
    return lines


def _skins(doc: Document) -> list[str]:
    skins = sum(1 for el in doc.root.iter() if tag(el) == "skin")
    if not skins:
        return []
    return [f"{skins} <skin> element(s) ignored: a skin is visual only in MuJoCo, and jaxmor's viewer does not draw it"]


def differences(doc: Document) -> list[str]:
    """What MuJoCo does differently with this document, one line each (the contacts' softness always: MuJoCo's
    contacts are soft whatever the file sets).

    Args:
        doc: the expanded document.

    Returns:
        The lines, in a fixed order: contacts, joint limits, equality constraints, friction cone, integrator,
        no-slip, solver, skins.
    """
    option = _option(doc)
    return _soft(doc) + _equality(doc) + _cone(option) + _solver(option) + _skins(doc)


def self_collision_line(pairs: int) -> str:
    """The line for ``pairs`` self-collision pairs MuJoCo would test and ``load_mjcf`` leaves out."""
    return (
        f"self-collision: MuJoCo tests {pairs} pair(s) of the robot's own geoms (as contype/conaffinity allow, "
        "never parent and child); load_mjcf leaves them out unless self_collision=True, so limbs can pass "
        "through each other"
    )
