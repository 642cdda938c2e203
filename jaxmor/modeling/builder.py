"""The model builder: a robot description compiled into a :class:`~jaxmor.Model`.

Loading is parse -> reduce -> compile:

1. a reader (:func:`jaxmor.io.urdf.parse_urdf`) turns a file into a
   :class:`~jaxmor.io.description.RobotDescription`;
2. :func:`reduce` merges the links joined by fixed joints into bodies (their inertias combined), each
   moved by one joint, and decides the base: a tree rooted at a link named ``world`` has a fixed base,
   otherwise the root link floats on a free joint (``floating_base`` overrides: ``False`` welds a free
   root to the world, a ``floating`` joint from ``world`` included; ``True`` turns the fixed joint from
   ``world`` into a free joint). Every ``floating`` joint from ``world`` makes a free body (a robot and
   objects, several robots), their coordinates in document order after the bodies welded to ``world``;
3. :func:`build_model` compiles the bodies into arrays and the topology into static index tables
   (:func:`topology_tables`), so the simulation never re-derives them, and compiles the actuators
   (:func:`jaxmor.actuation.compile.compile_actuators`).

Every problem found here names the description's file and the line of the element concerned.
The traversal is iterative (no recursion limit) and linear in the number of links.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.affine import AffineActuatorDefinition, compile_affine, empty_affine
from jaxmor.actuation.compile import (
    check_representable,
    compile_actuators,
    empty_actuators,
    with_backlash_definitions,
)
from jaxmor.actuation.latency import fitted_max_delay
from jaxmor.checks import model_dtype
from jaxmor.errors import ArgumentError, ModelError
from jaxmor.io.description import Joint, RobotDescription, combine_masses
from jaxmor.io.mesh import MAX_HULL_VERTICES, ellipsoid_hull, padded
from jaxmor.io.mjcf import parse_mjcf
from jaxmor.io.mjcf_actuators import delay_steps
from jaxmor.io.mjcf_differences import MujocoDifferenceWarning, self_collision_line
from jaxmor.io.mjcf_pairs import difference_line
from jaxmor.io.urdf import POINT_MASS_FLOOR, POINT_MASS_RADIUS, parse_urdf
from jaxmor.model import collision_candidates, exclusion_pairs, match_geoms
from jaxmor.modeling.equality import compile_equalities
from jaxmor.modeling.height_field import with_height_field
from jaxmor.modeling.learned import residual_from_file
from jaxmor.modeling.sensors import compile_sensors, compile_sites
from jaxmor.modeling.tendons import compile_tendons, with_tendon_couplings
from jaxmor.modeling.terrain import binned
from jaxmor.sim.collision import check_pairs, combine_friction, pair_supported
from jaxmor.types import Battery, GeomType, JointType, Keyframe, Model, Options

#: Friction coefficient of a collision geom whose description gives none (URDF never does); change it
#: with ``jaxmor.with_geom_properties``.
DEFAULT_FRICTION = 0.8
#: Projected Gauss-Seidel sweeps per step of the velocity pass (``Model.opt.solver_iterations``) and of
#: the position pass (``Model.opt.position_iterations``), chosen from measured residuals
#: (``docs/design/solver.md``).
DEFAULT_SOLVER_ITERATIONS = 20
DEFAULT_POSITION_ITERATIONS = 10
#: Options.solver of a loaded model (tests/conftest.py's ``--solver`` sets it for a test run).
DEFAULT_SOLVER = "auto"
#: Gap within which a contact candidate counts for the budget's overflow [m] (``Model.opt.contact_reach``).
DEFAULT_CONTACT_REACH = 0.01
#: Time step [s] (``Model.opt.timestep``).
DEFAULT_TIMESTEP = 1e-3
#: Gravitational acceleration [m/s^2] (``Model.opt.gravity``).
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)


def load_urdf(
    path_or_xml: str | os.PathLike,
    *,
    resource_dir: str | os.PathLike | None = None,
    floating_base: bool | None = None,
    actuator_dirs: Sequence[str | os.PathLike] = (),
    strict: bool = False,
    meshes: str = "convex_hull",
    package_dirs: Sequence[str | os.PathLike] = (),
    max_hull_vertices: int = MAX_HULL_VERTICES,
) -> Model:
    """Load a URDF file or string into a :class:`Model` (:func:`~jaxmor.io.urdf.parse_urdf`, then :func:`build_model`).

    Args:
        path_or_xml: a file path, or the URDF text itself (a string starting with ``<``).
        resource_dir: directory that takes the place of the URDF's directory for a URDF string
            (actuator files are searched relative to it). For a file, defaults to its directory.
        actuator_dirs: more directory trees where actuator files may be read. Without them, a robot
            description reads actuator files only within its own directory tree and the spec's search
            path (:func:`jaxmor.io.actuators.resolve_actuator_file`): a downloaded file cannot open
            ``/etc/passwd``.
        floating_base: ``None`` (default): the base floats unless the tree is rooted at a link named
            ``world``. ``False``: weld the root link to the world (a ``floating`` joint from ``world``
            becomes fixed). ``True``: make the fixed joint from ``world`` a free joint.
        strict: refuse an indefinite inertia tensor (:class:`ModelError`) instead of repairing it with
            a warning (:mod:`jaxmor.io.urdf`).
        meshes: ``"convex_hull"`` (default): ``<mesh>`` collisions are simulated as their convex hulls
            (:mod:`jaxmor.io.mesh`; needs ``pip install 'jaxmor[mesh]'``); ``"ignore"``: they are kept by
            name (``Model.mesh_geoms``) with a warning and do not collide.
        package_dirs: folders where ``package://`` mesh URIs are looked up first (:mod:`jaxmor.io.mesh`).
        max_hull_vertices: the most vertices of a mesh's simulated hull (an int ``>= 4``, default 64): a hull
            with more is simplified to that many of its vertices. More keeps fine geometry (a humanoid's flat
            soles: TALOS's have 156) at the cost of every hull of the model, all padded to the largest.

    Returns:
        The compiled model, with the actuators the URDF's ``<actuator>`` elements define.

    Raises:
        ModelError: the description is invalid, or a mesh file is missing or unreadable, or ``trimesh`` is
            not installed; the message names the file and line.
        ArgumentError: ``path_or_xml`` is neither a string nor an ``os.PathLike``; ``meshes`` is unknown;
            ``max_hull_vertices`` is not an int ``>= 4``.
    """
    description = parse_urdf(
        path_or_xml,
        resource_dir=resource_dir,
        actuator_dirs=actuator_dirs,
        strict=strict,
        meshes=meshes,
        package_dirs=package_dirs,
        max_hull_vertices=max_hull_vertices,
    )
    return build_model(description, floating_base=floating_base)


def load_mjcf(
    path_or_xml: str | os.PathLike,
    *,
    assets_dir: str | os.PathLike | None = None,
    self_collision: bool = False,
    meshes: str = "convex_hull",
    package_dirs: Sequence[str | os.PathLike] = (),
    actuator_dirs: Sequence[str | os.PathLike] = (),
    max_hull_vertices: int = MAX_HULL_VERTICES,
) -> Model:
    """Load an MJCF (MuJoCo XML) file or string into a :class:`Model` (:func:`~jaxmor.io.mjcf.parse_mjcf`, then
    :func:`build_model`, the builder URDFs go through).

    The model keeps the file's time step, gravity, joints (hinge, slide, free), inertias, joint damping,
    friction, armature and springs, collision geoms, ground plane, affine actuators (``motor``, ``position``,
    ``velocity``, ``general``) and keyframes; what jaxmor refuses or ignores, and why, is listed in
    :mod:`jaxmor.io.mjcf` and :mod:`jaxmor.io.mjcf_schema`. Contacts: the geoms whose ``contype``/``conaffinity``
    let them touch the plane touch the ground; the robot's geoms collide with the world's other geoms (static
    obstacles) where those bit masks let them; with ``self_collision=True`` they also collide with each
    other, as in MuJoCo (never parent and child, never what ``<exclude>`` or the bit masks keep apart). Friction
    combines as MuJoCo's does: the higher ``priority`` wins, equal ones take the larger (``Options.friction_rule``
    ``"max"``). New States start at MuJoCo's ``qpos0`` (``Model.q_default``: every hinge and slide at 0, limits
    or not, the free bodies where the file puts them); :func:`jaxmor.set_keyframe` starts from a keyframe.

    Args:
        path_or_xml: a file path, or the MJCF text itself (a string starting with ``<``).
        assets_dir: the folder that stands for the file's own for MJCF text (includes, meshes, actuator files);
            for a file, another folder whose tree may be read.
        self_collision: collide the robot's geoms with each other (default: only with the ground and the
            world's geoms, as a URDF's; :func:`jaxmor.with_self_collision` can turn it on later).
        meshes: ``"convex_hull"`` (default): collision meshes are simulated as their convex hulls (needs
            ``pip install 'jaxmor[mesh]'``); ``"ignore"``: kept by name only (``Model.mesh_geoms``).
        package_dirs: folders where ``package://`` mesh URIs are looked up first.
        actuator_dirs: more directory trees where jaxmor's actuator files may be read.
        max_hull_vertices: the most vertices of a mesh's simulated hull where its asset gives no ``maxhullvert``
            (an int ``>= 4``, default 64; as for :func:`load_urdf`).

    Returns:
        The compiled model.

    Raises:
        ModelError: the model is invalid or uses what jaxmor refuses; the message names the file and line.
        ArgumentError: ``path_or_xml`` is neither a string nor an ``os.PathLike``; ``meshes`` is unknown.
    """
    description = parse_mjcf(
        path_or_xml,
        assets_dir=assets_dir,
        meshes=meshes,
        package_dirs=package_dirs,
        actuator_dirs=actuator_dirs,
        max_hull_vertices=max_hull_vertices,
    )
    model = build_model(description)
    pairs, left_out = _mjcf_pairs(model, description, self_collision)
    lines = description.mujoco_differences + _pair_differences(model, description)
    lines += _fluid_differences(model, description) + _ellipsoid_pair_differences(model, pairs)
    lines += [self_collision_line(left_out)] if left_out else []
    if lines:
        listed = "".join(f"\n  - {line}" for line in lines)
        message = f"{description.source}: MuJoCo would simulate this file differently (docs/mjcf.md):{listed}"
        warnings.warn(message, MujocoDifferenceWarning, stacklevel=2)
    return binned(model.replace(contact_pairs=tuple(pairs)))


@dataclass
class Body:
    """A rigid body of the reduced tree: a link and the links welded to it.

    Attributes:
        link: the link whose frame is the body's frame.
        parent: the parent body, ``-1`` for the world.
        joint: the description's joint that moves the body (``None`` for an implicit floating base).
        kind: the joint's :class:`JointType`.
        tree_rotation, tree_translation: the joint frame in the parent body's frame.
        masses: ``(mass, com, inertia about the com)`` of every link welded to the body, body frame.
    """

    link: str
    parent: int
    joint: Joint | None
    kind: JointType
    tree_rotation: np.ndarray
    tree_translation: np.ndarray
    masses: list[tuple[float, np.ndarray, np.ndarray]] = field(default_factory=list)


@dataclass
class ReducedTree:
    """The bodies of a description after merging fixed joints.

    Attributes:
        bodies: parents before children (depth first, in document order).
        link_body: the body carrying each link, ``-1`` for links welded to the world.
        link_frame: each link's frame in its body's frame ``(rotation, translation)``.
    """

    bodies: list[Body]
    link_body: dict[str, int]
    link_frame: dict[str, tuple[np.ndarray, np.ndarray]]


def reduce(description: RobotDescription, floating_base: bool | None = None) -> ReducedTree:
    """Merge the links joined by fixed joints into bodies and decide the base (see the module docstring).

    Raises:
        ModelError: a floating joint not from ``world``, a free joint with a non-identity origin, or
            ``floating_base=True`` with nothing or more than one fixed joint from ``world`` to free (several
            ``floating`` joints from ``world`` make several free bodies).
    """
    source = description.source
    root = description.root
    world_rooted = root == "world"
    weld_floating = floating_base is False  # also welds a URDF floating joint from 'world'
    make_free = (not world_rooted) if floating_base is None else floating_base
    identity = (np.eye(3), np.zeros(3))
    tree = ReducedTree([], {}, {})

    def new_body(link: str, parent: int, joint: Joint | None, kind: JointType, rot, xyz) -> None:
        tree.bodies.append(Body(link, parent, joint, kind, rot, xyz))
        tree.link_body[link] = len(tree.bodies) - 1
        tree.link_frame[link] = identity

    if world_rooted or not make_free:
        tree.link_body[root] = -1
        tree.link_frame[root] = identity
    else:
        new_body(root, -1, None, JointType.FREE, np.eye(3), np.zeros(3))

    children = _joint_children(description)

    # Depth first, children in document order: each joint is compiled just before its subtree.
    stack = list(reversed(children[root]))
    while stack:
        joint = stack.pop()
        link = joint.parent
        body = tree.link_body[link]
        r_lb, p_lb = tree.link_frame[link]
        kind = joint.kind
        if kind == "fixed" and link == "world" and make_free:
            kind = "floating"
        elif kind == "floating" and link == "world" and weld_floating:
            kind = "fixed"
        if kind == "floating":
            _check_free_joint(joint, tree, source)
            new_body(joint.child, -1, joint, JointType.FREE, np.eye(3), np.zeros(3))
        elif kind == "fixed":
            tree.link_body[joint.child] = body
            tree.link_frame[joint.child] = (r_lb @ joint.rotation, r_lb @ joint.translation + p_lb)
        else:
            jt = {"prismatic": JointType.PRISMATIC, "ball": JointType.BALL}.get(kind, JointType.REVOLUTE)
            new_body(joint.child, body, joint, jt, r_lb @ joint.rotation, r_lb @ joint.translation + p_lb)
        stack.extend(reversed(children[joint.child]))

    if world_rooted and floating_base and not any(b.kind == JointType.FREE for b in tree.bodies):
        world_line = next(link.line for link in description.links if link.name == "world")
        raise ModelError(
            source,
            world_line,
            "floating_base=True needs a fixed or floating joint from 'world' to free, and there is none",
        )
    _add_link_masses(description, tree)
    return tree


def _joint_children(description: RobotDescription) -> dict[str, list[Joint]]:
    """Each link's child joints in document order; from a ``world`` root, its floating joints first."""
    root = description.root
    children: dict[str, list[Joint]] = {link.name: [] for link in description.links}
    for joint in description.joints:
        children[joint.parent].append(joint)
    # Floating joints from 'world' first, so the free base is body 0.
    children[root].sort(key=lambda j: j.kind != "floating" if root == "world" else 0)
    return children


