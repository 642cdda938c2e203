"""Mass and inertia of mesh geoms (MJCF ``<mesh inertia>``), and ``jaxmor.tools.compare``'s mesh geoms.

References, all independent of the code under test: MuJoCo's compiler (``body_mass``, ``body_ipos``, and
``body_inertia`` turned back into the full tensor in the body frame by ``body_iquat``), closed forms (a box
mesh's inertia is a box's, solid or shell), and trimesh's mass properties (its own integrals of a closed mesh
and of its convex hull).

Meshes, written here: an off-centre box, a tetrahedron, the hull of 40 random points, and a non-convex "C"
prism (whose faces are not all seen from its face centroid, so that MuJoCo's default ``legacy`` rule
overcounts it). Vertices are float32 numbers (MuJoCo stores float32 vertices; jaxmor rounds them so too).

Tolerances: 1e-12 relative for masses, centres of mass and principal moments (the same sums in float64:
measured 2e-15 at most). The full tensors against MuJoCo's agree to 1e-7 relative only: MuJoCo's principal
axes come from a Jacobi iteration that stops at an off-diagonal of 1e-12 (absolute, on the unit-density
tensors of 1e-6 to 1e-3) or a rotation of 1.4e-6 rad (measured: 2e-8 relative at most, with principal moments
equal to 4e-15); against the closed forms and trimesh they agree to 1e-12.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from reference import _package_file

import jaxmor
from jaxmor import ModelError
from jaxmor.io.mjcf import parse_mjcf
from jaxmor.io.mjcf_geometry import euler, quat_to_rotation

mujoco = pytest.importorskip("mujoco")
trimesh = pytest.importorskip("trimesh")
pytest.importorskip("scipy")

RULES = ("legacy", "convex", "exact", "shell")
HALF = np.array([0.125, 0.0625, 0.25])  # the box mesh's half sizes [m]
BOX_CENTRE = np.array([0.125, -0.25, 0.0625])  # float32 numbers, as every vertex below


def _oriented_hull(points: np.ndarray) -> np.ndarray:
    """The convex hull's triangles (vertex indices), each ordered so that its normal points out."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    faces = hull.simplices.copy()
    t = points[faces]
    inward = np.einsum("ij,ij->i", np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), hull.equations[:, :3]) < 0
    faces[inward] = faces[inward][:, [0, 2, 1]]
    return faces


def _c_prism() -> tuple[np.ndarray, np.ndarray]:
    """A "C" (a 0.375 m square with a 0.25 x 0.125 m notch) extruded 0.125 m, triangles facing out."""
    outline = [(0, 0), (3, 0), (3, 1), (1, 1), (1, 2), (3, 2), (3, 3), (0, 3)]
    cap = [(0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 7), (4, 5, 6), (4, 6, 7)]
    n = len(outline)
    vertices = np.array([(0.125 * x, 0.125 * y, z) for z in (0.0, 0.125) for x, y in outline])
    faces = [(a, c, b) for a, b, c in cap] + [(a + n, b + n, c + n) for a, b, c in cap]
    for i in range(n):
        j = (i + 1) % n
        faces += [(i, j, j + n), (i, j + n, i + n)]
    return vertices, np.array(faces)


def _write_obj(path, vertices, faces) -> None:
    rows = ["v " + " ".join(f"{x:.9g}" for x in v) for v in np.asarray(vertices, np.float32)]
    path.write_text("\n".join(rows + ["f " + " ".join(str(i + 1) for i in f) for f in faces]) + "\n")


def _write_stl(path, vertices, faces) -> None:
    """A binary STL: 80-byte header, the triangle count, then normal, 3 vertices and a spare word each."""
    records = np.zeros(len(faces), dtype=[("normal", "<f4", 3), ("vertices", "<f4", (3, 3)), ("spare", "<u2")])
    records["vertices"] = np.asarray(vertices, np.float32)[faces]
    path.write_bytes(b"\0" * 80 + np.uint32(len(faces)).tobytes() + records.tobytes())


