"""Argument checks shared by the API: one place for "is this argument what the function needs".

Every check raises :class:`jaxmor.ArgumentError` whose message starts with the argument's name.

* Shapes are checked whenever the function runs, eagerly or while being traced (shapes are static).
* Values (finite, non-negative, in a range) are checked only when the value is concrete; a traced
  value (inside ``jit``, ``vmap``, ``grad`` or ``scan``) passes unchecked, since its value does not
  exist yet. The functions that use these checks say so in their docstrings.
* Plain-Python checks (``as_real``, ``as_finite``, ...) validate numbers of definitions made in Python
  (affine actuators, options) and return Python floats.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError


def is_traced(x: Any) -> bool:
    """Whether ``x`` is a tracer (inside ``jit``, ``vmap``, ``grad``, ``scan``), so its value is unknown."""
    return isinstance(x, jax.core.Tracer)


def as_vector(x: Any, n: int, name: str, dtype: Any = None, *, finite: bool = False) -> jax.Array:
    """``x`` as an ``(n,)`` array of ``dtype`` (``None``: keep its dtype).

    Raises:
        ArgumentError: the shape is not ``(n,)``; with ``finite``, a concrete non-finite entry.
    """
    arr = jnp.asarray(x, dtype=dtype)
    if arr.shape != (n,):
        raise ArgumentError(f"{name} must have shape ({n},), got {arr.shape}")
    if finite and not is_traced(arr) and not bool(jnp.all(jnp.isfinite(arr))):
        raise ArgumentError(f"{name} must be finite, got {arr.tolist()}")
    return arr


def as_scalar(value: Any, name: str, *, lower: float | None = None, upper: float | None = None) -> Any:
    """A finite real scalar within ``[lower, upper]``; returned as given (a traced value passes unchecked).

    Raises:
        ArgumentError: not a real number (a bool, a string, an array of another shape), not finite, or
            out of its bounds.
    """
    if is_traced(value):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be a number, got {value!r}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a number, got {value!r}") from None
    if arr.shape != ():
        raise ArgumentError(f"{name} must be a scalar, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ArgumentError(f"{name} must be a number, got {value!r}")
    x = float(arr)
    if not math.isfinite(x):
        raise ArgumentError(f"{name} must be finite, got {x}")
    if lower is not None and x < lower:
        raise ArgumentError(f"{name} must be >= {lower}, got {x}")
    if upper is not None and x > upper:
        raise ArgumentError(f"{name} must be <= {upper}, got {x}")
    return value


def as_positive_int(value: Any, name: str) -> int:
    """A Python or NumPy integer ``>= 1`` (not a bool), as an ``int``.

    Raises:
        ArgumentError: anything else.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ArgumentError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def as_real(value: Any, name: str) -> float:
    """``value`` as a Python float (possibly infinite or NaN).

    Raises:
        ArgumentError: a bool, a string, bytes, or anything ``float()`` refuses.
    """
    if isinstance(value, (bool, str, bytes)):
        raise ArgumentError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a real number, got {value!r}") from None


def as_finite(value: Any, name: str) -> float:
    """``value`` as a finite Python float.

    Raises:
        ArgumentError: not a real number, or not finite.
    """
    out = as_real(value, name)
    if not math.isfinite(out):
        raise ArgumentError(f"{name} must be finite, got {out!r}")
    return out


def as_nonnegative(value: Any, name: str) -> float:
    """``value`` as a finite Python float ``>= 0``.

    Raises:
        ArgumentError: not a finite real number, or negative.
    """
    out = as_finite(value, name)
    if out < 0.0:
        raise ArgumentError(f"{name} must be >= 0, got {out!r}")
    return out


def as_range(value: Any, name: str) -> tuple[float, float] | None:
    """``value`` as a ``(lo, hi)`` pair of Python floats with ``lo <= hi`` (infinite bounds allowed), or ``None``.

    Raises:
        ArgumentError: not a pair of real numbers, a NaN bound, or ``lo > hi``.
    """
    if value is None:
        return None
    try:
        lo, hi = value
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a pair (lo, hi) or None, got {value!r}") from None
    lo, hi = as_real(lo, f"{name}[0]"), as_real(hi, f"{name}[1]")
    if math.isnan(lo) or math.isnan(hi):
        raise ArgumentError(f"{name} contains NaN: ({lo!r}, {hi!r})")
    if lo > hi:
        raise ArgumentError(f"{name} has lo > hi: ({lo!r}, {hi!r})")
    return (lo, hi)
