"""DC/BLDC motor model and its operating region (EM-MOR).

Placeholder: the full module (free functions, saturation enum) is being written.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct


@struct.dataclass
class DcMotorParameters:
    """Steady-state electrical model of a DC/BLDC motor, rotor side, SI units.

    Every field is an array leaf (a scalar or an array of any shape, all broadcastable),
    so the parameters can be batched with ``vmap`` and differentiated.

    Attributes:
        resistance: winding resistance R [Ohm].
        torque_constant: torque constant Kt [Nm/A].
        velocity_constant: velocity constant Kv [rad/s/V], the inverse of the back-EMF constant.
        bus_voltage: bus voltage V_bus [V].
        peak_torque: peak torque [Nm]; ``inf`` leaves only the voltage limits.
    """

    resistance: jnp.ndarray
    torque_constant: jnp.ndarray
    velocity_constant: jnp.ndarray
    bus_voltage: jnp.ndarray
    peak_torque: jnp.ndarray = float("inf")
