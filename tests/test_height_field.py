"""The ground's height field (``jaxmor.with_height_field``, MJCF ``<hfield>``), float64.

* **Slopes**: a plane sampled on the grid is that plane exactly (two triangles per cell), so a sphere rolling, a box
  sliding, a box sticking and a capsule sliding on a height-field slope move exactly as on flat ground under gravity
  turned by the slope's angle (the same geometry in a rotated frame): equal to 1e-9 m over 1 s, and both within
  O(h) of the closed forms (5/7 g sin(theta) rolling, g (sin(theta) - mu cos(theta)) sliding, at rest when
  mu > tan(theta)).
* **A step**, against MuJoCo's ``hfield`` on the same grid: a sphere, a capsule, a box, a turned box and a cylinder
  come to rest at MuJoCo's heights within its soft-contact sink (measured 2e-5 to 7e-5 m; tolerance 2e-4 m).
* **Vertices inside boxes and hulls**: a box tilts onto a bump under its face and rests where MuJoCo's hfield
  collision puts it (within 1 mm); on rough terrain no field vertex ends deeper than 1 mm inside a box or a hull.
* The step's program does not grow with the grid (the same operations for 20 x 20 and 400 x 400 vertices); per-world
  heights batch; gradients reach the heights; binary files load as MuJoCo's; bad fields are refused with the file
  and line.
"""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.errors import ArgumentError, ModelError

mujoco = pytest.importorskip("mujoco")

THETA = 0.2  # the slope [rad]
G = 9.81
RADIUS = 0.1


def _load(xml: str) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(xml)


def _body(geom: str, gravity: str = "0 0 -9.81") -> jaxmor.Model:
    return _load(
        f'<mujoco><option timestep="0.001" gravity="{gravity}"/><worldbody><body name="b"><freejoint/>{geom}'
        "</body></worldbody></mujoco>"
    )


def _slope_field(model: jaxmor.Model, mu: float) -> jaxmor.Model:
    """The model on a height field sampled from the plane ``z = -tan(THETA) x`` (downhill towards +x)."""
    xs = np.linspace(-4.0, 4.0, 33)
    heights = np.broadcast_to(-np.tan(THETA) * xs, (33, 33))
    return jaxmor.with_height_field(model, heights, spacing=0.25, origin=(-4.0, -4.0), friction=mu)


GEOMS = {
    "rolling sphere": (f'<geom type="sphere" size="{RADIUS}" mass="1" friction="1"/>', 1.0, 5 / 7 * G * np.sin(THETA)),
    "sliding box": (
        '<geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.1"/>',
        0.1,
        G * (np.sin(THETA) - 0.1 * np.cos(THETA)),
    ),
    "sticking box": ('<geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.5"/>', 0.5, 0.0),
    "sliding capsule": (  # along the slope: it slides on its two end spheres, it cannot roll
        f'<geom type="capsule" size="{RADIUS}" fromto="-0.2 0 0 0.2 0 0" mass="1" friction="0.1"/>',
        0.1,
        G * (np.sin(THETA) - 0.1 * np.cos(THETA)),
    ),
}


