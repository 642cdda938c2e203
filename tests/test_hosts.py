"""Several hosts: two JAX processes on 127.0.0.1 run one batch of worlds sharded over both, and checkpoint it.

Each process (this file run as a script) calls ``jax.distributed.initialize`` with CPU collectives over gloo and
two forced CPU devices, so the global mesh has four devices, two per process. They run a jitted ``rollout_batch``
of 4 quadrupeds on the ground over the global mesh (one world per device), save a checkpoint of the global batch
(gathered on both, written by process 0), load it on each process, place it again with ``shard_worlds`` and run
the same steps once more. Each process writes the shards it holds to a file.

References: one process running the same batch with the same jitted function (four groups of one world, as the
four devices run them), in this test's process. The checkpoint must hold, bit for bit, the shards the processes
computed. The rollouts compare in float64, every leaf of the State: a device compiles the program for one world
where one process compiles it for four groups of one, so round-off differs by ulps, which the contact steps
amplify a little. Measured (2026-12-03): q 1.7e-18, u 8.9e-16, largest 1.8e-14 (the joints' friction-loss
torque, and motor speeds of about 100 rad/s); the bound 1e-12 leaves room for that while a misplaced world or a
float32 rounding (~1e-6) would exceed it by far. The measured values are printed (``-s``).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor

ROOT = Path(__file__).resolve().parent.parent
N_PROCESSES, LOCAL_DEVICES, N_WORLDS, N_STEPS = 2, 2, 4, 8
#: Seconds the two processes may take together (compiling a rollout takes 20-60 s on a loaded 2-core machine).
TIMEOUT_S = 240
#: float64 rollouts of the same worlds compiled per device and per process, every State leaf (module docstring).
TOLERANCE = 1e-12


def _batch():
    """The model, the worlds' states and their torques (N_WORLDS worlds, N_STEPS steps), the same in every process.

    Returns:
        ``(model, states, torques)``; torques of shape ``(N_WORLDS, N_STEPS, na)``.
    """
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    q = jnp.asarray(jaxmor.robots.quadruped_standing_q(model))
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(q, (N_WORLDS, 1)))
    torques = jax.random.uniform(jax.random.key(0), (N_WORLDS, N_STEPS, model.na), minval=-20.0, maxval=20.0)
    return model, states, torques


def _runner(model):
    """The jitted rollout of the batch, as four groups of one world (one per device of the global mesh).

    Returns:
        ``run(states, torques) -> final states``.
    """
    return jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=1, groups=N_WORLDS)[0])


def _shards(name: str, tree) -> dict[str, np.ndarray]:
    """The shards of ``tree`` this process holds, keyed ``name|leaf path|first world`` (a replicated leaf's
    copies share one key).

    Returns:
        A mapping for ``np.savez``.
    """
    found = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        for shard in leaf.addressable_shards:
            start = shard.index[0].start or 0
            found[f"{name}|{jax.tree_util.keystr(path)}|{start}"] = np.asarray(shard.data)
    return found


def _worker(process_id: int, port: int, out: Path) -> None:
    """One process: the sharded rollout, the checkpoint of the global batch, the restored rollout; writes
    ``out/process<id>.npz`` (its shards, ``counts``: processes, devices, local devices, and ``refused``: the error
    of a checkpoint process 0 cannot write)."""
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        f"127.0.0.1:{port}",
        num_processes=N_PROCESSES,
        process_id=process_id,
        initialization_timeout=TIMEOUT_S,
        shutdown_timeout_seconds=60,
    )
    model, states, torques = _batch()
    run = _runner(model)
    torques = jaxmor.shard_worlds(torques)
    first = run(jaxmor.shard_worlds(states), torques)
    jaxmor.save_checkpoint(out / "batch.npz", model, first)  # every process calls it; process 0 writes
    _, restored = jaxmor.load_checkpoint(out / "batch.npz", model=model)
    second = run(jaxmor.shard_worlds(restored), torques)
    try:
        jaxmor.save_checkpoint(out, model, first)  # a folder: process 0 cannot write it
        refused = "nothing"
    except jaxmor.ArgumentError as err:
        refused = "process 0: " + str(err) if process_id == 0 else str(err)
    counts = np.array([jax.process_count(), jax.device_count(), jax.local_device_count()])
    shards = {**_shards("first", first), **_shards("second", second)}
    np.savez(out / f"process{process_id}.npz", counts=counts, refused=np.array(refused), **shards)


def _no_gloo() -> str | None:
    """Why this platform cannot run CPU collectives over gloo (``None`` if it can)."""
    from jax._src.lib import _jax  # where jax's CPU client finds its gloo collectives

    if not hasattr(_jax, "make_gloo_tcp_collectives"):
        return f"this jaxlib ({jax.__version__}) has no gloo CPU collectives"
    return None


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment() -> dict[str, str]:
    """The processes' environment: CPU only, LOCAL_DEVICES forced CPU devices each, this checkout's jaxmor."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={LOCAL_DEVICES}".strip()
    return env


def _wait(processes: list[subprocess.Popen], start: float) -> None:
    """Until every process has ended, one has failed, or TIMEOUT_S have passed since ``start``."""
    while any(p.poll() is None for p in processes) and time.monotonic() - start < TIMEOUT_S:
        if any(p.poll() not in (None, 0) for p in processes):
            return
        time.sleep(0.5)


