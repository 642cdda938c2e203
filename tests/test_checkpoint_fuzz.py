"""Checkpoints and world files are untrusted input: every damaged or crafted one is refused with a jaxmor error.

* A few hundred seeded corruptions of a checkpoint (bytes and bits flipped, truncations, crafted structures and
  arrays: tests/fuzz.py) each raise ModelError, or load the saved model and state bit for bit; with ``model=``,
  ArgumentError is allowed too.
* The same for seeded mutations of a world file (:func:`jaxmor.load_world`).
* Regressions: each way a crafted checkpoint used to escape as another exception, or to load wrongly.
"""

from __future__ import annotations

import io
import json
import random
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from fuzz import mutate, mutate_checkpoint
from models import quadruped_standing_q

import jaxmor
from jaxmor import ArgumentError, ModelError


@pytest.fixture(scope="module")
def saved(quadruped, tmp_path_factory):
    """A quadruped on the ground, a moved state of it, and the checkpoint's bytes."""
    model = jaxmor.add_ground(quadruped)
    state = jaxmor.init_state(model, q=quadruped_standing_q(model))
    state = state.replace(u=jnp.arange(model.nv, dtype=state.u.dtype) * 0.1)
    path = tmp_path_factory.mktemp("checkpoint") / "c.npz"
    jaxmor.save_checkpoint(path, model, state)
    return model, state, path.read_bytes()


def _identical(a, b) -> bool:
    """Whether two pytrees have the same structure and static fields and bitwise equal leaves of equal dtypes."""
    if jax.tree.structure(a) != jax.tree.structure(b):
        return False
    return all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


def _fuzz_checkpoints(saved, tmp_path, seeds: range) -> dict[str, int]:
    """Load a mutated checkpoint per seed (every third with ``model=``); the outcomes counted by kind."""
    model, state, data = saved
    outcomes: dict[str, int] = {}
    for seed in seeds:
        rng = random.Random(seed)
        mutated, kind = mutate_checkpoint(data, rng)
        path = tmp_path / f"m{seed}.npz"
        path.write_bytes(mutated)
        given = model if seed % 3 == 0 else None
        try:
            loaded = jaxmor.load_checkpoint(path, model=given)
        except ModelError as err:
            assert err.source == str(path), (seed, kind, err)
            outcome = "refused"
        except ArgumentError as err:
            assert given is not None, (seed, kind, err)
            outcome = "mismatch"
        else:
            assert _identical(loaded[0], model) and _identical(loaded[1], state), (seed, kind)
            assert loaded[0].source == model.source
            outcome = "loaded"
        outcomes[f"{kind}:{outcome}"] = outcomes.get(f"{kind}:{outcome}", 0) + 1
    return outcomes


def test_three_hundred_corrupted_checkpoints_are_refused_or_load_the_original(saved, tmp_path):
    outcomes = _fuzz_checkpoints(saved, tmp_path, range(300))  # about 8 s on a loaded 2-core machine
    assert sum(v for k, v in outcomes.items() if k.endswith("refused")) > 250, outcomes
    assert {k.split(":")[0] for k in outcomes} == {"byte", "bit", "truncate", "structure", "array", "entries"}


# --------------------------------------------------------------------------------------------------
# World files.

_WORLD_TAGS = ("jaxmor_world", "robot", "options", "ground", "battery", "actuators", "actuator", "motor", "state")
_WORLD_EDITS = (
    ('dtype="float64"', ('dtype="complex64"', 'dtype="x"', 'dtype="float16"', 'dtype=""', 'dtype="int32"')),
    ('shape="19"', ('shape="1e9"', 'shape="-19"', 'shape="99999999999999999999"', 'shape="19 x"', 'shape=""')),
    (">0.0 ", (">nan ", ">1e999 ", ">0x10 ", ">1_0 ", "> ", ">0.0 " * 40, ">True ")),
    ('format="urdf"', ('format="mjcf"', 'format="x"', 'format=""')),
    ('version="1"', ('version="2"', 'version=""', 'version="1.0"')),
)