def _add_link_masses(description: RobotDescription, tree: ReducedTree) -> None:
    """Append each link's inertial, in its body's frame, to the masses of the body that carries it."""
    for link in description.links:
        b = tree.link_body[link.name]
        if b < 0 or link.inertial is None:
            continue
        r_lb, p_lb = tree.link_frame[link.name]
        ine = link.inertial
        tree.bodies[b].masses.append((ine.mass, r_lb @ ine.com + p_lb, r_lb @ ine.inertia @ r_lb.T))


def _check_free_joint(joint: Joint, tree: ReducedTree, source: str) -> None:
    if joint.parent != "world":
        raise ModelError(source, joint.line, f"joint '{joint.name}': a floating joint must start at 'world'")
    if joint.kind == "fixed" and any(b.kind == JointType.FREE for b in tree.bodies):
        raise ModelError(
            source,
            joint.line,
            f"joint '{joint.name}': floating_base=True frees one fixed joint from 'world', and another one was "
            "freed already; make the joints to free floating joints instead",
        )
    if not (np.allclose(joint.rotation, np.eye(3)) and np.allclose(joint.translation, 0.0)):
        what = "a floating joint" if joint.kind == "floating" else "a fixed joint made free by floating_base=True"
        raise ModelError(
            source, joint.line, f"joint '{joint.name}': {what} needs an identity origin (the base pose is given by q)"
        )


