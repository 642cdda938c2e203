"""jaxmor.envs: the functional environment API and the Locomotion task.

Independent references: the torque bounds of the motor region in closed form (``oracles.motor_region``)
and the URDF's effort limits read from the file; a fresh ``env.reset`` with the stored key for the
automatic reset; the base velocity rotated into the base frame with a rotation built here from the
quaternion. World counts are small except in the 4,096-world test; each distinct configuration compiles
once per module: the 16-world tests share one compiled ``jit(vmap(reset))`` and ``jit(vmap(step))`` (``pd_fns``),
and the one-physics-step environments one compiled ``jit(step)`` per motor model (``_one_physics_step_env``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from lxml import etree
from oracles import motor_region, rot_of_quat

import jaxmor
from jaxmor import ArgumentError, envs
from jaxmor.envs.locomotion import REGION_TOLERANCE

N_SMALL = 16


@pytest.fixture(scope="module")
def pd_env():
    """Position-target actions (the default), 40-step episodes: large random targets make the robot fall
    (terminations), small ones let it stand until the limit truncates the episode. No observation noise: the tests
    compare observations with the state (tests/test_task_terms.py checks the noise)."""
    return envs.Locomotion(episode_steps=40, observation_noise=None)


@pytest.fixture(scope="module")
def pd_fns(pd_env):
    return jax.jit(jax.vmap(pd_env.reset)), jax.jit(jax.vmap(pd_env.step))


@pytest.mark.slow  # 40-70 s on 2 cores, the default environment's float64 compile; pd_fns' step runs by default
def test_environment_runs_under_jit_vmap_at_4096_worlds():
    env = envs.Locomotion()
    n = 4096
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    actions = jax.random.uniform(jax.random.PRNGKey(1), (n, env.action_size), minval=-1.0, maxval=1.0)
    step = jax.jit(jax.vmap(env.step))
    for _ in range(2):
        states = step(states, actions)
    assert states.obs.shape == (n, env.observation_size) == (n, 14 + 5 * 12)
    assert states.reward.shape == (n,) and states.done.shape == (n,)
    assert bool(jnp.all(jnp.isfinite(states.obs))) and bool(jnp.all(jnp.isfinite(states.reward)))
    assert int(jnp.max(states.steps)) == 2  # nobody ended in 2 steps: every world advanced
    assert float(jnp.min(states.sim.time)) == pytest.approx(2 * env.substeps * 0.004, rel=1e-5)


@pytest.mark.slow  # 30-45 s on 2 cores: the 1,000 steps, not the compile
def test_random_actions_for_1000_steps_stay_finite(pd_env, pd_fns):
    """1,000 control steps (5,000 physics steps) of uniform random actions on 16 worlds (in [-1, 1] on half
    of them, in [-0.1, 0.1] on the others): every observation, reward and metric finite, and both ways an
    episode ends happen. The steps are the module's compiled ``jit(vmap(step))``, called 1,000 times (a
    ``lax.scan`` over them would compile the step once more)."""
    reset, step = pd_fns
    states = reset(jax.random.split(jax.random.PRNGKey(2), N_SMALL))
    keys = jax.random.split(jax.random.PRNGKey(3), 1000)
    scale = jnp.where(jnp.arange(N_SMALL) < N_SMALL // 2, 1.0, 0.1)[None, :, None]
    actions = jax.vmap(lambda k: jax.random.uniform(k, (N_SMALL, pd_env.action_size), minval=-1.0, maxval=1.0))(keys)
    actions = actions * scale  # (1000, N_SMALL, action_size)

    @jax.jit  # one call per step, not one per reduction
    def summary(states):
        ok = jnp.all(jnp.isfinite(states.obs)) & jnp.all(jnp.isfinite(states.reward))
        for v in states.metrics.values():
            ok = ok & jnp.all(jnp.isfinite(v))
        truncated = states.info["truncated"]
        return ok, jnp.stack([jnp.sum(states.done & ~truncated), jnp.sum(truncated)]), jnp.max(jnp.abs(states.obs))

    rows = []
    for a in actions:
        states = step(states, a)
        rows.append(summary(states))
    finite, ended, largest = (np.asarray(jnp.stack(x)) for x in zip(*rows, strict=True))
    assert finite.shape == (1000,)
    assert np.all(finite), f"non-finite values first at step {int(np.argmin(finite))}"
    failures, truncations = (int(x) for x in np.sum(ended, axis=0))
    assert failures > 0 and truncations > 0, (failures, truncations)
    assert float(np.max(largest)) < 1e3  # observations stay physical (speeds, angles, ratios)


def test_auto_reset_starts_a_fresh_episode(pd_env, pd_fns):
    """At the 40-step limit every standing world is truncated and restarted exactly as ``reset`` with the
    key it carried; the last observation of the ended episode is kept in info."""
    reset, step = pd_fns
    states = reset(jax.random.split(jax.random.PRNGKey(4), N_SMALL))
    hold = jnp.zeros((N_SMALL, pd_env.action_size))
    ended_any = jnp.zeros(N_SMALL, bool)
    for _ in range(39):
        states = step(states, hold)
        ended_any = ended_any | states.done
    before = states
    after = step(before, hold)
    survivors = ~ended_any
    assert int(jnp.sum(survivors)) > 0
    idx = int(jnp.argmax(survivors))
    assert bool(after.done[idx]) and bool(after.info["truncated"][idx])
    assert int(after.info["episode_length"][idx]) == 40 and int(after.steps[idx]) == 0
    fresh = jax.tree.map(lambda x: x[idx], reset(before.key))  # env.reset of each world's stored key
    np.testing.assert_array_equal(np.asarray(after.obs[idx]), np.asarray(fresh.obs))
    np.testing.assert_array_equal(np.asarray(after.sim.q[idx]), np.asarray(fresh.sim.q))
    np.testing.assert_array_equal(np.asarray(after.data.command[idx]), np.asarray(fresh.data.command))
    assert not np.array_equal(np.asarray(after.info["terminal_observation"][idx]), np.asarray(after.obs[idx]))
    assert float(after.info["episode_return"][idx]) != 0.0 and float(after.episode_return[idx]) == 0.0


def test_nonfinite_actions_become_zero_and_are_counted(pd_env, pd_fns):
    """NaN actions in world 0 and infinite ones in world 1, for 5 steps: both step exactly as with zero actions
    (the counter says how many entries were replaced), rewards stay finite, no world is reset for it, and the
    other worlds run as they would anyway."""
    reset, step = pd_fns
    start = reset(jax.random.split(jax.random.PRNGKey(6), N_SMALL))
    actions = 0.1 * jax.random.uniform(jax.random.PRNGKey(7), (N_SMALL, pd_env.action_size), minval=-1.0, maxval=1.0)
    zeroed = actions.at[:2].set(0.0)
    broken = zeroed.at[0].set(jnp.nan).at[1, ::2].set(jnp.inf).at[1, 1::2].set(-jnp.inf)
    clean, dirty = start, start
    for _ in range(5):
        clean, dirty = step(clean, zeroed), step(dirty, broken)
        counted = np.asarray(dirty.info["nonfinite_actions"])
        np.testing.assert_array_equal(counted, [pd_env.action_size] * 2 + [0] * (N_SMALL - 2))
        np.testing.assert_array_equal(np.asarray(clean.info["nonfinite_actions"]), 0)
        assert np.all(np.isfinite(np.asarray(dirty.reward)))
    for got, want in zip(jax.tree.leaves(dirty.sim), jax.tree.leaves(clean.sim), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(dirty.reward), np.asarray(clean.reward))
    assert not np.any(np.asarray(dirty.done)) and np.all(np.asarray(dirty.steps) == 5)  # nobody reset


def test_a_fall_terminates_without_truncation(pd_env, pd_fns):
    reset, step = pd_fns
    states = reset(jax.random.split(jax.random.PRNGKey(5), N_SMALL))
    sunk = states.replace(sim=states.sim.replace(q=states.sim.q.at[:, 2].set(0.1)))  # base far below 60 % height
    out = step(sunk, jnp.zeros((N_SMALL, pd_env.action_size)))
    assert bool(jnp.all(out.done)) and not bool(jnp.any(out.info["truncated"]))
    assert bool(jnp.all(out.steps == 0))  # restarted


@functools.cache
def _one_physics_step_env(motor_model):
    """The environment with one physics step per action and its compiled ``jit(step)``, one per motor model for
    the module (the Box-MOR one serves two tests)."""
    env = envs.Locomotion(action_mode="torque", motor_model=motor_model, substeps=1, auto_reset=False)
    return env, jax.jit(env.step)


@pytest.mark.parametrize("motor_model", ["em", "box"])
def test_actions_at_plus_minus_one_are_the_torque_bounds(motor_model):
    """With one physics step per action, ``a = +-1`` applies exactly the bounds at the start of the step: the
    motor region in closed form times the gear (EM-MOR), or the URDF effort limits (Box-MOR, at rest)."""
    env, step = _one_physics_step_env(motor_model)
    model = env.model
    state = env.reset(jax.random.PRNGKey(6))
    # Moving joints, so that the motor region's bounds differ from the peak torque (voltage band).
    u = state.sim.u.at[np.asarray(model.actuators.joint_v_index)].set(jnp.linspace(-20.0, 20.0, model.na))
    state = state.replace(sim=state.sim.replace(u=u))
    signs = jnp.asarray(np.tile([1.0, -1.0, 1.0], model.na // 3))
    out = step(state, signs)
    st = out.sim.actuator_state
    gear = np.asarray(model.actuators.gear_ratio)
    applied = np.asarray(st.motor_torque) * gear
    if motor_model == "em":
        m = model.actuators.motor
        speed = np.asarray(jaxmor.transmission_matrix(model)) @ np.asarray(u)
        lower, upper = motor_region(
            speed,
            m.resistance,
            m.torque_constant,
            m.velocity_constant,
            np.asarray(state.sim.bus_voltage),
            m.peak_torque,
        )
        expected = np.where(np.asarray(signs) > 0, upper, lower) * gear
        assert np.any(np.abs(expected) < np.asarray(m.peak_torque) * gear * 0.999)  # on the voltage band somewhere
        assert float(out.metrics["outside_region"]) == 0.0  # every torque on the bound: inside, not outside
    else:
        root = etree.parse(str(jaxmor.robots.path("quadruped"))).getroot()
        effort = {
            j.get("name"): float(j.find("limit").get("effort"))
            for j in root.iter("joint")
            if j.find("limit") is not None
        }
        bound = np.array([effort[j] for j in model.actuators.joints])
        speed_ok = (
            np.abs(np.asarray(u)[np.asarray(model.actuators.joint_v_index)])
            <= np.asarray(model.dof_velocity_limit)[np.asarray(model.actuators.joint_v_index)]
        )
        assert np.all(speed_ok)
        expected = np.asarray(signs) * bound
    np.testing.assert_allclose(applied, expected, rtol=1e-12, atol=1e-12)


def test_box_mor_monitors_the_region_and_reports_its_violation():
    """Box-MOR: the region only monitored; the effort-limited torques at high speed lie outside the motor
    region, and the metric says by how much (closed form)."""
    env, step = _one_physics_step_env("box")
    model = env.model
    state = env.reset(jax.random.PRNGKey(7))
    assert not bool(state.sim.mor_enforced)
    u = state.sim.u.at[np.asarray(model.actuators.joint_v_index)].set(15.0)  # drive with the motion: voltage-limited
    out = step(state.replace(sim=state.sim.replace(u=u)), jnp.ones(model.na))
    st = out.sim.actuator_state
    m = model.actuators.motor
    lower, upper = motor_region(
        np.asarray(st.motor_speed),
        m.resistance,
        m.torque_constant,
        m.velocity_constant,
        np.asarray(state.sim.bus_voltage),
        m.peak_torque,
    )
    tau = np.asarray(st.motor_torque)
    outside = np.maximum(tau - upper, 0) + np.maximum(lower - tau, 0)
    assert outside.sum() > 0
    peak = np.asarray(model.actuators.motor.peak_torque)
    np.testing.assert_allclose(float(out.metrics["region_violation"]), np.sum(outside / peak), rtol=1e-9)
    share = np.mean(outside / peak > REGION_TOLERANCE)
    assert 0 < share < 1 and float(out.metrics["outside_region"]) == share  # some legs inside, some beyond
    no_load = np.asarray(m.velocity_constant) * np.asarray(state.sim.bus_voltage)
    speed = np.asarray(jaxmor.transmission_matrix(model)) @ np.asarray(out.sim.u)  # the step's end (no backlash)
    np.testing.assert_allclose(float(out.metrics["speed_ratio"]), np.max(np.abs(speed) / no_load), rtol=1e-12)


def test_observation_holds_base_frame_velocities_and_motor_speeds(pd_env):
    state = pd_env.reset(jax.random.PRNGKey(8))
    model = pd_env.model
    u = state.sim.u.at[0:6].set(jnp.array([0.3, -0.2, 0.1, 0.5, -0.4, 0.7]))
    u = u.at[np.asarray(model.actuators.joint_v_index)].set(jnp.linspace(-3, 3, model.na))
    sim = state.sim.replace(u=u)
    obs = np.asarray(pd_env._observe(sim, state.data))
    rot = rot_of_quat(np.asarray(sim.q[3:7]))
    np.testing.assert_allclose(obs[0:3], rot.T @ np.asarray(u[0:3]), atol=1e-12)
    np.testing.assert_allclose(obs[3:6], rot.T @ np.asarray(u[3:6]), atol=1e-12)
    np.testing.assert_allclose(obs[6:9], rot.T @ np.array([0.0, 0.0, -1.0]), atol=1e-12)
    m = model.actuators.motor
    speeds = np.asarray(jaxmor.transmission_matrix(model)) @ np.asarray(u)
    na = model.na
    np.testing.assert_allclose(
        obs[14 + 2 * na : 14 + 3 * na],  # after the command (3) and the gait clock (2)
        speeds / (np.asarray(m.velocity_constant) * np.asarray(sim.bus_voltage)),
        atol=1e-12,
    )


def test_the_observation_can_open_with_sensors(pd_env):
    """An IMU of sensors on the URDF's base link (``jaxmor.with_sensors``): a velocimeter, a gyro, and the world's z
    axis in the base frame. With ``observation_sensors`` the observation opens with their readings; they measure
    what the default observation's first blocks hold (the base's velocities in its frame, minus gravity's
    direction), so the two observations agree to round-off, and the rest is the same."""
    imu = """<sensor><velocimeter name="vel" site="base"/><gyro name="gyro" site="base"/>
      <framezaxis name="up" objtype="xbody" objname="world" reftype="xbody" refname="base"/></sensor>"""
    model = jaxmor.with_sensors(pd_env.model, imu)
    env = envs.Locomotion(
        model, pd_env.standing_q, episode_steps=40, observation_sensors=["vel", "gyro", "up"], observation_noise=None
    )
    assert env.observation_size == pd_env.observation_size
    state = env.reset(jax.random.PRNGKey(8))
    u = state.sim.u.at[0:6].set(jnp.array([0.3, -0.2, 0.1, 0.5, -0.4, 0.7]))
    sim = state.sim.replace(u=u)
    ours = np.asarray(env._observe(sim, state.data))
    default = np.asarray(pd_env._observe(sim, state.data))
    np.testing.assert_allclose(ours[:6], default[:6], atol=1e-12)
    np.testing.assert_allclose(ours[6:9], -default[6:9], atol=1e-12)
    np.testing.assert_array_equal(ours[9:], default[9:])
    with pytest.raises(ArgumentError, match=r"\['imu'\] are not sensors of the model"):
        envs.Locomotion(model, pd_env.standing_q, observation_sensors=["vel", "imu"])


def test_locomotion_on_generated_terrain_with_a_height_scan(pd_env):
    """Episodes start on a cell's spawn point at the standing height above it; the height scan reads the base's
    height above the terrain at its points (on grid vertices here: the heights array's entries), and turns with the
    base's yaw."""
    terrain = jaxmor.terrain.generate(levels=2, kinds=("stairs_up", "rough"), size=4.0, resolution=0.1)
    env = envs.Locomotion(
        pd_env.model,
        pd_env.standing_q,
        terrain=terrain,
        height_scan=(3, 2, 0.2),
        episode_steps=40,
        observation_noise=None,
    )
    assert env.observation_size == pd_env.observation_size + 6
    state = env.reset(jax.random.PRNGKey(3))
    start = np.asarray(state.sim.q)
    spawns = terrain.spawn.reshape(-1, 3)
    cell = np.argmin(np.linalg.norm(spawns[:, :2] - start[:2], axis=1))
    np.testing.assert_allclose(start[:2], spawns[cell, :2], atol=1e-12)
    np.testing.assert_allclose(start[2], spawns[cell, 2] + env.standing_height + 0.02, atol=1e-12)
    # A base over the rough cell (level 0, column 1), off its platform, at x = 5.2, y = 0.5, heading along +x: the
    # scan's points (along -0.2, 0, 0.2; across -0.1, 0.1) are the vertices x = 5.0, 5.2, 5.4 by y = 0.4, 0.6.
    q = state.sim.q.at[0:2].set(jnp.array([5.2, 0.5])).at[2].set(2.0).at[3:7].set(jnp.array([1.0, 0, 0, 0]))
    scan = np.asarray(env._observe(state.sim.replace(q=q), state.data))[-6:]
    rows, cols = np.array([4, 6, 4, 6, 4, 6]), np.array([50, 50, 52, 52, 54, 54])
    assert len(np.unique(terrain.heights[rows, cols])) == 6  # distinct heights: the order is checked
    np.testing.assert_allclose(scan, 2.0 - terrain.heights[rows, cols], atol=1e-12)
    # Heading along +y (left is -x): along gives y = 0.3, 0.5, 0.7, across x = 5.3, 5.1.
    turned = q.at[3:7].set(jnp.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]))
    scan = np.asarray(env._observe(state.sim.replace(q=turned), state.data))[-6:]
    rows, cols = np.array([3, 3, 5, 5, 7, 7]), np.array([53, 51, 53, 51, 53, 51])
    np.testing.assert_allclose(scan, 2.0 - terrain.heights[rows, cols], atol=1e-12)
    with pytest.raises(ArgumentError, match="height_scan"):
        envs.Locomotion(pd_env.model, pd_env.standing_q, height_scan=(3, 0, 0.1))


