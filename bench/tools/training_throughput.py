"""Training throughput: environment steps per second of ``jaxmor train``'s PPO iteration, and the simulator's share.

``python -m bench.tools.training_throughput [--worlds N] [--iterations K] [--devices D] [--out FILE.jsonl]`` builds
the default run (:class:`jaxmor.train.run.RunConfig`: the quadruped, EM-MOR, default randomization, 6.67 ms x 3) and
times, after one call each to compile:

* ``iteration``: K whole PPO iterations (rollout of ``unroll_length`` control steps on every world, the observation
  normalizer, 4 epochs of Adam), as ``jaxmor train`` runs them;
* ``rollout``: K rollouts alone (the same ``generate_unroll`` with the same policy, no learning): the simulator and the
  environment, with the policy's forward pass.

It prints and appends one JSON line: environment steps per second of each, and the rollout's share of an iteration.
Set ``XLA_FLAGS=--xla_force_host_platform_device_count=D`` (``--devices`` does it) before JAX starts: one CPU device
per core.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import time


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "unknown"


def measure(worlds: int, iterations: int) -> dict:
    """The timings (module docstring) of the default run's PPO at ``worlds`` worlds."""
    import dataclasses

    import jax
    from brax.training import acting

    from jaxmor.train.ppo import AXIS, PPO
    from jaxmor.train.run import RunConfig, make_env

    config = RunConfig()
    config = dataclasses.replace(config, ppo=dataclasses.replace(config.ppo, worlds=worlds))
    ppo = PPO(make_env(config), config.ppo)
    state = ppo.start(0)

    def rollout(state):
        policy = ppo.make_policy((state.normalizer, state.params.policy))
        env_state, data = acting.generate_unroll(ppo.env, state.env_state, policy, state.key, config.ppo.unroll_length)
        return env_state, jax.lax.psum(data.reward.sum(), AXIS)

    unroll = jax.pmap(rollout, axis_name=AXIS, devices=ppo.devices)
    timings = {}
    for name, call in (("rollout", lambda s: unroll(s)), ("iteration", lambda s: ppo.iterate(s))):
        started = time.perf_counter()
        out = call(state)
        jax.block_until_ready(out)
        if name == "iteration":
            state = out[0]
        compiled = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(iterations):
            out = call(state)
            if name == "iteration":
                state = out[0]
        jax.block_until_ready(out)
        seconds = (time.perf_counter() - started) / iterations
        timings[name] = {"compile_s": round(compiled, 2), "seconds": round(seconds, 4)}
    steps = worlds * config.ppo.unroll_length
    return {
        "env_steps_per_iteration": steps,
        "iteration_env_steps_per_s": round(steps / timings["iteration"]["seconds"], 1),
        "rollout_env_steps_per_s": round(steps / timings["rollout"]["seconds"], 1),
        "simulator_share": round(timings["rollout"]["seconds"] / timings["iteration"]["seconds"], 3),
        "timings": timings,
        "devices": len(ppo.devices),
        "timestep": config.timestep,
        "substeps": config.substeps,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worlds", type=int, default=1024)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--devices", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", default=None, help="a .jsonl file to append the record to")
    args = parser.parse_args()
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={args.devices}"
    record = {
        "scenario": "training-throughput",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "worlds": args.worlds,
        "iterations": args.iterations,
        **measure(args.worlds, args.iterations),
    }
    print(json.dumps(record, indent=1))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
