"""The cost per step of each motor-dynamics option, jaxmor and MuJoCo's ``dcmotor``.

The quadruped scenario's robot and drop (bench/scenario.py: 12 DC-motor actuators, open-loop torques, dt 2 ms,
``--steps`` steps per call) with its motors made (a) quasi-static (as shipped), (b) + a first-order thermal
model, (c) + a two-node thermal model with a derate limit, (d) + a winding inductance, (e) + cogging, (f) + LuGre
friction, (g) all of them (the two-node thermal model), on every actuator. jaxmor: :func:`jaxmor.with_actuators`
with :class:`jaxmor.ActuatorDefinition` ``.replace(...)``, then ``jaxmor.rollout_batch``. MuJoCo:
bench/scenario.py's ``MjSpec`` of the same robot with its 12 ``motor`` actuators turned into ``dcmotor`` ones
(``MjsActuator.set_to_dcmotor``: the same R, Kt, Ke and peak torque, ``input="ff"``: a torque command with
back-EMF compensation clamped to the bus voltage, i.e. jaxmor's motor region) with the same options where MuJoCo
has them (its thermal model has one node and no limit: no case (c)), stepped by ``mujoco.rollout`` on the calling
thread. MJX has no ``dcmotor`` (``mjx.put_model`` refuses ``mjBIAS_DCMOTOR``): no MJX column.

Cases: one process per engine, N and option (the single-case protocol), then per engine and N one paired process
that compiles every option and interleaves their calls (``--paired-rounds``, the order rotated per round): on a
shared machine whose speed drifts from process to process, its per-round ratios are the reading. jaxmor's records
also hold XLA's static cost analysis of the program.
"""

from __future__ import annotations

import time

import numpy as np

from bench import report
from bench import scenario as sc
from bench.runner import Scenario, sizes_of

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

# The motors' constants (rotor side), the quadruped's (robots/quadruped/actuators/): the MuJoCo dcmotors
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
    gears = sc.urdf_gears()
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
    gears = sc.urdf_gears()
    return np.array([gears[name] for name in sc.JOINTS])


# ---------------------------------------------------------------------------------------------- cases


def _jaxmor_program(spec: dict, option: str):
    """jaxmor.rollout_batch of the quadruped with the option's motors, compiled (``lower`` + ``compile``, timed)."""
    import jax
    import jax.numpy as jnp

    import jaxmor
    from bench import case
    from jaxmor.state import set_motor_temperature

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    base = sc.jaxmor_model(dt)
    model = jaxmor.with_actuators(base, jaxmor_definitions(jaxmor.get_actuators(base), option))
    states = sc.jaxmor_states(model, n)  # init_state of the new model: its motors' state
    if "thermal-2node" in _features(option):
        states = jax.vmap(lambda s: set_motor_temperature(model, s, *HOT_START))(states)
    controls = jnp.asarray(sc.controls(n, steps, dt), model.body_mass.dtype)
    chunk = int(spec.get("chunk") or n)
    fn = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=chunk)[0])

    def check(final):
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
    program = case.jax_program(fn, (states, controls), check, settings)
    program.settings["xla_cost"] = _xla_cost(program.compiled)
    return program


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


def _mujoco_program(spec: dict, option: str):
    """``mujoco.rollout`` of the quadruped with the option's dcmotors (``MjSpec.compile`` timed)."""
    from bench import case

    n, steps, dt = spec["n_worlds"], spec["n_steps"], spec["dt"]
    built = mujoco_spec(option, dt)
    t = time.perf_counter()
    model = built.compile()
    compile_s = time.perf_counter() - t
    initial = case.mujoco_states(model, np.asarray(spec["qpos0"]), n)
    controls = sc.controls(n, steps, dt) / _gears()  # the motor torques, rotor side
    return case.mujoco_program(model, initial, controls, int(spec["nthread"]), compile_s, {"option": option})


def _builders(build, spec: dict) -> dict:
    return {o: (lambda o=o: build(spec, o)) for o in spec["options"]}


def run_jaxmor(spec: dict) -> dict:
    from bench import case

    return case.run_single(_jaxmor_program(spec, spec["option"]), spec)


def run_mujoco(spec: dict) -> dict:
    from bench import case

    return case.run_single(_mujoco_program(spec, spec["option"]), spec)


def run_jaxmor_paired(spec: dict) -> dict:
    from bench import case

    return case.run_paired(_builders(_jaxmor_program, spec), spec, BASELINE)


def run_mujoco_paired(spec: dict) -> dict:
    from bench import case

    return case.run_paired(_builders(_mujoco_program, spec), spec, BASELINE)


RUNNERS = {
    ("jaxmor", "forward"): run_jaxmor,
    ("mujoco", "forward"): run_mujoco,
    ("jaxmor", "paired"): run_jaxmor_paired,
    ("mujoco", "paired"): run_mujoco_paired,
}


# ---------------------------------------------------------------------------------------------- plan


def add_options(g) -> None:
    g.add_argument(
        "--options",
        default=",".join(OPTIONS),
        help=f"comma-separated, of {', '.join(OPTIONS)} (default all)",
    )
    g.add_argument("--mujoco-repeats", type=int, default=20, help="MuJoCo's timed calls per case (default 20)")
    g.add_argument(
        "--paired-rounds",
        type=int,
        default=5,
        help="jaxmor's paired case per N: every option compiled in one process, calls interleaved, this many "
        "rounds (0: none; default 5)",
    )
    g.add_argument("--mujoco-paired-rounds", type=int, default=20, help="MuJoCo's paired rounds (default 20)")


def plan(args, engines: list[str]) -> list[dict]:
    options = [x.strip() for x in args.options.split(",") if x.strip()]
    for option in options:
        _features(option)
    common = {"kind": "forward", "n_steps": args.steps, "dt": args.dt, "min_repeats": args.min_repeats}
    common["budget_s"] = args.case_budget
    cases = []
    for engine in engines:
        for n in sizes_of(args):
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
    return cases


def prepare(args, engines: list[str]) -> dict:
    """The start pose for the MuJoCo cases (their processes import no jaxmor)."""
    return {"qpos0": sc.standing_qpos_subprocess()} if "mujoco" in engines else {}


# ---------------------------------------------------------------------------------------------- reporting


_ok = report.ok


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
        return (
            f"{report.fmt_rate(r['wsps_median'])} ({report.fmt_rate(r['wsps_min'])}-{report.fmt_rate(r['wsps_max'])})"
        )

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
    return "\n".join(lines + report.retry_footnote(records))


SCENARIO = Scenario(
    name="motor-dynamics",
    summary="the cost per step of each motor-dynamics option, jaxmor and MuJoCo's dcmotor (10-25 min on 2 cores)",
    description=__doc__,
    results_prefix="motor-dynamics-",
    table="motor-dynamics",
    defaults={
        "sizes": "1,256",
        "steps": 100,
        "dt": 0.002,
        "repeats": 5,
        "case_budget": 40.0,
        "case_timeout": 900.0,
        "engines": "jaxmor,mujoco",
        "engine_choices": ("jaxmor", "mujoco"),
    },
    plan=plan,
    render=render,
    add_options=add_options,
    prepare=prepare,
)
