"""The shipped Unitree Go2 with DC motors (``jaxmor.robots.go2``, ``robots/go2/``): its motors reproduce Unitree's
published figures, its joints' effort and velocity limits are those motors', its standing pose puts the feet on the
ground, and ``jaxmor.envs.Locomotion`` takes it in both motor models.

The published figures are written here from their sources (unitree_ros ``go2_description.urdf``'s joint
``<limit>``s, the Menagerie's ``ctrlrange``s, the 6.33:1 reducer, the 28.8 V battery: ``robots/go2/README.md``),
the standing height from the Menagerie's geometry by hand, and the Menagerie's files are checked against the
checksums of the test copy (``tests/data/unitree_go2/SHA256SUMS``); nothing expected is read from the code under
test. Float64 (tests/conftest.py enables x64).
"""

from __future__ import annotations

import hashlib
import math
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import ROOT, load_shipped

import jaxmor
from jaxmor.sim.kinematics import body_poses

# Unitree's published figures at the joints (unitree_ros go2_description.urdf <limit effort velocity>; the
# Menagerie's go2.xml ctrlrange gives the same torques).
PEAK = {"hip": 23.7, "thigh": 23.7, "calf": 45.43}  # [Nm]
MAX_SPEED = {"hip": 30.1, "thigh": 30.1, "calf": 15.70}  # [rad/s]
GEAR = 6.33  # the joint motor's planetary reducer
V_BATTERY = 28.8  # the Go2's battery, nominal [V]
#: How close the motors come to the published figures: the files round their constants to 5 digits and the knee
#: stage to 1.917 (the published calf figures imply 1.9169 and 1.9172).
REL = 5e-4

LEGS = ("FL", "FR", "RL", "RR")
PARTS = ("hip", "thigh", "calf")
#: The Menagerie's leg geometry (go2.xml): thigh 0.213 m, foot sphere of radius 0.022 m at (-0.002, 0, -0.213) in
#: the calf; the keyframe "home": hip 0, thigh 0.9, calf -1.8 rad.
THIGH, FOOT_X, FOOT_Z, FOOT_R = 0.213, -0.002, -0.213, 0.022
HOME = {"hip": 0.0, "thigh": 0.9, "calf": -1.8}


def _part(name: str) -> str:
    return name.split("_")[1]


@pytest.fixture(scope="module")
def go2():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the shipped robot loads silently
        return jaxmor.robots.go2()


def test_the_shipped_files_are_the_menageries_with_its_license():
    folder = jaxmor.robots.path("go2").parent
    assert jaxmor.robots.path("go2") == folder / "go2.xml" and "go2" in jaxmor.robots.NAMES
    sums = (ROOT / "tests" / "data" / "unitree_go2" / "SHA256SUMS").read_text().splitlines()
    checked = 0
    for line in sums:
        digest, name = line.split()
        if name == "go2.xml" or name in ("scene.xml", "LICENSE") or name.startswith("assets/"):
            assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
            checked += 1
    assert checked == 3 + 16
    license_text = (folder / "LICENSE").read_text()
    assert "Unitree Robotics" in license_text and "Redistribution and use in source and binary forms" in license_text
    assert "BSD-3-Clause" in (folder / "README.md").read_text()


def test_the_motors_reproduce_the_published_figures(go2):
    definitions = jaxmor.get_actuators(go2)
    assert [d.label for d in definitions] == [f"{leg}_{part}" for leg in LEGS for part in PARTS]
    assert [d.joint for d in definitions] == [f"{leg}_{part}_joint" for leg in LEGS for part in PARTS]
    for d in definitions:
        part, motor = _part(d.joint), d.motor
        assert not d.couplings  # the calf motor rides on the thigh: it turns with the knee alone
        stall = motor.torque_constant * motor.bus_voltage / motor.resistance
        no_load = motor.velocity_constant * motor.bus_voltage
        assert motor.bus_voltage == V_BATTERY
        assert motor.torque_constant * motor.velocity_constant == pytest.approx(1.0, rel=1e-4)  # SI: Kt = 1/Kv
        assert d.gear_ratio * motor.peak_torque == pytest.approx(PEAK[part], rel=REL), d.label
        assert no_load / d.gear_ratio == pytest.approx(MAX_SPEED[part], rel=REL), d.label
        # the published peak is the stall torque (the published pair ends one torque-speed line): at rest the
        # peak is available, and the voltage limits it at any speed
        assert motor.peak_torque <= stall <= motor.peak_torque * (1 + REL), d.label
        drop = motor.resistance * motor.peak_torque / motor.torque_constant  # [V] across R at the peak
        corner = motor.velocity_constant * (motor.bus_voltage - drop)
        assert 0.0 <= corner / d.gear_ratio < 0.01, d.label  # [rad/s] at the joint
    hip, calf = definitions[0], definitions[2]
    assert hip.gear_ratio == GEAR
    knee_stage = calf.gear_ratio / hip.gear_ratio
    assert PEAK["calf"] / PEAK["hip"] * (1 - REL) < knee_stage < MAX_SPEED["hip"] / MAX_SPEED["calf"] * (1 + REL)


