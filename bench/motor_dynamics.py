"""The cost per step of each motor-dynamics option, jaxmor and MuJoCo's ``dcmotor``: ``python -m bench.motor_dynamics``.

The shipped quadruped of bench/run.py (12 DC-motor actuators, the same drop onto the ground, the same open-loop
torques, dt 2 ms, ``--steps`` steps per call) with its motors made (a) quasi-static (as shipped), (b) + a
first-order thermal model, (c) + a two-node thermal model with a derate limit, (d) + a winding inductance,
(e) + cogging, (f) + LuGre friction, (g) all of them (the two-node thermal model), on every actuator. jaxmor:
:func:`jaxmor.with_actuators` with :class:`jaxmor.ActuatorDefinition` ``.replace(...)``, then
``jaxmor.rollout_batch``. MuJoCo: bench/scenario.py's ``MjSpec`` of the same robot with its 12 ``motor``
actuators turned into ``dcmotor`` ones (``MjsActuator.set_to_dcmotor``: the same R, Kt, Ke and peak torque,
``input="ff"``: a torque command with back-EMF compensation clamped to the bus voltage, i.e. jaxmor's motor
region) with the same options where MuJoCo has them (its thermal model has one node and no limit: no case (c)),
stepped by ``mujoco.rollout`` on the calling thread. MJX has no ``dcmotor`` (``mjx.put_model`` refuses
``mjBIAS_DCMOTOR``): no MJX column.

The protocol is bench/run.py's, reused: a fresh process per case (``python -m bench.motor_dynamics --case SPEC``
runs :func:`bench.case.main` with this module's runners), compile timed apart, one warm-up call, timed calls
blocked on their outputs, hang detection and a rerun with ``RETRY_FLAG``, JSON lines in
``bench/results/motor-dynamics-<UTC date>.jsonl``. Then, per engine and N, one paired process compiles every option
and interleaves their calls (``--paired-rounds``): on a shared machine whose speed drifts from process to process,
its per-round ratios are the reading. jaxmor's records also hold XLA's static cost analysis of the program.
See bench/README.md ("Motor dynamics: the cost of each option").
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

import numpy as np

from bench import case, run
from bench import scenario as sc

#: The options, in table order: (label, what it adds to the quasi-static motor).
OPTIONS = {
    "quasi-static": "(a) quasi-static, as shipped",
    "thermal": "(b) + thermal, first order",
    "thermal-2node": "(c) + thermal, two nodes, derate limit",
    "inductance": "(d) + inductance",
    "cogging": "(e) + cogging",
    "lugre": "(f) + LuGre friction",
    "all": "(g) all: (c) + (d) + (e) + (f)",
}
BASELINE = "quasi-static"

# The motors' constants (rotor side), the quadruped's (jaxmor/robots/quadruped/actuators/): the MuJoCo dcmotors
# are given the same.
RESISTANCE, TORQUE_CONSTANT, BACK_EMF_CONSTANT, BUS_VOLTAGE, PEAK_TORQUE = 0.4, 0.1, 0.1, 24.0, 3.0
# The options' parameters, the same on every actuator. Thermal: R_th [K/W], C_w [J/K] (time constant 10 s),
# copper's alpha; two nodes: winding-housing 1 K/W, housing-ambient 2 K/W, C_h 50 J/K, derating from 80 degC to
# zero at 100 degC, the windings starting at HOT_START (winding, housing) [degC] so that the limit acts.
THERMAL_1 = {"thermal_resistance": 2.0, "heat_capacity": 5.0, "resistance_tempco": 0.00393}
THERMAL_2 = {
    "thermal_resistance": 1.0,
    "heat_capacity": 5.0,
    "housing_thermal_resistance": 2.0,
    "housing_heat_capacity": 50.0,
    "resistance_tempco": 0.00393,
    "max_temperature": 100.0,
    "limit_start": 80.0,
    "limit": "derate",
}
HOT_START = (92.0, 60.0)
AMBIENT = 25.0
INDUCTANCE = 1e-3  # [H]: L / R = 2.5 ms, about the time step
COGGING = (0.03, 12.0, 0.0)  # amplitude [Nm, rotor side: 1% of the peak torque], periods per revolution, phase
# LuGre at the output (joint side): sigma0 [Nm/rad], sigma1 [Nm s/rad], F_C, F_S [Nm], v_S [rad/s].
LUGRE = (500.0, 2.0, 0.3, 0.5, 0.1)

TABLE_START, TABLE_END = "<!-- motor-dynamics-table:start -->", "<!-- motor-dynamics-table:end -->"


def _features(option: str) -> set[str]:
    if option not in OPTIONS:
        raise ValueError(f"unknown option {option!r} (choose from {', '.join(OPTIONS)})")
    if option == "all":
        return {"thermal-2node", "inductance", "cogging", "lugre"}
    return set() if option == BASELINE else {option}


def jaxmor_definitions(definitions: list, option: str) -> list:
    """The actuator definitions with the option's features (``ActuatorDefinition.replace``)."""
    from jaxmor.actuation.motor_dynamics import CoggingModel, LugreModel, ThermalModel

    features = _features(option)
    extra: dict = {}
    if "thermal" in features:
        extra["thermal"] = ThermalModel(**THERMAL_1, ambient_temperature=AMBIENT, reference_temperature=AMBIENT)
    if "thermal-2node" in features:
        extra["thermal"] = ThermalModel(**THERMAL_2, ambient_temperature=AMBIENT, reference_temperature=AMBIENT)
    if "inductance" in features:
        extra["inductance"] = INDUCTANCE
    if "cogging" in features:
        extra["cogging"] = CoggingModel(*COGGING)
    if "lugre" in features:
        extra["lugre"] = LugreModel(*LUGRE)
    return [d.replace(**extra) for d in definitions]


