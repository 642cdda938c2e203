"""Terrain for legged training: sub-terrains in a grid of difficulty levels, as one height field.

:func:`generate` lays out ``levels`` rows (difficulty rising with the row, ``y``) by one column per kind (``x``) of
square sub-terrains, each ``size`` metres on a side, sampled every ``resolution`` metres, and returns a
:class:`Terrain`: the heights, the grid, and a spawn point at the centre of every cell. :meth:`Terrain.on` puts it
on a model's ground (:func:`jaxmor.with_height_field`). The same arguments and seed give the same terrain.

Kinds (``d`` the cell's difficulty in ``[0, 1]``, from 0 on the first row to 1 on the last; heights in metres,
relative to the ground at 0; every cell keeps a flat platform of ``platform`` metres at its centre, where it
spawns, and its outermost vertices at 0, so that neighbouring cells meet without a cliff):

* ``flat``: zero.
* ``slope``: a pyramid rising towards the platform at ``d max_slope`` [rad].
* ``stairs_up`` / ``stairs_down``: a pyramid of steps of ``run`` [m] rising (falling) ``step_height(d) = 0.05 +
  (max_step - 0.05) d`` [m] each towards the platform.
* ``rough``: heights drawn uniformly in ``[-r, r]``, ``r = 0.01 + (max_roughness - 0.01) d`` [m], on a lattice of
  ``roughness_step`` [m], linearly interpolated between its points.
* ``obstacles``: ``obstacle_count`` boxes of 0.4 to 1.2 m on a side raised or sunk by ``0.05 + (max_obstacle -
  0.05) d`` [m].
* ``stepping_stones``: square stones of ``stone_size(d) = 1.0 - 0.6 d`` [m] with gaps of ``0.05 + 0.25 d`` [m] over
  pits ``pit_depth`` [m] deep.
* ``wave``: ``a sin(2 pi x / L) sin(2 pi y / L)``, ``a = max_wave d`` [m], ``L = wavelength`` [m].
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmor.checks import as_finite, as_int, as_nonnegative, as_positive, as_positive_int
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.modeling.height_field import with_height_field
from jaxmor.types import Model

#: The most grid vertices a terrain may have (a float64 height each: 512 MiB), checked before anything is allocated.
MAX_TERRAIN_VERTICES = 2**26
#: The parameters that are lengths dividing the cell (a period or a spacing), which must be positive [m].
_POSITIVE = ("run", "roughness_step", "wavelength")
#: The parameters that are sizes or amplitudes, which must be ``>= 0`` (a negative one has no meaning).
_NON_NEGATIVE = ("max_roughness", "platform")
#: The parameters that are counts: an int ``>= 0``.
_COUNTS = ("obstacle_count",)

#: The sub-terrain kinds, in the default column order.
KINDS = ("flat", "slope", "stairs_up", "stairs_down", "rough", "obstacles", "stepping_stones", "wave")


@dataclasses.dataclass(frozen=True)
class Parameters:
    """The sub-terrains' parameters at difficulty 1 (SI units; module docstring for each kind's law).

    Attributes:
        max_slope: the slope's angle [rad].
        max_step: a stair's rise [m]. run: a stair's run [m].
        max_roughness: the rough cells' amplitude [m]. roughness_step: the spacing of its random lattice [m].
        max_obstacle: the obstacles' height [m]. obstacle_count: obstacles per cell.
        pit_depth: the stepping stones' pits [m] (positive: down).
        max_wave: the waves' amplitude [m]. wavelength: their wavelength [m].
        platform: the side of each cell's flat centre [m].
    """

    max_slope: float = 0.4
    max_step: float = 0.2
    run: float = 0.3
    max_roughness: float = 0.08
    roughness_step: float = 0.2
    max_obstacle: float = 0.2
    obstacle_count: int = 12
    pit_depth: float = 1.0
    max_wave: float = 0.15
    wavelength: float = 2.0
    platform: float = 2.0


@dataclasses.dataclass(frozen=True)
class Terrain:
    """A generated terrain (:func:`generate`).

    Attributes:
        heights: (ny, nx) the height of each grid vertex [m], row ``i`` at ``y = origin[1] + i spacing``.
        spacing: the grid's step along ``x`` and ``y`` [m].
        origin: ``(x, y)`` of vertex ``(0, 0)`` [m].
        kinds: the kind of each column of cells.
        difficulty: (levels,) the difficulty of each row of cells, in ``[0, 1]``.
        spawn: (levels, kinds, 3) the centre of each cell's platform, at its surface [m].
        size: the side of a cell [m].
    """

    heights: np.ndarray
    spacing: float
    origin: tuple[float, float]
    kinds: tuple[str, ...]
    difficulty: np.ndarray
    spawn: np.ndarray
    size: float

    def on(self, model: Model, friction: float | None = None) -> Model:
        """``model`` with this terrain as its ground's height field (:func:`jaxmor.with_height_field`), its ground plane
        (if it has one) lowered to the terrain's lowest height so that no pit is filled."""
        if model.ground:
            model = model.replace(ground_height=jnp.minimum(model.ground_height, float(self.heights.min())))
        return with_height_field(model, self.heights, self.spacing, self.origin, friction=friction)


