"""The ``jaxmor`` command line.

* ``jaxmor demo [--worlds N] [--seconds S] [--out DIR]``: the shipped quadruped in N parallel worlds
  (:mod:`jaxmor.tools.demo`); prints the device, the compile time, world-steps per second and the shares of
  actuator-steps limited by the voltage and by the peak torque, and writes ``DIR/demo_regions.png``.
* ``jaxmor view PATH [--out PAGE.html]``: one self-contained HTML page (:mod:`jaxmor.viewer`) of a robot file in
  its default pose, or playing a trajectory file (``.npz``, :func:`jaxmor.viewer.save_trajectory`).
  ``jaxmor demo --video FILE.gif`` also writes a video of the demo's first worlds.
* ``jaxmor info ROBOT.urdf [--dt SECONDS]``: joints and actuators as tables, at the motor and at the
  output, and each actuator's time-step bound ``2 I R Kv / (G^2 Kt)``.
* ``jaxmor plot-region ROBOT.urdf [--actuator NAME] [--side motor|joint] -o FILE.png``: the operating
  regions beside the Box-MOR of the URDF's ``<limit effort velocity>``.
* ``jaxmor train [--robot R] [--motor em|box] [--terrain flat|rough] [--worlds N] [--steps N] [--minutes M]
  [--seed S] [--out DIR]``: a locomotion policy trained with PPO (:mod:`jaxmor.train.run`), a live table of its
  progress, checkpoints it resumes from, and the final policy in ``DIR/policy``.
* ``jaxmor play POLICY [--out PAGE.html|VIDEO.gif] [--worlds N] [--seconds S]``: a trained policy evaluated at
  its physics step and at half of it (:mod:`jaxmor.train.play`), and shown.

A robot file whose name ends in ``.xml`` is read as MJCF (:func:`jaxmor.load_mjcf`), any other as URDF; ``view``,
``info`` and ``plot-region`` take ``--package-dir DIR`` (repeatable) for the includes and meshes a file reads from
outside its own folder (the loaders' ``package_dirs``).

Errors (a missing or malformed file, an unknown actuator, matplotlib missing) are one line on stderr and
exit code 2. Compiled programs are kept on disk between runs (:func:`_compile_cache`, ``docs/cli.md``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

import numpy as np

_NO_MATPLOTLIB = "matplotlib is missing: pip install 'jaxmor[plot]'"


def _fmt(value) -> str:
    if isinstance(value, str):
        return value
    return f"{float(value):.6g}"


def _table(headers: list[str], rows: list[list]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    cells = [headers] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(headers))]
    lines = []
    for r in cells:
        parts = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        lines.append("  " + "  ".join(parts).rstrip())
    return "\n".join(lines)


def timestep_bounds(model) -> tuple[np.ndarray, np.ndarray]:
    """Per actuator, the inertia at its joint and the spec's time-step bound ``2 I R Kv / (G^2 Kt)``.

    ``I`` is the driven joint's diagonal entry of the mass matrix at ``model.q_default`` (the reflected
    rotor inertia included): the inertia the joint's motor moves with every other joint held.

    Returns:
        ``(I, bound)``: (na,) float64 arrays [kg m^2 or kg] and [s].
    """
    import jaxmor

    mass = np.asarray(jaxmor.mass_matrix(model, jaxmor.neutral_q(model)), dtype=np.float64)
    act = model.actuators
    index = np.asarray(act.joint_v_index, dtype=np.int64)
    inertia = mass[index, index]
    resistance, kt, kv, gear = (
        np.asarray(x, dtype=np.float64)
        for x in (act.motor.resistance, act.motor.torque_constant, act.motor.velocity_constant, act.gear_ratio)
    )
    bound = 2 * inertia * resistance * kv / (gear**2 * kt)
    return inertia, bound


def _load(path: str, package_dirs: Sequence[str] = ()):
    """The robot of a file: MJCF for a name ending in ``.xml``, else URDF; ``package_dirs``: folders beyond the
    file's own that its includes and meshes may be read from (``--package-dir``)."""
    import jaxmor

    load = jaxmor.load_mjcf if path.lower().endswith(".xml") else jaxmor.load_urdf
    return load(path, package_dirs=tuple(package_dirs))


