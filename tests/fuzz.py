"""Seeded mutations of robot description files and checkpoints, for the tests that every mutated file loads or
fails cleanly."""

from __future__ import annotations

import io
import json
import random
import re
from collections.abc import Sequence

import numpy as np

_NUMBER = re.compile(r'(?<=")-?\d+(\.\d+)?(e-?\d+)?(?=[" ])')


def mutate(text: str, rng: random.Random, tags: Sequence[str], types: Sequence[str]) -> str:
    """One random edit of an XML file: a line dropped or duplicated, a number made bad, an attribute removed, a
    tag renamed to another of ``tags``, the text truncated, a stray character, a ``type`` changed to one of
    ``types``."""
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(8)
    if kind == 0 and len(lines) > 1:  # drop a line
        del lines[rng.randrange(len(lines))]
    elif kind == 1:  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == 2:  # a number becomes something else
        spans = [m.span() for m in _NUMBER.finditer(text)]
        if spans:
            a, b = rng.choice(spans)
            bad = rng.choice(["nan", "inf", "-1", "1e39", "0", "1e-50", "abc", "", "1 2", "1e400", "-0"])
            return text[:a] + bad + text[b:]
    elif kind == 3:  # an attribute disappears
        spans = [m.span() for m in re.finditer(r' \w+="[^"]*"', text)]
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + text[b:]
    elif kind == 4:  # a tag is renamed
        return text.replace(f"<{rng.choice(tags)}", f"<{rng.choice(tags)}", 1)
    elif kind == 5:  # truncated
        return text[: rng.randrange(len(text))]
    elif kind == 6:  # a stray character
        i = rng.randrange(len(text))
        return text[:i] + rng.choice('<>&"/=x\n') + text[i:]
    else:  # a type changes
        return re.sub(r'type="\w+"', f'type="{rng.choice(types)}"', text, count=1)
    return "".join(lines)


#: JSON nodes that are no valid node of a checkpoint anywhere they replace one: wrong types, unknown types and
#: enum values, integers too large for any count.
_BAD_NODES = (
    {"value": "x"},
    {"value": [1, 2]},
    {"value": {"a": 1}},
    {"value": 10**30},
    5,
    "text",
    [],
    None,
    {},
    {"tuple": "x"},
    {"tuple": [{"value": 1}], "extra": 1},
    {"array": 3},
    {"array": "nowhere"},
    {"enum": "JointType", "value": 99},
    {"enum": "State", "value": 1},
    {"enum": "Nope", "value": 1},
    {"dataclass": "Options", "fields": {}},
    {"dataclass": "Nope", "fields": {}},
    {"dataclass": "Model", "fields": []},
)
#: Arrays that no leaf of a checkpoint may be: other kinds, other shapes.
_BAD_ARRAYS = (
    lambda a: a.astype(np.complex64),
    lambda a: a.astype(np.complex128),
    lambda a: a.astype(str),
    lambda a: a.astype(np.uint8),
    lambda a: a.astype(np.float16),
    lambda a: np.zeros(a.shape, np.int16),
    lambda a: np.zeros(a.shape, dtype="datetime64[s]"),
    lambda a: a.astype(np.float32) if a.dtype == np.float64 else a.astype(np.float64),
)
#: Other shapes (for arrays of one dim or more: any shape of a model's scalar is a batch of worlds).
_BAD_SHAPES = (
    lambda a: np.zeros(a.shape[:-1] + (a.shape[-1] + 1,), a.dtype),
    lambda a: np.zeros(a.shape + (2,), a.dtype),
    lambda a: np.zeros((), a.dtype),
    lambda a: a[None].repeat(2, 0)[..., None],
)
#: Static tuples with one entry per body, geom, velocity, joint or link.
_COUNTED = ("body_parent", "body_v_start", "body_joint_type", "dof_body", "geom_link", "geom_priority", "joint_q")


