"""World files and packages: a world that refers to its robot's description and holds what changed since loading
(:func:`export_world`, :func:`load_world`), and a description copied with every file it links
(:func:`export_package`).

A world file (the actuator spec's world export) is XML::

    <jaxmor_world version="1">
      <robot file="../robots/quadruped/quadruped.urdf" format="urdf" floating_base="auto" meshes="convex_hull"/>
      <options timestep="0.001" gravity="0 0 -9.81" solver_iterations="20" position_iterations="10"
               friction_rule="geometric_mean" implicit_bias="kahan" solver="auto" jacobi_iterations="100"/>
      <ground height="0.0" friction="0.8" restitution="0.0"/>               <!-- if the world has one -->
      <battery open_circuit_voltage="48.0" internal_resistance="0.05"/>    <!-- if the model has one -->
      <actuators motor_operating_region_enforced="true">                   <!-- jaxmor.export_actuators -->
        <actuator name="LF_HFE" joint="LF_HFE" gear_ratio="10.0" ... torque="3.5"> <motor .../> </actuator>
      </actuators>
      <residual file="world.residual.npz"/>      <!-- a learned residual: its weights, beside the world file -->
      <state dtype="float64">
        <value name="q" shape="19">0.0 0.0 0.52 1.0 ...</value>             <!-- every field of the State -->
      </state>
    </jaxmor_world>

The robot's file is written relative to the world file's folder. On load the description is read again, the
world's actuators (inline models, their bus voltages, nonzero torques, the monitor mode) replace the
description's, and the options, ground, battery and state are applied: the result equals the exported world
(numbers are written with ``repr``, which reads back exactly). A model changed in ways the file cannot hold
(randomized leaves, geom properties, collision pairs, added bodies, affine actuators set in Python) is refused
at export, naming the first difference: save a checkpoint instead (:mod:`jaxmor.modeling.checkpoint`).

World files are read as untrusted input (:func:`jaxmor.io.xml.parse_xml`); actuator files they link are read
with the actuator files' search path and safety rules.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from lxml import etree

from jaxmor.errors import ArgumentError, ModelError
from jaxmor.io.actuators import actuators_from_element, locate_actuator_file
from jaxmor.io.files import readable_file, shortened, writing
from jaxmor.io.mesh import resolve_mesh
from jaxmor.io.mjcf import ACTUATORS_TEXT
from jaxmor.io.residual_file import weights_file
from jaxmor.io.xml import check_attributes, parse_float, parse_vector, parse_xml, tag
from jaxmor.modeling.actuators import export_actuators, get_actuators, with_actuators
from jaxmor.modeling.builder import DEFAULT_FRICTION, load_mjcf, load_urdf
from jaxmor.modeling.learned import residual_arrays, residual_from_arrays, residual_from_file, save_residual
from jaxmor.modeling.scene import add_ground, with_battery, with_options
from jaxmor.state import check_state, init_state, reset_actuator_state
from jaxmor.types import Model, State

FORMAT_VERSION = 1
#: State fields the ``<actuators>`` element holds, so ``<state>`` does not.
_IN_ACTUATORS = ("actuator_torque", "bus_voltage", "mor_enforced")


def _text(value: float) -> str:
    return repr(float(value))


def _vector(values) -> str:
    return " ".join(_text(v) for v in np.asarray(values, dtype=np.float64).reshape(-1))


def _format(model: Model) -> str:
    if model.source.lower().endswith(".xml"):
        return "mjcf"
    return "urdf"


def _load(path: str, fmt: str, options: dict, package_dirs, actuator_dirs) -> Model:
    if fmt == "mjcf":
        return load_mjcf(
            path,
            meshes=options["meshes"],
            self_collision=options["self_collision"],
            package_dirs=package_dirs,
            actuator_dirs=actuator_dirs,
        )
    floating = {"auto": None, "true": True, "false": False}[options["floating_base"]]
    return load_urdf(
        path, floating_base=floating, meshes=options["meshes"], package_dirs=package_dirs, actuator_dirs=actuator_dirs
    )


def _first_difference(a, b, where: str = "model") -> str | None:
    """The first field in which two models (or any jaxmor dataclasses) differ, ``None`` if none."""
    if type(a) is not type(b):
        return where
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if f.name == "source":
                continue
            found = _first_difference(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
            if found:
                return found
        return None
    if isinstance(a, (jax.Array, np.ndarray)):
        same = np.shape(a) == np.shape(b) and np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
        return None if same else where
    return None if a == b else where


def _world_model(base: Model, model: Model, state: State) -> Model:
    """The description's model with ``model``'s options, ground, battery and (``state``'s) actuators: what a
    world file of ``model`` loads into."""
    world = base.replace(opt=model.opt)
    if model.ground:
        world = add_ground(
            world, float(model.ground_height), float(model.ground_friction), float(model.ground_restitution)
        )
    if model.battery.enabled:
        world = with_battery(world, float(model.battery.open_circuit_voltage), float(model.battery.internal_resistance))
    if model.na or base.na:
        world = with_actuators(world, get_actuators(model, state))
    return world


def _loading_options(model: Model, fmt: str, package_dirs, actuator_dirs) -> tuple[dict, Model]:
    """How the description loads into ``model``'s structure, and the model it loads into."""
    meshes = "ignore" if model.mesh_geoms else "convex_hull"
    choices = (
        [{"meshes": meshes, "self_collision": s} for s in (False, True)]
        if fmt == "mjcf"
        else [{"meshes": meshes, "floating_base": f} for f in ("auto", "true", "false")]
    )
    tried = []
    for options in choices:
        try:
            base = _load(model.source, fmt, options, package_dirs, actuator_dirs)
        except ModelError as err:
            tried.append(str(err))
            continue
        if base.body_joint_type == model.body_joint_type and base.contact_pairs == model.contact_pairs:
            return options, base
        tried.append(f"{options}: another structure")
    detail = f" ({tried[0]})" if tried else ""
    raise ArgumentError(f"export_world: {model.source} does not load into this model's structure{detail}")


def export_world(
    model: Model,
    state: State,
    path: str | os.PathLike,
    *,
    package_dirs: Sequence[str | os.PathLike] = (),
    actuator_dirs: Sequence[str | os.PathLike] = (),
) -> None:
    """Write a world file (module docstring) for one world: its robot's description by reference, and the
    current actuators, options, ground, battery and state.

    Args:
        model: an unbatched model loaded from a file (``model.source``).
        state: an unbatched state of it.
        path: the world file to write.
        package_dirs: as for the loader, where the description needs them.
        actuator_dirs: as for the loader, where the description needs them.

    Raises:
        ArgumentError: a batched model or state, a model loaded from a string, or a model the world file cannot
            reproduce (the message names the first differing field); ``path`` cannot be written (the system's
            reason).
    """
    check_state(model, state, "export_world")
    if model.source == "<string>" or not Path(model.source).is_file():
        raise ArgumentError(f"export_world needs a model loaded from a file, not {model.source!r}")
    fmt = _format(model)
    options, base = _loading_options(model, fmt, package_dirs, actuator_dirs)
    expected = _world_model(base, model, state)
    if model.actuators.residual.enabled:
        expected = residual_from_arrays(expected, residual_arrays(model))
    voltages = model.actuators.motor.replace(bus_voltage=jnp.asarray(state.bus_voltage, model.body_mass.dtype))
    current = model.replace(actuators=model.actuators.replace(motor=voltages)) if model.na else model
    difference = _first_difference(expected, current)
    if difference:
        raise ArgumentError(
            f"export_world: a world file cannot hold this model: {difference} differs from what its description "
            "and the world file give (a randomized or edited model); save a checkpoint instead "
            "(jaxmor.modeling.checkpoint)"
        )
    folder = Path(path).resolve().parent
    robot = os.path.relpath(Path(model.source).resolve(), folder)
    attrs = {"file": robot, "format": fmt, **{k: str(v).lower() for k, v in options.items()}}
    lines = ['<jaxmor_world version="1">', "  <robot " + " ".join(f'{k}="{v}"' for k, v in attrs.items()) + "/>"]
    opt = model.opt
    lines.append(
        f'  <options timestep="{_text(opt.timestep)}" gravity="{_vector(opt.gravity)}" '
        f'solver_iterations="{opt.solver_iterations}" position_iterations="{opt.position_iterations}" '
        f'friction_rule="{opt.friction_rule}" implicit_bias="{opt.implicit_bias}" solver="{opt.solver}" '
        f'jacobi_iterations="{opt.jacobi_iterations}"/>'
    )
    if model.ground:
        lines.append(
            f'  <ground height="{_text(model.ground_height)}" friction="{_text(model.ground_friction)}" '
            f'restitution="{_text(model.ground_restitution)}"/>'
        )
    if model.battery.enabled:
        lines.append(
            f'  <battery open_circuit_voltage="{_text(model.battery.open_circuit_voltage)}" '
            f'internal_resistance="{_text(model.battery.internal_resistance)}"/>'
        )
    lines += ["  " + line for line in export_actuators(model, state).splitlines()]
    if model.actuators.residual.enabled:
        weights = Path(path).with_suffix(".residual.npz")
        save_residual(model, weights, "export_world")
        lines.append(f'  <residual file="{weights.name}"/>')
    lines.append(f'  <state dtype="{np.dtype(state.q.dtype).name}">')
    for name, value in _state_fields(state):
        if name in _IN_ACTUATORS:
            continue
        array = np.asarray(value)
        shape = " ".join(str(d) for d in array.shape)
        text = " ".join(str(int(x)) if array.dtype.kind in "biu" else _text(x) for x in array.reshape(-1))
        lines.append(f'    <value name="{name}" shape="{shape}">{text}</value>')
    lines += ["  </state>", "</jaxmor_world>"]
    with writing("export_world", "path", path):
        Path(path).write_text("\n".join(lines) + "\n")


def _state_fields(state: State) -> list[tuple[str, jax.Array]]:
    """``(dotted name, leaf)`` of every field of a State (``actuator_state.motor_speed`` for the nested ones)."""
    out = []
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if dataclasses.is_dataclass(value):
            out += [(f"{f.name}.{g.name}", getattr(value, g.name)) for g in dataclasses.fields(value)]
        else:
            out.append((f.name, value))
    return out


def load_world(
    path: str | os.PathLike,
    *,
    package_dirs: Sequence[str | os.PathLike] = (),
    actuator_dirs: Sequence[str | os.PathLike] = (),
) -> tuple[Model, State]:
    """Read a world file written by :func:`export_world`: the description it names, loaded again, with the
    file's actuators in place of the description's, its options, ground, battery and state.

    Args:
        path: the world file.
        package_dirs: as for the loader, where the description needs them.
        actuator_dirs: as for the loader, where the description needs them.

    Returns:
        ``(model, state)``.

    Raises:
        ModelError: an invalid world file, a description that is missing (naming the world file and line) or
            invalid, an actuator that does not fit the robot's joints (naming the world file and its line), a
            state value of the wrong shape, a float64 state while ``jax_enable_x64`` is off.
    """
    root, source = parse_xml(path)
    if tag(root) != "jaxmor_world":
        raise ModelError(source, root.sourceline, f"the root element is <{tag(root)}>, not <jaxmor_world>")
    check_attributes(root, ("version",), source)
    if root.get("version") != str(FORMAT_VERSION):
        raise ModelError(source, root.sourceline, f"world file version {root.get('version')!r}; this jaxmor reads 1")
    folder = Path(source).resolve().parent
    children = {}
    for el in root:
        name = tag(el)
        if name is None:
            continue
        if name not in ("robot", "options", "ground", "battery", "actuators", "residual", "state") or name in children:
            raise ModelError(source, el.sourceline, f"unexpected element <{name}> in <jaxmor_world>")
        children[name] = el
    for needed in ("robot", "options", "state"):
        if needed not in children:
            raise ModelError(source, root.sourceline, f"the world file has no <{needed}>")
    model = _load_robot(children["robot"], source, folder, package_dirs, actuator_dirs)
    model = _apply_options(model, children, source)
    state = init_state(model)
    if "actuators" in children:
        model, state = _read_actuators(children["actuators"], source, folder, actuator_dirs, model, state)
    if "residual" in children:
        model = _read_residual(children["residual"], source, folder, model)
        state = state.replace(actuator_history=init_state(model).actuator_history)
    return model, _read_state(children["state"], source, model, state)


def _read_actuators(element, source: str, folder: Path, actuator_dirs, model: Model, state: State):
    """``(model, state)`` with the world's ``<actuators>``: the model's actuators replaced, the state's torques, bus
    voltages and monitor mode the element's."""
    inside = [c for c in element if tag(c) == "residual"]
    if inside:
        raise ModelError(source, inside[0].sourceline, "a world file's <residual> belongs at its top level")
    definitions, torques, enforced = actuators_from_element(element, source, base_dir=folder, extra_dirs=actuator_dirs)
    model = with_actuators(model, definitions)
    dtype = model.body_mass.dtype
    state = reset_actuator_state(model, state).replace(
        actuator_torque=jnp.asarray(np.asarray(torques, dtype=np.float64).reshape(model.na), dtype),
        bus_voltage=jnp.asarray(model.actuators.motor.bus_voltage, dtype),  # as written (a battery's sag too)
        mor_enforced=jnp.asarray(enforced),
    )
    return model, state


def _read_residual(el, source: str, folder: Path, model: Model) -> Model:
    """The model with the learned residual of a ``<residual file="..."/>`` element: a weights file in the world
    file's folder (:func:`jaxmor.modeling.learned.residual_arrays`), read without pickles."""
    check_attributes(el, ("file",), source)
    file = el.get("file")
    path = (folder / file).resolve() if file else None
    if path is None or folder not in path.parents or not readable_file(path):
        raise ModelError(
            source, el.sourceline, f"<residual> needs a file inside the world file's folder; {shortened(file)!r} is not"
        )
    return residual_from_file(model, weights_file(file, path, source, el))


def _load_robot(el, source: str, folder: Path, package_dirs, actuator_dirs) -> Model:
    check_attributes(el, ("file", "format", "floating_base", "meshes", "self_collision"), source)
    file, fmt = el.get("file"), el.get("format", "urdf")
    if not file:
        raise ModelError(source, el.sourceline, "<robot> needs a file")
    robot = (Path(file) if Path(file).is_absolute() else folder / file).resolve()
    if not readable_file(robot):
        raise ModelError(
            source,
            el.sourceline,
            f"the robot's description {shortened(file)!r} is missing or not readable (looked for {shortened(robot)})",
        )
    if fmt not in ("urdf", "mjcf"):
        raise ModelError(source, el.sourceline, f"<robot format> must be urdf or mjcf, got {fmt!r}")
    options = {
        "meshes": el.get("meshes", "convex_hull"),
        "floating_base": el.get("floating_base", "auto"),
        "self_collision": el.get("self_collision", "false") == "true",
    }
    if options["floating_base"] not in ("auto", "true", "false") or options["meshes"] not in ("convex_hull", "ignore"):
        raise ModelError(
            source, el.sourceline, "<robot> floating_base must be auto/true/false, meshes convex_hull/ignore"
        )
    return _load(str(robot), fmt, options, package_dirs, actuator_dirs)


def _apply_options(model: Model, children: dict, source: str) -> Model:
    el = children["options"]
    check_attributes(
        el,
        (
            "timestep",
            "gravity",
            "solver_iterations",
            "position_iterations",
            "friction_rule",
            "implicit_bias",
            "solver",
            "jacobi_iterations",
        ),
        source,
    )
    dtype = model.body_mass.dtype
    updates = {}
    if el.get("timestep") is not None:
        updates["timestep"] = jnp.asarray(parse_float(el.get("timestep"), source, el, "timestep"), dtype)
    if el.get("gravity") is not None:
        updates["gravity"] = jnp.asarray(parse_vector(el.get("gravity"), 3, source, el, "gravity"), dtype)
    for name in ("solver_iterations", "position_iterations", "jacobi_iterations"):
        if el.get(name) is not None:
            try:
                updates[name] = int(el.get(name))
            except ValueError:
                raise ModelError(source, el.sourceline, f"{name} must be an integer, got {el.get(name)!r}") from None
    for name in ("friction_rule", "implicit_bias", "solver"):
        if el.get(name) is not None:
            updates[name] = el.get(name)
    try:
        model = with_options(model, **updates)
    except ArgumentError as err:
        raise ModelError(source, el.sourceline, str(err)) from None
    if "ground" in children:
        g = children["ground"]
        check_attributes(g, ("height", "friction", "restitution"), source)
        values = [
            parse_float(g.get(k, d), source, g, f"ground {k}")
            for k, d in (("height", "0"), ("friction", repr(DEFAULT_FRICTION)), ("restitution", "0"))
        ]
        try:
            model = add_ground(model, *values)
        except ArgumentError as err:
            raise ModelError(source, g.sourceline, str(err)) from None
    if "battery" in children:
        b = children["battery"]
        check_attributes(b, ("open_circuit_voltage", "internal_resistance"), source)
        values = [
            parse_float(b.get(k), source, b, f"battery {k}") for k in ("open_circuit_voltage", "internal_resistance")
        ]
        try:
            model = with_battery(model, *values)
        except ArgumentError as err:
            raise ModelError(source, b.sourceline, str(err)) from None
    return model


def _read_state(el, source: str, model: Model, state: State) -> State:
    """The ``<state>``'s values in place of ``state``'s, each checked against the model's shapes."""
    check_attributes(el, ("dtype",), source)
    dtype = el.get("dtype", "float32")
    if dtype not in ("float32", "float64"):
        raise ModelError(source, el.sourceline, f"<state> dtype must be float32 or float64, got {dtype[:80]!r}")
    if dtype == "float64" and not jax.config.jax_enable_x64:
        raise ModelError(source, el.sourceline, "the world's state is float64: enable jax_enable_x64 before loading")
    fields = dict(_state_fields(state))
    values = {}
    for child in el:
        if tag(child) is None:
            continue
        name = child.get("name")
        if tag(child) != "value" or name not in fields or name in _IN_ACTUATORS or name in values:
            raise ModelError(source, child.sourceline, f"unexpected state value {tag(child)} {name!r}")
        template = np.asarray(fields[name])
        try:
            shape = tuple(int(d) for d in (child.get("shape") or "").split())
        except ValueError:
            raise ModelError(source, child.sourceline, f"state value {name!r}: a bad shape") from None
        if shape != template.shape:
            raise ModelError(
                source, child.sourceline, f"state value {name!r} has shape {shape}; this robot's is {template.shape}"
            )
        parts = (child.text or "").split()
        if len(parts) != math.prod(shape):
            raise ModelError(source, child.sourceline, f"state value {name!r} needs {math.prod(shape)} numbers")
        if template.dtype.kind in "biu":
            try:
                numbers = np.array([int(p) for p in parts], dtype=np.int64)
            except ValueError:
                raise ModelError(source, child.sourceline, f"state value {name!r}: integers expected") from None
        else:
            try:  # inf is a state value (an unlimited actuation limit), nan a diverged world's
                numbers = np.array([float(p) for p in parts if "_" not in p], dtype=np.float64)
            except ValueError:
                numbers = np.zeros(0)
            if numbers.size != len(parts):
                raise ModelError(source, child.sourceline, f"state value {name!r}: numbers expected")
        values[name] = jnp.asarray(numbers.reshape(shape).astype(template.dtype))
    # A file written before the motor dynamics lacks these: they keep the fresh state's (motors at ambient).
    newer = ("actuator_state.current", "actuator_state.voltage", "actuator_state.derating")
    missing = [
        n
        for n in fields
        if n not in values and n not in _IN_ACTUATORS and not (n.startswith("motor_state.") or n in newer)
    ]
    if missing:
        raise ModelError(source, el.sourceline, f"the state lacks {', '.join(missing)}")
    nested = {}
    for name, value in values.items():
        if "." in name:
            outer, inner = name.split(".")
            nested.setdefault(outer, {})[inner] = value
    top = {k: v for k, v in values.items() if "." not in k}
    top.update({k: getattr(state, k).replace(**v) for k, v in nested.items()})
    return state.replace(**top)


# --------------------------------------------------------------------------------------------------
# Packages.


def export_package(
    model: Model,
    description_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    package_dirs: Sequence[str | os.PathLike] = (),
    actuator_dirs: Sequence[str | os.PathLike] = (),
) -> Path:
    """Copy a robot's description and every file it links into ``out_dir``, so the package loads elsewhere with
    its actuators (the spec's export for another machine).

    URDF: the actuator files of its ``<actuator file>`` elements go to ``out_dir/actuators/``, the mesh files of
    its ``<mesh filename>`` elements (visual and collision, ``package://`` URIs too) to ``out_dir/meshes/``, and
    the copied URDF names them there. MJCF: its includes are written into the one copied file; the files of its
    assets (meshes, textures, height fields, skins) go to ``out_dir/assets/`` (``<compiler assetdir="assets">``);
    jaxmor's actuator file (``jaxmor:actuators``) and the actuator files it links go to ``out_dir/actuators/``.
    The model's learned residual (not the description's weights file) is written to ``out_dir/actuators/`` too and
    referenced from the URDF or that actuator file (one made for an MJCF without it); a model without one gets a
    package without one.
    Only files the loaders may read are copied: each must lie in the model's folders or the search path
    (:mod:`jaxmor.io.mesh`, :func:`jaxmor.io.actuators.resolve_actuator_file`); any other linked file refuses
    the export. The package is then loaded and checked against ``model``'s structure.

    Args:
        model: the model loaded from ``description_path`` (its joints and actuators are checked).
        description_path: the robot's URDF or MJCF file.
        out_dir: the folder to write (created; files of the same names are replaced); not the description's own
            folder.
        package_dirs: as for the loader.
        actuator_dirs: as for the loader.

    Returns:
        The path of the copied description.

    Raises:
        ModelError: the description or a file it links is invalid, missing, not readable, outside the allowed
            folders or too large (one message for the first three), naming the description's file and line.
        ArgumentError: ``out_dir`` is the description's folder, or a copy would overwrite a file of the source;
            ``out_dir`` or a file in it cannot be written (the system's reason); the package does not load into
            ``model``'s joints and actuators.
    """
    source = Path(description_path)
    out = Path(out_dir)
    if out.resolve() == source.resolve().parent or (out / source.name).resolve() == source.resolve():
        raise ArgumentError(
            f"export_package: out_dir {str(out)!r} is the description's own folder; the package would overwrite "
            "its source (choose another folder)"
        )
    with writing("export_package", "out_dir", out):
        out.mkdir(parents=True, exist_ok=True)
        if source.suffix.lower() == ".xml":
            written = _package_mjcf(source, out, package_dirs, actuator_dirs, model)
        else:
            written = _package_urdf(source, out, package_dirs, actuator_dirs, model)
    _check_package(model, written, out)
    return written


def _check_package(model: Model, written: Path, out: Path) -> None:
    """Refuse (ArgumentError) a package that does not load into ``model``'s joints, actuators and residual."""
    load = load_mjcf if written.suffix.lower() == ".xml" else load_urdf
    with warnings.catch_warnings():  # the description's own warnings were given when it was loaded
        warnings.simplefilter("ignore")
        loaded = load(written, meshes="ignore" if model.mesh_geoms else "convex_hull")
    same = loaded.joint_names == model.joint_names and loaded.actuators.names == model.actuators.names
    if not same or _first_difference(loaded.actuators.residual, model.actuators.residual):
        raise ArgumentError(
            f"export_package: the package in {out} does not load into the model's joints, actuators and residual"
        )


def _destination(out: Path, relative: str, path: Path | None) -> Path:
    """``out / relative``, refused if writing it would overwrite ``path`` (a file of the source; ``None``: none)."""
    target = out / relative
    if path is not None and target.resolve() == path.resolve():
        raise ArgumentError(
            f"export_package: writing {str(target)!r} would overwrite the source file; choose another out_dir"
        )
    return target


class _Copier:
    """Copies linked files (already confined to the model's folders) into one folder of the package, under unique
    names."""

    def __init__(self, out: Path, folder: str):
        self.out, self.folder, self.done = out, folder, {}

    def _unique(self, name: str) -> str:
        """``name``, or ``stem_1.suffix``, ``stem_2.suffix``, ... when a file of the folder has it."""
        stem, suffix = Path(name).stem, Path(name).suffix
        unique, k = name, 1
        while unique in self.done.values():
            unique, k = f"{stem}_{k}{suffix}", k + 1
        return unique

    def __call__(self, path: Path) -> str:
        path = path.resolve()
        if path not in self.done:
            name = self._unique(path.name)
            target = _destination(self.out, f"{self.folder}/{name}", path)
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(path, target)
            self.done[path] = name
        return f"{self.folder}/{self.done[path]}"

    def new_file(self, name: str, replaces: Path | None) -> Path:
        """Where to write a file the export makes (not a copy), under a name no other file of the folder has;
        refused where it would overwrite ``replaces`` (the source's file it stands for, ``None``: none)."""
        name = self._unique(name)
        target = _destination(self.out, f"{self.folder}/{name}", replaces)
        target.parent.mkdir(exist_ok=True)
        self.done[target.resolve()] = name
        return target


def _write(root, path: Path) -> Path:
    path.write_bytes(etree.tostring(root, xml_declaration=True, encoding="utf-8"))
    return path


def _package_urdf(source: Path, out: Path, package_dirs, actuator_dirs, model: Model) -> Path:
    root, name = parse_xml(source)
    base = source.resolve().parent
    actuators, meshes = _Copier(out, "actuators"), _Copier(out, "meshes")
    for el in root.iter():
        if tag(el) == "actuator" and el.get("file"):
            el.set("file", actuators(locate_actuator_file(el.get("file"), base, actuator_dirs, name, el)))
        elif tag(el) == "mesh" and el.get("filename"):
            found = resolve_mesh(el.get("filename"), str(base), package_dirs, name, el.sourceline)
            el.set("filename", meshes(found))
    _package_residual(root, (name, base, actuator_dirs), model, actuators, f"{source.stem}_residual.npz")
    return _write(root, _destination(out, source.name, source))


#: The attributes of MJCF assets that name files, and whether the file is under ``meshdir`` (else ``texturedir``).
_ASSET_FILES = {
    "mesh": (("file",), True),
    "hfield": (("file",), True),
    "skin": (("file",), True),
    "texture": (("file", "fileright", "fileleft", "fileup", "filedown", "filefront", "fileback"), False),
}


def _package_mjcf(source: Path, out: Path, package_dirs, actuator_dirs, model: Model) -> Path:
    from jaxmor.io.mjcf_document import read_document

    doc = read_document(source, None)
    root = doc.root
    meshdir, texturedir = "", ""
    for el in root.iter():
        if tag(el) == "compiler":
            meshdir = el.get("meshdir", el.get("assetdir", meshdir))
            texturedir = el.get("texturedir", el.get("assetdir", texturedir))
            for attr in ("meshdir", "texturedir", "assetdir"):
                el.attrib.pop(attr, None)
    assets, actuators = _Copier(out, "assets"), _Copier(out, "actuators")
    extension = False
    for el in list(root.iter()):
        where = (doc.source(el), el.sourceline)
        for attr in [a for a in el.attrib if a.startswith("{")]:  # the reader's source markers
            del el.attrib[attr]
        attributes, in_meshdir = _ASSET_FILES.get(tag(el), ((), True))
        folder = str(doc.main_dir / (meshdir if in_meshdir else texturedir))
        for attr in [a for a in attributes if el.get(a)]:
            found = resolve_mesh(el.get(attr), folder, package_dirs, *where, trees=[doc.main_dir], kind=tag(el))
            el.set(attr, assets(found).split("/", 1)[1])
        extension |= _package_mjcf_actuators(el, where, actuators, actuator_dirs, model)
    if model.actuators.residual.enabled and not extension:  # a file for the residual alone
        motors = etree.Element("actuators")
        _package_residual(motors, None, model, actuators, f"{source.stem}_residual.npz")
        target = actuators.new_file(f"{source.stem}_actuators.xml", None)
        _write(motors, target)
        custom = etree.SubElement(root, "custom")
        etree.SubElement(custom, "text", name=ACTUATORS_TEXT, data=f"actuators/{target.name}")
    root.insert(0, etree.Element("compiler", assetdir="assets"))
    etree.cleanup_namespaces(root)  # the reader's source markers' namespace, now unused
    return _write(root, _destination(out, source.name, source))


def _package_mjcf_actuators(el, where: tuple[str, int], actuators: _Copier, actuator_dirs, model: Model) -> bool:
    """Copy jaxmor's actuator file of a ``<text name="jaxmor:actuators">`` element and the files it links, with
    ``model``'s residual in place of the file's; whether ``el`` is that element."""
    if tag(el) != "text" or el.get("name") != ACTUATORS_TEXT:
        return False
    path = locate_actuator_file(el.get("data", ""), Path(where[0]).resolve().parent, actuator_dirs, where[0], el)
    motors, _ = parse_xml(path)
    for actuator in motors.iter("actuator"):
        if actuator.get("file"):
            linked = locate_actuator_file(actuator.get("file"), path.parent, actuator_dirs, str(path), actuator)
            actuator.set("file", Path(actuators(linked)).name)
    _package_residual(motors, (str(path), path.parent, actuator_dirs), model, actuators, f"{path.stem}_residual.npz")
    target = actuators.new_file(path.name, path)
    el.set("data", f"actuators/{target.name}")
    _write(motors, target)
    return True


def _package_residual(root, found: tuple | None, model: Model, files: _Copier, name: str) -> None:
    """Put ``model``'s residual in place of the ``<residual>`` of ``root`` (a URDF's ``<robot>`` or an
    ``<actuators>`` root): its weights written into ``files``' folder (under the name the file had, else
    ``name``) and referenced from ``root``, the element removed when the model has none.

    Args:
        found: ``(source, base_dir, actuator_dirs)``, where the element's file is looked up (confined as on load).
    """
    old = [c for c in root if tag(c) == "residual"]
    source_file = None
    if old and found is not None and old[0].get("file"):
        source, base_dir, dirs = found
        source_file = locate_actuator_file(old[0].get("file"), base_dir, dirs, source, old[0], kind="residual file")
        name = source_file.name
    for el in old:
        root.remove(el)
    if not model.actuators.residual.enabled:
        return
    target = files.new_file(name, source_file)
    save_residual(model, target, "export_package")
    reference = target.name if tag(root) == "actuators" else f"{files.folder}/{target.name}"
    etree.SubElement(root, "residual", file=reference).tail = "\n"