def _info(path: str, dt: float | None, package_dirs: Sequence[str] = ()) -> int:
    import jaxmor
    from jaxmor.errors import ArgumentError

    if dt is not None and not (math.isfinite(dt) and dt > 0):
        raise ArgumentError(f"--dt must be a positive time step [s], got {dt}")
    model = _load(path, package_dirs)
    print(jaxmor.summary(model))
    _joints_table(model)
    _affine_table(model)
    if not model.na:
        print("\nno DC-motor actuators")
        _drive_table(model)  # the affine actuators' control delays
        return 0
    _actuator_tables(model)
    _dynamics_table(model)
    _timestep_report(model, dt)
    return 0


def _joints_table(model) -> None:
    """The joints' limits, damping, friction and rotor inertia, one row a joint."""
    from jaxmor.types import JointType

    f64 = {name: np.asarray(getattr(model, name), dtype=np.float64) for name in _JOINT_FIELDS}

    print("\njoints (rad, rad/s, Nm; m, m/s, N for prismatic joints):")
    rows = []
    for name, v in zip(model.joint_names, model.joint_u, strict=True):
        kind = JointType(model.body_joint_type[model.dof_body[v]]).name.lower()
        rows.append([name, kind] + [f64[f][v] for f in _JOINT_FIELDS])
    headers = ["name", "type", "lower", "upper", "effort", "velocity", "damping", "friction", "rotor_inertia"]
    print(_table(headers, rows) if rows else "  (none)")


def _actuator_tables(model) -> None:
    """The actuators' torque-speed corners, at the motor and at the output."""
    from jaxmor.actuation.motor import MOTOR_FIELDS

    act = model.actuators
    m = {f: np.asarray(getattr(act.motor, f), dtype=np.float64) for f in MOTOR_FIELDS}
    gear = np.asarray(act.gear_ratio, dtype=np.float64)
    per_volt = m["torque_constant"] / m["resistance"]
    stall = per_volt * m["bus_voltage"]
    damping = per_volt / m["velocity_constant"]
    no_load = m["velocity_constant"] * m["bus_voltage"]
    corner = m["velocity_constant"] * (m["bus_voltage"] - m["peak_torque"] / per_volt)
    overspeed = m["velocity_constant"] * (m["bus_voltage"] + m["peak_torque"] / per_volt)
    ratios = iter(np.asarray(act.coupling_ratio, dtype=np.float64))
    couplings = [",".join(f"{j}*{next(ratios):g}" for j in joints) or "-" for joints in act.couplings]

    print("\nactuators at the motor (rotor side):")
    headers = ["name", "model", "joint", "gear", "couplings", "peak[Nm]", "stall[Nm]", "no-load[rad/s]"]
    headers += ["corner[rad/s]", "overspeed[rad/s]", "back-EMF_damping[Nm*s/rad]"]
    rows = [
        [act.names[a], act.models[a] or "-", act.joints[a], gear[a], couplings[a], m["peak_torque"][a], stall[a]]
        + [no_load[a], corner[a], overspeed[a], damping[a]]
        for a in range(model.na)
    ]
    print(_table(headers, rows))

    print("\nactuators at the output (the driven joint; torque x G, speed / G, damping x G^2; coupled joints at rest):")
    headers = ["name", "peak[Nm]", "stall[Nm]", "no-load[rad/s]", "corner[rad/s]", "overspeed[rad/s]"]
    headers += ["back-EMF_damping[Nm*s/rad]", "output_damping", "output_friction"]
    rows = [
        [act.names[a], m["peak_torque"][a] * gear[a], stall[a] * gear[a], no_load[a] / gear[a], corner[a] / gear[a]]
        + [overspeed[a] / gear[a], damping[a] * gear[a] ** 2]
        + [float(np.asarray(act.output_damping)[a]), float(np.asarray(act.output_friction)[a])]
        for a in range(model.na)
    ]
    print(_table(headers, rows))
    _drive_table(model)
    _backlash_table(model)


