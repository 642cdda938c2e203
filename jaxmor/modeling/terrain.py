"""Terrain as a model editor: the world geoms' contact pairs compiled into grids (``Model.terrain``).

:func:`with_geom_grids` takes the contact pairs between the robot geoms and the static world geoms (terrain boxes,
walls) out of ``Model.contact_pairs`` and bins the world geoms into one uniform ``(x, y)`` grid per geom type
(:class:`~jaxmor.types.TerrainGrid`), so that a step's program and cost no longer grow with the number of
world geoms. :func:`binned` applies it when a world holds at least :data:`TERRAIN_MIN_GEOMS` world geoms
(the loaders and scene editors call it). The grid, its cell-size rule and why a lookup misses no contact within
reach: ``docs/design/collision.md``, "Terrain".
"""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp
import numpy as np

from jaxmor.sim.collision import pair_supported
from jaxmor.sim.collision.terrain import TERRAIN_KINDS, bounding_radius, fingerprint, footprints
from jaxmor.types import GeomType, Model, TerrainGrid

#: A world with at least this many world geoms in contact pairs is binned by :func:`binned`.
TERRAIN_MIN_GEOMS = 16
#: The most cells of a grid (the cell size grows until the grid fits).
TERRAIN_MAX_CELLS = 1 << 18
#: Added to each world geom's reach, against the round-off of the lookup in float32 [m].
TERRAIN_MARGIN = 1e-3
#: The cell sizes tried, as fractions of the world geoms' median footprint side (:func:`_cell_size`).
CELL_FRACTIONS = (1.0, 0.5, 0.25, 0.125)


def terrain_pairs(model: Model) -> list[tuple[int, int]]:
    """The contact pairs ``(i, j)``, ``i < j``, that the model's grids stand for (their ``allowed`` entries)."""
    pairs = []
    for grid in model.terrain:
        world, allowed = np.asarray(grid.world), np.asarray(grid.allowed)
        for row, r in enumerate(grid.robot):
            pairs += [(min(r, int(w)), max(r, int(w))) for w in world[allowed[row]]]
    return pairs


def _world_pairs(model: Model, pairs) -> dict[GeomType, list[tuple[int, int]]]:
    """The pairs ``(world geom, robot geom)`` a grid can hold, by the world geom's type."""
    out: dict[GeomType, list[tuple[int, int]]] = {}
    for a, b in pairs:
        world, robot = (a, b) if model.geom_body[a] < 0 else (b, a)
        if model.geom_body[world] >= 0 or model.geom_body[robot] < 0 or model.geom_link[world] in model.mocap_links:
            continue  # a mocap body's geoms move: never binned
        kind = model.geom_type[world]
        if kind in TERRAIN_KINDS and pair_supported(kind, model.geom_type[robot]):
            out.setdefault(kind, []).append((world, robot))
    return out


def _cell_ranges(boxes: np.ndarray, origin: np.ndarray, cell: float, shape) -> np.ndarray:
    """(n, 4) int ``(ix0, iy0, ix1, iy1)`` the cells each box ``(x0, y0, x1, y1)`` overlaps (inclusive)."""
    low = np.floor((boxes[:, :2] - origin) / cell).astype(np.int64)
    high = np.floor((boxes[:, 2:] - origin) / cell).astype(np.int64)
    top = np.array(shape) - 1
    return np.concatenate([np.clip(low, 0, top), np.clip(high, 0, top)], axis=1)


def _capacity(ranges: np.ndarray, shape) -> int:
    """The largest number of boxes over one cell (a 2-D difference array of the ranges)."""
    count = np.zeros((shape[0] + 1, shape[1] + 1), np.int64)
    np.add.at(count, (ranges[:, 0], ranges[:, 1]), 1)
    np.add.at(count, (ranges[:, 2] + 1, ranges[:, 1]), -1)
    np.add.at(count, (ranges[:, 0], ranges[:, 3] + 1), -1)
    np.add.at(count, (ranges[:, 2] + 1, ranges[:, 3] + 1), 1)
    return int(np.cumsum(np.cumsum(count, 0), 1).max())


def _cell_size(boxes: np.ndarray, footprint: np.ndarray) -> tuple[float, tuple[int, int], int]:
    """``(cell size, (nx, ny), capacity)``: of the sizes :data:`CELL_FRACTIONS` of the median footprint side
    (the larger side of each world geom's bounding box) that fit :data:`TERRAIN_MAX_CELLS`, the one of the least
    capacity, ties to the larger cell; the whole grid as one cell row if none fits."""
    origin, extent = boxes[:, :2].min(axis=0), boxes[:, 2:].max(axis=0) - boxes[:, :2].min(axis=0)
    side = float(np.median(np.max(footprint[:, 2:] - footprint[:, :2], axis=1)))
    floor = math.sqrt(float(extent[0] * extent[1]) / TERRAIN_MAX_CELLS)
    best = None
    for cell in sorted({max(side * f, floor, 1e-6) for f in CELL_FRACTIONS}, reverse=True):
        shape = tuple(int(max(1, math.ceil(e / cell))) for e in extent)
        if shape[0] * shape[1] > TERRAIN_MAX_CELLS:
            continue
        c = _capacity(_cell_ranges(boxes, origin, cell, shape), shape)
        if best is None or c < best[2]:
            best = (cell, shape, c)
    if best is None:
        cell = float(max(extent.max(), 1e-6))
        best = (cell, (1, 1), len(boxes))
    return best


