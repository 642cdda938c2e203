"""Triangle meshes of the shapes jaxmor draws, in their own frame, as plain NumPy.

Every function returns ``(vertices, faces)``: (n, 3) float32 vertices [m] and (m, 3) uint32 triangles,
counter-clockwise seen from outside. Cylinders and capsules lie along their local ``z`` axis (jaxmor's and
MuJoCo's convention).
"""

from __future__ import annotations

import numpy as np

#: Segments around a round shape, and rings from pole to pole of a sphere.
SEGMENTS = 24
RINGS = 12

Mesh = tuple[np.ndarray, np.ndarray]


def _mesh(vertices, faces) -> Mesh:
    return np.asarray(vertices, np.float32), np.asarray(faces, np.uint32).reshape(-1, 3)


def box(half: np.ndarray) -> Mesh:
    """A box of half sizes ``half`` (3,) [m], centred at the origin."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * np.asarray(half)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return _mesh(corners, [(a, b, c, a, c, d) for a, b, c, d in quads])


def _grid_faces(rows: int, columns: int, wrap: bool) -> np.ndarray:
    """Two triangles per cell of a ``rows x columns`` vertex grid (row-major); ``wrap`` joins the last column
    to the first."""
    faces = []
    last = columns if wrap else columns - 1
    for i in range(rows - 1):
        for j in range(last):
            a, b = i * columns + j, i * columns + (j + 1) % columns
            c, d = a + columns, b + columns
            faces += [(a, b, d), (a, d, c)]
    return np.array(faces, np.int64).reshape(-1, 3)


def _lathe(profile: np.ndarray, segments: int = SEGMENTS) -> Mesh:
    """The surface swept by ``profile`` ((k, 2): radius, z; from bottom to top) about the ``z`` axis, closed by
    a centre vertex at each end."""
    angle = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    rows = [np.column_stack([r * ring, np.full(segments, z)]) for r, z in profile]
    vertices = np.concatenate([*rows, [[0.0, 0.0, profile[0, 1]], [0.0, 0.0, profile[-1, 1]]]])
    faces = _grid_faces(len(profile), segments, wrap=True)
    bottom, top, n = len(vertices) - 2, len(vertices) - 1, len(profile) * segments
    caps = [(bottom, (j + 1) % segments, j) for j in range(segments)]
    caps += [(top, n - segments + j, n - segments + (j + 1) % segments) for j in range(segments)]
    return _mesh(vertices, np.concatenate([faces, np.array(caps)]))


def cylinder(radius: float, half_length: float) -> Mesh:
    """A closed cylinder of ``radius`` and ``half_length`` [m] along ``z``."""
    return _lathe(np.array([[radius, -half_length], [radius, half_length]]))


def capsule(radius: float, half_length: float) -> Mesh:
    """A capsule: a cylinder of ``radius`` and ``half_length`` [m] along ``z`` with hemispherical ends."""
    polar = np.linspace(-np.pi / 2, np.pi / 2, RINGS + 1)[1:-1]
    lower, upper = polar[polar < 0], polar[polar >= 0]
    profile = [(radius * np.cos(a), radius * np.sin(a) - half_length) for a in lower]
    profile += [(radius, -half_length), (radius, half_length)]
    profile += [(radius * np.cos(a), radius * np.sin(a) + half_length) for a in upper if a > 0]
    vertices, faces = _lathe(np.array(profile))
    vertices[-2:, 2] = (-half_length - radius, half_length + radius)  # the poles
    return vertices, faces


def ellipsoid(radii: np.ndarray) -> Mesh:
    """An ellipsoid of ``radii`` (3,) [m] (a sphere: three equal radii)."""
    polar = np.linspace(-np.pi / 2, np.pi / 2, RINGS + 1)[1:-1]
    vertices, faces = _lathe(np.column_stack([np.cos(polar), np.sin(polar)]))
    vertices[-2:, 2] = (-1.0, 1.0)
    return vertices * np.asarray(radii, np.float32), faces


def sphere(radius: float) -> Mesh:
    """A sphere of ``radius`` [m]."""
    return ellipsoid(np.full(3, radius))


def polyhedron(vertices: np.ndarray, rings) -> Mesh:
    """A convex polyhedron from its vertices (n, 3) [m] and its faces as rings of vertex indices (each ring in
    order around its face), fanned into triangles."""
    faces = [(ring[0], ring[k], ring[k + 1]) for ring in rings for k in range(1, len(ring) - 1)]
    return _mesh(vertices, faces)


def height_field(heights: np.ndarray, origin: np.ndarray, spacing: np.ndarray) -> Mesh:
    """The surface of a height field: ``heights`` (ny, nx) [m] at ``x = origin[0] + j spacing[0]``,
    ``y = origin[1] + i spacing[1]`` (:class:`jaxmor.HeightField`), two triangles per cell."""
    ny, nx = heights.shape
    x = origin[0] + spacing[0] * np.arange(nx)
    y = origin[1] + spacing[1] * np.arange(ny)
    xx, yy = np.meshgrid(x, y)
    vertices = np.column_stack([xx.ravel(), yy.ravel(), np.asarray(heights, float).ravel()])
    return _mesh(vertices, _grid_faces(ny, nx, wrap=False))
