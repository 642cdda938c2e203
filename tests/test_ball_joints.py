"""Ball joints (MJCF ``<joint type="ball">``) against MuJoCo, float64.

A ball joint has four coordinates (its body's rotation in the joint frame, a unit quaternion ``w x y z``) and three
velocities (the body's angular velocity relative to its parent, in the body's own frame): MuJoCo's convention, so
no velocity conversion stands between the engines (``docs/design/ball-joints.md``). Two scenes, written here:

* ``CHAIN``: a fixed-base chain of three ball joints, anchors off the bodies' origins, rotated body frames, a slide
  and a ball in one body (jaxmor's chain of links), a hinge at the end, armature;
* ``SHOULDERS``: a humanoid's upper body on a free joint, the arms on ball shoulders (one anchored off its body's
  origin) with MuJoCo's cone limits, hinge elbows, a ball wrist, and a head on a ball neck with a spring and a
  damper.

The references are MuJoCo's (``mj_fullM``, ``qfrc_bias``, ``xpos``/``xmat``, ``qacc``, ``sensordata``, its
``Euler`` and ``RK4`` steps) read through ``tests/reference.py``; each tolerance is argued where it is used.
"""

from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import MujocoReference, rel_err

import jaxmor
from jaxmor import ArgumentError, ModelError, checks
from jaxmor.math import quat_angle_axis

mujoco = pytest.importorskip("mujoco")

CHAIN = """<mujoco model="ball chain"><option timestep="0.002" integrator="Euler"/>
<worldbody>
<body name="l1" pos="0 0 1" euler="10 -20 30">
  <joint name="b1" type="ball"/>
  <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.3" size="0.04" mass="1.2"/>
  <body name="l2" pos="0.1 0.05 -0.3" euler="5 15 -10">
    <joint name="b2" type="ball" pos="0 0 0.02" armature="0.01"/>
    <geom type="box" size="0.03 0.05 0.15" pos="0.02 0 -0.15" mass="0.7"/>
    <body name="l3" pos="0 0 -0.3">
      <joint name="s3" type="slide" axis="0.3 1 0"/>
      <joint name="b3" type="ball" pos="0.01 -0.02 0"/>
      <geom type="capsule" fromto="0 0 0 0 0.1 -0.25" size="0.03" mass="0.5"/>
      <body name="l4" pos="0 0.1 -0.25"><joint name="h4" axis="1 0 0"/>
        <geom type="sphere" size="0.04" pos="0 0 -0.05" mass="0.3"/></body>
    </body>
  </body>
</body>
</worldbody>
<keyframe><key name="bent" qpos="2 0.3 -0.1 0.2  0.9 0 0.4 0  0.05  1 0 0 0.3  0.2"
  qvel="1 -2 0.5 0 0.3 0.1 0.2 0 0 1 2"/></keyframe>
</mujoco>"""

SHOULDERS = """<mujoco model="shoulders"><compiler angle="degree"/><option timestep="0.002"/>
<worldbody>
<body name="torso" pos="0 0 1.2" euler="5 -10 20">
  <freejoint name="root"/>
  <geom type="capsule" fromto="0 -0.12 0 0 0.12 0" size="0.09" mass="8"/>
  <geom type="box" pos="0 0 -0.2" size="0.08 0.11 0.12" mass="6"/>
  <body name="head" pos="0 0 0.19">
    <joint name="neck" type="ball" range="0 40" stiffness="20" damping="0.5"/>
    <geom type="sphere" pos="0 0.01 0.09" size="0.09" mass="3"/>
  </body>
  <body name="upper_arm_r" pos="0 -0.17 0.06" euler="0 0 -10">
    <joint name="shoulder_r" type="ball" range="0 100" armature="0.005"/>
    <geom type="capsule" fromto="0 0 0 0.02 -0.04 -0.26" size="0.04" mass="1.6"/>
    <body name="forearm_r" pos="0.02 -0.04 -0.28">
      <joint name="elbow_r" axis="0 1 0" range="-150 20"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 -0.05" size="0.03" mass="1.1"/>
      <body name="hand_r" pos="0.22 0 -0.05">
        <joint name="wrist_r" type="ball" pos="-0.01 0 0"/>
        <geom type="box" size="0.04 0.02 0.05" mass="0.4"/><site name="hand" pos="0.02 0 0"/>
      </body>
    </body>
  </body>
  <body name="upper_arm_l" pos="0.01 0.15 0.09" axisangle="1 0 0 15">
    <joint name="shoulder_l" type="ball" pos="0 0.02 -0.03" range="0 100"/>
    <geom type="capsule" fromto="0 0.02 -0.03 -0.02 0.06 -0.29" size="0.04" mass="1.6"/>
    <body name="forearm_l" pos="-0.02 0.06 -0.31">
      <joint name="elbow_l" axis="0 1 0" range="-150 20"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 -0.05" size="0.03" mass="1.1"/>
    </body>
  </body>
</body>
</worldbody>
<sensor><ballquat joint="shoulder_l"/><ballangvel joint="shoulder_r" cutoff="0.5"/><ballquat joint="neck"/>
<gyro site="hand"/></sensor>
</mujoco>"""

