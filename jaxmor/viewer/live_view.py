"""A live view of a running simulation: a viser server on localhost that the simulation loop updates as it goes.

The loop calls :meth:`LiveViewer.update` with its states after each step. ``update`` returns at once, without
copying anything from the device, while no browser is connected or less than ``1 / max_rate`` seconds have passed
since the last drawing; otherwise it draws one world (the world selector's) from its ``q``. While the view is
paused ``update`` holds the loop until it is resumed, stepped once (``Step``) or reset (``Reset``, which the loop
reads from :attr:`LiveViewer.reset_requested`). Nothing here is traced or jitted into the loop's step.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from typing import Any

import jax
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.model import neutral_q
from jaxmor.types import Model, State
from jaxmor.viewer.frames import _poses_over_time, moved_mocap, select_frames, world_model
from jaxmor.viewer.parts import ground_parts
from jaxmor.viewer.record import layout, part_poses, rotations_to_wxyz, viser_module
from jaxmor.viewer.scene import ActuatorPanel, ContactOverlay, ViewOptions, panel_place, scene_parts

#: Half size of the ground drawn around the origin [m].
GROUND_HALF = 20.0
#: How often a paused loop looks for the buttons [s].
POLL = 0.02
#: Where the camera stands relative to the body it looks at (a new page's, and the follow camera's) [m].
CAMERA_OFFSET = np.array([-1.6, -0.8, 0.7])


class LiveViewer:
    """A live 3D view (see the module docstring); make one with :func:`live`.

    Attributes:
        url: where to open it, ``http://127.0.0.1:PORT``.
        paused: the view holds the loop in :meth:`update`.
        reset_requested: ``Reset`` was pressed since the last time this was read (reading it clears it).
        world: the world drawn.
        draws: how many times the robot was drawn (for tests and progress).
    """

    def __init__(
        self, model: Model, *, port: int = 0, max_rate: float = 30.0, model_axes: Model | None = None, **options: Any
    ):
        if not (isinstance(max_rate, (int, float)) and 0 < max_rate <= 240):
            raise ArgumentError(f"max_rate must be a number in (0, 240] [Hz], got {max_rate!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
            raise ArgumentError(f"port must be an int in [0, 65536), got {port!r}")
        try:
            opts = ViewOptions(model_axes=model_axes, **options)
        except TypeError as exc:
            raise ArgumentError(f"unknown viewer option: {exc}") from None
        self.model, self.model_axes, self.max_rate = model, model_axes, float(max_rate)
        self.paused, self.world, self.draws = False, 0, 0
        self._reset, self._step, self._last, self._worlds, self._closed = False, False, 0.0, 1, False
        self._q = self._pose = self._edited_q = self._ctrl = None
        self._syncing = False
        self._lock = threading.Lock()
        first = world_model(model, model_axes, 0)
        parts = scene_parts(first, opts)  # reads the robot file's visuals: once
        self._parts = [p for p in parts if p.body >= 0 or p.link >= 0]
        viser = viser_module()
        with contextlib.redirect_stdout(io.StringIO()):
            self.server = viser.ViserServer(host="127.0.0.1", port=port, verbose=False)
        self.url = f"http://127.0.0.1:{self.server.get_port()}"
        self.server.scene.set_up_direction("+z")
        for part in ground_parts(first, np.zeros(2), np.full(2, GROUND_HALF)):
            self.server.scene.add_mesh_simple(
                f"/world/{part.name}", part.vertices, part.faces, color=part.colour, position=part.translation
            )
        for part in parts:
            if part.body < 0 and part.link < 0:
                self.server.scene.add_mesh_simple(
                    f"/world/{part.name}",
                    part.vertices,
                    part.faces,
                    color=part.colour,
                    position=part.translation,
                    wxyz=rotations_to_wxyz(part.rotation),
                )
        self._handles = [
            self.server.scene.add_mesh_simple(f"/robot/{p.name}", p.vertices, p.faces, color=p.colour, side="double")
            for p in self._parts
        ]
        self._overlays(first, opts)
        self._gui(opts)
        neutral = np.asarray(neutral_q(first))[None].astype(first.body_mass.dtype)
        self._target = np.asarray(_poses_over_time(first, neutral)[1][0, 0], float)
        self.server.on_client_connect(lambda client: self._aim(self._target, [client]))

    def _overlays(self, first: Model, opts: ViewOptions) -> None:
        """The contact arrows, body frames, centre of mass and actuator panel, hidden until their box is ticked."""
        scene = self.server.scene
        weight = float(np.sum(np.asarray(first.body_mass))) * 9.81
        self._contacts = ContactOverlay(self.server, opts.force_scale or (0.3 / weight if weight > 0 else 0.0))
        self._frames = [
            scene.add_frame(f"/frames/{b}", axes_length=0.1, axes_radius=0.004, visible=False)
            for b in range(len(first.body_names))
        ]
        self._com = scene.add_icosphere("/centre_of_mass", radius=0.03, color=(30, 30, 30), visible=False)
        self._panel = None

    def _gui(self, opts: ViewOptions) -> None:
        gui = self.server.gui
        self._pause = gui.add_button("Pause")
        self._step_button = gui.add_button("Step", disabled=True)
        self._reset_button = gui.add_button("Reset")
        self._world = gui.add_number("World", initial_value=0, min=0, max=0, step=1)
        self._follow = gui.add_checkbox("Follow", initial_value=False)
        self._show_contacts = gui.add_checkbox("Contacts", initial_value=bool(opts.contacts))
        self._show_frames = gui.add_checkbox("Frames", initial_value=False)
        self._show_com = gui.add_checkbox("Centre of mass", initial_value=False)
        self._show_actuators = gui.add_checkbox("Actuators", initial_value=bool(opts.actuators))
        self._clock = gui.add_text("Time [s]", initial_value="0.000", disabled=True)
        self._joint_sliders = self._sliders(gui, "Joints (paused)", self._joint_ranges(), self._joint_moved)
        self._ctrl_sliders = self._sliders(gui, "Controls (paused)", self._ctrl_ranges(), self._ctrl_moved)

        @self._pause.on_click
        def _(_event) -> None:
            with self._lock:
                self.paused = not self.paused
                self._pause.label = "Resume" if self.paused else "Pause"
                self._step_button.disabled = not self.paused
                self._sync_sliders()

        @self._step_button.on_click
        def _(_event) -> None:
            with self._lock:
                self._step = True

        @self._reset_button.on_click
        def _(_event) -> None:
            with self._lock:
                self._reset = True

        @self._world.on_update
        def _(_event) -> None:
            with self._lock:
                self.world = int(min(max(int(self._world.value), 0), self._worlds - 1))
                self._last = 0.0  # draw at the next update

        for box in (self._show_contacts, self._show_frames, self._show_com, self._show_actuators):

            @box.on_update
            def _(_event) -> None:
                self._last = 0.0  # draw again (also while paused)

    def _joint_ranges(self) -> list[tuple[str, float, float]]:
        """Each 1-DoF joint's name and slider range: its limits, else +-pi [rad or m]."""
        lower, upper = np.asarray(self.model.dof_lower, float), np.asarray(self.model.dof_upper, float)
        ranges = []
        for name, u in zip(self.model.joint_names, self.model.joint_u, strict=True):
            low, high = (lower[u], upper[u]) if np.isfinite(lower[u]) and np.isfinite(upper[u]) else (-np.pi, np.pi)
            ranges.append((name, float(low), float(high)))
        return ranges

    def _ctrl_ranges(self) -> list[tuple[str, float, float]]:
        """Each affine actuator's name and slider range: its control clamp, else -1 to 1 [control units]."""
        lower, upper = np.asarray(self.model.affine.ctrl_lower, float), np.asarray(self.model.affine.ctrl_upper, float)
        return [
            (name, float(low), float(high)) if np.isfinite(low) and np.isfinite(high) else (name, -1.0, 1.0)
            for name, low, high in zip(self.model.affine.names, lower, upper, strict=True)
        ]

    def _sliders(self, gui, title: str, ranges, moved) -> list:
        """A folder of disabled sliders, one per ``(name, low, high)``; ``moved(k)`` runs when slider ``k`` moves."""
        if not ranges:
            return []
        sliders = []
        with gui.add_folder(title):
            for k, (name, low, high) in enumerate(ranges):
                start = float(np.clip(0.0, low, high))
                slider = gui.add_slider(name, min=low, max=high, step=(high - low) / 200, initial_value=start)
                slider.disabled = True
                slider.on_update(lambda _event, k=k: moved(k))
                sliders.append(slider)
        return sliders

    def _sync_sliders(self) -> None:
        """Paused: the joint sliders show the drawn pose, the control sliders the last controls, both enabled;
        running: disabled, the pose edit dropped."""
        self._syncing = True
        try:
            for k, slider in enumerate(self._joint_sliders):
                if self._q is not None:
                    value = float(self._q[self.model.joint_q[k]])
                    slider.value = float(np.clip(value, slider.min, slider.max))
                slider.disabled = not self.paused
            for slider in self._ctrl_sliders:
                slider.disabled = not self.paused
        finally:
            self._syncing = False
        if not self.paused:
            self._pose = None

    def _joint_moved(self, k: int) -> None:
        if self._syncing or not self.paused or self._q is None:
            return
        pose = (self._pose if self._pose is not None else self._q).copy()
        pose[self.model.joint_q[k]] = self._joint_sliders[k].value
        with self._lock:
            self._pose = self._edited_q = pose
            self._last = 0.0  # draw the edited pose

    def _ctrl_moved(self, _k: int) -> None:
        if not self._syncing and self.paused:
            with self._lock:
                self._ctrl = np.array([slider.value for slider in self._ctrl_sliders], float)

    @property
    def edited_q(self) -> np.ndarray | None:
        """(nq,) the pose set with the joint sliders while paused, for the loop to give world :attr:`world`;
        ``None`` when no slider moved since the last read (reading it clears it)."""
        with self._lock:
            edited, self._edited_q = self._edited_q, None
        return edited

    @property
    def ctrl(self) -> np.ndarray | None:
        """(nu,) the controls set with the control sliders [control units], for the loop to apply to world
        :attr:`world` (:func:`jaxmor.set_ctrl`); ``None`` until a control slider moved."""
        with self._lock:
            return None if self._ctrl is None else self._ctrl.copy()

    @property
    def reset_requested(self) -> bool:
        with self._lock:
            requested, self._reset = self._reset, False
        return requested

    def update(self, states: State) -> None:
        """Show ``states`` (one world's State, or a batch with the worlds first) if it is time to draw; hold the
        loop while paused (module docstring).

        Raises:
            ArgumentError: ``states`` is not a State of this model.
        """
        if not isinstance(states, State):
            raise ArgumentError(f"states must be a jaxmor State, got {type(states).__name__}")
        if self._closed:
            return
        now = time.monotonic()
        if not self.paused and (now - self._last < 1.0 / self.max_rate or not self.server.get_clients()):
            return
        self._draw(states)
        self._last = now
        while self.paused and not self._closed:
            with self._lock:
                if self._step or self._reset:
                    self._step = False
                    return
            time.sleep(POLL)
            if self._last == 0.0:  # another world or overlay was chosen while paused
                self._draw(states)
                self._last = time.monotonic()

    def _draw(self, states: State) -> None:
        q = np.asarray(states.q)
        if q.shape[-1] != self.model.nq or q.ndim not in (1, 2):
            raise ArgumentError(f"states.q must be (nq,) or (W, nq) with nq = {self.model.nq}, got {q.shape}")
        worlds = 1 if q.ndim == 1 else q.shape[0]
        if worlds != self._worlds:
            self._worlds = worlds
            self._world.max = worlds - 1
        w = min(self.world, worlds - 1)
        model = world_model(self.model, self.model_axes, w)
        one = states if q.ndim == 1 else jax.tree.map(lambda x: x[w], states)
        self._q = np.array(q if q.ndim == 1 else q[w], float)
        row = self._pose if self.paused and self._pose is not None else self._q
        poses = [
            np.asarray(x, float)[:, None] for x in _poses_over_time(model, row[None].astype(model.body_mass.dtype))
        ]
        poses = moved_mocap(model, poses, jax.tree.map(lambda x: np.asarray(x)[None, None], one))
        with self.server.atomic():
            for handle, part in zip(self._handles, self._parts, strict=True):
                rotation, position = part_poses(part, poses)
                handle.wxyz, handle.position = rotations_to_wxyz(rotation[0, 0]), position[0, 0]
            self._clock.value = f"{float(np.asarray(one.time)):.3f}"
            self._draw_overlays(model, one, poses)
        self._target = poses[1][0, 0, 0]
        if self._follow.value:
            self._aim(self._target, self.server.get_clients().values())
        self.draws += 1

    def _draw_overlays(self, model: Model, one: State, poses) -> None:
        """The ticked overlays of the world drawn (``one``: its State; ``poses``: its bodies' and links' poses)."""
        body_r, body_p = poses[0][0, 0], poses[1][0, 0]
        for b, frame in enumerate(self._frames):
            frame.visible = bool(self._show_frames.value)
            if frame.visible:
                frame.wxyz, frame.position = rotations_to_wxyz(body_r[b]), body_p[b]
        self._com.visible = bool(self._show_com.value)
        if self._com.visible:
            mass, com = np.asarray(model.body_mass, float), np.asarray(model.body_com, float)
            centres = body_p + np.einsum("bij,bj->bi", body_r, com)
            self._com.position = (mass[:, None] * centres).sum(axis=0) / mass.sum()
        frames = None
        if self._show_contacts.value or self._show_actuators.value:
            frames = select_frames(model, jax.tree.map(np.asarray, one))
        if self._show_contacts.value:
            self._contacts.load(model, frames, None, np.zeros((1, 3)))
            self._contacts.show(0)
        else:
            self._contacts.cloud.visible = self._contacts.arrows.visible = False
        if self._show_actuators.value and model.na:
            if self._panel is None:  # placed and scaled as the page's, behind the robot where it first stands
                place = layout(self._parts, poses, None, "states")
                top = float(np.asarray(poses[1])[..., 2].max(initial=0.5)) + 0.2
                self._panel = ActuatorPanel(self.server, model, frames, *panel_place(place, model.na, top))
            self._panel.state = frames.states.actuator_state
            self._panel.show(0)

    def _aim(self, target: np.ndarray, clients) -> None:
        """Look at ``target`` (3,) [m] from behind and above it, in the pages of ``clients``."""
        for client in clients:
            client.camera.position = target + CAMERA_OFFSET
            client.camera.look_at = target

    def close(self) -> None:
        """Stop the server; later :meth:`update` calls return at once."""
        self._closed = True
        with contextlib.redirect_stdout(io.StringIO()):
            self.server.stop()


