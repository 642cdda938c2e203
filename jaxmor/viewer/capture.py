"""Stills and videos of a trajectory, drawn by one of :data:`ENGINES`: ``"mujoco"`` (the default), MuJoCo's
offscreen renderer (:mod:`jaxmor.viewer.offscreen`), or ``"page"``, its page (:mod:`jaxmor.viewer.page`) opened in
headless Chromium through Playwright, paused, sought to each frame's time with the playback bar's time field, and
the 3D canvas captured.

The browser runs offline: every request that is not the page's own file or a ``data:``/``blob:`` URL is aborted.
WebGL runs on SwiftShader (software), so no GPU or display is needed. The browser is Chromium at
:data:`BROWSER_PATHS` (Debian's ``apt-get install chromium``) or Playwright's own (``playwright install
chromium``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.types import Model, State
from jaxmor.viewer.record import checked_size

if TYPE_CHECKING:
    from jaxmor.viewer.offscreen import Camera

#: Where a Chromium is looked for first.
BROWSER_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
#: Chromium's switches: headless, no sandbox (containers), software WebGL, and no network of its own.
BROWSER_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
#: Default size of stills and video frames [px].
DEFAULT_SIZE = (640, 480)
#: What draws stills and videos: MuJoCo's offscreen renderer, or the page captured in headless Chromium.
ENGINES = ("mujoco", "page")
#: What hides viser's notifications (the software-WebGL warning) from the captures.
_HIDE = ".mantine-Notifications-root { display: none !important; }"
#: Time the page gets to decode its recording and draw the first frame [ms], and to draw after a seek.
LOAD_MS = 1500
SEEK_MS = 150


def browser_path() -> str | None:
    """The Chromium to launch: the first of :data:`BROWSER_PATHS` that exists, else Playwright's own if it is
    installed, else ``None``."""
    for path in BROWSER_PATHS:
        if os.path.exists(path):
            return path
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            path = p.chromium.executable_path
        return path if os.path.exists(path) else None
    except Exception:  # no playwright, or its driver cannot start: no browser
        return None


class Offline:
    """A route handler that lets the page load its own file, ``data:``/``blob:`` URLs and the URLs starting with
    one of ``allowed`` (a live viewer's), and aborts everything else; ``blocked`` lists the aborted URLs."""

    def __init__(self, allowed: tuple[str, ...] = ()):
        self.blocked: list[str] = []
        self.allowed = ("file:", "data:", "blob:", *allowed)

    def __call__(self, route) -> None:
        url = route.request.url
        if url.startswith(self.allowed):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()


@contextlib.contextmanager
def browser(size=DEFAULT_SIZE, allowed: tuple[str, ...] = ()):
    """A headless Chromium context (a fresh profile, offline but for ``allowed``: :class:`Offline`) with a ``size``
    viewport; yields ``(context, offline)``.

    Raises:
        ArgumentError: Playwright is not installed or no Chromium is found.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        raise ArgumentError("videos and stills need playwright: pip install 'jaxmor[video]'") from exc
    path = browser_path()
    if path is None:
        raise ArgumentError("no Chromium found: apt-get install chromium, or playwright install chromium")
    offline = Offline(allowed)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=path,
            args=list(BROWSER_ARGS),
            headless=True,
            viewport={"width": int(size[0]), "height": int(size[1])},
        )
        try:
            context.route("**/*", offline)
            yield context, offline
        finally:
            context.close()


def open_trajectory(context, path: Path):
    """Open a trajectory page, wait for its first frame, pause the playback and hide notifications."""
    page = context.new_page()
    page.goto(Path(path).resolve().as_uri())
    page.wait_for_selector("canvas[data-engine]")
    page.wait_for_selector(".mantine-Slider-root")
    page.add_style_tag(content=_HIDE)
    page.wait_for_timeout(LOAD_MS)
    pause = page.locator("button:has(svg.tabler-icon-player-pause-filled)")
    if pause.count():
        pause.first.dispatch_event("click")  # no actionability wait: software WebGL keeps the page busy
    viewport = page.viewport_size
    canvas = page.locator("canvas[data-engine]").bounding_box()
    if canvas and round(canvas["height"]) < viewport["height"]:  # the playback bar's room: the canvas gets the size
        extra = viewport["height"] - round(canvas["height"])
        page.set_viewport_size({"width": viewport["width"], "height": viewport["height"] + extra})
        page.wait_for_timeout(SEEK_MS)
    return page


def seek(page, seconds: float) -> None:
    """Move the paused playback to ``seconds`` through the playback bar's time field."""
    field = page.locator(".mantine-NumberInput-input").first
    field.fill(f"{seconds:.4f}")
    field.press("Enter")
    page.wait_for_timeout(SEEK_MS)


def capture(page) -> np.ndarray:
    """(H, W, 3) uint8 RGB of the page's 3D canvas."""
    from PIL import Image

    png = page.locator("canvas[data-engine]").screenshot()
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _page_frames(model: Model, states: State, size, options, which) -> tuple[list[np.ndarray], np.ndarray]:
    """Captures of the chosen frames (``which``: indices into the recording's frames, ``None``: all) and the
    recording's frame start times [s]."""
    from jaxmor.viewer.scene import record_page

    page_html, starts = record_page(model, states, **options)
    chosen = range(len(starts)) if which is None else which
    with tempfile.TemporaryDirectory() as folder, browser(size) as (context, _):
        path = Path(folder) / "trajectory.html"
        path.write_text(page_html, encoding="utf-8")
        page = open_trajectory(context, path)
        ends = np.append(starts[1:], starts[-1] + (starts[-1] - starts[-2] if len(starts) > 1 else 0.02))
        images = []
        for t in chosen:
            seek(page, float((starts[t] + ends[t]) / 2))
            images.append(_fitted(capture(page), size))
    return images, starts


def _images(model: Model, states: State, size, options, which, engine: str, camera, progress=None):
    """The chosen frames' images by ``engine`` and the recording's frame start times [s]."""
    if engine not in ENGINES:
        raise ArgumentError(f"engine must be one of {ENGINES}, got {engine!r}")
    if engine == "page":
        if camera is not None:
            raise ArgumentError("camera= is for engine='mujoco'; the page's camera is its own")
        return _page_frames(model, states, size, options, which)
    from jaxmor.viewer.frames import select_frames
    from jaxmor.viewer.offscreen import render
    from jaxmor.viewer.record import frame_durations
    from jaxmor.viewer.scene import ViewOptions

    images = render(model, states, size=size, camera=camera, frames=which, progress=progress, **options)
    opts = ViewOptions(**options)
    durations = frame_durations(select_frames(model, states, opts.world_axis, opts.stride, opts.max_frames), opts.speed)
    return list(images), np.concatenate([[0.0], np.cumsum(durations)[:-1]])


def _fitted(image: np.ndarray, size) -> np.ndarray:
    """The capture at exactly ``size``: cropped where the canvas came out a pixel larger, scaled where smaller."""
    width, height = size
    if image.shape[0] >= height and image.shape[1] >= width:
        return image[:height, :width]
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((width, height)))


