"""Fixed tendons (MJCF ``<tendon><fixed>``) against MuJoCo 4.0, float64.

Scenes: ``tests/data/tendon/every_feature.xml`` (written here: a tendon with a range, friction loss, a spring with a
dead band, damping and armature pulled by a position servo; a motor on a tendon; two tendon equalities, one with a
second tendon and a quadratic polynomial; every tendon sensor) and the dm_control suite's ``point_mass`` (its two
actuators pull tendons), ``manipulator`` and ``stacker`` (a grasp tendon pulled by a motor, a tendon equality coupling
the fingers; free objects).

* **Kinematics and forces** at random states: tendon lengths and Jacobians (MuJoCo's ``ten_length``, ``ten_J``), the
  mass matrix with the tendon armature, the actuators' generalized force (``qfrc_actuator``), the tendon springs'
  and dampers' (``qfrc_passive``), the equality rows (``efc_pos``, ``efc_J``) and the sensors (``sensordata``). The
  same few products in both engines: measured 0 to 1e-16; tolerance 1e-12 (1e-9 relative for M and the bias, as
  ``tests/test_mjcf_mujoco.py``).
* **Motion**: 1 s rollouts against ``mj_step``. MuJoCo's limit, friction and equality rows are soft (the scene sets
  ``solref`` at two time steps) and its integrator is Euler, jaxmor's semi-implicit with the tendon spring implicit
  and its damping trapezoidal: both first order, so trajectories differ by O(h), shown by the difference halving
  with the step (ratios asserted 1.6-2.4) and bounded by 5e-3 at h = 1 ms. Constraint satisfaction: the tendon stays
  within its range (within 1e-3, the position pass's allowance and one step's travel) and the equalities' residuals
  below 1e-4.
* Gradients through tendon parameters match central differences; batches, checkpoints and combined scenes keep the
  tendons; errors name the file and line.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import mjcf_model

import jaxmor
from jaxmor.errors import ModelError
from jaxmor.sim.equality import equality_rows
from jaxmor.sim.kinematics import kinematics
from jaxmor.sim.tendons import spring_force, tendon_jacobian, tendon_lengths

mujoco = pytest.importorskip("mujoco")
compare = pytest.importorskip("jaxmor.tools.compare")

SCENE = Path(__file__).parent / "data" / "tendon" / "every_feature.xml"
SUITE = ["point_mass", "manipulator", "stacker"]


def _path(name: str) -> Path:
    if name == "every_feature":
        return SCENE
    path = mjcf_model(name)
    if path is None:
        pytest.skip(f"dm_control's {name} is not installed (the test extra's dm-control)")
    return path


def _pair(path) -> compare.Pair:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MuJoCo's soft constraints; dm_control's unread sensors
        model = jaxmor.load_mjcf(path, meshes="ignore")
    return compare.Pair(model, mujoco.MjModel.from_xml_path(str(path)))


def _dense(m, values, rownnz, rowadr, colind, rows: int) -> np.ndarray:
    """A MuJoCo matrix (``rows`` x nv) from its sparse or dense storage."""
    if values.size == rows * m.nv:
        return values.reshape(rows, m.nv)
    out = np.zeros((rows, m.nv))
    mujoco.mju_sparse2dense(out, values, rownnz, rowadr, colind)
    return out


def _random_state(pair, rng) -> tuple[mujoco.MjData, np.ndarray, np.ndarray]:
    """MuJoCo's data at a random position, velocity and control (after ``mj_forward``) and jaxmor's ``q``, ``u``."""
    m = pair.mj_model
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0 + 0.4 * rng.normal(size=m.nq)
    for j in np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
        a = m.jnt_qposadr[j]
        d.qpos[a + 3 : a + 7] /= np.linalg.norm(d.qpos[a + 3 : a + 7])
    d.qvel[:] = rng.normal(size=m.nv)
    d.ctrl[:] = rng.uniform(-1, 1, size=m.nu)
    mujoco.mj_forward(m, d)
    q, u = pair.from_mujoco(d.qpos, d.qvel)
    return d, q, u


def _to_jaxmor_force(pair, q, force) -> np.ndarray:
    """A generalized force in MuJoCo's velocity coordinates, in jaxmor's (the transpose of the velocity map)."""
    return pair.velocity_map(q).T @ force[pair.qvel_index]


@pytest.fixture(scope="module", params=["every_feature", *SUITE])
def pair(request):
    return _pair(_path(request.param))


def test_lengths_jacobians_and_forces_equal_mujocos(pair):
    m, model = pair.mj_model, pair.model
    assert model.tendons.nt == m.ntendon > 0 and model.nu == m.nu
    rng = np.random.default_rng(3)
    for _ in range(3):
        d, q, u = _random_state(pair, rng)
        q, u = jnp.asarray(q), jnp.asarray(u)
        ten_j = _dense(m, d.ten_J, m.ten_J_rownnz, m.ten_J_rowadr, m.ten_J_colind, m.ntendon)
        np.testing.assert_allclose(tendon_lengths(model, q), d.ten_length, rtol=0, atol=1e-12)
        jac = np.asarray(tendon_jacobian(model, q.dtype))
        np.testing.assert_allclose(jac, ten_j[:, pair.qvel_index] @ pair.velocity_map(q), rtol=0, atol=1e-12)
        state = jaxmor.init_state(model).replace(q=q, u=u, ctrl=jnp.asarray(d.ctrl))
        actuated = jaxmor.affine_joint_force(model, state)
        np.testing.assert_allclose(actuated, _to_jaxmor_force(pair, q, d.qfrc_actuator), rtol=0, atol=1e-12)
        # The tendons' passive force, J^T (spring - b dL/dt), plus the joints' own springs and damping (the files'
        # other passive forces, on hinges and slides), against MuJoCo's qfrc_passive.
        spring, _ = spring_force(model, tendon_lengths(model, q))
        tendon = jac.T @ (spring - model.tendons.damping * (jac @ u))
        q_dof = jnp.zeros(model.nv).at[np.array(model.joint_u)].set(q[np.array(model.joint_q)])
        joints = model.dof_stiffness * (model.dof_springref - q_dof) - model.dof_damping * u
        np.testing.assert_allclose(tendon + joints, _to_jaxmor_force(pair, q, d.qfrc_passive), rtol=0, atol=1e-12)


def test_mass_matrix_with_the_tendon_armature_and_bias_equal_mujocos(pair):
    rng = np.random.default_rng(4)
    for _ in range(2):
        qpos = pair.mj_model.qpos0 + 0.3 * rng.normal(size=pair.mj_model.nq)
        for j in np.flatnonzero(pair.mj_model.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
            a = pair.mj_model.jnt_qposadr[j]
            qpos[a + 3 : a + 7] /= np.linalg.norm(qpos[a + 3 : a + 7])
        report = compare.dynamics(pair, qpos, rng.normal(size=pair.mj_model.nv))
        for quantity in ("mass_matrix", "bias"):
            assert report[quantity].max_abs <= 1e-9 * max(1.0, report[quantity].scale), str(report)


def test_the_armature_enters_the_mass_matrix_as_j_transpose_j():
    model = _pair(SCENE).model
    q = jnp.asarray(np.random.default_rng(5).normal(size=model.nq))
    bare = model.replace(tendons=model.tendons.replace(armature=model.tendons.armature * 0))
    difference = jaxmor.mass_matrix(model, q) - jaxmor.mass_matrix(bare, q)
    row = np.zeros(model.nv)
    row[[model.joint_u[model.joint_names.index(j)] for j in ("shoulder", "elbow")]] = (1.0, -0.5)
    np.testing.assert_allclose(difference, 0.02 * np.outer(row, row), rtol=0, atol=1e-14)


def _mujoco_equality_rows(m, d) -> tuple[np.ndarray, np.ndarray]:
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    jac = _dense(m, d.efc_J, d.efc_J_rownnz, d.efc_J_rowadr, d.efc_J_colind, d.nefc)
    return d.efc_pos[rows], jac[rows]


@pytest.mark.parametrize("name", ["every_feature", "manipulator"])
def test_tendon_equality_rows_equal_mujocos(name):
    pair = _pair(_path(name))
    model = pair.model
    assert model.equality.tendon and model.equality.rows == pair.mj_model.neq
    rows = jax.jit(lambda q: equality_rows(model, kinematics(model, q).body, q))
    rng = np.random.default_rng(6)
    for _ in range(3):
        d, q, _ = _random_state(pair, rng)
        want_e, want_j = _mujoco_equality_rows(pair.mj_model, d)
        jac, residual = rows(jnp.asarray(q))
        assert np.abs(want_e).max() > 0.05  # the random states violate the couplings
        np.testing.assert_allclose(residual, want_e, rtol=0, atol=1e-12)
        np.testing.assert_allclose(jac, want_j[:, pair.qvel_index] @ pair.velocity_map(q), rtol=0, atol=1e-12)


def test_every_tendon_sensor_equals_mujocos_sensordata():
    pair = _pair(SCENE)
    m, model = pair.mj_model, pair.model
    assert set(model.sensors.kinds) >= {"tendonpos", "tendonvel", "tendonactuatorfrc", "actuatorpos"}
    read = jax.jit(lambda s: jaxmor.read_sensors(model, s))
    rng = np.random.default_rng(7)
    for _ in range(3):
        d, q, u = _random_state(pair, rng)
        state = jaxmor.init_state(model).replace(q=jnp.asarray(q), u=jnp.asarray(u), ctrl=jnp.asarray(d.ctrl))
        readings = read(state)
        for i, name in enumerate(model.sensors.names):
            adr, dim = m.sensor_adr[i], m.sensor_dim[i]
            np.testing.assert_allclose(readings[name], d.sensordata[adr : adr + dim], rtol=0, atol=1e-12, err_msg=name)


def _rollout(path, ctrl, seconds=1.0):
    """(jaxmor's q trajectory, MuJoCo's, the model) over ``seconds`` at the constant control ``ctrl``."""
    pair = _pair(path)
    m, model = pair.mj_model, pair.model
    d = mujoco.MjData(m)
    d.ctrl[:] = ctrl
    state = jaxmor.init_state(model).replace(ctrl=jnp.asarray(ctrl, float))
    n = int(round(seconds / m.opt.timestep))
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=n))(state)
    assert not bool(final.nonfinite)
    theirs = []
    for _ in range(n):
        mujoco.mj_step(m, d)
        theirs.append(pair.from_mujoco(d.qpos, d.qvel)[0])
    return np.asarray(traj.q), np.array(theirs), model


def _with_step(tmp_path, factor: int) -> Path:
    """The scene with its time step and soft-constraint time constants divided by ``factor``."""
    text = SCENE.read_text().replace('timestep="0.001"', f'timestep="{0.001 / factor}"')
    text = text.replace('"0.002 1"', f'"{0.002 / factor} 1"')
    path = tmp_path / f"tendons_{factor}.xml"
    path.write_text(text)
    return path


CTRL = np.array([0.8, 0.3, -0.5])  # the arm's servo target (past the tendon's range), the rail, the squeeze


def test_the_scene_moves_as_in_mujoco_converging_with_the_step(tmp_path):
    ours, theirs, model = _rollout(SCENE, CTRL)
    difference = np.abs(ours - theirs).max()
    assert np.ptp(ours, axis=0).min() > 0.01 and difference < 5e-3, difference  # every joint moves
    # The constraints hold: the tendon within its range, the equalities' residuals small.
    lengths = jax.vmap(lambda q: tendon_lengths(model, q))(jnp.asarray(ours))
    arm = model.tendons.names.index("arm")
    assert float(lengths[:, arm].max()) > 0.85  # the servo pulls the tendon to its upper limit, 0.9 ...
    assert float(lengths[:, arm].max()) < 0.9 + 1e-3  # ... and it holds there
    residual = jax.vmap(lambda q: equality_rows(model, kinematics(model, q).body, q)[1])(jnp.asarray(ours))
    assert float(jnp.abs(residual).max()) < 1e-4
    ours2, theirs2, _ = _rollout(_with_step(tmp_path, 2), CTRL)
    half = np.abs(ours2 - theirs2).max()
    assert 1.6 < difference / half < 2.4, (difference, half)


def test_the_point_mass_moves_as_in_mujoco():
    """dm_control's point_mass, pushed by its two tendon motors (no contact within 1 s): O(h) apart."""
    ours, theirs, _ = _rollout(_path("point_mass"), np.array([0.7, -0.4]))
    assert np.ptp(ours, axis=0).min() > 0.02 and np.abs(ours - theirs).max() < 5e-3, np.abs(ours - theirs).max()


