"""Files a description names stay in the model's folders: meshes, textures and visual files are read and copied
by :func:`jaxmor.export_package` only from the model's folders and the search path, one error for a file that is
outside, missing or unreadable, a size cap on mesh files, and no export over the description's own folder.
"""

import re
import shutil
from pathlib import Path

import pytest

import jaxmor
from jaxmor.io import mesh as meshes

pytest.importorskip("trimesh")

CORNERS = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
CUBE = (
    "".join(f"v {x} {y} {z}\n" for x, y, z in CORNERS)
    + "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
)
INERTIA = '<inertia ixx="1e-2" iyy="1e-2" izz="1e-2" ixy="0" ixz="0" iyz="0"/>'


def urdf(visual: str, collision: str = "../meshes/cube.obj") -> str:
    """A one-link robot: one visual mesh on line 3, one collision mesh on line 4."""
    return f"""<robot name="r">
  <link name="body"><inertial><mass value="1"/>{INERTIA}</inertial>
    <visual><geometry><mesh filename="{visual}"/></geometry></visual>
    <collision><geometry><mesh filename="{collision}" scale=".1 .1 .1"/></geometry></collision>
  </link>
</robot>"""


@pytest.fixture
def tree(tmp_path) -> Path:
    """``model/urdf`` (descriptions), ``model/meshes/cube.obj``, and ``outside/`` with a valid mesh and a
    "secret" beside the model's folder."""
    (tmp_path / "model" / "urdf").mkdir(parents=True)
    (tmp_path / "model" / "meshes").mkdir()
    (tmp_path / "model" / "meshes" / "cube.obj").write_text(CUBE)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.obj").write_text(CUBE)
    (tmp_path / "outside" / "secret.png").write_bytes(b"\x89PNG private")
    return tmp_path


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def anonymous(err: jaxmor.ModelError, *names: str) -> str:
    """The message with the file names and the folders named in it replaced, to compare two messages."""
    text = str(err)
    for name in names:
        text = text.replace(name, "FILE")
    return text


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_a_urdf_visual_mesh_outside_the_model_refuses_the_export_and_leaks_nothing(tree, where):
    secret = tree / "outside" / "secret.obj"
    name = str(secret) if where == "absolute" else "../../outside/secret.obj"
    robot = tree / "model" / "urdf" / "robot.urdf"
    robot.write_text(urdf(name))
    model = jaxmor.load_urdf(robot)  # visual meshes are never read by the loader
    out = tree / "package"
    with pytest.raises(jaxmor.ModelError) as info:
        jaxmor.export_package(model, robot, out)
    assert str(info.value).startswith(f"{robot}:3: mesh file {name!r} not found or not readable in the allowed")
    assert not any("secret" in p for p in listing(out))
    # A visual mesh that does not exist gets the same message.
    robot.write_text(urdf(name.replace("secret", "nothing")))
    with pytest.raises(jaxmor.ModelError) as missing:
        jaxmor.export_package(model, robot, out)
    assert anonymous(missing.value, "nothing") == anonymous(info.value, "secret")


def test_a_urdf_saved_in_a_downloads_folder_reads_nothing_of_the_home(tmp_path):
    """A URDF saved straight into ``home/Downloads`` reads meshes only below ``Downloads``: its parent (the home) is
    no description package, so ``../.ssh/id_rsa`` and ``../notes.obj`` are refused like missing files, on loading and
    on export; a hidden folder below an allowed tree is refused too, and a file that is no mesh format."""
    home = tmp_path / "home"
    (home / "Downloads" / ".cache").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (home / "notes.obj").write_text(CUBE)
    (home / "Downloads" / ".cache" / "cube.obj").write_text(CUBE)
    (home / "Downloads" / "cube.obj").write_text(CUBE)
    (home / "Downloads" / "key").write_text("PRIVATE KEY")
    robot = home / "Downloads" / "robot.urdf"
    for name in ("../.ssh/id_rsa", "../notes.obj", ".cache/cube.obj"):
        robot.write_text(urdf(name, "cube.obj"))
        with pytest.raises(jaxmor.ModelError, match=r":3: mesh file .* not found or not readable"):
            jaxmor.export_package(jaxmor.load_urdf(robot), robot, tmp_path / "package")
        robot.write_text(urdf("cube.obj", name))
        with pytest.raises(jaxmor.ModelError, match=r":4: mesh file .* not found or not readable"):
            jaxmor.load_urdf(robot)
    robot.write_text(urdf("key", "cube.obj"))
    with pytest.raises(jaxmor.ModelError, match=r":3: mesh file 'key' is not a mesh format"):
        jaxmor.export_package(jaxmor.load_urdf(robot), robot, tmp_path / "package")
    assert "PRIVATE" not in "".join(p.read_text(errors="replace") for p in (tmp_path / "package").rglob("*.*"))
    robot.write_text(urdf("cube.obj", "cube.obj"))
    assert jaxmor.load_urdf(robot).ng == 1  # its own folder is read
    (home / "package.xml").write_text("<package/>")  # a ROS package's root: its tree is the model's
    robot.write_text(urdf("cube.obj", "../notes.obj"))
    assert jaxmor.load_urdf(robot).ng == 1


