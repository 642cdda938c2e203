"""The recording: a viser scene built from the parts, its poses set frame after frame while viser's scene
serializer records every message, with a sleep of the frames' time step in between; ``as_html`` then inlines
viser's client and the recording into one HTML page that plays it (``docs/design/viewer.md``).

Each part is one batched mesh with an instance per world, so a frame costs one pose message per moving part
whatever the number of worlds.
"""

from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass

import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.viewer.frames import Frames
from jaxmor.viewer.parts import Part

#: Room between neighbouring worlds beyond their own size [m].
WORLD_GAP = 0.4


def viser_module():
    """``viser``, or an ArgumentError saying how to install it."""
    try:
        import viser
    except ImportError as exc:
        raise ArgumentError("the viewer needs viser: pip install 'jaxmor[viewer]'") from exc
    return viser


@contextlib.contextmanager
def quiet_server():
    """A viser server on a free local port, its banner silenced, stopped on exit."""
    viser = viser_module()
    with contextlib.redirect_stdout(io.StringIO()):
        server = viser.ViserServer(host="127.0.0.1", port=0, verbose=False)
    try:
        yield server
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            server.stop()


def rotations_to_wxyz(rotation: np.ndarray) -> np.ndarray:
    """(..., 4) unit quaternions ``w x y z`` of rotation matrices (..., 3, 3), ``w >= 0``."""
    r = np.asarray(rotation, float)
    w = np.sqrt(np.maximum(0.0, 1.0 + r[..., 0, 0] + r[..., 1, 1] + r[..., 2, 2])) / 2
    x = np.sqrt(np.maximum(0.0, 1.0 + r[..., 0, 0] - r[..., 1, 1] - r[..., 2, 2])) / 2
    y = np.sqrt(np.maximum(0.0, 1.0 - r[..., 0, 0] + r[..., 1, 1] - r[..., 2, 2])) / 2
    z = np.sqrt(np.maximum(0.0, 1.0 - r[..., 0, 0] - r[..., 1, 1] + r[..., 2, 2])) / 2
    x = np.copysign(x, r[..., 2, 1] - r[..., 1, 2])
    y = np.copysign(y, r[..., 0, 2] - r[..., 2, 0])
    z = np.copysign(z, r[..., 1, 0] - r[..., 0, 1])
    q = np.stack([w, x, y, z], axis=-1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def part_poses(part: Part, poses) -> tuple[np.ndarray, np.ndarray]:
    """A moving part's world rotation (T, W, 3, 3) and position (T, W, 3) [m] from the frames' poses
    (:func:`jaxmor.viewer.frames.frame_poses`)."""
    body_r, body_p, link_r, link_p = poses
    r, p = (
        (link_r[:, :, part.link], link_p[:, :, part.link])
        if part.link >= 0
        else (body_r[:, :, part.body], body_p[:, :, part.body])
    )
    return r @ part.rotation, p + np.einsum("twij,j->twi", r, part.translation)


#: How worlds are placed: side by side on a grid, or where their states put them (worlds sharing a terrain).
PLACEMENTS = ("auto", "grid", "states")


@dataclass(frozen=True)
class Layout:
    """Where the worlds stand: world ``w`` is drawn moved by ``offsets[w]`` (W, 3) [m]; ``extent`` (2,) is the
    half size in ``x`` and ``y`` of the area they cover around the origin [m]; ``centre`` (3,) the middle of the
    drawn worlds' bodies over the trajectory, ``half`` (2,) the half size in ``x`` and ``y`` of the area the drawn
    parts cover around it, ``anchors`` (W, 3) each world's root body at the first frame, as drawn, and ``reach``
    the farthest vertex of any part from its own origin [m]."""

    offsets: np.ndarray
    extent: np.ndarray
    centre: np.ndarray
    half: np.ndarray
    anchors: np.ndarray
    reach: float


def layout(parts: list[Part], poses, spacing: float | None, placement: str = "grid") -> Layout:
    """Worlds side by side on a square grid, ``spacing`` apart (default: the largest world's size in ``x`` and
    ``y`` over the trajectory, plus :data:`WORLD_GAP`), or with ``placement="states"`` where their states put
    them (no offsets: worlds that share a terrain stand on it)."""
    worlds = poses[1].shape[1]
    points = [p for part in parts if part.body >= 0 or part.link >= 0 for p in part_poses(part, poses)[1:2]]
    reach = max((float(np.linalg.norm(part.vertices, axis=1).max(initial=0.0)) for part in parts), default=0.1)
    if points:
        xy = np.concatenate([p[..., :2].reshape(-1, 2) for p in points])
        low, high = xy.min(axis=0) - reach, xy.max(axis=0) + reach
    else:
        low, high = np.full(2, -reach), np.full(2, reach)
    if placement not in ("grid", "states"):
        raise ArgumentError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if spacing is not None and not (isinstance(spacing, (int, float)) and math.isfinite(spacing) and spacing >= 0):
        raise ArgumentError(f"world_spacing must be a finite number >= 0 [m], got {spacing!r}")
    if placement == "states":
        grid = np.zeros((worlds, 2))
    else:
        spacing = float(max(high - low)) + WORLD_GAP if spacing is None else spacing
        columns = math.ceil(math.sqrt(worlds))
        grid = np.array([(w % columns, w // columns) for w in range(worlds)], float) * spacing
        grid -= grid.mean(axis=0)
    offsets = np.column_stack([grid, np.zeros(worlds)])
    extent = np.abs(grid).max(axis=0, initial=0.0) + np.maximum(np.abs(low), np.abs(high))
    bodies = poses[1] + offsets[None, :, None]
    flat = bodies.reshape(-1, 3)
    centre = (flat.min(axis=0) + flat.max(axis=0)) / 2 if flat.size else np.zeros(3)
    half = (flat.max(axis=0) - flat.min(axis=0))[:2] / 2 + reach if flat.size else np.full(2, reach)
    anchors = bodies[0, :, 0] if bodies.shape[2] else offsets
    return Layout(offsets, extent, centre, half, anchors, reach)


def frame_durations(frames: Frames, speed: float) -> np.ndarray:
    """(T,) the time each frame is shown for [s]: the simulated time to the next frame divided by ``speed``
    (the last frame: the mean step)."""
    if not (isinstance(speed, (int, float)) and math.isfinite(speed) and speed > 0):
        raise ArgumentError(f"speed must be a positive number, got {speed!r}")
    t = frames.time[:, 0]
    steps = np.diff(t)
    usual = float(np.median(steps)) if steps.size and np.all(np.isfinite(steps)) and np.median(steps) > 0 else 0.02
    steps = np.where(np.isfinite(steps) & (steps > 0), steps, usual)
    return np.append(steps, usual) / speed


def checked_size(size) -> tuple[int, int]:
    """``size`` as ``(width, height)`` ints [px], each 16 to 4096, or an ArgumentError."""
    try:
        width, height = (int(x) for x in size)
    except (TypeError, ValueError):
        raise ArgumentError(f"size must be (width, height) in pixels, got {size!r}") from None
    if not (16 <= width <= 4096 and 16 <= height <= 4096):
        raise ArgumentError(f"size must be (width, height), each 16 to 4096 pixels, got {size!r}")
    return width, height
