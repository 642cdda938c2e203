"""The overhead of the environment API (``jaxmor.envs.Locomotion``) over the bare batched simulation.

``python -m bench.envs`` (about 6 minutes on a 2-core CPU, 9 with ``--ablations``) times, in one process,
N = 4,096 worlds of the default ``jaxmor.envs.Locomotion()`` (the shipped quadruped on the ground, dt = 4 ms,
5 physics steps per control step, PD actions, EM-MOR) against ``jaxmor.rollout_batch`` doing the same physics
steps on the same worlds, appends one JSON line per case to ``bench/results/envs-<UTC date>.jsonl`` (not the
files of :mod:`bench.run`, whose ``--from-results`` reads a file's latest run) and regenerates the
"Environment overhead" table of bench/README.md. The cases (``--ablations`` adds the last two):

* ``env``: ``jax.jit`` of one ``lax.scan`` over K control steps of ``jax.vmap(env.step)`` (one vmap of all
  N worlds), random actions in [-1, 1] drawn beforehand, automatic reset on, ``episode_steps`` small
  enough that every world is reset during the run;
* ``env-chunks``: the same with each control step's worlds run in chunks of ``--chunk`` one after the other
  (``jax.lax.map`` over the chunks of ``jax.vmap(env.step)``), as ``rollout_batch`` chunks its worlds;
* ``bare-vmap``: ``rollout_batch(env.model, sims, n_steps=K * env.substeps, chunk_size=N)`` (one vmap, as
  the env), jitted, returning only the final states; ``sims`` is the ``sim`` field of the env's reset
  states with the actuator PD of the step switched on (``actuator_p_gain`` = ``env.kp``,
  ``actuator_d_gain`` = ``env.kd``, position targets = the standing pose + ``env.action_scale`` times the
  first control step's random action, held for the whole run): the same gains and kind of explicit PD
  torque, computed by the step instead of by the env;
* ``bare-chunks``: the same with ``rollout_batch``'s default ``chunk_size`` (256);
* ``env-no-reset``: ``env`` with ``auto_reset=False``; ``env-trivial-obs``: ``env`` with the observation
  replaced by zeros (``_observe`` overridden).

Every case is lowered and compiled (timed), called once (warm-up, excluded), then timed ``--repeats`` times,
the cases interleaved round by round so that a change in the machine's load hits all of them alike. Every
call starts from the same states and actions. World-steps/s = N x K x substeps / seconds per call; env
steps/s = N x K / seconds; the overhead is the ratio of the median times minus 1.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.run import write_block

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
README = BENCH_DIR / "README.md"
TABLE_START = "<!-- envs-table:start -->"
TABLE_END = "<!-- envs-table:end -->"
SCHEMA = 1

LABELS = {
    "env": "env, one vmap",
    "env-chunks": "env, chunks",
    "bare-vmap": "bare `rollout_batch`, one vmap",
    "bare-chunks": "bare `rollout_batch`, chunks",
    "env-no-reset": "env, `auto_reset=False`",
    "env-trivial-obs": "env, zero observation",
}


def _commit() -> str | None:
    """HEAD of the checkout (a git worktree too), or None."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _timed_cases(cases: dict, repeats: int) -> dict:
    """Compile each case's ``(fn, args)``, call it once, then time ``repeats`` rounds of all cases in turn."""
    import jax

    compiled, results = {}, {}
    for name, (fn, args) in cases.items():
        t = time.perf_counter()
        compiled[name] = jax.jit(fn).lower(*args).compile()
        compile_s = time.perf_counter() - t
        t = time.perf_counter()
        out = jax.block_until_ready(compiled[name](*args))
        results[name] = {"compile_s": compile_s, "warmup_s": time.perf_counter() - t, "times_s": [], "out": out}
        print(f"{name}: compiled in {compile_s:.1f} s, warm-up call {results[name]['warmup_s']:.1f} s", flush=True)
    for r in range(repeats):
        for name, (_, args) in cases.items():
            t = time.perf_counter()
            jax.block_until_ready(compiled[name](*args))
            results[name]["times_s"].append(time.perf_counter() - t)
        print(f"round {r + 1}/{repeats}: " + ", ".join(f"{n} {v['times_s'][-1]:.1f} s" for n, v in results.items()))
    return results