#: Which velocities of a multi-DoF joint rotate its body: a free joint's angular ones, all of a ball joint's.
_ROTATIONAL = {JointType.FREE: [False] * 3 + [True] * 3, JointType.BALL: [True] * 3}


def topology_tables(body_parent: Sequence[int], body_joint_type: Sequence[JointType]) -> dict:
    """The static index tables of a tree of bodies (see :class:`~jaxmor.Model` for each field).

    Args:
        body_parent: parent of each body, ``-1`` for the world; parents precede children.
        body_joint_type: each body's joint type.

    Returns:
        A dict of Model fields: ``nq``, ``nv``, ``body_q_start``, ``body_v_start``,
        ``dof_body``, ``dof_rotational``, ``joint_q``, ``joint_u``, ``free_body``, ``free_q``, ``free_u``.
    """
    q_start, v_start, dof_body, rotational = [], [], [], []
    nq = nv = 0
    for b, kind in enumerate(body_joint_type):
        q_start.append(nq)
        v_start.append(nv)
        nq += kind.qpos_width()
        nv += kind.dof_width()
        dof_body += [b] * kind.dof_width()
        rotational += _ROTATIONAL.get(kind, [kind == JointType.REVOLUTE])
    free = [b for b, kind in enumerate(body_joint_type) if kind == JointType.FREE]
    hinges = [b for b, kind in enumerate(body_joint_type) if kind.dof_width() == 1]
    return {
        "nq": nq,
        "nv": nv,
        "body_q_start": tuple(q_start),
        "body_v_start": tuple(v_start),
        "dof_body": tuple(dof_body),
        "dof_rotational": tuple(rotational),
        "joint_q": tuple(q_start[b] for b in hinges),
        "joint_u": tuple(v_start[b] for b in hinges),
        "free_body": tuple(free),
        "free_q": tuple(q_start[b] for b in free),
        "free_u": tuple(v_start[b] for b in free),
    }


#: Each per-velocity joint property of :func:`_dof_arrays`: its Model field and its name in messages.
_DOF_FIELDS = {
    "armature": ("dof_armature", "joint rotor_inertia"),
    "damping": ("dof_damping", "joint damping"),
    "friction": ("dof_friction", "joint friction"),
    "effort": ("dof_effort_limit", "joint effort limit"),
    "velocity": ("dof_velocity_limit", "joint velocity limit"),
    "lower": ("dof_lower", "joint lower limit"),
    "upper": ("dof_upper", "joint upper limit"),
    "stiffness": ("dof_stiffness", "joint stiffness"),
    "ref": ("dof_springref", "joint springref"),
    "actuator_lower": ("dof_actuator_force_lower", "joint actuatorfrcrange"),
    "actuator_upper": ("dof_actuator_force_upper", "joint actuatorfrcrange"),
}


