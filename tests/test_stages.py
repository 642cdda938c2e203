"""Each stage of ``jaxmor.step`` on its own, on the shipped robots, under ``jax.jit``.

The stages are run by the function the step runs, ``jaxmor.sim.pipeline.stages`` (``jaxmor.step`` is the guard
around it), jitted once per robot: it returns every stage's result for a state (a change of the pipeline is
seen here), and each test checks one stage's output against an oracle built from that stage's inputs and
from sources independent of jaxmor:

* ``kinematics``: every body's world pose and pose relative to its parent body against a NumPy
  composition of the URDF's joint origins (``xyz``, ``rpy``) and axes, read from the files with
  ``xml.etree``;
* ``forces``: ``jaxmor/sim/forces.py``'s composition formula recomputed in NumPy from the constants in the
  robots' READMEs and URDF comments (gear ratios, transmission matrix, motor constants, damping, friction,
  effort limits) and the motor region of ``jaxmor/actuation/motor.py``'s docstring;
* ``free_motion``: a NumPy solve with the mass matrix and bias from Pinocchio (tests/reference.py), the
  forces oracle above, and the base's gyroscopic term as central differences of Pinocchio's bias with
  the joints at rest (the bias is quadratic in u, so a unit step is exact up to round-off); for the
  pendulum the README's closed forms ``I = 1/3``, ``b = 4.905 sin(theta)``;
* ``contact_jacobian``: central differences of the contact points as material points of their bodies
  (and of the gaps) along ``integrate_positions(q, u, +-eps)``, jaxmor's velocity convention;
* ``constraints``: the Delassus matrix, free velocities and response ``M_eff^-1 J^T`` assembled in NumPy
  from the stage's inputs (the contact rows, ``M_eff^-1``, ``u_free``); the velocity targets of the chosen
  state's cases from their definitions (a speculative contact closes its gap in one step, ``-d / h``; a
  penetrating one may not approach, 0; an impact leaves at ``-e v_n``), the position-correction targets from
  the module docstring, the friction combination from docs/design/collision.md, the joint bounds
  from the URDF;
* ``restitution_targets``: hand cases of the docstring's rule, each value worked out by hand (the rule's
  physical consequence, bounce heights ``e^(2k) h0``, is checked independently in tests/test_contacts.py);
* ``advance``: the position update written in NumPy (joints ``q + h u``, base ``p + h v`` and the quaternion
  ``exp(h w / 2) * quat`` for the world-frame ``w``), the bookkeeping of its docstring.

The position pass moves joints: a fixed-base arm's penetration is corrected by ``POSITION_CORRECTION`` per step
(the constraint module's docstring), up to a joint limit and not past it.

The cheap stage calls (the pendulum's free motion, ``restitution_targets``, the quadruped's ``advance``) run as
``chex.variants``, with and without ``jit``, each also ``vmap``-ped over a batch: the stages must give the same
results traced, eager and batched (``rollout_batch`` vmaps them).

Tolerances are named below with their reasons. Cost: the quadruped's stages compile once (its variants
only change array leaves), the pendulum's and the turntable's once each, the finite differences are one
``vmap``-ped call, the variants a few small programs, and the arm compiles one ``jaxmor.step``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import PENDULUM_URDF, QUADRUPED_URDF, TURNTABLE_URDF, quadruped_standing_q
from reference import PinReference

import jaxmor
from jaxmor import MotorSaturation
from jaxmor.sim.collision import collide
from jaxmor.sim.constraint import (
    PENETRATION_ALLOWANCE,
    POSITION_CORRECTION,
    Impulses,
    contact_jacobian,
    position_change,
    restitution_targets,
    velocity_change,
)
from jaxmor.sim.free_motion import free_motion
from jaxmor.sim.guard import accept, finite, runnable
from jaxmor.sim.integrator import advance
from jaxmor.sim.kinematics import kinematics
from jaxmor.sim.pipeline import stages

#: Poses are products of a few rotations (round-off ~1e-16 per factor): a wide margin.
POSE_TOL = 1e-12
#: Formulas recomputed in NumPy in the same few operations (relative to the largest magnitude).
FORMULA_TOL = 1e-13
#: Pinocchio's M and b agree with jaxmor's to ~1e-15 (tests/test_dynamics.py); the solve with M_eff
#: (condition number ~3e3 for the quadruped's states here) multiplies that by at most 3e3: 1e-10 leaves a
#: wide margin (measured: 3e-16). Relative to the largest entry.
SOLVE_TOL = 1e-10
#: Central-difference step [s] along q (+) eps u for unit velocities: truncation eps^2 / 6 |d^3 p / dt^3|
#: ~ 2e-11 for lever arms below 1 m, round-off ~1e-16 / eps = 1e-11 (measured: 3e-11).
FD_EPS = 1e-5
FD_TOL = 1e-9

G = 9.81

# Quadruped (README and URDF comments).
QD_LEGS = ("LF", "RF", "LH", "RH")
QD_JOINTS = tuple(f"{leg}_{j}" for leg in QD_LEGS for j in ("HAA", "HFE", "KFE"))
QD_GEAR = np.tile([6.0, 10.0, 10.0], 4)
QD_ARMATURE = np.concatenate([np.zeros(6), np.tile([2.16e-3, 6.06e-3, 6.0e-3], 4)])
QD_R, QD_KT, QD_KV, QD_V, QD_PEAK = 0.4, 0.1, 10.0, 24.0, 3.0
QD_DAMPING, QD_FRICTION = 0.05, 0.1  # every joint
QD_EFFORT = np.tile([18.0, 30.0, 30.0], 4)
QD_LOWER = np.tile([-0.7, -3.0, -2.8], 4)
QD_UPPER = np.tile([0.7, 3.0, -0.1], 4)
QD_FOOT_RADIUS = 0.025
QD_STAND_HEIGHT = 2 * 0.3 * np.cos(0.6) + QD_FOOT_RADIUS  # 0.520201 (README): the feet touch z = 0


def quadruped_transmission() -> np.ndarray:
    """(12, 18) T: the README's per-leg block [[6, 0, 0], [0, 10, 0], [0, 1, 10]] on the joint columns."""
    t = np.zeros((12, 18))
    for leg in range(4):
        r, c = 3 * leg, 6 + 3 * leg
        t[r, c], t[r + 1, c + 1], t[r + 2, c + 2], t[r + 2, c + 1] = 6.0, 10.0, 10.0, 1.0
    return t


QD_T = quadruped_transmission()


# --------------------------------------------------------------------------------------------------
# NumPy geometry (independent of jaxmor.math).


def rotation_about(axis, angle: float) -> np.ndarray:
    """Rodrigues' formula."""
    k = np.asarray(axis, dtype=float)
    k = k / np.linalg.norm(k)
    kx = skew(k)
    return np.eye(3) + np.sin(angle) * kx + (1.0 - np.cos(angle)) * kx @ kx


