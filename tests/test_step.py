"""The simulation step (``jaxmor.step``, ``jaxmor.rollout``) against independent expectations.

Sources of the expected values (never the code under test):

* the spec ``spec/actuators-motor-operating-region.md``: "What happens in a simulation step" (the
  turntable example: 5 + 15 = 20 Nm at rest, 5 + 1 = 6 Nm at 23.8 rad/s), "Time step and the voltage
  limit" (the bound ``2 I R Kv / (G^2 Kt)``), "Accuracy" (inside the region to 1e-12 of the peak) and
  "Monitoring without enforcing";
* ``reference/validation-anchors.md`` §1.6 (the contact-free one-step oracle, with ``M`` and ``b`` from
  Pinocchio) and §2.2 A1 (implicit PD at ``Kp h^2 / I = 1e4``) and A3 (trapezoidal damping);
* the robots' URDF comments and READMEs: inertias, motor constants, gear ratios and the transmission
  matrix are written here by hand from them;
* closed forms of the 1-DoF recurrences, derived in the tests' docstrings.

Cost: every compiled function is a module-level ``jax.jit`` (or one compiled per module fixture), so
each model structure compiles once; the quadruped's contact-free oracle and the per-world references of
the ``vmap`` test share one compiled ``step`` (same model structure, different leaves).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import PENDULUM_URDF, QUADRUPED_JOINTS, QUADRUPED_URDF, quadruped_standing_q
from oracles import motor_region, quat_multiply, quat_of_axis_angle, skew
from reference import PinReference, rel_err

import jaxmor
from jaxmor import MotorSaturation

STEP = jax.jit(jaxmor.step)
ROLLOUT = jax.jit(jaxmor.rollout, static_argnames=("n_steps",))
STEP_WORLDS = jax.jit(jax.vmap(jaxmor.step, in_axes=(None, 0)))

# ---------------------------------------------------------------------------------------------------
# Hand-written constants (from the URDF comments, the actuator files and the READMEs).

# Turntable: disc izz 0.04 plus rotor_inertia 0.002 about the spin axis (z, so gravity does no work).
TT_I = 0.04 + 0.002
TT_G, TT_R, TT_KT, TT_KV, TT_V, TT_PEAK, TT_EFFORT = 10.0, 0.2, 0.1, 10.0, 24.0, 1.5, 5.0
TT_STALL = TT_KT * TT_V / TT_R  # 12 Nm
TT_B = TT_KT / (TT_R * TT_KV)  # 0.05 Nm s/rad
TT_NO_LOAD = TT_KV * TT_V / TT_G  # 24 rad/s at the joint
TT_DT_BOUND = 2 * TT_I * TT_R * TT_KV / (TT_G**2 * TT_KT)  # 16.8 ms

# Quadruped: one motor for all twelve actuators; per leg HAA 6:1, HFE 10:1, KFE 10:1 coupled to HFE.
QD_R, QD_KT, QD_KV, QD_V, QD_PEAK = 0.4, 0.1, 10.0, 24.0, 3.0
QD_GEAR = np.tile([6.0, 10.0, 10.0], 4)
QD_ARMATURE = np.concatenate([np.zeros(6), np.tile([2.16e-3, 6.06e-3, 6.0e-3], 4)])
QD_DAMPING = 0.05  # every joint, Nm s/rad
QD_EFFORT = np.tile([18.0, 30.0, 30.0], 4)


def quadruped_transmission() -> np.ndarray:
    """(12, 18) T: the README's per-leg block [[6, 0, 0], [0, 10, 0], [0, 1, 10]]."""
    t = np.zeros((12, 18))
    for leg in range(4):
        r, c = 3 * leg, 6 + 3 * leg
        t[r, c] = 6.0
        t[r + 1, c + 1] = 10.0
        t[r + 2, c + 2] = 10.0
        t[r + 2, c + 1] = 1.0
    return t


QD_T = quadruped_transmission()


# ---------------------------------------------------------------------------------------------------
# Models: the session's shared models (tests/conftest.py), checked here against this file's hand-written
# constants. Loading is cheap, compiling is not; the jitted functions above cache per model structure.


@pytest.fixture(scope="module")
def turntable(turntable):
    model = turntable
    assert jaxmor.actuator_names(model) == ["spin"]
    assert float(model.opt.timestep) == 1e-3
    assert float(model.dof_damping[0]) == 0.0 and float(model.dof_friction[0]) == 0.0
    return model


@pytest.fixture(scope="module")
def quadruped_ground(quadruped_ground):
    model = quadruped_ground
    assert tuple(model.joint_names) == QUADRUPED_JOINTS
    assert tuple(jaxmor.actuator_names(model)) == QUADRUPED_JOINTS
    np.testing.assert_array_equal(np.asarray(jaxmor.transmission_matrix(model)), QD_T)
    return model


# ---------------------------------------------------------------------------------------------------
# 1. The spec's turntable: effort limit and region are separate limits.


@pytest.mark.parametrize(
    "speed, expected, motor_torque, saturation",
    [
        (0.0, 5.0 + 15.0, TT_PEAK, MotorSaturation.PEAK_TORQUE),  # peak-limited at rest
        (23.8, 5.0 + 1.0, 12.0 - 0.05 * 238.0, MotorSaturation.VOLTAGE),  # 0.1 Nm at the motor
    ],
    ids=["at-rest", "at-23.8rad/s"],
)
def test_turntable_generalized_force_and_one_step(turntable, speed, expected, motor_torque, saturation):
    """setGeneralizedForce(100) and setActuatorTorque("spin", 100): 5 Nm from the effort-clamped force plus
    15 Nm (at rest) or 1 Nm (at 23.8 rad/s) from the region; one step changes u by h * total / I."""
    state = jaxmor.init_state(turntable, u=jnp.array([speed]))
    state = jaxmor.set_generalized_force(turntable, state, jnp.array([100.0]))
    state = jaxmor.set_actuator_torque(turntable, state, "spin", 100.0)

    force = float(jaxmor.generalized_force(turntable, state)[0])
    assert force == pytest.approx(expected, rel=1e-12, abs=1e-12)

    h = float(turntable.opt.timestep)
    after = STEP(turntable, state)
    accel = (float(after.u[0]) - speed) / h
    # No damping, friction, PD or gravity torque about z; a single axis has no Coriolis term.
    assert accel == pytest.approx(expected / TT_I, rel=1e-9)
    assert float(after.q[0]) == pytest.approx(h * float(after.u[0]), rel=1e-12)

    act = after.actuator_state
    assert float(act.motor_speed[0]) == pytest.approx(TT_G * speed, rel=1e-15, abs=1e-15)
    assert float(act.commanded_motor_torque[0]) == pytest.approx(100.0 / TT_G, rel=1e-15)
    assert float(act.motor_torque[0]) == pytest.approx(motor_torque, rel=1e-12, abs=1e-12)
    assert int(act.saturation[0]) == saturation
    assert not bool(after.nonfinite)