SCENES = {"chain": CHAIN, "shoulders": SHOULDERS}


def load(text: str, **options):
    """The scene in jaxmor (with ``options``) and in MuJoCo, and the reference that reads MuJoCo in jaxmor's order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MujocoDifferenceWarning (self-collisions; no contact here matters)
        model = jaxmor.load_mjcf(text)
    if options:
        model = jaxmor.with_options(model, **options)
    mj_model = mujoco.MjModel.from_xml_string(text)
    return model, mj_model, MujocoReference(model, mj_model)


@pytest.fixture(scope="module", params=sorted(SCENES))
def scene(request):
    return request.param, *load(SCENES[request.param])


def ball_starts(model) -> list[tuple[int, int]]:
    """``(q index, u index)`` of every ball joint."""
    return [(s, v) for b, s, v in jaxmor.model.ball_joints(model)]


# --------------------------------------------------------------------------------------------------
# One state: the compiled model, mass matrix, bias, poses, passive forces, sensors.


def test_the_model_is_mujocos(scene):
    """Sizes (nq != nv), the default coordinates (MuJoCo's ``qpos0``: identity quaternions; the torso's from its
    ``euler``, to round-off), and each ball joint's armature, damping, friction loss, stiffness and cone limit on its
    three velocities, exact (read from the file)."""
    name, model, m, ref = scene
    assert (model.nq, model.nv) == (m.nq, m.nv) and model.nq != model.nv
    np.testing.assert_allclose(np.asarray(model.q_default), m.qpos0[ref.qpos], rtol=0, atol=1e-15)  # ulps: euler
    balls = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL]
    assert len(balls) == len(ball_starts(model)) >= 3
    for j in balls:
        v = model.body_v_start[model.body_joint_name.index(m.joint(j).name)]
        dofs = slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + 3)
        upper = m.jnt_range[j, 1] if m.jnt_limited[j] else np.inf
        for field, expected in (
            ("dof_armature", m.dof_armature[dofs]),
            ("dof_damping", m.dof_damping[dofs]),
            ("dof_friction", m.dof_frictionloss[dofs]),
            ("dof_stiffness", [m.jnt_stiffness[j]] * 3),
            ("dof_upper", [upper] * 3),
        ):
            np.testing.assert_array_equal(np.asarray(getattr(model, field))[v : v + 3], expected, err_msg=field)


def test_mass_matrix_bias_and_body_poses_equal_mujocos(scene):
    """``M`` (``mj_fullM``), the bias (``qfrc_bias``) and every body's world pose at random states: uniformly random
    unit quaternions on the ball and free joints, normal joints and velocities. Tolerance 1e-9 relative to
    ``max(1, max |reference|)``, as for the third-party models (``tests/test_mjcf_mujoco.py``): both engines run
    the same recursions in float64 (measured 3e-15 here); a wrong motion subspace, velocity frame or anchor gives
    1e-2 or more."""
    name, model, m, ref = scene
    mass = jax.jit(lambda q: jaxmor.mass_matrix(model, q))
    bias = jax.jit(lambda q, u: jaxmor.bias_force(model, q, u))
    poses = jax.jit(lambda q: jaxmor.forward_kinematics(model, q))
    rng = np.random.default_rng(11)
    for _ in range(5):
        q, u, m_ref, b_ref = ref.terms(*ref.random_state(rng))
        assert rel_err(mass(q), m_ref) < 1e-9, f"{name}: mass matrix"
        assert rel_err(bias(q, u), b_ref) < 1e-9, f"{name}: bias"
        links = poses(q)
        for body, (rotation, position) in ref.body_poses().items():
            k = model.link_names.index(body)
            assert np.abs(np.asarray(links.rotation[k]) - rotation).max() < 1e-9, f"{name}: rotation of {body}"
            assert np.abs(np.asarray(links.position[k]) - position).max() < 1e-9, f"{name}: position of {body}"


def test_the_acceleration_with_springs_and_dampers_is_mujocos():
    """The neck's spring (MuJoCo's ``-k r``, ``r`` the rotation vector of the joint's quaternion) and damper, through
    the forward dynamics, against MuJoCo's ``qacc`` at random states far from the cone limits (its constraint rows
    would add MuJoCo's soft impulses). Tolerance 1e-9 relative: the same dynamics in float64 (measured 5e-15); a
    spring in the wrong frame or of the wrong sign gives 1e-1."""
    from jaxmor.sim.sensors import acceleration

    model, m, ref = load(SHOULDERS)
    data = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    for _ in range(4):
        qpos, qvel = m.qpos0.copy(), rng.normal(size=m.nv)
        axis, angle = rng.normal(size=3), np.radians(rng.uniform(5.0, 35.0))  # within the neck's 40-degree cone
        qpos[7:11] = np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis / np.linalg.norm(axis)]
        data.qpos[:], data.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, data)
        assert data.nefc == 0  # no constraint row in MuJoCo either
        q, u, _, _ = ref.terms(qpos, qvel)
        state = jaxmor.init_state(model, q=q, u=u)
        expected = np.linalg.solve(ref.transform(q), data.qacc[ref.qvel])  # MuJoCo's free-joint rate, jaxmor's frame
        assert rel_err(acceleration(model, state), expected) < 1e-9


def test_ball_sensors_are_mujocos():
    """``ballquat`` (the normalized quaternion) and ``ballangvel`` (the body-frame angular velocity, here clamped by
    its cutoff) and a gyro on the hand, against MuJoCo's ``sensordata``; 1e-12 (copies and one rotation)."""
    model, m, ref = load(SHOULDERS)
    data = mujoco.MjData(m)
    rng = np.random.default_rng(5)
    qpos, qvel = ref.random_state(rng)
    qpos[m.jnt_qposadr[m.joint("shoulder_l").id] :][:4] *= 1.7  # not normalized: the sensor normalizes
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, data)
    q, u, _, _ = ref.terms(qpos, qvel)
    readings = jaxmor.read_sensors(model, jaxmor.init_state(model, q=q, u=u))
    ours = np.concatenate([np.asarray(v) for v in readings.values()])
    assert list(readings) == [m.sensor(i).name or f"sensor{i}" for i in range(m.nsensor)]
    np.testing.assert_allclose(ours, data.sensordata, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# Rollouts without contacts.


def _rollout(model, q, u, n_steps: int):
    """jaxmor's ``n_steps`` from ``(q, u)``: the trajectory (a State with a leading axis of ``n_steps``)."""
    run = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=n_steps)[1])
    return run(jaxmor.init_state(model, q=q, u=u))