def _drive_table(model) -> None:
    """Each actuator's command delay and drive controller, the DC motors' then the affine actuators' (printed when any
    has one, with or without DC motors)."""
    act, ctl = model.actuators, model.actuators.controller
    delay = np.asarray(act.delay)
    if not (delay.any() or ctl.any_active or np.asarray(model.affine.delay).any()):
        return
    h = float(np.asarray(model.opt.timestep))
    print(f"\ndrive train (command delay and drive controller; max_delay {model.max_delay} steps):")
    headers = ["name", "delay[steps]", "delay[s]", "controller", "kp", "ki", "kd", "period[steps]", "rate[Hz]"]
    gains = [np.asarray(getattr(ctl, n), dtype=np.float64) for n in ("p_gain", "i_gain", "d_gain")]
    period = np.asarray(ctl.period)
    rows = []
    for a in range(model.na):
        row = [act.names[a], int(delay[a]), delay[a] * h]
        if ctl.active[a]:
            row += ["motor" if ctl.motor_side[a] else "joint", *(g[a] for g in gains), int(period[a])]
            row += [1.0 / (period[a] * h)]
        else:
            row += ["-"] * 6
        rows.append(row)
    affine = np.asarray(model.affine.delay)
    rows += [[name, int(affine[i]), affine[i] * h] + ["-"] * 6 for i, name in enumerate(model.affine.names)]
    print(_table(headers, rows))


def _affine_table(model) -> None:
    """The affine (MuJoCo-style) actuators' law and limits, one row an actuator (printed when there are any)."""
    act = model.affine
    if not act.nu:
        return
    names = ("gear", "gain", "bias_0", "bias_q", "bias_v", "ctrl_lower", "ctrl_upper", "force_lower", "force_upper")
    f64 = [np.asarray(getattr(act, n), dtype=np.float64) for n in names]
    joint_of = dict(zip(model.joint_u, model.joint_names, strict=True))
    print("\naffine actuators (force = gain ctrl + bias_0 + bias_q q + bias_v v, clamped to its range; at the joint "
          "gear times it):")  # fmt: skip
    rows = []
    for i, name in enumerate(act.names):
        on_tendon = act.on_tendons and act.tendon[i] >= 0
        target = model.tendons.names[act.tendon[i]] if on_tendon else joint_of[act.v_index[i]]
        rows.append([name, target, *(x[i] for x in f64)])
    print(_table(["name", "target", *names], rows))
    if act.activated:
        print("\nactivation dynamics (the law takes the activation State.act for ctrl; docs/mjcf.md):")
        tau, low, high = (np.asarray(x, dtype=np.float64) for x in (act.time_constant, act.act_lower, act.act_upper))
        early = act.act_early or (False,) * act.nu
        rows = [
            [name, kind, tau[i] if "filter" in kind else "-", low[i], high[i], "yes" if early[i] else "no"]
            for i, (name, kind) in enumerate(zip(act.names, act.dynamics, strict=True))
            if kind != "none"
        ]
        print(_table(["name", "dynamics", "time_constant[s]", "act_lower", "act_upper", "act_early"], rows))


def _backlash_table(model) -> None:
    """Each gear's backlash (printed when any actuator has one): its width and its rotor's inertia."""
    backlash = model.actuators.backlash
    if not backlash.any_active:
        return
    width, inertia = (np.asarray(x, dtype=np.float64) for x in (backlash.width, backlash.inertia))
    print("\nbacklash (the gears' dead band at the joint, the rotor's inertia reflected to the joint):")
    rows = [
        [name, width[a], np.degrees(width[a]), inertia[a]]
        for a, name in enumerate(model.actuators.names)
        if backlash.active[a]
    ]
    print(_table(["name", "width[rad or m]", "width[deg]", "rotor inertia[kg m^2 or kg]"], rows))