# ---------------------------------------------------------------------------------------------------
# 2. Applied motor torques stay inside their regions under impacts (and monitor mode does not clip).

FALL_STEPS = 2000  # 2 s at 1 ms
HOLD_STEPS = 10  # a new random command every 10 ms


@pytest.fixture(scope="module")
def falling_quadruped(quadruped_ground):
    """Two worlds, one jitted rollout: the quadruped dropped from 0.3 m above its standing height and
    kicking under random actuator commands (uniform in +-2x the effort limits, new every 10 ms); world 0
    enforces the regions, world 1 only monitors them. The same commands go to both."""
    model = quadruped_ground
    assert float(model.opt.timestep) == 1e-3
    rng = np.random.default_rng(20250521)
    commands = rng.uniform(-2.0, 2.0, size=(FALL_STEPS // HOLD_STEPS, model.na)) * QD_EFFORT
    controls = np.repeat(commands, HOLD_STEPS, axis=0)
    q0 = quadruped_standing_q(model, jaxmor.robots.QUADRUPED_STANDING_HEIGHT + 0.3)
    state = jaxmor.init_state(model, q=jnp.asarray(q0))
    monitor = jaxmor.set_motor_operating_region_enforced(model, state, False)
    worlds = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), state, monitor)
    run = jax.jit(jax.vmap(lambda s, c: jaxmor.rollout(model, s, c), in_axes=(0, None)))
    final, traj = run(worlds, jnp.asarray(controls))
    traj = jax.tree_util.tree_map(np.asarray, traj)
    u_before = np.concatenate([np.asarray(worlds.u)[:, None], traj.u[:, :-1]], axis=1)  # u at each step's start
    return {
        "model": model,
        "controls": controls,
        "final": final,
        "traj": traj,
        "u_before": u_before,
        "bus_voltage": np.asarray(worlds.bus_voltage),
    }


@pytest.mark.slow
def test_falling_quadruped_hits_the_ground_and_saturates(falling_quadruped):
    traj = falling_quadruped["traj"]
    assert not np.any(np.asarray(falling_quadruped["final"].nonfinite))
    assert np.all(np.isfinite(traj.q)) and np.all(np.isfinite(traj.u))
    normal = traj.contact_impulse[0, :, :, 0]  # (steps, contacts)
    assert normal.max() > 0.0, "the robot never touched the ground"
    first = int(np.argmax(normal.max(axis=1) > 0))
    # Free fall from 0.3 m takes sqrt(2 * 0.3 / 9.81) = 0.247 s; the legs flail meanwhile.
    assert 100 < first < 400, first
    sat = traj.actuator_state.saturation[0]
    assert np.any(sat == MotorSaturation.VOLTAGE) and np.any(sat == MotorSaturation.PEAK_TORQUE)
    assert np.any(sat == MotorSaturation.NONE)


@pytest.mark.slow
def test_applied_motor_torques_stay_in_their_regions(falling_quadruped):
    """Every step, every actuator: the motor speed is T u at the step's beginning, the motor torque is the
    command clipped to the region there, and it lies inside the region to 1e-12 of the peak torque,
    measured with ``motor_operating_region_violation`` and with the region written out by hand."""
    model, traj = falling_quadruped["model"], falling_quadruped["traj"]
    act = jax.tree_util.tree_map(lambda x: x[0], traj.actuator_state)
    speed_by_hand = falling_quadruped["u_before"][0] @ QD_T.T
    np.testing.assert_allclose(act.motor_speed, speed_by_hand, rtol=1e-13, atol=1e-12)

    motor = model.actuators.motor.replace(bus_voltage=jnp.asarray(falling_quadruped["bus_voltage"][0]))
    violation = np.asarray(jaxmor.motor_operating_region_violation(motor, act.motor_speed, act.motor_torque))
    assert violation.shape == (FALL_STEPS, 12)
    assert violation.max() <= 1e-12 * QD_PEAK, violation.max()

    lower, upper = motor_region(act.motor_speed, QD_R, QD_KT, QD_KV, QD_V, QD_PEAK)
    tol = 1e-12 * QD_PEAK
    assert np.all(act.motor_torque >= lower - tol) and np.all(act.motor_torque <= upper + tol)
    commanded = falling_quadruped["controls"] / QD_GEAR
    np.testing.assert_allclose(act.commanded_motor_torque, commanded, rtol=1e-15, atol=0)
    np.testing.assert_allclose(act.motor_torque, np.clip(commanded, lower, upper), rtol=0, atol=tol)

    # The saturation label names the bound that clipped the command.
    clipped = np.abs(np.clip(commanded, lower, upper) - commanded) > tol
    assert np.all((act.saturation != MotorSaturation.NONE) == clipped)
    # Overspeed (beyond Kv (V + R peak / Kt) = 360 rad/s) is not required; high speeds are.
    assert np.abs(act.motor_speed).max() > QD_KV * (QD_V - QD_R * QD_PEAK / QD_KT)  # above the corner speed


