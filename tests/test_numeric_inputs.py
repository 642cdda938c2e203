"""Numbers checked in the dtype they are stored in, and inertias checked as MuJoCo checks them.

Every number a loader, ``randomize`` or a setter stores goes through :func:`jaxmor.checks.stored_problem`
in the model's dtype (float32 unless x64 is on): an overflow, or a nonzero value that becomes zero or a
subnormal number, is refused, where the float64 reading would have accepted it and the model would have held
``inf`` or a motor delivering nothing. The conftest enables x64 for the session; the float32 cases load inside
``jax.enable_x64(False)``. Nothing here compiles a step: the errors come at load or at the call.

Expected lines are found in the text the test writes (never asked of the code); expected magnitudes come
from IEEE 754 (float32: largest 3.4e38, smallest normal 1.18e-38).
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import TURNTABLE_URDF

import jaxmor
from jaxmor import ArgumentError, ModelError
from jaxmor.checks import as_stored, stored_problem
from jaxmor.io.urdf import INERTIA_TOLERANCE

MOTOR = 'resistance="{r}" torque_constant="{kt}" velocity_constant="10" bus_voltage="{v}"'


def line_of(text: str, marker: str) -> int:
    """1-based line of the only line of ``text`` holding ``marker``."""
    hits = [i + 1 for i, line in enumerate(text.splitlines()) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def urdf(*links_and_joints: str) -> str:
    body = "\n".join("  " + x for x in links_and_joints)
    return f'<?xml version="1.0"?>\n<robot name="r">\n{body}\n</robot>\n'


def inertial(mass: float, ixx: float, iyy: float, izz: float) -> str:
    return f'<inertial><mass value="{mass}"/><inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}"/></inertial>'


HINGE = '<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
HINGE += '<axis xyz="0 0 1"/><limit effort="10" velocity="10" lower="-1" upper="1"/></joint>'


def hinge(name: str, parent: str, child: str) -> str:
    return HINGE.format(name=name, parent=parent, child=child)


def float32_turntable() -> jaxmor.Model:
    with jax.enable_x64(False):
        model = jaxmor.load_urdf(TURNTABLE_URDF)
    assert model.body_mass.dtype == jnp.float32
    return model


# --------------------------------------------------------------------------------------------------
# The helper.


def test_stored_problem_names_overflow_and_underflow_in_the_dtype():
    assert stored_problem([1.0, -9.81, 0.0, 3e38], np.float32) is None
    assert stored_problem([1.0, 1e39], np.float32) == ((1,), "overflows")
    assert stored_problem([1e-40], np.float32) == ((0,), "underflows to a subnormal number")
    assert stored_problem([1e-46], np.float32) == ((0,), "underflows to zero")
    assert stored_problem([1e-40, 1e-50], np.float32, coordinates=True) is None  # offsets may underflow
    assert stored_problem([1e39, 1e-40], np.float64) is None
    assert stored_problem([np.inf, -np.inf], np.float32) is None  # a meant infinity is the caller's to refuse
    with pytest.raises(ArgumentError, match=r"^x\[1\] = 1e\+39 overflows in float32.*3\.4e\+38"):
        as_stored(np.array([1.0, 1e39]), "x", np.float32)
    assert as_stored(1e39, "x", np.float64) == 1e39


# --------------------------------------------------------------------------------------------------
# A resistance of 1e-40: subnormal in float32, its stall torque overflows; refused where it is written.


def actuated_urdf(folder: Path, motor: str) -> tuple[Path, int]:
    """A one-hinge URDF in ``folder`` whose actuator reads ``actuators/m.xml`` with the ``<motor>`` attributes
    ``motor``; its path and the line of its ``<actuator>`` element."""
    (folder / "actuators").mkdir()
    (folder / "actuators" / "m.xml").write_text(
        f'<actuator_model gear_ratio="6">\n  <motor {motor}/>\n</actuator_model>\n'
    )
    text = urdf(
        f'<link name="base">{inertial(1, 0.1, 0.1, 0.1)}</link>',
        f'<link name="arm">{inertial(1, 0.1, 0.1, 0.1)}</link>',
        hinge("hip", "base", "arm"),
        '<actuator joint="hip" file="m.xml"/>',
    )
    path = folder / "robot.urdf"
    path.write_text(text)
    return path, line_of(text, "<actuator ")


def test_resistance_1e_40_in_a_urdf_actuator_file_is_refused_in_float32(tmp_path):
    path, line = actuated_urdf(tmp_path, MOTOR.format(r="1e-40", kt="0.1", v="24"))
    with jax.enable_x64(False):
        with pytest.raises(ModelError, match=rf"^{re.escape(str(path))}:{line}: actuator 'hip': resistance 1e-40 "):
            jaxmor.load_urdf(path)
    model = jaxmor.load_urdf(path)  # float64 holds it, and its stall torque 2.4e40 Nm
    assert float(model.actuators.motor.stall_torque()[0]) == pytest.approx(2.4e40)


def test_a_stall_torque_that_overflows_float32_is_refused_though_every_parameter_fits(tmp_path):
    """R = 1e-37 and Kt = 10 are normal float32 numbers; Kt V / R = 4.8e39 Nm is not."""
    path, line = actuated_urdf(tmp_path, MOTOR.format(r="1e-37", kt="10", v="48"))
    with jax.enable_x64(False):
        with pytest.raises(ModelError, match=rf":{line}: .*stall torque Kt\*Vbus/R = inf .*float32"):
            jaxmor.load_urdf(path)
    assert float(jaxmor.load_urdf(path).actuators.motor.stall_torque()[0]) == pytest.approx(4.8e39)


def test_a_bus_voltage_set_beyond_float32_is_refused():
    model = float32_turntable()
    state = jaxmor.init_state(model)
    with pytest.raises(ArgumentError, match=r"^voltage = 1e\+39 overflows in float32"):
        jaxmor.set_bus_voltage(model, state, 1e39)
    # 1e38 V fits float32, the no-load speed Kv V = 1e39 rad/s (Kv = 10) does not
    with pytest.raises(ArgumentError, match=r"1e\+38 is invalid for actuator 'spin': the no-load speed .*float32"):
        jaxmor.set_bus_voltage(model, state, 1e38)


MJCF_DCMOTOR = """\
<mujoco>
  <worldbody>
    <body>
      <joint name="j" type="hinge"/>
      <geom size=".1"/>
    </body>
  </worldbody>
  <actuator>
    <dcmotor joint="j" resistance="{r}" motorconst="0.1" ctrlrange="-24 24"/>
  </actuator>
