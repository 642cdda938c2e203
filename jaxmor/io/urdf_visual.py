"""A URDF link's ``<visual>`` elements, read for :mod:`jaxmor.viewer` (never simulated).

Reading is lenient: a visual that cannot be read (an unknown shape, a malformed number, a mesh file not found) is
left out rather than refused, so that a robot's looks never keep it from loading. Colours come from the visual's
``<material>``: its own ``<color rgba>``, or that of the robot-level ``<material>`` of the same name.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from jaxmor.errors import ModelError
from jaxmor.io.description import Visual
from jaxmor.io.xml import parse_float, parse_vector

#: ``origin(element, source, owner) -> (rotation, translation)``: the reader's ``<origin>`` parser.
OriginReader = Callable[[object, str, str], tuple[np.ndarray, np.ndarray]]
#: ``resolve(uri, line) -> path``: the reader's mesh resolver (raises ModelError for a file not found).
MeshResolver = Callable[[str, int], object]


def robot_materials(root, source: str) -> dict[str, tuple[float, float, float, float]]:
    """The colours of the robot-level ``<material name><color rgba/></material>`` elements, by name."""
    found = {}
    for el in root.findall("material"):
        rgba = _rgba(el, source)
        if el.get("name") and rgba is not None:
            found[el.get("name")] = rgba
    return found


def _rgba(material, source: str) -> tuple[float, float, float, float] | None:
    color = None if material is None else material.find("color")
    if color is None or color.get("rgba") is None:
        return None
    try:
        return tuple(float(np.clip(c, 0.0, 1.0)) for c in parse_vector(color.get("rgba"), 4, source, color, "rgba"))
    except ModelError:
        return None


def _shape(shape, source: str, owner: str) -> tuple[str, np.ndarray, np.ndarray]:
    """``(kind, size, scale)`` of a ``<geometry>`` child; raises ModelError for what cannot be read."""
    if shape.tag == "box":
        return "box", np.array(parse_vector(shape.get("size"), 3, source, shape, f"{owner} box size")) / 2.0, np.ones(3)
    if shape.tag == "sphere":
        radius = parse_float(shape.get("radius"), source, shape, f"{owner} radius")
        return "sphere", np.array([radius, 0.0, 0.0]), np.ones(3)
    if shape.tag in ("cylinder", "capsule"):
        r = parse_float(shape.get("radius"), source, shape, f"{owner} radius")
        length = parse_float(shape.get("length"), source, shape, f"{owner} length")
        return shape.tag, np.array([r, length / 2.0, 0.0]), np.ones(3)
    if shape.tag == "mesh" and shape.get("filename"):
        scale = parse_vector(shape.get("scale"), 3, source, shape, f"{owner} scale", default=(1.0, 1.0, 1.0))
        return "mesh", np.zeros(3), np.array(scale)
    raise ModelError(source, shape.sourceline, f"{owner}: no drawable geometry")


def parse_visuals(link_el, name: str, source: str, origin: OriginReader, resolve: MeshResolver, materials) -> list:
    """The :class:`~jaxmor.io.description.Visual` of each readable ``<visual>`` of a link, in document order.

    Args:
        link_el: the ``<link>`` element.
        name: the link's name (for messages that are never raised).
        source: the description's source.
        origin: the reader's ``<origin>`` parser.
        resolve: the reader's mesh resolver.
        materials: :func:`robot_materials` of the description.
    """
    visuals = []
    for element in link_el.findall("visual"):
        geometry = element.find("geometry")
        if geometry is None or len(geometry) != 1:
            continue
        shape = geometry[0]
        try:
            rotation, translation = origin(element, source, f"link '{name}' visual")
            kind, size, scale = _shape(shape, source, f"link '{name}' visual")
            mesh = str(resolve(shape.get("filename"), shape.sourceline)) if kind == "mesh" else ""
        except ModelError:
            continue
        material = element.find("material")
        rgba = _rgba(material, source)
        if rgba is None and material is not None:
            rgba = materials.get(material.get("name"))
        visuals.append(Visual(kind, size, rotation, translation, mesh=mesh, scale=scale, rgba=rgba))
    return visuals
