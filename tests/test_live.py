"""jaxmor.viewer.live (jaxmor/viewer/live_view.py): a live view served on 127.0.0.1 while a simulation loop runs in
the same process, checked in headless Chromium (skipped where Playwright or a Chromium is missing): the picture
follows the loop, Pause holds it, Step advances it, the world selector switches worlds, the joint slider edits the
pose, Reset reaches the loop; with no page open, ``update`` copies nothing and draws nothing.
"""

from __future__ import annotations

import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor

pytest.importorskip("viser")
from jaxmor.viewer import capture  # noqa: E402
from jaxmor.viewer.live_view import live  # noqa: E402

#: The page's size [px]: wide enough that the robot, in the middle, is clear of the panel at the right.
SIZE = (1200, 600)
#: Physics steps per update: one Step moves the pendulum visibly.
STEPS = 25


@pytest.fixture(scope="module")
def pendulum():
    """The shipped pendulum, 2 worlds started at 0.5 and 2.5 rad, and a jitted update of STEPS steps."""
    model = jaxmor.load_urdf(jaxmor.robots.path("pendulum"))
    start = jax.vmap(lambda a: jaxmor.init_state(model, q=jnp.full((model.nq,), a)))(jnp.array([0.5, 2.5]))
    one = jax.vmap(lambda s: jaxmor.step(model, s))
    advance = jax.jit(lambda s: jax.lax.fori_loop(0, STEPS, lambda _, x: one(x), s))
    jax.block_until_ready(advance(start))
    return model, start, advance


class Loop:
    """The simulation loop in a thread: step, ``viewer.update``; Reset restarts it from the start states."""

    def __init__(self, viewer, start, advance):
        self.viewer, self.start, self.advance = viewer, start, advance
        self.running, self.resets, self.updates, self.edits = True, 0, 0, 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        states = self.start
        while self.running:
            states = self.advance(states)
            self.viewer.update(states)
            self.updates += 1
            edited = self.viewer.edited_q
            if edited is not None:  # a pose set with the joint sliders while paused
                states = states.replace(q=states.q.at[self.viewer.world].set(jnp.asarray(edited, states.q.dtype)))
                self.edits += 1
            if self.viewer.reset_requested:
                states, self.resets = self.start, self.resets + 1
            time.sleep(0.005)

    def stop(self) -> None:
        self.running = False
        self.viewer.close()
        self.thread.join(timeout=10)


def _scene(page) -> np.ndarray:
    """The canvas left of the GUI panel (whose time field changes as the loop runs)."""
    image = capture.capture(page).astype(int)
    return image[:, : image.shape[1] - 360]


def _changed(a: np.ndarray, b: np.ndarray) -> int:
    return int((np.abs(a - b).sum(axis=-1) > 30).sum())


def _click(page, label: str) -> None:
    page.get_by_role("button", name=label).click()
    page.wait_for_timeout(400)


