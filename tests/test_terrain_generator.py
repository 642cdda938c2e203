"""The terrain generator (``jaxmor.terrain.generate``) against the definitions of its sub-terrains.

Each kind is read back from the heights it produced: a stair's rise and run, a slope's angle, the roughness and
wave bounds, the stepping stones' two levels, the platform every cell spawns on; the same seed gives the same
terrain and another seed another; a ball dropped on each spawn point of a generated field rests there.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.errors import ArgumentError
from jaxmor.tools.terrain import KINDS, Parameters

RESOLUTION = 0.1
SIZE = 8.0
N = int(SIZE / RESOLUTION)


@pytest.fixture(scope="module")
def terrain():
    return jaxmor.terrain.generate(levels=3, size=SIZE, resolution=RESOLUTION, seed=4)


def _cell(terrain, level: int, kind: str) -> np.ndarray:
    """The (N + 1, N + 1) heights of one cell."""
    col = terrain.kinds.index(kind)
    return terrain.heights[level * N : (level + 1) * N + 1, col * N : (col + 1) * N + 1]


def _profile(terrain, level: int, kind: str) -> np.ndarray:
    """The heights along the cell's centre line (``y`` at its middle), from its left edge to its centre."""
    return _cell(terrain, level, kind)[N // 2, : N // 2 + 1]


def test_layout_difficulty_and_spawn_points(terrain):
    assert terrain.heights.shape == (3 * N + 1, len(KINDS) * N + 1)
    np.testing.assert_allclose(terrain.difficulty, [0.0, 0.5, 1.0])
    assert terrain.spawn.shape == (3, len(KINDS), 3)
    for level in range(3):
        for col, kind in enumerate(KINDS):
            x, y, z = terrain.spawn[level, col]
            assert (x, y) == ((col + 0.5) * SIZE, (level + 0.5) * SIZE)
            assert z == _cell(terrain, level, kind)[N // 2, N // 2]  # on the surface
            platform = _cell(terrain, level, kind)[N // 2 - 9 : N // 2 + 10, N // 2 - 9 : N // 2 + 10]
            np.testing.assert_array_equal(platform, z)  # a flat platform of 2 m around it


@pytest.mark.parametrize("kind, sign", [("stairs_up", 1.0), ("stairs_down", -1.0)])
def test_stairs_have_their_rise_and_run(terrain, kind, sign):
    p = Parameters()
    for level, d in enumerate(terrain.difficulty):
        profile = _profile(terrain, level, kind)
        edges = np.flatnonzero(np.diff(profile) != 0)
        rises = np.diff(profile)[edges]
        np.testing.assert_allclose(rises, sign * (0.05 + (p.max_step - 0.05) * d), rtol=1e-12)
        np.testing.assert_allclose(np.diff(edges) * RESOLUTION, p.run, rtol=1e-9)  # every tread one run deep


def test_a_slope_has_its_angle(terrain):
    p = Parameters()
    for level, d in enumerate(terrain.difficulty):
        profile = _profile(terrain, level, "slope")[: N // 2 - 10]  # off the platform
        np.testing.assert_allclose(np.diff(profile) / RESOLUTION, np.tan(d * p.max_slope), rtol=1e-9, atol=1e-12)


def test_rough_wave_and_stepping_stones_within_their_bounds(terrain):
    p = Parameters()
    for level, d in enumerate(terrain.difficulty):
        rough = _cell(terrain, level, "rough")
        amplitude = 0.01 + (p.max_roughness - 0.01) * d
        assert np.abs(rough).max() <= amplitude + 1e-12 and np.abs(rough).max() > 0.5 * amplitude
        wave = _cell(terrain, level, "wave")
        assert np.abs(wave).max() <= p.max_wave * d + 1e-12
        stones = _cell(terrain, level, "stepping_stones")
        assert set(np.unique(stones)) <= {0.0, -p.pit_depth} and (stones < 0).any()
        obstacles = _cell(terrain, level, "obstacles")
        height = 0.05 + (p.max_obstacle - 0.05) * d
        assert set(np.round(np.unique(obstacles), 12)) <= {0.0, round(height, 12), round(-height, 12)}
    np.testing.assert_array_equal(_cell(terrain, 2, "flat"), 0.0)


def test_the_same_seed_gives_the_same_terrain(terrain):
    again = jaxmor.terrain.generate(levels=3, size=SIZE, resolution=RESOLUTION, seed=4)
    np.testing.assert_array_equal(again.heights, terrain.heights)
    other = jaxmor.terrain.generate(levels=3, size=SIZE, resolution=RESOLUTION, seed=5)
    assert not np.array_equal(_cell(other, 1, "rough"), _cell(terrain, 1, "rough"))


def test_a_ball_rests_on_every_spawn_point():
    small = jaxmor.terrain.generate(levels=2, kinds=("slope", "stairs_up", "rough"), size=4.0, resolution=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ball = jaxmor.load_mjcf('<mujoco><worldbody><body><freejoint/><geom size="0.1"/></body></worldbody></mujoco>')
    model = small.on(ball)
    spawn = jnp.asarray(small.spawn.reshape(-1, 3))
    starts = jax.vmap(lambda p: jnp.concatenate([p + jnp.array([0.0, 0.0, 0.3]), jnp.array([1.0, 0, 0, 0])]))(spawn)
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(starts)
    final, _ = jax.jit(lambda s: jaxmor.rollout_batch(model, s, n_steps=600))(states)
    np.testing.assert_allclose(final.q[:, 2], spawn[:, 2] + 0.1, rtol=0, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        ({"levels": 0}, "levels must be a positive int"),
        ({"kinds": ("lava",)}, "kinds must be some of"),
        ({"size": 8.05, "resolution": 0.1}, "must be a multiple of resolution"),
        ({"resolution": 0.0}, r"resolution \[m\] must be > 0"),
        ({"size": 0.3}, r"size \[m\] must be at least 4 resolutions"),
        ({"size": float("inf")}, r"size \[m\] must be finite"),
        ({"size": float("nan")}, r"size \[m\] must be finite"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"seed": 1.5}, "seed must be an int >= 0"),
        ({"parameters": Parameters(wavelength=0.0)}, r"parameters.wavelength must be > 0"),
        ({"parameters": Parameters(run=0.0)}, r"parameters.run must be > 0"),
        ({"parameters": Parameters(max_step=float("nan"))}, "parameters.max_step must be finite"),
        ({"levels": 10**9}, "more than MAX_TERRAIN_VERTICES"),
        ({"resolution": 1e-6}, "more than MAX_TERRAIN_VERTICES"),
        ({"parameters": Parameters(max_roughness=-1.0)}, r"parameters.max_roughness must be >= 0"),
        ({"parameters": Parameters(obstacle_count=1.5)}, r"parameters.obstacle_count must be an int"),
        ({"parameters": Parameters(platform=-2.0)}, r"parameters.platform must be >= 0"),
        ({"difficulty": (0.5, 0.2)}, r"0 <= easiest <= hardest <= 1, got 0.5, 0.2"),
        ({"difficulty": (0.0, 1.5)}, r"0 <= easiest <= hardest <= 1"),
        ({"difficulty": 0.5}, r"difficulty must be \(easiest, hardest\)"),
        ({"difficulty": (0.1, float("nan"))}, r"difficulty must be \(easiest, hardest\) in \[0, 1\], got \(0.1, nan\)"),
    ],
)
def test_bad_arguments_are_refused(kwargs, reason):
    with pytest.raises(ArgumentError, match=reason):
        jaxmor.terrain.generate(**kwargs)


def test_the_difficulty_range_spans_the_levels_and_one_level_is_its_hardest():
    """``difficulty=(easiest, hardest)``: the rows rise evenly between them; a single row is the hardest (one level
    of rough ground has the hardest level's bumps, +-8 cm by default, not the easiest's +-1 cm, as it used to)."""
    spread = jaxmor.terrain.generate(levels=3, kinds=("rough",), size=2.0, difficulty=(0.2, 0.6))
    np.testing.assert_allclose(spread.difficulty, [0.2, 0.4, 0.6])
    one = jaxmor.terrain.generate(levels=1, kinds=("rough",))
    np.testing.assert_allclose(one.difficulty, [1.0])
    assert np.ptp(one.heights) > 0.1
    easiest = jaxmor.terrain.generate(levels=1, kinds=("rough",), difficulty=(0.0, 0.0))
    assert np.ptp(easiest.heights) <= 0.02
