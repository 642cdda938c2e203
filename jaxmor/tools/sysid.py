"""System identification of motor constants by gradient descent through the simulator.

``fit(model, recordings, actuators=[...])`` finds the motor constants of the chosen actuators that make the
simulator reproduce recorded motion (and, when recorded, motor currents). The simulation is differentiated
end to end (:func:`jaxmor.rollout`); parameters are fitted in log space (they stay positive and a step
is relative); long recordings are cut into short windows, each started from the recorded state (multiple
shooting), so the fit stays well conditioned however long the recording; several recordings are fitted
at once (all windows run in one ``vmap``).

What the data can tell. Inside the motor operating region a commanded torque is applied as is: motion
then says nothing about the motor. On the voltage band the torque is ``(Kt / R) (V - w / Kv)``: motion
tells ``Kt / R`` and ``Kv`` (and ``V``), not ``R`` and ``Kt`` apart. Recorded currents (``i = tau_m / Kt``)
separate them, and so does the ideal-motor identity ``Kt = 1 / Kv`` (SI units: it holds for a motor
without losses, where the electrical power ``w tau / Kt`` equals the mechanical ``w tau`` times ``Kv Kt``;
``ideal_motor=True`` imposes it). The result says which parameters and combinations the data determine:
from the Gauss-Newton approximation ``J^T J`` of the loss's Hessian at the optimum (``J`` the Jacobian of
the residuals), directions with (near) zero curvature are reported as not identifiable, and the others get
standard deviations ``sigma^2 (J^T J)^-1`` with the residual variance ``sigma^2``. ``J`` has one column per
fitted value (the log-parameters ``theta``), so the report covers exactly the fitted parameters; data with no
curvature at all (an unexciting recording, e.g. all zeros) report every parameter as not identifiable.

Bad data. ``fit`` refuses a recording with a NaN or infinite sample (:class:`jaxmor.ArgumentError` naming the
recording's index, the field, the first bad sample and the count): there is no masking, since one NaN torque
silently biases a fitted constant.

Thermal constants (:data:`THERMAL_PARAMETERS`, for motors with a thermal model, :mod:`jaxmor.actuation.motor_dynamics`):
from a recorded winding temperature (:attr:`Recording.temperature`), or, with no thermometer, from the fade of
the current and the motion of a long run as the resistance rises; the latter are fitted over whole recordings
(``window=None``), since a window's starting temperature is not known from the motion.

A learned residual (:func:`jaxmor.with_residual`): ``"residual"`` among the parameters fits the network's
weights jointly with the motor constants (offsets from the model's weights; :mod:`jaxmor.tools.residual_fit`);
each window starts from the history the recording gives before it. The report then says which constants the
network can stand in for.

Backlash (:data:`BACKLASH_PARAMETERS`, for actuators with :func:`jaxmor.with_backlash`): its width and the rotor's
inertia, from the joint's motion through reversals. The play is not recorded, so every window starts with it
centred and the rotor moving with its joint (``jaxmor.init_state``): fit whole recordings that start so
(``window`` the recordings' length, e.g. from rest), or windows long enough that the start's play matters little.
Still data say nothing of either, and the report says so. Width and inertia trade off (a wider play and a lighter
rotor take up at about the same time), so fit the width with the rotor's inertia known where you can. The width
enters through the take-ups; steps that straddle one make the loss piecewise smooth, so start within a factor of
about two.

Drive controllers (:data:`CONTROLLER_PARAMETERS`, for actuators that run one, :func:`jaxmor.with_drive_controller`):
their gains, from nonzero starts. Command delays and controller periods are whole numbers of steps, not fitted by
gradient: compare fits at each candidate delay.

Methods. ``method="gauss_newton"`` (default) is Levenberg-Marquardt on the residuals, with their Jacobian by
forward-mode differentiation (a few parameters: one pass with a handful of tangents); it converges in a few
tens of iterations. ``method="optax"`` runs any ``optax`` optimizer on the loss's gradient (reverse mode),
for many parameters; it needs more iterations.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.checks import as_bool, as_key, as_positive_int, as_scalar, quoted
from jaxmor.errors import ArgumentError
from jaxmor.model import actuator_index, resolve_actuator
from jaxmor.sim.pipeline import rollout
from jaxmor.state import check_state, init_state
from jaxmor.tools.residual_fit import RESIDUAL, flat_weights, residual_finding, window_histories, with_weights
from jaxmor.types import Model, State

#: The parameters ``fit`` can identify, per actuator.
PARAMETERS = (
    "resistance",
    "torque_constant",
    "velocity_constant",
    "bus_voltage",
    "output_damping",
    "output_friction",
    "rotor_inertia",
    # The thermal network (jaxmor.actuation.motor_dynamics): from a recorded winding temperature, or from the fade of
    # the
    # torque (current) of a long run as the resistance rises.
    "thermal_resistance",
    "heat_capacity",
    "housing_thermal_resistance",
    "housing_heat_capacity",
    "resistance_tempco",
    # The gear's backlash (jaxmor.with_backlash; actuators that have it): its width and the rotor's inertia.
    "backlash_width",
    "backlash_inertia",
    # The drive controllers (jaxmor.with_drive_controller; actuators that run one): their gains.
    "controller_p_gain",
    "controller_i_gain",
    "controller_d_gain",
)

#: The parameters of the gears' backlash, by their name in :data:`PARAMETERS` (``Backlash`` field).
BACKLASH_PARAMETERS = {"backlash_width": "width", "backlash_inertia": "inertia"}

#: The drive controllers' gains, by their name in :data:`PARAMETERS` (``DriveController`` field).
CONTROLLER_PARAMETERS = {"controller_p_gain": "p_gain", "controller_i_gain": "i_gain", "controller_d_gain": "d_gain"}

#: The parameters of the thermal network, fitted over whole recordings (the temperatures of a window's start are
#: not known from the motion).
THERMAL_PARAMETERS = (
    "thermal_resistance",
    "heat_capacity",
    "housing_thermal_resistance",
    "housing_heat_capacity",
    "resistance_tempco",
)

#: Curvature (relative to the largest eigenvalue of ``J^T J``) below which a direction is not identified.
IDENTIFIABILITY_THRESHOLD = 1e-8


@dataclasses.dataclass(frozen=True)
class Recording:
    """One recorded run, sampled at the model's time step.

    Attributes:
        q: (T + 1, nq) generalized coordinates at every sample, the start included.
        u: (T + 1, nv) generalized velocities at every sample.
        torque: (T, na) actuator torques commanded over each step [Nm or N] (at the gear outputs).
        current: optional (T, na) measured winding current of each motor during each step [A].
        temperature: optional (T + 1, na) measured winding temperature of each motor at every sample [degC],
            the start included.
    """

    q: np.ndarray
    u: np.ndarray
    torque: np.ndarray
    current: np.ndarray | None = None
    temperature: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("q", "u", "torque", "current", "temperature"):
            value = getattr(self, name)
            if value is not None or name in ("q", "u", "torque"):
                object.__setattr__(self, name, _samples(value, name))
        steps = self.torque.shape[0] if self.torque.ndim == 2 else -1
        shapes = {"q": self.q.shape, "u": self.u.shape, "torque": self.torque.shape}
        if (
            self.q.ndim != 2
            or self.u.ndim != 2
            or steps < 1
            or self.q.shape[0] != steps + 1
            or self.u.shape[0] != steps + 1
        ):
            raise ArgumentError(f"a Recording needs q (T+1, nq), u (T+1, nv) and torque (T, na), got {shapes}")
        if self.current is not None and self.current.shape != self.torque.shape:
            raise ArgumentError(f"current must have the shape of torque {self.torque.shape}, got {self.current.shape}")
        expected = (steps + 1, self.torque.shape[1])
        if self.temperature is not None and self.temperature.shape != expected:
            raise ArgumentError(f"temperature must have shape (T+1, na) = {expected}, got {self.temperature.shape}")


def _samples(value: Any, name: str) -> np.ndarray:
    """A recorded channel as a float64 array.

    Raises:
        ArgumentError: not an array of real numbers (``None``, a string, a ragged nest, complex or bool values).
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = None
    if array is None or array.dtype.kind not in "iuf":
        raise ArgumentError(f"a Recording's {name} must be an array of real numbers, got {quoted(value)}")
    return array.astype(np.float64, copy=False)