def rpy_rotation(rpy) -> np.ndarray:
    """URDF's fixed-axis roll-pitch-yaw: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    return rotation_about([0, 0, 1], y) @ rotation_about([0, 1, 0], p) @ rotation_about([1, 0, 0], r)


def quat_rotation(quat) -> np.ndarray:
    """Rotation matrix of a unit quaternion ``w x y z``."""
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product of ``w x y z`` quaternions."""
    aw, av = a[0], np.asarray(a[1:])
    bw, bv = b[0], np.asarray(b[1:])
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


def skew(v) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def urdf_link_poses(path: Path, joint_value: dict[str, float], base_pose=None) -> dict[str, tuple]:
    """World pose ``(R, p)`` of every link of a URDF: the root link at ``base_pose`` (identity if None), each
    child at ``parent * origin(xyz, rpy) * motion``, the motion a rotation about ``axis`` by the joint value
    (revolute, continuous) or a translation along it (prismatic)."""
    root = ET.parse(path).getroot()
    by_child = {j.find("child").get("link"): j for j in root.findall("joint")}
    poses: dict[str, tuple] = {}

    def pose(link: str):
        if link in poses:
            return poses[link]
        joint = by_child.get(link)
        if joint is None:
            poses[link] = base_pose if base_pose is not None else (np.eye(3), np.zeros(3))
            return poses[link]
        r_parent, p_parent = pose(joint.find("parent").get("link"))
        origin = joint.find("origin")
        xyz = np.array([float(x) for x in origin.get("xyz", "0 0 0").split()]) if origin is not None else np.zeros(3)
        rpy = np.array([float(x) for x in origin.get("rpy", "0 0 0").split()]) if origin is not None else np.zeros(3)
        axis_el = joint.find("axis")
        axis = (
            np.array([float(x) for x in axis_el.get("xyz").split()]) if axis_el is not None else np.array([1.0, 0, 0])
        )
        r = r_parent @ rpy_rotation(rpy)
        p = p_parent + r_parent @ xyz
        kind, value = joint.get("type"), joint_value.get(joint.get("name"), 0.0)
        if kind in ("revolute", "continuous"):
            r = r @ rotation_about(axis, value)
        elif kind == "prismatic":
            p = p + r @ (axis / np.linalg.norm(axis) * value)
        poses[link] = (r, p)
        return poses[link]

    for link in root.findall("link"):
        pose(link.get("name"))
    return poses


def region(speed, voltage):
    """The quadruped motor's region at a motor speed (jaxmor/actuation/motor.py's docstring): the voltage lines
    ``+-stall - b w`` clamped into ``+-peak``, and the label of each side (VOLTAGE where its line lies strictly
    inside the peak bound, else PEAK_TORQUE)."""
    stall = QD_KT * voltage / QD_R
    slope = QD_KT / (QD_R * QD_KV)
    upper_line, lower_line = stall - slope * speed, -stall - slope * speed
    upper, lower = np.clip(upper_line, -QD_PEAK, QD_PEAK), np.clip(lower_line, -QD_PEAK, QD_PEAK)
    upper_label = np.where(upper_line < QD_PEAK, MotorSaturation.VOLTAGE, MotorSaturation.PEAK_TORQUE)
    lower_label = np.where(lower_line > -QD_PEAK, MotorSaturation.VOLTAGE, MotorSaturation.PEAK_TORQUE)
    return lower, upper, lower_label, upper_label


def expected_forces(state, h: float, output_damping, output_friction) -> dict[str, np.ndarray]:
    """jaxmor/sim/forces.py's composition for the quadruped, in NumPy:
    ``clamp(tau_ff + kp (q* - q - h u) + kd (u* - u), +-limit) + T^T tau_m + tau_ext - b_j u`` with the PD on
    the joints only, ``tau_m`` the command ``tau / G`` clipped to the region at ``w = T u`` (or as commanded in
    monitor mode), ``b_j`` the joint's damping plus its actuator's output damping."""
    s = jax.tree.map(np.asarray, state)
    joints = np.zeros(18, dtype=bool)
    joints[6:] = True
    q_joint = np.zeros(18)
    q_joint[6:] = s.q[7:]
    pd = s.pd_p_gain * (s.pd_position_target - q_joint - h * s.u) + s.pd_d_gain * (s.pd_velocity_target - s.u)
    pd = np.where(joints, pd, 0.0)
    speed = QD_T @ s.u
    commanded = s.actuator_torque / QD_GEAR
    lower, upper, lower_label, upper_label = region(speed, s.bus_voltage)
    enforced = bool(s.mor_enforced)
    motor = np.clip(commanded, lower, upper) if enforced else commanded
    label = np.where(commanded > upper, upper_label, np.where(commanded < lower, lower_label, MotorSaturation.NONE))
    damping = np.where(joints, QD_DAMPING, 0.0)
    damping[6:] += output_damping
    friction = np.where(joints, QD_FRICTION, 0.0)
    friction[6:] += output_friction
    raw = s.feedforward_force + pd
    applied = np.clip(raw, -s.actuation_limit, s.actuation_limit) + QD_T.T @ motor
    applied = applied + s.external_force - damping * s.u
    implicit = np.where(joints, s.pd_d_gain + h * s.pd_p_gain, 0.0) + 0.5 * damping
    return {
        "applied": applied,
        "implicit": implicit,
        "damping": damping,
        "friction": friction,
        "motor_speed": speed,
        "commanded_motor_torque": commanded,
        "motor_torque": motor,
        "saturation": label,
        "clamped": np.abs(raw) > s.actuation_limit,
    }


# --------------------------------------------------------------------------------------------------
# The stages, jitted as the step runs them.


@jax.jit
def run_stages(model, state):
    """The stages' results for ``state`` up to the constraint stage, from ``jaxmor.sim.pipeline.stages`` (what
    ``jaxmor.step`` runs inside its guard; the solver's and the integration's results are not returned, so XLA
    drops them), and the contact rows of its contacts (``contact_jacobian``, which the constraint stage uses)."""
    out = stages(model, state)
    return {
        "kin": out.kinematics,
        "dyn": out.dynamics,
        "frc": out.forces,
        "free": out.free_motion,
        "contacts": out.contacts,
        "rows": contact_jacobian(model, out.kinematics, out.contacts),
        "cons": out.constraints,
    }


def _poses_and_gaps_along(model, q, u, dt):
    kin = kinematics(model, jaxmor.integrate_positions(model, q, u, dt))
    return kin.body, collide(model, kin.body).distance


#: Body poses and gaps at ``q (+) dt u`` for a batch of ``(u, dt)``.
POSES_ALONG = jax.jit(jax.vmap(_poses_and_gaps_along, in_axes=(None, None, 0, 0)))


@jax.jit
def advance_and_guard(model, state, frc, u_next, u_pos, impulses, contacts):
    """The step's last two stages: ``advance``, then the guard ``accept``."""
    candidate = advance(model, state, frc, u_next, u_pos, impulses, contacts)
    return accept(model, state, candidate, runnable(model, state) & finite(candidate))


CHANGES = jax.jit(lambda cons, lam, lam_pos: (velocity_change(cons, lam), position_change(cons, lam_pos)))


def numpy_tree(tree):
    return jax.tree.map(np.asarray, tree)


