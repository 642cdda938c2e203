"""MJCF (MuJoCo's XML) -> a :class:`~jaxmor.io.description.RobotDescription` (``jaxmor.load_mjcf`` then builds
the Model with the builder that builds URDFs).

The file is read as untrusted input, as a URDF is (:mod:`jaxmor.io.xml`: no entities, no DTD, no network,
16 MiB per file); every error names the file (the included file, for what comes from an ``<include>``) and
the line. Attributes are checked against what MuJoCo knows (:mod:`jaxmor.io.mjcf_schema`): an unknown one is
an error, a known one is read, ignored as documented there, or refused when it asks for physics jaxmor does
not model.

What is read
------------
* ``<include file>``, anywhere: the included file's ``<mujoco>`` children take its place. The file is looked
  up beside the including file, then beside the main file, and read only inside the main file's directory
  tree or ``assets_dir``'s; a file is included at most once (no cycles), at most
  :data:`~jaxmor.io.mjcf_document.MAX_INCLUDES` files.
* ``<compiler>``: ``angle`` (default ``degree``: joint ranges, ``springref``, ``euler`` and ``axisangle``
  angles), ``eulerseq``, ``autolimits``, ``meshdir``/``assetdir``, ``strippath``, ``inertiafromgeom``
  (``auto``: from the geoms of a body without ``<inertial>``), ``inertiagrouprange``, ``boundmass``,
  ``boundinertia``, ``settotalmass`` (scales every body's mass and inertia so that they add up to it).
* ``<option timestep gravity density viscosity wind>`` (the fluid: :mod:`jaxmor.sim.fluid`) and its ``<flag>``:
  ``gravity``, ``contact``, ``limit``, ``frictionloss``, ``spring``, ``damper``, ``equality`` and ``constraint``
  (contacts, limits, joint friction and equality constraints) can be disabled. MuJoCo's
  integrator and solver settings are ignored: jaxmor's step is its own (``Options.solver_iterations``).
* ``<default>`` classes, nested, used through ``class`` and ``childclass``; the actuator shortcuts share one
  actuator default per class, as in MuJoCo, except that a class cannot pass one shortcut's own parameters
  (``kp``, ``gainprm``, ...) to an element of another shortcut: that is refused (MuJoCo's result there
  depends on the order of the defaults).
* ``<body>`` with ``pos`` and one of ``quat``, ``euler``, ``axisangle``, ``xyaxes``, ``zaxis``;
  ``<frame>``; ``<inertial pos (orientation) mass diaginertia|fullinertia>``, or the inertia of the body's
  geoms (sphere, capsule, cylinder, box, ellipsoid of uniform ``density`` or given ``mass``; a mesh by its
  asset's ``inertia`` rule, :mod:`jaxmor.io.mesh_inertia`).
* Joints ``hinge``, ``slide`` and ``free`` (``<freejoint>``, at the top of the tree only), with ``pos`` (the
  anchor), ``axis``, ``range``/``limited``, ``damping``, ``frictionloss``, ``armature`` (on a free joint too:
  its six velocities, the angular ones in the body frame for the friction loss, as MuJoCo's), ``stiffness``,
  ``springref`` and ``actuatorfrcrange``/``actuatorfrclimited`` (the joint's total actuator force clamped, as
  MuJoCo's ``qfrc_actuator``; a free joint's must contain 0 and has no effect, no actuator drives it); a free
  joint's ``stiffness`` is refused. ``ball`` joints are refused (postponed: jaxmor has no quaternion joint
  coordinate yet).
  Several joints in one body become a chain: every joint but the last moves a massless link named
  ``body/joint``; a hinge whose anchor is not the body's origin moves a link at the anchor, and the body's
  frame is welded to it (``body/anchor``); a body without joints is welded to its parent (``body/weld``).
* Geoms ``sphere``, ``capsule``, ``cylinder``, ``box`` (``size``, ``fromto``, pose) and ``mesh`` (its file's
  convex hull, as for a URDF, :mod:`jaxmor.io.mesh`); ``friction`` (the sliding coefficient: jaxmor has no
  torsional or rolling friction, and a geom with ``condim`` 4 or 6 loses them with a warning), ``condim``
  (1: frictionless, as jaxmor's friction 0), ``priority``, ``contype``/``conaffinity`` (which geoms touch the
  ground and each other). A geom that collides with nothing (``contype = conaffinity = 0``) is a visual
  geom and is dropped, like a URDF ``<visual>``, after its mass is counted where the body's inertia comes
  from its geoms. One horizontal ``plane`` in the world body is the ground; any other plane (a wall, a tilted
  plane) becomes a static box filling the half space behind it (:data:`HALF_SPACE`); ``ellipsoid`` collision
  geoms and height fields are refused.
* ``<contact><exclude body1 body2>`` and ``<pair geom1 geom2>`` (:mod:`jaxmor.io.mjcf_pairs`); actuators
  ``motor``, ``position``, ``velocity`` and ``general``
  (``gaintype="fixed"``, ``biastype`` ``none``/``affine``, ``dyntype="none"``) on a joint, with ``gear``,
  ``ctrlrange``/``ctrllimited`` (or ``<position inheritrange>``: the joint's range scaled about its midpoint),
  ``forcerange``/``forcelimited``: affine actuators
  (:meth:`jaxmor.AffineActuatorDefinition.from_mujoco`); ``<keyframe>`` ``<key>`` (``qpos``, ``qvel``,
  ``ctrl``, ``time``).
* MuJoCo's ``<dcmotor>`` on a hinge or slide (``joint``, ``gear``, ``ctrlrange``, ``resistance``, ``motorconst``,
  ``nominal``, ``saturation``, ``inductance``, ``thermal``, ``cogging``, ``lugre``, ``input="voltage"``): a jaxmor
  DC-motor actuator with the constants MuJoCo's compiler derives, its winding temperature, current, cogging and
  LuGre friction (:mod:`jaxmor.io.mjcf_actuators` lists the mapping). The motor is the same, the command is not:
  MuJoCo's ``ctrl`` is the terminal voltage, jaxmor commands a torque that its driver makes within the motor's
  region at the bus voltage ``max(|ctrlrange|)`` (else the nominal voltage); a torque beyond the region means the
  full bus voltage. The on-board controller, a current rate limit and dcmotor defaults are refused.
* jaxmor's DC-motor actuators, through an element MuJoCo loads and ignores::

      <custom><text name="jaxmor:actuators" data="go2_motors.xml"/></custom>

  names an ``<actuators>`` file (the format ``jaxmor.export_actuators`` writes: ``<actuator joint=...>``
  elements with an inline model or an actuator file, :mod:`jaxmor.io.actuators`), read with the actuator
  files' search path and safety rules from the MJCF's folder. Its actuators replace the MJCF actuators on
  the same joints, ``<dcmotor>`` ones included (those are dropped, and so are their controls in the keyframes);
  the model's DC motors are the MJCF's dcmotors in document order, then the extension's. A ``<residual
  file="go2_residual.npz"/>`` in that file gives the model a learned torque residual on any of them
  (:mod:`jaxmor.io.residual_file`).

* ``<site>`` (a named frame on its body: ``pos``, an orientation or ``fromto``) and ``<sensor>``: the kinds
  :func:`jaxmor.read_sensors` reads, with their objects, reference frames, ``noise`` and ``cutoff``; the others
  are left out with one warning that lists them (:mod:`jaxmor.io.mjcf_sensors`); ``<option magnetic>``.
* ``<equality>``: ``connect``, ``weld`` (by bodies or by sites) and ``joint`` constraints, held exactly
  (:mod:`jaxmor.io.mjcf_equality`), and ``tendon`` couplings of fixed tendons; flex equalities are refused.
* ``<tendon><fixed>``: fixed tendons with their limits, friction loss, spring, damping and armature, actuators
  on them (``tendon=``) and tendon equalities (:mod:`jaxmor.io.mjcf_tendons`); spatial tendons are refused.

MuJoCo's ids name what the file leaves unnamed: ``body3``, ``joint0``, ``geom12``, ``actuator1``, ``sensor2``.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from jaxmor.actuation.definitions import ActuatorDefinition
from jaxmor.errors import ArgumentError, ModelError, brief_repr
from jaxmor.io import mjcf_geometry as geo
from jaxmor.io.actuators import actuators_from_element, resolve_actuator_file
from jaxmor.io.description import (
    AffineActuator,
    ContactPair,
    Geom,
    GroundPlane,
    Inertial,
    Joint,
    KeyframeDescription,
    Link,
    RobotDescription,
    combine_masses,
)
from jaxmor.io.files import shortened
from jaxmor.io.mesh import MAX_HULL_VERTICES, check_max_vertices, convex_hull, resolve_mesh
from jaxmor.io.mesh_inertia import RULES, mesh_mass
from jaxmor.io.mjcf_actuators import limited_range, read_actuators
from jaxmor.io.mjcf_differences import differences
from jaxmor.io.mjcf_document import (
    CLASS_ROOT,
    ClassDefaults,
    Compiler,
    Document,
    Values,
    attributes,
    check_known,
    check_refused,
    class_chain,
    read_compiler,
    read_defaults,
    read_document,
)
from jaxmor.io.mjcf_equality import read_equalities
from jaxmor.io.mjcf_hfield import read_hfield_asset, read_hfield_geom
from jaxmor.io.mjcf_pairs import pair_elements, read_pair
from jaxmor.io.mjcf_schema import IGNORED_ELEMENTS, REFUSED_ELEMENTS, SPECS, ElementSpec
from jaxmor.io.mjcf_sensors import read_magnetic, read_sensors, read_site
from jaxmor.io.mjcf_tendons import read_tendons
from jaxmor.io.mjcf_visual import material_colours, read_visual
from jaxmor.io.residual_file import ResidualFile, read_residual
from jaxmor.io.xml import STRING_SOURCE, parse_xml, tag

#: MuJoCo's default time step [s], a model's without <option timestep>.
MUJOCO_TIMESTEP = 0.002
#: Half size [m] of the static box that stands for a plane other than the ground (a wall): it fills the half
#: space behind the plane, this deep and twice this wide.
HALF_SPACE = 50.0
#: ``(coordinates, velocities)`` of the joints with a quaternion (the last four coordinates); others have (1, 1).
_WIDTHS = {"free": (7, 6), "ball": (4, 3)}
#: Most bodies an MJCF model may have (as many as the URDF reader's links).
MAX_BODIES = 100_000
#: Below this length [m or 1] a direction, axis or frame vector is degenerate (zero).
DEGENERATE_LENGTH = 1e-12
#: Relative round-off allowed for a plane's normal to count as vertical, and for an inertia's smallest
#: eigenvalue to count as non-negative.
ROUND_OFF = 1e-9
#: The ``<custom><text name=...>`` that names jaxmor's DC-motor actuator file.
ACTUATORS_TEXT = "jaxmor:actuators"


# --------------------------------------------------------------------------------------------------
# The reader.


@dataclass
class _Frame:
    """A pose relative to the current link: ``x_link = rotation @ x + translation``."""

    rotation: np.ndarray
    translation: np.ndarray

    def then(self, rotation: np.ndarray, translation: np.ndarray) -> _Frame:
        return _Frame(self.rotation @ rotation, self.rotation @ translation + self.translation)


_IDENTITY = _Frame(np.eye(3), np.zeros(3))


@dataclass(frozen=True)
class _MeshAsset:
    """A ``<mesh>`` asset: its file, scale (3,), element, ``inertia`` rule and ``maxhullvert`` (-1: none)."""

    file: str
    scale: np.ndarray
    element: object
    inertia: str
    maxhullvert: int


@dataclass
class _TakenNames:
    """The link and joint names read so far, while a body's links and joints are added."""

    links: set[str]
    joints: set[str]