@pytest.mark.slow
def test_a_curriculum_moves_worlds_between_levels_by_how_far_they_walked(pd_env):
    """Every world starts on the first level; at an automatic reset it moves up a level when its base walked more
    than half a cell, down when it walked less than half its command's distance over an episode, within the
    levels, on a cell of a freshly drawn kind."""
    terrain = jaxmor.terrain.generate(levels=3, kinds=("flat", "rough"), size=4.0, resolution=0.1)
    env = envs.Locomotion(pd_env.model, pd_env.standing_q, terrain=terrain, curriculum=True, episode_steps=1)
    starts = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), 16))
    assert int(starts.data.cell.max()) < 2  # the first level's two cells
    one = jax.tree.map(lambda x: x[0], starts)
    fresh = env.reset(jax.random.PRNGKey(9))

    def next_level(level, walked, command):
        data = one.data.replace(cell=jnp.asarray(2 * level, jnp.int32), command=jnp.array([command, 0.0, 0.0]))
        sim = one.sim.replace(q=one.sim.q.at[0].set(one.data.origin[0] + walked))
        sim, data = env._next_start(sim, data, fresh.sim, fresh.data)
        kind = int(fresh.data.cell) % 2
        assert int(data.cell) % 2 == kind
        np.testing.assert_allclose(sim.q[:2], terrain.spawn.reshape(-1, 3)[int(data.cell), :2], atol=1e-12)
        return int(data.cell) // 2

    assert next_level(0, 2.5, 0.0) == 1  # walked more than half of a 4 m cell
    assert next_level(2, 2.5, 0.0) == 2  # the top level keeps it
    assert next_level(2, 0.0, 0.5) == 1  # asked 0.5 m/s x 0.02 s, walked nothing
    assert next_level(0, 0.0, 0.5) == 0
    assert next_level(1, 0.008, 0.5) == 1  # walked more than half its command's distance, less than half a cell
    stepped = jax.jit(jax.vmap(env.step))(starts, jnp.zeros((16, env.action_size)))  # every episode ends (1 step)
    assert bool(stepped.done.all()) and int(stepped.data.cell.max()) < 6
    with pytest.raises(ArgumentError, match="curriculum=True needs a terrain"):
        envs.Locomotion(pd_env.model, pd_env.standing_q, curriculum=True)


