"""One training run in a folder: ``jaxmor train`` and :func:`train`.

A run folder holds:

* ``config.json``: the run's settings (:class:`RunConfig`), written at the start; a run resumed in the same folder
  must have the same settings (its budget, ``steps`` and ``minutes``, may grow);
* ``metrics.jsonl``: one JSON object per logged iteration (:func:`log_line` lists the keys and units);
* ``checkpoint.npz`` and ``checkpoint.json``: the whole training state (:class:`jaxmor.train.ppo.TrainState`:
  parameters, optimizer, normalizer, every world's state and the random keys) as numbered arrays, and where the
  run stood (iteration, environment steps, seconds); written every ``checkpoint_seconds`` and at the end, each
  time to a new file moved over the old one, so an interrupted run resumes from the last complete checkpoint;
* ``policy/``: the final policy (:func:`jaxmor.train.save_policy`), with the environment's settings as its config;
* ``learning_curve.png``: the return, the tracking error and the falls against environment steps (needs
  matplotlib: the ``plot`` extra).

Resuming restores the training state exactly: the resumed run's next iterations are those the uninterrupted run
would have made (tests/test_train.py checks it bit for bit).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxmor.checks import as_positive
from jaxmor.errors import ArgumentError, ModelError
from jaxmor.train.ppo import PPO, PPOConfig, TrainState

__all__ = ["FORWARD_COMMANDS", "OMNI_COMMANDS", "RunConfig", "command_settings", "make_env", "train"]

#: Forward commands only: 0-1 m/s ahead [m/s, m/s, rad/s].
FORWARD_COMMANDS = ((0.0, 1.0), (0.0, 0.0), (0.0, 0.0))
#: Omnidirectional commands: -0.5-1.5 m/s forward, +-0.5 m/s sideways, +-1 rad/s of yaw.
OMNI_COMMANDS = ((-0.5, 1.5), (-0.5, 0.5), (-1.0, 1.0))


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A run's settings: the environment's and PPO's (``ppo``). ``steps`` and ``minutes`` are its budget.

    Attributes:
        robot: ``"quadruped"`` (the shipped one) or ``"go2"`` (the Menagerie Go2 with its motors).
        motor_model: ``"em"`` (the motor region enforced) or ``"box"`` (Box-MOR).
        terrain: ``"flat"`` or ``"rough"`` (:func:`jaxmor.terrain.generate`'s rough cells, with a curriculum).
        timestep: physics step [s].
        substeps: physics steps per control step.
        randomization: draw the episodes' models from :func:`jaxmor.envs.default_randomization`.
        command_ranges: the velocity commands' ranges (forward, lateral [m/s], yaw [rad/s]).
        command_levels: levels of the command curriculum (:class:`jaxmor.envs.Locomotion`), or ``None``.
        gait_speedup: how much faster the gait clock turns per m/s of command [Hz s/m].
        gain_scale: the default PD gains (:func:`jaxmor.envs.default_gains`) scaled: ``kp`` by it, ``kd`` by its
            square root (the damping ratio kept); 1 keeps them.
        reward_weights: ``(term, weight)`` pairs replacing some of
            :data:`jaxmor.envs.terms.DEFAULT_REWARD_WEIGHTS` (per second; ``termination`` per episode).
        seed: the run's seed (parameters, worlds, randomization pool).
        steps: environment steps (control steps summed over the worlds) to train for.
        minutes: wall-clock budget [min]; the run stops at whichever of it and ``steps`` comes first.
        ppo: the PPO settings.
    """

    robot: str = "quadruped"
    motor_model: str = "em"
    terrain: str = "flat"
    timestep: float = 0.02 / 3
    substeps: int = 3
    randomization: bool = True
    command_ranges: tuple[tuple[float, float], ...] = FORWARD_COMMANDS
    command_levels: int | None = None
    gait_speedup: float = 0.0
    gain_scale: float = 1.0
    reward_weights: tuple[tuple[str, float], ...] = ()
    seed: int = 0
    steps: int = 20_000_000
    minutes: float = 30.0
    ppo: PPOConfig = PPOConfig()

    def identity(self) -> dict[str, Any]:
        """The settings a resumed run must share (all but the budget), as JSON values."""
        settings = json.loads(json.dumps(dataclasses.asdict(self)))
        settings.pop("steps"), settings.pop("minutes")
        return settings