def _nodes(tree, out: list) -> list:
    """Every ``(parent, key)`` of a JSON tree's dicts and lists, depth first."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, child in items:
        out.append((tree, key))
        _nodes(child, out)
    return out


def _edit_structure(meta: dict, rng: random.Random) -> str:
    """The JSON text of ``meta`` with one crafted edit that makes it invalid."""
    nodes = _nodes(meta, [])
    kind = rng.randrange(7)
    if kind == 0:  # nested far deeper than any type
        depth = rng.choice([20, 200, 5000, 100_000])
        parent, key = rng.choice(nodes)
        parent[key] = "__DEEP__"
        deep = '{"tuple": [' * depth + '{"value": 1}' + "]}" * depth
        return json.dumps(meta).replace('"__DEEP__"', deep, 1)
    if kind == 1:  # a node replaced by one of another type
        parent, key = rng.choice(nodes)
        parent[key] = json.loads(json.dumps(rng.choice(_BAD_NODES)))
    elif kind == 2:  # an enum value that does not exist
        enums = [n for n in (p[k] for p, k in nodes) if isinstance(n, dict) and "enum" in n]
        rng.choice(enums)["value"] = rng.choice([99, -5, "x", None, 1.5, [1]])
    elif kind == 3:  # a field missing or added
        fields = [n["fields"] for n in (p[k] for p, k in nodes) if isinstance(n, dict) and "fields" in n]
        chosen = rng.choice(fields)
        if rng.random() < 0.5:
            del chosen[rng.choice(sorted(chosen))]
        else:
            chosen["extra_field"] = {"value": 1}
    elif kind == 4:  # another version or format, or an entry more
        meta[rng.choice(["version", "format", "extra"])] = rng.choice([2, 4, "3", 3.0, None, True, 10**30, "x"])
    elif kind == 5:  # a count far larger than the arrays
        counts = [n for n in (p[k] for p, k in nodes) if isinstance(n, dict) and set(n) == {"value"}]
        chosen = [n for n in counts if type(n["value"]) is int] or counts
        rng.choice(chosen)["value"] = rng.choice([10**30, 2**63, -(2**40), 10**4000 // 10**3990])
        meta["model"]["fields"]["nq"] = {"value": 10**30}  # the counts are inconsistent whatever else changed
    else:  # a counted tuple's length changed
        chosen = meta["model"]["fields"][rng.choice(_COUNTED)]["tuple"]
        chosen.append(chosen[0]) if rng.random() < 0.5 else chosen.pop()
    return json.dumps(meta)


def mutate_checkpoint(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """One random corruption of a checkpoint (:func:`jaxmor.save_checkpoint`'s bytes) and its kind: bytes or bits
    flipped, the file truncated, or the archive rewritten with an invalid structure or array."""
    kind = rng.choice(["byte", "bit", "truncate", "structure", "structure", "array", "array", "entries"])
    if kind in ("byte", "bit"):
        out = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 8])):
            i = rng.randrange(len(out))
            out[i] = rng.randrange(256) if kind == "byte" else out[i] ^ (1 << rng.randrange(8))
        return bytes(out), kind
    if kind == "truncate":
        return data[: rng.randrange(len(data))], kind
    with np.load(io.BytesIO(data)) as archive:
        arrays = {k: archive[k] for k in archive.files}
    if kind == "structure":
        meta = json.loads(arrays["jaxmor_checkpoint"].tobytes())
        text = _edit_structure(meta, rng)
        arrays["jaxmor_checkpoint"] = np.frombuffer(text.encode(), np.uint8)
    elif kind == "array":
        key = rng.choice(sorted(k for k in arrays if k != "jaxmor_checkpoint"))
        shaped = arrays[key].ndim and rng.random() < 0.4
        arrays[key] = rng.choice(_BAD_SHAPES if shaped else _BAD_ARRAYS)(arrays[key])
    else:
        key = rng.choice(sorted(arrays))
        if rng.random() < 0.5:
            del arrays[key]
        else:
            arrays["model/extra"] = np.zeros(3)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue(), kind