def _until(page, condition, what: str, seconds: float = 60.0) -> None:
    """Wait until ``condition()`` holds, checking every 0.1 s for up to ``seconds`` (a loaded machine draws late;
    the test waits for what it checks, not for a fixed time)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        page.wait_for_timeout(100)


def _settled(page, viewer, loop, window_ms: int = 300) -> bool:
    """Whether neither the drawings nor the loop's updates change over ``window_ms`` (an update that had passed the
    pause check when the pause came can take longer than that on a loaded machine)."""
    before = (viewer.draws, loop.updates)
    page.wait_for_timeout(window_ms)
    return (viewer.draws, loop.updates) == before


def test_no_page_no_drawing(pendulum):
    model, start, advance = pendulum
    viewer = live(model)
    try:
        states = advance(start)
        for _ in range(50):
            viewer.update(states)
        assert viewer.draws == 0  # nobody connected: nothing copied or drawn
    finally:
        viewer.close()
    with pytest.raises(jaxmor.ArgumentError, match="max_rate"):
        live(model, max_rate=0)
    with pytest.raises(jaxmor.ArgumentError, match="unknown viewer option"):
        live(model, colour="red")


def test_live_view_follows_pauses_steps_and_switches_worlds(pendulum):
    pytest.importorskip("playwright")
    if capture.browser_path() is None:
        pytest.skip("no Chromium: apt-get install chromium (or playwright install chromium)")
    model, start, advance = pendulum
    viewer = live(model, max_rate=30)
    loop = Loop(viewer, start, advance)
    try:
        with capture.browser(SIZE, allowed=(viewer.url,)) as (context, offline):
            page = context.new_page()
            page.goto(viewer.url)
            page.wait_for_selector("canvas[data-engine]")
            page.add_style_tag(content=capture._HIDE)
            _until(page, lambda: viewer.draws > 0, "a first drawing")
            first = _scene(page)
            _until(page, lambda: _changed(first, _scene(page)) > 50, "the pendulum swinging on screen")

            _click(page, "Pause")
            _until(page, lambda: viewer.paused, "the view paused")
            _until(page, lambda: _settled(page, viewer, loop), "an update already past the pause check to end")
            held, draws = _scene(page), viewer.draws
            updates = loop.updates
            page.wait_for_timeout(700)
            assert _changed(held, _scene(page)) == 0 and viewer.draws == draws and loop.updates == updates

            _click(page, "Step")
            _until(page, lambda: loop.updates == updates + 1, "one loop update after Step")
            _until(page, lambda: _changed(held, _scene(page)) > 20, "the stepped pose drawn")  # STEPS steps on
            stepped = _scene(page)
            assert loop.updates == updates + 1

            page.get_by_role("textbox", name="World").fill("1")
            page.keyboard.press("Enter")
            _until(page, lambda: viewer.world == 1, "world 1 selected")
            _until(page, lambda: _changed(stepped, _scene(page)) > 50, "world 1 drawn")  # it hangs elsewhere

            switched = _scene(page)
            slider = page.get_by_role("slider").first  # the pendulum's one joint, enabled while paused
            slider.focus()
            for _ in range(30):
                page.keyboard.press("ArrowRight")
            _until(page, lambda: _changed(switched, _scene(page)) > 50, "the edited pose drawn")

            _click(page, "Reset")
            _click(page, "Resume")
            _until(page, lambda: loop.resets == 1 and not viewer.paused, "the reset and the resumed loop")
            assert loop.edits == 1
            assert not offline.blocked, offline.blocked
    finally:
        loop.stop()


def test_jaxmor_view_live_serves_and_stops(capsys):
    from jaxmor.tools import cli

    assert cli.main(["view", "--live", str(jaxmor.robots.path("pendulum")), "--seconds", "1"]) == 0
    assert "live view at http://127.0.0.1:" in capsys.readouterr().out
    assert cli.main(["view", "--live", "x.npz"]) != 0
    assert "--live takes a robot file" in capsys.readouterr().err


BODY_XML = """<mujoco><worldbody><body name="block" pos="0 0 1"><freejoint/>
<inertial pos="0.1 0 0" mass="2" diaginertia="0.01 0.01 0.01"/><geom type="box" size="0.2 0.1 0.1" mass="0"/>
</body></worldbody></mujoco>"""


def test_overlays_frames_and_centre_of_mass(tmp_path):
    """A block whose centre of mass sits 0.1 m along its x axis, turned 90 degrees about z at (1, 2, 3): its frame
    is drawn at (1, 2, 3) and its centre of mass at (1, 2.1, 3)."""
    path = tmp_path / "block.xml"
    path.write_text(BODY_XML)
    with pytest.warns(jaxmor.MujocoDifferenceWarning):
        model = jaxmor.load_mjcf(path)
    half = np.sqrt(0.5)
    state = jaxmor.init_state(model, q=jnp.array([1.0, 2.0, 3.0, half, 0.0, 0.0, half]))
    viewer = live(model)
    try:
        viewer._show_frames.value = viewer._show_com.value = True
        viewer._draw(state)
        np.testing.assert_allclose(viewer._frames[0].position, [1.0, 2.0, 3.0], atol=1e-6)
        np.testing.assert_allclose(viewer._frames[0].wxyz, [half, 0.0, 0.0, half], atol=1e-6)
        np.testing.assert_allclose(viewer._com.position, [1.0, 2.1, 3.0], atol=1e-6)
        assert viewer._com.visible and not viewer._contacts.cloud.visible
    finally:
        viewer.close()


def test_overlays_contact_forces_hold_the_weight():
    """The quadruped standing still on the ground: the contact overlay's forces add up to its weight."""
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    stand = jnp.asarray(jaxmor.robots.quadruped_standing_q(model))
    state = jaxmor.init_state(model, q=stand)
    assert model.na == model.nq - 7  # every joint driven, in order
    held = jaxmor.set_actuator_pd_gains(model, state, jnp.full(model.na, 100.0), jnp.full(model.na, 4.0))
    held = jaxmor.set_actuator_pd_targets(model, held, stand[7:])
    settle = jax.jit(lambda s: jax.lax.fori_loop(0, 400, lambda _, x: jaxmor.step(model, x), s))
    settled = settle(held)
    viewer = live(model)
    try:
        viewer._show_contacts.value = True
        viewer._draw(settled)
        overlay = viewer._contacts
        scale = 0.3 / (float(np.sum(np.asarray(model.body_mass))) * 9.81)
        forces = (overlay.tips - overlay.points)[0, 0][overlay.held[0, 0]] / scale
        weight = float(np.sum(np.asarray(model.body_mass))) * 9.81
        assert overlay.held[0, 0].sum() >= 4 and overlay.cloud.visible
        np.testing.assert_allclose(forces.sum(axis=0), [0.0, 0.0, weight], atol=0.02 * weight)
        viewer._show_actuators.value = True
        viewer._draw(settled)
        panel, base = viewer._panel, np.asarray(settled.q[:3])  # placed as the page places it (panel_place)
        middle = (panel.origins.min(axis=0) + panel.origins.max(axis=0)) / 2
        assert abs(middle[0] - base[0]) < 0.1 and panel.origins[:, 1].min() > base[1] + 0.3  # behind the robot
        assert panel.origins[:, 2].min() - panel.size[1] / 2 > base[2]  # its lowest plot above the robot's base
        assert panel.size[0] >= 0.3 and len(panel.origins) == model.na
    finally:
        viewer.close()
