"""jaxmor.train: the PPO loop, a run folder's checkpoints and resumption, Brax's own PPO through the adapter, the
command line.

The resumption test's reference is the same run made without interruption: a run stopped after 3 iterations (its
budget spent, as a killed run leaves its last checkpoint) and started again in its folder must log and end exactly
as the uninterrupted run (the training state is restored whole: parameters, optimizer, normalizer, every world's
state and the keys; CPU XLA programs are deterministic, so the tolerance is zero).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest
from models import ROOT

from jaxmor import ArgumentError, State, envs
from jaxmor.train.ppo import PPOConfig
from jaxmor.train.run import RunConfig, learning_curve, train

TINY = PPOConfig(worlds=8, unroll_length=4, minibatches=2, epochs=2, policy_layers=(16, 16), value_layers=(16, 16))
PER_ITERATION = TINY.worlds * TINY.unroll_length


def _config(iterations: int) -> RunConfig:
    weights = (("feet_slip", -0.4),)  # one replaced weight, which a saved policy must keep
    return RunConfig(
        randomization=True, reward_weights=weights, steps=iterations * PER_ITERATION, minutes=60.0, ppo=TINY
    )


def _lines(folder) -> list[dict]:
    lines = [json.loads(ln) for ln in (folder / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in ln.items() if k not in ("seconds", "env_steps_per_second")} for ln in lines]


#: What the uninterrupted run's live view was handed (the ``whole`` fixture): lines said, States, viewers.
WATCHED: dict[str, list] = {"said": [], "seen": [], "made": []}


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted 6-iteration run, with ``watch=True``: a live view served for it, whose ``update`` is
    recorded (nobody opens the page, so it draws nothing; the resumed run, unwatched, must still match it)."""
    from jaxmor.viewer import live_view

    real = live_view.live

    def recording(model, **options):
        view = real(model, **options)
        update = view.update
        view.update = lambda sims: (WATCHED["seen"].append(sims), update(sims))[1]
        WATCHED["made"].append(view)
        return view

    folder = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(live_view, "live", recording)
        train(folder, _config(6), log_every=1, checkpoint_seconds=1e9, progress=WATCHED["said"].append, watch=True)
    return folder


def test_a_resumed_run_continues_exactly_as_the_uninterrupted_one(whole, tmp_path):
    cut = tmp_path / "cut"
    train(cut, _config(3), log_every=1, progress=None)
    assert len(_lines(cut)) == 3
    (cut / "checkpoint.tmp.npz").write_bytes(b"a checkpoint cut off while being written")  # left by a kill
    said = []
    train(cut, _config(6), log_every=1, progress=said.append)
    assert any("resuming" in s and "iteration 3" in s for s in said)
    assert _lines(cut) == _lines(whole)
    with np.load(cut / "checkpoint.npz") as a, np.load(whole / "checkpoint.npz") as b:
        assert sorted(a.files) == sorted(b.files) and len(a.files) > 50
        for name in a.files:
            np.testing.assert_array_equal(a[name], b[name])
    assert json.loads((cut / "checkpoint.json").read_text())["iteration"] == 6


def test_a_run_folder_holds_its_metrics_policy_and_curve(whole):
    lines = _lines(whole)
    assert [ln["iteration"] for ln in lines] == [1, 2, 3, 4, 5, 6]
    assert [ln["env_steps"] for ln in lines] == [PER_ITERATION * k for k in range(1, 7)]
    from jaxmor.train import load_policy

    policy, config = load_policy(whole / "policy")
    assert policy.observation_size == envs.Locomotion().observation_size and config["trained"]["iteration"] == 6
    assert config["run"]["ppo"]["worlds"] == TINY.worlds
    assert learning_curve(whole).stat().st_size > 10_000
    from jaxmor.train.play import load_run_policy

    assert load_run_policy(whole)[1] == dataclasses.replace(
        _config(6), steps=RunConfig.steps, minutes=RunConfig.minutes
    )