def _grid(model: Model, kind: GeomType, pairs: list[tuple[int, int]]) -> TerrainGrid:
    """The grid of the world geoms of one type in ``pairs`` (``(world, robot)``)."""
    world = np.array(sorted({w for w, _ in pairs}), dtype=np.int32)
    robot = tuple(sorted({r for _, r in pairs}))
    allowed = np.zeros((len(robot), world.size), bool)
    w_row, r_row = {int(w): i for i, w in enumerate(world)}, {r: i for i, r in enumerate(robot)}
    for w, r in pairs:
        allowed[r_row[r], w_row[w]] = True
    reach = float(np.max(bounding_radius(model, robot))) + float(model.opt.contact_reach) + TERRAIN_MARGIN
    footprint = footprints(model, world)
    boxes = footprint + np.array([-reach, -reach, reach, reach])
    cell, shape, capacity = _cell_size(boxes, footprint)
    origin = boxes[:, :2].min(axis=0)
    ranges = _cell_ranges(boxes, origin, cell, shape)
    lists: list[list[int]] = [[] for _ in range(shape[0] * shape[1])]
    for w, (x0, y0, x1, y1) in enumerate(ranges):
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                lists[ix * shape[1] + iy].append(w)
    cells = np.full((len(lists), capacity), -1, np.int32)
    for row, entries in enumerate(lists):
        cells[row, : len(entries)] = entries
    dtype = model.geom_size.dtype
    return TerrainGrid(
        kind=kind,
        robot=robot,
        shape=shape,
        capacity=capacity,
        fingerprint=fingerprint(model, world, robot),
        world=jnp.asarray(world),
        cells=jnp.asarray(cells),
        allowed=jnp.asarray(allowed),
        origin=jnp.asarray(origin, dtype),
        cell_size=jnp.asarray(cell, dtype),
    )


def with_geom_grids(model: Model, enabled: bool = True) -> Model:
    """A copy of ``model`` whose world geoms collide with the robot through grids (``Model.terrain``), or
    (``enabled=False``) through contact pairs again.

    Every contact pair between a robot geom and a world geom (``geom_body == -1``) of a type of
    :data:`~jaxmor.sim.collision.terrain.TERRAIN_KINDS` (sphere, capsule, box, mesh) leaves ``contact_pairs``;
    the world geoms of each type go into one grid that lists, per cell, those within reach of a robot geom in
    that cell (the robot geoms' bounding radii and ``opt.contact_reach`` at this call). Rebuild the grids
    (call this again) after moving or resizing world geoms, resizing robot geoms or changing
    ``opt.contact_reach`` by hand: the step refuses a stale grid (:func:`jaxmor.sim.collision.terrain.check_current`);
    :func:`jaxmor.with_options`, :func:`jaxmor.with_self_collision` and :func:`jaxmor.combine` rebuild them.

    Args:
        model: the model (not batched).
        enabled: ``False``: the grids' pairs go back into ``contact_pairs`` and ``terrain`` is empty.

    Returns:
        The new model; the collision candidates within reach are the same either way.
    """
    pairs = list(model.contact_pairs) + terrain_pairs(model)
    if not enabled:
        return model.replace(contact_pairs=tuple(pairs), terrain=())
    by_kind = _world_pairs(model, pairs)
    taken = {frozenset(p) for group in by_kind.values() for p in group}
    rest = tuple(p for p in pairs if frozenset(p) not in taken)
    grids = tuple(_grid(model, kind, group) for kind, group in sorted(by_kind.items()))
    return model.replace(contact_pairs=rest, terrain=grids)


def with_terrain(model: Model, enabled: bool = True) -> Model:
    """Deprecated: the old name of :func:`with_geom_grids` (it builds grids of world geoms, not the terrain that
    :mod:`jaxmor.terrain` generates); kept for the 0.5 release.

    Raises:
        DeprecationWarning: as a warning, at every call.
    """
    warnings.warn(
        "jaxmor.with_terrain is deprecated: call jaxmor.with_geom_grids (same arguments)",
        DeprecationWarning,
        stacklevel=2,
    )
    return with_geom_grids(model, enabled)


def binned(model: Model) -> Model:
    """``model`` with grids (:func:`with_geom_grids`) when it has them already or when at least
    :data:`TERRAIN_MIN_GEOMS` world geoms are in its contact pairs; else ``model`` itself."""
    if model.terrain:
        return with_geom_grids(model)
    world = {w for group in _world_pairs(model, model.contact_pairs).values() for w, _ in group}
    return with_geom_grids(model) if len(world) >= TERRAIN_MIN_GEOMS else model
