"""The trainer adapters of jaxmor.envs (the ``rl`` extra): Brax's ``brax.envs.Env`` and gymnax's ``Environment``.

The Brax adapter is checked with Brax's own batching wrapper and rollout function
(``brax.training.acting.generate_unroll``, what its trainers use to collect data); no Brax trainer is run:
Brax 0.14.2's PPO, SAC and APG call ``jax.device_put_replicated``, which the installed JAX (0.10.2) removed,
and its ES, which does not, spent over 5 minutes compiling one training epoch around the quadruped on this
suite's 2-core machine (then compiled another). Training is shown with rejax's PPO through the gymnax
adapter: on a tiny CPU run, the deterministic policy's return on a fixed set of 32 starts rises. Reference
for the return: the same evaluation (``_evaluate``) of the untrained policy, written here from the
environment's rewards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmor import ArgumentError, envs

brax_envs = pytest.importorskip("brax.envs.wrappers.training")
acting = pytest.importorskip("brax.training.acting")
rejax = pytest.importorskip("rejax")

from jaxmor.envs.brax import BraxEnv, wrap_for_training  # noqa: E402
from jaxmor.envs.gymnax import GymnaxEnv  # noqa: E402

STAND_STILL = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0))


@pytest.fixture(scope="module")
def brax_env():
    return BraxEnv(envs.Locomotion(episode_steps=3, command_ranges=STAND_STILL))


def test_brax_adapter_under_brax_wrappers_and_unroll(brax_env):
    """Brax's VmapWrapper (from wrap_for_training) and generate_unroll drive the adapter: every world ends at
    the 3-step limit as a truncation, restarts, and the episode bookkeeping Brax's trainers read is right."""
    env = wrap_for_training(brax_env, episode_length=3)
    n = 4
    state = jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))

    def policy(obs, key):
        return jnp.zeros((obs.shape[0], brax_env.action_size)), {}

    @jax.jit
    def unroll(state, key):
        return acting.generate_unroll(
            env, state, policy, key, unroll_length=7, extra_fields=("truncation", "episode_done", "episode_metrics")
        )

    final, data = unroll(state, jax.random.PRNGKey(1))
    extras = data.extras["state_extras"]
    done = np.asarray(extras["episode_done"])  # (7, n)
    np.testing.assert_array_equal(done, np.tile(np.array([0, 0, 1, 0, 0, 1, 0], float)[:, None], (1, n)))
    np.testing.assert_array_equal(np.asarray(extras["truncation"]), done)  # time limit, no fall
    np.testing.assert_array_equal(1.0 - np.asarray(data.discount), done)
    rewards = np.asarray(data.reward)
    sums = np.asarray(extras["episode_metrics"]["sum_reward"])
    np.testing.assert_allclose(sums[2], rewards[0:3].sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(sums[5], rewards[3:6].sum(axis=0), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(extras["episode_metrics"]["length"])[[2, 5]], 3.0)
    assert final.obs.shape == (n, brax_env.observation_size) and brax_env.backend == "jaxmor"


def test_brax_wrapper_refuses_what_it_would_not_do(brax_env):
    with pytest.raises(ArgumentError, match="episode_length=1000 differs"):
        wrap_for_training(brax_env, episode_length=1000)
    with pytest.raises(ArgumentError, match="action_repeat"):
        wrap_for_training(brax_env, episode_length=3, action_repeat=2)
    with pytest.raises(ArgumentError, match="auto_reset"):
        BraxEnv(envs.Locomotion(auto_reset=False))


# --------------------------------------------------------------------------------------------------
# Training through the gymnax adapter with rejax's PPO.

N_EVAL, EVAL_STEPS = 32, 50


def _evaluate(env):
    """The deterministic policy's mean return over 50 steps from 32 fixed starts (an ended world adds nothing)."""

    def evaluate(algo, ts, rng):
        act = algo.make_act(ts)
        states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(123), N_EVAL))

        def body(carry, key):
            s, ret, alive = carry
            a = jax.vmap(act)(s.obs, jax.random.split(key, N_EVAL))
            s = jax.vmap(env.step)(s, a)
            return (s, ret + alive * s.reward, alive * (1.0 - s.done)), None

        init = (states, jnp.zeros(N_EVAL), jnp.ones(N_EVAL))
        (_, ret, alive), _ = jax.lax.scan(body, init, jax.random.split(rng, EVAL_STEPS))
        return jnp.stack([ret.mean(), alive.mean()])

    return evaluate


