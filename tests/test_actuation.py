"""DC-motor actuators in the step (jaxmor.actuation): compiled form, functional API and ``actuate``.

Expected values are computed by hand from the spec's formulas
(spec/actuators-motor-operating-region.md, "What happens in a simulation step"):

    w_m = T u,  tau_stall = Kt Vbus / R,  b = Kt / (R Kv),
    tau_min = clamp(-tau_stall - b w_m, -peak, peak),  tau_max = clamp(tau_stall - b w_m, -peak, peak),
    tau_m = clamp(tau_a / G, tau_min, tau_max),  joint torques T^T tau_m,

never by calling the code under test. Robots: the spec's turntable (robots/turntable) and one Hound
leg (tests/data/actuators/hound). The turntable's totals with the generalized force (20 Nm / 6 Nm)
need the time step and are not tested here.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import motor_region

import jaxmor
from jaxmor import (
    actuate,
    actuator_index,
    actuator_names,
    actuator_states,
    actuator_torque_bounds,
    actuator_torques,
    get_actuators,
    is_motor_operating_region_enforced,
    joint_damping,
    joint_friction,
    motor_speeds,
    reset_actuator_state,
    set_actuator_torque,
    set_actuator_torques,
    set_bus_voltage,
    set_motor_operating_region_enforced,
    transmission_matrix,
    with_actuators,
)
from jaxmor.actuation.definitions import ActuatorCoupling, ActuatorDefinition
from jaxmor.actuation.motor import DcMotorParameters, MotorSaturation, motor_operating_region_violation
from jaxmor.errors import ArgumentError, ModelError

NONE, PEAK, VOLTAGE = int(MotorSaturation.NONE), int(MotorSaturation.PEAK_TORQUE), int(MotorSaturation.VOLTAGE)

# The spec's turntable actuator "spin": G = 10; R = 0.2, Kt = 0.1, Kv = 10, Vbus = 24, peak 1.5.
SPIN = {"G": 10.0, "R": 0.2, "Kt": 0.1, "Kv": 10.0, "V": 24.0, "peak": 1.5}
# The Hound leg motor (both files): R = 0.4, Kt = 0.1, Kv = 10, Vbus = 24, peak 3; gears 6 (HAA), 10, 10.
HOUND_MOTOR = {"R": 0.4, "Kt": 0.1, "Kv": 10.0, "V": 24.0, "peak": 3.0}
HOUND_GEARS = (6.0, 10.0, 10.0)


def motor_of(model) -> DcMotorParameters:
    return model.actuators.motor


# --------------------------------------------------------------------------------------------------------------
# Fixtures: the turntable and the Hound leg are the session's (tests/conftest.py); the rest once per module.


@pytest.fixture(scope="module")
def hound_v(hound):
    """Velocity indices of the leg joints."""
    return {name: jaxmor.joint_index(hound, name) for name in ("LF_HAA", "LF_HFE", "LF_KFE")}


LOSSY_URDF = """<?xml version="1.0"?>
<robot name="lossy">
  <link name="world"/>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tip">
    <inertial><mass value="0.5"/><inertia ixx="0.005" iyy="0.005" izz="0.005" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="marker"/>
  <joint name="shoulder" type="revolute">
    <parent link="world"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="20" velocity="20"/>
    <dynamics damping="0.1" friction="0.05"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="arm"/><child link="tip"/><origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="20" velocity="20"/>
    <dynamics damping="0.7" friction="0.3"/>
  </joint>
  <joint name="marker_mount" type="fixed">
    <parent link="tip"/><child link="marker"/><origin xyz="0.2 0 0"/>
  </joint>
  <actuator joint="shoulder" gear_ratio="8" output_damping="0.3" output_friction="0.2">
    <motor resistance="0.2" torque_constant="0.1" back_emf_constant="0.1" bus_voltage="48" peak_torque="1.5"/>
  </actuator>
