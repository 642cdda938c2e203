"""No foreign exceptions: bad input raises a jaxmor error (ModelError for files, ArgumentError for arguments) or works.

* file names longer than the system's limit (255 bytes per name), wherever a description or a caller names a file;
* the setters and ``with_battery`` under ``jit``: traced values work, and a traced value that must select part of
  the model (an index) says it must be concrete;
* ``jaxmor.randomize``'s key and bounds, ``model.opt.gravity`` given as a list to the step;
* seeded fuzz tests of the arguments of ``jaxmor.randomize`` and ``jaxmor.sysid``: every case raises a jaxmor error
  or gives a valid result, on the host (no case compiles a program of its own).

Sources of the expected values: the eager (unjitted) call for the jitted ones, the array-valued gravity for the
list-valued one, and the rule each check states (the shape a bound must broadcast to, ``V_oc > 0``).
"""

from __future__ import annotations

import math
import random
import re
import shutil
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF, TURNTABLE_URDF

import jaxmor
from jaxmor import ArgumentError, JaxmorError, ModelError, sysid
from jaxmor.tools import cli

LONG = "a" * 300
INERTIAL = '<inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>'


def _mjcf(head: str, world: str = "", body: str = "") -> str:
    return (
        f"<mujoco>\n{head}\n<worldbody>{world}\n"
        f'<body name="b" pos="0 0 1"><freejoint/>{INERTIAL}{body}</body>\n</worldbody>\n</mujoco>'
    )


def _urdf_mesh(file: str, kind: str) -> str:
    return (
        '<robot name="r"><link name="body"><inertial><mass value="1"/>'
        '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>\n'
        f'<{kind}><geometry><mesh filename="{file}"/></geometry></{kind}></link></robot>'
    )


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _include(tmp):
    return jaxmor.load_mjcf(_write(tmp, "m.xml", _mjcf(f'<include file="{LONG}.xml"/>')))


def _mjcf_mesh(tmp):
    head = f'<asset><mesh name="m" file="{LONG}.obj"/></asset>'
    return jaxmor.load_mjcf(_write(tmp, "m.xml", _mjcf(head, body='<geom type="mesh" mesh="m"/>')))


def _hfield(tmp):
    head = f'<asset><hfield name="h" file="{LONG}.png" size="1 1 1 0.1"/></asset>'
    return jaxmor.load_mjcf(_write(tmp, "m.xml", _mjcf(head, world='<geom type="hfield" hfield="h"/>')))


def _mjcf_actuators(tmp):
    head = f'<custom><text name="jaxmor:actuators" data="{LONG}.xml"/></custom>'
    return jaxmor.load_mjcf(_write(tmp, "m.xml", _mjcf(head)))


def _texture(tmp):
    scene = _write(tmp, "m.xml", _mjcf(f'<asset><texture name="t" type="2d" file="{LONG}.png"/></asset>'))
    with pytest.warns(jaxmor.MujocoDifferenceWarning):
        model = jaxmor.load_mjcf(scene)
    return jaxmor.export_package(model, scene, tmp / "package")


def _urdf_mesh_file(tmp):
    return jaxmor.load_urdf(_write(tmp, "r.urdf", _urdf_mesh(f"{LONG}.obj", "collision")))


def _urdf_visual(tmp):
    robot = _write(tmp, "r.urdf", _urdf_mesh(f"{LONG}.obj", "visual"))
    return jaxmor.export_package(jaxmor.load_urdf(robot), robot, tmp / "package")


def _urdf_actuators(tmp):
    shutil.copytree(TURNTABLE_URDF.parent, tmp / "robot")
    path = tmp / "robot" / TURNTABLE_URDF.name
    path.write_text(path.read_text().replace('file="spin_actuator.xml"', f'file="{LONG}.xml"'))
    return jaxmor.load_urdf(path)


def _world_robot(tmp):
    world = f'<jaxmor_world version="1"><robot file="{LONG}.urdf"/><options/><state/></jaxmor_world>'
    return jaxmor.load_world(_write(tmp, "w.xml", world))


def _import_actuators(tmp):
    model = jaxmor.load_urdf(TURNTABLE_URDF)
    return jaxmor.import_actuators(model, jaxmor.init_state(model), tmp / f"{LONG}.xml")


def _with_sensors(tmp):
    return jaxmor.with_sensors(jaxmor.load_urdf(TURNTABLE_URDF), tmp / f"{LONG}.xml")


