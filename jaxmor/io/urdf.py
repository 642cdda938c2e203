"""URDF -> a :class:`~jaxmor.io.description.RobotDescription` (``jaxmor.load_urdf`` then builds the Model).

What is read:

* ``<link>``: ``<inertial>`` (origin xyz/rpy, mass, full inertia tensor) and every ``<collision>``
  (box, sphere, cylinder, capsule, and ``<mesh filename scale>``, simulated as its convex hull:
  :mod:`jaxmor.io.mesh`; with ``meshes="ignore"`` meshes are kept by name in ``Model.mesh_geoms`` and
  reported by a warning, not simulated). ``<visual>`` is ignored.
* ``<joint>`` of type ``revolute``, ``continuous``, ``prismatic``, ``fixed`` and ``floating``
  (a floating joint is allowed only from the ``world`` link; it becomes the free base). ``planar``
  is rejected. Origin, axis (normalized; a zero axis is an error), ``<limit lower upper effort
  velocity>`` (required for revolute and prismatic joints, as in the URDF standard; missing
  ``lower``/``upper`` default to 0 as in urdfdom), ``<dynamics damping friction rotor_inertia>``.
  ``rotor_inertia`` is jaxmor's extension: the reflected rotor inertia ``G^2 J_rotor`` added to
  the joint's diagonal of the mass matrix. ``<mimic>`` is not supported: the joint stays
  independent (as in Pinocchio) and a warning says so.
* ``<ground_contact names="LF_FOOT RF_FOOT *_foot"/>``, jaxmor's extension (at most one, child of
  ``<robot>``): only the geoms named, the geoms of the links named, or those matching the ``fnmatch``
  patterns touch the ground (as :func:`jaxmor.with_ground_contact`); without it every geom does.
* ``<disable_collisions link1="a" link2="b"/>`` (the SRDF element, accepted in the URDF; each side a link
  or geom name or an ``fnmatch`` pattern): :func:`jaxmor.with_self_collision` never pairs a geom of one
  side with a geom of the other (``Model.collision_exclude``).
* ``<actuator>`` elements (see :mod:`jaxmor.io.actuators`) and one ``<residual file="..."/>``, a learned torque
  residual's weights (:mod:`jaxmor.io.residual_file`). ROS ``<transmission>`` and ``<gazebo>`` elements are ignored.

Structure: the reader checks that the links form one tree (one root, no cycle, one parent per
link, ``world`` only at the root). Merging fixed joints, choosing a fixed or floating base and
compiling arrays is the model builder's work (:mod:`jaxmor.modeling.builder`).

Validation: every error names the file (or ``"<string>"``) and the line of the offending element:
malformed XML, missing or duplicate names, unknown links or joint types, a link with two parents,
cycles, several roots, negative mass, non-finite or malformed numbers, negative limits or
losses, ``lower > upper``.

Inertia tensors. A negative principal moment within round-off, ``1e-9`` of the largest moment's
magnitude, is accepted as given. A tensor whose moments are all below ``mass x (1 um)^2`` (a radius of
gyration under a micrometre; absolute floor ``1e-20`` kg m^2) is a point mass: taken as zero, silently
(iCub's head has a zero tensor with a stray ``2.4e-35`` entry). A negative principal moment beyond round-off
is *repaired* while it is within :data:`INERTIA_TOLERANCE` (1%) of the largest principal moment in the file
(TIAGo's 1 mg antenna links: moments ``-3.5e-8, 3.5e-8, 9.1e-8`` beside the robot's largest, ``0.55`` kg m^2): it
becomes zero (the tensor keeps its principal axes), with a warning naming the file, the line and the
moments before and after; ``strict=True`` refuses it with a :class:`~jaxmor.errors.ModelError` instead.
Beyond the tolerance it is refused, as MuJoCo refuses it. Likewise a tensor whose principal moments break
the triangle inequality ``I1 + I2 >= I3`` is accepted with a warning within the tolerance and refused
beyond it. A singular tensor (a thin rod; example-robot-data's Go1 base has one) is accepted with a
warning. An all-zero tensor is a point mass and accepted silently. A joint that moves only links whose
``<inertial>`` gives zero mass (and has no ``rotor_inertia``) is refused by the model builder: its mass
matrix would be singular; links without any ``<inertial>`` (frames) only make it warn
(docs/design/reliability.md).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxmor.errors import ArgumentError, ModelError, brief_repr
from jaxmor.io.actuators import parse_actuators
from jaxmor.io.description import JOINT_TYPES, Geom, Inertial, Joint, Link, RobotDescription
from jaxmor.io.mesh import MAX_HULL_VERTICES, check_max_vertices, convex_hull, resolve_mesh
from jaxmor.io.residual_file import read_residual
from jaxmor.io.urdf_visual import parse_visuals, robot_materials
from jaxmor.io.xml import STRING_SOURCE, nonnegative, parse_float, parse_vector, parse_xml

#: Most links a robot description may have. Loading is linear in the file's size: the largest file the
#: readers accept (16 MiB, ``jaxmor.io.xml.MAX_XML_BYTES``) loads within seconds (README, "Robot descriptions").
MAX_LINKS = 100_000


def rpy_to_rotation(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z) to a rotation matrix, ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _origin(element, source: str, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """The ``<origin>`` child of ``element``; ``owner`` (e.g. ``"joint 'knee'"``) names it in errors."""
    origin = element.find("origin")
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = parse_vector(origin.get("xyz"), 3, source, origin, f"{owner} origin xyz", default=(0.0, 0.0, 0.0))
    rpy = parse_vector(origin.get("rpy"), 3, source, origin, f"{owner} origin rpy", default=(0.0, 0.0, 0.0))
    return rpy_to_rotation(rpy), np.array(xyz)


#: Radius of gyration [m] below which an inertia tensor is a point mass's (round-off), and the absolute
#: floor [kg m^2] of that test for a massless link.
POINT_MASS_RADIUS = 1e-6
POINT_MASS_FLOOR = 1e-20
#: A tensor's negative principal moment above this fraction of its largest moment's magnitude (in
#: magnitude) is not round-off; the same fraction of its largest moment marks a singular tensor.
INERTIA_ROUND_OFF = 1e-9
#: A triangle inequality broken by less than this fraction of the largest moment is round-off.
TRIANGLE_ROUND_OFF = 1e-6
#: The largest defect of a tensor that loading repairs (a negative principal moment, set to zero) or accepts
#: with a warning (a broken triangle inequality), as a fraction of the file's largest principal moment;
#: beyond it the file is refused (docs/design/reliability.md).
INERTIA_TOLERANCE = 1e-2


def _parse_inertial(link_el, name: str, source: str) -> tuple[Inertial | None, int]:
    """The link's ``<inertial>`` as given (a point mass's round-off zeroed), and the line of its tensor."""
    el = link_el.find("inertial")
    if el is None:
        return None, link_el.sourceline
    rot, xyz = _origin(el, source, f"link '{name}' inertial")
    mass_el = el.find("mass")
    if mass_el is None:
        raise ModelError(source, el.sourceline, f"link '{name}': <inertial> has no <mass>")
    mass = parse_float(mass_el.get("value"), source, mass_el, f"link '{name}' mass value")
    if mass < 0:
        raise ModelError(source, mass_el.sourceline, f"link '{name}' has a negative mass {mass}")
    in_el = el.find("inertia")
    if in_el is None:
        return Inertial(mass, xyz, np.zeros((3, 3))), el.sourceline
    vals = {
        k: parse_float(in_el.get(k, "0"), source, in_el, f"link '{name}' inertia {k}")
        for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    }
    tensor = np.array(
        [
            [vals["ixx"], vals["ixy"], vals["ixz"]],
            [vals["ixy"], vals["iyy"], vals["iyz"]],
            [vals["ixz"], vals["iyz"], vals["izz"]],
        ]
    )
    if np.any(tensor != 0.0):
        eig = np.linalg.eigvalsh(tensor)
        if max(abs(eig[-1]), abs(eig[0])) <= max(mass * POINT_MASS_RADIUS**2, POINT_MASS_FLOOR):
            tensor = np.zeros((3, 3))  # a point mass; the entries are round-off
    return Inertial(mass, xyz, rot @ tensor @ rot.T), in_el.sourceline


def _check_inertias(links: dict[str, Link], lines: dict[str, int], source: str, strict: bool) -> None:
    """Check every link's inertia tensor (module docstring), repairing a negative principal moment within
    :data:`INERTIA_TOLERANCE` of the file's largest principal moment in place (unless ``strict``)."""
    moments = {
        name: np.linalg.eigh(link.inertial.inertia)
        for name, link in links.items()
        if link.inertial is not None and np.any(link.inertial.inertia)
    }
    scale = max((float(np.abs(eig).max()) for eig, _ in moments.values()), default=0.0)
    for name, (eig, axes) in moments.items():
        checked = _checked_moments(name, eig, scale, (source, lines[name]), strict)
        if checked is not eig:
            inertial = links[name].inertial
            links[name].inertial = Inertial(inertial.mass, inertial.com, axes @ np.diag(checked) @ axes.T)


