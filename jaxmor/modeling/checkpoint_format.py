"""What a checkpoint's structure and arrays may be: the reading side of :mod:`jaxmor.modeling.checkpoint`.

Decoding follows the type annotations of jaxmor's dataclasses, never the file: each JSON node must be the form
its field's type takes (``{"value": ...}`` for ``int``, ``float``, ``bool``, ``str`` and ``None``,
``{"tuple": [...]}`` for tuples, ``{"enum": name, "value": ...}`` for enums, ``{"dataclass": name, "fields":
{...}}`` with exactly the class's fields, ``{"array": key}`` or a scalar ``{"value": ...}`` for an array leaf),
so the nesting depth is the types' (at most :data:`MAX_DEPTH` levels are ever followed). Every array of the
archive must be named by exactly one leaf.

Each array leaf is checked against its expected dtype kind and trailing shape:

* Model leaves: each field's declaration (:func:`jaxmor.fields.leaf`) gives its dims and kind, the dims written
  with counts that the decoded static fields give (:data:`_COUNTS`: ``nb`` the bodies' names, ``nv`` the ``nv``
  field, ``na`` the motor actuators' names, ...; a parent's counts hold in its children); a name no count defines
  (a mesh's padded vertex count, a height field's rows) is bound by the first leaf that uses it within its
  dataclass and must agree in the others.
* State leaves: the dims :func:`jaxmor.state.state_shapes` gives for the decoded model (the State's declared
  ``dims``), and the kinds of :data:`_STATE_KINDS` (float otherwise), which are :func:`jaxmor.init_state`'s.

Float means float32 or float64, one of the two for all the model's float leaves and one for all the state's
(a float32 state of a float64 model is allowed); int means a signed integer of 32 or 64 bits. A saved leaf may
carry leading world axes (:func:`jaxmor.randomize`, :func:`jaxmor.init_states`): its trailing dims must be the
expected ones, every batched model leaf must have the same leading axes, and so must every state leaf.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ModelError
from jaxmor.fields import declared_leaves

#: The deepest nesting of JSON nodes followed (the format's types nest five levels at most).
MAX_DEPTH = 16
#: Text of a value quoted in a message.
_QUOTE = 80

#: State leaves that are not floats (:func:`jaxmor.init_state`'s dtypes), by their path below ``state``.
_STATE_KINDS = {
    "mor_enforced": "b",
    "contact_key": "i",
    "contact_overflow": "i",
    "nonfinite": "b",
    "invalid": "b",
    "step_count": "i",
    "actuator_state.saturation": "i",
    "actuator_state.valid": "b",
    "motor_state.cutout": "b",
}


def _pairs(values: dict) -> dict[str, int]:
    eq = {"np": len(values["point_body"]), "nj": len(values["joint_q"]), "nt": len(values["tendon"])}
    return {**eq, "ne": sum(eq.values())}


#: The counts each class's static fields give, for the dims of its leaves and its children's.
_COUNTS: dict[str, Callable[[dict], dict[str, int]]] = {
    "Model": lambda v: {
        "nb": len(v["body_names"]),
        "nl": len(v["link_names"]),
        "ng": len(v["geom_type"]),
        "nm": len(v["mesh_vertex_count"]),
        "nv": v["nv"],
        "nq": v["nq"],
        "nj": len(v["joint_names"]),
        "nfree": len(v["free_body"]),
    },
    "MotorActuators": lambda v: {"na": len(v["names"]), "nk": len(v["coupling_actuator"])},
    "AffineActuators": lambda v: {"nu": len(v["names"])},
    "ResidualNetwork": lambda v: {"nf": 3 * v["history"]},
    "Sites": lambda v: {"ns": len(v["names"])},
    "Sensors": lambda v: {"nsensor": len(v["names"]), "ni": len(v["inertial_link"])},
    "Equalities": _pairs,
    "Tendons": lambda v: {"nt": len(v["names"]), "ntj": sum(len(j) for j in v["joint_q"])},
    "TerrainGrid": lambda v: {"nr": len(v["robot"]), "ncell": v["shape"][0] * v["shape"][1], "capacity": v["capacity"]},
}
_KIND_NAMES = {"f": "float", "i": "int", "b": "bool"}
_NB = ("body_parent", "body_joint_type", "body_joint_name", "body_q_start", "body_v_start")
_NG = ("geom_link", "geom_names", "geom_body", "geom_friction_given", "geom_priority", "geom_mesh", "geom_ground")
_FLAGS = ("inductive", "thermal", "housing", "cut", "cogging", "lugre")
#: Static fields that hold one entry per counted thing: ``{class: {field: count}}`` (an int field: its value).
_LENGTHS: dict[str, dict[str, str]] = {
    "Model": {
        **dict.fromkeys(_NB, "nb"),
        **dict.fromkeys(_NG, "ng"),
        **dict.fromkeys(("dof_body", "dof_rotational"), "nv"),
        **dict.fromkeys(("joint_q", "joint_u"), "nj"),
        **dict.fromkeys(("free_q", "free_u"), "nfree"),
        **dict.fromkeys(("mesh_faces", "mesh_edges"), "nm"),
        "link_body": "nl",
    },
    "MotorActuators": {
        **dict.fromkeys(("models", "joints", "joint_v_index", "couplings"), "na"),
        "coupling_v_index": "nk",
        "nv": "nv",
    },
    "MotorDynamics": dict.fromkeys(_FLAGS, "na"),
    "DriveController": dict.fromkeys(("active", "motor_side"), "na"),
    "Backlash": {"active": "na"},
    "ResidualNetwork": {"active": "na"},
    "AffineActuators": dict.fromkeys(("q_index", "v_index"), "nu"),
    "Sites": dict.fromkeys(("link", "shape"), "ns"),
    "Sensors": dict.fromkeys(("kinds", "dims", "obj_type", "obj_id", "ref_type", "ref_id"), "nsensor"),
    "Equalities": {"point_weld": "np", "point_rotation_rows": "np", "point_mocap": "np", "joint_u": "nj"},
    "Tendons": dict.fromkeys(("joint_q", "joint_u"), "nt"),
}


@functools.cache
def _hints(cls: type) -> dict[str, typing.Any]:
    return typing.get_type_hints(cls)


def _is_leaf(hint) -> bool:
    return hint is jax.Array


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= _QUOTE else text[: _QUOTE - 3] + "..."


@dataclasses.dataclass
class Decoder:
    """Decodes one checkpoint's structure against jaxmor's types, checking every array it takes.

    Attributes:
        source: the file, for the messages.
        arrays: the archive's arrays (NumPy), by key.
        state_shapes: the expected dims of the State's leaves by path below ``state`` (set before decoding it).
    """

    source: str
    arrays: dict[str, np.ndarray]
    state_shapes: dict[str, tuple] = dataclasses.field(default_factory=dict)
    used: set[str] = dataclasses.field(default_factory=set)
    floats: dict[str, tuple[np.dtype, str]] = dataclasses.field(default_factory=dict)
    batches: dict[str, tuple[tuple, str]] = dataclasses.field(default_factory=dict)

    def fail(self, path: str, message: str) -> ModelError:
        """The error for the node at ``path`` (e.g. ``model.actuators.motor.resistance``)."""
        return ModelError(self.source, None, f"{path}: {message}")

    def decode(self, node, hint, path: str, counts: dict, depth: int = 0):
        """The value of type ``hint`` that a JSON node stands for.

        Args:
            node: the JSON node.
            hint: the type the node must hold (a field's annotation).
            path: where it is, for messages and the state's dims.
            counts: the counts the static fields above it give, for array dims.
            depth: how deep the node is.

        Returns:
            The value (an array leaf as a JAX array).

        Raises:
            ModelError: the node is not a valid ``hint``, naming ``path``.
        """
        if depth > MAX_DEPTH:
            raise self.fail(path, f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise self.fail(path, f"expected a JSON object, got {_short(node)}")
        args = typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            if node == {"value": None} and type(None) in args:
                return None
            return self.decode(node, next(a for a in args if a is not type(None)), path, counts, depth)
        if typing.get_origin(hint) is tuple:
            return self._tuple(node, args, path, counts, depth)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return self._enum(node, hint, path)
        if dataclasses.is_dataclass(hint):
            return self._dataclass(node, hint, path, counts, depth)
        return self._scalar(node, hint, path)

    def _tuple(self, node: dict, args: tuple, path: str, counts: dict, depth: int) -> tuple:
        items = node.get("tuple")
        if set(node) != {"tuple"} or not isinstance(items, list):
            raise self.fail(path, f"expected a tuple node, got {_short(node)}")
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(items)
        if len(items) != len(args):
            raise self.fail(path, f"expected {len(args)} items, got {len(items)}")
        return tuple(
            self.decode(v, a, f"{path}[{i}]", counts, depth + 1)
            for i, (v, a) in enumerate(zip(items, args, strict=True))
        )

    def _enum(self, node: dict, cls: type[enum.Enum], path: str) -> enum.Enum:
        if set(node) != {"enum", "value"} or node["enum"] != cls.__name__:
            raise self.fail(path, f"expected a {cls.__name__} node, got {_short(node)}")
        try:
            return cls(node["value"])
        except (ValueError, TypeError):
            raise self.fail(path, f"{_short(node['value'])} is not a {cls.__name__}") from None

    def _scalar(self, node: dict, hint, path: str):
        value = node.get("value", ...)
        expected = {int: (int,), float: (int, float), bool: (bool,), str: (str,)}.get(hint)
        if expected is None:  # a type the format does not know: a jaxmor bug, refused all the same
            raise self.fail(path, f"this jaxmor cannot read a {hint!r} field")
        if set(node) != {"value"} or not isinstance(value, expected) or (hint is not bool and isinstance(value, bool)):
            raise self.fail(path, f"expected a {hint.__name__}, got {_short(node)}")
        return value

    def _dataclass(self, node: dict, cls: type, path: str, counts: dict, depth: int):
        fields = node.get("fields")
        if set(node) != {"dataclass", "fields"} or node["dataclass"] != cls.__name__ or not isinstance(fields, dict):
            raise self.fail(path, f"expected a {cls.__name__} node, got {_short(node)}")
        names = [f.name for f in dataclasses.fields(cls)]
        if set(fields) != set(names):
            odd = sorted(set(fields) ^ set(names))
            raise self.fail(path, f"the fields of a {cls.__name__} differ from this jaxmor's: {_short(odd)}")
        hints = _hints(cls)
        later = {n for n in names if _is_leaf(hints[n]) or _holds_dataclass(hints[n])}
        values = {}
        for n in (n for n in names if n not in later):
            values[n] = self.decode(fields[n], hints[n], f"{path}.{n}", counts, depth + 1)
        own = dict(counts)
        if cls.__name__ in _COUNTS:
            own.update(_COUNTS[cls.__name__](values))
        self._check_lengths(cls.__name__, values, path, own)
        for n in names:
            if n in later and _is_leaf(hints[n]):
                values[n] = self._leaf(fields[n], cls, f"{path}.{n}", own)
            elif n in later:
                values[n] = self.decode(fields[n], hints[n], f"{path}.{n}", own, depth + 1)
        try:
            return cls(**values)
        except Exception as err:  # noqa: BLE001 - any refusal of the class is the file's fault
            raise self.fail(path, f"not a valid {cls.__name__}: {_short(str(err))}") from None

    def _check_lengths(self, owner: str, values: dict, path: str, counts: dict) -> None:
        """Refuse a static field of ``owner`` whose entries (or value) are not its count (:data:`_LENGTHS`)."""
        for name, count in _LENGTHS.get(owner, {}).items():
            value = values[name]
            size = value if isinstance(value, int) else len(value)
            if size != counts[count]:
                raise self.fail(f"{path}.{name}", f"{size} entries, but the {count} count is {counts[count]}")

    def _leaf(self, node: dict, owner: type, path: str, counts: dict):
        kind, dims = self._expected(owner, path)
        if not isinstance(node, dict):
            raise self.fail(path, f"expected an array node, got {_short(node)}")
        if set(node) == {"value"} and not dims:  # a Python number kept as one
            value = node["value"]
            ok = isinstance(value, bool) if kind == "b" else type(value) in ((int, float) if kind == "f" else (int,))
            if not ok:
                raise self.fail(path, f"expected a {_KIND_NAMES[kind]} scalar, got {_short(value)}")
            return value
        key = node.get("array")
        if set(node) != {"array"} or not isinstance(key, str):
            raise self.fail(path, f"expected an array node, got {_short(node)}")
        if key not in self.arrays:
            raise self.fail(path, f"the checkpoint lacks the array {_short(key)} (truncated or edited?)")
        if key in self.used:
            raise self.fail(path, f"the array {_short(key)} is named twice")
        self.used.add(key)
        array = self.arrays[key]
        self._check_dtype(array, kind, path)
        self._check_shape(array, dims, path, counts)
        return jnp.asarray(array)

    def _expected(self, owner: type, path: str) -> tuple[str, tuple]:
        """``(kind, dims)`` of the leaf at ``path`` (a field of class ``owner``)."""
        root, _, below = path.partition(".")
        if root == "state":
            if below not in self.state_shapes:
                raise self.fail(path, "not a field of this jaxmor's State")
            return _STATE_KINDS.get(below, "f"), self.state_shapes[below]
        field = path.rsplit(".", 1)[1]
        found = declared_leaves(owner).get(field)
        if found is None:
            raise self.fail(path, "this jaxmor's checkpoint format has no dims for this field")
        return found.kind, found.dims

    def _check_dtype(self, array: np.ndarray, kind: str, path: str) -> None:
        dtype = array.dtype
        ok = {
            "f": dtype in (np.float32, np.float64),
            "i": dtype in (np.int32, np.int64),
            "b": dtype == np.bool_,
        }[kind]
        if not ok:
            raise self.fail(path, f"dtype {dtype.name}, but this field holds {_KIND_NAMES[kind]}s")
        if kind == "f":
            root = path.split(".", 1)[0]
            first, where = self.floats.setdefault(root, (dtype, path))
            if first != dtype:
                raise self.fail(path, f"dtype {dtype.name}, but {where} is {first.name} (one float dtype per {root})")

    def _check_shape(self, array: np.ndarray, dims: tuple, path: str, counts: dict) -> None:
        shape = array.shape
        lead = len(shape) - len(dims)
        if lead < 0:
            raise self.fail(path, f"shape {shape}, expected {self._dims_text(dims, counts)}")
        for dim, size in zip(dims, shape[lead:], strict=True):
            want = dim if isinstance(dim, int) else counts.setdefault(dim, size)
            if size != want:
                raise self.fail(path, f"shape {shape}, expected (worlds...) + {self._dims_text(dims, counts)}")
        root = path.split(".", 1)[0]
        batch = shape[:lead]
        if root == "model" and not batch:
            return
        first, where = self.batches.setdefault(root, (batch, path))
        if batch != first:
            raise self.fail(path, f"leading world axes {batch}, but {where} has {first}")

    @staticmethod
    def _dims_text(dims: tuple, counts: dict) -> str:
        return str(tuple(d if isinstance(d, int) else counts.get(d, d) for d in dims))

    def unused(self) -> list[str]:
        """The archive's arrays that no leaf named."""
        return sorted(set(self.arrays) - self.used)


def _holds_dataclass(hint) -> bool:
    """Whether a type is a dataclass, or a tuple or optional of them (decoded after the static fields)."""
    if dataclasses.is_dataclass(hint):
        return True
    return any(_holds_dataclass(a) for a in typing.get_args(hint) if a is not Ellipsis)