#: Levels of the ``fast`` commands' curriculum, and their gait clock's speed-up [Hz s/m].
FAST_LEVELS, FAST_GAIT_SPEEDUP = 8, 0.5


def command_settings(name: str, robot: str = "quadruped", forward_max: float | None = None) -> dict[str, Any]:
    """The :class:`RunConfig` fields of a named command set: ``"forward"`` (:data:`FORWARD_COMMANDS`, or 0 to
    ``forward_max`` [m/s] when given), ``"omni"``
    (:data:`OMNI_COMMANDS`) or ``"fast"``: forward commands from 0 to what the robot's motors allow
    (:func:`jaxmor.envs.top_speed`), reached through a curriculum of :data:`FAST_LEVELS` levels, the gait clock
    turning :data:`FAST_GAIT_SPEEDUP` Hz faster per m/s (the seed paper's high-speed experiment).

    Raises:
        ArgumentError: an unknown name or robot, or ``forward_max`` with another set than ``"forward"`` or not
            positive.
    """
    if forward_max is not None:
        if name != "forward":
            raise ArgumentError(f"forward_max applies to the 'forward' commands, not {name!r}")
        return {"command_ranges": ((0.0, as_positive(forward_max, "forward_max [m/s]")), (0.0, 0.0), (0.0, 0.0))}
    if name == "forward":
        return {"command_ranges": FORWARD_COMMANDS}
    if name == "omni":
        return {"command_ranges": OMNI_COMMANDS}
    if name != "fast":
        raise ArgumentError(f"commands must be 'forward', 'omni' or 'fast', got {name!r}")
    from jaxmor import envs

    model, standing, feet = _robot(robot)
    top = round(envs.top_speed(model, standing, feet), 2)
    return {
        "command_ranges": ((0.0, top), (0.0, 0.0), (0.0, 0.0)),
        "command_levels": FAST_LEVELS,
        "gait_speedup": FAST_GAIT_SPEEDUP,
    }


def _robot(robot: str):
    """``(model with ground, standing_q, feet)`` of a named robot.

    Raises:
        ArgumentError: an unknown robot.
    """
    from jaxmor import robots
    from jaxmor.modeling.builder import load_urdf
    from jaxmor.modeling.scene import add_ground

    if robot == "quadruped":
        model = add_ground(load_urdf(robots.path("quadruped")))
        return model, robots.quadruped_standing_q(model), None
    if robot == "go2":
        model = robots.go2()
        return model, robots.go2_standing_q(model), ("FL", "FR", "RL", "RR")
    raise ArgumentError(f"robot must be 'quadruped' or 'go2', got {robot!r}")


def make_env(config: RunConfig, **overrides):
    """The :class:`jaxmor.envs.Locomotion` of a run (``overrides`` replace its keyword arguments, e.g. for an
    evaluation at another time step).

    Raises:
        ArgumentError: an unknown robot, motor model or terrain.
    """
    from jaxmor import envs
    from jaxmor.tools import terrain as terrains

    model, standing, feet = _robot(config.robot)
    options: dict[str, Any] = dict(
        motor_model=config.motor_model,
        timestep=config.timestep,
        substeps=config.substeps,
        command_ranges=config.command_ranges,
        command_levels=config.command_levels,
        gait_speedup=config.gait_speedup,
        randomization=envs.default_randomization() if config.randomization else None,
        seed=config.seed,
        feet=feet,
        reward_weights=dict(config.reward_weights),
    )
    if config.terrain == "rough":
        options.update(terrain=terrains.generate(levels=6, kinds=("rough",), seed=config.seed), curriculum=True)
    elif config.terrain != "flat":
        raise ArgumentError(f"terrain must be 'flat' or 'rough', got {config.terrain!r}")
    options.update(overrides)
    if as_positive(config.gain_scale, "gain_scale") != 1.0 and "kp" not in options:
        action_scale = options.get("action_scale", envs.locomotion.ACTION_SCALE)
        kp, kd = envs.default_gains(model, standing, action_scale)
        options.update(kp=kp * config.gain_scale, kd=kd * math.sqrt(config.gain_scale))
    return envs.Locomotion(model, standing, **options)


