"""An adapter from a jaxmor environment to gymnax's ``Environment``, for the trainers built on it (rejax's
PPO, SAC, TD3; PureJaxRL-style loops).

Needs the optional extra ``jaxmor[rl]``. Use it as::

    import rejax
    from jaxmor.envs.gymnax import GymnaxEnv

    env = GymnaxEnv(jaxmor.envs.Locomotion())
    algo = rejax.PPO.create(env=env, env_params=env.default_params, num_envs=..., total_timesteps=...)
    train_state, evaluation = jax.jit(algo.train)(jax.random.PRNGKey(0))

Episodes end and restart inside jaxmor's ``step`` (``auto_reset``: a fresh command and randomization draw
per episode), so ``step`` ignores its key and ``params``. gymnax's ``done`` does not tell a failure from
the time limit; ``info["truncated"]`` does, for trainers that read it; ``info["nonfinite_actions"]`` counts the
action entries replaced by zero in the step (docs/training.md). Observations and rewards are
handed over in float32, the dtype of the spaces and of the trainers' networks (the simulation itself runs
in the model's dtype, float64 under ``jax_enable_x64``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmor.envs.core import Env, EnvState, resetting_env

try:
    from gymnax.environments import environment, spaces
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "jaxmor.envs.gymnax needs gymnax: install the optional extra with pip install 'jaxmor[rl]'"
    ) from e


class GymnaxEnv(environment.Environment):
    """A jaxmor environment (one world) seen as a gymnax ``Environment``; its state is the jaxmor
    :class:`~jaxmor.envs.EnvState`.

    Args:
        env: a jaxmor environment with ``auto_reset`` on.

    Raises:
        ArgumentError: ``env`` is not a jaxmor environment, or its ``auto_reset`` is off.
    """

    def __init__(self, env: Env):
        self.env = resetting_env(env, "GymnaxEnv")

    @property
    def default_params(self) -> environment.EnvParams:
        """gymnax's parameters: only ``max_steps_in_episode`` (the jaxmor time limit), for evaluation loops."""
        return environment.EnvParams(max_steps_in_episode=self.env.episode_steps)

    @property
    def name(self) -> str:
        return f"jaxmor-{type(self.env).__name__}"

    @property
    def num_actions(self) -> int:
        return self.env.action_size

    def action_space(self, params: Any = None) -> spaces.Box:
        """Actions in [-1, 1]^action_size."""
        return spaces.Box(-1.0, 1.0, (self.env.action_size,), jnp.float32)

    def observation_space(self, params: Any = None) -> spaces.Box:
        """Unbounded observations of length ``observation_size``."""
        return spaces.Box(-jnp.inf, jnp.inf, (self.env.observation_size,), jnp.float32)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, EnvState]:
        state = self.env.reset(key)
        return state.obs.astype(jnp.float32), state

    def step(
        self, key: jax.Array, state: EnvState, action: jax.Array, params: Any = None
    ) -> tuple[jax.Array, EnvState, jax.Array, jax.Array, dict[str, jax.Array]]:
        state = self.env.step(state, action)
        counts = {k: state.info[k] for k in ("truncated", "nonfinite_actions")}
        info = {**counts, **state.metrics}
        return state.obs.astype(jnp.float32), state, state.reward.astype(jnp.float32), state.done, info

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, EnvState]:
        return self.reset(key, params)

    def step_env(self, key: jax.Array, state: EnvState, action: jax.Array, params: Any):
        return self.step(key, state, action, params)
