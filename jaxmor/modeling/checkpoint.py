"""Checkpoints: a Model and a State (one world or a batch) on disk, restored bit for bit.

Format (version :data:`FORMAT_VERSION`): one NumPy ``.npz`` archive, written by ``numpy.savez`` and read with
``allow_pickle=False``, so loading never runs code: a pickled object anywhere in it is refused. It holds

* ``jaxmor_checkpoint``: the UTF-8 JSON of the structure: the format's name and version, and the Model and the
  State as trees of jaxmor's own dataclasses, each static field (topology, names, counts, options) written as
  JSON and each array leaf as the name of an array of the archive;
* ``model/...`` and ``state/...``: the array leaves, with their dtypes and shapes (a batch of worlds keeps its
  leading axes; per-world model leaves, e.g. from :func:`jaxmor.randomize`, too).

A tuple's items are saved under ``.../0``, ``.../1``, ... (e.g. ``model/terrain/1/world``).

A checkpoint is untrusted input: loading decodes the structure against the annotations of jaxmor's own
dataclasses (only those of :data:`_TYPES` and their enums are ever constructed) and checks every array's dtype
kind and trailing shape against the counts of the decoded model (:mod:`jaxmor.modeling.checkpoint_format` has the
rules); anything else in the file, damaged bytes included, is a :class:`~jaxmor.ModelError` naming the file and
the field. A crafted file whose values have valid types, dtypes and shapes loads, as a model edited in Python
would (index tables are not checked against each other). The arrays come back with the dtypes they were saved
with, so a float64 checkpoint needs ``jax_enable_x64`` (loading says so instead of rounding). Arrays sharded over
this process's devices are fetched to the host when saved; a batch sharded across several processes
(``jax.distributed``) is gathered on every process and written by process 0 (docs/worlds.md, "Several hosts").
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import typing
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

from jaxmor.actuation.definitions import AFFINE_DYNAMICS
from jaxmor.checks import check_options
from jaxmor.errors import ArgumentError, ModelError, brief_repr
from jaxmor.io.files import archive_bytes, shortened, writing
from jaxmor.modeling.checkpoint_format import Decoder
from jaxmor.modeling.height_field import refit_window
from jaxmor.state import state_shapes
from jaxmor.types import (
    Model,
    State,
)

#: The format's name and version, written into every checkpoint.
FORMAT = "jaxmor-checkpoint"
#: 2: the motors' dynamics (Model.actuators.dynamics, State.motor_state); 3: equality constraints; 4: command delay
#: and drive controllers (Model.max_delay, the actuators' delay and controller, the State's buffers and step count),
#: the learned residual (Model.actuators.residual, State.actuator_history); 5: backlash (Model.actuators.backlash,
#: State.backlash_play and backlash_rate); 6: the affine actuators' constant bias (Model.affine.bias_0); 7: the height
#: field's window (Model.height_field.window), the affine actuators' activation dynamics (Model.affine.dynamics,
#: time_constant, act_lower, act_upper, act_early; State.act), the fluid (Model.opt.density, viscosity, wind,
#: fluid_forces); 8: mocap bodies (Model.mocap_links, State.mocap_pos and mocap_quat); 9: equality constraints on
#: mocap bodies (Model.equality.point_mocap).
FORMAT_VERSION = 9
#: The versions :func:`load_checkpoint` reads: format 5 is format 6 without the affine actuators' constant bias, which
#: it reads as 0 (:func:`_from_format_5`); format 6 is format 7 without the height field's window, which it computes
#: from the model, and without activation dynamics and fluid (:func:`_from_format_6`); format 7 is format 8 without
#: mocap bodies (:func:`_from_format_7`); format 8 is format 9 without equality constraints on mocap bodies
#: (:func:`_from_format_8`).
READ_VERSIONS = (5, 6, 7, 8, FORMAT_VERSION)
#: The most bytes a checkpoint's arrays may take once decompressed (1 GiB), checked before any is read.
MAX_CHECKPOINT_BYTES = 2**30
#: The entry of a file that holds a model beside other data (:func:`model_entries`).
MODEL_ENTRY = "jaxmor_model"
_META = "jaxmor_checkpoint"


def _reachable_types(*roots: type) -> dict[str, type]:
    """The dataclasses and enums that ``roots`` hold, themselves included, by name (following type annotations)."""
    found: dict[str, type] = {}
    todo = list(roots)
    while todo:
        t = todo.pop()
        if t.__name__ in found:
            continue
        found[t.__name__] = t
        if dataclasses.is_dataclass(t):
            hints = list(typing.get_type_hints(t).values())
            while hints:
                hint = hints.pop()
                hints += [a for a in typing.get_args(hint) if a is not Ellipsis]
                if dataclasses.is_dataclass(hint) or (isinstance(hint, type) and issubclass(hint, enum.Enum)):
                    todo.append(hint)
    return found


#: What a checkpoint may construct: jaxmor's dataclasses and enums that a Model or a State holds, by name.
_TYPES = _reachable_types(Model, State)


def _encode(value, prefix: str, arrays: dict):
    """JSON for a (possibly nested) jaxmor dataclass; its array leaves go into ``arrays``."""
    if isinstance(value, enum.Enum):
        return {"enum": type(value).__name__, "value": value.value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if type(value).__name__ not in _TYPES:
            raise ArgumentError(f"a checkpoint cannot hold a {type(value).__name__}")
        fields = {}
        for f in dataclasses.fields(value):
            child = getattr(value, f.name)
            leaf = f.metadata.get("pytree_node", True) and not isinstance(child, tuple)
            leaf = leaf and not dataclasses.is_dataclass(child) and child is not None
            if leaf and not isinstance(child, (bool, int, float, str)):  # a Python number or text stays one (JSON)
                key = f"{prefix}/{f.name}"
                arrays[key] = np.asarray(jax.device_get(child))
                fields[f.name] = {"array": key}
            else:
                fields[f.name] = _encode(child, f"{prefix}/{f.name}", arrays)
        return {"dataclass": type(value).__name__, "fields": fields}
    if isinstance(value, (tuple, list)):
        return {"tuple": [_encode(v, f"{prefix}/{i}", arrays) for i, v in enumerate(value)]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise ArgumentError(f"a checkpoint cannot hold {type(value).__name__} values ({prefix})")


def save_checkpoint(path: str | os.PathLike, model: Model, state: State) -> None:
    """Write a Model and a State (one world or a batch) to ``path`` (module docstring).

    When some of their arrays span several processes (a batch :func:`jaxmor.shard_worlds` placed over the devices
    of every process after ``jax.distributed.initialize``), the call is collective: every process must make it,
    with the same arrays. The global arrays are gathered on every process, process 0 writes the file (its ``path``;
    the other processes' ``path`` is not used, and their arrays that are not global are taken to equal process
    0's), and every process returns once the file is written. Otherwise each process writes its own ``path``.

    Args:
        path: the file to write (an ``.npz`` archive; the suffix is not added).
        model: the model, batched leaves included.
        state: the state (of one world, or with leading world axes).

    Raises:
        ArgumentError: ``model`` or ``state`` is not a jaxmor Model/State, an array spanning several processes
            could not be gathered (the message names it and the error), or the file cannot be written (the
            system's reason; across processes, on every process when process 0 cannot write it).
    """
    if not isinstance(model, Model) or not isinstance(state, State):
        raise ArgumentError(
            f"save_checkpoint needs a Model and a State, got {type(model).__name__}, {type(state).__name__}"
        )
    (model, state), spans_processes = _gathered((model, state))
    arrays: dict[str, np.ndarray] = {}
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "model": _encode(model, "model", arrays),
        "state": _encode(state, "state", arrays),
    }
    text = json.dumps(meta, allow_nan=True).encode("utf-8")
    if not spans_processes:
        _write(path, text, arrays)
        return
    failure = None
    if jax.process_index() == 0:
        try:
            _write(path, text, arrays)
        except ArgumentError as err:
            failure = err
    _raise_unless_written(path, failure)


def model_entries(model: Model) -> dict[str, np.ndarray]:
    """A Model as archive entries in this format (``jaxmor_model``: the JSON of its structure with the format's name
    and version; ``model/...``: its arrays), for a file that holds a model beside other data (a trajectory)."""
    arrays: dict[str, np.ndarray] = {}
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "model": _encode(model, "model", arrays)}
    return {MODEL_ENTRY: np.frombuffer(json.dumps(meta, allow_nan=True).encode("utf-8"), np.uint8), **arrays}


def model_from_entries(entries: dict[str, np.ndarray], source: str) -> Model:
    """The Model that :func:`model_entries` wrote, every array checked as :func:`load_checkpoint` checks them.

    Raises:
        ModelError: as :func:`load_checkpoint` for the model's part, naming ``source``.
    """
    arrays = {k: v for k, v in entries.items() if k.startswith("model/")}
    entry = entries.get(MODEL_ENTRY)
    if entry is None:
        raise ModelError(source, None, "holds no model (no jaxmor_model entry)")
    meta = _read_structure(entry, source, ("format", "version", "model"))
    decoder, model = _decoded_model(meta, arrays, source)
    if decoder.unused():
        raise ModelError(source, None, f"arrays that no field names: {', '.join(decoder.unused())[:80]}")
    return model


def _write(path: str | os.PathLike, text: bytes, arrays: dict[str, np.ndarray]) -> None:
    """The archive: the structure's JSON ``text`` and the host ``arrays``.

    Raises:
        ArgumentError: ``path`` cannot be written (the system's reason).
    """
    with writing("save_checkpoint", "path", path), open(path, "wb") as f:
        np.savez(f, **{_META: np.frombuffer(text, dtype=np.uint8)}, **arrays)


def _spans_processes(x) -> bool:
    """Whether ``x`` is a JAX array with shards on devices of other processes."""
    return isinstance(x, jax.Array) and not x.is_fully_addressable


def _gathered(tree):
    """``tree`` with each array that spans several processes replaced by its global value (a NumPy array).

    Collective when there is such an array: every process must call it with the same global arrays.

    Args:
        tree: a pytree (the Model and the State).

    Returns:
        ``(tree, spans)``: the tree, and whether any of its arrays spanned several processes.

    Raises:
        ArgumentError: an array could not be gathered (named by its path in the tree, with JAX's error).
    """
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    spread = [i for i, (_, x) in enumerate(flat) if _spans_processes(x)]
    if not spread:
        return tree, False
    leaves = [x for _, x in flat]
    for i in spread:
        leaves[i] = _gather_one(jax.tree_util.keystr(flat[i][0]), leaves[i])
    return jax.tree.unflatten(treedef, leaves), True


def _gather_one(where: str, x: jax.Array) -> np.ndarray:
    """The global value of an array sharded across processes, on this host (collective unless replicated).

    Raises:
        ArgumentError: JAX could not gather it (no cross-process collectives, a process missing, memory).
    """
    if x.is_fully_replicated:  # every process holds all of it
        return np.asarray(x.addressable_data(0))
    try:
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    except (RuntimeError, ValueError) as err:
        raise ArgumentError(
            f"save_checkpoint could not gather {where} (shape {x.shape}, sharded over {len(x.sharding.device_set)} "
            f"devices of several processes) to write it: {err}. Every process must call save_checkpoint with the "
            "same arrays, and JAX needs cross-process collectives (jax_cpu_collectives_implementation='gloo' on CPU)"
        ) from None


def _raise_unless_written(path: str | os.PathLike, failure: ArgumentError | None) -> None:
    """Every process waits for process 0's write and learns whether it succeeded (collective).

    Raises:
        ArgumentError: process 0 could not write the file (there: its own error, with the system's reason).
    """
    written = multihost_utils.broadcast_one_to_all(np.int32(failure is None))
    if failure is not None:
        raise failure
    if not int(written):
        raise ArgumentError(f"save_checkpoint: process 0 could not write the checkpoint {shortened(path)!r}")


def _mismatch(saved, given, where: str = "Model") -> str | None:
    """The first static difference between two models (a field path and both values), ``None`` if none."""
    if type(saved) is not type(given):
        return f"{where}: {type(saved).__name__} vs {type(given).__name__}"
    if dataclasses.is_dataclass(saved):
        for f in dataclasses.fields(saved):
            if f.name == "source":  # the same robot read from another place matches
                continue
            a, b = getattr(saved, f.name), getattr(given, f.name)
            if f.metadata.get("pytree_node", True) and not dataclasses.is_dataclass(a):
                sa, sb = np.shape(a), np.shape(b)  # the saved leaf may carry leading world axes
                if sa[len(sa) - len(sb) :] != sb:
                    return f"{where}.{f.name}: shape {sa} vs {sb}"
                continue
            found = _mismatch(a, b, f"{where}.{f.name}")
            if found:
                return found
        return None
    return None if saved == given else f"{where}: {str(saved)[:60]} vs {str(given)[:60]}"


def load_checkpoint(path: str | os.PathLike, model: Model | None = None) -> tuple[Model, State]:
    """Read a checkpoint written by :func:`save_checkpoint`: the Model and the State, bit for bit.

    Args:
        path: the checkpoint.
        model: optionally, the model the checkpoint must belong to: its topology, names, counts and options
            must be the saved model's (array leaves may differ in value, and saved ones may carry world axes;
            the file it was loaded from may differ).

    Returns:
        ``(model, state)`` as saved.

    Raises:
        ModelError: the file is missing, truncated, not a jaxmor checkpoint (a foreign ``.npz``, a pickle),
            of another format version, holds float64 or int64 arrays while ``jax_enable_x64`` is off, or holds
            anything the format does not allow (:mod:`jaxmor.modeling.checkpoint_format`: a field of the wrong
            type, an array of the wrong dtype or shape, an array no field names); naming the file and the
            field.
        ArgumentError: ``model`` is not a Model or does not match the checkpoint's (the message names the first
            difference).
    """
    source = str(path)
    if model is not None and not isinstance(model, Model):
        raise ArgumentError(f"load_checkpoint: model must be a jaxmor Model, got {type(model).__name__}")
    arrays = _read_archive(path, source)
    meta = _read_structure(arrays.pop(_META), source)
    decoder, saved_model = _decoded_model(meta, arrays, source)
    try:
        decoder.state_shapes = state_shapes(saved_model)
    except Exception as err:  # noqa: BLE001 - static fields that type-check but do not make a model
        raise ModelError(source, None, f"model: its contact layout does not hold together ({err!r:.80})") from None
    state = decoder.decode(meta["state"], State, "state", {})
    if decoder.unused():
        raise ModelError(source, None, f"arrays that no field names: {', '.join(decoder.unused())[:80]}")
    if model is not None:
        problem = _mismatch(saved_model, model)
        if problem:
            raise ArgumentError(f"checkpoint {source} belongs to another model: {problem}")
    return saved_model, state


def _decoded_model(meta: dict, arrays: dict[str, np.ndarray], source: str) -> tuple[Decoder, Model]:
    """The decoder of ``arrays`` and the Model it decoded from ``meta`` (format 5 upgraded, 64-bit arrays refused
    without x64, the options checked).

    Raises:
        ModelError: naming ``source``, as :func:`load_checkpoint` describes.
    """
    if meta["version"] == 5:
        _from_format_5(meta, arrays)
    if meta["version"] in (5, 6):
        _from_format_6(meta, arrays)
    if meta["version"] in (5, 6, 7):
        _from_format_7(meta, arrays)
    if meta["version"] in (5, 6, 7, 8):
        _from_format_8(meta)
    if not jax.config.jax_enable_x64 and any(a.dtype in (np.float64, np.int64) for a in arrays.values()):
        raise ModelError(source, None, "the file holds 64-bit arrays: enable jax_enable_x64 before loading it")
    decoder = Decoder(source, arrays)
    model = decoder.decode(meta["model"], Model, "model", {})
    if meta["version"] in (5, 6):
        model = refit_window(model)
    _check_activation(model.affine, source)
    _check_mocap(model, source)
    try:
        check_options(model.opt, "model")
    except ArgumentError as err:
        raise ModelError(source, None, str(err)) from None
    return decoder, model


def _check_activation(affine, source: str) -> None:
    """Refuse affine actuators whose dynamics or ``act_early`` are neither empty nor one valid entry per actuator."""
    for name, allowed in (("dynamics", AFFINE_DYNAMICS), ("act_early", (True, False))):
        values = getattr(affine, name)
        if values and (len(values) != affine.nu or any(v not in allowed for v in values)):
            raise ModelError(source, None, f"model.affine.{name}: {brief_repr(values)} is not {affine.nu} of {allowed}")


def _from_format_5(meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """A format-5 structure and arrays made format 6's in place: ``Model.affine.bias_0`` added as zeros shaped like
    ``gain`` (where the structure is well-formed enough to say so; otherwise the decoder refuses it as it is)."""
    affine = _fields(meta.get("model"), "affine")
    gain = _array(arrays, affine, "gain")
    if gain is not None and "bias_0" not in affine:
        affine["bias_0"] = {"array": "model/affine/bias_0"}
        arrays["model/affine/bias_0"] = np.zeros_like(gain)


def _from_format_6(meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """A format-6 (or upgraded format-5) structure and arrays made format 7's in place: the height field's window
    added as 0 (which :func:`_decoded_model` replaces by the window the decoded model's geoms need); the affine
    actuators without activation dynamics (time constants 1, unlimited activations), no fluid (density, viscosity
    and wind 0) and the State's activations 0, shaped like its controls (where the structure is well-formed enough
    to say so; otherwise the decoder refuses it as it is)."""
    field = _fields(meta.get("model"), "height_field")
    if field is not None and "window" not in field:
        field["window"] = {"value": 0}
    affine = _fields(meta.get("model"), "affine")
    gain = _array(arrays, affine, "gain")
    if gain is not None and "time_constant" not in affine:
        for name, value in (("time_constant", 1.0), ("act_lower", -np.inf), ("act_upper", np.inf)):
            affine[name] = {"array": f"model/affine/{name}"}
            arrays[f"model/affine/{name}"] = np.full_like(gain, value)
        affine["dynamics"], affine["act_early"] = {"tuple": []}, {"tuple": []}
    opt = _fields(meta.get("model"), "opt")
    gravity = _array(arrays, opt, "gravity")
    if gravity is not None and "wind" not in opt:
        opt["fluid_forces"] = {"value": False}
        for name, shape in (("density", ()), ("viscosity", ()), ("wind", (3,))):
            opt[name] = {"array": f"model/opt/{name}"}
            arrays[f"model/opt/{name}"] = np.zeros(shape, gravity.dtype)
    state = _fields(meta.get("state"))
    ctrl = _array(arrays, state, "ctrl")
    if ctrl is not None and "act" not in state:
        state["act"] = {"array": "state/act"}
        arrays["state/act"] = np.zeros_like(ctrl)


def _from_format_7(meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """A format-7 (or upgraded older) structure and arrays made format 8's in place: no mocap bodies (an empty
    ``Model.mocap_links``, and the State's ``mocap_pos`` and ``mocap_quat`` empty, with the controls' world axes)."""
    model = _fields(meta.get("model"))
    if model is not None and "mocap_links" not in model:
        model["mocap_links"] = {"tuple": []}
    state = _fields(meta.get("state"))
    ctrl = _array(arrays, state, "ctrl")
    if ctrl is not None and "mocap_pos" not in state:
        for name, width in (("mocap_pos", 3), ("mocap_quat", 4)):
            state[name] = {"array": f"state/{name}"}
            arrays[f"state/{name}"] = np.zeros((*ctrl.shape[:-1], 0, width), ctrl.dtype)


def _from_format_8(meta: dict) -> None:
    """A format-8 (or upgraded older) structure made format 9's in place: no equality constraint on a mocap body
    (``Model.equality.point_mocap`` ``-1`` for both sides of every point constraint, where the structure is
    well-formed enough to say how many; otherwise the decoder refuses it as it is)."""
    eq = _fields(meta.get("model"), "equality")
    bodies = eq.get("point_body") if eq is not None else None
    if isinstance(bodies, dict) and isinstance(bodies.get("tuple"), list) and "point_mocap" not in eq:
        none = {"tuple": [{"value": -1}, {"value": -1}]}
        eq["point_mocap"] = {"tuple": [none] * len(bodies["tuple"])}


def _check_mocap(model: Model, source: str) -> None:
    """Refuse mocap links that are not distinct links welded to the world, and equality sides on a mocap body
    that is not one or on a body beside it."""
    links = model.mocap_links
    if len(set(links)) != len(links) or any(
        not isinstance(k, int) or not 0 <= k < model.nl or model.link_body[k] != -1 for k in links
    ):
        raise ModelError(
            source, None, f"model.mocap_links: {brief_repr(links)} are not distinct links welded to the world"
        )
    eq = model.equality
    sides = [(b, m) for pair in zip(eq.point_body, eq.point_mocap, strict=True) for b, m in zip(*pair, strict=True)]
    if any(not isinstance(m, int) or not -1 <= m < len(links) or (m >= 0 and b != -1) for b, m in sides):
        raise ModelError(
            source, None, f"model.equality.point_mocap: {brief_repr(eq.point_mocap)} are not mocap bodies' indices"
        )


def _fields(node, *path: str) -> dict | None:
    """The ``fields`` of the dataclass node reached from ``node`` through the field names ``path``; ``None`` where
    the structure holds none."""
    try:
        for name in path:
            node = node["fields"][name]
        fields = node["fields"]
    except (KeyError, TypeError):
        return None
    return fields if isinstance(fields, dict) else None


def _array(arrays: dict[str, np.ndarray], fields: dict | None, name: str) -> np.ndarray | None:
    """The array of the leaf node ``fields[name]``, ``None`` where there is none."""
    try:
        found = arrays.get(fields[name]["array"])
    except (KeyError, TypeError):
        return None
    return found if isinstance(found, np.ndarray) else None


def _read_archive(path: str | os.PathLike, source: str) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive at ``path``, read without unpickling anything.

    Raises:
        ModelError: the file is missing, not an ``.npz`` archive, damaged (any error reading it), or lacks the
            structure entry.
    """
    try:
        found = Path(path).is_file()
    except (OSError, ValueError) as err:  # a name over the system's length limit, a NUL byte
        raise ModelError(shortened(source), None, f"cannot be read: {getattr(err, 'strerror', None) or err}") from None
    if not found:
        raise ModelError(shortened(source), None, "no such file")
    _check_size(path, source)
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ModelError(source, None, "not a jaxmor checkpoint (one .npy array, not an .npz archive)")
        with archive:
            arrays = {key: archive[key] for key in archive.files}
    except ModelError:
        raise
    except ValueError as err:
        if "pickle" in str(err):  # pickled data, which allow_pickle=False refuses
            raise ModelError(source, None, f"not a jaxmor checkpoint, refused without running it: {err}") from None
        raise ModelError(source, None, f"not a readable checkpoint (damaged): {err!s:.80}") from None
    except Exception as err:  # noqa: BLE001 - zipfile and numpy raise many types for damaged bytes
        reason = f"{type(err).__name__}: {err!s:.80}"
        raise ModelError(
            source, None, f"not a readable checkpoint (truncated or not an .npz archive; {reason})"
        ) from None
    if _META not in arrays:
        raise ModelError(source, None, "not a jaxmor checkpoint (a foreign .npz archive: no jaxmor_checkpoint entry)")
    return arrays


def _check_size(path: str | os.PathLike, source: str) -> None:
    """Refuse a file whose arrays would take more than :data:`MAX_CHECKPOINT_BYTES` once read
    (:func:`jaxmor.io.files.archive_bytes`: declared sizes, before anything is decompressed)."""
    size = archive_bytes(path)
    if size is not None and size > MAX_CHECKPOINT_BYTES:
        raise ModelError(
            shortened(source),
            None,
            f"its arrays would take {size:,} bytes, more than MAX_CHECKPOINT_BYTES ({MAX_CHECKPOINT_BYTES:,})",
        )


def _read_structure(entry: np.ndarray, source: str, keys=("format", "version", "model", "state")) -> dict:
    """The checkpoint's JSON structure (its format marker and version checked).

    Raises:
        ModelError: the entry is not UTF-8 JSON bytes, or not of this format and version.
    """
    if entry.dtype != np.uint8 or entry.ndim != 1:
        raise ModelError(source, None, f"not a jaxmor checkpoint (its structure is a {entry.dtype.name} array)")
    try:
        meta = json.loads(entry.tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as err:  # JSON, UTF-8 or an integer too long; nesting too deep
        raise ModelError(source, None, f"not a jaxmor checkpoint (its structure does not parse: {err!s:.80})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(source, None, "not a jaxmor checkpoint (no jaxmor-checkpoint format marker)")
    version = meta.get("version")
    if type(version) is not int or version not in READ_VERSIONS:
        raise ModelError(
            source,
            None,
            f"checkpoint format version {version!r:.80}; this jaxmor reads {', '.join(map(str, READ_VERSIONS))}",
        )
    if set(meta) != set(keys):
        raise ModelError(source, None, f"unexpected entries in the structure: {sorted(meta)!r:.80}")
    return meta
