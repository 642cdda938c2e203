"""Collision meshes: a URDF ``<mesh filename scale>`` becomes a convex hull with a bounded number of vertices.

What a mesh geom is in the simulation. The mesh file is read (STL, OBJ, PLY, OFF, GLB, and DAE
through ``pycollada``) through `trimesh <https://trimesh.org>`_, optional dependencies (``pip install
'jaxmor[mesh]'`` installs trimesh, scipy and pycollada), scaled by the URDF's ``scale`` (a negative
factor mirrors it), and replaced by its convex hull (qhull, through ``scipy``). A hull with more than
:data:`MAX_HULL_VERTICES` vertices (the loaders' ``max_hull_vertices``, an MJCF mesh's ``maxhullvert``) is
simplified: a large tetrahedron of its vertices is chosen first,
then, one at a time, the vertex farthest outside the hull of those chosen; the hull of the chosen ones
is the geom. It lies inside the original; how far the original's vertices stick out of it (its largest
deviation, :attr:`Hull.deviation`) is reported by :func:`convex_hull`: for the Unitree Go2's and
Solo12's collision meshes (example-robot-data), 0.4 to 1.9 mm with 64 vertices, under 1 mm for their
feet (``docs/design/meshes.md``).

A hull is kept as its vertices and its face planes, both in the geom's frame (the URDF ``<collision>``
origin): ``planes[k] = (n_k, d_k)`` with ``n_k`` the unit outward normal and ``n_k . x <= d_k`` inside.
Coplanar triangles of the hull share one plane, and each plane's face is kept as its vertices in order around it
(:attr:`Hull.faces`), with the hull's edges (:attr:`Hull.edges`): the separating-axis contacts clip faces and
test edge pairs (``docs/design/collision.md``). Vertices and planes are padded to fixed counts for the Model's arrays:
the vertices with the centroid of the hull's vertices, an interior point, which the contacts never choose
(``Model.mesh_vertex_count`` tells the real ones), the planes by repeating the first (which changes no
largest plane distance).

Where files are found (never the network): a ``package://PKG/path`` URI is looked up as ``DIR/PKG/path``
and ``DIR/path`` for every ``DIR`` of ``package_dirs``, then as ``A/path`` for every ancestor folder
``A`` of the description's folder (``resource_dir``) that is named ``PKG`` (how ROS installs a package:
``.../share/PKG/robots/x.urdf`` finds ``package://PKG/meshes/m.stl``), then as ``A/PKG/path`` for every
ancestor ``A``. A ``file://`` URI or a plain path is taken relative to ``resource_dir``.

Which files may be read (:mod:`jaxmor.io.files`): whatever the URI says (``..``, links, an absolute path), a
file is accepted only where it really lies (links resolved) in one of the model's folders: for a URDF the
description's folder and its parent folder (``PKG/urdf/x.urdf`` beside ``PKG/meshes/``), for an MJCF the
model's folder (the main file's, or ``assets_dir``), each with everything below it; in a ``package_dirs``
folder's tree; and, for ``package://PKG/...``, in the tree of an ancestor folder named ``PKG`` that holds a
``package.xml`` (a ROS package's manifest). A file outside them, a missing file and an unreadable one get
one and the same :class:`~jaxmor.errors.ModelError`, naming the description's file and line, the URI and
the places searched, and not telling them apart. A file larger than :data:`MAX_MESH_BYTES` (64 MiB) is
refused before it is read, with a ModelError naming the description's file and line. A missing ``trimesh``
is an error too; ``load_urdf(..., meshes="ignore")`` is the explicit fallback (the meshes are then kept by
name in ``Model.mesh_geoms`` and not simulated, and their files not read). :func:`jaxmor.export_package`
copies only files accepted by the same rule (textures and URDF visual meshes too).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxmor.errors import ArgumentError, ModelError
from jaxmor.io.files import confined_file, outside_hint, shortened

#: Most vertices of a simulated mesh hull by default; a hull with more is simplified (module docstring). The
#: loaders' ``max_hull_vertices`` (MJCF: a mesh's ``maxhullvert``) choose another bound.
MAX_HULL_VERTICES = 64
#: Most face planes of a hull of :data:`MAX_HULL_VERTICES` vertices (Euler: ``2 V - 4``).
MAX_HULL_PLANES = 2 * MAX_HULL_VERTICES - 4
#: Largest mesh (or other asset) file a description may name, in bytes; a larger one is refused before it is
#: read. example-robot-data's largest mesh file (the Go1's visual ``trunk.dae``) has 27 MiB.
MAX_MESH_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Hull:
    """A convex hull in its geom's frame.

    Attributes:
        vertices: (V, 3) its vertices [m], ``V <= MAX_HULL_VERTICES``.
        planes: (P, 4) its face planes ``(n, d)``: unit outward normal, ``n . x <= d`` inside [-, m].
        deviation: how far the mesh's own hull sticks out of this one [m] (0 unless simplified).
        faces: each plane's face: the indices of its vertices in order around it, one ring per plane.
        edges: the hull's edges as pairs of vertex indices ``(i, j)``, ``i < j``.
    """

    vertices: np.ndarray
    planes: np.ndarray
    deviation: float
    faces: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]


def _candidates(uri: str, resource_dir: str | None, package_dirs: Sequence[str | os.PathLike]) -> list[Path]:
    base = Path(resource_dir) if resource_dir is not None else Path.cwd()
    if uri.startswith("package://"):
        package, _, rest = uri[len("package://") :].partition("/")
        out = []
        for d in package_dirs:
            out += [Path(d) / package / rest, Path(d) / rest]
        ancestors = [base.resolve(), *base.resolve().parents]
        out += [a / rest for a in ancestors if a.name == package]
        out += [a / package / rest for a in ancestors]
        return list(dict.fromkeys(out))
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    path = Path(uri)
    return [path if path.is_absolute() else base / path]


#: The names of a folder that holds a robot's description beside its meshes (``robot/urdf/robot.urdf`` with
#: ``robot/meshes/``): only from such a folder (or one whose parent holds a ``package.xml``) does a URDF read files
#: in its parent's tree (``../meshes/...``).
DESCRIPTION_FOLDERS = frozenset({"urdf", "urdfs", "robot", "robots", "xacro", "model", "models", "description", "mjcf"})


#: The file suffixes a mesh may have (the formats trimesh reads, and MuJoCo's ``.msh``), any case: a description
#: naming another file as a mesh is refused before it is read or copied into a package.
MESH_SUFFIXES = frozenset({".stl", ".obj", ".dae", ".ply", ".off", ".glb", ".gltf", ".3mf", ".msh"})


def model_trees(base: Path) -> list[Path]:
    """The folders (with everything below them) a URDF in ``base`` reads its meshes from: ``base``, and its parent
    where ``base`` is a description folder (:data:`DESCRIPTION_FOLDERS`) or the parent a ROS package; never the
    parent of a file saved straight into a folder such as a home's ``Downloads`` (whose parent is the home)."""
    parent = base.parent
    if parent != base and (base.name.lower() in DESCRIPTION_FOLDERS or (parent / "package.xml").is_file()):
        return [base, parent]
    return [base]