def _leaves(state: TrainState) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(state))]


def save_checkpoint(folder: Path, state: TrainState, where: dict[str, Any]) -> None:
    """The training state and ``where`` the run stood, each written to a new file and moved over the old one."""
    arrays = {f"leaf_{i:05d}": x for i, x in enumerate(_leaves(state))}
    with open(folder / "checkpoint.tmp.npz", "wb") as f:
        np.savez(f, **arrays)
    os.replace(folder / "checkpoint.tmp.npz", folder / "checkpoint.npz")
    (folder / "checkpoint.tmp.json").write_text(json.dumps(where))
    os.replace(folder / "checkpoint.tmp.json", folder / "checkpoint.json")


#: What a checkpoint that does not fit the run's state most likely is.
_OTHER_VERSION = (
    " (a checkpoint written by another jaxmor version, whose State has other fields, does not resume: train into a new "
    "folder)"
)


def load_checkpoint(folder: Path, like: TrainState) -> tuple[TrainState, dict[str, Any]]:
    """The training state of ``folder``'s checkpoint, shaped like ``like`` (a fresh state of the same run).

    Raises:
        ModelError: a checkpoint whose arrays differ in number, shape or dtype from ``like``'s.
    """
    path = folder / "checkpoint.npz"
    where = json.loads((folder / "checkpoint.json").read_text())
    leaves, treedef = jax.tree.flatten(like)
    with np.load(path, allow_pickle=False) as data:
        names = sorted(data.files)
        if names != [f"leaf_{i:05d}" for i in range(len(leaves))]:
            why = f"holds {len(names)} arrays, the run's state has {len(leaves)}"
            raise ModelError(str(path), None, f"{why}{_OTHER_VERSION}")
        arrays = [data[name] for name in names]
    for name, array, leaf in zip(names, arrays, leaves, strict=True):
        if array.shape != leaf.shape or array.dtype != leaf.dtype:
            why = f"{name} is {array.dtype}{array.shape}, the run's state has {leaf.dtype}{leaf.shape}"
            raise ModelError(str(path), None, f"{why}{_OTHER_VERSION}")
    return jax.tree.unflatten(treedef, arrays), where


def _config_of(folder: Path, config: RunConfig) -> None:
    """Write ``config.json``, or check that a resumed run has the same settings."""
    path = folder / "config.json"
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("identity") != config.identity():
            raise ArgumentError(
                f"{folder} holds a run with other settings ({path}); resume it with the same settings or train "
                "into another folder"
            )
    path.write_text(json.dumps({"identity": config.identity(), "budget": [config.steps, config.minutes]}, indent=1))


#: Figures of :func:`log_line` beside the tracking and gait ones: the motors against their region, the curricula.
LEVELS = ("outside_region", "speed_ratio", "command_level", "terrain_level")


