"""World files, packages, checkpoints and worlds sharded over devices.

References: the worlds themselves. A round trip must give back what was written, bit for bit (every leaf of the
Model and of the State compared with ``np.array_equal``), and a restored simulation must continue exactly as
the uninterrupted one (the same compiled step on the same inputs); a sharded rollout must equal the unsharded
one to float64 round-off.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import HOUND_URDF, QUADRUPED_URDF, quadruped_standing_q

import jaxmor
from jaxmor import ArgumentError, ModelError

ROOT = Path(__file__).resolve().parent.parent


def _leaves_equal(a, b) -> list[str]:
    """The paths of the leaves in which two pytrees of the same structure differ."""
    assert jax.tree.structure(a) == jax.tree.structure(b)
    flat_a = jax.tree_util.tree_flatten_with_path(a)[0]
    flat_b = jax.tree.leaves(b)
    return [
        jax.tree_util.keystr(path)
        for (path, x), y in zip(flat_a, flat_b, strict=True)
        if not np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
        or np.asarray(x).dtype != np.asarray(y).dtype
    ]


@pytest.fixture(scope="module")
def run():
    """20 steps of one world, compiled once per model structure (restored models reuse the compilation)."""
    rollout = jax.jit(lambda m, s: jaxmor.rollout(m, s, n_steps=20)[0])
    return rollout


@pytest.fixture(scope="module")
def quadruped_world(run):
    """The quadruped on the ground with everything a world file holds changed since loading: options, ground
    friction, a battery, one actuator replaced by an inline model, torques, a bus voltage, monitor mode, PD
    gains, then 20 steps (contact impulses, actuator states, a sagged battery)."""
    model = jaxmor.load_urdf(QUADRUPED_URDF)
    model = jaxmor.add_ground(model, height=0.01, friction=0.7, restitution=0.1)
    model = jaxmor.with_battery(model, 48.0, 0.05)
    model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(0.002), solver_iterations=15))
    definitions = jaxmor.get_actuators(model)
    first = definitions[0]
    motor = first.motor.replace(resistance=0.3)
    definitions[0] = jaxmor.ActuatorDefinition(first.joint, 7.5, motor, name="hip_left_front", model="spare")
    model = jaxmor.with_actuators(model, definitions)
    state = jaxmor.init_state(model, q=quadruped_standing_q(model, 0.53))
    state = jaxmor.set_actuator_torques(model, state, np.linspace(-8.0, 8.0, model.na))
    state = jaxmor.set_bus_voltage(model, state, 40.0, name="hip_left_front")
    state = jaxmor.set_motor_operating_region_enforced(model, state, False)
    state = jaxmor.set_pd_gains(model, state, np.r_[np.zeros(6), np.full(12, 5.0)], np.r_[np.zeros(6), np.ones(12)])
    return model, run(model, state)


# --------------------------------------------------------------------------------------------------
# World files.


def test_a_world_file_reproduces_actuators_torques_voltages_monitor_mode_and_state(quadruped_world, run, tmp_path):
    model, state = quadruped_world
    path = tmp_path / "worlds" / "here" / "world.xml"
    path.parent.mkdir(parents=True)
    jaxmor.export_world(model, state, path)
    text = path.read_text()
    assert 'motor_operating_region_enforced="false"' in text and 'name="hip_left_front"' in text
    assert os.path.relpath(QUADRUPED_URDF.resolve(), path.parent) in text  # refers to the robot, relative
    loaded, restored = jaxmor.load_world(path)
    # The actuators carry the State's bus voltages (set or sagged at run time), as the spec's export does.
    voltages = model.actuators.motor.replace(bus_voltage=state.bus_voltage)
    assert _leaves_equal(model.replace(actuators=model.actuators.replace(motor=voltages)), loaded) == []
    assert loaded.actuators.names == model.actuators.names and loaded.actuators.models[0] == "spare"
    assert _leaves_equal(state, restored) == []
    assert not bool(restored.mor_enforced) and float(restored.actuator_torque[-1]) == 8.0
    assert _leaves_equal(run(model, state), run(loaded, restored)) == []  # it continues identically


def test_a_world_file_of_an_mjcf_robot_with_dc_motors(tmp_path, run):
    (tmp_path / "motors.xml").write_text(
        '<actuators><actuator joint="hip" gear_ratio="10"><motor resistance="0.5" torque_constant="0.1"'
        ' velocity_constant="10" bus_voltage="24" peak_torque="2"/></actuator></actuators>'
    )
    (tmp_path / "leg.xml").write_text(
        '<mujoco><custom><text name="jaxmor:actuators" data="motors.xml"/></custom><worldbody>'
        '<geom type="plane" size="1 1 1"/><body name="base" pos="0 0 .5"><freejoint/><geom type="box" size=".1 .1 .1"/>'
        '<body name="leg" pos="0 0 -.1"><joint name="hip" axis="0 1 0"/><joint name="slide" type="slide"/>'
        '<geom type="capsule" fromto="0 0 0 0 0 -.3" size=".02"/></body></body></worldbody>'
        '<actuator><position name="servo" joint="slide" kp="30"/></actuator></mujoco>'
    )
    model = jaxmor.load_mjcf(tmp_path / "leg.xml")
    state = jaxmor.set_actuator_torques(model, jaxmor.init_state(model), [5.0])
    state = run(model, jaxmor.set_ctrl(model, state, [0.02]))
    jaxmor.export_world(model, state, tmp_path / "world.xml")
    loaded, restored = jaxmor.load_world(tmp_path / "world.xml")
    assert loaded.affine.names == ("servo",) and jaxmor.actuator_names(loaded) == ["hip"]
    assert _leaves_equal(state, restored) == []
    assert _leaves_equal(run(model, state), run(loaded, restored)) == []


def test_export_world_refuses_what_a_world_file_cannot_hold(quadruped_world, tmp_path):
    model, state = quadruped_world
    heavier = model.replace(body_mass=model.body_mass.at[0].multiply(1.1))
    with pytest.raises(ArgumentError, match=r"model\.body_mass differs"):
        jaxmor.export_world(heavier, state, tmp_path / "w.xml")
    with pytest.raises(ArgumentError, match="loaded from a file"):
        text = QUADRUPED_URDF.read_text()
        from_text = jaxmor.load_urdf(text, resource_dir=QUADRUPED_URDF.parent)
        jaxmor.export_world(from_text, jaxmor.init_state(from_text), tmp_path / "w.xml")
    batch = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(model.q_default, (2, 1)))
    with pytest.raises(ArgumentError):
        jaxmor.export_world(model, batch, tmp_path / "w.xml")


def _world_text(tmp_path, quadruped_world) -> str:
    model, state = quadruped_world
    jaxmor.export_world(model, state, tmp_path / "good.xml")
    return (tmp_path / "good.xml").read_text()


def test_a_world_naming_a_missing_description_names_the_world_file_and_line(quadruped_world, tmp_path):
    text = _world_text(tmp_path, quadruped_world).replace("quadruped.urdf", "gone.urdf")
    (tmp_path / "bad.xml").write_text(text)
    with pytest.raises(ModelError, match="the robot's description .*gone.urdf.* is missing") as info:
        jaxmor.load_world(tmp_path / "bad.xml")
    assert info.value.source == str(tmp_path / "bad.xml") and info.value.line == 2


def test_a_world_actuator_on_an_unknown_joint_names_the_world_file_and_line(quadruped_world, tmp_path):
    text = _world_text(tmp_path, quadruped_world).replace('joint="RH_KFE"', 'joint="RH_ANKLE"', 1)
    (tmp_path / "bad.xml").write_text(text)
    with pytest.raises(ModelError, match="RH_ANKLE") as info:
        jaxmor.load_world(tmp_path / "bad.xml")
    line = next(k for k, row in enumerate(text.splitlines(), 1) if 'joint="RH_ANKLE"' in row)
    assert info.value.source == str(tmp_path / "bad.xml") and info.value.line == line


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace('<value name="q" shape="19">', '<value name="q" shape="18">'), "has shape"),
        (lambda t: t.replace("<jaxmor_world", "<world").replace("</jaxmor_world>", "</world>"), "not <jaxmor_world>"),
        (lambda t: t.replace('version="1"', 'version="9"'), "version"),
        (lambda t: t[: len(t) // 2], "malformed XML"),
        (lambda t: t.replace('timestep="0.002"', 'timestep="-1.0"'), "timestep"),
        (lambda t: t.replace('<value name="u"', '<value name="speed"'), "unexpected state value"),
    ],
)
def test_a_bad_world_file_is_refused_naming_the_file(quadruped_world, tmp_path, edit, message):
    (tmp_path / "bad.xml").write_text(edit(_world_text(tmp_path, quadruped_world)))
    with pytest.raises(ModelError, match=message) as info:
        jaxmor.load_world(tmp_path / "bad.xml")
    assert info.value.source == str(tmp_path / "bad.xml")


# --------------------------------------------------------------------------------------------------
# Packages.


@pytest.mark.filterwarnings("ignore:.*move no mass")  # the one-leg Hound has no inertias
def test_a_urdf_package_carries_its_actuator_files_and_meshes_and_loads_elsewhere(tmp_path):
    pytest.importorskip("trimesh")
    corners = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    faces = "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
    robot = tmp_path / "src" / "robot"
    shutil.copytree(HOUND_URDF.parent, robot)
    (robot.parent / "meshes").mkdir()
    (robot.parent / "meshes" / "cube.obj").write_text("".join(f"v {x} {y} {z}\n" for x, y, z in corners) + faces)
    text = (robot / "hound.urdf").read_text()
    mesh = '<collision><geometry><mesh filename="../meshes/cube.obj" scale=".05 .05 .05"/></geometry></collision>'
    text = text.replace('<link name="base"/>', f'<link name="base">{mesh}</link>', 1)
    (robot / "hound.urdf").write_text(text)
    model = jaxmor.load_urdf(robot / "hound.urdf")
    assert model.ng and any(t == jaxmor.GeomType.MESH for t in model.geom_type)
    written = jaxmor.export_package(model, robot / "hound.urdf", tmp_path / "package")
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "package", elsewhere)
    shutil.rmtree(tmp_path / "src")  # nothing of the original is left to find
    loaded = jaxmor.load_urdf(elsewhere / written.name)
    assert sorted(p.name for p in (elsewhere / "actuators").iterdir()) and (elsewhere / "meshes" / "cube.obj").is_file()
    assert _leaves_equal(model, loaded.replace(source=model.source)) == []


def test_an_mjcf_package_inlines_its_includes_and_carries_its_files(tmp_path):
    pytest.importorskip("trimesh")
    src = tmp_path / "src"
    (src / "parts").mkdir(parents=True)
    (src / "assets").mkdir()
    corners = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    faces = "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
    (src / "assets" / "cube.obj").write_text("".join(f"v {x} {y} {z}\n" for x, y, z in corners) + faces)
    (src / "hip.xml").write_text(
        '<actuator_model name="hip" gear_ratio="10"><motor resistance="0.5" torque_constant="0.1"'
        ' velocity_constant="10" bus_voltage="24"/></actuator_model>'
    )
    (src / "motors.xml").write_text('<actuators><actuator joint="hip" file="hip.xml"/></actuators>')
    (src / "parts" / "body.xml").write_text(
        '<mujoco><worldbody><body name="b" pos="0 0 1"><freejoint/><inertial pos="0 0 0" mass="1"'
        ' diaginertia=".1 .1 .1"/><geom type="mesh" mesh="cube"/><body name="l"><joint name="hip"/>'
        '<geom size=".05"/></body></body></worldbody></mujoco>'
    )
    (src / "scene.xml").write_text(
        '<mujoco><compiler meshdir="assets"/><asset><mesh file="cube.obj" scale=".1 .1 .1"/></asset>'
        '<custom><text name="jaxmor:actuators" data="motors.xml"/></custom><include file="parts/body.xml"/>'
        '<worldbody><geom type="plane" size="1 1 1"/></worldbody></mujoco>'
    )
    model = jaxmor.load_mjcf(src / "scene.xml")
    written = jaxmor.export_package(model, src / "scene.xml", tmp_path / "package")
    shutil.rmtree(src)
    loaded = jaxmor.load_mjcf(written)
    assert _leaves_equal(model, loaded.replace(source=model.source)) == []
    mujoco = pytest.importorskip("mujoco")
    assert mujoco.MjModel.from_xml_path(str(written)).nq == model.nq  # MuJoCo loads the package too


# --------------------------------------------------------------------------------------------------
# Checkpoints.


def test_a_checkpoint_restores_one_world_bitwise_and_it_continues_identically(quadruped_world, run, tmp_path):
    model, state = quadruped_world
    jaxmor.save_checkpoint(tmp_path / "one.npz", model, state)
    restored_model, restored = jaxmor.load_checkpoint(tmp_path / "one.npz", model=model)
    assert _leaves_equal(model, restored_model) == [] and _leaves_equal(state, restored) == []
    assert restored_model.body_joint_type == model.body_joint_type
    assert isinstance(restored_model.body_joint_type[0], jaxmor.JointType)
    assert _leaves_equal(run(model, state), run(restored_model, restored)) == []


def test_a_checkpoint_of_randomized_batched_worlds_restores_bitwise(quadruped_world, tmp_path):
    model, state = quadruped_world
    models, axes = jaxmor.randomize(model, jax.random.key(1), 4, {"body.mass": jaxmor.scale(0.9, 1.1)})
    states = jaxmor.init_states(models, axes, 4, q=jnp.tile(state.q, (4, 1)))
    states32 = jax.tree.map(lambda x: x.astype(jnp.float32) if x.dtype == jnp.float64 else x, states)
    for saved in (states32, states):
        jaxmor.save_checkpoint(tmp_path / "batch.npz", models, saved)
        restored_models, restored = jaxmor.load_checkpoint(tmp_path / "batch.npz", model=model)
        assert _leaves_equal(models, restored_models) == [] and _leaves_equal(saved, restored) == []


def test_a_checkpoint_of_another_model_is_refused(quadruped_world, tmp_path):
    model, state = quadruped_world
    jaxmor.save_checkpoint(tmp_path / "c.npz", model, state)
    with pytest.raises(ArgumentError, match=r"belongs to another model: Model\.nq: 19 vs 10"):
        jaxmor.load_checkpoint(tmp_path / "c.npz", model=jaxmor.load_urdf(HOUND_URDF))


class _Exploit:
    """Pickled, this runs a command when it is unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_loading_a_crafted_pickle_runs_nothing(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "evil.npz").write_bytes(pickle.dumps(_Exploit(marker)))
    with pytest.raises(ModelError, match="refused without running it"):
        jaxmor.load_checkpoint(tmp_path / "evil.npz")
    np.savez(tmp_path / "evil2.npz", jaxmor_checkpoint=np.array([_Exploit(marker)], dtype=object))
    with pytest.raises(ModelError, match="refused without running it"):
        jaxmor.load_checkpoint(tmp_path / "evil2.npz")
    assert not marker.exists()


