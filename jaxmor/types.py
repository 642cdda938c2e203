"""The pytrees of jaxmor: :class:`Model`, :class:`State` and the structs inside them.

Conventions (see the README's "Conventions" section):

* SI units throughout: m, kg, s, rad, N, Nm, V, Ohm, A.
* A floating base's coordinates are ``q = [p (3), quat w x y z (4), joints...]`` with ``p`` the
  base origin in the world frame; its velocities are ``u = [v (3), w (3), joints...]`` with ``v``
  the velocity of the base origin and ``w`` the angular velocity, both in the world frame.
* Revolute, continuous and prismatic joints have one coordinate and one velocity each. A ball joint has four
  coordinates (the unit quaternion ``w x y z`` of its body's rotation in the joint frame) and three velocities (its
  body's angular velocity relative to the parent, in the body's own frame, as MuJoCo's).
* Topology, counts, names and the index tables compiled from them are static
  (``pytree_node=False``, plain tuples); every physical constant is an array leaf, so a model can be
  batched with ``jax.vmap`` (randomized worlds) and differentiated (system identification).
"""

from __future__ import annotations

import dataclasses
import enum

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.actuation.motor import DcMotorParameters
from jaxmor.actuation.motor_dynamics import MotorDynamics, MotorState
from jaxmor.actuation.residual import ResidualNetwork, no_residual
from jaxmor.fields import leaf


class JointType(enum.IntEnum):
    """The joint that moves a body relative to its parent, after fixed joints are merged."""

    FREE = 0
    """Six degrees of freedom: position (3) and quaternion (4) in ``q``, linear and angular velocity in ``u``."""
    REVOLUTE = 1
    """One rotation about an axis (URDF ``revolute`` and ``continuous``)."""
    PRISMATIC = 2
    """One translation along an axis."""
    BALL = 3
    """Three rotations about the joint frame's origin (MJCF ``ball``): the unit quaternion ``w x y z`` of the body's
    rotation relative to the joint frame in ``q``, its angular velocity relative to the parent **in the body's own
    frame** in ``u`` (MuJoCo's convention; ``docs/design/ball-joints.md``)."""

    def qpos_width(self) -> int:
        """Number of coordinates of the joint in ``q``."""
        return {JointType.FREE: 7, JointType.BALL: 4}.get(self, 1)

    def dof_width(self) -> int:
        """Number of velocities of the joint in ``u``."""
        return {JointType.FREE: 6, JointType.BALL: 3}.get(self, 1)

    @property
    def label(self) -> str:
        """Lower-case name, as in messages (``"free"``, ``"revolute"``, ``"prismatic"``, ``"ball"``)."""
        return self.name.lower()


class GeomType(enum.IntEnum):
    """Shape of a simulated collision geom."""

    SPHERE = 0
    CAPSULE = 1
    BOX = 2
    CYLINDER = 3
    MESH = 4
    """A convex hull (a URDF ``<mesh>``; :mod:`jaxmor.io.mesh`): vertices and face planes in
    ``Model.mesh_vertices`` and ``Model.mesh_planes``."""
    ELLIPSOID = 5
    """An ellipsoid (MJCF), its three radii in ``Model.geom_size``: it touches the ground and height fields only
    (no pair kernel)."""

    @property
    def label(self) -> str:
        """Lower-case name, as in URDF and in messages (``"sphere"``, ``"box"``, ...)."""
        return self.name.lower()


@struct.dataclass
class Options:
    """Simulation options of a model (``model.opt``). Change them with :func:`jaxmor.with_options`, which
    checks the new values; the step checks them too when it is traced.

    Attributes:
        timestep: () time step ``h`` [s].
        gravity: (3,) gravitational acceleration in the world frame [m/s^2].
        solver_iterations: projected Gauss-Seidel sweeps per step of the velocity pass (static, ``>= 1``).
        position_iterations: sweeps per step of the position-correction pass (static, ``>= 1``). The two
            passes share their loop: a step's dependent loop iterations are the larger count. Both counts are
            also the sweeps of the solve's derivative, whatever the solver.
        solver: ``"auto"`` (default: the accelerated projected Jacobi iteration when the step is compiled for
            a CUDA GPU, projected Gauss-Seidel elsewhere), ``"pgs"`` or ``"jacobi"`` (static; both solve the
            same problem and have the same fixed points, :mod:`jaxmor.sim.solver`).
        jacobi_iterations: iterations per step of the Jacobi solver's velocity pass; its position pass runs
            half as many (static, ``>= 1``).
        friction_rule: how two given friction coefficients combine: ``"geometric_mean"`` (default),
            ``"mean"``, ``"min"`` or ``"max"`` (static; see :func:`jaxmor.sim.collision.combine_friction`).
        implicit_bias: how the velocity-dependent forces (Coriolis, centrifugal, gyroscopic) enter the
            effective mass (static; see :mod:`jaxmor.sim.free_motion`): ``"kahan"`` (default), ``M + (h/2) D``
            with ``D = db/du`` of the whole tree, which does not dissipate; ``"predicted"``, the same term
            with the joints' part taken at the velocity change predicted without it (one forward-mode bias
            pass instead of ``D``: cheaper, and energy as bounded as ``"kahan"`` while ``h |u|`` is small).
        contact_budget: contact slots the solver works on each step (static, an int ``>= 1``, or ``None``
            for the default derived from the model; :func:`jaxmor.sim.collision.contact_budget`). Every
            step fills them from all the contact candidates, nearest (or deepest) first.
        contact_reach: () gap below which a candidate counts as able to touch within the step [m]; the
            candidates within reach that the budget leaves out are counted in ``State.contact_overflow``
            (it changes no physics).
        density: () the density of the medium [kg/m^3] (MuJoCo's ``density``; 0: none).
        viscosity: () its viscosity [Pa s] (MuJoCo's ``viscosity``).
        wind: (3,) its velocity in the world frame [m/s].
        fluid_forces: whether the step applies the medium's drag (:mod:`jaxmor.sim.fluid`; static: set by
            :func:`jaxmor.with_options` when it is given a density or a viscosity other than 0).
    """

    timestep: jax.Array = leaf((), randomize="timestep", domain="positive")
    gravity: jax.Array = leaf((3,), randomize="gravity", domain="finite")
    solver_iterations: int = struct.field(pytree_node=False)
    position_iterations: int = struct.field(pytree_node=False, default=10)
    solver: str = struct.field(pytree_node=False, default="auto")
    jacobi_iterations: int = struct.field(pytree_node=False, default=100)
    friction_rule: str = struct.field(pytree_node=False, default="geometric_mean")
    implicit_bias: str = struct.field(pytree_node=False, default="kahan")
    contact_budget: int | None = struct.field(pytree_node=False, default=None)
    contact_reach: jax.Array = leaf((), default=0.01)
    density: jax.Array = leaf((), domain="non-negative", default_factory=lambda: jnp.zeros(()))
    viscosity: jax.Array = leaf((), domain="non-negative", default_factory=lambda: jnp.zeros(()))
    wind: jax.Array = leaf((3,), domain="finite", default_factory=lambda: jnp.zeros(3))
    fluid_forces: bool = struct.field(pytree_node=False, default=False)


@struct.dataclass
class Battery:
    """The supply of the DC-motor actuators (``jaxmor.with_battery``).

    Attributes:
        open_circuit_voltage: () ``V_oc`` [V].
        internal_resistance: () ``R_int`` [Ohm]; after every step the bus voltage becomes the ``V`` of
            ``V = V_oc - R_int I`` with ``V I = P``, the power [W] the motors drew in that step, solved in closed
            form (:func:`jaxmor.actuation.drive.battery_voltage`): within ``[V_oc / 2, V_oc]`` for any ``R_int``.
        enabled: whether the model has a battery; without one the bus voltages are what the State holds
            (static).
    """

    open_circuit_voltage: jax.Array = leaf((), randomize="battery.open_circuit_voltage", domain="positive")
    internal_resistance: jax.Array = leaf((), randomize="battery.internal_resistance", domain="non-negative")
    enabled: bool = struct.field(pytree_node=False, default=False)


