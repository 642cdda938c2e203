"""The trajectory page: parts, labels and overlays put in a viser scene and played frame by frame into a
recording (:mod:`jaxmor.viewer.record`), returned as one self-contained HTML page."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.types import Model, State
from jaxmor.viewer import overlays
from jaxmor.viewer.frames import MAX_FRAMES, frame_poses, select_frames, world_model
from jaxmor.viewer.parts import collision_parts, ground_parts, skeleton_parts
from jaxmor.viewer.record import (
    Layout,
    frame_durations,
    layout,
    part_poses,
    quiet_server,
    rotations_to_wxyz,
)
from jaxmor.viewer.visuals import robot_file, visual_parts

#: What ``geometry=`` accepts.
GEOMETRIES = ("auto", "visual", "collision", "both")
#: Width and height [m] of one actuator's plot in the region panel, and the room between plots [m].
PANEL_PLOT = (0.3, 0.2)
PANEL_GAP = 0.06


@dataclass(frozen=True)
class ViewOptions:
    """How a trajectory is drawn (the keyword arguments of :func:`jaxmor.viewer.trajectory_html`).

    Attributes:
        geometry: ``"auto"`` (the description's visuals where it has any, else the collision geoms), ``"visual"``,
            ``"collision"`` or ``"both"``.
        robot: the description file to read visuals from (default ``model.source``).
        package_dirs: folders for ``package://`` mesh URIs, as the loaders take them.
        world_axis: where the world axis of three-dimensional states is (0: ``rollout_batch``'s (W, T, ...)).
        stride: keep every ``stride``-th state; default: at most ``max_frames`` frames.
        max_frames: the most frames when ``stride`` is not given.
        speed: playback speed, simulated seconds per second.
        world_spacing: distance between neighbouring worlds on the grid [m] (default: from their size).
        placement: ``"grid"`` (worlds side by side), ``"states"`` (where their states put them: worlds sharing a
            terrain stand on it) or ``"auto"``: ``"states"`` for a model with a height field, else ``"grid"``.
        contacts: draw contact points and forces.
        force_scale: length of a drawn contact force per newton [m/N]; default: the largest force 0.3 m long.
        actuators: draw each DC-motor actuator's region and its operating point (world 0) in a panel.
        model_axes: the world axes of a randomized model (:func:`jaxmor.randomize`), as ``rollout_batch`` takes.
        dark_mode: the page's dark colour scheme.
    """

    geometry: str = "auto"
    robot: str | os.PathLike | None = None
    package_dirs: tuple = ()
    world_axis: int = 0
    stride: int | None = None
    max_frames: int = MAX_FRAMES
    speed: float = 1.0
    world_spacing: float | None = None
    placement: str = "auto"
    contacts: bool = False
    force_scale: float | None = None
    actuators: bool = False
    model_axes: Model | None = None
    dark_mode: bool = False


def placement(model: Model, options: ViewOptions) -> str:
    """``options.placement`` with ``"auto"`` resolved for ``model`` (world 0's)."""
    if options.placement == "auto":
        return "states" if model.height_field is not None else "grid"
    return options.placement


def scene_parts(model: Model, options: ViewOptions) -> list:
    """The moving and static parts of one world (ground excluded), as ``options.geometry`` chooses."""
    if options.geometry not in GEOMETRIES:
        raise ArgumentError(f"geometry must be one of {GEOMETRIES}, got {options.geometry!r}")
    path = robot_file(model, options.robot)
    visual = visual_parts(model, path, options.package_dirs) if path and options.geometry != "collision" else []
    if options.geometry == "visual" and not visual:
        raise ArgumentError(f"geometry='visual': the robot file {str(path)!r} has no visuals the viewer can draw")
    collision = collision_parts(model)
    if not visual:
        collision += skeleton_parts(model)
    if options.geometry == "both":
        return visual + collision
    if visual:
        return visual + [p for p in collision if p.body < 0]  # world geoms are drawn even beside visuals
    return collision


def _add_parts(server, parts, poses, offsets) -> list:
    """One batched mesh per part, an instance per world; returns ``(handle, part)`` of the moving parts."""
    moving = []
    worlds = len(offsets)
    for part in parts:
        if part.body >= 0 or part.link >= 0:
            r, p = part_poses(part, poses)
            wxyz, position = rotations_to_wxyz(r[0]), p[0] + offsets
        else:
            wxyz = np.tile(rotations_to_wxyz(part.rotation), (worlds, 1))
            position = part.translation + offsets
        handle = server.scene.add_batched_meshes_simple(
            f"/robot/{part.name}",
            part.vertices,
            part.faces,
            batched_wxyzs=wxyz,
            batched_positions=position,
            batched_colors=part.colour,
            opacity=None if part.opacity >= 1 else part.opacity,
            side="double",
            lod="off",
        )
        if part.body >= 0 or part.link >= 0:
            moving.append((handle, part, rotations_to_wxyz(r), p))
    return moving


def _add_labels(server, place: Layout, height: float):
    """A label above each world's root body (``world k``) and the time label above the worlds; returns the time
    label."""
    worlds = len(place.offsets)
    if worlds > 1:
        for w, anchor in enumerate(place.anchors):
            position = [anchor[0], anchor[1], height + 0.1]
            server.scene.add_label(f"/labels/world_{w}", f"world {w}", position=position)
    corner = [*place.anchors[:, :2].min(axis=0), height + 0.35]
    return server.scene.add_label("/labels/time", "t = 0.000 s", position=corner)


class ContactOverlay:
    """The contact overlay: a point cloud of the contacts that push and an arrow per force, per frame. ``load``
    replaces the frames shown (the live view loads each drawing's single frame)."""

    def __init__(self, server, force_scale: float | None = None):
        self.force_scale = force_scale
        nowhere = np.zeros((1, 3), np.float32)
        self.cloud = server.scene.add_point_cloud(
            "/contacts/points", nowhere, (230, 30, 30), point_size=0.03, point_shape="circle", visible=False
        )
        self.arrows = server.scene.add_arrows(
            "/contacts/forces",
            np.zeros((1, 2, 3), np.float32),
            (230, 30, 30),
            shaft_radius=0.006,
            head_radius=0.015,
            head_length=0.03,
            visible=False,
        )

    def load(self, model, frames, model_axes, offsets) -> None:
        """Compute the frames' contact points and forces; arrows are ``force_scale`` [m/N] long per newton
        (default: the largest force 0.3 m long)."""
        points, forces, held = overlays.contact_forces(model, frames, model_axes)
        self.points = points + offsets[None, :, None, :]
        largest = float(np.linalg.norm(forces, axis=-1)[held].max(initial=0.0))
        scale = self.force_scale if self.force_scale is not None else (0.3 / largest if largest > 0 else 0.0)
        self.tips = self.points + scale * forces
        self.held = held

    def show(self, t: int) -> None:
        held = self.held[t]
        if not held.any():
            self.cloud.visible = self.arrows.visible = False
            return
        start, tip = self.points[t][held], self.tips[t][held]
        self.cloud.points = start.astype(np.float32)
        self.arrows.points = np.stack([start, tip], axis=1).astype(np.float32)
        self.cloud.visible = self.arrows.visible = True


def panel_columns(na: int) -> int:
    """Columns of the actuator panel's grid of ``na`` plots."""
    return int(np.ceil(np.sqrt(na)))


def panel_place(place: Layout, na: int, top: float) -> tuple[np.ndarray, float]:
    """``(corner, scale)`` of the actuator panel: as wide as the worlds (plots at least :data:`PANEL_PLOT`), in a
    vertical plane behind them, its lowest row above ``top`` [m]."""
    columns = panel_columns(na)
    rows = -(-na // columns)
    unit = PANEL_PLOT[0] + PANEL_GAP
    tallest = max(top, 0.3) * 2.0  # the panel stands no higher than twice the robots, which the camera frames
    scale = max(1.0, min(1.6 * float(place.half[0]) / (columns * unit), tallest / (rows * (PANEL_PLOT[1] + PANEL_GAP))))
    width, height = (PANEL_PLOT[0] + PANEL_GAP) * scale, (PANEL_PLOT[1] + PANEL_GAP) * scale
    left = place.centre[0] - (columns - 1) * width / 2
    corner = np.array([left, place.centre[1] + place.half[1] + 0.3, 0.8 * top + (rows - 0.5) * height])
    return corner, scale


class ActuatorPanel:
    """The actuator panel: each DC-motor actuator's region outline and its operating point in world 0, plots on
    a grid in a vertical plane behind the worlds (``state``: the frames' actuator states, replaced by the live
    view at each drawing)."""

    def __init__(self, server, model, frames, corner: np.ndarray, scale: float = 1.0):
        region = overlays.regions(model)
        na = model.na
        columns = panel_columns(na)
        self.size = np.asarray(PANEL_PLOT) * scale
        width, height = self.size
        gap = PANEL_GAP * scale
        self.origins = np.array(
            [corner + [(a % columns) * (width + gap), 0.0, -(a // columns) * (height + gap)] for a in range(na)]
        )
        self.region = region
        self.state = frames.states.actuator_state
        segments = []
        for a in range(na):
            outline = np.concatenate(
                [
                    np.column_stack([region.speed[a], region.upper[a]]),
                    np.column_stack([region.speed[a], region.lower[a]])[::-1],
                ]
            )
            closed = np.vstack([outline, outline[:1]])
            plot = self._place(a, closed[:, 0], closed[:, 1])
            segments.append(np.stack([plot[:-1], plot[1:]], axis=1))
            axes = self._place(
                a,
                np.array([-1.0, 1.0, 0.0, 0.0]) * region.speed_scale[a],
                np.array([0.0, 0.0, -1.0, 1.0]) * region.torque_scale[a],
            )
            segments.append(axes.reshape(2, 2, 3))
            server.scene.add_label(
                f"/actuators/name_{a}",
                model.actuators.names[a],
                position=self.origins[a] + [-width / 2, 0.0, height / 2 + 0.03 * scale],
                font_size_mode="scene",
                font_scene_height=0.035 * scale,
            )
        server.scene.add_line_segments(
            "/actuators/regions",
            np.concatenate(segments).astype(np.float32),
            (60, 60, 60),
            thickness=1.5,
            thickness_units="screen",
        )
        self.cloud = server.scene.add_point_cloud(
            "/actuators/points", self._points(0), self._colours(0), point_size=0.02 * scale, point_shape="circle"
        )

    def _place(self, a: int, speed: np.ndarray, torque: np.ndarray) -> np.ndarray:
        width, height = self.size
        x = np.clip(speed / self.region.speed_scale[a], -1, 1) * width / 2
        z = np.clip(torque / self.region.torque_scale[a], -1, 1) * height / 2
        return self.origins[a] + np.column_stack([x, np.zeros_like(x), z])

    def _points(self, t: int) -> np.ndarray:
        speed, torque = self.state.motor_speed[t, 0], self.state.motor_torque[t, 0]
        return np.concatenate([self._place(a, speed[a : a + 1], torque[a : a + 1]) for a in range(len(speed))])

    def _colours(self, t: int) -> np.ndarray:
        return overlays.saturation_colours(np.asarray(self.state.saturation[t, 0]))

    def show(self, t: int) -> None:
        self.cloud.points = self._points(t).astype(np.float32)
        self.cloud.colors = self._colours(t)


def trajectory_html(model: Model, states: State, **options) -> str:
    """One self-contained HTML page that plays a trajectory in 3D (play/pause, scrub, orbit): see
    :func:`jaxmor.viewer.write_html` for the arguments; keyword options are :class:`ViewOptions`' fields.

    Raises:
        ArgumentError: bad states or options, or viser missing.
    """
    return record_page(model, states, **options)[0]


def record_page(model: Model, states: State, **options) -> tuple[str, np.ndarray]:
    """:func:`trajectory_html`'s page and (T,) the playback time at which each frame starts [s]."""
    try:
        opts = ViewOptions(**options)
    except TypeError as exc:
        raise ArgumentError(f"unknown viewer option: {exc}") from None
    frames = select_frames(model, states, opts.world_axis, opts.stride, opts.max_frames)
    first = world_model(model, opts.model_axes, 0)
    parts = scene_parts(first, opts)
    poses = frame_poses(model, frames, opts.model_axes)
    place = layout(parts, poses, opts.world_spacing, placement(first, opts))
    durations = frame_durations(frames, opts.speed)
    with quiet_server() as server:
        serializer = server.get_scene_serializer()
        top = float(poses[1][..., 2].max(initial=0.5)) + 0.2
        _place_camera(server, place, top)
        server.scene.set_up_direction("+z")
        for part in ground_parts(first, place.centre[:2], place.half):
            server.scene.add_mesh_simple(
                f"/world/{part.name}",
                part.vertices,
                part.faces,
                color=part.colour,
                position=part.translation,
                side="double",
            )
        moving = _add_parts(server, parts, poses, place.offsets)
        clock = _add_labels(server, place, top)
        contacts = None
        if opts.contacts:
            contacts = ContactOverlay(server, opts.force_scale)
            contacts.load(first, frames, opts.model_axes, place.offsets)
        panel = (
            ActuatorPanel(server, first, frames, *panel_place(place, first.na, top))
            if opts.actuators and first.na
            else None
        )
        for t in range(len(frames.steps)):
            for handle, _, wxyz, position in moving:
                handle.batched_wxyzs = wxyz[t]
                handle.batched_positions = position[t] + place.offsets
            clock.text = f"t = {frames.time[t, 0]:.3f} s"
            for overlay in (contacts, panel):
                if overlay is not None:
                    overlay.show(t)
            serializer.insert_sleep(float(durations[t]))
        starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
        return serializer.as_html(dark_mode=opts.dark_mode), starts


def _place_camera(server, place, top: float) -> None:
    """Look at the worlds from the front left, above, far enough to see them all."""
    x, y = (float(c) for c in place.centre[:2])
    reach = float(max(place.half.max(), 0.5))
    server.initial_camera.look_at = (x, y, top / 3)
    server.initial_camera.position = (x + 1.0 * reach, y - 1.5 * reach, top / 3 + 0.9 * reach)
