"""Scenes of several free bodies (jaxmor.add_free_body, jaxmor.combine), in float64 (tests/conftest.py).

Independent references: closed forms (a box stack at rest; an inelastic push between equal boxes with Coulomb
friction), MuJoCo's inertia of solid geoms, the kinematics of a model placed by a pose, and the strongest
check of composition: bodies that never touch move in a combined model exactly as each does alone.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import PENDULUM_URDF, QUADRUPED_URDF, load_shipped, quadruped_standing_q
from oracles import quat_of_axis_angle, rot_of_quat

import jaxmor
from jaxmor import ArgumentError

G = 9.81
HALF = 0.1  # the boxes' half-extent [m]
WORLD = '<robot name="scene"><link name="world"/></robot>'  # an empty world to put bodies in


def empty_scene(**ground) -> jaxmor.Model:
    return jaxmor.add_ground(jaxmor.load_urdf(WORLD), **ground)


# The model is an argument of the compiled rollout, not a constant in it: models of one structure (the same
# bodies, other values) and the same number of steps share one compilation, e.g. the quadruped alone in the two
# tests of bodies that move as they do alone.
_ROLLOUT = jax.jit(lambda model, state, n_steps: jaxmor.rollout(model, state, n_steps=n_steps)[1], static_argnums=2)


def rollout(model, state, n_steps):
    return _ROLLOUT(model, state, n_steps)


def rotation_angle(quat, quat0):
    """Angle [rad] of the rotation between two unit quaternions (w x y z)."""
    dot = np.abs(np.sum(np.asarray(quat) * np.asarray(quat0), -1))
    return 2.0 * np.arccos(np.clip(dot, 0.0, 1.0))


# --------------------------------------------------------------------------------------------------
# a stack of three boxes


@pytest.fixture(scope="module")
def stack():
    """Three equal 0.2 m cubes of 1 kg stacked on the ground, exactly touching, for 5 s at h = 1 ms."""
    model = empty_scene()
    for i in range(3):
        model = jaxmor.add_free_body(model, f"box{i}", "box", [HALF] * 3, 1.0, position=[0, 0, HALF * (2 * i + 1)])
    assert model.contact_pairs == ((0, 1), (0, 2), (1, 2)) and jaxmor.contact_count(model) == 3 * 4 + 3 * 8
    state = jaxmor.init_state(model)
    return model, np.asarray(state.q), rollout(model, state, 5000)


def test_a_stack_of_three_boxes_rests(stack):
    """Resting on faces, each box sinks by the penetration allowance (1e-5 m per contact layer) and must not
    creep: every box stays within 1 mm of its initial position and rotates by under 1e-4 rad over 5 s."""
    model, q0, traj = stack
    q = np.asarray(traj.q)
    assert np.all(np.isfinite(q))
    for i, s in enumerate(model.free_q):
        drift = np.linalg.norm(q[:, s : s + 3] - q0[s : s + 3], axis=1).max()
        turn = rotation_angle(q[:, s + 3 : s + 7], q0[s + 3 : s + 7]).max()
        print(f"box{i}: drift {drift:.3g} m, rotation {turn:.3g} rad")
        assert drift < 1e-3, (i, drift)
        assert turn < 1e-4, (i, turn)
    # at rest at the end: every speed below 1 mm/s
    assert np.abs(np.asarray(traj.u[-1])).max() < 1e-3


# --------------------------------------------------------------------------------------------------
# a box pushed into another


MU = 0.5  # ground friction
V0 = 2.0  # initial speed of box A [m/s]
GAP = 0.1  # A's front face to B's back face [m]


@pytest.fixture(scope="module")
def push():
    """Box A slides at V0 along +x on the ground (friction MU) into box B at rest GAP ahead; 0.4 s."""
    model = empty_scene(friction=MU)
    model = jaxmor.add_free_body(model, "a", "box", [HALF] * 3, 1.0, position=[0, 0, HALF])
    model = jaxmor.add_free_body(model, "b", "box", [HALF] * 3, 1.0, position=[2 * HALF + GAP, 0, HALF])
    u0 = np.zeros(model.nv)
    u0[model.free_u[0]] = V0
    state = jaxmor.init_state(model, u=u0)
    return model, np.asarray(state.q), rollout(model, state, 400)


def test_a_pushed_box_moves_as_an_inelastic_impact_with_friction_says(push):
    """Closed form (equal masses m, Coulomb friction MU on the ground, no restitution): A slides GAP and hits B
    at v1 = sqrt(V0^2 - 2 MU g GAP); the impact shares the momentum, both leave at v1 / 2, and, decelerated
    alike by MU g, slide together (v1 / 2)^2 / (2 MU g) = 76.9 mm. Tolerance 3 %: the step's O(h v) errors
    (h v1 = 1.7 mm of A's travel, the impact resolved within one step while friction acts)."""
    model, q0, traj = push
    q = np.asarray(traj.q)
    a, b = model.free_q
    v1 = math.sqrt(V0**2 - 2 * MU * G * GAP)
    expected = (v1 / 2) ** 2 / (2 * MU * G)
    moved_b = q[-1, b] - q0[b]
    moved_a = q[-1, a] - q0[a]
    print(f"B moved {moved_b * 1e3:.2f} mm (closed form {expected * 1e3:.2f} mm), A {moved_a * 1e3:.2f} mm")
    np.testing.assert_allclose(moved_b, expected, rtol=0.03)
    np.testing.assert_allclose(moved_a, GAP + expected, rtol=0.03)
    # both at rest at the end, neither lifted nor turned sideways
    assert np.abs(np.asarray(traj.u[-1])).max() < 1e-3
    for s in (a, b):
        assert abs(q[-1, s + 1]) < 1e-6 and abs(q[-1, s + 2] - HALF) < 1e-4
        assert rotation_angle(q[-1, s + 3 : s + 7], q0[s + 3 : s + 7]) < 1e-3
    # the momentum right after the impact: the two speeds meet at about v1 / 2 (within the friction impulse of
    # a few steps, MU g h = 5 mm/s each)
    u = np.asarray(traj.u)
    touching = np.flatnonzero(u[:, model.free_u[1]] > 0.1)[0] + 2
    np.testing.assert_allclose(u[touching, model.free_u[0]], u[touching, model.free_u[1]], atol=0.02)
    np.testing.assert_allclose(u[touching, model.free_u[1]], v1 / 2, atol=0.05)


# --------------------------------------------------------------------------------------------------
# bodies that never touch move as they do alone


# Steps of the tests of bodies that move as they do alone: one number, so that the quadruped alone, rolled out in
# both, compiles once.
ALONE_STEPS = 600


@pytest.fixture(scope="module")
def quadruped_ground():
    return jaxmor.add_ground(load_shipped(QUADRUPED_URDF))


def _alone_and_combined(parts, combined, n_steps):
    """Roll out each ``(model, q0, u0)`` part alone and the combined model from the concatenated state."""
    q0 = np.concatenate([q for _, q, _ in parts])
    u0 = np.concatenate([u for _, _, u in parts])
    together = np.asarray(rollout(combined, jaxmor.init_state(combined, q=q0, u=u0), n_steps).q)
    alone = [np.asarray(rollout(m, jaxmor.init_state(m, q=q, u=u), n_steps).q) for m, q, u in parts]
    return together, alone


@pytest.mark.slow  # 1-2 minutes on 2 cores (combined scenes in the other tests here)
def test_a_quadruped_and_boxes_move_as_each_alone(quadruped_ground):
    """A quadruped dropped from its standing pose (no torques: its legs fold as it lands) and two boxes
    thrown nearby, one of them spinning, all on the same ground but never touching: the combined model's
    trajectories equal each body's alone, to float64 round-off (the models differ only in array lengths; 1e-11
    leaves room for the round-off of differently sized products, amplified by the contacts over 600 steps)."""
    box_alone = jaxmor.add_free_body(empty_scene(), "box", "box", [0.1, 0.15, 0.2], 2.0)
    spin_alone = jaxmor.add_free_body(empty_scene(), "spin", "capsule", [0.05, 0.2], 0.5)
    scene = jaxmor.add_free_body(quadruped_ground, "box", "box", [0.1, 0.15, 0.2], 2.0)
    scene = jaxmor.add_free_body(scene, "spin", "capsule", [0.05, 0.2], 0.5)
    assert scene.free_body == (0, 13, 14) and scene.nq == 19 + 14
    robot_q = quadruped_standing_q(quadruped_ground, height=0.55)
    box_q = np.array([1.5, 0.0, 0.3, *quat_of_axis_angle([1, 2, 0], 0.3)])
    spin_q = np.array([-1.5, 0.5, 0.4, *quat_of_axis_angle([0, 1, 0], 1.2)])
    parts = [
        (quadruped_ground, robot_q, np.zeros(18)),
        (box_alone, box_q, np.array([0.5, 0.2, 0.0, 0.0, 0.0, 3.0])),
        (spin_alone, spin_q, np.array([-0.3, 0.0, 1.0, 5.0, -2.0, 1.0])),
    ]
    together, alone = _alone_and_combined(parts, scene, ALONE_STEPS)
    assert np.all(np.isfinite(together))
    assert np.ptp(together[:, 2]) > 0.05 and np.ptp(together[:, 19 + 7 + 2]) > 0.05  # they did move
    start = 0
    for a in alone:
        part = together[:, start : start + a.shape[1]]
        print("max difference alone vs combined:", np.abs(part - a).max())
        np.testing.assert_allclose(part, a, atol=1e-11)
        start += a.shape[1]


@pytest.mark.slow
def test_two_quadrupeds_with_actuators_move_as_each_alone(quadruped_ground):
    """Two quadrupeds side by side (the second combined with a prefix, 2 m away), each with its own DC-motor
    actuator torques: equal to each alone over 600 steps; the actuators' names, joints and velocity indices
    follow."""
    twin = jaxmor.combine(quadruped_ground, load_shipped(QUADRUPED_URDF), prefix="b_", position=[0, 2.0, 0])
    m = quadruped_ground
    assert twin.na == 2 * m.na and twin.actuators.names[m.na :] == tuple("b_" + n for n in m.actuators.names)
    assert twin.actuators.joint_v_index[m.na :] == tuple(v + m.nv for v in m.actuators.joint_v_index)
    assert twin.actuators.joints[m.na] == "b_" + m.actuators.joints[0]
    np.testing.assert_allclose(np.asarray(twin.actuators.transmission)[m.na :, m.nv :], m.actuators.transmission)
    q = quadruped_standing_q(m)
    shifted = q.copy()
    shifted[1] += 2.0
    np.testing.assert_allclose(np.asarray(twin.q_default)[m.nq : m.nq + 7], [0, 2.0, 0, 1, 0, 0, 0])
    torques = np.linspace(-3.0, 3.0, m.na)
    state = jaxmor.set_actuator_torques(
        twin, jaxmor.init_state(twin, q=np.concatenate([q, shifted])), np.concatenate([torques, -torques])
    )
    together = np.asarray(rollout(twin, state, ALONE_STEPS).q)
    for torque, q0, part in ((torques, q, together[:, : m.nq]), (-torques, shifted, together[:, m.nq :])):
        alone_state = jaxmor.set_actuator_torques(m, jaxmor.init_state(m, q=q0), torque)
        alone = np.asarray(rollout(m, alone_state, ALONE_STEPS).q)
        print("max difference alone vs combined:", np.abs(part - alone).max())
        np.testing.assert_allclose(part, alone, atol=1e-11)


def test_a_box_dropped_on_a_quadruped_is_held_by_it(quadruped_ground):
    """A box dropped 2 cm onto the back of the quadruped, which holds its stance by the built-in PD: the
    robot-box contacts (box-box, 8 slots) stop it, so after 0.4 s it rests on the base, its bottom within 0.1 mm
    of the base's top and level with it (without the pair it would fall through the robot to the ground)."""
    model = jaxmor.add_free_body(quadruped_ground, "load", "box", [0.1, 0.1, 0.05], 1.0)
    assert ("base_box", "load") in [(model.geom_names[a], model.geom_names[b]) for a, b in model.contact_pairs]
    robot_q = quadruped_standing_q(quadruped_ground)
    top = robot_q[2] + 0.075  # the base box's half height is 0.075 m
    q0 = np.concatenate([robot_q, [0.0, 0.0, top + 0.05 + 0.02, 1, 0, 0, 0]])
    state = jaxmor.init_state(model, q=q0)
    gains = np.zeros(model.nv)
    gains[list(model.joint_u)] = 1.0
    state = jaxmor.set_pd_gains(model, state, 400.0 * gains, 10.0 * gains)
    state = jaxmor.set_pd_targets(model, state, q0, np.zeros(model.nv))
    q = np.asarray(rollout(model, state, 400).q)
    s = model.free_q[1]
    gap = (q[-1, s + 2] - 0.05) - (q[-1, 2] + 0.075)
    tilt = rotation_angle(q[-1, s + 3 : s + 7], q[-1, 3:7])
    print(f"box bottom above the base top: {gap:.3g} m, tilt relative to the base {tilt:.3g} rad")
    assert np.all(np.isfinite(q)) and abs(gap) < 1e-4 and tilt < 1e-2
    assert q[:, s + 2].min() > top  # never fell into the base


# --------------------------------------------------------------------------------------------------
# the editors: placement, inertia, pairs, errors


def test_combine_places_a_fixed_base_robot_by_the_pose():
    """A fixed-base pendulum combined at a pose: every link's world pose is the pose times the alone model's."""
    alone = load_shipped(PENDULUM_URDF)
    quat = quat_of_axis_angle([0.3, -1.0, 0.5], 0.8)
    t = np.array([0.4, -1.2, 0.7])
    scene = jaxmor.combine(empty_scene(), alone, prefix="p_", position=t, orientation=quat)
    assert scene.link_names == tuple("p_" + n for n in alone.link_names)
    q = jnp.asarray(np.linspace(0.3, 0.9, alone.nq))
    poses, placed = jaxmor.forward_kinematics(alone, q), jaxmor.forward_kinematics(scene, q)
    r, p, r2, p2 = poses.rotation, poses.position, placed.rotation, placed.position
    rot = rot_of_quat(quat)
    np.testing.assert_allclose(np.asarray(r2), rot @ np.asarray(r), atol=1e-14)
    np.testing.assert_allclose(np.asarray(p2), np.asarray(p) @ rot.T + t, atol=1e-14)


@pytest.mark.parametrize(("shape", "size"), [("box", [0.1, 0.2, 0.3]), ("sphere", 0.1), ("capsule", [0.05, 0.2]),
                                             ("cylinder", [0.05, 0.2])])  # fmt: skip
def test_solid_inertia_matches_mujoco(shape, size):
    """The default inertia of a free body is its uniform solid's, as MuJoCo computes it from the geom."""
    mujoco = pytest.importorskip("mujoco")
    size = np.atleast_1d(np.asarray(size, float))
    model = jaxmor.add_free_body(jaxmor.load_urdf(WORLD), "b", shape, size, 1.7)
    xml = (
        f'<mujoco><worldbody><body><freejoint/><geom type="{shape}" size="{" ".join(map(str, size))}" mass="1.7"/>'
        "</body></worldbody></mujoco>"
    )
    reference = mujoco.MjModel.from_xml_string(xml).body_inertia[1]
    np.testing.assert_allclose(np.diag(np.asarray(model.body_inertia[0])), reference, rtol=1e-12)


def test_add_free_body_pose_properties_and_pairs():
    model = jaxmor.with_self_collision(jaxmor.load_urdf(PENDULUM_URDF))  # a fixed-base robot
    quat = quat_of_axis_angle([1, 1, 0], 0.4)
    new = jaxmor.add_free_body(
        model, "ball", "sphere", 0.05, 0.3, position=[0.1, 0.2, 0.3], orientation=2 * quat, friction=0.4,
        restitution=0.5,
    )  # fmt: skip
    g = new.ng - 1
    assert new.geom_names[g] == "ball" and new.geom_body[g] == new.nb - 1 and new.geom_friction_given[g]
    assert float(new.geom_friction[g]) == 0.4 and float(new.geom_restitution[g]) == 0.5
    np.testing.assert_allclose(np.asarray(jaxmor.init_state(new).q)[-7:], [0.1, 0.2, 0.3, *quat], atol=1e-15)
    # the default pairs are those with_self_collision makes for the new geom, the pendulum's cylinder rod included
    rod = new.geom_names.index("rod")
    assert (rod, g) in new.contact_pairs
    assert set(new.contact_pairs) == set(jaxmor.with_self_collision(new).contact_pairs)
    assert jaxmor.add_free_body(model, "ball", "sphere", 0.05, 0.3, collide_with=False).contact_pairs == ()


def test_default_pairs_include_cylinders_and_explicit_ones_are_checked():
    model = jaxmor.add_free_body(empty_scene(), "can", "cylinder", [0.05, 0.1], 0.3)
    model = jaxmor.add_free_body(model, "brick", "box", [0.1, 0.05, 0.05], 0.5, position=[1, 0, 0])
    assert model.contact_pairs == ((0, 1),)  # cylinder-box collides
    with pytest.raises(ArgumentError, match="nope"):
        jaxmor.add_free_body(model, "brick2", "box", [0.1, 0.1, 0.1], 0.5, collide_with=["nope"])
    pairs = jaxmor.add_free_body(model, "ball", "sphere", 0.1, 0.5, collide_with=["brick"]).contact_pairs
    assert pairs == ((0, 1), (1, 2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(shape="cone"), "shape"),
        (dict(size=[0.1, 0.1]), r"size of a box must be \(3,\)"),
        (dict(size=[0.1, -0.1, 0.1]), "size of a box"),
        (dict(shape="capsule", size=[0.1, 0.1, 0.1]), r"size of a capsule must be \(2,\)"),
        (dict(mass=0.0), "mass"),
        (dict(mass=float("nan")), "mass"),
        (dict(position=[0, 0]), r"position.*\(3,\)"),
        (dict(orientation=[0, 0, 0, 0]), "orientation"),
        (dict(orientation=[1, 0, 0]), r"orientation.*\(4,\)"),
        (dict(inertia=[1.0, 1.0, 3.0]), "triangle"),
        (dict(inertia=[[1.0, 0.5, 0], [0, 1.0, 0], [0, 0, 1.0]]), "symmetric"),
        (dict(friction=-1.0), "friction"),
        (dict(restitution=2.0), "restitution"),
        (dict(name="world"), "name"),
        (dict(name="base"), "'base'"),
        (dict(collide_with="base_box"), "collide_with"),
    ],
)
def test_add_free_body_rejects(kwargs, match):
    model = jaxmor.load_urdf(PENDULUM_URDF)
    if kwargs.get("name") == "base":
        model = jaxmor.add_free_body(model, "base", "sphere", 0.1, 1.0, collide_with=False)
    args = dict(name="b", shape="box", size=[0.1, 0.1, 0.1], mass=1.0) | kwargs
    with pytest.raises(ArgumentError, match=match):
        jaxmor.add_free_body(model, **args)