def test_tendon_damping_dissipates_and_the_spring_restores():
    """Without actuators, gravity and the carriage's spring, the arm's tendon spring pulls its length from 1.1 back
    into its dead band [0.1, 0.3] (it stops within it, in no equilibrium outside it) and the damping and friction
    loss stop it (the arm keeps turning in the tendon's null space, which they do not touch)."""
    model = jaxmor.with_affine_actuators(_pair(SCENE).model, ())
    undamped = model.tendons.names.index("carriage")  # its spring would oscillate forever
    tendons = model.tendons.replace(stiffness=model.tendons.stiffness.at[undamped].set(0.0))
    model = model.replace(opt=model.opt.replace(gravity=jnp.zeros(3)), tendons=tendons)
    state = jaxmor.init_state(model, q=jnp.array([0.8, -0.6, 0.0, 0.0, 0.0]))
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=4000))(state)
    arm = model.tendons.names.index("arm")
    lengths = jax.vmap(lambda q: tendon_lengths(model, q))(traj.q)[:, arm]
    assert float(lengths[0]) > 1.0 and 0.1 - 1e-3 < float(lengths[-1]) < 0.3 + 1e-3, float(lengths[-1])
    rate = tendon_jacobian(model, final.u.dtype)[arm] @ final.u  # the arm may still turn at constant length
    assert abs(float(rate)) < 1e-6