def build_model(description: RobotDescription, *, floating_base: bool | None = None) -> Model:
    """Compile a robot description into a :class:`Model` (see the module docstring).

    Args:
        description: what a reader returned.
        floating_base: ``None``, ``False`` or ``True``, as for :func:`load_urdf`.

    Returns:
        The model, with default options (:data:`DEFAULT_TIMESTEP`, :data:`DEFAULT_GRAVITY`,
        :data:`DEFAULT_SOLVER_ITERATIONS`), no ground, no self-collision, and the description's actuators.

    Raises:
        ModelError: a structural problem (:func:`reduce`) or an invalid actuator.
    """
    tree = reduce(description, floating_base)
    bodies = tree.bodies
    tables = topology_tables([b.parent for b in bodies], [b.kind for b in bodies])
    dof = _dof_arrays(bodies)
    masses = zip(*(combine_masses(body.masses) for body in bodies), strict=True) if bodies else ((), (), ())
    mass, com, inertia = masses
    _check_massless_joints(description, tree, mass, dof["armature"], tables["body_v_start"])
    position = {link.name: k for k, link in enumerate(description.links)}
    link_names = sorted((n for n in position if n != "world"), key=lambda n: (tree.link_body[n], position[n]))
    geoms = _geoms(description, tree, link_names)
    arr = _Arrays(description.source, model_dtype())
    options_line = description.options_line or description.line
    model = Model(
        **_static_fields(description, tree, link_names, geoms),
        opt=Options(
            timestep=arr(description.timestep or DEFAULT_TIMESTEP, (), "timestep", [options_line]),
            gravity=arr(description.gravity or DEFAULT_GRAVITY, (3,), "gravity", [options_line] * 3, True),
            friction_rule=description.friction_rule or "geometric_mean",
            solver_iterations=DEFAULT_SOLVER_ITERATIONS,
            position_iterations=DEFAULT_POSITION_ITERATIONS,
            solver=DEFAULT_SOLVER,
            contact_reach=arr(DEFAULT_CONTACT_REACH, ()),
            **_medium(description, arr, options_line),
        ),
        **_body_fields(description, tree, link_names, (mass, com, inertia), arr),
        **_geom_fields(geoms, arr),
        **_dof_fields(description, tree, tables, dof, arr),
        **tables,
        free_friction_u=tuple(v for v in tables["free_u"] if dof["friction"][v] > 0),
    )
    model = _collision_filters(model, description, geoms.descriptions, link_names)
    if description.ground is not None:
        model = _with_ground(model, description, geoms.descriptions, arr.dtype)
    if description.height_field is not None:
        model = _with_field(model, description)
    if description.tendons:
        model = model.replace(tendons=compile_tendons(model, description))
    if any(j.spring_damper for j in description.joints):
        model = _with_spring_dampers(model, description)
    if description.affine_actuators:
        model = model.replace(affine=_compile_affine(model, description))
    if description.actuators:
        model = model.replace(actuators=compile_actuators(model, description.actuators))
        model = with_backlash_definitions(model, description.actuators)
    model = fitted_max_delay(model)
    if description.residual is not None:
        model = residual_from_file(model, description.residual)
    if description.keyframes:
        model = model.replace(keyframes=tuple(_keyframe(model, description, k) for k in description.keyframes))
    model = model.replace(sites=compile_sites(description, link_names, arr.dtype))
    model = model.replace(equality=compile_equalities(model, description))
    model = model.replace(equality=with_tendon_couplings(model, description))
    return model.replace(sensors=compile_sensors(model, description))


def _with_spring_dampers(model: Model, description: RobotDescription) -> Model:
    """The stiffness and damping of the joints with an MJCF ``springdamper`` ``(tc, zeta)``, from each one's
    effective inertia at the default configuration, ``I = 1 / (M^-1)_vv`` (the inertia its velocity meets with every
    other one free; rotor inertia included): ``I / (tc^2 zeta^2)`` and ``2 I / tc``, MuJoCo's rule (its
    ``dof_invweight0``; ``tests/test_mjcf.py`` checks the result against MuJoCo's compiled model)."""
    from jaxmor.sim.dynamics import mass_matrix

    diagonal = 1.0 / np.diag(np.linalg.inv(np.asarray(mass_matrix(model, model.q_default), np.float64)))
    velocity = dict(zip(model.joint_names, model.joint_u, strict=True))
    stiffness = np.asarray(model.dof_stiffness, np.float64).copy()
    damping = np.asarray(model.dof_damping, np.float64).copy()
    for joint in description.joints:
        if joint.spring_damper:
            time_constant, ratio = joint.spring_damper
            v = velocity[joint.name]
            stiffness[v] = diagonal[v] / (time_constant * ratio) ** 2
            damping[v] = 2.0 * diagonal[v] / time_constant
            where = f"joint {joint.name!r}: the stiffness and damping from its springdamper"
            check_representable(np.array([stiffness[v], damping[v]]), model.dof_damping.dtype, description.source,
                                [joint.line] * 2, where)  # fmt: skip
    dtype = model.dof_damping.dtype
    return model.replace(dof_stiffness=jnp.asarray(stiffness, dtype), dof_damping=jnp.asarray(damping, dtype))


@dataclass(frozen=True)
class _Arrays:
    """Makes Model arrays from float64 values, refusing (``check_representable``) a value with ``lines`` that
    the model's ``dtype`` cannot hold."""

    source: str
    dtype: Any

    def __call__(self, x, shape, what: str = "", lines: Sequence[int] = (), coordinates: bool = False):
        values = np.asarray(x, dtype=np.float64).reshape(shape)
        if lines:
            check_representable(values, self.dtype, self.source, lines, what, coordinates)
        return jnp.asarray(values)