@pytest.fixture(scope="module")
def quadruped():
    """The quadruped with a ground and self-collision (ground slots for the box corners and the feet, then the
    base-foot and foot-foot pairs), its feet and the ground given distinct friction and restitution."""
    model = jaxmor.with_self_collision(
        jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF), friction=0.9, restitution=0.3)
    )
    model = jaxmor.with_geom_properties(model, "RF_foot", friction=0.5, restitution=0.6)
    model = jaxmor.with_geom_properties(model, "LH_foot", friction=0.4)
    assert tuple(model.joint_names) == QD_JOINTS
    assert tuple(jaxmor.actuator_names(model)) == QD_JOINTS
    assert float(model.opt.timestep) == 1e-3
    return model


@pytest.fixture(scope="module")
def quadruped_pin(quadruped):
    pytest.importorskip("pinocchio")
    return PinReference(quadruped, QUADRUPED_URDF, armature=QD_ARMATURE)


def standing_q(model, height: float, **joints) -> np.ndarray:
    """The README's standing configuration (base level at ``height``; HAA 0, HFE 0.6, KFE -1.2:
    ``jaxmor.robots.quadruped_standing_q``, checked against the README in tests/test_robots.py), with ``joints``
    overriding single joints by name."""
    q = quadruped_standing_q(model, height)
    for name, value in joints.items():
        q[jaxmor.joint_q_index(model, name)] = value
    return q


def random_quadruped_state(model, seed: int, enforced: bool = True):
    """A state exercising every term of the forces: random q, u (base spinning), PD gains and targets,
    feed-forward forces against actuation limits at half the effort limits (some clamp), external forces,
    actuator commands up to twice the effort limits (some saturate) and bus voltages of 18 to 26 V."""
    rng = np.random.default_rng(seed)
    q = standing_q(model, 1.0)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] += rng.uniform(-0.4, 0.4, size=12)
    u = rng.normal(size=18)
    u[6:] *= 5.0
    state = jaxmor.init_state(model, q=jnp.asarray(q), u=jnp.asarray(u))
    joints = np.r_[np.zeros(6), np.ones(12)]
    limit = np.r_[np.full(6, np.inf), 0.5 * QD_EFFORT]
    return state.replace(
        pd_p_gain=jnp.asarray(joints * rng.uniform(0.0, 80.0, size=18)),
        pd_d_gain=jnp.asarray(joints * rng.uniform(0.0, 3.0, size=18)),
        pd_position_target=jnp.asarray(joints * rng.uniform(-1.0, 1.0, size=18)),
        pd_velocity_target=jnp.asarray(joints * rng.normal(size=18)),
        feedforward_force=jnp.asarray(rng.normal(size=18) * 10.0),
        actuation_limit=jnp.asarray(limit),
        external_force=jnp.asarray(rng.normal(size=18) * 5.0),
        actuator_torque=jnp.asarray(rng.uniform(-2.0, 2.0, size=12) * QD_EFFORT),
        bus_voltage=jnp.asarray(rng.uniform(18.0, 26.0, size=12)),
        mor_enforced=jnp.asarray(enforced),
    )


def with_output_losses(model, damping, friction):
    """The model with the actuators' output damping and friction set (array leaves: no recompile)."""
    act = model.actuators.replace(output_damping=jnp.asarray(damping), output_friction=jnp.asarray(friction))
    return model.replace(actuators=act)


# --------------------------------------------------------------------------------------------------
# 1. kinematics


@pytest.mark.parametrize("robot", ["quadruped", "pendulum", "turntable"])
def test_kinematics_gives_the_urdf_composition_of_every_body(quadruped, robot):
    """``Kinematics.body`` is each body's world pose and ``Kinematics.relative`` its pose in its parent body's
    frame (the world's for a root), against the URDF's origins and axes composed in NumPy at a random ``q``."""
    rng = np.random.default_rng(5)
    if robot == "quadruped":
        model, path = quadruped, QUADRUPED_URDF
        q = standing_q(quadruped, 0.7)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
        q[0:3] = rng.normal(size=3)
        q[7:] += rng.uniform(-1.0, 1.0, size=12)
        base = (quat_rotation(q[3:7]), q[0:3])
    else:
        path = PENDULUM_URDF if robot == "pendulum" else TURNTABLE_URDF
        model = jaxmor.load_urdf(path)
        q = rng.uniform(-3.0, 3.0, size=model.nq)
        base = None
    values = {name: q[i] for name, i in zip(model.joint_names, model.joint_q, strict=True)}
    expected = urdf_link_poses(path, values, base)
    kin = numpy_tree(run_stages(model, jaxmor.init_state(model, q=jnp.asarray(q)))["kin"])
    for b, name in enumerate(model.body_names):
        r, p = expected[name]
        np.testing.assert_allclose(kin.body.rotation[b], r, rtol=0, atol=POSE_TOL, err_msg=f"{name} world rotation")
        np.testing.assert_allclose(kin.body.position[b], p, rtol=0, atol=POSE_TOL, err_msg=f"{name} world position")
        parent = model.body_parent[b]
        if parent < 0:
            r_rel, p_rel = r, p
        else:
            r_parent, p_parent = expected[model.body_names[parent]]
            r_rel, p_rel = r_parent.T @ r, r_parent.T @ (p - p_parent)
        np.testing.assert_allclose(kin.relative.rotation[b], r_rel, rtol=0, atol=POSE_TOL, err_msg=f"{name} rotation")
        np.testing.assert_allclose(kin.relative.position[b], p_rel, rtol=0, atol=POSE_TOL, err_msg=f"{name} position")


# --------------------------------------------------------------------------------------------------
# 2. forces


@pytest.mark.parametrize("enforced", [True, False], ids=["enforced", "monitored"])
@pytest.mark.parametrize("seed", [0, 1])
def test_forces_follow_the_composition_formula(quadruped, seed, enforced):
    """Every field of ``Forces`` against the module docstring's formula recomputed in NumPy from the README's
    constants, with the actuators' output damping and friction added to their joints' own."""
    rng = np.random.default_rng(50 + seed)
    out_damping, out_friction = rng.uniform(0.0, 0.1, size=12), rng.uniform(0.0, 0.3, size=12)
    model = with_output_losses(quadruped, out_damping, out_friction)
    state = random_quadruped_state(model, seed, enforced)
    frc = numpy_tree(run_stages(model, state)["frc"])
    h = float(model.opt.timestep)
    expected = expected_forces(state, h, out_damping, out_friction)
    scale = np.abs(expected["applied"]).max()
    np.testing.assert_allclose(frc.applied, expected["applied"], rtol=0, atol=FORMULA_TOL * scale, err_msg="applied")
    np.testing.assert_allclose(frc.implicit, expected["implicit"], rtol=FORMULA_TOL, atol=0, err_msg="implicit")
    np.testing.assert_allclose(frc.damping, expected["damping"], rtol=FORMULA_TOL, atol=0, err_msg="damping")
    np.testing.assert_allclose(frc.friction, expected["friction"], rtol=FORMULA_TOL, atol=0, err_msg="friction")

    act = frc.actuator_state
    np.testing.assert_allclose(
        act.motor_speed, expected["motor_speed"], rtol=FORMULA_TOL, atol=0, err_msg="motor_speed"
    )
    np.testing.assert_array_equal(
        act.average_motor_speed, act.motor_speed, err_msg="average_motor_speed before the step"
    )
    np.testing.assert_allclose(
        act.commanded_motor_torque,
        expected["commanded_motor_torque"],
        rtol=FORMULA_TOL,
        err_msg="commanded_motor_torque",
    )
    np.testing.assert_allclose(
        act.motor_torque, expected["motor_torque"], rtol=0, atol=FORMULA_TOL * QD_PEAK, err_msg="motor_torque"
    )
    np.testing.assert_array_equal(act.saturation, expected["saturation"], err_msg="saturation")
    np.testing.assert_array_equal(act.joint_loss_torque, 0.0, err_msg="joint_loss_torque before the step")
    # The state exercises every branch: clipped and admissible commands, clamped and unclamped PD forces.
    saturated = expected["saturation"] != MotorSaturation.NONE
    assert 0 < saturated.sum() < 12, "some actuator commands should be clipped, some admissible"
    assert 0 < expected["clamped"].sum() < 12, "some feed-forward plus PD forces should be clamped"


