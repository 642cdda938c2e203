"""Mocap bodies (MJCF ``<body mocap="true">``): bodies welded to the world whose pose the State sets per step.

References: MuJoCo on the same files (its ``mocap_pos``/``mocap_quat`` start at the body's pose in the file, its
mass matrix and bias do not see the mocap body), and closed forms: a ball rests on a mocap paddle at the paddle's
top plus its radius wherever the paddle is put; a box on a paddle tilted by ``mocap_quat`` slides down it at
``g (sin a - mu cos a)``. Float64; tolerances stated where they are used.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import MujocoReference, rel_err

import jaxmor
from jaxmor import ModelError

mujoco = pytest.importorskip("mujoco")

PADDLE = """<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 .1"/>
<body name="paddle" mocap="true" pos="0.2 0 0.5" euler="0 0 30">
  <geom name="pad" type="box" size=".3 .3 .02" pos=".1 0 0"/></body>
<body name="ball" pos="0.2 0 0.7"><freejoint/><geom type="sphere" size=".05"/></body>
<body name="arm" pos="1 1 1"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body>
</worldbody></mujoco>"""


def _load(text: str) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(text)


@pytest.fixture(scope="module")
def paddle():
    return _load(PADDLE), mujoco.MjModel.from_xml_string(PADDLE)


def test_the_mocap_pose_starts_as_mujocos_and_the_dynamics_ignore_the_body(paddle):
    model, m = paddle
    d = mujoco.MjData(m)
    state = jaxmor.init_state(model)
    assert model.mocap_links == (model.link_names.index("paddle"),) and m.nmocap == 1
    np.testing.assert_allclose(state.mocap_pos, d.mocap_pos, atol=1e-15)
    np.testing.assert_allclose(state.mocap_quat, d.mocap_quat, atol=1e-15)  # MuJoCo's w >= 0 form
    ref = MujocoReference(model, m)
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(1)))
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12 and rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-12


@pytest.fixture(scope="module")
def run(paddle):
    model, _ = paddle
    return jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=400)[0])


def test_a_ball_rests_on_the_paddle_wherever_it_is_put(paddle, run):
    """The paddle's top is 0.02 m above its centre: the ball rests 0.07 m above the paddle's ``z``, where the file
    puts it and after ``mocap_pos`` lowered it by 0.3 m (hard contacts: exact to the solver's tolerance, 1e-6 m;
    MuJoCo's soft contact sinks it 0.37 mm, checked within 1 mm)."""
    model, m = paddle
    start = jaxmor.init_state(model)
    for z in (0.5, 0.2):
        state = start.replace(mocap_pos=jnp.array([[0.2, 0.0, z]]), q=start.q.at[2].set(z + 0.2))
        end = run(state)
        assert float(end.q[2]) == pytest.approx(z + 0.07, abs=1e-6)
        d = mujoco.MjData(m)
        d.mocap_pos[0], d.qpos[2] = (0.2, 0.0, z), z + 0.2
        for _ in range(400):
            mujoco.mj_step(m, d)
        assert d.qpos[2] == pytest.approx(float(end.q[2]), abs=1e-3)
        assert float(end.mocap_pos[0, 2]) == z  # held until set again


def test_a_tilted_paddle_is_an_incline(paddle):
    """``mocap_quat`` turns the paddle 15 degrees about ``y``: a box on it slides down at ``g (sin a - mu cos a)``
    (friction 0.1; measured from 0.2 to 0.4 s; 1e-6 of g: the hard contact holds it on the surface)."""
    tilt = math.radians(15.0)
    text = PADDLE.replace(
        '<body name="ball" pos="0.2 0 0.7"><freejoint/><geom type="sphere" size=".05"/></body>',
        '<body name="box" pos="0.2 0 0.58"><freejoint/><geom type="box" size=".04 .04 .04" friction="0.1"/></body>',
    ).replace('pos=".1 0 0"/>', 'pos="0 0 0" friction="0.1"/>')
    model = _load(text)
    quat = jnp.array([[math.cos(tilt / 2), 0.0, math.sin(tilt / 2), 0.0]])
    normal = np.array([math.sin(tilt), 0.0, math.cos(tilt)])
    start = jaxmor.init_state(model)
    top = np.array([0.2, 0.0, 0.5]) + (0.02 + 0.04) * normal  # the box's centre resting on the turned paddle
    rotation = quat[0]  # the box turned as the paddle
    state = start.replace(mocap_quat=quat, q=start.q.at[:3].set(top).at[3:7].set(rotation))
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=200))(state)
    down = np.array([math.cos(tilt), 0.0, -math.sin(tilt)])  # down the slope
    x = np.asarray(traj.q[:, :3]) @ down
    dt = float(model.opt.timestep)
    g = float(-model.opt.gravity[2])
    accel = (x[199] - 2 * x[149] + x[99]) / (50 * dt) ** 2
    assert accel == pytest.approx(g * (math.sin(tilt) - 0.1 * math.cos(tilt)), abs=1e-6 * g)


