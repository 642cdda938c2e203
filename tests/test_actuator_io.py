"""Reading <actuator> elements and actuator files (jaxmor.io.actuators).

Every error test writes its XML, finds the expected line by searching the text it wrote for a marker
(never by asking the code), and checks that the message starts with ``file:line:``.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
from models import HOUND_URDF

from jaxmor.actuation.definitions import ActuatorCoupling, ActuatorDefinition, definition_is_valid, validate_actuators
from jaxmor.actuation.motor import DcMotorParameters
from jaxmor.errors import ModelError
from jaxmor.io.actuators import actuator_search_dirs, parse_actuators
from jaxmor.io.xml import parse_xml

#: Joints of the synthetic robot written by :func:`robot_text`, name -> URDF type.
JOINTS = {
    "hip": "revolute",
    "knee": "revolute",
    "wheel": "continuous",
    "slider": "prismatic",
    "weld": "fixed",
    "base_free": "floating",
    "ball": "spherical",
    "plane": "planar",
}

MOTOR_ATTRIBUTES = [
    "resistance",
    "torque_constant",
    "velocity_constant",
    "back_emf_constant",
    "bus_voltage",
    "peak_torque",
]
MOTOR = 'resistance="0.4" torque_constant="0.1" velocity_constant="10" bus_voltage="24" peak_torque="3"'


def robot_text(body: str) -> str:
    """A small URDF with the joints of :data:`JOINTS`, then ``body`` (the actuator elements)."""
    links = "\n".join(f'  <link name="{name}_link"/>' for name in JOINTS)
    joints = "\n".join(
        f'  <joint name="{name}" type="{kind}"><parent link="root"/><child link="{name}_link"/></joint>'
        for name, kind in JOINTS.items()
    )
    body = textwrap.indent(textwrap.dedent(body).strip("\n"), "  ")
    return f'<robot name="test">\n  <link name="root"/>\n{links}\n{joints}\n{body}\n</robot>\n'


def model_text(body: str) -> str:
    return textwrap.dedent(body).strip("\n") + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def line_of(text: str, marker: str, occurrence: int = 1) -> int:
    """1-based line of the ``occurrence``-th line of ``text`` that contains ``marker``."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if marker in line]
    assert len(hits) >= occurrence, f"marker {marker!r} not in the text"
    return hits[occurrence - 1]


def parse_file(urdf: Path, base_dir: Path | None = None) -> list[ActuatorDefinition]:
    root, source = parse_xml(urdf)
    return parse_actuators(root, source, base_dir=urdf.parent if base_dir is None else base_dir)


def parse_string(text: str, base_dir: Path | None = None) -> list[ActuatorDefinition]:
    root, source = parse_xml(text)
    return parse_actuators(root, source, base_dir=base_dir)


def assert_at(excinfo: pytest.ExceptionInfo, source: Path | str, line: int, *words: str) -> None:
    """The error names ``source`` and ``line`` (as ``source:line:``) and contains ``words``."""
    message = str(excinfo.value)
    assert message.startswith(f"{source}:{line}: "), message
    assert excinfo.value.source == str(source)
    assert excinfo.value.line == line
    for word in words:
        assert word in message, message


def urdf_error(tmp_path: Path, body: str, marker: str, *words: str, occurrence: int = 1) -> None:
    """Write a URDF with ``body``, expect an error at the line of ``marker`` in the URDF."""
    text = robot_text(body)
    urdf = write(tmp_path / "robot.urdf", text)
    with pytest.raises(ModelError) as excinfo:
        parse_file(urdf)
    assert_at(excinfo, urdf, line_of(text, marker, occurrence), *words)


def model_file_error(tmp_path: Path, model: str, marker: str, *words: str, occurrence: int = 1) -> None:
    """Write an actuator file linked by a valid URDF, expect an error at the line of ``marker`` in the file."""
    text = model_text(model)
    model_path = write(tmp_path / "actuators" / "bad.xml", text)
    urdf = write(tmp_path / "robot.urdf", robot_text('<actuator joint="hip" file="bad.xml"/>'))
    with pytest.raises(ModelError) as excinfo:
        parse_file(urdf)
    assert_at(excinfo, model_path, line_of(text, marker, occurrence), *words)