def _checked_moments(name: str, eig: np.ndarray, scale: float, at: tuple[str, int], strict: bool) -> np.ndarray:
    """The principal moments ``eig`` (ascending) of link ``name``, checked against ``scale`` (the file's
    largest principal moment); repaired (a new array) or as given; ``at`` is the tensor's file and line."""
    source, line = at
    where = f"{source}:{line}"
    own = float(np.abs(eig).max())
    tolerance = INERTIA_TOLERANCE * scale
    if eig[0] < -INERTIA_ROUND_OFF * own:
        message = f"link '{name}' has an inertia that is not positive definite (principal moments {eig.tolist()})"
        if strict or -eig[0] > tolerance:
            why = "strict=True" if strict else f"beyond {INERTIA_TOLERANCE:g} of the file's largest moment {scale:g}"
            raise ModelError(source, line, f"{message}: refused ({why})")
        eig = np.maximum(eig, 0.0)
        warnings.warn(
            f"{where}: {message}; repaired to the principal moments {eig.tolist()} (the negative ones set to "
            f"zero, same axes: within {INERTIA_TOLERANCE:g} of the file's largest moment; strict=True refuses it)",
            stacklevel=5,
        )
    elif eig[0] <= INERTIA_ROUND_OFF * own:
        warnings.warn(
            f"{where}: link '{name}' has a singular inertia (principal moments {eig.tolist()}); accepted as given",
            stacklevel=5,
        )
    excess = float(eig[2] - eig[0] - eig[1])
    if excess > TRIANGLE_ROUND_OFF * eig[2]:
        message = f"link '{name}' has principal moments {eig.tolist()} that break the triangle inequality"
        if excess > tolerance:
            beyond = f"(I1 + I2 >= I3) by {excess:g}, beyond {INERTIA_TOLERANCE:g} of the file's largest moment"
            raise ModelError(source, line, f"{message} {beyond}")
        warnings.warn(
            f"{where}: {message}, by {excess:g}: within {INERTIA_TOLERANCE:g} of the file's largest moment, "
            "accepted as given",
            stacklevel=5,
        )
    return eig