def test_mocap_poses_are_rollout_controls_and_survive_a_checkpoint(paddle, tmp_path):
    model, _ = paddle
    path = jnp.linspace(jnp.array([0.2, 0.0, 0.5]), jnp.array([0.2, 0.0, 0.6]), 20)[:, None, :]
    end, traj = jaxmor.rollout(model, jaxmor.init_state(model), {"mocap_pos": path})
    np.testing.assert_allclose(traj.mocap_pos[:, 0], path[:, 0], atol=0)
    jaxmor.save_checkpoint(tmp_path / "c.npz", model, end)
    loaded, state = jaxmor.load_checkpoint(tmp_path / "c.npz")
    assert loaded.mocap_links == model.mocap_links
    np.testing.assert_array_equal(state.mocap_pos, end.mocap_pos)
    with pytest.raises(jaxmor.ArgumentError, match="mocap_pos"):
        jaxmor.step(model, end.replace(mocap_pos=jnp.zeros((2, 3))))


def test_combined_models_keep_their_mocap_bodies(paddle):
    model, _ = paddle
    both = jaxmor.combine(model, model, prefix="b/", position=(3.0, 0.0, 0.0))
    assert both.mocap_links == (model.mocap_links[0], model.nl + model.mocap_links[0])
    state = jaxmor.init_state(both)
    np.testing.assert_allclose(state.mocap_pos, [[0.2, 0.0, 0.5], [3.2, 0.0, 0.5]], atol=1e-12)


def test_the_viewer_draws_the_paddle_where_the_state_puts_it(paddle):
    from jaxmor.viewer.frames import frame_poses, select_frames
    from jaxmor.viewer.parts import collision_parts
    from jaxmor.viewer.record import part_poses

    model, _ = paddle
    state = jaxmor.init_state(model)
    moved = state.replace(mocap_pos=jnp.array([[1.0, 2.0, 3.0]]), mocap_quat=jnp.array([[0.0, 0.0, 0.0, 1.0]]))
    frames = select_frames(model, jax.tree.map(lambda x: x[None], moved))
    part = next(p for p in collision_parts(model) if p.name.endswith("pad"))
    rotation, position = part_poses(part, frame_poses(model, frames))
    np.testing.assert_allclose(position[0, 0], [0.9, 2.0, 3.0], atol=1e-9)  # the pad 0.1 m along x, turned 180
    np.testing.assert_allclose(rotation[0, 0], np.diag([-1.0, -1.0, 1.0]), atol=1e-9)


def test_the_contact_overlay_finds_the_ball_on_the_moved_paddle(paddle, run):
    """The viewer's contact overlay collides with the State's mocap pose: the ball resting on the paddle lowered to
    0.2 m touches it at the paddle's top (0.22 m) with its weight."""
    from jaxmor.viewer.frames import select_frames
    from jaxmor.viewer.overlays import contact_forces

    model, _ = paddle
    start = jaxmor.init_state(model)
    end = run(start.replace(mocap_pos=jnp.array([[0.2, 0.0, 0.2]]), q=start.q.at[2].set(0.4)))
    points, forces, held = contact_forces(model, select_frames(model, jax.tree.map(lambda x: x[None], end)))
    ball = float(model.body_mass[model.body_names.index("ball")]) * 9.81
    assert held[0, 0].sum() >= 1
    np.testing.assert_allclose(points[0, 0][held[0, 0]][:, 2], 0.22, atol=1e-6)
    np.testing.assert_allclose(np.abs(forces[0, 0][held[0, 0]].sum(axis=0)), [0.0, 0.0, ball], atol=1e-3 * ball)


