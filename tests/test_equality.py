"""Equality constraints (MJCF ``<equality>``: connect, weld, joint) against MuJoCo 4.0, float64.

* **Rows** (``tests/data/equality/every_kind.xml``: a connect by bodies and by sites, welds to the world, to a
  merged body with ``torquescale``, with ``relpose`` and by sites, joint couplings with one and two joints): at
  random configurations each constraint's residual and Jacobian equal MuJoCo's ``efc_pos`` and ``efc_J`` (its
  free-joint angular velocity mapped to jaxmor's world frame). Both are a few products of the same poses:
  round-off ~1e-16, measured 2.2e-16; tolerance 1e-12.
* **Motion** (``four_bar.xml``, ``gripper.xml``, ``weld.xml``: a closed four-bar linkage falling from rest, a
  gripper whose fingers a nonlinear polynomial couples, a box welded to a swinging arm): 1 s rollouts against
  ``mj_step``. MuJoCo's equality is soft; the files make it nearly hard (``solref`` at two time steps,
  ``solimp`` 0.9999) and MuJoCo's integrator is Euler, jaxmor's semi-implicit: both first order, so the two
  trajectories differ by O(h). Shown by the four-bar's difference halving with the step (4.9e-3, 2.5e-3, 1.3e-3
  rad at h = 1, 0.5, 0.25 ms: ratios 1.9-2.0, asserted 1.6-2.4), and bounded by 1e-2 (four-bar, whose crank
  whips through 3 rad) and 2e-3 (gripper, weld) at h = 1 ms. jaxmor's residuals stay below 1e-4 m (the rows'
  Baumgarte target removes 20% of a violation per step).
* Mass matrix and bias of the equality scenes equal MuJoCo's (``jaxmor.tools.compare.dynamics``, 1e-9):
  constraints add rows, not inertia.
* An inactive constraint (``active="false"``, ``<flag equality="disable">``) changes nothing; gradients
  through the rows match central differences; errors name the file and line.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.errors import ModelError
from jaxmor.sim.equality import equality_rows
from jaxmor.sim.kinematics import kinematics

mujoco = pytest.importorskip("mujoco")
compare = pytest.importorskip("jaxmor.tools.compare")

DATA = Path(__file__).parent / "data" / "equality"


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(path)


def _pair(path) -> compare.Pair:
    return compare.Pair(_load(path), mujoco.MjModel.from_xml_path(str(path)))


def _random_qpos(m, rng, scale=0.3) -> np.ndarray:
    qpos = m.qpos0 + scale * rng.normal(size=m.nq)
    for j in np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
        a = m.jnt_qposadr[j]
        qpos[a + 3 : a + 7] /= np.linalg.norm(qpos[a + 3 : a + 7])
    return qpos


def _mujoco_rows(m, d) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's equality rows (efc_pos, efc_J) in jaxmor's order: connects and welds, then joint couplings."""
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    sizes = [{0: 3, 1: 6 if m.eq_data[i][10] > 0 else 3, 2: 1}[int(kind)] for i, kind in enumerate(m.eq_type)]
    starts = np.cumsum([0, *sizes])
    order = [i for i, k in enumerate(m.eq_type) if k != 2] + [i for i, k in enumerate(m.eq_type) if k == 2]
    perm = np.concatenate([np.arange(starts[i], starts[i] + sizes[i]) for i in order])
    return d.efc_pos[rows][perm], d.efc_J.reshape(d.nefc, m.nv)[rows][perm]


def test_rows_equal_mujocos_residuals_and_jacobians():
    pair = _pair(DATA / "every_kind.xml")
    m, model = pair.mj_model, pair.model
    d = mujoco.MjData(m)
    assert model.equality.rows == 32  # 2 connects x 3, welds 6 + 6 + 6 + 6, 2 joint couplings
    rows = jax.jit(lambda q: equality_rows(model, kinematics(model, q).body, q))
    rng = np.random.default_rng(0)
    for _ in range(4):
        d.qpos[:] = _random_qpos(m, rng)
        mujoco.mj_forward(m, d)
        want_e, want_j = _mujoco_rows(m, d)
        q, _ = pair.from_mujoco(d.qpos, d.qvel)
        jac, residual = (np.asarray(x) for x in rows(jnp.asarray(q)))
        assert np.abs(want_e).max() > 0.05  # the random configurations violate every kind
        np.testing.assert_allclose(residual, want_e, rtol=0, atol=1e-12)
        np.testing.assert_allclose(jac, want_j[:, pair.qvel_index] @ pair.velocity_map(q), rtol=0, atol=1e-12)


