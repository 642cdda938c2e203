r"""The motor beyond the quasi-static region: winding temperature, current dynamics, cogging, LuGre friction.

Each feature is optional, per actuator; an actuator without any of them is the quasi-static motor of
:mod:`jaxmor.actuation.motor`, and a model in which no actuator has a feature runs exactly the quasi-static step
(the features are chosen when the model is compiled: :attr:`MotorDynamics.thermal` etc. are static).

Thermal model
-------------
The copper losses ``P = R(T_w) i^2`` [W] heat the winding (temperature ``T_w`` [degC], heat capacity ``C_w``
[J/K]). First order (no housing): ``C_w dT_w/dt = P - (T_w - T_a) / R_th``, with the thermal resistance to
ambient ``R_th`` [K/W] and the ambient temperature ``T_a``; the time constant is ``R_th C_w``. Two nodes
(a housing of capacity ``C_h``): ``C_w dT_w/dt = P - (T_w - T_h) / R_th`` and
``C_h dT_h/dt = (T_w - T_h) / R_th - (T_h - T_a) / R_ha``. The winding's resistance and the magnets' flux
follow the winding temperature::

    R(T) = R_ref (1 + alpha (T - T_ref))
    Kt(T) = Kt_ref (1 + beta (T - T_ref)),    1 / Kv(T) = (1 + beta (T - T_ref)) / Kv_ref

(``alpha`` about +0.0039 /K for copper, ``beta`` about -0.001 /K for NdFeB magnets; in SI units the torque
and back-EMF constants are the same flux, so both change). Every step evaluates the operating region with
the constants at the temperature of its beginning, so a hot motor has a lower stall torque (``Kt V / R``)
and a narrower voltage band. Discretization: the step's copper loss is held over the step (its current is
constant over the step and ``R`` is taken at ``T_w`` of the step's beginning) and the linear network is then
integrated exactly (:func:`thermal_step`): with ``alpha = 0`` and a constant current the temperatures are the
closed-form solution at every step, whatever the time step.

Temperature limit: above ``limit_start`` the drive derates the current linearly to zero at
``max_temperature`` (``limit="derate"``), or it cuts the motor off at ``max_temperature`` and turns it back on
once the winding has cooled to ``limit_start`` (``limit="cut"``, hysteresis; :attr:`MotorState.cutout`). The
factor scales the peak torque: the region becomes ``clamp(voltage band, -d tau_peak, d tau_peak)``, so a
limit needs a finite peak torque. The factor of each step is :attr:`jaxmor.ActuatorState.derating`, and a
command the derated peak refused is labelled :attr:`jaxmor.MotorSaturation.TEMPERATURE`.

Current dynamics
----------------
With a winding inductance ``L`` [H] the current obeys ``L di/dt = V - R i - w / Kv``. Over a step the driver
holds a voltage ``V`` in ``[-V_bus, V_bus]`` and the speed is that of the step's beginning; the exact solution
(zero-order hold) is ``i' = e i + (1 - e) (V - w / Kv) / R`` with ``e = exp(-h R / L)``, stable for any ``L/R``.
The driver regulates the current to the command where it can, so the reachable currents of the step are the
voltage band mapped through this map, and the motor torque of the step is ``Kt i'``::

    tau_bounds = e Kt i + (1 - e) (+-tau_stall - b w),   clamped to +-tau_peak,

which is the quasi-static region when ``L = 0`` (``e = 0``). The current is :attr:`MotorState.current`.

Cogging and LuGre friction
--------------------------
Cogging is a torque ``A sin(N theta_m + phi)`` on the rotor [Nm] at the motor angle ``theta_m`` (``T q``: the
gear ratio times the driven joint's coordinate, plus the couplings'), explicit at the step's beginning,
applied through the transmission and not clipped by the region (it is magnetic, not electrical). LuGre
friction acts at the actuator's output, on the driven joint (as ``output_friction``), with the bristle
deflection ``z`` [rad or m] (:attr:`MotorState.bristle`)::

    dz/dt = v - sigma0 |v| z / g(v),    g(v) = F_C + (F_S - F_C) exp(-(v / v_S)^2),    F = sigma0 z + sigma1 dz/dt

(``sigma2 v``, the viscous part, is the actuator's ``output_damping``). Over a step ``z' = a (z + h v')`` with
``a = 1 / (1 + h sigma0 |v| / g(v))`` at the velocity ``v`` of the step's beginning and the step's own end
velocity ``v'``: the friction torque is linear in ``v'`` and its slope enters the effective mass like the
implicit PD's, so a stiff bristle (``h^2 sigma0 / I`` large) stays stable. The decay ``a`` uses the velocity of the
step's start: a step that starts at rest under a large acceleration deflects the bristles as a spring, past the
continuous model's bound ``|z| <= F_S / sigma0``, and that step's friction can exceed ``F_S``; the stored
deflection is then projected back onto the bound (MuJoCo's exact-hold bristle update shares the overshoot).

Units: temperatures in degrees Celsius (differences in kelvin), rotor side for the electrical and cogging
quantities, output (joint) side for LuGre. Every function is pure JAX and works under ``jit``, ``vmap``
and ``grad``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.fields import leaf

__all__ = [
    "CoggingModel",
    "LugreModel",
    "MotorDynamics",
    "MotorState",
    "ThermalModel",
    "cogging_torque",
    "current_decay",
    "derating_factor",
    "flux_factor",
    "lugre_coefficients",
    "motor_at_temperature",
    "resistance_factor",
    "thermal_step",
]

#: The thermal limit modes.
LIMIT_MODES = ("derate", "cut")

#: Absolute zero [degC]: no temperature (ambient, reference, limit, a motor's state) lies below it.
ABSOLUTE_ZERO = -273.15


# --------------------------------------------------------------------------------------------------
# Definitions (plain Python floats, as read from an actuator file or written in Python).


@dataclass(frozen=True)
class ThermalModel:
    """The thermal network of one motor and its temperature limit (module docstring).

    Attributes:
        thermal_resistance: ``R_th`` [K/W], winding to ambient (first order) or winding to housing.
        heat_capacity: ``C_w`` [J/K] of the winding.
        housing_thermal_resistance: ``R_ha`` [K/W], housing to ambient (two nodes only).
        housing_heat_capacity: ``C_h`` [J/K]; 0 (default) means first order, no housing.
        ambient_temperature: ``T_a`` [degC].
        reference_temperature: ``T_ref`` [degC], at which the motor's ``R``, ``Kt`` and ``Kv`` hold.
        resistance_tempco: ``alpha`` [1/K] (copper: 0.00393).
        flux_tempco: ``beta`` [1/K] of ``Kt`` and ``1/Kv`` (0: the constants do not change).
        max_temperature: winding temperature [degC] at which the drive has derated to zero or cuts off;
            ``inf`` (default) for no limit.
        limit_start: [degC] where derating starts (``"derate"``) or below which a cut motor turns back on
            (``"cut"``); ``< max_temperature``. Ignored without a limit.
        limit: ``"derate"`` or ``"cut"``.
    """

    thermal_resistance: float
    heat_capacity: float
    housing_thermal_resistance: float = 0.0
    housing_heat_capacity: float = 0.0
    ambient_temperature: float = 25.0
    reference_temperature: float = 25.0
    resistance_tempco: float = 0.00393
    flux_tempco: float = 0.0
    max_temperature: float = math.inf
    limit_start: float = -math.inf
    limit: str = "derate"

    @property
    def time_constant(self) -> float:
        """``R_th C_w`` [s], the winding's time constant (first order)."""
        return self.thermal_resistance * self.heat_capacity

    def problem(self, peak_torque: float) -> str | None:
        """Why this model is invalid for a motor of that peak torque, or ``None``."""
        for name in ("thermal_resistance", "heat_capacity"):
            v = _float(getattr(self, name))
            if v is None or not math.isfinite(v) or v <= 0:
                return f"thermal {name} must be positive and finite, got {getattr(self, name)!r}"
        two_node = _float(self.housing_heat_capacity)
        if two_node is None or not math.isfinite(two_node) or two_node < 0:
            return f"thermal housing_heat_capacity must be non-negative and finite, got {self.housing_heat_capacity!r}"
        if two_node > 0:
            v = _float(self.housing_thermal_resistance)
            if v is None or not math.isfinite(v) or v <= 0:
                return (
                    "a thermal model with a housing needs a positive finite housing_thermal_resistance, "
                    f"got {self.housing_thermal_resistance!r}"
                )
        for name in ("ambient_temperature", "reference_temperature", "resistance_tempco", "flux_tempco"):
            v = _float(getattr(self, name))
            if v is None or not math.isfinite(v):
                return f"thermal {name} must be finite, got {getattr(self, name)!r}"
        for name in ("ambient_temperature", "reference_temperature", "max_temperature"):
            v = _float(getattr(self, name))
            if v is not None and v < ABSOLUTE_ZERO:
                return f"thermal {name} must be >= {ABSOLUTE_ZERO} degC (absolute zero), got {getattr(self, name)!r}"
        if self.limit not in LIMIT_MODES:
            return f"thermal limit must be one of {LIMIT_MODES}, got {self.limit!r}"
        top = _float(self.max_temperature)
        if top is None or math.isnan(top) or top == -math.inf:
            return f"thermal max_temperature must be a temperature or inf, got {self.max_temperature!r}"
        if math.isfinite(top):
            start = _float(self.limit_start)
            if start is None or not math.isfinite(start) or start >= top:
                return f"thermal limit_start must be finite and below max_temperature {top!r}, got {self.limit_start!r}"
            if not math.isfinite(float(peak_torque)):
                return "a temperature limit scales the peak torque: give the motor a finite peak_torque"
        return None


