"""Left-right mirror symmetry of :class:`jaxmor.envs.Locomotion`: the maps that reflect an observation and an action
through the base's sagittal (x-z) plane, for symmetric data augmentation in PPO (:class:`jaxmor.train.ppo.PPOConfig`'s
``mirror``).

Reflecting a world through its base's x-z plane (``y -> -y``) gives another world of the same task when the robot,
its standing pose and its task are left-right symmetric: the reflected world's observation is the original's with
its entries permuted and some negated, and so is the action that does in it what the original action does in the
original. Both maps are signed permutations, ``mirrored[i] = sign[i] original[index[i]]``, found from the model's
geometry at the standing pose, not from names:

* base velocities and gravity in the base frame: ``v -> (vx, -vy, vz)``, ``w -> (-wx, wy, -wz)`` (a pseudo-vector);
* the command ``(forward, lateral, yaw) -> (forward, -lateral, -yaw)``;
* a driven joint goes to the one whose axis origin is its reflection; the sign is ``+1`` when that joint's axis is
  the reflected motion's axis (a hinge's ``-S a`` with ``S = diag(1, -1, 1)``, a slider's ``S a``) and ``-1`` when
  it is opposite (a hip's abduction);
* the gait clock: the reflected world's phase is shifted by ``offset[f] - offset[mirror(f)]``, which must be one
  value over the feet and be 0 or pi (a trot: pi, and the clock's ``(cos, sin)`` change sign);
* the height scan: each point goes to its reflection.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.math import quat_to_rotation
from jaxmor.sim.kinematics import dof_axes, kinematics

__all__ = ["Mirror", "joint_mirror", "locomotion_mirror"]

#: How far apart a point and its partner's reflection may be [m], and an axis and its partner's reflection.
TOLERANCE = 1e-4
#: The reflection through the x-z plane.
_S = np.diag([1.0, -1.0, 1.0])


@dataclasses.dataclass(frozen=True)
class Mirror:
    """The reflection of a task's observations and actions: ``mirrored[..., i] = sign[i] x[..., index[i]]``.

    Attributes:
        observation_index: (observation_size,) int, the entry each mirrored observation entry comes from.
        observation_sign: (observation_size,) float, +1 or -1.
        action_index: (action_size,) int.
        action_sign: (action_size,) float, +1 or -1.
    """

    observation_index: np.ndarray
    observation_sign: np.ndarray
    action_index: np.ndarray
    action_sign: np.ndarray

    def observation(self, x: jax.Array) -> jax.Array:
        """``x`` (..., observation_size) reflected."""
        return x[..., self.observation_index] * jnp.asarray(self.observation_sign, x.dtype)

    def action(self, x: jax.Array) -> jax.Array:
        """``x`` (..., action_size) reflected."""
        return x[..., self.action_index] * jnp.asarray(self.action_sign, x.dtype)


def _partners(points: np.ndarray, what: str) -> np.ndarray:
    """(n,) int: for each of the (n, d) points (first two coordinates x, y), the one at its reflection.

    Raises:
        ArgumentError: a point with no reflection among the others.
    """
    reflected = points.copy()
    reflected[:, 1] *= -1.0
    distance = np.linalg.norm(points[None, :, :] - reflected[:, None, :], axis=-1)
    index = np.argmin(distance, axis=1)
    bad = distance[np.arange(len(points)), index] > TOLERANCE
    if np.any(bad) or len(set(index.tolist())) != len(points):
        raise ArgumentError(
            f"no left-right mirror symmetry: {what} {np.flatnonzero(bad).tolist()} have no mirror image"
        )
    return index


def _in_base(model, standing_q: np.ndarray):
    """The driven joints' axis origins and axes at ``standing_q`` in the base's frame, and whether each rotates."""
    q = jnp.asarray(standing_q, jnp.float32)
    kin = kinematics(model, q)
    axis, origin = (np.asarray(x, np.float64) for x in dof_axes(model, kin.body))
    rotation = np.asarray(quat_to_rotation(q[3:7]), np.float64)
    v = np.asarray(model.actuators.joint_v_index)
    origin = (origin[v] - np.asarray(standing_q[:3])) @ rotation
    return origin, axis[v] @ rotation, np.asarray(model.dof_rotational)[v]


def joint_mirror(model, standing_q: np.ndarray, standing_joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(index (na,), sign (na,))``: the driven joint each one's reflection is, and the sign between their angles.

    Args:
        model: a floating-base model.
        standing_q: (nq,) the standing pose.
        standing_joints: (na,) the driven joints' standing positions, which must be mirror images too.

    Raises:
        ArgumentError: a joint with no mirror image, or a standing pose that is not symmetric.
    """
    origin, axis, rotational = _in_base(model, standing_q)
    # joints sharing an origin are told apart by their axes (a reflection keeps each component's magnitude)
    index = _partners(np.concatenate([origin, np.abs(axis)], axis=1), "driven joints")
    reflected = np.where(rotational[:, None], -(axis @ _S), axis @ _S)
    sign = np.sum(axis[index] * reflected, axis=1)
    if np.any(np.abs(np.abs(sign) - 1.0) > 1e-3):
        raise ArgumentError(f"no left-right mirror symmetry: joint axes {np.round(sign, 3).tolist()} are not mirrored")
    sign = np.sign(sign)
    if np.any(np.abs(standing_joints[index] - sign * standing_joints) > 1e-3):
        raise ArgumentError("no left-right mirror symmetry: the standing pose is not its own mirror image")
    return index, sign