def test_episodes_draw_their_models_from_a_randomize_pool():
    env = envs.Locomotion(randomization=envs.default_randomization(), randomization_pool=8, seed=1)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(9), 32))
    pool = np.asarray(env._pool_model.actuators.motor.resistance)  # (8, na)
    drawn = np.asarray(states.data.world.actuators.motor.resistance)  # (32, na)
    assert pool.shape == (8, env.action_size)
    matches = [int(np.argmax(np.all(pool == d, axis=1))) for d in drawn]
    assert all(np.array_equal(pool[i], d) for i, d in zip(matches, drawn, strict=True))
    assert len(set(matches)) > 1  # different worlds drew different models
    # Each world starts with its own drawn bus voltage (shared across a world's actuators).
    voltages = np.asarray(states.sim.bus_voltage)
    np.testing.assert_array_equal(voltages, np.asarray(states.data.world.actuators.motor.bus_voltage))


def test_bad_configuration_and_actions_are_refused(pd_env):
    with pytest.raises(ArgumentError, match="motor_model"):
        envs.Locomotion(motor_model="rectangle")
    with pytest.raises(ArgumentError, match="action_mode"):
        envs.Locomotion(action_mode="velocity")
    with pytest.raises(ArgumentError, match="unknown reward term 'speed'"):
        envs.Locomotion(reward_weights={"speed": 1.0})
    with pytest.raises(ArgumentError, match="command_ranges"):
        envs.Locomotion(command_ranges=((1.0, 0.0), (0, 0), (0, 0)))
    with pytest.raises(ArgumentError, match="standing_q"):
        envs.Locomotion(model=jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped"))))
    state = pd_env.reset(jax.random.PRNGKey(0))
    with pytest.raises(ArgumentError, match=r"action must have shape \(12,\)"):
        pd_env.step(state, jnp.zeros((2, 12)))


def test_envs_api_is_pinned():
    assert sorted(envs.__all__) == [
        "DEFAULT_COMMAND_RANGES",
        "DEFAULT_OBSERVATION_NOISE",
        "DEFAULT_REWARD_WEIGHTS",
        "Env",
        "EnvState",
        "Locomotion",
        "LocomotionData",
        "box_torque_bounds",
        "check_pd_step",
        "default_gains",
        "default_randomization",
        "pd_step_limit",
        "top_speed",
    ]
    for name in envs.__all__:
        assert getattr(envs, name).__doc__ or name.isupper(), name


# --------------------------------------------------------------------------------------------------
# Observation delay.


@pytest.fixture(scope="module")
def delayed_runs():
    """The same 4 worlds, actions and keys without and with a 2-step observation delay, 8 steps, no auto reset
    (so the sequences are comparable end to end)."""
    keys = jax.random.split(jax.random.PRNGKey(5), 4)
    actions = 0.3 * jax.random.normal(jax.random.PRNGKey(6), (8, 4, 12))

    def run(env):
        states = jax.vmap(env.reset)(keys)
        step = jax.jit(jax.vmap(env.step))
        seen = [np.asarray(states.obs)]
        for a in actions:
            states = step(states, a)
            seen.append(np.asarray(states.obs))
        return np.stack(seen), states

    plain = envs.Locomotion(episode_steps=50, auto_reset=False, substeps=2)
    late = envs.Locomotion(episode_steps=50, auto_reset=False, substeps=2, observation_delay=2)
    return run(plain), run(late)


def test_a_delayed_observation_is_the_undelayed_one_shifted(delayed_runs):
    (plain, plain_state), (late, late_state) = delayed_runs
    np.testing.assert_array_equal(late[2:], plain[:-2])  # shifted by 2 control steps, exactly
    np.testing.assert_array_equal(late[:2], np.broadcast_to(plain[0], late[:2].shape))  # the reset's, repeated
    np.testing.assert_array_equal(late_state.sim.q, plain_state.sim.q)  # the simulation itself is not delayed
    assert late_state.observations.shape == (4, 3, plain.shape[-1]) and plain_state.observations.shape[1] == 0


@pytest.mark.slow
def test_per_world_observation_delays_are_drawn_at_reset_and_batch_like_each_alone():
    """Slow: two more compiles of the quadruped's environment step (68 s on the 2-core machine)."""
    env = envs.Locomotion(episode_steps=50, auto_reset=False, substeps=2, observation_delay=(0, 3))
    keys = jax.random.split(jax.random.PRNGKey(11), 6)
    states = jax.vmap(env.reset)(keys)
    lags = np.asarray(states.observation_lag)
    assert set(lags.tolist()) <= {0, 1, 2, 3} and len(set(lags.tolist())) > 1
    actions = 0.3 * jax.random.normal(jax.random.PRNGKey(12), (5, 6, 12))
    step = jax.jit(jax.vmap(env.step))
    for a in actions:
        states = step(states, a)
    one = jax.jit(env.step)
    for i, key in enumerate(keys):
        alone = env.reset(key)
        for a in actions:
            alone = one(alone, a[i])
        np.testing.assert_allclose(states.obs[i], alone.obs, rtol=0, atol=1e-12)
        assert int(alone.observation_lag) == lags[i]


def test_an_auto_reset_refills_the_observation_ring():
    env = envs.Locomotion(episode_steps=2, substeps=1, observation_delay=1)
    state = env.reset(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    state = step(step(state, jnp.zeros(12)), jnp.zeros(12))  # the time limit: reset inside the second step
    assert bool(state.done)
    np.testing.assert_array_equal(state.observations[0], state.observations[1])  # filled with the new start's
    np.testing.assert_array_equal(state.obs, state.observations[0])


def test_the_default_randomization_draws_an_observation_delay_of_0_or_1_and_none_without():
    """``default_randomization()``'s ``"observation.delay"`` (0 or 1 control steps) is the environment's: drawn per
    world at every reset (a two-slot ring filled with the reset's observation), not by ``jaxmor.randomize``; without a
    randomization there is none (an empty ring, the observation the present one)."""
    spec = envs.default_randomization()
    assert spec["observation.delay"] == jaxmor.integers(0, 1)
    env = envs.Locomotion(randomization=spec, randomization_pool=4, seed=1, substeps=1)
    assert env.observation_delay == (0, 1) and "observation.delay" not in env.randomization
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(4), 8))
    assert set(np.asarray(states.observation_lag).tolist()) == {0, 1}
    assert states.observations.shape == (8, 2, env.observation_size)
    np.testing.assert_array_equal(states.observations[:, 0], states.obs)  # filled with the reset's observation
    np.testing.assert_array_equal(states.observations[:, 1], states.obs)
    bare = envs.Locomotion(substeps=1)
    assert bare.observation_delay == (0, 0) and bare.reset(jax.random.PRNGKey(0)).observations.shape[0] == 0


