"""A learned residual in the model's files: ``<residual file="...npz"/>`` in a URDF or in the MJCF extension's actuator
file (:mod:`jaxmor.io.residual_file`), written by ``export_package`` and ``export_actuators``.

Oracle: the in-memory model the residual was set on (``with_residual``, float64): the model loaded back from the
written files must roll out bitwise as it. Errors: each bad input (missing, outside, malformed, wrong-shaped, unknown
actuator, history against ``w_in``) must name the file holding the ``<residual>`` element and its line, and a file
outside the model's folders must get the message of a missing one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import TURNTABLE_URDF

import jaxmor
from jaxmor.io import residual_file
from jaxmor.modeling.learned import residual_arrays

STEPS = 20
MOTORS = (
    '<actuators>\n  <actuator joint="hinge" name="m" gear_ratio="10"><motor resistance="0.5" torque_constant="0.1"'
    ' velocity_constant="10" bus_voltage="24" peak_torque="2"/></actuator>\n{residual}</actuators>\n'
)
ARM = (
    '<mujoco>\n<worldbody><body name="arm"><joint name="hinge" type="hinge" axis="0 0 1" armature="0.003"/>'
    '<geom type="box" size=".1 .02 .02" mass="1"/></body></worldbody>\n{actuators}</mujoco>\n'
)
EXTENSION = '<custom><text name="jaxmor:actuators" data="motors.xml"/></custom>\n'
DCMOTOR = (
    '<actuator><dcmotor joint="hinge" name="m" resistance="0.5" motorconst="0.1" ctrlrange="-24 24"/></actuator>\n'
)

pytestmark = pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")  # soft contacts: no contact here


def _acting(model: jaxmor.Model) -> jaxmor.Model:
    """``model`` with a tiny residual (2 steps of history, 2 hidden layers of 4) whose output is not zero."""
    net = jaxmor.residual_network(model, jax.random.key(0), history=2, width=4, layers=2)
    rng = np.random.default_rng(1)
    return jaxmor.with_residual(model, net.replace(w_out=jnp.asarray(rng.normal(size=4)), b_out=jnp.asarray(0.05)))


@jax.jit
def _run(model, state):
    return jaxmor.rollout(model, state, jnp.full((STEPS, model.na), 2.0))[1]


def _assert_steps_alike(loaded: jaxmor.Model, model: jaxmor.Model) -> None:
    """The loaded model rolls out bitwise as ``model`` (positions, motor torques, the residual's history)."""
    assert loaded.actuators.residual.active == model.actuators.residual.active
    loaded = loaded.replace(source=model.source)  # static, read by no step: one compilation for both
    want, got = _run(model, jaxmor.init_state(model)), _run(loaded, jaxmor.init_state(loaded))
    for name in ("q", "u", "actuator_history"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    np.testing.assert_array_equal(got.actuator_state.motor_torque, want.actuator_state.motor_torque)


@pytest.fixture
def turntable(tmp_path) -> Path:
    """A copy of the shipped turntable in ``tmp_path/model`` (its actuator file in ``model/actuators``)."""
    shutil.copytree(TURNTABLE_URDF.parent, tmp_path / "model")
    return tmp_path / "model" / TURNTABLE_URDF.name


def _line(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_export_package_writes_the_residual_and_the_package_steps_bitwise_as_the_model(turntable, tmp_path):
    model = _acting(jaxmor.load_urdf(turntable))
    written = jaxmor.export_package(model, turntable, tmp_path / "package")
    assert (tmp_path / "package" / "actuators" / "turntable_residual.npz").is_file()
    assert '<residual file="actuators/turntable_residual.npz"/>' in written.read_text()
    shutil.rmtree(turntable.parent)  # the package stands alone
    loaded = jaxmor.load_urdf(written)
    _assert_steps_alike(loaded, model)
    bare = jaxmor.with_residual(model, None)
    assert not np.array_equal(_run(bare, jaxmor.init_state(bare)).q, _run(model, jaxmor.init_state(model)).q)
    # A package of the package keeps it (the file it names is replaced, not added to), and a model without a
    # residual gets a package without one.
    again = jaxmor.export_package(loaded, written, tmp_path / "again")
    assert sorted(p.name for p in (tmp_path / "again" / "actuators").iterdir()) == [
        "spin_actuator.xml",
        "turntable_residual.npz",
    ]
    _assert_steps_alike(jaxmor.load_urdf(again), model)
    plain = jaxmor.export_package(jaxmor.with_residual(loaded, None), written, tmp_path / "plain")
    assert "<residual" not in plain.read_text()
    assert not jaxmor.load_urdf(plain).actuators.residual.enabled


def test_the_mjcf_extensions_actuator_file_holds_the_residual(tmp_path):
    (tmp_path / "motors.xml").write_text(MOTORS.format(residual=""))
    (tmp_path / "arm.xml").write_text(ARM.format(actuators=EXTENSION))
    model = _acting(jaxmor.load_mjcf(tmp_path / "arm.xml"))
    written = jaxmor.export_package(model, tmp_path / "arm.xml", tmp_path / "package")
    motors = (tmp_path / "package" / "actuators" / "motors.xml").read_text()
    assert '<residual file="motors_residual.npz"/>' in motors
    assert (tmp_path / "package" / "actuators" / "motors_residual.npz").is_file()
    _assert_steps_alike(jaxmor.load_mjcf(written), model)


def test_an_mjcf_without_the_extension_gets_an_actuator_file_for_its_residual(tmp_path):
    (tmp_path / "arm.xml").write_text(ARM.format(actuators=DCMOTOR))
    model = _acting(jaxmor.load_mjcf(tmp_path / "arm.xml"))
    written = jaxmor.export_package(model, tmp_path / "arm.xml", tmp_path / "package")
    assert 'data="actuators/arm_actuators.xml"' in written.read_text()
    _assert_steps_alike(jaxmor.load_mjcf(written), model)


def test_export_actuators_writes_the_weights_and_import_actuators_reads_them(turntable, tmp_path):
    plain = jaxmor.load_urdf(turntable)
    model = _acting(plain)
    xml = jaxmor.export_actuators(model, jaxmor.init_state(model), residual_file=tmp_path / "spin_net.npz")
    assert '<residual file="spin_net.npz"/>' in xml
    (tmp_path / "motors.xml").write_text(xml)
    imported, _ = jaxmor.import_actuators(plain, jaxmor.init_state(plain), tmp_path / "motors.xml")
    _assert_steps_alike(imported, model)
    with pytest.raises(jaxmor.ArgumentError, match="has no learned residual"):
        jaxmor.export_actuators(plain, jaxmor.init_state(plain), residual_file=tmp_path / "none.npz")


def _weights(turntable: Path) -> dict[str, np.ndarray]:
    model = _acting(jaxmor.load_urdf(turntable))
    return residual_arrays(model)


def _bad_weights(good: dict) -> list[tuple[object, str]]:
    """(what the weights file holds, the message's pattern) for each bad weights file."""
    return [
        (b"not an archive", r"'net.npz' is not a residual weights file \(File is not a zip file\)"),
        ({**good, "actuators": np.asarray(["spin", None], object)}, r"is not a residual weights file \(Object arrays"),
        ({**good, "actuators": np.asarray(["elbow"])}, r"acts on actuators \['elbow'\], not in the model's \['spin'\]"),
        ({**good, "actuators": np.asarray([], str)}, r"must be a non-empty list of actuator names"),
        ({**good, "history": np.asarray(3)}, r"residual.w_in must have shape \(9, W\) .*got \(6, 4\)"),
        ({**good, "history": np.asarray(1.5)}, r"history must be one int >= 1"),
        ({**good, "b_hidden": good["b_hidden"][:, :3]}, r"residual.b_hidden must have shape \(1, 4\)"),
        ({**good, "w_out": good["w_out"].astype(int)}, r"must be floating-point arrays"),
        ({k: v for k, v in good.items() if k != "b_out"}, r"a residual file holds"),
    ]


def test_a_bad_weights_file_names_the_description_and_line(turntable):
    good = _weights(turntable)
    text = turntable.read_text().replace("</robot>", '  <residual file="net.npz"/>\n</robot>')
    turntable.write_text(text)
    line = _line(text, "<residual")
    weights = turntable.parent / "net.npz"
    for content, message in _bad_weights(good):
        if isinstance(content, bytes):
            weights.write_bytes(content)
        else:
            np.savez(weights, **content)
        with pytest.raises(jaxmor.ModelError, match=message) as err:
            jaxmor.load_urdf(turntable)
        assert str(err.value).startswith(f"{turntable}:{line}: ")
    np.savez(weights, **good)
    assert jaxmor.load_urdf(turntable).actuators.residual.history == 2


def test_a_bad_residual_in_the_mjcf_extension_names_the_actuator_file_and_line(turntable, tmp_path):
    good = _weights(turntable)
    np.savez(tmp_path / "net.npz", **{**good, "actuators": np.asarray(["spin"])})
    motors = MOTORS.format(residual='  <residual file="net.npz"/>\n')
    (tmp_path / "motors.xml").write_text(motors)
    (tmp_path / "arm.xml").write_text(ARM.format(actuators=EXTENSION))
    with pytest.raises(jaxmor.ModelError, match=r"acts on actuators \['spin'\], not in the model's \['m'\]") as err:
        jaxmor.load_mjcf(tmp_path / "arm.xml")
    assert str(err.value).startswith(f"{tmp_path / 'motors.xml'}:{_line(motors, '<residual')}: ")
    np.savez(tmp_path / "net.npz", **{**good, "actuators": np.asarray(["m"])})
    assert jaxmor.load_mjcf(tmp_path / "arm.xml").actuators.residual.active == (True,)


@pytest.mark.parametrize(
    ("element", "message"),
    [
        ('<residual file="missing.npz"/>', r"residual file 'missing.npz' not found or not readable in the allowed"),
        ("<residual/>", r'<residual> needs file="..."'),
        ('<residual file="net.npz" history="3"/>', r"unknown attribute 'history' on <residual>"),
        ('<residual file="net.npz"><actuator/></residual>', r"unexpected element <actuator> in <residual>"),
    ],
)
def test_a_bad_residual_element_names_its_line(turntable, element, message):
    np.savez(turntable.parent / "net.npz", **_weights(turntable))
    text = turntable.read_text().replace("</robot>", f"  {element}\n</robot>")
    turntable.write_text(text)
    with pytest.raises(jaxmor.ModelError, match=message) as err:
        jaxmor.load_urdf(turntable)
    assert str(err.value).startswith(f"{turntable}:{_line(text, '<residual')}: ")


def test_a_second_residual_is_refused_at_its_line(turntable):
    np.savez(turntable.parent / "net.npz", **_weights(turntable))
    text = turntable.read_text().replace(
        "</robot>", '  <residual file="net.npz"/>\n  <residual file="net.npz"/>\n</robot>'
    )
    turntable.write_text(text)
    with pytest.raises(jaxmor.ModelError, match="a second <residual>") as err:
        jaxmor.load_urdf(turntable)
    assert str(err.value).startswith(f"{turntable}:{_line(text, '<residual') + 1}: ")


def _anonymous(err: jaxmor.ModelError, name: str) -> str:
    return str(err).replace(name, "FILE")


@pytest.mark.parametrize("where", ["relative", "absolute", "link"])
def test_a_weights_file_outside_the_models_folders_is_refused_like_a_missing_one(turntable, tmp_path, where):
    (tmp_path / "outside").mkdir()
    np.savez(tmp_path / "outside" / "secret.npz", **_weights(turntable))
    names = {
        "relative": ("../outside/secret.npz", "../outside/nothing.npz"),
        "absolute": (str(tmp_path / "outside" / "secret.npz"), str(tmp_path / "outside" / "nothing.npz")),
        "link": ("link.npz", "nothing.npz"),
    }[where]
    (turntable.parent / "link.npz").symlink_to(tmp_path / "outside" / "secret.npz")
    original = turntable.read_text()
    errors = []
    for name in names:
        turntable.write_text(original.replace("</robot>", f'  <residual file="{name}"/>\n</robot>'))
        with pytest.raises(jaxmor.ModelError, match=r":\d+: residual file .* not found or not readable") as err:
            jaxmor.load_urdf(turntable)
        errors.append(_anonymous(err.value, Path(name).name))
    assert errors[0] == errors[1]
    turntable.write_text(original.replace("</robot>", f'  <residual file="{names[0]}"/>\n</robot>'))
    assert jaxmor.load_urdf(turntable, actuator_dirs=[tmp_path / "outside"]).actuators.residual.history == 2


def test_export_package_refuses_a_residual_file_outside_and_leaks_nothing(turntable, tmp_path):
    model = _acting(jaxmor.load_urdf(turntable))
    (tmp_path / "outside").mkdir()
    np.savez(tmp_path / "outside" / "secret.npz", **_weights(turntable))
    text = turntable.read_text().replace("</robot>", '  <residual file="../outside/secret.npz"/>\n</robot>')
    turntable.write_text(text)  # edited after the model was loaded
    with pytest.raises(jaxmor.ModelError, match=rf"^{re.escape(str(turntable))}:{_line(text, '<residual')}: resid"):
        jaxmor.export_package(model, turntable, tmp_path / "package")
    assert not any("secret" in p.name for p in (tmp_path / "package").rglob("*"))


def test_a_weights_file_over_the_size_cap_is_refused(turntable, monkeypatch):
    np.savez(turntable.parent / "net.npz", **_weights(turntable))
    turntable.write_text(turntable.read_text().replace("</robot>", '  <residual file="net.npz"/>\n</robot>'))
    monkeypatch.setattr(residual_file, "MAX_RESIDUAL_BYTES", 1000)
    with pytest.raises(jaxmor.ModelError, match=r"is not a residual weights file \(.*more than 1000 bytes\)"):
        jaxmor.load_urdf(turntable)


def test_a_world_files_actuators_element_holds_no_residual(turntable, tmp_path):
    model = _acting(jaxmor.load_urdf(turntable))
    path = tmp_path / "world.xml"
    jaxmor.export_world(model, jaxmor.init_state(model), path)
    text = path.read_text()
    moved = text.replace('  <residual file="world.residual.npz"/>\n', "").replace(
        "</actuators>", '<residual file="world.residual.npz"/></actuators>'
    )
    path.write_text(moved)
    with pytest.raises(jaxmor.ModelError, match=r"belongs at its top level") as err:
        jaxmor.load_world(path)
    assert str(err.value).startswith(f"{path}:{_line(moved, '<residual')}: ")
