"""Queries on a :class:`Model`: names and indices of joints, actuators and geoms, the neutral
configuration, the transmission matrix, a summary.

Lookups by name raise :class:`~jaxmor.ArgumentError` for an unknown name, except
:func:`actuator_index`, which returns ``-1`` as the spec's ``getActuatorIndex`` returns ``size_t(-1)``.
"""

from __future__ import annotations

import fnmatch

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.checks import refuse_traced
from jaxmor.errors import ArgumentError
from jaxmor.types import JointType, Model


def joint_names(model: Model) -> list[str]:
    """Names of the 1-DoF joints in the order of their velocities (after the floating base's)."""
    return list(model.joint_names)


def _joint_position(model: Model, name: str) -> int:
    """Position of a 1-DoF joint in ``model.joint_names``."""
    try:
        return model.joint_names.index(name)
    except ValueError:
        raise ArgumentError(f"unknown joint {name!r}; the movable joints are {list(model.joint_names)}") from None


def joint_index(model: Model, name: str) -> int:
    """Velocity index of a movable joint: its entry in ``u`` (and in generalized forces).

    Raises:
        ArgumentError: no movable joint of that name.
    """
    return model.joint_u[_joint_position(model, name)]


def joint_q_index(model: Model, name: str) -> int:
    """Coordinate index of a movable joint: its entry in ``q``.

    Raises:
        ArgumentError: no movable joint of that name.
    """
    return model.joint_q[_joint_position(model, name)]


def ball_joints(model: Model) -> tuple[tuple[int, int, int], ...]:
    """``(body, first q index, first u index)`` of every ball joint, in body order (from the static tables)."""
    return tuple(
        (b, model.body_q_start[b], model.body_v_start[b])
        for b, kind in enumerate(model.body_joint_type)
        if kind == JointType.BALL
    )


def neutral_q(model: Model) -> jax.Array:
    """(nq,) the default configuration ``model.q_default``, in the model's dtype: as loaded, every free joint
    at the origin with the identity orientation, every ball joint at the identity and every 1-DoF joint at 0
    (clipped into its position limits);
    the free bodies of :func:`jaxmor.add_free_body` and :func:`jaxmor.combine` at the poses they were given."""
    return jnp.asarray(model.q_default, model.body_mass.dtype)


def actuator_names(model: Model) -> list[str]:
    """DC-motor actuator names in the order of every per-actuator array."""
    return list(model.actuators.names)


def actuator_index(model: Model, name: str) -> int:
    """Position of an actuator name, ``-1`` if there is no such actuator (as the spec's ``size_t(-1)``)."""
    try:
        return model.actuators.names.index(name)
    except ValueError:
        return -1


def resolve_actuator(model: Model, actuator: str | int) -> int:
    """The position of a DC-motor actuator given by name or by index (a Python or NumPy integer, not a bool):
    the one resolver every function that takes an actuator uses.

    Raises:
        ArgumentError: an unknown name, an index outside ``[0, na)``, a traced index, or a value that is neither.
    """
    refuse_traced(actuator, "actuator")
    if isinstance(actuator, str):
        i = actuator_index(model, actuator)
        if i < 0:
            raise ArgumentError(f"unknown actuator {actuator!r}; the actuators are {list(model.actuators.names)}")
        return i
    if isinstance(actuator, (bool, np.bool_)) or not isinstance(actuator, (int, np.integer)):
        raise ArgumentError(f"an actuator is given by its name or its int index, got {actuator!r}")
    if not 0 <= int(actuator) < model.na:
        raise ArgumentError(f"actuator index {int(actuator)} is out of range [0, {model.na})")
    return int(actuator)


def transmission_matrix(model: Model) -> jax.Array:
    """(na, nv) transmission matrix ``T``: motor speeds ``T u``, joint torques ``T^T tau_m``."""
    return model.actuators.transmission


def geom_index(model: Model, name: str) -> int:
    """Index of a collision geom by name.

    Raises:
        ArgumentError: no geom has that name; the message lists the geoms.
    """
    if isinstance(name, str):
        try:
            return model.geom_names.index(name)
        except ValueError:
            pass
    raise ArgumentError(f"unknown geom {name!r}; the model's collision geoms are {list(model.geom_names)}")