FILES_NAMED_IN_A_DESCRIPTION = {
    "mjcf include": _include,
    "mjcf mesh": _mjcf_mesh,
    "mjcf height field": _hfield,
    "mjcf actuator file": _mjcf_actuators,
    "mjcf texture (export_package)": _texture,
    "urdf mesh": _urdf_mesh_file,
    "urdf visual mesh (export_package)": _urdf_visual,
    "urdf actuator file": _urdf_actuators,
    "world file's robot": _world_robot,
}
FILES_A_CALLER_NAMES = {
    "load_urdf": lambda tmp: jaxmor.load_urdf(tmp / f"{LONG}.urdf"),
    "load_urdf (str)": lambda tmp: jaxmor.load_urdf(str(tmp / f"{LONG}.urdf")),
    "load_mjcf": lambda tmp: jaxmor.load_mjcf(tmp / f"{LONG}.xml"),
    "load_world": lambda tmp: jaxmor.load_world(tmp / f"{LONG}.xml"),
    "load_checkpoint": lambda tmp: jaxmor.load_checkpoint(tmp / f"{LONG}.npz"),
    "import_actuators": _import_actuators,
    "with_sensors": _with_sensors,
}


@pytest.mark.parametrize("where", sorted(FILES_NAMED_IN_A_DESCRIPTION))
def test_a_file_name_over_255_bytes_in_a_description_is_a_model_error_quoting_it_briefly(tmp_path, where):
    with pytest.raises(ModelError, match="not found or not readable|is missing or not readable") as info:
        FILES_NAMED_IN_A_DESCRIPTION[where](tmp_path)
    message = str(info.value)
    assert LONG not in message and "aaa...aaa" in message  # quoted with its middle elided


@pytest.mark.parametrize("where", sorted(FILES_A_CALLER_NAMES))
def test_a_path_over_255_bytes_given_to_a_loader_is_a_model_error(tmp_path, where):
    with pytest.raises(ModelError, match="cannot be read: File name too long") as info:
        FILES_A_CALLER_NAMES[where](tmp_path)
    assert LONG not in str(info.value)


def _saved_world(tmp):
    model = jaxmor.load_urdf(TURNTABLE_URDF)
    return model, jaxmor.init_state(model), TURNTABLE_URDF


FILES_A_WRITER_NAMES = {
    "save_checkpoint": lambda tmp, model, state, _: jaxmor.save_checkpoint(tmp / f"{LONG}.npz", model, state),
    "export_world": lambda tmp, model, state, _: jaxmor.export_world(model, state, tmp / f"{LONG}.xml"),
    "export_package": lambda tmp, model, _, source: jaxmor.export_package(model, source, tmp / LONG),
}


@pytest.mark.parametrize("where", sorted(FILES_A_WRITER_NAMES))
def test_a_path_over_255_bytes_given_to_a_writer_is_an_argument_error(tmp_path, where):
    model, state, source = _saved_world(tmp_path)
    with pytest.raises(ArgumentError, match=f"^{where}: .* cannot be written: File name too long") as info:
        FILES_A_WRITER_NAMES[where](tmp_path, model, state, source)
    assert LONG not in str(info.value) and "aaa...aaa" in str(info.value)
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_checkpoint_written_onto_a_folder_says_so(tmp_path):
    model, state, _ = _saved_world(tmp_path)
    with pytest.raises(ArgumentError, match=r"^save_checkpoint: path '.*' cannot be written: Is a directory"):
        jaxmor.save_checkpoint(tmp_path, model, state)