def motor(**overrides: float) -> DcMotorParameters:
    values = dict(resistance=0.4, torque_constant=0.1, velocity_constant=10.0, bus_voltage=24.0, peak_torque=3.0)
    values.update(overrides)
    return DcMotorParameters(**values)


# --------------------------------------------------------------------------------------------------------------
# The spec's examples.


def test_hound_example_reads_files_from_the_actuators_directory():
    text = HOUND_URDF.read_text()
    defs = parse_file(HOUND_URDF)
    assert [d.name for d in defs] == ["LF_HAA", "LF_HFE", "LF_KFE"]
    assert [d.joint for d in defs] == ["LF_HAA", "LF_HFE", "LF_KFE"]
    assert [d.model for d in defs] == ["abduction_6to1", "hound_leg", "hound_leg"]
    assert [d.gear_ratio for d in defs] == [6.0, 10.0, 10.0]
    expected_motor = motor()
    for d in defs:
        assert d.motor == expected_motor
        assert isinstance(d.motor.resistance, float)
        assert d.output_damping == 0.0 and d.output_friction == 0.0
        assert d.source == str(HOUND_URDF)
        assert definition_is_valid(d)
    assert defs[0].couplings == () and defs[1].couplings == ()
    assert defs[2].couplings == (ActuatorCoupling("LF_HFE", 1.0),)
    assert defs[2].couplings[0].line == line_of(text, '<coupling joint="LF_HFE"')
    assert [d.line for d in defs] == [
        line_of(text, '<actuator joint="LF_HAA"'),
        line_of(text, '<actuator joint="LF_HFE"'),
        line_of(text, '<actuator joint="LF_KFE"'),
    ]
    root, source = parse_xml(HOUND_URDF)
    joints = {j.get("name"): j.get("type") for j in root.findall("joint")}
    validate_actuators(defs, joints, source)


def test_hound_knee_from_python_equals_the_urdf_knee():
    knee = ActuatorDefinition("LF_KFE", 10.0, motor(), couplings=[ActuatorCoupling("LF_HFE", 1.0)])
    parsed = parse_file(HOUND_URDF)[2]
    assert knee.couplings == parsed.couplings  # a list is stored as a tuple
    assert knee.replace(name="LF_KFE", model="hound_leg") == parsed
    assert knee.label == "LF_KFE"
    assert knee.source is None and knee.line is None


def test_inline_wheel_with_back_emf_constant():
    defs = parse_string(
        robot_text(
            """
            <actuator joint="wheel" gear_ratio="8">
              <motor resistance="0.2" torque_constant="0.1" back_emf_constant="0.1" bus_voltage="48"
                     peak_torque="1.5"/>
            </actuator>
            """
        )
    )
    (wheel,) = defs
    assert wheel.name == "wheel" and wheel.joint == "wheel" and wheel.model == ""
    assert wheel.gear_ratio == 8.0
    assert wheel.motor.velocity_constant == pytest.approx(10.0, rel=1e-15)
    assert (wheel.motor.resistance, wheel.motor.torque_constant) == (0.2, 0.1)
    assert (wheel.motor.bus_voltage, wheel.motor.peak_torque) == (48.0, 1.5)
    assert wheel.source == "<string>"
    validate_actuators(defs, JOINTS, "<string>")


def test_inline_model_name_losses_actuator_name_and_default_peak_torque():
    (d,) = parse_string(
        robot_text(
            """
            <actuator name="spin" joint="slider" model="linear_drive" gear_ratio="2.5"
                      output_damping="0.3" output_friction="1.25">
              <motor resistance="1" torque_constant="0.2" velocity_constant="5" bus_voltage="12"/>
            </actuator>
            """
        )
    )
    assert (d.name, d.joint, d.model) == ("spin", "slider", "linear_drive")
    assert (d.gear_ratio, d.output_damping, d.output_friction) == (2.5, 0.3, 1.25)
    assert d.motor.peak_torque == math.inf
    assert definition_is_valid(d)


def test_losses_in_an_actuator_file(tmp_path):
    write(
        tmp_path / "lossy.xml",
        f'<actuator_model name="lossy" gear_ratio="9" output_damping="0.05" output_friction="0.7">'
        f"<motor {MOTOR}/></actuator_model>",
    )
    urdf = write(tmp_path / "r.urdf", robot_text('<actuator joint="knee" file="lossy.xml"/>'))
    (d,) = parse_file(urdf)
    assert (d.model, d.gear_ratio, d.output_damping, d.output_friction) == ("lossy", 9.0, 0.05, 0.7)


