"""Many worlds: rollouts of a batch of worlds, in vmapped chunks, with per-world model leaves, on one device or
sharded over several."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxmor.checks import as_positive_int
from jaxmor.errors import ArgumentError
from jaxmor.sim.pipeline import per_step_controls, rollout
from jaxmor.state import check_state, init_state
from jaxmor.types import Model, State


def _split_worlds(tree, n_chunks: int, chunk: int):
    """Leading world axis (n_chunks * chunk, ...) -> (n_chunks, chunk, ...) (explicit shapes: empty leaves work)."""
    return jax.tree.map(lambda x: x.reshape((n_chunks, chunk) + x.shape[1:]), tree)


def _merge_worlds(tree):
    return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), tree)


def _is_none(x) -> bool:
    return x is None


def rollout_batch(
    model: Model,
    states: State,
    controls: jax.Array | Mapping[str, jax.Array] | None = None,
    n_steps: int | None = None,
    *,
    chunk_size: int = 256,
    model_axes: Model | None = None,
    groups: int | None = None,
) -> tuple[State, State]:
    """:func:`rollout` of a batch of worlds, ``chunk_size`` worlds at a time.

    The same computation as ``jax.vmap(lambda m, s, c: rollout(m, s, c, n_steps), in_axes=(model_axes, 0, 0))``,
    but the worlds are vmapped in chunks of ``chunk_size`` that run one after the other
    (``lax.scan`` over the chunks; the remainder, if any, is one more vmapped call). On a CPU a
    chunk's working set stays in the caches for all its steps, which is faster than one vmap over
    thousands of worlds (docs/design/performance.md). On a GPU, prefer ``chunk_size`` = the number of worlds,
    which is the plain vmap. XLA compiles a chunk and a whole batch separately, so the results agree to
    floating-point rounding, not bit for bit, and contact dynamics amplify rounding: the README gives
    the measured differences.

    Args:
        model: the model; with ``model_axes``, some of its leaves carry a leading world axis.
        states: the initial states, every leaf with a leading world axis of size ``n``.
        controls: the inputs of each world and step, as :func:`jaxmor.rollout` takes them with a leading world
            axis: an (n, n_steps, na) array of actuator torques, or a mapping from State input names to arrays of
            shape ``(n, n_steps, *field)``; ``None`` keeps each state's inputs.
        n_steps: number of steps, a Python or NumPy integer ``>= 0``; defaults to the controls' step axis.
        chunk_size: worlds per vmapped chunk (static, >= 1).
        model_axes: ``None`` (one model for all worlds) or a pytree like ``model`` holding ``0`` for
            leaves batched over the worlds (e.g. per-world motor resistance) and ``None`` for shared
            leaves, as ``jax.vmap``'s ``in_axes``.
        groups: how many groups of worlds run side by side (static), each chunked on its own: one per device
            keeps sharded worlds (:func:`shard_worlds`) on their devices without communication. ``None``: the
            number of devices concrete states are sharded over, 1 for unsharded ones and under ``jit`` (where
            the placement is not visible: pass ``groups=jax.device_count()`` there).
            Grouping changes the order of floating-point operations, so results of different groupings agree
            to rounding, not bit for bit.

    Returns:
        ``(final_states, trajectories)`` with a leading world axis (trajectories: (n, n_steps, ...));
        under ``jit``, parts of the trajectories that are not used are not computed.

    Raises:
        ArgumentError: a bad ``chunk_size``, ``groups`` (it must divide the number of worlds) or ``model_axes``
            entry, states without a common leading world axis or whose worlds do not fit the model, ``controls``
            or batched model leaves whose leading axis is not the number of worlds, controls of a dtype that is not
            real (complex, strings), an ``n_steps`` that is not an integer ``>= 0``, or neither ``controls`` nor
            ``n_steps``.
    """
    chunk_size = as_positive_int(chunk_size, "chunk_size")
    n = _world_count(states)
    check_state(model, states, "rollout_batch", batch_ndim=1)
    controls, n_steps = per_step_controls(model, states, controls, n_steps, "rollout_batch", batch=(n,))
    groups = _groups(states, n) if groups is None else as_positive_int(groups, "groups")
    if n % groups:
        raise ArgumentError(f"rollout_batch: groups={groups} must divide the number of worlds, {n}")

    batched = None if model_axes is None else _batched_leaves(model, model_axes, n)

    def run(part, s, c):
        def world(p, s1, c1):
            m = (
                model
                if model_axes is None
                else jax.tree.map(lambda ax, x, b: x if ax is None else b, model_axes, model, p, is_leaf=_is_none)
            )
            return rollout(m, s1, c1 or None, n_steps)

        return jax.vmap(world)(part, s, c)

    args = (batched, states, controls)
    if groups > 1:
        # One group of worlds per device, vmapped, each group chunked on its own: worlds sharded over the devices
        # (shard_worlds) stay where they are, and the devices run their groups in parallel.
        per = n // groups
        grouped = _split_worlds(args, groups, per)
        return _merge_worlds(jax.vmap(lambda a: _chunked(run, a, per, chunk_size))(grouped))
    return _chunked(run, args, n, chunk_size)


def _world_count(states: State) -> int:
    """The states' common leading world axis; a jaxmor error for one world's State or unequal axes."""
    sizes = {x.shape[0] if x.ndim else None for x in jax.tree.leaves(states)}
    if len(sizes) != 1 or None in sizes:
        if None in sizes or np.ndim(states.time) == 0:
            raise ArgumentError(
                "states must have a leading world axis (one State per world, stacked: jax.vmap(jaxmor.init_state) "
                "or jax.tree.map(lambda x: jnp.stack([x] * n), state)); got one world's State"
            )
        got = sorted(str(x) for x in sizes)
        raise ArgumentError(f"states must all have a leading world axis of the same size, got sizes {got}")
    return sizes.pop()


def _batched_leaves(model: Model, model_axes: Model, n: int) -> Model:
    """The model's leaves batched over the ``n`` worlds (``model_axes`` 0), ``None`` elsewhere: they travel
    with the worlds, the rest is shared."""

    def pick(axis, x):
        if axis is None:
            return None
        if axis != 0 or isinstance(axis, bool):
            raise ArgumentError(f"model_axes entries must be 0 or None, got {axis!r}")
        if jnp.ndim(x) < 1 or jnp.shape(x)[0] != n:
            raise ArgumentError(f"a batched model leaf needs a leading world axis of size {n}, got {jnp.shape(x)}")
        return x

    try:
        return jax.tree.map(pick, model_axes, model, is_leaf=_is_none)
    except ValueError as e:
        raise ArgumentError(f"model_axes must have the structure of model: {e}") from None


def _groups(states: State, n: int) -> int:
    """The number of devices the worlds are sharded over: the states' ``q`` sharding (1 when it is not
    sharded over its world axis, or is traced)."""
    sharding = getattr(states.q, "sharding", None)
    if not isinstance(sharding, NamedSharding) or not n:
        return 1
    shard = sharding.shard_shape(states.q.shape)[0]
    return n // shard if shard and n % shard == 0 else 1


def _chunked(run, args, n: int, chunk_size: int):
    """``run`` over ``n`` worlds in chunks of ``chunk_size``, one chunk after the other (``lax.scan``), the
    remainder as one more call."""
    chunk = min(chunk_size, n) if n else 1
    n_chunks, rest = divmod(n, chunk)
    outs = []
    if n_chunks:
        split = _split_worlds(jax.tree.map(lambda x: x[: n_chunks * chunk], args), n_chunks, chunk)
        outs.append(_merge_worlds(jax.lax.scan(lambda _, a: (None, run(*a)), None, split)[1]))
    if rest or not n_chunks:
        outs.append(run(*jax.tree.map(lambda x: x[n_chunks * chunk :], args)))
    if len(outs) == 1:
        return outs[0]
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), *outs)


def shard_worlds(tree: Any, axes: Any = None, devices: Sequence[jax.Device] | None = None) -> Any:
    """A batch of worlds placed across devices along its world axis, for data-parallel rollouts.

    ``jax.device_put`` with a ``NamedSharding`` over a one-axis mesh named ``"worlds"``: each device holds
    ``n / devices`` consecutive worlds of every batched leaf, and the other leaves are replicated.
    :func:`rollout_batch` (under ``jit`` or not) then runs each device's worlds on that device, with no
    communication, and its outputs stay sharded the same way. Works for States, controls, and randomized
    models (with ``jaxmor.randomize``'s ``axes``); on several hosts, after ``jax.distributed.initialize``,
    over all their devices (docs/worlds.md, "Several hosts").

    Args:
        tree: a pytree of arrays with a leading world axis (a batch of States, controls), or a batch of models.
        axes: ``None`` (every leaf is batched) or a pytree like ``tree`` with ``0`` on the batched leaves and
            ``None`` on the shared ones (``jaxmor.randomize``'s ``axes``).
        devices: the devices (default ``jax.devices()``, all of them).

    Returns:
        The same tree, placed.

    Raises:
        ArgumentError: a batched leaf whose leading axis is not divisible by the number of devices, or
            ``axes`` of another structure.
    """
    devices = jax.devices() if devices is None else list(devices)
    mesh = Mesh(np.array(devices), ("worlds",))
    spread, replicated = NamedSharding(mesh, PartitionSpec("worlds")), NamedSharding(mesh, PartitionSpec())

    def placement(axis, x):
        if axis is None:
            return replicated
        if axis != 0 or isinstance(axis, bool):
            raise ArgumentError(f"axes entries must be 0 or None, got {axis!r}")
        if jnp.ndim(x) < 1 or jnp.shape(x)[0] % len(devices):
            raise ArgumentError(
                f"a batched leaf of shape {jnp.shape(x)} cannot be split over {len(devices)} devices: its world "
                "axis must be a multiple of the device count"
            )
        return spread

    if axes is None:
        axes = jax.tree.map(lambda _: 0, tree)
    try:
        shardings = jax.tree.map(placement, axes, tree, is_leaf=_is_none)
    except ValueError as e:
        raise ArgumentError(f"axes must have the structure of tree: {e}") from None
    return jax.device_put(tree, shardings)


def init_states(
    models: Model, axes: Model | None, n_worlds: int, q: jax.Array | None = None, u: jax.Array | None = None
) -> State:
    """One :func:`jaxmor.init_state` per world of a batch of models (``jaxmor.randomize``'s ``(models, axes)``).

    Each world's State starts with its own model's values (the bus voltages of ``motor.bus_voltage`` or of
    the battery, the effort limits).

    Args:
        models: the models; with ``axes``, some leaves carry a leading world axis of size ``n_worlds``.
        axes: ``0`` on the batched leaves, ``None`` elsewhere (``None``: one model for all worlds).
        n_worlds: number of worlds.
        q: (nq,) coordinates for every world, or (n_worlds, nq) per world; default the neutral pose.
        u: (nv,) or (n_worlds, nv) velocities; default zero.

    Returns:
        The States, every leaf with a leading axis of size ``n_worlds``.

    Raises:
        ArgumentError: ``q`` or ``u`` of a wrong shape, or a bad ``n_worlds``.
    """
    n = as_positive_int(n_worlds, "n_worlds")

    def per_world(x, name, size):
        if x is None:
            return None, None
        x = jnp.asarray(x)
        if x.shape == (size,):
            return x, None
        if x.shape == (n, size):
            return x, 0
        raise ArgumentError(f"{name} must have shape ({size},) or ({n}, {size}), got {x.shape}")

    q, q_axis = per_world(q, "q", models.nq)
    u, u_axis = per_world(u, "u", models.nv)
    return jax.vmap(init_state, in_axes=(axes, q_axis, u_axis), axis_size=n)(models, q, u)