@pytest.mark.slow
def test_monitor_mode_applies_the_commands_and_reports_violations(falling_quadruped):
    model, traj = falling_quadruped["model"], falling_quadruped["traj"]
    act = jax.tree_util.tree_map(lambda x: x[1], traj.actuator_state)
    commanded = falling_quadruped["controls"] / QD_GEAR
    np.testing.assert_allclose(act.motor_torque, commanded, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(act.motor_torque, act.commanded_motor_torque)
    speed_by_hand = falling_quadruped["u_before"][1] @ QD_T.T
    np.testing.assert_allclose(act.motor_speed, speed_by_hand, rtol=1e-13, atol=1e-12)

    motor = model.actuators.motor.replace(bus_voltage=jnp.asarray(falling_quadruped["bus_voltage"][1]))
    violation = np.asarray(jaxmor.motor_operating_region_violation(motor, act.motor_speed, act.motor_torque))
    lower, upper = motor_region(act.motor_speed, QD_R, QD_KT, QD_KV, QD_V, QD_PEAK)
    by_hand = np.maximum(lower - commanded, 0.0) + np.maximum(commanded - upper, 0.0)
    np.testing.assert_allclose(violation, by_hand, rtol=1e-12, atol=1e-12)
    outside = by_hand > 1e-9
    assert outside.any(axis=1).sum() > FALL_STEPS // 4, "monitor mode should leave the region often"
    # The states still report the bound that the command exceeds.
    assert np.all(act.saturation[outside] != MotorSaturation.NONE)
    assert np.all(act.saturation[by_hand == 0.0] == MotorSaturation.NONE)
    assert not np.any(np.asarray(falling_quadruped["final"].nonfinite))


# ---------------------------------------------------------------------------------------------------
# 3. A motor at its voltage limit settles at the no-load speed below the time-step bound.


def turntable_recurrence(h, n_steps, command_motor):
    """The step for the turntable by hand: ``u_{n+1} = u_n + h/I * G * clip(cmd, lower(G u_n), upper(G u_n))``
    (no damping, friction, PD, gravity torque or Coriolis term on a single vertical axis)."""
    u, us, torques = 0.0, [], []
    for _ in range(n_steps):
        lower, upper = motor_region(TT_G * u, TT_R, TT_KT, TT_KV, TT_V, TT_PEAK)
        tau = float(np.clip(command_motor, lower, upper))
        torques.append(tau)
        u = u + h / TT_I * TT_G * tau
        us.append(u)
    return np.array(us), np.array(torques)


VOLTAGE_STEPS = 600


@pytest.mark.parametrize("h", [1e-3, 0.9 * TT_DT_BOUND, 1.5 * TT_DT_BOUND], ids=["1ms", "0.9bound", "1.5bound"])
def test_voltage_limit_settles_below_the_time_step_bound(turntable, h):
    """Near the no-load speed the drive torque is ``G (stall - b G u)`` = 5 (24 - u) Nm at the joint, so
    ``u_{n+1} - 24 = (1 - 5 h / I) (u_n - 24)``: it settles iff h < 2 I / 5 = 16.8 ms (the spec's
    ``2 I R Kv / (G^2 Kt)``). Above the bound it oscillates, but every step moves u by at most the
    peak-torque jump ``h G peak / I`` towards 24, so ``|u - 24|`` never exceeds that jump."""
    assert TT_DT_BOUND == pytest.approx(0.0168, rel=1e-12)
    mass = float(jaxmor.mass_matrix(turntable, jnp.zeros(1))[0, 0])
    assert mass == pytest.approx(TT_I, rel=1e-12)  # the rotor inertia is in the mass matrix

    model = turntable.replace(opt=turntable.opt.replace(timestep=jnp.asarray(h)))
    command = 1000.0  # at the gear output: 100 Nm at the motor, far beyond the region
    state = jaxmor.set_actuator_torque(model, jaxmor.init_state(model), "spin", command)
    _, traj = ROLLOUT(model, state, None, n_steps=VOLTAGE_STEPS)
    u = np.asarray(traj.u[:, 0])
    act = jax.tree_util.tree_map(lambda x: np.asarray(x[:, 0]), traj.actuator_state)

    expected_u, expected_tau = turntable_recurrence(h, VOLTAGE_STEPS, command / TT_G)
    np.testing.assert_allclose(act.motor_torque, expected_tau, rtol=0, atol=1e-9)
    np.testing.assert_allclose(u, expected_u, rtol=0, atol=1e-9)

    lower, upper = motor_region(act.motor_speed, TT_R, TT_KT, TT_KV, TT_V, TT_PEAK)
    tol = 1e-12 * TT_PEAK
    assert np.all(act.motor_torque <= upper + tol) and np.all(act.motor_torque >= lower - tol)

    deviation = np.abs(u - TT_NO_LOAD)
    jump = h * TT_G * TT_PEAK / TT_I
    if h < TT_DT_BOUND:
        assert deviation[-1] <= 1e-9, deviation[-1]
        assert deviation[-50:].max() <= 1e-9
        assert np.all(act.saturation[-50:] == MotorSaturation.VOLTAGE)
    else:
        early = deviation[100:200].max()
        late = deviation[-100:].max()
        assert late > 1.0, "above the bound the speed should not settle"
        assert late <= early * (1 + 1e-9) + 1e-12, (early, late)  # no growth
        first_cross = int(np.argmax(u > TT_NO_LOAD))
        assert deviation[first_cross:].max() <= jump * (1 + 1e-12)
        assert np.all(np.isfinite(u))


# ---------------------------------------------------------------------------------------------------
# 4. The contact-free one-step oracle (validation-anchors §1.6) on the quadruped, with Pinocchio's M, b.


def locked_body_jacobian(mass, w):
    """h-free part of the implicit gyroscopic term (step.py's docstring): the robot locked into one rigid
    body whose inertia at the base origin is M's base block ``[[m I, -m [c]x], [m [c]x, I_o]]``. Its
    velocity-dependent forces are ``m w x (w x c)`` and ``w x I_o w``; their derivatives w.r.t. ``w`` are
    ``m (w c^T + (w.c) I - 2 c w^T)`` and ``[w]x I_o - [I_o w]x``. Written out here from the vector
    identities, not from jaxmor."""
    m = mass[0, 0]
    cx = -mass[0:3, 3:6] / m
    c = np.array([cx[2, 1], cx[0, 2], cx[1, 0]])
    inertia = mass[3:6, 3:6]
    out = np.zeros_like(mass)
    out[0:3, 3:6] = m * (np.outer(w, c) + (w @ c) * np.eye(3) - 2.0 * np.outer(c, w))
    out[3:6, 3:6] = skew(w) @ inertia - skew(inertia @ w)
    return out


@pytest.fixture(scope="module")
def quadruped_pin(quadruped_ground):
    pytest.importorskip("pinocchio")
    return PinReference(quadruped_ground, QUADRUPED_URDF, armature=QD_ARMATURE)


def test_locked_body_jacobian_is_the_bias_derivative_with_joints_at_rest(quadruped_ground, quadruped_pin):
    """Cross-check of the oracle's gyroscopic term against Pinocchio: with the joints at rest the robot
    moves as one rigid body, so the bias's derivative w.r.t. the base velocities is the locked body's.
    The bias is quadratic in u, so a central difference with a unit step is exact up to round-off."""
    rng = np.random.default_rng(4)
    q = quadruped_standing_q(quadruped_ground, 1.0)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] += rng.uniform(-0.5, 0.5, size=12)
    u = np.zeros(18)
    u[:6] = rng.normal(size=6) * 2.0
    mass = quadruped_pin.mass_matrix(q)
    fd = np.zeros((18, 6))
    for k in range(6):
        e = np.zeros(18)
        e[k] = 1.0
        fd[:, k] = 0.5 * (quadruped_pin.bias_force(q, u + e) - quadruped_pin.bias_force(q, u - e))
    expected = locked_body_jacobian(mass, u[3:6])
    np.testing.assert_allclose(fd[:6], expected[:6, :6], rtol=0, atol=1e-11 * max(1.0, np.abs(fd).max()))