def _clock_sign(env) -> list[float]:
    """The gait clock's ``(cos, sin)`` signs in the reflected world."""
    feet = _partners(env.feet.in_base(env.model, env.standing_q)[:, :2], "feet")
    shift = np.angle(np.exp(1j * (np.asarray(env.gait_offsets) - np.asarray(env.gait_offsets)[feet])))
    if np.ptp(np.cos(shift)) > 1e-3 or np.ptp(np.sin(shift)) > 1e-3 or abs(np.sin(shift[0])) > 1e-3:
        raise ArgumentError(f"no left-right mirror symmetry: the gait clock's offsets shift by {shift.tolist()} rad")
    return [float(np.cos(shift[0]))] * 2


def locomotion_mirror(env) -> Mirror:
    """The :class:`Mirror` of a :class:`jaxmor.envs.Locomotion`.

    Raises:
        ArgumentError: sensor observations (their frames are the sensors'), or a robot, standing pose or gait
            clock without left-right mirror symmetry.
    """
    if env.observation_sensors is not None:
        raise ArgumentError("mirror needs the base-state observation blocks, not observation_sensors")
    joints, joint_sign = joint_mirror(env.model, env.standing_q, env.standing_joints)
    na = len(joints)
    blocks = [
        (np.arange(3), [1.0, -1.0, 1.0]),  # linear velocity
        (np.arange(3), [-1.0, 1.0, -1.0]),  # angular velocity
        (np.arange(3), [1.0, -1.0, 1.0]),  # gravity
        (np.arange(3), [1.0, -1.0, -1.0]),  # command
    ]
    if env.gait_frequency is not None:
        blocks.append((np.arange(2), _clock_sign(env)))
    for signs in (joint_sign, joint_sign, joint_sign, np.ones(na), joint_sign):  # position .. saturation, action
        blocks.append((joints, signs))
    if env.scan is not None:
        points = np.asarray(env.scan, np.float64)
        blocks.append((_partners(points, "height-scan points"), np.ones(len(points))))
    index, sign, start = [], [], 0
    for block_index, block_sign in blocks:
        index.append(start + np.asarray(block_index))
        sign.append(np.asarray(block_sign, np.float64))
        start += len(block_index)
    if start != env.observation_size:
        raise ArgumentError(f"mirror covers {start} observation entries of {env.observation_size}")
    return Mirror(np.concatenate(index), np.concatenate(sign), joints, joint_sign)