@pytest.fixture(scope="module")
def world_text(quadruped, tmp_path_factory):
    """A world file of the quadruped on the ground with a battery, and its folder."""
    model = jaxmor.with_battery(jaxmor.add_ground(quadruped), 48.0, 0.05)
    state = jaxmor.init_state(model, q=quadruped_standing_q(model))
    folder = tmp_path_factory.mktemp("world")
    jaxmor.export_world(model, state, folder / "world.xml")
    return (folder / "world.xml").read_text(), folder


def test_mutated_world_files_are_refused_or_load(world_text):
    text, folder = world_text
    outcomes = {"refused": 0, "loaded": 0}
    for seed in range(80):
        rng = random.Random(seed)
        if seed % 2:
            mutated = mutate(text, rng, _WORLD_TAGS, ("x",))
        else:
            old, choices = rng.choice(_WORLD_EDITS)
            mutated = text.replace(old, rng.choice(choices), 1)
        path = folder / f"m{seed}.xml"
        path.write_text(mutated)
        try:
            jaxmor.load_world(path)
        except (ModelError, ArgumentError):
            outcomes["refused"] += 1
        else:
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 40, outcomes


def test_a_world_file_state_dtype_must_be_a_float(world_text):
    text, folder = world_text
    for dtype in ("complex64", "x", "int32"):
        (folder / "bad.xml").write_text(text.replace('dtype="float64"', f'dtype="{dtype}"'))
        with pytest.raises(ModelError, match=f"dtype must be float32 or float64, got '{dtype}'"):
            jaxmor.load_world(folder / "bad.xml")


# --------------------------------------------------------------------------------------------------
# Regressions: crafted checkpoints that raised other errors, or loaded.


def _rewrite(data: bytes, path, meta=None, **arrays) -> None:
    """Write the checkpoint ``data`` to ``path`` with its structure edited by ``meta`` and arrays replaced."""
    with np.load(io.BytesIO(data)) as archive:
        content = {k: archive[k] for k in archive.files}
    structure = json.loads(content["jaxmor_checkpoint"].tobytes())
    if meta is not None:
        meta(structure)
    content["jaxmor_checkpoint"] = np.frombuffer(json.dumps(structure).encode(), np.uint8)
    content.update({k.replace("__", "/"): v for k, v in arrays.items()})
    np.savez(path, **content)


@pytest.mark.parametrize(
    ("leaf", "dtype", "message"),
    [
        ("model/body_mass", np.complex64, r"model\.body_mass: dtype complex64, but this field holds floats"),
        ("model/actuators/motor/resistance", "U8", r"model\.actuators\.motor\.resistance: dtype str256"),
        ("model/body_mass", np.int64, r"model\.body_mass: dtype int64"),
        ("model/body_mass", np.uint8, r"model\.body_mass: dtype uint8"),
        ("model/body_mass", np.float32, r"model\.body_mass: dtype float32, but model\.opt\.timestep is float64"),
        ("state/contact_key", np.float64, r"state\.contact_key: dtype float64, but this field holds ints"),
        ("state/nonfinite", np.int32, r"state\.nonfinite: dtype int32, but this field holds bools"),
    ],
)
def test_a_leaf_of_another_dtype_is_refused_naming_the_field(saved, tmp_path, leaf, dtype, message):
    model, _, data = saved
    with np.load(io.BytesIO(data)) as archive:
        original = archive[leaf]
    _rewrite(data, tmp_path / "c.npz", **{leaf.replace("/", "__"): original.astype(dtype)})
    for given in (None, model):
        with pytest.raises(ModelError, match=message) as info:
            jaxmor.load_checkpoint(tmp_path / "c.npz", model=given)
        assert info.value.source == str(tmp_path / "c.npz")


