r"""Drawing motor operating regions with matplotlib: ``pip install 'jaxmor[plot]'``.

A submodule, not imported by ``import jaxmor`` (which works without matplotlib): ``from jaxmor.tools import plot``.

In the torque-speed plane of a motor (``side="motor"``: rotor speed [rad/s], motor torque [Nm]) the
operating region is the parallelogram of :mod:`jaxmor.actuation.motor`: between the voltage limits
``+-tau_stall - b w`` and the peak torque ``+-tau_peak``. At the joint (``side="joint"``) the same region is
drawn for the driven joint's speed ``u = w / G`` [rad/s or m/s] and the actuator torque ``G tau`` [Nm or N],
with the coupled joints (if any) at rest.

The friction and damping of the driven joint and of the actuator's output (``tau_c`` [Nm], ``b_j``
[Nm s/rad], joint side) take their share of the motor torque before it reaches the joint. The torque that
remains, ``G tau - b_j u - tau_c sgn(u)`` at the joint, i.e. ``tau - (b_j / G^2) w - (tau_c / G) sgn(w)``
in the motor's plane, is drawn as a second (orange) outline when the losses are not zero.

The Box-MOR is the rectangle of the URDF's ``<limit effort velocity>``: ``|torque| <= effort``,
``|speed| <= velocity`` at the joint, ``effort / G`` and ``velocity G`` in the motor's plane.

Every line carries a ``gid`` that names what it shows, so that a figure can be checked after drawing:
``"region_upper"``, ``"region_lower"``, ``"net_upper"``, ``"net_lower"``, ``"voltage_limit"``, ``"box_mor"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from jaxmor.actuation.motor import MOTOR_FIELDS, DcMotorParameters, MotorSaturation
from jaxmor.errors import ArgumentError
from jaxmor.model import resolve_actuator
from jaxmor.types import Model

__all__ = [
    "SATURATION_COLORS",
    "close",
    "draw_box_mor",
    "draw_operating_points",
    "draw_region",
    "plot_actuator",
    "plot_actuators",
    "plot_motor_temperatures",
]

#: Colour of the operating points per :class:`jaxmor.MotorSaturation`.
SATURATION_COLORS = {
    MotorSaturation.NONE: "tab:blue",
    MotorSaturation.PEAK_TORQUE: "tab:purple",
    MotorSaturation.VOLTAGE: "tab:red",
    MotorSaturation.TEMPERATURE: "tab:brown",
}

_SIDES = ("motor", "joint")
_SAMPLES = 241


def _side(side: str) -> str:
    if side not in _SIDES:
        raise ArgumentError(f"side must be 'motor' or 'joint', got {side!r}")
    return side


def _scalar_motor(motor: DcMotorParameters) -> dict[str, float]:
    try:
        values = {name: float(np.asarray(getattr(motor, name))) for name in MOTOR_FIELDS}
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"draw_region needs a motor with scalar parameters: {exc}") from None
    return values


def _constants(motor: DcMotorParameters) -> tuple[float, float, float]:
    """``(stall torque [Nm], back-EMF damping [Nm s/rad], peak torque [Nm])`` of a scalar motor."""
    m = _scalar_motor(motor)
    per_volt = m["torque_constant"] / m["resistance"]
    return per_volt * m["bus_voltage"], per_volt / m["velocity_constant"], m["peak_torque"]


def _speed_samples(stall: float, damping: float, peak: float, limit: float) -> np.ndarray:
    """Motor speeds in ``[-limit, limit]``: evenly spaced, with every kink of the outline and zero twice."""
    kinks = [(stall - peak) / damping, (stall + peak) / damping, stall / damping] if np.isfinite(peak) else []
    kinks += [-k for k in kinks]
    speeds = np.concatenate([np.linspace(-limit, limit, _SAMPLES), [k for k in kinks if abs(k) < limit]])
    speeds = np.unique(speeds)
    return np.sort(np.concatenate([speeds[speeds != 0], [0.0, 0.0]]))


def draw_region(
    ax: Axes,
    motor: DcMotorParameters,
    *,
    gear_ratio: float = 1.0,
    side: str = "motor",
    damping: float = 0.0,
    friction: float = 0.0,
    speed_limit: float | None = None,
    voltage_lines: bool = True,
    color: str = "tab:green",
    label: str | None = "EM-MOR",
    gid: str = "region",
) -> list[Line2D]:
    """Draw a motor's operating region: its upper and lower bound over the speed, shaded between.

    Args:
        ax: the Axes to draw on.
        motor: the motor, every field a scalar (e.g. ``jaxmor.get_actuators(model)[i].motor``).
        gear_ratio: ``G`` [-], for ``side="joint"`` and for the losses (positive).
        side: ``"motor"`` (rotor speed [rad/s], motor torque [Nm]) or ``"joint"`` (joint speed ``w / G``,
            actuator torque ``G tau``).
        damping: viscous damping at the joint [Nm s/rad] (the joint's own plus the actuator's output
            damping); with ``friction``, drawn as the orange outline of the torque left after the losses.
        friction: Coulomb friction at the joint [Nm].
        speed_limit: the drawn speed range ``[-speed_limit, speed_limit]`` in the side's units; default
            1.15 times the overspeed limit (1.3 times the no-load speed for an infinite peak torque).
        voltage_lines: also draw the two voltage limits ``+-tau_stall - b w`` as dotted lines.
        color: colour of the region.
        label: legend label of the region (``None``: none).
        gid: the prefix of the bounds' gids (``"region"``: ``"region_upper"``, ``"region_lower"``).

    Returns:
        The drawn lines: the upper and lower bound (gids ``"region_upper"``, ``"region_lower"``), then
        the voltage limits (``"voltage_limit"``) and the outline after losses (``"net_upper"``,
        ``"net_lower"``) where drawn.

    Raises:
        ArgumentError: a motor with non-scalar fields, a gear ratio that is not positive, an unknown side,
            negative losses or a speed limit that is not positive.
    """
    side = _side(side)
    stall, b, peak = _constants(motor)
    gear = float(gear_ratio)
    if not gear > 0:
        raise ArgumentError(f"gear_ratio must be positive, got {gear_ratio!r}")
    if not (damping >= 0 and friction >= 0):
        raise ArgumentError(f"damping and friction must be non-negative, got {damping!r} and {friction!r}")
    to_speed, to_torque = (1.0, 1.0) if side == "motor" else (1.0 / gear, gear)
    if speed_limit is None:
        motor_limit = 1.15 * (stall + peak) / b if np.isfinite(peak) else 1.3 * stall / b
    else:
        if not speed_limit > 0:
            raise ArgumentError(f"speed_limit must be positive, got {speed_limit!r}")
        motor_limit = float(speed_limit) / to_speed
    w = _speed_samples(stall, b, peak, motor_limit)
    upper = np.clip(stall - b * w, -peak, peak)
    lower = np.clip(-stall - b * w, -peak, peak)
    x = w * to_speed
    ax.fill_between(x, lower * to_torque, upper * to_torque, color=color, alpha=0.15, linewidth=0)
    lines = [
        ax.plot(x, upper * to_torque, color=color, lw=2, label=label, gid=f"{gid}_upper")[0],
        ax.plot(x, lower * to_torque, color=color, lw=2, gid=f"{gid}_lower")[0],
    ]
    if voltage_lines:
        for sign in (1.0, -1.0):
            ends = np.array([-motor_limit, motor_limit])
            lines += ax.plot(
                ends * to_speed, (sign * stall - b * ends) * to_torque, ":", color=color, lw=1, gid="voltage_limit"
            )
    if damping or friction:
        # Zero appears twice in w: friction opposes a motion from the left on the first, from the right on the second.
        direction = np.sign(w)
        zeros = np.flatnonzero(w == 0)
        direction[zeros[0]], direction[zeros[-1]] = -1.0, 1.0
        loss = (damping / gear**2) * w + (friction / gear) * direction
        orange = {"color": "tab:orange", "lw": 1.5}
        lines += ax.plot(x, (upper - loss) * to_torque, label="after losses", gid="net_upper", **orange)
        lines += ax.plot(x, (lower - loss) * to_torque, gid="net_lower", **orange)
    # The voltage lines run far beyond the region: show the region and its surroundings.
    reach = 1.6 * peak if np.isfinite(peak) else 1.2 * stall
    ax.set_ylim(-reach * to_torque, reach * to_torque)
    unit = "joint" if side == "joint" else "motor"
    ax.set_xlabel(f"{unit} speed [rad/s]")
    ax.set_ylabel(f"{'actuator' if side == 'joint' else 'motor'} torque [Nm]")
    ax.axhline(0.0, color="0.6", lw=0.5)
    ax.axvline(0.0, color="0.6", lw=0.5)
    return lines


def draw_box_mor(
    ax: Axes,
    effort: float,
    velocity: float,
    *,
    gear_ratio: float = 1.0,
    side: str = "motor",
    color: str = "0.3",
    label: str | None = "Box-MOR (URDF limits)",
) -> Line2D | None:
    """Draw the Box-MOR: the rectangle ``|torque| <= effort``, ``|speed| <= velocity`` of a joint's URDF limits.

    Args:
        ax: the Axes to draw on.
        effort: the joint's effort limit [Nm or N] (URDF ``<limit effort>``).
        velocity: the joint's velocity limit [rad/s or m/s] (URDF ``<limit velocity>``).
        gear_ratio: ``G`` [-]; on the motor's side the rectangle is ``effort / G`` by ``velocity G``.
        side: ``"motor"`` or ``"joint"``, as in :func:`draw_region`.
        color: line colour.
        label: legend label (``None``: none).

    Returns:
        The dashed rectangle (gid ``"box_mor"``), or ``None`` when a limit is not finite (nothing drawn).

    Raises:
        ArgumentError: an unknown side, or a gear ratio, effort or velocity that is not positive.
    """
    side = _side(side)
    if not float(gear_ratio) > 0:
        raise ArgumentError(f"gear_ratio must be positive, got {gear_ratio!r}")
    effort, velocity = float(effort), float(velocity)
    if not (effort > 0 and velocity > 0):
        raise ArgumentError(f"effort and velocity must be positive, got {effort!r} and {velocity!r}")
    if not (np.isfinite(effort) and np.isfinite(velocity)):
        return None
    if side == "motor":
        effort, velocity = effort / gear_ratio, velocity * gear_ratio
    x = np.array([-velocity, velocity, velocity, -velocity, -velocity])
    y = np.array([effort, effort, -effort, -effort, effort])
    return ax.plot(x, y, "--", color=color, lw=1.5, label=label, gid="box_mor")[0]


def draw_operating_points(
    ax: Axes,
    motor_speed: np.ndarray,
    motor_torque: np.ndarray,
    saturation: np.ndarray | None = None,
    *,
    gear_ratio: float = 1.0,
    side: str = "motor",
    max_points: int = 20000,
    size: float = 2.0,
) -> list:
    """Scatter operating points, coloured by the bound that limited them (:data:`SATURATION_COLORS`).

    Args:
        ax: the Axes to draw on.
        motor_speed: motor speeds [rad/s], any shape (``ActuatorState.motor_speed`` of one actuator).
        motor_torque: motor torques [Nm], the shape of ``motor_speed`` (``ActuatorState.motor_torque``).
        saturation: :class:`jaxmor.MotorSaturation` values, the same shape (``ActuatorState.saturation``);
            ``None``: every point in the colour of ``NONE``.
        gear_ratio: ``G`` [-], for ``side="joint"``.
        side: ``"motor"`` or ``"joint"``, as in :func:`draw_region`.
        max_points: at most this many points are drawn, an evenly spaced subsample of the flattened arrays.
        size: marker size [points^2].

    Returns:
        One ``PathCollection`` per saturation value that occurs, labelled with its name.

    Raises:
        ArgumentError: arrays of different shapes, or an unknown side.
    """
    side = _side(side)
    speed = np.asarray(motor_speed, dtype=np.float64).ravel()
    torque = np.asarray(motor_torque, dtype=np.float64).ravel()
    sat = np.zeros(speed.shape, np.int64) if saturation is None else np.asarray(saturation).ravel()
    if not (np.shape(motor_speed) == np.shape(motor_torque) and speed.shape == sat.shape):
        shapes = (np.shape(motor_speed), np.shape(motor_torque), np.shape(saturation))
        raise ArgumentError(f"motor_speed, motor_torque and saturation must have one shape, got {shapes}")
    if speed.size > max_points:
        keep = np.linspace(0, speed.size - 1, max_points).astype(np.int64)
        speed, torque, sat = speed[keep], torque[keep], sat[keep]
    if side == "joint":
        speed, torque = speed / gear_ratio, torque * gear_ratio
    out = []
    for value, color in SATURATION_COLORS.items():
        mask = sat == int(value)
        if mask.any():
            name = value.name.lower().replace("_", " ")
            out.append(ax.scatter(speed[mask], torque[mask], s=size, color=color, label=f"{name}", zorder=3))
    return out


def _column(states, field: str, index: int) -> np.ndarray | None:
    value = getattr(states, field, None)
    return None if value is None else np.asarray(value)[..., index]


def plot_actuator(
    model: Model,
    actuator: int | str,
    *,
    ax: Axes | None = None,
    side: str = "motor",
    states: Any = None,
    box: bool = True,
    losses: bool = True,
    legend: bool = True,
    temperature: float | None = None,
) -> Axes:
    """One actuator of a model: its region, the Box-MOR of its joint and, optionally, operating points.

    Args:
        model: a :class:`jaxmor.Model` with DC-motor actuators.
        actuator: the actuator's name or index.
        ax: the Axes to draw on; default a new figure's.
        side: ``"motor"`` or ``"joint"``, as in :func:`draw_region`.
        states: recorded actuator states: a :class:`jaxmor.ActuatorState` (or any object with its
            ``motor_speed``, ``motor_torque`` and ``saturation`` fields) whose fields have the shape
            (..., na), e.g. a rollout's trajectory ``traj.actuator_state``; ``None``: no points.
        box: draw the Box-MOR of the driven joint's URDF limits.
        losses: draw the outline after the joint's and the actuator's friction and damping.
        legend: add a legend.
        temperature: a winding temperature [degC]: for a motor with a thermal model, also draw (dashed, red,
            gids ``"hot_region_upper"``/``"hot_region_lower"``) its region at that temperature: the resistance
            and flux there, the peak derated by its temperature limit (:mod:`jaxmor.actuation.motor_dynamics`).

    Returns:
        The Axes, titled with the actuator's name.

    Raises:
        ArgumentError: an unknown actuator or side.
    """
    a = resolve_actuator(model, actuator)
    act = model.actuators
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots(figsize=(5.0, 4.0), layout="constrained")[1]
    motor = DcMotorParameters(*(np.asarray(getattr(act.motor, f))[a] for f in MOTOR_FIELDS))
    gear = float(np.asarray(act.gear_ratio)[a])
    v = act.joint_v_index[a]
    damping = float(np.asarray(model.dof_damping)[v] + np.asarray(act.output_damping)[a]) if losses else 0.0
    friction = float(np.asarray(model.dof_friction)[v] + np.asarray(act.output_friction)[a]) if losses else 0.0
    draw_region(ax, motor, gear_ratio=gear, side=side, damping=damping, friction=friction)
    if temperature is not None and act.dynamics.thermal[a]:
        hot = _motor_at(act, a, motor, float(temperature))
        lines = draw_region(
            ax, hot, gear_ratio=gear, side=side, voltage_lines=False, color="tab:red",
            label=f"at {float(temperature):g} degC", gid="hot_region",
        )  # fmt: skip
        for line in lines:
            line.set_linestyle("--")
    if box:
        effort, velocity = np.asarray(model.dof_effort_limit)[v], np.asarray(model.dof_velocity_limit)[v]
        if np.isfinite(effort) and np.isfinite(velocity) and effort > 0 and velocity > 0:
            draw_box_mor(ax, effort, velocity, gear_ratio=gear, side=side)
    if states is not None:
        draw_operating_points(
            ax,
            _column(states, "motor_speed", a),
            _column(states, "motor_torque", a),
            _column(states, "saturation", a),
            gear_ratio=gear,
            side=side,
        )
    couplings = ", ".join(act.couplings[a])
    ax.set_title(f"{act.names[a]} (G = {gear:g}{', coupled to ' + couplings if couplings else ''})", fontsize=9)
    if legend:
        ax.legend(fontsize=7, loc="upper right", markerscale=4)
    return ax


def _motor_at(act, a: int, motor: DcMotorParameters, temperature: float) -> DcMotorParameters:
    """Actuator ``a``'s motor at a winding temperature: the constants and the derated peak the step would use
    (:func:`jaxmor.actuation.motor_dynamics.motor_at_temperature`,
    :func:`~jaxmor.actuation.motor_dynamics.derating_factor`, for
    every actuator at that temperature, then actuator ``a``'s)."""
    from jaxmor.actuation.motor_dynamics import derating_factor, motor_at_temperature

    dyn = act.dynamics
    temps = np.full(len(act.names), float(temperature))
    hot = motor_at_temperature(act.motor, dyn, temps)
    cut = temps >= np.asarray(dyn.max_temperature, np.float64)
    d = float(derating_factor(dyn, temps, cut)[a])
    peak = float(motor.peak_torque)
    return DcMotorParameters(
        float(hot.resistance[a]),
        float(hot.torque_constant[a]),
        float(hot.velocity_constant[a]),
        float(motor.bus_voltage),
        peak * d if np.isfinite(peak) and d < 1 else peak,
    )


def plot_motor_temperatures(model: Model, motor_states: Any, timestep: float, *, ax: Axes | None = None) -> Axes:
    """The winding temperature of every motor with a thermal model over a run, with its temperature limit.

    Args:
        model: the model.
        motor_states: a rollout's ``traj.motor_state`` (fields (T, na)).
        timestep: the time step [s] (``model.opt.timestep``).
        ax: the Axes to draw on; default a new figure's.

    Returns:
        The Axes; one line per motor (gid ``"winding/<actuator>"``), a dotted line at each finite
        ``max_temperature`` (gid ``"max_temperature/<actuator>"``).

    Raises:
        ArgumentError: a model without a thermal model, or states that do not have (T, na) fields.
    """
    act = model.actuators
    chosen = [a for a in range(model.na) if act.dynamics.thermal[a]]
    if not chosen:
        raise ArgumentError("the model has no motor with a thermal model")
    temps = np.asarray(motor_states.winding_temperature)
    if temps.ndim != 2 or temps.shape[1] != model.na:
        raise ArgumentError(f"motor_states must have fields of shape (T, {model.na}), got {temps.shape}")
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots(figsize=(6.0, 3.5), layout="constrained")[1]
    t = float(timestep) * np.arange(1, temps.shape[0] + 1)
    for a in chosen:
        (line,) = ax.plot(t, temps[:, a], label=act.names[a], gid=f"winding/{act.names[a]}")
        top = float(np.asarray(act.dynamics.max_temperature)[a])
        if np.isfinite(top):
            ax.axhline(top, ls=":", color=line.get_color(), lw=1, gid=f"max_temperature/{act.names[a]}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("winding temperature [degC]")
    ax.legend(fontsize=7)
    return ax


def plot_actuators(
    model: Model,
    states: Any = None,
    *,
    actuators: Sequence[int | str] | None = None,
    side: str = "motor",
    ncols: int = 3,
    title: str | None = None,
    box: bool = True,
    losses: bool = True,
) -> Figure:
    """A grid of :func:`plot_actuator` panels, one per actuator (the spec's twelve-panel figure).

    Args:
        model: a :class:`jaxmor.Model` with DC-motor actuators.
        states: recorded actuator states with fields of shape (..., na), as in :func:`plot_actuator`.
        actuators: names or indices to draw; default every actuator.
        side: ``"motor"`` or ``"joint"``, as in :func:`draw_region`.
        ncols: panels per row (>= 1).
        title: the figure's title.
        box: draw each joint's Box-MOR.
        losses: draw each outline after losses.

    Returns:
        The Figure (created with ``matplotlib.pyplot``; :func:`close` it when done).

    Raises:
        ArgumentError: a model without actuators, an unknown actuator or side, or ``ncols < 1``.
    """
    import matplotlib.pyplot as plt

    chosen = list(range(model.na)) if actuators is None else [resolve_actuator(model, a) for a in actuators]
    if not chosen:
        raise ArgumentError("the model has no DC-motor actuators to plot")
    if int(ncols) < 1:
        raise ArgumentError(f"ncols must be at least 1, got {ncols!r}")
    ncols = min(int(ncols), len(chosen))
    nrows = -(-len(chosen) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(max(4.2 * ncols, 7.0), 3.4 * nrows + 0.5), squeeze=False, layout="constrained"
    )
    for k, ax in enumerate(axes.ravel()):
        if k < len(chosen):
            plot_actuator(model, chosen[k], ax=ax, side=side, states=states, box=box, losses=losses, legend=k == 0)
        else:
            ax.set_visible(False)
    if title:
        fig.suptitle(title)
    return fig


def close(fig: Figure) -> None:
    """Release a figure made by :func:`plot_actuators` or :func:`plot_actuator` (``pyplot.close``)."""
    import matplotlib.pyplot as plt

    plt.close(fig)


def _use_file_backend() -> None:
    """Select the non-interactive Agg backend (for the command line, which only writes files)."""
    matplotlib.use("Agg")