@pytest.mark.parametrize(
    "body, message",
    [
        ('<body><body mocap="true"><geom size=".1"/></body><geom size=".1"/></body>', "child of the world body"),
        ('<body mocap="true"><joint/><geom size=".1"/></body>', "cannot have joints"),
        ('<body mocap="true"><geom size=".1"/><body><geom size=".1"/></body></body>', "<body> in mocap body"),
        ('<body mocap="true"><site name="s"/></body>', "<site> in mocap body"),
    ],
)
def test_what_a_mocap_body_cannot_hold_is_refused(body, message):
    with pytest.raises(ModelError, match=message):
        _load(f"<mujoco><worldbody>{body}</worldbody></mujoco>")


def test_sensors_on_mocap_bodies_are_refused_naming_the_line():
    scene = '<mujoco><worldbody><body name="m" mocap="true"><geom size=".1"/></body><body name="b"><freejoint/>'
    scene += '<geom size=".1"/></body></worldbody>\n'
    with pytest.raises(ModelError, match=r"<string>:3: <sensor> on mocap body 'm'"):
        _load(scene + '<sensor>\n<framepos objtype="xbody" objname="m"/></sensor></mujoco>')


#: A free box welded to a turned mocap "hand", and a hinged arm whose tip is connected to a mocap "anchor"
#: (``{step}`` and ``{solref}``: the time step and the constraints' time constant, both [s]).
WELDED = """<mujoco><option timestep="{step}"/><worldbody>
<body name="hand" mocap="true" pos="0 0 1" euler="10 20 30">
  <geom type="box" size=".05 .05 .05" contype="0" conaffinity="0"/></body>
<body name="anchor" mocap="true" pos="1.4 0 1"/>
<body name="box" pos="0.1 0.05 0.8" euler="0 30 0"><freejoint/><geom type="box" size=".1 .05 .08" mass="2"/></body>
<body name="arm" pos="1 0 1"><joint name="hinge" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .4 0 0" size=".03"/>
</body></worldbody>
<equality><weld body1="hand" body2="box" solref="{solref} 1"/>
<connect body1="arm" body2="anchor" anchor=".4 0 0" solref="{solref} 1"/></equality></mujoco>"""


def _welded(step: float = 0.002):
    text = WELDED.format(step=step, solref=2 * step)
    return _load(text), mujoco.MjModel.from_xml_string(text)


def _mujoco_equality_rows(m, d) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's equality rows ``(efc_pos, efc_J)`` (the files here hold connects and welds only, in jaxmor's order)."""
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return d.efc_pos[rows], d.efc_J.reshape(d.nefc, m.nv)[rows]


def _turned(quat: np.ndarray, rng, scale: float) -> np.ndarray:
    """``quat`` (n, 4) nudged and normalized: turned by well under half a turn, so that MuJoCo's orientation error,
    which takes the quaternions' signs as they come, and jaxmor's, which takes the error's ``w >= 0``, agree."""
    q = quat + scale * rng.normal(size=quat.shape)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _rows_against_mujoco(model, m, rng, scale: float) -> float:
    """The largest difference of the equality rows (residuals and Jacobians) from MuJoCo's, over 3 random
    configurations with the mocap bodies moved and turned (``scale``: the configurations' spread)."""
    from jaxmor.sim.equality import equality_rows
    from jaxmor.sim.kinematics import kinematics
    from jaxmor.tools.compare import Pair

    pair, d = Pair(model, m), mujoco.MjData(m)
    rows = jax.jit(lambda q, pos, quat: equality_rows(model, kinematics(model, q).body, q, (pos, quat)))
    start_pos, start_quat, worst = d.mocap_pos.copy(), d.mocap_quat.copy(), 0.0
    for _ in range(3):
        d.qpos[:] = m.qpos0 + scale * rng.normal(size=m.nq)
        for j in np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
            d.qpos[m.jnt_qposadr[j] + 3 : m.jnt_qposadr[j] + 7] = _turned(
                m.qpos0[None, m.jnt_qposadr[j] + 3 :][:, :4], rng, scale
            )
        d.mocap_pos[:] = start_pos + scale * rng.normal(size=start_pos.shape)
        d.mocap_quat[:] = _turned(start_quat, rng, scale)
        mujoco.mj_forward(m, d)
        want_e, want_j = _mujoco_equality_rows(m, d)
        q, _ = pair.from_mujoco(d.qpos, d.qvel)
        jac, residual = (
            np.asarray(x) for x in rows(jnp.asarray(q), jnp.asarray(d.mocap_pos), jnp.asarray(d.mocap_quat))
        )
        assert np.abs(want_e).max() > 0.1  # the configurations violate the constraints
        worst = max(worst, np.abs(residual - want_e).max())
        worst = max(worst, np.abs(jac - want_j[:, pair.qvel_index] @ pair.velocity_map(q)).max())
    return worst