</robot>
"""


@pytest.fixture(scope="module")
def lossy():
    return jaxmor.load_urdf(LOSSY_URDF)


def at(model, u=None, torques=None):
    """A state of ``model`` with joint velocities ``u`` and actuator torques ``torques``."""
    state = jaxmor.init_state(model, u=u)
    if torques is not None:
        state = set_actuator_torques(model, state, torques)
    return state


def hound_u(hound_v, nv, **speeds) -> np.ndarray:
    u = np.zeros(nv)
    for name, value in speeds.items():
        u[hound_v[name]] = value
    return u


# --------------------------------------------------------------------------------------------------------------
# The turntable of the spec.


def test_turntable_robot_file(turntable):
    assert turntable.name == "turntable"
    assert not turntable.floating_base
    assert (turntable.nq, turntable.nv, turntable.na) == (1, 1, 1)
    assert actuator_names(turntable) == ["spin"]
    assert turntable.actuators.joints == ("spin",)
    assert turntable.actuators.models == ("turntable_spin_10to1",)  # read from actuators/spin_actuator.xml
    np.testing.assert_array_equal(transmission_matrix(turntable), [[10.0]])
    m = motor_of(turntable)
    got = [float(x[0]) for x in (m.resistance, m.torque_constant, m.velocity_constant, m.bus_voltage, m.peak_torque)]
    assert got == [SPIN["R"], SPIN["Kt"], SPIN["Kv"], SPIN["V"], SPIN["peak"]]
    assert float(turntable.dof_effort_limit[0]) == 5.0
    assert float(turntable.dof_armature[0]) == pytest.approx(100 * 2e-5)  # G^2 J_rotor
    assert float(turntable.body_inertia[0, 2, 2]) == pytest.approx(0.5 * 2.0 * 0.2**2)  # m r^2 / 2
    assert float(turntable.body_mass[0]) == 2.0
    assert turntable.geom_type == (jaxmor.GeomType.CYLINDER,)
    np.testing.assert_allclose(turntable.geom_size[0, :2], [0.2, 0.01])


@pytest.mark.parametrize(
    ("u", "lower", "upper"),
    [
        (0.0, -15.0, 15.0),  # at rest: peak-limited on both sides, 1.5 Nm x 10
        (23.8, -15.0, 1.0),  # 238 rad/s: upper 12 - 0.05 * 238 = 0.1 Nm x 10; lower -23.9 clamps to -1.5
        (-23.8, -1.0, 15.0),  # mirrored
    ],
)
def test_turntable_torque_bounds(turntable, u, lower, upper):
    lo, hi = actuator_torque_bounds(turntable, at(turntable, u=[u]))
    assert lo.shape == hi.shape == (1,)
    assert float(lo[0]) == pytest.approx(lower, rel=1e-12, abs=1e-12)
    assert float(hi[0]) == pytest.approx(upper, rel=1e-12, abs=1e-12)
    # the same from the hand formulas
    h_lo, h_hi = motor_region(SPIN["G"] * u, SPIN["R"], SPIN["Kt"], SPIN["Kv"], SPIN["V"], SPIN["peak"])
    assert float(lo[0]) == pytest.approx(SPIN["G"] * h_lo, rel=1e-12, abs=1e-12)
    assert float(hi[0]) == pytest.approx(SPIN["G"] * h_hi, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    ("u", "joint_torque", "saturation", "speed"),
    [(0.0, 15.0, PEAK, 0.0), (23.8, 1.0, VOLTAGE, 238.0)],
)
def test_turntable_actuate_spec_numbers(turntable, u, joint_torque, saturation, speed):
    state = set_actuator_torque(turntable, at(turntable, u=[u]), "spin", 100.0)
    tau, st_ = actuate(turntable, state)
    assert tau.shape == (1,)
    assert float(tau[0]) == pytest.approx(joint_torque, rel=1e-12, abs=1e-12)
    assert int(st_.saturation[0]) == saturation
    assert float(st_.commanded_motor_torque[0]) == pytest.approx(10.0, rel=1e-15)
    assert float(st_.motor_torque[0]) == pytest.approx(joint_torque / 10.0, rel=1e-12, abs=1e-13)
    assert float(st_.motor_speed[0]) == pytest.approx(speed, rel=1e-15, abs=0)
    assert float(st_.average_motor_speed[0]) == pytest.approx(speed, rel=1e-15, abs=0)
    assert float(st_.joint_loss_torque[0]) == 0.0
    # actuator torques as set are not clipped; the effort limit (5 Nm) does not clip the actuator
    assert float(actuator_torques(state)[0]) == 100.0


def test_turntable_admissible_command_passes_unchanged(turntable):
    # 0.5 Nm at the output at 10 rad/s: motor 0.05 Nm, well inside [-1.5, min(12 - 5, 1.5)]
    tau, st_ = actuate(turntable, at(turntable, u=[10.0], torques=[0.5]))
    assert float(tau[0]) == 0.5
    assert float(st_.motor_torque[0]) == 0.05
    assert int(st_.saturation[0]) == NONE


def test_turntable_overspeed_leaves_only_braking_peak(turntable):
    # beyond the overspeed limit Kv (Vbus + R peak / Kt) = 270 rad/s (27 rad/s at the joint) only -peak remains
    lo, hi = actuator_torque_bounds(turntable, at(turntable, u=[30.0]))
    assert float(lo[0]) == pytest.approx(-15.0) and float(hi[0]) == pytest.approx(-15.0)
    tau, st_ = actuate(turntable, at(turntable, u=[30.0], torques=[5.0]))
    assert float(tau[0]) == pytest.approx(-15.0)
    assert int(st_.saturation[0]) == VOLTAGE


@pytest.mark.parametrize("joint_speed", [10.0, 24.4, 26.0, 28.0, 37.7])
def test_turntable_reported_voltage_is_the_drivers_within_the_bus(turntable, joint_speed):
    """The turntable (G = 10, R = 0.2 ohm, Kt = 0.1 Nm/A, Kv = 10 rad/s/V, 24 V, peak 1.5 Nm) back-driven
    forward with no command: the region brakes. Below the overspeed limit (27 rad/s at the joint) the voltage is
    what makes the current, ``R i + w_m / Kv`` (Ohm's law with the back EMF, from the constants here), at most
    24 V; past it (28 and 37.7 rad/s; the review's run-away reached 377) the braking is capped at -1.5 Nm,
    which would need ``0.2 * (-15) + w_m / 10 > 24`` V: the voltage reads the bus, 24 V, never more."""
    r, kt, kv, bus, gear = 0.2, 0.1, 10.0, 24.0, 10.0
    _, st_ = actuate(turntable, at(turntable, u=[joint_speed], torques=[0.0]))
    w_m = gear * joint_speed
    current = float(st_.motor_torque[0]) / kt
    ohm = r * current + w_m / kv
    if joint_speed < 27.0:
        assert float(st_.voltage[0]) == pytest.approx(ohm, rel=1e-12)
        assert abs(ohm) <= bus
    else:
        assert float(st_.motor_torque[0]) == pytest.approx(-1.5) and ohm > bus
        assert float(st_.voltage[0]) == bus
    monitor = actuate(turntable, at(turntable, u=[joint_speed], torques=[0.0]).replace(mor_enforced=False))[1]
    assert float(monitor.voltage[0]) == pytest.approx(w_m / kv, rel=1e-12)  # no current: the back EMF alone


# --------------------------------------------------------------------------------------------------------------
# The Hound leg: couplings and the transmission matrix.


def test_hound_transmission_matrix(hound, hound_v):
    assert hound.floating_base and hound.nv == 9
    t = np.asarray(transmission_matrix(hound))
    assert t.shape == (3, 9)
    legs = [hound_v["LF_HAA"], hound_v["LF_HFE"], hound_v["LF_KFE"]]
    np.testing.assert_array_equal(t[:, legs], [[6.0, 0.0, 0.0], [0.0, 10.0, 0.0], [0.0, 1.0, 10.0]])
    np.testing.assert_array_equal(t[:, :6], np.zeros((3, 6)))
    np.testing.assert_array_equal(np.delete(t, legs, axis=1), 0.0)
    np.testing.assert_array_equal(hound.actuators.gear_ratio, HOUND_GEARS)
    assert hound.actuators.couplings == ((), (), ("LF_HFE",))


def test_hound_knee_torque_loads_the_hip(hound, hound_v):
    state = set_actuator_torque(hound, at(hound), "LF_KFE", 12.0)
    tau, st_ = actuate(hound, state)
    assert float(st_.commanded_motor_torque[2]) == pytest.approx(1.2, rel=1e-15)
    assert float(st_.motor_torque[2]) == pytest.approx(1.2, rel=1e-15)
    assert int(st_.saturation[2]) == NONE
    expected = np.zeros(9)
    expected[hound_v["LF_KFE"]] = 12.0  # G_K tau_m
    expected[hound_v["LF_HFE"]] = 1.2  # r tau_m, through T^T
    np.testing.assert_allclose(tau, expected, rtol=1e-14, atol=0)


def test_hound_hip_speed_alone_turns_the_knee_motor(hound, hound_v):
    u = hound_u(hound_v, hound.nv, LF_HFE=5.0)
    state = at(hound, u=u)
    np.testing.assert_allclose(motor_speeds(hound, state.u), [0.0, 50.0, 5.0], rtol=1e-15)
    _, st_ = actuate(hound, state)
    np.testing.assert_allclose(st_.motor_speed, [0.0, 50.0, 5.0], rtol=1e-15)
    assert float(st_.motor_speed[2]) == u[hound_v["LF_HFE"]]  # the knee motor turns with the hip

    # with the knee still, a hip speed above (stall - peak) / b = (6 - 3) / 0.025 = 120 rad/s alone leaves the
    # knee motor voltage-limited: at 130 rad/s, 6 - 0.025 * 130 = 2.75 Nm < 3 Nm
    fast = set_actuator_torque(hound, at(hound, u=hound_u(hound_v, hound.nv, LF_HFE=130.0)), "LF_KFE", 30.0)
    tau, st_fast = actuate(hound, fast)
    assert float(st_fast.motor_speed[2]) == 130.0
    assert int(st_fast.saturation[2]) == VOLTAGE
    assert float(st_fast.motor_torque[2]) == pytest.approx(2.75, rel=1e-12)
    assert float(tau[hound_v["LF_KFE"]]) == pytest.approx(27.5, rel=1e-12)


def test_hound_hip_speed_saturates_the_knee_motor_by_voltage(hound, hound_v):
    # knee motor: stall 0.1 * 24 / 0.4 = 6 Nm, b = 0.1 / (0.4 * 10) = 0.025 Nm s/rad, peak 3 Nm.
    # 29 Nm at the knee is 2.9 Nm at the motor. With the knee at 11 rad/s (110 rad/s) the upper bound is
    # min(6 - 2.75, 3) = 3: admissible. Swinging the hip at 20 rad/s adds 20 rad/s at the knee motor:
    # 6 - 0.025 * 130 = 2.75 < 2.9, so the voltage limits it.
    still = at(hound, u=hound_u(hound_v, hound.nv, LF_KFE=11.0))
    still = set_actuator_torque(hound, still, "LF_KFE", 29.0)
    _, st0 = actuate(hound, still)
    assert int(st0.saturation[2]) == NONE
    assert float(st0.motor_torque[2]) == pytest.approx(2.9, rel=1e-14)

    swing = still.replace(u=jnp.asarray(hound_u(hound_v, hound.nv, LF_KFE=11.0, LF_HFE=20.0)))
    tau, st1 = actuate(hound, swing)
    assert float(st1.motor_speed[2]) == pytest.approx(130.0, rel=1e-15)
    assert int(st1.saturation[2]) == VOLTAGE
    assert float(st1.motor_torque[2]) == pytest.approx(6.0 - 0.025 * 130.0, rel=1e-12)
    assert float(tau[hound_v["LF_KFE"]]) == pytest.approx(10 * 2.75, rel=1e-12)
    assert float(tau[hound_v["LF_HFE"]]) == pytest.approx(2.75, rel=1e-12)  # the hip motor is not commanded
    lo, hi = actuator_torque_bounds(hound, swing)
    assert float(hi[2]) == pytest.approx(27.5, rel=1e-12)
    assert float(lo[2]) == pytest.approx(-30.0, rel=1e-12)  # -6 - 3.25 clamps to -peak
    # the hip motor at 200 rad/s: upper 6 - 5 = 1 Nm, i.e. 10 Nm at the hip
    assert float(hi[1]) == pytest.approx(10.0, rel=1e-12)


def test_hound_knee_from_scratch(hound, hound_v):
    knee = ActuatorDefinition(
        joint="LF_KFE",
        gear_ratio=10.0,
        couplings=[ActuatorCoupling("LF_HFE", 1.0)],  # the knee motor also turns with the hip
        motor=DcMotorParameters(
            resistance=0.4, torque_constant=0.1, velocity_constant=10.0, bus_voltage=24.0, peak_torque=3.0
        ),
    )
    model = with_actuators(hound, [knee])
    state = reset_actuator_state(model, at(hound))
    assert actuator_names(model) == ["LF_KFE"]
    assert model.na == 1 and state.actuator_torque.shape == (1,)
    t = np.asarray(transmission_matrix(model))
    np.testing.assert_array_equal(t, np.asarray(transmission_matrix(hound))[2:3])
    expected_row = np.zeros(9)
    expected_row[hound_v["LF_KFE"]] = 10.0
    expected_row[hound_v["LF_HFE"]] = 1.0
    np.testing.assert_array_equal(t[0], expected_row)
    tau, st_ = actuate(model, set_actuator_torque(model, state, "LF_KFE", 12.0))
    assert float(st_.motor_torque[0]) == pytest.approx(1.2, rel=1e-15)
    assert float(tau[hound_v["LF_KFE"]]) == pytest.approx(12.0, rel=1e-15)
    assert float(tau[hound_v["LF_HFE"]]) == pytest.approx(1.2, rel=1e-15)
    assert get_actuators(model)[0] == knee.replace(name="LF_KFE")


# --------------------------------------------------------------------------------------------------------------
# Monitor mode.


def test_monitor_mode_applies_commands_unclipped(turntable, hound, hound_v):
    state = set_actuator_torque(turntable, at(turntable, u=[23.8]), "spin", 100.0)
    assert bool(is_motor_operating_region_enforced(state))
    monitor = set_motor_operating_region_enforced(turntable, state, False)
    assert not bool(is_motor_operating_region_enforced(monitor))
    tau, st_ = actuate(turntable, monitor)
    assert float(tau[0]) == 100.0
    assert float(st_.motor_torque[0]) == 10.0
    assert float(st_.commanded_motor_torque[0]) == 10.0
    assert int(st_.saturation[0]) == VOLTAGE  # still reports the exceeded bound
    assert float(st_.motor_speed[0]) == pytest.approx(238.0, rel=1e-15)
    lo, hi = actuator_torque_bounds(turntable, monitor)
    assert float(lo[0]) == -math.inf and float(hi[0]) == math.inf
    _, st_rest = actuate(turntable, monitor.replace(u=jnp.zeros(1)))
    assert int(st_rest.saturation[0]) == PEAK
    assert int(actuate(turntable, set_actuator_torques(turntable, monitor, [0.5]))[1].saturation[0]) == NONE

    # enforcing again restores the clipping
    again = set_motor_operating_region_enforced(turntable, monitor, True)
    assert bool(is_motor_operating_region_enforced(again))
    assert float(actuate(turntable, again)[0][0]) == pytest.approx(1.0, rel=1e-12)

    # couplings still map the unclipped motor torque: 100 Nm on the knee is 10 Nm on the hip
    leg = set_motor_operating_region_enforced(hound, set_actuator_torque(hound, at(hound), "LF_KFE", 100.0), False)
    tau_leg, _ = actuate(hound, leg)
    assert float(tau_leg[hound_v["LF_KFE"]]) == 100.0
    assert float(tau_leg[hound_v["LF_HFE"]]) == 10.0


# --------------------------------------------------------------------------------------------------------------
# Bus voltage.


def test_set_bus_voltage_all_and_by_name(hound, hound_v):
    u = hound_u(hound_v, hound.nv, LF_HAA=10.0, LF_HFE=15.0, LF_KFE=-8.0)
    state = at(hound, u=u)
    w = np.asarray(transmission_matrix(hound)) @ u  # motor speeds by hand: T u
    p = HOUND_MOTOR
    gears = np.asarray(HOUND_GEARS)

    low = set_bus_voltage(hound, state, 12.0)
    np.testing.assert_array_equal(low.bus_voltage, [12.0, 12.0, 12.0])
    lo, hi = actuator_torque_bounds(hound, low)
    e_lo, e_hi = motor_region(w, p["R"], p["Kt"], p["Kv"], 12.0, p["peak"])
    np.testing.assert_allclose(lo, gears * e_lo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hi, gears * e_hi, rtol=1e-12, atol=1e-12)
    assert float(hi[1]) == pytest.approx(10 * (0.25 * 12 - 0.025 * 150))  # voltage-limited: -7.5 Nm

    one = set_bus_voltage(hound, state, 16.0, "LF_HFE")
    np.testing.assert_array_equal(one.bus_voltage, [24.0, 16.0, 24.0])
    lo, hi = actuator_torque_bounds(hound, one)
    e_lo, e_hi = motor_region(w, p["R"], p["Kt"], p["Kv"], np.array([24.0, 16.0, 24.0]), p["peak"])
    np.testing.assert_allclose(lo, gears * e_lo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hi, gears * e_hi, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(motor_of(hound).bus_voltage, [24.0] * 3)  # the model keeps its defaults

    # the step uses the state's voltage
    one = set_actuator_torques(hound, one, [0.0, 100.0, 0.0])
    tau, st_ = actuate(hound, one)
    assert float(st_.motor_torque[1]) == pytest.approx(e_hi[1], rel=1e-12)
    assert int(st_.saturation[1]) == VOLTAGE

    # get_actuators with a state reports the voltages set since loading
    defs = get_actuators(hound, one)
    assert [d.motor.bus_voltage for d in defs] == [24.0, 16.0, 24.0]
    assert [d.motor.bus_voltage for d in get_actuators(hound)] == [24.0] * 3


@pytest.mark.parametrize("voltage", [0.0, -24.0, math.nan, math.inf, -math.inf, 1e308])
def test_set_bus_voltage_rejects_invalid_voltages(turntable, hound, voltage):
    with pytest.raises(ArgumentError, match="voltage"):
        set_bus_voltage(turntable, at(turntable), voltage)
    with pytest.raises(ArgumentError, match="voltage"):
        set_bus_voltage(hound, at(hound), voltage, "LF_KFE")


def test_set_bus_voltage_rejects_unknown_names_and_arrays(hound):
    with pytest.raises(ArgumentError, match="RF_KFE"):
        set_bus_voltage(hound, at(hound), 24.0, "RF_KFE")
    with pytest.raises(ArgumentError, match="scalar"):
        set_bus_voltage(hound, at(hound), [24.0, 24.0, 24.0])


# --------------------------------------------------------------------------------------------------------------
# with_actuators / get_actuators.


def test_get_set_actuators_round_trip(hound):
    defs = get_actuators(hound)
    assert [d.label for d in defs] == ["LF_HAA", "LF_HFE", "LF_KFE"]
    assert [d.model for d in defs] == ["abduction_6to1", "hound_leg", "hound_leg"]
    assert defs[2].couplings == (ActuatorCoupling("LF_HFE", 1.0),)
    assert [d.gear_ratio for d in defs] == list(HOUND_GEARS)
    for d in defs:
        assert d.motor == DcMotorParameters(0.4, 0.1, 10.0, 24.0, 3.0)
        assert (d.output_damping, d.output_friction) == (0.0, 0.0)
    again = with_actuators(hound, defs)
    assert again.actuators.names == hound.actuators.names
    assert again.actuators.models == hound.actuators.models
    assert again.actuators.couplings == hound.actuators.couplings
    assert again.actuators.joint_v_index == hound.actuators.joint_v_index
    leaves_a = jax.tree_util.tree_leaves(again.actuators)
    leaves_h = jax.tree_util.tree_leaves(hound.actuators)
    assert len(leaves_a) == len(leaves_h)
    for a, h in zip(leaves_a, leaves_h, strict=True):
        np.testing.assert_array_equal(a, h)
    assert get_actuators(again) == defs


def test_round_trip_keeps_an_infinite_peak_and_losses(lossy):
    defs = get_actuators(lossy)
    assert defs[0].motor.peak_torque == 1.5
    assert defs[0].motor.velocity_constant == pytest.approx(10.0)  # 1 / back_emf_constant
    assert (defs[0].output_damping, defs[0].output_friction) == (0.3, 0.2)
    no_peak = defs[0].replace(motor=defs[0].motor.replace(peak_torque=math.inf))
    model = with_actuators(lossy, [no_peak])
    assert get_actuators(model) == [no_peak]
    assert float(motor_of(model).peak_torque[0]) == math.inf


def test_set_actuators_with_a_state_zeroes_torques_and_resets_voltages(hound):
    state = set_actuator_torques(hound, at(hound), [1.0, -2.0, 3.0])
    state = set_bus_voltage(hound, state, 30.0)
    state = set_motor_operating_region_enforced(hound, state, False)
    _, st_ = actuate(hound, state)
    state = state.replace(actuator_state=st_)

    model = with_actuators(hound, get_actuators(hound))
    fresh = reset_actuator_state(model, state)
    np.testing.assert_array_equal(actuator_torques(fresh), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(fresh.bus_voltage, [24.0, 24.0, 24.0])  # the definitions' voltages
    cleared = actuator_states(fresh)
    for leaf in jax.tree_util.tree_leaves(cleared.replace(valid=jnp.zeros(3), derating=jnp.zeros(3))):
        np.testing.assert_array_equal(leaf, 0)
    np.testing.assert_array_equal(cleared.valid, [True] * 3)  # a world that has not stepped: nothing invalid
    np.testing.assert_array_equal(cleared.derating, [1.0] * 3)  # and no temperature limit acting
    np.testing.assert_array_equal(fresh.u, state.u)
    assert not bool(is_motor_operating_region_enforced(fresh))  # the runtime setting stays

    # definitions taken with the state carry its voltage into the new model
    model2 = with_actuators(hound, get_actuators(hound, state))
    kept = reset_actuator_state(model2, state)
    np.testing.assert_array_equal(kept.bus_voltage, [30.0] * 3)
    np.testing.assert_array_equal(motor_of(model2).bus_voltage, [30.0] * 3)


def test_randomized_resistance_by_editing_definitions(turntable):
    defs = [d.replace(motor=d.motor.replace(resistance=d.motor.resistance * 1.1)) for d in get_actuators(turntable)]
    model = with_actuators(turntable, defs)
    lo, hi = actuator_torque_bounds(model, at(model, u=[23.0]))
    e_lo, e_hi = motor_region(230.0, 0.22, 0.1, 10.0, 24.0, 1.5)
    assert float(hi[0]) == pytest.approx(10 * e_hi, rel=1e-12)
    assert float(lo[0]) == pytest.approx(10 * e_lo, rel=1e-12)


def test_set_actuators_empty_list_removes_them(hound, turntable):
    model = with_actuators(hound, [])
    state = reset_actuator_state(model, set_actuator_torques(hound, at(hound), [1.0, 2.0, 3.0]))
    assert model.na == 0
    assert actuator_names(model) == []
    assert transmission_matrix(model).shape == (0, hound.nv)
    assert state.actuator_torque.shape == state.bus_voltage.shape == (0,)
    tau, st_ = actuate(model, state)
    np.testing.assert_array_equal(tau, np.zeros(hound.nv))
    assert st_.motor_torque.shape == (0,)
    lo, hi = actuator_torque_bounds(model, state)
    assert lo.shape == hi.shape == (0,)
    assert get_actuators(model) == []
    empty_tt = with_actuators(turntable, [])
    assert empty_tt.na == 0 and jaxmor.init_state(empty_tt).actuator_torque.shape == (0,)
    np.testing.assert_array_equal(actuate(empty_tt, jaxmor.init_state(empty_tt, u=[3.0]))[0], [0.0])


def _spin_motor() -> DcMotorParameters:
    return DcMotorParameters(resistance=0.2, torque_constant=0.1, velocity_constant=10.0, bus_voltage=48.0)


@pytest.mark.parametrize(
    ("definitions", "words"),
    [
        ([ActuatorDefinition("wrist", 8.0, _spin_motor())], ["wrist"]),
        ([ActuatorDefinition("marker_mount", 8.0, _spin_motor())], ["marker_mount", "fixed"]),
        (
            [
                ActuatorDefinition("shoulder", 8.0, _spin_motor(), name="a"),
                ActuatorDefinition("elbow", 8.0, _spin_motor(), name="a"),
            ],
            ["duplicate", "'a'"],
        ),
        (
            [
                ActuatorDefinition("shoulder", 8.0, _spin_motor()),
                ActuatorDefinition("shoulder", 8.0, _spin_motor(), name="b"),
            ],
            ["already driven"],
        ),
        (
            [ActuatorDefinition("shoulder", 8.0, _spin_motor(), couplings=[ActuatorCoupling("shoulder", 1.0)])],
            ["own driven joint"],
        ),
        (
            [ActuatorDefinition("shoulder", 8.0, _spin_motor(), couplings=[ActuatorCoupling("marker_mount", 1.0)])],
            ["marker_mount"],
        ),
        (
            [
                ActuatorDefinition(
                    "shoulder",
                    8.0,
                    _spin_motor(),
                    couplings=[ActuatorCoupling("elbow", 1.0), ActuatorCoupling("elbow", 2.0)],
                )
            ],
            ["twice", "elbow"],
        ),
        ([ActuatorDefinition("shoulder", -8.0, _spin_motor())], ["gear_ratio"]),
        ([ActuatorDefinition("shoulder", 8.0, _spin_motor().replace(resistance=0.0))], ["resistance"]),
        ([ActuatorDefinition("shoulder", 8.0, _spin_motor(), output_friction=-1.0)], ["output_friction"]),
    ],
    ids=[
        "unknown-joint",
        "fixed-joint",
        "duplicate-names",
        "joint-driven-twice",
        "coupling-to-itself",
        "coupling-to-fixed",
        "coupling-twice",
        "negative-gear",
        "zero-resistance",
        "negative-friction",
    ],
)
def test_set_actuators_rejects_invalid_definitions(lossy, definitions, words):
    with pytest.raises(ModelError) as excinfo:
        with_actuators(lossy, definitions)
    message = str(excinfo.value)
    for word in words:
        assert word in message


def test_set_actuators_rejects_what_is_not_a_definition(lossy):
    with pytest.raises(ArgumentError):
        with_actuators(lossy, [{"joint": "shoulder"}])


def test_hound_floating_base_cannot_be_driven(hound):
    with pytest.raises(ModelError, match="'base'"):
        with_actuators(hound, [ActuatorDefinition("base", 10.0, _spin_motor())])


def test_a_joint_named_like_the_floating_base_link_can_be_driven():
    # Links and joints have separate namespaces in a URDF: the joint 'body' is a wheel on the floating
    # link 'body' and may be driven (regression: it was taken for the floating base).
    inertial = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>'
    urdf = f"""<robot name="rover">
      <link name="body">{inertial}</link>
      <link name="wheel">{inertial}</link>
      <joint name="body" type="continuous"><parent link="body"/><child link="wheel"/><axis xyz="0 1 0"/></joint>
      <actuator joint="body" gear_ratio="8">
        <motor resistance="0.2" torque_constant="0.1" velocity_constant="10" bus_voltage="48"/>
      </actuator>
    </robot>"""
    model = jaxmor.load_urdf(urdf)
    assert model.floating_base and actuator_names(model) == ["body"]
    expected = np.zeros((1, 7))
    expected[0, 6] = 8.0
    np.testing.assert_array_equal(transmission_matrix(model), expected)


# --------------------------------------------------------------------------------------------------------------
# Names, indices and commanded torques.


def test_actuator_names_and_index(hound):
    assert actuator_names(hound) == ["LF_HAA", "LF_HFE", "LF_KFE"]  # <actuator> order
    assert [actuator_index(hound, n) for n in ("LF_HAA", "LF_HFE", "LF_KFE")] == [0, 1, 2]
    assert actuator_index(hound, "RF_KFE") == -1
    assert actuator_index(hound, "") == -1


def test_actuator_names_follow_the_definitions_order(lossy):
    m = _spin_motor()
    model = with_actuators(
        lossy, [ActuatorDefinition("elbow", 5.0, m, name="elbow_drive"), ActuatorDefinition("shoulder", 8.0, m)]
    )
    assert actuator_names(model) == ["elbow_drive", "shoulder"]
    assert actuator_index(model, "elbow") == -1  # named: the joint name is not an actuator name
    assert actuator_index(model, "shoulder") == 1
    np.testing.assert_array_equal(transmission_matrix(model), [[0.0, 5.0], [8.0, 0.0]])


def test_set_actuator_torque_by_name_and_by_index(hound):
    by_name = set_actuator_torque(hound, at(hound), "LF_KFE", 12.0)
    by_index = set_actuator_torque(hound, at(hound), 2, 12.0)
    np.testing.assert_array_equal(actuator_torques(by_name), [0.0, 0.0, 12.0])
    np.testing.assert_array_equal(actuator_torques(by_name), actuator_torques(by_index))
    both = set_actuator_torque(hound, by_name, np.int64(0), -3.0)
    np.testing.assert_array_equal(actuator_torques(both), [-3.0, 0.0, 12.0])
    # the torques hold until set again
    _, st_ = actuate(hound, both)
    np.testing.assert_array_equal(actuator_torques(both), [-3.0, 0.0, 12.0])
    np.testing.assert_allclose(st_.commanded_motor_torque, [-0.5, 0.0, 1.2], rtol=1e-15)


def test_set_actuator_torques_checks_its_argument(hound):
    state = at(hound)
    with pytest.raises(ArgumentError, match=r"torques.*\(3,\)"):
        set_actuator_torques(hound, state, [1.0, 2.0])
    with pytest.raises(ArgumentError, match=r"torques.*\(3,\)"):
        set_actuator_torques(hound, state, np.zeros((1, 3)))
    with pytest.raises(ArgumentError, match=r"torques.*\(3,\)"):
        set_actuator_torques(hound, state, 1.0)
    with pytest.raises(ArgumentError, match="torques.*finite"):
        set_actuator_torques(hound, state, [1.0, math.nan, 0.0])
    with pytest.raises(ArgumentError, match="torques.*finite"):
        set_actuator_torques(hound, state, [1.0, 0.0, math.inf])
    np.testing.assert_array_equal(actuator_torques(set_actuator_torques(hound, state, (1, 2, 3))), [1.0, 2.0, 3.0])


def test_set_actuator_torque_checks_its_arguments(hound):
    state = at(hound)
    with pytest.raises(ArgumentError, match="RF_KFE"):
        set_actuator_torque(hound, state, "RF_KFE", 1.0)
    with pytest.raises(ArgumentError, match="index"):
        set_actuator_torque(hound, state, 3, 1.0)
    with pytest.raises(ArgumentError, match="index"):
        set_actuator_torque(hound, state, -1, 1.0)
    with pytest.raises(ArgumentError, match="finite"):
        set_actuator_torque(hound, state, "LF_KFE", math.nan)
    with pytest.raises(ArgumentError, match="scalar"):
        set_actuator_torque(hound, state, "LF_KFE", [1.0, 2.0])


# --------------------------------------------------------------------------------------------------------------
# Output losses.


def test_output_losses_add_to_the_driven_joint(lossy):
    # shoulder: joint damping 0.1 + output 0.3, friction 0.05 + 0.2; elbow has no actuator
    np.testing.assert_allclose(joint_damping(lossy), [0.4, 0.7], rtol=1e-15)
    np.testing.assert_allclose(joint_friction(lossy), [0.25, 0.3], rtol=1e-15)
    np.testing.assert_array_equal(lossy.dof_damping, [0.1, 0.7])  # the joint's own values are kept apart
    np.testing.assert_array_equal(lossy.dof_friction, [0.05, 0.3])

    # replacing the actuators leaves no stale losses
    bare = with_actuators(lossy, [])
    np.testing.assert_array_equal(joint_damping(bare), [0.1, 0.7])
    np.testing.assert_array_equal(joint_friction(bare), [0.05, 0.3])
    elbow = ActuatorDefinition("elbow", 5.0, _spin_motor(), output_damping=0.5, output_friction=0.25)
    moved = with_actuators(lossy, [elbow])
    np.testing.assert_allclose(joint_damping(moved), [0.1, 1.2], rtol=1e-15)
    np.testing.assert_allclose(joint_friction(moved), [0.05, 0.55], rtol=1e-15)

    # the losses are passive: they neither enter the actuator torque nor change the region
    state = set_actuator_torque(lossy, at(lossy, u=[2.0, 0.0]), "shoulder", 4.0)
    tau, st_ = actuate(lossy, state)
    np.testing.assert_allclose(tau, [4.0, 0.0], rtol=1e-15)
    assert float(st_.joint_loss_torque[0]) == 0.0


# --------------------------------------------------------------------------------------------------------------
# Batching: a model and a state per world.


def test_vmap_over_worlds_with_per_world_resistance_and_voltage(hound, hound_v):
    rng = np.random.default_rng(0)
    worlds = 6
    resistance = 0.4 * rng.uniform(0.8, 1.2, (worlds, 3))
    voltage = rng.uniform(18.0, 30.0, (worlds, 3))
    u = np.zeros((worlds, hound.nv))
    legs = [hound_v["LF_HAA"], hound_v["LF_HFE"], hound_v["LF_KFE"]]
    u[:, legs] = rng.uniform(-25.0, 25.0, (worlds, 3))
    torques = rng.uniform(-40.0, 40.0, (worlds, 3))

    motor = motor_of(hound)
    models = hound.replace(actuators=hound.actuators.replace(motor=motor.replace(resistance=jnp.asarray(resistance))))
    base = set_actuator_torques(hound, at(hound), [0.0, 0.0, 0.0])
    states = base.replace(u=jnp.asarray(u), bus_voltage=jnp.asarray(voltage), actuator_torque=jnp.asarray(torques))

    none = jax.tree_util.tree_map(lambda _: None, hound)
    model_axes = none.replace(actuators=none.actuators.replace(motor=none.actuators.motor.replace(resistance=0)))
    none_s = jax.tree_util.tree_map(lambda _: None, base)
    state_axes = none_s.replace(u=0, bus_voltage=0, actuator_torque=0)

    def run(model, state):
        return actuate(model, state)

    tau_b, st_b = jax.vmap(run, in_axes=(model_axes, state_axes))(models, states)
    lo_b, hi_b = jax.vmap(actuator_torque_bounds, in_axes=(model_axes, state_axes))(models, states)
    assert tau_b.shape == (worlds, hound.nv)
    assert st_b.motor_torque.shape == (worlds, 3)

    t = np.asarray(transmission_matrix(hound))
    gears = np.asarray(HOUND_GEARS)
    for k in range(worlds):
        model_k = hound.replace(
            actuators=hound.actuators.replace(motor=motor.replace(resistance=jnp.asarray(resistance[k])))
        )
        state_k = base.replace(
            u=jnp.asarray(u[k]), bus_voltage=jnp.asarray(voltage[k]), actuator_torque=jnp.asarray(torques[k])
        )
        tau_k, st_k = actuate(model_k, state_k)
        np.testing.assert_allclose(tau_b[k], tau_k, rtol=1e-14, atol=1e-14)
        for field in ("motor_speed", "commanded_motor_torque", "motor_torque"):
            np.testing.assert_allclose(getattr(st_b, field)[k], getattr(st_k, field), rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(st_b.saturation[k], st_k.saturation)
        # and by hand
        w = t @ u[k]
        e_lo, e_hi = motor_region(w, resistance[k], 0.1, 10.0, voltage[k], 3.0)
        tau_m = np.clip(torques[k] / gears, e_lo, e_hi)
        np.testing.assert_allclose(st_b.motor_torque[k], tau_m, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tau_b[k], t.T @ tau_m, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lo_b[k], gears * e_lo, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hi_b[k], gears * e_hi, rtol=1e-12, atol=1e-12)
    # the per-world parameters matter: the shared defaults give other bounds
    _, default_hi = jax.vmap(actuator_torque_bounds, in_axes=(None, state_axes))(
        hound, states.replace(bus_voltage=jnp.full((worlds, 3), 24.0))
    )
    assert not np.allclose(hi_b, default_hi)
    assert np.any(np.asarray(st_b.saturation) == VOLTAGE)


def test_setters_under_vmap_over_models_with_per_world_resistance(hound):
    # regression: the voltage check concretized the traced per-world motor constants
    resistance = jnp.asarray([[0.4] * 3, [0.5] * 3, [0.6] * 3])
    models = hound.replace(actuators=hound.actuators.replace(motor=motor_of(hound).replace(resistance=resistance)))
    none = jax.tree_util.tree_map(lambda _: None, hound)
    model_axes = none.replace(actuators=none.actuators.replace(motor=none.actuators.motor.replace(resistance=0)))
    state = at(hound)

    def step(model):
        s = set_bus_voltage(model, state, 30.0)
        s = set_bus_voltage(model, s, 20.0, "LF_KFE")
        s = set_actuator_torque(model, s, "LF_HFE", 100.0)
        return s.bus_voltage, actuate(model, s)[1].motor_torque

    volts, tau_m = jax.vmap(step, in_axes=(model_axes,))(models)
    np.testing.assert_array_equal(volts, [[30.0, 30.0, 20.0]] * 3)
    # at rest the hip motor gives min(stall, peak) = min(0.1 * 30 / R, 3)
    np.testing.assert_allclose(tau_m[:, 1], np.minimum(0.1 * 30.0 / np.array([0.4, 0.5, 0.6]), 3.0), rtol=1e-14)


def test_vmap_over_states_with_per_world_bus_voltage_via_set_bus_voltage(turntable):
    volts = jnp.asarray([12.0, 24.0, 36.0, 48.0])
    state = set_actuator_torques(turntable, at(turntable, u=[20.0]), [100.0])
    batched = jax.vmap(lambda v: set_bus_voltage(turntable, state, v))(volts)
    tau, st_ = jax.vmap(actuate, in_axes=(None, 0))(turntable, batched)
    e_lo, e_hi = motor_region(200.0, 0.2, 0.1, 10.0, np.asarray(volts), 1.5)
    np.testing.assert_allclose(tau[:, 0], 10 * e_hi, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(st_.saturation[:, 0], [PEAK if e == 1.5 else VOLTAGE for e in e_hi])


# --------------------------------------------------------------------------------------------------------------
# Property: the applied motor torques lie in their regions.

_ACTUATE_JIT = jax.jit(actuate)


# XLA on CPU flushes subnormal results to zero (torque / gear ratio of a torque near the smallest normal
# number), so magnitudes that small are left out.
def _floats(bound: float):
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False).filter(lambda x: x == 0 or abs(x) > 1e-100)


_SPEED = _floats(60.0)
_TORQUE = _floats(100.0)


@settings(max_examples=100, deadline=None)
@given(
    u_leg=st.tuples(_SPEED, _SPEED, _SPEED),
    u_base=st.tuples(*[_SPEED] * 6),
    torques=st.tuples(_TORQUE, _TORQUE, _TORQUE),
    voltage=st.floats(6.0, 60.0, allow_nan=False),
)
def test_property_motor_torque_lies_in_the_region(hound, hound_v, u_leg, u_base, torques, voltage):
    u = np.zeros(hound.nv)
    u[:6] = u_base
    for name, value in zip(("LF_HAA", "LF_HFE", "LF_KFE"), u_leg, strict=True):
        u[hound_v[name]] = value
    state = at(hound, u=u, torques=list(torques)).replace(bus_voltage=jnp.full((3,), voltage))
    tau, st_ = _ACTUATE_JIT(hound, state)

    motor = motor_of(hound).replace(bus_voltage=jnp.full((3,), voltage))
    peak = np.asarray(motor.peak_torque)
    violation = np.asarray(motor_operating_region_violation(motor, st_.motor_speed, st_.motor_torque))
    assert np.all(violation <= 1e-12 * peak)

    # by hand
    gears = np.asarray(HOUND_GEARS)
    w = np.asarray(transmission_matrix(hound)) @ u
    np.testing.assert_allclose(st_.motor_speed, w, rtol=1e-15, atol=1e-12)
    lo, hi = motor_region(w, 0.4, 0.1, 10.0, voltage, 3.0)
    tau_m = np.asarray(st_.motor_torque)
    assert np.all(tau_m >= lo - 1e-12 * peak) and np.all(tau_m <= hi + 1e-12 * peak)
    commanded = np.asarray(torques) / gears
    np.testing.assert_array_equal(st_.commanded_motor_torque, commanded)
    np.testing.assert_allclose(tau_m, np.clip(commanded, lo, hi), rtol=0, atol=1e-12 * 3.0)
    admissible = np.asarray(motor_operating_region_violation(motor, st_.motor_speed, commanded)) == 0
    strictly_inside = (commanded > lo + 1e-9) & (commanded < hi - 1e-9)
    assert np.all(admissible[strictly_inside])
    for i in range(3):
        if admissible[i]:
            assert tau_m[i] == commanded[i]
            assert int(st_.saturation[i]) == NONE
        else:
            assert int(st_.saturation[i]) in (PEAK, VOLTAGE)
    np.testing.assert_allclose(tau, np.asarray(transmission_matrix(hound)).T @ tau_m, rtol=1e-14, atol=1e-13)


# --------------------------------------------------------------------------------------------------------------
# jit and gradients.


def test_actuate_under_jit_matches_eager(turntable, hound, hound_v):
    for model, state in (
        (turntable, set_actuator_torques(turntable, at(turntable, u=[23.8]), [100.0])),
        (
            hound,
            set_actuator_torques(hound, at(hound, u=hound_u(hound_v, hound.nv, LF_HFE=20.0, LF_KFE=11.0)), [5, 29, 29]),
        ),
    ):
        tau_j, st_j = _ACTUATE_JIT(model, state)
        tau_e, st_e = actuate(model, state)
        np.testing.assert_allclose(tau_j, tau_e, rtol=1e-14, atol=1e-14)
        for a, b in zip(jax.tree_util.tree_leaves(st_j), jax.tree_util.tree_leaves(st_e), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)
    tau, st_ = _ACTUATE_JIT(turntable, set_actuator_torques(turntable, at(turntable, u=[23.8]), [100.0]))
    assert float(tau[0]) == pytest.approx(1.0, rel=1e-12)
    assert int(st_.saturation[0]) == VOLTAGE
    # the functional setters work inside jit as well
    step = jax.jit(
        lambda s, v, t: actuate(turntable, set_actuator_torques(turntable, set_bus_voltage(turntable, s, v), t))
    )
    tau2, _ = step(at(turntable, u=[23.8]), 48.0, jnp.asarray([100.0]))
    assert float(tau2[0]) == pytest.approx(15.0, rel=1e-12)  # 24 - 11.9 > 1.5: peak-limited again


def _spin_joint_torque(turntable, u: float, command: float):
    """Joint torque of the turntable as a function of R, Kt, Kv (model leaves) and Vbus (state leaf)."""
    state0 = set_actuator_torques(turntable, at(turntable, u=[u]), [command])

    def f(resistance, torque_constant, velocity_constant, bus_voltage):
        motor = motor_of(turntable).replace(
            resistance=jnp.reshape(resistance, (1,)),
            torque_constant=jnp.reshape(torque_constant, (1,)),
            velocity_constant=jnp.reshape(velocity_constant, (1,)),
        )
        model = turntable.replace(actuators=turntable.actuators.replace(motor=motor))
        state = state0.replace(bus_voltage=jnp.reshape(bus_voltage, (1,)))
        return actuate(model, state)[0][0]

    return f


def test_gradients_in_the_voltage_limited_branch_match_finite_differences(turntable):
    # The brief's u = 20 rad/s (200 rad/s at the motor) is below the corner speed
    # Kv (Vbus - R peak / Kt) = 210 rad/s, i.e. peak-limited; 22.5 rad/s (225) is voltage-limited:
    # upper = 12 - 0.05 * 225 = 0.75 Nm < 1.5.
    u, command = 22.5, 100.0
    f = _spin_joint_torque(turntable, u, command)
    x = (0.2, 0.1, 10.0, 24.0)
    _, st_ = actuate(turntable, set_actuator_torques(turntable, at(turntable, u=[u]), [command]))
    assert int(st_.saturation[0]) == VOLTAGE
    assert float(f(*x)) == pytest.approx(10 * (12.0 - 0.05 * 225.0), rel=1e-12)

    grads = jax.jit(jax.grad(f, argnums=(0, 1, 2, 3)))(*x)
    # by hand: tau_j = G Kt / R (V - w / Kv), w = G u
    G, R, Kt, Kv, V, w = 10.0, *x, 10.0 * u
    analytic = (
        -G * Kt / R**2 * (V - w / Kv),
        G / R * (V - w / Kv),
        G * Kt / R * w / Kv**2,
        G * Kt / R,
    )
    for k in range(4):
        h = 1e-6 * x[k]
        plus = list(x)
        minus = list(x)
        plus[k] += h
        minus[k] -= h
        fd = (float(f(*plus)) - float(f(*minus))) / (2 * h)
        assert float(grads[k]) == pytest.approx(fd, rel=1e-6), k
        assert float(grads[k]) == pytest.approx(analytic[k], rel=1e-12), k


def test_gradients_in_the_peak_limited_branch(turntable):
    # at 20 rad/s the region is peak-limited: the electrical constants do not change the torque
    f = _spin_joint_torque(turntable, 20.0, 100.0)
    grads = jax.grad(f, argnums=(0, 1, 2, 3))(0.2, 0.1, 10.0, 24.0)
    assert float(f(0.2, 0.1, 10.0, 24.0)) == pytest.approx(15.0)
    np.testing.assert_array_equal([float(g) for g in grads], [0.0, 0.0, 0.0, 0.0])

    def by_peak(peak):
        motor = motor_of(turntable).replace(peak_torque=jnp.reshape(peak, (1,)))
        model = turntable.replace(actuators=turntable.actuators.replace(motor=motor))
        return actuate(model, set_actuator_torques(turntable, at(turntable, u=[20.0]), [100.0]))[0][0]

    assert float(jax.grad(by_peak)(1.5)) == pytest.approx(10.0)  # d(G peak)/d peak


def test_gradient_through_the_state_velocity_is_the_back_emf_damping(turntable):
    # at the voltage limit the motor acts as a damper of G^2 Kt / (R Kv) = 5 Nm s/rad at the joint
    def f(u):
        return actuate(turntable, set_actuator_torques(turntable, at(turntable, u=u[None]), [100.0]))[0][0]

    assert float(jax.grad(f)(jnp.asarray(23.8))) == pytest.approx(-100 * 0.1 / (0.2 * 10), rel=1e-12)


def test_export_and_import_actuators_round_trip(tmp_path, hound):
    """The spec's world export: current actuators (with_actuators), bus voltages, nonzero torques, monitor mode."""
    model = hound
    state = jaxmor.init_state(model)
    defs = jaxmor.get_actuators(model)
    # Replace the URDF's actuators: drop the abduction, randomize a resistance, add output losses.
    defs = [d.replace(motor=d.motor.replace(resistance=0.37), output_damping=0.02) for d in defs[1:]]
    model = jaxmor.with_actuators(model, defs)
    state = jaxmor.reset_actuator_state(model, state)
    state = jaxmor.set_bus_voltage(model, state, 22.5, "LF_KFE")
    state = jaxmor.set_actuator_torque(model, state, "LF_HFE", 7.25)
    state = jaxmor.set_motor_operating_region_enforced(model, state, False)
    text = jaxmor.export_actuators(model, state)
    assert 'motor_operating_region_enforced="false"' in text
    assert text.count(' torque="') == 1  # only the nonzero torque is written

    fresh = hound  # models are immutable: with_actuators above returned a new one
    path = tmp_path / "actuators.xml"
    path.write_text(text)
    for source in (text, path):
        loaded, loaded_state = jaxmor.import_actuators(fresh, jaxmor.init_state(fresh), source)
        assert jaxmor.actuator_names(loaded) == ["LF_HFE", "LF_KFE"]
        np.testing.assert_array_equal(loaded.actuators.transmission, model.actuators.transmission)
        np.testing.assert_array_equal(loaded.actuators.motor.resistance, [0.37, 0.37])
        np.testing.assert_array_equal(loaded.actuators.output_damping, [0.02, 0.02])
        np.testing.assert_array_equal(loaded_state.bus_voltage, [24.0, 22.5])
        np.testing.assert_array_equal(loaded_state.actuator_torque, [7.25, 0.0])
        assert not bool(loaded_state.mor_enforced)


def test_import_actuators_errors_name_file_and_line(hound):
    model = hound
    state = jaxmor.init_state(model)
    bad_torque = (
        '<actuators>\n  <actuator joint="LF_HFE" gear_ratio="10" torque="nan">\n'
        '    <motor resistance="0.4" torque_constant="0.1" velocity_constant="10" bus_voltage="24"/>\n'
        "  </actuator>\n</actuators>\n"
    )
    with pytest.raises(jaxmor.ModelError, match=r"^<string>:2: .*torque"):
        jaxmor.import_actuators(model, state, bad_torque)
    with pytest.raises(jaxmor.ModelError, match=r"^<string>:1: .*enforced"):
        jaxmor.import_actuators(model, state, '<actuators motor_operating_region_enforced="maybe"/>')
    with pytest.raises(jaxmor.ModelError, match=r"^<string>:1: .*not <actuators>"):
        jaxmor.import_actuators(model, state, "<robot name='x'/>")
