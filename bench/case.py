"""One benchmark case, run in a fresh process: ``python -m bench.case '<json spec>'``.

A fresh process per case keeps the peak resident memory (``ru_maxrss``) a per-case figure and keeps
one engine's compilation caches and threads out of another's timings. The case prints one line
``BENCH_RESULT {json}`` on stdout; :mod:`bench.run` collects it.

Timing protocol, the same for every engine: build the inputs; compile (JAX engines: ``lower`` then
``compile``, both timed; MuJoCo: ``MjSpec.compile``); one warm-up call, excluded; then ``repeats``
calls, each blocked on its outputs (``block_until_ready``; MuJoCo's rollout returns when done). When
the warm-up call shows that ``repeats`` calls would exceed ``budget_s``, fewer calls are made, but
never fewer than ``min_repeats``.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback

import numpy as np

from bench import scenario as sc

MARKER = "BENCH_RESULT "
PHASE = "BENCH_PHASE "


def phase(text: str) -> None:
    """Report progress on stderr, so that a case that hangs says where (bench.run reads it)."""
    sys.stderr.write(f"{PHASE}{text}\n")
    sys.stderr.flush()


def _rss_mb() -> float:
    """Peak resident set size of this process so far [MiB] (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return float("nan")


def _time_calls(call, spec: dict) -> tuple[float, list[float]]:
    """(warm-up seconds, list of timed calls in seconds) per the module's protocol."""
    phase("warm-up call")
    t = time.perf_counter()
    call()
    warm = time.perf_counter() - t
    repeats = int(spec["repeats"])
    budget = float(spec.get("budget_s", 0) or 0)
    if budget > 0 and warm * repeats > budget:
        repeats = max(int(spec.get("min_repeats", 3)), int(budget // max(warm, 1e-9)))
        repeats = min(repeats, int(spec["repeats"]))
    times = []
    for i in range(repeats):
        phase(f"timed call {i + 1}/{repeats}")
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return warm, times


def _compile_and_time(fn, args: tuple, spec: dict) -> tuple[object, dict]:
    """Lower and compile a jitted ``fn`` for ``args`` (both timed), then time calls per the protocol.

    Returns the last call's outputs (blocked on) and the timing fields of the case's record.
    """
    import jax

    t = time.perf_counter()
    lowered = fn.lower(*args)
    lower_s = time.perf_counter() - t
    t = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t
    out = {}

    def call():
        out["r"] = jax.block_until_ready(compiled(*args))

    warm, times = _time_calls(call, spec)
    timing = {
        "lower_s": lower_s,
        "compile_s": lower_s + compile_s,
        "xla_compile_s": compile_s,
        "warmup_s": warm,
        "times_s": times,
    }
    return out["r"], timing


def _jax_device_memory() -> dict:
    import jax

    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # noqa: BLE001 - CPU devices may raise or return None
        stats = None
    if not stats:
        return {}
    keep = ("peak_bytes_in_use", "bytes_in_use", "bytes_limit")
    return {f"device_{k}": int(stats[k]) for k in keep if k in stats}


# ---------------------------------------------------------------------------------------------- jaxmor


def _jaxmor_model(dt: float):
    import jax.numpy as jnp

    import jaxmor

    model = jaxmor.add_ground(jaxmor.load_urdf(str(sc.URDF)), friction=sc.FRICTION)
    return model.replace(opt=model.opt.replace(timestep=jnp.asarray(dt, model.opt.timestep.dtype)))


def _jaxmor_states(model, n: int):
    import jax
    import jax.numpy as jnp

    import jaxmor

    state = jaxmor.init_state(model, jnp.asarray(sc.standing_qpos(), model.body_mass.dtype))
    # Per-world states (materialized, not broadcast views), as a batch of independent worlds would be.
    return jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n, *x.shape))), state)


