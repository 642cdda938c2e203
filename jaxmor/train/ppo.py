"""Proximal policy optimization on a jaxmor environment, from Brax's PPO pieces, with the whole training state in
one pytree so that a run can be checkpointed and resumed exactly.

Brax's networks (``make_ppo_networks``: a tanh-squashed Gaussian policy and a value network, both MLPs on
observations normalized by running statistics), its loss (``compute_ppo_loss``: clipped surrogate, generalized
advantage estimation that bootstraps through time-limit ends) and its rollout (``acting.generate_unroll``) are used
as they are. The loop around them is jaxmor's: one :class:`TrainState` holds the parameters, the optimizer's state,
the normalizer, every world's environment state and the random key, per device, so that :func:`iterate` is a pure
function of it and a checkpoint of it (:mod:`jaxmor.train.run`) resumes the run where it stopped.

One **iteration** (:func:`iterate`): every world runs ``unroll_length`` control steps with the stochastic policy;
the normalizer takes the new observations; then ``epochs`` passes of stochastic gradient descent over the
``worlds * unroll_length`` transitions, cut into ``minibatches``; gradients are averaged over the devices. The
worlds are split evenly over the local devices (``jax.pmap``; on a CPU, one device per core:
``docs/worlds.md``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax
from brax.training import acting, gradients
from brax.training.acme import running_statistics, specs
from brax.training.agents.ppo import losses as ppo_losses
from brax.training.agents.ppo import networks as ppo_networks
from flax import linen, struct

from jaxmor.envs.brax import BraxEnv, wrap_for_training
from jaxmor.errors import ArgumentError

AXIS = "devices"


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """The PPO settings (the defaults are those jaxmor's walking policies were trained with: docs/training.md).

    Attributes:
        worlds: parallel worlds, split evenly over the devices.
        unroll_length: control steps each world runs per iteration.
        minibatches: minibatches per pass over an iteration's transitions.
        epochs: passes of gradient descent over an iteration's transitions.
        learning_rate: Adam's step size.
        entropy_cost: weight of the policy's entropy bonus.
        discounting: discount factor per control step.
        gae_lambda: generalized advantage estimation's lambda.
        clipping_epsilon: PPO's ratio clipping.
        reward_scaling: factor on the rewards before the loss.
        max_grad_norm: global gradient-norm clipping.
        policy_layers: hidden layer sizes of the policy network.
        value_layers: hidden layer sizes of the value network.
        mirror: add every transition's left-right reflection to the iteration's batch (symmetric data
            augmentation, :mod:`jaxmor.envs.mirror`): the reflected observations and actions with the original's
            rewards, advantages and behaviour log-probabilities; the gradient passes cost twice as much.
    """

    worlds: int = 1024
    unroll_length: int = 20
    minibatches: int = 8
    epochs: int = 4
    learning_rate: float = 3e-4
    entropy_cost: float = 1e-3
    discounting: float = 0.97
    gae_lambda: float = 0.95
    clipping_epsilon: float = 0.2
    reward_scaling: float = 1.0
    max_grad_norm: float = 1.0
    policy_layers: tuple[int, ...] = (256, 128, 128)
    value_layers: tuple[int, ...] = (256, 256, 128)
    mirror: bool = False


@struct.dataclass
class TrainState:
    """Everything a PPO run carries from one iteration to the next, with a leading axis of one entry per device.

    Attributes:
        params: the policy's and the value network's parameters.
        optimizer_state: Adam's moments and step count.
        normalizer: the observations' running statistics.
        env_state: the worlds' Brax states ((devices, worlds per device, ...) leaves).
        key: (devices, 2) the random keys.
        iteration: (devices,) int32 iterations done.
    """

    params: Any
    optimizer_state: Any
    normalizer: Any
    env_state: Any
    key: jax.Array
    iteration: jax.Array


class PPO:
    """A PPO learner for one jaxmor environment.

    Args:
        env: the environment (e.g. :class:`jaxmor.envs.Locomotion`), with ``auto_reset`` on.
        config: the settings.
        devices: the devices to split the worlds over (default: every local device).

    Raises:
        ArgumentError: worlds not divisible by the devices, a world's transitions not divisible into the
            minibatches, or ``mirror`` on an environment without a ``mirror()`` (or without the symmetry).
    """

    def __init__(self, env, config: PPOConfig, devices=None):
        self.devices = list(devices or jax.local_devices())
        self.config = config
        count = len(self.devices)
        if config.worlds % (count * config.minibatches):
            raise ArgumentError(
                f"worlds={config.worlds} must split evenly over the {count} devices and then over "
                f"minibatches={config.minibatches} (each minibatch holds whole trajectories of some worlds)"
            )
        self.local_worlds = config.worlds // count
        if config.mirror and not hasattr(env, "mirror"):
            raise ArgumentError(f"mirror needs an environment with a mirror() method; {type(env).__name__} has none")
        self.mirror = env.mirror() if config.mirror else None
        self.env = wrap_for_training(BraxEnv(env))
        self.networks = ppo_networks.make_ppo_networks(
            env.observation_size,
            env.action_size,
            preprocess_observations_fn=running_statistics.normalize,
            policy_hidden_layer_sizes=config.policy_layers,
            value_hidden_layer_sizes=config.value_layers,
            activation=linen.swish,
        )
        self.make_policy = ppo_networks.make_inference_fn(self.networks)
        self.optimizer = optax.chain(
            optax.clip_by_global_norm(config.max_grad_norm), optax.adam(learning_rate=config.learning_rate)
        )
        loss = functools.partial(
            ppo_losses.compute_ppo_loss,
            ppo_network=self.networks,
            entropy_cost=config.entropy_cost,
            discounting=config.discounting,
            reward_scaling=config.reward_scaling,
            gae_lambda=config.gae_lambda,
            clipping_epsilon=config.clipping_epsilon,
            normalize_advantage=True,
        )
        self._update = gradients.gradient_update_fn(loss, self.optimizer, pmap_axis_name=AXIS, has_aux=True)
        self.init = jax.pmap(self._init, axis_name=AXIS, devices=self.devices)
        self.iterate = jax.pmap(self._iterate, axis_name=AXIS, devices=self.devices, donate_argnums=0)

    def start(self, seed: int) -> TrainState:
        """A new run's state, drawn from ``seed``."""
        root = jax.random.PRNGKey(seed)
        keys = jax.random.split(jax.random.fold_in(root, 1), len(self.devices))
        shared = jnp.broadcast_to(jax.random.fold_in(root, 0), keys.shape)  # the same parameters on every device
        return self.init(keys, shared)

    def _init(self, key: jax.Array, shared: jax.Array) -> TrainState:
        key_env, key_run = jax.random.split(key)
        key_policy, key_value = jax.random.split(shared)
        params = ppo_losses.PPONetworkParams(
            policy=self.networks.policy_network.init(key_policy),
            value=self.networks.value_network.init(key_value),
        )
        obs = specs.Array((self.env.observation_size,), jnp.dtype("float32"))
        env_state = self.env.reset(jax.random.split(key_env, self.local_worlds))
        return TrainState(
            params=params,
            optimizer_state=self.optimizer.init(params),
            normalizer=running_statistics.init_state(obs),
            env_state=env_state,
            key=key_run,
            iteration=jnp.zeros((), jnp.int32),
        )

    def _iterate(self, state: TrainState) -> tuple[TrainState, dict[str, jax.Array]]:
        """One iteration (see the module docstring) on one device's worlds; the metrics are summed over the
        devices (:func:`episode_sums`)."""
        cfg = self.config
        key, key_unroll, key_sgd = jax.random.split(state.key, 3)
        policy = self.make_policy((state.normalizer, state.params.policy))
        fields = ("truncation", "episode_metrics", "episode_done")
        env_state, data = acting.generate_unroll(
            self.env, state.env_state, policy, key_unroll, cfg.unroll_length, extra_fields=fields
        )
        data = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), data)  # (worlds, time, ...)
        metrics = episode_sums(data.extras["state_extras"], data.reward)
        if self.mirror is not None:
            data = with_reflection(data, self.mirror)
        normalizer = running_statistics.update(state.normalizer, data.observation, pmap_axis_name=AXIS)

        def epoch(carry, _):
            optimizer_state, params, k = carry
            k, k_perm, k_grad = jax.random.split(k, 3)
            minibatches = jax.tree.map(  # whole trajectories (GAE runs along time), worlds shuffled
                lambda x: jnp.reshape(jax.random.permutation(k_perm, x), (cfg.minibatches, -1, *x.shape[1:])), data
            )
            step = functools.partial(self._minibatch, normalizer=normalizer)
            (optimizer_state, params, _), losses = jax.lax.scan(step, (optimizer_state, params, k_grad), minibatches)
            return (optimizer_state, params, k), losses

        (optimizer_state, params, _), losses = jax.lax.scan(
            epoch, (state.optimizer_state, state.params, key_sgd), None, length=cfg.epochs
        )
        new = TrainState(params, optimizer_state, normalizer, env_state, key, state.iteration + 1)
        metrics.update({f"loss/{k}": jax.lax.pmean(jnp.mean(v), AXIS) for k, v in losses.items()})
        return new, metrics

    def _minibatch(self, carry, batch, normalizer):
        optimizer_state, params, key = carry
        key, key_loss = jax.random.split(key)
        (_, metrics), params, optimizer_state = self._update(
            params, normalizer, batch, key_loss, optimizer_state=optimizer_state
        )
        return (optimizer_state, params, key), metrics

    def policy_parameters(self, state: TrainState) -> tuple[Any, Any]:
        """``(normalizer, policy parameters)`` of device 0, on the host."""
        first = jax.tree.map(lambda x: x[0], (state.normalizer, state.params.policy))
        return jax.device_get(first)


