"""The trajectory as the viewer plays it: frames chosen from the stacked States, and the world poses of every
body and link in each frame, from :func:`jaxmor.sim.kinematics.kinematics` (jitted, vmapped over the frames)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.math import quat_to_rotation
from jaxmor.sim.kinematics import kinematics, link_poses
from jaxmor.types import Model, State

#: The most frames a recording holds by default; a longer trajectory is subsampled evenly.
MAX_FRAMES = 300


@dataclass(frozen=True)
class Frames:
    """The frames of a trajectory, ``T`` frames of ``W`` worlds.

    Attributes:
        steps: (T,) index of each frame's state in the trajectory.
        time: (T, W) simulated time of each frame [s] (``State.time``).
        q: (T, W, nq) coordinates.
        states: the chosen States, leaves (T, W, ...), as NumPy arrays.
    """

    steps: np.ndarray
    time: np.ndarray
    q: np.ndarray
    states: State


def _is_none(x) -> bool:
    return x is None


def world_model(model: Model, model_axes: Model | None, w: int) -> Model:
    """World ``w``'s model: the leaves that ``model_axes`` marks ``0`` indexed at ``w`` (:func:`jaxmor.randomize`)."""
    if model_axes is None:
        return model
    return jax.tree.map(lambda x, a: x if a is None else x[w], model, model_axes, is_leaf=_is_none)


def select_frames(model: Model, states: State, world_axis: int = 0, stride: int | None = None, max_frames=MAX_FRAMES):
    """The :class:`Frames` of a trajectory.

    Args:
        model: the model the states belong to.
        states: stacked States: ``q`` (nq,) one state, (T, nq) a trajectory (:func:`jaxmor.rollout`), or
            (W, T, nq) trajectories of W worlds (:func:`jaxmor.rollout_batch`; ``world_axis=1`` for (T, W, nq)).
        world_axis: 0 or 1, where the world axis of a three-dimensional ``q`` is.
        stride: keep every ``stride``-th state (default: the least stride that keeps at most ``max_frames``).
        max_frames: the most frames when ``stride`` is not given.

    Raises:
        ArgumentError: ``states`` is not a State of this model's size, a bad ``world_axis``, ``stride`` or
            ``max_frames``.
    """
    if not isinstance(states, State):
        raise ArgumentError(f"states must be a jaxmor State (stacked over time), got {type(states).__name__}")
    if world_axis not in (0, 1):
        raise ArgumentError(f"world_axis must be 0 or 1, got {world_axis!r}")
    q = np.asarray(states.q)
    if q.ndim not in (1, 2, 3) or q.shape[-1] != model.nq:
        raise ArgumentError(f"states.q must be (nq,), (T, nq) or (W, T, nq) with nq = {model.nq}, got {q.shape}")
    leading = q.ndim - 1

    def arrange(x):
        x = np.asarray(x)
        if leading == 0:
            return x[None, None]
        if leading == 1:
            return x[:, None]
        return np.swapaxes(x, 0, 1) if world_axis == 0 else x

    arranged = jax.tree.map(arrange, states)
    n = arranged.q.shape[0]
    if stride is None:
        if not isinstance(max_frames, int) or max_frames < 1:
            raise ArgumentError(f"max_frames must be an int >= 1, got {max_frames!r}")
        stride = -(-n // max_frames)
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ArgumentError(f"stride must be an int >= 1, got {stride!r}")
    steps = np.arange(0, n, int(stride))
    chosen = jax.tree.map(lambda x: x[steps], arranged)
    return Frames(steps, np.asarray(chosen.time, float), np.asarray(chosen.q), chosen)


@jax.jit
def _poses_over_time(model: Model, q: jax.Array):
    def one(q1):
        body = kinematics(model, q1).body
        link = link_poses(model, body)
        return body.rotation, body.position, link.rotation, link.position

    return jax.vmap(one)(q)


def frame_poses(model: Model, frames: Frames, model_axes: Model | None = None) -> tuple[np.ndarray, ...]:
    """World poses in every frame: ``(body_rotation (T, W, nb, 3, 3), body_position (T, W, nb, 3),
    link_rotation (T, W, nl, 3, 3), link_position (T, W, nl, 3))`` [m], float64 NumPy arrays. Each world's
    frames are one vmapped call; worlds of a randomized model (``model_axes``) each take their own model."""
    worlds = []
    for w in range(frames.q.shape[1]):
        m = world_model(model, model_axes, w)
        worlds.append([np.asarray(x, float) for x in _poses_over_time(m, frames.q[:, w].astype(m.body_mass.dtype))])
    poses = tuple(np.stack([world[k] for world in worlds], axis=1) for k in range(4))
    return moved_mocap(model, poses, frames.states)


def moved_mocap(model: Model, poses: tuple[np.ndarray, ...], states: State) -> tuple[np.ndarray, ...]:
    """``poses`` (as :func:`frame_poses` gives them, leading axes ``(T, W)``) with the mocap bodies' links where
    ``states`` (leaves ``(T, W, ...)``) put them (``mocap_pos``, ``mocap_quat`` normalized)."""
    if not model.mocap_links:
        return poses
    links = list(model.mocap_links)
    link_r, link_p = poses[2].copy(), poses[3].copy()
    link_r[..., links, :, :] = np.asarray(quat_to_rotation(np.asarray(states.mocap_quat, float)))  # normalizes
    link_p[..., links, :] = np.asarray(states.mocap_pos, float)
    return (*poses[:2], link_r, link_p)
