"""The shapes an MJCF body is drawn with, read for :mod:`jaxmor.viewer` (never simulated).

A body's geom is drawn when its ``group`` is one MuJoCo's viewer shows by default (0, 1 or 2), whether it collides
or not: the Menagerie's robots put their meshes in group 2 (visual, ``contype = conaffinity = 0``) and their
collision shapes in group 3. Colours: the geom's ``rgba``, else its ``<material>``'s ``rgba``. A mesh whose file
cannot be found is left out.
"""

from __future__ import annotations

import numpy as np

from jaxmor.errors import ModelError
from jaxmor.io.description import Visual
from jaxmor.io.xml import tag

#: The geom groups MuJoCo's viewer shows by default.
VISIBLE_GROUPS = (0, 1, 2)
#: The geom types a visual may have.
DRAWN_KINDS = ("sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")


def material_colours(root) -> dict[str, tuple[float, float, float, float]]:
    """The ``rgba`` of each named ``<material>`` of the document (unreadable ones left out)."""
    found = {}
    for el in root.iter():
        if tag(el) == "material" and el.get("name") and el.get("rgba"):
            try:
                values = [float(x) for x in el.get("rgba").split()]
            except ValueError:
                continue
            if len(values) == 4:
                found[el.get("name")] = tuple(float(np.clip(x, 0.0, 1.0)) for x in values)
    return found


def read_visual(v, kind: str, size: np.ndarray, pose, mesh_path, materials) -> Visual | None:
    """The :class:`~jaxmor.io.description.Visual` of a body's geom, ``None`` when it is not drawn.

    Args:
        v: the geom's resolved attributes (:class:`jaxmor.io.mjcf_document.Values`).
        kind: its type; size: (3,) jaxmor's sizes; pose: ``(rotation, translation)`` in the body frame.
        mesh_path: ``() -> (path, scale)`` of a mesh geom's file (raises ModelError when it is not found).
        materials: :func:`material_colours` of the document.
    """
    if kind not in DRAWN_KINDS or v.integer("group", 0) not in VISIBLE_GROUPS:
        return None
    path, scale = "", np.ones(3)
    if kind == "mesh":
        try:
            path, scale = mesh_path()
        except ModelError:
            return None
    rgba = None
    if v.has("rgba"):
        try:
            rgba = tuple(float(np.clip(x, 0.0, 1.0)) for x in v.numbers("rgba", 4))
        except ModelError:
            rgba = None
    elif v.has("material"):
        rgba = materials.get(v.text("material"))
    if rgba is not None and rgba[3] <= 0.0:
        return None  # invisible
    rotation, translation = pose
    return Visual(kind, np.asarray(size, float), rotation, translation, mesh=str(path), scale=scale, rgba=rgba)