def test_order_names_and_a_file_shared_by_several_actuators(tmp_path):
    write(tmp_path / "m.xml", f'<actuator_model gear_ratio="4"><motor {MOTOR}/></actuator_model>')
    urdf = write(
        tmp_path / "r.urdf",
        robot_text(
            """
            <actuator joint="knee" file="m.xml"/>
            <actuator name="main_hip" joint="hip" file="m.xml"/>
            """
        ),
    )
    defs = parse_file(urdf)
    assert [d.name for d in defs] == ["knee", "main_hip"]
    assert defs[0].motor == defs[1].motor and defs[0].model == ""


def test_no_actuators():
    assert parse_string(robot_text("")) == []


def test_transmission_and_gazebo_elements_are_ignored():
    defs = parse_string(
        robot_text(
            """
            <transmission name="t">
              <type>transmission_interface/SimpleTransmission</type>
              <joint name="hip"><hardwareInterface>EffortJointInterface</hardwareInterface></joint>
              <actuator name="hip_motor"><mechanicalReduction>50</mechanicalReduction></actuator>
            </transmission>
            <gazebo reference="hip_link">
              <plugin name="p" filename="libp.so"><actuator joint="hip" file="missing.xml"/></plugin>
              <actuator name="anything"/>
            </gazebo>
            """
        )
    )
    assert defs == []
    assert len(parse_file(HOUND_URDF)) == 3  # its <transmission> holds an <actuator> too


def test_namespaced_attributes_are_ignored():
    (d,) = parse_string(
        robot_text(
            f"""
            <actuator xmlns:xacro="http://www.ros.org/wiki/xacro" xacro:generated="1" joint="hip" gear_ratio="3">
              <motor {MOTOR}/>
            </actuator>
            """
        )
    )
    assert d.gear_ratio == 3.0


# --------------------------------------------------------------------------------------------------------------
# The search path.

SEARCH_LOCATIONS = [".", "actuator", "actuators", "..", "../actuators"]


@pytest.mark.parametrize("first", range(len(SEARCH_LOCATIONS)), ids=SEARCH_LOCATIONS)
def test_search_path_location_and_order(tmp_path, first):
    """A file in each location is found, and the first location in the search order wins."""
    urdf_dir = tmp_path / "pkg" / "urdf"
    urdf = write(urdf_dir / "r.urdf", robot_text('<actuator joint="hip" file="drive.xml"/>'))
    for location in SEARCH_LOCATIONS[first:]:
        write(
            urdf_dir / location / "drive.xml",
            f'<actuator_model name="{location}" gear_ratio="5"><motor {MOTOR}/></actuator_model>',
        )
    (d,) = parse_file(urdf)
    assert d.model == SEARCH_LOCATIONS[first]


def test_search_dirs_are_normalized(tmp_path):
    base = tmp_path / "pkg" / "urdf"
    assert actuator_search_dirs(base) == [
        base,
        base / "actuator",
        base / "actuators",
        tmp_path / "pkg",
        tmp_path / "pkg" / "actuators",
    ]


def test_file_in_a_subdirectory_of_a_search_location(tmp_path):
    model = f'<actuator_model gear_ratio="7"><motor {MOTOR}/></actuator_model>'
    write(tmp_path / "actuators" / "legs" / "m.xml", model)
    urdf = write(tmp_path / "r.urdf", robot_text('<actuator joint="hip" file="legs/m.xml"/>'))
    assert parse_file(urdf)[0].gear_ratio == 7.0


def test_urdf_string_uses_the_resource_dir(tmp_path):
    write(tmp_path / "actuators" / "m.xml", f'<actuator_model gear_ratio="11"><motor {MOTOR}/></actuator_model>')
    (d,) = parse_string(robot_text('<actuator joint="hip" file="m.xml"/>'), base_dir=tmp_path)
    assert d.gear_ratio == 11.0 and d.source == "<string>"