@pytest.mark.parametrize(
    ("leaf", "shape", "message"),
    [
        ("model/body_mass", (14,), r"model\.body_mass: shape \(14,\), expected \(worlds\.\.\.\) \+ \(13,\)"),
        ("model/body_inertia", (13, 3), r"model\.body_inertia: shape \(13, 3\), expected \(13, 3, 3\)"),
        ("state/q", (2, 19), r"state\.q: leading world axes \(2,\), but state\.q|state\.u: leading world axes"),
        ("model/opt/gravity", (4,), r"model\.opt\.gravity: shape \(4,\)"),
    ],
)
def test_a_leaf_of_another_shape_is_refused_naming_the_field(saved, tmp_path, leaf, shape, message):
    _, _, data = saved
    _rewrite(data, tmp_path / "c.npz", **{leaf.replace("/", "__"): np.zeros(shape)})
    with pytest.raises(ModelError, match=message):
        jaxmor.load_checkpoint(tmp_path / "c.npz")


def _set(path: tuple, value):
    def edit(meta):
        node = meta
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


_F = ("model", "fields")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _set((*_F, "body_joint_type", "tuple", 0, "value"), 99),
            r"body_joint_type\[0\]: 99 is not a JointType",
        ),
        (_set((*_F, "body_joint_type", "tuple", 0, "value"), [1]), r"\[1\] is not a JointType"),
        (_set((*_F, "nq"), {"value": "19"}), r"model\.nq: expected a int, got \{'value': '19'\}"),
        (_set((*_F, "nq"), {"value": 10**30}), r"model\.q_default: shape \(19,\), expected"),
        (_set((*_F, "opt", "dataclass"), "State"), r"model\.opt: expected a Options node"),
        (_set((*_F, "opt", "fields", "extra"), {"value": 1}), r"model\.opt: the fields of a Options differ.*extra"),
        (_set((*_F, "body_parent", "tuple"), [{"value": 0}]), r"model\.body_parent: 1 entries, but the nb count is 13"),
        (_set((*_F, "body_mass"), {"array": "state/q"}), r"model\.body_mass: shape \(19,\)"),
        (_set((*_F, "body_mass"), {"value": 1.0}), r"model\.body_mass: expected an array node"),
        (_set((*_F, "opt", "fields", "friction_rule"), {"value": "x"}), r"opt\.friction_rule must be one of"),
        (_set(("version",), 3.0), r"checkpoint format version 3\.0; this jaxmor reads"),
        (_set(("model",), {"enum": "Model", "value": 1}), r"model: expected a Model node"),
        (_set(("state",), None), r"state: expected a JSON object, got None"),
    ],
)
def test_a_crafted_structure_is_refused_naming_the_field(saved, tmp_path, edit, message):
    _, _, data = saved
    _rewrite(data, tmp_path / "c.npz", meta=edit)
    with pytest.raises(ModelError, match=message):
        jaxmor.load_checkpoint(tmp_path / "c.npz")


def test_deeply_nested_structures_are_refused(saved, tmp_path):
    _, _, data = saved
    for depth, message in ((30, r"model\.mesh_faces\[0\]\[0\]\[0\]: expected a int"), (100_000, "does not parse")):
        deep = '{"tuple": [' * depth + '{"value": 1}' + "]}" * depth
        with np.load(io.BytesIO(data)) as archive:
            content = {k: archive[k] for k in archive.files}
        meta = json.loads(content["jaxmor_checkpoint"].tobytes())
        meta["model"]["fields"]["mesh_faces"] = "__DEEP__"
        text = json.dumps(meta).replace('"__DEEP__"', deep)
        content["jaxmor_checkpoint"] = np.frombuffer(text.encode(), np.uint8)
        np.savez(tmp_path / "deep.npz", **content)
        with pytest.raises(ModelError, match=message):
            jaxmor.load_checkpoint(tmp_path / "deep.npz")


