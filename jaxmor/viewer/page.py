"""Writing the trajectory page to a file and showing it inline in Jupyter."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from jaxmor.errors import ArgumentError
from jaxmor.io.files import writing
from jaxmor.types import Model, State
from jaxmor.viewer.scene import trajectory_html

#: Height of the inline view in a notebook [px].
INLINE_HEIGHT = 480


def write_html(model: Model, states: State, path: str | os.PathLike, **options: Any) -> Path:
    """Write a trajectory as ONE self-contained HTML page (viser's client and the recording inlined: it opens
    offline, from a file, in any browser with WebGL) that plays it in 3D: play/pause, a time slider to scrub,
    camera orbit (drag), zoom (wheel), pan (right drag); a label gives the simulated time, and one each world.

    Args:
        model: the model of the states (a randomized batch: pass ``model_axes=`` too).
        states: stacked States: (T, ...) from :func:`jaxmor.rollout`, (W, T, ...) from :func:`jaxmor.rollout_batch`
            (W worlds drawn side by side; ``world_axis=1`` for (T, W, ...)), or one State.
        path: the file to write (``.html``).
        **options: :class:`jaxmor.viewer.ViewOptions` fields: ``geometry``, ``robot``, ``package_dirs``,
            ``world_axis``, ``stride``, ``max_frames``, ``speed``, ``world_spacing``, ``contacts``, ``force_scale``,
            ``actuators``, ``model_axes``, ``dark_mode``.

    Returns:
        The path written.

    Raises:
        ArgumentError: bad states or options, viser missing (``pip install 'jaxmor[viewer]'``), or a path that
            cannot be written.
    """
    page = trajectory_html(model, states, **options)
    target = Path(path)
    with writing("jaxmor.viewer.write_html", "path", target):
        target.write_text(page, encoding="utf-8")
    return target


def show(model: Model, states: State, *, height: int = INLINE_HEIGHT, **options):
    """The trajectory page as an IPython display object (an ``<iframe srcdoc>``): the last expression of a
    Jupyter cell shows it inline. Arguments as :func:`write_html`; ``height`` in pixels.

    Raises:
        ArgumentError: as :func:`write_html`, or no IPython (outside Jupyter: use :func:`write_html`).
    """
    try:
        from IPython.display import HTML
    except ImportError:
        raise ArgumentError(
            "viewer.show draws the page inline in Jupyter and needs IPython; outside a notebook write the page "
            "with jaxmor.viewer.write_html(model, states, 'page.html')"
        ) from None

    page = trajectory_html(model, states, **options)
    frame = (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width: 100%; height: {int(height)}px; '
        'border: none"></iframe>'
    )
    return HTML(frame)