@pytest.mark.parametrize(
    ("seed", "mode"), [(0, "kahan"), (1, "kahan"), (2, "kahan"), (0, "predicted"), (1, "predicted")]
)
def test_one_step_matches_the_contact_free_oracle(quadruped_ground, quadruped_pin, seed, mode):
    """§1.6 with the spec's composition, for the quadruped in the air (ground 100 m below, joint friction
    zero, no joint limits), with gravity, random q and u, PD gains and targets, the URDF damping, a
    feed-forward force (actuation limits infinite, so nothing is clamped) and actuator torques, half of
    them inside the region and half saturated (clipped by hand):

        (M + h Kd + h^2 Kp + h/2 D + h J) u' = M u + h (tau_ff + Kp (q* - q) + Kd u* - D u / 2 - b + T^T tau_m) + h J u

    with ``J`` by ``Options.implicit_bias``: ``D_b / 2`` (``"kahan"``), ``D_b`` the derivative of Pinocchio's
    bias w.r.t. ``u`` (central differences); ``"predicted"`` solves with ``J = K / 2``, ``K`` the locked-body
    gyroscopic term on the base block, once, then adds ``-(h/2) (D_b - K) du`` at that
    solution's ``du = u' - u`` to the right-hand side and solves again; and ``q' = q (+) h u'`` (joints
    ``q + h u'``, base position ``p + h v'``, quaternion ``exp(h w') * quat``)."""
    rng = np.random.default_rng(seed)
    model = quadruped_ground.replace(
        dof_friction=jnp.zeros(18),
        dof_lower=jnp.full(18, -jnp.inf),
        dof_upper=jnp.full(18, jnp.inf),
        ground_height=jnp.asarray(-100.0),
    )
    model = model.replace(opt=model.opt.replace(implicit_bias=mode))
    h = float(model.opt.timestep)
    q = quadruped_standing_q(model, 1.0)
    quat = rng.normal(size=4)
    q[3:7] = quat / np.linalg.norm(quat)
    q[7:] += rng.uniform(-0.6, 0.6, size=12)
    u = np.concatenate([rng.normal(size=6), rng.normal(size=12) * 2.0])
    kp = np.concatenate([np.zeros(6), rng.uniform(0.0, 300.0, size=12)])
    kd = np.concatenate([np.zeros(6), rng.uniform(0.0, 5.0, size=12)])
    q_target = q + rng.uniform(-0.5, 0.5, size=19)
    u_target = np.concatenate([np.zeros(6), rng.normal(size=12)])
    tau_ff = rng.normal(size=18) * 5.0
    damping = np.concatenate([np.zeros(6), np.full(12, QD_DAMPING)])

    speed = QD_T @ u
    lower, upper = motor_region(speed, QD_R, QD_KT, QD_KV, QD_V, QD_PEAK)
    saturated = np.arange(12) % 2 == 1
    inside = lower + rng.uniform(0.1, 0.9, size=12) * (upper - lower)
    command_motor = np.where(saturated, rng.choice([-100.0, 100.0], size=12), inside)
    tau_motor = np.clip(command_motor, lower, upper)
    assert np.all(np.abs(tau_motor[saturated]) < 100.0) and np.all(tau_motor[~saturated] == inside[~saturated])

    state = jaxmor.init_state(model, q=jnp.asarray(q), u=jnp.asarray(u))
    state = jaxmor.set_pd_gains(model, state, jnp.asarray(kp), jnp.asarray(kd))
    state = jaxmor.set_pd_targets(model, state, jnp.asarray(q_target), jnp.asarray(u_target))
    state = jaxmor.set_actuation_limits(model, state, jnp.full(18, jnp.inf))
    state = jaxmor.set_generalized_force(model, state, jnp.asarray(tau_ff))
    state = jaxmor.set_actuator_torques(model, state, jnp.asarray(command_motor * QD_GEAR))
    after = STEP(model, state)

    mass = quadruped_pin.mass_matrix(q)
    bias = quadruped_pin.bias_force(q, u)
    q_star = np.concatenate([np.zeros(6), q_target[7:]])  # per velocity; the base's entries are unused
    q_joint = np.concatenate([np.zeros(6), q[7:]])
    locked = locked_body_jacobian(mass, u[3:6])
    gyro = {"predicted": 0.5 * locked, "kahan": 0.5 * quadruped_pin.bias_jacobian(q, u)}[mode]
    lhs = mass + h * np.diag(kd + h * kp + 0.5 * damping) + h * gyro
    rhs = mass @ u + h * (
        tau_ff + kp * (q_star - q_joint) + kd * u_target - 0.5 * damping * u - bias + QD_T.T @ tau_motor
    )
    rhs += h * gyro @ u
    u_next = np.linalg.solve(lhs, rhs)
    if mode == "predicted":
        change = u_next - u
        u_next = np.linalg.solve(lhs, rhs - 0.5 * h * (quadruped_pin.bias_jacobian(q, u) - locked) @ change)

    assert rel_err(after.u, u_next) <= 1e-10, rel_err(after.u, u_next)
    q_next = q.copy()
    q_next[7:] += h * u_next[6:]
    q_next[0:3] += h * u_next[0:3]
    rot = h * u_next[3:6]
    dq = quat_of_axis_angle(rot, np.linalg.norm(rot))
    q_next[3:7] = quat_multiply(dq, q[3:7])
    got = np.asarray(after.q)
    if got[3:7] @ q_next[3:7] < 0:  # q and -q are the same rotation
        got[3:7] *= -1
    assert rel_err(got, q_next) <= 1e-10, rel_err(got, q_next)

    np.testing.assert_allclose(after.actuator_state.motor_torque, tau_motor, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(after.contact_impulse, 0.0, atol=0)
    np.testing.assert_allclose(after.limit_impulse, 0.0, atol=0)
    # The actuator states of the completed step: average speed and the trapezoidal damping loss.
    np.testing.assert_allclose(after.actuator_state.average_motor_speed, QD_T @ (0.5 * (u + u_next)), rtol=1e-9)
    loss = -0.5 * QD_DAMPING * (u[6:] + u_next[6:])
    np.testing.assert_allclose(after.actuator_state.joint_loss_torque, loss, rtol=1e-9, atol=1e-12)


def test_one_step_oracle_on_the_pendulum_in_closed_form():
    """A fixed base (no gyroscopic term), fully by hand: I = m L^2 / 3 = 1/3, b = m g L/2 sin(theta)
    = 4.905 sin(theta); with URDF damping D, PD gains and a feed-forward torque,
    ``(I + h Kd + h^2 Kp + h D / 2) u' = I u + h (tau_ff + Kp (q* - q) + Kd u* - D u / 2 - b)``."""
    damping = 0.7
    model = pendulum_model(damping, gravity=9.81)
    h = float(model.opt.timestep)
    inertia = 1.0 / 3.0
    q, u = 0.8, -1.3
    kp, kd, q_star, u_star, tau_ff = 40.0, 0.9, 0.2, 0.5, 1.1
    state = jaxmor.init_state(model, q=jnp.array([q]), u=jnp.array([u]))
    state = jaxmor.set_pd_gains(model, state, jnp.array([kp]), jnp.array([kd]))
    state = jaxmor.set_pd_targets(model, state, jnp.array([q_star]), jnp.array([u_star]))
    state = jaxmor.set_generalized_force(model, state, jnp.array([tau_ff]))
    # The explicit part kp (q* - q - h u) + kd (u* - u) + tau_ff = -21.2 Nm exceeds the URDF's 10 Nm
    # effort limit; lift it so that nothing is clamped.
    state = jaxmor.set_actuation_limits(model, state, jnp.array([jnp.inf]))
    after = ROLLOUT(model, state, None, n_steps=1)[0]
    bias = 1.0 * 9.81 * 0.5 * np.sin(q)
    lhs = inertia + h * kd + h * h * kp + 0.5 * h * damping
    rhs = inertia * u + h * (tau_ff + kp * (q_star - q) + kd * u_star - 0.5 * damping * u - bias)
    assert float(after.u[0]) == pytest.approx(rhs / lhs, rel=1e-12)
    assert float(after.q[0]) == pytest.approx(q + h * rhs / lhs, rel=1e-12)


# ---------------------------------------------------------------------------------------------------
# 5./6. Trapezoidal damping and implicit PD on a 1-DoF pendulum without gravity.

PENDULUM_TEXT = PENDULUM_URDF.read_text()
ONE_DOF_STEPS = 10_000


def pendulum_model(damping: float, gravity: float = 0.0):
    """The robots/ pendulum (I = 1/3 about the hinge) with its URDF ``<dynamics damping>`` set; loaded from
    a string so that every damping gives the same model structure (one compile)."""
    text, n = re.subn(r'damping="0"', f'damping="{damping!r}"', PENDULUM_TEXT)
    assert n == 1
    model = jaxmor.load_urdf(text)
    assert float(model.dof_damping[0]) == damping
    return model.replace(opt=model.opt.replace(gravity=jnp.array([0.0, 0.0, -gravity])))


@pytest.mark.slow
@pytest.mark.parametrize("eta", [0.1, 1.0, 10.0, 100.0])
def test_trapezoidal_damping_recurrence(eta):
    """I u' = I u - h D (u + u') / 2  =>  u' = u (1 - eta) / (1 + eta), eta = D h / (2 I): 0.818, 0,
    -0.818, -0.980 per step for eta = 0.1, 1, 10, 100 (not L-stable: the sign flips for eta > 1)."""
    inertia, h = 1.0 / 3.0, 1e-3
    damping = 2.0 * inertia * eta / h
    model = pendulum_model(damping)
    state = jaxmor.init_state(model, u=jnp.array([1.0]))
    _, traj = ROLLOUT(model, state, None, n_steps=ONE_DOF_STEPS)
    u = np.asarray(traj.u[:, 0])
    ratio = (1.0 - eta) / (1.0 + eta)
    n = np.arange(1, 41)
    np.testing.assert_allclose(u[:40], ratio**n, rtol=0, atol=1e-12)
    if eta == 100.0:
        assert u[0] == pytest.approx(-0.980198, abs=1e-6)
    # The loss torque of the first step is the trapezoidal damping torque -D (u0 + u1) / 2.
    assert float(traj.actuator_state.joint_loss_torque[0, 0]) == pytest.approx(
        -0.5 * damping * (1.0 + ratio), rel=1e-9, abs=1e-9
    )


@pytest.mark.slow
def test_trapezoidal_damping_follows_the_exponential_for_small_eta():
    """A3: v(t) ~ exp(-D t / I) for eta << 1; after 1 s at eta = 1e-3 the relative error is
    ``2 n eta^3 / 3`` = 6.7e-7."""
    inertia, h = 1.0 / 3.0, 1e-3
    damping = 2.0 * inertia * 1e-3 / h
    model = pendulum_model(damping)
    _, traj = ROLLOUT(model, jaxmor.init_state(model, u=jnp.array([1.0])), None, n_steps=ONE_DOF_STEPS)
    v_1s = float(traj.u[999, 0])
    exact = np.exp(-damping * 1.0 / inertia)
    assert abs(v_1s / exact - 1.0) <= 1e-6
    assert abs(v_1s / exact - 1.0) == pytest.approx(2 * 1000 * 1e-9 / 3, rel=0.01)


@pytest.mark.slow
def test_implicit_pd_is_stable_at_kp_h2_over_i_1e4():
    """A1: implicit PD, no damping, Kd = 0: with e = q - q*, y = h u and k = Kp h^2 / I,
    ``y' = (y - k e) / (1 + k)``, ``e' = e + y'``; the eigenvalues have modulus 1/sqrt(1 + k) = 0.01, so
    the error shrinks a hundredfold per step and never grows over 1e4 steps."""
    model = pendulum_model(0.0)
    inertia, h = 1.0 / 3.0, float(model.opt.timestep)
    k = 1e4
    kp = k * inertia / h**2
    q0, q_star = 0.5, 0.1
    state = jaxmor.init_state(model, q=jnp.array([q0]))
    state = jaxmor.set_pd_gains(model, state, jnp.array([kp]), jnp.array([0.0]))
    state = jaxmor.set_pd_targets(model, state, jnp.array([q_star]), jnp.array([0.0]))
    state = jaxmor.set_actuation_limits(model, state, jnp.array([jnp.inf]))
    # The motor would brake beyond its overspeed limit; the PD is not an actuator torque, so monitor only.
    state = jaxmor.set_motor_operating_region_enforced(model, state, False)
    _, traj = ROLLOUT(model, state, None, n_steps=ONE_DOF_STEPS)
    q = np.asarray(traj.q[:, 0])
    assert np.all(np.isfinite(q))

    e, y, expected = q0 - q_star, 0.0, []
    for _ in range(4):
        y = (y - k * e) / (1 + k)
        e = e + y
        expected.append(e + q_star)
    np.testing.assert_allclose(q[:4], expected, rtol=0, atol=1e-12)
    err = np.abs(q - q_star)
    assert err[1] <= 1e-4 * abs(q0 - q_star) * 10  # |lambda|^2 = 1e-4
    assert err[10:].max() <= 1e-15
    assert err[-5000:].max() <= err[:5000].max()  # no growth


@pytest.mark.slow
def test_critically_damped_pd_step_response():
    """A2 with the pendulum's I = 1/3: Kp = I w^2, Kd = 2 I w (w = 10, critical). The discrete recurrence
    ``(I + h Kd + h^2 Kp) u' = I u + h Kp (q* - q)`` (u* = 0), ``q' = q + h u'`` holds to round-off, and the
    continuous ``q(t) = q* (1 - (1 + w t) exp(-w t))`` to O(h) (anchor: <= 3e-3, measured 1.5e-3)."""
    model = pendulum_model(0.0)
    inertia, h, omega, q_star = 1.0 / 3.0, float(model.opt.timestep), 10.0, 1.0
    kp, kd = inertia * omega**2, 2.0 * inertia * omega
    state = jaxmor.init_state(model)
    state = jaxmor.set_pd_gains(model, state, jnp.array([kp]), jnp.array([kd]))
    state = jaxmor.set_pd_targets(model, state, jnp.array([q_star]), jnp.array([0.0]))
    state = jaxmor.set_actuation_limits(model, state, jnp.array([jnp.inf]))
    _, traj = ROLLOUT(model, state, None, n_steps=ONE_DOF_STEPS)
    q_sim = np.asarray(traj.q[:, 0])

    q, u, expected = 0.0, 0.0, []
    for _ in range(ONE_DOF_STEPS):
        u = (inertia * u + h * kp * (q_star - q)) / (inertia + h * kd + h * h * kp)
        q = q + h * u
        expected.append(q)
    np.testing.assert_allclose(q_sim, expected, rtol=0, atol=1e-12)
    t = h * np.arange(1, ONE_DOF_STEPS + 1)
    continuous = q_star * (1.0 - (1.0 + omega * t) * np.exp(-omega * t))
    error = np.abs(q_sim - continuous).max()
    assert 1e-4 < error <= 3e-3, error  # measured 1.5e-3


# ---------------------------------------------------------------------------------------------------
# 7. vmap over 1024 worlds (and over models) equals the worlds stepped one by one.

N_WORLDS = 1024
VMAP_STEPS = 5


@pytest.mark.slow
def test_vmap_over_worlds_and_models_equals_single_worlds(quadruped_ground):
    """1024 quadrupeds standing on the ground with random joint angles and velocities, each with its own
    random motor resistance (the model batched on ``actuators.motor.resistance``) and its own saturating
    command; five steps in one vmapped rollout against four worlds stepped alone."""
    model = quadruped_ground
    rng = np.random.default_rng(7)
    q = np.tile(quadruped_standing_q(model), (N_WORLDS, 1))
    q[:, 7:] += rng.uniform(-0.3, 0.3, size=(N_WORLDS, 12))
    u = np.zeros((N_WORLDS, 18))
    u[:, :6] = rng.uniform(-0.5, 0.5, size=(N_WORLDS, 6))
    u[:, 6:] = rng.uniform(-15.0, 15.0, size=(N_WORLDS, 12))
    resistance = rng.uniform(0.3, 1.5, size=(N_WORLDS, 12))
    torques = rng.choice([-1.0, 1.0], size=(N_WORLDS, 12)) * 2.0 * QD_EFFORT

    def world(i):
        s = jaxmor.init_state(model, q=jnp.asarray(q[i]), u=jnp.asarray(u[i]))
        return jaxmor.set_actuator_torques(model, s, jnp.asarray(torques[i]))

    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (N_WORLDS, *x.shape)), world(0))
    states = states.replace(q=jnp.asarray(q), u=jnp.asarray(u), actuator_torque=jnp.asarray(torques))
    motor = model.actuators.motor
    models = model.replace(actuators=model.actuators.replace(motor=motor.replace(resistance=jnp.asarray(resistance))))
    axes = jax.tree_util.tree_map(lambda _: None, model)
    axes = axes.replace(actuators=axes.actuators.replace(motor=axes.actuators.motor.replace(resistance=0)))

    run = jax.jit(jax.vmap(lambda m, s: jaxmor.rollout(m, s, None, VMAP_STEPS), in_axes=(axes, 0)))
    final, traj = run(models, states)
    final = jax.tree_util.tree_map(np.asarray, final)
    first_torque = np.asarray(traj.actuator_state.motor_torque[:, 0])  # (worlds, 12), step 1

    # Step 1's motor torques by hand, with each world's resistance, at T u0.
    lower, upper = motor_region(u @ QD_T.T, resistance, QD_KT, QD_KV, QD_V, QD_PEAK)
    np.testing.assert_allclose(first_torque, np.clip(torques / QD_GEAR, lower, upper), rtol=0, atol=1e-12)
    assert np.any(np.abs(first_torque) < QD_PEAK - 1e-3), "some worlds should be voltage-limited"
    assert not np.any(final.nonfinite)
    assert np.any(final.contact_impulse[..., 0] > 0), "the feet should touch the ground"

    for i in (0, 1, 517, N_WORLDS - 1):
        model_i = model.replace(
            actuators=model.actuators.replace(motor=motor.replace(resistance=jnp.asarray(resistance[i])))
        )
        s = world(i)
        for _ in range(VMAP_STEPS):
            s = STEP(model_i, s)
        for name in ("q", "u", "time", "contact_impulse", "friction_impulse", "limit_impulse"):
            got, want = getattr(final, name)[i], np.asarray(getattr(s, name))
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"world {i}: {name}")
        np.testing.assert_allclose(
            final.actuator_state.motor_torque[i], np.asarray(s.actuator_state.motor_torque), rtol=1e-9, atol=1e-9
        )


