"""The shipped robot descriptions: robots/quadruped (a KAIST-Hound-like quadruped) and robots/pendulum.

Every expected value is computed here by hand from the numbers the URDFs and their READMEs document
(or read from the URDF text with ElementTree, not through jaxmor), never by asking the code under test.
Float64 (tests/conftest.py enables x64).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import PENDULUM_URDF, QUADRUPED_FOOT_RADIUS, QUADRUPED_JOINTS, QUADRUPED_LEGS, QUADRUPED_URDF

import jaxmor

# The quadruped's documented numbers (robots/quadruped/README.md); its joint order and foot radius are in
# tests/models.py.
BASE_MASS, HIP_MASS, THIGH_MASS, SHANK_MASS = 20.0, 1.5, 1.0, 0.3
TOTAL_MASS = BASE_MASS + 4 * (HIP_MASS + THIGH_MASS + SHANK_MASS)  # 31.2 kg
G_HAA, G_LEG = 6.0, 10.0
R, KT, KV, V_BUS, PEAK = 0.4, 0.1, 10.0, 24.0, 3.0
J_ROTOR = 6e-5
SHANK = 0.3

# The pendulum's documented numbers (robots/pendulum/README.md).
M_ROD, L_ROD, GRAVITY = 1.0, 1.0, 9.81


def _urdf_link_masses(path: Path) -> dict[str, float]:
    """``{link: mass}`` straight from the URDF text (links without ``<inertial>`` omitted)."""
    out = {}
    for link in ET.parse(path).getroot().findall("link"):
        mass = link.find("inertial/mass")
        if mass is not None:
            out[link.get("name")] = float(mass.get("value"))
    return out


# The README's nominal standing pose: base level, HAA 0, HFE 0.6, KFE -1.2 rad, which puts each foot under its
# hip, on the ground, at base height 2 * 0.3 cos(0.6) + 0.025 = 0.520201 m. Written here from the README, not
# taken from jaxmor.robots.quadruped_standing_q: it is that helper's independent check (the rest of the suite
# uses the helper, through tests/models.py).
STAND_HFE, STAND_KFE = 0.6, -1.2
STAND_HEIGHT = 2 * SHANK * math.cos(STAND_HFE) + QUADRUPED_FOOT_RADIUS  # thigh and shank are both 0.3 m


def standing_q(model: jaxmor.Model) -> jnp.ndarray:
    """The README's nominal standing configuration (above), quaternion w x y z, joints by their q indices."""
    q = np.zeros(model.nq)
    q[2], q[3] = STAND_HEIGHT, 1.0
    for leg in QUADRUPED_LEGS:
        q[jaxmor.joint_q_index(model, f"{leg}_HFE")] = STAND_HFE
        q[jaxmor.joint_q_index(model, f"{leg}_KFE")] = STAND_KFE
    return jnp.asarray(q)


# --------------------------------------------------------------------------------------------------
# quadruped


def test_quadruped_counts_and_names(quadruped):
    m = quadruped
    assert m.name == "quadruped"
    assert m.floating_base
    assert m.body_names[0] == "base"
    assert (m.nq, m.nv) == (19, 18)
    assert tuple(jaxmor.joint_names(m)) == QUADRUPED_JOINTS
    assert tuple(jaxmor.actuator_names(m)) == QUADRUPED_JOINTS
    assert m.na == 12
    assert tuple(m.actuators.joints) == QUADRUPED_JOINTS
    assert m.actuators.models == tuple(
        model for _ in QUADRUPED_LEGS for model in ("abduction_6to1", "hound_leg", "hound_leg")
    )
    # the base box and four spherical feet; the feet are merged into the shanks' bodies
    assert m.ng == 5
    assert m.geom_type == (jaxmor.GeomType.BOX,) + (jaxmor.GeomType.SPHERE,) * 4
    np.testing.assert_allclose(np.asarray(m.geom_size[0]), [0.3, 0.15, 0.075], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(m.geom_size[1:, 0]), QUADRUPED_FOOT_RADIUS, rtol=0, atol=1e-15)
    for g in range(1, 5):
        assert m.body_names[m.geom_body[g]].endswith("_SHANK")
    assert m.nb == 13  # base + 4 x (hip, thigh, shank)