@pytest.mark.parametrize("case", sorted(GEOMS))
def test_on_a_sampled_slope_as_on_a_plane_under_turned_gravity(case):
    geom, mu, acceleration = GEOMS[case]
    field = _slope_field(_body(geom), mu)
    turned = _body(geom, gravity=f"{G * np.sin(THETA)} 0 {-G * np.cos(THETA)}")
    turned = jaxmor.add_ground(turned, friction=mu)
    # Resting on the surface: on the field turned by THETA about y at the origin, on the plane upright.
    c, s = np.cos(THETA), np.sin(THETA)
    q_field = np.array([RADIUS * s, 0, RADIUS * c, np.cos(THETA / 2), 0, np.sin(THETA / 2), 0])
    q_plane = np.array([0, 0, RADIUS, 1, 0, 0, 0])
    run = jax.jit(lambda m, s: jaxmor.rollout(m, s, n_steps=1000)[1])
    along_field = run(field, jaxmor.init_state(field, q=jnp.asarray(q_field)))
    along_plane = run(turned, jaxmor.init_state(turned, q=jnp.asarray(q_plane)))
    rotation = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])  # columns: downhill, y, the normal
    positions = np.asarray(along_field.q[:, :3]) @ rotation  # world -> slope frame
    np.testing.assert_allclose(positions[:, 0], along_plane.q[:, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(positions[:, 2], along_plane.q[:, 2], rtol=0, atol=1e-9)  # on the surface
    closed = 0.5 * acceleration * 1.0**2
    assert abs(float(positions[-1, 0]) - closed) < 2e-3 + 1e-2 * closed, (positions[-1, 0], closed)


STEP = np.zeros((21, 21))
STEP[:, 11:] = 1.0  # a 0.1 m step at x = 0.1: row-major (y, x), row 0 at the smallest y
ON_THE_STEP = {
    "sphere": ('<geom type="sphere" size="0.1" mass="1"/>', -0.5),
    "capsule": ('<geom type="capsule" size="0.05" fromto="-0.2 0 0 0.2 0 0" mass="1"/>', 0.6),
    "box": ('<geom type="box" size="0.1 0.15 0.05" mass="1"/>', 0.6),
    "turned box": ('<geom type="box" size="0.1 0.15 0.05" mass="1" euler="0 0 0.3"/>', -0.6),
    "cylinder": ('<geom type="cylinder" size="0.08 0.05" mass="1"/>', 0.6),
}


def _step_scene(geom: str, x: float) -> str:
    elevation = " ".join(str(v) for v in STEP[::-1].ravel())  # MuJoCo's elevation: the first row at the largest y
    return (
        '<mujoco><option timestep="0.002"/><asset><hfield name="h" nrow="21" ncol="21" size="1 1 0.1 0.1" '
        f'elevation="{elevation}"/></asset><worldbody><geom name="terrain" type="hfield" hfield="h"/>'
        f'<body pos="{x} 0 0.4"><freejoint/>{geom}</body></worldbody></mujoco>'
    )


@pytest.mark.parametrize("case", sorted(ON_THE_STEP))
def test_rest_heights_on_a_step_equal_mujocos_hfield(case):
    xml = _step_scene(*ON_THE_STEP[case])
    model = _load(xml)
    assert model.height_field is not None and model.height_field.heights.shape == (21, 21)
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1000))(jaxmor.init_state(model))
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for _ in range(1000):
        mujoco.mj_step(m, d)
    assert abs(float(final.q[2]) - d.qpos[2]) < 2e-4, (float(final.q[2]), d.qpos[2])
    assert float(jnp.abs(final.u).max()) < 1e-3  # at rest


BUMP = np.zeros((21, 21))
BUMP[10, 10] = 1.0  # one vertex raised to the field's height scale, 3 cm, at the centre


def _bump_scene() -> str:
    elevation = " ".join(str(v) for v in BUMP[::-1].ravel())
    return (
        '<mujoco><option timestep="0.002"/><asset><hfield name="h" nrow="21" ncol="21" size="1 1 0.03 0.1" '
        f'elevation="{elevation}"/></asset><worldbody><geom name="terrain" type="hfield" hfield="h"/>'
        '<body pos="0.02 -0.03 0.2"><freejoint/><geom type="box" size="0.15 0.15 0.1" mass="1"/></body>'
        "</worldbody></mujoco>"
    )