def _rollout(path, seconds=1.0, key=None):
    """(jaxmor's q trajectory, MuJoCo's in jaxmor's order, jaxmor's largest |residual|) over ``seconds``."""
    pair = _pair(path)
    m, model = pair.mj_model, pair.model
    d = mujoco.MjData(m)
    state = jaxmor.init_state(model)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, key))
        state = jaxmor.set_keyframe(model, state, key)
    n = int(round(seconds / m.opt.timestep))
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=n))(state)
    assert not bool(final.nonfinite)
    residual = jax.vmap(lambda q: equality_rows(model, kinematics(model, q).body, q)[1])(traj.q)
    theirs = []
    for _ in range(n):
        mujoco.mj_step(m, d)
        theirs.append(pair.from_mujoco(d.qpos, d.qvel)[0])
    return np.asarray(traj.q), np.array(theirs), float(jnp.max(jnp.abs(residual)))


def _with_step(tmp_path, factor: int) -> Path:
    """four_bar.xml with its time step and equality solref divided by ``factor``."""
    text = (DATA / "four_bar.xml").read_text()
    text = text.replace('timestep="0.001"', f'timestep="{0.001 / factor}"')
    text = text.replace('solref="0.002 1"', f'solref="{0.002 / factor} 1"')
    path = tmp_path / f"four_bar_{factor}.xml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_the_four_bar_linkage_moves_as_in_mujoco_converging_with_the_step(tmp_path):
    ours, theirs, residual = _rollout(DATA / "four_bar.xml")
    assert np.ptp(ours[:, 0]) > 2.0  # the crank whips through more than 2 rad
    difference = np.abs(ours - theirs).max()
    assert difference < 1e-2 and residual < 1e-4
    ours2, theirs2, residual2 = _rollout(_with_step(tmp_path, 2))
    half = np.abs(ours2 - theirs2).max()
    assert 1.6 < difference / half < 2.4, (difference, half)
    assert residual2 < residual


def test_coupled_gripper_fingers_move_as_in_mujoco():
    ours, theirs, residual = _rollout(DATA / "gripper.xml", key="close")
    model = _load(DATA / "gripper.xml")
    left, right = (model.joint_q[model.joint_names.index(n)] for n in ("left", "right"))
    assert ours[-1, left] > 0.01  # the servo closed the left finger
    np.testing.assert_allclose(ours[:, right], -ours[:, left] + 2 * ours[:, left] ** 2, atol=1e-4)  # the coupling
    assert np.abs(ours - theirs).max() < 2e-3 and residual < 1e-4


def test_a_welded_box_swings_with_the_arm_as_in_mujoco():
    ours, theirs, residual = _rollout(DATA / "weld.xml")
    assert np.abs(ours - theirs).max() < 2e-3 and residual < 1e-4
    model = _load(DATA / "weld.xml")
    box, arm = model.body_names.index("box"), model.body_names.index("arm")
    poses = jax.vmap(lambda q: kinematics(model, q).body)(jnp.asarray(ours))
    relative = np.einsum("tji,tjk->tik", np.asarray(poses.rotation[:, arm]), np.asarray(poses.rotation[:, box]))
    np.testing.assert_allclose(relative, np.broadcast_to(relative[0], relative.shape), atol=1e-4)  # held rigid


def test_mass_matrix_and_bias_of_the_equality_scenes_equal_mujocos():
    rng = np.random.default_rng(1)
    for name in ("four_bar.xml", "gripper.xml", "weld.xml", "every_kind.xml"):
        pair = _pair(DATA / name)
        qpos = _random_qpos(pair.mj_model, rng)
        report = compare.dynamics(pair, qpos, rng.normal(size=pair.mj_model.nv))
        for quantity in ("mass_matrix", "bias", "body_position", "body_rotation"):
            difference = report[quantity]
            assert difference.max_abs <= 1e-9 * max(1.0, difference.scale), (name, str(report))


def _without_equality(text: str) -> str:
    return text[: text.index("<equality>")] + text[text.index("</equality>") + len("</equality>") :]


@pytest.mark.parametrize("how", ["active", "flag"])
def test_an_inactive_constraint_changes_nothing(tmp_path, how):
    text = (DATA / "four_bar.xml").read_text()
    off = (
        text.replace('<connect name="loop"', '<connect name="loop" active="false"')
        if how == "active"
        else text.replace('integrator="Euler"/>', 'integrator="Euler"><flag equality="disable"/></option>')
    )
    (tmp_path / "off.xml").write_text(off)
    (tmp_path / "none.xml").write_text(_without_equality(text))
    inactive, free = _load(tmp_path / "off.xml"), _load(tmp_path / "none.xml")
    assert inactive.equality.rows == 3 and not bool(inactive.equality.active[0])
    runs = [jaxmor.rollout(m, jaxmor.init_state(m), n_steps=200)[0] for m in (inactive, free)]
    np.testing.assert_allclose(runs[0].q, runs[1].q, rtol=0, atol=1e-12)
    assert np.ptp(np.asarray(runs[0].q)) > 0.01  # the links fell apart


def test_batched_and_jitted_four_bars_keep_their_loops():
    model = _load(DATA / "four_bar.xml")
    starts = jnp.array([[0.0, 0.0, 0.0], [0.02, -0.03, -0.01], [-0.01, 0.01, 0.0]])
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(starts)
    final, _ = jax.jit(lambda s: jaxmor.rollout_batch(model, s, n_steps=300))(states)
    residual = jax.vmap(lambda q: equality_rows(model, kinematics(model, q).body, q)[1])(final.q)
    assert not bool(jnp.any(final.nonfinite)) and float(jnp.max(jnp.abs(residual))) < 1e-3
    assert final.equality_impulse.shape == (3, 3) and float(jnp.max(jnp.abs(final.equality_impulse))) > 0