def test_a_urdf_collision_mesh_outside_is_refused_like_a_missing_one_and_a_link_does_not_help(tree):
    robot = tree / "model" / "urdf" / "robot.urdf"
    errors = {}
    for name in ("secret", "nothing"):
        robot.write_text(urdf("../meshes/cube.obj", f"../../outside/{name}.obj"))
        with pytest.raises(jaxmor.ModelError, match=rf"^{re.escape(str(robot))}:4: mesh file .*not found") as info:
            jaxmor.load_urdf(robot)
        errors[name] = anonymous(info.value, name)
    assert errors["secret"] == errors["nothing"]
    (tree / "model" / "meshes" / "link.obj").symlink_to(tree / "outside" / "secret.obj")
    robot.write_text(urdf("../meshes/cube.obj", "../meshes/link.obj"))
    with pytest.raises(jaxmor.ModelError, match=r":4: mesh file '../meshes/link.obj' not found or not readable"):
        jaxmor.load_urdf(robot)
    robot.write_text(urdf("../meshes/cube.obj", str(tree / "outside" / "secret.obj")))
    with pytest.raises(jaxmor.ModelError, match=r":4: mesh file .*secret.obj' not found or not readable"):
        jaxmor.load_urdf(robot)
    assert jaxmor.load_urdf(robot, package_dirs=[tree / "outside"]).ng == 1  # the search path allows it


def test_a_package_uri_reaches_an_ancestor_package_only_with_its_manifest(tree):
    deep = tree / "pkg" / "a" / "b" / "urdf"
    deep.mkdir(parents=True)
    (tree / "pkg" / "shared.obj").write_text(CUBE)
    robot = deep / "robot.urdf"
    robot.write_text(urdf("package://pkg/shared.obj", "package://pkg/shared.obj"))
    with pytest.raises(jaxmor.ModelError, match=r":4: mesh file 'package://pkg/shared.obj' not found or not"):
        jaxmor.load_urdf(robot)
    (tree / "pkg" / "package.xml").write_text("<package/>")
    assert jaxmor.load_urdf(robot).ng == 1


def mjcf(head: str, body: str = "") -> str:
    return (
        f"<mujoco>\n{head}\n<worldbody>\n"
        '<body name="b" pos="0 0 1"><freejoint/><inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>'
        f"{body}</body>\n</worldbody>\n</mujoco>"
    )


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_an_mjcf_texture_outside_the_model_refuses_the_export_and_leaks_nothing(tree, where):
    src = tree / "model"
    name = str(tree / "outside" / "secret.png") if where == "absolute" else "../outside/secret.png"
    scene = src / "scene.xml"
    scene.write_text(mjcf(f'<asset>\n<texture name="t" type="2d" file="{name}"/>\n</asset>'))
    model = jaxmor.load_mjcf(scene)  # textures are never read by the loader
    out = tree / "package"
    with pytest.raises(jaxmor.ModelError) as info:
        jaxmor.export_package(model, scene, out)
    assert str(info.value).startswith(f"{scene}:3: texture file {name!r} not found or not readable in the allowed")
    assert not any("secret" in p for p in listing(out))
    missing_name = name.replace("secret", "nothing")
    scene.write_text(mjcf(f'<asset>\n<texture name="t" type="2d" file="{missing_name}"/>\n</asset>'))
    with pytest.raises(jaxmor.ModelError) as missing:
        jaxmor.export_package(model, scene, out)
    assert anonymous(missing.value, "nothing") == anonymous(info.value, "secret")
    (src / "textures").mkdir()
    (src / "textures" / "wood.png").write_bytes(b"\x89PNG wood")
    inside = '<compiler texturedir="textures"/>\n<asset><texture name="t" type="2d" file="wood.png"/></asset>'
    scene.write_text(mjcf(inside))
    written = jaxmor.export_package(jaxmor.load_mjcf(scene), scene, out)
    assert (written.parent / "assets" / "wood.png").read_bytes() == b"\x89PNG wood"


