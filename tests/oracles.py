"""Independent test oracles: textbook formulas in plain NumPy, shared by several test files.

Nothing here calls jaxmor, so an expected value computed with these helpers never comes from the code
under test. Conventions follow jaxmor's (and the URDF's): quaternions are ``w x y z``; ``rpy`` is the
URDF's fixed-axis roll, pitch, yaw, ``R = Rz(yaw) Ry(pitch) Rx(roll)``. References computed by
Pinocchio or MuJoCo live in ``reference.py``.
"""

from __future__ import annotations

import math

import numpy as np

# --------------------------------------------------------------------------------------------------
# Rotations and quaternions


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rpy(r, p, y):
    """URDF fixed-axis roll, pitch, yaw."""
    return rot_z(y) @ rot_y(p) @ rot_x(r)


def skew(v):
    """``[v]x``, the cross-product matrix: ``skew(v) @ x == np.cross(v, x)``."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def quat_of_axis_angle(axis, angle):
    """``w x y z`` quaternion of a rotation by ``angle`` about ``axis`` (normalized here)."""
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def quat_multiply(a, b):
    """Hamilton product of ``w x y z`` quaternions."""
    aw, av = a[0], np.asarray(a[1:])
    bw, bv = b[0], np.asarray(b[1:])
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


def rot_of_quat(quat):
    """(..., 3, 3) rotation matrices of unit quaternions (..., 4) ``w x y z`` (not normalized here)."""
    quat = np.asarray(quat, float)
    w, x, y, z = (quat[..., i] for i in range(4))
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


# --------------------------------------------------------------------------------------------------
# The DC motor's operating region (spec/actuators-motor-operating-region.md)


def motor_region(speed, resistance, kt, kv, voltage, peak):
    """The spec's region at a motor speed, ``-V <= R tau / Kt + w / Kv <= V`` and ``|tau| <= peak``,
    solved for the torque: ``tau_stall = Kt V / R``, ``b = Kt / (R Kv)``,
    ``[clamp(-tau_stall - b w, -peak, peak), clamp(tau_stall - b w, -peak, peak)]``; beyond the overspeed
    limit it collapses onto the peak opposing the motion. Broadcasts over all arguments (float64)."""
    speed, resistance, kt, kv, voltage, peak = (
        np.asarray(x, dtype=np.float64) for x in (speed, resistance, kt, kv, voltage, peak)
    )
    stall = kt * voltage / resistance
    slope = kt / (resistance * kv)
    lower = np.clip(-stall - slope * speed, -peak, peak)
    upper = np.clip(stall - slope * speed, -peak, peak)
    return lower, upper