def write_video(
    model: Model,
    states: State,
    path: str | os.PathLike,
    *,
    fps: float | None = None,
    size: tuple[int, int] = DEFAULT_SIZE,
    engine: str = "mujoco",
    camera: Camera | None = None,
    progress: bool | None = None,
    **options: Any,
) -> Path:
    """Write a trajectory as a video: a ``.gif`` (Pillow) or ``.mp4`` (imageio with imageio-ffmpeg), one video
    frame per recorded frame, drawn headless (module docstring).

    Args:
        model: the model, as for :func:`jaxmor.viewer.write_html`.
        states: the trajectory, as for :func:`jaxmor.viewer.write_html`.
        path: the file to write; its suffix chooses the format.
        fps: frames per second (default: real time, the frames' simulated time step divided by ``speed``,
            at most 50).
        size: ``(width, height)`` of the frames [px].
        engine: ``"mujoco"`` (MuJoCo's offscreen renderer, :func:`jaxmor.viewer.render`) or ``"page"`` (the
            page captured in headless Chromium).
        camera: a :class:`jaxmor.viewer.Camera` (``engine="mujoco"`` only; default: all worlds in view).
        progress: report the frames drawn on standard error (``engine="mujoco"``; default: above 50 frames).
        **options: as for :func:`jaxmor.viewer.write_html` (``stride``/``max_frames`` choose the frames).

    Returns:
        The path written.

    Raises:
        ArgumentError: an unknown suffix or engine, a bad ``fps``, ``size`` or ``camera``, MP4 without
            imageio-ffmpeg, MuJoCo or an OpenGL context missing (``"mujoco"``), Playwright or Chromium missing
            (``"page"``), or the errors of :func:`jaxmor.viewer.write_html`.
    """
    target = Path(path)
    kind = target.suffix.lower()
    if kind not in (".gif", ".mp4"):
        raise ArgumentError(f"a video is written as .gif or .mp4, got {str(path)!r}")
    if fps is not None and not (isinstance(fps, (int, float)) and 0 < fps <= 100):
        raise ArgumentError(f"fps must be a number in (0, 100], got {fps!r}")
    images, starts = _images(model, states, checked_size(size), options, None, engine, camera, progress)
    if fps is None:
        step = float(np.median(np.diff(starts))) if len(starts) > 1 else 0.05
        fps = min(50.0, 1.0 / step) if step > 0 else 20.0
    from jaxmor.io.files import writing

    with writing("jaxmor.viewer.write_video", "path", target):
        if kind == ".gif":
            _write_gif(images, target, fps)
        else:
            _write_mp4(images, target, fps)
    return target


