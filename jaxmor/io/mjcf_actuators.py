"""MJCF actuators -> jaxmor's affine actuators: ``<motor>``, ``<position>``, ``<velocity>`` and ``<general>`` on
a joint (:mod:`jaxmor.io.mjcf` reads the rest of the model).

Each becomes an :class:`~jaxmor.io.description.AffineActuator` with MuJoCo's gain and bias parameters. The
actuator shortcuts of a default class share one actuator default, as in MuJoCo: the attributes common to all
(``ctrlrange``, ``gear``, ...) pass from any shortcut's default to any element, a shortcut's own parameters
(``kp``, ``gainprm``, ...) only to an element of the same shortcut (a ``<motor>`` default resets a
``<general>``'s gain and bias, as MuJoCo's does); passing them to another shortcut is refused, since MuJoCo's
result there depends on the order of the defaults.
"""

from __future__ import annotations

import numpy as np

from jaxmor.io.description import AffineActuator
from jaxmor.io.mjcf_document import (
    CLASS_ROOT,
    Compiler,
    Document,
    Values,
    attributes,
    check_known,
    check_refused,
    class_chain,
)
from jaxmor.io.mjcf_schema import ACTUATOR_OWN, ACTUATOR_SPECS, REFUSED_ELEMENTS
from jaxmor.io.xml import tag


def _actuator_values(doc: Document, classes, el, kind: str) -> Values:
    """An actuator's attributes after its class's actuator defaults (the module docstring's rule)."""
    spec = ACTUATOR_SPECS[kind]
    own = attributes(el)
    check_known(doc, el, spec)
    cls_name = own.pop("class", None) or CLASS_ROOT
    attrs: dict[str, str] = {}
    own_kind_set = False
    for cls in class_chain(doc, classes, cls_name, el):
        for default_kind, default_attrs in cls.actuators:
            specific = ACTUATOR_OWN[default_kind]
            for name, text in default_attrs.items():
                if name not in specific:
                    attrs[name] = text
                elif kind == default_kind:
                    attrs[name] = text
                    own_kind_set = True
                elif kind != "motor":
                    raise doc.error(
                        el,
                        f"<{kind}> would inherit {name}={text!r} of a <{default_kind}> default (class "
                        f"{cls_name!r}); one shortcut's parameters passed to another are not supported: give "
                        "them on the element",
                    )
            if default_kind == "motor" and kind in ("general", "position", "velocity"):
                if own_kind_set and kind != "general":
                    raise doc.error(
                        el,
                        f"<{kind}>: a <motor> default overrides a <{kind}> default of "
                        f"class {cls_name!r}; that order is not supported",
                    )
                for name in ACTUATOR_OWN["general"]:
                    attrs.pop(name, None)  # a motor default resets the gain and bias
    attrs.update(own)
    check_refused(doc, el, spec, attrs)
    return Values(doc, el, attrs)


def read_actuators(
    doc: Document, classes, compiler: Compiler, joint_kinds: dict[str, str], section
) -> list[AffineActuator]:
    """The affine actuators of one ``<actuator>`` section, in document order (``joint_kinds``: MJCF joint name
    -> its type, for the checks)."""
    out, names, driven = [], set(), {}
    for el in section:
        kind = tag(el)
        if kind is None:
            continue
        if kind in REFUSED_ELEMENTS:
            raise doc.error(el, f"<{kind}>: {REFUSED_ELEMENTS[kind]}")
        if kind not in ACTUATOR_SPECS:
            raise doc.error(el, f"unexpected element <{kind}> in <actuator>")
        v = _actuator_values(doc, classes, el, kind)
        index = len(out)
        name = v.text("name") or f"actuator{index}"
        if name in names:
            raise doc.error(el, f"duplicate actuator name {name!r}")
        names.add(name)
        joint = v.text("joint") or v.text("jointinparent")
        if not joint:
            raise v.error(f"actuator {name!r} needs a joint (only joint transmissions are supported)")
        if joint not in joint_kinds:
            raise v.error(f"actuator {name!r} drives an unknown joint {joint!r}")
        if joint_kinds[joint] == "free":
            raise v.error(f"actuator {name!r}: actuators on a free joint are not supported")
        if joint in driven:
            raise v.error(
                f"actuator {name!r}: joint {joint!r} is already driven by actuator {driven[joint]!r} "
                "(jaxmor takes one actuator per joint)"
            )
        driven[joint] = name
        gear = float(v.numbers("gear", 1, 6, default=(1.0,))[0])
        gain, bias = _law(v, kind, name)
        ctrl = _range(v, "ctrl", name, compiler.autolimits)
        force = _range(v, "force", name, compiler.autolimits)
        out.append(AffineActuator(name, joint, v.line, gear, gain, bias, ctrl, force))
    return out


def _law(v: Values, kind: str, name: str) -> tuple[float, tuple[float, float, float]]:
    """``(gainprm[0], biasprm[0:3])`` of an affine actuator."""
    if kind == "motor":
        return 1.0, (0.0, 0.0, 0.0)
    if kind == "position":
        kp, kv = v.nonnegative("kp", 1.0), v.nonnegative("kv", 0.0)
        return kp, (0.0, -kp, -kv)
    if kind == "velocity":
        kv = v.nonnegative("kv", 1.0)
        return kv, (0.0, 0.0, -kv)
    if v.choice("gaintype", ("fixed", "affine", "muscle", "user"), "fixed") != "fixed":
        raise v.error(f"actuator {name!r}: only gaintype='fixed' is supported")
    if v.choice("dyntype", ("none", "integrator", "filter", "filterexact", "muscle", "user"), "none") != "none":
        raise v.error(f"actuator {name!r}: only dyntype='none' is supported (activation dynamics are not)")
    biastype = v.choice("biastype", ("none", "affine", "muscle", "user"), "none")
    if biastype not in ("none", "affine"):
        raise v.error(f"actuator {name!r}: only biastype 'none' and 'affine' are supported")
    gain = v.numbers("gainprm", 1, 10, default=(1.0,))
    if np.any(gain[1:] != 0):
        raise v.error(f"actuator {name!r}: only gainprm[0] is used by a fixed gain; the others must be 0")
    bias = np.zeros(3)
    if biastype == "affine":
        given = v.numbers("biasprm", 1, 10, default=(0.0,))
        if np.any(given[3:] != 0):
            raise v.error(f"actuator {name!r}: an affine bias uses biasprm[0:3]; the others must be 0")
        bias[: min(3, len(given))] = given[:3]
    if bias[0] != 0:
        raise v.error(f"actuator {name!r}: a constant bias force biasprm[0]={bias[0]!r} is not supported")
    return float(gain[0]), (0.0, float(bias[1]), float(bias[2]))


def _range(v: Values, which: str, name: str, autolimits: bool) -> tuple[float, float] | None:
    limited = v.choice(f"{which}limited", ("auto", "true", "false"), "auto")
    given = v.has(f"{which}range")
    if limited == "auto":
        if given and not autolimits:
            raise v.error(
                f"actuator {name!r} has a {which}range but {which}limited='auto' while the compiler's "
                "autolimits is false; set it"
            )
        limited = "true" if given else "false"
    if limited == "false":
        return None
    low, high = v.numbers(f"{which}range", 2, default=(0.0, 0.0))
    if low >= high:
        raise v.error(f"actuator {name!r}: {which}range lower {low!r} >= upper {high!r}")
    return float(low), float(high)