def _timestep_report(model, dt: float | None) -> None:
    """Each actuator's time-step bound, and whether the time step (the model's, or ``dt``) is inside it."""
    from jaxmor.errors import ArgumentError

    act = model.actuators
    inertia, bound = timestep_bounds(model)
    step = float(np.asarray(model.opt.timestep)) if dt is None else float(dt)
    if not step > 0:
        raise ArgumentError(f"--dt must be positive, got {dt}")
    print(
        "\ntime-step bound 2 I R Kv / (G^2 Kt) for a motor at its voltage limit to settle"
        " (I: the joint's diagonal of the mass matrix at the default posture, rotor inertia included):"
    )
    rows = [[act.names[a], inertia[a], 1e3 * bound[a]] for a in range(model.na)]
    print(_table(["name", "I[kg*m^2]", "bound[ms]"], rows))
    source = "the model's" if dt is None else "--dt"
    over = [a for a in range(model.na) if step >= bound[a]]
    if over:
        names = ", ".join(f"{act.names[a]} ({1e3 * bound[a]:.4g} ms)" for a in over)
        print(f"WARNING: {source} time step {1e3 * step:g} ms exceeds the bound of {names}")
    else:
        print(f"{source} time step {1e3 * step:g} ms is inside every bound (smallest {1e3 * bound.min():.4g} ms)")


def _dynamics_table(model) -> None:
    """The motors' dynamic features (jaxmor.actuation.motor_dynamics), for the actuators that have any."""
    from jaxmor.actuation.motor_dynamics import STATIC_FIELDS

    dyn = model.actuators.dynamics
    chosen = [a for a in range(model.na) if dyn.inductive[a] or dyn.thermal[a] or dyn.cogging[a] or dyn.lugre[a]]
    if not chosen:
        print("\nmotor dynamics: none (every motor quasi-static)")
        return
    v = {f: np.asarray(getattr(dyn, f), dtype=np.float64) for f in dyn.__dataclass_fields__ if f not in STATIC_FIELDS}
    r = np.asarray(model.actuators.motor.resistance, dtype=np.float64)

    def thermal(a):
        if not dyn.thermal[a]:
            return ["-"] * 5
        tau = v["thermal_resistance"][a] * v["heat_capacity"][a]
        housing = (
            f"{v['housing_thermal_resistance'][a]:g}K/W,{v['housing_heat_capacity'][a]:g}J/K" if dyn.housing[a] else "-"
        )
        top = v["max_temperature"][a]
        limit = f"{'cut' if dyn.cut[a] else 'derate'} {v['limit_start'][a]:g}..{top:g}" if np.isfinite(top) else "-"
        return [tau, v["ambient_temperature"][a], v["resistance_tempco"][a], housing, limit]

    print("\nmotor dynamics (inductance at the motor; thermal tau = R_th C; LuGre at the output):")
    headers = ["name", "L[mH]", "L/R[ms]", "tau_th[s]", "ambient[degC]", "alpha[1/K]", "housing", "limit[degC]"]
    headers += ["cogging[Nm]x[periods]", "lugre(sigma0,F_C,F_S,v_S)"]
    rows = []
    for a in chosen:
        inductance = v["inductance"][a] if dyn.inductive[a] else 0.0
        cogging = f"{v['cogging_amplitude'][a]:g}x{v['cogging_periods'][a]:g}" if dyn.cogging[a] else "-"
        lugre = (
            ",".join(f"{v['lugre_' + n][a]:g}" for n in ("stiffness", "coulomb", "static", "stribeck_velocity"))
            if dyn.lugre[a]
            else "-"
        )
        rows.append([model.actuators.names[a], 1e3 * inductance, 1e3 * inductance / r[a], *thermal(a), cogging, lugre])
    print(_table(headers, rows))


_JOINT_FIELDS = (
    "dof_lower",
    "dof_upper",
    "dof_effort_limit",
    "dof_velocity_limit",
    "dof_damping",
    "dof_friction",
    "dof_armature",
)