def test_an_unsupported_compression_a_plain_npy_and_extra_arrays_are_refused(saved, tmp_path):
    _, _, data = saved
    damaged = bytearray(data)
    at = damaged.find(b"PK\x01\x02")  # the first entry of the central directory: its compression method
    damaged[at + 10 : at + 12] = (99).to_bytes(2, "little")
    (tmp_path / "method.npz").write_bytes(bytes(damaged))
    with pytest.raises(ModelError, match="NotImplementedError"):
        jaxmor.load_checkpoint(tmp_path / "method.npz")
    np.save(tmp_path / "plain.npy", np.zeros(3))
    with pytest.raises(ModelError, match="one .npy array"):
        jaxmor.load_checkpoint(tmp_path / "plain.npy")
    _rewrite(data, tmp_path / "extra.npz", model__extra=np.zeros(3))
    with pytest.raises(ModelError, match="arrays that no field names: model/extra"):
        jaxmor.load_checkpoint(tmp_path / "extra.npz")
    with zipfile.ZipFile(tmp_path / "method.npz") as archive:  # the damage is where the test meant it
        assert archive.infolist()[0].compress_type == 99


_F5_NA = ("na",)
_F5_DOF = tuple(
    f"dof_{n}"
    for n in ("armature", "damping", "friction", "stiffness", "springref", "effort_limit", "velocity_limit")
    + ("lower", "upper", "actuator_force_lower", "actuator_force_upper")
)
#: The Model leaves' dims of checkpoint format 5, frozen as the reader held them before they were declared with
#: the fields (``(default dims, {field: dims})`` per class): the declarations must give the same.
_FORMAT_5_LEAVES: dict[str, tuple[tuple | None, dict[str, tuple]]] = {
    "Model": (
        None,
        {
            **dict.fromkeys(("body_tree_rotation", "body_inertia"), ("nb", 3, 3)),
            **dict.fromkeys(("body_tree_translation", "body_axis", "body_com"), ("nb", 3)),
            "body_mass": ("nb",),
            "link_rotation": ("nl", 3, 3),
            "link_translation": ("nl", 3),
            "geom_size": ("ng", 3),
            "geom_rotation": ("ng", 3, 3),
            "geom_translation": ("ng", 3),
            **dict.fromkeys(("geom_friction", "geom_restitution"), ("ng",)),
            "mesh_vertices": ("nm", "mesh_vertices", 3),
            "mesh_planes": ("nm", "mesh_planes", 4),
            **dict.fromkeys(_F5_DOF, ("nv",)),
            "q_default": ("nq",),
            **dict.fromkeys(("ground_height", "ground_friction", "ground_restitution"), ()),
        },
    ),
    "Options": ((), {"gravity": (3,), "wind": (3,)}),  # wind: format 7 (its other new leaves take the defaults)
    "MotorActuators": (_F5_NA, {"coupling_ratio": ("nk",)}),
    "DcMotorParameters": (_F5_NA, {}),
    "MotorDynamics": (_F5_NA, {}),
    "DriveController": (_F5_NA, {}),
    "Backlash": (_F5_NA, {}),
    "Battery": ((), {}),
    "ResidualNetwork": (
        None,
        {
            "input_scale": (3,),
            **dict.fromkeys(("output_scale", "b_out"), ()),
            "w_in": ("nf", "width"),
            **dict.fromkeys(("b_in", "w_out"), ("width",)),
            "w_hidden": ("extra", "width", "width"),
            "b_hidden": ("extra", "width"),
        },
    ),
    "AffineActuators": (("nu",), {}),
    "Sites": (("ns", 3), {"rotation": ("ns", 3, 3)}),
    "Sensors": (("nsensor",), {"inertial_translation": ("ni", 3), "magnetic": (3,)}),
    "Equalities": (
        None,
        {
            "point_anchor": ("np", 2, 3),
            "point_frame": ("np", 2, 4),
            "point_torque_scale": ("np",),
            "joint_polycoef": ("nj", 5),
            "joint_reference": ("nj", 2),
            "tendon_polycoef": ("nt", 5),
            "tendon_reference": ("nt", 2),
            "active": ("ne",),
        },
    ),
    "Tendons": (("nt",), {"coefficient": ("ntj",)}),
    "TerrainGrid": ((), {"world": ("nw",), "cells": ("ncell", "capacity"), "allowed": ("nr", "nw"), "origin": (2,)}),
    "HeightField": ((), {"heights": ("ny", "nx"), "origin": (2,), "spacing": (2,)}),
}
_FORMAT_5_KINDS = {
    "TerrainGrid.world": "i",
    "TerrainGrid.cells": "i",
    "TerrainGrid.allowed": "b",
}