def mujoco_unavailable(option: str) -> str | None:
    """Why MuJoCo's dcmotor cannot model the option, or ``None``."""
    if option == "thermal-2node":
        return "MuJoCo's dcmotor thermal model has one node and no temperature limit"
    return None


def mujoco_dcmotor(option: str, gear: float) -> dict | None:
    """``MjsActuator.set_to_dcmotor`` arguments of the option for an actuator of that gear ratio; ``None`` where
    MuJoCo has no such model (a two-node network, a temperature limit). LuGre moved to the rotor side (MuJoCo's
    acts on the actuator's length, the motor angle): stiffness and damping / G^2, forces / G, speed * G."""
    import mujoco

    features = _features(option)
    if mujoco_unavailable(option):
        return None
    args = {
        "motorconst": [TORQUE_CONSTANT, BACK_EMF_CONSTANT],
        "resistance": RESISTANCE,
        "saturation": [PEAK_TORQUE, 0.0, 0.0],
        "controller": [0.0, 0.0, 0.0, 0.0, 0.0, BUS_VOLTAGE],  # Vmax: the drive voltage clamped to the bus
        "ctrlspec": int(mujoco.mjtCtrlInput.mjINPUT_FF),
    }
    if features & {"thermal", "thermal-2node"}:  # "all": the one node MuJoCo has
        args["thermal"] = [THERMAL_1["thermal_resistance"], THERMAL_1["heat_capacity"], 0.0]
        args["thermal"] += [THERMAL_1["resistance_tempco"], AMBIENT, AMBIENT]
    if "inductance" in features:
        args["inductance"] = [INDUCTANCE, 0.0]
    if "cogging" in features:
        args["cogging"] = list(COGGING)
    if "lugre" in features:
        s0, s1, fc, fs, vs = LUGRE
        args["lugre"] = [s0 / gear**2, s1 / gear**2, fc / gear, fs / gear, vs * gear]
    return args