def _run_processes(out: Path) -> float:
    """Start the processes, wait for them (at most TIMEOUT_S), and kill them all when one fails or time runs out.

    Returns:
        The seconds they took.

    Raises:
        pytest.fail.Exception: a process failed or they ran out of time (with the tail of each log).
    """
    port, start, env = _free_port(), time.monotonic(), _environment()
    logs = [out / f"process{i}.log" for i in range(N_PROCESSES)]
    processes = []
    try:
        for i, log in enumerate(logs):
            with open(log, "w") as f:
                command = [sys.executable, __file__, str(i), str(port), str(out)]
                processes.append(subprocess.Popen(command, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT))
        _wait(processes, start)
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.wait()
    failed = [(i, p.returncode) for i, p in enumerate(processes) if p.returncode != 0]
    if failed or len(processes) != N_PROCESSES:
        tails = "\n".join(f"--- process {i} (exit {code}):\n{logs[i].read_text()[-2000:]}" for i, code in failed)
        pytest.fail(f"the processes failed or ran out of {TIMEOUT_S} s (exit -9: killed):\n{tails}")
    return time.monotonic() - start


def _assembled(files: list[dict], name: str, like) -> list[np.ndarray]:
    """The global leaves of ``like``'s structure put together from the processes' shards (world order).

    Returns:
        One array per leaf of ``like``, each covering all N_WORLDS worlds.
    """
    leaves = []
    for path, _ in jax.tree_util.tree_flatten_with_path(like)[0]:
        prefix = f"{name}|{jax.tree_util.keystr(path)}|"
        parts = {int(key[len(prefix) :]): f[key] for f in files for key in f if key.startswith(prefix)}
        starts = sorted(parts)  # a replicated leaf: one part from 0, held by every device
        assert starts == list(np.cumsum([0] + [len(parts[k]) for k in starts[:-1]])), (prefix, starts)
        leaf = np.concatenate([parts[k] for k in starts])
        assert leaf.shape[0] == N_WORLDS, (prefix, leaf.shape)
        leaves.append(leaf)
    return leaves


def _largest_difference(a: list[np.ndarray], b) -> float:
    """The largest absolute difference between the leaves ``a`` and those of the pytree ``b`` (equal entries,
    infinite limits too, differ by 0)."""
    largest = 0.0
    for x, y in zip(a, jax.tree.leaves(b), strict=True):
        x, y = x.astype(np.float64), np.asarray(y, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            difference = np.where(x == y, 0.0, np.abs(x - y))
        largest = max(largest, float(np.max(difference, initial=0.0)))
    return largest


@pytest.mark.slow
def test_two_processes_roll_out_a_sharded_batch_checkpoint_it_and_match_one_process(tmp_path):
    reason = _no_gloo()
    if reason:
        pytest.skip(reason)
    seconds = _run_processes(tmp_path)
    files = [dict(np.load(tmp_path / f"process{i}.npz")) for i in range(N_PROCESSES)]
    for f in files:
        assert f.pop("counts").tolist() == [N_PROCESSES, N_PROCESSES * LOCAL_DEVICES, LOCAL_DEVICES]
    refused = [str(f.pop("refused")) for f in files]
    # process 0's own error (the system's reason), and the other learns that process 0 failed
    assert re.search(r"^process 0: save_checkpoint: path '.*' cannot be written: Is a directory", refused[0]), refused
    assert re.search(r"^save_checkpoint: process 0 could not write the checkpoint", refused[1]), refused

    model, states, torques = _batch()
    run = _runner(model)
    first = run(states, torques)
    second = run(first, torques)
    _, saved = jaxmor.load_checkpoint(tmp_path / "batch.npz", model=model)
    computed = _assembled(files, "first", first)
    assert all(np.array_equal(x, np.asarray(y)) for x, y in zip(computed, jax.tree.leaves(saved), strict=True))
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == ["batch.npz", "process0.npz", "process1.npz"]

    differences = (
        _largest_difference(computed, first),
        _largest_difference(_assembled(files, "second", second), second),
    )
    assert max(differences) < TOLERANCE, f"differences {differences} from one process ({seconds:.0f} s)"
    print(f"two processes: {seconds:.0f} s; differences from one process (run, continued) {differences}")


def test_an_array_that_cannot_be_gathered_is_an_argument_error_naming_it(monkeypatch):
    """JAX's error when gathering fails (no collectives, a process missing) becomes an ArgumentError naming the
    leaf; a single process cannot make a global array, so the gather is made to fail."""
    from jaxmor.modeling import checkpoint

    def refuse(*_, **__):
        raise RuntimeError("no cross-process collectives")

    monkeypatch.setattr(checkpoint.multihost_utils, "process_allgather", refuse)
    spread = SimpleNamespace(is_fully_replicated=False, shape=(4, 19), sharding=SimpleNamespace(device_set={0, 1}))
    with pytest.raises(jaxmor.ArgumentError, match=r"could not gather \.q \(shape \(4, 19\).*no cross-process"):
        checkpoint._gather_one(".q", spread)


if __name__ == "__main__":
    _worker(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
