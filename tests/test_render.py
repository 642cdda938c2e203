"""jaxmor.viewer.offscreen: frames drawn offscreen by MuJoCo's renderer, checked against a pinhole camera model.

The oracle is the textbook pinhole camera: MuJoCo's free camera looks along ``(cos e cos a, cos e sin a, sin e)``
(azimuth ``a``, elevation ``e``) from ``distance`` before the point looked at, with ``fovy`` the vertical field of
view; a point projects to ``(W/2 + f x/z, H/2 - f y/z)`` with ``f = (H/2) / tan(fovy/2)``. A box of known pose must
cover the pixels inside its projected corners' convex hull. Silhouettes are what differs from the same scene with
the robot moved 1 km down, out of view.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor

pytest.importorskip("viser")
pytest.importorskip("mujoco")
from jaxmor import viewer  # noqa: E402
from jaxmor.viewer import offscreen  # noqa: E402

SIZE = (640, 480)
BOX_XML = """<mujoco><worldbody><body name="box" pos="0.3 -0.2 0.5" euler="0 0 30"><freejoint/>
<geom type="box" size="0.2 0.1 0.15" mass="1"/></body></worldbody></mujoco>"""
BOX_CENTRE, BOX_HALF, BOX_YAW = np.array([0.3, -0.2, 0.5]), np.array([0.2, 0.1, 0.15]), math.radians(30)


@pytest.fixture(scope="module", autouse=True)
def _opengl_or_skip():
    """Skip where no OpenGL context can be made (no EGL or OSMesa library)."""
    try:
        offscreen._gl_context(32, 32).free()
    except jaxmor.ArgumentError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    path = tmp_path_factory.mktemp("box") / "box.xml"
    path.write_text(BOX_XML)
    with pytest.warns(jaxmor.MujocoDifferenceWarning):
        model = jaxmor.load_mjcf(path)
    return model, jaxmor.init_state(model)


def _away(state: jaxmor.State) -> jaxmor.State:
    """The state with its free base 1 km down, under the ground and out of view (the robots here have one free
    joint first); the worlds' layout, which only looks at ``x`` and ``y``, stays."""
    return state.replace(q=state.q.at[..., 2].add(-1000.0))


def _silhouette(model, state, camera=None, empty_camera=None, **kwargs) -> np.ndarray:
    """(H, W) bool: the pixels where ``state`` seen by ``camera`` differs from the empty scene seen by
    ``empty_camera`` (default: ``camera`` as fitted to ``state``)."""
    camera = viewer.fit_camera(model, state, camera, **kwargs)
    image = viewer.render(model, state, camera=camera, **kwargs)[0]
    empty = viewer.render(model, _away(state), camera=empty_camera or camera, **kwargs)[0]
    return np.abs(image.astype(int) - empty.astype(int)).sum(axis=-1) > 30


def _projected(points: np.ndarray, lookat, distance, azimuth, elevation, fovy, size=SIZE) -> np.ndarray:
    """(n, 2) pixel coordinates of world points through the pinhole camera (module docstring)."""
    a, e = math.radians(azimuth), math.radians(elevation)
    forward = np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    v = points - (np.asarray(lookat, float) - distance * forward)
    f = (size[1] / 2) / math.tan(math.radians(fovy) / 2)
    depth = v @ forward
    return np.column_stack([size[0] / 2 + f * (v @ right) / depth, size[1] / 2 - f * (v @ up) / depth])


def _box_corners(centre=BOX_CENTRE) -> np.ndarray:
    c, s = math.cos(BOX_YAW), math.sin(BOX_YAW)
    rotation = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    return (signs * BOX_HALF) @ rotation.T + centre


def _hull_mask(pixels: np.ndarray, size=SIZE) -> np.ndarray:
    """(H, W) bool: pixel centres inside the convex hull of ``pixels``."""
    from matplotlib.path import Path
    from scipy.spatial import ConvexHull

    hull = pixels[ConvexHull(pixels).vertices]
    ys, xs = np.mgrid[0 : size[1], 0 : size[0]]
    centres = np.column_stack([xs.ravel() + 0.5, ys.ravel() + 0.5])
    return Path(hull).contains_points(centres).reshape(size[1], size[0])