def test_the_cli_reports_a_path_over_255_bytes_in_one_line(tmp_path, capsys):
    assert cli.main(["info", str(tmp_path / f"{LONG}.urdf")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jaxmor: error: ") and "File name too long" in err and err.count("\n") == 1


# --------------------------------------------------------------------------------------------------
# Under jit: with_battery works with traced values; an index that selects part of the model must be concrete.


def test_with_battery_under_jit_stores_the_eager_values_and_a_traced_bad_value_flags_the_world(turntable):
    def stepped(voltage, resistance):
        model = jaxmor.with_battery(turntable, voltage, resistance)
        state = jaxmor.set_actuator_torque(model, jaxmor.init_state(model), "spin", 3.0)
        return jaxmor.step(model, state)

    traced = jax.jit(lambda v, r: jaxmor.with_battery(turntable, v, r).battery)(24.0, 0.5)
    eager = jaxmor.with_battery(turntable, 24.0, 0.5).battery
    assert traced.enabled and eager.enabled
    for a, b in zip(jax.tree.leaves(traced), jax.tree.leaves(eager), strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype and float(a) == float(b)
    run = jax.jit(stepped)
    good = run(24.0, 0.5)
    assert not bool(good.nonfinite) and float(good.bus_voltage[0]) < 24.0  # the battery sagged: its values arrived
    for voltage, resistance in ((-24.0, 0.5), (24.0, -0.5), (math.nan, 0.5)):
        bad = run(voltage, resistance)
        assert bool(bad.nonfinite) and float(bad.u[0]) == 0.0, (voltage, resistance)
    with pytest.raises(ArgumentError, match=r"open_circuit_voltage must be a scalar, got shape \(2,\)"):
        jax.jit(lambda v: jaxmor.with_battery(turntable, v, 0.5))(jnp.ones(2))
    with pytest.raises(ArgumentError, match="open_circuit_voltage must be positive"):
        jaxmor.with_battery(turntable, 0.0, 0.5)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, s, i: jaxmor.set_actuator_torque(m, s, i, 1.0),
        lambda m, s, i: jaxmor.set_bus_voltage(m, s, 20.0, i),
        lambda m, s, i: jaxmor.set_external_force(m, s, i, jnp.ones(3)),
        lambda m, s, i: jaxmor.set_keyframe(m, s, i),
    ],
    ids=["set_actuator_torque", "set_bus_voltage", "set_external_force", "set_keyframe"],
)
def test_a_traced_index_is_refused_saying_it_must_be_known_outside_jit(turntable, call):
    state = jaxmor.init_state(turntable)
    with pytest.raises(ArgumentError, match=r"must be a name or a Python int known outside jit/vmap .* traced int"):
        jax.jit(lambda i: call(turntable, state, i))(0)


# --------------------------------------------------------------------------------------------------
# randomize: the key and the bounds' shapes.

KEY = jax.random.key(0)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (0, r"key must be a jax.random key \(.*uint32 of shape \(2,\)\), got 0"),
        (None, "key must be a jax.random key .* got None"),
        (jnp.zeros(2), "key must be a jax.random key"),
        (jnp.zeros(3, jnp.uint32), "key must be a jax.random key"),
        (jax.random.split(KEY, 4), r"key must be one key, got a batch of keys of shape \(4,\)"),
        (jax.random.split(jax.random.PRNGKey(0), 4), r"key must be one key, got a batch of keys of shape \(4,\)"),
    ],
    ids=["int", "None", "float", "uint32 (3,)", "typed batch", "raw batch"],
)
def test_randomize_refuses_a_key_that_is_not_one_key(quadruped, key, message):
    with pytest.raises(ArgumentError, match=f"^randomize: {message}"):
        jaxmor.randomize(quadruped, key, 4, {"motor.resistance": jaxmor.scale(0.9, 1.1)})


def test_randomize_accepts_both_kinds_of_key_and_refuses_a_traced_one(quadruped):
    spec = {"motor.resistance": jaxmor.scale(0.9, 1.1)}
    typed = jaxmor.randomize(quadruped, jax.random.key(3), 2, spec)[0]
    raw = jaxmor.randomize(quadruped, jax.random.PRNGKey(3), 2, spec)[0]
    assert typed.actuators.motor.resistance.shape == raw.actuators.motor.resistance.shape == (2, 12)
    with pytest.raises(ArgumentError, match="key must be a concrete jax.random key.*outside jit"):
        jax.jit(lambda k: jaxmor.randomize(quadruped, k, 2, spec)[0])(KEY)


@pytest.mark.parametrize(
    ("parameter", "low", "high", "draws"),
    [
        ("motor.resistance", [0.9, 0.8], [1.1, 1.2], "(4, 12)"),
        ("joint.damping", np.zeros((3, 3)), np.ones((3, 3)), "(4, 12)"),
        ("gravity", [-1.0, -1.0], [1.0, 1.0], "(4, 3)"),
        ("timestep", [1e-3, 1e-3], [2e-3, 2e-3], "(4, 1)"),
    ],
)
def test_randomize_refuses_bounds_that_do_not_broadcast_against_the_draws(quadruped, parameter, low, high, draws):
    shape = re.escape(f"{np.shape(low)}, which does not broadcast against the draws {draws}")
    message = rf"^randomize: {parameter}: low has shape {shape}"
    with pytest.raises(ArgumentError, match=message):
        jaxmor.randomize(quadruped, KEY, 4, {parameter: jaxmor.uniform(low, high)})