# --------------------------------------------------------------------------------------------------
# 3. free motion


def locked_body_gyroscopic(pin_ref, q, u) -> np.ndarray:
    """``dB/du_base`` of the robot locked into one rigid body: central differences (unit step, exact for the
    quadratic bias) of Pinocchio's bias w.r.t. the six base velocities with the joints at rest, base rows only."""
    at_rest = np.array(u, dtype=float)
    at_rest[6:] = 0.0
    out = np.zeros((18, 18))
    out[:6] = pin_ref.bias_jacobian(q, at_rest, columns=range(6))[:6]
    return out


@pytest.mark.parametrize(("seed", "mode"), [(0, "kahan"), (1, "kahan"), (0, "predicted")])
def test_free_motion_solves_the_effective_mass_with_pinocchio_terms(quadruped, quadruped_pin, seed, mode):
    """``M_eff = M + h diag(implicit) + J`` and ``u_free = u + M_eff^-1 h (tau - b)``, with ``M`` and ``b`` from
    Pinocchio, ``tau`` and the implicit diagonal from the forces formula, ``J`` from Pinocchio's bias:
    ``(h/2) db/du`` (``implicit_bias="kahan"``) or ``h/2`` times the locked body's base block (``"predicted"``,
    whose impulse also loses ``(h/2) (db/du - J_base) du0`` at the first solve's ``du0``);
    ``inverse_mass`` is ``M_eff^-1`` (a non-symmetric matrix)."""
    state = random_quadruped_state(quadruped, 10 + seed)
    model = quadruped.replace(opt=quadruped.opt.replace(implicit_bias=mode))
    free = numpy_tree(run_stages(model, state)["free"])
    h = float(quadruped.opt.timestep)
    q, u = np.asarray(state.q), np.asarray(state.u)
    terms = expected_forces(state, h, np.zeros(12), np.zeros(12))
    mass = quadruped_pin.mass_matrix(q)
    locked, full = locked_body_gyroscopic(quadruped_pin, q, u), quadruped_pin.bias_jacobian(q, u)
    m_eff = mass + h * np.diag(terms["implicit"]) + 0.5 * h * (locked if mode == "predicted" else full)
    assert np.abs(m_eff - m_eff.T).max() > 1e-6, "the base should spin (non-symmetric M_eff)"
    impulse = h * (terms["applied"] - quadruped_pin.bias_force(q, u))
    if mode == "predicted":
        impulse = impulse - 0.5 * h * (full - locked) @ np.linalg.solve(m_eff, impulse)
    du = np.linalg.solve(m_eff, impulse)
    np.testing.assert_allclose(free.velocity - u, du, rtol=0, atol=SOLVE_TOL * np.abs(du).max(), err_msg="u_free - u")
    m_inv = np.linalg.inv(m_eff)
    np.testing.assert_allclose(
        free.inverse_mass, m_inv, rtol=0, atol=SOLVE_TOL * np.abs(m_inv).max(), err_msg="inverse_mass"
    )


#: The pendulum's states for the closed form: (theta, omega, kp, kd, q*, u*), the PD below the 10 Nm effort limit.
PENDULUM_CASES = ((0.8, -1.5, 5.0, 0.3, 0.2, 0.5), (-2.0, 3.0, 0.0, 0.0, 0.0, 0.0), (0.1, 0.0, 8.0, 1.0, -0.4, -1.0))