def test_a_weld_and_a_connect_to_mocap_bodies_have_mujocos_rows():
    """The residuals and Jacobians of a weld (free box to a turned mocap body) and a connect (an arm's tip to a mocap
    body) equal MuJoCo's ``efc_pos``/``efc_J`` with the mocap bodies moved and turned (1e-12: the same formulas in
    float64; measured 2e-16); the mocap sides contribute no Jacobian (no degrees of freedom); M and bias equal
    MuJoCo's (1e-12)."""
    model, m = _welded()
    assert model.equality.point_mocap == ((0, -1), (-1, 1))
    assert _rows_against_mujoco(model, m, np.random.default_rng(0), 0.2) < 1e-12
    ref = MujocoReference(model, m)
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(1)))
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12 and rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-12


def _held_motion(step: float, seconds: float = 1.0):
    """The welded box and the connected arm while the hand moves and turns and the anchor sweeps the arm's circle
    (angle ``0.6 sin 2t`` about y): jaxmor's q, MuJoCo's (in jaxmor's order) and the arm angle the anchor sets."""
    from jaxmor.tools.compare import Pair

    model, m = _welded(step)
    pair, d = Pair(model, m), mujoco.MjData(m)
    t = np.arange(int(round(seconds / step))) * step
    hand = m.body_pos[1] + np.stack([0.2 * np.sin(4 * t), 0.1 * np.sin(3 * t), 0.15 * np.sin(5 * t)], -1)
    angle = 0.6 * np.sin(2 * t)
    anchor = np.stack([1 + 0.4 * np.cos(angle), 0 * t, 1 - 0.4 * np.sin(angle)], -1)
    turn = 0.25 * np.sin(3 * t)  # half the hand's extra turn about the world's y axis
    w, x, y, z = d.mocap_quat[0]
    hand_quat = np.stack(
        [np.cos(turn) * w - np.sin(turn) * y, np.cos(turn) * x + np.sin(turn) * z,
         np.cos(turn) * y + np.sin(turn) * w, np.cos(turn) * z - np.sin(turn) * x], -1,
    )  # fmt: skip
    pos = np.stack([hand, anchor], 1)
    quat = np.stack([hand_quat, np.broadcast_to(d.mocap_quat[1], hand_quat.shape)], 1)
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, {"mocap_pos": pos, "mocap_quat": quat}))(
        jaxmor.init_state(model)
    )
    assert not bool(final.nonfinite)
    theirs = []
    for k in range(t.size):
        d.mocap_pos[:], d.mocap_quat[:] = pos[k], quat[k]
        mujoco.mj_step(m, d)
        theirs.append(pair.from_mujoco(d.qpos, d.qvel)[0])
    return np.asarray(traj.q), np.array(theirs), angle


def test_bodies_held_by_moving_mocap_bodies_move_as_in_mujoco_converging_with_the_step():
    """While the hand moves and turns (0.1-0.3 m, 0.5 rad) and the anchor sweeps the arm's circle (0.6 rad), the box
    and the arm follow MuJoCo's within 3 mm and 3 mrad over 1 s (measured 1.5 mm, 2.4 mrad). Neither engine knows a
    mocap body's velocity: both lag a moving mocap body, MuJoCo's soft welds by their ``solref`` (4 ms here),
    jaxmor's hard rows by their correction law (a fraction ``EQUALITY_CORRECTION`` of the residual per step: the arm
    trails the anchor's angle by at most its rate times ``h / EQUALITY_CORRECTION``, 12 mrad; measured 9.5). With the
    step and the time constant halved, the difference from MuJoCo halves (measured 2.4 to 1.2 mrad)."""
    from jaxmor.sim.constraint import EQUALITY_CORRECTION

    ours, theirs, angle = _held_motion(0.002)
    hinge = 7  # the box's 7 free-joint coordinates, then the hinge
    assert np.ptp(theirs[:, 0]) > 0.2 and np.ptp(theirs[:, 3]) > 0.05 and np.ptp(angle) > 0.55
    lag = 1.2 * 0.002 / EQUALITY_CORRECTION  # the anchor's largest angular rate times the lag
    assert np.abs(ours[:, hinge] - angle).max() < lag
    difference = np.abs(ours - theirs).max()
    assert difference < 3e-3
    ours2, theirs2, _ = _held_motion(0.001)
    half = np.abs(ours2 - theirs2).max()
    assert 1.6 < difference / half < 2.4, (difference, half)