@struct.dataclass
class DriveController:
    """The drive controllers at the actuators: a PID on each actuator's driven joint (or its motor angle) that
    updates every ``period`` physics steps and holds its torque in between (:mod:`jaxmor.actuation.controller`).

    Its targets are the actuator PD's (``State.actuator_position_target``, ``actuator_velocity_target``), after the
    command delay; its torque adds to the actuator torque and the actuator PD's before the motor region clips the sum.

    Attributes:
        p_gain: (na,) proportional gain [Nm/rad or N/m at the gear output per unit joint error; on the motor side
            Nm of motor torque per rad of motor angle].
        i_gain: (na,) integral gain [Nm/(rad s) or N/(m s); motor side Nm/(rad s)].
        d_gain: (na,) derivative gain, on the velocity error [Nm s/rad or N s/m; motor side Nm s/rad].
        period: (na,) the controller's period in physics steps (``>= 1``; 1 updates every step), a whole
            number (a float, rounded where used).
        active: which actuators run a controller (static); the others ignore their gains.
        motor_side: per actuator, whether its controller works on the motor angle ``G q_j`` and outputs a motor
            torque (static); else on the joint, at the gear output.
    """

    p_gain: jax.Array = leaf(("na",), randomize="controller.p_gain", domain="non-negative")
    i_gain: jax.Array = leaf(("na",), randomize="controller.i_gain", domain="non-negative")
    d_gain: jax.Array = leaf(("na",), randomize="controller.d_gain", domain="non-negative")
    period: jax.Array = leaf(("na",), randomize="controller.period", domain="period")
    active: tuple[bool, ...] = struct.field(pytree_node=False, default=())
    motor_side: tuple[bool, ...] = struct.field(pytree_node=False, default=())

    @property
    def any_active(self) -> bool:
        """Whether any actuator runs a controller."""
        return any(self.active)


def no_controllers(na: int, dtype=None) -> DriveController:
    """Drive controllers for ``na`` actuators, none active (zero gains, period 1)."""
    zero = jnp.zeros((na,), dtype)
    return DriveController(zero, zero, zero, jnp.ones((na,), dtype), (False,) * na, (False,) * na)


@struct.dataclass
class Backlash:
    """The gears' backlash: a dead band between each actuator's motor and its driven joint
    (:mod:`jaxmor.actuation.backlash`).

    With backlash an actuator's rotor is a degree of freedom of its own, on the joint side of the gear: its angle
    leads the joint's by the play ``s`` (``State.backlash_play``), and the gear's teeth touch when ``|s| = width / 2``.
    The motor torque, cogging, LuGre friction and the actuator PD act on the rotor; the joint feels the actuator only
    through the teeth's contact, a row of the constraint solver.

    Attributes:
        width: (na,) the dead band's full width at the joint [rad or m], ``>= 0``.
        inertia: (na,) the rotor's inertia reflected to the joint, ``G^2 J_rotor`` [kg m^2 or kg], ``> 0`` where
            active.
        active: which actuators have backlash (static); the others ignore ``width`` and ``inertia``.
    """

    width: jax.Array = leaf(("na",), randomize="backlash.width", domain="non-negative")
    inertia: jax.Array = leaf(("na",), randomize="backlash.inertia", domain="positive")
    active: tuple[bool, ...] = struct.field(pytree_node=False, default=())

    @property
    def any_active(self) -> bool:
        """Whether any actuator has backlash."""
        return any(self.active)


def no_backlash(na: int = 0, dtype=None) -> Backlash:
    """Backlash of ``na`` actuators, none active (zero width, unit inertia)."""
    return Backlash(jnp.zeros((na,), dtype), jnp.ones((na,), dtype), (False,) * na)


@struct.dataclass
class MotorActuators:
    """DC-motor actuators compiled for the step (``na`` actuators, ``nv`` velocities, ``nk`` couplings).

    Attributes:
        names: actuator names, in the order of every per-actuator array (static).
        models: model names of the actuators, informational (static).
        joints: name of each actuator's driven joint (static).
        couplings: per actuator, the names of the coupled joints (static); their ratios are
            ``coupling_ratio``.
        joint_v_index: velocity index of each driven joint (static).
        coupling_actuator: the actuator of each coupling, in the order of ``coupling_ratio`` (static).
        coupling_v_index: velocity index of each coupling's joint (static).
        nv: number of velocities of the model (static).
        gear_ratio: (na,) gear ratio ``G`` [-], motor speed per unit speed of the driven joint.
        coupling_ratio: (nk,) motor speed per unit speed of each coupled joint [-].
        motor: motor constants, each field of shape (na,); its ``bus_voltage`` is the default the
            robot description gave. The bus voltage used by the step lives in :class:`State`.
        output_damping: (na,) viscous damping of each actuator at its output [Nm s/rad or N s/m].
        output_friction: (na,) Coulomb friction torque of each actuator at its output [Nm or N].
        dynamics: the motors' optional dynamic features (winding temperature, inductance, cogging, LuGre
            friction; :mod:`jaxmor.actuation.motor_dynamics`), their constants (na,) leaves, which actuators have them
            static.
        delay: (na,) each actuator's command delay [physics steps], in ``[0, Model.max_delay]``, a whole
            number (a float, rounded where used)
            (:mod:`jaxmor.actuation.latency`).
        controller: the drive controllers at the actuators (:class:`DriveController`).
        residual: the learned torque residual added to the commands before the region clips them
            (:mod:`jaxmor.actuation.residual`; none unless set with ``jaxmor.with_residual``).
        backlash: the gears' backlash (:class:`Backlash`; none unless set with ``jaxmor.with_backlash`` or a
            file).
    """

    names: tuple[str, ...] = struct.field(pytree_node=False)
    models: tuple[str, ...] = struct.field(pytree_node=False)
    joints: tuple[str, ...] = struct.field(pytree_node=False)
    couplings: tuple[tuple[str, ...], ...] = struct.field(pytree_node=False)
    joint_v_index: tuple[int, ...] = struct.field(pytree_node=False)
    coupling_actuator: tuple[int, ...] = struct.field(pytree_node=False)
    coupling_v_index: tuple[int, ...] = struct.field(pytree_node=False)
    nv: int = struct.field(pytree_node=False)
    gear_ratio: jax.Array = leaf(("na",), randomize="actuator.gear_ratio", domain="positive")
    coupling_ratio: jax.Array = leaf(("nk",))
    motor: DcMotorParameters
    output_damping: jax.Array = leaf(("na",), randomize="actuator.output_damping", domain="non-negative")
    output_friction: jax.Array = leaf(("na",), randomize="actuator.output_friction", domain="non-negative")
    dynamics: MotorDynamics
    delay: jax.Array = leaf(("na",), randomize="actuator.delay", domain="delay")
    controller: DriveController
    residual: ResidualNetwork = struct.field(default_factory=no_residual)
    backlash: Backlash = struct.field(default_factory=no_backlash)

    @property
    def transmission(self) -> jax.Array:
        """(..., na, nv) transmission matrix ``T``, built from ``gear_ratio`` and ``coupling_ratio`` whenever it is
        read (so it never goes stale): motor speeds ``w_m = T u`` [rad/s], joint torques ``T^T tau_m``.
        The gear ratio sits at the driven joint's column, the coupling ratios at the coupled joints'."""
        gear = jnp.asarray(self.gear_ratio)
        ratio = jnp.asarray(self.coupling_ratio, gear.dtype)
        na = len(self.names)
        t = jnp.zeros(gear.shape[:-1] + (na, self.nv), gear.dtype)
        t = t.at[..., np.arange(na), np.array(self.joint_v_index, dtype=np.int32)].set(gear)
        couplings = (np.array(self.coupling_actuator, dtype=np.int32), np.array(self.coupling_v_index, dtype=np.int32))
        return t.at[(..., *couplings)].set(ratio)


