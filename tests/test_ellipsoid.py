"""Ellipsoid geoms (MJCF ``type="ellipsoid"``) against the ground, and in pairs as their hulls.

References: the ground point's two defining properties (it lies on the surface, and the surface's outward normal
there points straight down), checked in float64 at random poses and radii; MuJoCo on the same file for an
ellipsoid rocking on the ground (one contact point in both engines; its soft contacts sink it about 0.3 mm, the
tolerance below allows 1 mm); the closed form of its resting height, its smallest radius.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.math import quat_to_rotation
from jaxmor.sim.collision.ellipsoid import HULL_DEVIATION
from jaxmor.sim.collision.ground import ellipsoid_points

ROCKER = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="egg" pos="0 0 0.07" euler="8 5 0"><freejoint/>
      <geom name="egg" type="ellipsoid" size="0.2 0.1 0.06" density="500"/></body>
    {extra}
  </worldbody>
</mujoco>"""


def _load(text: str) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(text)


def test_the_ground_point_is_on_the_surface_where_its_normal_points_down():
    rng = np.random.default_rng(0)
    quat = rng.normal(size=(50, 4))
    rotation = np.asarray(jax.vmap(quat_to_rotation)(jnp.asarray(quat / np.linalg.norm(quat, axis=1, keepdims=True))))
    radii = rng.uniform(0.02, 0.5, size=(50, 3))
    centre = rng.normal(size=(50, 3))
    point = np.asarray(ellipsoid_points(jnp.asarray(centre), jnp.asarray(rotation), jnp.asarray(radii), None))[:, 0]
    local = np.einsum("nji,nj->ni", rotation, point - centre)  # R^T (p - c)
    np.testing.assert_allclose(np.linalg.norm(local / radii, axis=1), 1.0, atol=1e-12)  # on the surface
    normal = np.einsum("nij,nj->ni", rotation, local / radii**2)  # the gradient of |A^-1 R^T (x - c)|^2
    np.testing.assert_allclose(normal / np.linalg.norm(normal, axis=1, keepdims=True), [[0, 0, -1]] * 50, atol=1e-12)


def test_a_rocking_ellipsoid_follows_mujoco_and_rests_on_its_smallest_radius():
    mujoco = pytest.importorskip("mujoco")
    text = ROCKER.format(extra="")
    model = _load(text)
    assert model.geom_type == (jaxmor.GeomType.ELLIPSOID,)
    _, trajectory = jaxmor.rollout(model, jaxmor.init_state(model), jnp.zeros((3000, 0)))
    height = np.asarray(trajectory.q[:, 2])
    m = mujoco.MjModel.from_xml_string(text)
    d = mujoco.MjData(m)
    for step in (500, 1000, 2000):
        mujoco.mj_step(m, d, step - int(round(d.time / m.opt.timestep)))
        assert abs(height[step - 1] - d.qpos[2]) < 1e-3, (step, height[step - 1], d.qpos[2])
    # on its smallest radius (0.06 m), rocking a little (as MuJoCo's still does at 6 s): never through the ground
    assert 0.0595 < height[-1000:].min() and height[-1000:].max() < 0.064


TABLE = """<mujoco><option timestep="0.002"/><worldbody>
<geom name="table" type="box" size="0.5 0.5 0.05" pos="0 0 0.3"/>
<body name="egg" pos="0 0 0.6" euler="0 0 20"><freejoint/>
  <geom name="egg" type="ellipsoid" size="0.2 0.1 0.06" density="500"/></body>
<body name="pebble" pos="0.3 0.3 0.7"><freejoint/><geom name="pebble" type="sphere" size="0.04" density="500"/></body>
<body name="stone" pos="-0.3 -0.3 0.7"><freejoint/>
  <geom name="stone" type="ellipsoid" size="0.05 0.04 0.03" density="500"/></body>
</worldbody></mujoco>"""