@dataclass(frozen=True)
class MeshOptions:
    """How a reader treats ``<mesh>`` collisions: ``mode`` ``"convex_hull"`` (simulate their hulls) or
    ``"ignore"`` (keep them by name only); where their files are looked up (:mod:`jaxmor.io.mesh`)."""

    mode: str = "convex_hull"
    resource_dir: str | None = None
    package_dirs: tuple[str, ...] = ()
    max_vertices: int = MAX_HULL_VERTICES


#: What ``meshes=`` accepts.
MESH_MODES = ("convex_hull", "ignore")


def _parse_geoms(link_el, name: str, source: str, meshes: MeshOptions) -> list[Geom]:
    geoms = []
    for k, col in enumerate(link_el.findall("collision")):
        geom_name = col.get("name") or f"{name}/{k}"
        rot, xyz = _origin(col, source, f"link '{name}' collision")
        geo = col.find("geometry")
        if geo is None or len(geo) == 0:
            raise ModelError(source, col.sourceline, f"link '{name}': <collision> has no geometry")
        if len(geo) > 1:
            raise ModelError(source, geo.sourceline, f"link '{name}': <geometry> holds more than one shape")
        shape = geo[0]
        tag = shape.tag
        if tag == "box":
            size = np.array(parse_vector(shape.get("size"), 3, source, shape, f"link '{name}' box size")) / 2.0
            kind = "box"
        elif tag == "sphere":
            size = np.array([parse_float(shape.get("radius"), source, shape, f"link '{name}' sphere radius"), 0, 0])
            kind = "sphere"
        elif tag in ("cylinder", "capsule"):
            r = parse_float(shape.get("radius"), source, shape, f"link '{name}' {tag} radius")
            length = parse_float(shape.get("length"), source, shape, f"link '{name}' {tag} length")
            size = np.array([r, length / 2.0, 0.0])
            kind = tag
        elif tag == "mesh":
            filename = shape.get("filename")
            if filename is None:
                raise ModelError(source, shape.sourceline, f"link '{name}': <mesh> has no filename")
            scale = np.ones(3)
            if shape.get("scale") is not None:
                scale = np.array(parse_vector(shape.get("scale"), 3, source, shape, f"link '{name}' mesh scale"))
                if np.any(scale == 0):  # a negative factor mirrors the mesh, as in Talos's right arm
                    raise ModelError(
                        source, shape.sourceline, f"link '{name}': mesh scale must be nonzero, got {scale.tolist()}"
                    )
            hull = None
            if meshes.mode == "convex_hull":
                path = resolve_mesh(filename, meshes.resource_dir, meshes.package_dirs, source, shape.sourceline)
                hull = convex_hull(path, scale, source, shape.sourceline, meshes.max_vertices)
            geoms.append(Geom(geom_name, "mesh", np.zeros(3), rot, xyz, mesh=filename, scale=scale, hull=hull))
            continue
        else:
            raise ModelError(source, shape.sourceline, f"link '{name}': unknown geometry <{tag}>")
        if np.any(size < 0):
            raise ModelError(source, shape.sourceline, f"link '{name}': negative {tag} size")
        geoms.append(Geom(geom_name, kind, size, rot, xyz))
    return geoms