def _package_roots(uri: str, resource_dir: str | None) -> list[Path]:
    """For ``package://PKG/...``: the ancestors of ``resource_dir`` named ``PKG`` that hold a ``package.xml``."""
    if not uri.startswith("package://") or resource_dir is None:
        return []
    package = uri[len("package://") :].partition("/")[0]
    base = Path(resource_dir).resolve()
    return [a for a in (base, *base.parents) if a.name == package and (a / "package.xml").is_file()]


def resolve_mesh(
    uri: str,
    resource_dir: str | None,
    package_dirs: Sequence[str | os.PathLike],
    source: str,
    line: int | None,
    *,
    trees: Sequence[str | os.PathLike] | None = None,
    kind: str = "mesh",
) -> Path:
    """The file a mesh URI names, if it may be read (module docstring: where files are found, which may be read).

    Args:
        uri: the file as the description writes it (plain path, ``file://`` or ``package://`` URI).
        resource_dir: the folder a relative path is taken from (``None``: the description has no folder, and only
            ``package_dirs`` are allowed).
        package_dirs: the search path's folders (their trees are allowed).
        source, line: the description and line naming the file (for messages).
        trees: the model's folders (with everything below them); default :func:`model_trees` of ``resource_dir``
            (a URDF's rule).
        kind: what the file is, in messages (``"mesh"``, ``"texture"``, ...).

    Returns:
        The resolved path of the file.

    Raises:
        ModelError: the file is not found, not readable or outside the allowed folders (one message for all
            three, listing the places searched), a mesh without a suffix of :data:`MESH_SUFFIXES`, or larger than
            :data:`MAX_MESH_BYTES`.
    """
    places = _candidates(uri, resource_dir, package_dirs)
    trees_given = trees
    if trees is None:
        trees = [] if resource_dir is None else model_trees(Path(resource_dir).resolve())
    allowed = [*trees, *package_dirs, *_package_roots(uri, resource_dir)]
    path = confined_file(places, allowed)
    if path is None:
        shown = "; ".join(shortened(p) for p in places[:8]) + ("; ..." if len(places) > 8 else "")
        hint = " (pass package_dirs=[...] to the loader)" if uri.startswith("package://") else ""
        if resource_dir is None:
            hint += " (a description given as text needs its folder: resource_dir, assets_dir for MJCF)"
        keyword = "package_dirs=[{folder!r}]" if trees_given is None else "assets_dir={folder!r}"
        outside = outside_hint(places, allowed, keyword)
        raise ModelError(
            source,
            line,
            f"{kind} file {shortened(uri)!r} not found or not readable in the allowed folders{hint}; searched: {shown} "
            f"(files are read only within the model's folders and package_dirs){outside}",
        )
    if kind == "mesh" and path.suffix.lower() not in MESH_SUFFIXES:
        raise ModelError(
            source,
            line,
            f"mesh file {shortened(uri)!r} is not a mesh format jaxmor reads ({', '.join(sorted(MESH_SUFFIXES))})",
        )
    size = path.stat().st_size
    if size > MAX_MESH_BYTES:
        raise ModelError(
            source, line, f"{kind} file {uri!r} has {size} bytes, more than the limit of {MAX_MESH_BYTES} bytes"
        )
    return path