@dataclass
class _Options:
    timestep: float | None = None
    gravity: tuple[float, float, float] | None = None
    medium: tuple[float, float, tuple[float, float, float]] | None = None
    disabled: set[str] = field(default_factory=set)
    line: int | None = None


class _Reader:
    """One model being read: the document, its settings, and what has been found so far."""

    def __init__(self, doc: Document, meshes, package_dirs, actuator_dirs, max_hull_vertices=MAX_HULL_VERTICES):
        self.doc = doc
        self.meshes = meshes
        self.max_hull_vertices = max_hull_vertices
        self.package_dirs = tuple(str(d) for d in package_dirs)
        self.actuator_dirs = list(actuator_dirs)
        self.compiler = Compiler()
        self.options = _Options()
        self.classes: dict[str, ClassDefaults] = {}
        self.mesh_files: dict[str, _MeshAsset] = {}
        self.materials: dict | None = None  # material colours, read at the first visual (mjcf_visual)
        self.links: list[Link] = []
        self.joints: list[Joint] = []
        self.joint_kinds: dict[str, str] = {}  # MJCF joint name -> "hinge" | "slide" | "ball" | "free", MuJoCo's order
        self.initial_q: dict[str, tuple[float, ...]] = {}
        self.body_count = 0
        self.joint_count = 0
        self.geom_count = 0
        self.ground: GroundPlane | None = None
        self.hfields: dict = {}  # <hfield> assets by name, each read when a geom uses it (jaxmor.io.mjcf_hfield)
        self.height_field = None  # the height field geom's description
        self.pairs: list = []  # (element, ContactPair) of each explicit <pair>
        self.paired: set[str] = set()  # the geoms they name: collision geoms whatever their bit masks
        self.rich_contacts: list[str] = []  # geoms with condim 4 or 6
        #: body -> the mass parts of its geoms, or None where its <inertial> counts (or nothing does)
        self.body_masses: dict[str, list | None] = {}
        self.explicit_masses: dict[str, tuple] = {}
        self.sites: list = []  # the <site>s, as named frames (jaxmor.io.mjcf_sensors)
        self.mocap_bodies: list[str] = []  # the mocap bodies' names (links welded to the world), document order
        self.site_names: set[str] = set()

    # ---------------------------------------------------------------------------------- attributes

    def resolve(self, element, spec: ElementSpec, kind: str, childclass: str | None) -> Values:
        """The element's attributes: its class's defaults (``class``, else the enclosing ``childclass``, else
        the root class) under its own; unknown and refused ones raise."""
        own = attributes(element)
        check_known(self.doc, element, spec)
        name = own.pop("class", None) or childclass or CLASS_ROOT
        attrs: dict[str, str] = {}
        for cls in class_chain(self.doc, self.classes, name, element):
            attrs.update(cls.attrs.get(kind, {}))
        attrs.update(own)
        check_refused(self.doc, element, spec, attrs)
        return Values(self.doc, element, attrs)

    def orientation(self, v: Values) -> np.ndarray:
        """The rotation of an element's one orientation attribute (identity without one)."""
        given = [a for a in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if v.has(a)]
        if len(given) > 1:
            raise v.error(f"<{tag(v.element)}> has more than one orientation: {', '.join(given)}")
        if not given:
            return np.eye(3)
        name = given[0]
        if name == "quat":
            q = v.numbers("quat", 4)
            self._nonzero(v, q, name)
            return geo.quat_to_rotation(q)
        if name == "axisangle":
            a = v.numbers("axisangle", 4)
            self._nonzero(v, a[:3], name)
            return geo.axis_angle(a[:3], self.compiler.angle(a[3]))
        if name == "euler":
            angles = [self.compiler.angle(a) for a in v.numbers("euler", 3)]
            return geo.euler(angles, self.compiler.eulerseq)
        if name == "xyaxes":
            axes = v.numbers("xyaxes", 6)
            x, y = axes[:3], axes[3:]
            if np.linalg.norm(x) < DEGENERATE_LENGTH or np.linalg.norm(np.cross(x, y)) < DEGENERATE_LENGTH:
                raise v.error(f"xyaxes of <{tag(v.element)}> are zero or parallel: {brief_repr(v.text('xyaxes'))}")
            return geo.xy_axes(axes)
        z = v.numbers("zaxis", 3)
        self._nonzero(v, z, name)
        return geo.z_to(z)

    @staticmethod
    def _nonzero(v: Values, vector: np.ndarray, name: str) -> None:
        if np.linalg.norm(vector) < DEGENERATE_LENGTH:
            raise v.error(f"{name} of <{tag(v.element)}> has a zero axis: {v.text(name)!r}")

    def pose(self, v: Values) -> tuple[np.ndarray, np.ndarray]:
        return self.orientation(v), v.numbers("pos", 3, default=(0.0, 0.0, 0.0))

    # ---------------------------------------------------------------------------------- sections

    def read(self) -> RobotDescription:
        doc, root = self.doc, self.doc.root
        sections = self._sections()
        for el in sections.get("compiler", []):
            read_compiler(doc, el, self.compiler)
        for el in sections.get("option", []):
            self._read_option(el)
        self.classes = read_defaults(doc, sections.get("default", []))
        for el in sections.get("asset", []):
            self._read_assets(el)
        contact = sections.get("contact", [])
        self.pairs = [(el, read_pair(self.resolve(el, SPECS["pair"], "pair", None))) for el in pair_elements(contact)]
        self.paired = {name for _, pair in self.pairs for name in (pair.geom1, pair.geom2)}
        self._read_world(sections.get("worldbody", []))
        self._finish_masses()
        explicit = self._resolve_pairs()
        tendons = read_tendons(self, sections.get("tendon", []))
        tendon_ranges = {t.name: t.range for t in tendons}
        mjcf_actuators = self._read_actuators(sections.get("actuator", []), tendon_ranges)
        excluded = [e for el in sections.get("contact", []) for e in self._read_contact(el)]
        motors, residual = self._read_custom(sections.get("custom", []))
        affine, motors, dropped = _merge_actuators(mjcf_actuators, motors)
        keyframes = [
            k for el in sections.get("keyframe", []) for k in self._read_keyframes(el, mjcf_actuators, dropped)
        ]
        sensors = read_sensors(self, sections.get("sensor", []), mjcf_actuators, dropped, motors, tendon_ranges)
        equalities = read_equalities(self, sections.get("equality", []))
        self._check_mocap_uses(sections, sensors)
        self._warn_rich_contacts()
        description = RobotDescription(
            name=root.get("model") or "mujoco",
            source=doc.sources[0],
            line=root.sourceline,
            links=self.links,
            joints=self.joints,
            root="world",
            actuators=motors,
            disable_collisions=excluded,
            timestep=self.options.timestep or MUJOCO_TIMESTEP,
            gravity=self.options.gravity,
            medium=self.options.medium,
            options_line=self.options.line,
            friction_rule="max",
            ground=None if "contact" in self.options.disabled else self.ground,
            affine_actuators=affine,
            initial_q=self.initial_q,
            keyframes=keyframes,
            sites=self.sites,
            mocap_bodies=self.mocap_bodies,
            sensors=sensors,
            magnetic=read_magnetic(self, sections.get("option", [])),
            explicit_pairs=explicit,
            equalities=equalities,
            tendons=tendons,
            height_field=None if "contact" in self.options.disabled else self.height_field,
            mujoco_differences=differences(doc) + self._start_outside_range(),
            residual=residual,
        )
        self._apply_disabled(description)
        return description

    def _read_actuators(self, elements: list, tendon_ranges: dict) -> list:
        """The ``<actuator>`` sections' actuators, in the file's order."""
        ranges = self._joint_ranges()
        return [
            a
            for el in elements
            for a in read_actuators(self.doc, self.classes, self.compiler, self.joint_kinds, el, ranges, tendon_ranges)
        ]

    def _warn_rich_contacts(self) -> None:
        """Warn, once per file, that condim 4 and 6 geoms keep only their sliding friction."""
        if self.rich_contacts:
            warnings.warn(
                f"{self.doc.sources[0]}: jaxmor has no torsional or rolling friction; {len(self.rich_contacts)} "
                f"geom(s) with condim 4 or 6 keep only their sliding friction: {', '.join(self.rich_contacts[:8])}"
                + (", ..." if len(self.rich_contacts) > 8 else ""),
                stacklevel=5,
            )

    def _joint_ranges(self) -> dict[str, tuple[float, float]]:
        """The range [rad or m] of each limited hinge and slide, by name (for ``inheritrange``)."""
        return {j.name: (j.lower, j.upper) for j in self.joints if math.isfinite(j.lower) and math.isfinite(j.upper)}

    def _start_outside_range(self) -> list[str]:
        """The MuJoCo-difference line naming the limited joints whose ``qpos0`` (``ref``) lies outside their range."""
        if "limit" in self.options.disabled:
            return []
        outside = []
        for j in self.joints:
            start = self.initial_q.get(j.name, ())
            if len(start) == 1 and not j.lower <= start[0] <= j.upper:
                outside.append(f"{j.name} ({start[0]:.4g} outside [{j.lower:.4g}, {j.upper:.4g}])")
        if not outside:
            return []
        shown = ", ".join(outside[:8]) + (f" and {len(outside) - 8} more" if len(outside) > 8 else "")
        return [
            f"qpos0 outside the joint's range for {shown}: jaxmor's hard limit moves each to its nearest limit in "
            "the first steps, MuJoCo's soft limit can throw it across the range (Gymnasium's Ant ends lower); "
            "start both from a keyframe inside the ranges to compare them"
        ]

    def _sections(self) -> dict[str, list]:
        """The children of ``<mujoco>`` by tag, in document order; refused and unexpected ones raise."""
        doc, root = self.doc, self.doc.root
        check_known(doc, root, SPECS["mujoco"])
        sections: dict[str, list] = {}
        for el in root:
            name = tag(el)
            if name is None:
                continue
            if name == "deformable" and all(tag(child) in (None, "skin") for child in el):
                continue  # skins only: visual, named in the MuJoCo-difference warning
            if name in REFUSED_ELEMENTS:
                raise doc.error(el, f"<{name}>: {REFUSED_ELEMENTS[name]}")
            sections.setdefault(name, []).append(el)
        known = {
            "compiler",
            "option",
            "default",
            "asset",
            "worldbody",
            "actuator",
            "contact",
            "keyframe",
            "custom",
            "tendon",
            "equality",
            *IGNORED_ELEMENTS,
        }
        for name, elements in sections.items():
            if name not in known:
                raise doc.error(elements[0], f"unexpected element <{name}> in <mujoco>")
        return sections

    def _read_option(self, el) -> None:
        doc, spec = self.doc, SPECS["option"]
        attrs = attributes(el)
        check_known(doc, el, spec)
        check_refused(doc, el, spec, attrs)
        v = Values(doc, el, attrs)
        if v.has("timestep"):
            h = v.number("timestep")
            if h <= 0:
                raise v.error(f"timestep of <option> must be positive, got {h!r}")
            self.options.timestep = h
        if v.has("gravity"):
            self.options.gravity = tuple(float(g) for g in v.numbers("gravity", 3))
        if v.has("density") or v.has("viscosity") or v.has("wind"):
            wind = tuple(float(w) for w in v.numbers("wind", 3, default=(0.0, 0.0, 0.0)))
            self.options.medium = (v.nonnegative("density", 0.0), v.nonnegative("viscosity", 0.0), wind)
        if v.has("timestep") or v.has("gravity") or self.options.medium:
            self.options.line = el.sourceline
        for child in el:
            if tag(child) is None:
                continue
            if tag(child) != "flag":
                raise doc.error(child, f"unexpected element <{tag(child)}> in <option>")
            flags = attributes(child)
            check_known(doc, child, SPECS["flag"])
            check_refused(doc, child, SPECS["flag"], flags)
            fv = Values(doc, child, flags)
            for name in SPECS["flag"].read:
                if name in flags:
                    state = fv.choice(name, ("enable", "disable"), "enable")
                    (self.options.disabled.add if state == "disable" else self.options.disabled.discard)(name)

    def _apply_disabled(self, d: RobotDescription) -> None:
        off = self.options.disabled
        if "constraint" in off:
            off |= {"contact", "limit", "frictionloss", "equality"}
            d.ground = None
        if "equality" in off:
            for e in d.equalities:
                e.active = False
        if "gravity" in off:
            d.gravity = (0.0, 0.0, 0.0)
        if "limit" in off:
            for j in d.joints:
                j.lower, j.upper = -math.inf, math.inf
            for t in d.tendons:
                t.range = None
        if off & {"spring", "damper"} and any(j.spring_damper for j in d.joints):
            joint = next(j for j in d.joints if j.spring_damper)
            raise ModelError(
                d.source,
                joint.line,
                f"joint {joint.name!r}: springdamper with springs or dampers disabled (<flag>) is not supported",
            )
        for flag, attribute in (("frictionloss", "friction"), ("spring", "stiffness"), ("damper", "damping")):
            if flag in off:
                for item in (*d.joints, *d.tendons):
                    setattr(item, attribute, 0.0)
        if "contact" in off:
            for link in d.links:
                link.geoms = []

    def _read_assets(self, el) -> None:
        doc = self.doc
        for child in el:
            kind = tag(child)
            if kind is None or kind in IGNORED_ELEMENTS:
                continue
            if kind == "hfield":
                self._read_hfield(child)
                continue
            if kind in REFUSED_ELEMENTS:
                raise doc.error(child, f"<{kind}>: {REFUSED_ELEMENTS[kind]}")
            if kind != "mesh":
                raise doc.error(child, f"unexpected element <{kind}> in <asset>")
            v = self.resolve(child, SPECS["mesh"], "mesh", None)
            if len([c for c in child if tag(c) is not None]):
                raise doc.error(child, "mesh plugins are not supported")
            file = v.text("file")
            if not file:
                raise v.error("<mesh> needs a file (meshes given in the file are not supported)")
            name = v.text("name") or Path(file).stem
            if name in self.mesh_files:
                raise v.error(f"duplicate mesh name {name!r}")
            scale = v.numbers("scale", 3, default=(1.0, 1.0, 1.0))
            if np.any(scale == 0):
                raise v.error(f"mesh scale must be nonzero, got {scale.tolist()}")
            if self.compiler.strippath:
                file = Path(file).name
            rule = v.choice("inertia", RULES, RULES[0])
            most = v.integer("maxhullvert", -1)
            if most != -1 and most < 4:
                raise v.error(f"maxhullvert must be -1 (no limit of its own) or at least 4, got {most}")
            self.mesh_files[name] = _MeshAsset(file, scale, child, rule, most)

    # ---------------------------------------------------------------------------------- the tree

    def _read_world(self, sections) -> None:
        """The body tree, depth first in document order, so that bodies, joints and geoms get MuJoCo's ids:
        the world body's contents (of every ``<worldbody>``, merged as MuJoCo merges them) first."""
        doc = self.doc
        for worldbody in sections:
            if attributes(worldbody):
                raise doc.error(worldbody, "<worldbody> takes no attributes")
        self.links.append(Link("world", sections[0].sourceline if sections else 1, None, []))
        self.body_count = 1
        stack = [("contents", sections, "world", _IDENTITY, None, True)]
        while stack:
            what, el, link, frame, childclass, top = stack.pop()
            if what == "body":
                link, frame, childclass = self._read_body(el, link, frame, childclass, top)
                top = False
            elements = el if what == "contents" else [el]
            children = [c for section in elements for c in self._flatten(section, frame, childclass)]
            pending = []
            for child, child_frame, child_class in children:
                kind = tag(child)
                if kind == "body":
                    pending.append(("body", child, link, child_frame, child_class, top))
                elif kind == "geom":
                    self._read_geom(child, link, child_frame, child_class, world=link == "world")
                elif kind in ("joint", "freejoint", "inertial"):
                    if what != "body" or child.getparent() is not el:
                        where = "the world body" if link == "world" else "a <frame>"
                        raise doc.error(child, f"<{kind}> in {where}: it belongs directly in a <body>")
                elif kind == "site":
                    self.sites.append(read_site(self, child, link, child_frame, child_class))
                elif kind in IGNORED_ELEMENTS:
                    continue
                elif kind in REFUSED_ELEMENTS:
                    raise doc.error(child, f"<{kind}>: {REFUSED_ELEMENTS[kind]}")
                else:
                    raise doc.error(child, f"unexpected element <{kind}> in <{tag(child.getparent())}>")
            stack.extend(reversed(pending))

    def _flatten(self, el, frame: _Frame, childclass):
        """The children of a body (or the world body), with those of its ``<frame>`` elements in their place,
        each with its pose relative to the body and its class."""
        out = []
        stack = [(child, frame, childclass) for child in reversed(list(el))]
        while stack:
            child, f, cls = stack.pop()
            if tag(child) is None:
                continue
            if tag(child) != "frame":
                out.append((child, f, cls))
                continue
            attrs = attributes(child)
            check_known(self.doc, child, SPECS["frame"])
            v = Values(self.doc, child, attrs)
            inner_class = attrs.get("childclass", cls)
            if inner_class is not None:
                class_chain(self.doc, self.classes, inner_class, child)
            inner = f.then(*self.pose(v))
            stack.extend((c, inner, inner_class) for c in reversed(list(child)))
        return out

    def _unique(self, el, name: str, names, what: str) -> str:
        if name in names:
            raise self.doc.error(el, f"duplicate {what} name {name!r}")
        return name

    def _read_body(self, el, parent: str, frame: _Frame, childclass, top: bool):
        """Links and joints of one body; returns ``(link, frame, childclass)`` for its contents."""
        doc = self.doc
        if self.body_count == MAX_BODIES:
            raise doc.error(el, f"the model has more than {MAX_BODIES} bodies")
        attrs = attributes(el)
        check_known(doc, el, SPECS["body"])
        check_refused(doc, el, SPECS["body"], attrs)
        v = Values(doc, el, attrs)
        name = attrs.get("name") or doc.unnamed("body", self.body_count, "body")
        self.body_count += 1
        self._unique(el, name, {link.name for link in self.links}, "body")
        childclass = attrs.get("childclass", childclass)
        if childclass is not None:
            class_chain(doc, self.classes, childclass, el)
        body_frame = frame.then(*self.pose(v))
        self._read_inertial(el, name)
        joints = [c for c in el if tag(c) in ("joint", "freejoint")]
        names = _TakenNames({link.name for link in self.links}, {j.name for j in self.joints})
        if v.flag("mocap", False):
            self._check_mocap(el, name, joints, top and parent == "world")
            self.mocap_bodies.append(name)
        if not joints:
            self._add_link(el, names, name, el.sourceline)
            self._add_joint(
                el,
                names,
                f"{name}/weld",
                "fixed",
                parent,
                name,
                body_frame.rotation,
                body_frame.translation,
                el.sourceline,
            )
            return name, _IDENTITY, childclass
        self._read_body_joints(el, joints, names, name, parent, body_frame, childclass, top)
        return name, _IDENTITY, childclass

    def _check_mocap(self, el, name: str, joints, top: bool) -> None:
        """A mocap body is a child of the world body without joints (as MuJoCo requires); jaxmor also takes it
        without child bodies and sites (not read yet)."""
        if not top:
            raise self.doc.error(el, f"body {name!r}: a mocap body must be a child of the world body")
        if joints:
            raise self.doc.error(el, f"body {name!r}: a mocap body cannot have joints")
        inner = next((c for c in el.iter() if c is not el and tag(c) in ("body", "site")), None)
        if inner is not None:
            raise self.doc.error(inner, f"<{tag(inner)}> in mocap body {name!r}: not supported (geoms only)")

    def _check_mocap_uses(self, sections, sensors) -> None:
        """Refuse sensors on mocap bodies (not read yet: they would see the body where the file puts it), naming
        their lines."""
        mocap = set(self.mocap_bodies)
        for x in sensors:
            body = next((n for n in (x.obj_name, x.ref_name) if n in mocap), None)
            if body is not None:
                source = self.doc.source(sections["sensor"][0])
                raise ModelError(source, x.line, f"<sensor> on mocap body {body!r}: not supported yet")

    def _read_body_joints(
        self, el, joints, names: _TakenNames, name: str, parent: str, body_frame: _Frame, childclass, top: bool
    ):
        """The links and joints of a body's joints, one link after each, the last one the body's."""
        previous_link, previous_anchor = parent, None
        for k, joint_el in enumerate(joints):
            j = self._read_joint(joint_el, childclass)
            self.joint_count += 1
            last = k == len(joints) - 1
            if j["kind"] == "free":
                self._add_free_joint(el, joint_el, j, names, name, parent, body_frame, len(joints), top)
                return
            link_name = self._add_dof_joint(
                el, joint_el, j, names, name, previous_link, previous_anchor, body_frame, last
            )
            previous_link, previous_anchor = link_name, j["anchor"]
        if previous_link != name:
            self._add_link(el, names, name, el.sourceline)
            self._add_joint(
                el, names, f"{name}/anchor", "fixed", previous_link, name, np.eye(3), -previous_anchor, el.sourceline
            )

    def _add_free_joint(
        self,
        el,
        joint_el,
        j: dict,
        names: _TakenNames,
        name: str,
        parent: str,
        body_frame: _Frame,
        n_joints: int,
        top: bool,
    ):
        """A free joint from the world to the top-level body ``name``, its initial pose the body's."""
        if n_joints > 1:
            raise self.doc.error(joint_el, f"body {name!r}: a free joint must be the body's only joint")
        if not top or parent != "world":
            raise self.doc.error(joint_el, f"body {name!r}: a free joint is allowed only in a top-level body")
        self._add_link(el, names, name, el.sourceline)
        self._add_joint(
            el,
            names,
            j["name"],
            "floating",
            "world",
            name,
            np.eye(3),
            np.zeros(3),
            joint_el.sourceline,
            damping=j["damping"],
            friction=j["friction"],
            rotor_inertia=j["armature"],
        )
        quat = geo.rotation_to_quat(body_frame.rotation)
        self.initial_q[j["name"]] = (*body_frame.translation.tolist(), *quat.tolist())
        self.joint_kinds[j["name"]] = "free"

    def _add_dof_joint(
        self,
        el,
        joint_el,
        j: dict,
        names: _TakenNames,
        name: str,
        previous_link: str,
        previous_anchor,
        body_frame: _Frame,
        last: bool,
    ) -> str:
        """A hinge, slide or ball joint of body ``name`` after ``previous_link``; returns the link it moves."""
        anchor, ref = j["anchor"], j["ref"]
        if previous_anchor is None:
            rotation, translation = body_frame.rotation, body_frame.translation + body_frame.rotation @ anchor
        else:
            rotation, translation = np.eye(3), anchor - previous_anchor
        # MuJoCo's qpos is ref at the pose as written: the joint frame starts from the pose at qpos = 0.
        if j["kind"] == "hinge":
            rotation = rotation @ geo.axis_angle(j["axis"], -ref)
        elif j["kind"] == "slide":
            translation = translation - ref * (rotation @ j["axis"])
        link_name = name if last and not np.any(anchor) else f"{name}/{j['name']}"
        self._add_link(el, names, link_name, el.sourceline)
        self._add_joint(
            el,
            names,
            j["name"],
            j["description_kind"],
            previous_link,
            link_name,
            rotation,
            translation,
            joint_el.sourceline,
            axis=j["axis"],
            lower=j["lower"],
            upper=j["upper"],
            damping=j["damping"],
            friction=j["friction"],
            rotor_inertia=j["armature"],
            stiffness=j["stiffness"],
            springref=j["springref"],
            actuator_force_lower=j["actuator_range"][0],
            actuator_force_upper=j["actuator_range"][1],
            spring_damper=j.get("spring_damper"),
        )
        self.initial_q[j["name"]] = (1.0, 0.0, 0.0, 0.0) if j["kind"] == "ball" else (ref,)
        self.joint_kinds[j["name"]] = j["kind"]
        return link_name

    def _add_link(self, el, names: _TakenNames, link_name: str, line: int) -> None:
        """Append the link ``link_name`` of body element ``el``."""
        self.links.append(Link(self._unique(el, link_name, names.links, "link"), line, None, []))
        names.links.add(link_name)

    def _add_joint(
        self, el, names: _TakenNames, joint_name, kind, parent_link, child_link, rotation, translation, line, **dof
    ) -> None:
        """Append a joint of body element ``el``; ``dof``: its axis, limits and losses where not the defaults."""
        self._unique(el, joint_name, names.joints, "joint")
        names.joints.add(joint_name)
        values = {
            "axis": np.array([1.0, 0.0, 0.0]),
            "lower": -math.inf,
            "upper": math.inf,
            "damping": 0.0,
            "friction": 0.0,
            "rotor_inertia": 0.0,
            "stiffness": 0.0,
            "springref": 0.0,
            "actuator_force_lower": -math.inf,
            "actuator_force_upper": math.inf,
            "spring_damper": None,
        }
        values.update(dof)
        self.joints.append(
            Joint(
                joint_name,
                line,
                kind,
                parent_link,
                child_link,
                rotation,
                translation,
                values["axis"],
                values["lower"],
                values["upper"],
                math.inf,
                math.inf,
                values["damping"],
                values["friction"],
                values["rotor_inertia"],
                values["stiffness"],
                values["springref"],
                values["actuator_force_lower"],
                values["actuator_force_upper"],
                values["spring_damper"],
            )
        )

    def _read_joint(self, el, childclass) -> dict:
        doc = self.doc
        if tag(el) == "freejoint":
            attrs = attributes(el)
            check_known(doc, el, SPECS["freejoint"])
            check_refused(doc, el, SPECS["freejoint"], attrs)
            name = attrs.get("name") or doc.unnamed("joint", self.joint_count, "joint")
            return {"kind": "free", "name": name, "damping": 0.0, "armature": 0.0, "friction": 0.0}
        v = self.resolve(el, SPECS["joint"], "joint", childclass)
        name = v.text("name") or doc.unnamed("joint", self.joint_count, "joint")
        kind = v.choice("type", ("hinge", "slide", "ball", "free"), "hinge")
        damping, armature = v.nonnegative("damping"), v.nonnegative("armature")
        friction, stiffness = v.nonnegative("frictionloss"), v.nonnegative("stiffness")
        actuator_range = self._actuator_force_range(v, name)
        if kind in ("free", "ball"):
            self._check_multi_dof_joint(v, name, kind, actuator_range)
        if kind == "free":
            return {"kind": "free", "name": name, "damping": damping, "armature": armature, "friction": friction}
        if kind == "ball":
            axis = np.array([0.0, 0.0, 1.0])  # MuJoCo ignores a ball joint's axis (and its ref and springref)
        else:
            axis = v.numbers("axis", 3, default=(0.0, 0.0, 1.0))
            if np.linalg.norm(axis) < DEGENERATE_LENGTH:
                raise v.error(f"joint {name!r} has a zero axis")
        angular = kind != "slide"
        convert = self.compiler.angle if angular else float
        lower, upper = self._joint_range(v, name, kind, convert)
        hinge = "revolute" if math.isfinite(upper) else "continuous"
        return {
            "kind": kind,
            "description_kind": {"slide": "prismatic", "ball": "ball"}.get(kind, hinge),
            "name": name,
            "anchor": v.numbers("pos", 3, default=(0.0, 0.0, 0.0)) if angular else np.zeros(3),
            "axis": axis / np.linalg.norm(axis),
            "lower": lower,
            "upper": upper,
            "damping": damping,
            "friction": friction,
            "armature": armature,
            "stiffness": stiffness,
            "springref": 0.0 if kind == "ball" else convert(v.number("springref", 0.0)),
            "ref": 0.0 if kind == "ball" else convert(v.number("ref", 0.0)),
            "actuator_range": actuator_range,
            "spring_damper": self._spring_damper(v, name, kind),
        }

    def _spring_damper(self, v: Values, name: str, kind: str) -> tuple[float, float] | None:
        """A joint's ``springdamper`` ``(time constant [s], damping ratio)``, both positive (MuJoCo then sets its
        stiffness and damping from them), or ``None`` for ``0 0`` (MuJoCo's default; one 0 alone is refused, as
        MuJoCo refuses it)."""
        if not v.has("springdamper"):
            return None
        time_constant, ratio = (float(x) for x in v.numbers("springdamper", 2))
        if time_constant == 0 and ratio == 0:
            return None  # MuJoCo's default: none
        if not (math.isfinite(time_constant) and math.isfinite(ratio)) or min(time_constant, ratio) <= 0:
            given = v.text("springdamper")
            raise v.error(f"joint {name!r}: springdamper must be two finite numbers > 0 (or 0 0: none), got {given!r}")
        if kind not in ("hinge", "slide"):
            raise v.error(f"joint {name!r}: springdamper on a {kind} joint is not supported (hinges and slides only)")
        return time_constant, ratio

    def _joint_range(self, v: Values, name: str, kind: str, convert) -> tuple[float, float]:
        """A joint's ``(lower, upper)`` limits [rad or m] where ``limited`` (``auto``: where a range is given),
        else ``(-inf, inf)``; a ball joint's are ``(0, largest rotation angle)``, MuJoCo's cone limit."""
        limited = v.choice("limited", ("auto", "true", "false"), "auto")
        if limited == "auto":
            if v.has("range") and not self.compiler.autolimits:
                raise v.error(
                    f"joint {name!r} has a range but limited='auto' while the compiler's autolimits is false; "
                    "set limited"
                )
            limited = "true" if v.has("range") else "false"
        if limited != "true":
            return -math.inf, math.inf
        bounds = v.numbers("range", 2, default=(0.0, 0.0))
        if kind == "ball" and bounds[0] != 0.0:
            raise v.error(
                f"joint {name!r}: a ball joint's range is '0 angle' (MuJoCo's cone limit: the largest rotation "
                f"angle), got range[0] = {bounds[0]!r}"
            )
        if bounds[0] >= bounds[1]:
            raise v.error(f"joint {name!r} has range lower {bounds[0]!r} >= upper {bounds[1]!r}")
        return convert(bounds[0]), convert(bounds[1])

    def _actuator_force_range(self, v: Values, name: str) -> tuple[float, float]:
        """``actuatorfrcrange`` [Nm or N, never converted] where ``actuatorfrclimited`` (``auto``: where a range is
        given, as for ``range``), else ``(-inf, inf)``."""
        bounds = limited_range(v, "actuatorfrc", name, self.compiler.autolimits, what="joint")
        return (-math.inf, math.inf) if bounds is None else bounds

    def _check_multi_dof_joint(self, v: Values, name: str, kind: str, actuator_range: tuple[float, float]) -> None:
        """Refuse what a free or ball joint cannot have in jaxmor, naming only what the file (or a class) sets."""
        own = attributes(v.element)

        def given(attribute: str) -> str:
            origin = "" if attribute in own else " (from its default class)"
            return f"{attribute}={v.text(attribute)!r}{origin}"

        if kind == "free" and v.nonnegative("stiffness"):
            raise v.error(
                f"joint {name!r}: {given('stiffness')} on a free joint is not supported (MuJoCo's free-joint "
                "spring pulls the whole pose to qpos_spring)"
            )
        if not actuator_range[0] <= 0.0 <= actuator_range[1]:
            raise v.error(
                f"joint {name!r}: {given('actuatorfrcrange')} on a {kind} joint excludes 0 (no actuator drives a "
                f"{kind} joint in jaxmor; MuJoCo would apply the nearest bound)"
            )

    def _read_geom(self, el, link: str, frame: _Frame, childclass, world: bool) -> None:
        v = self.resolve(el, SPECS["geom"], "geom", childclass)
        gid = self.geom_count
        self.geom_count += 1
        kind = v.choice(
            "type", ("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "hfield", "sdf"), "sphere"
        )
        name = v.text("name") or self.doc.unnamed("geom", gid, "geom")
        if kind == "sdf":
            raise v.error(f"geom {name!r}: sdf geoms are not supported")
        if v.has("mesh") and kind != "mesh":
            raise v.error(f"geom {name!r}: fitting a {kind} to a mesh is not supported; give its size")
        rotation, translation, size = self._geom_shape(v, kind, name)
        rotation, translation = frame.rotation @ rotation, frame.rotation @ translation + frame.translation
        contype, conaffinity = v.integer("contype", 1), v.integer("conaffinity", 1)
        condim = v.integer("condim", 3)
        if condim not in (1, 3, 4, 6):
            raise v.error(f"geom {name!r}: condim must be 1, 3, 4 or 6, got {condim}")
        friction = v.numbers("friction", 1, 3, default=(1.0, 0.005, 0.0001))
        if np.any(friction < 0):
            raise v.error(f"geom {name!r}: friction must not be negative, got {friction.tolist()}")
        mu = float(friction[0]) if condim >= 3 else 0.0
        priority = v.integer("priority", 0)
        collides = bool(contype or conaffinity) or name in self.paired
        if kind == "plane":
            self._read_plane(v, name, world, rotation, translation, collides, mu, priority, contype, conaffinity)
            return
        if kind == "hfield":
            self._read_hfield_geom(v, name, world, (rotation, translation), collides, mu)
            return
        if not world:
            self._add_visual(v, kind, size, (rotation, translation), link)
        if world and not collides:
            return
        if not world:
            self._count_mass(v, kind, name, size, rotation, translation, link)
        if not collides:
            return
        if condim > 3:
            self.rich_contacts.append(name)
        geom = Geom(
            name,
            kind,
            size,
            rotation,
            translation,
            friction=mu,
            priority=priority,
            contype=contype,
            conaffinity=conaffinity,
        )
        if kind == "mesh":
            self._mesh(v, geom)
        owner = next(lk for lk in reversed(self.links) if lk.name == link)
        if any(g.name == name for lk in self.links for g in lk.geoms):
            raise v.error(f"duplicate geom name {name!r}")
        owner.geoms.append(geom)

    def _add_visual(self, v: Values, kind: str, size: np.ndarray, pose, link: str) -> None:
        """Record the geom as one of its body's visuals when MuJoCo would draw it (:mod:`jaxmor.io.mjcf_visual`)."""
        if self.materials is None:
            self.materials = material_colours(self.doc.root)

        def mesh_path():
            asset = self._mesh_asset(v, "visual")
            return self._mesh_path(asset), asset.scale

        visual = read_visual(v, kind, size, pose, mesh_path, self.materials)
        if visual is not None:
            next(lk for lk in reversed(self.links) if lk.name == link).visuals.append(visual)

    def _geom_shape(self, v: Values, kind: str, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Orientation, centre and size (jaxmor's: radius and half length, or half sizes) of a geom."""
        size = np.zeros(3)
        if v.has("size"):
            given = v.numbers("size", 1, 3)
            size[: len(given)] = given
        if v.has("fromto"):
            if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
                raise v.error(f"geom {name!r}: fromto is for capsules, cylinders, boxes and ellipsoids, not a {kind}")
            ends = v.numbers("fromto", 6)
            with np.errstate(over="ignore", invalid="ignore"):
                axis = ends[3:] - ends[:3]
                largest = np.abs(axis).max()
                axis = axis / largest if largest > 0 else axis  # no square overflows for a finite length
                length = largest * np.linalg.norm(axis)
            if not np.isfinite(length):
                raise v.error(f"geom {name!r}: fromto's length overflows float64 ({ends.tolist()})")
            if length < DEGENERATE_LENGTH:
                raise v.error(f"geom {name!r}: fromto has zero length")
            size[1 if kind in ("capsule", "cylinder") else 2] = length / 2.0
            rotation, translation = geo.z_to(axis), (ends[:3] + ends[3:]) / 2.0
        else:
            rotation, translation = self.pose(v)
        needed = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}.get(kind, 0)
        if np.any(size[:needed] <= 0):
            raise v.error(f"geom {name!r}: a {kind} needs {needed} positive size(s), got {size[:needed].tolist()}")
        return rotation, translation, size

    def _read_plane(self, v, name, world, rotation, translation, collides, mu, priority, contype, conaffinity):
        """The first horizontal plane facing up is the ground; any other becomes a static box that fills the
        half space behind it (:data:`HALF_SPACE` deep and wide)."""
        if not world:
            raise v.error(f"geom {name!r}: a plane must be in the world body (the ground or a static wall)")
        if not collides:
            return
        if self.ground is None and np.abs(rotation[:, 2] - [0.0, 0.0, 1.0]).max() <= ROUND_OFF:
            self.ground = GroundPlane(float(translation[2]), mu, priority, contype, conaffinity, v.line, name)
            return
        centre = translation - HALF_SPACE * rotation[:, 2]
        box = Geom(
            name,
            "box",
            np.full(3, HALF_SPACE),
            rotation,
            centre,
            friction=mu,
            priority=priority,
            contype=contype,
            conaffinity=conaffinity,
        )
        self.links[0].geoms.append(box)

    def _read_inertial(self, body, name: str) -> None:
        """Where the body's mass comes from: its ``<inertial>``, or its geoms (``inertiafromgeom``)."""
        found = [c for c in body if tag(c) == "inertial"]
        if len(found) > 1:
            raise self.doc.error(found[1], f"body {name!r} has more than one <inertial>")
        mode = self.compiler.inertiafromgeom
        if found:
            el = found[0]
            attrs = attributes(el)
            check_known(self.doc, el, SPECS["inertial"])
            v = Values(self.doc, el, attrs)
            mass = v.number("mass")
            if mass is None or not v.has("pos"):
                raise v.error(f"body {name!r}: <inertial> needs pos and mass")
            if mass < 0:
                raise v.error(f"body {name!r} has a negative mass {mass!r}")
            if v.has("diaginertia") == v.has("fullinertia"):
                raise v.error(f"body {name!r}: <inertial> needs one of diaginertia and fullinertia")
            if v.has("fullinertia"):
                if any(v.has(a) for a in ("quat", "axisangle", "euler", "xyaxes", "zaxis")):
                    raise v.error(f"body {name!r}: fullinertia takes no orientation")
                xx, yy, zz, xy, xz, yz = v.numbers("fullinertia", 6)
                inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            else:
                rotation = self.orientation(v)
                inertia = rotation @ np.diag(v.numbers("diaginertia", 3)) @ rotation.T
            moments = np.linalg.eigvalsh(inertia)
            if moments[0] < -ROUND_OFF * max(1e-300, np.abs(inertia).max()):
                raise v.error(f"body {name!r} has an inertia that is not positive semi-definite")
            if moments[2] - moments[0] - moments[1] > ROUND_OFF * moments[2]:
                raise v.error(
                    f"body {name!r}: the principal moments {moments.tolist()} break the triangle inequality "
                    "(I1 + I2 >= I3), as MuJoCo refuses them"
                )
            self.explicit_masses[name] = (mass, v.numbers("pos", 3), inertia)
        # "auto": the geoms count where there is no <inertial>; "true": the geoms count where there are any (as
        # MuJoCo, a body without geoms keeps its <inertial>); "false": only an <inertial> counts.
        counts = mode == "true" or (mode == "auto" and not found)
        self.body_masses[name] = [] if counts else None

    def _finish_masses(self) -> None:
        """Each body's mass properties, bounded (``boundmass``, ``boundinertia``) and scaled to
        ``settotalmass``."""
        props = {}
        for name, parts in self.body_masses.items():  # every body but the world
            if parts:
                props[name] = combine_masses(parts)
            elif name in self.explicit_masses:
                props[name] = self.explicit_masses[name]
            else:
                props[name] = (0.0, np.zeros(3), np.zeros((3, 3)))
        c = self.compiler
        for name, (mass, com, inertia) in props.items():
            if c.boundinertia > 0:
                moments, axes = np.linalg.eigh(inertia)
                inertia = axes @ np.diag(np.maximum(moments, c.boundinertia)) @ axes.T
            props[name] = (max(mass, c.boundmass), com, inertia)
        total = sum(m for m, _, _ in props.values())
        if c.settotalmass > 0 and total > 0:
            factor = c.settotalmass / total
            props = {n: (m * factor, com, i * factor) for n, (m, com, i) in props.items()}
        for link in self.links:  # every body's mass is given, zero included (a moving one is then refused)
            if link.name in props:
                link.inertial = Inertial(*props[link.name])

    def _count_mass(self, v: Values, kind, name, size, rotation, translation, link) -> None:
        """Add the geom's mass to its body when the body's inertia comes from its geoms."""
        low, high = self.compiler.inertiagroups
        if not low <= v.integer("group", 0) <= high or self.compiler.inertiafromgeom == "false":
            return
        parts = self.body_masses.get(link)
        if parts is None:  # the body's <inertial> counts instead, or none does (inertiafromgeom="false")
            return
        if kind == "mesh":
            self._count_mesh_mass(v, name, rotation, translation, parts)
            return
        if v.has("mass"):
            mass = v.nonnegative("mass")
            density = mass / geo.volume(kind, size) if mass > 0 else 0.0
        else:
            density = v.nonnegative("density", 1000.0)
        if density == 0.0:  # no mass, no inertia, whatever the extents (0 x inf would be NaN)
            return
        with np.errstate(over="ignore", invalid="ignore"):
            mass, moments = geo.principal_inertia(kind, size, density)
        if not (np.isfinite(mass) and np.all(np.isfinite(moments))):
            raise v.error(f"geom {name!r}: its mass or inertia overflows float64 (size {size.tolist()})")
        parts.append((mass, translation, rotation @ np.diag(moments) @ rotation.T))

    def _count_mesh_mass(self, v: Values, name: str, rotation, translation, parts: list) -> None:
        """A mesh geom's mass by its mesh's ``inertia`` rule (:mod:`jaxmor.io.mesh_inertia`), of its
        ``density`` or scaled to its ``mass``; a zero mass or density reads no file."""
        mass = v.nonnegative("mass") if v.has("mass") else None
        density = v.nonnegative("density", 1000.0)
        if mass == 0.0 or (mass is None and density == 0.0):
            return
        asset = self._mesh_asset(v, name)
        if asset.maxhullvert != -1 and asset.inertia == "convex":
            raise self.doc.error(
                asset.element,
                f"mesh {brief_repr(v.text('mesh'))}: maxhullvert with inertia='convex' is not supported (MuJoCo's mass "
                "would be that of the reduced hull qhull stops at); remove maxhullvert or give the body an <inertial>",
            )
        source, line = self.doc.source(asset.element), asset.element.sourceline
        props = mesh_mass(self._mesh_path(asset), asset.scale, asset.inertia, source, line)
        if mass is not None:
            density = mass / props.measure
        centre = rotation @ props.centre + translation
        parts.append((density * props.measure, centre, density * (rotation @ props.inertia @ rotation.T)))

    def _mesh_asset(self, v: Values, name: str) -> _MeshAsset:
        mesh = v.text("mesh")
        if not mesh:
            raise v.error(f"geom {name!r}: a mesh geom needs a mesh attribute")
        if mesh not in self.mesh_files:
            raise v.error(f"geom {name!r}: unknown mesh {mesh!r}")
        return self.mesh_files[mesh]

    def _read_hfield(self, el) -> None:
        v = self.resolve(el, SPECS["hfield"], "hfield", None)
        name = v.text("name") or (Path(v.text("file", "")).stem if v.text("file") else "")
        if not name:
            raise v.error("an <hfield> needs a name (or a file)")
        if name in self.hfields:
            raise v.error(f"duplicate hfield name {name!r}")

        def read_file(file: str) -> bytes:
            return self._asset_path(file, el).read_bytes()

        self.hfields[name] = lambda: read_hfield_asset(v, name, read_file)  # read where a geom uses it

    def _read_hfield_geom(self, v: Values, name: str, world: bool, pose, collides: bool, mu: float) -> None:
        """A height field geom: the ground's height field (:mod:`jaxmor.io.mjcf_hfield`)."""
        if not world:
            raise v.error(f"geom {name!r}: a height field must be in the world body (jaxmor's is static)")
        if not collides:
            return
        asset = v.text("hfield")
        if asset not in self.hfields:
            raise v.error(f"geom {name!r}: unknown hfield {asset!r}")
        if self.height_field is not None:
            raise v.error(f"geom {name!r}: a second height field (jaxmor's ground holds one)")
        self.height_field = read_hfield_geom(v, name, self.hfields[asset](), *pose, mu)

    def _mesh_path(self, asset: _MeshAsset) -> Path:
        return self._asset_path(asset.file, asset.element)

    def _asset_path(self, file: str, element) -> Path:
        """The file a mesh or height-field asset names, under ``meshdir`` beside the model (errors at ``element``),
        read only within the model's folders (:func:`jaxmor.io.mesh.resolve_mesh`)."""
        base = self.doc.main_dir if self.doc.main_dir is not None else self.doc.assets_dir
        folder = None if base is None else str(base / self.compiler.meshdir)
        trees = [d for d in (self.doc.main_dir, self.doc.assets_dir) if d is not None]
        source, line = self.doc.source(element), element.sourceline
        return resolve_mesh(file, folder, self.package_dirs, source, line, trees=trees, kind=tag(element))

    def _mesh(self, v: Values, geom: Geom) -> None:
        asset = self._mesh_asset(v, geom.name)
        geom.mesh, geom.scale = asset.file, asset.scale
        if self.meshes == "ignore":
            return
        source = self.doc.source(asset.element)
        most = asset.maxhullvert if asset.maxhullvert != -1 else self.max_hull_vertices
        geom.hull = convex_hull(self._mesh_path(asset), asset.scale, source, asset.element.sourceline, most)

    # ---------------------------------------------------------------------------------- the rest

    def _resolve_pairs(self) -> list[ContactPair]:
        """The explicit pairs, their geoms checked, the ground plane's side (if any) second and ``None``."""
        ground = self.ground.name if self.ground is not None else None
        known = {g.name for link in self.links for g in link.geoms} | {ground}
        explicit = []
        for element, pair in self.pairs:
            for name in (pair.geom1, pair.geom2):
                if name not in known:
                    raise self.doc.error(element, f"<pair> names an unknown geom {name!r}")
            first, second = (pair.geom2, pair.geom1) if pair.geom1 == ground else (pair.geom1, pair.geom2)
            explicit.append(replace(pair, geom1=first, geom2=None if second == ground else second))
        return explicit

    def _read_contact(self, section) -> list[tuple[str, str, int]]:
        out = []
        bodies = {link.name for link in self.links}
        for el in section:
            kind = tag(el)
            if kind is None:
                continue
            if kind == "pair":
                continue  # read before the bodies (self.pairs)
            if kind != "exclude":
                raise self.doc.error(el, f"unexpected element <{kind}> in <contact>")
            check_known(self.doc, el, SPECS["exclude"])
            ends = (el.get("body1"), el.get("body2"))
            for end in ends:
                if not end or end not in bodies:
                    raise self.doc.error(el, f"<exclude> names an unknown body {end!r}")
            out.append((ends[0], ends[1], el.sourceline))
        return out

    def _read_custom(self, sections) -> tuple[list, ResidualFile | None]:
        """jaxmor's DC-motor actuators and learned residual, from the file a ``<text name="jaxmor:actuators">``
        names."""
        found = []
        for section in sections:
            for el in section:
                if tag(el) == "text" and el.get("name") == ACTUATORS_TEXT:
                    check_known(self.doc, el, SPECS["text"])
                    found.append(el)
        if not found:
            return [], None
        if len(found) > 1:
            raise self.doc.error(found[1], f"more than one <text name={ACTUATORS_TEXT!r}>")
        el = found[0]
        file = (el.get("data") or "").strip()
        if not file:
            raise self.doc.error(el, f'<text name={ACTUATORS_TEXT!r}> needs data="FILE" (an <actuators> file)')
        source = self.doc.source(el)
        base = self.doc.main_dir if source == STRING_SOURCE else Path(source).resolve().parent
        base = base if base is not None else self.doc.assets_dir
        path = None if base is None else resolve_actuator_file(file, base, self.actuator_dirs)
        if path is None:
            raise self.doc.error(
                el,
                f"actuator file {shortened(file)!r} not found or not readable in the allowed directories (from {base}; "
                "files are read only within the model's directory tree and the search path, or actuator_dirs)",
            )
        root, motors_source = parse_xml(path)
        dirs = {"base_dir": path.parent, "extra_dirs": self.actuator_dirs}
        definitions, torques, enforced = actuators_from_element(root, motors_source, **dirs)
        if any(t != 0 for t in torques) or not enforced:
            raise ModelError(
                str(path),
                None,
                "a model's actuator file holds no torques and no monitor mode (they are "
                "a world's state: jaxmor.import_actuators sets them)",
            )
        return definitions, read_residual(root, motors_source, **dirs)

    def _read_keyframes(self, section, mjcf_actuators: list, dropped: set[str]) -> list[KeyframeDescription]:
        """Keyframes in jaxmor's conventions: MuJoCo's free-joint angular velocity (body frame) turned into the
        world frame (a ball joint's is kept: jaxmor's is MuJoCo's), quaternions normalized."""
        actuators = [a.name for a in mjcf_actuators]  # MuJoCo's actuator (control) order
        order = list(self.joint_kinds.items())
        nq = sum(_WIDTHS.get(k, (1, 1))[0] for _, k in order)
        nv = sum(_WIDTHS.get(k, (1, 1))[1] for _, k in order)
        out = []
        for el in section:
            if tag(el) is None:
                continue
            if tag(el) != "key":
                raise self.doc.error(el, f"unexpected element <{tag(el)}> in <keyframe>")
            attrs = attributes(el)
            check_known(self.doc, el, SPECS["key"])
            check_refused(self.doc, el, SPECS["key"], attrs)
            v = Values(self.doc, el, attrs)
            name = v.text("name") or self.doc.unnamed("key", len(out), "key")
            qpos = v.numbers("qpos", nq) if v.has("qpos") else None
            qvel = v.numbers("qvel", nv) if v.has("qvel") else None
            ctrl = v.numbers("ctrl", len(actuators)) if v.has("ctrl") else None
            q, u, i, k = {}, {}, 0, 0
            for joint, kind in order:
                width_q, width_v = _WIDTHS.get(kind, (1, 1))
                coords = self.initial_q[joint] if qpos is None else tuple(qpos[i : i + width_q].tolist())
                if kind in _WIDTHS:
                    quat = np.asarray(coords[-4:])
                    if np.linalg.norm(quat) < DEGENERATE_LENGTH:
                        raise v.error(f"keyframe {name!r}: the quaternion of joint {joint!r} is zero")
                    coords = (*coords[:-4], *(quat / np.linalg.norm(quat)).tolist())
                q[joint] = coords
                vel = np.zeros(width_v) if qvel is None else qvel[k : k + width_v].copy()
                if kind == "free":
                    vel[3:] = geo.quat_to_rotation(coords[3:]) @ vel[3:]
                u[joint] = tuple(vel.tolist())
                i, k = i + width_q, k + width_v
            controls = {}
            if ctrl is not None:
                controls = {a: float(c) for a, c in zip(actuators, ctrl, strict=True) if a not in dropped}
            mocap = self._key_mocap(v, name)
            act = self._key_act(v, mjcf_actuators, dropped)
            out.append(KeyframeDescription(name, el.sourceline, v.number("time", 0.0), q, u, controls, *mocap, act))
        return out

    def _key_act(self, v: Values, mjcf_actuators: list, dropped: set[str]) -> dict[str, float]:
        """A key's ``act``: one activation per affine actuator with activation dynamics, in MuJoCo's actuator
        order, by name (those the ``jaxmor:actuators`` extension dropped left out); empty without ``act``.

        Raises:
            ModelError: ``act`` beside a ``<dcmotor>`` (MuJoCo counts a dcmotor's internal states in ``act``), or of
                the wrong length.
        """
        if not v.has("act"):
            return {}
        if any(isinstance(a, ActuatorDefinition) for a in mjcf_actuators):
            raise v.error("key act beside <dcmotor> actuators is not supported (MuJoCo counts their states in act)")
        stateful = [a.name for a in mjcf_actuators if a.dyntype != "none"]
        values = v.numbers("act", len(stateful))
        return {a: float(x) for a, x in zip(stateful, values, strict=True) if a not in dropped}

    def _key_mocap(self, v: Values, name: str) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
        """A key's ``mpos`` (3 per mocap body) and ``mquat`` (4 per body, normalized; a zero one refused), each
        ``None`` where the key leaves it out."""
        count = len(self.mocap_bodies)
        pos = tuple(v.numbers("mpos", 3 * count).tolist()) if v.has("mpos") else None
        if not v.has("mquat"):
            return pos, None
        quats = v.numbers("mquat", 4 * count).reshape(count, 4)
        norms = np.linalg.norm(quats, axis=1)
        for body, norm in zip(self.mocap_bodies, norms, strict=True):
            if norm < DEGENERATE_LENGTH:
                raise v.error(f"keyframe {name!r}: the mquat of mocap body {body!r} is zero")
        return pos, tuple((quats / norms[:, None]).reshape(-1).tolist())


def _merge_actuators(mjcf_actuators: list, motors: list[ActuatorDefinition]):
    """The MJCF actuators merged with the ``jaxmor:actuators`` extension's motors.

    The extension's motors replace the MJCF actuators (affine or dcmotor) of their joints; a dcmotor's
    control (a voltage) is no jaxmor control, so its keyframe controls are dropped too.

    Returns:
        ``(affine, motors, dropped)``: the affine actuators kept, the DC motors (the dcmotors of joints the
        extension does not drive, then the extension's), the names of the MJCF actuators dropped.
    """
    driven = {m.joint for m in motors}
    affine = [a for a in mjcf_actuators if isinstance(a, AffineActuator)]
    dc_motors = [a for a in mjcf_actuators if isinstance(a, ActuatorDefinition)]
    dropped = {a.name for a in affine if a.joint in driven} | {d.name for d in dc_motors}
    affine = [a for a in affine if a.name not in dropped]
    motors = [d for d in dc_motors if d.joint not in driven] + motors
    return affine, motors, dropped


def parse_mjcf(
    path_or_xml: str | os.PathLike,
    *,
    assets_dir: str | os.PathLike | None = None,
    meshes: str = "convex_hull",
    package_dirs: Sequence[str | os.PathLike] = (),
    actuator_dirs: Sequence[str | os.PathLike] = (),
    max_hull_vertices: int = MAX_HULL_VERTICES,
) -> RobotDescription:
    """Read an MJCF file or string into a :class:`RobotDescription` (module docstring).

    Args:
        path_or_xml: a file path, or the MJCF text itself (a string starting with ``<``).
        assets_dir: the folder that takes the place of the file's own for MJCF text (includes, meshes and
            actuator files are looked up from it); for a file, another folder whose tree may be read.
        meshes: ``"convex_hull"`` (default) or ``"ignore"``, as for a URDF (:func:`jaxmor.load_urdf`).
        package_dirs: folders where ``package://`` mesh URIs are looked up first (:mod:`jaxmor.io.mesh`).
        actuator_dirs: more directory trees where jaxmor's actuator files may be read.
        max_hull_vertices: the most vertices of a mesh's simulated hull where its asset gives no ``maxhullvert``
            (an int ``>= 4``, default 64; :func:`jaxmor.load_urdf`).

    Returns:
        The description: the world link first, then each body's links in MuJoCo's body order.

    Raises:
        ModelError: the model is invalid or uses what jaxmor refuses; the message names the file and line.
        ArgumentError: ``meshes`` is unknown, or ``package_dirs``/``actuator_dirs`` is a single string.
    """
    if meshes not in ("convex_hull", "ignore"):
        raise ArgumentError(f"meshes must be one of ('convex_hull', 'ignore'), got {meshes!r}")
    for name, dirs in (("package_dirs", package_dirs), ("actuator_dirs", actuator_dirs)):
        if isinstance(dirs, (str, bytes, os.PathLike)):
            raise ArgumentError(f"{name} must be a list of folders, got {dirs!r}")
    doc = read_document(path_or_xml, assets_dir)
    return _Reader(doc, meshes, package_dirs, actuator_dirs, check_max_vertices(max_hull_vertices)).read()