def test_the_motor_region_at_the_joints_is_the_published_line(go2):
    """The step's torque bounds (``jaxmor.actuator_torque_bounds``, at the gear outputs): the published peak at rest,
    half of it at half the published speed (the line from the peak to the speed), nothing left beyond that speed."""
    state = jaxmor.init_state(go2, q=jnp.asarray(jaxmor.robots.go2_standing_q(go2)))
    v = np.asarray(go2.actuators.joint_v_index)
    peak = np.array([PEAK[_part(j)] for j in go2.actuators.joints])
    speed = np.array([MAX_SPEED[_part(j)] for j in go2.actuators.joints])
    for fraction in (0.0, 0.5, 1.0):
        u = np.zeros(go2.nv)
        u[v] = fraction * speed
        lower, upper = jaxmor.actuator_torque_bounds(go2, state.replace(u=jnp.asarray(u)))
        assert np.all(np.abs(np.asarray(upper) - (1 - fraction) * peak) <= 2 * REL * peak), fraction
        np.testing.assert_allclose(np.asarray(lower), -peak, rtol=2 * REL)  # braking: the peak


def test_the_effort_and_velocity_limits_are_the_motors(go2):
    v = np.asarray(go2.actuators.joint_v_index)
    effort, velocity = np.asarray(go2.dof_effort_limit), np.asarray(go2.dof_velocity_limit)
    for d, k in zip(jaxmor.get_actuators(go2), v, strict=True):
        assert effort[k] == pytest.approx(d.gear_ratio * d.motor.peak_torque, rel=1e-12)
        assert velocity[k] == pytest.approx(d.motor.velocity_constant * d.motor.bus_voltage / d.gear_ratio, rel=1e-12)
        assert effort[k] == pytest.approx(PEAK[_part(d.joint)], rel=REL)
        assert velocity[k] == pytest.approx(MAX_SPEED[_part(d.joint)], rel=REL)
    assert np.all(np.isinf(effort[:6])) and np.all(np.isinf(velocity[:6]))  # the free base is not driven
    assert go2.nu == 0 and go2.na == 12 and go2.ground  # the Menagerie's torque actuators are gone
    state = jaxmor.set_keyframe(go2, jaxmor.init_state(go2), "home")  # the keyframe lost its controls only
    np.testing.assert_allclose(np.asarray(state.q[7:]), [HOME[p] for _ in LEGS for p in PARTS], atol=1e-15)
    plain = jaxmor.robots.go2(with_motors=False, ground=False)
    assert (plain.na, plain.nu, plain.ground) == (0, 12, False)
    assert np.all(np.isinf(np.asarray(plain.dof_effort_limit)))
    with pytest.raises(jaxmor.ArgumentError, match="with_motors"):
        jaxmor.robots.go2(with_motors="yes")


