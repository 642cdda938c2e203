"""jaxmor: GPU-batched, differentiable articulated-rigid-body simulation whose actuators are DC motors.

The public API is re-exported here; nothing is defined in this module, and importing it changes no
global setting (x64, print options).
"""

from jaxmor import envs, robots
from jaxmor.actuation.affine import (
    AffineActuatorDefinition,
    affine_force,
    affine_force_at,
    affine_generalized_force,
    clamp_ctrl,
)
from jaxmor.actuation.backlash import with_backlash
from jaxmor.actuation.controller import with_drive_controller
from jaxmor.actuation.definitions import ActuatorCoupling, ActuatorDefinition, DriveControllerDefinition
from jaxmor.actuation.drive import actuate, actuator_torque_bounds, motor_speeds
from jaxmor.actuation.latency import with_command_delay
from jaxmor.actuation.motor import (
    DcMotorParameters,
    MotorSaturation,
    MotorTorqueBounds,
    clip_motor_torque,
    motor_operating_region_violation,
    motor_torque_bounds,
    motor_torque_bounds_from_constants,
)
from jaxmor.actuation.motor_dynamics import CoggingModel, LugreModel, MotorState, ThermalModel
from jaxmor.actuation.residual import ResidualNetwork
from jaxmor.errors import ArgumentError, JaxmorError, ModelError
from jaxmor.io.mjcf_differences import MujocoDifferenceWarning
from jaxmor.model import (
    actuator_index,
    actuator_names,
    geom_index,
    joint_index,
    joint_names,
    joint_q_index,
    neutral_q,
    summary,
    transmission_matrix,
)
from jaxmor.modeling.actuators import (
    export_actuators,
    get_actuators,
    import_actuators,
    with_actuators,
    with_affine_actuators,
)
from jaxmor.modeling.builder import load_mjcf, load_urdf
from jaxmor.modeling.checkpoint import load_checkpoint, save_checkpoint
from jaxmor.modeling.compose import add_free_body, combine
from jaxmor.modeling.height_field import with_height_field
from jaxmor.modeling.learned import residual_network, with_residual
from jaxmor.modeling.scene import (
    add_ground,
    with_battery,
    with_geom_properties,
    with_ground_contact,
    with_options,
    with_self_collision,
)
from jaxmor.modeling.sensors import with_sensors
from jaxmor.modeling.terrain import with_geom_grids
from jaxmor.modeling.terrain import with_terrain as with_terrain  # deprecated alias (0.5 only), not in __all__
from jaxmor.modeling.world import export_package, export_world, load_world
from jaxmor.sim.batch import init_states, rollout_batch, shard_worlds
from jaxmor.sim.collision import Contacts, collide, contact_budget, contact_count
from jaxmor.sim.dynamics import bias_force, forward_dynamics, inverse_dynamics, mass_matrix
from jaxmor.sim.forces import affine_joint_force, generalized_force, joint_damping, joint_friction
from jaxmor.sim.integrator import integrate_positions
from jaxmor.sim.kinematics import Poses, forward_kinematics, link_jacobian, point_jacobian
from jaxmor.sim.pipeline import rollout, step
from jaxmor.sim.sensors import read_sensors
from jaxmor.state import (
    actuator_states,
    actuator_torques,
    init_state,
    is_motor_operating_region_enforced,
    keyframe_names,
    reset_actuator_state,
    set_actuation_limits,
    set_actuator_pd_gains,
    set_actuator_pd_targets,
    set_actuator_torque,
    set_actuator_torques,
    set_bus_voltage,
    set_ctrl,
    set_external_force,
    set_generalized_force,
    set_keyframe,
    set_motor_operating_region_enforced,
    set_motor_temperature,
    set_pd_gains,
    set_pd_targets,
)
from jaxmor.tools import sysid, terrain
from jaxmor.tools.randomization import Distribution, integers, log_uniform, normal, randomize, scale, uniform
from jaxmor.types import (
    ActuatorState,
    AffineActuators,
    Backlash,
    Battery,
    DriveController,
    Equalities,
    GeomType,
    HeightField,
    JointType,
    Keyframe,
    Model,
    MotorActuators,
    Options,
    Sensors,
    Sites,
    State,
    Tendons,
)
from jaxmor.version import __version__ as __version__  # the package version, not in __all__

__all__ = [
    "ActuatorCoupling",
    "ActuatorDefinition",
    "DriveController",
    "DriveControllerDefinition",
    "ActuatorState",
    "AffineActuatorDefinition",
    "AffineActuators",
    "ArgumentError",
    "Backlash",
    "Battery",
    "CoggingModel",
    "Contacts",
    "DcMotorParameters",
    "Distribution",
    "Equalities",
    "GeomType",
    "HeightField",
    "JaxmorError",
    "JointType",
    "Keyframe",
    "LugreModel",
    "Model",
    "ModelError",
    "MotorActuators",
    "MotorSaturation",
    "MotorState",
    "MotorTorqueBounds",
    "MujocoDifferenceWarning",
    "Options",
    "Poses",
    "ResidualNetwork",
    "Sensors",
    "Sites",
    "State",
    "Tendons",
    "ThermalModel",
    "actuate",
    "actuator_index",
    "actuator_names",
    "actuator_states",
    "actuator_torque_bounds",
    "actuator_torques",
    "add_free_body",
    "add_ground",
    "affine_force",
    "affine_force_at",
    "affine_generalized_force",
    "affine_joint_force",
    "bias_force",
    "clamp_ctrl",
    "clip_motor_torque",
    "collide",
    "combine",
    "contact_budget",
    "contact_count",
    "envs",
    "export_actuators",
    "export_package",
    "export_world",
    "forward_dynamics",
    "forward_kinematics",
    "generalized_force",
    "geom_index",
    "get_actuators",
    "import_actuators",
    "init_state",
    "init_states",
    "integrate_positions",
    "inverse_dynamics",
    "is_motor_operating_region_enforced",
    "joint_damping",
    "joint_friction",
    "joint_index",
    "joint_names",
    "joint_q_index",
    "keyframe_names",
    "link_jacobian",
    "load_checkpoint",
    "load_mjcf",
    "load_urdf",
    "load_world",
    "log_uniform",
    "mass_matrix",
    "motor_operating_region_violation",
    "motor_speeds",
    "motor_torque_bounds",
    "motor_torque_bounds_from_constants",
    "neutral_q",
    "normal",
    "point_jacobian",
    "randomize",
    "read_sensors",
    "residual_network",
    "reset_actuator_state",
    "robots",
    "rollout",
    "rollout_batch",
    "save_checkpoint",
    "integers",
    "scale",
    "set_actuation_limits",
    "set_actuator_pd_gains",
    "set_actuator_pd_targets",
    "set_actuator_torque",
    "set_actuator_torques",
    "set_bus_voltage",
    "set_ctrl",
    "set_external_force",
    "set_generalized_force",
    "set_keyframe",
    "set_motor_operating_region_enforced",
    "set_motor_temperature",
    "set_pd_gains",
    "set_pd_targets",
    "shard_worlds",
    "step",
    "summary",
    "sysid",
    "terrain",
    "transmission_matrix",
    "uniform",
    "with_actuators",
    "with_affine_actuators",
    "with_backlash",
    "with_battery",
    "with_geom_properties",
    "with_height_field",
    "with_ground_contact",
    "with_command_delay",
    "with_drive_controller",
    "with_options",
    "with_residual",
    "with_self_collision",
    "with_sensors",
    "with_geom_grids",
]