def with_reflection(data, mirror):
    """The (worlds, time, ...) transitions followed by their reflections (:class:`jaxmor.envs.mirror.Mirror`):
    observations, actions and the pre-squashing actions reflected (``tanh`` commutes with a signed permutation),
    everything else (rewards, discounts, behaviour log-probabilities, episode data) kept."""
    policy_extras = dict(data.extras["policy_extras"])
    policy_extras["raw_action"] = mirror.action(policy_extras["raw_action"])
    reflected = data._replace(
        observation=mirror.observation(data.observation),
        next_observation=mirror.observation(data.next_observation),
        action=mirror.action(data.action),
        extras={**data.extras, "policy_extras": policy_extras},
    )
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), data, reflected)


def episode_sums(extras: dict, reward: jax.Array) -> dict[str, jax.Array]:
    """The iteration's episode statistics, summed over the devices: ``episodes`` ended, ``falls`` (ended by
    failure, not by the time limit), and per ended episode the sums of its return (``return``), its length
    (``length``) and every metric of the environment (``metric/<name>``, summed over its steps); ``steps`` and
    ``reward`` (the sum of the step rewards) over all transitions."""
    done = extras["episode_done"]
    falls = done * (1.0 - extras["truncation"])
    episode = extras["episode_metrics"]
    sums = {
        "episodes": jnp.sum(done),
        "falls": jnp.sum(falls),
        "return": jnp.sum(episode["sum_reward"] * done),
        "length": jnp.sum(episode["length"] * done),
        "steps": jnp.asarray(reward.size, jnp.float32),
        "reward": jnp.sum(reward),
    }
    sums.update({f"metric/{k}": jnp.sum(v * done) for k, v in episode.items() if k not in ("sum_reward", "length")})
    return {k: jax.lax.psum(v, AXIS) for k, v in sums.items()}