def _parse_joint(el, source: str, links: dict) -> Joint:
    name = el.get("name")
    if not name:
        raise ModelError(source, el.sourceline, "<joint> has no name")
    kind = el.get("type")
    if kind is None:
        raise ModelError(source, el.sourceline, f"joint '{name}' has no type")
    if kind not in JOINT_TYPES:
        raise ModelError(source, el.sourceline, f"joint '{name}' has the unknown type {brief_repr(kind)}")
    if kind == "planar":
        raise ModelError(source, el.sourceline, f"joint '{name}': planar joints are not supported")
    ends = _joint_ends(el, source, name, links)
    rot, xyz = _origin(el, source, f"joint '{name}'")
    axis = _joint_axis(el, source, name, kind)
    lower, upper, effort, velocity = _joint_limits(el, source, name, kind)
    damping, friction, rotor = _joint_dynamics(el, source, name)
    if el.find("mimic") is not None:
        warnings.warn(
            f"{source}:{el.sourceline}: joint '{name}' has <mimic>, which jaxmor does not support: "
            "the joint stays independent",
            stacklevel=5,
        )
    return Joint(
        name,
        el.sourceline,
        kind,
        ends["parent"],
        ends["child"],
        rot,
        xyz,
        axis,
        lower,
        upper,
        effort,
        velocity,
        damping,
        friction,
        rotor,
    )