@pytest.fixture(scope="module")
def meshes(tmp_path_factory):
    """The folder holding the meshes, and their ``(vertices, faces)`` by name."""
    folder = tmp_path_factory.mktemp("meshes")
    box = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * HALF + BOX_CENTRE
    tet = np.array([[0, 0, 0], [0.3, 0, 0], [0, 0.2, 0], [0.05, 0.05, 0.4]]) + 0.02  # rounded as MuJoCo does
    rng = np.random.default_rng(0)
    cloud = (rng.normal(size=(40, 3)) * [0.1, 0.05, 0.2] + [0.03, 0.01, -0.02]).astype(np.float32).astype(float)
    shapes = {name: (p, _oriented_hull(p)) for name, p in (("box", box), ("tet", tet), ("cloud", cloud))}
    shapes["c"] = _c_prism()
    for name, (vertices, faces) in shapes.items():
        _write_obj(folder / f"{name}.obj", vertices, faces)
    _write_stl(folder / "c.stl", *shapes["c"])
    return folder, shapes


def _scene(assets: str, bodies: str) -> str:
    return f'<mujoco><compiler angle="radian"/><asset>{assets}</asset><worldbody>{bodies}</worldbody></mujoco>'


def _mujoco(text: str, folder):
    return mujoco.MjModel.from_xml_string(text.replace('file="', f'file="{folder}/'))


def _mujoco_tensor(m, body: int) -> np.ndarray:
    rotation = quat_to_rotation(m.body_iquat[body])
    return rotation @ np.diag(m.body_inertia[body]) @ rotation.T


#: One body per (mesh, rule), each on a hinge (so that none is merged), plus bodies for scale, mass, density,
#: an STL file and a mesh beside a primitive.
BODY = '<body name="{name}" pos="{x} 0 0"><joint axis="0 1 0"/>{geoms}</body>'
POSE = 'pos="0.01 0.02 -0.03" euler="0.3 -0.2 1.1"'
EXTRA = {
    "mirrored_exact": ('scale="1 -2 0.5" inertia="exact"', "c.obj", ""),
    "mirrored_convex": ('scale="-1.5 2 0.5" inertia="convex"', "cloud.obj", ""),
    "mass_given": ('inertia="convex"', "cloud.obj", 'mass="3"'),
    "shell_mass_given": ('inertia="shell"', "c.obj", 'mass="2"'),
    "density_given": ("", "box.obj", 'density="500"'),
    "stl_default": ("", "c.stl", ""),
}


@pytest.fixture(scope="module")
def both(meshes):
    """A model of every case, compiled by jaxmor (its description) and by MuJoCo."""
    folder, shapes = meshes
    assets, bodies = [], []
    for mesh in shapes:
        for rule in RULES:
            assets.append(f'<mesh name="{mesh}_{rule}" file="{mesh}.obj" inertia="{rule}"/>')
            geom = f'<geom type="mesh" mesh="{mesh}_{rule}" {POSE}/>'
            bodies.append(BODY.format(name=f"{mesh}_{rule}", x=len(bodies), geoms=geom))
    for name, (attrs, file, geom_attrs) in EXTRA.items():
        assets.append(f'<mesh name="{name}" file="{file}" {attrs}/>')
        geoms = f'<geom type="mesh" mesh="{name}" {geom_attrs} {POSE}/>'
        if name == "density_given":
            geoms += '<geom size="0.1" pos="0.3 0 0"/>'
        bodies.append(BODY.format(name=name, x=len(bodies), geoms=geoms))
    text = _scene("".join(assets), "".join(bodies))
    return parse_mjcf(text, assets_dir=folder), _mujoco(text, folder)


def test_mesh_masses_equal_mujocos(both):
    """Every rule on every mesh, and scale, mass, density, STL and a primitive beside a mesh."""
    description, m = both
    links = {link.name: link for link in description.links}
    worst = 0.0
    for body in range(1, m.nbody):
        name = m.body(body).name
        inertial = links[name].inertial
        tensor = _mujoco_tensor(m, body)
        assert inertial.mass == pytest.approx(m.body_mass[body], rel=1e-12), name
        np.testing.assert_allclose(inertial.com, m.body_ipos[body], atol=1e-12 * np.abs(m.body_ipos[body]).max())
        moments = np.linalg.eigvalsh(inertial.inertia)
        np.testing.assert_allclose(moments, np.sort(m.body_inertia[body]), rtol=1e-12, err_msg=name)
        worst = max(worst, np.abs(inertial.inertia - tensor).max() / np.abs(tensor).max())
    assert worst < 1e-7  # MuJoCo's principal axes (module docstring)