def check_max_vertices(value, name: str = "max_hull_vertices") -> int:
    """``value`` as the most vertices of a simulated hull: an int ``>= 4`` (a tetrahedron).

    Raises:
        ArgumentError: anything else.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 4:
        raise ArgumentError(f"{name} must be an int >= 4 (a tetrahedron's vertices), got {value!r}")
    return int(value)


def convex_hull(
    path: Path, scale: Sequence[float], source: str, line: int | None, max_vertices: int = MAX_HULL_VERTICES
) -> Hull:
    """The simulated convex hull of a mesh file scaled by ``scale``, simplified to ``max_vertices`` vertices
    when it has more (module docstring).

    Raises:
        ModelError: ``trimesh`` or ``scipy`` is missing, the file cannot be read, or its hull is degenerate
            (fewer than 4 points not in a plane); the message names the description's file and line.
    """
    try:
        return _hull(file_key(path), tuple(float(s) for s in scale), max_vertices)
    except _HullError as err:
        raise ModelError(source, line, f"mesh {str(path)!r}: {err}") from None


class _HullError(Exception):
    pass


def file_key(path: Path) -> tuple[str, int, int]:
    """What the mesh caches key a file by: its path, modification time [ns] and size, so that an edited file is
    read again (a missing file gets ``-1, -1``, and the reader reports it)."""
    try:
        stat = Path(path).stat()
        return str(path), stat.st_mtime_ns, stat.st_size
    except OSError:
        return str(path), -1, -1


def read_mesh(path: Path, source: str, line: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (n, 3) [file units], faces (f, 3) vertex indices)`` of a mesh file as written (not scaled),
    read through ``trimesh``; both arrays are read-only (cached).

    Raises:
        ModelError: ``trimesh`` is missing or the file cannot be read; the message names the description's
            file and line.
    """
    try:
        return _read(file_key(path))
    except _HullError as err:
        raise ModelError(source, line, f"mesh {str(path)!r}: {err}") from None