def test_absolute_file_is_read_only_from_an_allowed_directory(tmp_path):
    """Robot files are untrusted: an absolute path outside the robot's tree is read only when the caller
    allows its directory (``extra_dirs``, ``load_urdf(actuator_dirs=...)``); otherwise it gets the error of a
    missing file, which does not tell whether the file exists."""
    path = write(tmp_path / "elsewhere" / "m.xml", f'<actuator_model gear_ratio="12"><motor {MOTOR}/></actuator_model>')
    text = robot_text(f'<actuator joint="hip" file="{path}"/>')
    root, source = parse_xml(text)
    (d,) = parse_actuators(root, source, base_dir=None, extra_dirs=[tmp_path / "elsewhere"])
    assert d.gear_ratio == 12.0
    with pytest.raises(ModelError) as refused:
        parse_string(text, base_dir=None)
    missing = robot_text(f'<actuator joint="hip" file="{tmp_path / "elsewhere" / "no_such.xml"}"/>')
    with pytest.raises(ModelError) as absent:
        parse_string(missing, base_dir=None)
    assert str(refused.value).replace(str(path), "F") == str(absent.value).replace(
        str(tmp_path / "elsewhere" / "no_such.xml"), "F"
    )


# --------------------------------------------------------------------------------------------------------------
# Errors while reading: one test per case, each checking file and line.


def test_error_missing_joint(tmp_path):
    urdf_error(tmp_path, f'<actuator gear_ratio="3">\n<motor {MOTOR}/>\n</actuator>', "<actuator", "joint")


def test_error_missing_gear_ratio(tmp_path):
    model_file_error(
        tmp_path,
        f"""
        <actuator_model name="m">
          <motor {MOTOR}/>
        </actuator_model>
        """,
        "<actuator_model",
        "gear_ratio",
    )


@pytest.mark.parametrize("value", ["0", "-10", "-0"])
def test_error_gear_ratio_not_positive(tmp_path, value):
    urdf_error(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="3"><motor {MOTOR}/></actuator>
        <actuator joint="knee" gear_ratio="{value}">
          <motor {MOTOR}/>
        </actuator>
        """,
        '<actuator joint="knee"',
        "gear_ratio",
        "positive",
    )


@pytest.mark.parametrize("attribute", ["gear_ratio", "output_damping", "output_friction"])
def test_error_attribute_not_a_number(tmp_path, attribute):
    values = {"gear_ratio": "10", attribute: "ten"}
    attrs = " ".join(f'{k}="{v}"' for k, v in values.items())
    model_file_error(
        tmp_path,
        f"""
        <actuator_model {attrs}>
          <motor {MOTOR}/>
        </actuator_model>
        """,
        "<actuator_model",
        attribute,
        "not a number",
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_error_gear_ratio_not_finite(tmp_path, value):
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="{value}">
          <motor {MOTOR}/>
        </actuator_model>
        """,
        "<actuator_model",
        "gear_ratio",
        "not finite",
    )


def test_error_both_motor_constants(tmp_path):
    model_file_error(
        tmp_path,
        """
        <actuator_model gear_ratio="6">
          <motor resistance="0.4" torque_constant="0.1" velocity_constant="10" back_emf_constant="0.1" bus_voltage="2"/>
        </actuator_model>
        """,
        "<motor",
        "velocity_constant",
        "back_emf_constant",
        "exactly one",
    )


def test_error_no_motor_constant(tmp_path):
    urdf_error(
        tmp_path,
        """
        <actuator joint="hip" gear_ratio="6">
          <motor resistance="0.4" torque_constant="0.1" bus_voltage="24"/>
        </actuator>
        """,
        "<motor",
        "velocity_constant",
        "back_emf_constant",
    )


@pytest.mark.parametrize("attribute", ["resistance", "torque_constant", "bus_voltage"])
def test_error_missing_motor_attribute(tmp_path, attribute):
    values = {"resistance": "0.4", "torque_constant": "0.1", "velocity_constant": "10", "bus_voltage": "24"}
    del values[attribute]
    attrs = " ".join(f'{k}="{v}"' for k, v in values.items())
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="6">
          <motor {attrs}/>
        </actuator_model>
        """,
        "<motor",
        attribute,
    )


@pytest.mark.parametrize("attribute", MOTOR_ATTRIBUTES)
@pytest.mark.parametrize("value", ["0", "-1.5"])
def test_error_motor_parameter_not_positive(tmp_path, attribute, value):
    values = {"resistance": "0.4", "torque_constant": "0.1", "bus_voltage": "24", "peak_torque": "3"}
    values["back_emf_constant" if attribute == "back_emf_constant" else "velocity_constant"] = "10"
    values[attribute] = value
    attrs = " ".join(f'{k}="{v}"' for k, v in values.items())
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="6">
          <motor {attrs}/>
        </actuator_model>
        """,
        "<motor",
        attribute,
        "positive",
    )