@pytest.mark.parametrize("meshdir", ["../outside", "ABSOLUTE"])
def test_mjcf_collision_meshes_outside_the_model_are_refused_like_missing_ones(tree, meshdir):
    src = tree / "model"
    meshdir = str(tree / "outside") if meshdir == "ABSOLUTE" else meshdir
    scene = src / "scene.xml"
    errors = {}
    for name in ("secret", "nothing"):
        head = f'<compiler meshdir="{meshdir}"/>\n<asset>\n<mesh name="m" file="{name}.obj"/></asset>'
        scene.write_text(mjcf(head, '<geom type="mesh" mesh="m"/>'))
        with pytest.raises(jaxmor.ModelError, match=rf"^{re.escape(str(scene))}:4: mesh file '{name}.obj' not f"):
            jaxmor.load_mjcf(scene)
        with pytest.raises(jaxmor.ModelError) as info:
            jaxmor.load_mjcf(scene)
        errors[name] = anonymous(info.value, name)
    assert errors["secret"] == errors["nothing"]
    absolute = f'<asset>\n<mesh name="m" file="{tree / "outside" / "secret.obj"}"/></asset>'
    scene.write_text(mjcf(absolute, '<geom type="mesh" mesh="m"/>'))
    with pytest.raises(jaxmor.ModelError, match=r":3: mesh file .*secret.obj' not found or not readable"):
        jaxmor.load_mjcf(scene)


@pytest.mark.parametrize("kind", ["urdf", "mjcf"])
def test_export_into_the_descriptions_own_folder_is_refused_and_the_source_untouched(tree, kind):
    if kind == "urdf":
        robot = tree / "model" / "urdf" / "robot.urdf"
        robot.write_text(urdf("../meshes/cube.obj"))
        model = jaxmor.load_urdf(robot)
    else:
        robot = tree / "model" / "scene.xml"
        head = '<compiler meshdir="meshes"/>\n<asset><mesh name="m" file="cube.obj" scale=".1 .1 .1"/></asset>'
        robot.write_text(mjcf(head, '<geom type="mesh" mesh="m"/>'))
        model = jaxmor.load_mjcf(robot)
    before = snapshot(tree / "model")
    for out in (robot.parent, robot.parent / "." / ".." / robot.parent.name):
        with pytest.raises(jaxmor.ArgumentError, match="the description's own folder"):
            jaxmor.export_package(model, robot, out)
    assert snapshot(tree / "model") == before
    written = jaxmor.export_package(model, robot, tree / "package")  # another folder works
    assert written.is_file() and not any("secret" in p for p in listing(tree / "package"))


def test_an_export_that_would_overwrite_a_source_mesh_is_refused(tree):
    """The model's meshes folder as out_dir's "meshes": the copy would land on the file it copies."""
    robot = tree / "model" / "urdf" / "robot.urdf"
    robot.write_text(urdf("../meshes/cube.obj"))
    model = jaxmor.load_urdf(robot)
    before = snapshot(tree / "model")
    with pytest.raises(jaxmor.ArgumentError, match="would overwrite the source file"):
        jaxmor.export_package(model, robot, tree / "model")
    assert snapshot(tree / "model") == before


def test_a_mesh_file_over_the_size_cap_is_refused_before_it_is_read(tree, monkeypatch):
    robot = tree / "model" / "urdf" / "robot.urdf"
    robot.write_text(urdf("../meshes/cube.obj"))
    assert meshes.MAX_MESH_BYTES == 64 * 1024 * 1024
    size = (tree / "model" / "meshes" / "cube.obj").stat().st_size
    monkeypatch.setattr(meshes, "MAX_MESH_BYTES", size - 1)
    monkeypatch.setattr(meshes, "_read", None)  # reading it would fail differently
    with pytest.raises(jaxmor.ModelError, match=rf"^{re.escape(str(robot))}:4: mesh file .* more than the limit"):
        jaxmor.load_urdf(robot)
    scene = tree / "model" / "scene.xml"
    head = '<compiler meshdir="meshes"/>\n<asset><mesh name="m" file="cube.obj"/></asset>'
    scene.write_text(mjcf(head, '<geom type="mesh" mesh="m"/>'))
    with pytest.raises(jaxmor.ModelError, match=rf"^{re.escape(str(scene))}:3: mesh file 'cube.obj' has {size} b"):
        jaxmor.load_mjcf(scene)
    monkeypatch.undo()
    assert jaxmor.load_urdf(robot).ng == 1