@dataclass(frozen=True)
class CoggingModel:
    """Cogging torque ``amplitude sin(periods theta_m + phase)`` on the rotor.

    Attributes:
        amplitude: [Nm], rotor side.
        periods: cogging periods per motor revolution [-] (e.g. the least common multiple of slots and poles).
        phase: [rad].
    """

    amplitude: float
    periods: float
    phase: float = 0.0

    def problem(self) -> str | None:
        """Why this model is invalid, or ``None``."""
        for name in ("amplitude", "periods", "phase"):
            v = _float(getattr(self, name))
            if v is None or not math.isfinite(v):
                return f"cogging {name} must be finite, got {getattr(self, name)!r}"
        return None


@dataclass(frozen=True)
class LugreModel:
    """LuGre friction at the actuator output (joint side; module docstring).

    Attributes:
        stiffness: ``sigma0`` [Nm/rad or N/m], positive.
        damping: ``sigma1`` [Nm s/rad or N s/m], non-negative.
        coulomb: ``F_C`` [Nm or N], positive.
        static: ``F_S`` [Nm or N], at least ``F_C``.
        stribeck_velocity: ``v_S`` [rad/s or m/s], positive.
    """

    stiffness: float
    damping: float
    coulomb: float
    static: float
    stribeck_velocity: float

    def problem(self) -> str | None:
        """Why this model is invalid, or ``None``."""
        for name in ("stiffness", "coulomb", "stribeck_velocity"):
            v = _float(getattr(self, name))
            if v is None or not math.isfinite(v) or v <= 0:
                return f"lugre {name} must be positive and finite, got {getattr(self, name)!r}"
        v = _float(self.damping)
        if v is None or not math.isfinite(v) or v < 0:
            return f"lugre damping must be non-negative and finite, got {self.damping!r}"
        v = _float(self.static)
        if v is None or not math.isfinite(v) or v < float(self.coulomb):
            return f"lugre static must be finite and at least coulomb {float(self.coulomb)!r}, got {self.static!r}"
        return None


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------------------------------
# Compiled parameters and the state.


