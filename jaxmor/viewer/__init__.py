"""Trajectory viewer: a jaxmor trajectory as an interactive 3D page (viser), inline in Jupyter or written as one
self-contained HTML file that opens offline; frames as arrays drawn offscreen by MuJoCo's renderer, and GIF/MP4
videos and PNG stills from them (or captured from the page in headless Chromium). Needs the optional ``viewer`` extra
(``video`` for frames, videos and stills); nothing here is imported by ``import jaxmor``. User guide:
``docs/viewer.md``; design: ``docs/design/viewer.md``.
"""

from jaxmor.viewer.capture import write_image, write_video
from jaxmor.viewer.live_view import LiveViewer, live
from jaxmor.viewer.offscreen import Camera, fit_camera, render
from jaxmor.viewer.page import show, write_html
from jaxmor.viewer.scene import GEOMETRIES, ViewOptions, trajectory_html
from jaxmor.viewer.trajectory import load_trajectory, save_trajectory

__all__ = [
    "Camera",
    "GEOMETRIES",
    "LiveViewer",
    "ViewOptions",
    "fit_camera",
    "live",
    "load_trajectory",
    "render",
    "save_trajectory",
    "show",
    "trajectory_html",
    "write_html",
    "write_image",
    "write_video",
]