@pytest.mark.slow
def test_the_gradient_through_tendon_parameters_matches_central_differences():
    """d(shoulder's final angle) / d(the arm tendon's stiffness and coefficient), w.r.t. the whole Model. FD step
    1e-6 on values of order 1: truncation ~1e-12, round-off ~1e-10; tolerance 1e-5 relative."""
    model = _pair(SCENE).model
    state = jaxmor.init_state(model, q=jnp.array([0.5, -0.3, 0.0, 0.0, 0.0]))
    model = model.replace(opt=model.opt.replace(gravity=jnp.zeros(3)))

    def final(m):
        return jaxmor.rollout(m, state, n_steps=100)[0].q[0]

    grad = jax.jit(jax.grad(final))(model)
    run = jax.jit(final)  # compiled once for the four differences
    for field, i in (("stiffness", 0), ("coefficient", 1)):
        leaf = getattr(model.tendons, field)

        def at(x, field=field, i=i, leaf=leaf):
            return run(model.replace(tendons=model.tendons.replace(**{field: leaf.at[i].set(x)})))

        eps = 1e-6
        fd = (at(leaf[i] + eps) - at(leaf[i] - eps)) / (2 * eps)
        assert abs(float(fd)) > 1e-4, field  # the parameter matters
        np.testing.assert_allclose(float(getattr(grad.tendons, field)[i]), float(fd), rtol=1e-5, err_msg=field)


