r"""DC/BLDC motor model and its electro-mechanical operating region (EM-MOR).

The model
---------
Under quasi-static conditions (the current changes slowly compared to the time step, the assumption of a
dynamometer torque-speed curve) the voltage over a DC motor and its electromagnetic torque are

.. math::

    V = R\,i + \frac{\omega}{K_v}, \qquad \tau = K_t\,i,

with the winding resistance ``R`` [Ohm], the current ``i`` [A], the motor speed ``omega`` [rad/s], the
velocity constant ``Kv`` [rad/s/V] (the inverse of the back-EMF constant) and the torque constant ``Kt``
[Nm/A]. The driver applies any voltage in ``[-Vbus, Vbus]`` and the core saturates at the peak torque, so
the admissible torque at a speed is limited by

.. math::

    -V_{bus} \le \frac{R}{K_t}\,\tau + \frac{\omega}{K_v} \le V_{bus}, \qquad |\tau| \le \tau_{peak}.

Solved for the torque, the voltage limits are two parallel lines of slope ``-b`` through ``+-tau_stall``:

.. math::

    \tau_{min}(\omega) = \mathrm{clamp}(-\tau_{stall} - b\,\omega, -\tau_{peak}, \tau_{peak}), \qquad
    \tau_{max}(\omega) = \mathrm{clamp}(\phantom{-}\tau_{stall} - b\,\omega, -\tau_{peak}, \tau_{peak}),

with the stall torque ``tau_stall = Kt Vbus / R`` [Nm] and the back-EMF damping ``b = Kt / (R Kv)``
[Nm s/rad]. In the torque-speed plane the region is a parallelogram: the slanted edges are the voltage
limits, the horizontal edges the peak torque. Characteristic speeds:

* no-load speed ``Kv Vbus``: the motor cannot drive faster (``tau_max`` reaches zero there);
* corner speed ``Kv (Vbus - R tau_peak / Kt)``: above it the voltage, not the peak torque, limits driving;
* overspeed limit ``Kv (Vbus + R tau_peak / Kt)``: above it even full reverse voltage drives more than the
  peak current against the back EMF.

Overspeed
---------
The region limits the torque, never the speed: external forces can back-drive a motor past its overspeed
limit. There the voltage band ``[-tau_stall - b w, tau_stall - b w]`` lies entirely below ``-tau_peak``
(forward) or above ``+tau_peak`` (reverse) and no longer meets the peak band. The saturated core caps the
torque at the peak, so the interval collapses to the single torque ``-tau_peak`` (``+tau_peak`` below the
negative overspeed limit), the peak torque opposing the motion. The clamp formulas above give exactly this
collapse (both lines clamp to the same peak), so no separate branch exists and the bounds stay continuous
and monotone in the speed. Physically a drive past this limit cannot hold the braking current down to the
peak (even full forward voltage lets more flow); the model keeps the peak and reports the driver's voltage
clamped to the bus (:attr:`jaxmor.ActuatorState.voltage`).

Saturation labels
-----------------
Each side of the interval carries the bound that limits it (:class:`MotorSaturation`). A side is labelled
``VOLTAGE`` when its voltage line lies strictly inside the side's peak bound (``tau_stall - b w < tau_peak``
for the upper side, ``-tau_stall - b w > -tau_peak`` for the lower side) and ``PEAK_TORQUE`` otherwise
(ties go to ``PEAK_TORQUE``). In forward overspeed this labels the upper side ``VOLTAGE`` (the voltage cannot
reduce the braking current below the peak: a request above ``-tau_peak`` is refused by the back EMF) and
the lower side ``PEAK_TORQUE`` (a request for even more braking is refused by the saturated core), and
mirrored in reverse overspeed. With ``peak_torque = inf`` both sides are always ``VOLTAGE``.

Conventions
-----------
All quantities are SI and on the motor (rotor) side of the gear: multiply a motor torque by the gear ratio
to get the torque at the gear output. Every function is pure JAX and elementwise: its arguments (and the
fields of :class:`DcMotorParameters`) broadcast against each other, the results have the broadcast shape,
and everything works under ``jit``, ``vmap`` and ``grad``. Floating results keep the input dtype (float32
stays float32; Python scalars follow JAX's weak typing); saturation labels are ``int32`` arrays holding
:class:`MotorSaturation` values. Parameters are not validated here (that is impossible inside ``jit``);
check :meth:`DcMotorParameters.is_valid` where the parameters enter the program (the loaders, the actuator
setters and ``set_bus_voltage`` apply the same rule, :func:`motor_validity`).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.fields import leaf

ArrayLike = jnp.ndarray | float

__all__ = [
    "MOTOR_FIELDS",
    "DcMotorParameters",
    "MotorSaturation",
    "MotorTorqueBounds",
    "clip_motor_torque",
    "motor_operating_region_violation",
    "motor_problem",
    "motor_torque_bounds",
    "motor_torque_bounds_from_constants",
    "motor_validity",
]


class MotorSaturation(enum.IntEnum):
    """The bound of the operating region that limits a motor torque.

    Inside ``jit`` a saturation is an ``int32`` array holding these values; compare it with the members,
    e.g. ``saturation == MotorSaturation.VOLTAGE``.
    """

    NONE = 0
    """The torque is inside the operating region."""
    PEAK_TORQUE = 1
    """The torque is limited by the peak torque (core saturation)."""
    VOLTAGE = 2
    """The torque is limited by the bus voltage (back EMF)."""
    TEMPERATURE = 3
    """The torque is limited by the peak torque derated for the winding temperature
    (:mod:`jaxmor.actuation.motor_dynamics`)."""


def _label(value: MotorSaturation) -> jnp.ndarray:
    return jnp.asarray(int(value), dtype=jnp.int32)


@struct.dataclass
class DcMotorParameters:
    """Steady-state electrical model of a DC/BLDC motor, rotor side, SI units.

    Every field is an array leaf (a scalar or an array of any shape, all broadcastable),
    so the parameters can be batched with ``vmap`` and differentiated.

    Attributes:
        resistance: winding resistance R [Ohm].
        torque_constant: torque constant Kt [Nm/A].
        velocity_constant: velocity constant Kv [rad/s/V], the inverse of the back-EMF constant.
        bus_voltage: bus voltage V_bus [V].
        peak_torque: peak torque [Nm]; ``inf`` leaves only the voltage limits.
    """

    resistance: jnp.ndarray = leaf(("na",), randomize="motor.resistance", domain="motor")
    torque_constant: jnp.ndarray = leaf(("na",), randomize="motor.torque_constant", domain="motor")
    velocity_constant: jnp.ndarray = leaf(("na",), randomize="motor.velocity_constant", domain="motor")
    bus_voltage: jnp.ndarray = leaf(("na",), randomize="motor.bus_voltage", domain="motor")
    peak_torque: jnp.ndarray = leaf(("na",), randomize="motor.peak_torque", domain="motor", default=float("inf"))

    def torque_per_volt(self) -> jnp.ndarray:
        """Motor torque per volt, ``Kt / R`` [Nm/V]; broadcast shape of the fields."""
        return self.torque_constant / self.resistance

    def back_emf_damping(self) -> jnp.ndarray:
        """Slope of the voltage limits, ``Kt / (R Kv)`` [Nm s/rad]; broadcast shape of the fields.

        A motor at its voltage limit acts as a damper with this coefficient.
        """
        return self.torque_per_volt() / self.velocity_constant

    def stall_torque(self) -> jnp.ndarray:
        """Torque at zero speed and full bus voltage, ``Kt Vbus / R`` [Nm]; broadcast shape of the fields."""
        return self.torque_per_volt() * self.bus_voltage

    def no_load_speed(self) -> jnp.ndarray:
        """Speed at zero torque and full bus voltage, ``Kv Vbus`` [rad/s]; broadcast shape of the fields."""
        return self.velocity_constant * self.bus_voltage

    def corner_speed(self) -> jnp.ndarray:
        """Speed above which the voltage, not the peak torque, limits driving, ``Kv (Vbus - R peak / Kt)``.

        [rad/s]; broadcast shape of the fields. Negative when the stall torque is below the peak torque
        (the voltage limits driving at every forward speed), ``-inf`` for an infinite peak torque.
        """
        return self.velocity_constant * (self.bus_voltage - self.peak_torque / self.torque_per_volt())

    def overspeed_limit(self) -> jnp.ndarray:
        """Speed above which even full reverse voltage drives more than the peak current.

        ``Kv (Vbus + R peak / Kt)`` [rad/s]; broadcast shape of the fields; ``inf`` for an infinite peak
        torque. Beyond ``+-overspeed_limit()`` the region collapses to the peak torque opposing the motion.
        """
        return self.velocity_constant * (self.bus_voltage + self.peak_torque / self.torque_per_volt())

    def is_valid(self) -> jnp.ndarray:
        """Whether the parameters define a region, as a ``bool`` array of the fields' broadcast shape.

        True where R, Kt, Kv and Vbus are positive and finite, the peak torque is positive (it may be
        ``inf``), and the derived constants (torque per volt, stall torque, back-EMF damping, no-load speed)
        are positive and finite: finite parameters can overflow (or underflow) them. NaN is never valid.
        The rule is :func:`motor_validity`, the one the loaders and ``set_bus_voltage`` apply.
        """
        valid = jnp.asarray(True)
        for _, _, ok in motor_validity(self, jnp):
            valid = valid & ok
        return valid


#: The names of :class:`DcMotorParameters`' fields, in declaration order.
MOTOR_FIELDS = tuple(field.name for field in dataclasses.fields(DcMotorParameters))


def motor_validity(motor: DcMotorParameters, xp=jnp) -> list[tuple[str, object, object]]:
    """The spec's ``DcMotorParameters::isValid``, condition by condition, in the order they are reported.

    Args:
        motor: the parameters (any broadcastable arrays of ``xp``).
        xp: the array module the conditions are evaluated with (``jax.numpy``, or ``numpy`` for checks
            outside ``jit``).

    Returns:
        ``(name, value, ok)`` per condition: R, Kt, Kv, Vbus positive and finite; the peak torque
        positive (``inf`` allowed); and the derived constants the region is computed from
        (:meth:`DcMotorParameters.torque_per_volt`, ``stall_torque``, ``back_emf_damping``,
        ``no_load_speed``) positive and finite. ``ok`` is a bool array.
    """

    def positive_finite(x):
        return xp.isfinite(x) & (x > 0)

    out = [
        (name, getattr(motor, name), positive_finite(getattr(motor, name)))
        for name in MOTOR_FIELDS
        if name != "peak_torque"
    ]
    out.append(("peak_torque", motor.peak_torque, xp.asarray(motor.peak_torque) > 0))
    for name, value in (
        ("torque per volt Kt/R", motor.torque_per_volt()),
        ("stall torque Kt*Vbus/R", motor.stall_torque()),
        ("back-EMF damping Kt/(R*Kv)", motor.back_emf_damping()),
        ("no-load speed Kv*Vbus", motor.no_load_speed()),
    ):
        out.append((name, value, positive_finite(value)))
    return out


def motor_problem(motor: DcMotorParameters, dtype: Any = np.float64) -> str | None:
    """Why a motor with scalar parameters is invalid, or ``None`` if it is valid (:func:`motor_validity`).

    Evaluated with NumPy outside ``jit``, in ``dtype``: the dtype the model stores the parameters in (a
    stall torque ``Kt Vbus / R`` finite in float64 can overflow float32); for definitions, loaders and setters.

    Args:
        motor: the parameters (scalars).
        dtype: the dtype the parameters are stored and the region computed in.

    Returns:
        The first broken condition, worded for a message, or ``None``.
    """
    values = {}
    for name in MOTOR_FIELDS:
        try:
            values[name] = np.float64(float(getattr(motor, name)))
        except (TypeError, ValueError, AttributeError):
            return f"{name} is not a number"
    with np.errstate(all="ignore"):
        stored = {name: np.asarray(value).astype(dtype)[()] for name, value in values.items()}
        for name, value, ok in motor_validity(DcMotorParameters(**stored), np):
            if bool(ok):
                continue
            if name in values:
                need = "positive" if name == "peak_torque" else "positive and finite"
                return f"{name} must be {need}, got {float(values[name])!r}" + _in(stored[name], values[name], dtype)
            return (
                f"the {name} = {float(value)!r} is not positive and finite (the parameters overflow or underflow it"
                f"{'' if np.dtype(dtype) == np.float64 else ' in ' + np.dtype(dtype).name})"
            )
    return None


def _in(stored: Any, value: Any, dtype: Any) -> str:
    """`` (... in float32)`` when storing ``value`` in ``dtype`` changed it, for a message."""
    return "" if stored == value else f" ({float(stored)!r} in {np.dtype(dtype).name}, the model's dtype)"


@struct.dataclass
class MotorTorqueBounds:
    """Admissible motor torque interval at a given motor speed (rotor side).

    All fields have the broadcast shape of the inputs they were computed from.

    Attributes:
        lower: lowest admissible motor torque [Nm].
        upper: highest admissible motor torque [Nm]; ``lower <= upper`` always.
        lower_saturation: bound that limits torques below ``lower`` (``int32``, a :class:`MotorSaturation`).
        upper_saturation: bound that limits torques above ``upper`` (``int32``, a :class:`MotorSaturation`).
    """

    lower: jnp.ndarray
    upper: jnp.ndarray
    lower_saturation: jnp.ndarray
    upper_saturation: jnp.ndarray

    def clip(self, torque: ArrayLike) -> tuple[jnp.ndarray, jnp.ndarray]:
        """The admissible torque nearest ``torque`` [Nm] and the label of the side that clipped it.

        Returns:
            ``(clipped, saturation)``: the clipped torque [Nm] and an ``int32`` :class:`MotorSaturation`
            (``NONE`` where the request was admissible), both of the broadcast shape.
        """
        clipped = jnp.minimum(jnp.maximum(torque, self.lower), self.upper)
        saturation = jnp.where(
            torque > self.upper,
            self.upper_saturation,
            jnp.where(torque < self.lower, self.lower_saturation, _label(MotorSaturation.NONE)),
        )
        return clipped, saturation

    def violation(self, torque: ArrayLike) -> jnp.ndarray:
        """Distance [Nm] of ``torque`` outside ``[lower, upper]``; exactly zero inside."""
        return jnp.maximum(self.lower - torque, 0) + jnp.maximum(torque - self.upper, 0)


def motor_torque_bounds_from_constants(
    stall_torque: ArrayLike,
    back_emf_damping: ArrayLike,
    peak_torque: ArrayLike,
    speed: ArrayLike,
    offset: ArrayLike | None = None,
) -> MotorTorqueBounds:
    """Admissible motor torque at ``speed``, from the motor constants evaluated once.

    The voltage limits are lines of slope ``-back_emf_damping`` through ``+-stall_torque``, clamped into
    ``[-peak_torque, peak_torque]``. Beyond the overspeed limit both lines clamp to the same peak, so the
    interval collapses to the peak torque opposing the motion (see the module docstring for the labels).

    Args:
        stall_torque: :meth:`DcMotorParameters.stall_torque` [Nm].
        back_emf_damping: :meth:`DcMotorParameters.back_emf_damping` [Nm s/rad].
        peak_torque: :attr:`DcMotorParameters.peak_torque` [Nm], may be ``inf``.
        speed: motor (rotor-side) speed [rad/s].
        offset: a torque [Nm] added to both voltage lines before the peak clamp, or ``None`` (none): the part
            of the step's torque an inductance carries over from the last step (:mod:`jaxmor.actuation.motor_dynamics`).

    Returns:
        The interval and the bound that limits each side, of the arguments' broadcast shape.
    """
    back_emf_torque = back_emf_damping * speed
    if offset is not None:
        back_emf_torque = back_emf_torque - offset
    voltage_upper = stall_torque - back_emf_torque
    voltage_lower = -stall_torque - back_emf_torque
    # min/max (not a clip with a possibly inverted interval); with peak = inf the max/min simply select the
    # voltage line, and their gradients are selections, so an infinite peak never multiplies into a NaN.
    upper = jnp.minimum(jnp.maximum(voltage_upper, -peak_torque), peak_torque)
    lower = jnp.minimum(jnp.maximum(voltage_lower, -peak_torque), peak_torque)
    voltage = _label(MotorSaturation.VOLTAGE)
    peak = _label(MotorSaturation.PEAK_TORQUE)
    upper_saturation = jnp.where(voltage_upper < peak_torque, voltage, peak)
    lower_saturation = jnp.where(voltage_lower > -peak_torque, voltage, peak)
    return MotorTorqueBounds(lower, upper, lower_saturation, upper_saturation)


def motor_torque_bounds(motor: DcMotorParameters, speed: ArrayLike) -> MotorTorqueBounds:
    """Admissible motor torque interval at motor (rotor-side) speed ``speed`` [rad/s].

    ``clamp(+-stall_torque - back_emf_damping * speed, -peak, peak)``; beyond the overspeed limit the
    interval collapses to ``-peak`` (forward) or ``+peak`` (reverse), the peak torque opposing the motion.

    Returns:
        The interval and the bound that limits each side, of the broadcast shape of ``speed`` and the
        motor's fields.
    """
    return motor_torque_bounds_from_constants(motor.stall_torque(), motor.back_emf_damping(), motor.peak_torque, speed)


def clip_motor_torque(motor: DcMotorParameters, speed: ArrayLike, torque: ArrayLike) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Clips a motor torque request to the operating region at motor speed ``speed``.

    Args:
        motor: motor parameters.
        speed: motor (rotor-side) speed [rad/s].
        torque: requested motor torque [Nm].

    Returns:
        ``(torque, saturation)``: the admissible motor torque closest to the request [Nm] and the bound that
        limited it (an ``int32`` :class:`MotorSaturation`, ``NONE`` if the request was admissible), both of
        the broadcast shape of the arguments.
    """
    return motor_torque_bounds(motor, speed).clip(torque)


def motor_operating_region_violation(motor: DcMotorParameters, speed: ArrayLike, torque: ArrayLike) -> jnp.ndarray:
    """How far [Nm] ``torque`` lies outside the operating region at motor speed ``speed`` (zero inside).

    Args:
        motor: motor parameters.
        speed: motor (rotor-side) speed [rad/s].
        torque: motor torque [Nm].

    Returns:
        ``max(lower - torque, 0) + max(torque - upper, 0)`` of the broadcast shape; exactly zero inside.
    """
    return motor_torque_bounds(motor, speed).violation(torque)