def _model_classes() -> dict[str, type]:
    from jaxmor.modeling.checkpoint import _TYPES

    skip = ("State", "ActuatorState", "MotorState")
    return {n: c for n, c in _TYPES.items() if n not in skip and hasattr(c, "__dataclass_fields__")}


def test_the_declared_leaves_give_format_5s_dims_and_kinds():
    """Every array field of the Model's dataclasses is declared (``jaxmor.fields.leaf``), and the declarations give
    exactly the dims and kinds of the format-5 reader's table: format-5 files read as before."""
    from jaxmor.fields import declared_leaves

    classes = _model_classes()
    assert set(classes) == set(_FORMAT_5_LEAVES) | {"Keyframe"}
    for name, cls in classes.items():
        arrays = [f for f, hint in __import__("typing").get_type_hints(cls).items() if hint is jax.Array]
        declared = declared_leaves(cls)
        assert list(declared) == arrays, name  # a field without its declaration fails here
        default, dims = _FORMAT_5_LEAVES.get(name, (None, {}))
        for field, leaf in declared.items():
            assert leaf.dims == dims.get(field, default), (name, field)
            assert leaf.kind == _FORMAT_5_KINDS.get(f"{name}.{field}", "f"), (name, field)


def test_a_state_kind_matches_init_state(saved):
    from jaxmor.modeling.checkpoint_format import _STATE_KINDS

    model, state, _ = saved
    flat = jax.tree_util.tree_flatten_with_path(jax.eval_shape(jaxmor.init_state, model))[0]
    for path, leaf in flat:
        name = ".".join(p.name for p in path)
        assert np.dtype(leaf.dtype).kind == _STATE_KINDS.get(name, "f"), name


def test_two_terrain_grids_keep_their_own_arrays(saved, tmp_path):
    model, state, _ = saved

    def grid(origin: float) -> jaxmor.types.TerrainGrid:
        return jaxmor.types.TerrainGrid(
            kind=jaxmor.GeomType.BOX,
            robot=(0,),
            shape=(1, 2),
            capacity=1,
            fingerprint="f",
            world=jnp.zeros((3,), jnp.int32),
            cells=jnp.full((2, 1), -1, jnp.int32),
            allowed=jnp.ones((1, 3), bool),
            origin=jnp.full((2,), origin),
            cell_size=jnp.asarray(1.0),
        )

    two = model.replace(terrain=(grid(0.0), grid(5.0)))
    jaxmor.save_checkpoint(tmp_path / "two.npz", two, state)
    loaded, _ = jaxmor.load_checkpoint(tmp_path / "two.npz", model=two)
    assert _identical(loaded, two)  # each grid has its own arrays in the archive
    wider = np.ones((1, 4), bool)
    _rewrite((tmp_path / "two.npz").read_bytes(), tmp_path / "bad.npz", model__terrain__1__allowed=wider)
    with pytest.raises(ModelError, match=r"model\.terrain\[1\]\.allowed: shape \(1, 4\), expected .*\(1, 3\)"):
        jaxmor.load_checkpoint(tmp_path / "bad.npz")