@dataclass
class _Geoms:
    """The simulated collision geoms of a description in model order (the world link's first), each entry a
    list over them, and the mesh geoms kept by name only (``ignored``: ``(link, mesh file)``)."""

    descriptions: list = field(default_factory=list)
    kinds: list[GeomType] = field(default_factory=list)
    links: list[int] = field(default_factory=list)
    sizes: list = field(default_factory=list)
    rotations: list = field(default_factory=list)
    translations: list = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    mesh: list[int] = field(default_factory=list)
    hulls: list = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)


def _dof_arrays(bodies: Sequence[Body]) -> dict[str, list[float]]:
    """The joint properties of every velocity (the keys of :data:`_DOF_FIELDS`), in velocity order."""
    dof: dict[str, list[float]] = {key: [] for key in _DOF_FIELDS}
    for body in bodies:
        j = body.joint
        if body.kind == JointType.FREE:
            # A floating joint's rotor inertia and damping act on its six velocities alike (isotropic, so the
            # world-frame angular velocities see them as the body-frame ones would).
            # Friction loss too, each velocity's row bounded alike (jaxmor.sim.constraint: the angular rows in
            # the body frame, as MuJoCo's).
            armature, damping, friction = (j.rotor_inertia, j.damping, j.friction) if j is not None else (0.0,) * 3
            values = (armature, damping, friction, math.inf, math.inf, -math.inf, math.inf, 0.0, 0.0)
            for key, value in zip(dof, (*values, -math.inf, math.inf), strict=True):
                dof[key].extend([value] * 6)
        else:
            # A ball joint's three velocities share its values: its cone limit (lower 0, upper the largest angle)
            # and its isotropic armature, damping, friction loss and stiffness, as MuJoCo's.
            values = (j.rotor_inertia, j.damping, j.friction, j.effort, j.velocity, j.lower, j.upper, j.stiffness)
            extra = (j.springref, j.actuator_force_lower, j.actuator_force_upper)
            for key, value in zip(dof, (*values, *extra), strict=True):
                dof[key].extend([value] * body.kind.dof_width())
    return dof


def _geoms(description: RobotDescription, tree: ReducedTree, link_names: Sequence[str]) -> _Geoms:
    """The description's collision geoms in the body frames; warns about the mesh geoms not simulated."""
    links = {link.name: link for link in description.links}
    out = _Geoms()
    # Geoms of the 'world' link itself (static obstacles) come first, with link index -1.
    owners = ([(-1, "world")] if description.root == "world" else []) + list(enumerate(link_names))
    for li, name in owners:
        r_lb, p_lb = tree.link_frame[name]
        for g in links[name].geoms:
            if g.kind == "mesh" and g.hull is None:
                out.ignored.append((name, g.mesh))
                continue
            size = g.size
            if g.kind == "mesh":
                out.mesh.append(len(out.hulls))
                out.hulls.append(g.hull)
                size = 0.5 * np.ptp(g.hull.vertices, axis=0)
            elif g.kind == "ellipsoid":  # its hull stands for it in geom pairs (its ground contact is exact)
                out.mesh.append(len(out.hulls))
                out.hulls.append(ellipsoid_hull(g.size))
            else:
                out.mesh.append(-1)
            out.kinds.append(GeomType[g.kind.upper()])
            out.descriptions.append(g)
            out.lines.append(links[name].line)
            out.links.append(li)
            out.sizes.append(size)
            out.rotations.append(r_lb @ g.rotation)
            out.translations.append(r_lb @ g.translation + p_lb)
    if out.ignored:
        warnings.warn(
            f"{description.source}: {len(out.ignored)} mesh collision geom(s) are kept by name but not simulated "
            f"(meshes='ignore') (first: link '{out.ignored[0][0]}', {out.ignored[0][1]})",
            stacklevel=4,
        )
    return out


def _static_fields(description: RobotDescription, tree: ReducedTree, link_names, geoms: _Geoms) -> dict:
    """The Model's names, topology and static geom fields; no ground, contact pairs or exclusions yet."""
    bodies = tree.bodies
    ground_priority = description.ground.priority if description.ground else 0
    return {
        "name": description.name,
        "source": description.source,
        "body_names": tuple(b.link for b in bodies),
        "body_parent": tuple(b.parent for b in bodies),
        "body_joint_type": tuple(b.kind for b in bodies),
        "body_joint_name": tuple(b.joint.name if b.joint else "" for b in bodies),
        "joint_names": tuple(b.joint.name for b in bodies if b.kind.dof_width() == 1),
        "link_names": tuple(link_names),
        "link_body": tuple(tree.link_body[n] for n in link_names),
        "geom_type": tuple(geoms.kinds),
        "geom_link": tuple(geoms.links),
        "geom_names": tuple(g.name for g in geoms.descriptions),
        "geom_body": tuple(-1 if li < 0 else tree.link_body[link_names[li]] for li in geoms.links),
        "geom_friction_given": tuple(g.friction is not None for g in geoms.descriptions),
        "geom_priority": tuple(g.priority - ground_priority for g in geoms.descriptions),
        "geom_mesh": tuple(geoms.mesh),
        "mesh_vertex_count": tuple(len(h.vertices) for h in geoms.hulls),
        "mesh_faces": tuple(h.faces for h in geoms.hulls),
        "mesh_edges": tuple(h.edges for h in geoms.hulls),
        "geom_ground": (True,) * len(geoms.kinds),
        "mesh_geoms": tuple(geoms.ignored),
        "urdf_joints": tuple((j.name, j.kind) for j in description.joints),
        "ground": False,
        "contact_pairs": (),
        "collision_exclude": (),
        "mocap_links": tuple(link_names.index(n) for n in description.mocap_bodies),
    }


def _joint_lines(description: RobotDescription, bodies: Sequence[Body]) -> list[int]:
    """The line of each body's joint (of its link for an implicit floating base)."""
    links = {link.name: link for link in description.links}
    return [b.joint.line if b.joint else links[b.link].line for b in bodies]


