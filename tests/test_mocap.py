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


def test_equalities_and_sensors_on_mocap_bodies_are_refused_naming_the_line():
    scene = '<mujoco><worldbody><body name="m" mocap="true"><geom size=".1"/></body><body name="b"><freejoint/>'
    scene += '<geom size=".1"/></body></worldbody>\n'
    with pytest.raises(ModelError, match=r"<string>:3: <equality> on mocap body 'm'"):
        _load(scene + '<equality>\n<weld body1="b" body2="m"/></equality></mujoco>')
    with pytest.raises(ModelError, match=r"<string>:3: <sensor> on mocap body 'm'"):
        _load(scene + '<sensor>\n<framepos objtype="xbody" objname="m"/></sensor></mujoco>')


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
