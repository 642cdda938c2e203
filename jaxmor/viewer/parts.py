"""What the viewer draws of a model: one :class:`Part` per shape, each fixed on a body, a link or the world.

Collision geometry comes from the :class:`~jaxmor.Model` (``geom_type``, ``geom_size``, the geom poses in their
bodies' frames, the convex hulls of mesh geoms), the ground plane from ``Model.ground``/``ground_height`` and the
height field from ``Model.height_field``. Visual geometry (URDF ``<visual>``, MJCF geoms of groups 0 to 2) is read
again from the description file (:mod:`jaxmor.viewer.visuals`), since the Model keeps only what is simulated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxmor.types import GeomType, Model
from jaxmor.viewer import shapes

#: Colours (RGB 0-255) of the collision geoms by type, of the ground and of visuals without a colour.
GEOM_COLOURS = {
    GeomType.SPHERE: (230, 120, 60),
    GeomType.CAPSULE: (80, 150, 230),
    GeomType.BOX: (120, 130, 150),
    GeomType.CYLINDER: (90, 190, 140),
    GeomType.MESH: (150, 150, 200),
    GeomType.ELLIPSOID: (200, 110, 170),
}
GROUND_COLOUR = (200, 200, 195)
HEIGHT_FIELD_COLOUR = (170, 150, 120)
VISUAL_COLOUR = (160, 165, 175)
#: Half width [m] and thickness [m] of the box that draws the ground plane around the worlds.
GROUND_MARGIN = 1.0
#: Radius [m], colour and the shortest drawn rod [m] of the skeleton (:func:`skeleton_parts`).
SKELETON_RADIUS = 0.012
SKELETON_COLOUR = (90, 90, 100)
SKELETON_MIN_LENGTH = 0.01
GROUND_THICKNESS = 0.01


@dataclass(frozen=True)
class Part:
    """One drawn shape.

    Attributes:
        name: a name unique in the scene (scene-tree path below each world).
        vertices: (n, 3) float32 vertices in the part's own frame [m].
        faces: (m, 3) uint32 triangles.
        colour: RGB, 0-255.
        opacity: 0 (invisible) to 1 (opaque).
        body: the body (index into ``Model.body_names``) the part moves with, ``-1`` when it is fixed in the world.
        link: the link (index into ``Model.link_names``) it moves with instead, ``-1`` when it follows ``body``.
        rotation: (3, 3) orientation of the part's frame in its body's (link's, the world's) frame.
        translation: (3,) origin of the part's frame there [m].
    """

    name: str
    vertices: np.ndarray
    faces: np.ndarray
    colour: tuple[int, int, int]
    opacity: float
    body: int
    link: int
    rotation: np.ndarray
    translation: np.ndarray


def geom_mesh(model: Model, g: int) -> shapes.Mesh:
    """The triangle mesh of collision geom ``g`` in its own frame."""
    kind, size = model.geom_type[g], np.asarray(model.geom_size[g], float)
    if kind == GeomType.SPHERE:
        return shapes.sphere(size[0])
    if kind == GeomType.CAPSULE:
        return shapes.capsule(size[0], size[1])
    if kind == GeomType.CYLINDER:
        return shapes.cylinder(size[0], size[1])
    if kind == GeomType.BOX:
        return shapes.box(size)
    if kind == GeomType.ELLIPSOID:
        return shapes.ellipsoid(size)
    m = model.geom_mesh[g]
    vertices = np.asarray(model.mesh_vertices[m], float)[: model.mesh_vertex_count[m]]
    return shapes.polyhedron(vertices, model.mesh_faces[m])


def collision_parts(model: Model) -> list[Part]:
    """A part for every collision geom: robot geoms move with their bodies, a mocap body's with its link, world geoms
    stay."""
    parts = []
    for g, name in enumerate(model.geom_names):
        vertices, faces = geom_mesh(model, g)
        rotation, translation = np.asarray(model.geom_rotation[g], float), np.asarray(model.geom_translation[g], float)
        link = model.geom_link[g] if model.geom_link[g] in model.mocap_links else -1
        if link >= 0:  # the geom's pose in its mocap body's frame (Model.link_*: the body's pose in the file)
            link_r = np.asarray(model.link_rotation[link], float)
            rotation, translation = (
                link_r.T @ rotation,
                link_r.T @ (translation - np.asarray(model.link_translation[link])),
            )
        colour = GEOM_COLOURS[model.geom_type[g]]
        parts.append(
            Part(
                f"geom/{g}_{_safe(name)}", vertices, faces, colour, 1.0, model.geom_body[g], link, rotation, translation
            )
        )
    return parts


def _rod(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(rotation, centre, half length)`` of a rod from ``start`` to ``end`` (its axis the local ``z``)."""
    axis = end - start
    length = float(np.linalg.norm(axis))
    z = axis / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z]), (start + end) / 2, length / 2


def skeleton_parts(model: Model) -> list[Part]:
    """Thin rods that show the kinematic tree where there are no visuals: from each body's origin to each child's
    joint origin and to the centre of each of its geoms (a foot sphere at the end of a shin)."""
    ends = [(p, np.asarray(model.body_tree_translation[b], float)) for b, p in enumerate(model.body_parent) if p >= 0]
    ends += [(b, np.asarray(model.geom_translation[g], float)) for g, b in enumerate(model.geom_body) if b >= 0]
    parts = []
    for k, (body, end) in enumerate(ends):
        if np.linalg.norm(end) < SKELETON_MIN_LENGTH:
            continue
        rotation, centre, half = _rod(np.zeros(3), end)
        vertices, faces = shapes.cylinder(SKELETON_RADIUS, half)
        parts.append(Part(f"skeleton/{k}", vertices, faces, SKELETON_COLOUR, 1.0, body, -1, rotation, centre))
    return parts


def ground_parts(model: Model, centre: np.ndarray, half: np.ndarray) -> list[Part]:
    """The ground plane (a thin box under the worlds: ``centre`` (2,) and ``half`` (2,) the middle and half sizes
    of the area they cover [m], :data:`GROUND_MARGIN` added) and the height field."""
    parts = []
    identity = np.eye(3)
    if model.ground:
        size = np.array([half[0] + GROUND_MARGIN, half[1] + GROUND_MARGIN, GROUND_THICKNESS / 2])
        top = float(np.asarray(model.ground_height))
        vertices, faces = shapes.box(size)
        centre = np.array([centre[0], centre[1], top - GROUND_THICKNESS / 2 - 1e-4])
        parts.append(Part("ground", vertices, faces, GROUND_COLOUR, 1.0, -1, -1, identity, centre))
    field = model.height_field
    if field is not None:
        heights = np.asarray(field.heights, float)
        heights = heights.reshape(-1, *heights.shape[-2:])[0]  # a batch of fields: the first world's
        origin, spacing = (np.asarray(x, float).reshape(-1, 2)[0] for x in (field.origin, field.spacing))
        vertices, faces = shapes.height_field(heights, origin, spacing)
        parts.append(Part("height_field", vertices, faces, HEIGHT_FIELD_COLOUR, 1.0, -1, -1, identity, np.zeros(3)))
    return parts


def _safe(name: str) -> str:
    """A name usable in a scene-tree path (no ``/``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