def _check_model(model: Any, where: str) -> None:
    """Raise unless ``model`` is a :class:`jaxmor.Model`."""
    if not isinstance(model, Model):
        raise ArgumentError(f"{where}: model must be a jaxmor.Model, got {type(model).__name__}")


def record(model: Model, state: State, torque: Any, *, noise: float = 0.0, key: jax.Array | None = None) -> Recording:
    """Simulate ``model`` from ``state`` under commanded actuator torques and record it (synthetic data).

    Args:
        model: the model.
        state: the initial state.
        torque: (T, na) commanded actuator torques, one row per step.
        noise: measurement noise: Gaussian, with a standard deviation of ``noise`` times each recorded
            channel's own standard deviation over the run (``0.01`` is "1% noise").
        key: the random key for the noise (required when ``noise > 0``).

    Returns:
        The :class:`Recording`, with the currents the motors drew (``ActuatorState.current``) and, when the model
        has a thermal model, the winding temperatures.

    Raises:
        ArgumentError: not a Model, a state that does not fit it, torques that are not ``(T, na)`` with ``T >= 1``,
            a negative or non-finite ``noise``, or ``noise > 0`` without one ``jax.random`` key.
    """
    _check_model(model, "record")
    check_state(model, state, "record")
    torque = jnp.asarray(_samples(torque, "torque"), state.u.dtype)
    if torque.ndim != 2 or torque.shape[0] < 1 or torque.shape[1] != model.na:
        raise ArgumentError(f"record: torque must have shape (T, {model.na}) with T >= 1, got {torque.shape}")
    noise = as_scalar(noise, "noise", lower=0.0)
    if noise and key is None:
        raise ArgumentError("record needs a key when noise > 0")
    if noise:
        key = as_key(key, "record")
    final, traj = jax.jit(lambda s, c: rollout(model, s, c))(state, torque)
    del final
    q = np.concatenate([np.asarray(state.q)[None], np.asarray(traj.q)])
    u = np.concatenate([np.asarray(state.u)[None], np.asarray(traj.u)])
    current = np.asarray(traj.actuator_state.current)
    channels = [q, u, current]
    if model.actuators.dynamics.any_thermal:
        temps = traj.motor_state.winding_temperature
        channels.append(np.concatenate([np.asarray(state.motor_state.winding_temperature)[None], np.asarray(temps)]))
    if noise:
        keys = jax.random.split(key, len(channels))
        channels = [
            x + noise * np.std(x, axis=0) * np.asarray(jax.random.normal(k, x.shape), np.float64)
            for x, k in zip(channels, keys, strict=True)
        ]
    temperature = channels[3] if len(channels) > 3 else None
    return Recording(channels[0], channels[1], np.asarray(torque), channels[2], temperature)