class TestFreeMotionOfThePendulum(chex.TestCase):
    """The README's pendulum: ``I = m L^2 / 3 = 1/3``, ``b = m g (L/2) sin(theta)``; with a PD (``kp``, ``kd``)
    the implicit part makes ``M_eff = I + h (kd + h kp)`` and ``u_free = u + h (kp (q* - q - h u) + kd (u* - u)
    - b) / M_eff`` (no damping, friction or actuator torque). ``free_motion`` on the inputs the pipeline's
    stages give it, eager and jitted, for one world and ``vmap``-ped over the three."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_free_motion_is_the_closed_form(self):
        model = jaxmor.load_urdf(PENDULUM_URDF)
        h = float(model.opt.timestep)
        states, inputs = [], []
        for theta, omega, kp, kd, target, speed in PENDULUM_CASES:
            state = jaxmor.init_state(model, q=jnp.array([theta]), u=jnp.array([omega]))
            state = jaxmor.set_pd_targets(model, jaxmor.set_pd_gains(model, state, [kp], [kd]), [target], [speed])
            out = run_stages(model, state)
            states.append(state)
            inputs.append((out["kin"], out["dyn"], out["frc"]))
        one = self.variant(free_motion)
        batched = self.variant(jax.vmap(free_motion, in_axes=(None, 0, 0, 0, 0)))
        kins, dyns, frcs = zip(*inputs, strict=True)
        stack = lambda *xs: jax.tree.map(lambda *x: jnp.stack(x), *xs)  # noqa: E731
        together = numpy_tree(batched(model, stack(*states), stack(*kins), stack(*dyns), stack(*frcs)))
        for k, (theta, omega, kp, kd, target, speed) in enumerate(PENDULUM_CASES):
            inertia, bias = 1.0 / 3.0, 1.0 * G * 0.5 * np.sin(theta)
            pd = kp * (target - theta - h * omega) + kd * (speed - omega)
            assert abs(pd) < 10.0
            m_eff = inertia + h * (kd + h * kp)
            expected = omega + h * (pd - bias) / m_eff
            for label, free in (("alone", numpy_tree(one(model, states[k], *inputs[k]))), ("vmapped", together)):
                velocity = free.velocity[0] if label == "alone" else free.velocity[k, 0]
                inverse = free.inverse_mass[0, 0] if label == "alone" else free.inverse_mass[k, 0, 0]
                assert velocity == pytest.approx(expected, rel=FORMULA_TOL * 100), f"u_free, case {k}, {label}"
                assert inverse == pytest.approx(1.0 / m_eff, rel=FORMULA_TOL * 100), f"inverse_mass, case {k}, {label}"


# --------------------------------------------------------------------------------------------------
# 4. contact rows and the constraint problems

#: Base height of the constraint state: the LF foot 2 mm into the ground.
CONTACT_HEIGHT = QD_STAND_HEIGHT - 0.002
#: The RF foot's gap, closed within one step by the base's 1 m/s descent: an impact.
IMPACT_GAP = 0.0005


def contact_state(model):
    """The quadruped coming down at 1 m/s: LF foot 2 mm deep, RF foot 0.5 mm above the ground (its knee
    straightened so that its foot is ``2.5 mm`` higher: ``0.3 cos(0.6) + 0.3 cos(0.6 + KFE)`` shorter by that),
    the hind legs spread beyond their HAA limits (LH above +0.7, RH below -0.7, feet lifted), random joint
    velocities."""
    depth = 0.3 * np.cos(0.6) + 0.3 * np.cos(0.6) - (0.002 + IMPACT_GAP)
    rf_knee = -0.6 - np.arccos((depth - 0.3 * np.cos(0.6)) / 0.3)  # 0.6 + KFE = -arccos(...): bent further
    q = standing_q(model, CONTACT_HEIGHT, RF_KFE=rf_knee, LH_HAA=0.75, RH_HAA=-0.72)
    rng = np.random.default_rng(3)
    u = np.r_[0.0, 0.0, -1.0, 0.1 * rng.normal(size=3), 0.1 * rng.normal(size=12)]
    return jaxmor.init_state(model, q=jnp.asarray(q), u=jnp.asarray(u))


@pytest.fixture(scope="module")
def contact_case(quadruped):
    state = contact_state(quadruped)
    return state, numpy_tree(run_stages(quadruped, state))


def body_point_positions(poses, points, bodies) -> np.ndarray:
    """World positions of points given in the frames of ``bodies`` (``-1``: the world) at body ``poses``."""
    out = np.zeros((len(bodies), 3))
    for k, b in enumerate(bodies):
        out[k] = points[k] if b < 0 else poses.rotation[b] @ points[k] + poses.position[b]
    return out


def test_the_contact_jacobian_is_the_rate_of_the_contact_points(quadruped, contact_case):
    """Row ``(k, d)`` of ``contact_jacobian`` is contact ``k``'s frame direction ``d`` applied to the velocity of
    body B's material point at the contact relative to body A's coincident point. Central differences of those
    points (fixed in their bodies at ``q``) along ``q (+) eps e_j`` for every velocity ``e_j`` (world-frame base
    velocities): the ground contacts (A = world) and the base-foot and foot-foot pairs (A = a body). The
    normal rows are also the rate of the gaps (for smooth geometry the closest points' sliding does not
    change the gap to first order)."""
    state, out = contact_case
    contacts, kin, rows = out["contacts"], out["kin"], out["rows"]
    nc, nv = contacts.distance.shape[0], quadruped.nv
    assert min(contacts.body_a) == -1 and max(contacts.body_a) >= 0, "ground contacts and self-collision pairs"
    local_b, local_a = np.zeros((nc, 3)), np.zeros((nc, 3))
    for k in range(nc):
        for local, body in ((local_b, contacts.body_b[k]), (local_a, contacts.body_a[k])):
            p = contacts.position[k]
            local[k] = p if body < 0 else kin.body.rotation[body].T @ (p - kin.body.position[body])

    directions = np.concatenate([np.eye(nv), np.eye(nv)])
    steps = np.r_[np.full(nv, FD_EPS), np.full(nv, -FD_EPS)]
    poses, gaps = numpy_tree(POSES_ALONG(quadruped, state.q, jnp.asarray(directions), jnp.asarray(steps)))
    relative = np.zeros((2 * nv, nc, 3))
    for i in range(2 * nv):
        pose = jax.tree.map(lambda x, i=i: x[i], poses)
        relative[i] = body_point_positions(pose, local_b, contacts.body_b)
        relative[i] -= body_point_positions(pose, local_a, contacts.body_a)
    rate = (relative[:nv] - relative[nv:]) / (2 * FD_EPS)  # (nv, nc, 3)
    expected = np.einsum("kij,dkj->kid", contacts.frame, rate).reshape(3 * nc, nv)
    np.testing.assert_allclose(rows, expected, rtol=0, atol=FD_TOL, err_msg="contact Jacobian")
    gap_rate = (gaps[:nv] - gaps[nv:]).T / (2 * FD_EPS)  # (candidates, nv)
    gap_rate = gap_rate[np.asarray(contacts.key)]  # the budget's slots hold these candidates
    np.testing.assert_allclose(rows[::3], gap_rate, rtol=0, atol=FD_TOL, err_msg="normal rows vs gap rates")


def geom_of_slots(model) -> list[tuple[int, int]]:
    """(geom A, geom B) of every slot from the documented slot layout (docs/design/collision.md), ``-1`` for the ground:
    the ground slots (box: 4, sphere: 1) in geom order, then ``contact_pairs``."""
    points = {jaxmor.GeomType.BOX: 4, jaxmor.GeomType.SPHERE: 1}
    slots = [(-1, g) for g in range(model.ng) for _ in range(points[model.geom_type[g]])]
    return slots + list(model.contact_pairs)


def test_the_constraint_stage_assembles_the_velocity_problem(quadruped, contact_case):
    """``A = J M_eff^-1 J^T`` and ``b = J u_free`` with ``J`` the contact rows then the joints' unit rows,
    ``response = M_eff^-1 J^T``; the normal velocity targets of the state's three kinds of contact from their
    definitions, not from the code's rule (approach speeds ``v_n = J_n u_t``): the penetrating LF foot may not
    approach (0), the RF foot 0.5 mm above the ground and coming down at about 1 m/s bounces (``-e v_n``), and
    every other contact, more than a step's travel away, is speculative (``-d / h``: its gap may close within
    the step but no further);
    friction ``sqrt(mu_a mu_b)`` and restitution ``max(e_a, e_b)`` of the two geoms (the ground's 0.9 and 0.3;
    RF foot 0.5 and 0.6, LH foot 0.4, the rest 0.8 and 0); the joints' friction bound ``0.1 Nm h`` and limit
    bounds ``min((lower - q) / h, 0)``, ``max((upper - q) / h, 0)`` from the URDF's limits."""
    state, out = contact_case
    contacts, rows, free, cons = out["contacts"], out["rows"], out["free"], out["cons"]
    problem = cons.velocity
    h = float(quadruped.opt.timestep)
    nc = contacts.distance.shape[0]
    jac = np.concatenate([rows, np.eye(18)[6:]])
    a = jac @ free.inverse_mass @ jac.T
    scale = np.abs(a).max()
    np.testing.assert_allclose(problem.delassus, a, rtol=0, atol=FORMULA_TOL * scale, err_msg="Delassus matrix")
    np.testing.assert_allclose(
        cons.response, free.inverse_mass @ jac.T, rtol=0, atol=FORMULA_TOL * scale, err_msg="response"
    )
    b = jac @ free.velocity
    np.testing.assert_allclose(
        problem.free_velocity, b, rtol=0, atol=FORMULA_TOL * np.abs(b).max(), err_msg="free velocity"
    )

    mu = {-1: 0.9, 0: 0.8, 1: 0.8, 2: 0.5, 3: 0.4, 4: 0.8}  # by geom: ground, base_box, LF, RF, LH, RH feet
    e = {-1: 0.3, 0: 0.0, 1: 0.0, 2: 0.6, 3: 0.0, 4: 0.0}
    assert quadruped.geom_names == ("base_box", "LF_foot", "RF_foot", "LH_foot", "RH_foot")
    slots = geom_of_slots(quadruped)
    assert len(slots) == nc
    given = {-1: True, 0: False, 1: False, 2: True, 3: True, 4: False}  # the ground and the geoms set above

    def combined(a, b):  # both given: geometric mean; else the given one (else default)
        if given[a] and given[b]:
            return np.sqrt(mu[a] * mu[b])
        return mu[a] if given[a] else mu[b]

    friction = np.array([combined(ga, gb) for ga, gb in slots])
    restitution = np.array([max(e[ga], e[gb]) for ga, gb in slots])
    np.testing.assert_allclose(problem.friction, friction, rtol=FORMULA_TOL, err_msg="contact friction")
    approach = rows[::3] @ np.asarray(state.u)
    d = contacts.distance
    lf, rf = 4, 5  # the ground slots of the LF and RF feet (after the box's 4 face corners)
    assert d[lf] < -PENETRATION_ALLOWANCE and problem.contact_target[lf] == 0.0, "penetrating LF foot"
    assert d[rf] == pytest.approx(IMPACT_GAP, abs=1e-9), "RF foot gap"
    assert approach[rf] < -0.9 and d[rf] + h * approach[rf] < 0, "the RF foot reaches the ground within the step"
    assert restitution[rf] == 0.6  # max(RF foot 0.6, ground 0.3)
    assert problem.contact_target[rf] == pytest.approx(-0.6 * approach[rf], rel=FORMULA_TOL), "RF bounce"
    far = np.ones(nc, dtype=bool)
    far[[lf, rf]] = False
    assert np.all(d[far] > 0.05) and np.all(d[far] + h * approach[far] > 0), "the rest cannot close within a step"
    np.testing.assert_allclose(
        problem.contact_target[far], -d[far] / h, rtol=FORMULA_TOL, atol=0, err_msg="speculative targets"
    )

    q_joint = np.asarray(state.q)[7:]
    np.testing.assert_allclose(
        problem.friction_bound, np.full(12, QD_FRICTION * h), rtol=FORMULA_TOL, err_msg="friction bound"
    )
    np.testing.assert_allclose(
        problem.limit_low, np.minimum((QD_LOWER - q_joint) / h, 0.0), rtol=FORMULA_TOL, err_msg="limit_low"
    )
    np.testing.assert_allclose(
        problem.limit_high, np.maximum((QD_UPPER - q_joint) / h, 0.0), rtol=FORMULA_TOL, err_msg="limit_high"
    )
    assert problem.rows_per_contact == 3 and problem.nc == nc and problem.nj == 12


