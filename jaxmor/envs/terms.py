"""The terms of the locomotion task, each a small function of one world: the velocity command and its resampling,
the pushes, the observation noise and the reward terms. :class:`jaxmor.envs.Locomotion` composes them; each is
tested against its definition (tests/test_task_terms.py).

Units are SI; every reward term is listed in :data:`DEFAULT_REWARD_WEIGHTS` with its definition and unit.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.checks import as_finite, as_nonnegative
from jaxmor.envs.feet import FeetStep
from jaxmor.errors import ArgumentError

__all__ = [
    "DEFAULT_COMMAND_RANGES",
    "DEFAULT_OBSERVATION_NOISE",
    "DEFAULT_REWARD_WEIGHTS",
    "draw_command",
    "draw_interval",
    "feet_phase",
    "gait_offsets",
    "noisy",
    "push",
    "reward_terms",
    "swing_targets",
]

#: The reward terms and their default weights (per second of simulated time; each term is multiplied by its
#: weight and by the control period, except ``termination``, counted once when an episode fails). Kinematic
#: terms are in the base frame; ``nf`` is the number of feet. The tracking terms dominate on purpose: a policy
#: whose steps cost more than they earn learns to end its episodes early.
DEFAULT_REWARD_WEIGHTS = {
    "tracking_linear": 2.0,  # exp(-|v_xy - command_xy|^2 / 0.25), v in m/s
    "tracking_yaw": 1.0,  # exp(-(w_z - command_yaw)^2 / 0.25), w in rad/s
    "vertical_speed": -2.0,  # v_z^2 [m^2/s^2]
    "roll_pitch_rate": -0.05,  # |w_xy|^2 [rad^2/s^2]
    "orientation": -1.0,  # |g_xy|^2, gravity's direction in the base frame (0 when level)
    "motor_power": -1e-4,  # sum |motor_torque * average_motor_speed| [W]
    "saturation": -0.1,  # sum over actuators of how far the wanted torque leaves the policy's bounds, / peak
    "action_rate": -0.01,  # |a - a_previous|^2
    "feet_air_time": 1.0,  # sum over the feet landing now of (min(air time, 0.4 s) - 0.1 s) [s]; 0 when standing
    "feet_slip": -0.5,  # sum over stance feet of their soles' horizontal speed squared [m^2/s^2]
    "feet_clearance": -2.0,  # sum over the feet of |clearance - swing_height| sqrt(sole speed) [m sqrt(m/s)]
    "feet_phase": 1.0,  # exp(-sum (clearance - swing_targets)^2 / GAIT_WIDTH) over the feet, clearance in m
    "stand_still": -0.5,  # sum |q_j - standing| [rad] under a standing command (|command| < 0.05), else 0
    "termination": -1.0,  # 1 on the step the base falls or tilts over (once, not per second)
}

#: Ranges of the velocity command: forward and lateral speed in the base frame [m/s], yaw rate [rad/s].
DEFAULT_COMMAND_RANGES = ((-0.5, 1.5), (-0.5, 0.5), (-1.0, 1.0))

#: Half-widths of the uniform noise added to each observation block (the policy's view only; rewards see the
#: truth), in the block's unit: base velocity [m/s], base angular velocity [rad/s], gravity's direction [-],
#: joint positions [rad], joint velocities [rad/s], motor speed over no-load speed [-], height scan [m], sensor
#: readings [their units]. ``observation_noise=None`` (or ``{}``) adds none; a mapping replaces some entries.
DEFAULT_OBSERVATION_NOISE = {
    "linear_velocity": 0.1,
    "angular_velocity": 0.2,
    "gravity": 0.05,
    "joint_position": 0.01,
    "joint_velocity": 1.5,
    "motor_speed": 0.05,
    "height_scan": 0.02,
    "sensors": 0.0,
}

#: The air time a landing foot is rewarded beyond and the most that counts [s] (MuJoCo Playground's Go1 rewards
#: 0.1-0.5 s), and the swing height the clearance term asks for [m].
SWING_TIME, LONGEST_SWING, SWING_HEIGHT = 0.1, 0.4, 0.08
#: The gait clock's reward width [m^2]: a foot 7 cm off its target clearance costs about 1/e of ``feet_phase``.
GAIT_WIDTH = 0.005
#: The command curriculum's bar: a world's level goes up after an episode without a fall whose mean tracking error
#: was below this [m/s].
CURRICULUM_TRACKING = 0.25
#: A command whose norm is below this is a standing command [m/s and rad/s].
STANDING = 0.05


def draw_command(key: jax.Array, ranges: jax.Array, standing_fraction: float) -> jax.Array:
    """(3,) a velocity command drawn uniformly from ``ranges`` ((3, 2): low, high), or zero with probability
    ``standing_fraction``."""
    k_value, k_stand = jax.random.split(key)
    command = jax.random.uniform(k_value, (3,), ranges.dtype, ranges[:, 0], ranges[:, 1])
    return jnp.where(jax.random.uniform(k_stand, (), ranges.dtype) < standing_fraction, 0.0, command)


def draw_interval(key: jax.Array, interval: tuple[float, float], dtype) -> jax.Array:
    """() a time drawn uniformly from ``interval`` ``(low, high)`` [s]."""
    return jax.random.uniform(key, (), dtype, interval[0], interval[1])


def push(key: jax.Array, u: jax.Array, speed: float) -> jax.Array:
    """``u`` with the floating base's horizontal velocity changed by a push: a velocity change of magnitude uniform
    in ``[0, speed]`` [m/s] in a direction uniform over the circle (an impulse of the robot's mass times it)."""
    k_size, k_angle = jax.random.split(key)
    size = jax.random.uniform(k_size, (), u.dtype, 0.0, speed)
    angle = jax.random.uniform(k_angle, (), u.dtype, -np.pi, np.pi)
    return u.at[:2].add(size * jnp.stack([jnp.cos(angle), jnp.sin(angle)]))


def noisy(key: jax.Array, blocks: list[tuple[str, jax.Array]], noise: Mapping[str, float]) -> jax.Array:
    """The observation blocks concatenated, each with uniform noise of half-width ``noise[name]`` added (none for a
    name missing from ``noise``)."""
    keys = jax.random.split(key, len(blocks))
    parts = []
    for k, (name, value) in zip(keys, blocks, strict=True):
        width = noise.get(name, 0.0)
        parts.append(value + jax.random.uniform(k, value.shape, value.dtype, -width, width) if width else value)
    return jnp.concatenate(parts)


def observation_noise(given: Mapping[str, float] | None) -> dict[str, float]:
    """The observation noise's half-widths: :data:`DEFAULT_OBSERVATION_NOISE` with ``given``'s entries replaced;
    ``None`` or ``{}``: none.

    Raises:
        ArgumentError: an unknown block or a width that is not finite and ``>= 0``.
    """
    if not given:
        return {}
    widths = dict(DEFAULT_OBSERVATION_NOISE)
    for name, value in given.items():
        if name not in widths:
            raise ArgumentError(f"unknown observation block {name!r}; the blocks are {list(widths)}")
        widths[name] = as_nonnegative(value, f"observation_noise[{name!r}]")
    return {name: width for name, width in widths.items() if width}


def reward_weights(given: Mapping[str, float] | None) -> dict[str, float]:
    """:data:`DEFAULT_REWARD_WEIGHTS` with ``given``'s entries replaced.

    Raises:
        ArgumentError: an unknown term or a weight that is not finite.
    """
    weights = dict(DEFAULT_REWARD_WEIGHTS)
    for name, value in (given or {}).items():
        if name not in weights:
            raise ArgumentError(f"unknown reward term {name!r}; the terms are {list(weights)}")
        weights[name] = as_finite(value, f"reward_weights[{name!r}]")
    return weights


def gait_offsets(feet_xy: np.ndarray) -> np.ndarray:
    """(nf,) each foot's phase offset in the gait clock [rad]: a trot for four feet (the diagonal pairs, told apart by
    the sign of ``x y`` of their positions in the base frame, half a cycle apart) and alternating steps for two
    (told apart by the sign of ``y``).

    Args:
        feet_xy: (nf, 2) the feet's horizontal positions in the base frame at the standing pose [m].

    Raises:
        ArgumentError: not two or four feet, or feet on a centre line (``x y = 0`` for four, ``y = 0`` for two).
    """
    feet_xy = np.asarray(feet_xy, np.float64)
    side = np.sign(feet_xy[:, 0] * feet_xy[:, 1]) if len(feet_xy) == 4 else np.sign(feet_xy[:, 1])
    if len(feet_xy) not in (2, 4) or np.any(side == 0):
        raise ArgumentError(
            f"the gait clock knows a trot of four feet and alternating steps of two, off the base's centre lines; "
            f"got feet at {feet_xy.round(3).tolist()} m: pass gait_frequency=None"
        )
    return np.where(side > 0, 0.0, np.pi)


def swing_targets(phase: jax.Array, offsets: jax.Array, height: float) -> jax.Array:
    """(nf,) each foot's target clearance at gait phase ``phase`` [rad]: ``height max(sin(phase + offset), 0)`` [m],
    a swing of half a cycle peaking at ``height`` at its middle, then half a cycle on the ground."""
    return height * jnp.maximum(jnp.sin(phase + offsets), 0.0)


def feet_phase(clearance: jax.Array, targets: jax.Array) -> jax.Array:
    """() ``exp(-sum (clearance - targets)^2 / GAIT_WIDTH)``: 1 when every foot is at its gait target [m]."""
    return jnp.exp(-jnp.sum((clearance - targets) ** 2) / GAIT_WIDTH)


def reward_terms(command, action, last_action, lin, ang, gravity, joints, feet: FeetStep) -> dict[str, jax.Array]:
    """Every per-second reward term of :data:`DEFAULT_REWARD_WEIGHTS` but ``motor_power``, ``saturation``,
    ``feet_phase`` and ``termination`` (the environment's), unweighted.

    Args:
        command: (3,) the velocity command [m/s, m/s, rad/s].
        action, last_action: (na,) this step's and the previous step's action.
        lin, ang, gravity: (3,) the base's velocity [m/s], angular velocity [rad/s] and gravity's direction, in
            the base frame.
        joints: (na,) driven-joint positions minus the standing pose [rad].
        feet: what the control step did to the feet.
    """
    moving = jnp.linalg.norm(command) >= STANDING
    air = jnp.minimum(feet.landed_air_time, LONGEST_SWING) - SWING_TIME
    return {
        "tracking_linear": jnp.exp(-jnp.sum((lin[:2] - command[:2]) ** 2) / 0.25),
        "tracking_yaw": jnp.exp(-((ang[2] - command[2]) ** 2) / 0.25),
        "vertical_speed": lin[2] ** 2,
        "roll_pitch_rate": jnp.sum(ang[:2] ** 2),
        "orientation": jnp.sum(gravity[:2] ** 2),
        "action_rate": jnp.sum((action - last_action) ** 2),
        "feet_air_time": jnp.where(moving, jnp.sum(air * feet.touchdown), 0.0),
        "feet_slip": jnp.sum(feet.slip_speed**2),
        "feet_clearance": jnp.sum(jnp.abs(feet.clearance - SWING_HEIGHT) * jnp.sqrt(feet.speed + 1e-12)),
        "stand_still": jnp.where(moving, 0.0, jnp.sum(jnp.abs(joints))),
    }