def test_ellipsoids_rest_on_a_table_at_their_exact_heights_as_in_mujoco():
    """On a table (a world box) each ellipsoid meets the box's top face by its support function: the egg and the
    stone come to rest at the table's top plus their z radii (1e-5: the hard contact's allowance; on their hulls
    alone the egg stood 2.4 mm high), a sphere beside them likewise, and all three at MuJoCo's heights within
    0.5 mm (its soft contacts sink them 0.37 mm)."""
    mujoco = pytest.importorskip("mujoco")
    model = _load(TABLE)
    assert {(model.geom_names[a], model.geom_names[b]) for a, b in model.contact_pairs} == {
        ("table", "egg"),
        ("table", "pebble"),
        ("table", "stone"),
    }
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1500))(jaxmor.init_state(model))
    m = mujoco.MjModel.from_xml_string(TABLE)
    d = mujoco.MjData(m)
    for _ in range(1500):
        mujoco.mj_step(m, d)
    heights, theirs = np.asarray(final.q)[[2, 9, 16]], d.qpos[[2, 9, 16]]
    np.testing.assert_allclose(heights, 0.35 + np.array([0.06, 0.04, 0.03]), atol=1e-5)
    np.testing.assert_allclose(heights, theirs, atol=5e-4)
    assert float(jnp.abs(final.u).max()) < 1e-3  # at rest


def _egg_shape(radii):
    from jaxmor.io.mesh import ellipsoid_hull
    from jaxmor.sim.collision.polytope import padded_topology

    hull = ellipsoid_hull(radii)
    faces, edges = padded_topology((hull.faces,), (hull.edges,), hull.planes.shape[0])
    valid = np.ones(len(hull.vertices), bool)
    return (hull.vertices, hull.planes, valid, faces[0], edges[0], np.asarray(radii, float))


def _random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return np.asarray(quat_to_rotation(jnp.asarray(q / np.linalg.norm(q))))