def test_the_constraint_stage_assembles_the_position_problem(quadruped, contact_case):
    """The frictionless position problem keeps the normal and joint rows of the same ``A`` (``position_rows``),
    has zero free velocity, and asks a penetrating contact for ``POSITION_CORRECTION (depth - allowance) / h``
    and a joint beyond a limit for the same fraction of its violation (``v >= ...`` below the lower limit,
    ``v <= -...`` above the upper one). Rows without error are not checked here (see
    ``test_the_position_pass_lets_a_fixed_base_arm_out_of_the_ground``)."""
    state, out = contact_case
    contacts, cons = out["contacts"], out["cons"]
    h = float(quadruped.opt.timestep)
    nc = contacts.distance.shape[0]
    keep = np.r_[3 * np.arange(nc), 3 * nc + np.arange(12)]
    assert cons.position_rows == tuple(int(k) for k in keep), "position_rows"
    position = cons.position
    assert position.rows_per_contact == 1
    np.testing.assert_array_equal(position.delassus, cons.velocity.delassus[np.ix_(keep, keep)], "position Delassus")
    np.testing.assert_array_equal(position.free_velocity, 0.0, "position free velocity")
    np.testing.assert_array_equal(position.friction, 0.0, "position contact friction")
    np.testing.assert_array_equal(position.friction_bound, 0.0, "position joint friction")

    deep = contacts.distance < -PENETRATION_ALLOWANCE
    assert deep.sum() >= 1
    depth = -contacts.distance[deep] - PENETRATION_ALLOWANCE
    np.testing.assert_allclose(
        position.contact_target[deep], POSITION_CORRECTION * depth / h, rtol=FORMULA_TOL, err_msg="correction targets"
    )
    q_joint = np.asarray(state.q)[7:]
    below = QD_LOWER - q_joint - PENETRATION_ALLOWANCE
    above = q_joint - QD_UPPER - PENETRATION_ALLOWANCE
    assert np.sum(below > 0) == 1 and np.sum(above > 0) == 1, "RH_HAA below its limit, LH_HAA above"
    np.testing.assert_allclose(
        position.limit_low[below > 0], POSITION_CORRECTION * below[below > 0] / h, rtol=FORMULA_TOL, err_msg="limit_low"
    )
    np.testing.assert_allclose(
        position.limit_high[above > 0],
        -POSITION_CORRECTION * above[above > 0] / h,
        rtol=FORMULA_TOL,
        err_msg="limit_high",
    )


def test_velocity_and_position_changes_map_impulses_through_the_response(quadruped, contact_case):
    """``velocity_change = M_eff^-1 J^T lam`` over all rows (a joint row's impulse is its friction plus its
    limit) and ``position_change`` over the position rows (normals and joints), in NumPy."""
    _, out = contact_case
    cons, rows, free = out["cons"], out["rows"], out["free"]
    nc = out["contacts"].distance.shape[0]
    rng = np.random.default_rng(9)
    lam = Impulses(
        jnp.asarray(rng.normal(size=(nc, 3))),
        jnp.asarray(rng.normal(size=12)),
        jnp.asarray(rng.normal(size=12)),
        jnp.zeros(0),
    )
    lam_pos = Impulses(
        jnp.asarray(rng.normal(size=(nc, 3))), jnp.zeros(12), jnp.asarray(rng.normal(size=12)), jnp.zeros(0)
    )
    du, du_pos = (np.asarray(x) for x in CHANGES(cons, lam, lam_pos))
    jac = np.concatenate([rows, np.eye(18)[6:]])
    flat = np.r_[np.asarray(lam.contact).reshape(-1), np.asarray(lam.friction) + np.asarray(lam.limit)]
    expected = free.inverse_mass @ jac.T @ flat
    np.testing.assert_allclose(
        du, expected, rtol=0, atol=FORMULA_TOL * np.abs(expected).max() * 10, err_msg="velocity_change"
    )
    jac_pos = np.concatenate([rows[::3], np.eye(18)[6:]])
    flat_pos = np.r_[np.asarray(lam_pos.contact)[:, 0], np.asarray(lam_pos.limit)]
    expected_pos = free.inverse_mass @ jac_pos.T @ flat_pos
    np.testing.assert_allclose(
        du_pos, expected_pos, rtol=0, atol=FORMULA_TOL * np.abs(expected_pos).max() * 10, err_msg="position_change"
    )