def _depths(vertices: np.ndarray, q: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """(V,) how deep each world vertex lies inside a convex body at the free-joint pose ``q`` (7,), whose faces are
    ``planes`` (P, 4) in its body frame (scipy's ``n . x + d <= 0`` inside): > 0 inside [m]."""
    w, x, y, z = q[3:7] / np.linalg.norm(q[3:7])
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    local = (vertices - q[:3]) @ rotation  # R^T (v - p), row-wise
    return -np.max(local @ planes[:, :3].T + planes[:, 3], axis=1)


def _field_vertices(model: jaxmor.Model) -> np.ndarray:
    field = model.height_field
    heights = np.asarray(field.heights)
    ny, nx = heights.shape
    x, y = np.meshgrid(np.arange(nx) * float(field.spacing[0]), np.arange(ny) * float(field.spacing[1]))
    return np.stack([x + float(field.origin[0]), y + float(field.origin[1]), heights], -1).reshape(-1, 3)


def _box_planes(half: np.ndarray) -> np.ndarray:
    return np.concatenate([np.concatenate([np.eye(3), -np.eye(3)]), -np.concatenate([half, half])[:, None]], 1)


def test_a_box_rests_on_a_bump_under_its_face_where_mujoco_does():
    """One field vertex 3 cm high under a box's bottom face, off its centre: the box tilts onto it and rests where
    MuJoCo's hfield collision puts it (0.3 mm apart as measured; the bar is 1 mm), the bump at most 1 mm inside
    it. A box meeting the field only at its 4 lowest corners would lie flat at z = 0.1 with the bump 3 cm inside."""
    xml = _bump_scene()
    model = _load(xml)
    assert model.height_field.window == 8  # 2 ceil(0.25 m / 0.1 m) + 2: the box's footprint wherever its centre lies
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1500))(jaxmor.init_state(model))
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    for _ in range(1500):
        mujoco.mj_step(m, d)
    assert abs(float(final.q[2]) - d.qpos[2]) < 1e-3 and d.qpos[2] > 0.12, (float(final.q[2]), d.qpos[2])
    assert float(jnp.abs(final.u).max()) < 1e-3  # at rest
    depth = _depths(_field_vertices(model), np.asarray(final.q), _box_planes(np.array([0.15, 0.15, 0.1])))
    assert depth.max() < 1e-3, depth.max()


def _rough_scene(tmp_path) -> jaxmor.Model:
    """A box and a hull foot (an octagonal prism, centred on its origin) dropped on generated rough terrain."""
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.cylinder(radius=0.06, height=0.08, sections=8).export(tmp_path / "foot.stl")
    (tmp_path / "scene.xml").write_text(
        '<mujoco><option timestep="0.002"/><asset><mesh name="foot" file="foot.stl"/></asset><worldbody>'
        '<body name="box" pos="0.7 1.0 0.3" euler="5 -4 20"><freejoint/><geom type="box" size="0.12 0.08 0.05" '
        'mass="1"/></body><body name="foot" pos="1.3 1.0 0.3" euler="0 3 0"><freejoint/>'
        '<geom type="mesh" mesh="foot" mass="0.5"/></body></worldbody></mujoco>'
    )
    model = _load(str(tmp_path / "scene.xml"))
    rough = jaxmor.terrain.Parameters(platform=0.0)  # no flat centre
    terrain = jaxmor.terrain.generate(levels=1, kinds=("rough",), size=2.0, resolution=0.05, seed=3, parameters=rough)
    return terrain.on(model), trimesh.load(tmp_path / "foot.stl")


def test_no_field_vertex_enters_a_box_or_a_hull_on_rough_terrain(tmp_path):
    """On generated rough terrain (bumps of up to +-8 cm on a 5 cm grid), a box and a convex hull foot come to rest
    with no field vertex deeper than 1 mm inside either (the issue's bar; computed here from the final poses and the
    shapes' own planes, scipy's hull of the STL for the foot)."""
    from scipy.spatial import ConvexHull

    model, foot = _rough_scene(tmp_path)
    assert model.height_field.window == 2 * int(np.ceil(np.linalg.norm([0.12, 0.08, 0.05]) / 0.05)) + 2
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1500))(jaxmor.init_state(model))
    assert not bool(final.nonfinite) and float(jnp.abs(final.u).max()) < 1e-2  # settled
    q, vertices = np.asarray(final.q), _field_vertices(model)
    box = _depths(vertices, q[:7], _box_planes(np.array([0.12, 0.08, 0.05])))
    hull = _depths(vertices, q[7:14], ConvexHull(np.asarray(foot.vertices)).equations)
    assert box.max() < 1e-3 and hull.max() < 1e-3, (box.max(), hull.max())
    assert (box > -0.01).sum() >= 3 and (hull > -0.01).sum() >= 1  # resting on the field, not hovering


def test_the_window_follows_the_geoms_that_meet_the_field():
    """The window covers each box's and hull's footprint; it is refitted when geoms are combined in or their ground
    contact changes; a geom wider than MAX_WINDOW vertices is named in a warning."""
    from jaxmor.sim.collision.height_field import MAX_WINDOW

    sphere = _body('<geom type="sphere" size="0.1" mass="1"/>')
    field = jaxmor.with_height_field(sphere, np.zeros((30, 30)), spacing=0.1)
    assert field.height_field.window == 0  # no box or hull: no vertex slots
    box = _body('<geom name="crate" type="box" size="0.3 0.2 0.1" mass="1"/>')
    combined = jaxmor.combine(field, box, prefix="c/", position=(1.0, 1.0, 0.5))
    assert combined.height_field.window == 2 * 4 + 2  # radius 0.374 m over 0.1 m
    assert jaxmor.with_ground_contact(combined, ["geom0"]).height_field.window == 0  # the crate no longer touches
    with pytest.warns(UserWarning, match=r"geoms \['crate'\] span more than 16 height-field vertices"):
        wide = jaxmor.with_height_field(box, np.zeros((30, 30)), spacing=0.02)
    assert wide.height_field.window == MAX_WINDOW


