"""jaxmor.viewer: trajectory pages opened in real headless Chromium with no network, videos and stills.

One short quadruped rollout (4 worlds, compiled once) feeds every page; one browser serves the module. The browser
tests skip only where Playwright or a Chromium is missing.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor

pytest.importorskip("viser")
from reference import robot_urdf  # noqa: E402

from jaxmor import viewer  # noqa: E402
from jaxmor.viewer import capture  # noqa: E402

GO2 = Path(__file__).parent / "data" / "unitree_go2" / "scene.xml"
SOLO = "solo_description/robots/solo12.urdf"
STEPS, WORLDS = 30, 4
SIZE = (400, 300)


@pytest.fixture(scope="module")
def quadruped():
    """The quadruped on the ground, 4 worlds x 30 steps of random torques: (model, trajectories (W, T, ...))."""
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    stand = jnp.asarray(jaxmor.robots.quadruped_standing_q(model))
    worlds = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(stand, (WORLDS, 1)))
    torques = jax.random.uniform(jax.random.key(0), (WORLDS, STEPS, model.na), minval=-30.0, maxval=30.0)
    _, trajectory = jax.jit(lambda w, t: jaxmor.rollout_batch(model, w, t))(worlds, torques)
    return model, trajectory


def _browser_or_skip():
    pytest.importorskip("playwright")
    if capture.browser_path() is None:
        pytest.skip("no Chromium: apt-get install chromium (or playwright install chromium)")


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module: ``(context, offline)`` (offline.blocked: the aborted requests)."""
    _browser_or_skip()
    try:
        with capture.browser(SIZE) as opened:
            yield opened
    except Exception as exc:  # a Chromium that cannot start here (no shared memory, ...)
        pytest.skip(f"Chromium did not start: {exc}")


# Stills and videos launch their own browser: they run before the module's browser opens (Playwright's sync
# API runs one at a time in a thread).


@pytest.mark.slow  # 55-70 s on 2 cores; the Quickstart runs the demo, test_four_worlds_side_by_side the capture
def test_demo_writes_a_gif(tmp_path, capsys):
    _browser_or_skip()
    from PIL import Image

    from jaxmor.tools import cli

    out = tmp_path / "demo.gif"
    code = cli.main(["demo", "--worlds", "2", "--seconds", "0.04", "--out", str(tmp_path), "--video", str(out)])
    assert code == 0, capsys.readouterr()
    with Image.open(out) as gif:
        assert gif.size == capture.DEFAULT_SIZE
        assert gif.n_frames >= 10
        frames = []
        for k in (0, gif.n_frames - 1):
            gif.seek(k)
            frames.append(np.asarray(gif.convert("RGB")))
    _drawn(frames[0])


def test_still_and_trajectory_file_round_trip(quadruped, tmp_path):
    _browser_or_skip()
    from PIL import Image

    model, trajectory = quadruped
    saved = viewer.save_trajectory(tmp_path / "run.npz", model, trajectory)
    loaded_model, states = viewer.load_trajectory(saved)
    assert loaded_model.ground and np.allclose(states.q, trajectory.q)
    png = viewer.write_image(loaded_model, states, tmp_path / "still.png", size=SIZE)
    with Image.open(png) as image:
        assert image.size == SIZE
        _drawn(np.asarray(image.convert("RGB")))


def _open(context, path: Path):
    """The page, with its script errors and console errors collected in ``page.problems``."""
    problems = []
    page = context.new_page()
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("canvas[data-engine]")
    page.wait_for_selector(".mantine-Slider-root")
    page.add_style_tag(content=capture._HIDE)
    page.wait_for_timeout(capture.LOAD_MS)
    page.locator("button:has(svg.tabler-icon-player-pause-filled)").first.dispatch_event("click")
    page.problems = problems
    return page


def _drawn(image: np.ndarray) -> None:
    """The canvas shows a scene: varied pixels, many colours."""
    colours = len(np.unique(image.reshape(-1, 3), axis=0))
    assert image.std() > 5.0 and colours > 50, (image.std(), colours)


def _scrub(page, fraction: float) -> np.ndarray:
    """Click the playback slider at ``fraction`` of its track, then capture the canvas."""
    box = page.locator(".mantine-Slider-root").bounding_box()
    page.mouse.click(box["x"] + fraction * box["width"], box["y"] + box["height"] / 2)
    page.wait_for_timeout(capture.SEEK_MS * 2)
    return capture.capture(page)