# ---------------------------------------------------------------------------------------------------
# 8. Gradients w.r.t. motor constants and the bus voltage.

GRAD_STEPS = 100


@pytest.mark.slow
def test_grad_of_a_rollout_wrt_motor_constants_and_bus_voltage(turntable):
    """The turntable at 22 rad/s (220 rad/s at the motor, above the 210 rad/s corner speed), commanded far
    beyond the region, stays on the voltage line: the joint torque is ``G Kt/R (V - G u / Kv)``, so with
    ``a = h G^2 Kt / (I R Kv)`` and ``c = Kv V / G``: ``u_N = c + (u_0 - c) (1 - a)^N``, exactly. Its
    derivatives by hand, the simulator's gradient and central differences of the simulator agree."""
    h = 1e-4  # 100 steps = 10 ms, about one mechanical time constant I / (G^2 Kt / (R Kv)) = 8.4 ms
    model = turntable.replace(opt=turntable.opt.replace(timestep=jnp.asarray(h)))
    u0 = 22.0
    state = jaxmor.set_actuator_torque(model, jaxmor.init_state(model, u=jnp.array([u0])), "spin", 1000.0)

    def final_speed(resistance, kt, kv, voltage):
        motor = model.actuators.motor.replace(resistance=resistance, torque_constant=kt, velocity_constant=kv)
        m = model.replace(actuators=model.actuators.replace(motor=motor))
        s = state.replace(bus_voltage=voltage)
        final, _ = jaxmor.rollout(m, s, None, GRAD_STEPS)
        return final.u[0]

    params = (jnp.array([TT_R]), jnp.array([TT_KT]), jnp.array([TT_KV]), jnp.array([TT_V]))
    value = float(jax.jit(final_speed)(*params))
    grads = [float(g[0]) for g in jax.jit(jax.grad(final_speed, argnums=(0, 1, 2, 3)))(*params)]
    assert all(np.isfinite(grads))

    n, c = GRAD_STEPS, TT_KV * TT_V / TT_G
    a = h * TT_G**2 * TT_KT / (TT_I * TT_R * TT_KV)
    d = u0 - c
    decay = (1 - a) ** n
    assert value == pytest.approx(c + d * decay, rel=1e-12)
    d_a = -n * d * (1 - a) ** (n - 1)  # d u_N / d a
    by_hand = [
        d_a * (-a / TT_R),  # resistance
        d_a * (a / TT_KT),  # torque constant
        (1 - decay) * TT_V / TT_G + d_a * (-a / TT_KV),  # velocity constant
        (1 - decay) * TT_KV / TT_G,  # bus voltage
    ]
    np.testing.assert_allclose(grads, by_hand, rtol=1e-9)

    run = jax.jit(final_speed)
    for k, p in enumerate(params):
        eps = 1e-5 * float(p[0])
        plus = [q if j != k else q + eps for j, q in enumerate(params)]
        minus = [q if j != k else q - eps for j, q in enumerate(params)]
        fd = (float(run(*plus)) - float(run(*minus))) / (2 * eps)
        assert grads[k] == pytest.approx(fd, rel=1e-5), (k, grads[k], fd)


