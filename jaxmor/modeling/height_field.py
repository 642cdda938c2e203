"""The ground's height field as a model editor (:func:`with_height_field`).

The surface, its triangles and the contacts on it: :mod:`jaxmor.sim.collision.height_field`.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmor.checks import as_scalar, as_stored, is_traced
from jaxmor.errors import ArgumentError
from jaxmor.types import HeightField, Model


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
    surfaces is nearer. A model without a ground gets a plane at the field's lowest height (what leaves the grid
    rests at that level). The heights are a leaf: ``jax.vmap`` over models whose ``height_field.heights`` differ
    gives each world its own terrain, and gradients reach them.

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
