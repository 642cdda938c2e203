"""Queries on a :class:`Model`: joint names and indices, the neutral configuration, a summary."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.types import JOINT_FREE, Model


def joint_names(model: Model) -> list[str]:
    """Names of the movable joints in the order of their velocities (after the floating base's)."""
    return list(model.joint_names)


def _joint_body(model: Model, name: str) -> int:
    for b, joint in enumerate(model.body_joint_name):
        if joint == name and model.body_joint_type[b] != JOINT_FREE:
            return b
    raise ArgumentError(f"unknown joint {name!r}; the movable joints are {list(model.joint_names)}")


def joint_index(model: Model, name: str) -> int:
    """Velocity index of a movable joint: its entry in ``u`` (and in generalized forces).

    Raises:
        ArgumentError: no movable joint of that name.
    """
    return model.body_v_start[_joint_body(model, name)]


def joint_q_index(model: Model, name: str) -> int:
    """Coordinate index of a movable joint: its entry in ``q``.

    Raises:
        ArgumentError: no movable joint of that name.
    """
    return model.body_q_start[_joint_body(model, name)]


def joint_dof_indices(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Coordinate and velocity indices of the 1-DoF joints, in body order (static, NumPy int arrays)."""
    bodies = [b for b, kind in enumerate(model.body_joint_type) if kind != JOINT_FREE]
    q_idx = np.array([model.body_q_start[b] for b in bodies], dtype=np.int32)
    v_idx = np.array([model.body_v_start[b] for b in bodies], dtype=np.int32)
    return q_idx, v_idx


def neutral_q(model: Model) -> jnp.ndarray:
    """The default configuration: base at the origin with the identity orientation, joints at 0
    (clipped into their position limits)."""
    q = np.zeros(model.nq)
    lower = np.asarray(model.dof_lower)
    upper = np.asarray(model.dof_upper)
    for b, kind in enumerate(model.body_joint_type):
        qs, vs = model.body_q_start[b], model.body_v_start[b]
        if kind == JOINT_FREE:
            q[qs + 3] = 1.0
        else:
            q[qs] = min(max(0.0, lower[vs]), upper[vs])
    return jnp.asarray(q, dtype=model.body_mass.dtype)


def summary(model: Model) -> str:
    """A human-readable summary of the model: counts, joints, actuators, unsupported geoms."""
    lines = [
        f"robot '{model.name}' from {model.source}",
        f"  {'floating' if model.floating_base else 'fixed'} base, {model.nb} bodies, {model.nl} links, "
        f"nq={model.nq}, nv={model.nv}, total mass {float(np.sum(np.asarray(model.body_mass))):.4g} kg",
        f"  joints: {', '.join(model.joint_names) if model.joint_names else '(none)'}",
        f"  collision geoms: {model.ng} simulated"
        + (f", {len(model.mesh_geoms)} meshes kept by name but not simulated" if model.mesh_geoms else ""),
        f"  DC-motor actuators: {', '.join(model.actuators.names) if model.na else '(none)'}",
    ]
    if model.nu:
        lines.append(f"  affine actuators: {', '.join(model.affine.names)}")
    return "\n".join(lines)