@struct.dataclass
class MotorDynamics:
    """The dynamic motor features of ``na`` actuators, compiled: every constant an (na,) array leaf.

    Where an actuator lacks a feature its constants are neutral (inductance 0, no heating, zero cogging and
    friction) and the feature's static flag is false; a feature whose flags are all false costs nothing in
    the step.

    Attributes:
        inductive: per actuator, whether it has an inductance (static).
        thermal: per actuator, whether it has a thermal model (static).
        housing: per actuator, whether its thermal model has a housing node (static).
        cut: per actuator, whether its temperature limit cuts (``True``) or derates (static).
        cogging: per actuator, whether it has cogging (static).
        lugre: per actuator, whether it has LuGre friction (static).
        inductance: (na,) ``L`` [H].
        thermal_resistance: (na,) ``R_th`` [K/W].
        heat_capacity: (na,) ``C_w`` [J/K].
        housing_thermal_resistance: (na,) ``R_ha`` [K/W].
        housing_heat_capacity: (na,) ``C_h`` [J/K].
        ambient_temperature: (na,) ``T_a`` [degC].
        reference_temperature: (na,) ``T_ref`` [degC].
        resistance_tempco: (na,) ``alpha`` [1/K].
        flux_tempco: (na,) ``beta`` [1/K].
        max_temperature: (na,) [degC], ``inf`` where no limit.
        limit_start: (na,) [degC].
        cogging_amplitude: (na,) [Nm].
        cogging_periods: (na,) [-].
        cogging_phase: (na,) [rad].
        lugre_stiffness, lugre_damping, lugre_coulomb, lugre_static, lugre_stribeck_velocity: (na,) the LuGre
            constants (:class:`LugreModel`).
    """

    inductive: tuple[bool, ...] = struct.field(pytree_node=False)
    thermal: tuple[bool, ...] = struct.field(pytree_node=False)
    housing: tuple[bool, ...] = struct.field(pytree_node=False)
    cut: tuple[bool, ...] = struct.field(pytree_node=False)
    cogging: tuple[bool, ...] = struct.field(pytree_node=False)
    lugre: tuple[bool, ...] = struct.field(pytree_node=False)
    inductance: jax.Array = leaf(("na",), randomize="motor.inductance", domain="non-negative")
    thermal_resistance: jax.Array = leaf(("na",), randomize="motor.thermal_resistance", domain="positive")
    heat_capacity: jax.Array = leaf(("na",), randomize="motor.heat_capacity", domain="positive")
    housing_thermal_resistance: jax.Array = leaf(
        ("na",), randomize="motor.housing_thermal_resistance", domain="positive"
    )
    housing_heat_capacity: jax.Array = leaf(("na",), randomize="motor.housing_heat_capacity", domain="positive")
    ambient_temperature: jax.Array = leaf(("na",), randomize="motor.ambient_temperature", domain="temperature")
    reference_temperature: jax.Array = leaf(("na",))
    resistance_tempco: jax.Array = leaf(("na",), randomize="motor.resistance_tempco", domain="finite")
    flux_tempco: jax.Array = leaf(("na",), randomize="motor.flux_tempco", domain="finite")
    max_temperature: jax.Array = leaf(("na",))
    limit_start: jax.Array = leaf(("na",))
    cogging_amplitude: jax.Array = leaf(("na",), randomize="motor.cogging_amplitude", domain="finite")
    cogging_periods: jax.Array = leaf(("na",))
    cogging_phase: jax.Array = leaf(("na",))
    lugre_stiffness: jax.Array = leaf(("na",), randomize="motor.lugre_stiffness", domain="positive")
    lugre_damping: jax.Array = leaf(("na",))
    lugre_coulomb: jax.Array = leaf(("na",), randomize="motor.lugre_coulomb", domain="positive")
    lugre_static: jax.Array = leaf(("na",), randomize="motor.lugre_static", domain="positive")
    lugre_stribeck_velocity: jax.Array = leaf(("na",))

    @property
    def any_inductive(self) -> bool:
        """Whether any actuator has an inductance (static)."""
        return any(self.inductive)

    @property
    def any_thermal(self) -> bool:
        """Whether any actuator has a thermal model (static)."""
        return any(self.thermal)

    @property
    def any_cogging(self) -> bool:
        """Whether any actuator has cogging (static)."""
        return any(self.cogging)

    @property
    def any_lugre(self) -> bool:
        """Whether any actuator has LuGre friction (static)."""
        return any(self.lugre)