def log_line(sums: dict[str, float], iteration: int, env_steps: int, seconds: float, rate: float) -> dict:
    """One line of ``metrics.jsonl``, from an iteration span's summed statistics
    (:func:`jaxmor.train.ppo.episode_sums`): ``iteration``; ``env_steps``; ``seconds`` (wall clock since the run
    began, compiles included) [s]; ``env_steps_per_second`` (over the span, learner included); ``episodes`` ended in
    the span; ``return`` (mean over them); ``episode_length`` (their mean length) [control steps]; ``falls`` (the
    share of them that failed); ``tracking_error`` [m/s], ``yaw_rate_error``
    [rad/s], ``forward_speed`` [m/s], ``swing_fraction``, ``slip_speed`` [m/s], ``saturated_fraction``, ``power`` [W]
    (each the mean over their steps); ``outside_region`` (share of motors outside their region), ``speed_ratio``
    (the fastest motor's speed over its no-load speed), ``command_level`` and ``terrain_level`` (the curricula's
    levels; each the mean over the steps); ``step_reward`` (the mean reward per step over the span); :func:`train` adds
    ``action_std``, the policy's mean action noise (before the tanh) in the span's last iteration: the gap between
    the stochastic policy that trains and the deterministic one that is evaluated closes as it shrinks."""
    episodes = sums["episodes"]
    per_step = max(sums["length"], 1.0)
    line = {
        "iteration": iteration,
        "env_steps": env_steps,
        "seconds": round(seconds, 2),
        "env_steps_per_second": round(rate, 1),
        "episodes": int(episodes),
        "return": sums["return"] / episodes if episodes else math.nan,
        "episode_length": sums["length"] / episodes if episodes else math.nan,
        "falls": sums["falls"] / episodes if episodes else math.nan,
        "step_reward": sums["reward"] / max(sums["steps"], 1.0),
    }
    means = ("tracking_error", "yaw_rate_error", "forward_speed", "swing_fraction", "slip_speed", "saturated_fraction")
    for name in (*means, "power", *LEVELS):
        line[name] = sums.get(f"metric/{name}", math.nan) / per_step if episodes else math.nan
    return {k: (v if not isinstance(v, float) else round(v, 5) if math.isfinite(v) else None) for k, v in line.items()}


HEADER = f"{'iter':>6} {'env steps':>11} {'steps/s':>8} {'return':>8} {'track':>6} {'yaw':>6} {'falls':>6} "
HEADER += f"{'swing':>6} {'slip':>6} {'time':>7}"


def progress_row(line: dict) -> str:
    """A row of the live table ``jaxmor train`` prints (the columns of :data:`HEADER`)."""

    def num(key, width, fmt):
        value = line.get(key, math.nan)
        return (
            f"{value:{width}{fmt}}"
            if isinstance(value, (int, float)) and math.isfinite(value)
            else " " * (width - 1) + "-"
        )

    minutes = f"{int(line['seconds'] // 60):4d}:{int(line['seconds'] % 60):02d}"
    return " ".join(
        [
            f"{line['iteration']:6d}",
            f"{line['env_steps']:11,d}",
            num("env_steps_per_second", 8, ".0f"),
            num("return", 8, ".3f"),
            num("tracking_error", 6, ".3f"),
            num("yaw_rate_error", 6, ".3f"),
            num("falls", 6, ".1%"),
            num("swing_fraction", 6, ".2f"),
            num("slip_speed", 6, ".3f"),
            minutes,
        ]
    )


def _metrics_upto(path: Path, iteration: int) -> None:
    """Keep the metrics lines up to ``iteration`` (a resumed run logs the later ones again)."""
    if not path.exists():
        return
    lines = [ln for ln in path.read_text().splitlines() if ln and json.loads(ln)["iteration"] <= iteration]
    path.write_text("".join(ln + "\n" for ln in lines))


def _accumulate(total: dict[str, float] | None, metrics: dict[str, Any]) -> dict[str, float]:
    values = {k: float(np.asarray(v)[0]) for k, v in metrics.items() if not k.startswith("loss/")}
    return values if total is None else {k: total[k] + values[k] for k in total}


