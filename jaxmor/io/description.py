"""A robot description: what a reader (:mod:`jaxmor.io.urdf`, :mod:`jaxmor.io.mjcf`) found in a file, before it
is compiled.

Plain Python and NumPy, with the source line of every element, so that the model builder
(:mod:`jaxmor.modeling.builder`) can report problems it finds later (a floating joint in the wrong place, a
massless body) at the right line. Readers check what they can see alone (syntax, numbers, names,
a tree with one root); the builder checks what needs the whole tree.

Frames: a joint's ``rotation``/``translation`` place its frame in its parent link's frame; an inertial,
geom or link-attached quantity is in its own link's frame. Rotations map child to parent coordinates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from jaxmor.actuation.definitions import ActuatorDefinition
from jaxmor.io.mesh import Hull
from jaxmor.io.residual_file import ResidualFile

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
        friction: the Coulomb friction coefficient the description gives [-], ``None`` when it gives none
            (URDF): the contact then takes the other surface's (:func:`jaxmor.sim.collision.combine_friction`).
        priority: which surface's friction a contact takes (MJCF ``priority``): the one of higher priority;
            equal priorities combine by the model's friction rule.
        contype, conaffinity: MJCF collision bit masks: two surfaces collide when ``contype`` of one and
            ``conaffinity`` of the other share a bit; ``None`` (URDF) collides with everything.
    """

    name: str
    kind: str
    size: np.ndarray
    rotation: np.ndarray
    translation: np.ndarray
    mesh: str = ""
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    hull: Hull | None = None
    friction: float | None = None
    priority: int = 0
    contype: int | None = None
    conaffinity: int | None = None


@dataclass
class Visual:
    """A shape a link is drawn with (a URDF ``<visual>``; an MJCF geom of a group MuJoCo shows by default, 0 to 2):
    read for :mod:`jaxmor.viewer` only, never simulated.

    Attributes:
        kind: ``"box"``, ``"sphere"``, ``"cylinder"``, ``"capsule"``, ``"ellipsoid"`` or ``"mesh"``.
        size: (3,) box half sizes; sphere ``(r, 0, 0)``; cylinder and capsule ``(r, half length, 0)``; ellipsoid
            radii [m].
        rotation: (3, 3) orientation in the link frame.
        translation: (3,) centre in the link frame [m].
        mesh: the resolved path of a ``"mesh"`` visual's file, ``""`` when it was not found (then it is not drawn).
        scale: (3,) the mesh's scale factors [-].
        rgba: its colour, red, green, blue and opacity in [0, 1], ``None`` where the description gives none.
    """

    kind: str
    size: np.ndarray
    rotation: np.ndarray
    translation: np.ndarray
    mesh: str = ""
    scale: np.ndarray = field(default_factory=lambda: np.ones(3))
    rgba: tuple[float, float, float, float] | None = None