@struct.dataclass
class AffineActuators:
    """``nu`` compiled affine actuators: every physical number is an array leaf of shape ``(nu,)``.

    Leaves can be batched (``vmap`` over per-world gains) and differentiated. Topology is static.

    Attributes:
        gear: gear ratio from actuator force to joint torque.
        gain: coefficient on the clamped control [actuator force per control unit].
        bias_0: constant bias force [actuator force] (MuJoCo's ``biasprm[0]``).
        bias_q: coefficient on the joint position [actuator force per rad or m].
        bias_v: coefficient on the joint velocity [actuator force per rad/s or m/s].
        ctrl_lower, ctrl_upper: control clamp [control units]; ``-inf``/``+inf`` where unlimited.
        force_lower, force_upper: actuator-force clamp, before the gear; ``-inf``/``+inf`` where unlimited.
        delay: (nu,) each control's delay [physics steps], in ``[0, Model.max_delay]``, a whole number (a
            float, rounded where used)
            (:mod:`jaxmor.actuation.latency`).
        time_constant: (nu,) the activation's time constant [s] of a ``"filter"`` or ``"filterexact"`` actuator
            (MuJoCo's ``dynprm[0]``; 1 where unused).
        act_lower, act_upper: (nu,) the activation's clamp (MuJoCo's ``actrange`` where ``actlimited``);
            ``-inf``/``+inf`` where unlimited.
        names: actuator names, in order (static).
        q_index: index into ``q`` of each driven joint's coordinate, ``-1`` for an actuator on a tendon (static).
        v_index: index into ``u`` (and into the generalized force) of each driven joint's DOF, ``-1`` for an
            actuator on a tendon (static).
        tendon: the fixed tendon (index into ``Model.tendons``) each actuator pulls, ``-1`` for one on a joint
            (static; empty when none does): its "joint position and velocity" are the tendon's length and rate,
            its force acts through the tendon's Jacobian (:func:`jaxmor.sim.tendons.actuator_moment`).
        dynamics: each actuator's activation dynamics (static; empty when none has any): ``"none"`` (the law
            takes the control), ``"integrator"``, ``"filter"`` or ``"filterexact"`` (the law takes the activation
            ``State.act``, MuJoCo's ``dyntype``; :mod:`jaxmor.actuation.affine`).
        act_early: whether the law takes the activation of the step's end instead of its start (static; MuJoCo's
            ``actearly``; empty when none does).
    """

    gear: jax.Array = leaf(("nu",))
    gain: jax.Array = leaf(("nu",))
    bias_0: jax.Array = leaf(("nu",))
    bias_q: jax.Array = leaf(("nu",))
    bias_v: jax.Array = leaf(("nu",))
    ctrl_lower: jax.Array = leaf(("nu",))
    ctrl_upper: jax.Array = leaf(("nu",))
    force_lower: jax.Array = leaf(("nu",))
    force_upper: jax.Array = leaf(("nu",))
    delay: jax.Array = leaf(("nu",), randomize="affine.delay", domain="delay")
    time_constant: jax.Array = leaf(("nu",), domain="positive")
    act_lower: jax.Array = leaf(("nu",))
    act_upper: jax.Array = leaf(("nu",))
    names: tuple[str, ...] = struct.field(pytree_node=False, default=())
    q_index: tuple[int, ...] = struct.field(pytree_node=False, default=())
    v_index: tuple[int, ...] = struct.field(pytree_node=False, default=())
    tendon: tuple[int, ...] = struct.field(pytree_node=False, default=())
    dynamics: tuple[str, ...] = struct.field(pytree_node=False, default=())
    act_early: tuple[bool, ...] = struct.field(pytree_node=False, default=())

    @property
    def activated(self) -> bool:
        """Whether any actuator has activation dynamics (the law then takes ``State.act`` for it)."""
        return any(d != "none" for d in self.dynamics)

    @property
    def on_tendons(self) -> bool:
        """Whether any actuator pulls a tendon."""
        return any(t >= 0 for t in self.tendon)

    @property
    def nu(self) -> int:
        """Number of actuators."""
        return len(self.names)


@struct.dataclass
class TerrainGrid:
    """The static world geoms of one type, binned into a uniform ``(x, y)`` grid (:func:`jaxmor.with_geom_grids`).

    Each step, every robot geom of ``robot`` looks up the cell under its centre (clamped to the grid) and is
    tested against the ``capacity`` world geoms that cell lists, so that the step's program and cost follow the
    robot geoms and the capacity, never the number of world geoms (``docs/design/collision.md``, "Terrain").

    Attributes:
        kind: the :class:`GeomType` of every binned world geom (static).
        robot: the robot geoms (model indices) tested against the grid, in this order (static).
        shape: ``(nx, ny)`` the number of cells along ``x`` and ``y`` (static).
        capacity: ``C``, the entries of every cell (static).
        fingerprint: a digest of what the grid was built from (the world geoms' poses and sizes, the robot geoms'
            sizes, ``opt.contact_reach``); the step refuses a model whose values no longer match (static).
        world: (nw,) int32 model index of each binned world geom.
        cells: (nx * ny, C) int32 the world geoms (indices into ``world``) whose reach overlaps each cell,
            ``-1`` padding; cell ``(i, j)`` is row ``i * ny + j``.
        allowed: (nr, nw) bool whether each robot geom may collide with each world geom (the collision filters).
        origin: (2,) the ``(x, y)`` of the grid's lower corner [m].
        cell_size: () the side of a cell [m].
    """

    kind: GeomType = struct.field(pytree_node=False)
    robot: tuple[int, ...] = struct.field(pytree_node=False)
    shape: tuple[int, int] = struct.field(pytree_node=False)
    capacity: int = struct.field(pytree_node=False)
    fingerprint: str = struct.field(pytree_node=False)
    world: jax.Array = leaf(("nw",), kind="i")
    cells: jax.Array = leaf(("ncell", "capacity"), kind="i")
    allowed: jax.Array = leaf(("nr", "nw"), kind="b")
    origin: jax.Array = leaf((2,))
    cell_size: jax.Array = leaf(())


@struct.dataclass
class HeightField:
    """A height field that the ground holds beside its plane (:func:`jaxmor.with_height_field`, MJCF ``<hfield>``):
    heights on a regular ``(x, y)`` grid, two triangles per cell (:mod:`jaxmor.sim.collision.height_field`).

    Attributes:
        heights: (ny, nx) the surface's height at each grid vertex, world ``z`` [m]; row ``i`` lies at ``y = origin[1]
            + i spacing[1]``, column ``j`` at ``x = origin[0] + j spacing[0]`` (MuJoCo's ``hfield_data`` order). A leaf:
            batched per world (terrain randomized per world) and differentiable.
        origin: (2,) the ``(x, y)`` of vertex ``(0, 0)`` [m].
        spacing: (2,) the grid's step along ``x`` and ``y`` [m].
        friction: () the field's Coulomb friction coefficient, combined with a geom's as the ground's is [-].
        restitution: () its coefficient of restitution, combined as the maximum [-].
        window: vertices per side of the square of field vertices that each box and hull geom on the ground searches
            around its centre for vertices inside it (static; 0 when the model has none; set by
            :func:`jaxmor.with_height_field`, :func:`jaxmor.combine` and :func:`jaxmor.with_ground_contact` from the
            geoms' sizes; :func:`jaxmor.modeling.height_field.field_window`).
    """

    heights: jax.Array = leaf(("ny", "nx"), randomize="terrain.heights", domain="finite")
    origin: jax.Array = leaf((2,))
    spacing: jax.Array = leaf((2,))
    friction: jax.Array = leaf((), randomize="terrain.friction", domain="non-negative")
    restitution: jax.Array = leaf(())
    window: int = struct.field(pytree_node=False, default=0)


@struct.dataclass
class Sites:
    """Named frames fixed on links (MJCF ``<site>``), ``ns`` of them: what sensors refer to.

    Attributes:
        names: each site's name (static).
        link: the link (index into ``Model.link_names``) each site is fixed on, ``-1`` for the world (static).
        shape: each site's MJCF ``type`` (``"sphere"``, ``"capsule"``, ``"ellipsoid"``, ``"cylinder"``, ``"box"``;
            static): with ``size``, the zone of a touch sensor on it.
        rotation: (ns, 3, 3) orientation of each site in its link's frame.
        translation: (ns, 3) origin of each site in its link's frame [m].
        size: (ns, 3) each site's MJCF ``size`` [m]: a sphere's radius, a capsule's or a cylinder's radius and
            half-length, an ellipsoid's radii, a box's half-sizes (unused values: MuJoCo's default 0.005).
    """

    rotation: jax.Array = leaf(("ns", 3, 3))
    translation: jax.Array = leaf(("ns", 3))
    size: jax.Array = leaf(("ns", 3))
    names: tuple[str, ...] = struct.field(pytree_node=False, default=())
    link: tuple[int, ...] = struct.field(pytree_node=False, default=())
    shape: tuple[str, ...] = struct.field(pytree_node=False, default=())


def empty_sites() -> Sites:
    """No sites."""
    return Sites(jnp.zeros((0, 3, 3)), jnp.zeros((0, 3)), jnp.zeros((0, 3)))