def generate(
    levels: int = 5,
    kinds: tuple[str, ...] = KINDS,
    size: float = 8.0,
    resolution: float = 0.1,
    seed: int = 0,
    parameters: Parameters = Parameters(),
    difficulty: tuple[float, float] = (0.0, 1.0),
) -> Terrain:
    """A grid of sub-terrains: ``levels`` rows of rising difficulty by one column per kind (module docstring).

    Args:
        levels: rows of cells, their difficulty rising evenly from ``difficulty[0]`` on the first row to
            ``difficulty[1]`` on the last (a single row: ``difficulty[1]``).
        kinds: a column per kind, from :data:`KINDS`.
        size: the side of a cell [m]; a multiple of ``resolution``.
        resolution: the grid's step [m].
        seed: the random draws' seed (rough, obstacles): the same seed, the same terrain.
        parameters: the sub-terrains' parameters at difficulty 1.
        difficulty: ``(easiest, hardest)``, each in ``[0, 1]``, ``easiest <= hardest``.

    Returns:
        The :class:`Terrain`, its corner at ``(0, 0)``.

    Raises:
        ArgumentError: an unknown kind; a size, resolution, level count or seed out of range; a parameter that is not
            finite (or not positive where it divides a cell: ``run``, ``roughness_step``, ``wavelength``); a grid of
            more than :data:`MAX_TERRAIN_VERTICES` vertices; a difficulty range outside ``[0, 1]`` or out of order.
    """
    n = _checked(levels, kinds, size, resolution, seed, parameters)
    low, high = _difficulty_range(difficulty)
    rng = np.random.default_rng(seed)
    difficulty = np.linspace(low, high, levels) if levels > 1 else np.full(1, high)
    heights = np.zeros((levels * n + 1, len(kinds) * n + 1))
    spawn = np.zeros((levels, len(kinds), 3))
    local = (np.arange(n + 1) * resolution) - size / 2  # cell-centred vertex coordinates
    x, y = np.meshgrid(local, local)
    for row, d in enumerate(difficulty):
        for col, kind in enumerate(kinds):
            cell = _SUBTERRAINS[kind](x, y, float(d), parameters, rng, resolution)
            cell[[0, -1], :] = cell[:, [0, -1]] = 0.0  # a rim at the ground's level: no cliff between cells
            heights[row * n : (row + 1) * n + 1, col * n : (col + 1) * n + 1] = cell
            spawn[row, col] = ((col + 0.5) * size, (row + 0.5) * size, cell[n // 2, n // 2])
    return Terrain(heights, float(resolution), (0.0, 0.0), tuple(kinds), difficulty, spawn, float(size))


def _difficulty_range(difficulty) -> tuple[float, float]:
    """``(easiest, hardest)`` checked: two finite numbers in ``[0, 1]``, in order."""
    try:
        low, high = (as_finite(d, "difficulty") for d in difficulty)
    except (TypeError, ValueError):
        raise ArgumentError(f"difficulty must be (easiest, hardest) in [0, 1], got {brief_repr(difficulty)}") from None
    if not 0.0 <= low <= high <= 1.0:
        raise ArgumentError(f"difficulty must be (easiest, hardest), 0 <= easiest <= hardest <= 1, got {low}, {high}")
    return low, high


def _checked(levels, kinds, size, resolution, seed, parameters: Parameters) -> int:
    """The vertices along a cell's side, once every argument of :func:`generate` is checked (its Raises)."""
    levels = as_positive_int(levels, "levels")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ArgumentError(f"kinds must be some of {', '.join(KINDS)}, got {brief_repr(list(kinds))}")
    resolution = as_positive(resolution, "resolution [m]")
    size = as_finite(size, "size [m]")
    if size < 4 * resolution:
        raise ArgumentError(f"size [m] must be at least 4 resolutions, got {size!r} and {resolution!r}")
    as_int(seed, "seed")
    for f in dataclasses.fields(Parameters):
        if f.name in _COUNTS:
            as_int(getattr(parameters, f.name), f"parameters.{f.name}", minimum=0)
            continue
        check = as_positive if f.name in _POSITIVE else as_nonnegative if f.name in _NON_NEGATIVE else as_finite
        check(getattr(parameters, f.name), f"parameters.{f.name}")
    n = int(round(size / resolution))
    if abs(n * resolution - size) > 1e-9 * size:
        raise ArgumentError(f"size {size!r} must be a multiple of resolution {resolution!r}")
    vertices = (levels * n + 1) * (len(kinds) * n + 1)
    if vertices > MAX_TERRAIN_VERTICES:
        raise ArgumentError(
            f"a terrain of {levels} levels x {len(kinds)} kinds, cells of {n} x {n} grid steps, has {vertices:,} "
            f"vertices, more than MAX_TERRAIN_VERTICES ({MAX_TERRAIN_VERTICES:,}): fewer levels or a coarser resolution"
        )
    return n


def _platform(x, y, p: Parameters) -> np.ndarray:
    """Where a cell keeps its flat centre (bool)."""
    return np.maximum(np.abs(x), np.abs(y)) <= p.platform / 2


def _from_edge(x, y, p: Parameters) -> np.ndarray:
    """The distance [m] from the platform's edge outwards (0 on the platform), Chebyshev's."""
    return np.maximum(np.maximum(np.abs(x), np.abs(y)) - p.platform / 2, 0.0)


def _flat(x, y, d, p, rng, resolution) -> np.ndarray:
    return np.zeros_like(x)


def _slope(x, y, d, p, rng, resolution) -> np.ndarray:
    edge = np.abs(x).max()
    rise = np.tan(d * p.max_slope)
    return rise * (edge - p.platform / 2 - _from_edge(x, y, p))


def _stairs(sign: float):
    def stairs(x, y, d, p, rng, resolution) -> np.ndarray:
        rise = 0.05 + (p.max_step - 0.05) * d
        steps = np.floor(_from_edge(x, y, p) / p.run + 1e-9)
        top = np.floor((np.abs(x).max() - p.platform / 2) / p.run + 1e-9)
        return sign * rise * (top - steps)

    return stairs


def _rough(x, y, d, p, rng, resolution) -> np.ndarray:
    amplitude = 0.01 + (p.max_roughness - 0.01) * d
    every = max(int(round(p.roughness_step / resolution)), 1)
    coarse = rng.uniform(-amplitude, amplitude, ((x.shape[0] - 1) // every + 2,) * 2)
    i = np.arange(x.shape[0]) / every
    lo, frac = np.floor(i).astype(int), i - np.floor(i)
    rows = coarse[lo] * (1 - frac)[:, None] + coarse[lo + 1] * frac[:, None]
    heights = rows[:, lo] * (1 - frac)[None, :] + rows[:, lo + 1] * frac[None, :]
    return np.where(_platform(x, y, p), 0.0, heights)


def _obstacles(x, y, d, p, rng, resolution) -> np.ndarray:
    height = 0.05 + (p.max_obstacle - 0.05) * d
    edge = np.abs(x).max()
    out = np.zeros_like(x)
    for _ in range(p.obstacle_count):
        w, h = rng.uniform(0.4, 1.2, 2)
        cx, cy = rng.uniform(-edge, edge, 2)
        inside = (np.abs(x - cx) <= w / 2) & (np.abs(y - cy) <= h / 2)
        out = np.where(inside, rng.choice([-1.0, 1.0]) * height, out)
    return np.where(_platform(x, y, p), 0.0, out)


def _stepping_stones(x, y, d, p, rng, resolution) -> np.ndarray:
    stone, gap = 1.0 - 0.6 * d, 0.05 + 0.25 * d
    pitch = stone + gap
    on_x = np.mod(x + stone / 2, pitch) <= stone
    on_y = np.mod(y + stone / 2, pitch) <= stone
    return np.where((on_x & on_y) | _platform(x, y, p), 0.0, -p.pit_depth)


def _wave(x, y, d, p, rng, resolution) -> np.ndarray:
    k = 2 * np.pi / p.wavelength
    return np.where(_platform(x, y, p), 0.0, p.max_wave * d * np.sin(k * x) * np.sin(k * y))


_SUBTERRAINS: dict[str, Any] = {
    "flat": _flat,
    "slope": _slope,
    "stairs_up": _stairs(1.0),
    "stairs_down": _stairs(-1.0),
    "rough": _rough,
    "obstacles": _obstacles,
    "stepping_stones": _stepping_stones,
    "wave": _wave,
}