def _operations(model) -> list[str]:
    state = jaxmor.init_state(model)
    text = jax.jit(jaxmor.step).lower(model, state).as_text()
    return sorted(re.findall(r"stablehlo\.\w+", text))


def test_the_program_does_not_grow_with_the_grid():
    body = _body('<geom type="sphere" size="0.1" mass="1"/>')
    small = jaxmor.with_height_field(body, np.zeros((20, 20)), spacing=0.1)
    large = jaxmor.with_height_field(body, np.zeros((400, 400)), spacing=0.005)
    assert _operations(small) == _operations(large)


@pytest.mark.slow
def test_worlds_batched_over_their_heights_and_the_gradient_reaches_them():
    body = _body('<geom type="sphere" size="0.1" mass="1"/>')
    base = jaxmor.with_height_field(body, np.zeros((5, 5)), spacing=1.0, origin=(-2.0, -2.0))
    state = jaxmor.init_state(base, q=jnp.array([0.3, 0.2, 0.35, 1, 0, 0, 0]))

    def rest(raise_by):
        field = base.height_field.replace(heights=base.height_field.heights + raise_by)
        return jaxmor.rollout(base.replace(height_field=field), state, n_steps=300)[0].q[2]

    heights = jax.jit(jax.vmap(rest))(jnp.array([0.0, 0.1, 0.2]))
    np.testing.assert_allclose(heights, [0.1, 0.2, 0.3], rtol=0, atol=1e-6)
    assert float(jax.jit(jax.grad(rest))(0.1)) == pytest.approx(
        1.0, abs=1e-6
    )  # the resting sphere rises with the field


def test_a_binary_file_loads_as_mujocos(tmp_path):
    data = np.arange(12, dtype=np.float32).reshape(3, 4) ** 2  # rows at increasing y in MuJoCo's binary format
    with open(tmp_path / "terrain.bin", "wb") as f:
        np.array([3, 4], dtype="<i4").tofile(f)
        data.astype("<f4").tofile(f)
    xml = (
        '<mujoco><asset><hfield name="h" file="terrain.bin" size="1.5 2 0.3 0.1"/></asset><worldbody>'
        '<geom type="hfield" hfield="h" pos="0.5 -1 0.2"/><body><freejoint/><geom size="0.1"/></body>'
        "</worldbody></mujoco>"
    )
    (tmp_path / "scene.xml").write_text(xml)
    model = _load(tmp_path / "scene.xml")
    m = mujoco.MjModel.from_xml_path(str(tmp_path / "scene.xml"))
    want = 0.2 + 0.3 * m.hfield_data.reshape(3, 4)  # MuJoCo keeps the normalized data in float32
    np.testing.assert_allclose(model.height_field.heights, want, rtol=0, atol=1e-7)
    np.testing.assert_allclose(model.height_field.origin, [0.5 - 1.5, -1 - 2], rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.height_field.spacing, [3.0 / 3, 4.0 / 2], rtol=0, atol=1e-12)