def _mujoco_rollout(m, ref, qpos, qvel, n_steps: int):
    """MuJoCo's ``n_steps`` from ``(qpos, qvel)`` with its own integrator, in jaxmor's order and conventions."""
    data = mujoco.MjData(m)
    data.qpos[:], data.qvel[:] = qpos, qvel
    qs, us = [], []
    for _ in range(n_steps):
        mujoco.mj_step(m, data)
        q = np.array(data.qpos[ref.qpos])
        qs.append(q)
        us.append(np.linalg.solve(ref.transform(q), data.qvel[ref.qvel]))
    return np.array(qs), np.array(us)


def _mujoco_step_oracle(m, ref, qpos, qvel, mode: str, h: float):
    """One step from MuJoCo's ``(qpos, qvel)`` by the formula of ``Options.implicit_bias`` (fixed base, no forces
    but gravity) with MuJoCo's terms: ``M`` and ``b`` from MuJoCo, ``D = db/du`` by central differences of
    MuJoCo's bias (unit step: exact for a bias quadratic in ``u``), ``u' = u + (M + (h/2) D)^-1 h (-b)``
    (``"kahan"``) or ``u' = u + M^-1 (-h b - (h/2) D du0)``, ``du0 = -M^-1 h b`` (``"predicted"``: a fixed base
    has no locked-body block), then MuJoCo's own position update (``mj_integratePos``). Returns ``(q', u')`` in
    jaxmor's order."""
    q, u, mass, bias = ref.terms(qpos, qvel)
    jacobian = np.zeros((m.nv, m.nv))
    for i in range(m.nv):
        e = np.zeros(m.nv)
        e[ref.qvel[i]] = 1.0
        jacobian[:, i] = 0.5 * (ref.terms(qpos, qvel + e)[3] - ref.terms(qpos, qvel - e)[3])
    if mode == "kahan":
        du = np.linalg.solve(mass + 0.5 * h * jacobian, -h * bias)
    else:
        du = np.linalg.solve(mass, -h * bias - 0.5 * h * jacobian @ np.linalg.solve(mass, -h * bias))
    velocity = np.zeros(m.nv)
    velocity[ref.qvel] = u + du
    position = np.array(qpos, dtype=float)
    mujoco.mj_integratePos(m, position, velocity, h)
    return position[ref.qpos], u + du


