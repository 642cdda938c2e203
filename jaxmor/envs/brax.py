"""An adapter from a jaxmor environment to Brax's ``brax.envs.Env``, for Brax's trainers (PPO, SAC).

Needs the optional extra ``jaxmor[rl]`` (Brax). Use it as::

    from brax.training.agents.ppo import train as ppo
    from jaxmor.envs.brax import BraxEnv, wrap_for_training

    env = BraxEnv(jaxmor.envs.Locomotion())
    make_policy, params, _ = ppo.train(
        env, num_timesteps=..., episode_length=env.episode_steps, wrap_env_fn=wrap_for_training, ...
    )

Why ``wrap_env_fn``: Brax's own training wrapper (``brax.envs.training.wrap``) resets a finished world to
the *first* state it ever had, so every later episode of that world would replay the same velocity
command and the same randomized motor constants. jaxmor's environments reset themselves with a fresh
draw (``auto_reset``), so :func:`wrap_for_training` only batches the worlds; the adapter keeps the
bookkeeping Brax's trainers read (``info["truncation"]``, ``"steps"``, ``"episode_done"``,
``"episode_metrics"``) the way ``brax.envs.training.EpisodeWrapper`` does, and passes on
``info["nonfinite_actions"]`` (the action entries replaced by zero in the step: docs/training.md).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmor.envs import brax_compat
from jaxmor.envs.core import Env, resetting_env
from jaxmor.errors import ArgumentError

try:
    from brax.envs.base import Env as _BraxEnvBase
    from brax.envs.base import State as BraxState
    from brax.envs.wrappers.training import VmapWrapper
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError("jaxmor.envs.brax needs Brax: install the optional extra with pip install 'jaxmor[rl]'") from e


class BraxEnv(_BraxEnvBase):
    """A jaxmor environment (one world) seen as a ``brax.envs.Env``.

    ``pipeline_state`` is the jaxmor :class:`~jaxmor.envs.EnvState`; ``obs``, ``reward``, ``metrics`` are
    the jaxmor ones, ``done`` is a float (Brax's convention). Episodes end and restart inside jaxmor's
    ``step``.

    Args:
        env: a jaxmor environment with ``auto_reset`` on.

    Raises:
        ArgumentError: ``env`` is not a jaxmor environment, or its ``auto_reset`` is off.
    """

    def __init__(self, env: Env):
        self.env = resetting_env(env, "BraxEnv")
        brax_compat.install()  # Brax 0.14's trainers on JAX 0.10 (jaxmor.envs.brax_compat)

    @property
    def observation_size(self) -> int:
        return self.env.observation_size

    @property
    def action_size(self) -> int:
        return self.env.action_size

    @property
    def backend(self) -> str:
        return "jaxmor"

    @property
    def episode_steps(self) -> int:
        """The jaxmor environment's time limit [control steps]: pass it as ``episode_length``."""
        return self.env.episode_steps

    def _metrics(self, inner) -> dict[str, jax.Array]:
        return dict(inner.metrics)

    def reset(self, rng: jax.Array) -> BraxState:
        inner = self.env.reset(rng)
        zero = jnp.zeros_like(inner.reward)
        metrics = self._metrics(inner)
        episode = {"sum_reward": zero, "length": zero, **{k: zero for k in metrics}}
        info: dict[str, Any] = {
            "truncation": zero,
            "steps": zero,
            "episode_done": zero,
            "episode_metrics": episode,
            "nonfinite_actions": inner.info["nonfinite_actions"],
        }
        return BraxState(
            pipeline_state=inner, obs=inner.obs, reward=inner.reward, done=zero, metrics=metrics, info=info
        )

    def step(self, state: BraxState, action: jax.Array) -> BraxState:
        inner = self.env.step(state.pipeline_state, action)
        dtype = inner.reward.dtype
        done = inner.done.astype(dtype)
        metrics = self._metrics(inner)
        fresh = 1.0 - state.info["episode_done"]  # the previous step ended an episode: start the sums again
        old = state.info["episode_metrics"]
        episode = {
            "sum_reward": old["sum_reward"] * fresh + inner.reward,
            "length": old["length"] * fresh + 1.0,
            **{k: old[k] * fresh + v for k, v in metrics.items()},
        }
        info = {
            "truncation": inner.info["truncated"].astype(dtype),
            "steps": inner.info["episode_length"].astype(dtype),
            "episode_done": done,
            "episode_metrics": episode,
            "nonfinite_actions": inner.info["nonfinite_actions"],
        }
        return BraxState(
            pipeline_state=inner, obs=inner.obs, reward=inner.reward, done=done, metrics=metrics, info=info
        )


def wrap_for_training(
    env: BraxEnv,
    episode_length: int | None = None,
    action_repeat: int = 1,
    randomization_fn: Any = None,
) -> VmapWrapper:
    """The ``wrap_env_fn`` for Brax's trainers: batch the worlds (``VmapWrapper``), nothing else.

    Args:
        env: a :class:`BraxEnv`.
        episode_length: must be ``None`` or the environment's own time limit (``env.episode_steps``).
        action_repeat: must be 1 (the jaxmor environment's ``substeps`` set the control period).
        randomization_fn: must be ``None`` (randomize with the environment's ``randomization``).

    Raises:
        ArgumentError: any of the above differs: the trainer would otherwise believe in episodes, action
            repeats or randomizations that do not happen.
    """
    if not isinstance(env, BraxEnv):
        raise ArgumentError(f"wrap_for_training needs a jaxmor.envs.brax.BraxEnv, got {type(env).__name__}")
    if episode_length is not None and int(episode_length) != env.episode_steps:
        raise ArgumentError(
            f"episode_length={episode_length} differs from the environment's episode_steps={env.episode_steps}; "
            "set the time limit on the jaxmor environment and pass the same value to the trainer"
        )
    if action_repeat != 1:
        raise ArgumentError(f"action_repeat must be 1 (use the environment's substeps), got {action_repeat}")
    if randomization_fn is not None:
        raise ArgumentError("randomization_fn is not supported: pass randomization= to the jaxmor environment")
    return VmapWrapper(env)
