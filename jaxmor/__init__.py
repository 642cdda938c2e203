"""jaxmor: GPU-batched, differentiable articulated-rigid-body simulation whose actuators are DC motors."""

from jaxmor.dynamics import bias_force, forward_dynamics, inverse_dynamics, mass_matrix
from jaxmor.errors import ArgumentError, JaxmorError, ModelError
from jaxmor.io.urdf import load_urdf
from jaxmor.kinematics import Poses, forward_kinematics, integrate_positions, link_jacobian, point_jacobian
from jaxmor.model import joint_index, joint_names, joint_q_index, neutral_q, summary
from jaxmor.state import init_state
from jaxmor.types import ActuatorState, Model, MotorActuators, State

__all__ = [
    "ActuatorState",
    "ArgumentError",
    "JaxmorError",
    "Model",
    "ModelError",
    "MotorActuators",
    "Poses",
    "State",
    "bias_force",
    "forward_dynamics",
    "forward_kinematics",
    "integrate_positions",
    "init_state",
    "inverse_dynamics",
    "joint_index",
    "joint_names",
    "joint_q_index",
    "link_jacobian",
    "load_urdf",
    "mass_matrix",
    "neutral_q",
    "point_jacobian",
    "summary",
]