def measure(args) -> list[dict]:
    """Build the env and the cases, time them, and return one record per case (without the run's header)."""
    import jax
    import jax.numpy as jnp

    import jaxmor
    from jaxmor.envs import Locomotion

    class ZeroObservation(Locomotion):
        def _observe(self, sim, data):
            return jnp.zeros((self.observation_size,), sim.u.dtype)

    n, k = args.worlds, args.steps
    env = Locomotion(episode_steps=args.episode_steps)
    envs = {"env": env, "env-chunks": env}
    if args.ablations:
        envs["env-no-reset"] = Locomotion(episode_steps=args.episode_steps, auto_reset=False)
        envs["env-trivial-obs"] = ZeroObservation(episode_steps=args.episode_steps)
    physics_steps = k * env.substeps
    dtype = env.model.body_mass.dtype

    keys = jax.random.split(jax.random.PRNGKey(args.seed), n)
    states = jax.jit(jax.vmap(env.reset))(keys)
    actions = jax.random.uniform(jax.random.PRNGKey(args.seed + 1), (k, n, env.action_size), dtype, -1.0, 1.0)
    na = env.action_size
    sims = states.sim.replace(
        actuator_p_gain=jnp.full((n, na), env.kp, dtype),
        actuator_d_gain=jnp.full((n, na), env.kd, dtype),
        actuator_position_target=jnp.asarray(env.standing_joints, dtype) + env.action_scale * actions[0],
        actuator_velocity_target=jnp.zeros((n, na), dtype),
    )
    start = {name: states if e is env else jax.jit(jax.vmap(e.reset))(keys) for name, e in envs.items()}
    jax.block_until_ready((start, actions, sims))

    def env_run(e, chunk):
        def step_all(s, a):
            if not chunk or chunk >= n:
                return jax.vmap(e.step)(s, a)
            # Chunks of `chunk` worlds, one after the other, with explicit shapes: lax.map's batch_size reshapes
            # with -1, which fails on the State's zero-size leaves (ctrl: (n, 0) without control inputs).
            m, rest = divmod(n, chunk)
            split = jax.tree.map(lambda x: x[: m * chunk].reshape((m, chunk, *x.shape[1:])), (s, a))
            out = jax.lax.map(lambda sa: jax.vmap(e.step)(*sa), split)
            out = jax.tree.map(lambda x: x.reshape((m * chunk, *x.shape[2:])), out)
            if rest:
                tail = jax.vmap(e.step)(*jax.tree.map(lambda x: x[m * chunk :], (s, a)))
                out = jax.tree.map(lambda x, y: jnp.concatenate([x, y]), out, tail)
            return out

        def run(s, acts):
            def body(s, a):
                s = step_all(s, a)
                return s, (jnp.sum(s.done), jnp.sum(s.info["truncated"]))

            return jax.lax.scan(body, s, acts)

        return run

    def bare_run(chunk):
        return lambda s: jaxmor.rollout_batch(env.model, s, n_steps=physics_steps, chunk_size=chunk)[0]

    cases = {
        "env": (env_run(env, 0), (start["env"], actions)),
        "env-chunks": (env_run(env, args.chunk), (start["env-chunks"], actions)),
        "bare-vmap": (bare_run(n), (sims,)),
        "bare-chunks": (bare_run(args.chunk), (sims,)),
    }
    for name in ("env-no-reset", "env-trivial-obs"):
        if name in envs:
            cases[name] = (env_run(envs[name], 0), (start[name], actions))
    results = _timed_cases(cases, args.repeats)

    records = []
    for name, res in results.items():
        out = res.pop("out")
        final = out[0].sim if name.startswith("env") else out
        check = {
            "base_z_mean": float(jnp.mean(final.q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(final.nonfinite)),
        }
        if name.startswith("env"):
            done, truncated = (int(jnp.sum(x)) for x in out[1])
            # episodes_ended: the steps' sum of `done` (without auto_reset a world stays done once it ended).
            resets = done if envs[name].auto_reset else 0
            check.update(episodes_ended=done, resets=resets, truncations=truncated, terminations=done - truncated)
        ts = sorted(res["times_s"])
        med = statistics.median(ts)
        work = n * physics_steps
        records.append(
            {
                "case": name,
                "label": LABELS[name],
                "n_worlds": n,
                "control_steps": k,
                "substeps": env.substeps,
                "physics_steps": physics_steps,
                "dt": float(env.model.opt.timestep),
                "episode_steps": args.episode_steps,
                "dtype": str(dtype),
                "chunk": min(args.chunk, n) if name.endswith("chunks") else n,
                **res,
                "median_s": med,
                "min_s": ts[0],
                "max_s": ts[-1],
                "wsps_median": work / med,
                "wsps_min": work / ts[-1],
                "wsps_max": work / ts[0],
                "env_sps_median": n * k / med,
                "check": check,
                "settings": {
                    "motor_model": env.motor_model,
                    "action_mode": env.action_mode,
                    "kp": env.kp,
                    "kd": env.kd,
                    "solver_iterations": int(env.model.opt.solver_iterations),
                },
            }
        )
    return records


# ------------------------------------------------------------------------------------------ reporting


def _overhead(a: dict, b: dict) -> str:
    """``a``'s median time over ``b``'s, minus 1, in percent; with the range of the round-by-round ratios."""
    med = a["median_s"] / b["median_s"] - 1
    paired = sorted(x / y - 1 for x, y in zip(a["times_s"], b["times_s"], strict=True))
    return f"{med:+.0%} ({paired[0]:+.0%} to {paired[-1]:+.0%})"


def render_table(records: list[dict]) -> str:
    r0 = records[0]
    by = {r["case"]: r for r in records}
    rows = [
        "| case | worlds per vmap | world-steps/s, median (min-max) | env steps/s | s per call, median (min-max) "
        "| compile [s] |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        rows.append(
            f"| {r['label']} | {r['chunk']:,} | {r['wsps_median']:,.0f} ({r['wsps_min']:,.0f}-{r['wsps_max']:,.0f}) "
            f"| {r['env_sps_median']:,.0f} | {r['median_s']:.2f} ({r['min_s']:.2f}-{r['max_s']:.2f}) "
            f"| {r['compile_s']:.1f} |"
        )
    lines = ["\n".join(rows), ""]
    lines.append(
        "Overhead: the env's median time over the bare run's, minus 1 (in brackets: the range of the ratios of the "
        "calls of the same round)."
    )
    lines.append("")
    head = "| | against bare, one vmap | against bare, chunks |"
    ov = [head, "|---|---|---|"]
    for name in ("env", "env-chunks", "env-no-reset", "env-trivial-obs"):
        if name in by:
            ov.append(
                f"| {by[name]['label']} | {_overhead(by[name], by['bare-vmap'])} "
                f"| {_overhead(by[name], by['bare-chunks'])} |"
            )
    lines.append("\n".join(ov))
    c = r0["check"] if r0["case"] == "env" else by["env"]["check"]
    lines.append("")
    lines.append(
        f"Resets during the env's timed call: {c['resets']:,} ({c['truncations']:,} at the time limit, "
        f"{c['terminations']:,} failures) over {r0['n_worlds']:,} worlds x {r0['control_steps']} control steps; "
        f"non-finite worlds at the end: "
        + ", ".join(f"{r['case']} {r['check']['nonfinite_worlds']}" for r in records)
        + "."
    )
    return "\n".join(lines)


def update_readme(path: Path, records: list[dict], header: dict, results_file: Path) -> None:
    """Replace the text between the envs-table markers of ``path`` (appending them if absent)."""
    m, v, d = header["machine"], header["versions"], header["device"]
    try:
        rel = results_file.resolve().relative_to(ROOT)
    except ValueError:
        rel = results_file
    r0 = records[0]
    head = (
        f"Run `{header['run_id']}` ({header['date'][:10]}, `{header['command']}`), results in `{rel}`. "
        f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('mem_gib')} GiB; "
        f"JAX {v.get('jax')} on {d['backend']} ({', '.join(d['devices'])}); jaxmor {v.get('jaxmor')}"
        + (f" ({v['jaxmor_commit'][:10]})" if v.get("jaxmor_commit") else "")
        + f"; 1-minute load average {header['loadavg_1min_before']:.2f} before the run.\n\n"
        f"N = {r0['n_worlds']:,} worlds, K = {r0['control_steps']} control steps of {r0['substeps']} physics steps "
        f"(dt = {r0['dt'] * 1e3:g} ms), {r0['physics_steps']} physics steps per call, {r0['dtype']}; "
        f"`episode_steps={r0['episode_steps']}`; {len(r0['times_s'])} timed calls per case."
    )
    write_block(path, TABLE_START, TABLE_END, f"{head}\n\n{render_table(records)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.envs", description=__doc__.splitlines()[0])
    p.add_argument("--worlds", type=int, default=4096, help="N (default 4096)")
    p.add_argument("--steps", type=int, default=6, help="K, control steps per call (default 6)")
    p.add_argument("--episode-steps", type=int, default=3, help="the env's time limit (default 3: resets happen)")
    p.add_argument("--chunk", type=int, default=256, help="worlds per chunk of the chunked cases (default 256)")
    p.add_argument("--repeats", type=int, default=5, help="timed calls per case (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ablations", action="store_true", help="also time auto_reset=False and a zero observation")
    p.add_argument("--out", default=None, help="JSON-lines file to append to (default bench/results/envs-<date>.jsonl)")
    p.add_argument("--no-readme", action="store_true", help="don't regenerate bench/README.md's envs table")
    args = p.parse_args(argv)

    from bench.run import machine_info, versions

    now = _dt.datetime.now(_dt.timezone.utc)
    out = Path(args.out) if args.out else BENCH_DIR / "results" / f"envs-{now:%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    import jax

    vers = versions()
    vers["jaxmor_commit"] = vers.get("jaxmor_commit") or _commit()
    header = {
        "schema": SCHEMA,
        "run_id": f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}",
        "date": now.isoformat(timespec="seconds"),
        "machine": machine_info(),
        "device": {"backend": jax.default_backend(), "devices": [str(x) for x in jax.devices()]},
        "versions": vers,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "loadavg_1min_before": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "command": " ".join(["python -m bench.envs", *(argv if argv is not None else sys.argv[1:])]),
    }
    print(f"bench.envs run {header['run_id']}: {header['machine']['cpu']}, appending to {out}", flush=True)
    records = measure(args)
    with out.open("a") as f:
        for r in records:
            f.write(json.dumps({**header, "kind": "env-overhead", **r}) + "\n")
    print(render_table(records), flush=True)
    if not args.no_readme:
        update_readme(README, records, header, out)
        print(f"updated {README}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