def _train(**env_options) -> np.ndarray:
    """rejax PPO on the stand-still task with torque actions, 64 worlds x 16 steps per iteration, 60 iterations
    (61k control steps, 307k physics steps), evaluated every 5: the 13 evaluations' mean returns.

    float32, as training runs: rejax keeps its observation statistics in float32 and its scan refuses the float64
    ones it would compute under x64 (enabled for the whole test session in conftest.py)."""
    with jax.enable_x64(False):
        env = envs.Locomotion(action_mode="torque", episode_steps=50, command_ranges=STAND_STILL, **env_options)
        genv = GymnaxEnv(env)
        n_envs, steps, iterations = 64, 16, 60
        algo = rejax.PPO.create(
            env=genv,
            env_params=genv.default_params,
            num_envs=n_envs,
            num_steps=steps,
            total_timesteps=n_envs * steps * iterations,
            num_epochs=4,
            num_minibatches=4,
            learning_rate=1e-3,
            eval_freq=n_envs * steps * 5,
            normalize_observations=True,
            skip_initial_evaluation=False,
        ).replace(eval_callback=_evaluate(env))
        _, evaluations = jax.jit(algo.train)(jax.random.PRNGKey(0))
    returns = np.asarray(evaluations)[:, 0]
    assert np.all(np.isfinite(returns)) and len(returns) == 13
    return returns


@pytest.mark.slow
def test_rejax_ppo_learns_to_hold_the_robot_up():
    """The simple task: stand still (zero command) with torque actions, which start out letting the robot sag
    and fall (each fall costs the termination penalty). The return rises (measured here: -1.77 at the start,
    -1.43 at the end; the mean of the last three evaluations -1.47 against -1.70 for the first three). Asserted: a
    rise of 0.2 from first to last, and of 0.1 between those means."""
    returns = _train()
    assert returns[-1] > returns[0] + 0.2, returns
    assert returns[-3:].mean() > returns[:3].mean() + 0.1, returns


@pytest.mark.slow
def test_rejax_ppo_learns_with_latency_and_backlash_randomized():
    """The same training on worlds drawn from :func:`jaxmor.envs.default_randomization` (a pool of 64): a command
    delay of 0-2 physics steps and a gear backlash of 0-0.01 rad per actuator, with the motors', masses' and
    ground's spread, and an observation delay of 0 or 1 control steps per episode. The return still rises (measured
    here: -1.74 at the start, -1.47 at the end; the last three evaluations' mean -1.45 against -1.68 for the first
    three; without the observation delay -1.75, -1.48, -1.48 and -1.68; 112 s on 2 cores). Asserted as above."""
    returns = _train(randomization=envs.default_randomization(), randomization_pool=64)
    assert returns[-1] > returns[0] + 0.2, returns
    assert returns[-3:].mean() > returns[:3].mean() + 0.1, returns


@pytest.mark.slow  # 1-2 minutes on 2 cores; test_envs checks the environment's own count
def test_both_adapters_pass_on_the_count_of_nonfinite_actions(brax_env):
    """A NaN and an infinite entry in one world's action: both adapters report 2 replaced entries for it and 0
    for the others, and that world's reward stays finite (the environment replaced them by zero)."""
    n, size = 3, brax_env.action_size
    action = jnp.zeros((n, size)).at[1, 0].set(jnp.nan).at[1, size - 1].set(jnp.inf)
    env = wrap_for_training(brax_env, episode_length=3)
    state = jax.jit(env.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    assert np.asarray(state.info["nonfinite_actions"]).tolist() == [0] * n
    stepped = jax.jit(env.step)(state, action)
    assert np.asarray(stepped.info["nonfinite_actions"]).tolist() == [0, 2, 0]
    assert np.all(np.isfinite(np.asarray(stepped.reward)))

    gymnax = GymnaxEnv(brax_env.env)
    keys = jax.random.split(jax.random.PRNGKey(2), n)
    _, first = jax.vmap(gymnax.reset)(keys)
    _, _, reward, _, info = jax.jit(jax.vmap(gymnax.step))(keys, first, action)
    assert np.asarray(info["nonfinite_actions"]).tolist() == [0, 2, 0]
    assert np.all(np.isfinite(np.asarray(reward)))