# The model's case is the one whose start state has no tangents of its own (the zero tangents of
# pipeline._perturbed_with); the state's and the controls' compile as long again and run with -m slow.
@pytest.mark.parametrize(
    "wrt", ["model", pytest.param("state", marks=pytest.mark.slow), pytest.param("controls", marks=pytest.mark.slow)]
)
def test_a_rollouts_derivative_is_its_steps_derivatives_composed(turntable, wrt):
    """The derivative of ``rollout`` (a scan, whose start state is given zero tangents where it has none so that
    the step is linearized once) against that of the same steps called one after the other, with respect to the
    model alone (the motor's resistance; reverse and forward mode, as ``sysid`` uses), the start state alone (its
    velocity) and the controls alone: equal to round-off (1e-12 relative, float64)."""
    n = 3
    state = jaxmor.init_state(turntable, u=jnp.array([21.0]))
    torques = jnp.array([[2.0], [300.0], [1000.0]])  # inside the region, then beyond it

    def final_speed(resistance, u0, controls, scanned):
        motor = turntable.actuators.motor.replace(resistance=resistance)
        m = turntable.replace(actuators=turntable.actuators.replace(motor=motor))
        s = state.replace(u=u0)
        if scanned:
            return jaxmor.rollout(m, s, controls)[0].u[0]
        for k in range(n):
            s = jaxmor.step(m, jaxmor.set_actuator_torques(m, s, controls[k]))
        return s.u[0]

    args = (jnp.array([TT_R]), state.u, torques)
    k = ("model", "state", "controls").index(wrt)
    got, want = (jax.jit(jax.grad(final_speed, argnums=k), static_argnums=3)(*args, scanned) for scanned in (1, 0))
    assert float(jnp.max(jnp.abs(want))) > 0.0
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0)
    if wrt != "model":
        return
    direction = jnp.ones_like(args[k])

    def along(scanned):
        return jax.jvp(lambda x: final_speed(*args[:k], x, *args[k + 1 :], scanned), (args[k],), (direction,))[1]

    np.testing.assert_allclose(jax.jit(along, static_argnums=0)(1), jax.jit(along, static_argnums=0)(0), rtol=1e-12)