def test_the_gradient_through_a_coupling_matches_central_differences():
    """d(right finger's final position) / d(the coupling's linear coefficient), taken w.r.t. the whole Model (every
    leaf, ``active`` included, must be differentiable): the exact rows' derivative (the solver's derivative is exact
    at converged sweeps; one coupling row converges in a sweep). FD step 1e-6 on a coefficient of order 1:
    truncation ~1e-12, round-off ~1e-10; tolerance 1e-5 relative."""
    model = _load(DATA / "gripper.xml")
    state = jaxmor.set_keyframe(model, jaxmor.init_state(model), "close")
    right = model.joint_q[model.joint_names.index("right")]

    def with_coefficient(c1):
        return model.replace(
            equality=model.equality.replace(joint_polycoef=model.equality.joint_polycoef.at[0, 1].set(c1))
        )

    def final_right(m):
        return jaxmor.rollout(m, state, n_steps=100)[0].q[right]

    grads = jax.jit(jax.grad(final_right))(with_coefficient(-1.0))
    grad = grads.equality.joint_polycoef[0, 1]
    f = jax.jit(lambda c1: final_right(with_coefficient(c1)))
    step = 1e-6
    fd = (f(-1.0 + step) - f(-1.0 - step)) / (2 * step)
    assert abs(float(grad)) > 1e-4
    np.testing.assert_allclose(float(grad), float(fd), rtol=1e-5)
    assert float(jnp.max(jnp.abs(grads.equality.active))) == 0.0  # an on/off switch carries no gradient


ERRORS = {
    "unknown body": ('<connect body1="nowhere" anchor="0 0 0"/>', "no body 'nowhere'"),
    "unknown site": ('<weld site1="nosite" site2="nosite2"/>', "no site 'nosite'"),
    "unknown joint": ('<joint joint1="crank" joint2="elbow"/>', "no hinge or slide 'elbow'"),
    "connect without anchor": ('<connect body1="crank"/>', "needs an anchor"),
    "sites and bodies": ('<connect site1="a" site2="b" body1="crank"/>', "by sites needs site1 and site2 and no body1"),
    "world to itself": ('<weld body1="world"/>', "constrains the world to itself"),
    "negative torquescale": ('<weld body1="crank" torquescale="-1"/>', "torquescale must not be negative"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_a_bad_constraint_is_refused_naming_the_file_and_line(tmp_path, case):
    element, message = ERRORS[case]
    text = _without_equality((DATA / "four_bar.xml").read_text()).replace(
        "</mujoco>", f"  <equality>\n    {element}\n  </equality>\n</mujoco>"
    )
    path = tmp_path / "bad.xml"
    path.write_text(text)
    line = text.splitlines().index(f"    {element}") + 1
    with pytest.raises(ModelError, match=message) as info:
        _load(path)
    assert f"{path}:{line}" in str(info.value)


def test_the_load_says_mujocos_equality_constraints_are_soft():
    with pytest.warns(jaxmor.MujocoDifferenceWarning, match="soft equality constraints \\(1 in <equality>"):
        jaxmor.load_mjcf(DATA / "four_bar.xml")


def test_combined_scenes_keep_their_constraints_where_they_are_placed():
    """A four-bar placed 2 m away by ``combine`` next to a gripper moves as it does alone (its world anchors and
    bodies shifted; 1e-12 over 200 steps, float64)."""
    four_bar, gripper = _load(DATA / "four_bar.xml"), _load(DATA / "gripper.xml")
    combined = jaxmor.combine(gripper, four_bar, prefix="fb_", position=(0.0, 2.0, 0.0), orientation=(0.0, 0, 0, 1))
    assert combined.equality.names == ("fb_loop", "mirror")  # connects and welds first, then joint couplings
    alone = jaxmor.rollout(four_bar, jaxmor.init_state(four_bar), n_steps=200)[0]
    together = jaxmor.rollout(combined, jaxmor.init_state(combined), n_steps=200)[0]
    crank = combined.joint_q[combined.joint_names.index("fb_crank")]
    np.testing.assert_allclose(together.q[crank : crank + 3], alone.q, rtol=0, atol=1e-12)


def test_a_checkpoint_keeps_the_constraints(tmp_path):
    model = _load(DATA / "every_kind.xml")
    state = jaxmor.rollout(model, jaxmor.init_state(model), n_steps=5)[0]
    jaxmor.save_checkpoint(tmp_path / "c.npz", model, state)
    model2, state2 = jaxmor.load_checkpoint(tmp_path / "c.npz")
    assert model2.equality.names == model.equality.names and model2.equality.point_body == model.equality.point_body
    chex.assert_trees_all_equal(state, state2)