def live(
    model: Model, *, port: int = 0, max_rate: float = 30.0, model_axes: Model | None = None, **options: Any
) -> LiveViewer:
    """Serve a live view of ``model`` on localhost, for a simulation loop to update (module docstring).

    Args:
        model: the model simulated.
        port: the local port (0: a free one; :attr:`LiveViewer.url` says which).
        max_rate: the most drawings per second [Hz], in (0, 240].
        model_axes: the world axes of a randomized model (:func:`jaxmor.randomize`), to draw each world's shapes.
        **options: :class:`jaxmor.viewer.ViewOptions`' ``geometry``, ``robot``, ``package_dirs``.

    Returns:
        A :class:`LiveViewer`; call its ``update(states)`` in the loop and ``close()`` at the end.

    Raises:
        ArgumentError: bad options, or viser missing.
    """
    return LiveViewer(model, port=port, max_rate=max_rate, model_axes=model_axes, **options)


def serve(model: Model, state: State, *, port: int = 0, seconds: float | None = None, say=print) -> LiveViewer:
    """Simulate ``model`` from ``state`` with no actuation, in real time, in a live view (``jaxmor view --live``),
    until interrupted or, with ``seconds``, for that much wall-clock time [s]. Reset starts again from ``state``.

    Returns:
        The (closed) viewer.

    Raises:
        ArgumentError: bad arguments, or viser missing.
    """
    import jax

    from jaxmor.sim.pipeline import step

    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
        raise ArgumentError(f"seconds must be a positive number [s] or None, got {seconds!r}")
    dt = float(np.asarray(model.opt.timestep))
    per_update = max(1, round(1.0 / 60.0 / dt))  # physics steps per update: about 60 updates per simulated second
    advance = jax.jit(lambda s: jax.lax.fori_loop(0, per_update, lambda _, x: step(model, x), s))
    viewer = live(model, port=port)
    say(f"live view at {viewer.url} (Ctrl-C to stop)")
    began, current, simulated = time.monotonic(), state, 0.0
    try:
        while seconds is None or time.monotonic() - began < seconds:
            current, simulated = advance(current), simulated + per_update * dt
            viewer.update(current)
            if viewer.reset_requested:
                current, simulated, began = state, 0.0, time.monotonic()
            behind = time.monotonic() - began - simulated
            if behind > 0.5:  # held by Pause, or slower than real time: go on from now, not fast-forward
                began += behind
            time.sleep(max(0.0, -behind))
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()
    return viewer