def _check_page(browser, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Open offline, no requests out, no errors, a drawn canvas, and scrubbing changes it; the two captures."""
    context, offline = browser
    offline.blocked.clear()
    page = _open(context, path)
    first = _scrub(page, 0.02)
    later = _scrub(page, 0.95)
    assert offline.blocked == [], offline.blocked
    assert page.problems == [], page.problems
    _drawn(first)
    assert np.abs(first.astype(int) - later.astype(int)).mean() > 0.05, "scrubbing did not change the picture"
    page.close()
    return first, later


def test_quadruped_page_opens_offline_and_scrubs(quadruped, browser, tmp_path):
    model, trajectory = quadruped
    one_world = jax.tree.map(lambda x: x[0], trajectory)
    path = viewer.write_html(model, one_world, tmp_path / "quadruped.html", contacts=True, actuators=True)
    text = path.read_text()
    assert "window.__VISER_EMBED_DATA__" in text  # the recording is inlined, and so is the client:
    assert not re.findall(r'<(?:script|link)\b[^>]*(?:src|href)="(?:https?:)?//', text)
    _check_page(browser, path)


def test_four_worlds_side_by_side(quadruped, browser, tmp_path):
    model, trajectory = quadruped
    path = viewer.write_html(model, trajectory, tmp_path / "worlds.html")
    first, _ = _check_page(browser, path)
    single = viewer.write_html(model, jax.tree.map(lambda x: x[:1], trajectory), tmp_path / "one.html")
    context, _ = browser
    page = _open(context, single)
    alone = _scrub(page, 0.02)
    page.close()
    assert np.abs(first.astype(int) - alone.astype(int)).mean() > 0.5  # more robots drawn


def _static(model) -> jaxmor.State:
    """Two frames of the default pose, the second with the joints moved, so that scrubbing changes the picture."""
    q0 = np.asarray(jaxmor.neutral_q(model))
    q1 = q0.copy()
    q1[np.array(model.joint_q)] += 0.6
    state = jaxmor.init_state(model)
    return jax.tree.map(lambda x: jnp.stack([x, x]), state).replace(
        q=jnp.asarray(np.stack([q0, q1]), state.q.dtype), time=jnp.asarray([0.0, 0.1], state.time.dtype)
    )


# The Go2's meshes take a browser 100 s to draw on 2 cores; solo12's draw the same code path in 13 s.
@pytest.mark.parametrize("robot", ["solo12 (URDF)", pytest.param("go2 (MJCF)", marks=pytest.mark.slow)])
def test_meshed_robots_draw_their_visual_meshes(robot, browser, tmp_path):
    if robot.startswith("solo"):
        path = robot_urdf(SOLO)
        if path is None:
            pytest.skip("example-robot-data is not installed")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = jaxmor.load_urdf(path, meshes="ignore")
    else:
        pytest.importorskip("trimesh")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = jaxmor.load_mjcf(GO2, meshes="ignore")
    model = jaxmor.add_ground(model)
    parts = viewer.scene.scene_parts(model, viewer.ViewOptions())
    meshes = [p for p in parts if p.name.startswith("visual/")]
    assert sum(len(p.faces) > 100 for p in meshes) >= 10  # the files' meshes, not primitives
    page = viewer.write_html(model, _static(model), tmp_path / "robot.html", geometry="visual")
    _check_page(browser, page)


def test_bad_input_is_an_argument_error(quadruped, tmp_path):
    model, trajectory = quadruped
    with pytest.raises(jaxmor.ArgumentError, match="states.q must be"):
        viewer.write_html(model, trajectory.replace(q=trajectory.q[..., :3]), tmp_path / "x.html")
    with pytest.raises(jaxmor.ArgumentError, match="geometry must be one of"):
        viewer.write_html(model, trajectory, tmp_path / "x.html", geometry="wire")
    with pytest.raises(jaxmor.ArgumentError, match="unknown viewer option"):
        viewer.write_html(model, trajectory, tmp_path / "x.html", colour="red")
    with pytest.raises(jaxmor.ArgumentError, match="a video is written as"):
        viewer.write_video(model, trajectory, tmp_path / "x.avi")
    with pytest.raises(jaxmor.ArgumentError, match="has no visuals"):
        viewer.write_html(model, trajectory, tmp_path / "x.html", geometry="visual")


def test_a_damaged_trajectory_file_is_an_argument_error_naming_it(quadruped, tmp_path, monkeypatch):
    """Each entry of a trajectory file is checked against the State's kind and shape: strings in ``time`` or a
    complex ``q`` are refused (a traceback and a silent acceptance before), as are a header of the wrong type and a
    file over MAX_TRAJECTORY_BYTES (from the archive's declared sizes)."""
    from jaxmor.viewer import trajectory as files

    model, trajectory = quadruped
    saved = viewer.save_trajectory(tmp_path / "run.npz", model, trajectory)
    data = dict(np.load(saved))
    edits = {
        "time holds strings": ({"state.time": np.full(data["state.time"].shape, "x")}, r"state\.time is str32"),
        "complex q": ({"state.q": data["state.q"].astype(np.complex64)}, r"state\.q is complex64"),
        "q of another shape": ({"state.q": data["state.q"][..., :5]}, "its q does not fit"),
        "a bool of wrong shape": ({"state.nonfinite": data["state.q"]}, r"state\.nonfinite is float"),
        "a string version": ({"jaxmor_trajectory": np.str_("1")}, "not a jaxmor trajectory file"),
        "a negative time step": ({"timestep": np.float64(-1.0)}, "timestep must be a positive finite"),
    }
    for change, message in edits.values():
        np.savez(tmp_path / "bad.npz", **{**data, **change})
        with pytest.raises(jaxmor.ArgumentError, match=message):
            viewer.load_trajectory(tmp_path / "bad.npz")
    monkeypatch.setattr(files, "MAX_TRAJECTORY_BYTES", 1000)
    with pytest.raises(jaxmor.ArgumentError, match="more than MAX_TRAJECTORY_BYTES"):
        viewer.load_trajectory(saved)


def _same_model(a: jaxmor.Model, b: jaxmor.Model) -> None:
    assert jax.tree.structure(a) == jax.tree.structure(b)  # the static fields (counts, names, tables) too
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(x, y)


def test_a_trajectory_file_keeps_the_models_edits(tmp_path):
    """A model edited after loading (a height field on its ground, then 3 worlds of randomized masses) is saved with
    its trajectory and loaded leaf for leaf (the robot file alone would give neither); a damaged model entry is
    refused as a checkpoint's is, and a version-1 file (no model) still loads from its robot file."""
    from jaxmor.modeling.checkpoint import MODEL_ENTRY

    base = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    field = jaxmor.with_height_field(base, np.arange(25.0).reshape(5, 5) * 0.01, 0.5, (-1.0, -1.0))
    worlds, *_ = jaxmor.randomize(field, jax.random.key(3), 3, {"body.mass": jaxmor.scale(0.9, 1.1)})
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (3, 2, *jnp.shape(x))), jaxmor.init_state(field))
    saved = viewer.save_trajectory(tmp_path / "run.npz", worlds, states)
    loaded, loaded_states = viewer.load_trajectory(saved)
    _same_model(loaded, worlds)
    assert np.asarray(loaded.body_mass).shape == (3, base.nb) and loaded.height_field is not None
    np.testing.assert_array_equal(loaded_states.q, states.q)
    data = dict(np.load(saved))
    damaged = {k: v for k, v in data.items() if k != "model/body_mass"}
    np.savez(tmp_path / "damaged.npz", **damaged)
    with pytest.raises(jaxmor.ModelError, match=r"body_mass"):
        viewer.load_trajectory(tmp_path / "damaged.npz")
    # A version-1 file held the states of the robot file's model (a height field's vertex slots change their shapes).
    plain_states = jax.tree.map(lambda x: jnp.broadcast_to(x, (2, *jnp.shape(x))), jaxmor.init_state(base))
    plain = dict(np.load(viewer.save_trajectory(tmp_path / "plain.npz", base, plain_states)))
    old = {k: v for k, v in plain.items() if not k.startswith(("model/", MODEL_ENTRY))}
    old["jaxmor_trajectory"] = np.int64(1)
    np.savez(tmp_path / "v1.npz", **old)
    from_robot, _ = viewer.load_trajectory(tmp_path / "v1.npz")
    assert from_robot.height_field is None and np.asarray(from_robot.body_mass).shape == (base.nb,)