#: The static fields of :class:`MotorDynamics`: which actuators have which feature.
STATIC_FIELDS = tuple(f.name for f in dataclasses.fields(MotorDynamics) if not f.metadata.get("pytree_node", True))


def compile_dynamics(
    inductance: list[float],
    thermal: list[ThermalModel | None],
    cogging: list[CoggingModel | None],
    lugre: list[LugreModel | None],
) -> MotorDynamics:
    """The arrays of :class:`MotorDynamics` from the per-actuator definitions (``None``: the feature is absent)."""

    def col(values):
        return jnp.asarray(np.asarray(values, dtype=np.float64).reshape(len(inductance)))

    def of(models, attr, neutral):
        return col([neutral if m is None else float(getattr(m, attr)) for m in models])

    return MotorDynamics(
        inductive=tuple(float(v) > 0 for v in inductance),
        thermal=tuple(t is not None for t in thermal),
        housing=tuple(t is not None and float(t.housing_heat_capacity) > 0 for t in thermal),
        cut=tuple(t is not None and t.limit == "cut" for t in thermal),
        cogging=tuple(c is not None for c in cogging),
        lugre=tuple(f is not None for f in lugre),
        inductance=col([float(v) for v in inductance]),
        thermal_resistance=of(thermal, "thermal_resistance", 1.0),
        heat_capacity=of(thermal, "heat_capacity", 1.0),
        housing_thermal_resistance=of(thermal, "housing_thermal_resistance", 1.0),
        housing_heat_capacity=of(thermal, "housing_heat_capacity", 0.0),
        ambient_temperature=of(thermal, "ambient_temperature", 25.0),
        reference_temperature=of(thermal, "reference_temperature", 25.0),
        resistance_tempco=of(thermal, "resistance_tempco", 0.0),
        flux_tempco=of(thermal, "flux_tempco", 0.0),
        max_temperature=of(thermal, "max_temperature", math.inf),
        limit_start=col([0.0 if t is None or not math.isfinite(t.max_temperature) else t.limit_start for t in thermal]),
        cogging_amplitude=of(cogging, "amplitude", 0.0),
        cogging_periods=of(cogging, "periods", 0.0),
        cogging_phase=of(cogging, "phase", 0.0),
        lugre_stiffness=of(lugre, "stiffness", 0.0),
        lugre_damping=of(lugre, "damping", 0.0),
        lugre_coulomb=of(lugre, "coulomb", 1.0),
        lugre_static=of(lugre, "static", 1.0),
        lugre_stribeck_velocity=of(lugre, "stribeck_velocity", 1.0),
    )


