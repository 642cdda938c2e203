"""The step's guard: which worlds can take a step, the stand-in they are stepped at when they cannot, and
the choice between the computed state and the kept one.

A world that cannot run (:func:`runnable`: already flagged, non-finite inputs, coordinates or velocities
beyond :data:`DIVERGENCE_BOUND`, a rotation faster than the time step resolves (:func:`resolved`), a time step
that is not positive) or whose step yields a non-finite ``q`` or ``u`` or a rotation faster than the step
resolves keeps its previous state (``q``, ``u``, time, impulses, actuator states), and ``State.nonfinite``
(``State.invalid`` for the time step) is set, per world, so one bad world cannot poison a batch silently; a
flagged world stays where it is until the flag is cleared. A world that cannot run is stepped at a harmless
stand-in (a "double where"), so its derivatives are zero rather than NaN and a diverged world masked out of a
loss leaves the batch's gradient finite. A step that overflows from inputs within the bound is rejected after
the fact; :func:`shielded` gives it zero derivatives too (its tangents masked on the way in and out, so their
transpose, the backward pass, is masked as well).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.types import Model, State

#: A world whose coordinates or velocities exceed this (in SI units) has diverged: it is stopped before
#: its numbers overflow (in float32 the square of a velocity overflows near 1.8e19), which keeps the
#: gradient of a batch finite when a diverging world is masked out of the loss.
DIVERGENCE_BOUND = 1e8

#: A world whose rotational velocity turns a joint by more than this in one step [rad] has run away
#: relative to its own time step: half a turn per step is past what the step can represent (the
#: rotation aliases), whatever the model's size or units.
ROTATION_PER_STEP_BOUND = float(np.pi)


def runnable(model: Model, state: State) -> jax.Array:
    """() bool: whether a world can take a step: not flagged ``nonfinite``, a positive finite time step,
    finite ``q`` and ``u`` within :data:`DIVERGENCE_BOUND`, finite inputs and warm start, and no NaN
    actuation limit. Decided from the inputs alone, so a world that cannot run is stepped at a stand-in
    (:func:`stand_in`) and no NaN or infinite partial derivative of its own values enters the gradient."""
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    ok = ~state.nonfinite & jnp.isfinite(h) & (h > 0) & resolved(model, state)
    for field in dataclasses.fields(State):
        rule = field.metadata["guard"]
        if rule is None:
            continue
        for x in jax.tree.leaves(getattr(state, field.name)):
            if not jnp.issubdtype(x.dtype, jnp.inexact):
                continue
            if rule == "bounded":
                ok = ok & jnp.all(jnp.isfinite(x) & (jnp.abs(x) < DIVERGENCE_BOUND))
            elif rule == "finite":
                ok = ok & jnp.all(jnp.isfinite(x))
            else:  # "non_negative"
                ok = ok & ~jnp.any(jnp.isnan(x) | (x < 0))
    return ok


def stand_in(model: Model, state: State) -> State:
    """A harmless state of the same shapes, stepped in place of a world that cannot run: the default pose
    (``model.q_default``) at rest, every input and impulse zero, the settings (flags, enforcement) of ``state``."""
    q = jnp.asarray(model.q_default, state.q.dtype)
    zeros = jax.tree.map(lambda x: jnp.zeros_like(x) if jnp.issubdtype(x.dtype, jnp.inexact) else x, state)
    return zeros.replace(q=q)


def resolved(model: Model, state: State) -> jax.Array:
    """() bool: whether every rotational velocity (``model.dof_rotational``) turns its joint by at most
    :data:`ROTATION_PER_STEP_BOUND` in one time step (``|u_i| h``; true for a time step that is not positive,
    which is flagged on its own)."""
    rotational = np.asarray(model.dof_rotational, bool)
    if not rotational.any():
        return jnp.asarray(True)
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    turn = jnp.max(jnp.abs(state.u[rotational])) * jnp.where(h > 0, h, 0.0)
    return ~(turn > ROTATION_PER_STEP_BOUND)


def finite(state: State) -> jax.Array:
    """() bool: whether ``q`` and ``u`` are finite."""
    return jnp.all(jnp.isfinite(state.q)) & jnp.all(jnp.isfinite(state.u))


def accept(model: Model, state: State, candidate: State, ok: jax.Array) -> State:
    """The guard of the step: ``candidate`` where ``ok``, else ``state`` kept (see the module docstring).

    A rejected step changes only the flags and clears the external forces: ``invalid`` for a time step
    that is not positive and finite or a negative actuation limit (values set under ``jit``), ``nonfinite``
    otherwise (the world could not run, or its step went non-finite).
    """
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    good_step = jnp.isfinite(h) & (h > 0) & ~jnp.any(state.actuation_limit < 0)
    kept = state.replace(external_force=candidate.external_force)
    out = where_tree(ok, candidate, kept)
    return out.replace(
        nonfinite=state.nonfinite | (good_step & ~ok),
        invalid=jnp.where(ok, candidate.invalid, state.invalid) | ~good_step,
    )


@partial(jax.checkpoint, prevent_cse=False)
def where_tree(pred: jax.Array, on_true, on_false):
    """``where(pred, a, b)`` leaf by leaf for two pytrees of the same structure, ``pred`` a () bool.

    Rematerialized under differentiation (``jax.checkpoint``): a derivative keeps ``pred`` and broadcasts it again,
    instead of keeping its broadcast to every leaf's shape (a rollout's gradient stores each kept value at every
    step; docs/design/performance.md, "The gradient's compile").
    """
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def shielded(fn: Callable[[Model, State], State], model: Model, state: State) -> State:
    """``fn(model, state)``, the step's stages, with derivatives that are zero, never NaN, for a world whose
    result :func:`accept` rejects (not :func:`finite`, or not :func:`resolved`).

    Forward and reverse mode alike: the tangents of ``(model, state)`` and of the result are multiplied by the
    world's verdict (a ``where``, which drops an infinite or NaN partial derivative rather than multiplying it
    by zero), and the backward pass, their transpose, is masked the same way. Without it one world whose step
    overflows makes the gradient of every parameter its batch shares NaN, even when the loss masks it out.
    The values are ``fn``'s, computed once.

    Args:
        fn: ``(model, state) -> State``, traced once per call.
        model: the model.
        state: the state the stages start from.

    Returns:
        ``fn(model, state)``.
    """
    return _shielded(fn, model, state)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _shielded(fn, model, state):
    out = fn(model, state)
    return _tied(out, verdict(model, out))


def verdict(model: Model, out: State) -> jax.Array:
    """() bool: whether :func:`accept` can take the step's result ``out`` (:func:`finite` and :func:`resolved`)."""
    return finite(out) & resolved(model, out)