def mujoco_spec(option: str, dt: float):
    """bench/scenario.py's MjSpec of the quadruped with its ``motor`` actuators turned into ``dcmotor`` ones; the
    ctrl is the motor torque command [Nm, rotor side], limited to the peak torque."""
    spec = sc.mujoco_spec(dt)
    gears = sc._urdf_gears()
    for act in spec.actuators:
        gear = gears[act.name]
        args = mujoco_dcmotor(option, gear)
        if args is None:
            raise ValueError(mujoco_unavailable(option))
        error = act.set_to_dcmotor(**args)
        if error:
            raise ValueError(f"set_to_dcmotor({act.name}): {error}")
        act.gear = [gear, 0, 0, 0, 0, 0]
        act.ctrllimited = True
        act.ctrlrange = [-PEAK_TORQUE, PEAK_TORQUE]
    return spec


def _gears() -> np.ndarray:
    gears = sc._urdf_gears()
    return np.array([gears[name] for name in sc.JOINTS])


# ---------------------------------------------------------------------------------------------- cases


class _Program:
    """One option's compiled program: ``call()`` runs it once, blocked on its outputs; ``check()`` reads the last
    call's outputs; ``compile_s``; ``settings``."""

    def __init__(self, call, check, compile_s: float, settings: dict, timing: dict | None = None):
        self.call, self.check, self.compile_s, self.settings, self.timing = call, check, compile_s, settings, timing


def _jaxmor_program(spec: dict, option: str) -> _Program:
    """jaxmor.rollout_batch of the quadruped with the option's motors, compiled (``lower`` + ``compile``, timed)."""
    import jax
    import jax.numpy as jnp

    import jaxmor
    from jaxmor.state import set_motor_temperature

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    base = case._jaxmor_model(dt)
    model = jaxmor.with_actuators(base, jaxmor_definitions(jaxmor.get_actuators(base), option))
    states = case._jaxmor_states(model, n)  # init_state of the new model: its motors' state
    if "thermal-2node" in _features(option):
        states = jax.vmap(lambda s: set_motor_temperature(model, s, *HOT_START))(states)
    controls = jnp.asarray(sc.controls(n, steps, dt), model.body_mass.dtype)
    jax.block_until_ready((states, controls))
    chunk = int(spec.get("chunk") or n)
    fn = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=chunk)[0])
    t = time.perf_counter()
    lowered = fn.lower(states, controls)
    lower_s = time.perf_counter() - t
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t
    out = {}

    def call():
        out["final"] = jax.block_until_ready(compiled(states, controls))

    def check():
        final = out["final"]
        ms, act = final.motor_state, final.actuator_state
        return {
            "base_z_mean": float(jnp.mean(final.q[:, 2])),
            "nonfinite_worlds": int(jnp.sum(final.nonfinite)),
            "winding_temperature_max": float(jnp.max(ms.winding_temperature)),
            "derating_min": float(jnp.min(act.derating)),
            "current_abs_max": float(jnp.max(jnp.abs(ms.current))),
            "bristle_abs_max": float(jnp.max(jnp.abs(ms.bristle))),
        }

    dyn = model.actuators.dynamics
    settings = {
        "option": option,
        "features": {k: sum(getattr(dyn, k)) for k in ("thermal", "housing", "cut", "inductive", "cogging", "lugre")},
        "chunk": chunk,
        "solver_iterations": int(model.opt.solver_iterations),
        "dtype": str(model.body_mass.dtype),
    }
    settings["xla_cost"] = _xla_cost(compiled)
    timing = {"lower_s": lower_s, "xla_compile_s": compile_s - lower_s}
    return _Program(call, check, compile_s, settings, timing)


def _xla_cost(compiled) -> dict:
    """XLA's static cost analysis of a compiled program (a loop's body counted once, i.e. about one step), and the
    size of its optimized HLO: a measure of the added work that the machine's load does not blur."""
    try:
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        text = compiled.as_text()
    except Exception as exc:  # noqa: BLE001 - a backend without cost analysis
        return {"error": f"{type(exc).__name__}: {exc}"}
    out = {k.replace(" ", "_"): float(cost[k]) for k in ("flops", "transcendentals", "bytes accessed") if k in cost}
    out["hlo_lines"] = text.count("\n")
    return out


