"""Training environments: a small functional API and a motor-aware locomotion task.

``env.reset(key) -> EnvState`` and ``env.step(env_state, action) -> EnvState`` are pure functions of one
world; ``jax.jit(jax.vmap(env.step))`` runs thousands. :class:`Locomotion` is the velocity-tracking task
for the shipped quadruped (or another floating-base robot), with the motor region enforced or the
Box-MOR of the URDF limits for comparison. :mod:`jaxmor.envs.brax` adapts an environment to Brax's
``brax.envs.Env`` (optional extra ``jaxmor[rl]``; not imported here).

Example::

    env = jaxmor.envs.Locomotion()
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 4096))
    states = jax.jit(jax.vmap(env.step))(states, actions)  # actions: (4096, env.action_size) in [-1, 1]
"""

from jaxmor.envs.core import Env, EnvState
from jaxmor.envs.locomotion import (
    DEFAULT_COMMAND_RANGES,
    DEFAULT_REWARD_WEIGHTS,
    Locomotion,
    LocomotionData,
    box_torque_bounds,
    default_gains,
    default_randomization,
    top_speed,
)
from jaxmor.envs.stability import check_pd_step, pd_step_limit
from jaxmor.envs.terms import DEFAULT_OBSERVATION_NOISE

__all__ = [
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
