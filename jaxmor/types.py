"""The pytrees of jaxmor: :class:`Model`, :class:`State` and the structs inside them.

Conventions (see the README's "Conventions" section):

* SI units throughout: m, kg, s, rad, N, Nm, V, Ohm, A.
* A floating base's coordinates are ``q = [p (3), quat w x y z (4), joints...]`` with ``p`` the
  base origin in the world frame; its velocities are ``u = [v (3), w (3), joints...]`` with ``v``
  the velocity of the base origin and ``w`` the angular velocity, both in the world frame.
* Revolute, continuous and prismatic joints have one coordinate and one velocity each.
* Topology, counts and names are static (``pytree_node=False``); every physical constant is an
  array leaf, so a model can be batched with ``jax.vmap`` (randomized worlds) and differentiated
  (system identification).
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from jaxmor.affine import AffineActuators
from jaxmor.motor import DcMotorParameters

#: Joint types of a body's joint to its parent after fixed joints are merged.
JOINT_FREE = "free"
JOINT_REVOLUTE = "revolute"
JOINT_PRISMATIC = "prismatic"


@struct.dataclass
class MotorActuators:
    """DC-motor actuators compiled for the step (``na`` actuators, ``nv`` velocities).

    Attributes:
        names: actuator names, in the order of every per-actuator array (static).
        models: model names of the actuators, informational (static).
        joints: name of each actuator's driven joint (static).
        couplings: per actuator, the names of the coupled joints (static); their ratios are in
            ``transmission``.
        joint_v_index: velocity index of each driven joint (static).
        transmission: (na, nv) transmission matrix ``T``: motor speeds ``w_m = T u`` [rad/s],
            joint torques ``T^T tau_m``. Gear ratio at the driven joint's column, coupling ratios at
            the coupled joints' columns.
        gear_ratio: (na,) gear ratio ``G`` [-], motor speed per unit speed of the driven joint.
        motor: motor constants, each field of shape (na,); its ``bus_voltage`` is the default the
            robot description gave. The bus voltage used by the step lives in :class:`State`.
        output_damping: (na,) viscous damping of each actuator at its output [Nm s/rad or N s/m].
        output_friction: (na,) Coulomb friction torque of each actuator at its output [Nm or N].
    """

    names: tuple[str, ...] = struct.field(pytree_node=False)
    models: tuple[str, ...] = struct.field(pytree_node=False)
    joints: tuple[str, ...] = struct.field(pytree_node=False)
    couplings: tuple[tuple[str, ...], ...] = struct.field(pytree_node=False)
    joint_v_index: tuple[int, ...] = struct.field(pytree_node=False)
    transmission: jnp.ndarray
    gear_ratio: jnp.ndarray
    motor: DcMotorParameters
    output_damping: jnp.ndarray
    output_friction: jnp.ndarray

    @property
    def count(self) -> int:
        """Number of actuators."""
        return len(self.names)


@struct.dataclass
class Model:
    """A robot compiled for simulation: topology (static) and physical parameters (array leaves).

    Fixed joints are merged: ``nb`` bodies remain, each moved by one joint relative to its parent
    body (or the world). Every URDF link keeps its frame (``link_*``) for kinematics and contacts.
    Body ``i``'s frame is the child-link frame of its joint. Counts: ``nl`` links, ``ng``
    collision geoms, ``nq`` coordinates, ``nv`` velocities.

    Attributes:
        name: robot name (static).
        source: file the model was loaded from, or ``"<string>"`` (static).
        nq: number of generalized coordinates (static).
        nv: number of generalized velocities (static).
        floating_base: whether body 0 has a free joint (static).
        body_names: name of each body (its URDF link) (static).
        body_parent: parent body of each body, ``-1`` for the world (static). Parents precede children.
        body_joint_type: ``"free"``, ``"revolute"`` or ``"prismatic"`` per body (static).
        body_joint_name: the URDF joint moving each body (static).
        body_q_start, body_v_start: first coordinate / velocity index of each body's joint (static).
        joint_names: names of the movable joints in the order of their velocities, after the
            floating base's (static).
        link_names: every URDF link except ``world`` (static).
        link_body: the body carrying each link, ``-1`` for links welded to the world (static).
        geom_type: ``"box"``, ``"sphere"``, ``"cylinder"`` or ``"capsule"`` per collision geom (static).
        geom_link: index of each geom's link in ``link_names``, ``-1`` for geoms of the ``world``
            link itself (static obstacles) (static).
        geom_names: name of each geom: the ``<collision name=...>``, or ``"<link>/<k>"`` for the k-th
            unnamed collision of a link (static).
        geom_body: body carrying each geom, ``-1`` for geoms welded to the world (static).
        mesh_geoms: ``(link name, mesh file)`` of collision meshes, kept by name and not simulated (static).
        urdf_joints: ``(name, URDF type)`` of every joint of the description, fixed ones included (static).
        ground: whether the world has a ground plane (``jaxmor.add_ground``) (static).
        contact_pairs: pairs of geom indices tested for self-collision (static; empty unless enabled).
        solver_iterations: number of projected Gauss-Seidel sweeps per step (static).
        body_tree_rotation: (nb, 3, 3) rotation of each joint frame at ``q = 0`` in its parent body's frame.
        body_tree_translation: (nb, 3) origin of each joint frame in its parent body's frame [m].
        body_axis: (nb, 3) unit joint axis in the joint frame (zero for a free joint).
        body_mass: (nb,) mass of each body, fixed children merged in [kg].
        body_com: (nb, 3) centre of mass in the body frame [m].
        body_inertia: (nb, 3, 3) rotational inertia about the centre of mass, body axes [kg m^2].
        link_rotation: (nl, 3, 3) rotation of each link frame in its body's frame.
        link_translation: (nl, 3) origin of each link frame in its body's frame [m].
        geom_size: (ng, 3) box half sizes; sphere ``(r, 0, 0)``; cylinder and capsule
            ``(r, half length, 0)`` [m].
        geom_rotation: (ng, 3, 3) geom orientation in its body's frame.
        geom_translation: (ng, 3) geom centre in its body's frame [m].
        geom_friction: (ng,) Coulomb friction coefficient of each geom [-] (URDF has none: default 0.8).
        geom_restitution: (ng,) coefficient of restitution of each geom [-] (default 0).
        dof_armature: (nv,) reflected rotor inertia added to the mass matrix diagonal
            [kg m^2 or kg], URDF ``<dynamics rotor_inertia>``.
        dof_damping: (nv,) viscous joint damping [Nm s/rad or N s/m].
        dof_friction: (nv,) Coulomb joint friction [Nm or N].
        dof_effort_limit: (nv,) effort limit [Nm or N] (``inf`` where none).
        dof_velocity_limit: (nv,) velocity limit [rad/s or m/s] (``inf`` where none).
        dof_lower, dof_upper: (nv,) position limits [rad or m] (``-inf``/``inf`` where none).
        gravity: (3,) gravitational acceleration in the world frame [m/s^2].
        timestep: () time step [s].
        ground_height: () height of the ground plane (normal +z) [m].
        ground_friction: () friction coefficient of the ground [-].
        ground_restitution: () coefficient of restitution of the ground [-].
        actuators: the DC-motor actuators.
        affine: the affine (MuJoCo-style) actuators.
    """

    name: str = struct.field(pytree_node=False)
    source: str = struct.field(pytree_node=False)
    nq: int = struct.field(pytree_node=False)
    nv: int = struct.field(pytree_node=False)
    floating_base: bool = struct.field(pytree_node=False)
    body_names: tuple[str, ...] = struct.field(pytree_node=False)
    body_parent: tuple[int, ...] = struct.field(pytree_node=False)
    body_joint_type: tuple[str, ...] = struct.field(pytree_node=False)
    body_joint_name: tuple[str, ...] = struct.field(pytree_node=False)
    body_q_start: tuple[int, ...] = struct.field(pytree_node=False)
    body_v_start: tuple[int, ...] = struct.field(pytree_node=False)
    joint_names: tuple[str, ...] = struct.field(pytree_node=False)
    link_names: tuple[str, ...] = struct.field(pytree_node=False)
    link_body: tuple[int, ...] = struct.field(pytree_node=False)
    geom_type: tuple[str, ...] = struct.field(pytree_node=False)
    geom_link: tuple[int, ...] = struct.field(pytree_node=False)
    geom_names: tuple[str, ...] = struct.field(pytree_node=False)
    geom_body: tuple[int, ...] = struct.field(pytree_node=False)
    mesh_geoms: tuple[tuple[str, str], ...] = struct.field(pytree_node=False)
    urdf_joints: tuple[tuple[str, str], ...] = struct.field(pytree_node=False)
    ground: bool = struct.field(pytree_node=False)
    contact_pairs: tuple[tuple[int, int], ...] = struct.field(pytree_node=False)
    solver_iterations: int = struct.field(pytree_node=False)
    body_tree_rotation: jnp.ndarray
    body_tree_translation: jnp.ndarray
    body_axis: jnp.ndarray
    body_mass: jnp.ndarray
    body_com: jnp.ndarray
    body_inertia: jnp.ndarray
    link_rotation: jnp.ndarray
    link_translation: jnp.ndarray
    geom_size: jnp.ndarray
    geom_rotation: jnp.ndarray
    geom_translation: jnp.ndarray
    geom_friction: jnp.ndarray
    geom_restitution: jnp.ndarray
    dof_armature: jnp.ndarray
    dof_damping: jnp.ndarray
    dof_friction: jnp.ndarray
    dof_effort_limit: jnp.ndarray
    dof_velocity_limit: jnp.ndarray
    dof_lower: jnp.ndarray
    dof_upper: jnp.ndarray
    gravity: jnp.ndarray
    timestep: jnp.ndarray
    ground_height: jnp.ndarray
    ground_friction: jnp.ndarray
    ground_restitution: jnp.ndarray
    actuators: MotorActuators
    affine: AffineActuators

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
    def na(self) -> int:
        """Number of DC-motor actuators."""
        return len(self.actuators.names)

    @property
    def nu(self) -> int:
        """Number of affine actuators (controls)."""
        return len(self.affine.names)


@struct.dataclass
class ActuatorState:
    """What the DC-motor actuators did in the last step, rotor side unless noted; each field (na,).

    Attributes:
        motor_speed: motor speed at the beginning of the step [rad/s]; the region is evaluated at it.
        average_motor_speed: motor speed averaged over the step [rad/s].
        commanded_motor_torque: commanded actuator torque divided by the gear ratio [Nm].
        motor_torque: the commanded motor torque clipped to the operating region [Nm].
        joint_loss_torque: friction and damping torque on the driven joint over the step
            [Nm or N, joint side].
        saturation: int32 :class:`jaxmor.MotorSaturation` value of the bound that limited the command.
    """

    motor_speed: jnp.ndarray
    average_motor_speed: jnp.ndarray
    commanded_motor_torque: jnp.ndarray
    motor_torque: jnp.ndarray
    joint_loss_torque: jnp.ndarray
    saturation: jnp.ndarray


@struct.dataclass
class State:
    """One world's state: what changes while simulating, and the runtime settings.

    Attributes:
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.
        time: () simulated time [s].
        actuator_torque: (na,) commanded actuator torques at the gear outputs [Nm or N]; they hold
            until set again.
        bus_voltage: (na,) bus voltage each actuator's motor sees [V].
        mor_enforced: () bool, clip actuator torques to their motor operating regions (default) or
            only monitor them.
        actuator_state: the actuator states of the last step.
        ctrl: (nu,) controls of the affine actuators.
        generalized_force: (nv,) feed-forward generalized force [N, Nm], clamped together with the
            explicit PD torque to the actuation limits; holds until set again.
        pd_p_gain: (nv,) proportional gains of the built-in joint PD controller [Nm/rad or N/m]
            (zero on a floating base's velocities).
        pd_d_gain: (nv,) derivative gains [Nm s/rad or N s/m] (zero on a floating base's velocities).
        pd_position_target: (nv,) joint position targets [rad or m] per velocity index (entries of a
            floating base are unused).
        pd_velocity_target: (nv,) joint velocity targets [rad/s or m/s].
        actuation_limit: (nv,) limit of ``|generalized_force + PD|`` per velocity [Nm or N]; the URDF
            effort limits unless changed.
        external_force: (nv,) generalized force of the external forces set for the next step [N, Nm];
            cleared by the step.
        contact_impulse: (nc, 3) last step's contact impulses (normal, tangent 1, tangent 2) [N s],
            the solver's warm start.
        friction_impulse: (nv,) last step's joint friction impulses [Nm s or N s].
        limit_impulse: (nv,) last step's joint limit impulses [Nm s or N s].
        nonfinite: () bool, set when a step produced a non-finite ``q`` or ``u``; the world then keeps
            its last finite ``q`` and ``u`` (it stops advancing) until the state is reset.
    """

    q: jnp.ndarray
    u: jnp.ndarray
    time: jnp.ndarray
    actuator_torque: jnp.ndarray
    bus_voltage: jnp.ndarray
    mor_enforced: jnp.ndarray
    actuator_state: ActuatorState
    ctrl: jnp.ndarray
    generalized_force: jnp.ndarray
    pd_p_gain: jnp.ndarray
    pd_d_gain: jnp.ndarray
    pd_position_target: jnp.ndarray
    pd_velocity_target: jnp.ndarray
    actuation_limit: jnp.ndarray
    external_force: jnp.ndarray
    contact_impulse: jnp.ndarray
    friction_impulse: jnp.ndarray
    limit_impulse: jnp.ndarray
    nonfinite: jnp.ndarray