def test_randomize_takes_per_element_and_per_world_bounds(quadruped):
    per_element = jaxmor.scale(np.full(12, 0.9), np.full(12, 1.1))
    per_world = jaxmor.scale(np.full((4, 12), 0.9), np.full((4, 12), 1.1))
    for dist in (per_element, per_world):
        models, _ = jaxmor.randomize(quadruped, KEY, 4, {"motor.resistance": dist})
        ratio = np.asarray(models.actuators.motor.resistance) / np.asarray(quadruped.actuators.motor.resistance)
        assert ratio.shape == (4, 12) and np.all((ratio >= 0.9) & (ratio <= 1.1))


def test_randomize_refuses_a_randomized_model_and_too_many_draws(quadruped):
    spec = {"motor.resistance": jaxmor.scale(0.9, 1.1)}
    models, _ = jaxmor.randomize(quadruped, KEY, 4, spec)
    with pytest.raises(ArgumentError, match=r"has shape \(4, 12\), not of shape \(12,\): randomize draws from an unb"):
        jaxmor.randomize(models, KEY, 4, spec)
    with pytest.raises(ArgumentError, match="more than MAX_DRAWS"):
        jaxmor.randomize(quadruped, KEY, 10**12, spec)


# --------------------------------------------------------------------------------------------------
# The step takes a list where an array belongs, or says what the field must be.


def _with_gravity(model, gravity):
    return model.replace(opt=model.opt.replace(gravity=gravity))


def test_a_gravity_given_as_a_list_steps_like_the_array(pendulum):
    """A list passed as an argument (traced numbers, stacked) and a list or tuple closed over (constants)."""
    state = jaxmor.init_state(pendulum, q=jnp.array([0.3]))
    want = jax.jit(jaxmor.step)(_with_gravity(pendulum, jnp.array([0.0, 0.0, -9.81])), state)
    passed = jax.jit(jaxmor.step)(_with_gravity(pendulum, [0.0, 0.0, -9.81]), state)
    closed = jax.jit(lambda s: [jaxmor.step(_with_gravity(pendulum, g), s) for g in ([0, 0, -9.81], (0, 0, -9.81))])
    for got in (passed, *closed(state)):
        np.testing.assert_allclose(np.asarray(got.u), np.asarray(want.u), rtol=1e-12)
        assert float(got.u[0]) != 0.0  # gravity acted


@pytest.mark.parametrize(
    ("gravity", "message"),
    [
        ([0.0, -9.81], r"opt.gravity must be a finite 3-vector \[m/s\^2\], got \[0.0, -9.81\]"),
        ("down", r"model.opt.gravity must be an array, got 'down'"),
        ([0.0, [0.0], -9.81], r"model.opt.gravity must be an array \(a regular nest of numbers\)"),
    ],
)
def test_a_gravity_that_is_not_3_numbers_is_refused_naming_the_field(pendulum, gravity, message):
    with pytest.raises(ArgumentError, match=f"^step: {message}"):
        jaxmor.step(_with_gravity(pendulum, gravity), jaxmor.init_state(pendulum))


# --------------------------------------------------------------------------------------------------
# Fuzz tests of the arguments: a jaxmor error or a valid result, never a foreign exception.

FUZZ_SEED = 20261203
NUMBERS = (0.0, -1.0, 0.5, 2.0, math.nan, math.inf, -math.inf, 1e300, 1e-320, [0.9, 1.1], [[0.9]], np.ones((2, 2)))
NOT_NUMBERS = ([], "1", None, True, 1j, [1, [2]], object())
KEYS = (0, None, "k", jnp.zeros(2), jax.random.split(KEY, 2), jnp.zeros(3, jnp.uint32), jax.random.PRNGKey(1))
COUNTS = (1, 0, -2, 2.5, True, None, "4", 10**12, np.int64(2))
SELECTS = (None, ["spin"], "spin", [3], [], ["nope"], ["spin", "spin"])


def _fuzz_distribution(rng: random.Random):
    kind = rng.choice(("uniform", "normal", "log_uniform", "scale", "bogus"))
    a, b = (rng.choice(NUMBERS + NOT_NUMBERS) for _ in range(2))
    select = rng.choice(SELECTS)
    if kind != "bogus" and rng.random() < 0.5:
        try:
            return getattr(jaxmor, kind)(a, b, select=select, shared=rng.random() < 0.5)
        except JaxmorError:
            pass
        except ValueError:  # the constructors' own checks are not under test here
            pass
    return jaxmor.Distribution(kind, a, b, select if isinstance(select, (str, type(None))) else tuple(select))


