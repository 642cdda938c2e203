"""The geometry of MJCF elements in plain NumPy: frames (the five ways MuJoCo writes an orientation, ``fromto``)
and the mass properties of primitive geoms (``inertiafromgeom``).

Conventions are MuJoCo's: quaternions ``w x y z``; a rotation maps the element's axes to its parent's;
``euler`` angles follow the compiler's ``eulerseq`` (lower case: axes that move with the frame, upper case:
fixed axes); a capsule's or cylinder's axis is its local ``z``. Angles arrive here in radians.
"""

from __future__ import annotations

import math

import numpy as np


def quat_to_rotation(quat) -> np.ndarray:
    """Rotation matrix of a quaternion ``w x y z`` (normalized here)."""
    w, x, y, z = np.asarray(quat, dtype=np.float64) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def rotation_to_quat(rotation: np.ndarray) -> np.ndarray:
    """The quaternion ``w x y z`` (``w >= 0``) of a rotation matrix (Shepperd's method)."""
    r = np.asarray(rotation, dtype=np.float64)
    trace = np.trace(r)
    candidates = [trace, r[0, 0], r[1, 1], r[2, 2]]
    k = int(np.argmax(candidates))
    if k == 0:
        s = 2.0 * math.sqrt(1.0 + trace)
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    else:
        i, j, m = k - 1, k % 3, (k + 1) % 3
        s = 2.0 * math.sqrt(1.0 + r[i, i] - r[j, j] - r[m, m])
        q = [0.0] * 4
        q[0] = (r[m, j] - r[j, m]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (r[j, i] + r[i, j]) / s
        q[1 + m] = (r[m, i] + r[i, m]) / s
    q = np.array(q)
    return q if q[0] >= 0 else -q


def axis_angle(axis, angle: float) -> np.ndarray:
    """Rotation by ``angle`` [rad] about ``axis`` (normalized here), Rodrigues' formula."""
    a = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def z_to(direction) -> np.ndarray:
    """The smallest rotation that takes the ``z`` axis onto ``direction`` (MuJoCo's ``zaxis`` and ``fromto``);
    for a direction opposite to ``z``, the half turn about ``x``."""
    d = np.asarray(direction, dtype=np.float64) / np.linalg.norm(direction)
    axis = np.cross([0.0, 0.0, 1.0], d)
    sine = np.linalg.norm(axis)
    if sine < 1e-10:
        return np.eye(3) if d[2] > 0 else axis_angle([1.0, 0.0, 0.0], math.pi)
    return axis_angle(axis, math.atan2(sine, d[2]))


def euler(angles, sequence: str) -> np.ndarray:
    """Rotation of three Euler angles [rad] about the axes of ``sequence`` (e.g. ``"xyz"``: lower case
    rotates about the moving axes, upper case about the fixed ones)."""
    rotation = np.eye(3)
    for angle, letter in zip(angles, sequence, strict=True):
        step = axis_angle(np.eye(3)["xyz".index(letter.lower())], angle)
        rotation = rotation @ step if letter.islower() else step @ rotation
    return rotation


def xy_axes(values) -> np.ndarray:
    """Rotation whose first two columns are the given ``x`` axis and the part of the ``y`` axis orthogonal to
    it, both normalized (MuJoCo's ``xyaxes``)."""
    x = np.asarray(values[:3], dtype=np.float64)
    y = np.asarray(values[3:], dtype=np.float64)
    x = x / np.linalg.norm(x)
    y = y - (x @ y) * x
    y = y / np.linalg.norm(y)
    return np.column_stack([x, y, np.cross(x, y)])


# --------------------------------------------------------------------------------------------------
# Mass properties of primitive geoms of uniform density, about their centre, in their own axes.


def volume(kind: str, size: np.ndarray) -> float:
    """The volume [m^3] of a primitive: ``size`` is MuJoCo's (radius, half length or half sizes)."""
    r = size[0]
    if kind == "sphere":
        return 4.0 / 3.0 * math.pi * r**3
    if kind == "capsule":
        return math.pi * r**2 * 2.0 * size[1] + 4.0 / 3.0 * math.pi * r**3
    if kind == "cylinder":
        return math.pi * r**2 * 2.0 * size[1]
    if kind == "box":
        return 8.0 * size[0] * size[1] * size[2]
    if kind == "ellipsoid":
        return 4.0 / 3.0 * math.pi * size[0] * size[1] * size[2]
    raise ValueError(kind)


def principal_inertia(kind: str, size: np.ndarray, density: float) -> tuple[float, np.ndarray]:
    """``(mass, (3,) principal moments about the centre)`` of a primitive of uniform ``density`` [kg/m^3].

    A capsule is a cylinder of length ``2 h`` and two hemispheres; each hemisphere's moment about an axis
    through the capsule's centre perpendicular to ``z`` is ``m_hemi (2 r^2 / 5 + h^2 + 3 h r / 4)`` (its own
    moment about its flat face's centre, ``2 m r^2 / 5``, moved by the parallel-axis theorem from its centre
    of mass, ``3 r / 8`` from the face).
    """
    r = size[0]
    if kind == "capsule":
        h = size[1]
        m_cyl = density * math.pi * r**2 * 2.0 * h
        m_hemis = density * 4.0 / 3.0 * math.pi * r**3
        axial = m_cyl * r**2 / 2.0 + m_hemis * 2.0 * r**2 / 5.0
        lateral = m_cyl * (r**2 / 4.0 + (2.0 * h) ** 2 / 12.0) + m_hemis * (2.0 * r**2 / 5.0 + h**2 + 3.0 * h * r / 4.0)
        return m_cyl + m_hemis, np.array([lateral, lateral, axial])
    mass = density * volume(kind, size)
    if kind == "sphere":
        return mass, np.full(3, 2.0 / 5.0 * mass * r**2)
    if kind == "cylinder":
        h = size[1]
        lateral = mass * (r**2 / 4.0 + (2.0 * h) ** 2 / 12.0)
        return mass, np.array([lateral, lateral, mass * r**2 / 2.0])
    a, b, c = size
    if kind == "box":
        return mass, mass / 3.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return mass, mass / 5.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])  # ellipsoid