@pytest.mark.parametrize("mode", checks.IMPLICIT_BIAS)
def test_every_step_of_a_second_is_the_integrators_formula_on_mujocos_terms(mode):
    """The chain (fixed base), 500 steps of 2 ms along MuJoCo's ``Euler`` trajectory from a random velocity: from
    each of its states one jaxmor step equals :func:`_mujoco_step_oracle` (the option's formula on MuJoCo's mass
    matrix, bias and bias derivative, then MuJoCo's quaternion update ``q' = q * exp(h u' / 2)`` of each ball
    joint, its velocity in the body frame). Tolerance 1e-9 in ``q`` and ``u`` (measured 1e-15 and 8e-13; the finite
    differences are exact, the rest round-off at speeds up to 13 rad/s). A ball velocity in the parent's frame or
    a left-multiplied update is off by ``h |u| ~ 1e-2`` at the first step; MuJoCo's own explicit step differs
    from the implicit term by ``(h/2) M^-1 D du`` (measured 3e-3 in ``u``), asserted seen."""
    model, m, ref = load(CHAIN, implicit_bias=mode)
    h = float(model.opt.timestep)
    rng = np.random.default_rng(0)
    qpos, qvel = m.qpos0.copy(), 0.5 * rng.normal(size=m.nv)
    data = mujoco.MjData(m)
    data.qpos[:], data.qvel[:] = qpos, qvel
    starts = []
    for _ in range(500):
        starts.append((data.qpos.copy(), data.qvel.copy()))
        mujoco.mj_step(m, data)
    step = jax.jit(jax.vmap(lambda q, u: jaxmor.step(model, jaxmor.init_state(model, q=q, u=u))))
    terms = [ref.terms(p, v)[:2] for p, v in starts]
    ours = step(jnp.asarray(np.array([t[0] for t in terms])), jnp.asarray(np.array([t[1] for t in terms])))
    expected = [_mujoco_step_oracle(m, ref, p, v, mode, h) for p, v in starts]
    expected_q, expected_u = np.array([e[0] for e in expected]), np.array([e[1] for e in expected])
    assert np.abs(np.asarray(ours.q) - expected_q).max() < 1e-9
    assert np.abs(np.asarray(ours.u) - expected_u).max() < 1e-9
    explicit_u = np.array([ref.terms(*starts[i + 1])[1] for i in range(499)])
    assert np.abs(expected_u[:-1] - explicit_u).max() > 1e-3, "the implicit term should show"
    for s, _ in ball_starts(model):  # unit quaternions (renormalized every step)
        assert np.abs(np.linalg.norm(np.asarray(ours.q)[:, s : s + 4], axis=1) - 1.0).max() < 1e-14
    assert np.abs(expected_u).max() > 10.0  # the chain whips