def train(
    folder: str | os.PathLike,
    config: RunConfig = RunConfig(),
    *,
    log_every: int = 10,
    checkpoint_seconds: float = 120.0,
    progress: Callable[[str], None] | None = print,
    watch: Callable[[Any], None] | bool | None = None,
) -> Path:
    """Train a locomotion policy with PPO into ``folder``, resuming the run there if one is (module docstring).

    Args:
        folder: the run folder (created if missing).
        config: the settings.
        log_every: iterations per logged line.
        checkpoint_seconds: wall-clock time between checkpoints [s].
        progress: called with each line of the live table (``None``: silent).
        watch: called after every iteration with the worlds of the first device (a batched
            :class:`jaxmor.State`, leaves (worlds per device, ...)), e.g. a
            :meth:`jaxmor.viewer.LiveViewer.update`; ``True``: a live view of them (:func:`jaxmor.viewer.live`,
            at most 5 drawings a second; its address goes to ``progress``).

    Returns:
        The folder of the final policy (``folder / "policy"``).

    Raises:
        ArgumentError: the folder holds a run with other settings, or a setting out of range.
        ModelError: a damaged checkpoint.
    """
    from jaxmor.train.policy import policy_from_brax, save_policy

    say = progress or (lambda _: None)
    began = time.perf_counter()
    env = make_env(config)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _config_of(folder, config)
    ppo = PPO(env, config.ppo)
    state = ppo.start(config.seed)
    where = {"iteration": 0, "env_steps": 0, "seconds": 0.0}
    if (folder / "checkpoint.npz").exists():
        state, where = load_checkpoint(folder, state)
        say(f"resuming {folder} at iteration {where['iteration']} ({where['env_steps']:,} environment steps)")
    _metrics_upto(folder / "metrics.jsonl", where["iteration"])
    say(f"{config.robot}, {config.motor_model.upper()}-MOR, {config.ppo.worlds} worlds on {len(ppo.devices)} devices")
    say(HEADER)
    view = None
    if watch is True:
        from jaxmor.viewer.live_view import live

        view = live(env.model, max_rate=5.0)
        say(f"live view at {view.url}")
        watch = view.update
    try:
        state = _loop(folder, ppo, state, where, config, began, (log_every, checkpoint_seconds), say, watch or None)
    finally:
        if view is not None:
            view.close()
    normalizer, params = ppo.policy_parameters(state)
    policy = policy_from_brax(normalizer, params, action_size=env.action_size)
    out = save_policy(policy, folder / "policy", {"run": config.identity(), "trained": where})
    learning_curve(folder)
    return out


def _sims(state: TrainState):
    """The first device's worlds' simulation States (leaves (worlds per device, ...))."""
    return jax.tree.map(lambda x: x[0], state.env_state.pipeline_state.sim)


def _loop(folder, ppo, state, where, config, began, every, say, watch=None):
    """Iterate until the budget is spent, logging and checkpointing; returns the last state (``where`` updated)."""
    log_every, checkpoint_seconds = every
    per_iteration = config.ppo.worlds * config.ppo.unroll_length
    offset = where["seconds"]
    last_checkpoint = time.perf_counter()
    sums, span_start, span_steps = None, time.perf_counter(), 0
    while where["env_steps"] < config.steps and where["seconds"] < 60.0 * config.minutes:
        state, metrics = ppo.iterate(state)
        metrics = jax.device_get(metrics)
        if watch is not None:
            watch(_sims(state))
        sums = _accumulate(sums, metrics)
        where["iteration"] += 1
        where["env_steps"] += per_iteration
        span_steps += per_iteration
        where["seconds"] = offset + time.perf_counter() - began
        if where["iteration"] % log_every == 0:
            rate = span_steps / max(time.perf_counter() - span_start, 1e-9)
            line = log_line(sums, where["iteration"], where["env_steps"], where["seconds"], rate)
            line["action_std"] = round(float(metrics["loss/policy_dist_mean_std"][0]), 4)
            with open(folder / "metrics.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")
            say(progress_row(line))
            sums, span_start, span_steps = None, time.perf_counter(), 0
        if time.perf_counter() - last_checkpoint > checkpoint_seconds:
            save_checkpoint(folder, state, where)
            last_checkpoint = time.perf_counter()
    save_checkpoint(folder, state, where)
    return state


def learning_curve(folder: str | os.PathLike) -> Path | None:
    """``folder/learning_curve.png`` from ``metrics.jsonl``: the mean episode return, the tracking error and the
    share of falls against environment steps; ``None`` (nothing written) without matplotlib or metrics."""
    folder = Path(folder)
    path = folder / "metrics.jsonl"
    if not path.exists():
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    lines = [json.loads(ln) for ln in path.read_text().splitlines() if ln]
    if not lines:
        return None
    steps = np.asarray([ln["env_steps"] for ln in lines]) / 1e6
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, key, label in zip(
        axes,
        ("return", "tracking_error", "falls"),
        ("mean episode return", "velocity tracking error [m/s]", "share of episodes ending in a fall"),
        strict=True,
    ):
        ax.plot(steps, [np.nan if ln[key] is None else ln[key] for ln in lines])
        ax.set_xlabel("environment steps [millions]")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = folder / "learning_curve.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