</mujoco>
"""


def test_resistance_1e_40_in_an_mjcf_dcmotor_is_refused_in_float32():
    text = MJCF_DCMOTOR.format(r="1e-40")
    with jax.enable_x64(False):
        with pytest.raises(ModelError, match=rf"^<string>:{line_of(text, '<dcmotor')}: .*resistance 1e-40 underflows"):
            jaxmor.load_mjcf(text)


def test_resistance_1e_40_drawn_by_randomize_is_refused_in_float32():
    model = float32_turntable()
    spec = {"motor.resistance": jaxmor.uniform(1e-40, 1e-40)}
    with pytest.raises(ArgumentError, match=r"motor\.resistance: world 0, spin: drew 1e-40, which underflows.*float32"):
        jaxmor.randomize(model, jax.random.PRNGKey(0), 2, spec)


# --------------------------------------------------------------------------------------------------
# Gravity, mass and battery values that overflow float32.


def test_gravity_1e39_is_refused_in_float32_in_a_file_an_option_and_randomize():
    body = '<body><joint type="hinge"/><geom size=".1"/></body>'
    text = f'<mujoco>\n  <option gravity="0 0 -1e39"/>\n  <worldbody>{body}</worldbody>\n</mujoco>\n'
    with jax.enable_x64(False):
        with pytest.raises(ModelError, match=r"^<string>:2: gravity -1e\+39 overflows in float32"):
            jaxmor.load_mjcf(text)
    model = float32_turntable()
    with pytest.raises(ArgumentError, match=r"with_options: gravity\[2\] = -1e\+39 overflows in float32"):
        jaxmor.with_options(model, gravity=(0.0, 0.0, -1e39))
    with pytest.raises(ArgumentError, match=r"randomize: gravity: world 0, x: drew 1e\+39, which overflows"):
        jaxmor.randomize(model, jax.random.PRNGKey(0), 2, {"gravity": jaxmor.uniform(1e39, 1e39)})


def test_mass_1e39_is_refused_in_float32_by_randomize_and_add_free_body():
    model = float32_turntable()
    with pytest.raises(ArgumentError, match=r"randomize: body\.mass: world 0, disc: drew 1e\+39, which overflows"):
        jaxmor.randomize(model, jax.random.PRNGKey(0), 2, {"body.mass": jaxmor.uniform(1e39, 1e39)})
    with pytest.raises(ArgumentError, match=r"^mass \[kg\] = 1e\+39 overflows in float32"):
        jaxmor.add_free_body(model, "box", "sphere", (0.1,), 1e39, position=(0, 0, 1))


def test_set_battery_1e39_is_refused_in_float32():
    model = float32_turntable()
    with pytest.raises(ArgumentError, match=r"^open_circuit_voltage = 1e\+39 overflows in float32"):
        jaxmor.with_battery(model, 1e39, 0.1)
    with pytest.raises(ArgumentError, match=r"^internal_resistance = 1e-40 underflows to a subnormal number"):
        jaxmor.with_battery(model, 24.0, 1e-40)
    battery = jaxmor.with_battery(model, 24.0, 0.0).battery  # zero is stored exactly
    assert float(battery.internal_resistance) == 0.0 and battery.open_circuit_voltage.dtype == jnp.float32


# --------------------------------------------------------------------------------------------------
# A massless geom with huge extents.


MJCF_FROMTO = """\
<mujoco>
  <worldbody>
    <body>
      <joint type="hinge"/>
      <geom size=".1" mass="2"/>
      <geom type="capsule" size=".1" fromto="{a} 0 0 {b} 0 0" mass="0" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.filterwarnings("ignore::jaxmor.io.mjcf_differences.MujocoDifferenceWarning")