def run_jaxmor_forward(spec: dict) -> dict:
    import jax
    import jax.numpy as jnp

    import jaxmor

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    model = _jaxmor_model(dt)
    states = _jaxmor_states(model, n)
    controls = jnp.asarray(sc.controls(n, steps, dt), model.body_mass.dtype)
    jax.block_until_ready((states, controls))
    baseline = _current_rss_mb()

    chunk = int(spec.get("chunk", 0) or 0)
    if chunk:  # the API for big batches: vmapped chunks of `chunk` worlds, one after the other
        fn = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=chunk)[0])
    else:
        fn = jax.jit(jax.vmap(lambda s, c: jaxmor.rollout(model, s, c, steps)[0]))
    final, timing = _compile_and_time(fn, (states, controls), spec)
    return {
        **timing,
        "baseline_rss_mb": baseline,
        "check": {
            "base_z_mean": float(jnp.mean(final.q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(final.nonfinite)),
        },
        "settings": {
            "solver_iterations": int(model.opt.solver_iterations),
            "dtype": str(model.body_mass.dtype),
            "chunk": chunk or None,
        },
        **_jax_device_memory(),
    }


def run_jaxmor_grad(spec: dict) -> dict:
    """``jax.grad`` of the sum of the final joint velocities of G worlds x K steps w.r.t. R, Kt, Kv.

    ``grad_chunk`` > 0 maps over chunks of that many vmapped worlds (``jax.lax.map(batch_size=...)``);
    0 vmaps all G worlds at once. See bench/README.md for why the default is a chunk of 32.
    """
    import jax
    import jax.numpy as jnp

    import jaxmor

    g, k, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    chunk = int(spec.get("grad_chunk", 0) or 0)
    chunk = chunk if 0 < chunk < g else 0  # a chunk of all G worlds is one vmap
    model = _jaxmor_model(dt)
    states = _jaxmor_states(model, g)
    controls = jnp.asarray(sc.controls(g, k, dt), model.body_mass.dtype)
    motor = model.actuators.motor
    params = (motor.resistance, motor.torque_constant, motor.velocity_constant)
    jax.block_until_ready((states, controls, params))
    baseline = _current_rss_mb()
    nv = model.nv

    def loss(p):
        m = model.replace(
            actuators=model.actuators.replace(
                motor=model.actuators.motor.replace(resistance=p[0], torque_constant=p[1], velocity_constant=p[2])
            )
        )

        def one(s, c):
            return jaxmor.rollout(m, s, c, k)[0].u[nv - model.na :]

        if chunk:
            final_u = jax.lax.map(lambda a: one(*a), (states, controls), batch_size=chunk)
        else:
            final_u = jax.vmap(one)(states, controls)
        return jnp.sum(final_u)

    fn = jax.jit(jax.value_and_grad(loss))
    (value, grads), timing = _compile_and_time(fn, (params,), spec)
    return {
        **timing,
        "baseline_rss_mb": baseline,
        "check": {
            "loss": float(value),
            "grad_abs_sum": {
                "resistance": float(jnp.sum(jnp.abs(grads[0]))),
                "torque_constant": float(jnp.sum(jnp.abs(grads[1]))),
                "velocity_constant": float(jnp.sum(jnp.abs(grads[2]))),
            },
            "grad_finite": bool(all(bool(jnp.all(jnp.isfinite(x))) for x in grads)),
        },
        "settings": {"grad_chunk": chunk, "wrt": ["resistance", "torque_constant", "velocity_constant"]},
        **_jax_device_memory(),
    }


# ---------------------------------------------------------------------------------------------- MuJoCo


def mujoco_standing_states(model, n: int) -> np.ndarray:
    """(n, state size) MuJoCo full-physics states of the scenario's quadruped standing, at rest, one per world."""
    import mujoco

    data = mujoco.MjData(model)
    data.qpos[:] = sc.standing_qpos()
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    s0 = np.zeros(mujoco.mj_stateSize(model, full))
    mujoco.mj_getState(model, data, s0, full)
    return np.tile(s0, (n, 1))


def run_mujoco_forward(spec: dict) -> dict:
    import mujoco
    from mujoco import rollout

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    nthread = int(spec["nthread"])
    t = time.perf_counter()
    model = sc.mujoco_spec(dt).compile()
    compile_s = time.perf_counter() - t

    initial = mujoco_standing_states(model, n)
    controls = np.ascontiguousarray(sc.controls(n, steps, dt))
    states = np.empty((n, steps, initial.shape[1]))
    sensordata = np.empty((n, steps, model.nsensordata))
    datas = [mujoco.MjData(model) for _ in range(max(nthread, 1))]
    baseline = _current_rss_mb()

    runner = rollout.Rollout(nthread=nthread)
    try:

        def call():
            runner.rollout(model, datas, initial, controls, state=states, sensordata=sensordata, nstep=steps)

        warm, times = _time_calls(call, spec)
    finally:
        runner.close()
    qpos0 = 1  # FULLPHYSICS state: time, qpos, qvel, act, ...
    return {
        "compile_s": compile_s,
        "warmup_s": warm,
        "times_s": times,
        "baseline_rss_mb": baseline,
        "check": {
            "base_z_mean": float(np.mean(states[:, -1, qpos0 + 2])),
            "nonfinite_worlds": int(np.sum(~np.all(np.isfinite(states[:, -1]), axis=1))),
        },
        "settings": {
            "nthread": nthread,
            "integrator": int(model.opt.integrator),
            "solver": int(model.opt.solver),
            "iterations": int(model.opt.iterations),
            "ls_iterations": int(model.opt.ls_iterations),
            "cone": int(model.opt.cone),
            "dtype": "float64",
        },
    }


# ---------------------------------------------------------------------------------------------- MJX


def run_mjx_forward(spec: dict) -> dict:
    import jax
    import jax.numpy as jnp
    from mujoco import mjx

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    t = time.perf_counter()
    mj_model = sc.mujoco_spec(dt).compile()
    mx = mjx.put_model(mj_model)
    put_s = time.perf_counter() - t
    qpos0 = jnp.asarray(sc.standing_qpos(), jnp.float32)
    qpos = jnp.array(jnp.broadcast_to(qpos0, (n, qpos0.size)))
    controls = jnp.asarray(sc.controls(n, steps, dt), jnp.float32)

    def one(q, c):
        d = mjx.make_data(mx).replace(qpos=q)

        def body(d, u):
            return mjx.step(mx, d.replace(ctrl=u)), None

        d, _ = jax.lax.scan(body, d, c)
        return d.qpos, d.qvel

    fn = jax.jit(jax.vmap(one))
    jax.block_until_ready((qpos, controls))
    baseline = _current_rss_mb()
    (q, v), timing = _compile_and_time(fn, (qpos, controls), spec)
    return {
        **timing,
        "put_model_s": put_s,
        "baseline_rss_mb": baseline,
        "check": {
            "base_z_mean": float(jnp.mean(q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(~(jnp.all(jnp.isfinite(q), 1) & jnp.all(jnp.isfinite(v), 1)))),
        },
        "settings": {
            "impl": str(getattr(mx, "impl", "")),
            "solver": int(mj_model.opt.solver),
            "iterations": int(mj_model.opt.iterations),
            "ls_iterations": int(mj_model.opt.ls_iterations),
            "dtype": str(q.dtype),
        },
        **_jax_device_memory(),
    }


RUNNERS = {
    ("jaxmor", "forward"): run_jaxmor_forward,
    ("jaxmor", "grad"): run_jaxmor_grad,
    ("mujoco", "forward"): run_mujoco_forward,
    ("mjx", "forward"): run_mjx_forward,
}


def run_case(spec: dict) -> dict:
    """Run one case in this process; never raises (errors are reported in the result)."""
    result = {"status": "ok"}
    phase(f"start {spec['engine']} {spec['kind']} N={spec['n_worlds']} (setup and compile)")
    try:
        result.update(RUNNERS[(spec["engine"], spec["kind"])](spec))
    except Exception as exc:  # noqa: BLE001 - report, don't crash the whole benchmark
        result = {"status": "error", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    result["peak_rss_mb"] = _rss_mb()
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(argv[0])
    result = run_case(spec)
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