@struct.dataclass
class Sensors:
    """The sensors of a model (MJCF ``<sensor>``), ``n`` of them, read by :func:`jaxmor.read_sensors`.

    Each sensor reads one object: ``obj_type`` says which table ``obj_id`` indexes: ``"joint"`` (the 1-DoF
    joints, ``Model.joint_names``), ``"ball"`` (the ball joints, :func:`jaxmor.model.ball_joints`), ``"actuator"``
    (the affine actuators, ``Model.affine``), ``"site"`` (``Model.sites``), ``"xbody"`` (a link's frame,
    ``Model.link_names``), ``"body"`` (an MJCF body's inertial frame, ``inertial_*`` below), ``"subtree"`` (the
    bodies, ``Model.body_names``; ``-1`` the world: all of them), ``"tendon"`` (``Model.tendons``) or ``""``
    (none). A frame sensor may be read in a
    reference frame (``ref_type``/``ref_id``, the same tables; ``""``/``-1`` for the world frame).

    Attributes:
        names: each sensor's name (static).
        kinds: each sensor's MuJoCo type (``"jointpos"``, ``"framequat"``, ...) (static).
        dims: the number of values each sensor reads (static).
        obj_type, obj_id: the object each sensor reads (static).
        ref_type, ref_id: its reference frame (static).
        inertial_link: the link of each inertial frame (static); an inertial frame is read for its position only.
        noise: (n,) standard deviation of each sensor's noise, in its unit: metadata, as in MuJoCo (never
            added to a reading).
        cutoff: (n,) each sensor's cutoff, in its unit: a positive one clamps the reading to
            ``[-cutoff, cutoff]``; 0: none.
        inertial_translation: (ni, 3) the centre of mass of each inertial frame in its link's frame [m].
        magnetic: (3,) the global magnetic flux, world frame, in the description's unit (MJCF ``<option
            magnetic>``, default ``(0, -0.5, 0)``).
    """

    noise: jax.Array = leaf(("nsensor",))
    cutoff: jax.Array = leaf(("nsensor",))
    inertial_translation: jax.Array = leaf(("ni", 3))
    magnetic: jax.Array = leaf((3,))
    names: tuple[str, ...] = struct.field(pytree_node=False, default=())
    kinds: tuple[str, ...] = struct.field(pytree_node=False, default=())
    dims: tuple[int, ...] = struct.field(pytree_node=False, default=())
    obj_type: tuple[str, ...] = struct.field(pytree_node=False, default=())
    obj_id: tuple[int, ...] = struct.field(pytree_node=False, default=())
    ref_type: tuple[str, ...] = struct.field(pytree_node=False, default=())
    ref_id: tuple[int, ...] = struct.field(pytree_node=False, default=())
    inertial_link: tuple[int, ...] = struct.field(pytree_node=False, default=())


def empty_sensors() -> Sensors:
    """No sensors (MuJoCo's default magnetic flux)."""
    return Sensors(jnp.zeros((0,)), jnp.zeros((0,)), jnp.zeros((0, 3)), jnp.array([0.0, -0.5, 0.0]))


@struct.dataclass
class Tendons:
    """Fixed tendons (MJCF ``<tendon><fixed>``), ``nt`` of them: each a length ``L = sum_i c_i q_i`` over hinges and
    slides, with a Jacobian of constant rows (:mod:`jaxmor.sim.tendons`, MuJoCo's semantics).

    Attributes:
        names: each tendon's name (static).
        joint_q, joint_u: per tendon, the ``q`` and ``u`` indices of the joints it sums (static).
        coefficient: (nw,) the coefficient ``c_i`` of each joint of each tendon, tendon after tendon, in
            ``joint_q`` order [m/rad, m/m or -; the tendon's length unit per joint unit].
        lower, upper: (nt,) the length limits [m or rad] (``-inf``/``inf`` where unlimited): unilateral rows of the
            velocity problem and of the position pass, like a joint's.
        spring_lower, spring_upper: (nt,) the spring's dead band [m or rad]: ``-k (L - spring_upper)`` above it,
            ``-k (L - spring_lower)`` below it, nothing inside (MuJoCo's ``springlength``; by default both the
            length at ``Model.q_default``).
        stiffness: (nt,) ``k`` [N/m or Nm/rad], integrated implicitly like a joint's spring.
        damping: (nt,) viscous damping ``-b dL/dt`` [N s/m or Nm s/rad], integrated like a joint's (trapezoidal).
        friction: (nt,) the friction loss [N or Nm]: a Coulomb row on the tendon's velocity, like a joint's.
        armature: (nt,) inertia added to the mass matrix as ``armature J^T J`` [kg or kg m^2].
    """

    coefficient: jax.Array = leaf(("ntj",))
    lower: jax.Array = leaf(("nt",))
    upper: jax.Array = leaf(("nt",))
    spring_lower: jax.Array = leaf(("nt",))
    spring_upper: jax.Array = leaf(("nt",))
    stiffness: jax.Array = leaf(("nt",), randomize="tendon.stiffness", domain="non-negative")
    damping: jax.Array = leaf(("nt",), randomize="tendon.damping", domain="non-negative")
    friction: jax.Array = leaf(("nt",), randomize="tendon.friction", domain="non-negative")
    armature: jax.Array = leaf(("nt",), randomize="tendon.armature", domain="non-negative")
    names: tuple[str, ...] = struct.field(pytree_node=False, default=())
    joint_q: tuple[tuple[int, ...], ...] = struct.field(pytree_node=False, default=())
    joint_u: tuple[tuple[int, ...], ...] = struct.field(pytree_node=False, default=())

    @property
    def nt(self) -> int:
        """Number of tendons."""
        return len(self.names)


def empty_tendons() -> Tendons:
    """No tendons."""
    zero = jnp.zeros((0,))
    return Tendons(zero, zero, zero, zero, zero, zero, zero, zero, zero)


@struct.dataclass
class Equalities:
    """Equality constraints (MJCF ``<equality>``), held as bilateral rows of every step's velocity problem
    (:mod:`jaxmor.sim.equality` has the rows and their residuals, MuJoCo's).

    ``k`` point constraints come first, each ``connect`` (3 rows: two points coincide) or ``weld`` (6 rows: the
    two points coincide and the two bodies keep their relative orientation; 3 with ``torquescale`` 0), then
    ``m`` joint couplings (1 row each: ``q1 - q1_ref = sum_i c_i (q2 - q2_ref)^i``, or ``q1 - q1_ref = c_0``
    without a second joint), then ``p`` tendon couplings (the same with the lengths of two fixed tendons,
    :class:`Tendons`, for the joint positions).

    Attributes:
        names: each constraint's name (points, then joints; static).
        point_body: (k, 2) each point constraint's bodies (body1, body2; ``-1`` the world or a mocap body; static).
        point_mocap: (k, 2) the mocap body (an index into ``Model.mocap_links``) of each side whose body is one,
            ``-1`` elsewhere; such a side's anchor and frame are in the mocap body's frame, which the State's
            ``mocap_pos`` and ``mocap_quat`` place (static).
        point_weld: (k,) whether each point constraint is a weld (static).
        point_rotation_rows: (k,) whether a weld has its 3 orientation rows (``torquescale`` > 0; static).
        point_anchor: (k, 2, 3) the point on body1, then the point on body2, each in its body's frame (the world's
            for body ``-1``, unless a mocap body's) [m].
        point_frame: (k, 2, 4) a frame on each body (quaternion ``w x y z`` in its body's frame) whose orientations a
            weld keeps equal: on body1 body2's orientation relative to body1 at the reference (or ``relpose``'s),
            on body2 the identity; a weld by sites, the two sites' orientations (unused by a connect).
        point_torque_scale: (k,) the weight of a weld's orientation rows (MJCF ``torquescale``) [m].
        joint_q: (m, 2) the ``q`` index of each coupling's joint1 and joint2 (``-1``: none; static).
        joint_u: (m, 2) their velocity indices (``-1``: none; static).
        joint_polycoef: (m, 5) the polynomial's coefficients ``c_0 .. c_4`` [m or rad, -, 1/m or 1/rad, ...].
        joint_reference: (m, 2) ``q1_ref``, ``q2_ref`` [m or rad] (MuJoCo's ``qpos0`` of the two joints).
        tendon: (p, 2) the tendons (indices into ``Model.tendons``) of each tendon coupling (``-1``: none; static).
        tendon_polycoef: (p, 5) their polynomials' coefficients, as ``joint_polycoef``.
        tendon_reference: (p, 2) the two tendons' lengths at ``Model.q_default`` [m or rad] (MuJoCo's
            ``tendon_length0``).
        active: (k + m + p,) 1 where a constraint acts, 0 where it does not (MJCF ``active``) [-]; a float so that
            ``jax.grad`` takes the Model whole (its gradient is zero); any nonzero value acts, an inactive constraint's
            rows are zero.
    """

    point_anchor: jax.Array = leaf(("np", 2, 3))
    point_frame: jax.Array = leaf(("np", 2, 4))
    point_torque_scale: jax.Array = leaf(("np",))
    joint_polycoef: jax.Array = leaf(("nj", 5))
    joint_reference: jax.Array = leaf(("nj", 2))
    active: jax.Array = leaf(("ne",))
    names: tuple[str, ...] = struct.field(pytree_node=False, default=())
    point_body: tuple[tuple[int, int], ...] = struct.field(pytree_node=False, default=())
    point_weld: tuple[bool, ...] = struct.field(pytree_node=False, default=())
    point_rotation_rows: tuple[bool, ...] = struct.field(pytree_node=False, default=())
    point_mocap: tuple[tuple[int, int], ...] = struct.field(pytree_node=False, default=())
    joint_q: tuple[tuple[int, int], ...] = struct.field(pytree_node=False, default=())
    joint_u: tuple[tuple[int, int], ...] = struct.field(pytree_node=False, default=())
    tendon_polycoef: jax.Array = leaf(("nt", 5), default_factory=lambda: jnp.zeros((0, 5)))
    tendon_reference: jax.Array = leaf(("nt", 2), default_factory=lambda: jnp.zeros((0, 2)))
    tendon: tuple[tuple[int, int], ...] = struct.field(pytree_node=False, default=())

    @property
    def rows(self) -> int:
        """Number of solver rows: 3 per connect, 3 or 6 per weld, 1 per joint or tendon coupling."""
        return sum(6 if rot else 3 for rot in self.point_rotation_rows) + len(self.joint_q) + len(self.tendon)


