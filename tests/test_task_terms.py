"""The locomotion task's terms against their definitions (jaxmor.envs.terms, jaxmor.envs.feet, Locomotion's events).

Independent references: the shipped quadruped's leg geometry read from its URDF (thigh and shank 0.3 m, foot
sphere 0.025 m, hip axes at the base's height) for the feet's clearance in closed form; the uniform
distribution's moments for the observation noise and the pushes; counted control steps for the command times.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor import ArgumentError, envs
from jaxmor.envs import terms
from jaxmor.envs.feet import Feet

THIGH = SHANK = 0.3  # [m], the URDF's <origin> of KFE and of the foot
FOOT = 0.025  # [m], the foot sphere's radius
DT = 0.02  # [s], the default control period (4 ms x 5)


@pytest.fixture(scope="module")
def quadruped():
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    return model, jaxmor.robots.quadruped_standing_q(model)


def _clearance(base_z: float, hfe: float, kfe: float) -> float:
    """A foot's clearance with its HAA at 0 and a level base, from the leg's geometry."""
    return base_z - THIGH * np.cos(hfe) - SHANK * np.cos(hfe + kfe) - FOOT


def _lifted(q: np.ndarray, model, leg: str, hfe: float, kfe: float) -> np.ndarray:
    q = q.copy()
    q[jaxmor.joint_q_index(model, f"{leg}_HFE")] = hfe
    q[jaxmor.joint_q_index(model, f"{leg}_KFE")] = kfe
    return q


def test_feet_clearance_is_the_legs_closed_form(quadruped):
    model, q = quadruped
    feet = Feet(model, ("*_foot",))
    assert feet.names == ("LF_foot", "RF_foot", "LH_foot", "RH_foot")
    lifted = _lifted(q, model, "LF", 0.9, -1.9)
    _, clearance = feet.place(model, jnp.asarray(lifted))
    expected = [_clearance(q[2], 0.9, -1.9)] + [_clearance(q[2], 0.6, -1.2)] * 3
    np.testing.assert_allclose(np.asarray(clearance), expected, atol=1e-5)  # float32 kinematics
    assert expected[0] > 0.05 and abs(expected[1]) < 1e-6


def test_air_time_reward_on_a_scripted_gait(quadruped):
    """LF swings for 9 control steps, touches, swings for 20: the touchdowns report air times of 10 and 21 control
    periods (legged_gym's count: from the last sample touching to the first touching again) and the swing's peak;
    the reward term is the sum of (min(air time, 0.4 s) - 0.1 s) over the landings, zero under a standing command."""
    model, q = quadruped
    feet = Feet(model, ("*_foot",))
    script = [q] + [_lifted(q, model, "LF", 0.9, -1.9)] * 9 + [q] + [_lifted(q, model, "LF", 0.8, -1.8)] * 20 + [q]
    state = feet.start(model, jnp.asarray(script[0]))
    landed, rewards, peaks = [], [], []
    zero = jnp.zeros(12)
    for k, pose in enumerate(script[1:], start=1):
        state, step = feet.advance(model, jnp.asarray(pose), state, DT)
        values = terms.reward_terms(
            jnp.asarray([0.5, 0, 0]), zero, zero, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), zero, step
        )
        standing = terms.reward_terms(jnp.zeros(3), zero, zero, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), zero, step)
        if bool(step.touchdown[0]):
            landed.append((k, float(step.landed_air_time[0])))
            peaks.append(float(step.landed_peak[0]))
        rewards.append(float(values["feet_air_time"]))
        assert float(standing["feet_air_time"]) == 0.0
        assert not np.any(np.asarray(step.touchdown[1:]))  # the other feet never leave
    assert [k for k, _ in landed] == [10, 31]
    np.testing.assert_allclose([t for _, t in landed], [10 * DT, 21 * DT], rtol=1e-6)
    np.testing.assert_allclose(peaks, [_clearance(q[2], 0.9, -1.9), _clearance(q[2], 0.8, -1.8)], atol=1e-5)
    np.testing.assert_allclose(rewards[9], 10 * DT - 0.1, rtol=1e-5)
    np.testing.assert_allclose(rewards[30], 0.4 - 0.1, rtol=1e-5)  # 0.42 s counts as 0.4 s
    assert sum(abs(r) for i, r in enumerate(rewards) if i not in (9, 30)) == 0.0


def test_stance_feet_slip_speed_is_their_displacement_over_the_step(quadruped):
    model, q = quadruped
    feet = Feet(model, ("*_foot",))
    state = feet.start(model, jnp.asarray(q))
    moved = q.copy()
    moved[0] += 0.004  # the whole robot 4 mm along x in one control step: every foot slides at 0.2 m/s
    _, step = feet.advance(model, jnp.asarray(moved), state, DT)
    np.testing.assert_allclose(np.asarray(step.slip_speed), 0.2, rtol=1e-3)
    values = terms.reward_terms(jnp.zeros(3), jnp.zeros(12), jnp.zeros(12), *[jnp.zeros(3)] * 3, jnp.zeros(12), step)
    np.testing.assert_allclose(float(values["feet_slip"]), 4 * 0.2**2, rtol=2e-3)


def test_a_foot_rolling_on_its_sole_does_not_slip(quadruped):
    """The whole robot turned by 0.05 rad about the y axis through LF's lowest point: LF's sole (and RF's, on the same
    axis) stays where it was (no slip) though its centre moves by r sin(0.05); a hind sole, a distance L behind on the
    ground, moves by L (1 - cos 0.05) along x."""
    model, q = quadruped
    feet = Feet(model, ("*_foot",))
    state = feet.start(model, jnp.asarray(q))
    pivot = np.asarray(state.position[0]) - np.asarray([0.0, 0.0, FOOT])
    angle = 0.05
    c, s_ = np.cos(angle), np.sin(angle)
    turn = np.asarray([[c, 0, s_], [0, 1, 0], [-s_, 0, c]])
    turned = q.copy()
    turned[:3] = pivot + turn @ (q[:3] - pivot)
    turned[3:7] = [np.cos(angle / 2), 0.0, np.sin(angle / 2), 0.0]  # the level base turned about y
    _, step = feet.advance(model, jnp.asarray(turned), state, DT)
    centre = np.linalg.norm(np.asarray(feet.place(model, jnp.asarray(turned))[0][0, :2] - state.position[0, :2]))
    np.testing.assert_allclose(centre, FOOT * s_, rtol=1e-3)
    length = float(state.position[0, 0] - state.position[2, 0])
    np.testing.assert_allclose(np.asarray(step.speed[:2]), 0.0, atol=1e-4)
    np.testing.assert_allclose(np.asarray(step.speed[2:]), length * (1 - c) / DT, rtol=1e-3)


def test_uniform_observation_noise_has_the_stated_moments():
    """Half-width w: mean 0, standard deviation w / sqrt(3), never beyond w; unnoised blocks exact."""
    n = 200_000
    blocks = [("joint_velocity", jnp.zeros(n)), ("command", jnp.ones(n)), ("gravity", jnp.zeros(n))]
    seen = np.asarray(terms.noisy(jax.random.PRNGKey(3), blocks, {"joint_velocity": 1.5, "gravity": 0.05}))
    velocity, command, gravity = seen[:n], seen[n : 2 * n], seen[2 * n :]
    for values, width in ((velocity, 1.5), (gravity, 0.05)):
        assert abs(values.mean()) < 4 * width / np.sqrt(3 * n)
        np.testing.assert_allclose(values.std(), width / np.sqrt(3), rtol=0.01)
        assert np.max(np.abs(values)) <= width
    assert np.all(command == 1.0)


def test_pushes_change_the_base_velocity_uniformly_in_size_and_direction():
    u = jnp.zeros(18)
    keys = jax.random.split(jax.random.PRNGKey(5), 20_000)
    pushed = np.asarray(jax.vmap(lambda k: terms.push(k, u, 0.5))(keys))
    change = pushed[:, :2]
    size = np.linalg.norm(change, axis=1)
    assert np.all(pushed[:, 2:] == 0.0) and np.max(size) <= 0.5
    np.testing.assert_allclose(size.mean(), 0.25, rtol=0.02)  # uniform on [0, 0.5]
    assert np.linalg.norm(change.mean(axis=0)) < 0.01  # no preferred direction


@pytest.fixture(scope="module")
def event_env():
    return envs.Locomotion(
        episode_steps=50, command_interval=(0.098, 0.098), push_interval=(0.058, 0.058), substeps=1, auto_reset=False
    )


@functools.lru_cache
def _steps(env):
    return jax.jit(jax.vmap(env.reset)), jax.jit(jax.vmap(env.step))


def test_commands_are_drawn_again_at_their_times_and_pushes_come_at_theirs(event_env):
    """Control steps of 4 ms (one physics step each): a command time of 0.098 s runs out in the 25th step, a push
    time of 0.058 s in the 15th; each is then drawn again. The base's horizontal velocity jumps in the steps the
    push time runs out, by at most the push speed, and barely moves in the others."""
    env = event_env
    reset, step = _steps(env)
    states = reset(jax.random.split(jax.random.PRNGKey(0), 4))
    commands, pushes = [], []
    for _ in range(50):
        before = states.sim.u[:, :2]
        push_time = np.asarray(states.data.push_time)
        states = step(states, jnp.zeros((4, env.action_size)))
        commands.append(np.asarray(states.data.command))
        jump = np.linalg.norm(np.asarray(states.sim.u[:, :2] - before), axis=1)
        pushes.append((push_time <= env.control_period + 1e-6, jump))
    changed = [k for k in range(1, 50) if np.any(commands[k] != commands[k - 1])]
    assert changed == [24, 49]
    due = [k for k, (d, _) in enumerate(pushes) if np.all(d)]
    assert due == [14, 29, 44]
    jumps = np.asarray([j for _, j in pushes])
    quiet = np.delete(jumps, due, axis=0)
    print("pushes", jumps[due].max(axis=0), "otherwise at most", quiet.max())
    assert np.all(jumps[due].max(axis=0) > 0.05) and np.all(jumps[due] <= 0.5 + 0.02) and quiet.max() < 0.03


def test_standing_fraction_draws_zero_commands():
    ranges = jnp.asarray([[0.5, 1.0], [0.1, 0.2], [0.3, 0.4]])
    keys = jax.random.split(jax.random.PRNGKey(1), 10_000)
    drawn = np.asarray(jax.vmap(lambda k: terms.draw_command(k, ranges, 0.3))(keys))
    zero = np.all(drawn == 0, axis=1)
    np.testing.assert_allclose(zero.mean(), 0.3, atol=0.015)
    assert np.all((drawn[~zero] >= np.asarray(ranges)[:, 0]) & (drawn[~zero] <= np.asarray(ranges)[:, 1]))


def test_default_gains_ask_the_peak_torque_at_half_a_full_action():
    env = envs.Locomotion()
    peak = np.asarray([18.0, 30.0, 30.0] * 4)  # the URDF's comments: 3 Nm x 6 and x 10
    np.testing.assert_allclose(env.kp * env.action_scale, 2 * peak, rtol=1e-6)
    np.testing.assert_allclose(env.kp, peak / 0.25, rtol=1e-6)  # the 0.5 rad action scale: 120 Nm/rad on the knees
    inertia = np.asarray([0.08625, 0.08196, 0.01502] * 4)  # the mass matrix's diagonal at standing (jaxmor info)
    np.testing.assert_allclose(env.kd, np.sqrt(env.kp * inertia), rtol=1e-3)  # damping ratio 0.5


def test_bad_terms_are_refused():
    with pytest.raises(ArgumentError, match="observation block"):
        envs.Locomotion(observation_noise={"velocity": 0.1})
    with pytest.raises(ArgumentError, match="command_interval"):
        envs.Locomotion(command_interval=(2.0, 1.0))
    with pytest.raises(ArgumentError, match="standing_fraction"):
        envs.Locomotion(standing_fraction=1.5)
    with pytest.raises(ArgumentError, match="kp"):
        envs.Locomotion(kp=np.ones(3))
    with pytest.raises(ArgumentError, match="feet"):
        envs.Locomotion(feet=("base_box",))


def test_gait_clock_pairs_the_diagonal_feet_half_a_cycle_apart():
    """Four feet at the corners of a rectangle (base frame): the diagonal pairs share a phase and the pairs are half a
    cycle apart (a trot); two feet alternate by side; anything else is refused."""
    corners = np.asarray([[0.3, 0.2], [0.3, -0.2], [-0.3, 0.2], [-0.3, -0.2]])  # LF, RF, LH, RH
    offsets = terms.gait_offsets(corners)
    assert offsets[0] == offsets[3] and offsets[1] == offsets[2]
    np.testing.assert_allclose(abs(offsets[0] - offsets[1]), np.pi)
    two = terms.gait_offsets(np.asarray([[0.0, 0.1], [0.0, -0.1]]))
    np.testing.assert_allclose(abs(two[0] - two[1]), np.pi)
    with pytest.raises(ArgumentError, match="gait_frequency=None"):
        terms.gait_offsets(corners[:3])
    with pytest.raises(ArgumentError, match="gait_frequency=None"):
        terms.gait_offsets(np.asarray([[0.3, 0.0], [0.3, -0.2], [-0.3, 0.2], [-0.3, -0.2]]))


def test_swing_targets_lift_each_pair_for_half_a_cycle():
    """Over one cycle (10,000 phases) each foot's target is above the ground half the time, peaks at the swing
    height a quarter cycle after its swing starts, and exactly one diagonal pair is in the air at any phase."""
    phases = jnp.linspace(0.0, 2 * np.pi, 10_000, endpoint=False)
    offsets = jnp.asarray([0.0, np.pi, np.pi, 0.0])
    targets = np.asarray(jax.vmap(lambda p: terms.swing_targets(p, offsets, 0.08))(phases))
    np.testing.assert_allclose((targets > 0).mean(axis=0), 0.5, atol=1e-3)
    np.testing.assert_allclose(targets.max(axis=0), 0.08, rtol=1e-6)
    assert abs(float(phases[targets[:, 0].argmax()]) - np.pi / 2) < 1e-3
    up = targets > 0
    assert np.all(up[:, 0] == up[:, 3]) and not np.any(up[:, 0] & up[:, 1])


def test_feet_phase_reward_is_one_on_target_and_falls_as_a_gaussian():
    targets = jnp.asarray([0.08, 0.0, 0.0, 0.08])
    assert float(terms.feet_phase(targets, targets)) == 1.0
    off = targets.at[0].add(-0.05)  # one foot 5 cm below its target: exp(-0.0025 / 0.005)
    np.testing.assert_allclose(float(terms.feet_phase(off, targets)), 0.60653066, rtol=1e-6)


def test_the_gait_clock_turns_at_its_frequency_and_is_observed(event_env):
    """Control steps of 4 ms at 2 Hz: the phase moves 2 pi x 0.008 rad per step; the observation's clock entries
    (after the command) are its cosine and sine, without noise; ``gait_frequency=None`` removes them."""
    env = event_env
    reset, step = _steps(env)
    states = reset(jax.random.split(jax.random.PRNGKey(3), 4))
    start = np.asarray(states.data.phase)
    for _ in range(10):
        states = step(states, jnp.zeros((4, env.action_size)))
    moved = np.mod(np.asarray(states.data.phase) - start, 2 * np.pi)
    np.testing.assert_allclose(moved, 2 * np.pi * 2.0 * 0.004 * 10, atol=1e-5)
    phase = np.asarray(states.data.phase)
    np.testing.assert_allclose(np.asarray(states.obs)[:, 12:14], np.stack([np.cos(phase), np.sin(phase)], 1), atol=1e-6)
    assert envs.Locomotion(gait_frequency=None).observation_size == env.observation_size - 2
    with pytest.raises(ArgumentError, match="gait_frequency"):
        envs.Locomotion(gait_frequency=0.0)


def test_top_speed_is_the_legs_sweep_at_the_motors_corner_speed(quadruped):
    """The shipped quadruped's motors (R 0.4 Ohm, Kt 0.1 Nm/A, Kv 10 rad/s/V, 24 V, peak 3 Nm; the URDF's comment) turn
    at up to Kv (V - R peak / Kt) = 120 rad/s before the peak torque falls, 12 rad/s at the 10:1 hip and knee. At the
    standing pose (hip 0.6 rad, knee -1.2 rad) the foot's forward speed per hip turn is the hip-to-foot height,
    0.3 cos 0.6 + 0.3 cos 0.6, and per knee turn the shank's height, 0.3 cos 0.6 [m/rad]; the sum, times 2/pi."""
    model, q = quadruped
    reach = 2 * THIGH * np.cos(0.6) * 12.0 + SHANK * np.cos(0.6) * 12.0
    np.testing.assert_allclose(envs.top_speed(model, q), 2 / np.pi * reach, rtol=1e-4)