def _tied(out: State, keep: jax.Array) -> State:
    """``out``, its floating leaves passed through ``where(keep, x, x)``: the same values, batched wherever the
    verdict is, so that under ``vmap`` the values and the masked tangents of :func:`_shielded_jvp` are
    batched alike (JAX's batching of a ``custom_jvp`` gives the tangents the values' batch axes)."""
    return _where_floating(keep, out, out)


def _zero_zone(tree, keep: jax.Array):
    """The tangents of ``tree`` where ``keep``, else zero (integer tangents, ``float0``, as they are)."""
    zeros = jax.tree.map(lambda t: jnp.zeros_like(t) if jnp.issubdtype(t.dtype, jnp.inexact) else t, tree)
    return _where_floating(keep, tree, zeros)


def _where_floating(keep: jax.Array, tree, other):
    """:func:`where_tree` on the floating leaves of ``tree`` and ``other``; the other leaves of ``tree`` as they are."""
    leaves, structure = jax.tree.flatten(tree)
    floating = [i for i, x in enumerate(leaves) if jnp.issubdtype(x.dtype, jnp.inexact)]
    others = structure.flatten_up_to(other)
    chosen = where_tree(keep, [leaves[i] for i in floating], [others[i] for i in floating])
    for i, x in zip(floating, chosen, strict=True):
        leaves[i] = x
    return jax.tree.unflatten(structure, leaves)


def _shielded_jvp(fn, primals, tangents):
    """One linearization of ``fn`` at the primals, applied to the masked tangents of its differentiated inputs
    (those with a tangent: unperturbed inputs stay symbolic zeros, so no derivative along them is built)."""
    leaves, tree = jax.tree.flatten(primals)
    zero = jax.custom_derivatives.SymbolicZero
    slopes = jax.tree.leaves(tangents, is_leaf=lambda t: isinstance(t, zero))
    live = [
        i
        for i, (x, t) in enumerate(zip(leaves, slopes, strict=True))
        if not isinstance(t, zero) and jnp.issubdtype(x.dtype, jnp.inexact)
    ]

    def along(*xs):
        full = list(leaves)
        for i, x in zip(live, xs, strict=True):
            full[i] = x
        return fn(*jax.tree.unflatten(tree, full))

    out, linear = jax.linearize(along, *(leaves[i] for i in live))
    keep = verdict(primals[0], out)
    return _tied(out, keep), _zero_zone(linear(*_zero_zone([slopes[i] for i in live], keep)), keep)


_shielded.defjvp(_shielded_jvp, symbolic_zeros=True)