@pytest.mark.parametrize("attribute", MOTOR_ATTRIBUTES)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_error_motor_parameter_not_finite(tmp_path, attribute, value):
    values = {"resistance": "0.4", "torque_constant": "0.1", "bus_voltage": "24", "peak_torque": "3"}
    values["back_emf_constant" if attribute == "back_emf_constant" else "velocity_constant"] = "10"
    values[attribute] = value
    attrs = " ".join(f'{k}="{v}"' for k, v in values.items())
    urdf_error(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="6">

          <motor {attrs}/>
        </actuator>
        """,
        "<motor",
        attribute,
        "not finite",
    )


def test_error_motor_parameter_not_a_number(tmp_path):
    model_file_error(
        tmp_path,
        """
        <actuator_model gear_ratio="6">
          <motor resistance="0,4" torque_constant="0.1" velocity_constant="10" bus_voltage="24"/>
        </actuator_model>
        """,
        "<motor",
        "resistance",
        "not a number",
    )


@pytest.mark.parametrize(
    "attrs",
    [
        'resistance="1e-300" torque_constant="1e300" velocity_constant="10" bus_voltage="24"',  # Kt/R = inf
        'resistance="1" torque_constant="1e200" velocity_constant="10" bus_voltage="1e200"',  # stall torque = inf
        'resistance="1e200" torque_constant="0.1" velocity_constant="1e200" bus_voltage="24"',  # damping = 0
        'resistance="0.4" torque_constant="0.1" velocity_constant="1e300" bus_voltage="1e10"',  # no-load = inf
        'resistance="0.4" torque_constant="0.1" back_emf_constant="1e-320" bus_voltage="24"',  # Kv = 1/Ke = inf
    ],
    ids=["torque_per_volt", "stall_torque", "back_emf_damping", "no_load_speed", "inverse_back_emf"],
)
def test_error_derived_motor_constant_overflows(tmp_path, attrs):
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="6">
          <motor {attrs}/>
        </actuator_model>
        """,
        "<motor",
        "invalid motor",
    )


@pytest.mark.parametrize("attribute", ["output_damping", "output_friction"])
def test_error_negative_output_loss(tmp_path, attribute):
    urdf_error(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="6" {attribute}="-0.1">
          <motor {MOTOR}/>
        </actuator>
        """,
        "<actuator",
        attribute,
        "negative",
    )


@pytest.mark.parametrize("where", ["file", "inline"])
def test_error_model_without_motor(tmp_path, where):
    if where == "file":
        model_file_error(tmp_path, '<actuator_model gear_ratio="6">\n</actuator_model>', "<actuator_model", "<motor>")
    else:
        urdf_error(tmp_path, '<actuator joint="hip" gear_ratio="6">\n</actuator>', "<actuator", "<motor>")


def test_error_model_with_two_motors(tmp_path):
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="6">
          <motor {MOTOR}/>
          <motor {MOTOR}/>
        </actuator_model>
        """,
        "<motor",
        "exactly one <motor>",
        occurrence=2,
    )


@pytest.mark.parametrize(
    "coupling, words",
    [('<coupling ratio="1"/>', ("<coupling>", "joint")), ('<coupling joint="hip"/>', ("ratio",))],
    ids=["without_joint", "without_ratio"],
)
def test_error_coupling_missing_attribute(tmp_path, coupling, words):
    urdf_error(
        tmp_path,
        f"""
        <actuator joint="knee" gear_ratio="6">
          <motor {MOTOR}/>
          {coupling}
        </actuator>
        """,
        "<coupling",
        *words,
    )


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "one"])
def test_error_coupling_ratio_not_finite(tmp_path, value):
    write(tmp_path / "m.xml", f'<actuator_model gear_ratio="10"><motor {MOTOR}/></actuator_model>')
    urdf_error(
        tmp_path,
        f"""
        <actuator joint="knee" file="m.xml">
          <coupling joint="wheel" ratio="2"/>
          <coupling joint="hip" ratio="{value}"/>
        </actuator>
        """,
        '<coupling joint="hip"',
        "ratio",
        "not a number" if value == "one" else "not finite",
    )