def test_grayscale_and_colour_pngs_load_as_mujocos(tmp_path):
    """A colour PNG's heights are its red channel, as MuJoCo's decoder (lodepng) turns colour into grey; the green and
    blue channels here differ from it, so their mean or a luminance would not match."""
    image = pytest.importorskip("PIL.Image")
    pixels = (np.arange(20).reshape(4, 5) ** 1.5).astype(np.uint8)
    image.fromarray(pixels, "L").save(tmp_path / "grey.png")
    colour = np.stack([pixels, pixels[::-1], 255 - pixels], axis=-1)
    image.fromarray(colour, "RGB").save(tmp_path / "colour.png")
    image.fromarray(np.concatenate([colour, colour[..., :1]], axis=-1), "RGBA").save(tmp_path / "alpha.png")
    for name in ("grey", "colour", "alpha"):
        (tmp_path / f"{name}.xml").write_text(
            f'<mujoco><asset><hfield name="h" file="{name}.png" size="1 1 0.4 0.1"/></asset><worldbody>'
            '<geom type="hfield" hfield="h" pos="0 0 0.1"/><body><freejoint/><geom size="0.1"/></body></worldbody>'
            "</mujoco>"
        )
        model = _load(tmp_path / f"{name}.xml")
        m = mujoco.MjModel.from_xml_path(str(tmp_path / f"{name}.xml"))
        want = 0.1 + 0.4 * m.hfield_data.reshape(4, 5)  # MuJoCo's rows: the image's last row first
        np.testing.assert_allclose(model.height_field.heights, want, rtol=0, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(_load(tmp_path / "colour.xml").height_field.heights, model.height_field.heights)


def test_a_png_with_too_many_pixels_is_refused_from_its_header(tmp_path):
    """A PNG height field over MAX_HFIELD_PIXELS (4096 x 4096) is refused from its header before it is decoded: an
    8,193 x 2,049 image of zeros is 17 KiB on disk and would take 134 MB decoded (a 196-megapixel one raised Pillow's
    own DecompressionBombError before)."""
    image = pytest.importorskip("PIL.Image")
    image.fromarray(np.zeros((2049, 8193), np.uint8), "L").save(tmp_path / "big.png", optimize=True)
    assert (tmp_path / "big.png").stat().st_size < 64 * 2**10
    (tmp_path / "big.xml").write_text(
        '<mujoco><asset><hfield name="h" file="big.png" size="1 1 0.4 0.1"/></asset><worldbody>'
        '<geom type="hfield" hfield="h"/><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>'
    )
    with pytest.raises(ModelError, match=r"a PNG of 8193 x 2049 pixels, more than MAX_HFIELD_PIXELS \(16,777,216\)"):
        _load(tmp_path / "big.xml")


def test_a_field_without_data_is_flat_as_mujoco_starts_it():
    """``<hfield nrow ncol size>`` without elevation or file: MuJoCo starts its data at 0 (a program may fill it at
    run time); jaxmor loads the same flat field at the geom's height, and says so."""
    xml = (
        '<mujoco><asset>\n<hfield name="h" nrow="3" ncol="4" size="1 1 0.5 0.1"/></asset><worldbody>'
        '<geom type="hfield" hfield="h" pos="0 0 0.25"/><body><freejoint/><geom size="0.1"/></body></worldbody>'
        "</mujoco>"
    )
    with pytest.warns(UserWarning, match=r"<string>:2: hfield 'h' has no elevation data: its heights are all 0"):
        model = _load(xml)
    m = mujoco.MjModel.from_xml_string(xml)
    assert m.hfield_nrow[0] == 3 and not np.any(m.hfield_data)
    np.testing.assert_array_equal(model.height_field.heights, np.full((3, 4), 0.25, np.float32))


def test_dm_controls_quadruped_field_without_data_is_flat_as_mujoco_starts_it():
    """The dm_control suite's ``quadruped.xml`` (its wheel) declares a 201 x 201 field without data (its task fills
    it at run time): MuJoCo's data is all 0, jaxmor's field is flat at the geom's height, -0.01 m, 60 m wide, with
    the warning naming the file's line."""
    from reference import mjcf_model

    path = mjcf_model("quadruped")
    if path is None:
        pytest.skip("dm-control is not installed (the test extra)")
    with pytest.warns(UserWarning, match=r"quadruped\.xml:13: hfield 'terrain' has no elevation data"):
        model = _load(str(path))
    m = mujoco.MjModel.from_xml_path(str(path))
    assert (m.hfield_nrow[0], m.hfield_ncol[0]) == (201, 201) and not np.any(m.hfield_data)
    field = model.height_field
    np.testing.assert_array_equal(field.heights, np.full((201, 201), -0.01))
    assert float(field.spacing[0]) * 200 == pytest.approx(60.0) and float(field.spacing[1]) * 200 == pytest.approx(60.0)


BAD = {
    "huge grid": ('<hfield name="h" nrow="5000" ncol="5000" size="1 1 0.1 0.1"/>', "exceeds the 16,777,216 samples"),
    "no size": ('<hfield name="h" nrow="2" ncol="2" elevation="0 0 0 1"/>', "needs size="),
    "short elevation": ('<hfield name="h" nrow="2" ncol="2" size="1 1 0.1 0.1" elevation="0 0 1"/>', "needs 4 numbers"),
    "rotated": (
        '<hfield name="h" nrow="2" ncol="2" size="1 1 0.1 0.1" elevation="0 0 0 1"/>',
        "a rotated height field",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_height_field_is_refused_naming_the_line(case):
    asset, reason = BAD[case]
    turn = ' euler="0 0 0.1"' if case == "rotated" else ""
    xml = f'<mujoco><asset>\n{asset}</asset><worldbody>\n<geom type="hfield" hfield="h"{turn}/></worldbody></mujoco>'
    with pytest.raises(ModelError, match=reason) as err:
        _load(xml)
    assert f":{3 if case == 'rotated' else 2}:" in str(err.value)


def test_the_api_checks_its_arguments():
    body = _body('<geom type="sphere" size="0.1" mass="1"/>')
    for kwargs, reason in (
        ({"heights": np.zeros(4), "spacing": 1.0}, "shape \\(ny, nx\\)"),
        ({"heights": np.full((2, 2), np.nan), "spacing": 1.0}, "heights must be finite"),
        ({"heights": np.zeros((2, 2)), "spacing": (1.0, 0.0)}, "spacing must be positive"),
        ({"heights": np.zeros((2, 2)), "spacing": 1.0, "origin": (0, 0, 0)}, "origin must be a number or a pair"),
        ({"heights": np.zeros((2, 2)), "spacing": 1.0, "friction": -1.0}, "friction must be >= 0"),
    ):
        with pytest.raises(ArgumentError, match=reason):
            jaxmor.with_height_field(body, **kwargs)


def test_the_heights_are_randomized_per_world():
    body = _body('<geom type="sphere" size="0.1" mass="1"/>')
    nominal = np.random.default_rng(1).uniform(0.0, 0.1, (6, 6))
    model = jaxmor.with_height_field(body, nominal, spacing=0.5)
    spec = {"terrain.heights": jaxmor.scale(0.5, 1.5, shared=True)}
    models, axes = jaxmor.randomize(model, jax.random.key(2), 4, spec)
    drawn = np.asarray(models.height_field.heights)
    assert drawn.shape == (4, 6, 6) and axes.height_field.heights == 0
    factors = drawn[:, 0, 0] / nominal[0, 0]
    np.testing.assert_allclose(drawn, factors[:, None, None] * nominal, rtol=1e-12)  # one factor per world
    assert factors.min() >= 0.5 and factors.max() <= 1.5 and len(np.unique(factors)) == 4
    with pytest.raises(ArgumentError, match="needs a model with a height field"):
        jaxmor.randomize(body, jax.random.key(2), 4, spec)
    frictions, _ = jaxmor.randomize(model, jax.random.key(3), 4, {"terrain.friction": jaxmor.uniform(0.4, 0.9)})
    drawn = np.asarray(frictions.height_field.friction)
    assert drawn.shape == (4,) and drawn.min() >= 0.4 and drawn.max() <= 0.9 and len(np.unique(drawn)) == 4


def test_a_checkpoint_and_a_combined_scene_keep_the_field(tmp_path):
    body = _body('<geom type="sphere" size="0.1" mass="1"/>')
    heights = np.random.default_rng(0).uniform(0.0, 0.1, (10, 10))
    model = jaxmor.with_height_field(body, heights, spacing=0.2, origin=(-1.0, -1.0), friction=0.6)
    jaxmor.save_checkpoint(tmp_path / "field.jaxmor", model, jaxmor.init_state(model))
    loaded, _ = jaxmor.load_checkpoint(tmp_path / "field.jaxmor")
    np.testing.assert_array_equal(loaded.height_field.heights, model.height_field.heights)
    assert float(loaded.height_field.friction) == 0.6
    bare, _ = jaxmor.load_checkpoint(_saved(tmp_path, body))
    assert bare.height_field is None  # a model without a field stays without one
    combined = jaxmor.combine(model, body, prefix="b/", position=(0.5, 0.0, 0.0))
    assert combined.height_field is model.height_field


def _saved(tmp_path, model):
    path = tmp_path / "bare.jaxmor"
    jaxmor.save_checkpoint(path, model, jaxmor.init_state(model))
    return path


GO2 = Path(__file__).parent / "data" / "unitree_go2"
KP, KD = 60.0, 3.0  # the stand's PD on the motors [Nm/rad, Nm s/rad], the same in both engines


def _go2_scene(folder: Path, kind: str) -> tuple[Path, np.ndarray]:
    """The Menagerie Go2 on a 3 m x 3 m height field (61 x 61 vertices): ``flat`` (zero), ``stairs`` (4 cm risers
    every 25 cm along x) or ``rough`` (uniform in [0, 4 cm], seeded); the files copied beside it (a model's files
    stay inside its folder)."""
    for name in ("go2.xml", "assets"):
        if not (folder / name).exists():
            (shutil.copytree if (GO2 / name).is_dir() else shutil.copy)(GO2 / name, folder / name)
    x = np.linspace(-1.5, 1.5, 61)
    grid = {
        "flat": np.zeros((61, 61)),
        "stairs": np.broadcast_to(np.floor((x + 1.5) / 0.25 + 1e-9) * 0.04, (61, 61)),
        "rough": np.random.default_rng(0).uniform(0.0, 0.04, (61, 61)),
    }[kind]
    top = max(float(grid.max()), 1e-3)
    elevation = " ".join(f"{v:.9f}" for v in (grid[::-1] / top).ravel())
    if kind == "flat":
        elevation = elevation.replace("0.000000000", "1.000000000", 1)  # MuJoCo normalizes: keep the field at 0
        top = 1e-9
    path = folder / f"{kind}.xml"
    path.write_text(
        f'<mujoco model="go2 on {kind}"><include file="go2.xml"/><option timestep="0.002"/><asset>'
        f'<hfield name="terrain" nrow="61" ncol="61" size="1.5 1.5 {top} 0.1" elevation="{elevation}"/></asset>'
        '<worldbody><geom name="terrain" type="hfield" hfield="terrain"/></worldbody></mujoco>'
    )
    return path, grid


def _stand(path: Path, ground: float) -> tuple[float, float, jaxmor.State, jaxmor.Model]:
    """2 s of the Go2 dropped 3 cm above its home pose on the field and held by a PD to it, in both engines:
    (jaxmor's final base height, MuJoCo's, jaxmor's final state, the model)."""
    model = _load(path)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qpos[2] += ground + 0.03
    home = d.qpos[7:].copy()

    def ctrl(q, u):
        return KP * (home - q[7:]) - KD * u[6:]

    def body(s, _):
        s = jaxmor.step(model, s.replace(ctrl=ctrl(s.q, s.u)))
        return s, s.q[2]

    state = jaxmor.init_state(model, q=jnp.asarray(d.qpos))
    final, heights = jax.jit(lambda s: jax.lax.scan(body, s, None, length=1000))(state)
    for _ in range(1000):
        d.ctrl[:] = ctrl(d.qpos, d.qvel)
        mujoco.mj_step(m, d)
    assert not bool(final.nonfinite) and float(heights.min()) > ground + 0.2  # never fell through
    return float(final.q[2]), float(d.qpos[2]), final, model


@pytest.mark.slow
def test_the_go2_stands_on_height_field_stairs_and_rough_ground_as_in_mujoco(tmp_path):
    """On flat, stair and rough fields the Go2 stands 2 s. Its feet rest on the surface (the four nearest contacts
    within 1 mm of it). Its base height differs from MuJoCo's on each field as it does on the flat one (MuJoCo's
    soft contacts and the stand's PD: 1.1 cm measured; each field's difference within 5 mm of the flat one's)."""
    offsets = {}
    for kind in ("flat", "stairs", "rough"):
        path, grid = _go2_scene(tmp_path, kind)
        ours, theirs, final, model = _stand(path, float(grid[30, 30]))
        offsets[kind] = ours - theirs
        gaps = jaxmor.collide(model, jaxmor.sim.kinematics.body_poses(model, final.q)).distance
        nearest = np.sort(np.asarray(gaps))[:4]
        assert np.abs(nearest).max() < 1e-3, (kind, nearest)  # four feet on the surface
    for kind in ("stairs", "rough"):
        assert abs(offsets[kind] - offsets["flat"]) < 5e-3, offsets