def test_the_command_curriculum_moves_a_level_by_the_episode_it_follows():
    """Four levels over 0-2 m/s forward: level l draws forward commands up to 0.5 (l + 1) m/s. After an episode
    without a fall that tracked within 0.25 m/s on average, one level up; after a fall, one down; otherwise the
    same; clipped to the levels. The next episode's command is drawn at its level."""
    env = envs.Locomotion(command_levels=4, command_ranges=((0.0, 2.0), (0.0, 0.0), (0.0, 0.0)), standing_fraction=0)
    data = env.reset(jax.random.PRNGKey(0)).data
    fresh = env.reset(jax.random.PRNGKey(1)).data
    assert int(data.command_level) == 0 and 0.0 <= float(data.command[0]) <= 0.5

    def after(level, error_sum, steps, fell):
        ended = data.replace(
            command_level=jnp.asarray(level, jnp.int32),
            tracking=jnp.asarray([error_sum, steps]),
            fell=jnp.asarray(fell),
        )
        return env._next_level(ended, fresh)

    assert int(after(1, 20.0, 100.0, False).command_level) == 2  # 0.2 m/s mean error
    assert int(after(1, 30.0, 100.0, False).command_level) == 1  # 0.3 m/s
    assert int(after(1, 1.0, 100.0, True).command_level) == 0
    assert int(after(3, 1.0, 100.0, False).command_level) == 3 and int(after(0, 1.0, 10.0, True).command_level) == 0
    keys = jax.random.split(jax.random.PRNGKey(2), 2000)
    drawn = jax.vmap(lambda k: env._next_level(data.replace(tracking=jnp.asarray([1.0, 100.0])), fresh.replace(key=k)))
    forward = np.asarray(drawn(keys).command[:, 0])
    assert forward.max() <= 1.0 and forward.max() > 0.95 and forward.min() >= 0.0  # level 1: up to 1 m/s


