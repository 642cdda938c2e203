"""jaxmor: GPU-batched, differentiable articulated-rigid-body simulation whose actuators are DC motors.

The public API is re-exported here; nothing is defined in this module, and importing it changes no
global setting (x64, print options).
"""

from jaxmor.actuation import (
    actuate,
    actuator_index,
    actuator_names,
    actuator_states,
    actuator_torque_bounds,
    actuator_torques,
    affine_joint_force,
    get_actuators,
    is_motor_operating_region_enforced,
    joint_damping,
    joint_friction,
    motor_speeds,
    set_actuator_torque,
    set_actuator_torques,
    set_actuators,
    set_affine_actuators,
    set_bus_voltage,
    set_ctrl,
    set_motor_operating_region_enforced,
    transmission_matrix,
)
from jaxmor.affine import (
    AffineActuatorDefinition,
    AffineActuators,
    affine_force,
    affine_force_at,
    affine_generalized_force,
    clamp_ctrl,
)
from jaxmor.dynamics import bias_force, forward_dynamics, inverse_dynamics, mass_matrix
from jaxmor.errors import ArgumentError, JaxmorError, ModelError
from jaxmor.io.actuators import ActuatorCoupling, ActuatorDefinition
from jaxmor.io.urdf import load_urdf
from jaxmor.kinematics import Poses, forward_kinematics, integrate_positions, link_jacobian, point_jacobian
from jaxmor.model import joint_index, joint_names, joint_q_index, neutral_q, summary
from jaxmor.motor import (
    DcMotorParameters,
    MotorSaturation,
    MotorTorqueBounds,
    clip_motor_torque,
    motor_operating_region_violation,
    motor_torque_bounds,
)
from jaxmor.state import init_state
from jaxmor.types import ActuatorState, Model, MotorActuators, State

__all__ = [
    "ActuatorCoupling",
    "ActuatorDefinition",
    "ActuatorState",
    "AffineActuatorDefinition",
    "AffineActuators",
    "ArgumentError",
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
    "affine_joint_force",
    "actuator_index",
    "actuator_names",
    "actuator_states",
    "actuator_torque_bounds",
    "actuator_torques",
    "affine_force",
    "affine_force_at",
    "affine_generalized_force",
    "bias_force",
    "clamp_ctrl",
    "clip_motor_torque",
    "forward_dynamics",
    "forward_kinematics",
    "get_actuators",
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
    "neutral_q",
    "point_jacobian",
    "set_actuator_torque",
    "set_actuator_torques",
    "set_actuators",
    "set_affine_actuators",
    "set_bus_voltage",
    "set_ctrl",
    "set_motor_operating_region_enforced",
    "summary",
    "transmission_matrix",
]