@dataclass
class Link:
    """A link: a frame with optional mass properties and collision geoms.

    Attributes:
        name: the link's name.
        line: the line of its element in the description.
        inertial: its mass properties, ``None`` for a massless frame.
        geoms: its collision geoms.
        visuals: the shapes it is drawn with (:class:`Visual`; not simulated).
    """

    name: str
    line: int
    inertial: Inertial | None
    geoms: list[Geom]
    visuals: list[Visual] = field(default_factory=list)


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
        rotor_inertia: reflected rotor inertia [kg m^2 or kg] added to the mass matrix diagonal (on each
            of a floating joint's six velocities too).
        stiffness: joint spring stiffness [Nm/rad or N/m] (MJCF ``stiffness``; URDF has none).
        springref: the position at which the spring is relaxed [rad or m].
        actuator_force_lower, actuator_force_upper: bounds of the joint's total actuator force [Nm or N]
            (MJCF ``actuatorfrcrange``; ``-inf``/``inf`` where none, as for every URDF joint).
        spring_damper: MJCF ``springdamper``, ``(time constant [s], damping ratio)``, both ``> 0``, or ``None``: the
            model's stiffness and damping of this hinge or slide are then set from its effective inertia ``I`` at
            the default configuration, ``I / (tc^2 zeta^2)`` and ``2 I / tc`` (MuJoCo's rule).
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
    stiffness: float = 0.0
    springref: float = 0.0
    actuator_force_lower: float = -math.inf
    actuator_force_upper: float = math.inf
    spring_damper: tuple[float, float] | None = None


@dataclass(frozen=True)
class ContactPair:
    """An explicit contact pair as a description gives it (an MJCF ``<contact><pair>``).

    Attributes:
        geom1: a geom's name.
        geom2: the other geom's name, ``None`` for the ground plane.
        friction: the pair's own sliding friction coefficient [-] (0 with ``condim`` 1), which MuJoCo uses in
            place of the geoms' combination.
        condim: its contact dimensionality (1, 3, 4 or 6).
        line: the line of its element.
    """

    geom1: str
    geom2: str | None
    friction: float
    condim: int
    line: int


@dataclass
class PointEquality:
    """A ``connect`` or ``weld`` equality constraint (MJCF ``<equality>``), as MuJoCo defines it.

    Attributes:
        kind: ``"connect"`` (two points coincide) or ``"weld"`` (and the two bodies keep their orientation).
        name: its name (``""`` when unnamed).
        line: its line in the file.
        link1, link2: the two links (MJCF bodies), ``None`` for the world; or, with ``site1``/``site2``, ``None``.
        anchor: (3,) [m] a connect's point on link1, a weld's on link2, each in its link's frame.
        relpose: (7,) a weld's ``relpose`` (position [m], quaternion ``w x y z`` of link2 in link1's frame), ``None``
            for the relative pose at the reference configuration (MuJoCo's ``qpos0``).
        torque_scale: a weld's ``torquescale`` [m] (0: no orientation rows); 1 for a connect.
        site1, site2: the two sites of a constraint given by sites (they coincide), else ``None``.
        active: whether it acts (``active``).
    """

    kind: str
    name: str
    line: int
    link1: str | None
    link2: str | None
    anchor: np.ndarray
    relpose: np.ndarray | None = None
    torque_scale: float = 1.0
    site1: str | None = None
    site2: str | None = None
    active: bool = True


@dataclass
class JointEquality:
    """A ``joint`` equality constraint (MJCF ``<equality><joint>``): ``q1 - q1_ref = sum_k polycoef_k (q2 -
    q2_ref)^k``, or ``q1 - q1_ref = polycoef_0`` without ``joint2`` (``q_ref``: the reference configuration's).

    Attributes:
        name: its name (``""`` when unnamed).
        line: its line in the file.
        joint1, joint2: the two joints (hinges or slides); ``joint2`` ``None`` when absent.
        polycoef: (5,) the polynomial's coefficients.
        active: whether it acts (``active``).
    """

    name: str
    line: int
    joint1: str
    joint2: str | None
    polycoef: np.ndarray
    active: bool = True


@dataclass
class TendonEquality:
    """A ``tendon`` equality constraint (MJCF ``<equality><tendon>``): :class:`JointEquality`'s coupling of two
    fixed tendons' lengths (``L_ref``: their lengths at the reference configuration).

    Attributes:
        name: its name (``""`` when unnamed).
        line: its line in the file.
        tendon1, tendon2: the two tendons; ``tendon2`` ``None`` when absent.
        polycoef: (5,) the polynomial's coefficients.
        active: whether it acts (``active``).
    """

    name: str
    line: int
    tendon1: str
    tendon2: str | None
    polycoef: np.ndarray
    active: bool = True


@dataclass
class Tendon:
    """A fixed tendon (MJCF ``<tendon><fixed>``): the length ``sum_i coef_i q_i`` of hinges and slides.

    Attributes:
        name: its name.
        line: its line in the file.
        joints: ``(joint name, coefficient)`` of each joint it sums, in order.
        range: ``(lower, upper)`` its length limits [m or rad], ``None`` where unlimited.
        spring_length: ``(lower, upper)`` its spring's dead band [m or rad], ``None`` for the length at the
            reference configuration (MuJoCo's ``springlength="-1"``).
        stiffness: [N/m or Nm/rad]. damping: [N s/m or Nm s/rad]. friction: the friction loss [N or Nm].
        armature: [kg or kg m^2].
    """

    name: str
    line: int
    joints: list[tuple[str, float]]
    range: tuple[float, float] | None = None
    spring_length: tuple[float, float] | None = None
    stiffness: float = 0.0
    damping: float = 0.0
    friction: float = 0.0
    armature: float = 0.0


@dataclass
class HeightFieldDescription:
    """The ground's height field as a description gives it (MJCF ``<hfield>`` and its geom).

    Attributes:
        heights: (ny, nx) the height of each grid vertex, world ``z`` [m], row 0 at the smallest ``y``.
        spacing: ``(dx, dy)`` the grid's steps [m]. origin: ``(x, y)`` of vertex ``(0, 0)`` [m].
        friction: its Coulomb friction coefficient [-].
        line: the line of its geom. name: the geom's name.
    """

    heights: np.ndarray
    spacing: tuple[float, float]
    origin: tuple[float, float]
    friction: float
    line: int
    name: str


@dataclass
class GroundPlane:
    """The world's ground plane as a description gives it (an MJCF ``<geom type="plane">``).

    Attributes:
        height: the plane's height [m] (normal ``+z``).
        friction: its Coulomb friction coefficient [-].
        priority: its contact priority (see :attr:`Geom.priority`).
        contype, conaffinity: its collision bit masks (see :attr:`Geom.contype`).
        line: the line of its element.
        name: its name (an unnamed one's is MJCF's ``geom<k>``).
    """

    height: float
    friction: float
    priority: int
    contype: int
    conaffinity: int
    line: int
    name: str = "ground"


@dataclass
class AffineActuator:
    """A MuJoCo-style affine actuator on one joint (an MJCF ``<motor>``, ``<position>``, ``<velocity>`` or
    ``<general>``), with MuJoCo's parameters: its force is
    ``clamp(gain * clamp(ctrl, ctrl_range) + bias[0] + bias[1] gear q + bias[2] gear v, force_range)``, times
    ``gear`` on the joint (:meth:`jaxmor.AffineActuatorDefinition.from_mujoco` converts it).

    Attributes:
        name: the actuator's name.
        joint: the driven joint (``""`` for an actuator on a tendon).
        line: the line of its element.
        gear: MuJoCo's ``gear[0]``.
        gain: ``gainprm[0]``.
        bias: ``biasprm[0:3]``.
        ctrl_range, force_range: ``(lower, upper)``, ``None`` where unlimited.
        tendon: the pulled fixed tendon (``""`` for an actuator on a joint).
        delay: MuJoCo's ``delay`` of its control [s] (``>= 0``; whole steps when the model is built,
            :func:`jaxmor.io.mjcf_actuators.delay_steps`).
        nsample: MuJoCo's ``nsample``, the control history's length [samples] (``>= 0``).
        interp: MuJoCo's ``interp``: ``"zoh"``, ``"linear"`` or ``"cubic"``.
        dyntype: MuJoCo's ``dyntype``: ``"none"``, ``"integrator"``, ``"filter"`` or ``"filterexact"``.
        dynprm: ``dynprm[0]``, the filters' time constant [s].
        act_range: ``actrange`` where ``actlimited``, else ``None``.
        act_early: ``actearly``.
    """

    name: str
    joint: str
    line: int
    gear: float
    gain: float
    bias: tuple[float, float, float]
    ctrl_range: tuple[float, float] | None
    force_range: tuple[float, float] | None
    tendon: str = ""
    delay: float = 0.0
    nsample: int = 0
    interp: str = "zoh"
    dyntype: str = "none"
    dynprm: float = 1.0
    act_range: tuple[float, float] | None = None
    act_early: bool = False


@dataclass
class KeyframeDescription:
    """A named state of the robot (an MJCF ``<key>``), by joint and actuator name, in jaxmor's conventions.

    Attributes:
        name: the keyframe's name.
        line: the line of its element.
        time: the simulated time [s].
        q: joint name -> its coordinates (7 for a free joint: position, quaternion ``w x y z``; else 1).
        u: joint name -> its velocities (6 for a free joint: base-origin velocity and angular velocity,
            both in the world frame; else 1).
        ctrl: affine actuator name -> its control.
        mocap_pos: (3 nmocap,) the mocap bodies' positions [m] (``mpos``, in ``mocap_bodies``' order), ``None``
            where the key gives none (the bodies' poses in the file).
        mocap_quat: (4 nmocap,) their normalized quaternions ``w x y z`` (``mquat``), ``None`` likewise.
        act: affine actuator name -> its activation (``act``; the actuators with activation dynamics).
    """

    name: str
    line: int
    time: float
    q: dict[str, tuple[float, ...]]
    u: dict[str, tuple[float, ...]]
    ctrl: dict[str, float]
    mocap_pos: tuple[float, ...] | None = None
    mocap_quat: tuple[float, ...] | None = None
    act: dict[str, float] = field(default_factory=dict)


#: MuJoCo's default site size [m] (every value of ``size`` not given).
SITE_SIZE = 0.005

#: The site types, MuJoCo's.
SITE_SHAPES = ("sphere", "capsule", "ellipsoid", "cylinder", "box")


@dataclass
class Site:
    """A named frame fixed on a link (an MJCF ``<site>``).

    Attributes:
        name: its name.
        link: the link it is fixed on (``"world"`` for the world).
        line: the line of its element.
        rotation: (3, 3) its orientation in the link's frame.
        translation: (3,) its origin in the link's frame [m].
        shape: its MJCF ``type`` (``"sphere"``, ``"capsule"``, ``"ellipsoid"``, ``"cylinder"`` or ``"box"``): the
            zone of a touch sensor on it.
        size: (3,) its MJCF ``size`` [m] (a radius, half-length or half-sizes as for a geom of its type).
    """

    name: str
    link: str
    line: int
    rotation: np.ndarray
    translation: np.ndarray
    shape: str = "sphere"
    size: np.ndarray = field(default_factory=lambda: np.full(3, SITE_SIZE))


@dataclass
class SensorDescription:
    """A sensor as the description declares it (an MJCF ``<sensor>`` child), its objects by name.

    Attributes:
        name: its name.
        kind: its MuJoCo type (``"jointpos"``, ``"gyro"``, ...).
        line: the line of its element.
        obj_type, obj_name: what it reads: ``"joint"``, ``"ball"`` (a ball joint), ``"actuator"``, ``"site"``,
            ``"xbody"`` (a link's frame), ``"body"`` (an MJCF body's inertial frame, ``inertial``), ``"subtree"``
            (the body whose subtree it reads, ``"world"`` for all), or ``""`` for nothing.
        ref_type, ref_name: the reference frame of a frame sensor (the same types), ``""`` for the world's.
        noise: the standard deviation of its noise (metadata) in its unit.
        cutoff: its cutoff (0: none) in its unit.
        inertial: for a ``"body"`` object or reference, ``(rotation (3, 3), translation (3,))`` of the body's
            inertial frame in its link's frame.
    """

    name: str
    kind: str
    line: int
    obj_type: str
    obj_name: str
    ref_type: str = ""
    ref_name: str = ""
    noise: float = 0.0
    cutoff: float = 0.0
    inertial: dict = field(default_factory=dict)


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
        timestep, gravity: the description's time step [s] and gravity [m/s^2], ``None`` for jaxmor's defaults.
        medium: ``(density [kg/m^3], viscosity [Pa s], wind (3,) [m/s])`` of the fluid around the robot (MJCF
            ``<option density viscosity wind>``), ``None`` for none.
        options_line: the line of the element that set them (MJCF ``<option>``), ``None``: the root's.
        friction_rule: how two given friction coefficients combine (``Options.friction_rule``), ``None`` for
            jaxmor's default.
        ground: the ground plane, ``None`` when the description has none.
        affine_actuators: the affine (MuJoCo-style) actuators, in document order.
        initial_q: joint name -> the coordinates a new State starts from (``Model.q_default``); joints not
            named start at the origin with the identity quaternion (free) or at 0 clipped into their limits.
        keyframes: the description's named states.
        sites: the named frames fixed on links (MJCF ``<site>``).
        mocap_bodies: (MJCF ``<body mocap="true">``) the links welded to the world whose pose the State sets
            (``State.mocap_pos``, ``mocap_quat``), in document order.
        sensors: the sensors, in document order.
        magnetic: the global magnetic flux (MJCF ``<option magnetic>``), ``None`` for MuJoCo's default.
        explicit_pairs: (MJCF ``<pair>``) the pairs collided whatever the bit masks, exclusions and self-collision
            setting say.
        equalities: (MJCF ``<equality>``) the equality constraints in document order: :class:`PointEquality`,
            :class:`JointEquality` and :class:`TendonEquality`.
        tendons: (MJCF ``<tendon>``) the fixed tendons, in document order.
        height_field: (MJCF ``<hfield>``) the ground's height field, ``None`` without one.
        mujoco_differences: (MJCF) what MuJoCo does differently with the file, one line each
            (:func:`jaxmor.io.mjcf_differences.differences`).
        residual: the learned residual an actuator file names (``<residual file>``,
            :mod:`jaxmor.io.residual_file`), ``None`` without one.
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
    timestep: float | None = None
    gravity: tuple[float, float, float] | None = None
    medium: tuple[float, float, tuple[float, float, float]] | None = None
    friction_rule: str | None = None
    ground: GroundPlane | None = None
    affine_actuators: list[AffineActuator] = field(default_factory=list)
    initial_q: dict[str, tuple[float, ...]] = field(default_factory=dict)
    keyframes: list[KeyframeDescription] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    mocap_bodies: list[str] = field(default_factory=list)
    sensors: list[SensorDescription] = field(default_factory=list)
    magnetic: tuple[float, float, float] | None = None
    explicit_pairs: list[ContactPair] = field(default_factory=list)
    equalities: list[PointEquality | JointEquality | TendonEquality] = field(default_factory=list)
    tendons: list[Tendon] = field(default_factory=list)
    height_field: HeightFieldDescription | None = None
    mujoco_differences: list[str] = field(default_factory=list)
    options_line: int | None = None
    residual: ResidualFile | None = None


def combine_masses(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, centre of mass and inertia about it of rigid parts ``(mass, com, inertia about com)``
    given in one frame (the parallel-axis theorem); ``(0, 0, 0)`` for no mass."""
    total = sum(m for m, _, _ in parts)
    if total <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in parts) / total
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        d = c - com
        inertia += i + m * (d @ d * np.eye(3) - np.outer(d, d))
    return total, com, inertia