#: ``(name, gap d [m], approach speed v [m/s], restitution e, expected target [m/s])`` with ``h = 1 ms``, each
#: value worked out by hand.
RESTITUTION_CASES = (
    ("impact", 5e-4, -1.0, 0.5, 0.5),  # leaves at e |v| = 0.5 m/s
    ("e=0", 5e-4, -1.0, 0.0, -0.5),  # no restitution: lands at contact, -d / h
    ("at-surface", 0.0, -1.0, 0.5, 0.5),  # approaching at 1 m/s: an impact (the gap does not decide)
    ("in-allowance", 5e-6, -1.0, 0.5, 0.5),  # the last free flight ended 5 um above: an impact
    ("resting-band", -5e-6, -1.0, 0.5, 0.5),  # 5 um into the resting band, approaching: an impact
    ("resting", 0.0, -0.005, 0.5, 0.0),  # approach below the threshold: never bounces
    ("not-closing", 5e-4, -0.4, 0.5, -0.5),  # does not close within the step (d + h v > 0)
    ("slow", 1e-5 + 1e-9, -0.05, 0.9, 0.045),  # slow but above the 0.01 m/s threshold
    ("below-threshold", 5e-6, -0.005, 0.9, -5e-3),
    ("penetrating", -0.002, -1.0, 0.5, 0.0),  # target clamped at 0
)