def _mujoco_program(spec: dict, option: str) -> _Program:
    """``mujoco.rollout`` of the quadruped with the option's dcmotors (``MjSpec.compile`` timed)."""
    import mujoco
    from mujoco import rollout

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    nthread = int(spec["nthread"])
    built = mujoco_spec(option, dt)
    t = time.perf_counter()
    model = built.compile()
    compile_s = time.perf_counter() - t
    initial = case.mujoco_standing_states(model, n)
    controls = np.ascontiguousarray(sc.controls(n, steps, dt) / _gears())  # the motor torques, rotor side
    states = np.empty((n, steps, initial.shape[1]))
    sensordata = np.empty((n, steps, model.nsensordata))
    datas = [mujoco.MjData(model) for _ in range(max(nthread, 1))]
    runner = rollout.Rollout(nthread=nthread)

    def call():
        runner.rollout(model, datas, initial, controls, state=states, sensordata=sensordata, nstep=steps)

    def check():
        final = states[:, -1]  # FULLPHYSICS: time, qpos, qvel, act, ...
        act = final[:, 1 + model.nq + model.nv : 1 + model.nq + model.nv + model.na]
        return {
            "base_z_mean": float(np.mean(final[:, 1 + 2])),
            "nonfinite_worlds": int(np.sum(~np.all(np.isfinite(final), axis=1))),
            "act_abs_max": float(np.max(np.abs(act))) if model.na else 0.0,
        }

    settings = {
        "option": option,
        "nthread": nthread,
        "na": int(model.na),
        "integrator": int(model.opt.integrator),
        "solver": int(model.opt.solver),
        "iterations": int(model.opt.iterations),
        "dtype": "float64",
    }
    program = _Program(call, check, compile_s, settings)
    program.close = runner.close
    return program


def _run_one(build, spec: dict) -> dict:
    """One option in this process, bench.case's protocol: build and compile, a warm-up call, the timed calls."""
    program = build(spec, spec["option"])
    baseline = case._current_rss_mb()
    try:
        warm, times = case._time_calls(program.call, spec)
    finally:
        getattr(program, "close", lambda: None)()
    return {
        "compile_s": program.compile_s,
        **(program.timing or {}),
        "warmup_s": warm,
        "times_s": times,
        "baseline_rss_mb": baseline,
        "check": program.check(),
        "settings": program.settings,
        **case._jax_device_memory(),
    }


def _run_paired(build, spec: dict) -> dict:
    """Every option of ``spec["options"]`` in this one process, their calls interleaved: each of ``rounds`` rounds
    calls every option once, in an order rotated by one from round to round, after one warm-up call each. A
    round's ratio is an option's time over the baseline's of the same round, so the machine's drift (other
    processes, its speed) cancels. The record's own times, compile time and check are the baseline's."""
    options = list(spec["options"])
    programs = {}
    try:
        for option in options:
            case.phase(f"build and compile {option}")
            programs[option] = build(spec, option)
        for option in options:
            case.phase(f"warm-up call {option}")
            programs[option].call()
        times = {o: [] for o in options}
        for r in range(int(spec["rounds"])):
            for option in options[r % len(options) :] + options[: r % len(options)]:
                case.phase(f"round {r + 1}, {option}")
                t = time.perf_counter()
                programs[option].call()
                times[option].append(time.perf_counter() - t)
    finally:
        for p in programs.values():
            getattr(p, "close", lambda: None)()
    base = times[BASELINE]
    per_option = {}
    for option in options:
        ratios = sorted(t / b for t, b in zip(times[option], base, strict=True))
        per_option[option] = {
            "compile_s": programs[option].compile_s,
            "times_s": times[option],
            "median_s": statistics.median(times[option]),
            "ratio_median": statistics.median(ratios),
            "ratio_min": ratios[0],
            "ratio_max": ratios[-1],
            "ratio_q1": statistics.quantiles(ratios, n=4)[0] if len(ratios) >= 4 else None,
            "ratio_q3": statistics.quantiles(ratios, n=4)[2] if len(ratios) >= 4 else None,
            "check": programs[option].check(),
            "settings": programs[option].settings,
        }
    return {
        "compile_s": programs[BASELINE].compile_s,
        "times_s": base,
        "check": per_option[BASELINE]["check"],
        "paired": per_option,
        "settings": {"option": BASELINE, "options": options, "rounds": int(spec["rounds"])},
        **case._jax_device_memory(),
    }