def features_of(dynamics: MotorDynamics, i: int) -> dict:
    """The definitions of actuator ``i``'s features (``inductance``, ``thermal``, ``cogging``, ``lugre``), as
    :class:`jaxmor.ActuatorDefinition` takes them: the inverse of :func:`compile_dynamics`."""

    def value(name):
        return float(np.asarray(getattr(dynamics, name))[i])

    thermal = None
    if dynamics.thermal[i]:
        top = value("max_temperature")
        thermal = ThermalModel(
            thermal_resistance=value("thermal_resistance"),
            heat_capacity=value("heat_capacity"),
            housing_thermal_resistance=value("housing_thermal_resistance") if dynamics.housing[i] else 0.0,
            housing_heat_capacity=value("housing_heat_capacity") if dynamics.housing[i] else 0.0,
            ambient_temperature=value("ambient_temperature"),
            reference_temperature=value("reference_temperature"),
            resistance_tempco=value("resistance_tempco"),
            flux_tempco=value("flux_tempco"),
            max_temperature=top,
            limit_start=value("limit_start") if math.isfinite(top) else -math.inf,
            limit="cut" if dynamics.cut[i] else "derate",
        )
    cogging = None
    if dynamics.cogging[i]:
        cogging = CoggingModel(value("cogging_amplitude"), value("cogging_periods"), value("cogging_phase"))
    lugre = None
    if dynamics.lugre[i]:
        lugre = LugreModel(
            *(value(f"lugre_{n}") for n in ("stiffness", "damping", "coulomb", "static", "stribeck_velocity"))
        )
    inductance = value("inductance") if dynamics.inductive[i] else 0.0
    return {"inductance": inductance, "thermal": thermal, "cogging": cogging, "lugre": lugre}


