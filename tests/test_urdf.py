"""Loading URDF (jaxmor.io.urdf, jaxmor.io.xml) and the model queries of jaxmor.model.

Every error test writes its URDF, finds the expected line by searching the text it wrote for the
marker ``<!--@-->`` (never by asking the code), and checks that the message starts with
``source:line:`` and names the offending element. Each bad case runs twice: as a string (source
``"<string>"``) and as a file (source = the path as given).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from oracles import rot_z, rpy
from reference import missing_robot_reason, robot_urdf

import jaxmor
from jaxmor import ArgumentError, GeomType, JaxmorError, JointType, ModelError, load_urdf
from jaxmor.io import xml as jxml

DATA = Path(__file__).parent / "data" / "urdf"
MARK = "<!--@-->"

I = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>'  # noqa: E741
LIMIT = '<limit lower="-1" upper="1" effort="10" velocity="5"/>'


# --------------------------------------------------------------------------------------------------
# helpers


def robot(*lines: str, name: str = "r") -> str:
    """A URDF document: the XML declaration, ``<robot name=...>``, ``lines`` (one per line), ``</robot>``."""
    return "\n".join(['<?xml version="1.0"?>', f'<robot name="{name}">', *("  " + ln for ln in lines), "</robot>", ""])


def link(name: str, inner: str = I, mark: bool = False) -> str:
    return f'<link name="{name}">{inner}</link>' + (MARK if mark else "")


def joint(name: str, parent: str, child: str, kind: str = "revolute", inner: str = LIMIT, mark: bool = False) -> str:
    text = f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>{inner}</joint>'
    return text + (MARK if mark else "")


def expected_line(text: str) -> int:
    """1-based line of the marker; without a marker, the line on which the text ends (end of data)."""
    hits = [i + 1 for i, ln in enumerate(text.split("\n")) if MARK in ln]
    assert len(hits) <= 1, "a test text must hold at most one marker"
    return hits[0] if hits else text.count("\n") + 1


def check_error(err: ModelError, source: str, line: int, names) -> None:
    msg = str(err)
    assert msg.startswith(f"{source}:{line}: "), msg
    assert err.source == source
    assert err.line == line
    for name in names:
        assert name in msg, f"{name!r} not in {msg!r}"


def load_quietly(arg, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(arg, **kwargs)


def inertia_matrix(ixx, ixy, ixz, iyy, iyz, izz):
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]], dtype=float)


# --------------------------------------------------------------------------------------------------
# bad input corpus (urdfdom's bad_* assets re-created, plus the checks where jaxmor is stricter)


def case(case_id: str, text: str, *names: str):
    return pytest.param(text, names, id=case_id)


def one_joint(joint_inner: str = LIMIT, kind: str = "revolute", child_inner: str = I, mark: bool = True) -> str:
    """base -(j1)-> arm with the given joint type and content; the joint line carries the marker."""
    return robot(link("base"), link("arm", child_inner), joint("j1", "base", "arm", kind, joint_inner, mark=mark))


def joint_child_case(case_id: str, child: str, *names: str, kind: str = "revolute"):
    """Joint ``j1`` written over several lines; ``child`` (a sub-element) is on its own, marked line."""
    lines = [f"  {child}{MARK}"]
    if kind in ("revolute", "prismatic") and not child.startswith("<limit"):
        lines.insert(0, f"  {LIMIT}")
    text = robot(
        link("base"),
        link("arm"),
        f'<joint name="j1" type="{kind}">',
        '  <parent link="base"/><child link="arm"/>',
        *lines,
        "</joint>",
    )
    return case(case_id, text, *names)


def collision_case(case_id: str, shape: str, *names: str):
    """Link ``base`` with one collision whose shape is on its own, marked line."""
    text = robot(
        f'<link name="base">{I}',
        "  <collision><geometry>",
        f"    {shape}{MARK}",
        "  </geometry></collision>",
        "</link>",
    )
    return case(case_id, text, *names)


BAD = [
    # XML level
    case(
        "unclosed_tag",
        '<?xml version="1.0"?>\n<robot name="r">\n  <link name="a">\n</robot>' + MARK + "\n",
        "malformed XML",
        "link",
    ),
    case(
        "unclosed_at_end_of_data",
        '<?xml version="1.0"?>\n<robot name="r">\n  <link name="a"/>\n',
        "malformed XML",
        "robot",
    ),
    case(
        "broken_attribute",
        '<?xml version="1.0"?>\n<robot name="r">\n  <link name="a"\n</robot>' + MARK + "\n",
        "malformed XML",
    ),
    case(
        "root_not_robot",
        '<?xml version="1.0"?>\n<model name="r">' + MARK + '\n  <link name="a"/>\n</model>\n',
        "<model>",
        "<robot>",
    ),
    case(
        "robot_no_name", '<?xml version="1.0"?>\n<robot>' + MARK + '\n  <link name="a"/>\n</robot>\n', "<robot>", "name"
    ),
    case(
        "robot_empty_name",
        '<?xml version="1.0"?>\n<robot name="">' + MARK + '\n  <link name="a"/>\n</robot>\n',
        "<robot>",
        "name",
    ),
    case("no_links", '<?xml version="1.0"?>\n<robot name="r">' + MARK + "\n</robot>\n", "no links"),
    case(
        "no_links_only_joints",
        '<?xml version="1.0"?>\n<robot name="r">' + MARK + '\n  <material name="m"/>\n</robot>\n',
        "no links",
    ),
    # names and structure
    case("link_no_name", robot(link("a"), "<link>" + I + "</link>" + MARK), "<link>", "name"),
    case(
        "duplicate_link",
        robot(link("a"), link("b"), joint("j", "a", "b"), link("a", mark=True)),
        "duplicate link",
        "'a'",
    ),
    case(
        "duplicate_joint",
        robot(link("a"), link("b"), link("c"), joint("j", "a", "b"), joint("j", "b", "c", mark=True)),
        "duplicate joint",
        "'j'",
    ),
    case(
        "joint_no_name",
        robot(link("a"), link("b"), '<joint type="fixed"><parent link="a"/><child link="b"/></joint>' + MARK),
        "<joint>",
        "name",
    ),
    case(
        "joint_no_type",
        robot(link("a"), link("b"), '<joint name="j"><parent link="a"/><child link="b"/></joint>' + MARK),
        "joint 'j'",
        "type",
    ),
    case("unknown_joint_type", one_joint(kind="hinge"), "joint 'j1'", "hinge"),
    case("spherical_joint_type", one_joint(kind="spherical"), "joint 'j1'", "spherical"),
    case("planar_joint", one_joint(kind="planar"), "joint 'j1'", "planar"),
    case(
        "joint_unknown_parent",
        robot(
            link("a"),
            link("b"),
            '<joint name="j" type="fixed">',
            '  <parent link="ghost"/>' + MARK,
            '  <child link="b"/>',
            "</joint>",
        ),
        "joint 'j'",
        "parent",
        "'ghost'",
    ),
    case(
        "joint_unknown_child",
        robot(
            link("a"),
            link("b"),
            '<joint name="j" type="fixed">',
            '  <parent link="a"/>',
            '  <child link="ghost"/>' + MARK,
            "</joint>",
        ),
        "joint 'j'",
        "child",
        "'ghost'",
    ),
    case(
        "joint_no_parent",
        robot(link("a"), link("b"), '<joint name="j" type="fixed"><child link="b"/></joint>' + MARK),
        "joint 'j'",
        "<parent",
    ),
    case(
        "joint_child_without_link",
        robot(link("a"), link("b"), '<joint name="j" type="fixed"><parent link="a"/><child/></joint>' + MARK),
        "joint 'j'",
        "<child",
    ),
    case(
        "joint_to_itself",
        robot(link("a"), link("b"), joint("j0", "a", "b"), joint("j", "a", "a", mark=True)),
        "joint 'j'",
        "itself",
        "'a'",
    ),
    case(
        "two_parents",
        robot(link("a"), link("b"), link("c"), joint("ja", "a", "c"), joint("jb", "b", "c", mark=True)),
        "'c'",
        "two parents",
        "'ja'",
        "'jb'",
    ),
    case(
        "cycle_without_root",
        robot(link("a"), link("b"), joint("ab", "a", "b", mark=True), joint("ba", "b", "a")),
        "cycle",
        "'ab'",
    ),
    case(
        "cycle_beside_the_tree",
        robot(link("root"), link("a"), link("b"), joint("ba", "b", "a", mark=True), joint("ab", "a", "b")),
        "cycle",
        "'ba'",
    ),
    case("two_root_links", robot(link("a"), link("b", mark=True)), "root links", "'a'", "'b'"),
    case(
        "two_root_links_with_joints",
        robot(link("a"), link("b"), link("c", mark=True), link("d"), joint("j1", "a", "b"), joint("j2", "c", "d")),
        "root links",
        "'a'",
        "'c'",
    ),
    case(
        "world_not_root",
        robot(link("base"), link("world", ""), joint("j", "base", "world", "fixed", "", mark=True)),
        "'world'",
        "root",
    ),
    # inertials
    case(
        "negative_mass",
        robot(
            '<link name="a"><inertial>',
            '  <mass value="-1"/>' + MARK,
            '  <inertia ixx="0.1" iyy="0.1" izz="0.1"/>',
            "</inertial></link>",
        ),
        "link 'a'",
        "negative mass",
    ),
    case(
        "inertial_without_mass",
        robot('<link name="a"><inertial>' + MARK, '  <inertia ixx="0.1" iyy="0.1" izz="0.1"/>', "</inertial></link>"),
        "link 'a'",
        "<mass>",
    ),
    case(
        "inertia_negative_principal_moment",
        robot(
            '<link name="a"><inertial>',
            '  <mass value="1"/>',
            '  <inertia ixx="-0.1" iyy="1" izz="1"/>' + MARK,
            "</inertial></link>",
        ),
        "link 'a'",
        "not positive definite",
    ),
    case(
        "inertia_indefinite_off_diagonal",
        robot(
            '<link name="a"><inertial>',
            '  <mass value="1"/>',
            '  <inertia ixx="1" ixy="2" iyy="1" izz="1"/>' + MARK,
            "</inertial></link>",
        ),
        "link 'a'",
        "not positive definite",
    ),
    # numbers and vectors
    case(
        "nan_in_joint_origin_xyz",
        robot(
            link("a"),
            link("b"),
            '<joint name="j" type="fixed">',
            '  <origin xyz="0 nan 0"/>' + MARK,
            '  <parent link="a"/><child link="b"/>',
            "</joint>",
        ),
        "joint 'j'",
        "origin xyz",
        "not finite",
        "nan",
    ),
    case(
        "inf_in_joint_origin_rpy",
        robot(
            link("a"),
            link("b"),
            '<joint name="j" type="fixed">',
            '  <origin rpy="0 0 -inf"/>' + MARK,
            '  <parent link="a"/><child link="b"/>',
            "</joint>",
        ),
        "joint 'j'",
        "origin rpy",
        "not finite",
    ),
    case(
        "inf_in_inertial_origin",
        robot(
            '<link name="a"><inertial>', '  <origin xyz="inf 0 0"/>' + MARK, '  <mass value="1"/>', "</inertial></link>"
        ),
        "link 'a'",
        "origin xyz",
        "not finite",
    ),
    case(
        "nan_mass",
        robot('<link name="a"><inertial>', '  <mass value="nan"/>' + MARK, "</inertial></link>"),
        "link 'a'",
        "mass",
        "not finite",
    ),
    case(
        "inf_mass",
        robot('<link name="a"><inertial>', '  <mass value="inf"/>' + MARK, "</inertial></link>"),
        "link 'a'",
        "mass",
        "not finite",
    ),
    case(
        "overflowing_mass",
        robot('<link name="a"><inertial>', '  <mass value="1e999"/>' + MARK, "</inertial></link>"),
        "link 'a'",
        "mass",
        "not finite",
    ),
    case(
        "mass_not_a_number",
        robot('<link name="a"><inertial>', '  <mass value="heavy"/>' + MARK, "</inertial></link>"),
        "link 'a'",
        "mass",
        "heavy",
    ),
    case(
        "mass_with_underscore",
        robot('<link name="a"><inertial>', '  <mass value="1_0"/>' + MARK, "</inertial></link>"),
        "link 'a'",
        "mass",
        "1_0",
    ),
    case(
        "mass_without_value",
        robot('<link name="a"><inertial>', "  <mass/>" + MARK, "</inertial></link>"),
        "link 'a'",
        "mass",
        "missing",
    ),
    case(
        "nan_inertia",
        robot(
            '<link name="a"><inertial>',
            '  <mass value="1"/>',
            '  <inertia ixx="NaN" iyy="1" izz="1"/>' + MARK,
            "</inertial></link>",
        ),
        "link 'a'",
        "ixx",
        "not finite",
    ),
    joint_child_case("axis_with_word", '<axis xyz="1.0 foo 3.0"/>', "joint 'j1'", "axis", "foo"),
    joint_child_case("axis_with_two_points", '<axis xyz="1.0 2.10.110 3.0"/>', "joint 'j1'", "axis", "2.10.110"),
    joint_child_case("axis_too_few_numbers", '<axis xyz="1.0 2.0"/>', "joint 'j1'", "axis", "3 numbers", "got 2"),
    joint_child_case(
        "axis_too_many_numbers", '<axis xyz="1.0 2.0 3.0 4.0"/>', "joint 'j1'", "axis", "3 numbers", "got 4"
    ),
    joint_child_case("axis_without_xyz", "<axis/>", "joint 'j1'", "axis", "missing"),
    joint_child_case("origin_too_few_numbers", '<origin xyz="0 0"/>', "joint 'j1'", "origin xyz", "got 2"),
    joint_child_case("origin_rpy_too_many_numbers", '<origin rpy="0 0 0 0"/>', "joint 'j1'", "origin rpy", "got 4"),
    # limits and losses
    case("revolute_without_limit", one_joint(""), "revolute", "joint 'j1'", "<limit>"),
    case("prismatic_without_limit", one_joint("", kind="prismatic"), "prismatic", "joint 'j1'", "<limit>"),
    joint_child_case("limit_without_effort", '<limit lower="-1" upper="1" velocity="5"/>', "joint 'j1'", "effort"),
    joint_child_case("limit_without_velocity", '<limit lower="-1" upper="1" effort="5"/>', "joint 'j1'", "velocity"),
    joint_child_case(
        "prismatic_limit_without_effort",
        '<limit lower="-1" upper="1" velocity="5"/>',
        "joint 'j1'",
        "effort",
        kind="prismatic",
    ),
    joint_child_case(
        "limit_effort_not_a_number",
        '<limit lower="-1" upper="1" effort="lots" velocity="5"/>',
        "joint 'j1'",
        "effort",
        "lots",
    ),
    joint_child_case(
        "limit_velocity_not_a_number",
        '<limit lower="-1" upper="1" effort="1" velocity="fast"/>',
        "joint 'j1'",
        "velocity",
        "fast",
    ),
    joint_child_case(
        "limit_lower_nan", '<limit lower="nan" upper="1" effort="1" velocity="1"/>', "joint 'j1'", "lower", "not finite"
    ),
    joint_child_case(
        "lower_above_upper", '<limit lower="1" upper="-1" effort="1" velocity="1"/>', "joint 'j1'", "lower", "upper"
    ),
    joint_child_case(
        "prismatic_lower_above_upper",
        '<limit lower="0.5" upper="0.4" effort="1" velocity="1"/>',
        "joint 'j1'",
        "lower",
        "upper",
        kind="prismatic",
    ),
    joint_child_case(
        "negative_effort", '<limit lower="-1" upper="1" effort="-2" velocity="1"/>', "joint 'j1'", "effort", "negative"
    ),
    joint_child_case(
        "negative_velocity",
        '<limit lower="-1" upper="1" effort="2" velocity="-1"/>',
        "joint 'j1'",
        "velocity",
        "negative",
    ),
    joint_child_case(
        "continuous_negative_effort", '<limit effort="-2"/>', "joint 'j1'", "effort", "negative", kind="continuous"
    ),
    joint_child_case("negative_damping", '<dynamics damping="-0.1"/>', "joint 'j1'", "damping", "negative"),
    joint_child_case("negative_friction", '<dynamics friction="-0.1"/>', "joint 'j1'", "friction", "negative"),
    joint_child_case(
        "negative_rotor_inertia", '<dynamics rotor_inertia="-0.01"/>', "joint 'j1'", "rotor_inertia", "negative"
    ),
    joint_child_case("damping_not_finite", '<dynamics damping="inf"/>', "joint 'j1'", "damping", "not finite"),
    joint_child_case("zero_length_axis", '<axis xyz="0 0 0"/>', "joint 'j1'", "zero-length axis"),
    joint_child_case("tiny_axis", '<axis xyz="1e-12 0 0"/>', "joint 'j1'", "zero-length axis"),
    joint_child_case("prismatic_zero_axis", '<axis xyz="0 0 0"/>', "joint 'j1'", "zero-length axis", kind="prismatic"),
    # geometry
    collision_case("box_without_size", "<box/>", "link 'base'", "box size", "missing"),
    collision_case("box_size_two_numbers", '<box size="1 2"/>', "link 'base'", "box size", "got 2"),
    collision_case("box_negative_size", '<box size="1 -2 1"/>', "link 'base'", "negative", "box"),
    collision_case("sphere_without_radius", "<sphere/>", "link 'base'", "sphere radius", "missing"),
    collision_case("sphere_negative_radius", '<sphere radius="-1"/>', "link 'base'", "negative", "sphere"),
    collision_case("cylinder_without_radius", '<cylinder length="1"/>', "link 'base'", "cylinder radius"),
    collision_case("cylinder_without_length", '<cylinder radius="1"/>', "link 'base'", "cylinder length"),
    collision_case("capsule_without_length", '<capsule radius="1"/>', "link 'base'", "capsule length"),
    collision_case("mesh_without_filename", "<mesh/>", "link 'base'", "<mesh>", "filename"),
    collision_case("unknown_geometry", '<cone radius="1" length="1"/>', "link 'base'", "unknown geometry", "<cone>"),
    case(
        "collision_without_geometry",
        robot(f'<link name="base">{I}', "  <collision/>" + MARK, "</link>"),
        "link 'base'",
        "no geometry",
    ),
    case(
        "empty_geometry",
        robot(f'<link name="base">{I}', "  <collision>" + MARK + "<geometry/></collision>", "</link>"),
        "link 'base'",
        "no geometry",
    ),
    case(
        "two_shapes_in_geometry",
        robot(
            f'<link name="base">{I}',
            "  <collision>",
            '    <geometry><box size="1 1 1"/><sphere radius="1"/></geometry>' + MARK,
            "  </collision>",
            "</link>",
        ),
        "link 'base'",
        "more than one",
    ),
    case(
        "nan_in_collision_origin",
        robot(
            f'<link name="base">{I}',
            "  <collision>",
            '    <origin xyz="0 0 nan"/>' + MARK,
            '    <geometry><sphere radius="1"/></geometry>',
            "  </collision>",
            "</link>",
        ),
        "link 'base'",
        "collision origin xyz",
        "not finite",
    ),
    # floating joints
    case(
        "floating_not_from_world",
        robot(
            link("base"),
            link("a"),
            link("b"),
            joint("j1", "base", "a"),
            joint("free", "a", "b", "floating", "", mark=True),
        ),
        "joint 'free'",
        "floating",
        "'world'",
    ),
    case(
        "floating_from_world_with_offset",
        robot(
            link("world", ""),
            link("base"),
            joint("free", "world", "base", "floating", '<origin xyz="0 0 1"/>', mark=True),
        ),
        "joint 'free'",
        "origin",
    ),
]


def test_several_floating_joints_from_world_make_several_free_bodies():
    """Two floating joints from 'world' (a robot and an object): two free bodies, in document order after the
    bodies welded to 'world'; a new State starts with both at the origin, identity quaternions."""
    text = robot(
        link("world", ""),
        link("post"),
        link("a"),
        link("b"),
        joint("fa", "world", "a", "floating", ""),
        joint("weld", "world", "post", "fixed", ""),
        joint("fb", "world", "b", "floating", ""),
    )
    model = load_quietly(text)
    assert model.body_names == ("a", "b") and model.free_body == (0, 1)
    assert model.free_q == (0, 7) and model.free_u == (0, 6) and (model.nq, model.nv) == (14, 12)
    np.testing.assert_array_equal(np.asarray(model.q_default), [0, 0, 0, 1, 0, 0, 0] * 2)


def test_floating_base_true_frees_one_fixed_joint_only():
    text = robot(
        link("world", ""),
        link("a"),
        link("b"),
        joint("fa", "world", "a", "fixed", ""),
        joint("fb", "world", "b", "fixed", "", mark=True),
    )
    with pytest.raises(ModelError) as info:
        load_quietly(text, floating_base=True)
    check_error(info.value, "<string>", expected_line(text), ["joint 'fb'", "floating_base=True"])


@pytest.mark.parametrize("mode", ["string", "file"])
@pytest.mark.parametrize(("text", "names"), BAD)
def test_bad_urdf_is_refused_with_its_line(text, names, mode, tmp_path):
    line = expected_line(text)
    if mode == "string":
        arg, source = text, "<string>"
    else:
        path = tmp_path / "bad_robot.urdf"
        path.write_text(text)
        arg = source = str(path)
    with pytest.raises(ModelError) as info:
        load_quietly(arg, strict=True)  # strict: an indefinite inertia is refused, not repaired
    check_error(info.value, source, line, names)


@pytest.mark.parametrize(
    ("fixture", "names"),
    [
        ("bad_unclosed_tag.urdf", ("malformed XML", "link")),
        ("bad_negative_mass.urdf", ("link 'thigh'", "negative mass")),
        ("bad_two_parents.urdf", ("link 'foot'", "two parents", "'ankle'", "'heel'")),
        ("bad_limit_lower_above_upper.urdf", ("joint 'knee'", "lower", "upper")),
    ],
)
@pytest.mark.parametrize("as_path", [False, True], ids=["str", "Path"])
def test_bad_fixture_file_names_the_path(fixture, names, as_path):
    path = DATA / fixture
    text = path.read_text()
    with pytest.raises(ModelError) as info:
        load_urdf(path if as_path else str(path))
    check_error(info.value, str(path), expected_line(text), names)


def test_missing_file_names_the_path(tmp_path):
    path = tmp_path / "nowhere.urdf"
    with pytest.raises(ModelError) as info:
        load_urdf(path)
    assert str(info.value).startswith(f"{path}: ")
    assert "no such file" in str(info.value)


def test_model_error_is_a_jaxmor_error():
    with pytest.raises(JaxmorError):
        load_urdf("<robot/>")


# --------------------------------------------------------------------------------------------------
# untrusted input


def _all_names(model) -> list[str]:
    names = [model.name, *model.link_names, *model.joint_names, *model.body_names, *model.body_joint_name]
    names += [s for pair in model.mesh_geoms for s in pair]
    return names


@pytest.fixture
def secret(tmp_path):
    text = "TOP-SECRET-7f3a9c"
    path = tmp_path / "secret.txt"
    path.write_text(text)
    return path, text


def _xxe_documents(secret_path: Path, tmp_path: Path) -> dict[str, str]:
    uri = secret_path.as_uri()
    dtd = tmp_path / "evil.dtd"
    dtd.write_text(f'<!ENTITY x SYSTEM "{uri}">\n')
    body = '<robot name="{name}">\n  <link name="{link}">{content}</link>\n</robot>\n'
    decl = f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "{uri}">]>\n'
    param = f'<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY % p SYSTEM "{dtd.as_uri()}"> %p;]>\n'
    external = f'<?xml version="1.0"?>\n<!DOCTYPE robot SYSTEM "{dtd.as_uri()}">\n'
    return {
        "entity_in_robot_name": decl + body.format(name="&x;", link="a", content=""),
        "entity_in_link_name": decl + body.format(name="r", link="&x;", content=""),
        "entity_in_text": decl + body.format(name="r", link="a", content="&x;"),
        "parameter_entity_in_robot_name": param + body.format(name="&x;", link="a", content=""),
        "parameter_entity_in_text": param + body.format(name="r", link="a", content="&x;"),
        "external_dtd_in_robot_name": external + body.format(name="&x;", link="a", content=""),
        "external_dtd_in_link_name": external + body.format(name="r", link="&x;", content=""),
        "external_dtd_in_text": external + body.format(name="r", link="a", content="&x;"),
        "xinclude": '<robot name="r" xmlns:xi="http://www.w3.org/2001/XInclude">\n'
        f'  <link name="a"><xi:include href="{secret_path}" parse="text"/></link>\n</robot>\n',
    }


XXE_CASES = [
    "entity_in_robot_name",
    "entity_in_link_name",
    "entity_in_text",
    "parameter_entity_in_robot_name",
    "parameter_entity_in_text",
    "external_dtd_in_robot_name",
    "external_dtd_in_link_name",
    "external_dtd_in_text",
    "xinclude",
]


@pytest.mark.parametrize("mode", ["string", "file"])
@pytest.mark.parametrize("name", XXE_CASES)
def test_external_entity_does_not_leak_a_local_file(name, mode, secret, tmp_path):
    secret_path, secret_text = secret
    text = _xxe_documents(secret_path, tmp_path)[name]
    if mode == "string":
        arg = text
    else:
        arg = tmp_path / "xxe.urdf"
        arg.write_text(text)
    try:
        model = load_quietly(arg)
    except ModelError as err:
        assert secret_text not in str(err)
        assert secret_text not in err.reason
        return
    for item in _all_names(model):
        assert secret_text not in item


def test_internal_entity_declarations_are_refused():
    text = '<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY n "arm">]>\n<robot name="r"><link name="&n;"/></robot>\n'
    with pytest.raises(ModelError) as info:
        load_urdf(text)
    assert str(info.value).startswith("<string>:")
    assert "entit" in str(info.value)


def _laughs(depth: int = 10, width: int = 10) -> str:
    ents = ['<!ENTITY lol0 "lol">']
    for i in range(1, depth):
        ents.append(f'<!ENTITY lol{i} "' + f"&lol{i - 1};" * width + '">')
    return '<?xml version="1.0"?>\n<!DOCTYPE robot [\n' + "\n".join(ents) + "\n]>\n"


@pytest.mark.parametrize("where", ["attribute", "text"])
def test_billion_laughs_is_refused(where):
    last = "&lol9;"
    if where == "attribute":
        doc = _laughs() + f'<robot name="{last}"><link name="a"/></robot>\n'
    else:
        doc = _laughs() + f'<robot name="r"><link name="a">{last}</link></robot>\n'
    with pytest.raises(ModelError) as info:
        load_urdf(doc)
    assert str(info.value).startswith("<string>:")
    assert len(str(info.value)) < 1000


@pytest.mark.parametrize(
    "doctype",
    [
        '<!DOCTYPE robot SYSTEM "http://example.invalid/x.dtd">',
        '<!DOCTYPE robot PUBLIC "-//X//DTD Robot//EN" "http://example.invalid/robot.dtd">',
        '<!DOCTYPE robot SYSTEM "file:///nonexistent/dir/robot.dtd">',
    ],
    ids=["system_http", "public_http", "system_missing_file"],
)
def test_external_dtd_is_not_fetched(doctype):
    text = f'<?xml version="1.0"?>\n{doctype}\n<robot name="r">\n  {link("a")}\n</robot>\n'
    try:
        model = load_urdf(text)
    except ModelError:
        return
    assert model.name == "r"
    assert model.link_names == ("a",)


def _padded_file(path: Path, size: int) -> None:
    """A valid URDF of exactly ``size`` bytes, padded with many short comments."""
    head = f'<?xml version="1.0"?>\n<robot name="r">{link("a")}</robot>\n'.encode()
    chunk = b"<!--" + b"x" * 1017 + b"-->\n"  # 1 KiB
    n_chunks, rest = divmod(size - len(head), len(chunk))
    assert rest >= 8
    tail = b"<!--" + b"y" * (rest - 8) + b"-->\n"
    with open(path, "wb") as f:
        f.write(head)
        f.write(chunk * n_chunks)
        f.write(tail)
    assert path.stat().st_size == size


def test_file_larger_than_the_limit_is_refused(tmp_path):
    limit = jxml.MAX_XML_BYTES
    path = tmp_path / "huge.urdf"
    _padded_file(path, limit + 1)
    with pytest.raises(ModelError) as info:
        load_urdf(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}: ")
    assert str(limit) in msg


def test_file_at_the_limit_loads(tmp_path):
    path = tmp_path / "big.urdf"
    _padded_file(path, jxml.MAX_XML_BYTES)
    assert load_urdf(path).link_names == ("a",)


def test_string_larger_than_the_limit_is_refused():
    limit = jxml.MAX_XML_BYTES
    head = '<robot name="r"><link name="a"/></robot>'
    text = head + "<!--" + "x" * (limit - len(head) - 6) + "-->"
    assert len(text.encode()) == limit + 1
    with pytest.raises(ModelError) as info:
        load_urdf(text)
    msg = str(info.value)
    assert msg.startswith("<string>: ")
    assert str(limit) in msg


def test_string_limit_counts_utf8_bytes():
    limit = jxml.MAX_XML_BYTES
    head = '<robot name="r"><link name="a"/></robot><!--'
    text = head + "\u00e9" * ((limit - len(head)) // 2 + 1) + "-->"
    assert len(text) <= limit < len(text.encode())
    with pytest.raises(ModelError) as info:
        load_urdf(text)
    assert str(limit) in str(info.value)


def test_parse_xml_max_bytes_argument(tmp_path):
    text = '<robot name="r"><link name="a"/></robot>'
    with pytest.raises(ModelError) as info:
        jxml.parse_xml(text, max_bytes=10)
    assert "10 bytes" in str(info.value)
    root, source = jxml.parse_xml(text, max_bytes=len(text))
    assert root.tag == "robot" and source == "<string>"


# --------------------------------------------------------------------------------------------------
# good models


def test_fixed_joint_merges_inertia_and_keeps_the_child_frame():
    upper = dict(m=2.0, xyz=(0.01, 0.02, -0.03), rpy=(0.1, 0.2, 0.3), i=(0.2, 0.01, -0.02, 0.3, 0.03, 0.25))
    tool = dict(m=0.5, xyz=(0.05, -0.04, 0.02), rpy=(-0.4, 0.1, 0.2), i=(0.01, 0.001, 0.002, 0.02, -0.003, 0.015))
    weld_xyz, weld_rpy = (0.1, 0.2, 0.3), (0.3, -0.2, 0.5)

    def inertial(p):
        ixx, ixy, ixz, iyy, iyz, izz = p["i"]
        return (
            f'<inertial><origin xyz="{" ".join(map(str, p["xyz"]))}" rpy="{" ".join(map(str, p["rpy"]))}"/>'
            f'<mass value="{p["m"]}"/><inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" '
            f'izz="{izz}"/></inertial>'
        )

    text = robot(
        '<link name="world"/>',
        link("upper", inertial(upper)),
        link("tool", inertial(tool)),
        joint("j1", "world", "upper", inner=LIMIT + '<axis xyz="0 0 1"/>'),
        joint(
            "weld",
            "upper",
            "tool",
            "fixed",
            f'<origin xyz="{" ".join(map(str, weld_xyz))}" rpy="{" ".join(map(str, weld_rpy))}"/>',
        ),
    )
    model = load_urdf(text)
    assert model.nb == 1 and model.body_names == ("upper",)
    assert model.nq == model.nv == 1 and model.joint_names == ("j1",)
    assert set(model.link_names) == {"upper", "tool"}
    assert model.link_body == (0, 0)

    # by hand: both parts in the body (= upper link) frame, then the parallel-axis theorem
    r_w, p_w = rpy(*weld_rpy), np.array(weld_xyz)
    parts = []
    for p, r_link, p_link in ((upper, np.eye(3), np.zeros(3)), (tool, r_w, p_w)):
        r_i = r_link @ rpy(*p["rpy"])
        parts.append((p["m"], r_link @ np.array(p["xyz"]) + p_link, r_i @ inertia_matrix(*p["i"]) @ r_i.T))
    mass = sum(m for m, _, _ in parts)
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, i_c in parts:
        d = c - com
        inertia += i_c + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))

    np.testing.assert_allclose(np.asarray(model.body_mass), [2.5], rtol=1e-14)
    np.testing.assert_allclose(np.asarray(model.body_com)[0], com, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(model.body_inertia)[0], inertia, rtol=1e-12, atol=1e-15)
    assert np.all(np.linalg.eigvalsh(inertia) > 0)

    i_tool, i_upper = model.link_names.index("tool"), model.link_names.index("upper")
    for angle in (0.0, 0.7):
        poses = jaxmor.forward_kinematics(model, np.array([angle]))
        rot, pos = np.asarray(poses.rotation), np.asarray(poses.position)
        np.testing.assert_allclose(rot[i_upper], rot_z(angle), atol=1e-14)
        np.testing.assert_allclose(pos[i_upper], np.zeros(3), atol=1e-14)
        np.testing.assert_allclose(rot[i_tool], rot_z(angle) @ r_w, atol=1e-14)
        np.testing.assert_allclose(pos[i_tool], rot_z(angle) @ p_w, atol=1e-14)


def test_fixed_child_of_world_is_welded_and_its_mass_dropped():
    text = robot(
        '<link name="world"/>',
        link("stand"),
        link("arm"),
        joint("bolt", "world", "stand", "fixed", '<origin xyz="0 0 1"/>'),
        joint("j1", "stand", "arm", inner=LIMIT + '<origin xyz="0 0 0.5"/>'),
    )
    model = load_urdf(text)
    assert model.body_names == ("arm",)
    assert model.link_body[model.link_names.index("stand")] == -1
    np.testing.assert_allclose(np.asarray(model.body_tree_translation)[0], [0, 0, 1.5])
    np.testing.assert_allclose(np.asarray(model.body_mass), [1.0])


def two_joint_robot(prefix: tuple[str, ...] = ()) -> str:
    """base -(j1 revolute)-> a -(j2 prismatic)-> b, after the given lines."""
    return robot(
        *prefix, link("base"), link("a"), link("b"), joint("j1", "base", "a"), joint("j2", "a", "b", "prismatic")
    )


WORLD_FIXED = ('<link name="world"/>', joint("mount", "world", "base", "fixed", ""))
WORLD_FLOATING = ('<link name="world"/>', joint("free", "world", "base", "floating", ""))


@pytest.mark.parametrize(
    ("prefix", "floating_base", "floats"),
    [
        ((), None, True),
        ((), True, True),
        ((), False, False),
        (WORLD_FIXED, None, False),
        (WORLD_FIXED, False, False),
        (WORLD_FIXED, True, True),
        (WORLD_FLOATING, None, True),
        (WORLD_FLOATING, True, True),
        (WORLD_FLOATING, False, False),
    ],
    ids=[
        "free_root",
        "free_root_true",
        "free_root_welded",
        "world",
        "world_false",
        "world_made_free",
        "world_floating",
        "world_floating_true",
        "world_floating_welded",
    ],
)
def test_base_type(prefix, floating_base, floats):
    model = load_urdf(two_joint_robot(prefix), floating_base=floating_base)
    assert model.joint_names == ("j1", "j2")
    assert model.floating_base is floats
    assert "world" not in model.link_names
    base = model.link_names.index("base")
    if floats:
        assert (model.nq, model.nv) == (7 + 2, 6 + 2)
        assert model.body_joint_type[0] == JointType.FREE and model.body_names[0] == "base"
        assert model.link_body[base] == 0
    else:
        assert (model.nq, model.nv) == (2, 2)
        assert JointType.FREE not in model.body_joint_type
        assert model.link_body[base] == -1
    assert model.body_joint_type[-2:] == (JointType.REVOLUTE, JointType.PRISMATIC)


def test_continuous_joint_has_infinite_limits():
    text = robot(
        link("base"),
        link("wheel"),
        link("hub"),
        link("spoke"),
        joint("bare", "base", "wheel", "continuous", ""),
        joint("rated", "wheel", "hub", "continuous", '<limit lower="-1" upper="1" effort="3" velocity="4"/>'),
        joint("effort_only", "hub", "spoke", "continuous", '<limit effort="2"/>'),
    )
    model = load_urdf(text, floating_base=False)
    assert model.body_joint_type == (JointType.REVOLUTE,) * 3
    np.testing.assert_array_equal(np.asarray(model.dof_lower), [-np.inf] * 3)
    np.testing.assert_array_equal(np.asarray(model.dof_upper), [np.inf] * 3)
    np.testing.assert_array_equal(np.asarray(model.dof_effort_limit), [np.inf, 3.0, 2.0])
    np.testing.assert_array_equal(np.asarray(model.dof_velocity_limit), [np.inf, 4.0, np.inf])


def test_limits_and_dynamics_are_read():
    text = robot(
        link("base"),
        link("a"),
        link("b"),
        joint(
            "j1",
            "base",
            "a",
            inner='<limit lower="-0.5" upper="2" effort="7" velocity="3"/>'
            '<dynamics damping="0.1" friction="0.2" rotor_inertia="0.03"/>',
        ),
        joint("j2", "a", "b", "prismatic", '<limit effort="1" velocity="2"/>'),
    )
    model = load_urdf(text, floating_base=False)
    np.testing.assert_array_equal(np.asarray(model.dof_lower), [-0.5, 0.0])
    np.testing.assert_array_equal(np.asarray(model.dof_upper), [2.0, 0.0])  # missing lower/upper: 0 (urdfdom)
    np.testing.assert_array_equal(np.asarray(model.dof_effort_limit), [7.0, 1.0])
    np.testing.assert_array_equal(np.asarray(model.dof_velocity_limit), [3.0, 2.0])
    np.testing.assert_array_equal(np.asarray(model.dof_damping), [0.1, 0.0])
    np.testing.assert_array_equal(np.asarray(model.dof_friction), [0.2, 0.0])
    np.testing.assert_array_equal(np.asarray(model.dof_armature), [0.03, 0.0])


@pytest.mark.parametrize(
    ("axis", "expected"),
    [
        ("", (1.0, 0.0, 0.0)),
        ('<axis xyz="0 0 1"/>', (0.0, 0.0, 1.0)),
        ('<axis xyz="0 0 2"/>', (0.0, 0.0, 1.0)),
        ('<axis xyz="1 1 0"/>', (math.sqrt(0.5), math.sqrt(0.5), 0.0)),
        ('<axis xyz="0 -3 4"/>', (0.0, -0.6, 0.8)),
        ('<axis xyz="  0\t0\n -1 "/>', (0.0, 0.0, -1.0)),
    ],
    ids=["default", "unit", "scaled", "diagonal", "three_four_five", "white_space"],
)
@pytest.mark.parametrize("kind", ["revolute", "continuous", "prismatic"])
def test_axis_default_and_normalization(axis, expected, kind):
    model = load_urdf(one_joint(LIMIT + axis, kind, mark=False), floating_base=False)
    got = np.asarray(model.body_axis)[0]
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=1e-16)
    assert np.linalg.norm(got) == pytest.approx(1.0, abs=1e-15)


def test_missing_origin_is_identity():
    model = load_urdf(one_joint(mark=False), floating_base=False)
    np.testing.assert_array_equal(np.asarray(model.body_tree_rotation)[0], np.eye(3))
    np.testing.assert_array_equal(np.asarray(model.body_tree_translation)[0], np.zeros(3))


def test_collision_geoms_in_body_frames():
    tip_xyz, tip_rpy = (0.0, 0.0, 0.3), (0.0, 0.5, 0.0)
    text = robot(
        f'<link name="base">{I}',
        '  <collision><origin xyz="0.1 0 0" rpy="0 0 0.4"/><geometry><box size="0.2 0.4 0.6"/></geometry></collision>',
        '  <collision><origin xyz="0 0 0.3"/><geometry><sphere radius="0.05"/></geometry></collision>',
        "</link>",
        f'<link name="arm">{I}',
        '  <collision><origin xyz="0 0 0.15"/><geometry><cylinder radius="0.02" length="0.3"/></geometry></collision>',
        '  <collision><geometry><capsule radius="0.03" length="0.2"/></geometry></collision>',
        '  <visual><geometry><mesh filename="arm.dae"/></geometry></visual>',
        "</link>",
        f'<link name="tip">{I}',
        '  <collision><origin xyz="0.01 0 0"/><geometry><sphere radius="0.01"/></geometry></collision>',
        "</link>",
        joint("j1", "base", "arm", inner=LIMIT + '<origin xyz="0 0 0.5"/>'),
        joint(
            "weld",
            "arm",
            "tip",
            "fixed",
            f'<origin xyz="{" ".join(map(str, tip_xyz))}" rpy="{" ".join(map(str, tip_rpy))}"/>',
        ),
    )
    model = load_urdf(text)
    assert model.ng == 5 and model.mesh_geoms == ()
    size = np.asarray(model.geom_size)
    rot = np.asarray(model.geom_rotation)
    pos = np.asarray(model.geom_translation)
    found = {(model.link_names[model.geom_link[g]], model.geom_type[g].label): g for g in range(model.ng)}
    assert set(found) == {
        ("base", "box"),
        ("base", "sphere"),
        ("arm", "cylinder"),
        ("arm", "capsule"),
        ("tip", "sphere"),
    }

    g = found["base", "box"]
    np.testing.assert_allclose(size[g], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(rot[g], rot_z(0.4), atol=1e-15)
    np.testing.assert_allclose(pos[g], [0.1, 0, 0])
    g = found["base", "sphere"]
    np.testing.assert_allclose(size[g], [0.05, 0, 0])
    np.testing.assert_allclose(pos[g], [0, 0, 0.3])
    np.testing.assert_allclose(rot[g], np.eye(3))
    g = found["arm", "cylinder"]
    np.testing.assert_allclose(size[g], [0.02, 0.15, 0])
    np.testing.assert_allclose(pos[g], [0, 0, 0.15])
    g = found["arm", "capsule"]
    np.testing.assert_allclose(size[g], [0.03, 0.1, 0])
    np.testing.assert_allclose(pos[g], [0, 0, 0])
    g = found["tip", "sphere"]  # the tip is merged into the arm body: its geom is in the arm's frame
    r_tip = rpy(*tip_rpy)
    np.testing.assert_allclose(size[g], [0.01, 0, 0])
    np.testing.assert_allclose(rot[g], r_tip, atol=1e-15)
    np.testing.assert_allclose(pos[g], r_tip @ [0.01, 0, 0] + np.array(tip_xyz), atol=1e-15)
    assert model.link_body[model.geom_link[g]] == model.body_names.index("arm")


def test_mesh_collisions_left_out_are_kept_by_name_and_warned_about():
    """``meshes="ignore"``: the explicit fallback (tests/test_meshes.py tests the simulated hulls)."""
    text = robot(
        f'<link name="base">{I}',
        '  <collision><geometry><mesh filename="package://r/base.stl" scale="1 1 1"/></geometry></collision>',
        '  <collision><geometry><sphere radius="0.1"/></geometry></collision>',
        "</link>",
        f'<link name="arm">{I}<collision><geometry><mesh filename="arm.obj"/></geometry></collision></link>',
        joint("j1", "base", "arm"),
    )
    with pytest.warns(UserWarning, match="mesh") as record:
        model = load_urdf(text, meshes="ignore")
    assert any("package://r/base.stl" in str(w.message) for w in record)
    assert model.mesh_geoms == (("base", "package://r/base.stl"), ("arm", "arm.obj"))
    assert model.geom_type == (GeomType.SPHERE,)


def test_transmission_and_gazebo_are_ignored():
    plain = two_joint_robot()
    extras = (
        '<transmission name="t1"><type>transmission_interface/SimpleTransmission</type>'
        '<joint name="j1"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>'
        '<actuator name="m1"><mechanicalReduction>50</mechanicalReduction></actuator></transmission>',
        '<gazebo reference="a"><material>Gazebo/Red</material><mu1>0.5</mu1></gazebo>',
        '<gazebo><plugin name="p" filename="libp.so"><joint>j1</joint><link name="ghost"/></plugin></gazebo>',
        '<material name="blue"><color rgba="0 0 1 1"/></material>',
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_urdf(two_joint_robot(extras))
    ref = load_urdf(plain)
    assert model.link_names == ref.link_names and model.joint_names == ref.joint_names
    assert (model.nq, model.nv, model.na) == (ref.nq, ref.nv, 0)
    np.testing.assert_array_equal(np.asarray(model.body_mass), np.asarray(ref.body_mass))


def test_mimic_warns_and_the_joint_stays_independent():
    text = robot(
        link("base"),
        link("a"),
        link("b"),
        joint("j1", "base", "a"),
        joint("j2", "base", "b", inner=LIMIT + '<mimic joint="j1" multiplier="2" offset="0"/>'),
    )
    with pytest.warns(UserWarning, match=r"j2.*mimic"):
        model = load_urdf(text, floating_base=False)
    assert model.joint_names == ("j1", "j2") and model.nq == 2


def test_massless_leaf_body_warns():
    text = robot(link("base"), link("ghost", ""), joint("j1", "base", "ghost"))
    with pytest.warns(UserWarning, match="ghost.*singular"):
        load_urdf(text, floating_base=False)


def test_degenerate_inertias_are_accepted_with_a_warning():
    """A singular tensor is accepted with a warning; a broken triangle inequality too while the excess is
    within INERTIA_TOLERANCE of the file's largest principal moment (a heavy base makes it so), refused
    beyond (tests/test_numeric_inputs.py)."""
    rod = '<inertial><mass value="1"/><inertia ixx="0" iyy="1" izz="1"/></inertial>'
    triangle = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="1"/></inertial>'
    heavy = '<inertial><mass value="100"/><inertia ixx="100" iyy="100" izz="100"/></inertial>'
    point = '<inertial><mass value="1"/><inertia ixx="0" iyy="0" izz="0"/></inertial>'
    with pytest.warns(UserWarning, match="'rod'.*singular"):
        load_urdf(robot(link("rod", rod)))
    with pytest.warns(UserWarning, match="'tri'.*triangle"):
        load_urdf(robot(link("base", heavy), link("tri", triangle), joint("j", "base", "tri", kind="fixed")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_urdf(robot(link("point", point)))


def test_string_source_and_robot_name():
    text = robot(link("a"), name="my robot").split("\n", 1)[1]  # no XML declaration: blanks may lead
    model = load_urdf("\n  " + text)
    assert model.source == "<string>" and model.name == "my robot"


def test_file_source_is_the_path_as_given(tmp_path):
    path = tmp_path / "ok.urdf"
    path.write_text(robot(link("a")))
    assert load_urdf(path).source == str(path)
    assert load_urdf(str(path)).source == str(path)


ERD_ROBOTS = {
    "go1": ("go1_description/urdf/go1.urdf", 12),
    "panda": ("panda_description/urdf/panda.urdf", 9),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", 32),
    "solo12": ("solo_description/robots/solo12.urdf", 12),
}


@pytest.mark.parametrize("robot_name", list(ERD_ROBOTS))
def test_example_robot_data_loads(robot_name):
    rel, n_joints = ERD_ROBOTS[robot_name]
    path = robot_urdf(rel)
    if path is None:
        pytest.skip(missing_robot_reason(rel))
    model = load_quietly(path)
    assert model.source == str(path)
    assert model.floating_base  # none of the four is rooted at 'world'
    assert len(model.joint_names) == n_joints
    assert (model.nq, model.nv) == (7 + n_joints, 6 + n_joints)
    mass = np.asarray(model.body_mass)
    assert np.all(np.isfinite(mass)) and np.all(mass >= 0) and mass.sum() > 0
    assert np.all(np.isfinite(np.asarray(model.body_inertia)))
    assert np.all(np.isfinite(np.asarray(model.body_tree_translation)))
    assert np.all(np.isfinite(np.asarray(model.link_translation)))
    assert jaxmor.neutral_q(model).shape == (model.nq,)


# --------------------------------------------------------------------------------------------------
# joint queries


def query_robot():
    text = robot(
        link("base"),
        link("a"),
        link("b"),
        link("c"),
        link("d"),
        link("e"),
        joint("raised", "base", "a", inner='<limit lower="0.2" upper="1" effort="1" velocity="1"/>'),
        joint("slide", "a", "b", "prismatic", '<limit lower="-1" upper="-0.5" effort="1" velocity="1"/>'),
        joint("weld", "b", "c", "fixed", ""),
        joint("spin", "c", "d", "continuous", ""),
        joint("centered", "d", "e", inner=LIMIT),
    )
    return load_urdf(text)


def test_joint_names_and_indices():
    model = query_robot()
    assert jaxmor.joint_names(model) == ["raised", "slide", "spin", "centered"]
    assert [jaxmor.joint_index(model, n) for n in jaxmor.joint_names(model)] == [6, 7, 8, 9]
    assert [jaxmor.joint_q_index(model, n) for n in jaxmor.joint_names(model)] == [7, 8, 9, 10]


def test_joint_indices_on_a_fixed_base():
    model = load_urdf(two_joint_robot(WORLD_FIXED))
    assert [jaxmor.joint_index(model, n) for n in ("j1", "j2")] == [0, 1]
    assert [jaxmor.joint_q_index(model, n) for n in ("j1", "j2")] == [0, 1]


def test_neutral_q_is_clipped_into_limits_with_identity_quaternion():
    model = query_robot()
    q = np.asarray(jaxmor.neutral_q(model))
    assert q.shape == (model.nq,)
    np.testing.assert_array_equal(q, [0, 0, 0, 1, 0, 0, 0, 0.2, -0.5, 0, 0])
    assert q.dtype == np.asarray(model.body_mass).dtype


def query_robot_with_free_joint():
    return robot(
        *WORLD_FLOATING,
        link("base"),
        link("a"),
        link("b"),
        joint("j1", "base", "a"),
        joint("weld", "a", "b", "fixed", ""),
    )


@pytest.mark.parametrize("name", ["nope", "weld", "free", ""])
@pytest.mark.parametrize("query", ["joint_index", "joint_q_index"])
def test_joint_index_of_an_unknown_or_immovable_joint(name, query):
    model = load_urdf(query_robot_with_free_joint())
    with pytest.raises(ArgumentError) as info:
        getattr(jaxmor, query)(model, name)
    assert repr(name) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_floating_base_true_without_a_joint_to_free_is_refused():
    text = robot(link("world", inner="", mark=True), link("a"), joint("j", "world", "a"))
    with pytest.raises(ModelError) as info:
        load_quietly(text, floating_base=True)
    check_error(info.value, "<string>", expected_line(text), ["floating_base=True", "world"])


def test_floating_base_true_on_an_offset_fixed_joint_says_why():
    inner = '<origin xyz="0 0 1"/>'
    text = robot(link("world", inner=""), link("a"), joint("j", "world", "a", kind="fixed", inner=inner, mark=True))
    with pytest.raises(ModelError) as info:
        load_quietly(text, floating_base=True)
    check_error(info.value, "<string>", expected_line(text), ["'j'", "floating_base=True", "identity origin"])


# --------------------------------------------------------------------------------------------------
# Inertia round-off, repair of indefinite tensors, massless joints (jaxmor/io/urdf.py's docstring)


def test_an_indefinite_inertia_is_repaired_with_a_warning_or_refused_when_strict():
    given = inertia_matrix(1.0, 0.0, 0.0, 0.5, 0.3, -0.2)  # principal moments: one negative
    attrs = 'ixx="1" ixy="0" ixz="0" iyy="0.5" iyz="0.3" izz="-0.2"'
    heavy = '<inertial><mass value="100"/><inertia ixx="100" iyy="100" izz="100"/></inertial>'
    text = robot(
        link("base", heavy),  # the repair is within INERTIA_TOLERANCE of the file's largest moment
        link("arm", f'<inertial><mass value="1"/><inertia {attrs}/></inertial>'),
        joint("j1", "base", "arm"),
    )
    line = next(i for i, x in enumerate(text.splitlines(), 1) if 'izz="-0.2"' in x)
    eig, axes = np.linalg.eigh(given)
    assert eig[0] < -0.1  # truly indefinite, not round-off
    with pytest.warns(
        UserWarning,
        match=rf"<string>:{line}: link 'arm' has an inertia that is not positive "
        r"definite .* repaired to the principal moments \[0\.0, ",
    ):
        description = jaxmor.io.urdf.parse_urdf(text)
    repaired = next(k for k in description.links if k.name == "arm").inertial.inertia
    # the documented repair: the negative principal moment set to zero, the principal axes kept
    np.testing.assert_allclose(np.linalg.eigvalsh(repaired), np.maximum(np.sort(eig), 0.0), atol=1e-15)
    np.testing.assert_allclose(repaired @ axes[:, 1:], axes[:, 1:] * eig[1:], atol=1e-14)
    np.testing.assert_allclose(repaired @ axes[:, 0], 0.0, atol=1e-14)
    with pytest.raises(ModelError, match=rf"<string>:{line}: link 'arm' has an inertia that is not positive"):
        load_quietly(text, strict=True)


def test_inertia_round_off_is_accepted():
    """iCub's head: a zero tensor with one stray 2.4e-35 entry (moments -2.4e-35, 0, 2.4e-35) is a point
    mass, taken silently; a negative moment within 1e-9 of the largest is round-off: accepted (as the
    singular tensor it is, with that warning), not refused."""
    stray = '<inertial><mass value="1.3"/><inertia ixx="0" ixz="2.40741e-35" iyy="0" izz="0"/></inertial>'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_urdf(robot(link("head", stray)))
    assert np.all(np.asarray(model.body_inertia) == 0.0)
    assert -1e-9 < np.linalg.eigvalsh(inertia_matrix(0.5, 0.500000000001, 0, 0.5, 0, 1))[0] < 0
    rod = '<inertial><mass value="1"/><inertia ixx="0.5" ixy="0.500000000001" iyy="0.5" izz="1"/></inertial>'
    with pytest.warns(UserWarning, match="'rod' has a singular inertia"):
        load_urdf(robot(link("rod", rod)), strict=True)


def test_the_massless_joint_warning_names_every_joint_that_moves_no_mass():
    """A chain of two massless links below a massive one: both joints move no mass (the first moves the
    second link, massless too); the leaf-only rule named one of them. A massless link with a massive
    child is not named."""
    text = robot(
        link("base"),
        link("hand", ""),
        link("finger", ""),
        link("wrist", ""),
        link("tool"),
        joint("j_hand", "base", "hand"),
        joint("j_finger", "hand", "finger"),
        joint("j_wrist", "base", "wrist"),
        joint("j_tool", "wrist", "tool"),
    )
    with pytest.warns(UserWarning) as record:
        load_urdf(text, floating_base=False)
    messages = [str(w.message) for w in record if "move no mass" in str(w.message)]
    assert len(messages) == 1, messages
    assert "2 joint(s)" in messages[0] and "'j_hand'" in messages[0] and "'j_finger'" in messages[0]
    assert "'j_wrist'" not in messages[0] and "singular" in messages[0]


@pytest.mark.parametrize(
    "relative, repaired",
    [
        ("icub_description/robots/icub.urdf", ()),
        ("tiago_description/robots/tiago.urdf", ("base_antenna_left_link", "base_antenna_right_link")),
    ],
    ids=["icub", "tiago"],
)
def test_icub_and_tiago_load(relative, repaired):
    """Both used to be refused over round-off (iCub: a 2.4e-35 entry, offsets of 1e-51 m that underflow
    float32) or a 1 mg link's indefinite tensor (TIAGo's antennas); Pinocchio loads both. iCub's dynamics
    are compared with Pinocchio in tests/test_dynamics.py."""
    path = robot_urdf(relative)
    if path is None:
        pytest.skip(missing_robot_reason(relative))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = load_urdf(path)
    fixed = sorted(
        n for n in repaired if any(f"link '{n}'" in str(w.message) and "repaired" in str(w.message) for w in record)
    )
    assert fixed == sorted(repaired)
    assert model.nv > 30 and np.all(np.isfinite(np.asarray(model.body_inertia)))
