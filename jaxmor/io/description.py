"""A robot description: what a reader (URDF today, MJCF next) found in a file, before it is compiled.

Plain Python and NumPy, with the source line of every element, so that the model builder
(:mod:`jaxmor.build`) can report problems it finds later (a floating joint in the wrong place, a
massless body) at the right line. Readers check what they can see alone (syntax, numbers, names,
a tree with one root); the builder checks what needs the whole tree.

Frames: a joint's ``rotation``/``translation`` place its frame in its parent link's frame; an inertial,
geom or link-attached quantity is in its own link's frame. Rotations map child to parent coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jaxmor.io.actuators import ActuatorDefinition
from jaxmor.io.mesh import Hull

#: Joint types of a description, with the URDF's names.
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


@dataclass
class Inertial:
    """A link's mass properties.

    Attributes:
        mass: [kg].
        com: (3,) centre of mass in the link frame [m].
        inertia: (3, 3) rotational inertia about the centre of mass, link axes [kg m^2].
    """

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass
class Geom:
    """A collision shape of a link.

    Attributes:
        name: the shape's name (the description's, or ``"<link>/<k>"`` for the k-th unnamed one).
        kind: ``"box"``, ``"sphere"``, ``"cylinder"``, ``"capsule"`` or ``"mesh"``.
        size: (3,) box half sizes; sphere ``(r, 0, 0)``; cylinder and capsule ``(r, half length, 0)`` [m].
        rotation: (3, 3) orientation in the link frame.
        translation: (3,) centre in the link frame [m].
        mesh: the mesh file of a ``"mesh"`` geom, as written in the description.
        scale: (3,) the mesh's scale factors [-].
        hull: the convex hull simulated for a ``"mesh"`` geom (:mod:`jaxmor.io.mesh`), ``None`` when the
            meshes are left out (``meshes="ignore"``).
    """

    name: str
    kind: str
    size: np.ndarray
    rotation: np.ndarray
    translation: np.ndarray
    mesh: str = ""
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    hull: Hull | None = None


@dataclass
class Link:
    """A link: a frame with optional mass properties and collision geoms.

    Attributes:
        name: the link's name.
        line: the line of its element in the description.
        inertial: its mass properties, ``None`` for a massless frame.
        geoms: its collision geoms.
    """

    name: str
    line: int
    inertial: Inertial | None
    geoms: list[Geom]


@dataclass
class Joint:
    """A joint between two links.

    Attributes:
        name: the joint's name.
        line: the line of its element in the description.
        kind: one of :data:`JOINT_TYPES`.
        parent, child: the links it joins.
        rotation: (3, 3) orientation of the joint frame in the parent link's frame (the child link's
            frame at zero displacement).
        translation: (3,) origin of the joint frame in the parent link's frame [m].
        axis: (3,) unit axis in the joint frame.
        lower, upper: position limits [rad or m] (``-inf``/``inf`` where none).
        effort, velocity: effort [Nm or N] and velocity [rad/s or m/s] limits (``inf`` where none).
        damping, friction: viscous damping [Nm s/rad or N s/m] and Coulomb friction [Nm or N].
        rotor_inertia: reflected rotor inertia [kg m^2 or kg] added to the mass matrix diagonal.
    """

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
class RobotDescription:
    """A robot as read from its description.

    Attributes:
        name: the robot's name.
        source: the file it was read from, or ``"<string>"``.
        line: the line of the root element.
        links: every link, in document order (``world``, if present, included).
        joints: every joint, in document order.
        root: the name of the root link of the tree (``"world"`` for a robot welded to the world).
        actuators: the DC-motor actuators, in document order.
        ground_contact: the geoms that touch the ground, as geom or link names or ``fnmatch`` patterns
            (jaxmor's ``<ground_contact names="...">`` element), ``None`` for every geom.
        ground_contact_line: the line of that element.
        disable_collisions: ``(selection_a, selection_b, line)`` of each ``<disable_collisions link1 link2/>``
            element (SRDF's, accepted in the URDF): no self-collision pair between the two selections (geom or
            link names or ``fnmatch`` patterns).
    """

    name: str
    source: str
    line: int
    links: list[Link]
    joints: list[Joint]
    root: str
    actuators: list[ActuatorDefinition] = field(default_factory=list)
    ground_contact: list[str] | None = None
    ground_contact_line: int | None = None
    disable_collisions: list[tuple[str, str, int]] = field(default_factory=list)