def test_error_missing_actuator_file_lists_the_searched_directories(tmp_path):
    urdf_dir = tmp_path / "pkg" / "urdf"
    text = robot_text('<actuator joint="hip" file="nowhere.xml"/>')
    urdf = write(urdf_dir / "r.urdf", text)
    with pytest.raises(ModelError) as excinfo:
        parse_file(urdf)
    pkg = tmp_path / "pkg"
    searched = [urdf_dir, urdf_dir / "actuator", urdf_dir / "actuators", pkg, pkg / "actuators"]
    assert_at(excinfo, urdf, line_of(text, "<actuator"), "nowhere.xml", *(str(d) for d in searched))


def test_error_relative_file_in_a_urdf_string_needs_a_resource_dir(tmp_path):
    write(tmp_path / "m.xml", f'<actuator_model gear_ratio="10"><motor {MOTOR}/></actuator_model>')
    text = robot_text('<actuator joint="hip" file="m.xml"/>')
    with pytest.raises(ModelError) as excinfo:
        parse_string(text, base_dir=None)
    assert_at(excinfo, "<string>", line_of(text, "<actuator"), "m.xml", "resource_dir")


def test_error_missing_absolute_actuator_file(tmp_path):
    missing = tmp_path / "gone.xml"
    text = robot_text(f'<actuator joint="hip" file="{missing}"/>')
    with pytest.raises(ModelError) as excinfo:
        parse_string(text, base_dir=tmp_path)
    assert_at(excinfo, "<string>", line_of(text, "<actuator"), str(missing), "not found")


def test_error_empty_file_attribute(tmp_path):
    urdf_error(tmp_path, '<actuator joint="hip" file=""/>', "<actuator", "empty file")


@pytest.mark.parametrize(
    "inline",
    [f"><motor {MOTOR}/></actuator>", ' gear_ratio="10"/>', ' output_damping="0.1"/>', ' model="m"/>'],
    ids=["motor", "gear_ratio", "output_damping", "model"],
)
def test_error_file_and_inline_model(tmp_path, inline):
    write(tmp_path / "m.xml", f'<actuator_model gear_ratio="10"><motor {MOTOR}/></actuator_model>')
    urdf_error(tmp_path, f'<actuator joint="hip" file="m.xml"{inline}', "<actuator", "both a file and an inline model")


def test_error_actuator_file_root_is_not_actuator_model(tmp_path):
    model_file_error(
        tmp_path,
        f"""
        <?xml version="1.0"?>

        <actuator gear_ratio="6">
          <motor {MOTOR}/>
        </actuator>
        """,
        "<actuator ",
        "<actuator_model>",
    )


def test_error_malformed_actuator_file(tmp_path):
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="6">
          <motor {MOTOR}>
        </actuator_model>
        """,
        "</actuator_model>",
        "malformed XML",
    )


def test_error_unknown_motor_attribute(tmp_path):
    model_file_error(
        tmp_path,
        """
        <actuator_model gear_ratio="6">
          <motor resistance="0.4" torque_constant="0.1" velocity_constant="10" bus_voltage="24" peak_torqe="3"/>
        </actuator_model>
        """,
        "<motor",
        "unknown attribute 'peak_torqe'",
    )


def test_error_unknown_child_element(tmp_path):
    urdf_error(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="6">
          <motor {MOTOR}/>
          <gear ratio="6"/>
        </actuator>
        """,
        "<gear",
        "unexpected element <gear>",
    )


def test_error_coupling_in_an_actuator_file(tmp_path):
    model_file_error(
        tmp_path,
        f"""
        <actuator_model gear_ratio="6">
          <motor {MOTOR}/>
          <coupling joint="hip" ratio="1"/>
        </actuator_model>
        """,
        "<coupling",
        "<coupling> belongs on the <actuator>",
    )


def test_error_line_of_a_start_tag_over_several_lines(tmp_path):
    """lxml (libxml2) reports the line where a start tag ends; the message names a line of the tag."""
    text = model_text(
        """
        <actuator_model gear_ratio="6">
          <motor resistance="-0.4" torque_constant="0.1"
                 velocity_constant="10"
                 bus_voltage="24"/>
        </actuator_model>
        """
    )
    path = write(tmp_path / "m.xml", text)
    urdf = write(tmp_path / "r.urdf", robot_text('<actuator joint="hip" file="m.xml"/>'))
    with pytest.raises(ModelError) as excinfo:
        parse_file(urdf)
    assert excinfo.value.source == str(path)
    assert line_of(text, "<motor") <= excinfo.value.line <= line_of(text, 'bus_voltage="24"/>')
    assert "resistance" in str(excinfo.value)