def test_import_jaxmor_does_not_import_viser():
    import subprocess
    import sys

    code = "import sys, jaxmor; assert 'viser' not in sys.modules and 'jaxmor.viewer' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_readers_keep_visuals_and_shapes_are_closed():
    from jaxmor.io.urdf import parse_urdf
    from jaxmor.viewer import shapes

    text = """<robot name="r"><material name="red"><color rgba="1 0 0 1"/></material>
      <link name="a"><visual><origin xyz="0 0 0.1"/><geometry><box size="0.2 0.2 0.2"/></geometry>
      <material name="red"/></visual><visual><geometry><mesh filename="missing.stl"/></geometry></visual>
      <visual><geometry><sphere radius="x"/></geometry></visual></link></robot>"""
    (visual,) = parse_urdf(text).links[0].visuals  # the missing mesh and the bad number are left out
    assert visual.kind == "box" and visual.rgba == (1.0, 0.0, 0.0, 1.0) and np.allclose(visual.size, 0.1)
    for vertices, faces in (shapes.box(np.ones(3)), shapes.capsule(0.1, 0.2), shapes.cylinder(0.1, 0.2)):
        volume = np.einsum("ij,ij->i", vertices[faces[:, 0]], np.cross(vertices[faces[:, 1]], vertices[faces[:, 2]]))
        assert volume.sum() > 0 and faces.max() < len(vertices)
