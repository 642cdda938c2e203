"""Frames as arrays without a browser: a trajectory drawn offscreen by MuJoCo's renderer (OpenGL through EGL or
OSMesa, or a desktop context where there is a screen).

The scene is built from what the trajectory page draws (:func:`jaxmor.viewer.scene.scene_parts`, the ground and the
height field): every part becomes a MuJoCo mesh geom, a moving part one mocap body per world, so a frame is the
parts' world poses (:func:`jaxmor.viewer.frames.frame_poses`) written to ``mocap_pos``/``mocap_quat`` and drawn.
MuJoCo only draws here; nothing is simulated by it. The OpenGL context is made here (:func:`gl_backend`: EGL without
a display), not by MuJoCo's ``Renderer``, so it does not matter which backend MuJoCo picked at its import.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.types import Model, State
from jaxmor.viewer.frames import frame_poses, select_frames, world_model
from jaxmor.viewer.parts import Part, ground_parts
from jaxmor.viewer.record import Layout, checked_size, layout, part_poses, rotations_to_wxyz
from jaxmor.viewer.scene import ViewOptions, placement, scene_parts

#: Default size of rendered frames, ``(width, height)`` [px].
DEFAULT_SIZE = (640, 480)
#: Sky gradient (top, horizon), RGB 0-1.
SKY = ((0.55, 0.65, 0.78), (0.92, 0.94, 0.96))
#: The shortest default camera distance [m].
MIN_DISTANCE = 0.5
#: Frames after which :func:`render` reports its progress on standard error, when ``progress`` is not given.
PROGRESS_AFTER = 50


@dataclass(frozen=True)
class Camera:
    """Where frames are seen from: MuJoCo's free camera, looking at ``lookat`` from ``distance`` away.

    Attributes:
        azimuth: direction of view about the vertical axis [deg]: the camera looks along ``(cos a, sin a)`` in
            the ground plane, so 90 looks along ``+y``.
        elevation: angle of the line of sight above the horizon [deg], -89 to 89 (negative looks down).
        distance: from the camera to the point looked at [m]; default: the worlds (or, tracking, the robot)
            fill the view.
        lookat: (3,) the point looked at [m]; default: the middle of the worlds over the trajectory.
        track: a body's name: the camera follows that body of world ``world`` (``lookat`` is then an offset from
            the body's position [m]; default zero).
        world: the world whose body ``track`` follows.
        fovy: the vertical field of view [deg], 1 to 179.
    """

    azimuth: float = 120.0
    elevation: float = -25.0
    distance: float | None = None
    lookat: tuple[float, float, float] | None = None
    track: str | None = None
    world: int = 0
    fovy: float = 45.0


def _checked_camera(camera: Camera | None, model: Model, worlds: int) -> Camera:
    camera = Camera() if camera is None else camera
    if not isinstance(camera, Camera):
        raise ArgumentError(f"camera must be a jaxmor.viewer.Camera, got {type(camera).__name__}")
    for name, low, high in (("azimuth", -1e6, 1e6), ("elevation", -89.0, 89.0), ("fovy", 1.0, 179.0)):
        value = getattr(camera, name)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= high):
            raise ArgumentError(f"camera.{name} must be a number in [{low}, {high}] [deg], got {value!r}")
    if camera.distance is not None and not (
        isinstance(camera.distance, (int, float)) and math.isfinite(camera.distance) and camera.distance > 0
    ):
        raise ArgumentError(f"camera.distance must be a positive number [m] or None, got {camera.distance!r}")
    if camera.lookat is not None and (np.shape(camera.lookat) != (3,) or not np.all(np.isfinite(camera.lookat))):
        raise ArgumentError(f"camera.lookat must be 3 finite numbers [m] or None, got {camera.lookat!r}")
    if camera.track is not None and camera.track not in model.body_names:
        raise ArgumentError(f"camera.track must name a body of the model {model.body_names}, got {camera.track!r}")
    if isinstance(camera.world, bool) or not isinstance(camera.world, (int, np.integer)):
        raise ArgumentError(f"camera.world must be an int, got {camera.world!r}")
    if not 0 <= camera.world < worlds:
        raise ArgumentError(f"camera.world must be in [0, {worlds}), got {camera.world}")
    return camera


def _mujoco():
    """The ``mujoco`` module."""
    try:
        import mujoco
    except ImportError:
        raise ArgumentError("rendering needs MuJoCo: pip install 'jaxmor[video]' (or mujoco)") from None
    return mujoco


def gl_backend() -> str:
    """The OpenGL context the frames are drawn in: ``MUJOCO_GL`` where it is set (``egl``, ``osmesa`` or
    ``glfw``), else ``glfw`` with a display and ``egl`` without one."""
    backend = os.environ.get("MUJOCO_GL", "").lower()
    if backend in ("egl", "osmesa", "glfw"):
        return backend
    return "glfw" if os.environ.get("DISPLAY") or not sys.platform.startswith("linux") else "egl"


def _gl_context(width: int, height: int):
    """A current OpenGL context of :func:`gl_backend`'s kind, made directly (whatever backend MuJoCo chose for its
    own ``Renderer`` when it was imported)."""
    backend = gl_backend()
    try:
        if backend == "egl":
            from mujoco.egl import GLContext
        elif backend == "osmesa":
            from mujoco.osmesa import GLContext
        else:
            from mujoco.glfw import GLContext
        context = GLContext(width, height)
        context.make_current()
    except Exception as exc:  # noqa: BLE001 - PyOpenGL, EGL and GLFW raise many kinds when no context can be made
        raise ArgumentError(
            f"no OpenGL context for offscreen rendering ({backend}: {exc}); set MUJOCO_GL to egl or osmesa "
            "(docs/viewer.md)"
        ) from None
    return context


def _mesh(spec, name: str, part: Part):
    mujoco = _mujoco()
    mesh = spec.add_mesh(name=name)
    mesh.uservert = np.asarray(part.vertices, float).ravel()
    mesh.userface = np.asarray(part.faces, int).ravel()
    mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
    return mesh


def _geom(parent, mesh_name: str, part: Part, position, rotation) -> None:
    mujoco = _mujoco()
    geom = parent.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname=mesh_name, contype=0, conaffinity=0)
    geom.pos = np.asarray(position, float)
    geom.quat = rotations_to_wxyz(np.asarray(rotation, float))
    geom.rgba = [*(c / 255.0 for c in part.colour), float(part.opacity)]


def _spec(parts: list[Part], ground: list[Part], place: Layout, size):
    """The MuJoCo scene: static parts as world geoms, each moving part one mocap body per world (world-major)."""
    mujoco = _mujoco()
    spec = mujoco.MjSpec()
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.visual.global_.offwidth, spec.visual.global_.offheight = int(size[0]), int(size[1])
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
    spec.add_texture(
        name="sky",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=list(SKY[0]),
        rgb2=list(SKY[1]),
        width=64,
        height=384,
    )
    light = spec.worldbody.add_light(type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, castshadow=False)
    light.dir, light.pos, light.diffuse = [0.3, 0.4, -1.0], [0.0, 0.0, 10.0], [0.5, 0.5, 0.5]
    for k, part in enumerate(ground):
        _geom(spec.worldbody, _mesh(spec, f"ground{k}", part).name, part, part.translation, part.rotation)
    moving = [k for k, part in enumerate(parts) if part.body >= 0 or part.link >= 0]
    for k, part in enumerate(parts):
        _mesh(spec, f"part{k}", part)
        if k not in moving:
            for offset in place.offsets:
                _geom(spec.worldbody, f"part{k}", part, part.translation + offset, part.rotation)
    for _ in place.offsets:
        for k in moving:
            body = spec.worldbody.add_body(mocap=True, mass=1.0, inertia=[1.0, 1.0, 1.0], explicitinertial=True)
            _geom(body, f"part{k}", parts[k], np.zeros(3), np.eye(3))
    return spec, moving


def _mocap(parts: list[Part], moving: list[int], poses, place: Layout) -> tuple[np.ndarray, np.ndarray]:
    """(T, W * len(moving), 3) positions [m] and (T, W * len(moving), 4) quaternions of the mocap bodies."""
    frames = len(poses[1])
    if not moving:
        return np.zeros((frames, 0, 3)), np.zeros((frames, 0, 4))
    posed = [part_poses(parts[k], poses) for k in moving]
    position = np.stack([p for _, p in posed], axis=2) + place.offsets[None, :, None]
    quat = rotations_to_wxyz(np.stack([r for r, _ in posed], axis=2))
    return position.reshape(len(position), -1, 3), quat.reshape(len(quat), -1, 4)


@dataclass(frozen=True)
class _Scene:
    """What a trajectory's frames show: world 0's model, the parts, their frames' poses and the worlds' layout."""

    model: Model
    parts: list
    poses: tuple
    place: Layout
    worlds: int

    def body_positions(self) -> np.ndarray:
        """(T, W, nb, 3) the bodies' positions as drawn (the worlds' offsets added) [m]."""
        return self.poses[1] + self.place.offsets[None, :, None]


def _scene(model: Model, states: State, frames, options: dict) -> _Scene:
    try:
        opts = ViewOptions(**options)
    except TypeError as exc:
        raise ArgumentError(f"unknown viewer option: {exc}") from None
    recorded = select_frames(model, states, opts.world_axis, opts.stride, opts.max_frames)
    chosen = _chosen_frames(frames, len(recorded.steps))
    first = world_model(model, opts.model_axes, 0)
    parts = scene_parts(first, opts)
    poses = frame_poses(model, recorded, opts.model_axes)
    place = layout(parts, poses, opts.world_spacing, placement(first, opts))
    return _Scene(first, parts, tuple(x[chosen] for x in poses), place, recorded.q.shape[1])


def _fitted(camera: Camera, scene: _Scene) -> Camera:
    """``camera`` with its defaults filled in: the distance, and the point looked at when it does not track."""
    positions = scene.body_positions()
    if camera.track is not None:
        positions = positions[:1, camera.world]
    points = positions.reshape(-1, 3)
    low, high = points.min(axis=0, initial=np.inf), points.max(axis=0, initial=-np.inf)
    radius = (float(np.linalg.norm(high - low)) / 2 if points.size else 0.0) + scene.place.reach
    distance = camera.distance or max(MIN_DISTANCE, 1.1 * radius / math.sin(math.radians(camera.fovy) / 2))
    lookat = camera.lookat
    if lookat is None and camera.track is None:
        lookat = (low + high) / 2 if points.size else np.zeros(3)
    lookat = None if lookat is None else tuple(float(x) for x in lookat)
    return dataclasses.replace(camera, distance=float(distance), lookat=lookat)


def _lookats(camera: Camera, scene: _Scene) -> np.ndarray:
    """(T, 3) the point looked at in each frame [m] by a fitted camera."""
    offset = np.zeros(3) if camera.lookat is None else np.asarray(camera.lookat, float)
    if camera.track is None:
        return np.broadcast_to(offset, (len(scene.poses[1]), 3))
    return scene.body_positions()[:, camera.world, scene.model.body_names.index(camera.track)] + offset


def fit_camera(
    model: Model, states: State, camera: Camera | None = None, *, frames: list[int] | None = None, **options: Any
) -> Camera:
    """The camera :func:`render` would use: ``camera`` (default :class:`Camera`) with its distance and, when it
    does not track a body, the point looked at filled in so that the worlds (or the tracked robot) fill the view.
    A fitted camera draws the same frames as the unfitted one; keep it to draw other trajectories the same way.

    Args:
        model: as for :func:`render`.
        states: as for :func:`render`.
        camera: the camera to fit.
        frames: as for :func:`render`.
        **options: as for :func:`render`.

    Returns:
        A :class:`Camera` with ``distance`` set, and ``lookat`` set unless it tracks a body.

    Raises:
        ArgumentError: as :func:`render`.
    """
    scene = _scene(model, states, frames, options)
    return _fitted(_checked_camera(camera, model, scene.worlds), scene)


def render(
    model: Model,
    states: State,
    *,
    size: tuple[int, int] = DEFAULT_SIZE,
    camera: Camera | None = None,
    frames: list[int] | None = None,
    progress: bool | None = None,
    **options: Any,
) -> np.ndarray:
    """Draw a trajectory offscreen: one RGB image per recorded frame (module docstring).

    Args:
        model: the model, as for :func:`jaxmor.viewer.write_html`.
        states: one State, a trajectory or trajectories of several worlds, as for :func:`jaxmor.viewer.write_html`.
        size: ``(width, height)`` of the images [px], each 16 to 4096.
        camera: where the frames are seen from (default :class:`Camera`: all worlds in view).
        frames: which recorded frames (indices, negative from the end); default all.
        progress: report the frame count on standard error as it goes (default: above :data:`PROGRESS_AFTER`
            frames).
        **options: :class:`jaxmor.viewer.ViewOptions`' fields (``geometry``, ``stride``, ``max_frames``,
            ``world_spacing``, ``model_axes``...); the page-only ones (``contacts``, ``actuators``, ``speed``,
            ``dark_mode``) change nothing here.

    Returns:
        (F, height, width, 3) uint8 images, F the number of frames drawn.

    Raises:
        ArgumentError: bad states, options, size, camera or frames; MuJoCo missing; no OpenGL context.
    """
    width, height = checked_size(size)
    scene = _scene(model, states, frames, options)
    camera = _fitted(_checked_camera(camera, model, scene.worlds), scene)
    ground = ground_parts(scene.model, scene.place.centre[:2], scene.place.half)
    spec, moving = _spec(scene.parts, ground, scene.place, (width, height))
    position, quat = _mocap(scene.parts, moving, scene.poses, scene.place)
    show = len(position) > PROGRESS_AFTER if progress is None else bool(progress)
    return _draw(spec, (width, height), camera, _lookats(camera, scene), position, quat, show)


def _chosen_frames(frames, count: int) -> np.ndarray:
    if frames is None:
        return np.arange(count)
    chosen = np.asarray(frames)
    if (
        chosen.ndim != 1
        or chosen.size == 0
        or chosen.dtype.kind not in "iu"
        or np.any(chosen >= count)
        or np.any(chosen < -count)
    ):
        raise ArgumentError(f"frames must be a non-empty list of int indices into the {count} recorded frames")
    return chosen % count


def _draw(spec, size, camera: Camera, lookat, position, quat, progress: bool) -> np.ndarray:
    """Compile the scene and draw each frame into an offscreen buffer."""
    mujoco = _mujoco()
    model = spec.compile()
    model.vis.global_.fovy = camera.fovy
    data = mujoco.MjData(model)
    view = mujoco.MjvCamera()
    view.type = mujoco.mjtCamera.mjCAMERA_FREE
    view.azimuth, view.elevation, view.distance = camera.azimuth, camera.elevation, camera.distance
    width, height = size
    context = _gl_context(width, height)
    try:
        drawing = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_100)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, drawing)
        scene = mujoco.MjvScene(model, maxgeom=model.ngeom + 100)
        option, perturbation = mujoco.MjvOption(), mujoco.MjvPerturb()
        viewport = mujoco.MjrRect(0, 0, width, height)
        images = np.empty((len(position), height, width, 3), np.uint8)
        for t in range(len(position)):
            data.mocap_pos[:], data.mocap_quat[:] = position[t], quat[t]
            mujoco.mj_kinematics(model, data)
            view.lookat[:] = lookat[t]
            mujoco.mjv_updateScene(model, data, option, perturbation, view, mujoco.mjtCatBit.mjCAT_ALL, scene)
            mujoco.mjr_render(viewport, scene, drawing)
            mujoco.mjr_readPixels(images[t], None, viewport, drawing)
            if progress and ((t + 1) % 10 == 0 or t + 1 == len(position)):
                print(f"\rjaxmor: rendered {t + 1}/{len(position)} frames", end="", file=sys.stderr, flush=True)
        drawing.free()
    finally:
        context.free()
    if progress:
        print(file=sys.stderr)
    return images[:, ::-1].copy()  # OpenGL's rows run from the bottom up