def test_the_default_step_converges_to_mujocos_rk4_at_first_order():
    """The upper body (free base, gravity, the neck's spring and damper; its ranges and contacts taken out, whose
    soft and hard models differ), 1 s from a random velocity, with jaxmor's default step (Kahan's implicit velocity
    term), against MuJoCo's ``RK4`` at 0.25 ms (its own error below 1e-9 here, fourth order). jaxmor's step is first
    order: halving the step must halve the error of the bodies' positions at the end (measured ratios 2.0 and 2.0;
    accepted 1.6 to 2.6), and the error is MuJoCo's own ``Euler`` step's at the same step (measured 1.054e-2 m
    against 1.056e-2 m at 2 ms; accepted within 10%). A wrong term of order 1 would not shrink with the step."""
    text = re.sub(r' range="[^"]*"', "", SHOULDERS).replace(
        '<option timestep="0.002"/>', '<option timestep="0.002"><flag contact="disable"/></option>'
    )
    model, m, ref = load(text)
    rng = np.random.default_rng(4)
    qpos, qvel = m.qpos0.copy(), rng.normal(size=m.nv)
    rk4 = mujoco.MjModel.from_xml_string(text.replace('timestep="0.002"', 'timestep="0.00025" integrator="RK4"'))
    exact_q, _ = _mujoco_rollout(rk4, ref, qpos, qvel, 4000)
    exact = np.asarray(jaxmor.forward_kinematics(model, exact_q[-1]).position)
    errors = []
    q0, u0, _, _ = ref.terms(qpos, qvel)
    for h in (0.004, 0.002, 0.001):
        trajectory = _rollout(jaxmor.with_options(model, timestep=h), q0, u0, round(1.0 / h))
        ends = np.asarray(jaxmor.forward_kinematics(model, trajectory.q[-1]).position)
        errors.append(np.abs(ends - exact).max())
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(1.6 < r < 2.6 for r in ratios), (errors, ratios)
    euler = mujoco.MjModel.from_xml_string(text.replace('timestep="0.002"', 'timestep="0.002" integrator="Euler"'))
    euler_q, _ = _mujoco_rollout(euler, ref, qpos, qvel, 500)
    euler_error = np.abs(np.asarray(jaxmor.forward_kinematics(model, euler_q[-1]).position) - exact).max()
    assert abs(errors[1] - euler_error) < 0.1 * euler_error, (errors[1], euler_error)


# --------------------------------------------------------------------------------------------------
# The cone limit and the friction loss (solver rows).

PENDULUM = """<mujoco><compiler angle="degree"/><option timestep="0.002" integrator="Euler"/><worldbody>
<body name="p" pos="0 0 1"><joint name="b" type="ball" range="0 40" {extra}/>
<geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.03" mass="1"/></body></worldbody></mujoco>"""


def test_a_planar_swing_stops_at_the_cone_as_a_hard_limit():
    """A pendulum swung about one axis rotates about that axis only, so the speculative row ``v <= (40 deg -
    angle)/h`` (its Jacobian the rotation axis) lands it exactly on the cone: the angle never exceeds 40 degrees
    by more than round-off (1e-12; measured 0), it rests there while the impulse holds it (inelastic), then falls
    back. Until the limit acts the swing is MuJoCo's Euler step for step (1e-12, round-off: a swing about a
    principal axis has no velocity-dependent force, so the implicit term is zero); after it MuJoCo's soft limit
    lets it sink past 40 degrees (a difference of the contact models, not checked here)."""
    model, m, ref = load(PENDULUM.format(extra=""))
    qpos, qvel = m.qpos0.copy(), np.array([6.0, 0.0, 0.0])  # 4 rad/s would turn back at 39.6 degrees
    trajectory = _rollout(model, qpos, qvel, 500)
    ours_q = np.asarray(trajectory.q)
    theirs_q, _ = _mujoco_rollout(m, ref, qpos, qvel, 500)
    angle = np.asarray(jax.vmap(lambda q: quat_angle_axis(q)[0])(ours_q))
    limit = np.radians(40.0)
    assert angle.max() <= limit + 1e-12 and angle.max() > limit - 1e-9
    first = int(np.argmax(angle > limit - 1e-9))  # the step that lands on the cone
    assert np.abs(ours_q[:first] - theirs_q[:first]).max() < 1e-12
    assert angle[-1] < limit - 0.1  # it fell back
    # The cone's impulse (along the rotation axis, against the swing) is kept at the joint's first velocity.
    impulse = np.asarray(trajectory.limit_impulse)
    assert np.all(impulse[: first - 1] == 0.0) and impulse[first, 0] < 0.0 and np.all(impulse[:, 1:] == 0.0)


