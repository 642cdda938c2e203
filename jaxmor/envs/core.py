"""The functional environment API: ``reset(key) -> EnvState`` and ``step(env_state, action) -> EnvState``.

An environment is a Python object that holds only static configuration and the model; its ``reset`` and
``step`` are pure functions of their arguments, so ``jax.jit(jax.vmap(env.step))`` runs any number of
worlds, and everything that changes lives in the :class:`EnvState`. A finished world (failed, or at the
time limit) is reset inside ``step`` when ``auto_reset`` is on (the default): the returned state then
holds the next episode's first state and observation, with ``done`` set and the last observation of the
finished episode in ``info["terminal_observation"]``.

A task subclasses :class:`Env` and provides ``observation_size``, ``action_size``, ``metric_names`` and
three functions of the world: ``_start`` (a new episode's state), ``_transition`` (one control step) and
``_observe``.

Observation delay (``observation_delay``): the policy sees the observation of ``k`` control steps ago, ``k`` fixed or
drawn per world at every reset among the integers of a range. ``EnvState.observations`` keeps the last
``max + 1`` observations, the latest first (static length; empty without delay); a reset fills it with the reset's
observation, so the first ``k`` steps of an episode repeat it. ``info["terminal_observation"]`` is delayed too (what
the policy would have seen). The simulation is not delayed: the task's rewards and terminations see the present.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxmor.checks import as_positive_int, check_real_dtype
from jaxmor.errors import ArgumentError
from jaxmor.types import State


@struct.dataclass
class EnvState:
    """One world of an environment, after a reset or a step.

    Attributes:
        sim: the simulated world (:class:`jaxmor.State`); after an automatic reset, the next episode's start.
        data: the task's own per-episode data (e.g. the velocity command and the episode's randomized model
            leaves: :class:`jaxmor.envs.LocomotionData`).
        obs: (observation_size,) observation.
        reward: () reward of the last step (zero after ``reset``).
        done: () bool: the last step ended the episode (failure or time limit).
        metrics: name -> () value of the last step (the task's ``metric_names``; zero after ``reset``).
        info: ``"truncated"`` () bool: the episode ended at the time limit, not by failure (a value target
            should then bootstrap from ``"terminal_observation"``); ``"terminal_observation"``
            (observation_size,): the last observation of the episode that ended (``obs`` when none ended);
            ``"episode_return"`` and ``"episode_length"`` (): the finished episode's sum of rewards and its
            number of steps, valid where ``done``; ``"nonfinite_actions"`` () int32: how many entries of the
            step's action were NaN or infinite (each was replaced by zero; see :meth:`Env.step`).
        key: the ``jax.random`` key of the next automatic reset.
        steps: () int32, steps taken in the current episode.
        episode_return: () sum of the current episode's rewards.
        observations: (max_delay + 1, observation_size) the last observations, the latest first ((0,
            observation_size) without an observation delay; see the module docstring).
        observation_lag: () int32, this episode's observation delay [control steps].
    """

    sim: State
    data: Any
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    metrics: dict[str, jax.Array]
    info: dict[str, jax.Array]
    key: jax.Array
    steps: jax.Array
    episode_return: jax.Array
    observations: jax.Array
    observation_lag: jax.Array


class Env:
    """Base class of jaxmor's environments (see the module docstring).

    Args:
        episode_steps: the time limit, in control steps (``>= 1``).
        auto_reset: reset a world inside ``step`` when its episode ends.
        observation_delay: the observation's delay [control steps]: an int ``>= 0``, or ``(low, high)`` ints
            (``0 <= low <= high``) to draw it per world at every reset, uniformly among ``low .. high``.

    Attributes (set by the task):
        observation_size: length of the observation vector.
        action_size: length of the action vector.
        metric_names: the keys of ``EnvState.metrics``.
    """

    observation_size: int
    action_size: int
    metric_names: tuple[str, ...]

    def __init__(self, episode_steps: int, auto_reset: bool = True, observation_delay: int | tuple[int, int] = 0):
        self.episode_steps = as_positive_int(episode_steps, "episode_steps")
        self.auto_reset = bool(auto_reset)
        self.observation_delay = _delay_range(observation_delay)

    # The task's part.
    def _start(self, key: jax.Array) -> tuple[State, Any]:
        """A new episode: ``(sim, data)``."""
        raise NotImplementedError

    def _transition(self, sim: State, data: Any, action: jax.Array) -> tuple[State, Any, jax.Array, jax.Array, dict]:
        """One control step: ``(sim, data, reward (), terminated () bool, metrics)``."""
        raise NotImplementedError

    def _observe(self, sim: State, data: Any) -> jax.Array:
        """(observation_size,) observation of a world."""
        raise NotImplementedError

    def _next_start(self, sim: State, data: Any, fresh_sim: State, fresh_data: Any) -> tuple[State, Any]:
        """The start of a world's next episode after an automatic reset, given how the last one ended (``sim``,
        ``data``) and the freshly drawn start: by default the fresh start (a curriculum moves it)."""
        return fresh_sim, fresh_data

    # The API.
    def reset(self, key: jax.Array) -> EnvState:
        """A new episode, drawn with ``key`` (one world; ``jax.vmap`` it over keys for many).

        Returns:
            The episode's first :class:`EnvState` (reward, metrics zero; ``done`` false).
        """
        return self._episode(key)

    def _episode(self, key: jax.Array, ended: tuple[State, Any] | None = None) -> EnvState:
        """A new episode's first state (:meth:`reset`), moved by :meth:`_next_start` after ``ended``, the
        ``(sim, data)`` of the episode that ended (an automatic reset), before it is observed."""
        episode_key, next_key = jax.random.split(key)
        sim, data = self._start(episode_key)
        if ended is not None:
            sim, data = self._next_start(*ended, sim, data)
        obs = self._observe(sim, data)
        zero = jnp.zeros((), obs.dtype)
        low, high = self.observation_delay
        lag = jnp.asarray(low, jnp.int32)
        if high > low:
            lag = jax.random.randint(jax.random.fold_in(episode_key, 1), (), low, high + 1, jnp.int32)
        slots = high + 1 if high else 0
        return EnvState(
            sim=sim,
            data=data,
            obs=obs,
            reward=zero,
            done=jnp.asarray(False),
            metrics={name: zero for name in self.metric_names},
            info={
                "truncated": jnp.asarray(False),
                "terminal_observation": obs,
                "episode_return": zero,
                "episode_length": jnp.zeros((), jnp.int32),
                "nonfinite_actions": jnp.zeros((), jnp.int32),
            },
            key=next_key,
            steps=jnp.zeros((), jnp.int32),
            episode_return=zero,
            observations=jnp.broadcast_to(obs, (slots, obs.shape[0])),
            observation_lag=lag,
        )

    def step(self, env_state: EnvState, action: jax.Array) -> EnvState:
        """One control step of one world (``jax.vmap`` it over worlds).

        A non-finite action entry (NaN, +-inf: a diverged policy) is replaced by zero before the task sees it
        and counted in ``info["nonfinite_actions"]``: the world steps on with a finite action, its reward stays
        finite, and it is not reset for it (the other worlds of a batch are unaffected).

        Args:
            env_state: the world's state.
            action: (action_size,) the policy's action, real numbers (see the task for its meaning and range).

        Returns:
            The next :class:`EnvState`; with ``auto_reset``, a world whose episode ended holds the next
            episode's start (``done`` set, the ended episode's last observation in ``info``).

        Raises:
            ArgumentError: an action of the wrong shape, or not real numbers (complex, strings).
        """
        check_real_dtype(action, "action")
        action = jnp.asarray(action, env_state.obs.dtype)
        if action.shape != (self.action_size,):
            raise ArgumentError(
                f"action must have shape ({self.action_size},) for one world (vmap over worlds), got {action.shape}"
            )
        finite = jnp.isfinite(action)
        action = jnp.where(finite, action, jnp.zeros_like(action))
        sim, data, reward, terminated, metrics = self._transition(env_state.sim, env_state.data, action)
        observations, obs = _delayed(env_state, self._observe(sim, data))
        steps = env_state.steps + 1
        truncated = (steps >= self.episode_steps) & ~terminated
        done = terminated | truncated
        episode_return = env_state.episode_return + reward
        stepped = EnvState(
            sim=sim,
            data=data,
            obs=obs,
            reward=reward,
            done=done,
            metrics=metrics,
            info={
                "truncated": truncated,
                "terminal_observation": obs,
                "episode_return": episode_return,
                "episode_length": steps,
                "nonfinite_actions": jnp.sum(~finite).astype(jnp.int32),
            },
            key=env_state.key,
            steps=steps,
            episode_return=episode_return,
            observations=observations,
            observation_lag=env_state.observation_lag,
        )
        if not self.auto_reset:
            return stepped
        fresh = self._episode(env_state.key, (sim, data))

        def pick(new, old):
            return jnp.where(done, new, old)

        return stepped.replace(
            sim=jax.tree.map(pick, fresh.sim, sim),
            data=jax.tree.map(pick, fresh.data, data),
            obs=pick(fresh.obs, obs),
            key=pick(fresh.key, env_state.key),
            steps=pick(fresh.steps, steps),
            episode_return=pick(fresh.episode_return, episode_return),
            observations=pick(fresh.observations, observations),
            observation_lag=pick(fresh.observation_lag, env_state.observation_lag),
        )


def resetting_env(env: Any, adapter: str) -> Env:
    """``env``, checked for a trainer adapter: a jaxmor environment that resets its worlds itself.

    Raises:
        ArgumentError: ``env`` is not a jaxmor environment, or its ``auto_reset`` is off.
    """
    if not isinstance(env, Env):
        raise ArgumentError(f"{adapter} needs a jaxmor.envs environment, got {type(env).__name__}")
    if not env.auto_reset:
        raise ArgumentError(f"{adapter} needs an environment with auto_reset=True (jaxmor resets the worlds)")
    return env


def _delayed(env_state: EnvState, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(observations, seen)``: the ring with ``obs`` pushed in front, and the observation ``observation_lag``
    steps back (``obs`` itself without a delay)."""
    if env_state.observations.shape[0] == 0:
        return env_state.observations, obs
    observations = jnp.concatenate([obs[None], env_state.observations[:-1]])
    return observations, observations[env_state.observation_lag]


def _delay_range(value: Any) -> tuple[int, int]:
    """``observation_delay`` as ``(low, high)`` ints, ``0 <= low <= high``."""
    pair = value if isinstance(value, (tuple, list)) else (value, value)
    ints = len(pair) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
    if not ints or not 0 <= pair[0] <= pair[1]:
        raise ArgumentError(
            f"observation_delay must be an int >= 0 or a (low, high) pair of ints with 0 <= low <= high [control "
            f"steps], got {value!r}"
        )
    return int(pair[0]), int(pair[1])
