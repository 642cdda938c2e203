"""The seed paper's experiment (Kim et al., "Reinforcement Learning for High-Speed Quadrupedal Locomotion With Motor
Operating Region Constraints", IEEE RA-M 2025): a policy trained with its motors' region enforced (EM-MOR) and one
trained in the URDF's torque-speed box (Box-MOR), each run under both motor models over commanded forward speeds up to
what the motors allow.

:func:`speed_sweep` runs one policy's deterministic action under one motor model, every world under one fixed forward
command for :data:`SECONDS`, without pushes, on fresh randomized worlds (a randomization pool the training never drew).
Per commanded speed it reports, over the worlds:

* ``speed``: the forward speed over the last :data:`HOLD` seconds [m/s] (the mean over the worlds that did not fall);
* ``held``: the share of worlds that did not fall and whose speed over the last :data:`HOLD` seconds lies within 10% of
  the command (at least 0.1 m/s);
* ``tracking_error``: ``|v_xy - command_xy|`` [m/s], after :data:`SETTLE` seconds, before a fall;
* ``falls``: the share of worlds that fell;
* ``outside_region``: the share of motor-steps whose applied torque lies outside the motor's region (zero under
  EM-MOR, where the step clips to it; under Box-MOR the torques a real motor could not give);
* ``speed_ratio``: the 95th percentile over the steps of the fastest motor's speed over its no-load speed.

``top_held`` is the highest commanded speed that at least 90% of the worlds held. :func:`compare` sweeps several
policies under both motor models; :func:`table` writes the result as a Markdown table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.train.evaluate import alive_steps, masked_mean
from jaxmor.train.policy import Policy
from jaxmor.train.run import RunConfig, make_env

__all__ = ["HELD_SHARE", "HOLD", "SECONDS", "SETTLE", "compare", "speed_sweep", "table"]

#: The share of worlds that must hold a commanded speed for it to count as held.
HELD_SHARE = 0.9
#: The episode length [s], the final window a speed must be held over [s], and the start left out of the tracking
#: error [s].
SECONDS, HOLD, SETTLE = 12.0, 5.0, 2.0


def _records(env, policy: Policy, states, steps: int) -> dict:
    step = jax.vmap(env.step)

    def one(states, _):
        states = step(states, policy(states.obs))
        m = states.metrics
        record = {name: m[name] for name in ("forward_speed", "tracking_error", "outside_region", "speed_ratio")}
        record["fell"] = states.done & ~states.info["truncated"]
        return states, record

    _, records = jax.lax.scan(one, states, None, length=steps)
    return records


def speed_sweep(
    policy: Policy,
    config: RunConfig,
    speeds: Sequence[float],
    motor_model: str | None = None,
    worlds_per_speed: int = 16,
    seed: int = 1,
) -> dict:
    """Run the policy under fixed forward commands for :data:`SECONDS` (module docstring).

    Args:
        policy: the trained policy, with ``config`` the settings of its run.
        speeds: the commanded forward speeds [m/s].
        motor_model: ``"em"`` or ``"box"`` (default: the run's).
        worlds_per_speed: worlds per commanded speed.
        seed: the worlds' seed (their randomization pool is ``config.seed + 1000 seed``).

    Returns:
        A JSON-able dict: ``"motor_model"``, ``"rows"`` (one per speed, the figures of the module docstring) and
        ``"top_held"`` [m/s] (0 when no speed is held).
    """
    speeds = [float(s) for s in speeds]
    env = make_env(
        config,
        motor_model=motor_model or config.motor_model,
        push_interval=None,
        auto_reset=False,
        command_interval=None,
        command_levels=None,
        episode_steps=int(round(SECONDS / (config.timestep * config.substeps))) + 1,
        seed=config.seed + 1000 * seed,
    )
    steps = env.episode_steps - 1
    count = worlds_per_speed * len(speeds)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(seed), count))
    commands = np.zeros((count, 3), np.float32)
    commands[:, 0] = np.repeat(speeds, worlds_per_speed)
    states = states.replace(data=states.data.replace(command=jnp.asarray(commands, states.obs.dtype)))
    r = {k: np.asarray(v) for k, v in jax.jit(_records, static_argnums=(0, 3))(env, policy, states, steps).items()}
    return _rows(r, speeds, worlds_per_speed, env.control_period, HOLD, SETTLE, motor_model or config.motor_model)


def _rows(r: dict, speeds, per: int, control: float, hold: float, settle: float, motor_model: str) -> dict:
    """The sweep's figures from the per-step records ``(steps, worlds)``."""
    steps = r["fell"].shape[0]
    fell_by, alive = alive_steps(r["fell"])
    time = (np.arange(steps) + 1)[:, None] * control
    window = time > steps * control - hold
    mean = masked_mean
    fell = fell_by[-1]
    speed = mean(r["forward_speed"], window & alive)
    rows = []
    for i, command in enumerate(speeds):
        pick = slice(i * per, (i + 1) * per)
        standing = ~fell[pick]
        held = standing & (np.abs(speed[pick] - command) <= max(0.1 * command, 0.1))
        mask = alive[:, pick]
        rows.append(
            {
                "command": command,
                "speed": float(speed[pick][standing].mean()) if standing.any() else None,
                "held": float(held.mean()),
                "tracking_error": float(mean(r["tracking_error"][:, pick], mask & (time > settle)).mean()),
                "falls": float(fell[pick].mean()),
                "outside_region": float(r["outside_region"][:, pick][mask].mean()),
                "speed_ratio": float(np.percentile(r["speed_ratio"][:, pick][mask], 95)),
            }
        )
    top = max([row["command"] for row in rows if row["held"] >= HELD_SHARE], default=0.0)
    return {"motor_model": motor_model, "rows": rows, "top_held": top}


def compare(runs: Mapping[str, str | os.PathLike], speeds: Sequence[float], worlds_per_speed: int = 16) -> dict:
    """Every policy of ``runs`` (a name -> its run or policy folder) swept under both motor models.

    Returns:
        A JSON-able dict: ``"speeds"`` [m/s] and ``"results"``: name -> ``{"em": sweep, "box": sweep}``
        (:func:`speed_sweep`).
    """
    from jaxmor.train.play import load_run_policy

    results = {}
    for name, folder in runs.items():
        policy, config = load_run_policy(folder)
        results[name] = {m: speed_sweep(policy, config, speeds, m, worlds_per_speed) for m in ("em", "box")}
    return {"speeds": [float(s) for s in speeds], "results": results}


def table(comparison: dict) -> str:
    """The comparison as a Markdown table: a row per policy, motor model and commanded speed."""
    lines = [
        "| policy | run under | command [m/s] | speed [m/s] | held | tracking error [m/s] | falls | outside region |"
        " motor speed / no-load (p95) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, sweeps in comparison["results"].items():
        for model, sweep in sweeps.items():
            for row in sweep["rows"]:
                speed = "-" if row["speed"] is None else f"{row['speed']:.2f}"
                lines.append(
                    f"| {name} | {model} | {row['command']:.2f} | {speed} | {row['held']:.0%} | "
                    f"{row['tracking_error']:.2f} | {row['falls']:.0%} | {row['outside_region']:.1%} | "
                    f"{row['speed_ratio']:.2f} |"
                )
            lines.append(f"| {name} | {model} | top held | {sweep['top_held']:.2f} | | | | | |")
    return "\n".join(lines)