def test_the_standing_pose_is_home_with_the_feet_on_the_ground(go2):
    """Joints from the Menagerie's keyframe (read from the file), the base height from its leg geometry by hand:
    thigh 0.213 cos(0.9) below the hip, the foot centre (-0.002, 0, -0.213) turned by thigh + calf = -0.9 rad,
    plus the radius: 0.288373 m. The collision code finds the four feet exactly on the ground, nothing else."""
    q = jaxmor.robots.go2_standing_q(go2)
    key = ET.parse(jaxmor.robots.path("go2")).getroot().find("keyframe/key[@name='home']")
    home = np.array(key.get("qpos").split(), dtype=float)
    np.testing.assert_array_equal(q[3:], home[3:])
    knee = HOME["thigh"] + HOME["calf"]
    height = THIGH * math.cos(HOME["thigh"]) + (FOOT_X * math.sin(knee) - FOOT_Z * math.cos(knee)) + FOOT_R
    assert height == pytest.approx(0.288373, abs=1e-6)
    assert q[2] == pytest.approx(height, abs=1e-12)
    assert jaxmor.robots.go2_standing_q(jaxmor.add_ground(go2, height=0.1))[2] == pytest.approx(height + 0.1, abs=1e-12)
    contacts = jaxmor.collide(go2, body_poses(go2, jnp.asarray(q)))
    distance, body = np.asarray(contacts.distance), np.asarray(contacts.body_b)
    feet = {go2.geom_body[go2.geom_names.index(leg)] for leg in LEGS}
    on_ground = distance < 1e-9
    assert np.all(np.abs(distance[on_ground]) < 1e-12) and set(body[on_ground]) == feet and on_ground.sum() == 4
    assert np.min(distance[~on_ground]) > 0.04  # the next lowest geom (a calf cylinder) is 5 cm up
    with pytest.raises(jaxmor.ArgumentError, match="shipped Go2"):
        jaxmor.robots.go2_standing_q(load_shipped(jaxmor.robots.path("quadruped")))


def test_it_stands_in_the_standing_pose(go2):
    """Stepped 0.5 s from the standing pose at rest, the joints held by the actuator PD (through the motor
    region): the base sinks by the PD's compliance only (a few mm), stays level and in place."""
    q = jaxmor.robots.go2_standing_q(go2)
    joints = np.array([jaxmor.joint_q_index(go2, j) for j in go2.actuators.joints])
    state = jaxmor.init_state(go2, q=jnp.asarray(q))
    state = jaxmor.set_actuator_pd_gains(go2, state, jnp.full(12, 300.0), jnp.full(12, 5.0))
    state = jaxmor.set_actuator_pd_targets(go2, state, jnp.asarray(q[joints]))
    trajectory = jax.jit(lambda s: jaxmor.rollout(go2, s, None, 250)[1].q)(state)  # 250 x 2 ms
    z = np.asarray(trajectory[:, 2])
    assert np.all(z <= q[2] + 1e-9) and np.all(z > q[2] - 0.005)
    final = np.asarray(trajectory[-1])
    assert np.all(np.abs(final[:2]) < 0.01)  # [m]
    assert 1 - 2 * (final[4] ** 2 + final[5] ** 2) > 0.999  # the base's z axis stays up
    assert np.max(np.abs(final[joints] - q[joints])) < 0.05  # [rad]


@pytest.mark.parametrize("motor_model", ["em", "box"])
def test_locomotion_takes_the_go2(go2, motor_model):
    """``Locomotion`` constructs, resets and steps 4 worlds (jit + vmap) of the Go2 in both motor models: 25 control
    steps (0.5 s) of zero actions (the PD holding the standing pose) and no world falls or tilts."""
    standing = jaxmor.robots.go2_standing_q(go2)
    env = jaxmor.envs.Locomotion(
        go2,
        standing,
        motor_model=motor_model,
        kp=150.0,
        kd=3.0,
        episode_steps=100,
        auto_reset=False,
        feet=jaxmor.robots.GO2_LEGS,
    )
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), 4))
    step = jax.jit(jax.vmap(env.step))
    actions = jnp.zeros((4, env.action_size))
    lowest = np.inf
    for _ in range(25):
        states = step(states, actions)
        assert not bool(jnp.any(states.done))
        lowest = min(lowest, float(jnp.min(states.sim.q[:, 2])))
    assert env.action_size == 12
    np.testing.assert_allclose(np.asarray(states.sim.time), 0.5, rtol=1e-9)
    assert lowest > 0.9 * standing[2]
    quat = np.asarray(states.sim.q[:, 3:7])
    assert np.all(1 - 2 * (quat[:, 1] ** 2 + quat[:, 2] ** 2) > 0.99)  # level: the base's z axis stays up
    assert bool(jnp.all(jnp.isfinite(states.obs)))
    if motor_model == "em":
        assert float(jnp.max(states.metrics["region_violation"])) == 0.0