def _drawn(models, axes) -> list:
    """The leaves of ``models`` that ``axes`` marks batched (axis 0)."""
    leaves = []

    def keep(axis, leaf):
        if axis == 0:
            leaves.append(leaf)

    jax.tree.map(keep, axes, models, is_leaf=lambda x: x is None)
    return leaves


def test_fuzzed_randomize_arguments_raise_jaxmor_errors_or_give_finite_worlds(turntable):
    """400 seeded argument sets (a key, a world count, a spec of 0 to 2 parameters, most of them valid so that the
    spec's checks are reached): each raises an ArgumentError or gives worlds whose drawn leaves are finite or
    (a motor's peak torque) +inf."""
    from jaxmor.tools.randomization import PARAMETERS

    model = jaxmor.with_battery(jaxmor.add_ground(turntable), 24.0, 0.1)
    rng = random.Random(FUZZ_SEED)
    names = [*sorted(PARAMETERS), "nope", 3]
    outcomes = {"worlds": 0, "refused": 0}
    for _ in range(400):
        key = KEY if rng.random() < 0.7 else rng.choice(KEYS)
        n = 3 if rng.random() < 0.7 else rng.choice(COUNTS)
        try:  # a Distribution made directly checks itself: part of what is fuzzed
            spec = {rng.choice(names): _fuzz_distribution(rng) for _ in range(rng.choice((0, 1, 1, 2)))}
            models, axes = jaxmor.randomize(model, key, n, spec)
        except ArgumentError:
            outcomes["refused"] += 1
            continue
        outcomes["worlds"] += 1
        assert not any(np.isnan(np.asarray(leaf)).any() for leaf in _drawn(models, axes)), spec
    assert outcomes["worlds"] >= 20 and outcomes["refused"] >= 200, outcomes


def _recording(model, steps: int = 20, **fields) -> dict:
    channels = {
        "q": np.zeros((steps + 1, model.nq)),
        "u": np.zeros((steps + 1, model.nv)),
        "torque": np.ones((steps, model.na)),
    }
    return channels | fields


def test_fuzzed_sysid_arguments_are_refused_before_anything_compiles(turntable):
    """60 seeded calls of ``sysid.fit`` with one or two bad arguments each (the others valid): each raises a
    jaxmor error before the fit's programs are compiled (the names of the functions XLA compiles are watched:
    a fit that gets as far as compiling compiles ``jit(residuals)``)."""
    other = jaxmor.load_urdf(QUADRUPED_URDF)
    steps = 20
    bad = {
        "model": ["x", None, 3, other],
        "recordings": [[], None, "rec", 3, [None], [np.zeros((3, 3))], {"a": 1}],
        "channel": [
            ("q", np.zeros((steps + 1, 5))), ("q", "abc"), ("q", None), ("q", [[1, 2], [3]]),
            ("u", np.zeros(steps + 1)), ("torque", np.full((steps, 1), np.nan)), ("torque", np.zeros((0, 1))),
            ("torque", np.full((steps, 1), 1e309)), ("torque", np.ones((steps, 1), complex)),
            ("current", np.zeros((steps, 2))), ("current", "x"), ("temperature", np.zeros((steps, 1))),
        ],
        "actuators": ["spin", [], [3], None, [None], ["nope"], 3, [1.5], ("spin", "spin")],
        "parameters": ["resistance", [], ["mass"], None, 3, [3], ["resistance", "resistance"], ["heat_capacity"]],
        "state": ["s", 3, jaxmor.init_state(other)],
        "window": [0, -1, 1.5, math.nan, math.inf, 10**9, "10", True, np.int64(0)],
        "iterations": [0, -1, 1.5, math.nan, "3", True, None],
        "method": ["bfgs", None, 3, ""],
        "use_currents": ["yes", None, 2, math.nan],
        "ideal_motor": ["yes", 1.5, None],
        "progress": ["no", 2.5],
        "optimizer": ["adam", 3],
    }  # fmt: skip
    rng = random.Random(FUZZ_SEED)
    compiled = []  # the names of the functions XLA compiles meanwhile

    def listen(event, duration, **context):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(context.get("fun_name", ""))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        _fuzz_fit(turntable, rng, bad, steps)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    fitted = [name for name in compiled if "residuals" in name or "loss" in name]
    assert not fitted, fitted  # the fit's programs (jit(residuals), the loss's gradient) were never compiled


