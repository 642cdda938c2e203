"""DC-motor actuators in the model and the per-step actuation (transmission, MOR clip).

Placeholder while the actuator issue is in progress.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxmor.motor import DcMotorParameters
from jaxmor.types import MotorActuators


def empty_actuators(nv: int) -> MotorActuators:
    """A :class:`MotorActuators` without actuators for a model with ``nv`` velocities."""
    zero = jnp.zeros((0,))
    return MotorActuators(
        names=(),
        models=(),
        joints=(),
        couplings=(),
        joint_v_index=(),
        transmission=jnp.zeros((0, nv)),
        gear_ratio=zero,
        motor=DcMotorParameters(zero, zero, zero, zero, zero),
        output_damping=zero,
        output_friction=zero,
    )