def test_combine_refuses_a_name_clash_and_accepts_a_prefix(quadruped_ground):
    robot = load_shipped(QUADRUPED_URDF)
    with pytest.raises(ArgumentError, match="prefix") as err:
        jaxmor.combine(quadruped_ground, robot)
    assert "'base'" in str(err.value) or "'LF_" in str(err.value)
    twin = jaxmor.combine(quadruped_ground, robot, prefix="b_", collide_with=False)
    assert twin.contact_pairs == () and twin.joint_names[12:] == tuple("b_" + n for n in robot.joint_names)
    assert jaxmor.joint_index(twin, "b_LF_HAA") == jaxmor.joint_index(robot, "LF_HAA") + robot.nv
    assert twin.opt is quadruped_ground.opt and twin.ground
    with pytest.raises(ArgumentError, match="orientation"):
        jaxmor.combine(quadruped_ground, robot, prefix="c_", orientation=[0, 0, 0, 0])


def test_combine_concatenates_every_array_leaf_of_the_motor_actuators(quadruped_ground):
    """``combine``'s motor actuators hold the first model's leaves, then the second's, for every array leaf the
    ``MotorActuators`` declaration has (the top-level ones found from the declaration, so a new field needs no
    change there), the nested motor, controller and backlash parts included."""
    other = jaxmor.with_backlash(load_shipped(QUADRUPED_URDF), 0.01, 1e-4, actuators=["RF_KFE"])
    twin = jaxmor.combine(quadruped_ground, other, prefix="b_", position=[0, 2.0, 0])
    a, b, both = quadruped_ground.actuators, other.actuators, twin.actuators
    for part in ("gear_ratio", "coupling_ratio", "output_damping", "output_friction", "delay", "motor", "controller"):
        for x, y, z in zip(*(jax.tree.leaves(getattr(m, part)) for m in (a, b, both)), strict=True):
            np.testing.assert_array_equal(z, np.concatenate([x, y]), err_msg=part)
    np.testing.assert_array_equal(both.backlash.width, np.concatenate([a.backlash.width, b.backlash.width]))
    assert both.backlash.active == a.backlash.active + b.backlash.active and sum(both.backlash.active) == 1