def test_a_box_face_meets_an_ellipsoid_at_its_support_point_and_an_edge_meets_its_hull():
    """The box-ellipsoid kernel against closed forms, at random orientations and sizes: an ellipsoid over a box's
    top (its centre within the face, its support point on the face) gets one contact whose gap is ``c_z - top -
    |A R^T z|`` (1e-12), whose normal is the face's, and whose point lies on the ellipsoid (1e-12); the other 7
    slots are unused. An ellipsoid past the box's edge (its support point beyond the face) gets the box and its
    hull's manifold (what ``box_mesh`` gives), whose gap is within the hull's deviation of the exact one (found by
    sampling the ellipsoid's surface)."""
    from jaxmor.sim.collision.contacts import UNUSED_GAP
    from jaxmor.sim.collision.ellipsoid import box_ellipsoid
    from jaxmor.sim.collision.polytope import box_mesh

    rng = np.random.default_rng(4)
    half = np.array([0.3, 0.2, 0.05])
    for _ in range(5):
        radii = rng.uniform(0.02, 0.08, 3)
        rotation = _random_rotation(rng)
        reach = np.linalg.norm(radii * rotation[2])  # |A R^T z|
        centre = np.array([*rng.uniform(-0.1, 0.1, 2), half[2] + reach + rng.uniform(-0.005, 0.01)])
        shape = _egg_shape(radii)
        d, n, on_box, on_egg = (
            np.asarray(x) for x in box_ellipsoid(np.zeros(3), np.eye(3), half, centre, rotation, shape)
        )
        assert d[0] == pytest.approx(centre[2] - half[2] - reach, abs=1e-12)
        np.testing.assert_allclose(n[0], [0, 0, 1], atol=1e-12)
        local = rotation.T @ (on_egg[0] - centre) / radii
        assert np.linalg.norm(local) == pytest.approx(1.0, abs=1e-12)
        assert on_box[0][2] == pytest.approx(half[2], abs=1e-12)
        assert np.all(d[1:] == UNUSED_GAP)
    radii, rotation = np.array([0.08, 0.05, 0.03]), np.eye(3)
    shape = _egg_shape(radii)
    centre = np.array([half[0] + 0.05, 0.0, half[2] + 0.06])  # its lowest point beyond the edge at x = 0.3
    got = box_ellipsoid(np.zeros(3), np.eye(3), half, centre, rotation, shape)
    hull = box_mesh(np.zeros(3), np.eye(3), half, centre, rotation, shape[:5])
    for x, y in zip(got, hull, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    u, v = np.meshgrid(np.linspace(0, np.pi, 400), np.linspace(0, 2 * np.pi, 800))
    sphere = np.stack([np.sin(u) * np.cos(v), np.sin(u) * np.sin(v), np.cos(u)], -1).reshape(-1, 3)
    surface = centre + (sphere * radii) @ rotation.T
    outside = np.maximum(np.abs(surface) - half, 0.0)
    exact = np.linalg.norm(outside, axis=1).min()  # the edge's gap to the ellipsoid (sampled)
    assert exact > 0.01  # apart
    assert float(np.asarray(got[0]).min()) == pytest.approx(exact, abs=HULL_DEVIATION * radii.max() + 1e-4)


def test_an_egg_rests_on_a_cylinder_cap_and_on_a_mesh_at_its_exact_height(tmp_path):
    """An egg laid flat on an upright cylinder's cap, and an egg tilted 30 degrees on a mesh slab (a box's 8
    vertices; the pair's ellipsoid is A): both lie on the face at their support heights over it, ``|A R^T z|``
    (1e-5 for the flat one, at rest: the hard contact's allowance; 5e-5 for the tilted one, still rocking; the hull
    alone would allow 3.4% of the radius, 1.4 mm)."""
    corners = [(x, y, z) for x in (-0.3, 0.3) for y in (-0.3, 0.3) for z in (0.0, 0.1)]
    faces = ["1 2 4 3", "5 7 8 6", "1 5 6 2", "3 4 8 7", "1 3 7 5", "2 6 8 4"]  # any winding: jaxmor takes the hull
    (tmp_path / "slab.obj").write_text(
        "".join(f"v {x} {y} {z}\n" for x, y, z in corners) + "".join(f"f {f}\n" for f in faces)
    )
    text = """<mujoco><option timestep="0.002"/><asset><mesh name="slab" file="slab.obj"/></asset><worldbody>
    <geom name="post" type="cylinder" size=".3 .1" pos="0 0 .1"/>
    <geom name="slab" type="mesh" mesh="slab" pos="1 0 0"/>
    <body name="flat" pos="0 0 .27"><freejoint/><geom type="ellipsoid" size=".1 .06 .05" density="500"/></body>
    <body name="tilted" pos="1 0 .2" euler="30 0 0"><freejoint/><geom type="ellipsoid" size=".1 .06 .04"
      density="500"/></body></worldbody></mujoco>"""
    (tmp_path / "eggs.xml").write_text(text)
    model = _load(str(tmp_path / "eggs.xml"))
    end, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=400))(jaxmor.init_state(model))
    assert not bool(end.nonfinite)
    flat, tilted = np.asarray(end.q[:7]), np.asarray(end.q[7:14])
    assert flat[2] == pytest.approx(0.2 + 0.05, abs=1e-5)
    support = np.linalg.norm(np.diag([0.1, 0.06, 0.04]) @ np.asarray(quat_to_rotation(tilted[3:])).T @ [0, 0, 1])
    assert tilted[2] == pytest.approx(0.1 + support, abs=5e-5)  # rocking: measured 1.3e-5


