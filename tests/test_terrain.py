"""Terrain grids (``Model.terrain``, ``jaxmor.with_geom_grids``): the Go2 on a 50-step staircase and on 2,500 boxes.

The grid's candidates are checked against an independent NumPy sphere-box distance and against the all-pairs
path on a small scene; the step's program is checked not to grow with the box count; the robot must stand on
the staircase and on the field. The scenes are generated here (``bench.tools.terrain``'s builders).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from bench.tools.terrain import FIELD, GO2_DIR, STAIRS, box_field, go2_scene, scene_model, staircase
from jaxmor.sim.collision import collide, select
from jaxmor.sim.kinematics import body_poses

FEET = ("FL", "FR", "RL", "RR")
FOOT_SINK = 0.005  # how far below the top under it a foot may rest [m]
BASE_BAND = (0.18, 0.32)  # the base's height above the mean top under the feet, standing at home [m]
STAND_STEPS = 300  # 0.6 s at the Go2's 2 ms step


def _load(geoms) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Go2's condim 6 feet keep only their sliding friction
        return jaxmor.load_mjcf(go2_scene(geoms), assets_dir=GO2_DIR)


def _geom_centres(model, q) -> np.ndarray:
    poses = body_poses(model, q)
    body = np.array(model.geom_body)
    rotation = np.asarray(poses.rotation)[np.maximum(body, 0)]
    local = np.asarray(model.geom_translation)
    centre = np.asarray(poses.position)[np.maximum(body, 0)] + np.einsum("gij,gj->gi", rotation, local)
    return np.where(body[:, None] >= 0, centre, local)


def _sphere_box_gap(centre, radius, box_centre, box_rotation, half) -> float:
    """Signed gap between a sphere and a box (NumPy, independent of the kernels)."""
    q = np.abs(box_rotation.T @ (centre - box_centre)) - half
    return float(np.linalg.norm(np.maximum(q, 0.0)) + min(q.max(), 0.0) - radius)


def _reference_gaps(model, q) -> dict[tuple[int, int], float]:
    """``(robot geom, world box) -> gap`` of every pair."""
    centre = _geom_centres(model, q)
    size, rotation = np.asarray(model.geom_size), np.asarray(model.geom_rotation)
    boxes = [g for g in range(model.ng) if model.geom_body[g] < 0]
    robot = [g for g in range(model.ng) if model.geom_body[g] >= 0]
    return {
        (r, w): _sphere_box_gap(centre[r], size[r, 0], centre[w], rotation[w], size[w]) for r in robot for w in boxes
    }


# --------------------------------------------------------------------------------------------------
# a small scene: the grid against the all-pairs path and NumPy


@pytest.fixture(scope="module")
def small():
    """Ten boxes (fewer than TERRAIN_MIN_GEOMS, so loaded as pairs), their grid, and Go2 poses over them."""
    geoms, _ = box_field(n=4, side=0.2, low=0.02, high=0.06, seed=3)
    pairs = _load(geoms[:10])
    grid = jaxmor.with_geom_grids(pairs)
    rng = np.random.default_rng(0)
    home = jaxmor.set_keyframe(pairs, jaxmor.init_state(pairs), "home").q
    poses = []
    for _ in range(6):
        q = np.array(home)
        q[:2] = rng.uniform(-0.3, 0.3, 2)
        q[2] = rng.uniform(0.27, 0.33)
        axis = rng.normal(size=3)
        angle = rng.uniform(0.0, 0.3)
        q[3:7] = [np.cos(angle / 2), *(np.sin(angle / 2) * axis / np.linalg.norm(axis))]
        q[7:] += rng.uniform(-0.4, 0.4, q.size - 7)
        poses.append(jnp.asarray(q, home.dtype))
    poses.append(home.at[0].set(5.0))  # far off the boxes: clamped to a border cell
    run = jax.jit(lambda m, q: collide(m, body_poses(m, q)))
    return pairs, grid, poses, run


def test_with_geom_grids_moves_the_world_pairs_into_one_grid(small):
    pairs, grid, _, _ = small
    assert pairs.terrain == () and len(pairs.contact_pairs) == 10 * 23
    assert grid.contact_pairs == () and len(grid.terrain) == 1
    (g,) = grid.terrain
    assert g.kind == jaxmor.GeomType.BOX and len(g.robot) == 23 and np.asarray(g.world).size == 10
    assert g.capacity < 10 and np.asarray(g.cells).shape == (g.shape[0] * g.shape[1], g.capacity)
    back = jaxmor.with_geom_grids(grid, enabled=False)
    assert back.terrain == () and set(back.contact_pairs) == set(pairs.contact_pairs)


def test_with_terrain_is_a_deprecated_alias(small):
    """The old name still builds the same grids for one release, with a DeprecationWarning that names the new one."""
    pairs, grid, _, _ = small
    with pytest.warns(DeprecationWarning, match="with_geom_grids"):
        old = jaxmor.with_terrain(pairs)
    assert old.contact_pairs == grid.contact_pairs and len(old.terrain) == len(grid.terrain) == 1
    np.testing.assert_array_equal(np.asarray(old.terrain[0].cells), np.asarray(grid.terrain[0].cells))
    assert "with_terrain" not in jaxmor.__all__


def test_grid_candidates_within_reach_are_the_exact_pairs(small):
    """Every (robot geom, box) pair within reach is a grid candidate with the NumPy gap, and its key names it."""
    pairs, grid, poses, run = small
    reach = float(grid.opt.contact_reach)
    (g,) = grid.terrain
    world, robot, nw = np.asarray(g.world), g.robot, np.asarray(g.world).size
    found_any = False
    for q in poses:
        reference = _reference_gaps(grid, q)
        c = run(grid, q)
        key, distance = np.asarray(c.key), np.asarray(c.distance)
        offset = 23  # the 23 ground slots come first
        terrain = slice(offset, None)
        keys, gaps = key[terrain], distance[terrain]
        assert np.all(np.isfinite(distance))
        valid = keys >= 0
        assert len(set(keys[valid])) == valid.sum()  # unique
        seen = {}
        for k, d in zip(keys[valid], gaps[valid], strict=True):
            entry = (k - offset) // 8
            r, w = robot[entry // nw], int(world[entry % nw])
            assert d == pytest.approx(reference[(r, w)], abs=2e-6)
            seen[(r, w)] = d
        near = {pair for pair, d in reference.items() if d <= reach}
        assert near <= set(seen)
        found_any |= bool(near)
        assert np.all(gaps[~valid] > 100.0)  # padding never acts
    assert found_any


def test_grid_and_pairs_give_the_same_budget_contacts(small):
    """The budget's slots (nearest first) hold the same gaps whether the boxes are pairs or a grid."""
    pairs, grid, poses, run = small
    assert jaxmor.contact_budget(grid) == jaxmor.contact_budget(pairs) == 8
    for q in poses:
        a = select(pairs, run(pairs, q))
        b = select(grid, run(grid, q))
        np.testing.assert_allclose(np.sort(np.asarray(a.distance)), np.sort(np.asarray(b.distance)), atol=2e-6)
        assert int(a.overflow) == int(b.overflow)