@pytest.mark.parametrize("azimuth, elevation, fovy", [(120.0, -25.0, 45.0), (30.0, -60.0, 30.0)])
def test_a_box_covers_its_projected_corners(box, azimuth, elevation, fovy):
    model, state = box
    lookat, distance = (0.0, 0.0, 0.5), 3.0
    camera = viewer.Camera(azimuth=azimuth, elevation=elevation, distance=distance, lookat=lookat, fovy=fovy)
    drawn = _silhouette(model, state, camera=camera, geometry="collision")
    expected = _hull_mask(_projected(_box_corners(), lookat, distance, azimuth, elevation, fovy))
    overlap = (drawn & expected).sum() / (drawn | expected).sum()
    assert expected.sum() > 2000 and overlap > 0.97, (drawn.sum(), expected.sum(), overlap)


def test_a_tracking_camera_keeps_the_body_in_the_middle(box):
    model, state = box
    moved = state.replace(q=state.q.at[:3].set(jnp.array([5.0, 3.0, 1.0])))
    camera = viewer.Camera(track="box", distance=2.0, azimuth=60.0, elevation=-10.0)
    still = viewer.Camera(lookat=(5.0, 3.0, 1.0), distance=2.0, azimuth=60.0, elevation=-10.0)
    drawn = _silhouette(model, moved, camera, empty_camera=still, geometry="collision")
    ys, xs = np.nonzero(drawn)
    # the box's centre projects to the middle; its silhouette's centroid lies within a few pixels of it
    assert drawn.sum() > 2000 and abs(xs.mean() - SIZE[0] / 2) < 8 and abs(ys.mean() - SIZE[1] / 2) < 8


@pytest.fixture(scope="module")
def quadruped():
    """The quadruped standing on the ground, 2 worlds x 20 steps of random torques (W, T, ...)."""
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    stand = jnp.asarray(jaxmor.robots.quadruped_standing_q(model))
    worlds = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(stand, (2, 1)))
    torques = jax.random.uniform(jax.random.key(0), (2, 20, model.na), minval=-30.0, maxval=30.0)
    _, trajectory = jax.jit(lambda w, t: jaxmor.rollout_batch(model, w, t))(worlds, torques)
    return model, trajectory


def _in_view(mask: np.ndarray) -> None:
    """The robot is drawn, whole, about the middle of the image (the default camera frames it)."""
    ys, xs = np.nonzero(mask)
    assert mask.mean() > 0.02, mask.mean()
    assert 0 < xs.min() and xs.max() < mask.shape[1] - 1 and 0 < ys.min() and ys.max() < mask.shape[0] - 1
    assert abs(xs.mean() / mask.shape[1] - 0.5) < 0.2 and abs(ys.mean() / mask.shape[0] - 0.5) < 0.2


def test_quadruped_frames(quadruped):
    model, trajectory = quadruped
    frames = viewer.render(model, trajectory)
    assert frames.shape == (20, SIZE[1], SIZE[0], 3) and frames.dtype == np.uint8
    one = jax.tree.map(lambda x: x[0, 0], trajectory)
    _in_view(_silhouette(model, one))
    # a camera tracking the base draws what a still camera at the base's position draws
    tracking = viewer.fit_camera(model, one, viewer.Camera(track="base"))
    assert tracking.lookat is None and tracking.distance > 0.5
    still = viewer.Camera(lookat=tuple(np.asarray(one.q[:3])), distance=tracking.distance)
    assert np.array_equal(viewer.render(model, one, camera=tracking), viewer.render(model, one, camera=still))
    # the robot moved under random torques: the first and last frames differ where it is drawn
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).sum(axis=-1).max() > 60


def test_go2_frames():
    model = jaxmor.robots.go2()
    state = jaxmor.init_state(model, q=jnp.asarray(jaxmor.robots.go2_standing_q(model)))
    frames = viewer.render(model, state)
    assert frames.shape == (1, SIZE[1], SIZE[0], 3)
    _in_view(_silhouette(model, state))