def run_jaxmor(spec: dict) -> dict:
    return _run_one(_jaxmor_program, spec)


def run_mujoco(spec: dict) -> dict:
    return _run_one(_mujoco_program, spec)


def run_jaxmor_paired(spec: dict) -> dict:
    return _run_paired(_jaxmor_program, spec)


def run_mujoco_paired(spec: dict) -> dict:
    return _run_paired(_mujoco_program, spec)


RUNNERS = {
    ("jaxmor", "forward"): run_jaxmor,
    ("mujoco", "forward"): run_mujoco,
    ("jaxmor", "paired"): run_jaxmor_paired,
    ("mujoco", "paired"): run_mujoco_paired,
}


# ---------------------------------------------------------------------------------------------- runner


def plan_cases(args) -> list[dict]:
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    options = [x.strip() for x in args.options.split(",") if x.strip()]
    for option in options:
        _features(option)
    engines = [x.strip() for x in args.engines.split(",") if x.strip()]
    available = run.engine_availability(engines)
    common = {"kind": "forward", "n_steps": args.steps, "dt": args.dt, "min_repeats": args.min_repeats}
    common["budget_s"] = args.case_budget
    cases = []
    for engine in engines:
        if engine not in ("jaxmor", "mujoco"):
            raise SystemExit(f"unknown engine {engine!r} (choose from jaxmor, mujoco; MJX has no dcmotor)")
        for n in sizes:
            for option in options:
                c = {**common, "engine": engine, "n_worlds": n, "option": option}
                if engine == "jaxmor":
                    c.update(engine_label=f"jaxmor/{option}", repeats=args.repeats, chunk=args.jaxmor_chunk)
                else:
                    c.update(engine_label=f"mujoco-1t/{option}", repeats=args.mujoco_repeats, nthread=0)
                    why = mujoco_unavailable(option)
                    if why is not None:
                        c.update(status="skipped", error=why)
                cases.append(c)
            paired = [o for o in options if engine == "jaxmor" or mujoco_unavailable(o) is None]
            rounds = args.paired_rounds if engine == "jaxmor" else args.mujoco_paired_rounds
            if rounds > 0 and BASELINE in paired and len(paired) > 1:
                label = "jaxmor/paired" if engine == "jaxmor" else "mujoco-1t/paired"
                c = {**common, "kind": "paired", "engine": engine, "engine_label": label, "n_worlds": n}
                c.update(options=paired, rounds=rounds)
                c.update({"chunk": args.jaxmor_chunk} if engine == "jaxmor" else {"nthread": 0})
                cases.append(c)
    for c in cases:
        if available.get(c["engine"]) is not None and c.get("status") is None:
            c.update(status="skipped", error=f"{c['engine']} unavailable: {available[c['engine']]}")
    return cases


def measure(args) -> tuple[list[dict], Path]:
    now = _dt.datetime.now(_dt.timezone.utc)
    out = Path(args.out) if args.out else run.BENCH_DIR / "results" / f"motor-dynamics-{now:%Y-%m-%d}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    run_id = f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    machine, vers, device = run.machine_info(), run.versions(), run.device_info()
    where = f"{machine['cpu']} ({machine['cores']} cores), {device.get('backend')}"
    print(f"motor-dynamics bench {run_id}: {where}; -> {out}", flush=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(run.ROOT), env.get("PYTHONPATH", "")) if x)
    cases = plan_cases(args)
    context = {"run_id": run_id, "machine": machine, "device": device, "versions": vers}
    extra = {"scenario": "motor-dynamics"}
    records = run.run_cases(cases, args, env, out, context, ("-m", "bench.motor_dynamics", "--case"), extra)
    return records, out