def test_quadruped_transmission_is_the_hound_leg(quadruped):
    m = quadruped
    t = np.asarray(jaxmor.transmission_matrix(m))
    expected = np.zeros((12, 18))
    for k in range(4):
        haa, hfe, kfe = 3 * k, 3 * k + 1, 3 * k + 2  # actuator rows; joint columns are 6 + row
        expected[haa, 6 + haa] = G_HAA
        # [w_hip_motor ; w_knee_motor] = [[G_H, 0], [1, G_K]] [u_HFE ; u_KFE]
        expected[hfe, 6 + hfe] = G_LEG
        expected[kfe, 6 + hfe] = 1.0
        expected[kfe, 6 + kfe] = G_LEG
    np.testing.assert_array_equal(t, expected)
    np.testing.assert_array_equal(np.asarray(m.actuators.gear_ratio), [G_HAA, G_LEG, G_LEG] * 4)
    assert m.actuators.couplings == tuple(c for leg in QUADRUPED_LEGS for c in ((), (), (f"{leg}_HFE",)))
    motor = m.actuators.motor
    for field, value in (
        ("resistance", R),
        ("torque_constant", KT),
        ("velocity_constant", KV),
        ("bus_voltage", V_BUS),
        ("peak_torque", PEAK),
    ):
        np.testing.assert_array_equal(np.asarray(getattr(motor, field)), np.full(12, value), err_msg=field)
    # all losses are kept at the joints, none at the actuator outputs
    np.testing.assert_array_equal(np.asarray(m.actuators.output_damping), np.zeros(12))
    np.testing.assert_array_equal(np.asarray(m.actuators.output_friction), np.zeros(12))


def test_quadruped_rotor_inertia_is_the_diagonal_of_TtJT(quadruped):
    """Spec "Couplings": rotor_inertia = diag(T^T J_rotor T): 36 J (HAA), 100 J + J (HFE), 100 J (KFE)."""
    m = quadruped
    np.testing.assert_array_equal(np.asarray(m.dof_armature[:6]), np.zeros(6))
    by_hand = np.array([36 * J_ROTOR, 101 * J_ROTOR, 100 * J_ROTOR] * 4)
    np.testing.assert_allclose(np.asarray(m.dof_armature[6:]), by_hand, rtol=1e-12, atol=0)
    t = np.asarray(jaxmor.transmission_matrix(m))
    reflected = t.T @ (J_ROTOR * np.eye(12)) @ t
    np.testing.assert_allclose(np.asarray(m.dof_armature), np.diag(reflected), rtol=1e-12, atol=0)
    # the term the per-joint model leaves out: J_K G_K between hip and knee, a tenth of the knee's own
    for k in range(4):
        hfe, kfe = 6 + 3 * k + 1, 6 + 3 * k + 2
        assert reflected[hfe, kfe] == pytest.approx(G_LEG * J_ROTOR, rel=1e-12)
        assert reflected[hfe, kfe] == pytest.approx(0.1 * reflected[kfe, kfe], rel=1e-12)


def test_quadruped_joint_limits_and_losses(quadruped):
    m = quadruped
    gears = np.array([G_HAA, G_LEG, G_LEG] * 4)
    # effort = peak motor torque x gear (18, 30 Nm); velocity = no-load speed / gear (40, 24 rad/s)
    np.testing.assert_allclose(np.asarray(m.dof_effort_limit[6:]), PEAK * gears, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(m.dof_velocity_limit[6:]), KV * V_BUS / gears, rtol=1e-15)
    np.testing.assert_array_equal(np.asarray(m.dof_lower[6:]), [-0.7, -3.0, -2.8] * 4)
    np.testing.assert_array_equal(np.asarray(m.dof_upper[6:]), [0.7, 3.0, -0.1] * 4)
    np.testing.assert_array_equal(np.asarray(m.dof_damping[6:]), np.full(12, 0.05))
    np.testing.assert_array_equal(np.asarray(m.dof_friction[6:]), np.full(12, 0.1))
    # the base is free and lossless
    assert np.all(np.isinf(np.asarray(m.dof_effort_limit[:6])))
    np.testing.assert_array_equal(np.asarray(m.dof_damping[:6]), np.zeros(6))