def _plot_region(path: str, actuator: str | None, side: str, out: str, package_dirs: Sequence[str] = ()) -> int:
    from jaxmor.errors import ArgumentError

    model = _load(path, package_dirs)
    if not model.na:
        raise ArgumentError(f"{path}: the robot has no DC-motor actuators")
    if actuator is not None and actuator not in model.actuators.names:
        raise ArgumentError(f"unknown actuator {actuator!r}; the actuators are {list(model.actuators.names)}")
    try:
        from jaxmor.tools import plot
    except ImportError as exc:
        if exc.name != "matplotlib":
            raise
        raise ArgumentError(f"plot-region needs matplotlib; {_NO_MATPLOTLIB}") from None
    plot._use_file_backend()
    fig = plot.plot_actuators(
        model,
        actuators=None if actuator is None else [actuator],
        side=side,
        title=f"{model.name}: motor operating regions and the Box-MOR of the URDF limits",
    )
    try:
        fig.savefig(out, dpi=100)
    finally:
        plot.close(fig)
    print(f"wrote {out}")
    return 0


def _view(
    path: str,
    out: str | None,
    live: bool = False,
    port: int = 0,
    seconds: float | None = None,
    package_dirs: Sequence[str] = (),
) -> int:
    """``jaxmor view``: a robot file shows its default pose, a trajectory file (``.npz``) plays; ``--live`` serves
    the robot falling under no actuation (on a ground plane when its base is free) in a live view."""
    from pathlib import Path

    import jaxmor
    from jaxmor import viewer
    from jaxmor.errors import ArgumentError

    if live:
        if path.lower().endswith(".npz") or out is not None:
            raise ArgumentError("--live takes a robot file (.urdf, .xml) and no --out")
        from jaxmor.types import JointType
        from jaxmor.viewer.live_view import serve

        model = _load(path, package_dirs)
        if JointType.FREE in model.body_joint_type and not model.ground:
            model = jaxmor.add_ground(model)
        serve(model, jaxmor.init_state(model), port=port, seconds=seconds)
        return 0
    if path.lower().endswith(".npz"):
        model, states = viewer.load_trajectory(path)
    else:
        model = _load(path, package_dirs)
        states = jaxmor.init_state(model)
    target = Path(out) if out is not None else Path(Path(path).name).with_suffix(".html")
    if out is None and target.exists():
        raise ArgumentError(f"{target} exists: pass --out {target} to replace it, or another --out")
    viewer.write_html(model, states, target)
    print(f"wrote {target}")
    return 0


def _version() -> str:
    from jaxmor.version import __version__

    return __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxmor", description="jaxmor: batched rigid-body simulation with DC-motor operating regions."
    )
    parser.add_argument("--version", action="version", version=f"jaxmor {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="the shipped quadruped in parallel worlds: throughput, saturation shares and a figure"
    )
    demo.add_argument("--worlds", type=int, default=None, help="parallel worlds (default 1024 on a CPU, 8192 else)")
    demo.add_argument("--seconds", type=float, default=None, help="simulated time [s] (default 0.5)")
    demo.add_argument(
        "--out", default=".", help="folder for demo_regions.png, made if missing (default: the current folder)"
    )
    demo.add_argument("--video", default=None, help="also write a video of the first 4 worlds (.gif or .mp4)")
    view = sub.add_parser("view", help="write a 3D page of a robot file (.urdf, .xml) or a trajectory file (.npz)")
    view.add_argument("path")
    view.add_argument("--out", default=None, help="the HTML page to write (default: PATH's name with .html)")
    view.add_argument("--live", action="store_true", help="serve a live view of the robot simulated (Ctrl-C stops)")
    view.add_argument("--port", type=int, default=0, help="--live: the local port (default: a free one)")
    view.add_argument("--seconds", type=float, default=None, help="--live: stop after this long [s]")
    info = sub.add_parser("info", help="joints, actuators and time-step bounds of a URDF or an MJCF (.xml)")
    info.add_argument("urdf")
    info.add_argument("--dt", type=float, default=None, help="time step to check [s] (default: the model's)")
    plot = sub.add_parser("plot-region", help="draw the motor operating regions beside the Box-MOR")
    plot.add_argument("urdf")
    plot.add_argument("--actuator", default=None, help="one actuator's name (default: all)")
    plot.add_argument("--side", choices=("motor", "joint"), default="motor", help="torque-speed plane (default motor)")
    plot.add_argument("-o", "--output", required=True, help="the PNG (or any format matplotlib writes) to write")
    for command in (view, info, plot):
        command.add_argument(
            "--package-dir",
            action="append",
            default=[],
            metavar="DIR",
            help="a folder beyond the file's own that its includes and meshes may be read from (repeatable; the "
            "loaders' package_dirs, as a load error that names a file outside the allowed folders suggests)",
        )
    _train_parser(sub)
    _play_parser(sub)
    return parser