@dataclasses.dataclass
class SysidResult:
    """What :func:`fit` found.

    Attributes:
        actuators: the identified actuators.
        parameters: the identified parameters (per actuator; ``"residual"``: the learned residual's weights).
        values: parameter -> (n_actuators,) fitted values (SI units); ``"residual"`` -> (n_weights,) the
            network's weights (:func:`jaxmor.tools.residual_fit.flat_weights`).
        initial: parameter -> the values the fit started from.
        relative_std: parameter -> (n_actuators,) standard deviation relative to the value; ``nan`` where the
            parameter is not identifiable (and for the residual's weights).
        identifiable: parameter -> (n_actuators,) bool: the data determine it on its own; ``"residual"`` ->
            (n_weights,) the same per weight.
        findings: one sentence per actuator on what the data do and do not determine.
        loss_history: the loss after every iteration (the first entry: at the start).
        model: the model with the fitted values.
    """

    actuators: tuple[str, ...]
    parameters: tuple[str, ...]
    values: dict[str, np.ndarray]
    initial: dict[str, np.ndarray]
    relative_std: dict[str, np.ndarray]
    identifiable: dict[str, np.ndarray]
    findings: list[str]
    loss_history: np.ndarray
    model: Model

    def summary(self) -> str:
        """A table of the fitted values with their uncertainties, then the findings."""
        lines = [f"{'actuator':>10} {'parameter':>18} {'initial':>12} {'fitted':>12} {'rel. std':>10}"]
        for a, name in enumerate(self.actuators):
            for p in (p for p in self.parameters if p != RESIDUAL):
                std = self.relative_std[p][a]
                shown = "not ident." if not self.identifiable[p][a] else f"{100 * std:.3g}%"
                lines.append(f"{name:>10} {p:>18} {self.initial[p][a]:12.6g} {self.values[p][a]:12.6g} {shown:>10}")
        return "\n".join(lines + [""] + self.findings)


# --------------------------------------------------------------------------------------------------
# Where each parameter lives in the model and the state.


def _get(model: Model, name: str, index: np.ndarray) -> jax.Array:
    act = model.actuators
    if name == "rotor_inertia":
        return model.dof_armature[np.asarray(act.joint_v_index)[index]]
    if name in ("output_damping", "output_friction"):
        return getattr(act, name)[index]
    if name in THERMAL_PARAMETERS:
        return getattr(act.dynamics, name)[index]
    if name in BACKLASH_PARAMETERS:
        return getattr(act.backlash, BACKLASH_PARAMETERS[name])[index]
    if name in CONTROLLER_PARAMETERS:
        return getattr(act.controller, CONTROLLER_PARAMETERS[name])[index]
    return getattr(act.motor, name)[index]


def _set(model: Model, name: str, index: np.ndarray, value: jax.Array) -> Model:
    act = model.actuators
    if name == "rotor_inertia":
        joints = np.asarray(act.joint_v_index)[index]
        return model.replace(dof_armature=model.dof_armature.at[joints].set(value))
    if name in ("output_damping", "output_friction"):
        return model.replace(actuators=act.replace(**{name: getattr(act, name).at[index].set(value)}))
    if name in THERMAL_PARAMETERS:
        dynamics = act.dynamics.replace(**{name: getattr(act.dynamics, name).at[index].set(value)})
        return model.replace(actuators=act.replace(dynamics=dynamics))
    if name in BACKLASH_PARAMETERS:
        field = BACKLASH_PARAMETERS[name]
        backlash = act.backlash.replace(**{field: getattr(act.backlash, field).at[index].set(value)})
        return model.replace(actuators=act.replace(backlash=backlash))
    if name in CONTROLLER_PARAMETERS:
        field = CONTROLLER_PARAMETERS[name]
        controller = act.controller.replace(**{field: getattr(act.controller, field).at[index].set(value)})
        return model.replace(actuators=act.replace(controller=controller))
    motor = act.motor.replace(**{name: getattr(act.motor, name).at[index].set(value)})
    return model.replace(actuators=act.replace(motor=motor))