class TestRestitutionTargets(chex.TestCase):
    """``restitution_targets`` with ``h = 1 ms`` on the speculative target ``-max(d, 0) / h``: a contact that
    approaches faster than 0.01 m/s and reaches the surface within the step (``d + h v <= 0``, from a gap of
    at least ``-1e-5`` m, the resting band) leaves at ``max(-d / h, -e v)``; every other contact keeps its
    speculative target. All the cases in one call, eager and jitted, and ``vmap``-ped one contact per world."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_restitution_targets_follow_the_impact_rule(self):
        h = 1e-3
        names, gap, approach, e, expected = (np.array(x) for x in zip(*RESTITUTION_CASES, strict=True))
        speculative = -np.maximum(gap, 0.0) / h
        args = (jnp.asarray(speculative), jnp.asarray(gap), jnp.asarray(approach), jnp.asarray(e), jnp.asarray(h))
        together = np.asarray(self.variant(restitution_targets)(*args))
        per_world = self.variant(jax.vmap(restitution_targets, in_axes=(0, 0, 0, 0, None)))
        one_each = np.asarray(per_world(*(x[:, None] for x in args[:4]), args[4]))[:, 0]
        for name, got, alone, want in zip(names, together, one_each, expected, strict=True):
            assert got == pytest.approx(want, rel=FORMULA_TOL, abs=FORMULA_TOL), f"{name}: velocity target"
            assert alone == pytest.approx(want, rel=FORMULA_TOL, abs=FORMULA_TOL), f"{name}: vmapped"


# --------------------------------------------------------------------------------------------------
# 5. advance


def advance_inputs(model, seed: int):
    """A quadruped state (at t = 0.3 s, with external forces and the impulses of an earlier step) and random
    end-of-step velocity, position-correction pseudo-velocity and impulses."""
    rng = np.random.default_rng(seed)
    state = random_quadruped_state(model, 20 + seed)
    nc = state.contact_impulse.shape[0]
    state = state.replace(
        time=jnp.asarray(0.3, dtype=jnp.float64),
        contact_impulse=jnp.asarray(rng.normal(size=(nc, 3))),
        friction_impulse=jnp.asarray(np.r_[np.zeros(6), rng.normal(size=12)]),
        limit_impulse=jnp.asarray(np.r_[np.zeros(6), rng.normal(size=12)]),
    )
    u_next = np.asarray(state.u) + rng.normal(size=18)
    u_pos = 0.1 * rng.normal(size=18)
    lam = Impulses(
        jnp.asarray(rng.normal(size=(nc, 3))),
        jnp.asarray(rng.normal(size=12)),
        jnp.asarray(rng.normal(size=12)),
        jnp.zeros(0),
    )
    return state, u_next, u_pos, lam


def check_advance(model, state, frc, u_next, u_pos, lam, contacts, after, what: str) -> None:
    """``after`` (NumPy) against ``q' = q (+) h (u' + u_pos)`` and the bookkeeping (TestAdvance's docstring)."""
    h = float(model.opt.timestep)
    q = np.asarray(state.q)
    step = h * (u_next + u_pos)
    expected_q = q.copy()
    expected_q[7:] += step[6:]
    expected_q[0:3] += step[0:3]
    angle = np.linalg.norm(step[3:6])
    half = np.r_[np.cos(angle / 2), np.sin(angle / 2) * step[3:6] / angle]
    expected_q[3:7] = quat_multiply(half, q[3:7])
    np.testing.assert_allclose(after.q, expected_q, rtol=0, atol=POSE_TOL, err_msg=f"{what}: q")
    assert np.linalg.norm(after.q[3:7]) == pytest.approx(1.0, abs=POSE_TOL), f"{what}: unit quaternion"
    np.testing.assert_array_equal(after.u, u_next, err_msg=f"{what}: u")
    assert after.time == pytest.approx(float(state.time) + h, rel=FORMULA_TOL), f"{what}: time"
    np.testing.assert_array_equal(after.contact_impulse, np.asarray(lam.contact), err_msg=f"{what}: contact_impulse")
    np.testing.assert_array_equal(after.contact_key, np.asarray(contacts.key), err_msg=f"{what}: contact_key")
    assert after.contact_overflow == contacts.overflow, f"{what}: contact_overflow"
    for field in ("friction", "limit"):
        stored = np.r_[np.zeros(6), getattr(lam, field)]
        np.testing.assert_array_equal(getattr(after, f"{field}_impulse"), stored, err_msg=f"{what}: {field}_impulse")
    np.testing.assert_array_equal(after.external_force, 0.0, err_msg=f"{what}: external_force")
    assert not after.nonfinite, f"{what}: nonfinite"

    u = np.asarray(state.u)
    act, before = after.actuator_state, numpy_tree(frc.actuator_state)
    mean = 0.5 * (u + u_next)
    speed = QD_T @ mean
    np.testing.assert_allclose(act.average_motor_speed, speed, rtol=FORMULA_TOL, err_msg=f"{what}: average_motor_speed")
    loss = -QD_DAMPING * mean[6:] + np.asarray(lam.friction) / h
    np.testing.assert_allclose(act.joint_loss_torque, loss, rtol=FORMULA_TOL, err_msg=f"{what}: joint_loss_torque")
    for field in ("motor_speed", "commanded_motor_torque", "motor_torque", "saturation"):
        np.testing.assert_array_equal(getattr(act, field), getattr(before, field), err_msg=f"{what}: {field}")
    for field in ("actuator_torque", "feedforward_force", "pd_p_gain", "bus_voltage", "actuation_limit"):
        kept = np.asarray(getattr(state, field))
        np.testing.assert_array_equal(getattr(after, field), kept, err_msg=f"{what}: {field} kept")


class TestAdvance(chex.TestCase):
    """``q' = q (+) h (u' + u_pos)``: joints ``q + h u``, base ``p + h v`` and ``exp(h w / 2) * quat`` (world-frame
    ``w``); ``u' = u_next``; ``t + h``; the impulses stored (joint ones at their velocity indices, zero on the
    base); external forces cleared; the actuator states completed with the average motor speed ``T (u + u') / 2``
    and the joint loss torque ``-b_j (u + u') / 2 + lam_f / h``; not non-finite. ``advance`` eager and jitted, on
    one world and ``vmap``-ped over two (the forces from the pipeline's stages)."""

    @pytest.fixture(autouse=True)
    def _quadruped(self, quadruped):
        self.quadruped = quadruped

    @chex.variants(with_jit=True, without_jit=True)
    def test_advance_integrates_and_keeps_the_books(self):
        model = self.quadruped
        worlds = []
        for seed in (0, 2):
            state, u_next, u_pos, lam = advance_inputs(model, seed)
            out = run_stages(model, state)
            worlds.append((state, out["frc"], u_next, u_pos, lam, out["contacts"]))
        one = self.variant(advance)
        batched = self.variant(jax.vmap(advance, in_axes=(None, 0, 0, 0, 0, 0, 0)))
        stacked = jax.tree.map(lambda *x: jnp.stack([jnp.asarray(y) for y in x]), *worlds)
        together = numpy_tree(batched(model, *stacked))
        for k, (state, frc, u_next, u_pos, lam, contacts) in enumerate(worlds):
            after = numpy_tree(one(model, state, frc, jnp.asarray(u_next), jnp.asarray(u_pos), lam, contacts))
            check_advance(model, state, frc, u_next, u_pos, lam, contacts, after, f"world {k}")
            in_batch = jax.tree.map(lambda x, k=k: x[k], together)
            check_advance(model, state, frc, u_next, u_pos, lam, contacts, in_batch, f"world {k} vmapped")


@pytest.mark.parametrize("where", ["u_next", "u_pos"])
def test_a_non_finite_step_keeps_the_state_and_flags_it(quadruped, where):
    """A NaN in the end-of-step velocity (or an infinite pseudo-velocity, which makes only ``q`` non-finite):
    ``q``, ``u``, the time and the stored impulses stay as they were, ``nonfinite`` is set; the external
    forces are still cleared (the step's docstring). A flagged world stays flagged and stops: a later finite
    step does not move it (``State.nonfinite``'s docstring)."""
    state, u_next, u_pos, lam = advance_inputs(quadruped, 1)
    if where == "u_next":
        u_next[9] = np.nan
    else:
        u_pos[2] = np.inf
    out = run_stages(quadruped, state)
    frc, contacts = out["frc"], out["contacts"]
    after = numpy_tree(advance_and_guard(quadruped, state, frc, jnp.asarray(u_next), jnp.asarray(u_pos), lam, contacts))
    before = numpy_tree(state)
    for field in ("q", "u", "time", "contact_impulse", "friction_impulse", "limit_impulse"):
        np.testing.assert_array_equal(getattr(after, field), getattr(before, field), err_msg=f"{field} kept")
    assert after.nonfinite, "nonfinite"
    np.testing.assert_array_equal(after.external_force, 0.0, err_msg="external_force")

    flagged = state.replace(nonfinite=jnp.asarray(True))
    finite = advance_and_guard(quadruped, flagged, frc, jnp.asarray(np.asarray(state.u)), jnp.zeros(18), lam, contacts)
    finite = numpy_tree(finite)
    assert finite.nonfinite, "nonfinite is sticky"
    for field in ("q", "u", "time", "contact_impulse", "friction_impulse", "limit_impulse"):
        np.testing.assert_array_equal(getattr(finite, field), getattr(before, field), err_msg=f"{field} stopped")


# --------------------------------------------------------------------------------------------------
# 6. The position pass on a fixed-base arm.

ARM_URDF = """<robot name="arm"><link name="world"/>
  <link name="rod"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="0.0834" iyz="0" izz="0.0834"/></inertial>
    <collision><origin xyz="1 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="hinge" type="continuous"><parent link="world"/><child link="rod"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/></joint></robot>"""


def test_the_position_pass_lets_a_fixed_base_arm_out_of_the_ground():
    """A 1 m arm on a hinge 0.5 m above the ground, its end sphere (r = 5 cm) 5 mm deep, at rest without gravity:
    only the position pass moves it. The constraint docstring promises that it removes ``POSITION_CORRECTION``
    of the penetration beyond the allowance per step, so the gap grows by ``0.2 (5 mm - 1e-5 m)`` in one step
    (the arc's curvature changes that by ~(h u_pos)^2 r = 1e-6 m)."""
    model = jaxmor.add_ground(jaxmor.load_urdf(ARM_URDF))
    model = model.replace(opt=model.opt.replace(gravity=jnp.zeros(3)))

    def gap(angle):  # the rod's x axis turns to (cos a, 0, -sin a): the sphere's centre is at z = 0.5 - sin(a)
        return 0.5 - np.sin(angle) - 0.05

    depth = 0.005
    angle = np.arcsin(0.5 - 0.05 + depth)
    after = jax.jit(jaxmor.step)(model, jaxmor.init_state(model, q=jnp.array([angle])))
    expected = -depth + POSITION_CORRECTION * (depth - PENETRATION_ALLOWANCE)
    assert gap(float(after.q[0])) == pytest.approx(expected, abs=1e-5), "gap after one step"
    # The same arm on a limited hinge: a limit 2 mrad away (beyond the 1.1 mrad the correction turns it by) leaves
    # the step unchanged; a limit 0.5 mrad away stops the hinge there, not beyond (the speculative bound), and the
    # rest of the penetration waits for the next steps.
    step = jax.jit(jaxmor.step)
    for margin, want in ((2e-3, expected), (5e-4, gap(angle - 5e-4))):
        limited = jaxmor.add_ground(jaxmor.load_urdf(limited_arm(angle - margin)))
        limited = limited.replace(opt=limited.opt.replace(gravity=jnp.zeros(3)))
        moved = step(limited, jaxmor.init_state(limited, q=jnp.array([angle])))
        assert gap(float(moved.q[0])) == pytest.approx(want, abs=1e-5), margin
        assert float(moved.q[0]) >= angle - margin - 1e-9


def limited_arm(lower: float) -> str:
    """:data:`ARM_URDF` with a revolute hinge limited to ``[lower, 1.5]`` rad."""
    return ARM_URDF.replace('type="continuous"', 'type="revolute"').replace(
        "</joint>", f'<limit lower="{lower}" upper="1.5" effort="10" velocity="10"/></joint>'
    )