def _body_fields(description: RobotDescription, tree: ReducedTree, link_names, masses, arr: _Arrays) -> dict:
    """The Model's body and link arrays; ``masses`` is ``(mass, com, inertia)`` of every body."""
    bodies, (mass, com, inertia) = tree.bodies, masses
    nb, nl = len(bodies), len(link_names)
    links = {link.name: link for link in description.links}
    joint_lines = _joint_lines(description, bodies)
    link_lines = [links[b.link].line for b in bodies]
    frame_lines = [links[n].line for n in link_names]
    tree_rotations = [b.tree_rotation for b in bodies]
    tree_translations = [b.tree_translation for b in bodies]
    return {
        "body_tree_rotation": arr(tree_rotations, (nb, 3, 3), "joint origin rpy", joint_lines, coordinates=True),
        "body_tree_translation": arr(tree_translations, (nb, 3), "joint origin xyz", joint_lines, coordinates=True),
        "body_axis": arr([b.joint.axis if b.kind.dof_width() == 1 else np.zeros(3) for b in bodies], (nb, 3)),
        "body_mass": arr(mass, (nb,), "body mass", link_lines),
        "body_com": arr(com, (nb, 3), "body centre of mass", link_lines, coordinates=True),
        "body_inertia": arr(_drop_round_off(inertia, mass), (nb, 3, 3), "body inertia", link_lines),
        "link_rotation": arr(
            [tree.link_frame[n][0] for n in link_names], (nl, 3, 3), "link frame", frame_lines, coordinates=True
        ),
        "link_translation": arr(
            [tree.link_frame[n][1] for n in link_names], (nl, 3), "link frame", frame_lines, coordinates=True
        ),
    }


def _geom_fields(geoms: _Geoms, arr: _Arrays) -> dict:
    """The Model's geom and mesh-hull arrays."""
    ng = len(geoms.kinds)
    mesh_vertices, mesh_planes = padded(geoms.hulls)
    mesh_lines = [line for line, m in zip(geoms.lines, geoms.mesh, strict=True) if m >= 0]
    friction = [DEFAULT_FRICTION if g.friction is None else g.friction for g in geoms.descriptions]
    return {
        "geom_size": arr(geoms.sizes, (ng, 3), "collision geometry size", geoms.lines),
        "geom_rotation": arr(geoms.rotations, (ng, 3, 3), "collision origin", geoms.lines, coordinates=True),
        "geom_translation": arr(geoms.translations, (ng, 3), "collision origin", geoms.lines, coordinates=True),
        "geom_friction": arr(friction, (ng,)),
        "geom_restitution": arr([0.0] * ng, (ng,)),
        "mesh_vertices": arr(mesh_vertices, mesh_vertices.shape, "mesh vertex", mesh_lines, coordinates=True),
        "mesh_planes": arr(mesh_planes, mesh_planes.shape, "mesh plane", mesh_lines, coordinates=True),
    }


def _dof_fields(description: RobotDescription, tree: ReducedTree, tables: dict, dof: dict, arr: _Arrays) -> dict:
    """The Model's per-velocity joint arrays, the initial coordinates, and the empty ground and actuators."""
    nv, bodies = tables["nv"], tree.bodies
    lines = _joint_lines(description, bodies)
    dof_lines = [line for b, line in zip(bodies, lines, strict=True) for _ in range(b.kind.dof_width())]
    fields = {name: arr(dof[key], (nv,), what, dof_lines) for key, (name, what) in _DOF_FIELDS.items()}
    return fields | {
        "q_default": arr(_initial_q(description, bodies, tables, dof), (tables["nq"],)),
        "ground_height": arr(0.0, ()),
        "ground_friction": arr(DEFAULT_FRICTION, ()),
        "ground_restitution": arr(0.0, ()),
        "actuators": empty_actuators(nv),
        "battery": Battery(arr(0.0, ()), arr(0.0, ())),
        "affine": empty_affine(),
    }


def _collision_filters(model: Model, description: RobotDescription, geoms, link_names) -> Model:
    """The description's ground-contact choice and collision exclusions (``<disable_collisions>``, bit masks)."""
    source, geom_names, geom_link = description.source, model.geom_names, model.geom_link
    if description.ground_contact is not None:
        try:
            chosen = set(match_geoms(geom_names, geom_link, link_names, description.ground_contact, "<ground_contact>"))
        except ArgumentError as err:
            raise ModelError(source, description.ground_contact_line, str(err)) from None
        model = model.replace(geom_ground=tuple(g in chosen for g in range(model.ng)))
    excluded: set[frozenset] = set()
    for first, second, line in description.disable_collisions:
        try:
            excluded |= exclusion_pairs(geom_names, geom_link, link_names, first, second, "<disable_collisions>")
        except ArgumentError as err:
            raise ModelError(source, line, str(err)) from None
    excluded |= _masked_pairs(geoms)
    excluded -= {frozenset(pair) for pair in explicit_pairs(model, description) if pair[1] >= 0}
    return model.replace(collision_exclude=tuple(sorted(tuple(sorted(pair)) for pair in excluded)))


def _mjcf_pairs(model: Model, description: RobotDescription, self_collision: bool) -> tuple[list, int]:
    """``(pairs, left out)``: the geom pairs of an MJCF model that collide (with the world, named in a ``<pair>``, or
    any with ``self_collision``) and how many of MuJoCo's candidates between bodies are left out.

    Raises:
        ModelError: a ``<pair>`` that the collision filters exclude, or a pair jaxmor cannot collide (the file and
            the line of a body holding it).
    """
    pairs, left_out = [], 0
    explicit = {frozenset(pair) for pair in explicit_pairs(model, description)}
    candidates = collision_candidates(model)
    _check_explicit_pairs(model, description, {frozenset(pair) for pair in candidates})
    for i, j in candidates:
        world = model.geom_body[i] < 0 or model.geom_body[j] < 0
        if world or self_collision or frozenset((i, j)) in explicit:
            pairs.append((i, j))
        else:
            left_out += 1
    try:
        check_pairs(model, pairs)
    except ArgumentError as err:
        raise ModelError(description.source, _unsupported_pair_line(model, description, pairs), str(err)) from None
    return pairs, left_out


def _unsupported_pair_line(model: Model, description: RobotDescription, pairs) -> int | None:
    """The line of the body element holding a geom of the first pair jaxmor cannot collide (``None`` if unknown)."""
    lines = {link.name: link.line for link in description.links}
    for pair in pairs:
        if not pair_supported(*(model.geom_type[g] for g in pair)):
            links = [model.geom_link[g] for g in pair if model.geom_link[g] >= 0]
            return lines.get(model.link_names[links[-1]]) if links else None
    return None