def test_the_shoulders_stay_in_their_cones():
    """The upper body in free fall, its arms thrown outward and twisted: each shoulder's rotation angle stays within
    its 100-degree cone but for the second-order term of the quaternion update across the cone (``O(h^2 |w|^2)``
    per step, which the position pass removes): accepted 1 degree over (measured 0.2); without the limit rows
    the arms swing to 160 degrees."""
    model, m, ref = load(SHOULDERS)
    qpos, qvel = m.qpos0.copy(), np.zeros(m.nv)
    for joint, spin in (("shoulder_r", (-6.0, 1.0, 2.0)), ("shoulder_l", (7.0, -1.0, 1.5))):
        dof = m.jnt_dofadr[m.joint(joint).id]
        qvel[dof : dof + 3] = spin
    q, u, _, _ = ref.terms(qpos, qvel)
    ours_q = np.asarray(_rollout(model, q, u, 400).q)
    free = np.asarray(_rollout(model.replace(dof_upper=jnp.full(model.nv, jnp.inf)), q, u, 400).q)
    for joint in ("shoulder_r", "shoulder_l"):
        s = model.body_q_start[model.body_joint_name.index(joint)]
        angle = np.degrees(np.asarray(jax.vmap(lambda x, s=s: quat_angle_axis(x[s : s + 4])[0])(ours_q)))
        unlimited = np.degrees(np.asarray(jax.vmap(lambda x, s=s: quat_angle_axis(x[s : s + 4])[0])(free)))
        assert 99.0 < angle.max() < 101.0, (joint, angle.max())
        assert unlimited.max() > 120.0, (joint, unlimited.max())


def test_friction_loss_stops_a_spin_at_coulombs_rate():
    """A sphere centred on its ball joint (inertia ``I`` about every axis, no gravity torque) spinning about an
    oblique axis, with ``frictionloss`` ``f``: MuJoCo's three friction rows act on the body-frame velocities one by
    one, so each component slows at ``f / I`` until it stops, then sticks: ``|u_k(t)| = max(|u_k(0)| - f t / I, 0)``,
    exact per step for hard Coulomb friction (``u_{n+1} = u_n - h f / I`` on each moving component). Tolerance
    1e-12 (round-off over 400 steps; the stopping step is exact)."""
    text = """<mujoco><option timestep="0.002" gravity="0 0 0"/><worldbody><body name="s" pos="0 0 1">
    <joint name="b" type="ball" frictionloss="0.02"/><geom type="sphere" size="0.1" mass="2"/></body></worldbody>
    </mujoco>"""
    model, m, _ = load(text)
    inertia = 0.4 * 2.0 * 0.1**2
    u0 = np.array([1.0, -0.4, 0.1])
    us = np.asarray(_rollout(model, np.array([1.0, 0, 0, 0]), u0, 400).u)
    t = 0.002 * np.arange(1, 401)[:, None]
    expected = np.sign(u0) * np.maximum(np.abs(u0) - 0.02 * t / inertia, 0.0)
    assert np.abs(us - expected).max() < 1e-12
    assert np.all(us[-1] == 0.0)  # stuck


# --------------------------------------------------------------------------------------------------
# Differentiation, keyframes, refusals.