def test_truncated_foreign_and_missing_checkpoints_are_refused_naming_the_file(quadruped_world, tmp_path):
    model, state = quadruped_world
    jaxmor.save_checkpoint(tmp_path / "c.npz", model, state)
    data = (tmp_path / "c.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    np.savez(tmp_path / "foreign.npz", weights=np.ones(3))
    for name, message in (("cut.npz", "truncated"), ("foreign.npz", "foreign"), ("none.npz", "no such file")):
        with pytest.raises(ModelError, match=message) as info:
            jaxmor.load_checkpoint(tmp_path / name)
        assert info.value.source == str(tmp_path / name)


# --------------------------------------------------------------------------------------------------
# Many devices.

_SHARDED = textwrap.dedent(
    """
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np, jax.numpy as jnp, jaxmor
    from jax.sharding import NamedSharding, PartitionSpec
    assert jax.device_count() == 4, jax.devices()
    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    q = jnp.asarray(jaxmor.robots.quadruped_standing_q(model))
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(q, (8, 1)))
    torques = jax.random.uniform(jax.random.key(0), (8, 30, model.na), minval=-20.0, maxval=20.0)
    run = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=1, groups=4)[0])
    plain = run(states, torques)
    sharded_in = (jaxmor.shard_worlds(states), jaxmor.shard_worlds(torques))
    sharded = run(*sharded_in)
    print("difference", float(np.abs(np.asarray(sharded.q) - np.asarray(plain.q)).max()))
    eager = jaxmor.rollout_batch(model, *sharded_in, chunk_size=1)[0]  # groups from the placement: 4
    print("eager", float(np.abs(np.asarray(eager.q) - np.asarray(plain.q)).max()), len(eager.q.sharding.device_set))
    print("spec", sharded.q.sharding.spec == PartitionSpec("worlds"), len(sharded.q.sharding.device_set))
    hlo = run.lower(*sharded_in).compile().as_text()
    print("collectives", [c for c in ("all-gather", "all-reduce", "all-to-all", "collective-permute") if c in hlo])
    try:
        jaxmor.shard_worlds(jax.tree.map(lambda x: x[:6], states))
    except jaxmor.ArgumentError as err:
        print("refused", "multiple of the device count" in str(err))
    """
)


@pytest.mark.slow
def test_a_rollout_sharded_over_four_devices_equals_the_unsharded_one_and_stays_sharded():
    """Four host devices (``--xla_force_host_platform_device_count=4``, in a subprocess: the flag must be set
    before JAX starts). The devices each get 2 of 8 quadrupeds; XLA compiles the per-device program for 2
    worlds instead of 8, whose round-off may differ by an ulp (measured 1.1e-16), hence 1e-12."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", _SHARDED], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    assert float(lines["difference"]) < 1e-12
    eager_difference, eager_devices = lines["eager"].split()
    assert float(eager_difference) < 1e-12 and eager_devices == "4"  # eager: four groups read off the placement
    assert lines["spec"] == "True 4"  # the output stays sharded over the world axis, on the four devices
    assert lines["collectives"] == "[]"  # each device ran its own worlds
    assert lines["refused"] == "True"


def test_shard_worlds_on_one_device_places_and_keeps_values(quadruped_world):
    model, state = quadruped_world
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(state.q, (3, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        placed = jaxmor.shard_worlds(states)
    assert _leaves_equal(states, placed) == []
    with pytest.raises(ArgumentError, match="axes entries"):
        jaxmor.shard_worlds(states, axes=jax.tree.map(lambda _: 1, states))