def _train_parser(sub) -> None:
    train = sub.add_parser("train", help="train a locomotion policy with PPO (resumes the run in --out)")
    train.add_argument("--robot", choices=("quadruped", "go2"), default="quadruped")
    train.add_argument("--motor", choices=("em", "box"), default="em", help="EM-MOR (default) or Box-MOR")
    train.add_argument("--terrain", choices=("flat", "rough"), default="flat")
    train.add_argument(
        "--commands",
        choices=("forward", "omni", "fast"),
        default="forward",
        help="forward: 0-1 m/s ahead; omni: -0.5-1.5 m/s, +-0.5 m/s sideways, +-1 rad/s; fast: forward up to what "
        "the motors allow (jaxmor.envs.top_speed), through a curriculum",
    )
    train.add_argument("--worlds", type=int, default=1024, help="parallel worlds (default 1024)")
    train.add_argument("--steps", type=int, default=20_000_000, help="environment steps (default 20M)")
    train.add_argument("--minutes", type=float, default=30.0, help="wall-clock budget [min] (default 30)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--forward-max",
        type=float,
        default=None,
        help="forward commands' top [m/s] with --commands forward (default 1; train beyond what you evaluate at)",
    )
    train.add_argument(
        "--mirror",
        action="store_true",
        help="add each transition's left-right reflection to PPO's batches (symmetric augmentation)",
    )
    train.add_argument(
        "--gain-scale",
        type=float,
        default=1.0,
        help="scale of the default PD gains from the motors: kp times it, kd times its square root (default 1)",
    )
    train.add_argument(
        "--reward",
        action="append",
        default=[],
        metavar="TERM=WEIGHT",
        help="replace a reward term's weight (per second; repeatable), e.g. --reward tracking_yaw=2; the terms and "
        "their defaults: docs/training.md",
    )
    train.add_argument("--out", default="runs/quadruped-em", help="the run folder (default runs/quadruped-em)")
    train.add_argument(
        "--live", action="store_true", help="serve a live view of the first device's worlds as they train (Pause holds)"
    )
    train.add_argument(
        "--devices",
        type=int,
        default=None,
        help="CPU devices to split the worlds over (default: one per core; docs/worlds.md)",
    )


def _play_parser(sub) -> None:
    play = sub.add_parser("play", help="evaluate a trained policy and show it (a page or a video)")
    play.add_argument("policy", help="a policy folder, or a run folder holding policy/")
    play.add_argument("--out", default=None, help="a .html page or a .gif/.mp4 video of it walking")
    play.add_argument("--worlds", type=int, default=64, help="worlds of the evaluation (default 64)")
    play.add_argument("--seconds", type=float, default=20.0, help="episode length [s] (default 20)")
    play.add_argument(
        "--resampled",
        metavar="RANGES",
        default=None,
        help="commands drawn and resampled every 5-10 s from RANGES, 'lo:hi,lo:hi,lo:hi' (forward, lateral [m/s], "
        "yaw [rad/s]), e.g. 0:1.5,-0.5:0.5,-1:1, instead of the fixed forward commands 0, 0.5 and 1 m/s",
    )