def _joint_ends(el, source: str, name: str, links: dict) -> dict[str, str]:
    """The joint's ``{"parent": link, "child": link}``, both links of ``links``."""
    ends = {}
    for tag in ("parent", "child"):
        sub = el.find(tag)
        if sub is None or sub.get("link") is None:
            raise ModelError(source, el.sourceline, f"joint '{name}' has no <{tag} link=...>")
        link = sub.get("link")
        if link not in links:
            raise ModelError(source, sub.sourceline, f"joint '{name}' names a missing {tag} link {brief_repr(link)}")
        ends[tag] = link
    return ends


def _joint_axis(el, source: str, name: str, kind: str) -> np.ndarray:
    """The joint's unit ``<axis xyz>``; x for a joint without one or of a type that has none."""
    axis = np.array([1.0, 0.0, 0.0])
    axis_el = el.find("axis")
    if axis_el is not None and kind in ("revolute", "continuous", "prismatic"):
        axis = np.array(parse_vector(axis_el.get("xyz"), 3, source, axis_el, f"joint '{name}' axis"))
        norm = np.linalg.norm(axis)
        if norm < 1e-9:
            raise ModelError(source, axis_el.sourceline, f"joint '{name}' has a zero-length axis")
        axis = axis / norm
    return axis


def _joint_limits(el, source: str, name: str, kind: str) -> tuple[float, float, float, float]:
    """The joint's ``<limit>``: ``(lower, upper, effort, velocity)``, infinite where it sets none."""
    lower, upper, effort, velocity = -math.inf, math.inf, math.inf, math.inf
    limit = el.find("limit")
    if kind in ("revolute", "prismatic") and limit is None:
        raise ModelError(source, el.sourceline, f"{kind} joint '{name}' has no <limit>")
    if limit is not None and kind in ("revolute", "continuous", "prismatic"):
        if kind != "continuous":
            lower = parse_float(limit.get("lower", "0"), source, limit, f"joint '{name}' limit lower")
            upper = parse_float(limit.get("upper", "0"), source, limit, f"joint '{name}' limit upper")
            if lower > upper:
                raise ModelError(source, limit.sourceline, f"joint '{name}' has limit lower {lower} > upper {upper}")
        for attr in ("effort", "velocity"):
            if limit.get(attr) is None and kind != "continuous":
                raise ModelError(source, limit.sourceline, f"joint '{name}' <limit> has no {attr}")
        effort = nonnegative(limit, "effort", source, math.inf, f"joint '{name}' limit effort")
        velocity = nonnegative(limit, "velocity", source, math.inf, f"joint '{name}' limit velocity")
    return lower, upper, effort, velocity


def _joint_dynamics(el, source: str, name: str) -> tuple[float, float, float]:
    """The joint's ``<dynamics>``: ``(damping, friction, rotor_inertia)``, zero where it sets none."""
    damping = friction = rotor = 0.0
    dyn = el.find("dynamics")
    if dyn is not None:
        damping = nonnegative(dyn, "damping", source, 0.0, f"joint '{name}' damping")
        friction = nonnegative(dyn, "friction", source, 0.0, f"joint '{name}' friction")
        rotor = nonnegative(dyn, "rotor_inertia", source, 0.0, f"joint '{name}' rotor_inertia")
    return damping, friction, rotor