@dataclasses.dataclass(frozen=True)
class _Windows:
    """All windows of all recordings, stacked (leading axis: the windows)."""

    q0: jax.Array
    u0: jax.Array
    torque: jax.Array
    q: jax.Array
    u: jax.Array
    current: jax.Array | None
    temperature0: jax.Array | None
    temperature: jax.Array | None


def _windows(recordings: Sequence[Recording], window: int, dtype) -> _Windows:
    keys = ("q0", "u0", "torque", "q", "u", "current", "temperature0", "temperature")
    parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    with_current = all(r.current is not None for r in recordings)
    with_temperature = all(r.temperature is not None for r in recordings)
    for r in recordings:
        steps = r.torque.shape[0]
        for start in range(0, steps - window + 1, window):
            end = start + window
            parts["q0"].append(r.q[start])
            parts["u0"].append(r.u[start])
            parts["torque"].append(r.torque[start:end])
            parts["q"].append(r.q[start + 1 : end + 1])
            parts["u"].append(r.u[start + 1 : end + 1])
            if with_current:
                parts["current"].append(r.current[start:end])
            if with_temperature:
                parts["temperature0"].append(r.temperature[start])
                parts["temperature"].append(r.temperature[start + 1 : end + 1])
    if not parts["q0"]:
        raise ArgumentError(f"the recordings are shorter than one window of {window} steps")
    arrays = {k: jnp.asarray(np.stack(v), dtype) for k, v in parts.items() if v}
    return _Windows(**{k: arrays.get(k) for k in parts})


def _scale(x: jax.Array) -> jax.Array:
    """Per-channel scale of recorded samples: their standard deviation, at least 1e-3 of the largest channel's
    (a joint resting at its limit has a tiny spread; dividing by it would magnify round-off into the loss)."""
    flat = x.reshape(-1, x.shape[-1])
    std = jnp.std(flat, axis=0)
    floor = 1e-3 * jnp.max(std)
    return jnp.where(floor > 0, jnp.maximum(std, floor), 1.0)