KEYED = PADDLE.replace(
    "</worldbody></mujoco>",
    '</worldbody><keyframe><key name="moved" mpos="0.5 -0.2 0.3" mquat="2 0 0 2"/>\n'
    '<key name="held" qpos="0.2 0 0.9 1 0 0 0 0.1"/></keyframe></mujoco>',
)


def test_a_keyframe_puts_the_mocap_bodies_as_mujocos_reset_does():
    """``mj_resetDataKeyframe`` sets ``mocap_pos``/``mocap_quat`` from the key's ``mpos``/``mquat`` (normalized),
    and to the bodies' poses in the file where the key gives none, whatever the data held (exact: the same
    numbers, normalized by the same formula up to round-off, 1e-15)."""
    model, m = _load(KEYED), mujoco.MjModel.from_xml_string(KEYED)
    moved = jaxmor.init_state(model).replace(mocap_pos=jnp.array([[9.0, 9.0, 9.0]]))
    d = mujoco.MjData(m)
    for key in ("moved", "held"):
        d.mocap_pos[0] = (9.0, 9.0, 9.0)
        mujoco.mj_resetDataKeyframe(m, d, m.key(key).id)
        state = jaxmor.set_keyframe(model, moved, key)
        np.testing.assert_allclose(state.mocap_pos, d.mocap_pos, atol=1e-15)
        np.testing.assert_allclose(state.mocap_quat, d.mocap_quat, atol=1e-15)
        np.testing.assert_allclose(state.q, d.qpos, atol=1e-15)
    both = jaxmor.combine(model, model, prefix="b/", position=(3.0, 0.0, 0.0))
    state = jaxmor.set_keyframe(both, jaxmor.init_state(both), "moved")
    np.testing.assert_allclose(state.mocap_pos, [[0.5, -0.2, 0.3], [3.2, 0.0, 0.5]], atol=1e-12)
    np.testing.assert_allclose(state.mocap_quat[1], jaxmor.init_state(both).mocap_quat[1], atol=1e-12)


@pytest.mark.parametrize(
    "key, message",
    [
        ('<key mpos="1 2"/>', "mpos of <key> needs 3 numbers, got 2"),
        ('<key mquat="1 0 0 0 1 0 0 0"/>', "mquat of <key> needs 4 numbers, got 8"),
        ('<key name="k" mquat="0 0 0 0"/>', "keyframe 'k': the mquat of mocap body 'paddle' is zero"),
        ('<key mpos="1 nan 0"/>', "mpos"),
    ],
)
def test_a_keyframes_broken_mocap_pose_is_refused_naming_the_line(key, message):
    text = PADDLE.replace("</worldbody></mujoco>", f"</worldbody><keyframe>\n{key}</keyframe></mujoco>")
    with pytest.raises(ModelError, match=r"<string>:7: .*" + message):
        _load(text)


CARTPOLE = ("dm_control", "mujoco", "testing", "assets", "cartpole.xml")