def parse_urdf(
    path_or_xml: str | os.PathLike,
    *,
    resource_dir: str | os.PathLike | None = None,
    actuator_dirs: Sequence[str | os.PathLike] = (),
    strict: bool = False,
    meshes: str = "convex_hull",
    package_dirs: Sequence[str | os.PathLike] = (),
    max_hull_vertices: int = MAX_HULL_VERTICES,
) -> RobotDescription:
    """Read a URDF file or string into a :class:`RobotDescription`.

    Args:
        path_or_xml: a file path, or the URDF text itself (a string starting with ``<``).
        resource_dir: directory that takes the place of the URDF's directory for a URDF string
            (actuator files are searched relative to it). For a file, defaults to its directory.
        actuator_dirs: more directory trees where actuator files may be read (see
            :func:`jaxmor.io.actuators.resolve_actuator_file`).
        strict: refuse an indefinite inertia tensor instead of repairing it with a warning, even within
            :data:`INERTIA_TOLERANCE` (module docstring).
        meshes: ``"convex_hull"`` (default): every ``<mesh>`` collision is read and simulated as its convex
            hull (:mod:`jaxmor.io.mesh`; needs the optional ``trimesh`` and ``scipy``); ``"ignore"``: meshes
            are kept by name only (``Model.mesh_geoms``), with a warning, and do not collide.
        package_dirs: folders where ``package://`` mesh URIs are looked up first (:mod:`jaxmor.io.mesh`).
        max_hull_vertices: the most vertices of a mesh's simulated hull (an int ``>= 4``; default 64); a hull
            with more is simplified (:mod:`jaxmor.io.mesh`).

    Returns:
        The description: links and joints in document order, the root link, the actuators.

    Raises:
        ModelError: the description is invalid; the message names the file and line.
    """
    root, source = parse_xml(path_or_xml)
    robot_name = _robot_name(root, source)
    if resource_dir is None and source != STRING_SOURCE:
        resource_dir = str(Path(source).resolve().parent)
    mesh_options = _mesh_options(meshes, resource_dir, package_dirs, max_hull_vertices)
    materials = robot_materials(root, source)

    def resolve(uri: str, line: int):
        return resolve_mesh(uri, mesh_options.resource_dir, mesh_options.package_dirs, source, line)

    links: dict[str, Link] = {}
    inertia_lines: dict[str, int] = {}
    for el in root.findall("link"):
        if len(links) == MAX_LINKS:
            raise ModelError(source, el.sourceline, f"the robot has more than {MAX_LINKS} links")
        name = el.get("name")
        if not name:
            raise ModelError(source, el.sourceline, "<link> has no name")
        if name in links:
            raise ModelError(source, el.sourceline, f"duplicate link name '{name}'")
        inertial, inertia_lines[name] = _parse_inertial(el, name, source)
        links[name] = Link(name, el.sourceline, inertial, _parse_geoms(el, name, source, mesh_options))
        links[name].visuals = parse_visuals(el, name, source, _origin, resolve, materials)
    if not links:
        raise ModelError(source, root.sourceline, "the robot has no links")
    _check_inertias(links, inertia_lines, source, strict)

    joints, parent_joint = _parse_joints(root, source, links)

    root_link = _tree_root(links, joints, parent_joint, source)
    actuators = parse_actuators(root, source, base_dir=resource_dir, extra_dirs=actuator_dirs)
    description = RobotDescription(
        robot_name, source, root.sourceline, list(links.values()), list(joints.values()), root_link, actuators
    )
    description.residual = read_residual(root, source, base_dir=resource_dir, extra_dirs=actuator_dirs)
    _parse_ground_contact(root, source, description)
    _parse_disable_collisions(root, source, description)
    return description


def _robot_name(root, source: str) -> str:
    """The name of the ``<robot>`` root element."""
    if root.tag != "robot":
        raise ModelError(source, root.sourceline, f"the root element is <{root.tag}>, not <robot>")
    robot_name = root.get("name")
    if not robot_name:
        raise ModelError(source, root.sourceline, "<robot> has no name")
    return robot_name


