"""The actuator PD: position targets through the motors (``set_actuator_pd_gains``/``_targets``).

Independent references: the PD law written out here from the joint coordinates found by name
(``joint_q_index``), and the motor region in closed form (``oracles.motor_region``, the spec's inequalities
solved for the torque), never jaxmor's own clipping function. float64 (tests/conftest.py enables x64);
the region bound is the spec's accuracy, ``1e-12`` of the peak torque.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import quadruped_standing_q
from oracles import motor_region

import jaxmor
from jaxmor import ArgumentError

N_STEPS = 400


def _region_at(model, speed, voltage):
    m = model.actuators.motor
    return motor_region(speed, m.resistance, m.torque_constant, m.velocity_constant, voltage, m.peak_torque)


@pytest.fixture(scope="module")
def run():
    """The quadruped dropped 2 cm onto the ground under a stiff actuator PD whose targets jump between
    random poses every 50 steps (the motors saturate often, on the peak and on the voltage), 400 steps."""
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    q0 = quadruped_standing_q(model, height=0.54)
    state = jaxmor.init_state(model, q0)
    kp = np.full(model.na, 400.0)
    kd = np.full(model.na, 4.0)
    state = jaxmor.set_actuator_pd_gains(model, state, kp, kd)
    rng = np.random.default_rng(3)
    q_act = np.array([jaxmor.joint_q_index(model, j) for j in model.actuators.joints])
    v_act = np.array(model.actuators.joint_v_index)
    targets = q0[q_act] + rng.uniform(-1.0, 1.0, (N_STEPS // 50, model.na))
    vel_targets = rng.uniform(-5.0, 5.0, (N_STEPS // 50, model.na))
    feedforward = rng.uniform(-3.0, 3.0, model.na)
    state = jaxmor.set_actuator_torques(model, state, feedforward)

    @jax.jit
    def advance(s, target, vel_target):
        s = jaxmor.set_actuator_pd_targets(model, s, target, vel_target)
        return s, jaxmor.step(model, s)

    befores, afters = [], []
    for k in range(N_STEPS):
        before, state = advance(state, targets[k // 50], vel_targets[k // 50])
        befores.append(jax.device_get(before))
        afters.append(jax.device_get(state))
    return model, befores, afters, q_act, v_act, feedforward


def test_actuator_pd_commands_the_pd_law(run):
    """commanded actuator torque = feed-forward + kp (target - q_j) + kd (velocity target - u_j) at the start."""
    model, befores, afters, q_act, v_act, feedforward = run
    gear = np.asarray(model.actuators.gear_ratio)
    worst = 0.0
    for before, after in zip(befores, afters, strict=True):
        q = np.asarray(before.q)
        u = np.asarray(before.u)
        law = (
            feedforward
            + np.asarray(before.actuator_p_gain) * (np.asarray(before.actuator_position_target) - q[q_act])
            + np.asarray(before.actuator_d_gain) * (np.asarray(before.actuator_velocity_target) - u[v_act])
        )
        got = np.asarray(after.actuator_state.commanded_motor_torque) * gear
        worst = max(worst, float(np.max(np.abs(got - law) / (1.0 + np.abs(law)))))
    assert worst < 1e-12, f"commanded_motor_torque differs from the PD law by {worst:.3e} (relative)"


def test_actuator_pd_never_leaves_the_region(run):
    """Every applied motor torque lies in the closed-form region at the step's motor speed; the PD saturates
    both bounds (peak and voltage) in this run, so the check is not vacuous."""
    model, befores, afters, *_ = run
    peak = np.asarray(model.actuators.motor.peak_torque)
    worst = 0.0
    saturations = set()
    for before, after in zip(befores, afters, strict=True):
        st = after.actuator_state
        lower, upper = _region_at(model, np.asarray(st.motor_speed), np.asarray(before.bus_voltage))
        tau = np.asarray(st.motor_torque)
        worst = max(worst, float(np.max(np.maximum(tau - upper, lower - tau) / peak)))
        saturations |= set(np.asarray(st.saturation).tolist())
    assert worst <= 1e-12, f"motor_torque leaves the region by {worst:.3e} of the peak torque"
    assert {int(jaxmor.MotorSaturation.PEAK_TORQUE), int(jaxmor.MotorSaturation.VOLTAGE)} <= saturations


def test_actuator_pd_in_monitor_mode_is_applied_as_commanded(quadruped_ground):
    model = quadruped_ground
    state = jaxmor.init_state(model, quadruped_standing_q(model))
    state = jaxmor.set_actuator_pd_gains(model, state, np.full(model.na, 1000.0), np.zeros(model.na))
    state = jaxmor.set_actuator_pd_targets(model, state, np.full(model.na, 1.5))
    state = jaxmor.set_motor_operating_region_enforced(model, state, False)
    st = jaxmor.step(model, state).actuator_state
    np.testing.assert_array_equal(np.asarray(st.motor_torque), np.asarray(st.commanded_motor_torque))
    gear = np.asarray(model.actuators.gear_ratio)
    assert np.any(np.abs(np.asarray(st.motor_torque)) > np.asarray(model.actuators.motor.peak_torque)), gear


def test_actuator_pd_holds_a_pose_the_region_allows(turntable):
    """The turntable (one motor, gear 10) driven to 1 rad by the actuator PD settles there: the PD closes the
    loop through the motor. kd h / I is far below 2 (explicit stability)."""
    model = turntable
    state = jaxmor.init_state(model)
    state = jaxmor.set_actuator_pd_gains(model, state, [20.0], [2.0])
    state = jaxmor.set_actuator_pd_targets(model, state, [1.0])
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=3000))(state)
    q = float(final.q[jaxmor.joint_q_index(model, model.actuators.joints[0])])
    assert abs(q - 1.0) < 2e-3, q
    assert float(jnp.max(jnp.abs(traj.actuator_state.motor_torque))) > 0.0


def test_actuator_pd_setters_check_their_arguments(quadruped):
    state = jaxmor.init_state(quadruped)
    na = quadruped.na
    with pytest.raises(ArgumentError, match="p_gain"):
        jaxmor.set_actuator_pd_gains(quadruped, state, np.zeros(na + 1), np.zeros(na))
    with pytest.raises(ArgumentError, match="d_gain must not be negative"):
        jaxmor.set_actuator_pd_gains(quadruped, state, np.zeros(na), np.full(na, -1.0))
    with pytest.raises(ArgumentError, match="position_target"):
        jaxmor.set_actuator_pd_targets(quadruped, state, np.zeros(quadruped.nq))
    with pytest.raises(ArgumentError, match="velocity_target"):
        jaxmor.set_actuator_pd_targets(quadruped, state, np.zeros(na), np.full(na, np.nan))
    reset = jaxmor.reset_actuator_state(
        quadruped, jaxmor.set_actuator_pd_gains(quadruped, state, np.ones(na), np.ones(na))
    )
    assert float(jnp.sum(reset.actuator_p_gain)) == 0.0 and float(jnp.sum(reset.actuator_d_gain)) == 0.0