def _check_explicit_pairs(model: Model, description: RobotDescription, candidates: set[frozenset]) -> None:
    """Refuse an explicit pair jaxmor cannot collide: two geoms of one body, or of a parent and its child."""
    pairs = zip(explicit_pairs(model, description), description.explicit_pairs, strict=True)
    for (a, b), pair in pairs:
        if b >= 0 and frozenset((a, b)) not in candidates:
            raise ModelError(
                description.source,
                pair.line,
                f"<pair> geoms {pair.geom1!r} and {pair.geom2!r} are on one body or on a parent and its child, which "
                "jaxmor never collides",
            )


def _pair_differences(model: Model, description: RobotDescription) -> list[str]:
    """The warning's lines for the explicit pairs whose own friction is not what jaxmor's contacts of the two geoms
    take (:func:`jaxmor.sim.collision.combine_friction`, as the collision driver calls it; the ground: friction
    given, priority 0)."""
    mu, given = np.asarray(model.geom_friction), np.array(model.geom_friction_given, dtype=bool)
    priority, rule = np.array(model.geom_priority), model.opt.friction_rule
    ground = description.ground.name if description.ground is not None else "ground"
    lines = []
    for (a, b), pair in zip(explicit_pairs(model, description), description.explicit_pairs, strict=True):
        if b < 0:
            ours = combine_friction(rule, np.asarray(model.ground_friction), np.True_, mu[a], given[a], 0, priority[a])
        else:
            ours = combine_friction(rule, mu[a], given[a], mu[b], given[b], priority[a], priority[b])
        line = difference_line(pair, float(ours), ground)
        if line:
            lines.append(line)
    return lines


def _ellipsoid_pair_differences(model: Model, pairs) -> list[str]:
    """The warning's line for ellipsoids in geom pairs, which meet the other geom as their hulls except on a face of a
    box, cylinder or mesh (:mod:`jaxmor.sim.collision.ellipsoid`)."""
    ellipsoid = GeomType.ELLIPSOID
    ellipsoids = sorted({model.geom_names[g] for pair in pairs for g in pair if model.geom_type[g] == ellipsoid})
    if not ellipsoids:
        return []
    return [
        f"{len(ellipsoids)} ellipsoid(s) in geom pairs (first: {ellipsoids[0]!r}) meet a face of a box, cylinder or "
        "mesh exactly, and spheres, capsules, ellipsoids and the edges and corners of the others as a 42-vertex hull "
        "within 3.4% of their radii (jaxmor.io.mesh.ellipsoid_hull); MuJoCo's contact is exact"
    ]


def _fluid_differences(model: Model, description: RobotDescription) -> list[str]:
    """The warning's line for a fluid medium acting on bodies with mass that MuJoCo keeps apart and jaxmor merged (a
    body without a joint into its parent): MuJoCo's inertia-box model gives each its own box."""
    if not model.opt.fluid_forces:
        return []
    massive = {link.name for link in description.links if link.inertial is not None and link.inertial.mass > 0}
    per_body: dict[int, list[str]] = {}
    for name, body in zip(model.link_names, model.link_body, strict=True):
        if body >= 0 and name in massive:
            per_body.setdefault(body, []).append(name)
    merged = [names for names in per_body.values() if len(names) > 1]
    if not merged:
        return []
    return [
        f"the fluid acts on {len(merged)} body(ies) made of several MJCF bodies with mass (first: {merged[0]}, welded "
        "without a joint) as one inertia box each; MuJoCo gives each MJCF body its own"
    ]


def explicit_pairs(model: Model, description: RobotDescription) -> list[tuple[int, int]]:
    """The description's explicit pairs (MJCF ``<pair>``) as geom indices, ``-1`` for the ground plane."""
    index = {name: g for g, name in enumerate(model.geom_names)}
    return [(index[p.geom1], -1 if p.geom2 is None else index[p.geom2]) for p in description.explicit_pairs]


def _collide(contype_a, conaffinity_a, contype_b, conaffinity_b) -> bool:
    """Whether two surfaces' collision bit masks let them collide (``None``: a URDF geom, which collides)."""
    if None in (contype_a, conaffinity_a, contype_b, conaffinity_b):
        return True
    return bool((contype_a & conaffinity_b) | (contype_b & conaffinity_a))


def _masked_pairs(geoms) -> set[frozenset]:
    """The pairs of geoms whose collision bit masks keep them apart."""
    masked = [i for i, g in enumerate(geoms) if g.contype is not None]
    return {
        frozenset((i, j))
        for n, i in enumerate(masked)
        for j in masked[n + 1 :]
        if not _collide(geoms[i].contype, geoms[i].conaffinity, geoms[j].contype, geoms[j].conaffinity)
    }


def _with_ground(model: Model, description: RobotDescription, geoms, dtype) -> Model:
    """The description's ground plane: touched by the geoms whose bit masks collide with it, and by those an
    explicit pair puts against it."""
    ground = description.ground
    paired = {a for a, b in explicit_pairs(model, description) if b < 0}
    touching = [_collide(g.contype, g.conaffinity, ground.contype, ground.conaffinity) for g in geoms]
    return model.replace(
        ground=True,
        ground_height=jnp.asarray(ground.height, dtype),
        ground_friction=jnp.asarray(ground.friction, dtype),
        geom_ground=tuple(t or g in paired for g, t in enumerate(touching)),
    )


def _with_field(model: Model, description: RobotDescription) -> Model:
    """The description's height field on the ground (errors name its geom's line)."""
    field = description.height_field
    try:
        return with_height_field(model, field.heights, field.spacing, field.origin, friction=field.friction)
    except ArgumentError as err:
        raise ModelError(description.source, field.line, f"height field {field.name!r}: {err}") from None