def _actuator_indices(model: Model, actuators: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """The fitted actuators' names and their indices in the model."""
    names = _names(actuators, "actuators")
    index = np.array([actuator_index(model, a) for a in names], dtype=np.int64)
    unknown = [a for a, i in zip(names, index, strict=True) if i < 0]
    if unknown or not names:
        raise ArgumentError(
            f"actuators must name the model's actuators {list(model.actuators.names)}, got {unknown or names}"
        )
    return names, index


def _names(value: Any, what: str) -> tuple[str, ...]:
    """``value`` as a tuple of distinct names.

    Raises:
        ArgumentError: naming ``what``: not a list or tuple of strings (a single string included), or a name
            given twice.
    """
    if not isinstance(value, (list, tuple)) or not all(isinstance(x, str) for x in value):
        raise ArgumentError(f"{what} must be a list of names, got {quoted(value)}")
    twice = sorted({x for x in value if value.count(x) > 1})
    if twice:
        raise ArgumentError(f"{what} names {twice} more than once")
    return tuple(value)


def _check_drive_parts(model: Model, names: Sequence[str], index: np.ndarray, parameters: Sequence[str]) -> None:
    """Backlash parameters are fitted only for actuators that have backlash, controller gains only for actuators that
    run a controller, from a nonzero start (the fit is in log space: a zero stays zero)."""
    act = model.actuators
    for group, active, how in (
        (BACKLASH_PARAMETERS, act.backlash.active, "jaxmor.with_backlash"),
        (CONTROLLER_PARAMETERS, act.controller.active, "jaxmor.with_drive_controller"),
    ):
        asked = [p for p in parameters if p in group]
        bare = [n for n, i in zip(names, index, strict=True) if not active[int(i)]]
        if asked and bare:
            raise ArgumentError(
                f"parameters name {asked}, but actuators {bare} have none: give them one with {how} (the fit starts "
                "from its values) or fit them separately"
            )
        for p in asked:
            zero = [n for n, v in zip(names, np.asarray(_get(model, p, index)), strict=True) if v == 0]
            if zero:
                raise ArgumentError(f"{p} of {zero} starts at 0: the fit is in log space, give a nonzero start")


def _check_parameters(model: Model, parameters: Sequence[str], ideal_motor: bool) -> None:
    parameters = _names(parameters, "parameters")
    bad = [p for p in parameters if p not in PARAMETERS + (RESIDUAL,)]
    if bad or not parameters:
        raise ArgumentError(f"parameters must be among {PARAMETERS + (RESIDUAL,)}, got {list(parameters)}")
    if RESIDUAL in parameters and not model.actuators.residual.enabled:
        raise ArgumentError(
            f"parameters name {RESIDUAL!r}, but the model has no learned residual: set one with "
            "jaxmor.with_residual(model, jaxmor.residual_network(model, key))"
        )
    if ideal_motor and not {"torque_constant", "velocity_constant"} <= set(parameters):
        raise ArgumentError("ideal_motor ties torque_constant = 1 / velocity_constant: fit both")


def _checked_recordings(model: Model, recordings: Sequence[Recording]) -> list[Recording]:
    """The recordings as a list, each checked to fit the model's sizes."""
    if isinstance(recordings, Recording):
        recordings = [recordings]
    if not isinstance(recordings, (list, tuple)):
        raise ArgumentError(f"recordings must be a Recording or a list of them, got {type(recordings).__name__}")
    recordings = list(recordings)
    if not recordings or not all(isinstance(r, Recording) for r in recordings):
        raise ArgumentError("recordings must be a non-empty sequence of jaxmor.tools.sysid.Recording")
    for k, r in enumerate(recordings):
        _check_finite(k, r)
        if r.q.shape[1] != model.nq or r.u.shape[1] != model.nv or r.torque.shape[1] != model.na:
            raise ArgumentError(
                f"a recording of q {r.q.shape}, u {r.u.shape}, torque {r.torque.shape} does not fit the model "
                f"(nq={model.nq}, nv={model.nv}, na={model.na})"
            )
    return recordings


def _check_finite(k: int, recording: Recording) -> None:
    """Refuse a recording with a non-finite sample (one NaN torque biases the fit silently).

    Raises:
        ArgumentError: a NaN or infinite value; the message names the recording's index, the field, the first
            bad sample (row) and how many samples are bad.
    """
    for name in ("q", "u", "torque", "current", "temperature"):
        value = getattr(recording, name)
        if value is None:
            continue
        bad = np.flatnonzero(~np.isfinite(value).all(axis=1))
        if bad.size:
            raise ArgumentError(
                f"recordings[{k}].{name} has {bad.size} non-finite sample(s) of {value.shape[0]} (the first: sample "
                f"{bad[0]}); fit refuses them: drop or repair those samples (e.g. cut the recording there)"
            )


def _thermal_window(
    model: Model, recordings: list[Recording], thermal: list[str], names, index: np.ndarray, window: int | None
) -> int | None:
    """The window for a fit of the thermal parameters ``thermal``: a whole recording's length for ``window=None``.

    Raises:
        ArgumentError: an actuator without a thermal model, or a window that the recordings do not allow.
    """
    lacking = [a for a, i in zip(names, index, strict=True) if not model.actuators.dynamics.thermal[i]]
    if lacking:
        raise ArgumentError(f"{thermal} need actuators with a thermal model; {lacking} have none")
    lengths = {r.torque.shape[0] for r in recordings}
    whole = all(r.temperature is not None for r in recordings)
    if window is None:
        if len(lengths) != 1:
            raise ArgumentError(
                f"the thermal parameters are fitted over whole recordings of one length, got {sorted(lengths)}"
            )
        window = lengths.pop()
    elif not whole and any(window != n for n in lengths):
        raise ArgumentError(
            "the thermal parameters without recorded temperatures are fitted over whole recordings (a window's "
            f"starting temperature is unknown): pass window=None or window={sorted(lengths)[0]}, got {window}"
        )
    return window


def residual_function(
    model: Model,
    recordings: Sequence[Recording],
    actuators: Sequence[str],
    parameters: Sequence[str] = ("resistance", "torque_constant", "velocity_constant"),
    *,
    state: State | None = None,
    window: int | None = 50,
    use_currents: bool = True,
    ideal_motor: bool = False,
) -> tuple[Callable[[jax.Array], jax.Array], Callable[[jax.Array], Model], int]:
    """The fit's residuals as a function of the log-parameters (see :func:`fit` for the arguments).

    Returns:
        ``(residuals, unpack, size)``: ``residuals(theta)`` is the (N,) vector of normalized errors of the
        simulated windows (coordinates, velocities and, when recorded, currents (if used) and winding
        temperatures) for the
        log-parameters ``theta`` (``p = p0 exp(theta)``, shape (size,), zero at the model's values; with
        ``ideal_motor`` the torque constant has no entry; with ``"residual"`` the network's weights follow as
        offsets from the model's, :mod:`jaxmor.tools.residual_fit`); ``unpack(theta)`` gives the model with those
        values. The loss of :func:`fit` is ``0.5 * mean(residuals(theta) ** 2)``.

    Raises:
        ArgumentError: an argument :func:`fit` refuses (its checks of these arguments), before anything is compiled.
    """
    ideal_motor = as_bool(ideal_motor, "ideal_motor")
    use_currents = as_bool(use_currents, "use_currents")
    checked = _checked_fit(model, recordings, actuators, parameters, state, window, ideal_motor)
    names, index, recordings, window = checked
    dtype = model.body_mass.dtype
    data = _windows(recordings, window, dtype)
    currents = use_currents and data.current is not None
    temperatures = data.temperature is not None and model.actuators.dynamics.any_thermal
    template = init_state(model) if state is None else state
    scale_q, scale_u = _scale(data.q), _scale(data.u)
    scale_i = _scale(data.current[..., index]) if currents else None
    scale_t = _scale(data.temperature[..., index]) if temperatures else None
    initial = {p: _get(model, p, index) for p in parameters if p != RESIDUAL}
    free = _free(parameters, ideal_motor)
    constants = len(free) * len(names)
    weights = flat_weights(model) if RESIDUAL in parameters else None
    histories = window_histories(model, template, recordings, window) if model.actuators.residual.enabled else None

    unpack = _unpacker(model, index, initial, free, ideal_motor, weights)

    def residuals(theta: jax.Array) -> jax.Array:
        m = unpack(theta)
        voltage = template.bus_voltage
        if "bus_voltage" in parameters:
            voltage = voltage.at[index].set(_get(m, "bus_voltage", index))

        def one(q0, u0, torque, temperature0, history0):
            s = template.replace(q=q0, u=u0, bus_voltage=voltage)
            if history0 is not None:
                s = s.replace(actuator_history=history0)
            if temperature0 is not None:
                thermal_on = np.asarray(m.actuators.dynamics.thermal, bool)
                winding = jnp.where(thermal_on, temperature0, s.motor_state.winding_temperature)
                s = s.replace(motor_state=s.motor_state.replace(winding_temperature=winding))
            return rollout(m, s, torque)[1]

        traj = jax.vmap(one)(data.q0, data.u0, data.torque, data.temperature0, histories)
        parts = [((traj.q - data.q) / scale_q).reshape(-1), ((traj.u - data.u) / scale_u).reshape(-1)]
        if currents:
            simulated = traj.actuator_state.current[..., index]
            parts.append(((simulated - data.current[..., index]) / scale_i).reshape(-1))
        if temperatures:
            simulated = traj.motor_state.winding_temperature[..., index]
            parts.append(((simulated - data.temperature[..., index]) / scale_t).reshape(-1))
        return jnp.concatenate(parts)

    return residuals, unpack, constants + (0 if weights is None else weights.size)


def _checked_fit(model, recordings, actuators, parameters, state, window, ideal_motor: bool):
    """:func:`fit`'s checks of its arguments: ``(names, index, recordings, window)`` of the fit."""
    _check_model(model, "sysid")
    names, index = _actuator_indices(model, actuators)
    _check_parameters(model, parameters, ideal_motor)
    _check_drive_parts(model, names, index, parameters)
    recordings = _checked_recordings(model, recordings)
    if state is not None:
        check_state(model, state, "sysid")
    thermal = [p for p in parameters if p in THERMAL_PARAMETERS]
    if thermal:
        window = _thermal_window(model, recordings, thermal, names, index, window)
    window = as_positive_int(50 if window is None else window, "window")
    return names, index, recordings, window


def _unpacker(model: Model, index, initial: dict, free: list[str], ideal_motor: bool, weights):
    """``theta -> Model``: the model with ``p = p0 exp(theta)`` per free parameter, the torque constant ``1 / kv``
    with ``ideal_motor``, and the residual network's weights offset by the rest of ``theta``."""
    n = len(index)
    constants = len(free) * n

    def unpack(theta: jax.Array) -> Model:
        out = model
        for row, p in enumerate(free):
            out = _set(out, p, index, initial[p] * jnp.exp(theta[row * n : (row + 1) * n]))
        if ideal_motor:
            out = _set(out, "torque_constant", index, 1.0 / _get(out, "velocity_constant", index))
        if weights is not None:
            out = with_weights(out, weights + theta[constants:])
        return out

    return unpack


def _free(parameters: Sequence[str], ideal_motor: bool) -> list[str]:
    """The per-actuator parameters with entries of their own in the fitted vector (in log space): all but the
    residual's weights and, with ``ideal_motor``, the torque constant."""
    return [p for p in parameters if p != RESIDUAL and not (ideal_motor and p == "torque_constant")]


def fit(
    model: Model,
    recordings: Sequence[Recording] | Recording,
    actuators: Sequence[str],
    parameters: Sequence[str] = ("resistance", "torque_constant", "velocity_constant"),
    *,
    state: State | None = None,
    window: int | None = 50,
    iterations: int = 50,
    method: str = "gauss_newton",
    optimizer: Any = None,
    use_currents: bool = True,
    ideal_motor: bool = False,
    progress: bool = True,
) -> SysidResult:
    """Identify motor constants of ``actuators`` from recordings (see the module docstring).

    Args:
        model: the model, whose values of the identified parameters are the starting point.
        recordings: one :class:`Recording` or several (fitted together).
        actuators: names of the actuators whose parameters are identified; the others keep the model's.
        parameters: which of :data:`PARAMETERS` to identify, for each of those actuators, and ``"residual"``
            for the weights of the model's learned residual (:func:`jaxmor.with_residual`; fitted jointly, as
            offsets, best with ``method="gauss_newton"`` for a small network).
        state: the template of a window's initial state (its ``q`` and ``u`` are replaced by the recorded
            ones): PD gains, limits, the monitor flag. Default ``init_state(model)``.
        window: steps per window (multiple shooting): short enough to keep the gradient well conditioned,
            long enough for the parameters to show and for the noise of the recorded state that starts each
            window to matter little (that noise biases slope-like quantities such as ``Kt / R`` a little, an
            errors-in-variables effect the reported standard deviations do not include). The thermal parameters
            (:data:`THERMAL_PARAMETERS`) need the windows' starting temperatures: with recorded temperatures
            (:attr:`Recording.temperature`) windows start from them (the housing at the template's); without, only
            whole recordings can be fitted (``window=None``: one window per recording, starting from the
            template state's temperatures, e.g. ambient), from the fade of the current or motion as the winding
            heats.
        iterations: most iterations.
        method: ``"gauss_newton"`` (Levenberg-Marquardt) or ``"optax"``.
        optimizer: the ``optax`` optimizer of ``method="optax"`` (default ``optax.adam(0.05)``).
        use_currents: fit the recorded currents too, when every recording has them.
        ideal_motor: impose ``Kt = 1 / Kv`` (SI units; a lossless motor), which separates ``R`` and ``Kt``
            from motion alone.
        progress: print one line per iteration (loss and step) to stderr.

    Returns:
        :class:`SysidResult`.

    Raises:
        ArgumentError: not a Model; actuators or parameters that are not lists of distinct known names;
            recordings that are not Recordings, do not fit the model or hold a non-finite sample (the message names
            the recording's index, the field, the first bad sample and the count); a state that does not fit the
            model; a window or iteration count that is not a positive int; a bad method or optimizer; a flag
            (``use_currents``, ``ideal_motor``, ``progress``) that is not a bool. All are checked before anything
            is compiled.
    """
    _check_fit_options(method, optimizer, progress)
    residuals, unpack, size = residual_function(
        model, recordings, actuators, parameters, state=state, window=window,
        use_currents=use_currents, ideal_motor=ideal_motor,
    )  # fmt: skip
    iterations = as_positive_int(iterations, "iterations")
    dtype = model.body_mass.dtype
    theta = jnp.zeros(size, dtype)
    res = jax.jit(residuals)
    jac = jax.jit(jax.jacfwd(residuals))

    def loss_of(r: jax.Array) -> float:
        return 0.5 * float(jnp.mean(r * r))

    history = [loss_of(res(theta))]
    if method == "gauss_newton":
        theta, history = _levenberg_marquardt(res, jac, theta, history, iterations, progress, loss_of)
    else:
        theta, history = _optax(residuals, theta, history, iterations, progress, optimizer)
    return _result(model, actuators, parameters, unpack, res, jac, theta, history, ideal_motor)


def _check_fit_options(method: Any, optimizer: Any, progress: Any) -> None:
    """Check the options of :func:`fit` that say how it runs, before anything is compiled.

    Raises:
        ArgumentError: an unknown ``method``; an ``optimizer`` with ``method="gauss_newton"`` (it has none), or
            one that is not an ``optax`` transformation; a ``progress`` that is not a bool.
    """
    if not (isinstance(method, str) and method in ("gauss_newton", "optax")):
        raise ArgumentError(f"method must be 'gauss_newton' or 'optax', got {quoted(method)}")
    if optimizer is not None and method == "gauss_newton":
        raise ArgumentError(f"optimizer is used by method='optax' only, got {quoted(optimizer)} with 'gauss_newton'")
    if optimizer is not None and not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
        raise ArgumentError(f"optimizer must be an optax transformation (init, update), got {quoted(optimizer)}")
    as_bool(progress, "progress")


def _log(progress: bool, k: int, loss: float, note: str = "") -> None:
    if progress:
        print(f"sysid: iteration {k:3d}  loss {loss:.6e}  {note}", file=sys.stderr, flush=True)


def _levenberg_marquardt(res, jac, theta, history, iterations, progress, loss_of):
    damping = 1e-3
    r = res(theta)
    for k in range(1, iterations + 1):
        j = np.asarray(jac(theta), np.float64)
        rv = np.asarray(r, np.float64)
        h = j.T @ j
        g = j.T @ rv
        diag = np.diag(h).copy()
        diag[diag <= 0] = 1.0
        improved = False
        for _ in range(12):
            step = np.linalg.solve(h + damping * np.diag(diag), -g)
            trial = theta + jnp.asarray(step, theta.dtype)
            r_trial = res(trial)
            if loss_of(r_trial) < history[-1]:
                theta, r = trial, r_trial
                damping = max(damping / 3.0, 1e-9)
                improved = True
                break
            damping *= 4.0
        history.append(loss_of(r))
        _log(progress, k, history[-1], f"damping {damping:.1e}")
        if not improved or history[-2] - history[-1] <= 1e-12 * max(history[-2], 1e-300):
            break
    return theta, history


def _optax(residuals, theta, history, iterations, progress, optimizer):
    import optax

    optimizer = optax.adam(0.05) if optimizer is None else optimizer

    def loss(t):
        r = residuals(t)
        return 0.5 * jnp.mean(r * r)

    value_and_grad = jax.jit(jax.value_and_grad(loss))
    opt_state = optimizer.init(theta)
    for k in range(1, iterations + 1):
        value, grad = value_and_grad(theta)
        updates, opt_state = optimizer.update(grad, opt_state, theta)
        theta = optax.apply_updates(theta, updates)
        history.append(float(value))
        _log(progress, k, float(value))
    history.append(float(loss(theta)))
    return theta, history


def _result(model, actuators, parameters, unpack, res, jac, theta, history, ideal_motor) -> SysidResult:
    names = tuple(actuators)
    index = np.array([resolve_actuator(model, a) for a in names], dtype=np.int64)
    fitted = unpack(theta)
    values = {p: np.asarray(_get(fitted, p, index), np.float64) for p in parameters if p != RESIDUAL}
    initial = {p: np.asarray(_get(model, p, index), np.float64) for p in parameters if p != RESIDUAL}
    if RESIDUAL in parameters:
        values[RESIDUAL], initial[RESIDUAL] = (np.asarray(flat_weights(m), np.float64) for m in (fitted, model))
    free = _free(parameters, ideal_motor)

    # Gauss-Newton: J^T J at the optimum, its near-null directions, and the covariance sigma^2 (J^T J)^-1.
    j = np.asarray(jac(theta), np.float64)
    r = np.asarray(res(theta), np.float64)
    n, p = j.shape
    h = j.T @ j
    eigenvalues, vectors = np.linalg.eigh(h)
    top = float(eigenvalues[-1])
    # No curvature at all (an unexciting recording, e.g. all zeros): nothing is identified.
    null = eigenvalues <= IDENTIFIABILITY_THRESHOLD * top if top > 0.0 else np.ones(p, bool)
    sigma2 = float(r @ r) / max(n - p, 1)
    inverse = np.zeros((p, p))
    for i in np.flatnonzero(~null):
        inverse += np.outer(vectors[:, i], vectors[:, i]) / eigenvalues[i]
    variance = np.diag(inverse) * sigma2
    exposure = (vectors[:, null] ** 2).sum(axis=1) if null.any() else np.zeros(p)
    alone = exposure < 1e-6  # not involved in any unidentified direction

    relative_std = {q: np.full(len(names), np.nan) for q in parameters if q != RESIDUAL}
    identifiable = {q: np.zeros(len(names), bool) for q in parameters if q != RESIDUAL}
    for row, q in enumerate(free):
        for a in range(len(names)):
            k = row * len(names) + a
            identifiable[q][a] = bool(alone[k])
            if alone[k]:
                relative_std[q][a] = math.sqrt(max(variance[k], 0.0))
    if ideal_motor:  # Kt = 1 / Kv: the same relative uncertainty
        identifiable["torque_constant"] = identifiable["velocity_constant"].copy()
        relative_std["torque_constant"] = relative_std["velocity_constant"].copy()
    constants = len(free) * len(names)
    findings = _findings(names, free, vectors[:constants, null], alone)
    if RESIDUAL in parameters:
        relative_std[RESIDUAL] = np.full(p - constants, np.nan)
        identifiable[RESIDUAL] = alone[constants:].copy()
        findings.append(residual_finding(alone[constants:]))
    return SysidResult(
        names, tuple(parameters), values, initial, relative_std, identifiable, findings, np.asarray(history), fitted
    )


def _findings(names, free, null_vectors, alone) -> list[str]:
    """Sentences on what the data do not determine, per actuator, from the near-null directions of ``J^T J``."""
    out = []
    for a, name in enumerate(names):
        rows = [row * len(names) + a for row in range(len(free))]
        lost = [free[i] for i, k in enumerate(rows) if not alone[k]]
        if not lost:
            out.append(f"{name}: every parameter is identified.")
            continue
        if len(lost) == len(free) and null_vectors.shape[1] >= len(free):
            sub = null_vectors[rows]
            if np.linalg.matrix_rank(sub, tol=1e-3) >= len(free):
                out.append(f"{name}: not identifiable at all: the data do not depend on its {', '.join(free)}.")
                continue
        pair = {"resistance", "torque_constant"} <= set(lost)
        if pair and len(lost) == 2:
            out.append(
                f"{name}: resistance and torque_constant are not separately identifiable (only their ratio "
                "torque_constant / resistance is): record the currents, or use ideal_motor=True."
            )
        else:
            out.append(f"{name}: not identifiable from these data: {', '.join(lost)} (only combinations of them).")
    return out