# --------------------------------------------------------------------------------------------------------------
# Checks when the robot is built: one test per case.


def parsed_for_validation(tmp_path: Path, body: str) -> tuple[Path, str, list[ActuatorDefinition]]:
    text = robot_text(body)
    urdf = write(tmp_path / "robot.urdf", text)
    return urdf, text, parse_file(urdf)


def validation_error(tmp_path: Path, body: str, marker: str, *words: str, occurrence: int = 1) -> None:
    urdf, text, defs = parsed_for_validation(tmp_path, body)
    with pytest.raises(ModelError) as excinfo:
        validate_actuators(defs, JOINTS, str(urdf))
    assert_at(excinfo, urdf, line_of(text, marker, occurrence), *words)


def test_validate_accepts_revolute_continuous_and_prismatic_joints_and_shared_coupled_joints(tmp_path):
    _, _, defs = parsed_for_validation(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="6"><motor {MOTOR}/></actuator>
        <actuator joint="knee" gear_ratio="6"><motor {MOTOR}/><coupling joint="hip" ratio="-1"/></actuator>
        <actuator joint="wheel" gear_ratio="6"><motor {MOTOR}/><coupling joint="hip" ratio="0.5"/></actuator>
        <actuator joint="slider" gear_ratio="6"><motor {MOTOR}/></actuator>
        """,
    )
    validate_actuators(defs, JOINTS, "robot.urdf")
    validate_actuators([], JOINTS, "robot.urdf")


def test_validate_unknown_driven_joint(tmp_path):
    validation_error(
        tmp_path,
        f'<actuator joint="hip" gear_ratio="6"><motor {MOTOR}/></actuator>\n'
        f'<actuator joint="elbow" gear_ratio="6"><motor {MOTOR}/></actuator>',
        '<actuator joint="elbow"',
        "actuator 'elbow'",
        "unknown joint 'elbow'",
    )


def test_validate_unknown_coupled_joint(tmp_path):
    validation_error(
        tmp_path,
        f"""
        <actuator joint="knee" gear_ratio="6">
          <motor {MOTOR}/>
          <coupling joint="elbow" ratio="1"/>
        </actuator>
        """,
        "<coupling",
        "actuator 'knee'",
        "unknown joint 'elbow'",
    )


@pytest.mark.parametrize("joint", ["weld", "base_free", "ball", "plane"])
def test_validate_driven_joint_is_fixed_or_has_several_dofs(tmp_path, joint):
    validation_error(
        tmp_path,
        f'<actuator joint="{joint}" gear_ratio="6"><motor {MOTOR}/></actuator>',
        "<actuator",
        f"joint '{joint}' is {JOINTS[joint]}",
    )


@pytest.mark.parametrize("joint", ["weld", "base_free", "ball", "plane"])
def test_validate_coupled_joint_is_fixed_or_has_several_dofs(tmp_path, joint):
    validation_error(
        tmp_path,
        f"""
        <actuator joint="knee" gear_ratio="6">
          <motor {MOTOR}/>
          <coupling joint="{joint}" ratio="1"/>
        </actuator>
        """,
        "<coupling",
        "coupling",
        f"joint '{joint}' is {JOINTS[joint]}",
    )


def test_validate_joint_driven_by_two_actuators(tmp_path):
    validation_error(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="6"><motor {MOTOR}/></actuator>
        <actuator joint="knee" gear_ratio="6"><motor {MOTOR}/></actuator>
        <actuator name="second_hip" joint="hip" gear_ratio="6"><motor {MOTOR}/></actuator>
        """,
        '<actuator name="second_hip"',
        "actuator 'second_hip'",
        "already driven by actuator 'hip'",
    )


def test_validate_coupling_to_the_driven_joint(tmp_path):
    validation_error(
        tmp_path,
        f"""
        <actuator joint="knee" gear_ratio="6">
          <motor {MOTOR}/>
          <coupling joint="knee" ratio="1"/>
        </actuator>
        """,
        "<coupling",
        "own driven joint 'knee'",
    )