@pytest.mark.slow
def test_worlds_batched_over_the_tendon_stiffness():
    model = _pair(SCENE).model

    def with_stiffness(k):
        return model.replace(tendons=model.tendons.replace(stiffness=model.tendons.stiffness.at[0].set(k)))

    state = jaxmor.init_state(model, q=jnp.array([0.8, -0.6, 0.0, 0.0, 0.0]))
    models = jax.vmap(with_stiffness)(jnp.array([0.0, 3.0, 30.0]))
    final = jax.jit(jax.vmap(lambda m: jaxmor.rollout(m, state, n_steps=300)[0]))(models)
    one = jaxmor.rollout(with_stiffness(30.0), state, n_steps=300)[0]
    np.testing.assert_allclose(final.q[2], one.q, rtol=0, atol=1e-10)
    assert float(jnp.abs(final.q[0] - final.q[2]).max()) > 1e-3


def test_an_affine_actuator_on_a_tendon_through_the_api():
    model = _pair(SCENE).model
    pull = jaxmor.AffineActuatorDefinition("pull", "", gear=2.0, tendon="grasp")
    driven = jaxmor.with_affine_actuators(model, [pull])
    assert driven.affine.tendon == (1,) and driven.affine.v_index == (-1,)
    state = jaxmor.init_state(driven).replace(ctrl=jnp.array([0.5]))
    row = np.asarray(tendon_jacobian(driven, state.u.dtype))[1]
    np.testing.assert_allclose(jaxmor.affine_joint_force(driven, state), 2.0 * 0.5 * row, rtol=0, atol=1e-15)
    with pytest.raises(jaxmor.ArgumentError, match="pulls a tendon"):
        jaxmor.affine_generalized_force(driven.affine, state.ctrl, state.q, state.u)
    with pytest.raises(jaxmor.ArgumentError, match="not both"):
        jaxmor.AffineActuatorDefinition("x", "left", tendon="grasp")
    with pytest.raises(jaxmor.ArgumentError, match="unknown tendon 'grip'"):
        jaxmor.with_affine_actuators(model, [jaxmor.AffineActuatorDefinition("x", "", tendon="grip")])


