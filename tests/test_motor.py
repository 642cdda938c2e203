"""Tests of the DC motor model and its operating region (jaxmor.actuation.motor).

Expected values are computed by hand from the spec's formulas, or by an independent plain-Python
reference that intersects the voltage band -Vbus <= R/Kt tau + w/Kv <= Vbus with |tau| <= peak.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmor.actuation.motor import (
    DcMotorParameters,
    MotorSaturation,
    MotorTorqueBounds,
    clip_motor_torque,
    motor_operating_region_violation,
    motor_torque_bounds,
    motor_torque_bounds_from_constants,
)

NONE, PEAK, VOLTAGE = MotorSaturation.NONE, MotorSaturation.PEAK_TORQUE, MotorSaturation.VOLTAGE
INF = float("inf")

# The spec's motors: the turntable "spin" actuator (gear 10) and the Hound leg motor (gear 10).
TURNTABLE = dict(resistance=0.2, torque_constant=0.1, velocity_constant=10.0, bus_voltage=24.0, peak_torque=1.5)
HOUND = dict(resistance=0.4, torque_constant=0.1, velocity_constant=10.0, bus_voltage=24.0, peak_torque=3.0)


def motor(**kw: float) -> DcMotorParameters:
    return DcMotorParameters(**{k: jnp.float64(v) for k, v in kw.items()})


# --------------------------------------------------------------------------------------------------
# Independent reference (plain Python floats, written from the inequalities, not from the code).
# --------------------------------------------------------------------------------------------------


def reference_interval(r: float, kt: float, kv: float, vbus: float, peak: float, w: float) -> tuple[float, float]:
    """Admissible torque interval from -Vbus <= R/Kt tau + w/Kv <= Vbus and |tau| <= peak.

    Where the voltage band misses the peak band (overspeed), the region is the peak opposing the motion.
    """
    lo_v = (kt / r) * (-vbus - w / kv)
    hi_v = (kt / r) * (vbus - w / kv)
    lo, hi = max(lo_v, -peak), min(hi_v, peak)
    if lo <= hi:
        return lo, hi
    opposing = -peak if w > 0 else peak
    return opposing, opposing


def reference_clip(interval: tuple[float, float], tau: float) -> float:
    lo, hi = interval
    return lo if tau < lo else hi if tau > hi else tau


# --------------------------------------------------------------------------------------------------
# The spec's numbers
# --------------------------------------------------------------------------------------------------


def test_turntable_constants_and_region():
    m = motor(**TURNTABLE)
    # stall = Kt Vbus / R = 0.1 * 24 / 0.2; no-load = Kv Vbus = 10 * 24; b = Kt / (R Kv) = 0.1 / (0.2 * 10)
    assert float(m.stall_torque()) == pytest.approx(12.0, rel=1e-15)
    assert float(m.no_load_speed()) == pytest.approx(240.0, rel=1e-15)
    assert float(m.back_emf_damping()) == pytest.approx(0.05, rel=1e-15)
    assert float(m.torque_per_volt()) == pytest.approx(0.5, rel=1e-15)
    gear = 10.0
    # At rest the peak torque limits: 1.5 Nm at the motor, 15 Nm at the gear output.
    tau, sat = clip_motor_torque(m, 0.0, 100.0 / gear)
    assert float(tau) == pytest.approx(1.5, rel=1e-15)
    assert gear * float(tau) == pytest.approx(15.0, rel=1e-15)
    assert sat == PEAK
    # At 238 rad/s (23.8 rad/s at the joint) the voltage limits: 12 - 0.05 * 238 = 0.1 Nm, 1 Nm at the output.
    tau, sat = clip_motor_torque(m, 238.0, 100.0 / gear)
    assert float(tau) == pytest.approx(12.0 - 0.05 * 238.0, rel=1e-12)
    assert gear * float(tau) == pytest.approx(1.0, rel=1e-12)
    assert sat == VOLTAGE
    b = motor_torque_bounds(m, 238.0)
    assert float(b.lower) == -1.5 and b.lower_saturation == PEAK
    assert b.upper_saturation == VOLTAGE


def test_hound_constants():
    m = motor(**HOUND)
    r, kt, kv, vbus, peak = 0.4, 0.1, 10.0, 24.0, 3.0
    assert float(m.stall_torque()) == pytest.approx(kt * vbus / r, rel=1e-15)  # 6 Nm
    assert float(m.stall_torque()) == pytest.approx(6.0, rel=1e-15)
    assert float(m.no_load_speed()) == pytest.approx(240.0, rel=1e-15)
    assert float(m.back_emf_damping()) == pytest.approx(0.025, rel=1e-15)
    assert float(m.corner_speed()) == pytest.approx(kv * (vbus - r * peak / kt), rel=1e-14)  # 10 (24 - 12)
    assert float(m.corner_speed()) == pytest.approx(120.0, rel=1e-14)
    assert float(m.overspeed_limit()) == pytest.approx(kv * (vbus + r * peak / kt), rel=1e-14)
    assert float(m.overspeed_limit()) == pytest.approx(360.0, rel=1e-14)
    assert bool(m.is_valid())


def test_infinite_peak_constants():
    m = motor(**{**HOUND, "peak_torque": INF})
    assert float(m.overspeed_limit()) == INF
    assert float(m.corner_speed()) == -INF
    b = motor_torque_bounds(m, jnp.array([-1e4, 0.0, 1e4]))
    np.testing.assert_allclose(b.upper, [6.0 + 250.0, 6.0, 6.0 - 250.0], rtol=1e-14)
    np.testing.assert_allclose(b.lower, [-6.0 + 250.0, -6.0, -6.0 - 250.0], rtol=1e-14)
    assert np.all(b.lower_saturation == VOLTAGE) and np.all(b.upper_saturation == VOLTAGE)
    # The default peak torque is infinite.
    m_default = DcMotorParameters(0.4, 0.1, 10.0, 24.0)
    assert float(motor_torque_bounds(m_default, 1e4).lower) == pytest.approx(-256.0, rel=1e-14)


@pytest.mark.parametrize(
    ("speed", "lower", "upper", "lower_sat", "upper_sat"),
    [
        # Hound motor: stall 6, b 0.025, peak 3, corner 120, no-load 240, overspeed 360 (by hand).
        (0.0, -3.0, 3.0, PEAK, PEAK),
        (100.0, -3.0, 3.0, PEAK, PEAK),  # below the corner: 6 - 2.5 = 3.5 > 3
        (200.0, -3.0, 6.0 - 0.025 * 200.0, PEAK, VOLTAGE),  # between corner and no-load: voltage-limited
        (240.0, -3.0, 0.0, PEAK, VOLTAGE),  # no-load speed: only braking left
        (300.0, -3.0, 6.0 - 0.025 * 300.0, PEAK, VOLTAGE),  # back-driven, upper = -1.5
        (120.0, -3.0, 3.0, PEAK, PEAK),  # exactly at the corner: voltage line = peak, tie labelled PEAK_TORQUE
        (360.0, -3.0, -3.0, PEAK, VOLTAGE),  # exactly at the overspeed limit: the voltage line meets -peak
        (400.0, -3.0, -3.0, PEAK, VOLTAGE),  # forward overspeed: [-peak, -peak]
        (1e6, -3.0, -3.0, PEAK, VOLTAGE),
        (-200.0, -6.0 + 0.025 * 200.0, 3.0, VOLTAGE, PEAK),  # mirrored
        (-400.0, 3.0, 3.0, VOLTAGE, PEAK),  # reverse overspeed: [+peak, +peak]
        (-1e6, 3.0, 3.0, VOLTAGE, PEAK),
    ],
)
def test_hound_bounds_branches(speed, lower, upper, lower_sat, upper_sat):
    b = motor_torque_bounds(motor(**HOUND), speed)
    assert float(b.lower) == pytest.approx(lower, abs=1e-12)
    assert float(b.upper) == pytest.approx(upper, abs=1e-12)
    assert int(b.lower_saturation) == lower_sat
    assert int(b.upper_saturation) == upper_sat


def test_overspeed_clip_and_violation():
    m = motor(**HOUND)
    # Forward overspeed: any request becomes -peak; more braking is refused by the peak, less by the voltage.
    for request, sat in [(5.0, VOLTAGE), (0.0, VOLTAGE), (-3.0, NONE), (-10.0, PEAK)]:
        tau, s = clip_motor_torque(m, 500.0, request)
        assert float(tau) == -3.0 and int(s) == sat
        assert float(motor_operating_region_violation(m, 500.0, request)) == pytest.approx(abs(request + 3.0))
    for request, sat in [(-5.0, VOLTAGE), (3.0, NONE), (10.0, PEAK)]:
        tau, s = clip_motor_torque(m, -500.0, request)
        assert float(tau) == 3.0 and int(s) == sat


def test_from_constants_matches_motor_overload():
    m = motor(**HOUND)
    w = jnp.linspace(-500.0, 500.0, 41)
    a = motor_torque_bounds(m, w)
    b = motor_torque_bounds_from_constants(6.0, 0.025, 3.0, w)
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-14)


def test_violation_values():
    m = motor(**HOUND)
    assert float(motor_operating_region_violation(m, 200.0, 0.5)) == 0.0
    assert float(motor_operating_region_violation(m, 200.0, 1.5)) == pytest.approx(0.5)  # upper is 1
    assert float(motor_operating_region_violation(m, 200.0, -4.0)) == pytest.approx(1.0)  # lower is -3


# --------------------------------------------------------------------------------------------------
# Properties over random valid motors (float64)
# --------------------------------------------------------------------------------------------------


def log_uniform(lo: float, hi: float):
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: 10.0**e)


motors = st.tuples(
    log_uniform(1e-3, 1e2),  # R
    log_uniform(1e-3, 1e1),  # Kt
    log_uniform(1e-1, 1e3),  # Kv
    log_uniform(1.0, 1e3),  # Vbus
    st.one_of(log_uniform(1e-2, 1e3), st.just(INF)),  # peak
)
# Speed in units of the no-load speed (covers overspeed), torque in units of a finite torque scale. Tiny
# fractions are zeroed: XLA on CPU flushes subnormal floats to zero, which is not what these tests are about.
fractions = st.floats(-5.0, 5.0).map(lambda x: 0.0 if abs(x) < 1e-9 else x)
HYP = settings(max_examples=200, deadline=None)


@jax.jit
def _evaluate(m: DcMotorParameters, speed, torque):
    """Everything a property needs, from one compiled program.

    XLA may contract ``stall - b * w`` into a fused multiply-add in one program and not in another, so
    bounds from separately compiled programs agree only to round-off; within one program they are exact.
    """
    bounds = motor_torque_bounds(m, speed)
    clipped, saturation = clip_motor_torque(m, speed, torque)
    again, saturation_again = clip_motor_torque(m, speed, clipped)
    return dict(
        bounds=bounds,
        clipped=clipped,
        saturation=saturation,
        again=again,
        saturation_again=saturation_again,
        violation=motor_operating_region_violation(m, speed, torque),
        violation_of_clipped=motor_operating_region_violation(m, speed, clipped),
    )


def _scaled(params, speed_fraction, torque_fraction):
    r, kt, kv, vbus, peak = params
    w = speed_fraction * kv * vbus
    stall, b = kt * vbus / r, kt / (r * kv)
    scale = min(peak, stall + b * abs(w))
    m = motor(resistance=r, torque_constant=kt, velocity_constant=kv, bus_voltage=vbus, peak_torque=peak)
    return m, w, torque_fraction * scale


def _tol(params, w):
    r, kt, kv, vbus, peak = params
    return 1e-12 * ((kt / r) * (vbus + abs(w) / kv) + (0.0 if peak == INF else peak))


@HYP
@given(motors, fractions, fractions)
def test_bounds_match_reference(params, sf, tf):
    m, w, tau = _scaled(params, sf, tf)
    lo, hi = reference_interval(*params, w)
    b = _evaluate(m, w, tau)["bounds"]
    assert float(b.lower) <= float(b.upper)
    assert float(b.lower) == pytest.approx(lo, abs=_tol(params, w))
    assert float(b.upper) == pytest.approx(hi, abs=_tol(params, w))
    # Eager (uncompiled) evaluation agrees to round-off.
    eager = motor_torque_bounds(m, w)
    assert float(eager.lower) == pytest.approx(float(b.lower), abs=_tol(params, w))
    assert float(eager.upper) == pytest.approx(float(b.upper), abs=_tol(params, w))


@HYP
@given(motors, fractions, fractions)
def test_clip_is_nearest_admissible(params, sf, tf):
    m, w, tau = _scaled(params, sf, tf)
    out = _evaluate(m, w, tau)
    b, clipped, sat = out["bounds"], float(out["clipped"]), int(out["saturation"])
    assert clipped == pytest.approx(reference_clip(reference_interval(*params, w), tau), abs=_tol(params, w))
    # Exactly inside the interval, and exactly the request when the request is admissible.
    lower, upper = float(b.lower), float(b.upper)
    assert lower <= clipped <= upper
    assert float(out["violation_of_clipped"]) == 0.0
    if lower <= tau <= upper:
        assert clipped == tau and sat == NONE
    elif tau > upper:
        assert clipped == upper and sat == int(b.upper_saturation) != NONE
    else:
        assert clipped == lower and sat == int(b.lower_saturation) != NONE


@HYP
@given(motors, fractions, fractions)
def test_clip_is_idempotent(params, sf, tf):
    m, w, tau = _scaled(params, sf, tf)
    out = _evaluate(m, w, tau)
    assert float(out["again"]) == float(out["clipped"])
    assert int(out["saturation_again"]) == NONE


@HYP
@given(motors, fractions, fractions)
def test_violation_is_distance(params, sf, tf):
    m, w, tau = _scaled(params, sf, tf)
    lo, hi = reference_interval(*params, w)
    out = _evaluate(m, w, tau)
    v, b = float(out["violation"]), out["bounds"]
    inside = float(b.lower) <= tau <= float(b.upper)
    assert v >= 0.0
    assert (v == 0.0) == inside
    assert (int(out["saturation"]) == NONE) == inside
    assert v == pytest.approx(max(lo - tau, 0.0) + max(tau - hi, 0.0), abs=_tol(params, w))
    assert v == pytest.approx(abs(tau - float(out["clipped"])), rel=1e-15, abs=1e-300)


@HYP
@given(motors, fractions, fractions)
def test_bounds_monotone_in_speed(params, s1, s2):
    m, w1, _ = _scaled(params, min(s1, s2), 0.0)
    _, w2, _ = _scaled(params, max(s1, s2), 0.0)
    b = _evaluate(m, jnp.array([w1, w2]), 0.0)["bounds"]
    assert float(b.lower[0]) >= float(b.lower[1])
    assert float(b.upper[0]) >= float(b.upper[1])


@HYP
@given(motors)
def test_characteristic_speeds(params):
    r, kt, kv, vbus, peak = params
    m = motor(resistance=r, torque_constant=kt, velocity_constant=kv, bus_voltage=vbus, peak_torque=peak)
    assert bool(m.is_valid())
    # Zero torque is the upper bound at the no-load speed; the interval collapses at the overspeed limit.
    w0 = kv * vbus
    assert float(motor_torque_bounds(m, w0).upper) == pytest.approx(0.0, abs=_tol(params, w0))
    if peak != INF:
        assert float(m.overspeed_limit()) == pytest.approx(kv * (vbus + r * peak / kt), rel=1e-13)
        assert float(m.corner_speed()) == pytest.approx(kv * (vbus - r * peak / kt), rel=1e-13, abs=1e-13 * w0)
        beyond = motor_torque_bounds(m, 1.01 * float(m.overspeed_limit()))
        assert float(beyond.lower) == float(beyond.upper) == -peak
        below = motor_torque_bounds(m, -1.01 * float(m.overspeed_limit()))
        assert float(below.lower) == float(below.upper) == peak


# --------------------------------------------------------------------------------------------------
# Validity
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["resistance", "torque_constant", "velocity_constant", "bus_voltage"])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), INF, -INF])
def test_is_valid_rejects_bad_parameter(field, bad):
    assert not bool(motor(**{**HOUND, field: bad}).is_valid())


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), -INF])
def test_is_valid_rejects_bad_peak(bad):
    assert not bool(motor(**{**HOUND, "peak_torque": bad}).is_valid())


@pytest.mark.parametrize(
    "overrides",
    [
        {"resistance": 1e-320},  # Kt / R overflows
        {"resistance": 1e300, "torque_constant": 1e-300},  # Kt / R underflows to zero
        {"velocity_constant": 1e300, "bus_voltage": 1e10},  # no-load speed overflows
        {"torque_constant": 1e300, "bus_voltage": 1e10},  # stall torque overflows
        {"velocity_constant": 1e-320},  # back-EMF damping overflows
    ],
)
def test_is_valid_rejects_overflowing_constants(overrides):
    assert not bool(motor(**{**HOUND, **overrides}).is_valid())


def test_is_valid_accepts_and_batches():
    assert bool(motor(**HOUND).is_valid())
    assert bool(motor(**{**HOUND, "peak_torque": INF}).is_valid())
    batch = DcMotorParameters(
        resistance=jnp.array([0.4, 0.0, 0.4, 1e-320]),
        torque_constant=0.1,
        velocity_constant=10.0,
        bus_voltage=jnp.array([24.0, 24.0, float("nan"), 24.0]),
        peak_torque=3.0,
    )
    valid = batch.is_valid()
    assert valid.dtype == jnp.bool_
    np.testing.assert_array_equal(valid, [True, False, False, False])


# --------------------------------------------------------------------------------------------------
# Transformations, shapes and dtypes
# --------------------------------------------------------------------------------------------------


def _batch(n: int = 7) -> tuple[DcMotorParameters, jnp.ndarray, jnp.ndarray]:
    rng = np.random.default_rng(0)
    m = DcMotorParameters(
        resistance=jnp.asarray(rng.uniform(0.1, 1.0, n)),
        torque_constant=jnp.asarray(rng.uniform(0.05, 0.2, n)),
        velocity_constant=jnp.asarray(rng.uniform(5.0, 20.0, n)),
        bus_voltage=jnp.asarray(rng.uniform(12.0, 48.0, n)),
        peak_torque=jnp.asarray(np.where(np.arange(n) % 3 == 0, np.inf, rng.uniform(0.5, 5.0, n))),
    )
    speed = jnp.asarray(rng.uniform(-1500.0, 1500.0, n))
    torque = jnp.asarray(rng.uniform(-10.0, 10.0, n))
    return m, speed, torque


def test_vmap_and_jit_match_broadcasting():
    m, speed, torque = _batch()
    direct = clip_motor_torque(m, speed, torque)
    mapped = jax.vmap(clip_motor_torque)(m, speed, torque)
    jitted = jax.jit(jax.vmap(clip_motor_torque))(m, speed, torque)
    for out in (mapped, jitted):
        # compiled programs may contract multiply-adds into FMAs: equal to round-off
        np.testing.assert_allclose(out[0], direct[0], rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(out[1], direct[1])
    v = jax.jit(motor_operating_region_violation)(m, speed, torque)
    np.testing.assert_allclose(v, jax.vmap(motor_operating_region_violation)(m, speed, torque), atol=1e-13)
    bounds = jax.jit(motor_torque_bounds)(m, speed)
    assert isinstance(bounds, MotorTorqueBounds)
    assert bounds.lower_saturation.dtype == jnp.int32


def test_broadcasting_scalar_motor_over_speed_grid():
    m = motor(**HOUND)
    speed = jnp.linspace(-500.0, 500.0, 11)[:, None]
    torque = jnp.linspace(-5.0, 5.0, 3)[None, :]
    tau, sat = clip_motor_torque(m, speed, torque)
    assert tau.shape == sat.shape == (11, 3)
    assert motor_torque_bounds(m, speed).upper.shape == (11, 1)
    assert m.is_valid().shape == ()


def test_float32_is_kept():
    m = DcMotorParameters(*(jnp.float32(x) for x in (0.4, 0.1, 10.0, 24.0, 3.0)))
    b = motor_torque_bounds(m, jnp.float32(200.0))
    assert b.lower.dtype == b.upper.dtype == jnp.float32
    tau, sat = clip_motor_torque(m, jnp.float32(200.0), jnp.float32(5.0))
    assert tau.dtype == jnp.float32 and sat.dtype == jnp.int32
    assert float(tau) == pytest.approx(1.0, rel=1e-6) and int(sat) == VOLTAGE
    assert motor_operating_region_violation(m, jnp.float32(200.0), jnp.float32(5.0)).dtype == jnp.float32
    m_inf = DcMotorParameters(*(jnp.float32(x) for x in (0.4, 0.1, 10.0, 24.0)))  # default inf peak
    assert clip_motor_torque(m_inf, jnp.float32(0.0), jnp.float32(50.0))[0].dtype == jnp.float32
    assert m.stall_torque().dtype == jnp.float32 and m.is_valid().dtype == jnp.bool_


def test_saturation_enum():
    # The spec's three labels keep their values; TEMPERATURE (a derated peak, jaxmor.actuation.motor_dynamics) is
    # jaxmor's
    # extension and occurs only for a motor with a temperature limit.
    assert [int(s) for s in MotorSaturation] == [0, 1, 2, 3]
    assert [s.name for s in MotorSaturation] == ["NONE", "PEAK_TORQUE", "VOLTAGE", "TEMPERATURE"]


# --------------------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------------------

FIELDS = ("resistance", "torque_constant", "velocity_constant", "bus_voltage")


def _clipped_of(values: tuple[float, ...], peak: float, speed: float, torque: float) -> jnp.ndarray:
    m = DcMotorParameters(*values, peak_torque=peak)
    return clip_motor_torque(m, speed, torque)[0]


@pytest.mark.parametrize("peak", [3.0, INF])
@pytest.mark.parametrize(("speed", "torque"), [(200.0, 5.0), (-200.0, -5.0)])
def test_grad_in_voltage_branch_matches_finite_differences(peak, speed, torque):
    # Hound motor between corner (120) and no-load speed (240): the voltage line limits the request.
    x0 = (0.4, 0.1, 10.0, 24.0)
    assert int(clip_motor_torque(motor(**HOUND), speed, torque)[1]) == VOLTAGE
    grads = jax.grad(lambda *p: _clipped_of(p, peak, speed, torque), argnums=(0, 1, 2, 3))(*map(jnp.float64, x0))
    r, kt, kv, vbus = x0
    # tau = (Kt / R) (+-Vbus - w / Kv), differentiated by hand
    sign = 1.0 if torque > 0 else -1.0
    by_hand = (
        -(kt / r**2) * (sign * vbus - speed / kv),
        (sign * vbus - speed / kv) / r,
        (kt / r) * speed / kv**2,
        sign * kt / r,
    )
    for i, name in enumerate(FIELDS):
        h = 1e-6 * x0[i]
        up = list(x0)
        dn = list(x0)
        up[i] += h
        dn[i] -= h
        f_up, f_dn = (float(_clipped_of(tuple(x), peak, speed, torque)) for x in (up, dn))
        fd = (f_up - f_dn) / (2 * h)
        assert np.isfinite(float(grads[i])), name
        assert float(grads[i]) == pytest.approx(fd, rel=1e-6), name
        assert float(grads[i]) == pytest.approx(by_hand[i], rel=1e-12), name


def test_grad_finite_with_infinite_peak_everywhere():
    def total(m: DcMotorParameters, speed, torque):
        tau, _ = clip_motor_torque(m, speed, torque)
        return jnp.sum(tau) + jnp.sum(motor_operating_region_violation(m, speed, torque))

    m = DcMotorParameters(*(jnp.full(5, x) for x in (0.4, 0.1, 10.0, 24.0, INF)))
    speed = jnp.array([-1e4, -200.0, 0.0, 200.0, 1e4])
    torque = jnp.array([0.0, 500.0, 1.0, -500.0, 0.0])
    g = jax.grad(total, argnums=(0, 1, 2))(m, speed, torque)
    for leaf in jax.tree_util.tree_leaves(g):
        assert np.all(np.isfinite(leaf))
    # Peak torque never binds, so its gradient is exactly zero.
    np.testing.assert_array_equal(g[0].peak_torque, 0.0)


def test_grad_in_peak_branch():
    # At rest the Hound motor is peak-limited: the clipped torque depends only on the peak.
    def f(peak, r):
        return clip_motor_torque(DcMotorParameters(r, 0.1, 10.0, 24.0, peak), 0.0, 10.0)[0]

    d_peak, d_r = jax.grad(f, argnums=(0, 1))(jnp.float64(3.0), jnp.float64(0.4))
    assert float(d_peak) == 1.0 and float(d_r) == 0.0