def test_validate_two_couplings_to_one_joint(tmp_path):
    validation_error(
        tmp_path,
        f"""
        <actuator joint="knee" gear_ratio="6">
          <motor {MOTOR}/>
          <coupling joint="hip" ratio="1"/>
          <coupling joint="hip" ratio="2"/>
        </actuator>
        """,
        "<coupling",
        "twice to joint 'hip'",
        occurrence=2,
    )


def test_validate_duplicate_names(tmp_path):
    validation_error(
        tmp_path,
        f"""
        <actuator joint="hip" gear_ratio="6"><motor {MOTOR}/></actuator>
        <actuator name="hip" joint="knee" gear_ratio="6"><motor {MOTOR}/></actuator>
        """,
        '<actuator name="hip"',
        "duplicate actuator name 'hip'",
    )


def test_validate_non_finite_coupling_ratio_from_python():
    knee = ActuatorDefinition("knee", 6.0, motor(), couplings=(ActuatorCoupling("hip", math.nan),))
    with pytest.raises(ModelError) as excinfo:
        validate_actuators([knee], JOINTS, "<api>")
    assert str(excinfo.value).startswith("<api>: actuator 'knee': ")
    assert excinfo.value.line is None
    assert "coupling to joint 'hip' must be finite" in str(excinfo.value)


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"gear_ratio": 0.0}, "gear_ratio"),
        ({"gear_ratio": math.inf}, "gear_ratio"),
        ({"output_damping": -1.0}, "output_damping"),
        ({"output_friction": math.nan}, "output_friction"),
        ({"motor": motor(resistance=0.0)}, "invalid motor: resistance"),
        ({"motor": motor(resistance=1e-300, torque_constant=1e300)}, "invalid motor: the torque per volt"),
    ],
)
def test_validate_invalid_definition_from_python(changes, words):
    defn = ActuatorDefinition("hip", 6.0, motor(), name="hip_drive").replace(**changes)
    with pytest.raises(ModelError) as excinfo:
        validate_actuators([defn], JOINTS, "<api>")
    assert str(excinfo.value).startswith("<api>: actuator 'hip_drive': ")
    assert words in str(excinfo.value)


def test_validate_python_definition_after_parsed_ones_uses_the_api_source(tmp_path):
    body = f'<actuator joint="hip" gear_ratio="6"><motor {MOTOR}/></actuator>'
    urdf, text, defs = parsed_for_validation(tmp_path, body)
    extra = ActuatorDefinition("hip", 6.0, motor(), name="other")
    with pytest.raises(ModelError) as excinfo:
        validate_actuators([*defs, extra], JOINTS, "<api>")
    message = str(excinfo.value)
    assert message.startswith("<api>: actuator 'other': ")
    assert f"{urdf}:{line_of(text, '<actuator')}" in message  # names where the first one came from


# --------------------------------------------------------------------------------------------------------------
# definition_is_valid


@pytest.mark.parametrize(
    "changes, valid",
    [
        ({}, True),
        ({"motor": motor(peak_torque=math.inf)}, True),
        ({"couplings": (ActuatorCoupling("hip", -3.0), ActuatorCoupling("knee", 0.0))}, True),
        ({"output_damping": 0.5, "output_friction": 2.0}, True),
        ({"motor": motor(resistance=0.0)}, False),
        ({"motor": motor(torque_constant=math.inf)}, False),
        ({"motor": motor(velocity_constant=math.nan)}, False),
        ({"motor": motor(bus_voltage=-24.0)}, False),
        ({"motor": motor(peak_torque=0.0)}, False),
        ({"motor": motor(peak_torque=math.nan)}, False),
        ({"motor": motor(resistance=1e-300, torque_constant=1e300)}, False),
        ({"motor": motor(resistance=1e200, velocity_constant=1e200)}, False),
        ({"gear_ratio": 0.0}, False),
        ({"gear_ratio": -6.0}, False),
        ({"gear_ratio": math.inf}, False),
        ({"couplings": (ActuatorCoupling("hip", math.inf),)}, False),
        ({"output_damping": -0.1}, False),
        ({"output_friction": math.inf}, False),
    ],
)
def test_definition_is_valid(changes, valid):
    defn = ActuatorDefinition("wheel", 8.0, motor()).replace(**changes)
    assert definition_is_valid(defn) is valid