def test_tendon_constants_are_randomized_per_world():
    model = _pair(SCENE).model
    spec = {"tendon.damping": jaxmor.uniform(0.1, 0.2, select=["arm", "carriage"])}
    models, axes = jaxmor.randomize(model, jax.random.key(0), 16, spec)
    drawn = np.asarray(models.tendons.damping)
    assert drawn.shape == (16, 4) and axes.tendons.damping == 0
    assert drawn[:, [0, 3]].min() >= 0.1 and drawn[:, [0, 3]].max() <= 0.2 and len(np.unique(drawn[:, 0])) == 16
    np.testing.assert_array_equal(drawn[:, [1, 2]], 0.0)  # not selected: the model's
    with pytest.raises(jaxmor.ArgumentError, match="non-negative|negative"):
        jaxmor.randomize(model, jax.random.key(0), 4, {"tendon.stiffness": jaxmor.uniform(-2.0, -1.0)})


@pytest.mark.slow
def test_a_checkpoint_and_a_combined_scene_keep_the_tendons(tmp_path):
    model = _pair(SCENE).model
    state = jaxmor.init_state(model).replace(ctrl=jnp.asarray(CTRL))
    alone = jaxmor.rollout(model, state, n_steps=100)[0]
    path = tmp_path / "tendons.jaxmor"
    jaxmor.save_checkpoint(path, model, state)
    loaded, loaded_state = jaxmor.load_checkpoint(path)
    assert loaded.tendons.names == model.tendons.names and loaded.equality.tendon == model.equality.tendon
    np.testing.assert_allclose(jaxmor.rollout(loaded, loaded_state, n_steps=100)[0].q, alone.q, rtol=0, atol=1e-12)
    combined = jaxmor.combine(model, model, prefix="b/", position=(2.0, 0.0, 0.0))
    assert combined.tendons.nt == 2 * model.tendons.nt and combined.affine.tendon == (0, -1, 1, 4, -1, 5)
    assert combined.equality.tendon == ((2, -1), (1, 3), (6, -1), (5, 7))
    both = jaxmor.init_state(combined).replace(ctrl=jnp.concatenate([jnp.asarray(CTRL)] * 2))
    together = jaxmor.rollout(combined, both, n_steps=100)[0]
    np.testing.assert_allclose(together.q[: model.nq], alone.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(together.q[model.nq :], alone.q, rtol=0, atol=1e-12)


def _scene_with(tmp_path, old: str, new: str) -> Path:
    text = SCENE.read_text()
    assert old in text
    path = tmp_path / "bad.xml"
    path.write_text(text.replace(old, new))
    return path


BAD = {
    "spatial tendon": (
        '<fixed name="grasp">',
        '<spatial name="s"><site site="x"/></spatial>\n<fixed name="grasp">',
        "spatial tendons are not supported",
    ),
    "unknown joint": (
        '<joint joint="elbow" coef="-0.5"/>',
        '<joint joint="wrist" coef="-0.5"/>',
        "unknown joint 'wrist'",
    ),
    "no coef": ('<joint joint="elbow" coef="-0.5"/>', '<joint joint="elbow"/>', "needs coef="),
    "no joints": (
        '<fixed name="centre">\n      <joint joint="left" coef="0.5"/>\n      <joint joint="right" coef="0.5"/>',
        '<fixed name="centre">',
        "has no joints",
    ),
    "negative stiffness": ('stiffness="20"', 'stiffness="-20"', "stiffness must be finite and not negative"),
    "actuator on an unknown tendon": ('tendon="grasp" gear="3"', 'tendon="grip" gear="3"', "unknown tendon 'grip'"),
    "dcmotor on a tendon": (
        '<motor name="squeeze" tendon="grasp" gear="3" ctrlrange="-1 1"/>',
        '<dcmotor name="squeeze" tendon="grasp" resistance="1" motorconst="0.1"/>',
        "a dcmotor on a tendon is not supported",
    ),
    "tendon actuatorfrcrange": (
        '<fixed name="grasp">',
        '<fixed name="grasp" actuatorfrcrange="-1 1">',
        "actuatorfrcrange is not supported",
    ),
    "unknown equality tendon": ('tendon2="carriage"', 'tendon2="cart"', "no tendon 'cart'"),
    "unknown sensor tendon": (
        '<tendonpos name="grasp_length" tendon="grasp"/>',
        '<tendonpos name="grasp_length" tendon="grip"/>',
        "unknown tendon 'grip'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_tendon_is_refused_naming_the_file_and_line(tmp_path, case):
    old, new, reason = BAD[case]
    path = _scene_with(tmp_path, old, new)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if new.splitlines()[0] in text)
    with pytest.raises(ModelError, match=reason) as err:
        jaxmor.load_mjcf(path)
    assert f"bad.xml:{line}" in str(err.value), str(err.value)