def _mesh_options(meshes: str, resource_dir, package_dirs, max_vertices: int = MAX_HULL_VERTICES) -> MeshOptions:
    """The checked ``meshes`` mode and the folders where mesh files are looked up."""
    if meshes not in MESH_MODES:
        raise ArgumentError(f"meshes must be one of {MESH_MODES}, got {meshes!r}")
    if isinstance(package_dirs, (str, bytes, os.PathLike)):
        raise ArgumentError(f"package_dirs must be a list of folders, got {package_dirs!r}")
    folder = None if resource_dir is None else str(resource_dir)
    return MeshOptions(meshes, folder, tuple(str(d) for d in package_dirs), check_max_vertices(max_vertices))


def _parse_joints(root, source: str, links: dict[str, Link]) -> tuple[dict[str, Joint], dict[str, Joint]]:
    """The ``<joint>`` elements by name, and each child link's joint; at most one parent a link."""
    joints: dict[str, Joint] = {}
    parent_joint: dict[str, Joint] = {}
    for el in root.findall("joint"):
        joint = _parse_joint(el, source, links)
        if joint.name in joints:
            raise ModelError(source, el.sourceline, f"duplicate joint name '{joint.name}'")
        if joint.child in parent_joint:
            other = parent_joint[joint.child]
            raise ModelError(
                source,
                el.sourceline,
                f"link '{joint.child}' has two parents: joint '{joint.name}' and joint '{other.name}' "
                f"(line {other.line})",
            )
        if joint.child == joint.parent:
            raise ModelError(source, el.sourceline, f"joint '{joint.name}' connects link '{joint.child}' to itself")
        joints[joint.name] = joint
        parent_joint[joint.child] = joint
    return joints, parent_joint


def _parse_disable_collisions(root, source: str, description: RobotDescription) -> None:
    """The ``<disable_collisions link1 link2>`` pairs, appended to ``description.disable_collisions``."""
    for el in root.findall("disable_collisions"):
        ends = (el.get("link1"), el.get("link2"))
        if not all(ends):
            raise ModelError(source, el.sourceline, "<disable_collisions> needs link1 and link2")
        description.disable_collisions.append((ends[0], ends[1], el.sourceline))


def _parse_ground_contact(root, source: str, description: RobotDescription) -> None:
    """jaxmor's ``<ground_contact names="a b *_foot"/>``: the geoms that touch the ground (at most one element)."""
    elements = root.findall("ground_contact")
    if len(elements) > 1:
        raise ModelError(source, elements[1].sourceline, "more than one <ground_contact> element")
    if not elements:
        return
    el = elements[0]
    names = (el.get("names") or "").split()
    if not names:
        raise ModelError(source, el.sourceline, '<ground_contact> needs names="..." (geom or link names or patterns)')
    description.ground_contact = names
    description.ground_contact_line = el.sourceline


def _tree_root(links: dict[str, Link], joints: dict[str, Joint], parent_joint: dict[str, Joint], source: str) -> str:
    """The root link of a tree of links; every link reached from it, ``world`` only at the root.

    Raises:
        ModelError: no root (a cycle), several roots, a cycle beside the tree, or ``world`` not at the root.
    """
    roots = [name for name in links if name not in parent_joint]
    if not roots:
        j = next(iter(joints.values()))
        raise ModelError(source, j.line, f"the joints form a cycle (no root link); e.g. joint '{j.name}'")
    if len(roots) > 1:
        raise ModelError(
            source, links[roots[1]].line, f"the robot has several root links: {', '.join(repr(r) for r in roots)}"
        )
    root_link = roots[0]
    children: dict[str, list[Joint]] = {name: [] for name in links}
    for joint in joints.values():
        children[joint.parent].append(joint)
    reached = {root_link}
    stack = [root_link]
    while stack:
        for joint in children[stack.pop()]:
            reached.add(joint.child)
            stack.append(joint.child)
    if len(reached) != len(links):
        lost = [j for j in joints.values() if j.child not in reached]
        raise ModelError(source, lost[0].line, f"the joints form a cycle through joint '{lost[0].name}'")
    if "world" in links and root_link != "world":
        raise ModelError(source, parent_joint["world"].line, "the link 'world' must be the root of the tree")
    return root_link
