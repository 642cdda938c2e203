"""MJCF ``<site>`` and ``<sensor>`` elements -> :class:`~jaxmor.io.description.Site` and
:class:`~jaxmor.io.description.SensorDescription` (called by :mod:`jaxmor.io.mjcf`).

A site is kept as a named frame on its body's link (``pos``, an orientation or ``fromto``; its looks are ignored),
with its default class. A sensor element is

* read when jaxmor reads its kind (:data:`SUPPORTED`) and its object: its name (MuJoCo's ``sensor<i>`` when
  unnamed), object, reference frame, ``noise`` (metadata, never added, as in MuJoCo since 3.1.4) and ``cutoff``;
* skipped when its kind, or its object, is one jaxmor does not read yet (a touch or force sensor, a sensor on
  a geom or a DC motor, ...): all the skipped sensors are listed in one warning, so that a file written
  for MuJoCo still loads;
* refused, with the file and line, when it is not a MuJoCo sensor, names an object the file does not have, gives
  an attribute MuJoCo does not know, or a value MuJoCo refuses (a cutoff on a quaternion or an axis, a negative
  noise), or asks for a sensor delay or interval (MuJoCo's ``delay``, ``interval``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from jaxmor.io import mjcf_geometry as geo
from jaxmor.io.description import SITE_SHAPES, SITE_SIZE, AffineActuator, SensorDescription, Site
from jaxmor.io.mjcf_document import Values, attributes, check_known, check_refused
from jaxmor.io.mjcf_schema import SPECS, ElementSpec, zero
from jaxmor.io.xml import tag

#: Each kind jaxmor reads: ``(what its object attribute names, number of values, MuJoCo's data type)``.
SUPPORTED = {
    "jointpos": ("joint", 1, "real"),
    "touch": ("site", 1, "real"),
    "force": ("site", 3, "real"),
    "torque": ("site", 3, "real"),
    "jointvel": ("joint", 1, "real"),
    "jointactuatorfrc": ("joint", 1, "real"),
    "ballquat": ("ball", 4, "quaternion"),
    "ballangvel": ("ball", 3, "real"),
    "actuatorpos": ("actuator", 1, "real"),
    "actuatorvel": ("actuator", 1, "real"),
    "actuatorfrc": ("actuator", 1, "real"),
    "framepos": ("frame", 3, "real"),
    "framequat": ("frame", 4, "quaternion"),
    "framexaxis": ("frame", 3, "axis"),
    "frameyaxis": ("frame", 3, "axis"),
    "framezaxis": ("frame", 3, "axis"),
    "framelinvel": ("frame", 3, "real"),
    "frameangvel": ("frame", 3, "real"),
    "subtreecom": ("subtree", 3, "real"),
    "subtreelinvel": ("subtree", 3, "real"),
    "subtreeangmom": ("subtree", 3, "real"),
    "gyro": ("site", 3, "real"),
    "velocimeter": ("site", 3, "real"),
    "magnetometer": ("site", 3, "real"),
    "accelerometer": ("site", 3, "real"),
    "clock": ("none", 1, "real"),
    "tendonpos": ("tendon", 1, "real"),
    "tendonvel": ("tendon", 1, "real"),
    "tendonactuatorfrc": ("tendon", 1, "real"),
}

#: MuJoCo's other sensor kinds: known, skipped with the warning.
NOT_YET = frozenset(
    "rangefinder camprojection jointlimitpos jointlimitvel "
    "jointlimitfrc tendonlimitpos tendonlimitvel tendonlimitfrc framelinacc frameangacc insidesite distance normal "
    "fromto contact e_potential e_kinetic tactile user plugin".split()
)

_COMMON = "name noise cutoff user nsample interp"
_REFUSED = {
    "delay": (zero, "sensor delays are not supported"),
    "interval": (zero, "sensor intervals are not supported"),
}
_ATTRIBUTES = {
    "joint": "joint",
    "ball": "joint",
    "actuator": "actuator",
    "site": "site",
    "frame": "objtype objname reftype refname",
    "subtree": "body",
    "tendon": "tendon",
    "none": "",
}
#: The object types of a frame sensor that jaxmor reads.
FRAME_TYPES = ("site", "xbody", "body")
#: Frame sensors that read an orientation (not available for an inertial frame, ``objtype="body"``).
_ORIENTED = ("framequat", "framexaxis", "frameyaxis", "framezaxis")


def read_site(reader, el, link: str, frame, childclass) -> Site:
    """A ``<site>`` of the body whose link is ``link``; ``frame``: the pose of its parent in the link's frame.

    Raises:
        ModelError: an unknown attribute, a bad pose, or a ``fromto`` of zero length.
    """
    v = reader.resolve(el, SPECS["site"], "site", childclass)
    shape = v.text("type", "sphere")
    if shape not in SITE_SHAPES:
        raise v.error(f"site type must be one of {', '.join(SITE_SHAPES)}, got {shape!r}")
    size = np.full(3, SITE_SIZE)
    given = v.numbers("size", 1, 3)
    if given is not None:
        if np.any(given < 0):
            raise v.error("site size must not be negative")
        size[: given.size] = given
    if v.has("fromto"):
        if shape not in ("capsule", "cylinder", "box", "ellipsoid"):
            raise v.error("site fromto needs a capsule, cylinder, box or ellipsoid site (as in MuJoCo)")
        ends = v.numbers("fromto", 6)
        axis = ends[:3] - ends[3:]  # MuJoCo's z axis of a fromto points from "to" to "from"
        if np.linalg.norm(axis) < 1e-12:
            raise v.error("site fromto has zero length")
        rotation, translation = geo.z_to(axis), (ends[:3] + ends[3:]) / 2.0
        size[2 if shape in ("box", "ellipsoid") else 1] = np.linalg.norm(axis) / 2.0
    else:
        rotation, translation = reader.pose(v)
    name = v.text("name") or reader.doc.unnamed("site", len(reader.sites), "site")
    taken = reader.site_names
    if name in taken:
        raise v.error(f"duplicate site name {name!r}")
    taken.add(name)
    position = frame.rotation @ translation + frame.translation
    return Site(name, link, el.sourceline, frame.rotation @ rotation, position, shape, size)


def _spec(form: str) -> ElementSpec:
    return ElementSpec(frozenset(f"{_COMMON} {_ATTRIBUTES[form]}".split()), frozenset(), dict(_REFUSED))


@dataclass
class Targets:
    """The names a sensor may refer to.

    Attributes:
        joints: joint name -> ``"hinge"``, ``"slide"``, ``"ball"`` or ``"free"``.
        bodies: the bodies' (jaxmor's links') names, ``"world"`` included.
        jointed: the bodies that are not welded to their parent (a subtree sensor's object).
        sites: each site's body (jaxmor's link; ``"world"`` for the world's), by the site's name.
        links: body name -> its :class:`~jaxmor.io.description.Link` (for an inertial frame, ``objtype="body"``);
            ``None`` where the inertial frames are not known (a loaded model): such a sensor is refused.
        affine: the affine actuators' names; actuators: every actuator's.
        motor_joints: the joints a DC motor drives.
        tendons: the fixed tendons' names.
    """

    joints: dict
    bodies: set
    jointed: set
    sites: dict
    links: dict | None
    affine: set
    actuators: set
    motor_joints: set
    tendons: set

    @classmethod
    def from_reader(cls, reader, actuators: list, dropped: set[str], motors: list, tendons=()) -> Targets:
        """From what the MJCF reader found (``tendons``: the fixed tendons' names)."""
        bodies = {"world"} | set(reader.body_masses)
        welded = {j.child for j in reader.joints if j.name == f"{j.child}/weld"}
        return cls(
            joints=dict(reader.joint_kinds),
            bodies=bodies,
            jointed=bodies - welded,
            sites={s.name: s.link for s in reader.sites},
            links={link.name: link for link in reader.links},
            affine={a.name for a in actuators if isinstance(a, AffineActuator) and a.name not in dropped},
            actuators={a.name for a in actuators},
            motor_joints={m.joint for m in motors},
            tendons=set(tendons),
        )


def _skip(skipped: list, name: str, kind: str, reason: str) -> None:
    skipped.append(f"{name!r} ({kind}: {reason})")


def read_sensors(
    reader, sections, actuators: list, dropped: set[str], motors: list, tendons=()
) -> list[SensorDescription]:
    """The sensors of every ``<sensor>`` section, in document order (module docstring); warns once about those
    skipped.

    Args:
        reader: the MJCF reader (its document, sites, joints, bodies and links so far).
        sections: the ``<sensor>`` elements.
        actuators: the MJCF actuators (affine and dcmotor), MuJoCo's order.
        dropped: the names of the MJCF actuators that jaxmor's actuator file replaced.
        motors: jaxmor's DC-motor actuator definitions.
        tendons: the fixed tendons' names.

    Raises:
        ModelError: an unknown element, attribute or object, or a refused value (module docstring).
    """
    return read_sections(reader.doc, sections, Targets.from_reader(reader, actuators, dropped, motors, tendons))


def read_sections(
    doc, sections, targets: Targets, taken: tuple[str, ...] = (), stacklevel: int = 6
) -> list[SensorDescription]:
    """The sensors of the ``<sensor>`` elements ``sections`` of ``doc`` against ``targets`` (:func:`read_sensors`),
    their names not among ``taken``; warns once about those skipped (``stacklevel``: the caller the warning
    names)."""
    out, skipped, count, names = [], [], len(taken), set(taken)
    for section in sections:
        if attributes(section):
            raise doc.error(section, "<sensor> takes no attributes")
        for el in section:
            kind = tag(el)
            if kind is None:
                continue
            name = el.get("name") or doc.unnamed("sensor", count, "sensor")
            count += 1
            if kind in NOT_YET:
                _skip(skipped, name, kind, "not read by jaxmor yet")
                continue
            if kind not in SUPPORTED:
                raise doc.error(el, f"unknown sensor <{kind}> in <sensor>")
            form, _, datatype = SUPPORTED[kind]
            attrs = attributes(el)
            check_known(doc, el, _spec(form))
            check_refused(doc, el, _spec(form), attrs)
            v = Values(doc, el, attrs)
            if name in names:
                raise v.error(f"duplicate sensor name {name!r}")
            names.add(name)
            if any(tag(c) is not None for c in el):
                raise v.error(f"sensor {name!r}: <{kind}> takes no child elements")
            cutoff = v.nonnegative("cutoff")
            if cutoff > 0 and datatype != "real":
                raise v.error(f"sensor {name!r}: a cutoff cannot apply to a {kind} (an {datatype})")
            sensor = _object(v, targets, name, kind, form, skipped)
            if sensor is not None:
                sensor.noise, sensor.cutoff = v.nonnegative("noise"), cutoff
                out.append(sensor)
    if skipped:
        warnings.warn(
            f"{doc.sources[0]}: {len(skipped)} sensor(s) are not read (jaxmor.read_sensors leaves them out): "
            + ", ".join(skipped),
            stacklevel=stacklevel,
        )
    return out


def _object(v: Values, t: Targets, name: str, kind: str, form: str, skipped: list) -> SensorDescription | None:
    """The sensor with its object and reference resolved, ``None`` (and an entry in ``skipped``) where jaxmor
    cannot read it."""
    line = v.line
    if form == "none":
        return SensorDescription(name, kind, line, "", "")
    if form == "frame":
        return _frame(v, t, name, kind, skipped)
    attribute = _ATTRIBUTES[form]
    target = v.text(attribute)
    if not target:
        raise v.error(f"sensor {name!r}: <{kind}> needs {attribute}=")
    if form == "joint":
        if target not in t.joints:
            raise v.error(f"sensor {name!r}: unknown joint {target!r}")
        if t.joints[target] in ("free", "ball"):
            raise v.error(f"sensor {name!r}: <{kind}> needs a hinge or slide joint, {target!r} is {t.joints[target]}")
        if kind == "jointactuatorfrc" and target in t.motor_joints:
            return _skip(skipped, name, kind, f"joint {target!r} is driven by a DC motor")
        return SensorDescription(name, kind, line, "joint", target)
    if form == "ball":
        if target not in t.joints:
            raise v.error(f"sensor {name!r}: unknown joint {target!r}")
        if t.joints[target] != "ball":
            raise v.error(f"sensor {name!r}: <{kind}> needs a ball joint, {target!r} is {t.joints[target]}")
        return SensorDescription(name, kind, line, "ball", target)
    if form == "actuator":
        if target not in t.actuators:
            raise v.error(f"sensor {name!r}: unknown actuator {target!r}")
        if target not in t.affine:
            return _skip(skipped, name, kind, f"actuator {target!r} is a DC motor")
        return SensorDescription(name, kind, line, "actuator", target)
    if form == "tendon":
        if target not in t.tendons:
            raise v.error(f"sensor {name!r}: unknown tendon {target!r}")
        return SensorDescription(name, kind, line, "tendon", target)
    if form == "site":
        if target not in t.sites:
            raise v.error(f"sensor {name!r}: unknown site {target!r}")
        if kind in ("force", "torque") and t.sites[target] not in t.jointed:
            return _skip(skipped, name, kind, f"the site's body {t.sites[target]!r} is welded to its parent")
        return SensorDescription(name, kind, line, "site", target)
    if target not in t.bodies:
        raise v.error(f"sensor {name!r}: unknown body {target!r}")
    if target not in t.jointed:
        return _skip(skipped, name, kind, f"body {target!r} is welded to its parent")
    return SensorDescription(name, kind, line, "subtree", target)


def _frame(v: Values, t: Targets, name: str, kind: str, skipped: list) -> SensorDescription | None:
    """A frame sensor: its object and its reference frame."""
    found = []
    for role in ("obj", "ref"):
        objtype, objname = v.text(f"{role}type"), v.text(f"{role}name")
        if role == "obj" and (not objtype or not objname):
            raise v.error(f"sensor {name!r}: <{kind}> needs objtype= and objname=")
        if role == "ref" and not objname:
            if objtype:
                raise v.error(f"sensor {name!r}: reftype= without refname=")
            found.append(("", ""))
            continue
        objtype = objtype or ""
        if objtype not in ("body", "xbody", "geom", "site", "camera"):
            raise v.error(f"sensor {name!r}: {role}type must be body, xbody, geom, site or camera, got {objtype!r}")
        if objtype in ("geom", "camera"):
            return _skip(skipped, name, kind, f"a {objtype} frame")
        if objtype == "site" and objname not in t.sites:
            raise v.error(f"sensor {name!r}: unknown site {objname!r}")
        if objtype != "site" and objname not in t.bodies:
            raise v.error(f"sensor {name!r}: unknown body {objname!r}")
        if objtype == "body" and (role == "ref" or kind in _ORIENTED):
            return _skip(skipped, name, kind, "the axes of an inertial frame (objtype body); use xbody or a site")
        found.append((objtype, objname))
    (obj_type, obj_name), (ref_type, ref_name) = found
    sensor = SensorDescription(name, kind, v.line, obj_type, obj_name, ref_type, ref_name)
    if obj_type == "body":
        if t.links is None:
            raise v.error(f"sensor {name!r}: a loaded model keeps no inertial frames (objtype body); use xbody")
        link = t.links[obj_name]
        sensor.inertial = {"obj": np.zeros(3) if link.inertial is None else np.asarray(link.inertial.com)}
    return sensor


def read_magnetic(reader, options) -> tuple[float, float, float] | None:
    """The ``magnetic`` of the last ``<option>`` that gives one, ``None`` for MuJoCo's default."""
    found = None
    for el in options:
        if el.get("magnetic") is not None:
            found = tuple(float(x) for x in Values(reader.doc, el, attributes(el)).numbers("magnetic", 3))
    return found