@pytest.mark.slow  # about a minute on 2 cores; per-world delays: the tests above
def test_drawn_observation_delays_hold_in_a_scanned_batch():
    """An episode's drawn delay (0 or 1 here) under ``jit(vmap)`` and ``lax.scan``: each world sees the present
    observation (the ring's newest entry) of ``observation_lag`` control steps ago, exactly, the reset's before."""
    env = envs.Locomotion(
        randomization={"observation.delay": jaxmor.integers(0, 1)}, substeps=1, episode_steps=50, auto_reset=False
    )
    actions = 0.3 * jax.random.normal(jax.random.PRNGKey(8), (6, 6, env.action_size))

    def run(keys, actions):
        def one(states, action):
            states = jax.vmap(env.step)(states, action)
            return states, (states.obs, states.observations[:, 0])

        first = jax.vmap(env.reset)(keys)
        last, (seen, present) = jax.lax.scan(one, first, actions)
        return first, last, seen, present

    first, last, seen, present = jax.jit(run)(jax.random.split(jax.random.PRNGKey(7), 6), actions)
    lags = np.asarray(first.observation_lag)
    assert set(lags.tolist()) == {0, 1} and np.array_equal(np.asarray(last.observation_lag), lags)
    present = np.concatenate([np.asarray(first.obs)[None], np.asarray(present)])  # (7, worlds, size), t = 0..6
    for w, lag in enumerate(lags):
        want = present[np.maximum(np.arange(1, 7) - lag, 0), w]
        np.testing.assert_array_equal(np.asarray(seen)[:, w], want)


def test_an_observation_delay_given_twice_or_badly_drawn_is_refused():
    spec = {"observation.delay": jaxmor.integers(0, 1)}
    with pytest.raises(ArgumentError, match=r"observation delay is given twice: observation_delay=2 and rand"):
        envs.Locomotion(randomization=spec, observation_delay=2)
    for bad in (jaxmor.uniform(0.0, 1.0), jaxmor.integers([0, 1], [1, 2]), jaxmor.integers(0, 1, select=["a"]), 1):
        with pytest.raises(ArgumentError, match=r"randomization\['observation.delay'\] must be jaxmor.integers"):
            envs.Locomotion(randomization={"observation.delay": bad})
    with pytest.raises(ArgumentError, match=r"low must be >= 0 \[control steps\], got -1"):
        envs.Locomotion(randomization={"observation.delay": jaxmor.integers(-1, 1)})


@pytest.mark.parametrize("bad", [-1, (2, 1), (0, 1.5), True, "1", (1, 2, 3)])
def test_a_bad_observation_delay_is_refused(bad):
    with pytest.raises(ArgumentError, match="observation_delay must be an int >= 0 or a"):
        envs.Locomotion(observation_delay=bad)