def match_geoms(geom_names, geom_link, link_names, names, what: str = "names") -> list[int]:
    """Indices of the geoms that ``names`` select, in geom order: each entry is a geom name, a link name (all of
    that link's geoms) or an ``fnmatch`` pattern over both (``"*_foot"``).

    Args:
        geom_names, geom_link, link_names: the model's (or a description's) tables.
        names: the entries, an iterable of strings.
        what: the argument's name, for messages.

    Raises:
        ArgumentError: ``names`` is a single string or holds a non-string, or an entry selects no geom (the
            message lists the geoms and their links).
    """
    if isinstance(names, (str, bytes)):
        raise ArgumentError(f"{what} must be a list of geom or link names or patterns, got the string {names!r}")
    chosen: set[int] = set()
    for entry in names:
        if not isinstance(entry, str):
            raise ArgumentError(f"{what} must hold geom or link names or patterns (strings), got {entry!r}")
        hits = {
            g
            for g, (geom, link) in enumerate(zip(geom_names, geom_link, strict=True))
            if fnmatch.fnmatchcase(geom, entry) or (link >= 0 and fnmatch.fnmatchcase(link_names[link], entry))
        }
        if not hits:
            owners = [
                f"{g} (link {link_names[k] if k >= 0 else 'world'})" for g, k in zip(geom_names, geom_link, strict=True)
            ]
            raise ArgumentError(f"{what}: {entry!r} matches no collision geom; the geoms are {owners}")
        chosen |= hits
    return sorted(chosen)


def exclusion_pairs(geom_names, geom_link, link_names, first, second, what: str = "exclude") -> set[frozenset]:
    """Every pair of a geom selected by ``first`` and a distinct geom selected by ``second`` (each a geom or link
    name or an ``fnmatch`` pattern, as :func:`match_geoms` reads them), as unordered index pairs. A link that
    has no collision geom selects nothing.

    Raises:
        ArgumentError: a selection that is not a string, or that names no link and matches no geom.
    """
    for entry in (first, second):
        if not isinstance(entry, str):
            raise ArgumentError(f"{what} must hold (geom name, geom name) pairs of strings, got {entry!r}")

    def select(entry: str) -> list[int]:
        if entry in link_names and not any(link_names[k] == entry for k in geom_link if k >= 0):
            return []  # a link without collision geoms (SRDF lists every link pair): nothing to exclude
        return match_geoms(geom_names, geom_link, link_names, [entry], what)

    a, b = select(first), select(second)
    return {frozenset((i, j)) for i in a for j in b if i != j}


def adjacent_bodies(model: Model, a: int, b: int) -> bool:
    """Bodies joined by a (non-free) joint: parent and child; ``-1`` is the world."""

    def child_of(c: int, p: int) -> bool:
        return c >= 0 and model.body_parent[c] == p and model.body_joint_type[c] != JointType.FREE

    return child_of(a, b) or child_of(b, a)


def collision_candidates(
    model: Model, excluded: set[frozenset] | None = None, selected: set[int] | None = None
) -> list[tuple[int, int]]:
    """The pairs of geoms ``(i, j)``, ``i < j``, that may collide: on different bodies (a geom welded to the
    world counts as on the world body), not parent and child across a joint, not in ``excluded`` (default
    ``model.collision_exclude``), both in ``selected`` (default all)."""
    if excluded is None:
        excluded = {frozenset(pair) for pair in model.collision_exclude}
    pairs = []
    for i in range(model.ng):
        for j in range(i + 1, model.ng):
            if selected is not None and not (i in selected and j in selected):
                continue
            bi, bj = model.geom_body[i], model.geom_body[j]
            if bi == bj or adjacent_bodies(model, bi, bj) or frozenset((i, j)) in excluded:
                continue
            pairs.append((i, j))
    return pairs


def summary(model: Model) -> str:
    """A human-readable summary of the model: counts, joints, actuators, unsupported geoms."""
    base = "floating" if model.floating_base else "fixed"
    lines = [
        f"robot '{model.name}' from {model.source}",
        f"  {base} base, {model.nb} bodies, {model.nl} links, "
        f"nq={model.nq}, nv={model.nv}, total mass {float(np.sum(np.asarray(model.body_mass))):.4g} kg",
        f"  joints: {', '.join(model.joint_names) if model.joint_names else '(none)'}",
        f"  collision geoms: {model.ng} simulated"
        + (f", {len(model.mesh_geoms)} meshes kept by name but not simulated" if model.mesh_geoms else ""),
        f"  DC-motor actuators: {', '.join(model.actuators.names) if model.na else '(none)'}",
    ]
    if model.nu:
        lines.append(f"  affine actuators: {', '.join(model.affine.names)}")
    return "\n".join(lines)


def joint_coordinates(model: Model, q: jax.Array) -> jax.Array:
    """(nv,) position of each 1-DoF joint at its velocity index; zero on free and ball joints."""
    v_idx = np.array(model.joint_u, dtype=np.int32)
    return jnp.zeros(model.nv, q.dtype).at[v_idx].set(q[np.array(model.joint_q, dtype=np.int32)])


def joint_mask(model: Model, dtype) -> jax.Array:
    """(nv,) 1 on 1-DoF joints, 0 on free and ball joints."""
    mask = np.zeros(model.nv)
    mask[np.array(model.joint_u, dtype=np.int32)] = 1.0
    return jnp.asarray(mask, dtype)