def concatenate_dynamics(a: MotorDynamics, b: MotorDynamics) -> MotorDynamics:
    """The dynamics of the actuators of ``a`` followed by those of ``b``."""
    statics = {f: getattr(a, f) + getattr(b, f) for f in STATIC_FIELDS}
    leaves = {
        f: jnp.concatenate([jnp.asarray(getattr(a, f)), jnp.asarray(getattr(b, f), jnp.asarray(getattr(a, f)).dtype)])
        for f in MotorDynamics.__dataclass_fields__
        if f not in statics
    }
    return MotorDynamics(**statics, **leaves)


@struct.dataclass
class MotorState:
    """The dynamic state of the motors of one world; each field (na,).

    Attributes:
        winding_temperature: ``T_w`` [degC] (the ambient temperature for a motor without a thermal model).
        housing_temperature: ``T_h`` [degC] (the ambient temperature without a housing node).
        current: the winding current of the last step [A] (``tau_m / Kt``); the initial value of the next
            step's current when the motor has an inductance.
        bristle: LuGre bristle deflection ``z`` [rad or m].
        cutout: bool, the temperature limit has cut the motor off (``limit="cut"``), until it has cooled to
            ``limit_start``.
    """

    winding_temperature: jax.Array
    housing_temperature: jax.Array
    current: jax.Array
    bristle: jax.Array
    cutout: jax.Array


def initial_motor_state(dynamics: MotorDynamics, na: int, dtype) -> MotorState:
    """Motors at rest at their ambient temperature: no current, no bristle deflection, not cut off."""
    ambient = jnp.asarray(dynamics.ambient_temperature, dtype).reshape(na)
    zero = jnp.zeros((na,), dtype)
    return MotorState(ambient, ambient, zero, zero, jnp.zeros((na,), bool))


# --------------------------------------------------------------------------------------------------
# The physics.


def resistance_factor(dynamics: MotorDynamics, temperature: jax.Array) -> jax.Array:
    """``1 + alpha (T - T_ref)``: ``R(T) / R_ref`` at winding temperature ``temperature`` [degC]."""
    dtype = temperature.dtype
    alpha = jnp.asarray(dynamics.resistance_tempco, dtype)
    return 1.0 + alpha * (temperature - jnp.asarray(dynamics.reference_temperature, dtype))


def flux_factor(dynamics: MotorDynamics, temperature: jax.Array) -> jax.Array:
    """``1 + beta (T - T_ref)``: ``Kt(T) / Kt_ref`` (and ``Kv_ref / Kv(T)``) at ``temperature`` [degC]."""
    dtype = temperature.dtype
    beta = jnp.asarray(dynamics.flux_tempco, dtype)
    return 1.0 + beta * (temperature - jnp.asarray(dynamics.reference_temperature, dtype))