@pytest.mark.slow  # 1.5-3 minutes on 2 cores (gradients through the step: test_reliability, test_step)
def test_gradients_are_finite_under_jit_vmap_and_grad():
    """The hands' height after 40 steps, differentiated with respect to the initial velocities and the bodies'
    masses, in two worlds at once: one at the identity quaternions (where the rotation axis of every ball joint,
    and so its limit row, is undefined) and one thrown against the shoulder cones. Every derivative is finite, and
    in the first world (no limit active) the derivative along a random direction equals central differences to
    1e-5 relative (measured 2e-9; the step is smooth there)."""
    model, m, ref = load(SHOULDERS)
    hand = model.link_names.index("hand_r")

    def height(mass, u0, q0):
        moved = model.replace(body_mass=mass)
        final, _ = jaxmor.rollout(moved, jaxmor.init_state(moved, q=q0, u=u0), n_steps=40)
        return jaxmor.forward_kinematics(moved, final.q).position[hand, 2]

    q0 = jnp.asarray(np.stack([model.q_default] * 2))
    u0 = np.zeros((2, model.nv))
    u0[1, 9:12] = (-12.0, 2.0, 4.0)  # the right shoulder into its cone
    u0 = jnp.asarray(u0)
    grad = jax.jit(jax.vmap(jax.grad(height, argnums=(0, 1)), in_axes=(None, 0, 0)))
    d_mass, d_u = grad(model.body_mass, u0, q0)
    assert np.all(np.isfinite(d_mass)) and np.all(np.isfinite(d_u))
    assert np.abs(d_u).max() > 0.0 and np.abs(d_mass).max() > 0.0
    direction = jnp.asarray(np.random.default_rng(8).normal(size=model.nv))
    eps = 1e-6
    f = jax.jit(lambda u: height(model.body_mass, u, q0[0]))
    numeric = (f(u0[0] + eps * direction) - f(u0[0] - eps * direction)) / (2 * eps)
    assert abs(float(d_u[0] @ direction) - float(numeric)) < 1e-5 * abs(float(numeric))


def test_a_keyframe_with_a_ball_quaternion_is_mujocos():
    """``<key qpos qvel>``: a ball joint's four coordinates (normalized: MuJoCo's kinematics normalizes them) and
    its three body-frame velocities taken as they are; exact to round-off (1e-15)."""
    model, m, ref = load(CHAIN)
    data = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, data, 0)
    state = jaxmor.set_keyframe(model, jaxmor.init_state(model), "bent")
    expected = np.array(data.qpos[ref.qpos])
    for s, _ in ball_starts(model):
        expected[s : s + 4] /= np.linalg.norm(expected[s : s + 4])
    np.testing.assert_allclose(np.asarray(state.q), expected, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(np.asarray(state.u), data.qvel[ref.qvel])


def test_what_a_ball_joint_cannot_have_is_refused():
    """A range whose lower bound is not 0 (MuJoCo refuses it too), an actuator or a ``jointpos`` sensor on a ball
    joint, a ball sensor on a hinge: ModelErrors naming the line; PD gains on a ball joint's velocities: an
    ArgumentError naming the joint."""
    body = '<body name="c"><joint name="c" type="ball" {joint}/><geom size=".1"/>{hinge}</body>'
    hinge = '<body name="d" pos="0 0 -.3"><joint name="h"/><geom size=".1"/></body>'

    def text(joint="", after=""):
        return f"<mujoco><worldbody>{body.format(joint=joint, hinge=hinge)}</worldbody>{after}</mujoco>"

    cases = {
        "a ball joint's range is '0 angle'": text('range="5 60"'),
        "actuators on a ball joint are not supported": text(after='<actuator><motor joint="c"/></actuator>'),
        "needs a hinge or slide joint, 'c' is ball": text(after='<sensor><jointpos joint="c"/></sensor>'),
        "needs a ball joint, 'h' is hinge": text(after='<sensor><ballquat joint="h"/></sensor>'),
    }
    for reason, xml in cases.items():
        with pytest.raises(ModelError, match=reason) as info:
            jaxmor.load_mjcf(xml)
        assert info.value.line == 1
    model = jaxmor.load_mjcf(text())
    state = jaxmor.init_state(model)
    assert model.nv == 4 and model.joint_u == (3,)
    jaxmor.set_pd_gains(model, state, np.eye(4)[3], np.zeros(4))  # the hinge's: allowed
    with pytest.raises(ArgumentError, match="ball joint 'c'"):
        jaxmor.set_pd_gains(model, state, np.eye(4)[1], np.zeros(4))
