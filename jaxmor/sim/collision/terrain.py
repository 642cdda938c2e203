"""Terrain: the static world geoms binned into grids (``Model.terrain``), looked up per robot geom each step.

A :class:`~jaxmor.types.TerrainGrid` lists, per cell of a uniform ``(x, y)`` grid, the world geoms whose reach
(their ``(x, y)`` bounding box inflated by the largest robot geom's bounding radius plus ``opt.contact_reach``)
overlaps the cell. :func:`lookup` gives each robot geom the ``capacity`` world geoms of the cell under its centre,
with static shapes; the driver runs the pair kernels on them. The static geometry the builder bins with
(:func:`bounding_radius`, :func:`footprints`) and the digest that tells a stale grid (:func:`fingerprint`,
:func:`check_current`) are here too. Design, correctness argument and cost: ``docs/design/collision.md``, "Terrain".
"""

from __future__ import annotations

import hashlib

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.checks import is_traced
from jaxmor.errors import ArgumentError
from jaxmor.types import GeomType, Model, TerrainGrid

#: The types of world geoms a grid can hold (those with pair kernels against robot geoms).
TERRAIN_KINDS = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.BOX, GeomType.MESH)


def _values(array) -> np.ndarray:
    return np.asarray(jax.device_get(array), dtype=np.float64)


def bounding_radius(model: Model, geoms) -> np.ndarray:
    """(n,) the radius about each geom's centre of a ball holding the geom [m] (concrete model values)."""
    size = _values(model.geom_size)
    out = []
    for g in geoms:
        kind, s = model.geom_type[g], size[g]
        if kind == GeomType.SPHERE:
            out.append(s[0])
        elif kind == GeomType.CAPSULE:
            out.append(s[0] + s[1])
        elif kind == GeomType.CYLINDER:
            out.append(np.hypot(s[0], s[1]))
        elif kind == GeomType.MESH or (kind == GeomType.ELLIPSOID and model.geom_mesh[g] >= 0):  # its pair hull
            m = model.geom_mesh[g]
            vertices = _values(model.mesh_vertices[m])[: model.mesh_vertex_count[m]]
            out.append(np.max(np.linalg.norm(vertices, axis=1)))
        elif kind == GeomType.ELLIPSOID:
            out.append(np.max(s))
        else:
            out.append(np.linalg.norm(s))
    return np.array(out, dtype=np.float64).reshape(-1)


def footprints(model: Model, geoms) -> np.ndarray:
    """(n, 4) ``(x_min, y_min, x_max, y_max)`` of each world geom's world bounding box [m] (concrete values)."""
    size, rotation, centre = _values(model.geom_size), _values(model.geom_rotation), _values(model.geom_translation)
    out = np.zeros((len(geoms), 4))
    for row, g in enumerate(geoms):
        kind, s, r, c = model.geom_type[g], size[g], rotation[g], centre[g]
        if kind == GeomType.SPHERE:
            half = np.full(3, s[0])
        elif kind == GeomType.CAPSULE:
            half = np.abs(r[:, 2]) * s[1] + s[0]
        elif kind == GeomType.ELLIPSOID:
            half = np.sqrt((r * r) @ (s * s))
        elif kind == GeomType.MESH:
            m = model.geom_mesh[g]
            points = _values(model.mesh_vertices[m])[: model.mesh_vertex_count[m]] @ r.T + c
            out[row] = [*points[:, :2].min(axis=0), *points[:, :2].max(axis=0)]
            continue
        else:
            half = np.abs(r) @ s
        out[row] = [c[0] - half[0], c[1] - half[1], c[0] + half[0], c[1] + half[1]]
    return out


def fingerprint(model: Model, world, robot) -> str:
    """A digest of what a grid of the world geoms ``world`` for the robot geoms ``robot`` is built from."""
    world, robot = np.asarray(world, np.int64), np.asarray(robot, np.int64)
    digest = hashlib.sha256()
    size = np.asarray(jax.device_get(model.geom_size))
    for part in (np.asarray(jax.device_get(model.geom_translation)), np.asarray(jax.device_get(model.geom_rotation))):
        digest.update(np.ascontiguousarray(part[world]).tobytes())
    digest.update(np.ascontiguousarray(size[world]).tobytes() + np.ascontiguousarray(size[robot]).tobytes())
    digest.update(np.asarray(jax.device_get(model.opt.contact_reach), np.float64).tobytes())
    digest.update(world.tobytes() + robot.tobytes())
    return digest.hexdigest()[:16]


def check_current(model: Model) -> None:
    """Raise if a grid no longer matches the model's values (only checkable for concrete, unbatched values:
    under ``jit`` with the model as a traced argument the check is skipped).

    Raises:
        ArgumentError: a world geom moved or was resized, a robot geom was resized, or ``opt.contact_reach``
            changed since the grid was built.
    """
    leaves = (model.geom_translation, model.geom_rotation, model.geom_size, model.opt.contact_reach)
    if not model.terrain or any(is_traced(x) for x in leaves) or model.geom_translation.ndim != 2:
        return
    for grid in model.terrain:
        if is_traced(grid.world) or grid.world.ndim != 1:
            return
        if fingerprint(model, np.asarray(grid.world), grid.robot) != grid.fingerprint:
            raise ArgumentError(
                f"the terrain grid of the {grid.kind.label} world geoms is stale: the world geoms' poses or sizes, "
                "the robot geoms' sizes or opt.contact_reach changed since it was built; rebuild it with "
                "jaxmor.with_geom_grids(model)"
            )


def lookup(grid: TerrainGrid, centre: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The world geoms each robot geom of the grid is tested against this step.

    Args:
        grid: the grid.
        centre: (nr, 3) the world centres of ``grid.robot``'s geoms [m].

    Returns:
        ``(local, valid)``: (nr, C) int32 indices into ``grid.world`` (0 where not valid) and (nr, C) bool
        whether the entry holds a world geom the robot geom may collide with.
    """
    nx, ny = grid.shape
    dtype = centre.dtype
    cell = jnp.floor((centre[:, :2] - grid.origin.astype(dtype)) / grid.cell_size.astype(dtype))
    ix = jnp.clip(cell[:, 0], 0, nx - 1).astype(jnp.int32)
    iy = jnp.clip(cell[:, 1], 0, ny - 1).astype(jnp.int32)
    entries = grid.cells[ix * ny + iy]
    local = jnp.maximum(entries, 0)
    rows = jnp.arange(len(grid.robot), dtype=jnp.int32)[:, None]
    valid = (entries >= 0) & grid.allowed[rows, local]
    return local, valid


def terrain_count(model: Model, slots) -> int:
    """The number of terrain candidates of ``collide`` (static); ``slots(kind_a, kind_b)`` gives a type pair's."""
    return sum(grid.capacity * sum(slots(model.geom_type[r], grid.kind) for r in grid.robot) for grid in model.terrain)
