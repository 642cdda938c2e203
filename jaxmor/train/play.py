"""``jaxmor play``: a trained policy on its robot, evaluated, and shown as a viewer page or a video.

:func:`play` loads a policy folder (:func:`jaxmor.train.load_policy`; a run folder's ``policy/``), rebuilds its
environment from the settings saved with it (:func:`jaxmor.train.run.make_env`), prints the evaluation at its
physics step and at half of it (:func:`jaxmor.train.evaluate.evaluate_both`) and, with ``out``, writes a few worlds
walking under fixed commands as a viewer page (``.html``) or a video (``.gif``, ``.mp4``; :mod:`jaxmor.viewer`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.envs.locomotion import as_command_ranges
from jaxmor.errors import ArgumentError
from jaxmor.train.evaluate import evaluate_both, format_report
from jaxmor.train.policy import Policy, load_policy
from jaxmor.train.ppo import PPOConfig
from jaxmor.train.run import RunConfig, make_env

__all__ = ["load_run_policy", "play", "trajectory"]

#: The forward commands of the worlds a page or video shows [m/s].
SHOWN_COMMANDS = (0.0, 0.5, 1.0)


def load_run_policy(path: str | os.PathLike) -> tuple[Policy, RunConfig]:
    """The policy of a policy folder or of a run folder (its ``policy/``), and its run's settings.

    Raises:
        ModelError: a damaged policy folder.
        ArgumentError: a policy whose config does not hold a jaxmor run's settings.
    """
    folder = Path(path)
    if (folder / "policy" / "policy.json").exists():
        folder = folder / "policy"
    policy, config = load_policy(folder)
    run = config.get("run") if isinstance(config, dict) else None
    if not isinstance(run, dict):
        raise ArgumentError(f"{folder}: the policy's config holds no run settings (was it saved by jaxmor train?)")
    try:
        ppo = PPOConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in run.pop("ppo").items()})
        ranges = tuple(tuple(r) for r in run.pop("command_ranges"))
        weights = tuple((str(name), float(w)) for name, w in run.pop("reward_weights", ()))
        return policy, RunConfig(**run, command_ranges=ranges, reward_weights=weights, ppo=ppo)
    except (KeyError, TypeError) as exc:
        raise ArgumentError(f"{folder}: the policy's run settings are not a jaxmor run's: {exc}") from None


def trajectory(policy: Policy, config: RunConfig, seconds: float = 10.0, commands=SHOWN_COMMANDS):
    """A few worlds under fixed forward ``commands`` [m/s] for ``seconds``: ``(model, sim states (T, W, ...))``,
    one frame per control step."""
    env = make_env(config, push_interval=None, auto_reset=False, command_interval=None, randomization=None)
    steps = int(round(seconds / env.control_period))
    states = jax.vmap(env.reset)(jax.random.split(jax.random.PRNGKey(0), len(commands)))
    fixed = jnp.asarray([[c, 0.0, 0.0] for c in commands], states.obs.dtype)
    states = states.replace(data=states.data.replace(command=fixed))

    def one(states, _):
        states = jax.vmap(env.step)(states, policy(states.obs))
        return states, states.sim

    _, sims = jax.jit(lambda s: jax.lax.scan(one, s, None, length=steps))(states)
    return env.model, sims


def play(
    path: str | os.PathLike,
    *,
    out: str | None = None,
    worlds: int = 64,
    seconds: float = 20.0,
    resampled: Sequence[tuple[float, float]] | None = None,
) -> dict:
    """Evaluate a trained policy and print it; with ``out``, also write a page or a video of it walking.

    Args:
        path: a policy folder or a run folder.
        out: a ``.html``, ``.gif`` or ``.mp4`` file to write, or ``None``.
        worlds: worlds of the evaluation.
        seconds: length of the evaluation's episodes [s].
        resampled: ``None`` for the fixed forward commands 0, 0.5 and 1 m/s; else the ranges (forward, lateral
            [m/s], yaw [rad/s]) of commands drawn at the start and again every 5-10 s, as an omnidirectional policy
            is judged.

    Returns:
        The evaluation (:func:`jaxmor.train.evaluate.evaluate_both`).

    Raises:
        ArgumentError: ``out`` with another suffix, ``resampled`` not three finite ``(low, high)`` pairs, or a
            policy folder that is not a jaxmor run's.
    """
    suffix = None if out is None else Path(out).suffix.lower()
    if suffix not in (None, ".html", ".gif", ".mp4"):
        raise ArgumentError(f"out must name a .html, .gif or .mp4 file, got {out!r}")
    if resampled is not None:  # checked before the policy is loaded
        resampled = tuple(map(tuple, as_command_ranges(resampled, "resampled").tolist()))
    policy, config = load_run_policy(path)
    commands = {} if resampled is None else {"commands": None, "command_ranges": resampled}
    reports = evaluate_both(policy, config, worlds=worlds, seconds=seconds, **commands)
    print(format_report(reports))
    if out is not None:
        from jaxmor import viewer

        model, sims = trajectory(policy, config, seconds=min(seconds, 10.0))
        if suffix == ".html":
            viewer.write_html(model, sims, out, world_axis=1)
        else:
            viewer.write_video(model, sims, out, world_axis=1)
        print(f"wrote {out} ({np.asarray(sims.q).shape[0]} frames of {len(SHOWN_COMMANDS)} worlds)")
    return json.loads(json.dumps(reports))