def motor_at_temperature(motor, dynamics: MotorDynamics, temperature: jax.Array):
    """The motors' constants at winding temperature ``temperature`` [degC] (na,): ``R(T)``, ``Kt(T)`` and
    ``Kv(T)`` for the motors with a thermal model, the others' unchanged; the bus voltage and peak as given.

    Args:
        motor: a :class:`jaxmor.DcMotorParameters` with (na,) fields.
        dynamics: the actuators' :class:`MotorDynamics`.
        temperature: (na,) winding temperatures [degC].
    """
    on = np.asarray(dynamics.thermal, bool)
    dtype = temperature.dtype
    flux = flux_factor(dynamics, temperature)
    resistance = jnp.asarray(motor.resistance, dtype) * resistance_factor(dynamics, temperature)
    return motor.replace(
        resistance=jnp.where(on, resistance, motor.resistance),
        torque_constant=jnp.where(on, jnp.asarray(motor.torque_constant, dtype) * flux, motor.torque_constant),
        velocity_constant=jnp.where(on, jnp.asarray(motor.velocity_constant, dtype) / flux, motor.velocity_constant),
    )


def derating_factor(dynamics: MotorDynamics, temperature: jax.Array, cutout: jax.Array) -> jax.Array:
    """The fraction [0, 1] of the peak torque the drive allows at winding temperature ``temperature``.

    ``"derate"``: ``clip((T_max - T) / (T_max - T_start), 0, 1)``; ``"cut"``: 0 while cut off, else 1; 1 for an
    actuator without a limit (``T_max = inf``).
    """
    dtype = temperature.dtype
    top = jnp.asarray(dynamics.max_temperature, dtype)
    limited = jnp.isfinite(top)
    span = jnp.where(limited, top - jnp.asarray(dynamics.limit_start, dtype), 1.0)
    derate = jnp.clip((jnp.where(limited, top, 0.0) - temperature) / span, 0.0, 1.0)
    derate = jnp.where(limited, derate, 1.0)
    cut = jnp.where(cutout, 0.0, 1.0).astype(dtype)
    return jnp.where(np.asarray(dynamics.cut, bool), cut, derate)


def next_cutout(dynamics: MotorDynamics, temperature: jax.Array, cutout: jax.Array) -> jax.Array:
    """The cut-off flag after a step that ended at winding temperature ``temperature`` (hysteresis)."""
    dtype = temperature.dtype
    on = temperature >= jnp.asarray(dynamics.max_temperature, dtype)
    off = temperature <= jnp.asarray(dynamics.limit_start, dtype)
    return np.asarray(dynamics.cut, bool) & (on | (cutout & ~off))


def current_decay(dynamics: MotorDynamics, resistance: jax.Array, h: jax.Array) -> jax.Array:
    """``e = exp(-h R / L)``: the fraction of the current that survives a step (0 without inductance)."""
    dtype = resistance.dtype
    inductance = jnp.asarray(dynamics.inductance, dtype)
    has = inductance > 0
    return jnp.where(has, jnp.exp(-h * resistance / jnp.where(has, inductance, 1.0)), 0.0)


