"""Fixed tendons (MJCF ``<tendon><fixed>``) as jaxmor reads them, with MuJoCo's semantics.

A ``<fixed>`` tendon sums hinges and slides, ``L = sum_i coef_i q_i`` (its ``<joint joint coef>`` children), and
has MuJoCo's length ``range`` (``limited``, ``auto`` with the compiler's ``autolimits``), ``frictionloss``,
``stiffness`` with ``springlength`` (one value, or a dead band of two; ``-1``, the default, means the length at the
reference configuration), ``damping`` and ``armature``; ``<default><tendon>`` gives them to a class. A tendon's
numbers are in its own length unit and never converted from degrees (as in MuJoCo). ``solref``, ``solimp`` and
``margin`` are read and not followed (jaxmor's limits and friction are hard rows), looks are ignored; a tendon's
``actuatorfrcrange`` and spatial tendons (``<spatial>``) are refused.
"""

from __future__ import annotations

import math

from jaxmor.io.description import Tendon
from jaxmor.io.mjcf_actuators import limited_range
from jaxmor.io.mjcf_document import Values, attributes, check_known
from jaxmor.io.mjcf_schema import SPECS, ElementSpec
from jaxmor.io.xml import tag

#: The attributes of a ``<fixed>`` element: a class's, and its name.
FIXED_SPEC = ElementSpec(SPECS["tendon"].read | {"name"}, SPECS["tendon"].ignored, SPECS["tendon"].refused)


def read_tendons(reader, sections) -> list[Tendon]:
    """The fixed tendons of the ``<tendon>`` sections, in document order.

    Args:
        reader: the MJCF reader (its ``resolve`` for class defaults, ``doc`` for messages, ``joint_kinds``: MJCF
            joint name -> its type).
        sections: the ``<tendon>`` elements.

    Raises:
        ModelError: a spatial tendon, an unknown element or joint, a joint that is not a hinge or a slide, a
            tendon without joints, or a number out of its range (file and line).
    """
    out: list[Tendon] = []
    names: set[str] = set()
    for section in sections:
        for el in section:
            kind = tag(el)
            if kind is None:
                continue
            if kind == "spatial":
                raise reader.doc.error(el, "<tendon><spatial>: spatial tendons are not supported (fixed tendons are)")
            if kind != "fixed":
                raise reader.doc.error(el, f"unexpected element <{kind}> in <tendon>")
            tendon = _fixed(reader, el, len(out))
            if tendon.name in names:
                raise reader.doc.error(el, f"duplicate tendon name {tendon.name!r}")
            names.add(tendon.name)
            out.append(tendon)
    return out


def _fixed(reader, el, index: int) -> Tendon:
    v = reader.resolve(el, FIXED_SPEC, "tendon", None)
    name = v.text("name") or reader.doc.unnamed("tendon", index, "tendon")  # MuJoCo's id names an unnamed one
    joints = [_joint(reader, child, name) for child in el if tag(child) is not None]
    if not joints:
        raise v.error(f"tendon {name!r} has no joints (a <fixed> tendon needs <joint joint coef>)")
    if len({j for j, _ in joints}) != len(joints):
        raise v.error(f"tendon {name!r} names a joint twice")
    spring = v.numbers("springlength", 1, 2, default=(-1.0,))
    low, high = (float(spring[0]), float(spring[-1]))
    if low > high:
        raise v.error(f"tendon {name!r}: springlength lower {low!r} > upper {high!r}")
    return Tendon(
        name=name,
        line=v.line,
        joints=joints,
        range=limited_range(v, "", name, reader.compiler.autolimits, what="tendon"),
        spring_length=None if (low == -1.0 and high == -1.0) else (low, high),
        stiffness=_nonnegative(v, "stiffness", name),
        damping=_nonnegative(v, "damping", name),
        friction=_nonnegative(v, "frictionloss", name),
        armature=_nonnegative(v, "armature", name),
    )


def _nonnegative(v: Values, attribute: str, name: str) -> float:
    value = v.number(attribute, 0.0)
    if not (value >= 0 and math.isfinite(value)):
        raise v.error(f"tendon {name!r}: {attribute} must be finite and not negative, got {value!r}")
    return float(value)


def _joint(reader, el, tendon: str) -> tuple[str, float]:
    """``(joint name, coef)`` of a ``<joint>`` of a fixed tendon."""
    if tag(el) != "joint":
        raise reader.doc.error(el, f"unexpected element <{tag(el)}> in a fixed tendon (only <joint>)")
    check_known(reader.doc, el, SPECS["tendon_joint"])
    v = Values(reader.doc, el, attributes(el))
    joint = v.text("joint")
    if not joint:
        raise v.error(f"a joint of tendon {tendon!r} needs joint=")
    if joint not in reader.joint_kinds:
        raise v.error(f"tendon {tendon!r} names an unknown joint {joint!r}")
    if reader.joint_kinds[joint] not in ("hinge", "slide"):
        raise v.error(
            f"tendon {tendon!r}: joint {joint!r} is a {reader.joint_kinds[joint]} joint (a fixed tendon "
            "sums hinges and slides)"
        )
    coef = v.numbers("coef", 1)
    if coef is None:
        raise v.error(f"a joint of tendon {tendon!r} needs coef= (MuJoCo requires it)")
    return joint, float(coef[0])