def test_the_gait_clock_speeds_up_with_the_command_and_speed_ratio_is_the_fastest_motor():
    """``gait_speedup=0.5`` Hz s/m under a 1 m/s forward and 0.5 m/s lateral command (|c_xy| = 1.118 m/s): the phase
    moves 2 pi (2 + 0.5 x 1.118) Hz x 4 ms per control step. ``speed_ratio`` is the largest |motor speed| / (Kv V),
    the observation's motor-speed block (no noise) being each motor's ratio."""
    env = envs.Locomotion(gait_speedup=0.5, substeps=1, observation_noise=None, command_interval=None, auto_reset=False)
    reset, step = _steps(env)
    states = reset(jax.random.split(jax.random.PRNGKey(4), 2))
    states = states.replace(data=states.data.replace(command=jnp.asarray([[1.0, 0.5, 0.0]] * 2, states.obs.dtype)))
    start = np.asarray(states.data.phase)
    for _ in range(5):
        states = step(states, jnp.zeros((2, env.action_size)))
    moved = np.mod(np.asarray(states.data.phase) - start, 2 * np.pi)
    np.testing.assert_allclose(moved, 2 * np.pi * (2.0 + 0.5 * np.hypot(1.0, 0.5)) * 0.004 * 5, atol=1e-5)
    na = env.action_size
    shares = np.asarray(states.obs)[:, 14 + 2 * na : 14 + 3 * na]
    np.testing.assert_allclose(np.asarray(states.metrics["speed_ratio"]), np.abs(shares).max(axis=1), rtol=1e-6)