# ---------------------------------------------------------------------------------------------- reporting


def _ok(r: dict | None) -> bool:
    return r is not None and r.get("status") == "ok"


def render(records: list[dict]) -> str:
    """The throughput table (medians, the cost of each option against (a)), then compile times and checks."""
    forward = [r for r in records if r["kind"] == "forward"]
    by = {(r["engine"], r["n_worlds"], r["option"]): r for r in forward}
    pairs = {(r["engine"], r["n_worlds"]): r for r in records if r["kind"] == "paired"}
    sizes = sorted({r["n_worlds"] for r in records})
    engines = [e for e in ("jaxmor", "mujoco") if any(r["engine"] == e for r in records)]
    options = [o for o in OPTIONS if any(r.get("option") == o or o in r.get("options", ()) for r in records)]
    names = {"jaxmor": "jaxmor", "mujoco": "MuJoCo 1t"}
    steps = records[0]["n_steps"]

    def rate(r):
        if not _ok(r):
            return "-" if r is None else r["status"]
        return f"{run._fmt_rate(r['wsps_median'])} ({run._fmt_rate(r['wsps_min'])}-{run._fmt_rate(r['wsps_max'])})"

    def cost(r, base):
        if not (_ok(r) and _ok(base)):
            return "-"
        return f"{r['median_s'] / base['median_s']:.2f}"

    cols = [(e, n) for e in engines for n in sizes]
    lines = [
        f"World-steps/s, median (min-max) over the timed calls (each call N worlds x {steps} steps), and each "
        "option's cost: its median time per call over the quasi-static motor's (a) in the same column.",
        "",
        "| option | " + " | ".join(f"{names[e]} N = {n:,} | cost" for e, n in cols) + " |",
        "|---|" + "---|---|" * len(cols),
    ]
    for o in options:
        row = [OPTIONS[o]]
        for e, n in cols:
            r, base = by.get((e, n, o)), by.get((e, n, BASELINE))
            row += [rate(r), cost(r, base)]
        lines.append("| " + " | ".join(row) + " |")
    if pairs:
        rounds = sorted({r["rounds"] for r in pairs.values()})
        lines += [
            "",
            "Each option's cost measured paired (one process per engine and N compiles every option, then "
            f"{' or '.join(str(x) for x in rounds)} rounds call each once, the order rotated by one per round): "
            "the median over the rounds of the option's time over the same round's (a) time, and the range "
            "(min-max) of those ratios.",
            "",
            "| option | " + " | ".join(f"{names[e]} N = {n:,}" for e, n in cols) + " |",
            "|---|" + "---|" * len(cols),
        ]
        for o in options:
            cells = []
            for e, n in cols:
                r = pairs.get((e, n))
                if not _ok(r):
                    cells.append("-" if r is None else r["status"])
                elif o not in r["paired"]:
                    cells.append("-")
                else:
                    x = r["paired"][o]
                    cells.append(f"{x['ratio_median']:.2f} ({x['ratio_min']:.2f}-{x['ratio_max']:.2f})")
            lines.append(f"| {OPTIONS[o]} | " + " | ".join(cells) + " |")
    costs = {
        (n, o): by[("jaxmor", n, o)]["settings"].get("xla_cost")
        for n in sizes
        for o in options
        if _ok(by.get(("jaxmor", n, o)))
    }
    if any(c and "flops" in c for c in costs.values()):
        lines += [
            "",
            "jaxmor's compiled program, by XLA's static cost analysis (`compiled.cost_analysis()`: the loop body "
            "counted once, so about one step's work; not blurred by the load): flops, transcendentals, bytes "
            "accessed and lines of optimized HLO, each over (a)'s.",
            "",
            "| option | " + " | ".join(f"N = {n:,}: flops | transc. | bytes | HLO" for n in sizes) + " |",
            "|---|" + "---|---|---|---|" * len(sizes),
        ]
        for o in options:
            cells = []
            for n in sizes:
                c, b0 = costs.get((n, o)), costs.get((n, BASELINE))
                for k in ("flops", "transcendentals", "bytes_accessed", "hlo_lines"):
                    ok = c and b0 and k in c and k in b0 and b0[k]
                    cells.append(f"{c[k] / b0[k]:.3f}" if ok else "-")
            lines.append(f"| {OPTIONS[o]} | " + " | ".join(cells) + " |")
        base_cost = costs.get((min(sizes), BASELINE)) or {}
        if "flops" in base_cost:
            lines += [
                "",
                f"(a) at N = {min(sizes):,}: {base_cost['flops']:,.0f} flops, "
                f"{base_cost.get('transcendentals', 0):,.0f} transcendentals, "
                f"{base_cost.get('bytes_accessed', 0):,.0f} bytes, {base_cost.get('hlo_lines', 0):,.0f} HLO lines.",
            ]
    lines += [
        "",
        "Compile time [s] (jaxmor: `lower` + `compile`; MuJoCo: `MjSpec.compile`) and timed calls of each case; "
        "in brackets, the same program's compile time in the paired process.",
        "",
        "| option | " + " | ".join(f"{names[e]} N = {n:,}" for e, n in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for o in options:
        cells = []
        for e, n in cols:
            r, pair = by.get((e, n, o)), pairs.get((e, n))
            cell = "-" if not _ok(r) else f"{r['compile_s']:.3g}, {r['repeats']} calls"
            if _ok(pair) and o in pair["paired"]:
                cell += f" ({pair['paired'][o]['compile_s']:.3g})"
            cells.append(cell)
        lines.append(f"| {OPTIONS[o]} | " + " | ".join(cells) + " |")
    big = max(sizes)
    lines += [
        "",
        f"Checks at N = {big:,}: mean final base height [m], non-finite worlds; jaxmor's hottest winding [degC], "
        "lowest derating factor, largest |bristle| [rad]; MuJoCo's largest |activation| (current, temperature "
        "rise, bristle: whichever is largest).",
        "",
        "| option | jaxmor z | jaxmor T_w max | derating min | bristle max | MuJoCo z | MuJoCo act max |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in options:
        j, m = by.get(("jaxmor", big, o)), by.get(("mujoco", big, o))
        cells = [OPTIONS[o]]
        if _ok(j):
            c = j["check"]
            z = f"{c['base_z_mean']:.4f}" + (f" ({c['nonfinite_worlds']} non-finite)" if c["nonfinite_worlds"] else "")
            cells += [z, f"{c['winding_temperature_max']:.1f}", f"{c['derating_min']:.2f}"]
            cells.append(f"{c['bristle_abs_max']:.2g}")
        else:
            cells += ["-"] * 4
        if _ok(m):
            c = m["check"]
            z = f"{c['base_z_mean']:.4f}" + (f" ({c['nonfinite_worlds']} non-finite)" if c["nonfinite_worlds"] else "")
            cells += [z, f"{c['act_abs_max']:.3g}"]
        else:
            cells += ["-"] * 2
        lines.append("| " + " | ".join(cells) + " |")
    loads = [r["loadavg_1min_before"] for r in records if r.get("loadavg_1min_before") is not None]
    if loads:
        lines += [
            "",
            f"1-minute load average before the cases: {min(loads):.2f}-{max(loads):.2f} (median "
            f"{statistics.median(loads):.2f}) on {records[0]['machine']['cores']} cores.",
        ]
    if any(run._mark(r) for r in records):
        lines += ["", f"\u2020 rerun after a deadlock with `XLA_FLAGS={run.RETRY_FLAG}`."]
    return "\n".join(lines)


def update_readme(path: Path, records: list[dict], results: Path) -> None:
    r0 = records[0]
    m, v, d = r0["machine"], r0["versions"], r0["device"]
    try:
        rel = results.resolve().relative_to(run.ROOT)
    except ValueError:
        rel = results
    header = (
        f"Run `{r0['run_id']}` ({r0['date'][:10]}), results in `{rel}`. Machine: {m['cpu']}, {m['cores']} cores, "
        f"{m['mem_gib']} GiB; JAX {v['jax']} on {d.get('backend')} ({', '.join(d.get('devices', []))}); "
        f"MuJoCo {v['mujoco']}; jaxmor {v['jaxmor']}"
        + (f" ({v['jaxmor_commit'][:10]})" if v.get("jaxmor_commit") else "")
        + "."
    )
    run.write_block(path, TABLE_START, TABLE_END, f"{header}\n\n{render(records)}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--case"]:  # one case, in this fresh process
        case.RUNNERS.update(RUNNERS)
        return case.main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m bench.motor_dynamics", description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1,256", help="comma-separated world counts (default 1,256)")
    p.add_argument("--options", default=",".join(OPTIONS), help=f"comma-separated: {', '.join(OPTIONS)} (default all)")
    p.add_argument("--engines", default="jaxmor,mujoco", help="comma-separated: jaxmor, mujoco (default both)")
    p.add_argument("--steps", type=int, default=100, help="steps per call (default 100)")
    p.add_argument("--dt", type=float, default=0.002, help="time step [s] (default 0.002)")
    p.add_argument("--repeats", type=int, default=5, help="jaxmor's timed calls per case after one warm-up (default 5)")
    p.add_argument("--mujoco-repeats", type=int, default=20, help="MuJoCo's timed calls per case (default 20)")
    p.add_argument(
        "--paired-rounds",
        type=int,
        default=5,
        help="jaxmor's paired case per N: every option compiled in one process, calls interleaved, this many "
        "rounds (0: none; default 5)",
    )
    p.add_argument("--mujoco-paired-rounds", type=int, default=20, help="MuJoCo's paired rounds (default 20)")
    p.add_argument("--min-repeats", type=int, default=3, help="fewest timed calls under --case-budget (default 3)")
    p.add_argument("--case-budget", type=float, default=40.0, help="seconds of timed calls per case (default 40)")
    p.add_argument("--jaxmor-chunk", type=int, default=256, help="jaxmor.rollout_batch's chunk_size (default 256)")
    p.add_argument("--case-timeout", type=float, default=900.0, help="kill a case after this many seconds")
    p.add_argument("--hang-timeout", type=float, default=120.0, help="kill a case using no CPU this long (0: off)")
    p.add_argument("--no-retry-hung", dest="retry_hung", action="store_false", help="don't rerun a hung case")
    p.add_argument("--out", help="JSON-lines file to append to (default bench/results/motor-dynamics-<UTC date>.jsonl)")
    p.add_argument("--no-readme", action="store_true", help="don't regenerate bench/README.md's motor-dynamics table")
    p.add_argument("--readme", type=Path, default=run.README, help=argparse.SUPPRESS)
    p.add_argument("--from-results", type=Path, metavar="FILE", help="run nothing: tabulate FILE's latest run")
    p.add_argument("--run-id", help="with --from-results: the run to tabulate (default the latest)")
    args = p.parse_args(argv)
    if args.from_results:
        records = [json.loads(x) for x in args.from_results.read_text().splitlines() if x.strip()]
        run_id = args.run_id or records[-1]["run_id"]
        records, out = [r for r in records if r["run_id"] == run_id], args.from_results
        if not records:
            raise SystemExit(f"{args.from_results}: no records of run {run_id}")
    else:
        records, out = measure(args)
    print(render(records))
    if not args.no_readme:
        update_readme(args.readme, records, out)
        print(f"updated {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