def test_a_massless_geom_with_huge_extents_adds_nothing_and_an_overflowing_one_is_refused():
    """mass 0 and a capsule 2e300 m long: 0 kg and no inertia (it used to be 0 x inf = NaN); a fromto whose
    length overflows float64 is refused at its line."""
    model = jaxmor.load_mjcf(MJCF_FROMTO.format(a="-1e300", b="1e300"))
    assert float(model.body_mass[0]) == 2.0
    np.testing.assert_allclose(np.diag(np.asarray(model.body_inertia[0])), 0.4 * 2 * 0.01, rtol=1e-12)
    text = MJCF_FROMTO.format(a="-1e308", b="1e308")
    with pytest.raises(ModelError, match=rf"^<string>:{line_of(text, 'fromto')}: .*fromto's length overflows"):
        jaxmor.load_mjcf(text)


# --------------------------------------------------------------------------------------------------
# Inertias: as MuJoCo, with a documented tolerance for real files.


def test_a_principal_moment_of_minus_0_1_is_refused_and_round_off_at_the_files_scale_repaired():
    text = urdf(f'<link name="a">{inertial(1, -0.1, 1, 1)}</link>')
    with pytest.raises(ModelError, match=r"^<string>:3: link 'a' has an inertia that is not positive definite.*beyond"):
        jaxmor.load_urdf(text)
    # the same defect beside a base whose largest moment makes it 1e-3 of the file's: repaired, with a warning
    assert 0.1 / 100.0 <= INERTIA_TOLERANCE
    text = urdf(
        f'<link name="base">{inertial(100, 100, 100, 100)}</link>',
        f'<link name="a">{inertial(1, -0.1, 1, 1)}</link>',
        hinge("j", "base", "a"),
    )
    repaired = r"repaired to the principal moments \[0\.0, 1\.0, 1\.0\]"
    with pytest.warns(UserWarning, match=rf"<string>:4: link 'a' .*{repaired}"):
        model = jaxmor.load_urdf(text, floating_base=False)
    assert np.all(np.linalg.eigvalsh(np.asarray(model.body_inertia[0])) >= 0)
    with pytest.raises(ModelError, match=r"^<string>:4: .*refused \(strict=True\)"):
        jaxmor.load_urdf(text, floating_base=False, strict=True)


def test_an_inertia_breaking_the_triangle_inequality_is_refused():
    text = urdf(f'<link name="a">{inertial(1, 0.1, 0.1, 1)}</link>')
    with pytest.raises(ModelError, match=r"^<string>:3: link 'a' .*break the triangle inequality"):
        jaxmor.load_urdf(text)
    mjcf = textwrap.dedent("""\
        <mujoco>
          <worldbody>
            <body>
              <joint type="hinge"/>
              <inertial pos="0 0 0" mass="1" diaginertia="0.1 0.1 1"/>
            </body>
          </worldbody>
        </mujoco>
    """)
    with pytest.raises(ModelError, match=rf"^<string>:{line_of(mjcf, '<inertial')}: .*triangle inequality"):
        jaxmor.load_mjcf(mjcf)


