"""The mass properties of a mesh geom as MuJoCo's compiler infers them (``<mesh inertia=...>``).

A body without ``<inertial>`` gets its mass from its geoms (``inertiafromgeom``); a mesh geom's share follows
the rule its mesh asset names in ``inertia``, computed from the mesh file's vertices (rounded to float32, as
MuJoCo stores them, then scaled) and triangles:

* ``"legacy"`` (MuJoCo's default): the mesh's own triangles as pyramids from the area-weighted centroid of
  its faces, each counted positive; the centre of mass is theirs; the inertia and the volume are then those
  of the triangles' pyramids from that centre, again each counted positive. Exact for a convex mesh, it
  overcounts a non-convex one whose faces are not all seen from inside.
* ``"convex"``: the same integrals, with signs, over the convex hull of all the vertices: the hull's exact
  volume, centroid and inertia.
* ``"exact"``: the same integrals, with signs, over the mesh's own triangles: exact for a closed mesh whose
  triangles are consistently oriented (refused otherwise, as MuJoCo refuses it).
* ``"shell"``: the mass on the surface, ``density`` a surface density [kg/m^2]: the triangles' area, their
  area-weighted centroid and their second moments.

Each tetrahedron (a triangle ``a b c`` and the apex at the origin) of signed volume ``V`` adds
``V / 20 (s s^T + a a^T + b b^T + c c^T)`` to the second moments ``P = int x x^T dV`` (``s = a + b + c``); a
triangle of area ``A`` adds ``A / 12`` of the same sum to a shell's. The inertia is ``tr(P) 1 - P``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxmor.errors import ModelError
from jaxmor.io.mesh import file_key, read_mesh

#: The rules of ``<mesh inertia>``, MuJoCo's default first.
RULES = ("legacy", "convex", "exact", "shell")
#: Below this a triangle's doubled area (a cross product's norm) or a measure counts as zero (MuJoCo's
#: ``mjMINVAL``).
MIN_VALUE = 1e-15


@dataclass(frozen=True)
class MeshMass:
    """A mesh's mass properties per unit density, in its geom's frame.

    Attributes:
        measure: its volume [m^3], or its area [m^2] for the ``"shell"`` rule.
        centre: (3,) its centre of mass [m].
        inertia: (3, 3) its inertia about ``centre`` per unit density [m^5, or m^4 for a shell].
    """

    measure: float
    centre: np.ndarray
    inertia: np.ndarray


def mesh_mass(path: Path, scale, rule: str, source: str, line: int | None) -> MeshMass:
    """The mass properties of the mesh file ``path`` scaled by ``scale`` (3,) under ``rule`` (:data:`RULES`).

    Raises:
        ModelError: the file cannot be read, the rule cannot be applied (``"exact"`` on a mesh whose triangles
            are not consistently oriented or enclose no volume; a volume or area of zero), or the inertia is
            not physical (a moment not positive, or the triangle inequality broken); the message names the
            description's file and line.
    """
    read_mesh(path, source, line)  # raises for a file that cannot be read (cached: read once)
    try:
        return _mass(file_key(path), tuple(float(s) for s in scale), rule)
    except ValueError as err:
        raise ModelError(source, line, f"mesh {str(path)!r} (inertia={rule!r}): {err}") from None


@functools.lru_cache(maxsize=64)
def _mass(key: tuple[str, int, int], scale: tuple[float, float, float], rule: str) -> MeshMass:
    vertices, faces = read_mesh(Path(key[0]), key[0], None)
    points = vertices.astype(np.float32).astype(np.float64) * np.asarray(scale)
    if np.prod(scale) < 0:  # a mirroring scale turns the triangles inside out: MuJoCo reverses them
        faces = faces[:, [0, 2, 1]]
    mesh = points[faces] if len(faces) else _hull_triangles(points)  # a file of points: MuJoCo takes their hull
    if rule == "exact":
        _check_orientation(faces)
    triangles = _hull_triangles(points) if rule == "convex" else mesh
    face_centre = _area_centroid(mesh)
    if rule == "shell":
        centre = face_centre
    else:
        volumes = _pyramids(triangles - face_centre, rule == "legacy")
        total = volumes.sum()
        if total < MIN_VALUE:
            what = "negative (misoriented triangles)" if total < 0 else "zero (try inertia='shell')"
            raise ValueError(f"the mesh's volume is {what}")
        centres = triangles.mean(axis=1) * 0.75 + face_centre * 0.25
        centre = volumes @ centres / total
    measure, inertia = _second_moments(triangles - centre, rule)
    _check_inertia(inertia)
    return MeshMass(float(measure), centre, inertia)


def _pyramids(triangles: np.ndarray, absolute: bool) -> np.ndarray:
    """(n,) signed volumes of the tetrahedra from the origin to each triangle (n, 3, 3), or their sizes."""
    volumes = np.einsum("ij,ij->i", np.cross(triangles[:, 1], triangles[:, 2]), triangles[:, 0]) / 6.0
    return np.abs(volumes) if absolute else volumes


def _areas(triangles: np.ndarray) -> np.ndarray:
    doubled = np.linalg.norm(np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0]), axis=1)
    return np.where(doubled < MIN_VALUE, 0.0, doubled / 2.0)


def _area_centroid(triangles: np.ndarray) -> np.ndarray:
    areas = _areas(triangles)
    if areas.sum() < MIN_VALUE:
        raise ValueError("the mesh's surface area is zero")
    return areas @ triangles.mean(axis=1) / areas.sum()


def _second_moments(triangles: np.ndarray, rule: str) -> tuple[float, np.ndarray]:
    """``(measure, inertia (3, 3))`` of triangles (n, 3, 3) about the origin: pyramids to the origin (signed,
    or each positive for ``"legacy"``), or the surface for ``"shell"``."""
    if rule == "shell":
        weights, divisor = _areas(triangles), 12.0
    else:
        weights, divisor = _pyramids(triangles, rule == "legacy"), 20.0
    s = triangles.sum(axis=1)
    products = np.einsum("ni,nj->nij", s, s) + np.einsum("nvi,nvj->nij", triangles, triangles)
    moments = np.einsum("n,nij->ij", weights, products) / divisor
    return weights.sum(), np.trace(moments) * np.eye(3) - moments


def _hull_triangles(points: np.ndarray) -> np.ndarray:
    """The convex hull's triangles (n, 3, 3), each ordered so that its normal points out."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points)
    except (QhullError, ValueError) as err:
        raise ValueError(f"the convex hull has no volume (points fewer than 4 or in a plane): {err}") from None
    triangles = points[hull.simplices]
    normals = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    inward = np.einsum("ij,ij->i", normals, hull.equations[:, :3]) < 0
    triangles[inward] = triangles[inward][:, [0, 2, 1]]
    return triangles


def _check_orientation(faces: np.ndarray) -> None:
    """Consistently oriented triangles use each directed edge at most once."""
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    unique, counts = np.unique(edges, axis=0, return_counts=True)
    if np.any(counts > 1):
        a, b = unique[np.argmax(counts > 1)]
        raise ValueError(
            f"the triangles are not consistently oriented (the edge from vertex {a + 1} to {b + 1} is used "
            "twice in the same direction); inertia='exact' needs a closed, consistently oriented mesh"
        )


def _check_inertia(inertia: np.ndarray) -> None:
    """MuJoCo's checks: positive principal moments that satisfy the triangle inequality (to its tolerance)."""
    moments = np.linalg.eigvalsh(inertia)
    if moments[0] <= 0:
        raise ValueError(f"a principal moment of the mesh's inertia is not positive: {moments.tolist()}")
    if moments[0] + moments[1] < moments[2] * (1.0 - 1e-6) - 1e-9:
        raise ValueError(f"the mesh's principal moments break the triangle inequality: {moments.tolist()}")