def test_video_and_still_default_to_the_renderer(quadruped, tmp_path):
    from PIL import Image

    model, trajectory = quadruped
    gif = viewer.write_video(model, trajectory, tmp_path / "run.gif", size=(320, 240), stride=4)
    with Image.open(gif) as video:
        assert video.size == (320, 240) and video.n_frames == 5
    png = viewer.write_image(model, trajectory, tmp_path / "still.png", frame=0, size=(320, 240))
    drawn = viewer.render(model, trajectory, frames=[0], size=(320, 240))[0]
    with Image.open(png) as still:
        assert np.array_equal(np.asarray(still.convert("RGB")), drawn)


def test_bad_arguments_are_argument_errors(quadruped, tmp_path):
    model, trajectory = quadruped
    cases = [
        (dict(camera=viewer.Camera(elevation=95.0)), "camera.elevation"),
        (dict(camera=viewer.Camera(distance=-1.0)), "camera.distance"),
        (dict(camera=viewer.Camera(track="tail")), "camera.track must name a body"),
        (dict(camera=viewer.Camera(world=2)), r"camera.world must be in \[0, 2\)"),
        (dict(camera=viewer.Camera(lookat=(0.0, 1.0))), "camera.lookat"),
        (dict(camera="front"), "camera must be a jaxmor.viewer.Camera"),
        (dict(frames=[20]), "frames must be"),
        (dict(size=(8, 8)), "size must be"),
        (dict(colour="red"), "unknown viewer option"),
    ]
    for kwargs, message in cases:
        with pytest.raises(jaxmor.ArgumentError, match=message):
            viewer.render(model, trajectory, **kwargs)
    with pytest.raises(jaxmor.ArgumentError, match="engine must be one of"):
        viewer.write_video(model, trajectory, tmp_path / "x.gif", engine="povray")
    with pytest.raises(jaxmor.ArgumentError, match="camera= is for engine='mujoco'"):
        viewer.write_image(model, trajectory, tmp_path / "x.png", engine="page", camera=viewer.Camera())


@pytest.mark.slow  # 30 s on 2 cores, most of it the Go2 environment's reset compiled; the default run is at its budget
def test_worlds_on_a_terrain_are_drawn_where_they_stand():
    """64 Go2 worlds spawned over a rough terrain: drawn in place (no side-by-side offsets), each world's feet
    project into the drawn robots' silhouette, in one view that frames them all."""
    from jaxmor.train.run import RunConfig, make_env

    env = make_env(RunConfig(robot="go2", terrain="rough"), curriculum=False, randomization=None)
    reset = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 64))
    sims, feet = reset.sim, np.asarray(reset.data.feet.position).reshape(-1, 3)
    assert np.ptp(feet[:, 1]) > 4.0  # spread over the terrain's rows of levels
    options = dict(geometry="collision", world_axis=1)
    trajectory = jax.tree.map(lambda x: x[None], sims)  # (T = 1, W = 64, ...)
    camera = viewer.fit_camera(env.model, trajectory, viewer.Camera(elevation=-50.0), **options)
    image = viewer.render(env.model, trajectory, camera=camera, **options)[0]
    empty = viewer.render(env.model, _away(trajectory), camera=camera, **options)[0]
    drawn = np.abs(image.astype(int) - empty.astype(int)).sum(axis=-1) > 30
    pixels = _projected(feet, camera.lookat, camera.distance, camera.azimuth, camera.elevation, camera.fovy)
    inside = (pixels >= 0).all(axis=1) & (pixels[:, 0] < SIZE[0]) & (pixels[:, 1] < SIZE[1])
    assert inside.all()
    x, y = pixels.astype(int).T
    # a foot (a 2 cm sphere, a few pixels across at this distance) is drawn at, or one pixel beside, its projection
    near = np.zeros_like(drawn)
    near[1:-1, 1:-1] = drawn[1:-1, 1:-1] | drawn[:-2, 1:-1] | drawn[2:, 1:-1] | drawn[1:-1, :-2] | drawn[1:-1, 2:]
    assert near[y, x].mean() > 0.95, near[y, x].mean()