def test_an_archive_that_would_expand_past_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A small file whose entries declare more than MAX_CHECKPOINT_BYTES (1 GiB) decompressed is refused from the
    archive's directory, before a byte is decompressed (here a 4 MiB cap and an entry of 8 MiB of zeros, 8 KiB on
    disk); the cap counts the declared sizes, so the refusal names them."""
    from jaxmor.modeling import checkpoint

    monkeypatch.setattr(checkpoint, "MAX_CHECKPOINT_BYTES", 4 * 2**20)
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model__x.npy", bytes(8 * 2**20))
    assert path.stat().st_size < 64 * 2**10
    with pytest.raises(ModelError, match=r"would take 8,388,608 bytes, more than MAX_CHECKPOINT_BYTES"):
        jaxmor.load_checkpoint(path)
    assert checkpoint.MAX_CHECKPOINT_BYTES == 4 * 2**20


#: What format 7 added (structure paths from the top, and their arrays; the height field's window, activation
#: dynamics, the fluid): format-6 files lack them.
FORMAT_7 = {
    ("model", "height_field", "window"): None,
    **{("model", "affine", n): f"model/affine/{n}" for n in ("time_constant", "act_lower", "act_upper")},
    ("model", "affine", "dynamics"): None,
    ("model", "affine", "act_early"): None,
    ("state", "act"): "state/act",
    ("model", "opt", "density"): "model/opt/density",
    ("model", "opt", "viscosity"): "model/opt/viscosity",
    ("model", "opt", "fluid_forces"): None,
    ("model", "opt", "wind"): "model/opt/wind",
}
#: What format 8 added (mocap bodies): format-7 files lack them.
FORMAT_8 = {
    ("model", "mocap_links"): None,
    ("state", "mocap_pos"): "state/mocap_pos",
    ("state", "mocap_quat"): "state/mocap_quat",
}
FORMAT_9 = {("model", "equality", "point_mocap"): None}


def _older(tmp_path, model, state, version: int, removed: dict):
    """A checkpoint of ``model`` and ``state`` made into one of an older ``version``: each of ``removed``'s structure
    paths (the top entry, then field names) taken out with its array entry (or ``None``); returns what loading it
    gives."""
    jaxmor.save_checkpoint(tmp_path / "new.npz", model, state)
    with np.load(tmp_path / "new.npz") as archive:
        content = {k: archive[k] for k in archive.files if k not in removed.values()}
    structure = json.loads(content["jaxmor_checkpoint"].tobytes())
    structure["version"] = version
    for path in removed:
        node = structure[path[0]]
        for key in path[1:-1]:
            node = node["fields"][key]
        if node.get("fields") is not None:
            node["fields"].pop(path[-1])
    content["jaxmor_checkpoint"] = np.frombuffer(json.dumps(structure).encode(), np.uint8)
    np.savez(tmp_path / "old.npz", **content)
    return jaxmor.load_checkpoint(tmp_path / "old.npz")


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_a_format_5_checkpoint_loads_with_no_constant_bias(tmp_path):
    """Format 5 is format 6 without ``Model.affine.bias_0``: a file made into a format-5 one (the version set to 5,
    what formats 6 and 7 added removed) loads with the bias 0 and everything else as saved."""
    model = jaxmor.load_mjcf(
        '<mujoco><worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody>'
        '<actuator><position joint="j" kp="3"/></actuator></mujoco>'
    )
    state = jaxmor.init_state(model)
    removed = {**FORMAT_9, **FORMAT_8, **FORMAT_7, ("model", "affine", "bias_0"): "model/affine/bias_0"}
    loaded, loaded_state = _older(tmp_path, model, state, 5, removed)
    assert _identical(loaded, model) and _identical(loaded_state, state)
    assert loaded.affine.bias_0.shape == (1,) and float(loaded.affine.bias_0[0]) == 0.0


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_a_format_6_checkpoint_gets_the_window_and_no_activation_dynamics(tmp_path):
    """Format 6 is format 7 without ``Model.height_field.window`` and activation dynamics: a file of a box on a height
    field with an affine actuator made into a format-6 one loads with the window computed from its geoms, no
    dynamics (time constants 1, unlimited activations) and zero activations, everything else as saved."""
    body = jaxmor.load_mjcf(
        '<mujoco><worldbody><body><freejoint/><geom type="box" size=".2 .1 .1"/><body><joint name="j"/>'
        '<geom size=".05"/></body></body></worldbody><actuator><motor joint="j"/></actuator></mujoco>'
    )
    model = jaxmor.with_height_field(body, np.zeros((8, 8)), spacing=0.1)
    assert model.height_field.window == 8  # 2 ceil(0.245 / 0.1) + 2
    state = jaxmor.init_state(model)
    loaded, loaded_state = _older(tmp_path, model, state, 6, {**FORMAT_9, **FORMAT_8, **FORMAT_7})
    assert _identical(loaded, model) and _identical(loaded_state, state)
    assert loaded.height_field.window == 8 and loaded.affine.dynamics == ()
    assert float(loaded.affine.time_constant[0]) == 1.0 and float(loaded.affine.act_upper[0]) == np.inf
    assert not loaded.opt.fluid_forces and float(loaded.opt.density) == 0.0


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_a_format_7_checkpoint_loads_without_mocap_bodies_and_mocap_links_are_checked(tmp_path):
    """Format 7 is format 8 without mocap bodies: a batch of two worlds saved, made into a format-7 file, loads as
    saved with no mocap bodies (their State fields empty, with the batch's axis). A format-8 file whose mocap link
    is not welded to the world is refused."""
    model = jaxmor.load_mjcf('<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>')
    states = jaxmor.init_states(model, None, 2)
    loaded, loaded_states = _older(tmp_path, model, states, 7, {**FORMAT_9, **FORMAT_8})
    assert _identical(loaded, model) and _identical(loaded_states, states)
    assert loaded.mocap_links == () and loaded_states.mocap_pos.shape == (2, 0, 3)
    assert loaded_states.mocap_quat.shape == (2, 0, 4)
    jaxmor.save_checkpoint(tmp_path / "bad.npz", model.replace(mocap_links=(0,)), jaxmor.init_state(model))
    with pytest.raises(ModelError, match="mocap_links: .* not distinct links welded to the world"):
        jaxmor.load_checkpoint(tmp_path / "bad.npz")


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_a_format_8_checkpoint_has_no_equality_on_a_mocap_body_and_the_sides_are_checked(tmp_path):
    """Format 8 is format 9 without ``Model.equality.point_mocap``: a weld of two bodies saved, made into a format-8
    file, loads as saved (neither side on a mocap body). A format-9 file whose equality side names a mocap body
    that the model does not have, or one beside a body, is refused."""
    text = (
        '<mujoco><worldbody><body name="a"><freejoint/><geom size=".1"/></body><body name="b" pos="1 0 0">'
        '<freejoint/><geom size=".1"/></body><body name="m" mocap="true"/></worldbody>'
        '<equality><weld body1="a" body2="b"/></equality></mujoco>'
    )
    model = jaxmor.load_mjcf(text)
    state = jaxmor.init_state(model)
    loaded, loaded_state = _older(tmp_path, model, state, 8, FORMAT_9)
    assert _identical(loaded, model) and _identical(loaded_state, state)
    assert loaded.equality.point_mocap == ((-1, -1),)
    for sides in (((1, -1),), ((-1, 0),)):  # no mocap body 1; body 1 (b) is not the mocap body
        bad = model.replace(equality=model.equality.replace(point_mocap=sides))
        jaxmor.save_checkpoint(tmp_path / "bad.npz", bad, state)
        with pytest.raises(ModelError, match="point_mocap: .* not mocap bodies' indices"):
            jaxmor.load_checkpoint(tmp_path / "bad.npz")