def test_quadruped_total_mass(quadruped):
    m = quadruped
    links = _urdf_link_masses(QUADRUPED_URDF)
    assert len(links) == 13  # the massless feet have no <inertial>
    assert sum(links.values()) == pytest.approx(TOTAL_MASS, abs=1e-12)
    assert TOTAL_MASS == pytest.approx(31.2, abs=1e-12)
    assert float(jnp.sum(m.body_mass)) == pytest.approx(TOTAL_MASS, abs=1e-12)
    # the base's linear velocity is world-frame, so M[0:3, 0:3] = total mass * I at any configuration
    rng = np.random.default_rng(7)
    configurations = [standing_q(m), jaxmor.neutral_q(m)]
    for _ in range(3):
        q = np.asarray(standing_q(m)).copy()
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[7:] = rng.uniform(np.asarray(m.dof_lower[6:]), np.asarray(m.dof_upper[6:]))
        configurations.append(jnp.asarray(q))
    for q in configurations:
        mm = np.asarray(jaxmor.mass_matrix(m, q))
        np.testing.assert_allclose(mm[0:3, 0:3], TOTAL_MASS * np.eye(3), rtol=0, atol=1e-12)


def test_quadruped_standing_configuration_puts_the_feet_on_the_ground(quadruped):
    """README: base level at 0.5202 m, HFE 0.6, KFE -1.2 puts each foot sphere on z = 0 under its hip."""
    m = quadruped
    assert STAND_HEIGHT == pytest.approx(0.520201, abs=1e-6)
    poses = jaxmor.forward_kinematics(m, standing_q(m))
    for leg in QUADRUPED_LEGS:
        foot = np.asarray(poses.position[m.link_names.index(f"{leg}_FOOT")])
        x = 0.25 if leg[1] == "F" else -0.25
        y = 0.2 if leg[0] == "L" else -0.2
        np.testing.assert_allclose(foot, [x, y, QUADRUPED_FOOT_RADIUS], rtol=0, atol=1e-12)
    # the standing joint angles lie inside the limits
    q = np.asarray(standing_q(m))[7:]
    assert np.all(q >= np.asarray(m.dof_lower[6:])) and np.all(q <= np.asarray(m.dof_upper[6:]))


def test_the_library_standing_pose_is_the_documented_one(quadruped):
    """``jaxmor.robots.quadruped_standing_q`` (used by ``jaxmor demo`` and the README) equals the pose the test
    above checks against the README's geometry; another robot is refused."""
    np.testing.assert_allclose(jaxmor.robots.quadruped_standing_q(quadruped), standing_q(quadruped), atol=1e-15)
    with pytest.raises(jaxmor.ArgumentError, match="shipped quadruped"):
        jaxmor.robots.quadruped_standing_q(jaxmor.load_urdf(jaxmor.robots.path("pendulum")))


def test_quadruped_time_step_bound_of_the_knee(quadruped):
    """Spec "Time step and the voltage limit": dt < 2 I R Kv / (G^2 Kt) for the knee is a few ms.

    I is the inertia at the knee joint, including the reflected rotor inertia: the shank about the
    knee axis (0.3 (3 * 0.015^2 + 0.3^2) / 12 + 0.3 * 0.15^2 = 0.009016875 kg m^2) plus
    100 J_rotor = 0.006 kg m^2. The bound is 12.0 ms; the rotor alone gives 2 R Kv J / Kt = 4.8 ms.
    """
    m = quadruped
    mm = np.asarray(jaxmor.mass_matrix(m, standing_q(m)))
    defs = {d.label: d for d in jaxmor.get_actuators(m)}
    shank_about_knee = SHANK_MASS * (3 * 0.015**2 + SHANK**2) / 12 + SHANK_MASS * (SHANK / 2) ** 2
    bounds = {}
    for leg in QUADRUPED_LEGS:
        name = f"{leg}_KFE"
        j = jaxmor.joint_index(m, name)
        inertia = mm[j, j]
        assert inertia == pytest.approx(shank_about_knee + 100 * J_ROTOR, rel=1e-12)
        d = defs[name]
        mot = d.motor
        bound = 2 * inertia * mot.resistance * mot.velocity_constant / (d.gear_ratio**2 * mot.torque_constant)
        bounds[name] = bound
        assert 1e-3 < bound < 2e-2
        assert bound == pytest.approx(0.01201350, rel=1e-6)
    # the motor's own bound (rotor inertia only) is a lower bound for every actuator
    rotor_only = 2 * R * KV * J_ROTOR / KT
    assert rotor_only == pytest.approx(4.8e-3, rel=1e-12)
    for name, d in defs.items():
        j = jaxmor.joint_index(m, d.joint)
        bound = 2 * mm[j, j] * R * KV / (d.gear_ratio**2 * KT)
        assert bound > rotor_only * (1 - 1e-12), name
    # the default time step (1 ms) is inside the knee's bound
    assert float(m.opt.timestep) < min(bounds.values())