def test_dm_controls_cartpole_with_two_mocap_bodies_runs_as_mujocos():
    """dm_control's testing cartpole (shipped in its wheel; two mocap bodies, a cube and a sphere) driven with its
    motor while both mocap bodies move and turn every step, jaxmor against MuJoCo from the same controls. The
    mocap bodies start where MuJoCo puts them; at every step the geoms of the mocap bodies are where MuJoCo puts
    them for the same ``mocap_pos``/``mocap_quat`` (1e-12: the same rigid transform; every geom's centre, the
    mocap geoms' axes: a ``fromto`` capsule's frame is MuJoCo's turned half a turn, the same capsule); M and bias
    match to 1e-12.
    The cart and pole follow MuJoCo's within 1e-3 of their motion over the first 0.3 s (measured 2e-4 and 7e-4):
    both integrate at the file's 10 ms step with first-order schemes that differ in the damping's treatment
    (2e-4 of the first step's motion), and the upright pole amplifies any difference as it falls (0.01 m of the
    cart's 0.36 after 1 s). The mocap bodies carry nothing into the dynamics: their geoms collide with nothing
    here (``contype`` 0), as in MuJoCo."""
    from reference import _package_file

    from jaxmor.sim.collision.driver import _geom_poses
    from jaxmor.sim.kinematics import body_poses

    path = _package_file(*CARTPOLE)
    if path is None:
        pytest.skip("dm-control is not installed (the test extra)")
    model, m = _load(str(path)), mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    state = jaxmor.init_state(model)
    np.testing.assert_allclose(state.mocap_pos, d.mocap_pos, atol=1e-15)
    np.testing.assert_allclose(state.mocap_quat, d.mocap_quat, atol=1e-15)
    ref = MujocoReference(model, m)
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(3)))
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12 and rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-12
    t = np.arange(30) * m.opt.timestep
    zero = 0.0 * t
    pos = np.stack(
        [np.stack([1 + 0.1 * np.sin(5 * t), zero, 0.5 + 0.05 * t], -1), np.stack([-1 + zero, 0.2 * t, 0.5 + zero], -1)],
        1,
    )
    quat = np.stack(
        [
            np.stack([np.cos(1.5 * t), zero, zero, np.sin(1.5 * t)], -1),
            np.stack([np.cos(t), np.sin(t), zero, zero], -1),
        ],
        1,
    )
    ctrl = 0.3 * np.sin(4 * t)[:, None]
    _, traj = jaxmor.rollout(model, state, {"ctrl": ctrl, "mocap_pos": pos, "mocap_quat": quat})

    @jax.jit
    def poses(q, mocap):
        bodies = body_poses(model, q)
        return _geom_poses(model, bodies.position, bodies.rotation, mocap)[:2]

    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in range(m.ngeom)]
    rows = [names.index(n) for n in model.geom_names]
    qpos = []
    for k in range(t.size):
        d.ctrl[:], d.mocap_pos[:], d.mocap_quat[:] = ctrl[k], pos[k], quat[k]
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        mujoco.mj_forward(m, d)
        p, r = poses(jnp.asarray(d.qpos), (jnp.asarray(pos[k]), jnp.asarray(quat[k])))
        np.testing.assert_allclose(p, d.geom_xpos[rows], atol=1e-12)
        moving = [g for g, n in enumerate(model.geom_names) if n.startswith("mocap")]
        np.testing.assert_allclose(np.asarray(r)[moving], d.geom_xmat[rows].reshape(-1, 3, 3)[moving], atol=1e-12)
    qpos = np.array(qpos)
    error = np.abs(np.asarray(traj.q) - qpos).max(axis=0)
    assert np.all(error < 1e-3 * np.abs(qpos).max(axis=0)), error


def test_a_keyframe_value_the_states_dtype_cannot_hold_is_refused_naming_it():
    """``mpos`` and ``qpos`` of 1e39 are finite in the file's float64 and infinite in a float32 State."""
    text = PADDLE.replace(
        "</worldbody></mujoco>", '</worldbody><keyframe><key name="far" mpos="0 1e39 0"/></keyframe></mujoco>'
    )
    model = _load(text)
    state = jax.tree.map(lambda x: x.astype(jnp.float32) if x.dtype == jnp.float64 else x, jaxmor.init_state(model))
    with pytest.raises(jaxmor.ArgumentError, match=r"keyframe 'far': mocap_pos\[1\] = 1e\+39 does not fit float32"):
        jaxmor.set_keyframe(model, state, "far")
    assert float(jaxmor.set_keyframe(model, jaxmor.init_state(model), "far").mocap_pos[0, 1]) == 1e39  # float64


def test_keyframes_with_mocap_poses_survive_a_checkpoint(tmp_path):
    model = _load(KEYED)
    jaxmor.save_checkpoint(tmp_path / "k.npz", model, jaxmor.init_state(model))
    loaded, _ = jaxmor.load_checkpoint(tmp_path / "k.npz")
    assert loaded.keyframes == model.keyframes and loaded.keyframes[0].mocap_pos == (0.5, -0.2, 0.3)
    assert loaded.keyframes[1].mocap_pos is None


FETCH = ("gymnasium_robotics", "envs", "assets", "fetch", "reach.xml")


@pytest.fixture(scope="module")
def fetch():
    """Gymnasium-Robotics' Fetch (its wheel; meshes in a sibling folder: ``assets_dir``), jaxmor's and MuJoCo's."""
    from reference import _package_file

    path = _package_file(*FETCH)
    if path is None:
        pytest.skip("gymnasium-robotics is not installed (the test extra)")
    return _load_fetch(path), mujoco.MjModel.from_xml_path(str(path))