def thermal_step(
    dynamics: MotorDynamics, winding: jax.Array, housing: jax.Array, power: jax.Array, h: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The winding and housing temperatures [degC] after a step of duration ``h`` [s] with the copper loss
    ``power`` [W] held over it: the exact solution of the linear network (module docstring).

    First order: ``x' = x* + (x - x*) exp(-h / (R_th C_w))`` with ``x = T_w - T_a`` and ``x* = P R_th``. Two
    nodes: ``x' = x* + exp(A h) (x - x*)`` for ``x = (T_w - T_a, T_h - T_a)``, ``x* = P (R_th + R_ha, R_ha)``;
    ``A``'s eigenvalues ``m +- s`` are real, negative and distinct (``s > 0``) and
    ``exp(A h) = exp(m h) (cosh(s h) I + sinh(s h) / s (A - m I))``. An actuator without a thermal model keeps
    its temperatures.
    """
    dtype = winding.dtype
    ambient = jnp.asarray(dynamics.ambient_temperature, dtype)
    r_w = jnp.asarray(dynamics.thermal_resistance, dtype)
    c_w = jnp.asarray(dynamics.heat_capacity, dtype)
    housing_on = np.asarray(dynamics.housing, bool)
    r_h = jnp.where(housing_on, jnp.asarray(dynamics.housing_thermal_resistance, dtype), 1.0)
    c_h = jnp.where(housing_on, jnp.asarray(dynamics.housing_heat_capacity, dtype), 1.0)
    xw, xh = winding - ambient, housing - ambient
    # First order.
    decay = jnp.exp(-h / (r_w * c_w))
    steady = power * r_w
    first = steady + (xw - steady) * decay
    # Two nodes: exp(A h) = exp(m h) (cosh(s h) I + sinh(s h) / s (A - m I)) with m the mean of the eigenvalues and
    # s their half spread, a form without the cancellation of the eigen-decomposition when h is small; for
    # s h > 20 exp(-2 s h) is below round-off and the exponentials are taken apart so none overflows.
    a11, a12 = -1.0 / (c_w * r_w), 1.0 / (c_w * r_w)
    a21, a22 = 1.0 / (c_h * r_w), -1.0 / (c_h * r_w) - 1.0 / (c_h * r_h)
    mean = 0.5 * (a11 + a22)
    spread = jnp.sqrt(0.25 * (a11 - a22) ** 2 + a12 * a21)
    small = spread * h < 20.0
    sh = jnp.where(small, spread * h, 0.0)
    cosh = jnp.where(small, jnp.exp(mean * h) * jnp.cosh(sh), 0.5 * jnp.exp((mean + spread) * h))
    sinh = jnp.where(small, jnp.exp(mean * h) * jnp.sinh(sh), cosh) / spread
    sw, shh = power * (r_w + r_h), power * r_h
    dw, dh = xw - sw, xh - shh
    two_w = sw + cosh * dw + sinh * ((a11 - mean) * dw + a12 * dh)
    two_h = shh + cosh * dh + sinh * (a21 * dw + (a22 - mean) * dh)
    on = np.asarray(dynamics.thermal, bool)
    new_w = jnp.where(on, jnp.where(housing_on, two_w, first) + ambient, winding)
    new_h = jnp.where(on & housing_on, two_h + ambient, housing)
    return new_w, new_h


def cogging_torque(dynamics: MotorDynamics, motor_angle: jax.Array) -> jax.Array:
    """(na,) cogging torque ``A sin(N theta_m + phi)`` [Nm] on the rotor at motor angles ``motor_angle`` [rad]."""
    dtype = motor_angle.dtype
    amplitude = jnp.asarray(dynamics.cogging_amplitude, dtype)
    periods = jnp.asarray(dynamics.cogging_periods, dtype)
    return amplitude * jnp.sin(periods * motor_angle + jnp.asarray(dynamics.cogging_phase, dtype))


def lugre_coefficients(
    dynamics: MotorDynamics, bristle: jax.Array, velocity: jax.Array, h: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The step's LuGre friction as a function of the end velocity ``v'`` of the driven joint (module docstring).

    Returns:
        ``(offset, slope, a)``: the friction torque over the step is ``-(offset + slope v')`` [Nm or N] and the
        bristle deflection after it ``a (z + h v')``; zero friction for an actuator without LuGre.
    """
    dtype = velocity.dtype
    sigma0 = jnp.asarray(dynamics.lugre_stiffness, dtype)
    sigma1 = jnp.asarray(dynamics.lugre_damping, dtype)
    coulomb = jnp.asarray(dynamics.lugre_coulomb, dtype)
    static = jnp.asarray(dynamics.lugre_static, dtype)
    ratio = velocity / jnp.asarray(dynamics.lugre_stribeck_velocity, dtype)
    g = coulomb + (static - coulomb) * jnp.exp(-ratio * ratio)
    a = 1.0 / (1.0 + h * sigma0 * jnp.abs(velocity) / g)
    offset = (sigma0 * a + sigma1 * (a - 1.0) / h) * bristle
    slope = a * (sigma0 * h + sigma1)
    on = np.asarray(dynamics.lugre, bool)
    return jnp.where(on, offset, 0.0), jnp.where(on, slope, 0.0), jnp.where(on, a, 1.0)