def test_a_rollouts_gradient_builds_the_steps_derivative_once(turntable, monkeypatch):
    """Tracing the gradient of a rollout with respect to the model alone runs the step's stages twice: once for the
    values and once inside the guard's derivative rule. The scan's derivative guesses which carried values have
    tangents; a start state without tangents made the first guess wrong and the rule ran three times (the stages
    four times in all), which cost about 4 s of a 29 s compile (docs/design/performance.md, "The gradient's
    compile")."""
    calls = []
    stages = jaxmor.sim.pipeline.stages
    monkeypatch.setattr(jaxmor.sim.pipeline, "stages", lambda m, s: calls.append(1) or stages(m, s))
    state = jaxmor.init_state(turntable, u=jnp.array([21.0]))

    def final_speed(resistance):
        motor = turntable.actuators.motor.replace(resistance=resistance)
        m = turntable.replace(actuators=turntable.actuators.replace(motor=motor))
        return jaxmor.rollout(m, state, jnp.full((3, 1), 300.0))[0].u[0]

    jax.jit(jax.grad(final_speed)).trace(jnp.array([TT_R]))
    assert len(calls) == 2


# ---------------------------------------------------------------------------------------------------
# 9. Bad input.


@pytest.fixture(scope="module")
def quadruped_state(quadruped_ground):
    return jaxmor.init_state(quadruped_ground)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m, s: jaxmor.set_actuator_torques(m, s, jnp.zeros(11)), "torques"),
        (lambda m, s: jaxmor.set_actuator_torques(m, s, jnp.zeros((2, 12))), "torques"),
        (lambda m, s: jaxmor.set_pd_gains(m, s, jnp.zeros(17), jnp.zeros(18)), "p_gain"),
        (lambda m, s: jaxmor.set_pd_gains(m, s, jnp.zeros(18), jnp.zeros((18, 1))), "d_gain"),
        (lambda m, s: jaxmor.set_generalized_force(m, s, jnp.full(18, jnp.nan)), "force"),
        (lambda m, s: jaxmor.set_generalized_force(m, s, jnp.zeros(12)), "force"),
        (lambda m, s: jaxmor.set_external_force(m, s, "NO_SUCH_LINK", jnp.array([0.0, 0.0, 1.0])), "NO_SUCH_LINK"),
        (lambda m, s: jaxmor.set_actuator_torque(m, s, "NO_SUCH_ACTUATOR", 1.0), "NO_SUCH_ACTUATOR"),
        (lambda m, s: jaxmor.set_actuator_torque(m, s, "LF_KFE", jnp.nan), "torque"),
        (lambda m, s: jaxmor.set_pd_targets(m, s, jnp.zeros(18), jnp.zeros(18)), "position_target"),
        (lambda m, s: jaxmor.rollout(m, s, jnp.zeros((3, 11))), "controls"),
    ],
    ids=[
        "torques-length",
        "torques-2d",
        "p_gain-shape",
        "d_gain-shape",
        "force-nan",
        "force-length",
        "external-unknown-link",
        "unknown-actuator",
        "torque-nan",
        "targets-shape",
        "rollout-controls-shape",
    ],
)
def test_bad_input_raises_argument_error_naming_it(quadruped_ground, quadruped_state, call, name):
    with pytest.raises(jaxmor.ArgumentError, match=re.escape(name)):
        call(quadruped_ground, quadruped_state)