def empty_equalities() -> Equalities:
    """No equality constraints."""
    return Equalities(
        jnp.zeros((0, 2, 3)),
        jnp.zeros((0, 2, 4)),
        jnp.zeros((0,)),
        jnp.zeros((0, 5)),
        jnp.zeros((0, 2)),
        jnp.zeros((0,)),
    )


@dataclasses.dataclass(frozen=True)
class Keyframe:
    """A named state of a model (an MJCF ``<key>``), in jaxmor's conventions (:func:`jaxmor.set_keyframe`).

    Attributes:
        name: its name.
        time: the simulated time [s].
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities (a free joint's angular velocity in the world frame).
        ctrl: (nu,) controls of the affine actuators.
        mocap_pos: (3 nmocap,) the mocap bodies' positions [m], body after body (``Model.mocap_links``' order);
            ``None``: where the model puts them.
        mocap_quat: (4 nmocap,) their quaternions ``w x y z``, body after body; ``None``: as the model turns them.
        act: (nu,) the affine actuators' activations (``State.act``); ``None``: zero.
    """

    name: str
    time: float
    q: tuple[float, ...]
    u: tuple[float, ...]
    ctrl: tuple[float, ...]
    mocap_pos: tuple[float, ...] | None = None
    mocap_quat: tuple[float, ...] | None = None
    act: tuple[float, ...] | None = None