def test_a_stale_grid_is_refused_and_rebuilt(small):
    _, grid, poses, _ = small
    w = int(np.asarray(grid.terrain[0].world)[0])
    moved = grid.replace(geom_translation=grid.geom_translation.at[w, 0].add(1.0))
    with pytest.raises(jaxmor.ArgumentError, match="stale.*with_geom_grids"):
        collide(moved, body_poses(moved, poses[0]))
    rebuilt = jaxmor.with_geom_grids(moved)
    assert rebuilt.terrain[0].fingerprint != grid.terrain[0].fingerprint
    collide(rebuilt, body_poses(rebuilt, poses[0]))
    wider = jaxmor.with_options(grid, contact_reach=0.05)  # the editor rebuilds the grid
    collide(wider, body_poses(wider, poses[0]))


def test_a_model_with_a_grid_survives_a_checkpoint(small, tmp_path):
    _, grid, _, _ = small
    state = jaxmor.init_state(grid)
    jaxmor.save_checkpoint(tmp_path / "terrain.npz", grid, state)
    loaded, _ = jaxmor.load_checkpoint(tmp_path / "terrain.npz", grid)
    (a,), (b,) = grid.terrain, loaded.terrain
    assert (a.kind, a.robot, a.shape, a.capacity, a.fingerprint) == (
        b.kind,
        b.robot,
        b.shape,
        b.capacity,
        b.fingerprint,
    )
    np.testing.assert_array_equal(np.asarray(a.cells), np.asarray(b.cells))


# --------------------------------------------------------------------------------------------------
# the staircase and the field


@pytest.fixture(scope="module")
def stairs():
    return scene_model("stairs")


@pytest.fixture(scope="module")
def field():
    return scene_model("field")


def _op_count(model, state) -> int:
    """The operations of the lowered step (the model an argument: its arrays are parameters, not constants)."""
    text = jax.jit(jaxmor.step).lower(model, state).as_text()
    return sum(1 for line in text.splitlines() if "=" in line)


def test_the_step_does_not_grow_with_the_box_count(stairs, field):
    """50 and 2,500 boxes: the same program but for array sizes; neither makes pair slots."""
    (m50, s50), (m2500, s2500) = stairs, field
    assert sum(b < 0 for b in m50.geom_body) == STAIRS["steps"] and sum(b < 0 for b in m2500.geom_body) == 2500
    assert m50.contact_pairs == () == m2500.contact_pairs
    assert max(g.capacity for g in m2500.terrain) <= 8
    assert jaxmor.contact_count(m2500) <= 23 + 23 * 8
    ops50, ops2500 = _op_count(m50, s50), _op_count(m2500, s2500)
    assert ops2500 <= 1.05 * ops50


def _stand(model, state):
    final, trajectory = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=STAND_STEPS))(state)
    q = np.asarray(trajectory.q)
    assert np.all(np.isfinite(q)) and not bool(final.nonfinite)
    centres = _geom_centres(model, final.q)
    feet = [model.geom_names.index(n) for n in FEET]
    radius = np.asarray(model.geom_size)[feet, 0]
    return final, centres[feet], radius, q


def test_the_go2_stands_on_the_staircase(stairs):
    model, state = stairs
    final, feet, radius, q = _stand(model, state)
    _, treads = staircase(**STAIRS)
    tops = np.array([treads[np.searchsorted(treads[:, 1], x), 2] for x in feet[:, 0]])
    assert len(set(tops)) == 2  # it straddles two treads
    assert np.all(feet[:, 2] - radius >= tops - FOOT_SINK)
    assert BASE_BAND[0] <= float(final.q[2]) - tops.mean() <= BASE_BAND[1]
    assert np.all(q[:, 2] > tops.min())  # never through the treads


def test_the_go2_stands_on_the_box_field(field):
    model, state = field
    final, feet, radius, q = _stand(model, state)
    _, heights = box_field(**FIELD)
    n, side = FIELD["n"], FIELD["side"]
    cell = np.clip(np.floor(feet[:, :2] / side + n / 2).astype(int), 0, n - 1)
    tops = heights[cell[:, 0], cell[:, 1]]
    assert np.all(feet[:, 2] - radius >= tops - FOOT_SINK)
    assert BASE_BAND[0] <= float(final.q[2]) - tops.mean() <= BASE_BAND[1]
    assert np.all(q[:, 2] > heights.max())
