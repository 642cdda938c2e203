"""The trajectory file: a ``.npz`` of the stacked State fields, the Model they belong to and the path of the robot
file, which ``jaxmor view`` plays.

Format (version 2): ``jaxmor_trajectory`` (int, 2), ``robot`` (str, the robot file's path as given: the viewer reads
its visuals), ``ground`` (bool), ``timestep`` (float [s], the model's time step), the Model itself with every edit
made after loading (height field, terrain, combined bodies, randomized leaves) as the checkpoint format writes it
(``jaxmor_model`` and ``model/...``: :func:`jaxmor.modeling.checkpoint.model_entries`, checked on loading as a
checkpoint is), and one array ``state.<field>`` per array field of :class:`jaxmor.State` (``actuator_state.<field>``
for its actuator states), each with the trajectory's leading axes (T, ...) or (W, T, ...). Fields of the State's
nested motor state are not stored; a loaded State takes them from :func:`jaxmor.init_state` of the loaded model.
Version 1 files (no model) still load: their model is the robot file's, with the ground and time step stored.
"""

from __future__ import annotations

import dataclasses
import math
import os
import zipfile
from pathlib import Path

import jax
import numpy as np

from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.io.files import archive_bytes, shortened
from jaxmor.modeling.checkpoint import MODEL_ENTRY, model_entries, model_from_entries
from jaxmor.types import Model, State

#: The format's version, and the versions :func:`load_trajectory` reads.
VERSION = 2
READ_VERSIONS = (1, 2)
#: The most bytes a trajectory file's arrays may take once read (1 GiB), checked before any is read.
MAX_TRAJECTORY_BYTES = 2**30


def _flat(state: State) -> dict[str, np.ndarray]:
    out = {}
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if f.name == "actuator_state":
            out.update({f"actuator_state.{k}": np.asarray(v) for k, v in vars(value).items() if hasattr(v, "shape")})
        elif hasattr(value, "shape"):
            out[f"state.{f.name}"] = np.asarray(value)
    return out


def save_trajectory(
    path: str | os.PathLike, model: Model, states: State, robot: str | os.PathLike | None = None
) -> Path:
    """Save a trajectory for ``jaxmor view`` (module docstring).

    Args:
        path: the ``.npz`` file to write.
        model: the model (its ground and time step are stored; its robot file is ``robot`` or ``model.source``).
        states: the stacked States.
        robot: the robot file to store (default ``model.source``).

    Returns:
        The path written.

    Raises:
        ArgumentError: no robot file (a model loaded from a string: pass ``robot=``), or a path that cannot be
            written.
    """
    from jaxmor.io.files import writing

    robot = str(robot if robot is not None else model.source)
    if robot == "<string>" or not Path(robot).is_file():
        raise ArgumentError(f"save_trajectory needs the robot's file; {robot!r} is not one (pass robot=)")
    target = Path(path)
    fields = _flat(jax.device_get(states))
    meta = {"jaxmor_trajectory": np.int64(VERSION), "robot": np.str_(str(Path(robot).resolve()))}
    meta.update(ground=np.bool_(model.ground), timestep=np.float64(np.asarray(model.opt.timestep)))
    meta.update(model_entries(jax.device_get(model)))
    with writing("jaxmor.viewer.save_trajectory", "path", target), open(target, "wb") as file:
        np.savez_compressed(file, **meta, **fields)
    return target


def load_trajectory(path: str | os.PathLike) -> tuple[Model, State]:
    """The model (its robot file loaded, the ground added where saved, the saved time step) and the stacked
    States of a trajectory file.

    Raises:
        ArgumentError: not a trajectory file of this version (unreadable, over :data:`MAX_TRAJECTORY_BYTES` once
            read, a header entry of the wrong type), or a field the State does not have or of the wrong dtype kind
            or shape (strings, complex numbers), or an entry the format does not have, each naming the file.
        ModelError: the stored model is damaged (checked as :func:`jaxmor.load_checkpoint` checks a checkpoint's).
    """
    import jaxmor

    where = repr(shortened(str(path)))
    size = archive_bytes(path)
    if size is not None and size > MAX_TRAJECTORY_BYTES:
        raise ArgumentError(f"{where}: its arrays would take {size:,} bytes, more than MAX_TRAJECTORY_BYTES")
    try:
        data = dict(np.load(path, allow_pickle=False))
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ArgumentError(f"{where} is not a trajectory file: {brief_repr(str(exc))}") from None
    robot, ground, timestep = _header(data, where)
    if MODEL_ENTRY in data:
        model = model_from_entries(data, where)
    else:
        model = jaxmor.load_mjcf(robot) if robot.lower().endswith(".xml") else jaxmor.load_urdf(robot)
        if ground and not model.ground:
            model = jaxmor.add_ground(model)
        model = jaxmor.with_options(model, timestep=timestep)
    q = data.get("state.q")
    if q is None or q.ndim < 1 or q.shape[-1:] != (model.nq,):
        raise ArgumentError(f"{where}: its q does not fit the robot {robot!r} (nq = {model.nq})")
    lead = q.shape[:-1]
    template = jax.tree.map(lambda x: np.broadcast_to(np.asarray(x), lead + np.shape(x)), jaxmor.init_state(model))
    state_fields = {k[6:]: v for k, v in data.items() if k.startswith("state.")}
    unknown = sorted(k for k in data if not k.startswith(("state.", "actuator_state.", "model/", MODEL_ENTRY)))
    unknown = [k for k in unknown if k not in ("jaxmor_trajectory", "robot", "ground", "timestep")]
    if unknown:
        raise ArgumentError(f"{where}: entries a trajectory file does not have: {brief_repr(unknown)}")
    motor_fields = {k[15:]: v for k, v in data.items() if k.startswith("actuator_state.")}
    try:
        states = template.replace(**state_fields, actuator_state=template.actuator_state.replace(**motor_fields))
    except TypeError as exc:
        raise ArgumentError(f"{where}: a field this jaxmor's State does not have: {exc}") from None
    _check_leaves(states, template, where)
    return model, states


def _header(data: dict, where: str) -> tuple[str, bool, float]:
    """The robot file, the ground flag and the time step [s] of a trajectory file's entries, checked."""

    def entry(name: str, kinds: str):
        value = data.get(name)
        if value is None or value.shape != () or value.dtype.kind not in kinds:
            raise ArgumentError(f"{where} is not a jaxmor trajectory file of version {VERSION} (its {name!r})")
        return value.item()

    if entry("jaxmor_trajectory", "iu") not in READ_VERSIONS:
        raise ArgumentError(f"{where} is not a jaxmor trajectory file of version {VERSION}")
    robot, ground, timestep = entry("robot", "U"), entry("ground", "b"), entry("timestep", "f")
    if not (math.isfinite(timestep) and timestep > 0):
        raise ArgumentError(f"{where}: its timestep must be a positive finite number [s], got {timestep!r}")
    return robot, ground, timestep


def _check_leaves(states: State, template: State, where: str) -> None:
    """Every array of the loaded States of the kind (float, int, bool) and shape of the model's State's."""
    paths = jax.tree_util.tree_flatten_with_path(states)[0]
    for (path, got), want in zip(paths, jax.tree.leaves(template), strict=True):
        got, want = np.asarray(got), np.asarray(want)
        kind = {"f": "f", "i": "iu", "u": "iu", "b": "b"}[want.dtype.kind]
        if got.dtype.kind not in kind or got.shape != want.shape:
            name = jax.tree_util.keystr(path)
            raise ArgumentError(
                f"{where}: state{name} is {got.dtype.name} {got.shape}, expected {want.dtype.name} {want.shape}"
            )