def _write_gif(images: list[np.ndarray], target: Path, fps: float) -> None:
    from PIL import Image

    frames = [Image.fromarray(image) for image in images]
    duration = max(20, int(round(1000.0 / fps)))  # GIF delays are in 10 ms units; browsers slow down < 20 ms
    frames[0].save(target, save_all=True, append_images=frames[1:], duration=duration, loop=0, optimize=False)


def _write_mp4(images: list[np.ndarray], target: Path, fps: float) -> None:
    try:
        import imageio.v2 as imageio

        writer = imageio.get_writer(target, fps=fps, macro_block_size=1)
    except (ImportError, ValueError, RuntimeError) as exc:
        raise ArgumentError(
            f"MP4 needs imageio with its ffmpeg plugin: pip install 'imageio[ffmpeg]' ({exc})"
        ) from None
    with writer:
        for image in images:
            writer.append_data(image)


def write_image(
    model: Model,
    states: State,
    path: str | os.PathLike,
    *,
    frame: int = -1,
    size: tuple[int, int] = DEFAULT_SIZE,
    engine: str = "mujoco",
    camera: Camera | None = None,
    **options: Any,
) -> Path:
    """Write one frame of a trajectory (default the last; a single State works too) as a PNG still, drawn
    headless (module docstring).

    Args:
        model: the model, as for :func:`jaxmor.viewer.write_html`.
        states: the trajectory or one State, as for :func:`jaxmor.viewer.write_html`.
        path: the ``.png`` to write.
        frame: which recorded frame (an index, negative from the end).
        size: ``(width, height)`` [px].
        engine: as for :func:`write_video`.
        camera: as for :func:`write_video`.
        **options: as for :func:`jaxmor.viewer.write_html`.

    Returns:
        The path written.

    Raises:
        ArgumentError: a frame out of range, a bad size, engine or camera, the renderer's or browser's needs
            missing (:func:`write_video`), or the errors of :func:`jaxmor.viewer.write_html`.
    """
    from PIL import Image

    from jaxmor.io.files import writing
    from jaxmor.viewer.frames import select_frames
    from jaxmor.viewer.scene import ViewOptions

    opts = ViewOptions(**options)
    count = len(select_frames(model, states, opts.world_axis, opts.stride, opts.max_frames).steps)
    if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)) or not -count <= frame < count:
        raise ArgumentError(f"frame must be an int index into the {count} recorded frames, got {frame!r}")
    images, _ = _images(model, states, checked_size(size), options, [int(frame) % count], engine, camera)
    target = Path(path)
    with writing("jaxmor.viewer.write_image", "path", target):
        Image.fromarray(images[0]).save(target, format="PNG")
    return target
