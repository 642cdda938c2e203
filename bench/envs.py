"""The overhead of the environment API (``jaxmor.envs.Locomotion``) over the bare batched simulation.

Per N of ``--sizes`` (default 4,096 worlds), one paired process (about 6 minutes on a 2-core CPU, 9 with
``--ablations``) compiles these cases of the default ``jaxmor.envs.Locomotion()`` (the shipped quadruped on the
ground, dt = 4 ms, 5 physics steps per control step, PD actions, EM-MOR) and of ``jaxmor.rollout_batch`` doing
the same physics steps on the same worlds (``--ablations`` adds the last two):

* ``env``: ``jax.jit`` of one ``lax.scan`` over K = ``--steps`` control steps of ``jax.vmap(env.step)`` (one vmap
  of all N worlds), random actions in [-1, 1] drawn beforehand, automatic reset on, ``--episode-steps`` small
  enough that every world is reset during the run;
* ``env-chunks``: the same with each control step's worlds run in chunks of ``--jaxmor-chunk`` one after the
  other (``jax.lax.map`` over the chunks of ``jax.vmap(env.step)``), as ``rollout_batch`` chunks its worlds;
* ``bare-vmap``: ``rollout_batch(env.model, sims, n_steps=K * env.substeps, chunk_size=N)`` (one vmap, as the
  env), jitted, returning only the final states; ``sims`` is the ``sim`` field of the env's reset states with
  the actuator PD of the step switched on (``actuator_p_gain`` = ``env.kp``, ``actuator_d_gain`` = ``env.kd``,
  position targets = the standing pose + ``env.action_scale`` times the first control step's random action,
  held for the whole run): the same gains and kind of explicit PD torque, computed by the step instead of by
  the env;
* ``bare-chunks``: the same with chunks of ``--jaxmor-chunk`` (``rollout_batch``'s default, 256);
* ``env-no-reset``: ``env`` with ``auto_reset=False``; ``env-trivial-obs``: ``env`` with the observation
  replaced by zeros (``_observe`` overridden).

Every case is lowered and compiled (timed), called once (warm-up, excluded), then timed ``--repeats`` rounds,
the cases called in the same order in every round, so that a change in the machine's load hits all of them
alike. Every call starts from the same states and actions. World-steps/s = N x K x substeps / seconds per call;
env steps/s = N x K / seconds; the overhead is the ratio of the median times minus 1.
"""

from __future__ import annotations

import statistics

from bench import report
from bench.runner import Scenario, sizes_of

LABELS = {
    "env": "env, one vmap",
    "env-chunks": "env, chunks",
    "bare-vmap": "bare `rollout_batch`, one vmap",
    "bare-chunks": "bare `rollout_batch`, chunks",
    "env-no-reset": "env, `auto_reset=False`",
    "env-trivial-obs": "env, zero observation",
}
BASELINE = "bare-vmap"


def add_options(g) -> None:
    g.add_argument("--episode-steps", type=int, default=3, help="the env's time limit (default 3: resets happen)")
    g.add_argument("--seed", type=int, default=0, help="of the reset keys and the actions (default 0)")
    g.add_argument("--ablations", action="store_true", help="also time auto_reset=False and a zero observation")


def plan(args, engines: list[str]) -> list[dict]:
    return [
        {
            "engine": "jaxmor",
            "engine_label": "envs/paired",
            "kind": "paired",
            "n_worlds": n,
            "control_steps": args.steps,
            "episode_steps": args.episode_steps,
            "chunk": args.jaxmor_chunk,
            "seed": args.seed,
            "ablations": bool(args.ablations),
            "rounds": args.repeats,
        }
        for n in sizes_of(args)
    ]


# ---------------------------------------------------------------------------------------------- the case