def _fuzz_fit(turntable, rng, bad, steps):
    for _ in range(60):
        args = {"model": turntable, "actuators": ["spin"], "parameters": ["resistance", "velocity_constant"]}
        options = {"window": 5, "iterations": 1, "progress": False}
        channels = _recording(turntable, steps)
        picked = {}
        for name in rng.sample(sorted(bad), rng.choice((1, 1, 2))):
            picked[name] = value = rng.choice(bad[name])
            if name == "channel":
                channels[value[0]] = value[1]
            elif name in ("model", "recordings", "actuators", "parameters"):
                args[name] = value
            else:
                options[name] = value
        with pytest.raises(JaxmorError):
            recordings = args.pop("recordings", None) or sysid.Recording(**channels)
            sysid.fit(args["model"], recordings, args["actuators"], args["parameters"], **options)


def test_sysid_record_refuses_bad_torques_noise_and_keys(turntable):
    state = jaxmor.init_state(turntable)
    torque = np.ones((5, 1))
    cases = [
        ((turntable, state, np.ones(5)), {}, r"torque must have shape \(T, 1\)"),
        ((turntable, state, np.ones((0, 1))), {}, r"torque must have shape \(T, 1\) with T >= 1"),
        ((turntable, state, "x"), {}, "torque must be an array of real numbers"),
        ((turntable, "s", torque), {}, "record: state must be a jaxmor State"),
        (("m", state, torque), {}, "record: model must be a jaxmor.Model"),
        ((turntable, state, torque), {"noise": -0.1}, "noise must be >= 0"),
        ((turntable, state, torque), {"noise": math.nan}, "noise must be finite"),
        ((turntable, state, torque), {"noise": 0.1}, "record needs a key"),
        ((turntable, state, torque), {"noise": 0.1, "key": 0}, "record: key must be a jax.random key"),
    ]
    for args, options, message in cases:
        with pytest.raises(ArgumentError, match=message):
            sysid.record(*args, **options)


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
@pytest.mark.parametrize("source", ["written", "mjx ray.xml"])
def test_a_model_without_degrees_of_freedom_is_refused_by_step_and_rollout(source):
    """A scene of static geoms loads (to look at it), but stepping it is a jaxmor error, not a JAX ``TypeError`` from
    inside the solver: one written here and mujoco-mjx's test scene ``ray.xml`` (14 static geoms, no joint)."""
    if source == "written":
        model = jaxmor.load_mjcf('<mujoco><worldbody><geom type="box" size="1 1 1"/><body><geom size=".1"/></body>'
                                 "</worldbody></mujoco>")  # fmt: skip
    else:
        from reference import _package_file

        path = _package_file("mujoco", "mjx", "test_data", "ray.xml")
        if path is None:
            pytest.skip("mujoco-mjx's test data is not installed (the test extra)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
            model = jaxmor.load_mjcf(str(path), meshes="ignore")
    assert model.nv == 0
    state = jaxmor.init_state(model)
    for run in (lambda: jaxmor.step(model, state), lambda: jaxmor.rollout(model, state, jnp.zeros((3, 0)))):
        with pytest.raises(ArgumentError, match=r"no degrees of freedom \(nv = 0"):
            run()


def test_a_rollout_says_why_a_robot_without_affine_actuators_takes_no_ctrl():
    model = jaxmor.load_urdf(TURNTABLE_URDF)
    assert model.nu == 0
    with pytest.raises(
        ArgumentError, match=r"controls\['ctrl'\]: the model takes none \(nu = 0: no affine actuators\)"
    ):
        jaxmor.rollout(model, jaxmor.init_state(model), {"ctrl": jnp.zeros((5, 3))})


def test_rollout_batch_says_a_single_world_needs_a_world_axis():
    model = jaxmor.load_urdf(TURNTABLE_URDF)
    with pytest.raises(ArgumentError, match=r"states must have a leading world axis .* got one world's State"):
        jaxmor.rollout_batch(model, jaxmor.init_state(model), n_steps=3)


def test_viewer_show_without_ipython_says_to_write_a_page(monkeypatch):
    pytest.importorskip("viser")
    import sys

    from jaxmor import viewer

    monkeypatch.setitem(sys.modules, "IPython", None)  # importing it now fails, as where it is not installed
    monkeypatch.setitem(sys.modules, "IPython.display", None)
    model = jaxmor.load_urdf(TURNTABLE_URDF)
    with pytest.raises(ArgumentError, match=r"needs IPython; outside a notebook write the page"):
        viewer.show(model, jaxmor.init_state(model))