def test_box_mesh_is_a_box(both):
    """The box mesh under every rule against a box's closed forms: solid, and a shell of six plates (a plate
    of mass ``m`` normal to ``x`` at distance ``a``: ``m (b^2 + c^2) / 3`` about ``x``, ``m (a^2 + c^2 / 3)``
    about ``y``)."""
    description, _ = both
    links = {link.name: link for link in description.links}
    rotation = euler([0.3, -0.2, 1.1], "xyz")
    a, b, c = HALF
    solid = 1000.0 * 8 * a * b * c
    plates = 1000.0 * 4 * np.array([b * c, a * c, a * b])  # the mass of each plate normal to x, y, z
    shell = np.array(
        [
            plates[0] * (b * b + c * c) / 3 + plates[1] * (b * b + c * c / 3) + plates[2] * (c * c + b * b / 3),
            plates[1] * (a * a + c * c) / 3 + plates[0] * (a * a + c * c / 3) + plates[2] * (c * c + a * a / 3),
            plates[2] * (a * a + b * b) / 3 + plates[0] * (a * a + b * b / 3) + plates[1] * (b * b + a * a / 3),
        ]
    )
    expected = {rule: (solid, solid / 3 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])) for rule in RULES}
    expected["shell"] = (2 * plates.sum(), 2 * shell)
    for rule, (mass, moments) in expected.items():
        inertial = links[f"box_{rule}"].inertial
        assert inertial.mass == pytest.approx(mass, rel=1e-12), rule
        np.testing.assert_allclose(inertial.com, rotation @ BOX_CENTRE + [0.01, 0.02, -0.03], atol=1e-15)
        np.testing.assert_allclose(inertial.inertia, rotation @ np.diag(moments) @ rotation.T, atol=1e-12 * mass)


def test_non_convex_mesh_by_rule(both, meshes):
    """The "C": ``exact`` is the closed mesh's own integrals, ``convex`` its hull's (trimesh's, independent);
    ``legacy`` overcounts it (MuJoCo's, checked above)."""
    description, _ = both
    _, shapes = meshes
    links = {link.name: link for link in description.links}
    rotation = euler([0.3, -0.2, 1.1], "xyz")
    solid = trimesh.Trimesh(*shapes["c"], process=False)
    assert solid.is_watertight and solid.is_winding_consistent
    for rule, mesh in (("exact", solid), ("convex", solid.convex_hull)):
        props = mesh.mass_properties
        inertial = links[f"c_{rule}"].inertial
        assert inertial.mass == pytest.approx(1000.0 * props.volume, rel=1e-12), rule
        np.testing.assert_allclose(inertial.com, rotation @ props.center_mass + [0.01, 0.02, -0.03], atol=1e-15)
        expected = 1000.0 * rotation @ props.inertia @ rotation.T
        np.testing.assert_allclose(inertial.inertia, expected, atol=1e-12 * np.abs(expected).max())
    assert links["c_legacy"].inertial.mass > 1.2 * links["c_exact"].inertial.mass


@pytest.mark.parametrize(
    ("case", "mesh_attrs", "geom_attrs", "message"),
    [
        ("misoriented", 'inertia="exact"', "", "not consistently oriented"),
        ("maxhullvert", 'inertia="convex" maxhullvert="5"', "", "maxhullvert with inertia='convex'"),
        ("shellinertia", "", 'shellinertia="true"', "inertia='shell'"),
        ("unknown rule", 'inertia="volume"', "", "inertia of <mesh> must be one of legacy, convex, exact, shell"),
    ],
)
def test_refused_mesh_inertias_name_the_file_and_line(meshes, case, mesh_attrs, geom_attrs, message):
    folder, shapes = meshes
    vertices, faces = shapes["c"]
    flipped = faces.copy()
    flipped[0] = flipped[0][[0, 2, 1]]
    _write_obj(folder / "flipped.obj", vertices, flipped)
    file = "flipped.obj" if case == "misoriented" else "c.obj"
    text = _scene(
        f'\n<mesh name="m" file="{file}" {mesh_attrs}/>\n',
        f'<body name="b"><freejoint/><geom type="mesh" mesh="m" {geom_attrs}/></body>',
    )
    with pytest.raises(ModelError, match=message) as info:
        jaxmor.load_mjcf(text, assets_dir=folder)
    assert info.value.line == (3 if case == "shellinertia" else 2), str(info.value)
    if case in ("misoriented", "shellinertia"):
        with pytest.raises(ValueError):  # MuJoCo refuses them too
            _mujoco(text, folder)