def test_a_massless_inertia_free_body_on_a_hinge_is_refused():
    text = urdf(
        f'<link name="base">{inertial(1, 0.1, 0.1, 0.1)}</link>',
        f'<link name="arm">{inertial(0, 0, 0, 0)}</link>',
        hinge("j", "base", "arm"),
    )
    with pytest.raises(ModelError, match=r"^<string>:4: joint 'j' moves no mass .*singular"):
        jaxmor.load_urdf(text, floating_base=False)
    mjcf = textwrap.dedent("""\
        <mujoco>
          <worldbody>
            <body name="arm">
              <joint name="j" type="hinge"/>
              <geom size=".1" mass="0"/>
            </body>
          </worldbody>
        </mujoco>
    """)
    line = line_of(mjcf, '<body name="arm">')
    with pytest.raises(ModelError, match=rf"^<string>:{line}: joint 'j' moves no mass"):
        jaxmor.load_mjcf(mjcf)
    # a massless link on a fixed joint, and a massless link carrying a massive one, load silently
    text = urdf(
        f'<link name="base">{inertial(1, 0.1, 0.1, 0.1)}</link>',
        f'<link name="sensor">{inertial(0, 0, 0, 0)}</link>',
        f'<link name="hand">{inertial(0, 0, 0, 0)}</link>',
        f'<link name="finger">{inertial(1, 0.1, 0.1, 0.1)}</link>',
        '<joint name="f" type="fixed"><parent link="base"/><child link="sensor"/></joint>',
        hinge("j", "base", "hand"),
        hinge("k", "hand", "finger"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jaxmor.load_urdf(text, floating_base=False).nv == 2


def test_links_without_any_inertial_keep_the_warning():
    """URDF frames (no <inertial> at all) on a joint: the mass matrix is singular, said by a warning (the
    file gives no masses to check), as before."""
    text = urdf('<link name="base"/>', '<link name="arm"/>', hinge("j", "base", "arm"))
    with pytest.warns(UserWarning, match="move no mass"):
        jaxmor.load_urdf(text, floating_base=False)


def test_turntable_loads_in_float32_and_float64_unchanged():
    float32 = float32_turntable()
    float64 = jaxmor.load_urdf(TURNTABLE_URDF)
    assert float(float64.actuators.motor.stall_torque()[0]) == pytest.approx(12.0)
    assert float(float32.actuators.motor.stall_torque()[0]) == pytest.approx(12.0, rel=1e-6)
    assert Path(float64.source) == TURNTABLE_URDF


def test_state_setters_refuse_a_value_that_overflows_the_states_dtype():
    model = float32_turntable()
    state = jaxmor.init_state(model)
    with pytest.raises(ArgumentError, match=r"^p_gain\[0\] = 1e\+39 overflows in float32"):
        jaxmor.set_actuator_pd_gains(model, state, [1e39], [0.0])
    assert float(jaxmor.set_actuator_pd_gains(model, state, [1e38], [0.0]).actuator_p_gain[0]) == pytest.approx(1e38)


# --------------------------------------------------------------------------------------------------
# Affine actuator constants and height fields beyond float32 (they loaded as inf before).

MJCF_HINGE = '<body><joint name="j" type="hinge"/><geom size=".1"/></body>'


@pytest.mark.parametrize(
    ("element", "field"),
    [('<motor joint="j" gear="1e39"/>', "gear"), ('<position joint="j" kp="1e39"/>', "gain"),
     ('<general joint="j" gainprm="1e39"/>', "gain"),
     ('<general joint="j" biastype="affine" biasprm="0 -1e39"/>', "bias_q")],
)  # fmt: skip
def test_an_affine_actuator_constant_beyond_float32_is_refused_at_its_line(element, field):
    text = f"<mujoco>\n  <worldbody>{MJCF_HINGE}</worldbody>\n  <actuator>\n    {element}\n  </actuator>\n</mujoco>\n"
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        with pytest.raises(
            ModelError, match=rf"^<string>:{line_of(text, element)}: actuator '[^']*': {field} -?1e\+39 overflows"
        ):
            jaxmor.load_mjcf(text)


@pytest.mark.parametrize(
    ("size", "pos", "message"),
    [("1e39 1 0.1 0.1", "0 0 0", r"spacing \[m\]\[0\] = 1e\+39 overflows"),
     ("1 1 0.1 0.1", "0 0 1e39", r"heights \[m\]\[0, 0\] = 1e\+39 overflows"),
     ("1 1 1e39 0.1", "0 0 0", r"heights \[m\]\[1, 1\] = 1e\+39 overflows")],
)  # fmt: skip
def test_a_height_field_beyond_float32_is_refused(size, pos, message):
    text = (
        f'<mujoco>\n  <asset><hfield name="h" nrow="3" ncol="3" size="{size}" elevation="0 0 0 0 1 0 0 0 0"/></asset>\n'
        f'  <worldbody><geom type="hfield" hfield="h" pos="{pos}"/>{MJCF_HINGE}</worldbody>\n</mujoco>\n'
    )
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        with pytest.raises(ModelError, match=rf"^<string>:\d: height field .*{message}"):
            jaxmor.load_mjcf(text)
    model = float32_turntable()
    with pytest.raises(ArgumentError, match=r"spacing \[m\]\[0\] = 1e\+39 overflows in float32"):
        jaxmor.with_height_field(model, np.zeros((3, 3)), 1e39)
    with pytest.raises(ArgumentError, match=r"the far corner .* overflows in float32"):
        jaxmor.with_height_field(model, np.zeros((100, 100)), 1e37)