def test_the_hull_of_an_ellipsoid():
    from jaxmor.io.mesh import ellipsoid_hull

    radii = np.array([0.2, 0.1, 0.06])
    hull = ellipsoid_hull(radii)
    assert hull.vertices.shape == (42, 3) and hull.planes.shape == (80, 4) and len(hull.edges) == 120
    metric = np.linalg.norm(hull.vertices / radii, axis=1)
    np.testing.assert_allclose(metric, metric[0], rtol=1e-12)  # one scale: every vertex 3.4% out
    assert 1.033 < metric[0] < 1.035
    assert metric[0] - 1 < HULL_DEVIATION  # the face kernels' allowance for the hull
    inside = np.abs(hull.planes[:, 3]) / np.linalg.norm(hull.planes[:, :3] * radii, axis=1)  # in its own metric
    assert 0.965 < inside.min() < 0.967  # the deepest face middles as far inside
    assert np.all(hull.vertices @ hull.planes[:, :3].T <= hull.planes[:, 3] + 1e-12)  # convex, faces outward


def test_dm_controls_quadruped_rests_on_its_ellipsoid_torso_as_in_mujoco():
    """The dm_control suite's quadruped (its wheel's ``quadruped.xml``) dropped upside down from 0.35 m lands on its
    torso, an ellipsoid of semi-axes 0.3, 0.27, 0.2 m: after 0.6 s it rests with the torso's centre at 0.2 m over
    the floor (the semi-axis: 1e-5 m, the hard contact's solver tolerance), and MuJoCo's within 1 mm (its soft
    contact sinks 0.15 mm)."""
    mujoco = pytest.importorskip("mujoco")
    from reference import public_models

    model, m = public_models("quadruped")
    d = mujoco.MjData(m)
    qpos = m.qpos0.copy()
    qpos[2], qpos[3:7] = 0.35, (0.0, 1.0, 0.0, 0.0)
    d.qpos[:] = qpos
    steps = round(0.6 / m.opt.timestep)
    for _ in range(steps):
        mujoco.mj_step(m, d)
    state = jaxmor.init_state(model, q=jnp.asarray(qpos))
    end, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=steps))(state)
    assert float(end.q[2]) == pytest.approx(0.2, abs=1e-5)
    assert float(end.q[2]) == pytest.approx(d.qpos[2], abs=1e-3)
    assert abs(float(end.q[4])) == pytest.approx(1.0, abs=1e-6)  # still upside down


SLOPE = """<mujoco><option timestep="0.002"/>
<asset><hfield name="h" nrow="5" ncol="5" size="1 1 0.2 0.1" elevation="{elevation}"/></asset>
<worldbody><geom type="hfield" hfield="h"/>
<body name="egg" pos="{pos}" euler="0 -5.710593 0"><freejoint/>
<geom type="ellipsoid" size="0.2 0.1 0.06" density="500" friction="1"/></body></worldbody></mujoco>"""


def test_an_ellipsoid_rests_on_a_sloped_height_field_at_its_support_point():
    """A height field rising 0.1 m per m along ``x`` (a plane of two triangles per cell); an egg laid on it along the
    slope, 1 mm above, for 1 s. Its centre ends ``|A R^T n|`` from the plane (its support along the field's normal
    ``n``; 1e-4 m: the hard contact's allowance is 1e-5), where the lowest point in ``z`` against the field left it
    3.5 mm deep; its height is MuJoCo's within 1 mm (MuJoCo's soft contact sinks 0.37 mm)."""
    mujoco = pytest.importorskip("mujoco")
    normal = np.array([-0.1, 0.0, 1.0]) / math.sqrt(1.01)
    start = np.array([0.1, 0.05, 0.11]) + 0.061 * normal  # the surface is at 0.1 (x + 1)
    rows = np.tile(0.5 + 0.2 * np.linspace(-1.0, 1.0, 5), (5, 1))  # normalized to 0..1, times 0.2 m
    text = SLOPE.format(elevation=" ".join(f"{e:.3f}" for e in rows.ravel()), pos=" ".join(f"{v:.6f}" for v in start))
    model, m = _load(text), mujoco.MjModel.from_xml_string(text)
    d = mujoco.MjData(m)
    for _ in range(500):
        mujoco.mj_step(m, d)
    end, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=500))(jaxmor.init_state(model))
    centre, rotation = np.asarray(end.q[:3]), np.asarray(quat_to_rotation(end.q[3:7]))
    distance = (centre[2] - 0.1 * (centre[0] + 1.0)) * normal[2]
    support = np.linalg.norm(np.diag([0.2, 0.1, 0.06]) @ rotation.T @ normal)
    assert distance == pytest.approx(support, abs=1e-4)
    assert centre[2] == pytest.approx(d.qpos[2], abs=1e-3)