def test_jaco_arm_masses_equal_mujocos():
    """dm_control's Kinova Jaco arm: links whose only mass is their mesh's (``mass=`` given, MuJoCo's default
    ``legacy`` rule) and rings of zero mass. ``meshes="ignore"`` leaves the hulls out of the collisions, not
    the meshes' masses. (Its mass matrix and bias equal MuJoCo's to 1e-12 relative: measured with
    ``compare.dynamics``.)"""
    path = _package_file("dm_control", "third_party", "kinova", "jaco_arm.xml")
    if path is None:
        pytest.skip("dm_control is not installed (a package of the test extra)")
    m = mujoco.MjModel.from_xml_path(str(path))
    links = {link.name: link for link in parse_mjcf(path, meshes="ignore").links}
    for body in range(1, m.nbody):
        inertial = links[m.body(body).name].inertial
        assert inertial.mass == pytest.approx(m.body_mass[body], rel=1e-12)
        np.testing.assert_allclose(inertial.com, m.body_ipos[body], atol=1e-14)
        np.testing.assert_allclose(np.linalg.eigvalsh(inertial.inertia), np.sort(m.body_inertia[body]), rtol=1e-12)
        tensor = _mujoco_tensor(m, body)
        np.testing.assert_allclose(inertial.inertia, tensor, atol=1e-7 * np.abs(tensor).max())


def test_compare_matches_mesh_geoms_by_their_vertices(meshes):
    """A mesh geom's frame differs between the engines (MuJoCo's is at the mesh's centre of mass, on its
    principal axes) but its vertices do not: ``compare`` reports each mesh geom's world bounding box, equal to
    the one computed here from the file's vertices and the body's pose."""
    from jaxmor.tools import compare

    folder, shapes = meshes
    text = _scene(
        '<mesh name="c" file="c.obj"/><mesh name="cloud" file="cloud.obj" scale="1 2 1"/>',
        '<body name="b" pos="0.1 0.2 0.3"><freejoint/><geom type="mesh" mesh="c" pos="0.05 0 0" euler="0.3 0.2 0.1"/>'
        '<body name="child" pos="0.2 0 0"><joint axis="0 1 0"/><geom type="mesh" mesh="cloud" euler="1 0.5 0"/>'
        '<geom size="0.05" pos="0.1 0 0"/></body></body>',
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(text, assets_dir=folder)
    m = _mujoco(text, folder)
    pair = compare.Pair(model, m)
    rng = np.random.default_rng(2)
    quat = rng.normal(size=4)
    qpos = np.r_[0.1, 0.2, 0.3, quat / np.linalg.norm(quat), 0.7]
    report = compare.dynamics(pair, qpos, rng.normal(size=m.nv))
    assert report["mesh_bounds"].max_abs < 1e-7 and report["geom_position"].max_abs < 1e-7
    # By hand: the "C" geom's vertices in the world.
    in_body = np.array([0.05, 0, 0]) + shapes["c"][0] @ euler([0.3, 0.2, 0.1], "xyz").T
    world = qpos[:3] + in_body @ quat_to_rotation(qpos[3:7]).T
    np.testing.assert_allclose(report["mesh_bounds"].mujoco[0], [world.min(axis=0), world.max(axis=0)], atol=1e-7)
    # The frames differ by centimetres: MuJoCo's geom_xpos is not the box's centre.
    data = mujoco.MjData(m)
    data.qpos[:] = qpos
    mujoco.mj_forward(m, data)
    assert np.abs(data.geom_xpos[:2] - report["geom_position"].mujoco[:2]).max() > 0.01
    assert report["mass_matrix"].max_abs < 1e-9 * report["mass_matrix"].scale


def test_an_edited_mesh_file_is_read_again(tmp_path):
    """The mesh caches key a file by its modification time and size: rewriting the box 2.5 times as long in x
    multiplies its mass by 2.5 (1,000 kg/m^3: 0.001 m^3, then 0.0025 m^3)."""
    cube = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float) * 0.1
    text = _scene(
        '<mesh name="m" file="m.obj"/>', '<body><joint axis="0 1 0"/><geom type="mesh" mesh="m" density="1000"/></body>'
    )
    masses = []
    for stretch in (1.0, 2.5):
        _write_obj(tmp_path / "m.obj", cube * [stretch, 1.0, 1.0], _oriented_hull(cube))
        masses.append(parse_mjcf(text, assets_dir=tmp_path).links[-1].inertial.mass)
    np.testing.assert_allclose(masses, [1.0, 2.5], rtol=1e-6)
