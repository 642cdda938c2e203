"""A trained policy's evaluation: velocity tracking, falls and its gait, at the step it was trained with and at a
step half as long.

:func:`evaluate` runs the deterministic policy (:class:`jaxmor.train.Policy`) on its run's environment
(:func:`jaxmor.train.run.make_env`) without pushes, from fresh episodes, for ``seconds``, either under fixed
commands (``commands``: world ``i`` keeps ``commands[i % len(commands)]``) or under commands resampled as in
training over ``command_ranges``. It measures, per world and over the steps before a fall:

* **tracking**: the mean of ``|v_xy - command_xy|`` [m/s] and of ``|w_z - command_yaw|`` [rad/s], leaving out the
  ``settle`` seconds after each command change (the robot accelerating); the mean forward speed [m/s];
* **falls**: the share of worlds whose episode ended by a fall (the base below its fall height or tilted over);
* **gait**: each foot's share of steps off the ground while the command asks the robot to move (its norm at least
  :data:`jaxmor.envs.terms.STANDING`; a standing command asks every foot to stay down), the means of the worlds that
  had such steps, per foot; and the mean horizontal speed of the stance feet [m/s] (:mod:`jaxmor.envs.feet`).

A policy **walks** (``verdict["walks"]``) when every foot is off the ground at least ``MIN_SWING`` (20%) of the
time, the stance feet slip slower than ``MAX_SLIP`` (0.1 m/s), and it tracks within ``tolerance`` [m/s] with falls
in at most ``max_falls`` of the worlds; :func:`evaluate_both` asks it at both steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.envs.terms import STANDING
from jaxmor.errors import ArgumentError
from jaxmor.train.policy import Policy
from jaxmor.train.run import RunConfig, make_env

__all__ = ["MAX_SLIP", "MIN_SWING", "evaluate", "evaluate_both", "format_report"]

#: The least share of steps each foot must spend off the ground for a gait [-].
MIN_SWING = 0.2
#: The largest mean stance-foot slip speed of a gait [m/s].
MAX_SLIP = 0.1


def _rollout(env, policy: Policy, states, steps: int):
    """The per-step records of ``steps`` control steps of every world under the deterministic policy."""
    step = jax.vmap(env.step)

    def one(states, _):
        states = step(states, policy(states.obs))
        fell = states.done & ~states.info["truncated"]
        record = {
            "command": states.data.command,
            "tracking_error": states.metrics["tracking_error"],
            "yaw_rate_error": states.metrics["yaw_rate_error"],
            "forward_speed": states.metrics["forward_speed"],
            "slip_speed": states.metrics["slip_speed"],
            "touching": states.data.feet.touching,
            "fell": fell,
        }
        return states, record

    _, records = jax.lax.scan(one, states, None, length=steps)
    return records


def alive_steps(fell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fell_by, alive)`` from per-step fall flags ``(steps, worlds)``: whether a world has fallen by each step, and
    whether it was still up at each step's start (the falling step counts as alive)."""
    fell_by = np.cumsum(fell, axis=0) > 0
    return fell_by, ~np.concatenate([np.zeros_like(fell_by[:1]), fell_by[:-1]], axis=0)