def test_an_exported_package_holds_only_the_models_files(tree):
    robot = tree / "model" / "urdf" / "robot.urdf"
    robot.write_text(urdf("../meshes/cube.obj"))
    model = jaxmor.load_urdf(robot)
    written = jaxmor.export_package(model, robot, tree / "package")
    assert listing(tree / "package") == ["meshes", "meshes/cube.obj", "robot.urdf"]
    shutil.rmtree(tree / "model")
    assert jaxmor.load_urdf(written).ng == 1


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_a_file_outside_the_model_gets_the_one_argument_that_allows_it(tree):
    """A refused file name that points outside the model's folders ends its message with the loader argument that
    allows the folder it points into (MJCF: ``assets_dir``, URDF: ``package_dirs``), the same whether the file is
    there or not; with that argument the model loads. A path through a hidden folder gets no such hint."""
    outside = tree / "outside"
    scene = tree / "model" / "scene.xml"
    messages = {}
    for name in ("secret", "nothing"):
        scene.write_text(
            mjcf(
                '<compiler meshdir="../outside"/>\n<asset>\n<mesh name="m" file="' + name + '.obj"/></asset>',
                '<geom type="mesh" mesh="m"/>',
            )
        )
        with pytest.raises(jaxmor.ModelError) as info:
            jaxmor.load_mjcf(scene)
        messages[name] = anonymous(info.value, name)
        assert str(info.value).endswith(f"is outside them: to read it from there, pass assets_dir={str(outside)!r}")
    assert messages["secret"] == messages["nothing"]
    scene.write_text(
        mjcf(
            '<compiler meshdir="../outside"/>\n<asset>\n<mesh name="m" file="secret.obj"/></asset>',
            '<geom type="mesh" mesh="m"/>',
        )
    )
    assert jaxmor.load_mjcf(scene, assets_dir=outside).ng == 1
    (outside / "arm.xml").write_text('<mujocoinclude><geom size=".1"/></mujocoinclude>')
    scene.write_text(mjcf("", '<include file="../outside/arm.xml"/>'))
    with pytest.raises(jaxmor.ModelError, match=rf"pass assets_dir={re.escape(repr(str(outside)))}$"):
        jaxmor.load_mjcf(scene)
    assert jaxmor.load_mjcf(scene, assets_dir=outside).ng == 1
    robot = tree / "model" / "urdf" / "robot.urdf"
    robot.write_text(urdf("../meshes/cube.obj", "../../outside/secret.obj"))
    with pytest.raises(jaxmor.ModelError, match=rf"pass package_dirs=\[{re.escape(repr(str(outside)))}\]$"):
        jaxmor.load_urdf(robot)
    (tree / ".hidden").mkdir()
    robot.write_text(urdf("../meshes/cube.obj", "../../.hidden/cube.obj"))
    with pytest.raises(jaxmor.ModelError) as info:
        jaxmor.load_urdf(robot)
    assert "pass package_dirs" not in str(info.value)


def test_dm_controls_dog_v2_loads_with_the_folder_its_error_names():
    """dm_control's ``locomotion/walkers/assets/dog_v2/dog.xml`` reads its meshes from ``../../../../suite/dog_assets``,
    outside its folder: the error names that folder as the ``assets_dir`` to pass, and with it the dog loads with
    MuJoCo's total mass (the meshes' volumes give the masses; 1e-9, float64 sums of the same integrals)."""
    mujoco = pytest.importorskip("mujoco")
    from reference import _package_file

    path = _package_file("dm_control", "locomotion", "walkers", "assets", "dog_v2", "dog.xml")
    if path is None:
        pytest.skip("dm-control is not installed (the test extra)")
    with pytest.raises(jaxmor.ModelError, match=r"dog\.xml:\d+: mesh file 'BONEL_1\.stl'") as refused:
        jaxmor.load_mjcf(str(path), meshes="ignore")
    hint = re.search(r"pass assets_dir='([^']+)'$", str(refused.value)).group(1)
    assert Path(hint) == path.parents[4] / "suite" / "dog_assets"
    with pytest.warns(jaxmor.MujocoDifferenceWarning):
        model = jaxmor.load_mjcf(str(path), meshes="ignore", assets_dir=hint)
    m = mujoco.MjModel.from_xml_path(str(path))
    assert float(model.body_mass.sum()) == pytest.approx(float(m.body_mass.sum()), rel=1e-9)