def _stones(n: int = 4) -> str:
    """``n`` x ``n`` world boxes 0.4 m wide, their tops 5 to 8 cm high, and two free eggs over them (each over one
    box's top, one lying flat, one tilted 30 degrees about x)."""
    rng = np.random.default_rng(7)
    boxes = []
    for i in range(n):
        for j in range(n):
            h = rng.uniform(0.05, 0.08)
            boxes.append(f'<geom type="box" size=".2 .2 {h / 2:.4f}" pos="{0.4 * i:.2f} {0.4 * j:.2f} {h / 2:.4f}"/>')
    eggs = (
        '<body name="flat" pos="0 0 0.2"><freejoint/><geom type="ellipsoid" size=".1 .06 .04" density="500"/></body>'
        '<body name="tilted" pos="0.4 0.4 0.25" euler="30 0 0"><freejoint/>'
        '<geom type="ellipsoid" size=".1 .06 .04" density="500"/></body>'
    )
    return f'<mujoco><option timestep="0.002"/><worldbody>{"".join(boxes)}{eggs}</worldbody></mujoco>', rng


def test_eggs_on_a_terrain_grid_meet_the_boxes_as_through_pairs_and_rest_on_them():
    """Two free ellipsoids over 16 world boxes, the boxes once as contact pairs and once binned into a terrain grid
    (``with_geom_grids``): at the eggs' start and along their fall the two paths give the same contacts (the gaps
    within reach, sorted, equal to 1e-12: the same kernel on the same candidates). After 0.6 s the flat egg rests on
    the box under it at the box's top plus its z radius (1e-4: the hard contact's allowance, and the box's top face
    meets the egg's support function exactly); the tilted one, still rocking, touches its box at its support height
    over the top ``|A R^T z|``, likewise."""
    from jaxmor.sim.collision import collide, select
    from jaxmor.sim.kinematics import body_poses

    text, _ = _stones()
    grid = _load(text)  # 16 world boxes: loaded as a grid
    pairs = jaxmor.with_geom_grids(grid, enabled=False)
    assert grid.contact_pairs == () and len(grid.terrain) == 1 and len(pairs.contact_pairs) == 2 * 16
    run = jax.jit(lambda s: jaxmor.rollout(grid, s, n_steps=300))
    end, traj = run(jaxmor.init_state(grid))
    assert not bool(end.nonfinite)
    reach = float(grid.opt.contact_reach)
    contacts = jax.jit(lambda m, q: select(m, collide(m, body_poses(m, q))).distance)
    for q in (traj.q[0], traj.q[40], traj.q[80], end.q):
        a, b = np.sort(np.asarray(contacts(pairs, q))), np.sort(np.asarray(contacts(grid, q)))
        near = a <= reach  # the grid holds the candidates within reach, the pairs every pair
        np.testing.assert_allclose(a[near], b[near], atol=1e-12)
    assert near.sum() >= 2  # at rest, both eggs touch
    tops = {
        name: float(pairs.geom_translation[k, 2] + pairs.geom_size[k, 2]) for name, k in (("flat", 0), ("tilted", 5))
    }
    allowance = 1e-4
    flat, tilted = np.asarray(end.q[:7]), np.asarray(end.q[7:14])
    assert flat[2] - tops["flat"] == pytest.approx(0.04, abs=allowance)
    support = np.linalg.norm(np.diag([0.1, 0.06, 0.04]) @ np.asarray(quat_to_rotation(tilted[3:])).T @ [0, 0, 1])
    assert tilted[2] - tops["tilted"] == pytest.approx(support, abs=allowance)
    assert float(jnp.abs(end.u[:6]).max()) < 1e-3  # the flat egg at rest
