"""URDF -> :class:`jaxmor.Model`.

What is read:

* ``<link>``: ``<inertial>`` (origin xyz/rpy, mass, full inertia tensor) and every ``<collision>``
  (box, sphere, cylinder, capsule; meshes are kept by name in ``Model.mesh_geoms`` and reported by
  a warning, they are not simulated). ``<visual>`` is ignored.
* ``<joint>`` of type ``revolute``, ``continuous``, ``prismatic``, ``fixed`` and ``floating``
  (a floating joint is allowed only from the ``world`` link; it becomes the free base). ``planar``
  is rejected. Origin, axis (normalized; a zero axis is an error), ``<limit lower upper effort
  velocity>`` (required for revolute and prismatic joints, as in the URDF standard; missing
  ``lower``/``upper`` default to 0 as in urdfdom), ``<dynamics damping friction rotor_inertia>``.
  ``rotor_inertia`` is jaxmor's extension: the reflected rotor inertia ``G^2 J_rotor`` added to
  the joint's diagonal of the mass matrix. ``<mimic>`` is not supported: the joint stays
  independent (as in Pinocchio) and a warning says so.
* ``<actuator>`` elements (see :mod:`jaxmor.io.actuators`). ROS ``<transmission>`` and
  ``<gazebo>`` elements are ignored.

Structure: bodies joined by fixed joints are merged for dynamics (their inertias are combined)
but every link keeps its frame. A tree rooted at a link named ``world`` has a fixed base;
otherwise the root link floats on a free joint. ``floating_base`` overrides this: ``False``
welds a free root to the world (a ``floating`` joint from ``world`` included), ``True`` turns the
fixed joint from ``world`` into a free joint.

Validation: every error names the file (or ``"<string>"``) and the line of the offending element:
malformed XML, missing or duplicate names, unknown links or joint types, a link with two parents,
cycles, several roots, negative mass, an inertia with a negative principal moment (beyond a
round-off of 1e-9 of the largest), non-finite or malformed numbers, negative limits or
losses, ``lower > upper``. An inertia that breaks the triangle inequality of its principal
moments, or a singular one (a point mass or a thin rod; example-robot-data's Go1 base has one), is
physically degenerate but common in shipped models: it is accepted with a warning. An all-zero
tensor is a point mass and accepted silently.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jaxmor.actuation import compile_actuators, empty_actuators
from jaxmor.affine import empty_affine
from jaxmor.errors import ModelError
from jaxmor.io.actuators import parse_actuators
from jaxmor.io.xml import parse_float, parse_vector, parse_xml
from jaxmor.math import rpy_to_rotation_np
from jaxmor.types import JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE, Model

#: Friction coefficient of a collision geom (URDF has none); change it with ``jaxmor.set_geom_properties``.
DEFAULT_FRICTION = 0.8

#: Projected Gauss-Seidel sweeps per step; change with ``model.replace(solver_iterations=...)``.
DEFAULT_SOLVER_ITERATIONS = 30

_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


@dataclass
class _Inertial:
    mass: float
    com: np.ndarray  # link frame
    inertia: np.ndarray  # about the COM, link axes


@dataclass
class _Geom:
    name: str
    kind: str
    size: np.ndarray
    rotation: np.ndarray  # in the link frame
    translation: np.ndarray
    mesh: str = ""


@dataclass
class _Link:
    name: str
    line: int
    inertial: _Inertial | None
    geoms: list[_Geom]


@dataclass
class _Joint:
    name: str
    line: int
    kind: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    effort: float
    velocity: float
    damping: float
    friction: float
    rotor_inertia: float


@dataclass
class _Body:
    link: str
    parent: int
    joint: _Joint | None
    kind: str
    tree_rotation: np.ndarray
    tree_translation: np.ndarray
    masses: list = field(default_factory=list)  # (mass, com in body frame, inertia about com in body axes)


def _origin(element, source: str, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """The ``<origin>`` child of ``element``; ``owner`` (e.g. ``"joint 'knee'"``) names it in errors."""
    origin = element.find("origin")
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = parse_vector(origin.get("xyz"), 3, source, origin, f"{owner} origin xyz", default=(0.0, 0.0, 0.0))
    rpy = parse_vector(origin.get("rpy"), 3, source, origin, f"{owner} origin rpy", default=(0.0, 0.0, 0.0))
    return rpy_to_rotation_np(rpy), np.array(xyz)


def _nonnegative(element, attr: str, source: str, default: float, what: str) -> float:
    text = element.get(attr)
    if text is None:
        return default
    value = parse_float(text, source, element, what)
    if value < 0:
        raise ModelError(source, element.sourceline, f"{what} must not be negative, got {value}")
    return value


def _parse_inertial(link_el, name: str, source: str) -> _Inertial | None:
    el = link_el.find("inertial")
    if el is None:
        return None
    rot, xyz = _origin(el, source, f"link '{name}' inertial")
    mass_el = el.find("mass")
    if mass_el is None:
        raise ModelError(source, el.sourceline, f"link '{name}': <inertial> has no <mass>")
    mass = parse_float(mass_el.get("value"), source, mass_el, f"link '{name}' mass value")
    if mass < 0:
        raise ModelError(source, mass_el.sourceline, f"link '{name}' has a negative mass {mass}")
    in_el = el.find("inertia")
    if in_el is None:
        tensor = np.zeros((3, 3))
        in_line = el.sourceline
    else:
        in_line = in_el.sourceline
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
        scale = max(abs(eig[-1]), abs(eig[0]))
        if eig[0] < -1e-9 * scale:
            raise ModelError(
                source,
                in_line,
                f"link '{name}' has an inertia that is not positive definite (principal moments {eig.tolist()})",
            )
        if eig[0] <= 1e-9 * scale:
            warnings.warn(
                f"{source}:{in_line}: link '{name}' has a singular inertia (principal moments {eig.tolist()}); "
                "accepted as given",
                stacklevel=3,
            )
        elif eig[0] + eig[1] < eig[2] * (1.0 - 1e-6):
            warnings.warn(
                f"{source}:{in_line}: link '{name}' has principal moments {eig.tolist()} that break the "
                "triangle inequality (physically impossible); accepted as given",
                stacklevel=3,
            )
    return _Inertial(mass, xyz, rot @ tensor @ rot.T)


def _parse_geoms(link_el, name: str, source: str) -> list[_Geom]:
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
            geoms.append(_Geom(geom_name, "mesh", np.zeros(3), rot, xyz, mesh=filename))
            continue
        else:
            raise ModelError(source, shape.sourceline, f"link '{name}': unknown geometry <{tag}>")
        if np.any(size < 0):
            raise ModelError(source, shape.sourceline, f"link '{name}': negative {tag} size")
        geoms.append(_Geom(geom_name, kind, size, rot, xyz))
    return geoms


def _parse_joint(el, source: str, links: dict) -> _Joint:
    name = el.get("name")
    if not name:
        raise ModelError(source, el.sourceline, "<joint> has no name")
    kind = el.get("type")
    if kind is None:
        raise ModelError(source, el.sourceline, f"joint '{name}' has no type")
    if kind not in _JOINT_TYPES:
        raise ModelError(source, el.sourceline, f"joint '{name}' has the unknown type '{kind}'")
    if kind == "planar":
        raise ModelError(source, el.sourceline, f"joint '{name}': planar joints are not supported")
    ends = {}
    for tag in ("parent", "child"):
        sub = el.find(tag)
        if sub is None or sub.get("link") is None:
            raise ModelError(source, el.sourceline, f"joint '{name}' has no <{tag} link=...>")
        link = sub.get("link")
        if link not in links:
            raise ModelError(source, sub.sourceline, f"joint '{name}' names a missing {tag} link '{link}'")
        ends[tag] = link
    rot, xyz = _origin(el, source, f"joint '{name}'")
    axis = np.array([1.0, 0.0, 0.0])
    axis_el = el.find("axis")
    if axis_el is not None and kind in ("revolute", "continuous", "prismatic"):
        axis = np.array(parse_vector(axis_el.get("xyz"), 3, source, axis_el, f"joint '{name}' axis"))
        norm = np.linalg.norm(axis)
        if norm < 1e-9:
            raise ModelError(source, axis_el.sourceline, f"joint '{name}' has a zero-length axis")
        axis = axis / norm
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
        effort = _nonnegative(limit, "effort", source, math.inf, f"joint '{name}' limit effort")
        velocity = _nonnegative(limit, "velocity", source, math.inf, f"joint '{name}' limit velocity")
    damping = friction = rotor = 0.0
    dyn = el.find("dynamics")
    if dyn is not None:
        damping = _nonnegative(dyn, "damping", source, 0.0, f"joint '{name}' damping")
        friction = _nonnegative(dyn, "friction", source, 0.0, f"joint '{name}' friction")
        rotor = _nonnegative(dyn, "rotor_inertia", source, 0.0, f"joint '{name}' rotor_inertia")
    if el.find("mimic") is not None:
        warnings.warn(
            f"{source}:{el.sourceline}: joint '{name}' has <mimic>, which jaxmor does not support: "
            "the joint stays independent",
            stacklevel=3,
        )
    return _Joint(
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


def _combine(masses) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, COM and inertia about the COM of point-free rigid parts (mass, com, inertia)."""
    total = sum(m for m, _, _ in masses)
    if total <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in masses) / total
    inertia = np.zeros((3, 3))
    for m, c, i in masses:
        d = c - com
        inertia += i + m * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, inertia