@struct.dataclass
class Model:
    """A robot compiled for simulation: topology and index tables (static) and physical parameters (leaves).

    Fixed joints are merged: ``nb`` bodies remain, each moved by one joint relative to its parent
    body (or the world). Every link of the description keeps its frame (``link_*``) for kinematics
    and contacts. Body ``i``'s frame is the child-link frame of its joint. Counts: ``nl`` links,
    ``ng`` collision geoms, ``nq`` coordinates, ``nv`` velocities, ``nj`` 1-DoF joints.

    Attributes:
        name: robot name (static).
        source: file the model was loaded from, or ``"<string>"`` (static).
        nq: number of generalized coordinates (static).
        nv: number of generalized velocities (static).
        body_names: name of each body (its link) (static).
        body_parent: parent body of each body, ``-1`` for the world (static). Parents precede children.
        body_joint_type: :class:`JointType` of each body's joint (static).
        body_joint_name: the description's joint moving each body, ``""`` for an implicit floating
            base (static).
        body_q_start, body_v_start: first coordinate / velocity index of each body's joint (static).
        dof_body: body moved by each velocity (static, ``nv``).
        dof_rotational: whether each velocity rotates its body (revolute and ball joints, a free joint's angular
            velocity) rather than translating it (static, ``nv``).
        joint_names: names of the 1-DoF joints in the order of their velocities (static, ``nj``).
        joint_q, joint_u: index in ``q`` and in ``u`` of each 1-DoF joint, in ``joint_names`` order
            (static, ``nj``).
        free_body: the bodies with a free joint (static).
        free_q, free_u: first index in ``q`` and in ``u`` of each free joint (static). (Ball joints have no table
            of their own: :func:`jaxmor.model.ball_joints` reads them off ``body_joint_type``.)
        link_names: every link except ``world`` (static).
        link_body: the body carrying each link, ``-1`` for links welded to the world (static).
        geom_type: :class:`GeomType` of each collision geom (static).
        geom_link: index of each geom's link in ``link_names``, ``-1`` for geoms of the ``world``
            link itself (static obstacles) (static).
        geom_names: name of each geom: the ``<collision name=...>``, or ``"<link>/<k>"`` for the k-th
            unnamed collision of a link (static).
        geom_body: body carrying each geom, ``-1`` for geoms welded to the world (static).
        geom_mesh: index of each geom's hull in ``mesh_vertices``/``mesh_planes``, ``-1`` for a primitive (an
            ellipsoid's: the hull that stands for it in geom pairs, ``jaxmor.io.mesh.ellipsoid_hull``) (static).
        mesh_vertex_count: the number of vertices of each hull; the rows after them in ``mesh_vertices`` are
            padding, never used as contact points (static).
        mesh_faces: each hull's faces, one ring of vertex indices (rows of ``mesh_vertices``) per face plane in
            ``mesh_planes`` order, in order around the face (static; :attr:`jaxmor.io.mesh.Hull.faces`).
        mesh_edges: each hull's edges as pairs of vertex indices (static).
        geom_ground: whether each geom touches the ground (static; all by default,
            :func:`jaxmor.with_ground_contact` or the description's ``<ground_contact>`` choose).
        mesh_geoms: ``(link name, mesh file)`` of collision meshes left out (``load_urdf(..., meshes="ignore")``),
            kept by name and not simulated (static).
        urdf_joints: ``(name, type)`` of every joint of the description, fixed ones included, with the
            URDF's type names (static).
        ground: whether the world has a ground plane (``jaxmor.add_ground``) (static).
        contact_pairs: pairs of geom indices tested for self-collision (static; empty unless enabled).
        collision_exclude: pairs of geom indices that :func:`jaxmor.with_self_collision` never pairs, from the
            description's ``<disable_collisions link1 link2/>`` elements (static).
        mocap_links: the index in ``link_names`` of each mocap body (MJCF ``mocap="true"``): a link welded to the
            world whose world pose is the State's ``mocap_pos``/``mocap_quat``, not its ``link_rotation`` and
            ``link_translation`` (which give its initial pose) (static; empty without mocap bodies).
        opt: the simulation options (time step, gravity, solver sweeps).
        body_tree_rotation: (nb, 3, 3) rotation of each joint frame at ``q = 0`` in its parent body's frame.
        body_tree_translation: (nb, 3) origin of each joint frame in its parent body's frame [m].
        body_axis: (nb, 3) unit joint axis in the joint frame (zero for a free or ball joint).
        body_mass: (nb,) mass of each body, fixed children merged in [kg].
        body_com: (nb, 3) centre of mass in the body frame [m].
        body_inertia: (nb, 3, 3) rotational inertia about the centre of mass, body axes [kg m^2].
        link_rotation: (nl, 3, 3) rotation of each link frame in its body's frame.
        link_translation: (nl, 3) origin of each link frame in its body's frame [m].
        geom_size: (ng, 3) box half sizes; sphere ``(r, 0, 0)``; cylinder and capsule
            ``(r, half length, 0)``; mesh: the half sizes of its hull's bounding box in the geom frame [m].
        geom_rotation: (ng, 3, 3) geom orientation in its body's frame.
        geom_translation: (ng, 3) geom centre in its body's frame [m].
        geom_friction: (ng,) Coulomb friction coefficient of each geom [-] (URDF gives none: 0.8, not given).
        geom_friction_given: whether each geom's friction was given (by the description or a setter) rather
            than defaulted; a geom without one takes the other surface's (static).
        geom_priority: each geom's contact priority (MJCF ``priority``, 0 for URDF geoms): a contact takes the
            friction of the surface of higher priority, and combines equal ones by ``opt.friction_rule``; the
            ground's is 0 (an MJCF model's priorities are relative to its floor's) (static).
        geom_restitution: (ng,) coefficient of restitution of each geom [-] (default 0).
        mesh_vertices: (nm, V, 3) vertices of each mesh geom's convex hull in the geom frame [m], padded
            with their centroid after ``mesh_vertex_count`` rows (``V``: ``jaxmor.io.mesh.MAX_HULL_VERTICES``, or the
            largest hull's count when a loader's ``max_hull_vertices`` allows more).
        mesh_planes: (nm, P, 4) face planes ``(n, d)`` of each hull in the geom frame: unit outward normal
            and offset, ``n . x <= d`` inside [-, m], padded by repeating the first.
        dof_armature: (nv,) reflected rotor inertia added to the mass matrix diagonal
            [kg m^2 or kg], URDF ``<dynamics rotor_inertia>``.
        dof_damping: (nv,) viscous joint damping [Nm s/rad or N s/m].
        dof_friction: (nv,) Coulomb joint friction [Nm or N].
        dof_effort_limit: (nv,) effort limit [Nm or N] (``inf`` where none); the default actuation
            limits of a new State.
        dof_velocity_limit: (nv,) velocity limit [rad/s or m/s] (``inf`` where none); informational,
            the step does not enforce it.
        dof_lower, dof_upper: (nv,) position limits [rad or m] (``-inf``/``inf`` where none). A ball joint's three
            entries hold its cone limit (MuJoCo's ``range``): 0 and the largest rotation angle [rad].
        dof_stiffness: (nv,) joint spring stiffness [Nm/rad or N/m] (MJCF ``stiffness``; 0 for URDF joints): a
            passive torque ``stiffness (springref - q)``, integrated implicitly like the PD.
        dof_springref: (nv,) the position at which each joint's spring is relaxed [rad or m].
        dof_actuator_force_lower, dof_actuator_force_upper: (nv,) bounds of each velocity's total actuator force
            [Nm or N] (MJCF ``actuatorfrcrange``): the affine and DC-motor actuators' generalized force on it,
            summed, is clamped to them (:func:`jaxmor.sim.forces.actuator_joint_force`); ``-inf``/``inf``
            where none (URDF joints, free joints).
        q_default: (nq,) the coordinates a new State starts from (:func:`jaxmor.init_state`,
            :func:`jaxmor.neutral_q`) [m, -, rad]: as a URDF loads, every free joint at the origin with the
            identity quaternion and every 1-DoF joint at 0 clipped into its limits; as an MJCF loads, MuJoCo's
            ``qpos0`` (free bodies where the file puts them, hinges and slides at their ``ref``, unclipped, ball
            joints at the identity quaternion);
            :func:`jaxmor.add_free_body` and :func:`jaxmor.combine` set the poses they are given.
        ground_height: () height of the ground plane (normal +z) [m].
        ground_friction: () friction coefficient of the ground [-].
        ground_restitution: () coefficient of restitution of the ground [-].
        actuators: the DC-motor actuators.
        battery: the actuators' supply; disabled unless ``jaxmor.with_battery`` gave one.
        affine: the affine (MuJoCo-style) actuators.
        keyframes: the description's named states (MJCF ``<key>``), for :func:`jaxmor.set_keyframe` (static).
        terrain: the world geoms binned into grids (:class:`TerrainGrid`, one per geom type), which collide with
            the robot geoms without contact pairs (:func:`jaxmor.with_geom_grids`); empty when every world geom is
            in ``contact_pairs``.
        sites: the named frames fixed on links (:class:`Sites`, MJCF ``<site>``).
        sensors: the sensors (:class:`Sensors`, MJCF ``<sensor>``), read by :func:`jaxmor.read_sensors`.
        equality: the equality constraints (:class:`Equalities`, MJCF ``<equality>``).
        tendons: the fixed tendons (:class:`Tendons`, MJCF ``<tendon><fixed>``).
        height_field: the ground's height field (:class:`HeightField`), ``None`` without one; the geoms that touch
            the ground touch it where it lies above the plane.
        free_friction_u: first velocity index of each free joint whose six velocities have friction-loss rows
            in the solver (static; the free joints with a ``dof_friction`` given at build time, MJCF
            ``frictionloss``): the linear rows bound the world-frame velocity of the body origin, the angular
            ones the body-frame angular velocity, each by ``dof_friction`` as MuJoCo's. Elsewhere a free
            joint's ``dof_friction`` has no effect.
        max_delay: the longest command delay the State's buffers hold [physics steps] (static; 0: no delay, no
            buffers): ``actuators.delay`` and ``affine.delay`` are clamped to it (:func:`jaxmor.with_command_delay`).
    """

    # Names, counts and the topology (static).
    name: str = struct.field(pytree_node=False)
    source: str = struct.field(pytree_node=False)
    nq: int = struct.field(pytree_node=False)
    nv: int = struct.field(pytree_node=False)
    body_names: tuple[str, ...] = struct.field(pytree_node=False)
    body_parent: tuple[int, ...] = struct.field(pytree_node=False)
    body_joint_type: tuple[JointType, ...] = struct.field(pytree_node=False)
    body_joint_name: tuple[str, ...] = struct.field(pytree_node=False)
    body_q_start: tuple[int, ...] = struct.field(pytree_node=False)
    body_v_start: tuple[int, ...] = struct.field(pytree_node=False)
    dof_body: tuple[int, ...] = struct.field(pytree_node=False)
    dof_rotational: tuple[bool, ...] = struct.field(pytree_node=False)
    joint_names: tuple[str, ...] = struct.field(pytree_node=False)
    joint_q: tuple[int, ...] = struct.field(pytree_node=False)
    joint_u: tuple[int, ...] = struct.field(pytree_node=False)
    free_body: tuple[int, ...] = struct.field(pytree_node=False)
    free_q: tuple[int, ...] = struct.field(pytree_node=False)
    free_u: tuple[int, ...] = struct.field(pytree_node=False)
    link_names: tuple[str, ...] = struct.field(pytree_node=False)
    link_body: tuple[int, ...] = struct.field(pytree_node=False)
    geom_type: tuple[GeomType, ...] = struct.field(pytree_node=False)
    geom_link: tuple[int, ...] = struct.field(pytree_node=False)
    geom_names: tuple[str, ...] = struct.field(pytree_node=False)
    geom_body: tuple[int, ...] = struct.field(pytree_node=False)
    geom_friction_given: tuple[bool, ...] = struct.field(pytree_node=False)
    geom_priority: tuple[int, ...] = struct.field(pytree_node=False)
    geom_mesh: tuple[int, ...] = struct.field(pytree_node=False)
    mesh_vertex_count: tuple[int, ...] = struct.field(pytree_node=False)
    mesh_faces: tuple[tuple[tuple[int, ...], ...], ...] = struct.field(pytree_node=False)
    mesh_edges: tuple[tuple[tuple[int, int], ...], ...] = struct.field(pytree_node=False)
    geom_ground: tuple[bool, ...] = struct.field(pytree_node=False)
    mesh_geoms: tuple[tuple[str, str], ...] = struct.field(pytree_node=False)
    urdf_joints: tuple[tuple[str, str], ...] = struct.field(pytree_node=False)
    ground: bool = struct.field(pytree_node=False)
    contact_pairs: tuple[tuple[int, int], ...] = struct.field(pytree_node=False)
    collision_exclude: tuple[tuple[int, int], ...] = struct.field(pytree_node=False)
    mocap_links: tuple[int, ...] = struct.field(pytree_node=False)
    # Options.
    opt: Options
    # Bodies, links and geoms.
    body_tree_rotation: jax.Array = leaf(("nb", 3, 3))
    body_tree_translation: jax.Array = leaf(("nb", 3))
    body_axis: jax.Array = leaf(("nb", 3))
    body_mass: jax.Array = leaf(("nb",), randomize="body.mass", domain="positive")
    body_com: jax.Array = leaf(("nb", 3), randomize="body.com", domain="finite")
    body_inertia: jax.Array = leaf(("nb", 3, 3))
    link_rotation: jax.Array = leaf(("nl", 3, 3))
    link_translation: jax.Array = leaf(("nl", 3))
    geom_size: jax.Array = leaf(("ng", 3))
    geom_rotation: jax.Array = leaf(("ng", 3, 3))
    geom_translation: jax.Array = leaf(("ng", 3))
    geom_friction: jax.Array = leaf(("ng",), randomize="geom.friction", domain="non-negative")
    geom_restitution: jax.Array = leaf(("ng",), randomize="geom.restitution", domain="in [0, 1]")
    mesh_vertices: jax.Array = leaf(("nm", "mesh_vertices", 3))
    mesh_planes: jax.Array = leaf(("nm", "mesh_planes", 4))
    # Per velocity.
    dof_armature: jax.Array = leaf(("nv",), randomize="joint.armature", domain="non-negative")
    dof_damping: jax.Array = leaf(("nv",), randomize="joint.damping", domain="non-negative")
    dof_friction: jax.Array = leaf(("nv",), randomize="joint.friction", domain="non-negative")
    dof_effort_limit: jax.Array = leaf(("nv",))
    dof_velocity_limit: jax.Array = leaf(("nv",))
    dof_lower: jax.Array = leaf(("nv",))
    dof_upper: jax.Array = leaf(("nv",))
    dof_stiffness: jax.Array = leaf(("nv",), randomize="joint.stiffness", domain="non-negative")
    dof_springref: jax.Array = leaf(("nv",))
    dof_actuator_force_lower: jax.Array = leaf(("nv",))
    dof_actuator_force_upper: jax.Array = leaf(("nv",))
    # Per coordinate.
    q_default: jax.Array = leaf(("nq",))
    # The ground.
    ground_height: jax.Array = leaf((), randomize="ground.height", domain="finite")
    ground_friction: jax.Array = leaf((), randomize="ground.friction", domain="non-negative")
    ground_restitution: jax.Array = leaf((), randomize="ground.restitution", domain="in [0, 1]")
    # Actuators.
    actuators: MotorActuators
    battery: Battery
    affine: AffineActuators
    keyframes: tuple[Keyframe, ...] = struct.field(pytree_node=False, default=())
    terrain: tuple[TerrainGrid, ...] = ()
    sites: Sites = struct.field(default_factory=empty_sites)
    sensors: Sensors = struct.field(default_factory=empty_sensors)
    equality: Equalities = struct.field(default_factory=empty_equalities)
    tendons: Tendons = struct.field(default_factory=empty_tendons)
    height_field: HeightField | None = None
    free_friction_u: tuple[int, ...] = struct.field(pytree_node=False, default=())
    max_delay: int = struct.field(pytree_node=False, default=0)

    @property
    def nb(self) -> int:
        """Number of bodies after merging fixed joints."""
        return len(self.body_names)

    @property
    def nl(self) -> int:
        """Number of links (frames)."""
        return len(self.link_names)

    @property
    def ng(self) -> int:
        """Number of simulated collision geoms."""
        return len(self.geom_type)

    @property
    def nj(self) -> int:
        """Number of 1-DoF joints."""
        return len(self.joint_names)

    @property
    def na(self) -> int:
        """Number of DC-motor actuators."""
        return len(self.actuators.names)

    @property
    def nu(self) -> int:
        """Number of affine actuators (controls)."""
        return len(self.affine.names)

    @property
    def floating_base(self) -> bool:
        """Whether the model has a free joint."""
        return bool(self.free_body)