def test_an_evaluation_under_resampled_commands_draws_them_from_the_given_ranges(whole):
    """``evaluate(commands=None, command_ranges=...)``: the worlds start at rest, so over the first 0.1 s (no
    settling left out) the tracking error is about the command's size: every moving command here is 2 m/s ahead
    (the run trained on 0-1 m/s), standing ones (10%) 0. An error above 1 m/s can only come from the ranges given."""
    from jaxmor.train.evaluate import evaluate
    from jaxmor.train.play import load_run_policy

    policy, config = load_run_policy(whole)
    ranges = ((2.0, 2.0), (0.0, 0.0), (0.0, 0.0))
    report = evaluate(policy, config, commands=None, command_ranges=ranges, worlds=8, seconds=0.1, settle=0.0)
    assert report["rows"] == [] and report["falls"] == 0.0 and report["tracking_error"] > 1.0, report


def test_play_resampled_evaluates_under_the_command_lines_ranges(whole, monkeypatch):
    """``jaxmor play --resampled lo:hi,lo:hi,lo:hi`` hands those ranges, as numbers, to the evaluation (whose use
    of them the test above checks) instead of the fixed commands."""
    from jaxmor.tools.cli import main
    from jaxmor.train import play as play_module

    seen = {}

    def evaluate_both(policy, config, **kw):
        seen.update(kw)
        return {"trained": {}, "half_step": {}, "walks": False}

    monkeypatch.setattr(play_module, "evaluate_both", evaluate_both)
    monkeypatch.setattr(play_module, "format_report", lambda reports: "")
    assert main(["play", str(whole), "--worlds", "3", "--resampled", "0:1.5,-0.5:0.5,-1:1e0"]) == 0
    assert seen == {
        "worlds": 3,
        "seconds": 20.0,
        "commands": None,
        "command_ranges": ((0.0, 1.5), (-0.5, 0.5), (-1.0, 1.0)),
    }
    assert main(["play", str(whole), "--resampled", "0:1.5,-0.5"]) == 2  # a jaxmor error, said on stderr


@pytest.mark.parametrize("ranges", [((0, 1), (0, 1)), ((1, 0), (0, 0), (0, 0)), (("a", 1), (0, 0), (0, 0)), "0:1"])
def test_play_refuses_bad_command_ranges(ranges):
    from jaxmor.train.play import play

    with pytest.raises(ArgumentError, match=r"resampled must be three finite \(low, high\) pairs"):
        play("no-such-policy", resampled=ranges)  # refused before any file is read