def _load_fetch(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its two condim-4 fingers, its soft weld and limits (docs/mjcf.md)
        return jaxmor.load_mjcf(str(path), assets_dir=path.parent.parent)


def test_a_combined_scene_keeps_the_welds_to_its_mocap_bodies(paddle):
    """The welded scene added after the paddle's (placed 3 m along x): its constraints name the mocap bodies after
    the paddle's, and their rows, with the mocap bodies where the combined State starts them, equal the scene's
    own rows (1e-12: the same poses, moved by the placement; residuals are differences, Jacobians unturned by it)."""
    from jaxmor.sim.equality import equality_rows
    from jaxmor.sim.kinematics import kinematics

    first, _ = paddle
    welded, _ = _welded()
    both = jaxmor.combine(first, welded, prefix="w/", position=(3.0, 0.0, 0.0))
    assert both.equality.point_mocap == ((1, -1), (-1, 2))
    alone, state = jaxmor.init_state(welded), jaxmor.init_state(both)
    alone = alone.replace(q=alone.q.at[:3].add(0.05))  # the box 5 cm off the hand: residuals that are not zero
    q = state.q.at[first.nq : first.nq + welded.nq].set(alone.q)
    q = q.at[first.nq : first.nq + 3].add(jnp.array([3.0, 0.0, 0.0]))
    jac, residual = equality_rows(both, kinematics(both, q).body, q, (state.mocap_pos, state.mocap_quat))
    want_jac, want = equality_rows(welded, kinematics(welded, alone.q).body, alone.q, None)
    assert np.abs(want).max() > 0.04
    np.testing.assert_allclose(residual, want, atol=1e-12)
    np.testing.assert_allclose(jac[:, first.nv :], want_jac, atol=1e-12)
    assert not np.any(np.asarray(jac[:, : first.nv]))


def test_gymnasium_robotics_fetch_welded_to_its_mocap_body_has_mujocos_rows(fetch):
    """Fetch's gripper is welded to a mocap body (``fetch/shared.xml``): the weld's rows equal MuJoCo's with the arm
    and the mocap body moved (1e-12; measured 4e-16), and M and bias equal MuJoCo's (1e-12)."""
    model, m = fetch
    assert len(model.mocap_links) == 1 and model.equality.point_mocap == ((0, -1),)
    assert _rows_against_mujoco(model, m, np.random.default_rng(2), 0.1) < 1e-12
    ref = MujocoReference(model, m)
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(3)))
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12 and rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-12


@pytest.mark.slow
def test_fetchs_gripper_follows_its_mocap_body_where_mujocos_does(fetch):
    """The mocap body moved smoothly (0.66 m toward the base and down over 1 s, as Gymnasium-Robotics' reset moves it
    to its start), then held for 0.2 s: jaxmor's hard weld puts the gripper on its target within 1 mm; MuJoCo's
    soft one (``solref`` 20 ms, ``solimp`` 0.9) within 30 mm (measured 22 mm: it lags and sags under the arm's
    weight, still settling).
    The joints' paths are not compared: the arm is redundant, and its two unlimited roll joints take different
    turns in the two engines."""
    from jaxmor.sim.kinematics import forward_kinematics

    model, m = fetch
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    gripper = m.body("robot0:gripper_link").id
    t = np.arange(600) * m.opt.timestep
    s = np.clip(t / 1.0, 0, 1)
    move = np.array([-0.498, 0.005, -0.431])
    pos = (d.mocap_pos[0] + (s * s * (3 - 2 * s))[:, None] * move)[:, None, :]
    quat = np.broadcast_to(d.mocap_quat, (t.size, 1, 4))
    target = d.xpos[gripper] + move
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, {"mocap_pos": pos, "mocap_quat": quat}))(
        jaxmor.init_state(model)
    )
    assert not bool(final.nonfinite)
    ours = forward_kinematics(model, final.q).position[model.link_names.index("robot0:gripper_link")]
    for k in range(t.size):
        d.mocap_pos[:] = pos[k]
        mujoco.mj_step(m, d)
    mujoco.mj_forward(m, d)
    assert np.linalg.norm(np.asarray(ours) - target) < 1e-3
    assert np.linalg.norm(d.xpos[gripper] - target) < 30e-3