@struct.dataclass
class ActuatorState:
    """What the DC-motor actuators did in the last step, rotor side unless noted; each field (na,).

    Attributes:
        motor_speed: motor speed at the beginning of the step [rad/s]; the region is evaluated at it.
        average_motor_speed: motor speed averaged over the step [rad/s].
        commanded_motor_torque: commanded actuator torque divided by the gear ratio, plus the learned residual
            where the model has one (:mod:`jaxmor.actuation.residual`) [Nm].
        motor_torque: the commanded motor torque clipped to the operating region [Nm].
        joint_loss_torque: friction and damping torque on the driven joint over the step
            [Nm or N, joint side].
        saturation: int32 :class:`jaxmor.MotorSaturation` value of the bound that limited the command.
        valid: bool, whether the actuator could act: its motor valid with the bus voltage and its gear
            ratio positive (an invalid one applied no torque; see :func:`jaxmor.actuation.drive.actuator_validity`).
        current: the winding current over the step [A], ``motor_torque / Kt`` (``Kt`` at the winding
            temperature).
        voltage: the terminal voltage the driver held over the step [V]: ``R i + w / Kv`` without inductance,
            always within ``[-V_bus, V_bus]`` when the region is enforced. Past the overspeed limit
            (``Kv (V_bus + R tau_peak / Kt)``) the braking the region caps at ``-tau_peak`` would need more
            than the bus; the voltage then reads the bus (the driver saturated) while ``current`` and
            ``motor_torque`` keep the model's capped peak, which a real drive could not hold (see
            :mod:`jaxmor.actuation.motor`, "Overspeed"). In monitor mode (the region not enforced) it is the
            voltage the commanded torque would need, unclamped.
        derating: the fraction [0, 1] of the peak torque the temperature limit allowed (1 without a limit;
            :func:`jaxmor.actuation.motor_dynamics.derating_factor`).
    """

    motor_speed: jax.Array
    average_motor_speed: jax.Array
    commanded_motor_torque: jax.Array
    motor_torque: jax.Array
    joint_loss_torque: jax.Array
    saturation: jax.Array
    valid: jax.Array
    current: jax.Array
    voltage: jax.Array
    derating: jax.Array


def _field(dims: tuple, guard: str | None = None, control: bool = False):
    """A State field and what the code derives from its declaration (``dataclasses.fields(State)`` metadata):

    * ``dims``: the shape of one world's value, in the model's counts (``"nq"``, ``"nv"``, ``"na"``, ``"nu"``,
      ``"nc"`` the contact slots of the budget, ``"nd"`` the command buffers' slots, ``"nbl"`` the actuators with
      backlash, ``"nmocap"`` the mocap bodies) and integers; every leaf of a
      nested field (ActuatorState, MotorState) has it;
    * ``guard``: what the step's guard (:func:`jaxmor.sim.guard.runnable`) requires of it before a step:
      ``"bounded"`` finite and within the divergence bound, ``"finite"`` every floating-point leaf finite,
      ``"non_negative"`` no NaN and nothing negative (``inf`` allowed), ``None`` nothing;
    * ``control``: an input a rollout can set per step (``jaxmor.rollout``'s ``controls``).
    """
    return struct.field(metadata={"dims": dims, "guard": guard, "control": control})