def masked_mean(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per-world means of ``x`` ``(steps, worlds, ...)`` over the steps where ``mask`` holds (0 where it never does)."""
    return np.sum(x * mask, axis=0) / np.maximum(np.sum(mask, axis=0), 1)


def _per_world(records: dict, control_period: float, settle: float) -> dict[str, np.ndarray]:
    """Per-world means over the steps before a fall (tracking: also after the settle time)."""
    r = {k: np.asarray(v) for k, v in records.items()}
    fell_by, alive = alive_steps(r["fell"])
    changed = np.any(np.diff(r["command"], axis=0, prepend=r["command"][:1] * np.nan) != 0, axis=-1)
    since = np.zeros(changed.shape)
    for t in range(changed.shape[0]):
        since[t] = np.where(changed[t], 0.0, since[t - 1] + control_period if t else 0.0)
    tracked = alive & (since >= settle)
    mean = masked_mean

    stance = r["touching"].sum(-1) > 0
    moving = alive & (np.linalg.norm(r["command"], axis=-1) >= STANDING)
    return {
        "fell": fell_by[-1],
        "tracking_error": mean(r["tracking_error"], tracked),
        "yaw_rate_error": mean(r["yaw_rate_error"], tracked),
        "forward_speed": mean(r["forward_speed"], tracked),
        "command_forward": r["command"][-1, :, 0],
        "swing": mean(~r["touching"], alive[..., None]),
        "moving_swing": mean(~r["touching"], moving[..., None]),
        "moved": np.any(moving, axis=0),
        "slip_speed": mean(r["slip_speed"], alive & stance),
    }


def evaluate(
    policy: Policy,
    config: RunConfig,
    *,
    commands: Sequence[tuple[float, float, float]] | None = ((0.0, 0.0, 0.0), (0.5, 0.0, 0.0), (1.0, 0.0, 0.0)),
    command_ranges: Sequence[tuple[float, float]] | None = None,
    worlds: int = 64,
    seconds: float = 20.0,
    timestep_factor: float = 1.0,
    settle: float = 2.0,
    seed: int = 1,
) -> dict:
    """Run and measure the policy (module docstring).

    Args:
        policy: the trained policy.
        config: its run's settings.
        commands: fixed commands (forward, lateral [m/s], yaw [rad/s]) shared out over the worlds; ``None``:
            commands drawn and resampled every 5-10 s from ``command_ranges`` (default: the run's).
        command_ranges: the resampled commands' ranges, with ``commands=None``.
        worlds: worlds to run.
        seconds: episode length [s].
        timestep_factor: the physics step as a share of the run's (``0.5``: half as long, twice the substeps: the
            same control rate).
        settle: time after a command change left out of the tracking figures [s].
        seed: the worlds' seed.

    Returns:
        A JSON-able dict: ``"timestep"`` [s], ``"substeps"``, ``"worlds"``, ``"falls"`` (share), ``"tracking_error"``
        [m/s], ``"yaw_rate_error"`` [rad/s], ``"swing"`` (per foot, the mean share off the ground under moving
        commands), ``"slip_speed"`` [m/s], ``"gait"`` (bool: every foot's swing >= MIN_SWING and slip < MAX_SLIP), and
        ``"rows"``: per fixed command, its worlds' figures (``command``, ``speed`` reached, ``tracking_error``,
        ``falls``, ``swing`` (smallest foot's share off the ground, whatever the command), ``slip_speed``).

    Raises:
        ArgumentError: fewer ``worlds`` than fixed ``commands`` (a command without a world has no figures).
    """
    if isinstance(worlds, bool) or not isinstance(worlds, (int, np.integer)) or worlds < 1:
        raise ArgumentError(f"worlds must be an int >= 1, got {worlds!r}")
    if commands is not None and worlds < len(commands):
        raise ArgumentError(f"worlds must be at least the number of fixed commands ({len(commands)}), got {worlds}")
    substeps = max(1, round(config.substeps / timestep_factor))
    timestep = config.timestep * config.substeps / substeps
    control = timestep * substeps
    steps = int(round(seconds / control))
    ranges = command_ranges or config.command_ranges
    env = make_env(
        config,
        timestep=timestep,
        substeps=substeps,
        push_interval=None,
        auto_reset=False,
        episode_steps=steps + 1,
        command_ranges=ranges,
        command_levels=None,  # the whole range
        command_interval=None if commands is not None else (5.0, 10.0),
        seed=config.seed + 1000 * seed,
    )
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(seed), worlds))
    if commands is not None:
        fixed = jnp.asarray(np.resize(np.asarray(commands), (worlds, 3)), states.data.command.dtype)
        states = states.replace(data=states.data.replace(command=fixed))  # seen from the first step's observation
    records = jax.jit(_rollout, static_argnums=(0, 3))(env, policy, states, steps)
    per = _per_world(records, control, settle)
    return _summary(per, commands, timestep, substeps, worlds)


def _summary(per: dict, commands, timestep: float, substeps: int, worlds: int) -> dict:
    moved = per["moved"]
    swing = per["moving_swing"][moved].mean(axis=0) if moved.any() else np.zeros(per["swing"].shape[1])
    report = {
        "timestep": timestep,
        "substeps": substeps,
        "worlds": worlds,
        "falls": float(per["fell"].mean()),
        "tracking_error": float(per["tracking_error"].mean()),
        "yaw_rate_error": float(per["yaw_rate_error"].mean()),
        "swing": [float(x) for x in swing],
        "slip_speed": float(per["slip_speed"].mean()),
    }
    report["gait"] = bool(min(swing) >= MIN_SWING and report["slip_speed"] < MAX_SLIP)
    rows = []
    for c in commands or ():
        pick = np.all(np.isclose(np.resize(np.asarray(commands), (worlds, 3)), c), axis=-1)
        rows.append(
            {
                "command": [float(x) for x in c],
                "speed": float(per["forward_speed"][pick].mean()),
                "tracking_error": float(per["tracking_error"][pick].mean()),
                "falls": float(per["fell"][pick].mean()),
                "swing": float(per["swing"][pick].mean(axis=0).min()),
                "slip_speed": float(per["slip_speed"][pick].mean()),
            }
        )
    report["rows"] = rows
    return report


def evaluate_both(policy: Policy, config: RunConfig, *, tolerance: float = 0.1, max_falls: float = 0.05, **kw) -> dict:
    """:func:`evaluate` at the run's step and at half of it; ``"walks"``: a gait, tracking within ``tolerance``
    [m/s] and falls at most ``max_falls`` at both.

    Returns:
        ``{"trained": report, "half_step": report, "walks": bool}``.
    """
    reports = {
        "trained": evaluate(policy, config, **kw),
        "half_step": evaluate(policy, config, timestep_factor=0.5, **kw),
    }
    reports["walks"] = all(
        r["gait"] and r["tracking_error"] <= tolerance and r["falls"] <= max_falls
        for r in (reports["trained"], reports["half_step"])
    )
    return reports


def format_report(reports: dict) -> str:
    """The evaluation as a table of text (one block per time step)."""
    out = []
    for name in ("trained", "half_step"):
        r = reports[name]
        out.append(
            f"{name}: h = {r['timestep'] * 1e3:g} ms x {r['substeps']}, {r['worlds']} worlds: falls {r['falls']:.1%}, "
            f"tracking {r['tracking_error']:.3f} m/s, yaw {r['yaw_rate_error']:.3f} rad/s, swing per foot "
            f"{', '.join(f'{s:.2f}' for s in r['swing'])}, stance slip {r['slip_speed']:.3f} m/s, "
            f"gait {'yes' if r['gait'] else 'no'}"
        )
        for row in r["rows"]:
            out.append(
                f"  command {row['command'][0]:+.2f} m/s: speed {row['speed']:+.3f}, "
                f"error {row['tracking_error']:.3f}, "
                f"falls {row['falls']:.1%}, swing >= {row['swing']:.2f}, slip {row['slip_speed']:.3f}"
            )
    out.append(f"walks: {'yes' if reports['walks'] else 'no'}")
    return "\n".join(out)
