"""The ground's height field as a model editor (:func:`with_height_field`).

The surface, its triangles and the contacts on it: :mod:`jaxmor.sim.collision.height_field`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmor.checks import as_scalar, as_stored, is_traced
from jaxmor.errors import ArgumentError
from jaxmor.sim.collision.height_field import MAX_WINDOW
from jaxmor.sim.collision.terrain import bounding_radius
from jaxmor.types import GeomType, HeightField, Model


def with_height_field(
    model: Model,
    heights: Any,
    spacing: Any,
    origin: Any = (0.0, 0.0),
    friction: float | None = None,
    restitution: float = 0.0,
) -> Model:
    """A copy of ``model`` whose ground holds a height field beside its plane.

    Every geom that touches the ground touches the field too: each of its ground points meets whichever of the two
    surfaces is nearer, and the field's vertices inside a box or a hull push it out (:func:`field_window`). A model
    without a ground gets a plane at the field's lowest height (what leaves the grid rests at that level). The
    heights are a leaf: ``jax.vmap`` over models whose ``height_field.heights`` differ gives each world its own
    terrain, and gradients reach them.

    Args:
        model: the model.
        heights: (ny, nx) the surface's height at each grid vertex, world ``z`` [m], at least 2 x 2, finite; row
            ``i`` at ``y = origin[1] + i spacing[1]``, column ``j`` at ``x = origin[0] + j spacing[0]``.
        spacing: ``(dx, dy)`` the grid's steps [m], positive (a number: both).
        origin: ``(x, y)`` of vertex ``(0, 0)`` [m].
        friction: the field's Coulomb friction coefficient (``>= 0``), combined with the geoms' as the ground's;
            ``None``: the ground's (``model.ground_friction``).
        restitution: its coefficient of restitution in ``[0, 1]``.

    Returns:
        The new model.

    Raises:
        ArgumentError: an argument of the wrong shape, not finite or out of its range; the message names it.
    """
    dtype = model.ground_height.dtype
    grid = _heights(heights, dtype)
    step = _pair(spacing, "spacing", dtype, positive=True)
    corner = _pair(origin, "origin", dtype, positive=False)
    far = np.asarray(corner, np.float64) + np.asarray(step, np.float64) * (np.asarray(grid.shape[::-1]) - 1)
    as_stored(far, "the far corner (origin + spacing (n - 1)) [m]", dtype, coordinates=True)
    field = HeightField(
        heights=grid,
        origin=corner,
        spacing=step,
        friction=model.ground_friction
        if friction is None
        else jnp.asarray(as_scalar(friction, "friction", lower=0.0), dtype),
        restitution=jnp.asarray(as_scalar(restitution, "restitution", lower=0.0, upper=1.0), dtype),
        window=field_window(model, step),
    )
    if model.ground:
        return model.replace(height_field=field)
    return model.replace(
        height_field=field,
        ground=True,
        ground_height=jnp.min(grid),
        ground_friction=field.friction,
        ground_restitution=field.restitution,
    )


def _heights(heights: Any, dtype) -> Any:
    if is_traced(heights):
        arr = jnp.asarray(heights, dtype)
    else:
        try:
            value = np.asarray(heights, dtype=np.float64)
        except (TypeError, ValueError):
            raise ArgumentError(f"heights must be a 2-D array of numbers, got {type(heights).__name__}") from None
        if not np.all(np.isfinite(value)):
            raise ArgumentError("heights must be finite")
        as_stored(value, "heights [m]", dtype, coordinates=True)
        arr = jnp.asarray(value, dtype)
    if arr.ndim != 2 or min(arr.shape) < 2:
        raise ArgumentError(f"heights must have shape (ny, nx) with ny, nx >= 2, got {arr.shape}")
    return arr


def _pair(value: Any, name: str, dtype, positive: bool) -> Any:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a number or a pair (x, y) of numbers, got {value!r}") from None
    if arr.ndim == 0:
        arr = np.full(2, float(arr))
    if arr.shape != (2,):
        raise ArgumentError(f"{name} must be a number or a pair (x, y), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ArgumentError(f"{name} must be finite, got {arr.tolist()}")
    if positive and not np.all(arr > 0):
        raise ArgumentError(f"{name} must be positive, got {arr.tolist()}")
    as_stored(arr, f"{name} [m]", dtype, coordinates=not positive)
    return jnp.asarray(arr, dtype)


def field_window(model: Model, spacing: Any) -> int:
    """Vertices per side of the square of field vertices that each box and hull geom on the ground searches around
    its centre for vertices inside it (:attr:`jaxmor.types.HeightField.window`): ``2 ceil(r / s) + 2`` for the
    largest bounding-sphere radius ``r`` of those geoms and the grid's smaller step ``s``, which covers the geom's
    footprint wherever its centre lies in its cell; 0 without such geoms; at most :data:`MAX_WINDOW` (a warning
    names the geoms reaching beyond it). Sizes traced under a transformation give :data:`MAX_WINDOW`.

    Args:
        model: the model whose geoms meet the field.
        spacing: (2,) the field's grid steps [m].
    """
    kinds = (GeomType.BOX, GeomType.MESH)
    geoms = [
        g for g in range(model.ng) if model.geom_body[g] >= 0 and model.geom_ground[g] and model.geom_type[g] in kinds
    ]
    if not geoms:
        return 0
    if is_traced(model.geom_size) or is_traced(model.mesh_vertices) or is_traced(spacing):
        return MAX_WINDOW
    step = float(np.min(np.asarray(spacing, np.float64)))
    radius = dict(zip(geoms, bounding_radius(model, geoms), strict=True))
    window = 2 * math.ceil(max(radius.values()) / step) + 2
    if window > MAX_WINDOW:
        wide = [model.geom_names[g] for g in geoms if 2 * math.ceil(radius[g] / step) + 2 > MAX_WINDOW]
        warnings.warn(
            f"geoms {wide} span more than {MAX_WINDOW} height-field vertices (spacing {step:g} m): field vertices "
            f"farther than about {(MAX_WINDOW / 2 - 1) * step:g} m from their centres are not seen inside them",
            stacklevel=3,
        )
    return min(window, MAX_WINDOW)


def refit_window(model: Model) -> Model:
    """``model`` with its height field's window (:func:`field_window`) fitted to its geoms again, after an editor
    added geoms or changed which touch the ground; ``model`` itself without a field."""
    field = model.height_field
    window = None if field is None else field_window(model, field.spacing)
    if window is None or window == field.window:
        return model
    return model.replace(height_field=field.replace(window=window))