def test_a_live_run_shows_its_worlds(whole):
    """``watch=True`` (``jaxmor train --live``) serves a live view and hands it the first device's worlds after
    every iteration; the view is closed at the end."""
    assert any(line.startswith("live view at http://127.0.0.1:") for line in WATCHED["said"])
    devices = len(jax.local_devices())  # PPO splits the worlds over the local devices
    seen = WATCHED["seen"]
    assert len(seen) == 6 and len(WATCHED["made"]) == 1 and WATCHED["made"][0]._closed
    for sims in seen:
        assert isinstance(sims, State) and sims.q.shape == (TINY.worlds // devices, 19)
    assert not np.array_equal(np.asarray(seen[0].q), np.asarray(seen[1].q))  # the worlds moved


def test_an_evaluation_needs_a_world_per_fixed_command():
    from jaxmor.train.evaluate import evaluate

    with pytest.raises(ArgumentError, match=r"worlds must be at least the number of fixed commands \(3\), got 2"):
        evaluate(None, RunConfig(), worlds=2)  # refused before the policy is used
    with pytest.raises(ArgumentError, match="worlds must be an int >= 1"):
        evaluate(None, RunConfig(), worlds=0, commands=None)


def test_a_run_folder_refuses_other_settings(whole):
    other = dataclasses.replace(_config(6), motor_model="box")
    with pytest.raises(ArgumentError, match="other settings"):
        train(whole, other, progress=None)


def test_worlds_must_split_over_devices_and_minibatches():
    from jaxmor.train.ppo import PPO

    with pytest.raises(ArgumentError, match="split evenly"):
        PPO(envs.Locomotion(episode_steps=5), dataclasses.replace(TINY, worlds=6, minibatches=4))


#: Brax 0.14's own ``ppo.train`` on the jaxmor environment, its settings the JSON of the first argument (the episode
#: length also the environment's), printing each evaluation's return and the policy's input width against the
#: environment's observation size.
_BRAX_PPO = textwrap.dedent(
    """
    import json, sys

    from brax.training.agents.ppo import train as ppo

    from jaxmor import envs
    from jaxmor.envs.brax import BraxEnv, wrap_for_training

    settings = json.loads(sys.argv[1])
    env = BraxEnv(envs.Locomotion(episode_steps=settings["episode_length"]))
    rewards = []
    _, params, _ = ppo.train(
        env, wrap_env_fn=wrap_for_training, normalize_observations=True,
        progress_fn=lambda step, metrics: rewards.append(float(metrics["eval/episode_reward"])), **settings
    )
    print("rewards", *rewards)
    print("width", params[1]["params"]["hidden_0"]["kernel"].shape[0], env.observation_size)
    """
)


def _brax_ppo(**settings) -> list[float]:
    """The evaluation returns of Brax's PPO run with ``settings`` in a process of its own, as a user runs it: float32
    and no persistent compilation cache. In the test workers (float64, the run's shared cache, after hundreds of other
    programs) XLA's compile of Brax's training program aborted the whole worker twice on 2-core CI machines (``Fatal
    Python error: Aborted``, once writing the cache entry, once compiling), which took the run's remaining tests down
    with it."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_ENABLE_X64", "JAX_COMPILATION_CACHE_DIR")}
    out = subprocess.run(
        [sys.executable, "-c", _BRAX_PPO, json.dumps(settings)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    width, observation_size = lines["width"].split()
    assert width == observation_size
    return [float(r) for r in lines["rewards"].split()]


@pytest.mark.slow  # 2.5-6 minutes on 2 cores; the adapter is tested in test_rl.py, Brax's PPO in the next test
def test_brax_ppo_trains_locomotion_through_the_adapter_on_this_jax():
    """Brax 0.14's own ``ppo.train`` (which calls the ``jax.device_put_replicated`` JAX removed) runs on the jaxmor
    environment: the adapter installs the compatibility shim (jaxmor.envs.brax_compat)."""
    tiny = dict(num_envs=8, batch_size=8, num_minibatches=2, unroll_length=4, num_updates_per_batch=1)
    rewards = _brax_ppo(num_timesteps=2 * 8 * 4 * 2, episode_length=20, num_evals=2, num_eval_envs=8, **tiny)
    assert len(rewards) == 2 and all(np.isfinite(rewards))


@pytest.mark.slow  # about 8 minutes on 2 cores
def test_brax_ppo_raises_the_evaluation_return():
    """1.5 M steps of Brax's PPO on the default Locomotion task: the evaluation return (deterministic policy, 128
    worlds, 200-step episodes) after training is above the untrained policy's by more than 1 (an untrained robot
    falls within about a second; the trained default policy earns about 3 per simulated second)."""
    settings = dict(num_envs=256, batch_size=256, num_minibatches=8, unroll_length=20, num_updates_per_batch=4)
    rewards = _brax_ppo(num_timesteps=1_500_000, episode_length=200, num_evals=4, num_eval_envs=128, **settings)
    assert len(rewards) == 4 and all(np.isfinite(rewards))
    assert rewards[-1] > rewards[0] + 1.0, rewards


def test_the_compatibility_shim_matches_the_removed_function():
    from jaxmor.envs import brax_compat

    brax_compat.install()
    tree = {"a": np.arange(6.0).reshape(2, 3), "b": np.float32(2.0)}
    out = brax_compat.device_put_replicated(tree, jax.local_devices())
    count = len(jax.local_devices())
    np.testing.assert_array_equal(np.asarray(out["a"]), np.broadcast_to(tree["a"], (count, 2, 3)))
    assert out["b"].shape == (count,) and len(out["a"].sharding.device_set) == count
    assert jax.device_put_replicated is brax_compat.device_put_replicated or not brax_compat.install()


@pytest.mark.slow  # a PPO compile, about 50 s; with_reflection itself is tested in the default tier (test_mirror.py)
def test_mirror_puts_each_reflection_in_the_batch():
    """PPO with ``mirror``: the running statistics see every observation and its reflection, so an entry the
    reflection negates in place (the lateral command, the forward-axis angular velocity...) has mean exactly 0."""
    from jaxmor.train.ppo import PPO

    ppo = PPO(envs.Locomotion(episode_steps=5), dataclasses.replace(TINY, mirror=True))
    state, metrics = ppo.iterate(ppo.start(0))
    assert np.isfinite(float(metrics["loss/total_loss"][0]))
    mirror = ppo.mirror
    negated = (mirror.observation_index == np.arange(len(mirror.observation_index))) & (mirror.observation_sign < 0)
    mean = np.asarray(state.normalizer.mean[0])
    assert negated.sum() >= 4 and np.all(np.abs(mean[negated]) < 1e-6)
    assert np.any(np.abs(mean) > 1e-3)  # the others are not all zero (standing height, gravity's z...)


def test_gain_scale_scales_the_default_gains():
    from jaxmor.train.run import make_env

    base, soft = make_env(RunConfig(randomization=False)), make_env(RunConfig(randomization=False, gain_scale=0.25))
    np.testing.assert_allclose(soft.kp, 0.25 * base.kp, rtol=1e-12)
    np.testing.assert_allclose(soft.kd, 0.5 * base.kd, rtol=1e-12)  # the damping ratio kept
    with pytest.raises(ArgumentError, match="gain_scale"):
        make_env(RunConfig(gain_scale=0.0))


def test_reward_weights_reach_the_environment_and_a_bad_one_writes_nothing(tmp_path):
    from jaxmor.envs.terms import DEFAULT_REWARD_WEIGHTS
    from jaxmor.tools.cli import _reward_weights
    from jaxmor.train.run import make_env

    weights = _reward_weights(["tracking_yaw=2", " feet_slip = -1e-1"])
    assert weights == (("tracking_yaw", 2.0), ("feet_slip", -0.1))
    env = make_env(RunConfig(randomization=False, reward_weights=weights))
    assert env.weights["tracking_yaw"] == 2.0 and env.weights["feet_slip"] == -0.1
    assert env.weights["tracking_linear"] == DEFAULT_REWARD_WEIGHTS["tracking_linear"]
    for bad in ("tracking_yaw", "tracking_yaw=two"):
        with pytest.raises(ArgumentError, match="--reward takes TERM=WEIGHT"):
            _reward_weights([bad])
    with pytest.raises(ArgumentError, match="unknown reward term 'tracking_jaw'"):
        train(tmp_path / "run", RunConfig(reward_weights=(("tracking_jaw", 2.0),)), progress=None)
    assert not (tmp_path / "run").exists()


def test_forward_max_widens_the_forward_commands():
    from jaxmor.train.run import command_settings

    assert command_settings("forward", forward_max=1.3)["command_ranges"] == ((0.0, 1.3), (0.0, 0.0), (0.0, 0.0))
    with pytest.raises(ArgumentError, match="forward_max applies to the 'forward' commands"):
        command_settings("omni", forward_max=1.3)
    with pytest.raises(ArgumentError, match=r"forward_max \[m/s\] must be > 0"):
        command_settings("forward", forward_max=0.0)


def test_a_checkpoint_that_does_not_fit_the_run_is_refused_saying_why(tmp_path):
    """A run folder whose checkpoint has other arrays than the run's state (one written by another jaxmor version,
    whose State had other fields) is refused with a jaxmor error naming the file and what to do."""
    from jaxmor.errors import ModelError
    from jaxmor.train.run import load_checkpoint, save_checkpoint

    save_checkpoint(tmp_path, {"a": np.zeros(3), "b": np.ones(2)}, {"iteration": 1})
    with pytest.raises(ModelError, match=r"checkpoint\.npz: holds 2 arrays, the run's state has 3 \(a checkpoint"):
        load_checkpoint(tmp_path, {"a": np.zeros(3), "b": np.ones(2), "c": np.zeros(1)})
    with pytest.raises(ModelError, match=r"leaf_00001 is float64\(2,\), the run's state has float64\(4,\).*new folder"):
        load_checkpoint(tmp_path, {"a": np.zeros(3), "b": np.ones(4)})
    state, where = load_checkpoint(tmp_path, {"a": np.zeros(3), "b": np.zeros(2)})
    assert where == {"iteration": 1} and np.array_equal(state["b"], np.ones(2))