@struct.dataclass
class State:
    """One world's state: what changes while simulating, the inputs and the runtime settings.

    Attributes:
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.
        time: () simulated time [s], summed with compensation (``time_compensation``), so it stays exact
            to the dtype's resolution over long runs.
        time_compensation: () the rounding error of ``time`` still to be added [s] (Kahan summation).
        actuator_torque: (na,) commanded actuator torques at the gear outputs [Nm or N]; they hold
            until set again.
        actuator_p_gain: (na,) proportional gains of the actuators' own PD [Nm/rad or N/m, at the gear
            output]: its torque is added to ``actuator_torque`` at the start of every step and the sum is
            clipped to the motor operating region (``jaxmor.set_actuator_pd_gains``).
        actuator_d_gain: (na,) derivative gains of the actuator PD [Nm s/rad or N s/m].
        actuator_position_target: (na,) position targets of the actuator PD, one per actuator, for its
            driven joint [rad or m].
        actuator_velocity_target: (na,) velocity targets of the actuator PD [rad/s or m/s].
        ctrl: (nu,) controls of the affine actuators.
        feedforward_force: (nv,) feed-forward generalized force [N, Nm] (the spec's
            ``setGeneralizedForce``), clamped together with the explicit PD torque to the actuation
            limits; holds until set again.
        pd_p_gain: (nv,) proportional gains of the built-in joint PD controller [Nm/rad or N/m]
            (zero on a floating base's velocities).
        pd_d_gain: (nv,) derivative gains [Nm s/rad or N s/m] (zero on a floating base's velocities).
        pd_position_target: (nv,) joint position targets [rad or m] per velocity index (entries of a
            floating base are unused).
        pd_velocity_target: (nv,) joint velocity targets [rad/s or m/s].
        external_force: (nv,) generalized force of the external forces set for the next step [N, Nm];
            cleared by the step.
        bus_voltage: (na,) bus voltage each actuator's motor sees [V].
        mor_enforced: () bool, clip actuator torques to their motor operating regions (default) or
            only monitor them.
        actuation_limit: (nv,) limit of ``|feedforward_force + PD|`` per velocity [Nm or N]; the URDF
            effort limits unless changed.
        contact_impulse: (nc, 3) last step's contact impulses (normal, tangent 1, tangent 2) of each
            slot of the contact budget [N s], the solver's warm start.
        contact_key: (nc,) int32, the candidate each slot held in the last step (``-1``: none), so that
            a contact's warm start follows it when it changes slot.
        contact_overflow: () int32, the number of candidates within ``opt.contact_reach`` that the last
            step's contact budget left out (0 when the budget held them all).
        friction_impulse: (nv,) last step's joint friction impulses [Nm s or N s] (on a free joint with
            friction rows, ``Model.free_friction_u``: its linear rows, then its body-frame angular ones).
        limit_impulse: (nv,) last step's joint limit impulses [Nm s or N s] (a ball joint's cone-limit impulse, on
            its rotation axis, at its first velocity; zero at its other two).
        equality_impulse: (ne,) last step's impulses of the equality constraints' rows
            (``Model.equality.rows`` of them, in its order) [N s, Nm s or, for a weld's orientation rows, N s].
        actuator_state: the actuator states of the last step.
        motor_state: the motors' dynamic state: winding and housing temperatures, current, LuGre bristles
            (:class:`jaxmor.actuation.motor_dynamics.MotorState`; ``jaxmor.set_motor_temperature``).
        actuator_history: (na, history - 1, 3) the signals of the previous steps that the learned residual
            reads (:mod:`jaxmor.actuation.residual`), the latest first: commanded motor torque [Nm], motor speed
            [rad/s], motor angle [rad]; (na, 0, 3) without a residual.
        nonfinite: () bool, set when a step produced a non-finite ``q`` or ``u``, velocities beyond
            ``jaxmor.sim.guard.DIVERGENCE_BOUND`` or a joint turning more than half a turn in one step
            (``jaxmor.sim.guard.resolved``): the world ran away. It then keeps
            its last ``q``, ``u``, time, impulses and actuator states, and it stops: later steps change
            nothing but clear the external forces, until the flag is cleared
            (``state.replace(nonfinite=False)``, with finite ``q`` and ``u``).
        step_count: () int32, the steps this world has taken since :func:`jaxmor.init_state` (the clock of the
            command delay and of the drive controllers' periods; wraps after ``2**31`` steps).
        command_history: (nd, na, 3) the last ``nd`` commands of each actuator (torque [Nm or N], position
            target [rad or m], velocity target [rad/s or m/s]), a ring buffer indexed by ``step_count % nd``
            (``nd = Model.max_delay + 1``, 0 without delay; :mod:`jaxmor.actuation.latency`).
        ctrl_history: (nd, nu) the last ``nd`` controls of the affine actuators, the same ring.
        controller_integral: (na,) the drive controllers' integral of the position error [rad s or m s; motor side:
            rad s of motor angle] (:class:`jaxmor.DriveController`).
        controller_torque: (na,) the drive controllers' torque held since their last update [Nm or N, at the
            gear outputs].
        backlash_play: (nbl,) for each actuator with backlash (:class:`Backlash`, in actuator order; none without),
            its rotor's angle minus its gear output's, on the joint side [rad or m], in ``[-width/2, width/2]``.
        backlash_rate: (nbl,) its rate, the rotor's velocity minus the gear output's [rad/s or m/s].
        act: (nu,) each affine actuator's activation, the input of its law where it has activation dynamics
            (``Model.affine.dynamics``; MuJoCo's ``act``), in control units; 0 (and unused) for the others.
        mocap_pos: (nmocap, 3) world position of each mocap body (``Model.mocap_links``) [m], set like a control:
            its geoms collide where it puts them; it holds until set again (MuJoCo's ``mocap_pos``).
        mocap_quat: (nmocap, 4) its orientation, a quaternion ``w x y z`` (normalized where it is used; MuJoCo's
            ``mocap_quat``).
        invalid: () bool, set when a step met a runtime value it cannot apply (only possible under
            ``jit``, where the setters cannot check values): a time step that is not positive and finite
            or a negative actuation limit (the world does not advance, as for ``nonfinite``), or an actuator
            that is not valid (it applied no torque; ``actuator_state.valid`` says which). Stays set until
            cleared.
    """

    # The dynamic state.
    q: jax.Array = _field(dims=("nq",), guard="bounded")
    u: jax.Array = _field(dims=("nv",), guard="bounded")
    time: jax.Array = _field(dims=())
    time_compensation: jax.Array = _field(dims=())
    # Inputs, held until set again (external_force: for the next step only).
    actuator_torque: jax.Array = _field(dims=("na",), guard="finite", control=True)
    actuator_p_gain: jax.Array = _field(dims=("na",), guard="finite", control=True)
    actuator_d_gain: jax.Array = _field(dims=("na",), guard="finite", control=True)
    actuator_position_target: jax.Array = _field(dims=("na",), guard="finite", control=True)
    actuator_velocity_target: jax.Array = _field(dims=("na",), guard="finite", control=True)
    ctrl: jax.Array = _field(dims=("nu",), guard="finite", control=True)
    feedforward_force: jax.Array = _field(dims=("nv",), guard="finite", control=True)
    pd_p_gain: jax.Array = _field(dims=("nv",), guard="finite", control=True)
    pd_d_gain: jax.Array = _field(dims=("nv",), guard="finite", control=True)
    pd_position_target: jax.Array = _field(dims=("nv",), guard="finite", control=True)
    pd_velocity_target: jax.Array = _field(dims=("nv",), guard="finite", control=True)
    external_force: jax.Array = _field(dims=("nv",), guard="finite", control=True)
    # Runtime settings.
    bus_voltage: jax.Array = _field(dims=("na",), guard="finite", control=True)
    mor_enforced: jax.Array = _field(dims=())
    actuation_limit: jax.Array = _field(dims=("nv",), guard="non_negative", control=True)
    # The solver's warm start: the last step's impulses.
    contact_impulse: jax.Array = _field(dims=("nc", 3), guard="finite")
    contact_key: jax.Array = _field(dims=("nc",))
    contact_overflow: jax.Array = _field(dims=())
    friction_impulse: jax.Array = _field(dims=("nv",), guard="finite")
    limit_impulse: jax.Array = _field(dims=("nv",), guard="finite")
    equality_impulse: jax.Array = _field(dims=("ne",), guard="finite")
    # Outputs of the last step.
    actuator_state: ActuatorState = _field(dims=("na",))
    motor_state: MotorState = _field(dims=("na",), guard="finite")
    actuator_history: jax.Array = _field(dims=("na", "nhist", 3), guard="finite")
    nonfinite: jax.Array = _field(dims=())
    invalid: jax.Array = _field(dims=())
    # Command delay and drive controllers.
    step_count: jax.Array = _field(dims=())
    command_history: jax.Array = _field(dims=("nd", "na", 3), guard="finite")
    ctrl_history: jax.Array = _field(dims=("nd", "nu"), guard="finite")
    controller_integral: jax.Array = _field(dims=("na",), guard="finite")
    controller_torque: jax.Array = _field(dims=("na",), guard="finite")
    # Backlash: the rotors' play in the gears.
    backlash_play: jax.Array = _field(dims=("nbl",), guard="bounded")
    backlash_rate: jax.Array = _field(dims=("nbl",), guard="bounded")
    # Activation dynamics of the affine actuators.
    act: jax.Array = _field(dims=("nu",), guard="finite")
    # Mocap bodies: poses set like the controls.
    mocap_pos: jax.Array = _field(dims=("nmocap", 3), guard="finite", control=True)
    mocap_quat: jax.Array = _field(dims=("nmocap", 4), guard="finite", control=True)
