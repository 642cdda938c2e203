"""The left-right mirror of the locomotion task (jaxmor.envs.mirror) and PPO's symmetric augmentation.

The physical check: a world and its reflection (base position and quaternion, velocities and driven joints
reflected by hand, the command's lateral and yaw parts negated, the gait clock shifted by half a turn, the feet
tracked from each world's pose) stepped with
an action and its reflection must stay reflections of each other: each observation is the Mirror of the other's and
the rewards are equal. A wrong joint sign or partner breaks it within a step (the legs then move differently).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmor import envs
from jaxmor.envs.mirror import Mirror, joint_mirror, locomotion_mirror
from jaxmor.errors import ArgumentError


@pytest.fixture(scope="module")
def env():
    return envs.Locomotion(
        observation_noise=None, push_interval=None, command_interval=None, joint_noise=0.0, auto_reset=False
    )


def test_quadruped_joint_partners_and_signs_follow_its_urdf(env):
    """The shipped quadruped's legs (LF, RF, LH, RH; HAA abduction about x, HFE and KFE about y on both sides):
    left and right swap, abduction changes sign, hip and knee flexion keep it."""
    index, sign = joint_mirror(env.model, env.standing_q, env.standing_joints)
    names = env.model.actuators.names
    swap = {"LF": "RF", "RF": "LF", "LH": "RH", "RH": "LH"}
    assert [names[i] for i in index] == [swap[n[:2]] + n[2:] for n in names]
    assert sign.tolist() == [-1.0 if n.endswith("HAA") else 1.0 for n in names]


def _reflect_sim(sim, mirror_joints):
    index, sign = mirror_joints
    q, u = sim.q, sim.u
    base_q = jnp.concatenate([q[:3] * jnp.array([1, -1, 1]), q[3:7] * jnp.array([1, -1, 1, -1])])
    base_u = jnp.concatenate([u[:3] * jnp.array([1, -1, 1]), u[3:6] * jnp.array([-1, 1, -1])])
    return sim.replace(
        q=jnp.concatenate([base_q, q[7:][index] * sign]), u=jnp.concatenate([base_u, u[6:][index] * sign])
    )


def test_a_reflected_world_stays_the_reflection(env):
    mirror = locomotion_mirror(env)
    joints = joint_mirror(env.model, env.standing_q, env.standing_joints)
    assert env.model.nq == 7 + env.model.na  # the joints after the base are the driven ones, in order
    start = env.reset(jax.random.PRNGKey(0))
    rng = np.random.default_rng(0)
    sim = start.sim.replace(
        q=start.sim.q.at[7:].add(rng.uniform(-0.1, 0.1, env.model.na)),
        u=start.sim.u + rng.uniform(-0.3, 0.3, env.model.nv),
    )
    reflected = _reflect_sim(sim, joints)
    data = start.data.replace(command=jnp.array([0.6, 0.2, 0.4]), phase=jnp.asarray(0.3))
    a = start.replace(sim=sim, data=data.replace(feet=env.feet.start(env.model, sim.q)))
    b = start.replace(
        sim=reflected,
        data=data.replace(
            command=jnp.array([0.6, -0.2, -0.4]),
            phase=jnp.asarray(0.3 + np.pi),
            feet=env.feet.start(env.model, reflected.q),
        ),
    )
    step = jax.jit(env.step)
    for k in range(10):
        action = jnp.asarray(rng.uniform(-1, 1, env.action_size), jnp.float32)
        a, b = step(a, action), step(b, mirror.action(action))
        # float32 physics: the two worlds round differently; 2e-3 of the observations' scale (up to ~10 rad/s)
        np.testing.assert_allclose(b.obs, mirror.observation(a.obs), atol=2e-3, err_msg=f"step {k}")
        np.testing.assert_allclose(b.reward, a.reward, rtol=1e-3, atol=1e-4)
    assert not bool(a.done)


def test_the_maps_are_involutions_of_the_right_size(env):
    mirror = env.mirror()
    x = jnp.asarray(np.random.default_rng(1).normal(size=(5, env.observation_size)), jnp.float32)
    np.testing.assert_array_equal(mirror.observation(mirror.observation(x)), x)
    assert mirror.observation_index.shape == (env.observation_size,)
    assert sorted(mirror.observation_index.tolist()) == list(range(env.observation_size))
    assert sorted(mirror.action_index.tolist()) == list(range(env.action_size))


def test_an_asymmetric_standing_pose_is_refused(env):
    tilted = np.array(env.standing_joints)
    tilted[0] += 0.2  # one hip abducted, its partner not
    with pytest.raises(ArgumentError, match="standing pose is not its own mirror image"):
        joint_mirror(env.model, env.standing_q, tilted)


def test_sensor_observations_are_refused(env):
    import jaxmor

    model = jaxmor.with_sensors(env.model, '<sensor><gyro name="gyro" site="base"/></sensor>')
    with_sensors = envs.Locomotion(model, env.standing_q, observation_sensors=["gyro"])
    with pytest.raises(ArgumentError, match="observation_sensors"):
        with_sensors.mirror()


def test_ppo_batch_gets_each_transition_and_its_reflection():
    from brax.training.types import Transition

    from jaxmor.train.ppo import with_reflection

    mirror = Mirror(np.array([1, 0, 2]), np.array([1.0, 1.0, -1.0]), np.array([1, 0]), np.array([-1.0, -1.0]))
    obs = jnp.arange(2 * 4 * 3, dtype=jnp.float32).reshape(2, 4, 3)
    act = jnp.arange(2 * 4 * 2, dtype=jnp.float32).reshape(2, 4, 2)
    data = Transition(
        observation=obs,
        action=act,
        reward=jnp.ones((2, 4)),
        discount=jnp.ones((2, 4)),
        next_observation=obs + 1,
        extras={"policy_extras": {"raw_action": act * 2, "log_prob": jnp.full((2, 4), -3.0)}, "state_extras": {}},
    )
    out = with_reflection(data, mirror)
    assert out.observation.shape == (4, 4, 3)
    np.testing.assert_array_equal(out.observation[:2], obs)
    np.testing.assert_array_equal(out.observation[2:, :, 0], obs[:, :, 1])
    np.testing.assert_array_equal(out.observation[2:, :, 2], -obs[:, :, 2])
    np.testing.assert_array_equal(out.next_observation[2:, :, 1], obs[:, :, 0] + 1)
    np.testing.assert_array_equal(out.action[2:], -act[:, :, ::-1])
    np.testing.assert_array_equal(out.extras["policy_extras"]["raw_action"][2:], -2 * act[:, :, ::-1])
    np.testing.assert_array_equal(out.extras["policy_extras"]["log_prob"], -3.0)
    np.testing.assert_array_equal(out.reward, 1.0)