def test_nonfinite_world_is_flagged_and_keeps_its_state(pendulum):
    """Under jit and vmap, NaNs injected past the setters (``state.replace``) flag only their world; it keeps
    its previous q and u and does not advance in time, while the healthy world steps on as if alone."""
    model = pendulum
    good = jaxmor.init_state(model, q=jnp.array([0.7]), u=jnp.array([0.3]))
    bad_force = good.replace(feedforward_force=jnp.array([jnp.nan]))
    bad_u = good.replace(u=jnp.array([jnp.nan]))
    worlds = jax.tree_util.tree_map(lambda *x: jnp.stack(x), bad_force, bad_u, good)

    once = STEP_WORLDS(model, worlds)
    twice = STEP_WORLDS(model, once)
    alone = STEP(model, good)
    for after in (once, twice):
        np.testing.assert_array_equal(np.asarray(after.nonfinite), [True, True, False])
        np.testing.assert_array_equal(np.asarray(after.q[:2, 0]), [0.7, 0.7])
        np.testing.assert_array_equal(np.asarray(after.u[0]), [0.3])
        assert np.isnan(float(after.u[1, 0]))
        np.testing.assert_array_equal(np.asarray(after.time[:2]), [0.0, 0.0])
    np.testing.assert_allclose(np.asarray(once.q[2]), np.asarray(alone.q), rtol=1e-14, atol=0)
    np.testing.assert_allclose(np.asarray(once.u[2]), np.asarray(alone.u), rtol=1e-14, atol=0)
    assert not bool(alone.nonfinite)
    assert float(twice.time[2]) == pytest.approx(2 * float(model.opt.timestep), rel=1e-15)
    assert float(once.q[2, 0]) != 0.7
