"""Learned torque residuals on a model's motor actuators: making a network for a model and setting it.

The network and its place in the step are :mod:`jaxmor.actuation.residual`'s; it is fitted with
:func:`jaxmor.sysid.fit` (``"residual"`` among the parameters) and saved with the model
(:func:`jaxmor.save_checkpoint`), or as a weights file that a description, an actuator file or a world file names
(:mod:`jaxmor.io.residual_file`; :func:`residual_arrays`, :func:`residual_from_file`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.residual import SIGNALS, ResidualNetwork, init_residual, no_residual
from jaxmor.checks import as_key, as_positive_int, as_stored, concrete
from jaxmor.errors import ArgumentError, ModelError, brief_repr
from jaxmor.io.files import shortened, writing
from jaxmor.io.residual_file import ResidualFile
from jaxmor.model import resolve_actuator
from jaxmor.types import Model

#: The shapes of a network's leaves, by name, in terms of ``F`` (inputs), ``W`` (width) and ``L`` (extra layers).
_SHAPES = {
    "input_scale": ("S",),
    "output_scale": (),
    "w_in": ("F", "W"),
    "b_in": ("W",),
    "w_hidden": ("L", "W", "W"),
    "b_hidden": ("L", "W"),
    "w_out": ("W",),
    "b_out": (),
}


def residual_network(
    model: Model,
    key: Any,
    *,
    history: int = 3,
    width: int = 16,
    layers: int = 1,
    actuators: Sequence[str | int] | None = None,
) -> ResidualNetwork:
    """A residual network for ``model``'s motor actuators that starts as no residual (zero output layer).

    The input scales are the model's: the largest torque any active motor can make (its stall torque, capped
    by its peak) [Nm], the largest no-load speed [rad/s], and the angle that speed covers over the history's
    steps [rad]; one unit of output is that torque.

    Args:
        model: the model (its motor actuators and dtype).
        key: a ``jax.random`` key for the hidden layers' weights.
        history: steps of history the network reads, the current one included (``>= 1``).
        width: units per hidden layer (``>= 1``).
        layers: hidden layers (``>= 1``).
        actuators: names or indices of the actuators the residual acts on (default: all of them).

    Returns:
        The :class:`~jaxmor.actuation.residual.ResidualNetwork`; set it with :func:`with_residual`.

    Raises:
        ArgumentError: a count that is not a positive int, a bad key, an unknown actuator, or a model without
            motor actuators.
    """
    if model.na == 0:
        raise ArgumentError("residual_network: the model has no motor actuators")
    history = as_positive_int(history, "history")
    width = as_positive_int(width, "width")
    layers = as_positive_int(layers, "layers")
    active = _active(model, actuators)
    motor = model.actuators.motor
    torque = np.minimum(np.asarray(motor.stall_torque()), np.asarray(motor.peak_torque))[active]
    speed = np.asarray(motor.no_load_speed())[active]
    dtype = model.body_mass.dtype
    step = float(np.asarray(model.opt.timestep))
    return init_residual(
        as_key(key, "residual_network"),
        model.na,
        history=history,
        width=width,
        layers=layers,
        input_scale=(float(torque.max()), float(speed.max()), float(speed.max() * step * max(history - 1, 1))),
        output_scale=float(torque.max()),
        active=active,
        dtype=dtype,
    )


def _active(model: Model, actuators: Sequence[str | int] | None) -> np.ndarray:
    """(na,) bool: the actuators named (all for ``None``)."""
    if actuators is None:
        return np.ones(model.na, bool)
    if isinstance(actuators, (str, int)) or not isinstance(actuators, Sequence) or not actuators:
        raise ArgumentError(f"actuators must be a non-empty list of actuator names or indices, got {actuators!r}")
    active = np.zeros(model.na, bool)
    active[[resolve_actuator(model, a) for a in actuators]] = True
    return active


def with_residual(model: Model, residual: ResidualNetwork | None) -> Model:
    """A copy of ``model`` whose motor actuators add ``residual``'s torque to their commands, before the motor
    region clips them (:mod:`jaxmor.actuation.residual`); ``None`` removes it.

    States made for the model before (their :attr:`~jaxmor.State.actuator_history` has the old length) do not fit
    it: make new ones (:func:`jaxmor.init_state`).

    Args:
        model: the model.
        residual: a :class:`~jaxmor.actuation.residual.ResidualNetwork` (:func:`residual_network`), or ``None``.

    Returns:
        The model with the residual.

    Raises:
        ArgumentError: not a ResidualNetwork; ``active`` not one bool per motor actuator; a leaf of the wrong
            shape (the message names it and the expected shape) or, when concrete, not finite or not held by the
            model's dtype; input scales that are not positive.
    """
    if residual is None:
        return model.replace(actuators=model.actuators.replace(residual=no_residual(model.na)))
    if not isinstance(residual, ResidualNetwork):
        raise ArgumentError(f"residual must be a ResidualNetwork (residual_network), got {type(residual).__name__}")
    if len(residual.active) != model.na or not all(isinstance(a, bool) for a in residual.active):
        raise ArgumentError(
            f"residual.active must hold one bool per motor actuator ({model.na}), got {residual.active!r}"
        )
    as_positive_int(residual.history, "residual.history")
    dtype = model.body_mass.dtype
    leaves = {name: _leaf(residual, name, dtype) for name in _SHAPES}
    _check_shapes(leaves, len(SIGNALS) * residual.history)
    scale = concrete(leaves["input_scale"])
    if scale is not None and not np.all(scale > 0):
        raise ArgumentError(f"residual.input_scale must be positive, got {scale}")
    return model.replace(actuators=model.actuators.replace(residual=residual.replace(**leaves)))


def _leaf(residual: ResidualNetwork, name: str, dtype) -> jax.Array:
    value = getattr(residual, name)
    if concrete(value) is not None:
        array = np.asarray(value)
        if not np.all(np.isfinite(array)):
            raise ArgumentError(f"residual.{name} must be finite")
        as_stored(array, f"residual.{name}", dtype)
    return jnp.asarray(value, dtype)


def _check_shapes(leaves: dict[str, jax.Array], features: int) -> None:
    """Check every leaf's shape against :data:`_SHAPES` (``F = features``, ``S = 3``; ``W`` and ``L`` bound by the
    first leaf that has them).

    Raises:
        ArgumentError: naming the leaf, its shape and the expected one.
    """
    sizes: dict[str, int] = {"F": features, "S": len(SIGNALS)}
    for name, dims in _SHAPES.items():
        shape = leaves[name].shape
        ok = len(shape) == len(dims) and all(sizes.setdefault(d, n) == n for d, n in zip(dims, shape, strict=True))
        if not ok:
            expected = ", ".join(str(sizes.get(d, d)) for d in dims)
            raise ArgumentError(
                f"residual.{name} must have shape ({expected}) (F = 3 history inputs, W units, L extra layers), "
                f"got {shape}"
            )


def residual_arrays(model: Model) -> dict[str, np.ndarray]:
    """The model's residual as plain arrays for a weights file (``numpy.savez``): its leaves, ``history`` and the names
    of the actuators it acts on (:func:`residual_from_arrays` reads them back)."""
    net = model.actuators.residual
    arrays = {name: np.asarray(getattr(net, name)) for name in _SHAPES}
    active = [n for n, on in zip(model.actuators.names, net.active, strict=True) if on]
    return {**arrays, "history": np.asarray(net.history, np.int64), "actuators": np.asarray(active, dtype=str)}


def residual_from_arrays(model: Model, arrays: Any) -> Model:
    """``model`` with the residual a weights file holds (:func:`residual_arrays`' layout; ``arrays`` maps names to
    arrays, e.g. an ``np.load`` of it with ``allow_pickle=False``).

    Raises:
        ArgumentError: a missing or extra entry, a history that is not one int ``>= 1``, no actuator names or one
            the model does not have, or a leaf :func:`with_residual` refuses (shape, finiteness, dtype range).
    """
    names = {*_SHAPES, "history", "actuators"}
    found = set(arrays)
    if found != names:
        raise ArgumentError(f"a residual file holds {sorted(names)}, got {sorted(found)}")
    history = np.asarray(arrays["history"])
    if history.shape != () or history.dtype.kind not in "iu" or int(history) < 1:
        raise ArgumentError(f"the residual's history must be one int >= 1, got {history!r}")
    names_array = np.asarray(arrays["actuators"])
    if names_array.dtype.kind != "U" or names_array.ndim != 1 or names_array.size == 0:
        raise ArgumentError(
            f"the residual's actuators must be a non-empty list of actuator names, got {brief_repr(names_array)}"
        )
    acting = [str(a) for a in names_array]
    unknown = [a for a in acting if a not in model.actuators.names]
    if unknown:
        raise ArgumentError(
            f"the residual acts on actuators {unknown}, not in the model's {list(model.actuators.names)}"
        )
    leaves = {name: np.asarray(arrays[name]) for name in _SHAPES}
    bad = [name for name, leaf in leaves.items() if leaf.dtype.kind != "f"]
    if bad:
        raise ArgumentError(f"the residual's {bad} must be floating-point arrays")
    active = tuple(n in acting for n in model.actuators.names)
    return with_residual(model, ResidualNetwork(**leaves, history=int(history), active=active))


def residual_from_file(model: Model, residual: ResidualFile) -> Model:
    """``model`` with the residual a description's ``<residual file>`` element names (:mod:`jaxmor.io.residual_file`).

    Raises:
        ModelError: at the element's file and line, naming the weights file: what :func:`residual_from_arrays`
            refuses (an unknown actuator, a history that does not match ``w_in``, a leaf of the wrong shape).
    """
    try:
        return residual_from_arrays(model, residual.arrays)
    except ArgumentError as err:
        message = f"the residual in {shortened(residual.file)!r}: {err}"
        raise ModelError(residual.source, residual.line, message) from None


def save_residual(model: Model, path: str | os.PathLike, where: str) -> None:
    """Write ``model``'s residual to the weights file ``path`` (:func:`residual_arrays`, ``numpy.savez``).

    Raises:
        ArgumentError: ``path`` cannot be written (the system's reason; ``where`` names the caller).
    """
    with writing(where, "the residual's weights file", path), open(path, "wb") as out:
        np.savez(out, **residual_arrays(model))