# --------------------------------------------------------------------------------------------------
# pendulum


def test_pendulum_counts(pendulum):
    p = pendulum
    assert p.name == "pendulum"
    assert not p.floating_base
    assert (p.nq, p.nv) == (1, 1)
    assert tuple(jaxmor.joint_names(p)) == ("hinge",)
    assert tuple(jaxmor.actuator_names(p)) == ("hinge",)
    assert p.actuators.models == ("direct_drive",)
    np.testing.assert_array_equal(np.asarray(jaxmor.transmission_matrix(p)), [[1.0]])
    mot = p.actuators.motor
    # back_emf_constant 0.5 V s/rad is Kv = 2 rad/s/V
    assert float(mot.velocity_constant[0]) == pytest.approx(2.0, rel=1e-15)
    assert float(mot.peak_torque[0]) == 6.0
    # a frictionless, undamped hinge without rotor inertia
    assert float(p.dof_damping[0]) == 0.0
    assert float(p.dof_friction[0]) == 0.0
    assert float(p.dof_armature[0]) == 0.0
    assert np.isinf(float(p.dof_lower[0])) and np.isinf(float(p.dof_upper[0]))
    assert _urdf_link_masses(PENDULUM_URDF) == {"rod": M_ROD}
    assert float(jnp.sum(p.body_mass)) == M_ROD


@pytest.mark.parametrize("theta", [0.0, 0.3, -1.0, 2.0, math.pi])
def test_pendulum_mass_matrix_is_m_l2_over_3(pendulum, theta):
    mm = np.asarray(jaxmor.mass_matrix(pendulum, jnp.array([theta])))
    rotor = float(pendulum.dof_armature[0])
    np.testing.assert_allclose(mm, [[M_ROD * L_ROD**2 / 3 + rotor]], rtol=1e-14)


@pytest.mark.parametrize("theta", [0.0, 0.3, -0.7, 1.5, 2.5, -3.0])
def test_pendulum_gravity_torque(pendulum, theta):
    """COM at R_y(theta) (0, 0, -L/2) = (-L/2 sin, 0, -L/2 cos): V = -m g (L/2) cos(theta), b = dV/dtheta."""
    b = float(jaxmor.bias_force(pendulum, jnp.array([theta]), jnp.zeros(1))[0])
    assert b == pytest.approx(M_ROD * GRAVITY * L_ROD / 2 * math.sin(theta), abs=1e-13)
    # a 1-DoF pendulum has no velocity-dependent bias force
    b_moving = float(jaxmor.bias_force(pendulum, jnp.array([theta]), jnp.array([3.0]))[0])
    assert b_moving == pytest.approx(b, abs=1e-12)


def test_pendulum_small_angle_period(pendulum):
    """README: T = 2 pi sqrt(2 L / (3 g)) = 1.63795 s, from the linearized M du/dt + b = 0."""
    stiffness = float(jax.grad(lambda t: jaxmor.bias_force(pendulum, t[None], jnp.zeros(1))[0])(jnp.array(0.0)))
    inertia = float(jaxmor.mass_matrix(pendulum, jnp.zeros(1))[0, 0])
    period = 2 * math.pi * math.sqrt(inertia / stiffness)
    assert period == pytest.approx(2 * math.pi * math.sqrt(2 * L_ROD / (3 * GRAVITY)), rel=1e-12)
    assert period == pytest.approx(1.637947, abs=1e-6)
