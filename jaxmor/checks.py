"""Argument checks shared by the API: one place for "is this argument what the function needs".

Every check raises :class:`jaxmor.ArgumentError` whose message starts with the argument's name.

* Shapes are checked whenever the function runs, eagerly or while being traced (shapes are static).
* Values (finite, non-negative, in a range) are checked when the value is concrete: a Python number, a
  NumPy array, or a JAX array that exists (also one closed over by a function being traced). The check
  reads the value with NumPy, never with a JAX operation, so it works the same inside a trace. A traced
  value (an argument of a function under ``jit``, ``vmap``, ``grad`` or ``scan``) has no value yet and
  passes unchecked; the simulation step guards what it would otherwise apply silently (see
  ``State.nonfinite`` and ``State.invalid``).
* Storage checks (:func:`stored_problem`, :func:`as_stored`): a number is checked in the dtype it will be
  stored in (the model's: float32 unless x64), since a value finite in float64 can overflow float32, or
  become zero or subnormal there; the loaders, ``randomize`` and the setters all use this one rule.
* Plain-Python checks (``as_real``, ``as_finite``, ...) validate numbers of definitions made in Python
  (affine actuators, options) and return Python floats.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError, brief_repr


def is_traced(x: Any) -> bool:
    """Whether ``x`` is a tracer (inside ``jit``, ``vmap``, ``grad``, ``scan``), so its value is unknown."""
    return isinstance(x, jax.core.Tracer)


def refuse_traced(value: Any, name: str) -> None:
    """Refuse a traced value where a concrete one selects part of the model (a name or an index picks which
    arrays a function builds, so it must be known while tracing).

    Raises:
        ArgumentError: ``value`` is traced; the message names ``name``.
    """
    if is_traced(value):
        raise ArgumentError(
            f"{name} must be a name or a Python int known outside jit/vmap (it selects part of the model), got a "
            f"traced {value.dtype}{list(value.shape)} value (pass it as a static argument, or close over it)"
        )


def concrete(x: Any) -> np.ndarray | None:
    """The value of ``x`` as a NumPy array, or ``None`` when it is traced (or not array-like)."""
    if is_traced(x):
        return None
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        return None


def as_array(x: Any, name: str, dtype: Any = None) -> jax.Array:
    """``x`` as a JAX array of ``dtype`` (``None``: keep its dtype).

    Raises:
        ArgumentError: ``x`` is not real numeric array-like (a string, ``None``, an object, complex numbers).
    """
    if isinstance(x, (str, bytes)) or x is None:
        raise ArgumentError(f"{name} must be a number or an array of numbers, got {brief_repr(x)}")
    check_real_dtype(x, name)
    try:
        return jnp.asarray(x, dtype=dtype)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a number or an array of numbers, got {x!r}") from None


def as_vector(x: Any, n: int, name: str, dtype: Any = None, *, finite: bool = False) -> jax.Array:
    """``x`` as an ``(n,)`` array of ``dtype`` (``None``: keep its dtype).

    Raises:
        ArgumentError: not numeric, the shape is not ``(n,)``; with ``finite``, a concrete non-finite entry,
            or one that overflows ``dtype``.
    """
    if finite and dtype is not None:
        as_stored(x, name, dtype, coordinates=True)  # finite once stored too (checked before the cast)
    arr = as_array(x, name, dtype)
    if arr.shape != (n,):
        raise ArgumentError(f"{name} must have shape ({n},), got {arr.shape}")
    value = concrete(x)
    if finite and value is not None and not np.all(np.isfinite(value.astype(float))):
        raise ArgumentError(f"{name} must be finite, got {value.tolist()}")
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


def _loose(node: Any) -> bool:
    """Whether a pytree node stands where an array belongs: a list, or a tuple that is not a tuple of dataclasses
    (a Model's ``terrain``); these are leaves for :func:`as_array_leaves`."""
    if isinstance(node, list):
        return True
    return isinstance(node, tuple) and not all(dataclasses.is_dataclass(x) for x in node)


def as_array_leaves(tree: Any, name: str, where: str) -> Any:
    """``tree`` (a Model, say) with every leaf an array: a list, tuple or Python or NumPy scalar put where an array
    belongs (``model.replace(gravity=[0, 0, -9.81])``) becomes one (``jnp.asarray``, traceable: a list of traced
    numbers is stacked). A tree whose leaves are all arrays (or tracers) is returned as is, after one flatten.

    Args:
        tree: a pytree of arrays.
        name: its name in messages (``"model"``).
        where: the calling function, for messages.

    Returns:
        ``tree``, or a copy with those leaves converted.

    Raises:
        ArgumentError: a leaf that is not numeric (a string, an object, a ragged list), naming its path.
    """
    leaves = jax.tree_util.tree_leaves(tree, is_leaf=_loose)
    if all(isinstance(x, (jax.Array, np.ndarray)) for x in leaves):
        return tree

    def convert(path, leaf):
        if isinstance(leaf, (jax.Array, np.ndarray)):
            return leaf
        field = f"{where}: {name}{jax.tree_util.keystr(path)}"
        if isinstance(leaf, (str, bytes)) or not isinstance(leaf, (list, tuple, int, float, np.generic)):
            raise ArgumentError(f"{field} must be an array, got {quoted(leaf)}")
        try:
            return jnp.asarray(leaf)
        except (TypeError, ValueError):
            raise ArgumentError(f"{field} must be an array (a regular nest of numbers), got {quoted(leaf)}") from None

    return jax.tree_util.tree_map_with_path(convert, tree, is_leaf=_loose)


def quoted(value: Any) -> str:
    """``repr(value)`` for a message, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def model_dtype() -> np.dtype:
    """The float dtype a new Model stores its numbers in.

    Returns:
        float32, or float64 under ``jax_enable_x64``.
    """
    return np.dtype(jnp.asarray(0.0).dtype)


def stored_problem(values: Any, dtype: Any, *, coordinates: bool = False) -> tuple[tuple, str] | None:
    """The first entry of ``values`` that does not survive being stored in ``dtype``, and how it fails.

    A finite value that becomes infinite overflows. A nonzero value whose magnitude falls below the dtype's
    smallest normal number (``1.2e-38`` in float32) underflows: to zero, or to a subnormal number that keeps
    few or no significant digits and makes every product with it slow or zero. ``coordinates`` (positions,
    offsets, angles: zero means nothing special there) only refuse overflows (iCub has a joint origin of
    ``-2.7e-51`` m). Non-finite inputs are the caller's to refuse (an infinite limit may be meant).

    Args:
        values: numbers (any shape), read in float64.
        dtype: the dtype they will be stored in (:func:`model_dtype` for a new Model).
        coordinates: accept underflows.

    Returns:
        ``None`` when every entry survives, else ``(index, reason)``: the entry's index in ``values`` and
        ``"overflows"``, ``"underflows to zero"`` or ``"underflows to a subnormal number"``.
    """
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        cast = values.astype(dtype)
    finite = np.isfinite(values)
    bad = finite & ~np.isfinite(cast)
    if not coordinates:
        bad |= finite & (values != 0) & (np.abs(cast) < np.finfo(dtype).tiny)
    if not bad.any():
        return None
    index = np.unravel_index(int(np.argmax(bad)), values.shape)
    if not np.isfinite(cast[index]):
        return index, "overflows"
    return index, "underflows to zero" if cast[index] == 0 else "underflows to a subnormal number"


def stored_failure(reason: str, dtype: Any) -> str:
    """The end of a message about a value that ``dtype`` cannot hold: the reason, the dtype and what it stores.

    Args:
        reason: the reason :func:`stored_problem` gives.
        dtype: a float dtype.

    Returns:
        e.g. ``"overflows in float32, the model's dtype (it stores 0 or a magnitude in [1.2e-38, 3.4e+38])"``.
    """
    info = np.finfo(dtype)
    stores = f"0 or a magnitude in [{float(info.tiny):.2g}, {float(info.max):.2g}]"
    return f"{reason} in {np.dtype(dtype).name}, the model's dtype (it stores {stores})"


def as_stored(value: Any, name: str, dtype: Any, *, coordinates: bool = False) -> Any:
    """``value`` as given, after checking that ``dtype`` holds every concrete entry (:func:`stored_problem`);
    a traced value, or one that is not numeric (left to the caller's other checks), passes unchecked.

    Args:
        value: a number or an array of numbers.
        name: the argument's name, for the message.
        dtype: the dtype it will be stored in.
        coordinates: accept underflows (see :func:`stored_problem`).

    Returns:
        ``value``, unchanged.

    Raises:
        ArgumentError: naming ``name``, the value, the dtype and the range it stores.
    """
    found = concrete(value)
    if found is None or not np.issubdtype(found.dtype, np.number) or np.iscomplexobj(found):
        return value
    problem = stored_problem(found, dtype, coordinates=coordinates)
    if problem is not None:
        index, reason = problem
        where = f"[{', '.join(map(str, index))}]" if index else ""
        raise ArgumentError(
            f"{name}{where} = {float(found[index])!r} {stored_failure(reason, dtype)}; enable jax_enable_x64 for "
            "float64, or rescale"
        )
    return value


def as_bool(value: Any, name: str) -> bool:
    """A Python or NumPy bool, as a ``bool``.

    Raises:
        ArgumentError: anything else (``0``, ``"yes"``, ``None``).
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ArgumentError(f"{name} must be a bool (True or False), got {quoted(value)}")
    return bool(value)


def as_key(key: Any, where: str) -> jax.Array:
    """``key`` if it is one concrete ``jax.random`` key: a typed key of shape ``()``, or a raw key (the dtype and
    shape ``jax.random.PRNGKey`` makes: ``uint32`` of shape ``(2,)`` by default).

    Args:
        key: the argument.
        where: the calling function, for messages.

    Raises:
        ArgumentError: a traced key (the caller draws on the host), a batch of keys, or anything else (an int
            seed, say).
    """
    if is_traced(key):
        raise ArgumentError(
            f"{where}: key must be a concrete jax.random key: {where} draws and checks on the host, so call it "
            "outside jit/vmap (got a traced value)"
        )
    raw = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    typed = isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    if typed or isinstance(key, (jax.Array, np.ndarray)):
        one = () if typed else raw.shape
        lead = key.shape[: key.ndim - len(one)]
        if (typed or key.dtype == raw.dtype) and key.shape[len(lead) :] == one:
            if not lead:
                return key
            raise ArgumentError(
                f"{where}: key must be one key, got a batch of keys of shape {lead} (split it and call {where} once "
                "per key for several)"
            )
    raise ArgumentError(
        f"{where}: key must be a jax.random key (jax.random.key(seed), or jax.random.PRNGKey(seed): {raw.dtype} of "
        f"shape {raw.shape}), got {quoted(key)}"
    )


def as_int(value: Any, name: str, *, minimum: int = 0) -> int:
    """A count: a Python or NumPy integer (not a bool, a float or a string) ``>= minimum``, as an ``int``.

    Args:
        value: the argument.
        name: the argument's name, for the message.
        minimum: the smallest accepted value.

    Returns:
        ``value`` as a Python ``int``.

    Raises:
        ArgumentError: naming ``name``, the expected range and the value (quoted briefly).
    """
    integral = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not integral or value < minimum:
        expected = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ArgumentError(f"{name} must be {expected} (a Python or NumPy integer), got {brief_repr(value)}")
    return int(value)


def as_positive_int(value: Any, name: str) -> int:
    """A Python or NumPy integer ``>= 1`` (not a bool), as an ``int`` (:func:`as_int`).

    Raises:
        ArgumentError: anything else.
    """
    return as_int(value, name, minimum=1)


def check_real_dtype(value: Any, name: str) -> None:
    """Refuse an array whose dtype is not real numeric (complex, string, object); bool and integer pass.

    The dtype is known while tracing too, so this is checked under ``jit`` as well.

    Args:
        value: an array, a tracer or array-like.
        name: the argument's name, for the message.

    Raises:
        ArgumentError: naming ``name`` and the dtype.
    """
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):
            raise ArgumentError(f"{name} must be real numbers, got {brief_repr(value)}") from None
    real = jnp.issubdtype(dtype, jnp.bool_) or (
        jnp.issubdtype(dtype, jnp.number) and not jnp.issubdtype(dtype, jnp.complexfloating)
    )
    if not real:
        raise ArgumentError(f"{name} must be real numbers (a float array), got dtype {np.dtype(dtype).name}")


def as_real(value: Any, name: str) -> float:
    """``value`` as a Python float (possibly infinite or NaN).

    Raises:
        ArgumentError: a bool, a string, bytes, or anything ``float()`` refuses.
    """
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ArgumentError(f"{name} must be a real number, got {brief_repr(value)}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a real number, got {brief_repr(value)}") from None


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


def as_positive(value: Any, name: str) -> float:
    """``value`` as a finite Python float ``> 0``.

    Raises:
        ArgumentError: not a finite real number, or not positive.
    """
    out = as_finite(value, name)
    if out <= 0.0:
        raise ArgumentError(f"{name} must be > 0, got {out!r}")
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


#: The values of ``Options.implicit_bias`` (:mod:`jaxmor.sim.integrator`).
IMPLICIT_BIAS = ("kahan", "predicted")
#: The solvers (``Options.solver``; :mod:`jaxmor.sim.solver`).
SOLVERS = ("auto", "pgs", "jacobi")


def check_options(opt: Any, where: str) -> None:
    """Check simulation options (a :class:`jaxmor.Options`): ``solver_iterations``, ``position_iterations`` and
    ``jacobi_iterations`` ints ``>= 1``, a known ``solver``, ``contact_budget`` ``None`` or an int ``>= 1``, a
    known ``friction_rule`` and ``implicit_bias`` (static, always checked), ``timestep`` positive and finite,
    ``gravity`` and ``wind`` finite 3-vectors, ``contact_reach``, ``density`` and ``viscosity`` finite and ``>= 0``
    (checked when concrete, every world of a batch; a traced time step is guarded by the step: ``State.invalid``).

    Raises:
        ArgumentError: naming the option.
    """
    rules = ("geometric_mean", "mean", "min", "max")
    if opt.friction_rule not in rules:
        raise ArgumentError(f"{where}: opt.friction_rule must be one of {rules}, got {opt.friction_rule!r}")
    if opt.implicit_bias not in IMPLICIT_BIAS:
        raise ArgumentError(f"{where}: opt.implicit_bias must be one of {IMPLICIT_BIAS}, got {opt.implicit_bias!r}")
    if opt.solver not in SOLVERS:
        raise ArgumentError(f"{where}: opt.solver must be one of {SOLVERS}, got {opt.solver!r}")
    for name in ("solver_iterations", "position_iterations", "jacobi_iterations"):
        iterations = getattr(opt, name)
        if isinstance(iterations, (bool, np.bool_)) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
            raise ArgumentError(f"{where}: opt.{name} must be an int >= 1, got {iterations!r}")
    timestep = concrete(opt.timestep)
    if timestep is None and not is_traced(opt.timestep):
        raise ArgumentError(f"{where}: opt.timestep must be a number, got {opt.timestep!r}")
    if timestep is not None and (not np.all(np.isfinite(timestep)) or not np.all(timestep > 0)):
        raise ArgumentError(f"{where}: opt.timestep must be positive and finite [s], got {_brief(timestep)}")
    gravity = concrete(opt.gravity)
    if gravity is None and not is_traced(opt.gravity):
        raise ArgumentError(f"{where}: opt.gravity must be a 3-vector, got {opt.gravity!r}")
    if gravity is not None and (gravity.shape[-1:] != (3,) or not np.all(np.isfinite(gravity))):
        raise ArgumentError(f"{where}: opt.gravity must be a finite 3-vector [m/s^2], got {_brief(gravity)}")
    budget = opt.contact_budget
    bad_budget = isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)) or budget < 1
    if budget is not None and bad_budget:
        raise ArgumentError(f"{where}: opt.contact_budget must be None or an int >= 1 (contact slots), got {budget!r}")
    for name, unit in (("contact_reach", "m"), ("density", "kg/m^3"), ("viscosity", "Pa s")):
        _check_nonnegative(getattr(opt, name), f"{where}: opt.{name}", unit)
    wind = concrete(opt.wind)
    if wind is None and not is_traced(opt.wind):
        raise ArgumentError(f"{where}: opt.wind must be a 3-vector, got {opt.wind!r}")
    if wind is not None and (wind.shape[-1:] != (3,) or not np.all(np.isfinite(wind))):
        raise ArgumentError(f"{where}: opt.wind must be a finite 3-vector [m/s], got {_brief(wind)}")
    if not isinstance(opt.fluid_forces, (bool, np.bool_)):
        raise ArgumentError(f"{where}: opt.fluid_forces must be a bool, got {opt.fluid_forces!r}")


def _check_nonnegative(value: Any, name: str, unit: str) -> None:
    """Refuse a scalar option that is not a number or, where concrete, not finite and ``>= 0``."""
    number = concrete(value)
    if number is None and not is_traced(value):
        raise ArgumentError(f"{name} must be a number [{unit}], got {value!r}")
    if number is not None and (not np.all(np.isfinite(number)) or np.any(number < 0)):
        raise ArgumentError(f"{name} must be finite and >= 0 [{unit}], got {_brief(number)}")


def _brief(value: np.ndarray) -> str:
    """A value for a message: itself if small, else its shape and the offending entries' count."""
    if value.size <= 6:
        return repr(value.tolist())
    return f"an array of shape {value.shape}"
