"""Velocity tracking on flat ground or generated terrain for a floating-base legged robot whose actuators are DC
motors.

:class:`Locomotion` follows the actuator spec's advice for a training environment: the policy's actions
become actuator torques (directly, scaled into the current torque bounds, or through a PD computed
explicitly every physics step), the step clips them to the motor operating region, the observation
holds the motor speeds and the saturation, and the reward penalizes motor power and saturation.

The Box-MOR switch (``motor_model="box"``) reproduces the comparison of Kim et al. (IEEE RAM 2025): the
region is only monitored (``set_motor_operating_region_enforced(False)``) and the torques are clipped to
the URDF's torque-speed rectangle instead: ``|tau| <= effort`` at the driven joint, and beyond the joint's
velocity limit only braking torque (``tau u <= 0``). The actuator states still report how far the applied
torques leave the real motors' region (``metrics["region_violation"]``, ``sim.actuator_state``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.actuation.backlash import rotor_view, with_backlash
from jaxmor.actuation.drive import actuator_joint_q_index, actuator_torque_bounds, motor_speeds
from jaxmor.actuation.motor import motor_operating_region_violation
from jaxmor.checks import as_int, as_nonnegative, as_positive, as_positive_int
from jaxmor.envs import terms
from jaxmor.envs.core import Env
from jaxmor.envs.feet import Feet, FeetState, feet_of
from jaxmor.envs.mirror import Mirror, locomotion_mirror
from jaxmor.envs.stability import check_pd_step
from jaxmor.envs.terms import DEFAULT_COMMAND_RANGES, DEFAULT_OBSERVATION_NOISE, DEFAULT_REWARD_WEIGHTS
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.math import quat_to_rotation
from jaxmor.modeling.builder import load_urdf
from jaxmor.modeling.scene import add_ground, with_options
from jaxmor.robots import path as robot_path
from jaxmor.robots import quadruped_standing_q
from jaxmor.sim.collision.height_field import ground_heights
from jaxmor.sim.dynamics import mass_matrix
from jaxmor.sim.pipeline import step as physics_step
from jaxmor.sim.sensors import read_sensors
from jaxmor.state import init_state
from jaxmor.tools.randomization import Distribution, integers, randomize, scale, uniform
from jaxmor.tools.terrain import Terrain
from jaxmor.types import Model, State

#: The randomization entry that is the environment's, not the model's: the observation delay [control steps], an
#: :func:`~jaxmor.integers` distribution drawn per world at every reset (:class:`jaxmor.envs.Env`), not pooled by
#: :func:`jaxmor.randomize`.
OBSERVATION_DELAY = "observation.delay"


def default_randomization() -> dict[str, Distribution]:
    """A moderate per-episode randomization: motor resistance and torque constant +-10 %, bus voltage
    +-10 %, ground friction 0.5-1.25, link masses +-10 %, the base's centre of mass moved by up to 3 cm along each
    axis (``"body.com"`` on the body named ``base``, as the shipped quadruped's and the Go2's are), a command delay
    of 0, 1 or 2 physics steps per actuator (:mod:`jaxmor.actuation.latency`), a gear backlash of 0-0.01 rad
    (0-0.6 deg) per actuator (:mod:`jaxmor.actuation.backlash`) and an observation delay of 0 or 1 control steps per
    world (``"observation.delay"``, the environment's own entry: :class:`Locomotion` draws it at every reset and
    passes the rest to :func:`jaxmor.randomize`). Without a ``randomization`` the step has neither delay nor
    backlash and the policy sees the present."""
    return {
        OBSERVATION_DELAY: integers(0, 1),
        "actuator.delay": integers(0, 2),
        "backlash.width": uniform(0.0, 0.01),
        "motor.resistance": scale(0.9, 1.1),
        "motor.torque_constant": scale(0.9, 1.1),
        "motor.bus_voltage": scale(0.9, 1.1, shared=True),
        "ground.friction": uniform(0.5, 1.25),
        "body.mass": scale(0.9, 1.1),
        "body.com": uniform(-0.03, 0.03, select=["base"]),
    }


@struct.dataclass
class LocomotionData:
    """The task's per-episode data of one world.

    Attributes:
        command: (3,) commanded forward and lateral speed in the base frame [m/s] and yaw rate [rad/s].
        last_action: (na,) the previous action.
        saturated: (na,) 1 where the last physics step's wanted torque reached the policy's bounds, else 0.
        world: the episode's randomized model leaves (the model's structure, ``None`` at shared leaves), or
            ``None`` without randomization.
        cell: () int32, the terrain cell the episode started on (row-major over levels and kinds; 0 without
            terrain).
        origin: (2,) where the base started [m].
        key: the ``jax.random`` key of the episode's draws after its start (command resampling, pushes, noise).
        command_time: () time until the command is drawn again [s].
        push_time: () time until the next push [s].
        feet: the feet (:class:`jaxmor.envs.feet.FeetState`).
        phase: () the gait clock's phase [rad], in [0, 2 pi) (0 without a gait clock).
        command_level: () int32, the world's level of the command curriculum (0 without one).
        tracking: (2,) the episode's summed tracking error [m/s] and its control steps so far.
        fell: () bool, the episode ended in a fall (set on its last step).
    """

    command: jax.Array
    last_action: jax.Array
    saturated: jax.Array
    world: Model | None
    cell: jax.Array
    origin: jax.Array
    key: jax.Array
    command_time: jax.Array
    push_time: jax.Array
    feet: FeetState
    phase: jax.Array
    command_level: jax.Array
    tracking: jax.Array
    fell: jax.Array


def box_torque_bounds(model: Model, state: State) -> tuple[jax.Array, jax.Array]:
    """The URDF's torque-speed rectangle (Box-MOR) at the actuators' driven joints, at the gear outputs:
    ``[-effort, effort]``, narrowed to braking only (``0`` on the side that accelerates) where the joint
    turns faster than its velocity limit.

    Returns:
        ``(lower, upper)``, each (na,) [Nm or N].
    """
    v = np.asarray(model.actuators.joint_v_index, dtype=np.int32)
    effort = jnp.asarray(model.dof_effort_limit, state.u.dtype)[v]
    limit = jnp.asarray(model.dof_velocity_limit, state.u.dtype)[v]
    u = state.u[v]
    upper = jnp.where(u > limit, 0.0, effort)
    lower = jnp.where(u < -limit, 0.0, -effort)
    return lower, upper


#: The default position-target range of ``"pd"`` mode [rad].
ACTION_SCALE = 0.5


class Locomotion(Env):
    """Track a commanded forward, lateral and yaw velocity on flat ground or on generated terrain.

    Observation (``observation_size = 14 + 5 na``), in this order: base linear velocity in the base frame
    (3) [m/s]; base angular velocity in the base frame (3) [rad/s]; gravity's direction in the base frame
    (3); the command (3); the gait clock ``(cos phase, sin phase)`` (2; absent with ``gait_frequency=None``);
    driven-joint positions minus the standing pose (na) [rad]; driven-joint
    velocities (na) [rad/s]; motor speeds over their no-load speeds ``Kv V`` (na); saturation (na): 1
    where the last physics step's wanted torque reached the policy's bounds (the motor region, or the box),
    else 0; the previous action (na). Raw SI values: normalize them in the trainer (Brax PPO's
    ``normalize_observations=True``). With ``observation_sensors``, the named sensors' readings
    (:func:`jaxmor.read_sensors`, in the order given) replace the first three blocks (the base's velocities and
    gravity's direction): an IMU's gyro and accelerometer instead of the simulator's exact base state. With
    ``height_scan=(nx, ny, spacing)``, the base's height above the ground at ``nx x ny`` points around it follows
    (``nx`` along the base's heading, ``ny`` across it, ``spacing`` [m] apart, centred on the base, turned by its
    yaw; :func:`jaxmor.sim.collision.height_field.ground_heights`) [m]. Each block but the command, the
    saturation and the previous action gets uniform noise of the half-width ``observation_noise`` gives it
    (:data:`~jaxmor.envs.terms.DEFAULT_OBSERVATION_NOISE`); rewards and terminations see the truth.

    Action (``action_size = na``), each in [-1, 1] (values beyond are clipped):

    * ``action_mode="torque"``: ``tau = (1 - a)/2 lower + (1 + a)/2 upper`` with the bounds at the start of
      every physics step (:func:`jaxmor.actuator_torque_bounds`, or :func:`box_torque_bounds` in Box-MOR
      mode), so ``a = -1`` and ``+1`` are exactly the bounds;
    * ``action_mode="pd"``: driven-joint position targets ``standing + action_scale a``, and every physics
      step the actuator torque ``kp (target - q_j) - kd u_j`` computed explicitly at its start (the PD of
      :func:`jaxmor.set_actuator_pd_gains`, written here so that the Box-MOR mode can clip it to the box);
      the step clips it to the motor region. The default gains come from the motors (:func:`default_gains`):
      a full action at rest asks for twice each actuator's peak torque, not several times it. The explicit PD is
      stable only below a physics step set by the gains and the inertia a leg in the air moves
      (:func:`jaxmor.envs.stability.pd_step_limit`, at the standing pose and ``action_scale`` either side of it):
      a longer ``timestep`` is refused, because there the joints of a lifted leg chatter at the Nyquist rate and a
      policy learns to keep its feet on the ground and skate (``docs/design/step-artifacts.md``).

    Commands: drawn at the start of an episode and again every ``command_interval`` seconds (drawn uniformly
    from that range each time), each component uniform in ``command_ranges``, or zero (standing) with
    probability ``standing_fraction``. Pushes: every ``push_interval`` seconds the base's horizontal velocity
    changes by up to ``push_speed`` [m/s] in a random direction (:func:`jaxmor.envs.terms.push`).

    Gait clock: a phase that turns at ``gait_frequency`` from a random start; ``feet_phase`` rewards the feet for
    following a trot on it (:func:`jaxmor.envs.terms.swing_targets`: each diagonal pair swings
    :data:`~jaxmor.envs.terms.SWING_HEIGHT` high for half a cycle while the other stands; all feet down under a
    standing command). Without it the policies found here kept their feet on the ground and shuffled
    (``policies/README.md``).

    Reward: the weighted terms of :data:`DEFAULT_REWARD_WEIGHTS`, each times the control period
    ``substeps * timestep`` (``termination`` once); the feet's terms read the feet selected by ``feet``
    (:mod:`jaxmor.envs.feet`). ``metrics`` holds each weighted term and ``forward_speed`` [m/s],
    ``command_forward`` [m/s], ``tracking_error`` (``|v_xy - command_xy|`` [m/s]), ``yaw_rate_error``
    (``|w_z - command_yaw|`` [rad/s]), ``swing_fraction`` (share of feet off the ground), ``slip_speed`` (mean
    horizontal speed of the stance feet [m/s]), ``power`` [W, mean over the physics steps],
    ``saturated_fraction`` (share of actuators whose applied or commanded motor torque sits on or beyond
    the motor region's bound, i.e. ``ActuatorState.saturation``, mean over the physics steps),
    ``region_violation`` (how far the applied motor torques lie outside the motor region, summed over
    actuators, over the peak torque: zero with the region enforced; the Box-MOR policy's gap to real
    motors), ``outside_region`` (the share of actuators whose applied torque lies outside the motor region by more
    than :data:`REGION_TOLERANCE` of the peak torque, mean over the physics steps), ``speed_ratio`` (the largest
    motor speed over its no-load speed ``Kv V``), ``command_level`` and ``terrain_level`` (the world's curriculum
    levels, 0 without one).

    Command curriculum (``command_levels``): every world starts at level 0, where the forward command's range is
    the first ``1 / command_levels`` of ``command_ranges[0]``; after an episode without a fall whose mean tracking
    error was below :data:`~jaxmor.envs.terms.CURRICULUM_TRACKING` it goes a level up (the range grows by
    another ``1 / command_levels``), after a fall a level down. :func:`top_speed` gives a forward range that
    reaches what the motors allow.

    An episode ends when the base falls below ``min_base_height`` or tilts beyond 60 degrees (or the world
    stops: non-finite), or after ``episode_steps``. A new episode starts from ``standing_q`` raised by
    2 cm, turned by a random yaw, with the joints perturbed uniformly by ``+-joint_noise``, at rest (on
    ``terrain``: at the spawn point of a cell drawn uniformly, its height the standing height above it); it draws
    a command and, with ``randomization``, one of ``randomization_pool`` models drawn once by
    :func:`jaxmor.randomize`.

    Args:
        model: a floating-base model with motor actuators and a ground (default: the shipped quadruped,
            :func:`jaxmor.robots.path`, with :func:`jaxmor.add_ground`).
        standing_q: (nq,) standing pose with the feet on the ground (default for the shipped quadruped:
            :func:`jaxmor.robots.quadruped_standing_q`; required for another model).
        motor_model: ``"em"`` (the motor region enforced) or ``"box"`` (Box-MOR, see the module docstring).
        action_mode: ``"torque"`` or ``"pd"``.
        kp: proportional gain of ``"pd"`` mode at the gear outputs [Nm/rad], a number or (na,); ``None``: from
            the motors (:func:`default_gains`).
        kd: derivative gain of ``"pd"`` mode at the gear outputs [Nm s/rad], a number or (na,); ``None``: from
            the motors and the joints' inertia (:func:`default_gains`).
        action_scale: position-target range of ``"pd"`` mode [rad].
        timestep: physics time step [s] (replaces the model's).
        substeps: physics steps per control step.
        episode_steps: time limit in control steps.
        command_ranges: three ``(low, high)`` ranges (forward, lateral [m/s], yaw rate [rad/s]).
        command_interval: ``(low, high)`` time between command draws [s]; ``None``: one command per episode.
        standing_fraction: probability that a drawn command is zero, in [0, 1].
        push_interval: ``(low, high)`` time between pushes [s]; ``None``: no pushes.
        push_speed: the largest horizontal velocity change of a push [m/s].
        observation_noise: half-widths of the observation noise per block, replacing some of
            :data:`~jaxmor.envs.terms.DEFAULT_OBSERVATION_NOISE`; ``None`` or ``{}``: no noise.
        feet: the foot sphere geoms (names, link names or patterns); ``None``: every sphere geom named, or on a
            link named, ``*foot``.
        reward_weights: weights replacing some of :data:`DEFAULT_REWARD_WEIGHTS`.
        randomization: ``jaxmor.randomize`` spec (e.g. :func:`default_randomization`), or ``None``; its
            ``"observation.delay"`` entry, ``jaxmor.integers(low, high)`` [control steps], is the observation delay
            drawn per world at every reset (the rest is drawn into the pool).
        randomization_pool: number of models drawn for the episodes to pick from.
        seed: seed of the randomization pool.
        min_base_height: termination height of the base origin [m] (default: 60 % of the standing height).
        joint_noise: half-width of the joints' start perturbation [rad].
        auto_reset: reset a finished world inside ``step``.
        observation_sensors: names of ``model.sensors`` (an MJCF file's, or :func:`jaxmor.with_sensors`'s) whose
            readings open the observation instead of the base state; ``None``: the base state.
        terrain: a generated terrain (:func:`jaxmor.terrain.generate`) put on the model's ground
            (:meth:`~jaxmor.tools.terrain.Terrain.on`); the base's fall height is then measured from the ground
            under it.
        height_scan: ``(nx, ny, spacing)`` of the height-scan observation, or ``None`` for none.
        curriculum: start every world on the terrain's first level and move it a level up or down at each
            automatic reset by how far it walked (:meth:`_next_start`); without it, starts are uniform over
            the cells.
        observation_delay: the policy's observation delay [control steps], an int or a ``(low, high)`` range drawn
            per world at every reset (:class:`jaxmor.envs.Env`; the sensors' latency, beside the command delay of
            the randomization's ``actuator.delay``); ``None`` (the default): the randomization's
            ``"observation.delay"`` range, else 0 (none).
        gait_frequency: the gait clock's frequency [Hz] (a trot of four feet, alternating steps of two), or
            ``None`` for no clock (no ``feet_phase`` reward, no clock in the observation).
        gait_speedup: how much faster the gait clock turns per m/s of commanded speed [Hz s/m] (``>= 0``): longer
            strides than a leg can make are not asked for at high speed.
        command_levels: the number of levels of the command curriculum, or ``None`` for none.

    Raises:
        ArgumentError: an unknown mode, reward term or observation block, a model without a floating base, motor
            actuators or ground, a missing ``standing_q``, feet that are not found or not spheres, a bad range, an
            observation delay given both as ``observation_delay`` and in the randomization, or there not as
            ``jaxmor.integers`` of two whole numbers ``>= 0``, (Box-MOR) an effort limit that is not positive
            and finite, an ``observation_sensors`` name that is not one of the model's sensors, or a numeric
            parameter out of its range, naming it: ``kp``, ``kd``, ``joint_noise``, ``push_speed``, the noise
            widths and ``min_base_height`` finite and ``>= 0``; ``action_scale`` and ``timestep`` finite and
            ``> 0`` (and in ``"pd"`` mode ``timestep`` below the PD's stability limit); ``standing_fraction`` in
            [0, 1]; intervals ``0 < low <= high``; the reward weights finite;
            ``substeps``, ``episode_steps`` and ``randomization_pool`` positive integers; ``seed`` an integer
            ``>= 0``.
    """

    metric_names = (
        *DEFAULT_REWARD_WEIGHTS,
        "forward_speed",
        "command_forward",
        "tracking_error",
        "yaw_rate_error",
        "swing_fraction",
        "slip_speed",
        "power",
        "saturated_fraction",
        "region_violation",
        "outside_region",
        "speed_ratio",
        "command_level",
        "terrain_level",
    )

    def __init__(
        self,
        model: Model | None = None,
        standing_q: np.ndarray | None = None,
        *,
        motor_model: str = "em",
        action_mode: str = "pd",
        kp: float | np.ndarray | None = None,
        kd: float | np.ndarray | None = None,
        action_scale: float = ACTION_SCALE,
        timestep: float = 0.004,
        substeps: int = 5,
        episode_steps: int = 1000,
        command_ranges: Sequence[tuple[float, float]] = DEFAULT_COMMAND_RANGES,
        command_interval: tuple[float, float] | None = (5.0, 10.0),
        standing_fraction: float = 0.1,
        push_interval: tuple[float, float] | None = (5.0, 10.0),
        push_speed: float = 0.5,
        observation_noise: Mapping[str, float] | None = DEFAULT_OBSERVATION_NOISE,
        feet: Sequence[str] | None = None,
        reward_weights: Mapping[str, float] | None = None,
        randomization: Mapping[str, Distribution] | None = None,
        randomization_pool: int = 1024,
        seed: int = 0,
        min_base_height: float | None = None,
        joint_noise: float = 0.1,
        auto_reset: bool = True,
        observation_sensors: Sequence[str] | None = None,
        terrain: Terrain | None = None,
        height_scan: tuple[int, int, float] | None = None,
        curriculum: bool = False,
        observation_delay: int | tuple[int, int] | None = None,
        gait_frequency: float | None = 2.0,
        gait_speedup: float = 0.0,
        command_levels: int | None = None,
    ):
        observation_delay, randomization = _observation_delay(observation_delay, randomization)
        super().__init__(episode_steps, auto_reset, observation_delay)
        action_scale, timestep, joint_noise = _physical_parameters(action_scale, timestep, joint_noise)
        if min_base_height is not None:
            min_base_height = as_nonnegative(min_base_height, "min_base_height")
        seed = as_int(seed, "seed")
        model, standing_q = _robot(model, standing_q)
        _check_modes(model, motor_model, action_mode)
        self.substeps = as_positive_int(substeps, "substeps")
        dtype = model.body_mass.dtype
        self.model = with_options(model, timestep=jnp.asarray(timestep, dtype))
        self.motor_model, self.action_mode, self.action_scale = motor_model, action_mode, action_scale
        self.kp, self.kd = _gains(model, standing_q, action_scale, kp, kd)
        if action_mode == "pd":
            _check_full_action(model, standing_q, self.kp, self.kd, action_scale, timestep)
        self.control_period = timestep * self.substeps
        self.weights = terms.reward_weights(reward_weights)
        self.noise = terms.observation_noise(observation_noise)
        self.command_ranges = as_command_ranges(command_ranges)
        self.command_interval = _interval(command_interval, "command_interval")
        self.standing_fraction = _fraction(standing_fraction, "standing_fraction")
        self.command_levels = None if command_levels is None else as_positive_int(command_levels, "command_levels")
        self.push_interval = _interval(push_interval, "push_interval")
        self.push_speed = as_nonnegative(push_speed, "push_speed [m/s]")
        self._set_stance(model, standing_q, feet, min_base_height)
        self.gait_frequency, self.gait_offsets = self._gait(model, standing_q, gait_frequency)
        self.gait_speedup = as_nonnegative(gait_speedup, "gait_speedup [Hz s/m]")
        self.joint_noise = joint_noise
        self.observation_sensors = _sensor_names(model, observation_sensors)
        self._place_terrain(terrain, curriculum, dtype)
        self.scan = _scan_points(height_scan, dtype)
        clock = 0 if self.gait_frequency is None else 2
        self.observation_size = self._opening_size() + 3 + clock + 5 * model.na + self._scan_size()
        self.action_size = model.na
        self._draw_pool(randomization, randomization_pool, seed)

    def mirror(self) -> Mirror:
        """The left-right reflection of this task's observations and actions
        (:func:`jaxmor.envs.mirror.locomotion_mirror`).

        Raises:
            ArgumentError: sensor observations, or a robot, standing pose or gait clock that is not symmetric.
        """
        return locomotion_mirror(self)

    def _set_stance(self, model: Model, standing_q: np.ndarray, feet, min_base_height: float | None) -> None:
        """The feet, the standing pose's joints and height, and the height below which a world has fallen."""
        self.feet = Feet(model, feet_of(model, feet))
        self.standing_q = standing_q
        self.q_index = actuator_joint_q_index(model)
        self.v_index = np.asarray(model.actuators.joint_v_index).astype(np.int32)
        self.standing_joints = standing_q[self.q_index]
        self.standing_height = standing_q[2] - float(np.asarray(model.ground_height))  # above the ground [m]
        self.min_base_height = 0.6 * self.standing_height if min_base_height is None else min_base_height

    def _gait(self, model: Model, standing_q: np.ndarray, frequency: float | None):
        """``(frequency [Hz], offsets (nf,) [rad])`` of the gait clock, or ``(None, None)`` without one."""
        if frequency is None:
            return None, None
        frequency = as_positive(frequency, "gait_frequency [Hz]")
        return frequency, terms.gait_offsets(self.feet.in_base(model, standing_q)[:, :2])

    def _place_terrain(self, terrain: Terrain | None, curriculum: bool, dtype) -> None:
        self.spawn, self.curriculum = None, bool(curriculum)
        if self.curriculum and terrain is None:
            raise ArgumentError("curriculum=True needs a terrain")
        if terrain is not None:
            self.model = terrain.on(self.model)
            self.spawn = jnp.asarray(terrain.spawn.reshape(-1, 3), dtype)
            self.levels, self.cell_size = len(terrain.difficulty), float(terrain.size)

    def _opening_size(self) -> int:
        if self.observation_sensors is None:
            return 9
        dims = dict(zip(self.model.sensors.names, self.model.sensors.dims, strict=True))
        return sum(dims[n] for n in self.observation_sensors)

    def _scan_size(self) -> int:
        return 0 if self.scan is None else self.scan.shape[0]

    def _draw_pool(self, randomization, randomization_pool, seed) -> None:
        self.randomization = dict(randomization) if randomization else None
        if self.randomization:
            pool = as_positive_int(randomization_pool, "randomization_pool")
            self.model = _with_drawn_backlash(self.model, self.randomization)
            models, axes = randomize(self.model, jax.random.PRNGKey(seed), pool, self.randomization)
            self._pool_model, self._pool_axes, self._pool_size = models, axes, pool
        else:
            self._pool_model, self._pool_axes, self._pool_size = self.model, None, 0

    # ----------------------------------------------------------------------------------------------
    def world_model(self, data: LocomotionData) -> Model:
        """The model of a world's episode (its randomized leaves in place)."""
        if self._pool_axes is None:
            return self.model
        return jax.tree.map(
            lambda ax, x, w: x if ax is None else w,
            self._pool_axes,
            self._pool_model,
            data.world,
            is_leaf=lambda x: x is None,
        )

    def _draw_world(self, key: jax.Array):
        if self._pool_axes is None:
            return None
        index = jax.random.randint(key, (), 0, self._pool_size)
        return jax.tree.map(
            lambda ax, x: None if ax is None else x[index],
            self._pool_axes,
            self._pool_model,
            is_leaf=lambda x: x is None,
        )

    def _start(self, key: jax.Array) -> tuple[State, LocomotionData]:
        k_world, k_cmd, k_joint, k_yaw = jax.random.split(key, 4)
        k_spawn = jax.random.fold_in(key, 4)  # beside the four draws, which stay those of a flat episode
        k_episode, k_times = jax.random.split(jax.random.fold_in(key, 5))
        dtype = self.model.body_mass.dtype
        world = self._draw_world(k_world)
        data = LocomotionData(
            command=terms.draw_command(k_cmd, self._ranges(jnp.zeros((), jnp.int32), dtype), self.standing_fraction),
            last_action=jnp.zeros((self.action_size,), dtype),
            saturated=jnp.zeros((self.action_size,), dtype),
            world=world,
            cell=jnp.zeros((), jnp.int32),
            origin=jnp.zeros((2,), dtype),
            key=k_episode,
            command_time=self._next_time(jax.random.fold_in(k_times, 0), self.command_interval, dtype),
            push_time=self._next_time(jax.random.fold_in(k_times, 1), self.push_interval, dtype),
            feet=None,
            phase=jax.random.uniform(jax.random.fold_in(k_times, 2), (), dtype, 0.0, 2 * math.pi),
            command_level=jnp.zeros((), jnp.int32),
            tracking=jnp.zeros((2,), dtype),
            fell=jnp.asarray(False),
        )
        model = self.world_model(data)
        q = jnp.asarray(self.standing_q, dtype)
        noise = jax.random.uniform(k_joint, (self.action_size,), dtype, -self.joint_noise, self.joint_noise)
        q = q.at[self.q_index].add(noise)
        yaw = jax.random.uniform(k_yaw, (), dtype, -math.pi, math.pi)
        if self.spawn is not None:
            first = self.spawn.shape[0] if not self.curriculum else self.spawn.shape[0] // self.levels
            index = jax.random.randint(k_spawn, (), 0, first)  # with a curriculum: on the first level
            data = data.replace(cell=index)
            cell = self.spawn[index]
            q = q.at[:2].add(cell[:2]).at[2].set(cell[2] + self.standing_height)
        data = data.replace(origin=q[:2])
        q = q.at[2].add(0.02).at[3:7].set(jnp.stack([jnp.cos(yaw / 2), 0 * yaw, 0 * yaw, jnp.sin(yaw / 2)]))
        sim = init_state(model, q)
        if self.motor_model == "box":
            sim = sim.replace(mor_enforced=jnp.asarray(False))
        return sim, data.replace(feet=self.feet.start(model, q))

    @staticmethod
    def _next_time(key: jax.Array, interval: tuple[float, float] | None, dtype) -> jax.Array:
        """() the time until the next event drawn from ``interval`` [s]; infinite without one."""
        if interval is None:
            return jnp.asarray(jnp.inf, dtype)
        return terms.draw_interval(key, interval, dtype)

    def _ranges(self, level: jax.Array, dtype) -> jax.Array:
        """(3, 2) the command ranges at a command-curriculum level: the forward range's top at ``(level + 1) /
        command_levels`` of the way from its low to its high (the full ranges without a curriculum)."""
        ranges = jnp.asarray(self.command_ranges, dtype)
        if self.command_levels is None:
            return ranges
        low, high = ranges[0]
        top = low + (high - low) * (level + 1).astype(dtype) / self.command_levels
        return ranges.at[0, 1].set(top)

    def _next_start(self, sim: State, data: LocomotionData, fresh_sim: State, fresh_data: LocomotionData):
        """The next episode's start after an automatic reset: on the terrain's next cell (:meth:`_next_cell`) and at
        the command curriculum's next level (:meth:`_next_level`)."""
        fresh_sim, fresh_data = self._next_cell(sim, data, fresh_sim, fresh_data)
        return fresh_sim, self._next_level(data, fresh_data)

    def _next_level(self, data: LocomotionData, fresh_data: LocomotionData) -> LocomotionData:
        """With a command curriculum, the next episode's level is one up when the episode ended without a fall and
        tracked its commands within :data:`~jaxmor.envs.terms.CURRICULUM_TRACKING` on average, one down when it
        fell, else the same; its first command is drawn at that level."""
        if self.command_levels is None:
            return fresh_data
        error = data.tracking[0] / jnp.maximum(data.tracking[1], 1.0)
        up = ~data.fell & (error < terms.CURRICULUM_TRACKING)
        level = jnp.clip(data.command_level + up.astype(jnp.int32) - data.fell, 0, self.command_levels - 1)
        dtype = fresh_data.command.dtype
        key = jax.random.fold_in(fresh_data.key, 7)
        command = terms.draw_command(key, self._ranges(level, dtype), self.standing_fraction)
        return fresh_data.replace(command_level=level, command=command)

    def _next_cell(self, sim: State, data: LocomotionData, fresh_sim: State, fresh_data: LocomotionData):
        """With a terrain curriculum, the next episode starts one level up when the base walked more than half a cell
        from its start, one level down when it walked less than half the distance its command asked for over a full
        episode (legged_gym's rule), on a cell of the kind drawn afresh."""
        if not self.curriculum:
            return fresh_sim, fresh_data
        kinds = self.spawn.shape[0] // self.levels
        walked = jnp.linalg.norm(sim.q[:2] - data.origin)
        asked = jnp.linalg.norm(data.command[:2]) * self.episode_steps * self.control_period
        level = data.cell // kinds + (walked > self.cell_size / 2) - (walked < asked / 2)
        cell = jnp.clip(level, 0, self.levels - 1) * kinds + fresh_data.cell % kinds
        move = self.spawn[cell] - self.spawn[fresh_data.cell]
        q = fresh_sim.q.at[:3].add(move)
        feet = fresh_data.feet.replace(position=fresh_data.feet.position + move)
        return fresh_sim.replace(q=q), fresh_data.replace(cell=cell, origin=fresh_data.origin + move[:2], feet=feet)

    def _base_frame(self, sim: State):
        """Base linear and angular velocity and gravity's direction, in the base frame."""
        rot = quat_to_rotation(sim.q[3:7])
        return rot.T @ sim.u[0:3], rot.T @ sim.u[3:6], rot.T @ jnp.asarray([0.0, 0.0, -1.0], sim.u.dtype)

    def _observe(self, sim: State, data: LocomotionData) -> jax.Array:
        model = self.world_model(data)
        if self.observation_sensors is None:
            opening = list(zip(("linear_velocity", "angular_velocity", "gravity"), self._base_frame(sim), strict=True))
        else:
            readings = read_sensors(model, sim)
            opening = [("sensors", readings[name]) for name in self.observation_sensors]
        scan = [] if self.scan is None else [("height_scan", self._height_scan(model, sim))]
        clock = [] if self.gait_frequency is None else [("gait", jnp.stack([jnp.cos(data.phase), jnp.sin(data.phase)]))]
        blocks = [
            *opening,
            ("command", data.command),
            *clock,
            ("joint_position", sim.q[self.q_index] - jnp.asarray(self.standing_joints, sim.q.dtype)),
            ("joint_velocity", sim.u[self.v_index]),
            ("motor_speed", self._motor_speed_shares(model, sim)),
            ("saturation", data.saturated),
            ("last_action", data.last_action),
            *scan,
        ]
        return terms.noisy(jax.random.fold_in(data.key, 1), blocks, self.noise)

    def _height_scan(self, model: Model, sim: State) -> jax.Array:
        """The base's height above the ground at the scan's points, turned by the base's yaw [m]."""
        rot = quat_to_rotation(sim.q[3:7])
        heading = rot[:2, 0] / jnp.maximum(jnp.linalg.norm(rot[:2, 0]), 1e-9)
        turn = jnp.stack([heading, jnp.stack([-heading[1], heading[0]])], axis=1)  # columns: forward, left
        points = sim.q[:2] + self.scan.astype(sim.q.dtype) @ turn.T
        return sim.q[2] - ground_heights(model, points)

    def _policy_bounds(self, model: Model, sim: State) -> tuple[jax.Array, jax.Array]:
        if self.motor_model == "box":
            return box_torque_bounds(model, sim)
        return actuator_torque_bounds(model, sim)

    def _transition(self, sim: State, data: LocomotionData, action: jax.Array):
        model = self.world_model(data)
        dtype = sim.u.dtype
        a = jnp.clip(action, -1.0, 1.0)
        target = jnp.asarray(self.standing_joints, dtype) + self.action_scale * a
        sim, sums, saturated = self._control_substeps(model, sim, a, target)
        power, saturated_fraction, violation, outside, outside_share = sums / self.substeps
        feet, moved = self.feet.advance(model, sim.q, data.feet, self.control_period)

        lin, ang, gravity = self._base_frame(sim)
        joints = sim.q[self.q_index] - jnp.asarray(self.standing_joints, dtype)
        values = terms.reward_terms(data.command, a, data.last_action, lin, ang, gravity, joints, moved)
        frequency = (self.gait_frequency or 0.0) + self.gait_speedup * jnp.linalg.norm(data.command[:2])
        phase = jnp.mod(data.phase + 2 * math.pi * frequency * self.control_period, 2 * math.pi)
        values.update(motor_power=power, saturation=outside, feet_phase=self._feet_phase(data.command, phase, moved))
        metrics = {name: self.weights[name] * values[name] * self.control_period for name in values}
        height = sim.q[2] - ground_heights(model, sim.q[None, :2])[0]
        terminated = (height < self.min_base_height) | (-gravity[2] < 0.5) | sim.nonfinite
        metrics["termination"] = self.weights["termination"] * terminated.astype(dtype)
        reward = sum(metrics.values())
        stance = feet.touching & data.feet.touching
        metrics.update(
            forward_speed=lin[0],
            command_forward=data.command[0],
            tracking_error=jnp.linalg.norm(lin[:2] - data.command[:2]),
            yaw_rate_error=jnp.abs(ang[2] - data.command[2]),
            swing_fraction=1.0 - jnp.mean(feet.touching.astype(dtype)),
            slip_speed=jnp.sum(moved.slip_speed) / jnp.maximum(jnp.sum(stance), 1),
            power=power,
            saturated_fraction=saturated_fraction,
            region_violation=violation,
            outside_region=outside_share,
            speed_ratio=jnp.max(jnp.abs(self._motor_speed_shares(model, sim))),
            command_level=data.command_level.astype(dtype),
            terrain_level=self._terrain_level(data).astype(dtype),
        )
        tracking = data.tracking + jnp.stack([metrics["tracking_error"], jnp.ones((), dtype)])
        data = data.replace(last_action=a, saturated=saturated, feet=feet, phase=phase)
        data = data.replace(tracking=tracking, fell=terminated)
        sim, data = self._events(sim, data)
        return sim, data, reward, terminated, metrics

    def _feet_phase(self, command: jax.Array, phase: jax.Array, moved) -> jax.Array:
        """() the ``feet_phase`` reward: the feet's clearances against the gait clock's swing (all feet down under a
        standing command); 0 without a gait clock."""
        if self.gait_frequency is None:
            return jnp.zeros((), phase.dtype)
        targets = terms.swing_targets(phase, jnp.asarray(self.gait_offsets, phase.dtype), terms.SWING_HEIGHT)
        moving = jnp.linalg.norm(command) >= terms.STANDING
        return terms.feet_phase(moved.clearance, jnp.where(moving, targets, 0.0))

    @staticmethod
    def _motor_speed_shares(model: Model, sim: State) -> jax.Array:
        """(na,) each motor's speed over its no-load speed ``Kv V`` [-] (the rotors', with backlash)."""
        no_load = jnp.asarray(model.actuators.motor.velocity_constant, sim.u.dtype) * sim.bus_voltage
        return motor_speeds(model, rotor_view(model, sim).u) / no_load

    def _terrain_level(self, data: LocomotionData) -> jax.Array:
        """() the terrain level of the world's episode (0 on flat ground)."""
        if self.spawn is None:
            return jnp.zeros((), jnp.int32)
        return data.cell // (self.spawn.shape[0] // self.levels)

    def _events(self, sim: State, data: LocomotionData) -> tuple[State, LocomotionData]:
        """The command drawn again and the base pushed where their times ran out during the control step; the
        episode's key moved on (the observation's noise of this step is drawn from the new one)."""
        dtype = sim.u.dtype
        key, k_cmd, k_push, k_times = jax.random.split(data.key, 4)
        command_time = data.command_time - self.control_period
        redraw = command_time <= 0.0
        fresh = terms.draw_command(k_cmd, self._ranges(data.command_level, dtype), self.standing_fraction)
        next_command = self._next_time(jax.random.fold_in(k_times, 0), self.command_interval, dtype)
        push_time = data.push_time - self.control_period
        pushed = push_time <= 0.0
        next_push = self._next_time(jax.random.fold_in(k_times, 1), self.push_interval, dtype)
        u = jnp.where(pushed, terms.push(k_push, sim.u, self.push_speed), sim.u)
        data = data.replace(
            key=key,
            command=jnp.where(redraw, fresh, data.command),
            command_time=jnp.where(redraw, next_command, command_time),
            push_time=jnp.where(pushed, next_push, push_time),
        )
        return sim.replace(u=u), data

    def _control_substeps(self, model: Model, sim: State, a: jax.Array, target: jax.Array):
        """The control period's physics steps under the clipped action ``a``.

        Returns:
            ``(sim, sums, saturated)``: the last state, the per-substep sums of motor power, saturated
            share, region violation and outside-the-bounds torque, and the last substep's saturation flags.
        """
        dtype = sim.u.dtype
        act = model.actuators
        gear = jnp.asarray(act.gear_ratio, dtype)
        motor = act.motor
        peak = _peak_output_torque(model, sim.bus_voltage)  # finite scale at the gear output
        kp, kd = jnp.asarray(self.kp, dtype), jnp.asarray(self.kd, dtype)

        def substep(carry, _):
            s, sums, _ = carry
            lower, upper = self._policy_bounds(model, s)
            if self.action_mode == "torque":
                wanted = 0.5 * (1.0 - a) * lower + 0.5 * (1.0 + a) * upper
            else:
                wanted = kp * (target - s.q[self.q_index]) - kd * s.u[self.v_index]
            outside = jnp.maximum(wanted - upper, 0.0) + jnp.maximum(lower - wanted, 0.0)
            saturated = ((wanted >= upper) | (wanted <= lower)).astype(dtype)
            command = jnp.clip(wanted, lower, upper) if self.motor_model == "box" else wanted
            s = physics_step(model, s.replace(actuator_torque=command))
            st = s.actuator_state
            now = motor.replace(bus_voltage=s.bus_voltage)
            violation = motor_operating_region_violation(now, st.motor_speed, st.motor_torque) * gear / peak
            values = jnp.stack(
                [
                    jnp.sum(jnp.abs(st.motor_torque * st.average_motor_speed)),
                    jnp.mean((st.saturation != 0).astype(dtype)),
                    jnp.sum(violation),
                    jnp.sum(outside / peak),
                    jnp.mean((violation > REGION_TOLERANCE).astype(dtype)),
                ]
            )
            return (s, sums + values, saturated), None

        init = (sim, jnp.zeros((5,), dtype), jnp.zeros_like(a))
        (sim, sums, saturated), _ = jax.lax.scan(substep, init, None, length=self.substeps)
        return sim, sums, saturated


def _peak_output_torque(model: Model, bus_voltage) -> jax.Array:
    """(na,) each actuator's largest torque at the gear output [Nm]: the gear ratio times the smaller of the motor's
    peak torque and its stall torque ``Kt V / R`` at ``bus_voltage``."""
    act = model.actuators
    motor = act.motor
    dtype = jnp.asarray(model.body_mass).dtype
    stall = jnp.asarray(motor.torque_constant, dtype) * bus_voltage / jnp.asarray(motor.resistance, dtype)
    return jnp.asarray(act.gear_ratio, dtype) * jnp.minimum(jnp.asarray(motor.peak_torque, dtype), stall)


def top_speed(model: Model, standing_q: np.ndarray, feet: Sequence[str] | None = None) -> float:
    """The forward speed the motors allow a trot at [m/s]: the fastest a stance foot moves back relative to the base
    at the standing pose when each driven joint of its leg turns at its motor's corner speed (where the peak torque
    starts to fall with the back EMF, ``Kv (V - R peak / Kt)``, or half the no-load speed where that is higher:
    the speed of the motor's largest power), through the gear, and the joints' effects add up, times ``2 / pi``
    (a sinusoidal sweep's mean over its peak). A bound the curriculum can reach for, not a speed any policy
    reaches: beyond it the motors give less than their peak torque through much of the stride.

    Args:
        model: the robot, with motor actuators.
        standing_q: (nq,) its standing pose, base level.
        feet: the foot spheres (:class:`jaxmor.envs.feet.Feet`); ``None``: every sphere named ``*foot``.

    Returns:
        The speed [m/s].
    """
    chosen = Feet(model, feet_of(model, feet))
    q = jnp.asarray(standing_q, model.body_mass.dtype)
    jacobian = np.asarray(jax.jacfwd(lambda x: chosen.place(model, x)[0][:, 0])(q))  # (nf, nq): d foot x / d q
    motor = model.actuators.motor
    corner = np.maximum(np.asarray(motor.corner_speed()), 0.5 * np.asarray(motor.no_load_speed()))
    transmission = np.asarray(model.actuators.transmission)
    joint_v = np.asarray(model.actuators.joint_v_index)
    ratio = np.abs(transmission[np.arange(model.na), joint_v])  # motor turns per driven-joint turn
    joint_speed = corner / ratio
    sweep = np.abs(jacobian[:, actuator_joint_q_index(model)]) @ joint_speed
    return float(2.0 / np.pi * np.max(sweep))


#: How far outside the motor region, as a share of the peak torque, an applied torque must lie to count in the
#: ``outside_region`` metric: the clip puts torques on the region's bound, and the bound computed again after the step
#: (in float32, with the step's bus voltage) differs from the clip's by round-off.
REGION_TOLERANCE = 1e-3
#: The damping ratio of the default PD gains: ``kd = 2 DAMPING_RATIO sqrt(kp I)``.
DAMPING_RATIO = 0.5
#: The position error, as a share of the action scale, at which the default PD asks for the peak torque: a full
#: action at rest asks for twice the peak, so a swinging leg's target can lead it while the stance legs stay stiff.
PEAK_ERROR_SHARE = 0.5


def default_gains(model: Model, standing_q: np.ndarray, action_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """The default PD gains of :class:`Locomotion`'s ``"pd"`` mode, from the motors: ``kp`` such that half a full
    action (a target ``PEAK_ERROR_SHARE action_scale`` away) at rest asks for the actuator's peak torque at the gear
    output (:func:`_peak_output_torque` at the nominal bus voltage), ``kp = peak / (0.5 action_scale)``, so a full
    action asks for twice the peak; and
    ``kd = 2 zeta sqrt(kp I)`` with ``zeta = DAMPING_RATIO`` (0.5) and ``I`` the driven joint's diagonal entry of
    the mass matrix at ``standing_q`` (the inertia it moves, reflected rotor inertia included).

    Returns:
        ``(kp [Nm/rad], kd [Nm s/rad])``, each (na,).
    """
    q = jnp.asarray(standing_q, model.body_mass.dtype)
    inertia = np.diag(np.asarray(mass_matrix(model, q)))[np.asarray(model.actuators.joint_v_index)]
    peak = np.asarray(_peak_output_torque(model, jnp.asarray(model.actuators.motor.bus_voltage)))
    kp = peak / (PEAK_ERROR_SHARE * action_scale)
    return kp, 2.0 * DAMPING_RATIO * np.sqrt(kp * inertia)


def _gains(model: Model, standing_q, action_scale, kp, kd) -> tuple[np.ndarray, np.ndarray]:
    """``(kp, kd)`` as (na,) float64 arrays: given (a number or (na,), finite and ``>= 0``) or the defaults."""
    default_kp, default_kd = default_gains(model, standing_q, action_scale)
    out = []
    for value, default, name in ((kp, default_kp, "kp [Nm/rad]"), (kd, default_kd, "kd [Nm s/rad]")):
        if value is None:
            out.append(default)
            continue
        array = np.asarray(value, np.float64) if np.ndim(value) else np.full(model.na, as_nonnegative(value, name))
        if array.shape != (model.na,) or not np.all(np.isfinite(array) & (array >= 0)):
            raise ArgumentError(f"{name} must be a finite number >= 0 or ({model.na},) of them, got {value!r}")
        out.append(array)
    return out[0], out[1]


def _robot(model: Model | None, standing_q) -> tuple[Model, np.ndarray]:
    """The model and its standing pose, checked (the shipped quadruped by default)."""
    if model is None:
        model = add_ground(load_urdf(robot_path("quadruped")))
        if standing_q is None:
            standing_q = quadruped_standing_q(model)
    if not model.floating_base or model.na == 0 or not model.ground:
        raise ArgumentError("Locomotion needs a floating-base model with motor actuators and a ground")
    if standing_q is None:
        raise ArgumentError("Locomotion needs standing_q for a model other than the shipped quadruped")
    standing_q = np.asarray(standing_q, np.float64)
    if standing_q.shape != (model.nq,):
        raise ArgumentError(f"standing_q must have shape ({model.nq},), got {standing_q.shape}")
    return model, standing_q


def _check_modes(model: Model, motor_model: str, action_mode: str) -> None:
    """The motor model and action mode, checked (Box-MOR needs finite effort limits)."""
    if motor_model not in ("em", "box"):
        raise ArgumentError(f"motor_model must be 'em' or 'box', got {motor_model!r}")
    if action_mode not in ("torque", "pd"):
        raise ArgumentError(f"action_mode must be 'torque' or 'pd', got {action_mode!r}")
    if motor_model == "box":
        effort = np.asarray(model.dof_effort_limit)[np.asarray(model.actuators.joint_v_index)]
        if not np.all(np.isfinite(effort) & (effort > 0)):
            raise ArgumentError(f"Box-MOR needs positive finite effort limits at the driven joints, got {effort}")


def as_command_ranges(ranges, name: str = "command_ranges") -> np.ndarray:
    """Command ranges checked: :class:`Locomotion`'s ``command_ranges`` and ``jaxmor play --resampled``.

    Args:
        ranges: three ``(low, high)`` pairs: forward and lateral speed [m/s], yaw rate [rad/s].
        name: the argument's name in the error.

    Returns:
        (3, 2) float64 array.

    Raises:
        ArgumentError: not three finite pairs with ``low <= high``, named ``name``.
    """
    try:
        array = np.asarray(ranges, np.float64)
    except (TypeError, ValueError):
        array = np.zeros(0)
    if array.shape != (3, 2) or np.any(array[:, 0] > array[:, 1]) or not np.all(np.isfinite(array)):
        raise ArgumentError(f"{name} must be three finite (low, high) pairs, got {ranges!r}")
    return array


def _interval(value, name: str) -> tuple[float, float] | None:
    """``(low, high)`` [s] with ``0 < low <= high``, finite; or ``None``."""
    if value is None:
        return None
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be (low, high) in seconds or None, got {value!r}") from None
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low <= high):
        raise ArgumentError(f"{name} must be (low, high) with 0 < low <= high [s], got {value!r}")
    return low, high


def _fraction(value, name: str) -> float:
    value = as_nonnegative(value, name)
    if value > 1:
        raise ArgumentError(f"{name} must be in [0, 1], got {value}")
    return value


def _observation_delay(
    given: int | tuple[int, int] | None, randomization: Mapping[str, Distribution] | None
) -> tuple[int | tuple[int, int], dict[str, Distribution] | None]:
    """``(observation_delay, model_randomization)``: the observation delay given, else the randomization's
    ``"observation.delay"`` as a ``(low, high)`` range, else 0; and the randomization without that entry.

    Raises:
        ArgumentError: both given, or an entry that is not ``jaxmor.integers`` of two whole numbers ``>= 0``.
    """
    spec = dict(randomization or {})
    drawn = spec.pop(OBSERVATION_DELAY, None)
    if drawn is None:
        return (0 if given is None else given), spec or None
    if given is not None:
        raise ArgumentError(
            f"the observation delay is given twice: observation_delay={given!r} and "
            f"randomization[{OBSERVATION_DELAY!r}]; give one"
        )
    bounds = [np.asarray(x) for x in (drawn.a, drawn.b)] if isinstance(drawn, Distribution) else []
    if not bounds or drawn.kind != "integers" or drawn.select is not None or any(b.size != 1 for b in bounds):
        raise ArgumentError(
            f"randomization[{OBSERVATION_DELAY!r}] must be jaxmor.integers(low, high) with 0 <= low <= high "
            f"[control steps] and no select, got {brief_repr(drawn)}"
        )
    low, high = (int(b.item()) for b in bounds)
    if low < 0:
        raise ArgumentError(f"randomization[{OBSERVATION_DELAY!r}]: low must be >= 0 [control steps], got {low}")
    return (low, high), spec or None


def _with_drawn_backlash(model: Model, randomization: Mapping[str, Distribution]) -> Model:
    """``model`` with backlash (width 0, each driven joint's armature moved to its rotor) on the actuators that have
    none, when the randomization draws a backlash parameter; else ``model``."""
    if not any(name.startswith("backlash.") for name in randomization):
        return model
    bare = [n for n, on in zip(model.actuators.names, model.actuators.backlash.active, strict=True) if not on]
    return with_backlash(model, width=0.0, actuators=bare) if bare else model


def _physical_parameters(action_scale, timestep, joint_noise) -> tuple[float, ...]:
    """The action scale, the time step and the joint noise of :class:`Locomotion`, checked.

    Returns:
        ``(action_scale, timestep, joint_noise)`` as Python floats.

    Raises:
        ArgumentError: naming the parameter: a value that is not a finite real number, a negative joint noise, or
            an action scale or time step that is not positive.
    """
    return (
        as_positive(action_scale, "action_scale [rad]"),
        as_positive(timestep, "timestep [s]"),
        as_nonnegative(joint_noise, "joint_noise [rad]"),
    )


def _scan_points(height_scan, dtype) -> jax.Array | None:
    """(nx ny, 2) the height scan's points in the base's yaw frame [m], or ``None``.

    Raises:
        ArgumentError: not ``(nx, ny, spacing)`` with positive counts and spacing.
    """
    if height_scan is None:
        return None
    try:
        nx, ny, spacing = height_scan
    except (TypeError, ValueError):
        raise ArgumentError(f"height_scan must be (nx, ny, spacing), got {height_scan!r}") from None
    nx, ny = as_positive_int(nx, "height_scan nx"), as_positive_int(ny, "height_scan ny")
    spacing = as_positive(spacing, "height_scan spacing [m]")
    along = (np.arange(nx) - (nx - 1) / 2) * spacing
    across = (np.arange(ny) - (ny - 1) / 2) * spacing
    grid = np.stack(np.meshgrid(along, across, indexing="ij"), axis=-1).reshape(-1, 2)
    return jnp.asarray(grid, dtype)


def _sensor_names(model: Model, names: Sequence[str] | None) -> tuple[str, ...] | None:
    """``observation_sensors`` checked against the model's sensors."""
    if names is None:
        return None
    if isinstance(names, str) or not names:
        raise ArgumentError(f"observation_sensors must be a non-empty sequence of sensor names, got {names!r}")
    unknown = [n for n in names if n not in model.sensors.names]
    if unknown:
        raise ArgumentError(
            f"observation_sensors: {unknown} are not sensors of the model; its sensors are {list(model.sensors.names)}"
        )
    return tuple(names)


def _check_full_action(model: Model, standing_q: np.ndarray, kp, kd, action_scale: float, timestep: float) -> None:
    """Refuse gains whose explicit PD step is unstable at the standing pose and at a full action either way
    (docs/design/step-artifacts.md)."""
    poses = np.stack([standing_q] * 3)
    poses[1, actuator_joint_q_index(model)] += action_scale
    poses[2, actuator_joint_q_index(model)] -= action_scale
    check_pd_step(model, kp, kd, timestep, q=poses)