def _command_ranges(text: str) -> list[tuple[str, ...]]:
    """``--resampled lo:hi,lo:hi,lo:hi`` as pairs of strings; :func:`jaxmor.train.play.play` checks them."""
    return [tuple(part.split(":")) for part in text.split(",")]


def _reward_weights(pairs: list[str]) -> tuple[tuple[str, float], ...]:
    """``--reward TERM=WEIGHT`` options as ``(term, weight)`` pairs; the terms are checked by the environment.

    Raises:
        ArgumentError: an option without ``=`` or whose weight is not a number.
    """
    from jaxmor.errors import ArgumentError

    weights = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            weights.append((name.strip(), float(value)))
        except ValueError:
            sep = ""
        if not sep:
            raise ArgumentError(f"--reward takes TERM=WEIGHT (a number), got {pair!r}")
    return tuple(weights)


def _train(args) -> int:
    if args.devices is not None or "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        count = args.devices or os.cpu_count() or 1
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={count}"
    from jaxmor.train.ppo import PPOConfig
    from jaxmor.train.run import RunConfig, command_settings, train

    config = RunConfig(
        robot=args.robot,
        motor_model=args.motor,
        terrain=args.terrain,
        seed=args.seed,
        gain_scale=args.gain_scale,
        reward_weights=_reward_weights(args.reward),
        steps=args.steps,
        minutes=args.minutes,
        ppo=PPOConfig(worlds=args.worlds, mirror=args.mirror),
        **command_settings(args.commands, args.robot, args.forward_max),
    )
    out = train(args.out, config, watch=args.live or None)
    print(f"policy: {out}")
    return 0


#: The environment variable that names the command's folder of compiled programs, or turns it off.
COMPILE_CACHE_VARIABLE = "JAXMOR_COMPILE_CACHE"


def _compile_cache_folder() -> str | None:
    """The folder :func:`_compile_cache` keeps compiled programs in: ``$JAXMOR_COMPILE_CACHE`` (``off`` or empty:
    none), else ``$XDG_CACHE_HOME/jaxmor/xla``, else ``~/.cache/jaxmor/xla``."""
    chosen = os.environ.get(COMPILE_CACHE_VARIABLE)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "none") else chosen
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "jaxmor", "xla")


def _compile_cache() -> None:
    """Keep the command's compiled programs on disk (JAX's persistent compilation cache), so that the next run of
    the same program (a second ``jaxmor demo``, a resumed ``jaxmor train``) loads it instead of compiling it. A
    cache already configured for JAX (``JAX_COMPILATION_CACHE_DIR``) is left as it is; a folder that cannot be made
    means no cache."""
    import jax

    folder = _compile_cache_folder()
    if folder is None or jax.config.jax_compilation_cache_dir is not None:
        return
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", folder)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``jaxmor`` command; returns the exit code (0, or 2 after a one-line error)."""
    args = _parser().parse_args(argv)
    from jaxmor.errors import JaxmorError

    _compile_cache()

    try:
        if args.command == "demo":
            from jaxmor.tools import demo

            seconds = demo.DEFAULT_SECONDS if args.seconds is None else args.seconds
            return demo.main(args.worlds, seconds, args.out, args.video)
        if args.command == "view":
            return _view(args.path, args.out, args.live, args.port, args.seconds, args.package_dir)
        if args.command == "info":
            return _info(args.urdf, args.dt, args.package_dir)
        if args.command == "train":
            return _train(args)
        if args.command == "play":
            from jaxmor.train.play import play

            ranges = None if args.resampled is None else _command_ranges(args.resampled)
            play(args.policy, out=args.out, worlds=args.worlds, seconds=args.seconds, resampled=ranges)
            return 0
        return _plot_region(args.urdf, args.actuator, args.side, args.output, args.package_dir)
    except (JaxmorError, OSError) as exc:
        print(f"jaxmor: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