def run_paired(spec: dict) -> dict:
    """Build the env and the cases, and time them by the paired protocol (the same order every round)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxmor
    from bench import case
    from jaxmor.envs import Locomotion

    class ZeroObservation(Locomotion):
        def _observe(self, sim, data):
            return jnp.zeros((self.observation_size,), sim.u.dtype)

    n, k, chunk, seed = spec["n_worlds"], spec["control_steps"], spec["chunk"], spec["seed"]
    episode_steps = spec["episode_steps"]
    env = Locomotion(episode_steps=episode_steps)
    envs = {"env": env, "env-chunks": env}
    if spec["ablations"]:
        envs["env-no-reset"] = Locomotion(episode_steps=episode_steps, auto_reset=False)
        envs["env-trivial-obs"] = ZeroObservation(episode_steps=episode_steps)
    physics_steps = k * env.substeps
    dtype = env.model.body_mass.dtype

    keys = jax.random.split(jax.random.PRNGKey(seed), n)
    states = jax.jit(jax.vmap(env.reset))(keys)
    actions = jax.random.uniform(jax.random.PRNGKey(seed + 1), (k, n, env.action_size), dtype, -1.0, 1.0)
    na = env.action_size
    sims = states.sim.replace(
        actuator_p_gain=jnp.full((n, na), env.kp, dtype),
        actuator_d_gain=jnp.full((n, na), env.kd, dtype),
        actuator_position_target=jnp.asarray(env.standing_joints, dtype) + env.action_scale * actions[0],
        actuator_velocity_target=jnp.zeros((n, na), dtype),
    )
    start = {name: states if e is env else jax.jit(jax.vmap(e.reset))(keys) for name, e in envs.items()}

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

    def check_of(name):
        def check(out):
            final = out[0].sim if name.startswith("env") else out
            c = {"base_z_mean": float(jnp.mean(final.q[:, 2])), "nonfinite_worlds": int(jnp.sum(final.nonfinite))}
            if name.startswith("env"):
                done, truncated = (int(jnp.sum(x)) for x in out[1])
                # episodes_ended: the steps' sum of `done` (without auto_reset a world stays done once it ended).
                resets = done if envs[name].auto_reset else 0
                c.update(episodes_ended=done, resets=resets, truncations=truncated, terminations=done - truncated)
            return c

        return check

    cases = {
        "env": (env_run(env, 0), (start["env"], actions), n),
        "env-chunks": (env_run(env, chunk), (start["env-chunks"], actions), min(chunk, n)),
        "bare-vmap": (bare_run(n), (sims,), n),
        "bare-chunks": (bare_run(chunk), (sims,), min(chunk, n)),
    }
    for name in ("env-no-reset", "env-trivial-obs"):
        if name in envs:
            cases[name] = (env_run(envs[name], 0), (start[name], actions), n)

    def builder(name):
        fn, args, width = cases[name]
        e = envs.get(name, env)
        settings = {
            "chunk": width,
            "motor_model": e.motor_model,
            "action_mode": e.action_mode,
            "kp": np.asarray(e.kp).tolist(),  # [Nm/rad], per joint (from the motors) or one value
            "kd": np.asarray(e.kd).tolist(),
            "solver_iterations": int(e.model.opt.solver_iterations),
        }
        return lambda: case.jax_program(fn, args, check_of(name), settings)

    result = case.run_paired({name: builder(name) for name in cases}, spec, BASELINE, rotate=False)
    return {
        **result,
        "n_steps": physics_steps,  # world-steps per call: N x n_steps
        "substeps": env.substeps,
        "dt": float(env.model.opt.timestep),
        "dtype": str(dtype),
    }


RUNNERS = {("jaxmor", "paired"): run_paired}


# ---------------------------------------------------------------------------------------------- tables


def cases_of(records: list[dict]) -> list[dict]:
    """One dict per env case: the runner's paired records (one per N, the cases under ``paired``) or the per-case
    records that ``python -m bench.envs`` wrote before the runner had one protocol (kind ``env-overhead``)."""
    out = []
    for r in records:
        if r.get("kind") == "env-overhead":
            out.append(r)
            continue
        if not report.ok(r):
            continue
        for name, p in r["paired"].items():
            ts = sorted(p["times_s"])
            med = statistics.median(ts)
            work = r["n_worlds"] * r["n_steps"]
            out.append(
                {
                    "case": name,
                    "label": LABELS[name],
                    "n_worlds": r["n_worlds"],
                    "control_steps": r["control_steps"],
                    "substeps": r["substeps"],
                    "physics_steps": r["n_steps"],
                    "dt": r["dt"],
                    "episode_steps": r["episode_steps"],
                    "dtype": r["dtype"],
                    "chunk": p["settings"]["chunk"],
                    "compile_s": p["compile_s"],
                    "times_s": p["times_s"],
                    "median_s": med,
                    "min_s": ts[0],
                    "max_s": ts[-1],
                    "wsps_median": work / med,
                    "wsps_min": work / ts[-1],
                    "wsps_max": work / ts[0],
                    "env_sps_median": r["n_worlds"] * r["control_steps"] / med,
                    "check": p["check"],
                }
            )
    return out


def _overhead(a: dict, b: dict) -> str:
    """``a``'s median time over ``b``'s, minus 1, in percent; with the range of the round-by-round ratios."""
    med = a["median_s"] / b["median_s"] - 1
    paired = sorted(x / y - 1 for x, y in zip(a["times_s"], b["times_s"], strict=True))
    return f"{med:+.0%} ({paired[0]:+.0%} to {paired[-1]:+.0%})"


def _table(records: list[dict]) -> list[str]:
    r0 = records[0]
    by = {r["case"]: r for r in records}
    lines = [
        f"N = {r0['n_worlds']:,} worlds, K = {r0['control_steps']} control steps of {r0['substeps']} physics steps "
        f"(dt = {r0['dt'] * 1e3:g} ms), {r0['physics_steps']} physics steps per call, {r0['dtype']}; "
        f"`episode_steps={r0['episode_steps']}`; {len(r0['times_s'])} timed calls per case.",
        "",
        "| case | worlds per vmap | world-steps/s, median (min-max) | env steps/s | s per call, median (min-max) "
        "| compile [s] |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['label']} | {r['chunk']:,} | {r['wsps_median']:,.0f} ({r['wsps_min']:,.0f}-{r['wsps_max']:,.0f}) "
            f"| {r['env_sps_median']:,.0f} | {r['median_s']:.2f} ({r['min_s']:.2f}-{r['max_s']:.2f}) "
            f"| {r['compile_s']:.1f} |"
        )
    lines += [
        "",
        "Overhead: the env's median time over the bare run's, minus 1 (in brackets: the range of the ratios of the "
        "calls of the same round).",
        "",
        "| | against bare, one vmap | against bare, chunks |",
        "|---|---|---|",
    ]
    for name in ("env", "env-chunks", "env-no-reset", "env-trivial-obs"):
        if name in by:
            lines.append(
                f"| {by[name]['label']} | {_overhead(by[name], by['bare-vmap'])} "
                f"| {_overhead(by[name], by['bare-chunks'])} |"
            )
    c = by["env"]["check"]
    lines += [
        "",
        f"Resets during the env's timed call: {c['resets']:,} ({c['truncations']:,} at the time limit, "
        f"{c['terminations']:,} failures) over {r0['n_worlds']:,} worlds x {r0['control_steps']} control steps; "
        "non-finite worlds at the end: "
        + ", ".join(f"{r['case']} {r['check']['nonfinite_worlds']}" for r in records)
        + ".",
    ]
    return lines


def render(records: list[dict]) -> str:
    """Per N: the cases' throughput, the env's overhead over the bare runs, and the resets."""
    cases = cases_of(records)
    failed = [
        f"| {r['n_worlds']:,} | {r.get('status')}: {r.get('error', '')} |"
        for r in records
        if r.get("status") not in (None, "ok")
    ]
    lines: list[str] = []
    for n in sorted({c["n_worlds"] for c in cases}):
        lines += ([""] if lines else []) + _table([c for c in cases if c["n_worlds"] == n])
    if failed:
        lines += ["", "| N | not measured |", "|---|---|", *failed]
    return "\n".join(lines + report.retry_footnote(records))


SCENARIO = Scenario(
    name="envs",
    summary="the overhead of jaxmor.envs.Locomotion over bare rollout_batch, N = 4,096 (6-9 min on 2 cores)",
    description=__doc__,
    results_prefix="envs-",
    table="envs",
    defaults={
        "sizes": "4096",
        "steps": 6,
        "repeats": 5,
        "case_budget": 0.0,
        "case_timeout": 1800.0,
        "engines": "jaxmor",
        "engine_choices": ("jaxmor",),
    },
    plan=plan,
    render=render,
    add_options=add_options,
    steps_help="K, control steps per call (each of the env's substeps physics steps)",
)