def _compile_affine(model: Model, description: RobotDescription):
    """The description's affine actuators, compiled; errors name the actuator's element."""
    definitions = []
    q_index = dict(zip(model.joint_names, model.joint_q, strict=True))
    v_index = dict(zip(model.joint_names, model.joint_u, strict=True))
    tendons = {name: i for i, name in enumerate(model.tendons.names)}
    seen: dict[str, str] = {}
    delays: list[int] = []
    timestep = float(description.timestep or DEFAULT_TIMESTEP)  # the file's, in float64 whatever the model's dtype
    for a in description.affine_actuators:
        try:
            if a.joint and a.joint in seen:
                raise ArgumentError(
                    f"joint '{a.joint}' is already driven by actuator '{seen[a.joint]}' (jaxmor takes "
                    "one actuator per joint)"
                )
            seen[a.joint] = a.name
            definitions.append(
                AffineActuatorDefinition.from_mujoco(
                    a.name,
                    a.joint,
                    a.gear,
                    a.gain,
                    a.bias,
                    a.ctrl_range,
                    a.force_range,
                    tendon=a.tendon,
                    dyntype=a.dyntype,
                    dynprm=a.dynprm,
                    act_range=a.act_range,
                    act_early=a.act_early,
                )
            )
            compile_affine(definitions[-1:], q_index, v_index, tendons)
            delays.append(delay_steps(a, timestep))
        except ArgumentError as err:
            reason = str(err).removeprefix(f"affine actuator '{a.name}': ")
            raise ModelError(description.source, a.line, f"actuator '{a.name}': {reason}") from None
    affine = compile_affine(definitions, q_index, v_index, tendons)
    return affine.replace(delay=jnp.asarray(np.asarray(delays, np.float64), affine.delay.dtype))


def _medium(description: RobotDescription, arr, line: int | None) -> dict:
    """The fluid options of a description (:mod:`jaxmor.sim.fluid`), in the model's dtype: zeros without a medium."""
    density, viscosity, wind = description.medium or (0.0, 0.0, (0.0, 0.0, 0.0))
    return {
        "density": arr(density, (), "density", [line]),
        "viscosity": arr(viscosity, (), "viscosity", [line]),
        "wind": arr(wind, (3,), "wind", [line] * 3, True),
        "fluid_forces": bool(density > 0 or viscosity > 0),
    }


def _initial_q(description: RobotDescription, bodies, tables: dict, dof) -> np.ndarray:
    """(nq,) where a new State starts: the description's ``initial_q``, else the neutral coordinates (a ball
    joint's the identity quaternion)."""
    q = _neutral(tables, dof["lower"], dof["upper"])
    for body, start in zip(bodies, tables["body_q_start"], strict=True):
        if body.kind == JointType.BALL:
            q[start] = 1.0  # the identity quaternion
        if body.joint is not None and body.joint.name in description.initial_q:
            value = description.initial_q[body.joint.name]
            q[start : start + len(value)] = value
    return q


def _keyframe(model: Model, description: RobotDescription, key) -> Keyframe:
    """A description's keyframe in the model's coordinate order; what it leaves out is the model's default."""
    q = np.asarray(model.q_default, dtype=np.float64).copy()
    u = np.zeros(model.nv)
    q_start = dict(zip(model.body_joint_name, model.body_q_start, strict=True))
    v_start = dict(zip(model.body_joint_name, model.body_v_start, strict=True))
    for joint, value in key.q.items():
        q[q_start[joint] : q_start[joint] + len(value)] = value
    for joint, value in key.u.items():
        u[v_start[joint] : v_start[joint] + len(value)] = value
    ctrl = tuple(float(key.ctrl.get(name, 0.0)) for name in model.affine.names)
    act = tuple(float(key.act.get(name, 0.0)) for name in model.affine.names) if key.act else None
    q, u = tuple(q.tolist()), tuple(u.tolist())
    return Keyframe(key.name, float(key.time), q, u, ctrl, key.mocap_pos, key.mocap_quat, act)


def _neutral(tables: dict, lower: Sequence[float], upper: Sequence[float]) -> np.ndarray:
    """(nq,) the default coordinates: free joints at the origin with the identity quaternion, 1-DoF joints
    at 0 clipped into their limits."""
    q = np.zeros(tables["nq"])
    q[np.array(tables["free_q"], dtype=np.int64) + 3] = 1.0
    joints = np.array(tables["joint_u"], dtype=np.int64)
    q[np.array(tables["joint_q"], dtype=np.int64)] = np.clip(0.0, np.asarray(lower)[joints], np.asarray(upper)[joints])
    return q


def _drop_round_off(tensors, masses) -> list[np.ndarray]:
    """Inertia tensors with the entries below ``1e-12`` of each tensor's largest, or below a point mass's
    (``mass x POINT_MASS_RADIUS^2``, :mod:`jaxmor.io.urdf`), set to zero: the round-off of rotating and
    merging tensors (iCub's reach 1e-67), which would otherwise be refused as underflowing float32 although
    they mean nothing."""
    out = []
    for tensor, mass in zip(tensors, masses, strict=True):
        tensor = np.asarray(tensor, dtype=np.float64)
        floor = max(1e-12 * np.abs(tensor).max(), float(mass) * POINT_MASS_RADIUS**2, POINT_MASS_FLOOR)
        out.append(np.where(np.abs(tensor) <= floor, 0.0, tensor))
    return out


def _check_massless_joints(description, tree: ReducedTree, mass, armature, v_start) -> None:
    """Refuse a joint that moves no mass and has no rotor inertia (its body and all below it are massless: the
    mass matrix is singular) where the description gives those bodies' masses (as zero); warn, once, naming
    the others (links without any ``<inertial>``: the URDF's frames)."""
    subtree = [float(m) for m in mass]
    given = [bool(body.masses) for body in tree.bodies]
    for b in reversed(range(len(tree.bodies))):  # children come after their parents
        parent = tree.bodies[b].parent
        if parent >= 0:
            subtree[parent] += subtree[b]
            given[parent] = given[parent] or given[b]
    lines = {link.name: link.line for link in description.links}
    found = []
    for b, body in enumerate(tree.bodies):
        if subtree[b] <= 0.0 and armature[v_start[b]] <= 0:
            joint = body.joint.name if body.joint else "free"
            if given[b]:
                raise ModelError(
                    description.source,
                    lines[body.link],
                    f"joint '{joint}' moves no mass (body '{body.link}' and all below it have zero mass) and has no "
                    "rotor inertia: its mass matrix is singular; give the body a positive mass and inertia",
                )
            found.append(f"'{joint}' (body '{body.link}', line {lines[body.link]})")
    if found:
        warnings.warn(
            f"{description.source}: {len(found)} joint(s) move no mass and have no rotor inertia: "
            f"{', '.join(found)}; the mass matrix is singular",
            stacklevel=4,
        )
