"""jaxmor: GPU-batched, differentiable articulated-rigid-body simulation whose actuators are DC motors."""

from jaxmor.dynamics import bias_force, forward_dynamics, inverse_dynamics, mass_matrix
from jaxmor.errors import ArgumentError, JaxmorError, ModelError
from jaxmor.io.urdf import load_urdf
from jaxmor.kinematics import Poses, forward_kinematics, integrate_positions, link_jacobian, point_jacobian
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
    "inverse_dynamics",
    "link_jacobian",
    "load_urdf",
    "mass_matrix",
    "point_jacobian",
]
