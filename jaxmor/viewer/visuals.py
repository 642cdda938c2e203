"""Visual geometry: the shapes the description file draws its links with, read again from the file.

A :class:`~jaxmor.Model` keeps only what it simulates, so the viewer reads the robot file once more with the same
reader (:func:`jaxmor.io.urdf.parse_urdf` or :func:`jaxmor.io.mjcf.parse_mjcf`, collision meshes ignored), which
keeps each link's visuals (:class:`jaxmor.io.description.Visual`), and matches its links to the model's by name.
Mesh files (STL, OBJ, DAE, ...) are read with trimesh, which viser installs; MuJoCo's ``.msh`` files by jaxmor's own
reader.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

import numpy as np

from jaxmor.errors import ArgumentError, ModelError
from jaxmor.io.description import Visual
from jaxmor.io.mesh import read_mesh
from jaxmor.types import Model
from jaxmor.viewer import shapes
from jaxmor.viewer.parts import VISUAL_COLOUR, Part, _safe

#: The most triangles of one drawn visual mesh; larger ones are thinned (every k-th triangle kept).
MAX_TRIANGLES = 60_000


def robot_file(model: Model, robot: str | os.PathLike | None) -> Path | None:
    """The description file to read the visuals from: ``robot``, else ``model.source`` when it is a file."""
    if robot is not None:
        path = Path(robot)
        if not path.is_file():
            raise ArgumentError(f"robot={str(robot)!r} is not a file")
        return path
    path = Path(model.source)
    return path if model.source != "<string>" and path.is_file() else None


def read_visuals(path: Path, package_dirs=()) -> dict[str, list[Visual]]:
    """Each link's visuals in the description file at ``path`` (``.xml``: MJCF, else URDF), by link name."""
    from jaxmor.io.mjcf import parse_mjcf
    from jaxmor.io.urdf import parse_urdf

    parse = parse_mjcf if path.suffix.lower() == ".xml" else parse_urdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        description = parse(path, meshes="ignore", package_dirs=tuple(str(d) for d in package_dirs))
    return {link.name: link.visuals for link in description.links if link.visuals}


@functools.lru_cache(maxsize=256)
def load_mesh(path: str) -> shapes.Mesh | None:
    """The triangles of a mesh file, ``None`` when trimesh cannot read it (cached by path)."""
    import trimesh

    if path.lower().endswith(".msh"):  # MuJoCo's own format, which trimesh does not read
        try:
            vertices, faces = read_mesh(Path(path), path, None)
        except ModelError:
            return None
    else:
        try:
            mesh = trimesh.load(path, force="mesh", process=False)
        except Exception:  # trimesh raises many kinds for files it cannot read; such a visual is left out
            return None
        vertices, faces = getattr(mesh, "vertices", ()), getattr(mesh, "faces", ())
    if len(faces) == 0:
        return None
    faces = np.asarray(faces)
    if len(faces) > MAX_TRIANGLES:
        faces = faces[:: -(-len(faces) // MAX_TRIANGLES)]
    return np.asarray(vertices, np.float32), np.asarray(faces, np.uint32)


def visual_mesh(visual: Visual) -> shapes.Mesh | None:
    """The triangles of a visual in its own frame (a mesh scaled), ``None`` for a mesh that cannot be read."""
    size = np.asarray(visual.size, float)
    if visual.kind == "mesh":
        loaded = load_mesh(visual.mesh) if visual.mesh else None
        return None if loaded is None else (loaded[0] * np.asarray(visual.scale, np.float32), loaded[1])
    if visual.kind == "box":
        return shapes.box(size)
    if visual.kind == "sphere":
        return shapes.sphere(size[0])
    if visual.kind == "ellipsoid":
        return shapes.ellipsoid(size)
    if visual.kind == "cylinder":
        return shapes.cylinder(size[0], size[1])
    return shapes.capsule(size[0], size[1])


def visual_parts(model: Model, path: Path, package_dirs=()) -> list[Part]:
    """A part for each visual of a link the model has (matched by name), fixed on that link."""
    parts = []
    link_index = {name: k for k, name in enumerate(model.link_names)}
    for link, visuals in read_visuals(path, package_dirs).items():
        if link not in link_index:
            continue
        for k, visual in enumerate(visuals):
            mesh = visual_mesh(visual)
            if mesh is None:
                continue
            rgba = visual.rgba or (*(c / 255 for c in VISUAL_COLOUR), 1.0)
            colour = tuple(int(round(255 * c)) for c in rgba[:3])
            name = f"visual/{_safe(link)}_{k}"
            parts.append(
                Part(name, *mesh, colour, float(rgba[3]), -1, link_index[link], visual.rotation, visual.translation)
            )
    return parts