def load_urdf(
    path_or_xml: str | os.PathLike,
    *,
    resource_dir: str | os.PathLike | None = None,
    floating_base: bool | None = None,
) -> Model:
    """Load a URDF file or string into a :class:`Model`.

    Args:
        path_or_xml: a file path, or the URDF text itself (a string starting with ``<``).
        resource_dir: directory that takes the place of the URDF's directory for a URDF string
            (actuator files are searched relative to it). For a file, defaults to its directory.
        floating_base: ``None`` (default): the base floats unless the tree is rooted at a link named
            ``world``. ``False``: weld the root link to the world (a ``floating`` joint from ``world``
            becomes fixed). ``True``: make the fixed joint
            from ``world`` a free joint.

    Returns:
        The compiled model, with the actuators the URDF's ``<actuator>`` elements define.

    Raises:
        ModelError: the description is invalid; the message names the file and line.
    """
    root, source = parse_xml(path_or_xml)
    if root.tag != "robot":
        raise ModelError(source, root.sourceline, f"the root element is <{root.tag}>, not <robot>")
    robot_name = root.get("name")
    if not robot_name:
        raise ModelError(source, root.sourceline, "<robot> has no name")
    if resource_dir is None and source != "<string>":
        resource_dir = str(Path(source).resolve().parent)

    links: dict[str, _Link] = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise ModelError(source, el.sourceline, "<link> has no name")
        if name in links:
            raise ModelError(source, el.sourceline, f"duplicate link name '{name}'")
        links[name] = _Link(name, el.sourceline, _parse_inertial(el, name, source), _parse_geoms(el, name, source))
    if not links:
        raise ModelError(source, root.sourceline, "the robot has no links")

    joints: dict[str, _Joint] = {}
    parent_joint: dict[str, _Joint] = {}
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

    roots = [name for name in links if name not in parent_joint]
    if not roots:
        j = next(iter(joints.values()))
        raise ModelError(source, j.line, f"the joints form a cycle (no root link); e.g. joint '{j.name}'")
    if len(roots) > 1:
        raise ModelError(
            source, links[roots[1]].line, f"the robot has several root links: {', '.join(repr(r) for r in roots)}"
        )
    root_link = roots[0]
    children: dict[str, list[_Joint]] = {name: [] for name in links}
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

    world_rooted = root_link == "world"
    weld_floating = floating_base is False  # also welds a URDF floating joint from 'world'
    if floating_base is None:
        floating_base = not world_rooted

    bodies: list[_Body] = []
    link_body: dict[str, int] = {}
    link_frame: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # link in its body's frame

    def new_body(link: str, parent: int, joint: _Joint | None, kind: str, rot, xyz) -> None:
        bodies.append(_Body(link, parent, joint, kind, rot, xyz))
        link_body[link] = len(bodies) - 1
        link_frame[link] = (np.eye(3), np.zeros(3))

    if world_rooted:
        link_body["world"] = -1
        link_frame["world"] = (np.eye(3), np.zeros(3))
    elif floating_base:
        new_body(root_link, -1, None, JOINT_FREE, np.eye(3), np.zeros(3))
    else:
        link_body[root_link] = -1
        link_frame[root_link] = (np.eye(3), np.zeros(3))

    def visit(link: str) -> None:
        body = link_body[link]
        r_lb, p_lb = link_frame[link]
        ordered = sorted(children[link], key=lambda j: j.kind not in ("floating",) if link == "world" else 0)
        for joint in ordered:
            rot = r_lb @ joint.rotation
            xyz = r_lb @ joint.translation + p_lb
            kind = joint.kind
            if kind == "fixed" and link == "world" and floating_base:
                kind = "floating"
            elif kind == "floating" and link == "world" and weld_floating:
                kind = "fixed"
            if kind == "floating":
                if link != "world":
                    raise ModelError(
                        source, joint.line, f"joint '{joint.name}': a floating joint must start at 'world'"
                    )
                if any(b.kind == JOINT_FREE for b in bodies):
                    raise ModelError(source, joint.line, f"joint '{joint.name}': only one floating base is supported")
                if not (np.allclose(joint.rotation, np.eye(3)) and np.allclose(joint.translation, 0.0)):
                    what = (
                        "a floating joint"
                        if joint.kind == "floating"
                        else "a fixed joint made free by floating_base=True"
                    )
                    raise ModelError(
                        source,
                        joint.line,
                        f"joint '{joint.name}': {what} needs an identity origin (the base pose is given by q)",
                    )
                new_body(joint.child, -1, joint, JOINT_FREE, np.eye(3), np.zeros(3))
            elif kind == "fixed":
                link_body[joint.child] = body
                link_frame[joint.child] = (rot, xyz)
            else:
                jt = JOINT_PRISMATIC if kind == "prismatic" else JOINT_REVOLUTE
                new_body(joint.child, body, joint, jt, rot, xyz)
            visit(joint.child)

    visit(root_link)
    if world_rooted and floating_base and not any(b.kind == JOINT_FREE for b in bodies):
        raise ModelError(
            source,
            links["world"].line,
            "floating_base=True needs a fixed or floating joint from 'world' to free, and there is none",
        )

    # Masses of all links, expressed in their bodies' frames.
    for name, link in links.items():
        b = link_body[name]
        if b < 0 or link.inertial is None:
            continue
        r_lb, p_lb = link_frame[name]
        ine = link.inertial
        bodies[b].masses.append((ine.mass, r_lb @ ine.com + p_lb, r_lb @ ine.inertia @ r_lb.T))

    nb = len(bodies)
    q_start, v_start, nq, nv = [], [], 0, 0
    dof = {k: [] for k in ("armature", "damping", "friction", "effort", "velocity", "lower", "upper")}
    joint_names = []
    for body in bodies:
        q_start.append(nq)
        v_start.append(nv)
        if body.kind == JOINT_FREE:
            nq, nv = nq + 7, nv + 6
            for k, val in (
                ("armature", 0.0),
                ("damping", 0.0),
                ("friction", 0.0),
                ("effort", math.inf),
                ("velocity", math.inf),
                ("lower", -math.inf),
                ("upper", math.inf),
            ):
                dof[k].extend([val] * 6)
        else:
            j = body.joint
            nq, nv = nq + 1, nv + 1
            joint_names.append(j.name)
            for k, val in (
                ("armature", j.rotor_inertia),
                ("damping", j.damping),
                ("friction", j.friction),
                ("effort", j.effort),
                ("velocity", j.velocity),
                ("lower", j.lower),
                ("upper", j.upper),
            ):
                dof[k].append(val)

    mass, com, inertia = [], [], []
    for body in bodies:
        m, c, i = _combine(body.masses)
        mass.append(m)
        com.append(c)
        inertia.append(i)
    for b, body in enumerate(bodies):
        if mass[b] <= 0.0 and not any(bodies[c].parent == b for c in range(nb)) and dof["armature"][v_start[b]] <= 0:
            joint = body.joint
            line = links[body.link].line
            warnings.warn(
                f"{source}:{line}: body '{body.link}' moved by joint '{joint.name if joint else 'free'}' has no mass "
                "and no rotor inertia: the mass matrix is singular",
                stacklevel=2,
            )

    link_names = [n for n in links if n != "world"]
    link_names_sorted = sorted(link_names, key=lambda n: (link_body[n], list(links).index(n)))
    geom_type, geom_link, geom_size, geom_rot, geom_pos, mesh_geoms, geom_names = [], [], [], [], [], [], []
    # Geoms of the 'world' link itself (static obstacles) come first, with link index -1.
    geom_owners = ([(-1, "world")] if world_rooted else []) + list(enumerate(link_names_sorted))
    for li, name in geom_owners:
        r_lb, p_lb = link_frame[name]
        for g in links[name].geoms:
            if g.kind == "mesh":
                mesh_geoms.append((name, g.mesh))
                continue
            geom_type.append(g.kind)
            geom_names.append(g.name)
            geom_link.append(li)
            geom_size.append(g.size)
            geom_rot.append(r_lb @ g.rotation)
            geom_pos.append(r_lb @ g.translation + p_lb)
    if mesh_geoms:
        warnings.warn(
            f"{source}: {len(mesh_geoms)} mesh collision geom(s) are kept by name but not simulated "
            f"(first: link '{mesh_geoms[0][0]}', {mesh_geoms[0][1]})",
            stacklevel=2,
        )

    def arr(x, shape):
        return jnp.asarray(np.asarray(x, dtype=np.float64).reshape(shape))

    model = Model(
        name=robot_name,
        source=source,
        nq=nq,
        nv=nv,
        floating_base=bool(bodies) and bodies[0].kind == JOINT_FREE,
        body_names=tuple(b.link for b in bodies),
        body_parent=tuple(b.parent for b in bodies),
        body_joint_type=tuple(b.kind for b in bodies),
        body_joint_name=tuple(b.joint.name if b.joint else "" for b in bodies),
        body_q_start=tuple(q_start),
        body_v_start=tuple(v_start),
        joint_names=tuple(joint_names),
        link_names=tuple(link_names_sorted),
        link_body=tuple(link_body[n] for n in link_names_sorted),
        geom_type=tuple(geom_type),
        geom_link=tuple(geom_link),
        geom_names=tuple(geom_names),
        geom_body=tuple(-1 if li < 0 else link_body[link_names_sorted[li]] for li in geom_link),
        mesh_geoms=tuple(mesh_geoms),
        urdf_joints=tuple((j.name, j.kind) for j in joints.values()),
        ground=False,
        contact_pairs=(),
        solver_iterations=DEFAULT_SOLVER_ITERATIONS,
        body_tree_rotation=arr([b.tree_rotation for b in bodies], (nb, 3, 3)),
        body_tree_translation=arr([b.tree_translation for b in bodies], (nb, 3)),
        body_axis=arr([b.joint.axis if b.kind != JOINT_FREE else np.zeros(3) for b in bodies], (nb, 3)),
        body_mass=arr(mass, (nb,)),
        body_com=arr(com, (nb, 3)),
        body_inertia=arr(inertia, (nb, 3, 3)),
        link_rotation=arr([link_frame[n][0] for n in link_names_sorted], (len(link_names_sorted), 3, 3)),
        link_translation=arr([link_frame[n][1] for n in link_names_sorted], (len(link_names_sorted), 3)),
        geom_size=arr(geom_size, (len(geom_type), 3)),
        geom_rotation=arr(geom_rot, (len(geom_type), 3, 3)),
        geom_translation=arr(geom_pos, (len(geom_type), 3)),
        geom_friction=arr([DEFAULT_FRICTION] * len(geom_type), (len(geom_type),)),
        geom_restitution=arr([0.0] * len(geom_type), (len(geom_type),)),
        dof_armature=arr(dof["armature"], (nv,)),
        dof_damping=arr(dof["damping"], (nv,)),
        dof_friction=arr(dof["friction"], (nv,)),
        dof_effort_limit=arr(dof["effort"], (nv,)),
        dof_velocity_limit=arr(dof["velocity"], (nv,)),
        dof_lower=arr(dof["lower"], (nv,)),
        dof_upper=arr(dof["upper"], (nv,)),
        gravity=arr([0.0, 0.0, -9.81], (3,)),
        timestep=arr(1e-3, ()),
        ground_height=arr(0.0, ()),
        ground_friction=arr(DEFAULT_FRICTION, ()),
        ground_restitution=arr(0.0, ()),
        actuators=empty_actuators(nv),
        affine=empty_affine(),
    )
    definitions = parse_actuators(root, source, base_dir=resource_dir)
    if definitions:
        model = model.replace(actuators=compile_actuators(model, definitions))
    return model