@functools.lru_cache(maxsize=64)
def _read(key: tuple[str, int, int]) -> tuple[np.ndarray, np.ndarray]:
    path = key[0]
    if Path(path).suffix.lower() == ".msh":
        return _read_msh(Path(path))
    try:
        import trimesh
    except ImportError as err:
        raise _HullError(f"meshes need the optional dependency trimesh ({err}); pip install 'jaxmor[mesh]'") from None
    try:
        mesh = trimesh.load(path, force="mesh")
        vertices = np.array(mesh.vertices, dtype=np.float64)
        faces = np.array(mesh.faces, dtype=np.int64).reshape(-1, 3)
    except Exception as err:  # trimesh raises many types for unreadable files
        raise _HullError(f"cannot be read ({type(err).__name__}: {err})") from None
    vertices.flags.writeable = faces.flags.writeable = False
    return vertices, faces


#: Header of MuJoCo's binary ``.msh`` mesh: four little-endian int32 counts (vertices, normals, texture
#: coordinates, faces), then 3, 3 and 2 float32 per vertex, normal and coordinate and 3 int32 per face.
_MSH_HEADER = np.dtype("<i4")


def _read_msh(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A MuJoCo ``.msh`` file's vertices and faces (its normals and texture coordinates are not used); its size
    must be exactly what its header declares and every face index a vertex's, as MuJoCo requires."""
    data = path.read_bytes()  # at most MAX_MESH_BYTES: the caller checked the size
    if len(data) < 16:
        raise _HullError(f"is not a MuJoCo .msh file: {len(data)} bytes, shorter than its 16-byte header")
    nv, nn, nt, nf = (int(x) for x in np.frombuffer(data[:16], _MSH_HEADER))
    if min(nv, nn, nt, nf) < 0 or nv < 4 or nn not in (0, nv) or nt not in (0, nv):
        raise _HullError(
            f"has an invalid .msh header (vertices {nv}, normals {nn}, texture coordinates {nt}, faces {nf}): "
            "MuJoCo needs at least 4 vertices and as many normals and coordinates as vertices, or none"
        )
    expected = 16 + 12 * nv + 12 * nn + 8 * nt + 12 * nf
    if len(data) != expected:
        raise _HullError(f"has {len(data)} bytes where its .msh header declares {expected}")
    vertices = np.frombuffer(data, "<f4", 3 * nv, 16).astype(np.float64).reshape(nv, 3)
    faces = np.frombuffer(data, "<i4", 3 * nf, expected - 12 * nf).astype(np.int64).reshape(nf, 3)
    if not np.all(np.isfinite(vertices)):
        raise _HullError("has a non-finite vertex coordinate")
    if nf and (faces.min() < 0 or faces.max() >= nv):
        raise _HullError(f"has a face index outside its {nv} vertices")
    vertices.flags.writeable = faces.flags.writeable = False
    return vertices, faces


@functools.lru_cache(maxsize=256)
def _hull(key: tuple[str, int, int], scale: tuple[float, float, float], max_vertices: int) -> Hull:
    try:
        import trimesh  # noqa: F401
        from scipy.spatial import ConvexHull, QhullError
    except ImportError as err:
        raise _HullError(
            f"collision meshes need the optional dependencies trimesh and scipy ({err}); "
            "pip install 'jaxmor[mesh]', or load_urdf(..., meshes='ignore') to leave the meshes out"
        ) from None
    points = _read(key)[0] * np.asarray(scale)
    try:
        full = points[ConvexHull(points).vertices]
        chosen = full if len(full) <= max_vertices else _simplify(full, max_vertices, ConvexHull)
        hull = ConvexHull(chosen)
    except (QhullError, ValueError) as err:
        raise _HullError(f"has no volume (its points are fewer than 4 or lie in a plane): {err}") from None
    vertices = chosen[hull.vertices]
    planes = _unique_planes(hull.equations, np.ptp(vertices, axis=0).max())
    deviation = max(0.0, float(np.max(full @ planes[:, :3].T - planes[:, 3]))) if len(full) > len(vertices) else 0.0
    faces = _face_rings(vertices, planes)
    return Hull(vertices, planes, deviation, faces, _edges(faces))


#: Relative tolerance (of the hull's largest extent) of a vertex lying on a face plane.
ON_FACE = 1e-6


def _face_rings(vertices: np.ndarray, planes: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Each plane's vertices (those within :data:`ON_FACE` of it, at least the 3 nearest), ordered by their angle
    about the face's centre."""
    tol = ON_FACE * max(float(np.ptp(vertices, axis=0).max()), 1e-9)
    rings = []
    for plane in planes:
        gap = np.abs(vertices @ plane[:3] - plane[3])
        on = np.flatnonzero(gap <= tol)
        if len(on) < 3:
            on = np.argsort(gap)[:3]
        normal = plane[:3]
        u = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        w = np.cross(normal, u)
        rel = vertices[on] - vertices[on].mean(axis=0)
        order = np.argsort(np.arctan2(rel @ w, rel @ u))
        rings.append(tuple(int(i) for i in on[order]))
    return tuple(rings)


def _edges(faces: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, int], ...]:
    """The distinct sides of the face rings, ``(i, j)`` with ``i < j``, sorted."""
    sides = {tuple(sorted((ring[k], ring[(k + 1) % len(ring)]))) for ring in faces for k in range(len(ring))}
    return tuple(sorted(sides))


def _simplify(points: np.ndarray, count: int, convex_hull) -> np.ndarray:
    """``count`` of the hull vertices ``points``, chosen greedily: a large tetrahedron first (the point
    farthest from the centroid, the point farthest from it, the point farthest from their line, the point
    farthest from their plane), then, one at a time, the point farthest outside the hull of those chosen
    (which shrinks the largest deviation fastest)."""
    a = int(np.argmax(np.linalg.norm(points - points.mean(axis=0), axis=1)))
    b = int(np.argmax(np.linalg.norm(points - points[a], axis=1)))
    axis = (points[b] - points[a]) / np.linalg.norm(points[b] - points[a])
    rel = points - points[a]
    c = int(np.argmax(np.linalg.norm(rel - np.outer(rel @ axis, axis), axis=1)))
    normal = np.cross(axis, points[c] - points[a])
    d = int(np.argmax(np.abs(rel @ normal)))
    chosen = [a, b, c, d]
    while len(chosen) < count:
        eq = convex_hull(points[chosen]).equations
        outside = np.max(points @ eq[:, :3].T + eq[:, 3], axis=1)
        outside[chosen] = -np.inf
        chosen.append(int(np.argmax(outside)))
    return points[np.sort(chosen)]


def _unique_planes(equations: np.ndarray, size: float) -> np.ndarray:
    """qhull's facet equations ``n . x + c <= 0`` as planes ``(n, d = -c)``, coplanar facets merged."""
    planes = np.concatenate([equations[:, :3], -equations[:, 3:]], axis=1)
    keep: list[np.ndarray] = []
    for p in planes:
        if not any(np.abs(p[:3] - k[:3]).max() < 1e-7 and abs(p[3] - k[3]) < 1e-7 * max(size, 1e-3) for k in keep):
            keep.append(p)
    return np.array(keep)


def padded(hulls: Sequence[Hull]) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (n, V, 3), planes (n, P, 4))`` of ``n`` hulls, each padded with its vertices' centroid and its
    first plane (module docstring); ``V`` is :data:`MAX_HULL_VERTICES` or the largest hull's count if larger,
    ``P`` :data:`MAX_HULL_PLANES` or the most planes if more."""
    width = max([MAX_HULL_VERTICES] + [len(h.vertices) for h in hulls])
    depth = max([MAX_HULL_PLANES] + [len(h.planes) for h in hulls])
    vertices = np.zeros((len(hulls), width, 3))
    planes = np.zeros((len(hulls), depth, 4))
    for i, hull in enumerate(hulls):
        vertices[i] = hull.vertices.mean(axis=0)
        vertices[i, : len(hull.vertices)] = hull.vertices
        planes[i] = hull.planes[0]
        planes[i, : len(hull.planes)] = hull.planes
    return vertices, planes


def widened(vertices: np.ndarray, planes: np.ndarray, counts: Sequence[int], width: int, depth: int):
    """Padded hull arrays ``(n, V, 3)`` and ``(n, P, 4)`` (:func:`padded`) widened to ``width`` vertices and
    ``depth`` planes with the same padding (the centroid of each hull's ``counts`` real vertices, its first
    plane)."""
    if len(vertices) == 0:
        return np.zeros((0, width, 3)), np.zeros((0, depth, 4))
    out_v = np.repeat(np.stack([v[:c].mean(axis=0) for v, c in zip(vertices, counts, strict=True)])[:, None], width, 1)
    out_v[:, : vertices.shape[1]] = vertices
    out_p = np.repeat(planes[:, :1], depth, 1)
    out_p[:, : planes.shape[1]] = planes
    return out_v, out_p


def _icosphere() -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """The unit icosahedron subdivided once: 42 vertices on the unit sphere, 80 triangles (outward, any order)."""
    t = (1 + 5**0.5) / 2
    corners = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t)]
    corners += [(0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    vertices = [np.array(c, float) / np.linalg.norm(c) for c in corners]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2)]
    faces += [(10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5)]
    faces += [(2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    middle: dict[tuple[int, int], int] = {}

    def split(a: int, b: int) -> int:
        key = (min(a, b), max(a, b))
        if key not in middle:
            point = vertices[a] + vertices[b]
            vertices.append(point / np.linalg.norm(point))
            middle[key] = len(vertices) - 1
        return middle[key]

    finer = []
    for a, b, c in faces:
        ab, bc, ca = split(a, b), split(b, c), split(c, a)
        finer += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
    return np.array(vertices), finer


def ellipsoid_hull(radii: Sequence[float]) -> Hull:
    """The convex hull that stands for an ellipsoid of semi-axes ``radii`` [m] in geom pairs: a once-subdivided
    icosphere (42 vertices, 80 faces) scaled so that its vertices lie as far outside the ellipsoid (in its own
    metric) as its faces' middles lie inside (3.4% of the radii), then stretched by ``radii``. ``deviation`` is how
    far the ellipsoid sticks out of it [m]."""
    unit, triangles = _icosphere()
    inner = min(float(np.dot(_normal(unit, tri), unit[tri[0]])) for tri in triangles)
    vertices = unit * (2 / (1 + inner)) * np.asarray(radii, float)
    planes = []
    for tri in triangles:
        normal = _normal(vertices, tri)
        planes.append([*normal, float(normal @ vertices[tri[0]])])
    planes = np.array(planes)
    reach = np.linalg.norm(planes[:, :3] * np.asarray(radii, float), axis=1)  # the ellipsoid's support on each normal
    faces = _face_rings(vertices, planes)
    return Hull(vertices, planes, float(np.max(reach - planes[:, 3])), faces, _edges(faces))


def _normal(vertices: np.ndarray, triangle: tuple[int, int, int]) -> np.ndarray:
    """The outward unit normal of a triangle of a hull about the origin."""
    a, b, c = (vertices[i] for i in triangle)
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal)
    return normal if normal @ a > 0 else -normal
