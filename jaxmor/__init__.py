"""jaxmor: GPU-batched, differentiable articulated-rigid-body simulation whose actuators are DC motors.

The public API is re-exported here; nothing is defined in this module, and importing it changes no
global setting (x64, print options).
"""

from jaxmor.actuators import (
    export_actuators,
    get_actuators,
    import_actuators,
    set_actuators,
    set_affine_actuators,
)
from jaxmor.affine import (
    AffineActuatorDefinition,
    affine_force,
    affine_force_at,
    affine_generalized_force,
    clamp_ctrl,
)
from jaxmor.batch import rollout_batch
from jaxmor.build import load_urdf
from jaxmor.collision import Contacts, collide, contact_count
from jaxmor.dynamics import bias_force, forward_dynamics, inverse_dynamics, mass_matrix
from jaxmor.errors import ArgumentError, JaxmorError, ModelError
from jaxmor.forces import (
    actuate,
    actuator_torque_bounds,
    affine_joint_force,
    generalized_force,
    joint_damping,
    joint_friction,
    motor_speeds,
)
from jaxmor.integrator import integrate_positions
from jaxmor.io.actuators import ActuatorCoupling, ActuatorDefinition
from jaxmor.kinematics import Poses, forward_kinematics, link_jacobian, point_jacobian
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
from jaxmor.motor import (
    DcMotorParameters,
    MotorSaturation,
    MotorTorqueBounds,
    clip_motor_torque,
    motor_operating_region_violation,
    motor_torque_bounds,
    motor_torque_bounds_from_constants,
)
from jaxmor.scene import add_ground, enable_self_collision, set_geom_properties
from jaxmor.state import (
    actuator_states,
    actuator_torques,
    init_state,
    is_motor_operating_region_enforced,
    reset_actuator_state,
    set_actuation_limits,
    set_actuator_torque,
    set_actuator_torques,
    set_bus_voltage,
    set_ctrl,
    set_external_force,
    set_generalized_force,
    set_motor_operating_region_enforced,
    set_pd_gains,
    set_pd_targets,
)
from jaxmor.step import rollout, step
from jaxmor.types import (
    ActuatorState,
    AffineActuators,
    GeomType,
    JointType,
    Model,
    MotorActuators,
    Options,
    State,
)

__all__ = [
    "ActuatorCoupling",
    "ActuatorDefinition",
    "ActuatorState",
    "AffineActuatorDefinition",
    "AffineActuators",
    "ArgumentError",
    "GeomType",
    "JointType",
    "Options",
    "Contacts",
    "DcMotorParameters",
    "JaxmorError",
    "Model",
    "ModelError",
    "MotorActuators",
    "MotorSaturation",
    "MotorTorqueBounds",
    "Poses",
    "State",
    "actuate",
    "actuator_index",
    "actuator_names",
    "actuator_states",
    "actuator_torque_bounds",
    "actuator_torques",
    "add_ground",
    "affine_force",
    "affine_force_at",
    "affine_generalized_force",
    "affine_joint_force",
    "bias_force",
    "clamp_ctrl",
    "clip_motor_torque",
    "collide",
    "contact_count",
    "enable_self_collision",
    "forward_dynamics",
    "forward_kinematics",
    "generalized_force",
    "geom_index",
    "export_actuators",
    "get_actuators",
    "import_actuators",
    "init_state",
    "integrate_positions",
    "inverse_dynamics",
    "is_motor_operating_region_enforced",
    "joint_damping",
    "joint_friction",
    "joint_index",
    "joint_names",
    "joint_q_index",
    "link_jacobian",
    "load_urdf",
    "mass_matrix",
    "motor_operating_region_violation",
    "motor_speeds",
    "motor_torque_bounds",
    "motor_torque_bounds_from_constants",
    "neutral_q",
    "point_jacobian",
    "reset_actuator_state",
    "rollout",
    "rollout_batch",
    "set_actuation_limits",
    "set_actuator_torque",
    "set_actuator_torques",
    "set_actuators",
    "set_affine_actuators",
    "set_bus_voltage",
    "set_ctrl",
    "set_external_force",
    "set_generalized_force",
    "set_geom_properties",
    "set_motor_operating_region_enforced",
    "set_pd_gains",
    "set_pd_targets",
    "step",
    "summary",
    "transmission_matrix",
]
