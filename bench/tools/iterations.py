"""Dependent loop iterations per step, read from the compiled program: how many loop bodies run one after another.

``jax.jit(jaxmor.step).lower(model, state).compile().as_text()`` is XLA's optimized HLO. Every ``while``
instruction in it is a loop whose iterations run in sequence (each needs the previous one's result),
whatever the batch size: on a GPU each iteration is at least one kernel launch and a synchronization,
so this number, not the arithmetic, bounds how fast one step can be. The count, per program::

    dependent(C) = sum over the loops L reached from computation C (directly, or through call, fusion,
                   conditional, ...: every computation but another loop's body) of
                   trip_count(L) * (1 + dependent(body(L)))

and the total is ``dependent(ENTRY)``: the number of sequential loop-body executions of one step. A
``conditional`` counts its most expensive branch (only one runs).

Trip counts come from the ``known_trip_count`` XLA records in a while's ``backend_config``; without it
(or with ``--derive-trip-counts``) from the loop itself: the condition's comparison of the induction
variable with a constant, the initial value in the while's operand tuple and the increment in the body.
A trip count that cannot be determined either way is an error (the total would be meaningless).

Programs: the step of one world, the step vmapped over ``--worlds`` worlds, and with ``--gradient`` the
``jax.grad`` of a one-step loss (the sum of the next state's ``q`` and ``u``) w.r.t. the state's ``q``.
Scenes: the bench's quadruped on the ground (``bench/scenario.py``: 8 contact slots, 12 joints), and

* ``--contacts-x2``: the same URDF with every collision element doubled (a second, identical copy):
  twice the ground contact slots (two base boxes, two spheres per foot), the same 12 joints;
* ``--joints-x2``: the same URDF with one more revolute joint (axis ``z``, limits +-0.5 rad, the same
  damping and friction) and a light link (0.05 kg) inserted before each of the 12 revolute joints: 24
  joints (12 unactuated), nv 30, the same 12 contact slots.

    python -m bench.tools.iterations                                  # the quadruped: table and total
    python -m bench.tools.iterations --contacts-x2 --joints-x2 --gradient --out iterations.jsonl

Each (scene, program) prints a table and one line ``ITERATIONS {json}`` (``--out`` appends the JSON
lines to a file). It may be run with another checkout of jaxmor first on ``PYTHONPATH``: the report names the
jaxmor it imported and its commit (``bench.runner.git_commit`` of that checkout).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# ---------------------------------------------------------------------------------------------- HLO text

_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_CALLED = re.compile(r"\b(calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)")
_CALLED_LIST = re.compile(r"\b(branch_computations|called_computations)=\{([^}]*)\}")
_METADATA = re.compile(r"metadata=\{[^}]*\}")
_TRIP = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(-?\d+)"?')
_FRAME = re.compile(r"stack_frame_id=(\d+)")
_OP_NAME = re.compile(r'op_name="([^"]*)"')
_DIRECTION = re.compile(r"direction=(\w+)")
_INDEX = re.compile(r"\bindex=(\d+)")
#: Instructions that are bookkeeping, not work, left out of a body's opcode counts.
_BOOKKEEPING = {"parameter", "get-tuple-element", "tuple", "constant", "bitcast"}


class HloParseError(RuntimeError):
    """The HLO text is not what this parser understands, or a trip count cannot be determined."""


@dataclass
class Instruction:
    name: str
    opcode: str
    operands: list[str]
    attributes: str
    root: bool
    called: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Computation:
    name: str
    instructions: dict[str, Instruction]
    root: Instruction | None = None


@dataclass
class Module:
    computations: dict[str, Computation]
    entry: str
    frames: dict[int, str]  # stack frame id -> "file.py:line function"


def _balanced(text: str, start: int) -> int:
    """Index just past the parenthesis group that opens at ``text[start] == '('``."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise HloParseError(f"unbalanced parentheses in {text[:200]!r}")


def _split_top(text: str) -> list[str]:
    """Split at the commas outside any (), {}, []."""
    parts, depth, current = [], 0, []
    for c in text:
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(c)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def _parse_instruction(line: str) -> Instruction | None:
    m = _INSTRUCTION.match(line)
    if not m:
        return None
    root, name, rest = bool(m.group(1)), m.group(2), m.group(3)
    # Skip the result type: a tuple "( ... )" or one token "f32[48,48]{1,0}".
    pos = _balanced(rest, 0) if rest.startswith("(") else len(rest.split(None, 1)[0])
    rest = rest[pos:].lstrip()
    op = re.match(r"([\w\-]+)\(", rest)
    if not op:
        raise HloParseError(f"cannot read the opcode of {line.strip()[:200]!r}")
    end = _balanced(rest, op.end() - 1)
    operands = []
    for piece in _split_top(rest[op.end() : end - 1]):
        token = piece.split()[-1] if piece.split() else piece  # "f32[] %x" (old style) or "%x"
        operands.append(token.lstrip("%"))
    attributes = rest[end:]
    called: dict[str, list[str]] = {}
    plain = _METADATA.sub("", attributes)
    for key, target in _CALLED.findall(plain):
        called.setdefault(key, []).append(target)
    for key, targets in _CALLED_LIST.findall(plain):
        called.setdefault(key, []).extend(t.strip().lstrip("%") for t in targets.split(",") if t.strip())
    return Instruction(name, op.group(1), operands, attributes, root, called)


def _parse_tables(lines: list[str]) -> dict[int, str]:
    """The stack frame tables (FileNames, FunctionNames, FileLocations, StackFrames) -> frame id -> location."""
    tables: dict[str, dict[int, str]] = {}
    current = None
    for line in lines:
        if re.match(r"^[A-Z]\w*$", line.strip()) and not line.startswith(" "):
            current = line.strip()
            tables[current] = {}
            continue
        m = re.match(r"^(\d+)\s+(.*)$", line.strip())
        if current and m:
            tables[current][int(m.group(1))] = m.group(2)
        elif line.strip():
            current = None
    files = {k: Path(v.strip('"')).name for k, v in tables.get("FileNames", {}).items()}
    functions = {k: v.strip('"') for k, v in tables.get("FunctionNames", {}).items()}
    locations = {}
    for k, v in tables.get("FileLocations", {}).items():
        f = re.search(r"file_name_id=(\d+)", v)
        g = re.search(r"function_name_id=(\d+)", v)
        n = re.search(r"\bline=(\d+)", v)
        if f and g and n:
            locations[k] = f"{files.get(int(f.group(1)), '?')}:{n.group(1)} {functions.get(int(g.group(1)), '?')}"
    frames = {}
    for k, v in tables.get("StackFrames", {}).items():
        loc = re.search(r"file_location_id=(\d+)", v)
        if loc and int(loc.group(1)) in locations:
            frames[k] = locations[int(loc.group(1))]
    return frames


def parse_hlo(text: str) -> Module:
    """Parse the text of an HLO module (``Compiled.as_text()`` or ``Lowered.as_text(dialect='hlo')``)."""
    computations: dict[str, Computation] = {}
    entry = None
    current: Computation | None = None
    outside: list[str] = []
    for line in text.splitlines():
        if current is None:
            m = _COMPUTATION.match(line)
            if m:
                current = Computation(m.group(2), {})
                if m.group(1):
                    entry = current.name
            else:
                outside.append(line)
            continue
        if line.startswith("}"):
            computations[current.name] = current
            current = None
            continue
        if not line.strip():
            continue
        instr = _parse_instruction(line)
        if instr is None:
            raise HloParseError(f"cannot parse the line {line.strip()[:200]!r} of computation {current.name}")
        current.instructions[instr.name] = instr
        if instr.root:
            current.root = instr
    if current is not None:
        raise HloParseError(f"computation {current.name} is not closed")
    if entry is None:
        raise HloParseError("no ENTRY computation in the HLO text")
    return Module(computations, entry, _parse_tables(outside))


# ---------------------------------------------------------------------------------------------- trip counts


#: A call site: the computation holding a ``call``/``fusion`` instruction and that instruction. ``None`` stands
#: for a while body or condition, or a conditional's branch: their parameters are not constants of the caller.
Site = tuple[Computation, Instruction] | None


def _value(sites: tuple[Site, ...], comp: Computation, name: str, index: int | None = None, depth: int = 0):
    """The integer value of ``name`` (of its tuple element ``index``) when it is a compile-time constant, else None.

    Follows copies, bitcasts and converts, tuples and get-tuple-elements, and a computation's parameters
    back to the operands of its call site (``sites[-1]``).
    """
    instr = comp.instructions.get(name)
    if instr is None or depth > 64:
        return None
    op = instr.opcode
    if op == "parameter":
        if not sites or sites[-1] is None:
            return None
        caller, call = sites[-1]
        operand = call.operands[int(instr.operands[0])]
        return _value(sites[:-1], caller, operand, index, depth + 1)
    if op in ("copy", "bitcast", "convert", "reshape") and instr.operands:
        return _value(sites, comp, instr.operands[0], index, depth + 1)
    if index is not None:
        if op == "tuple":
            return _value(sites, comp, instr.operands[index], None, depth + 1)
        return None
    if op == "constant":
        try:
            return int(float(instr.operands[0]))
        except (ValueError, IndexError):
            return None
    if op == "get-tuple-element":
        m = _INDEX.search(instr.attributes)
        return _value(sites, comp, instr.operands[0], int(m.group(1)), depth + 1) if m else None
    return None


def _constant(comp: Computation, name: str) -> int | None:
    """The integer value of instruction ``name`` if it is a constant within ``comp``."""
    return _value((None,), comp, name)


def _resolve(module: Module, comp: Computation, name: str) -> tuple[Computation, Instruction]:
    """Follow fusion roots and fusion parameters so that ``name`` denotes an instruction doing the work."""
    instr = comp.instructions[name]
    if instr.opcode == "fusion" and instr.called.get("calls"):
        fused = module.computations[instr.called["calls"][0]]
        return fused, fused.root
    return comp, instr


def _fusion_operand(comp: Computation, outer: Computation | None, outer_instr: Instruction | None, name: str):
    """Map a fused computation's ``parameter(i)`` back to operand ``i`` of its fusion instruction."""
    instr = comp.instructions.get(name)
    if instr is not None and instr.opcode == "parameter" and outer is not None and outer_instr is not None:
        return outer, outer_instr.operands[int(instr.operands[0])]
    return comp, name


def _tuple_index(comp: Computation, name: str) -> int | None:
    """``i`` when ``name`` is ``get-tuple-element(parameter), index=i`` (the loop-carried value ``i``)."""
    instr = comp.instructions.get(name)
    while instr is not None and instr.opcode in ("copy", "bitcast") and instr.operands:
        instr = comp.instructions.get(instr.operands[0])
    if instr is None or instr.opcode != "get-tuple-element":
        return None
    src = comp.instructions.get(instr.operands[0])
    m = _INDEX.search(instr.attributes)
    return int(m.group(1)) if m and src is not None and src.opcode == "parameter" else None


def derive_trip_count(module: Module, parent: Computation, loop: Instruction, sites: tuple[Site, ...] = ()) -> int:
    """The trip count of ``loop`` from its condition ``i < N``, the initial value of ``i`` and its increment: the form
    of every counted loop (``fori_loop``, ``scan``) that XLA's CPU backend emits for jaxmor's programs.

    Raises:
        HloParseError: the loop is not a counted loop of that form.
    """
    where = f"while {loop.name} in {parent.name}"
    cond = module.computations[loop.called["condition"][0]]
    root = cond.root
    comp, outer, outer_instr = cond, None, None
    if root.opcode == "fusion":
        outer, outer_instr = cond, root
        comp = module.computations[root.called["calls"][0]]
        root = comp.root
    if root.opcode != "compare" or len(root.operands) != 2:
        raise HloParseError(f"{where}: the condition's root is {root.opcode}, not a compare")
    direction = _DIRECTION.search(root.attributes)
    if not direction:
        raise HloParseError(f"{where}: the condition's compare has no direction")
    direction = direction.group(1)
    sides = []
    for operand in root.operands:
        c, n = _fusion_operand(comp, outer, outer_instr, operand)
        sides.append((_tuple_index(c, n), _constant(c, n)))
    if direction != "LT" or sides[0][0] is None or sides[1][1] is None:
        raise HloParseError(f"{where}: the condition is not `loop-carried value < constant`")
    index, limit = sides[0][0], sides[1][1]
    # Initial value: element `index` of the while's operand (a tuple, or a parameter of a called computation).
    init = _value(sites, parent, loop.operands[0], index)
    if init is None:
        raise HloParseError(f"{where}: the induction variable's initial value (element {index}) is not a constant")
    # Step: element `index` of the body's root tuple is `add(get-tuple-element(param, index), constant)`.
    body = module.computations[loop.called["body"][0]]
    if body.root is None or body.root.opcode != "tuple":
        raise HloParseError(f"{where}: the body's root is not a tuple")
    c, add = _resolve(module, body, body.root.operands[index])
    outer_b = body if c is not body else None
    outer_i = body.instructions[body.root.operands[index]] if c is not body else None
    if add.opcode != "add" or len(add.operands) != 2:
        raise HloParseError(f"{where}: the induction variable is not updated by an add")
    step = None
    for a, b in (add.operands, add.operands[::-1]):
        ca, na = _fusion_operand(c, outer_b, outer_i, a)
        cb, nb = _fusion_operand(c, outer_b, outer_i, b)
        if _tuple_index(ca, na) == index and _constant(cb, nb) is not None:
            step = _constant(cb, nb)
            break
    if not step or step < 0:
        raise HloParseError(f"{where}: the induction variable's increment is not a positive constant")
    return max(math.ceil((limit - init) / step), 0)


def trip_count(
    module: Module, parent: Computation, loop: Instruction, derive: bool = False, sites: tuple[Site, ...] = ()
) -> tuple[int, str]:
    """(trip count, how it was found: "known" from backend_config, or "derived" from the loop itself)."""
    known = _TRIP.search(loop.attributes)
    if known and not derive:
        n = int(known.group(1))
        try:  # cross-check: a disagreement means this parser misreads loops
            derived = derive_trip_count(module, parent, loop, sites)
        except HloParseError:
            derived = None
        if derived is not None and derived != n:
            raise HloParseError(f"while {loop.name}: known_trip_count {n} but the loop reads as {derived} trips")
        return n, "known"
    try:
        return derive_trip_count(module, parent, loop, sites), "derived"
    except HloParseError as e:
        raise HloParseError(f"cannot determine the trip count: {e}") from None


# ---------------------------------------------------------------------------------------------- loops


@dataclass
class Loop:
    """One ``while`` of the program, with the loops nested in its body."""

    name: str
    computation: str  # where the while instruction is
    body: str
    trip_count: int
    trip_source: str
    depth: int
    location: str
    op_name: str
    body_opcodes: dict[str, int]
    body_ops: int  # instructions of one iteration, fusions' insides included, nested loops' bodies not
    inner: list[Loop] = field(default_factory=list)
    inner_dependent: int = 0

    @property
    def dependent(self) -> int:
        return self.trip_count * (1 + self.inner_dependent)

    def flat(self) -> list[Loop]:
        out = [self]
        for loop in self.inner:
            out.extend(loop.flat())
        return out

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "depth": self.depth,
            "trip_count": self.trip_count,
            "trip_source": self.trip_source,
            "dependent_iterations": self.dependent,
            "body": self.body,
            "computation": self.computation,
            "location": self.location,
            "op_name": self.op_name,
            "body_ops": self.body_ops,
            "body_opcodes": self.body_opcodes,
            "inner": [loop.as_dict() for loop in self.inner],
        }


def _flat_ops(module: Module, name: str, stack: tuple[str, ...] = ()) -> int:
    """Instructions (not bookkeeping) of a computation and of what it calls, nested loops' bodies excluded."""
    if name in stack:
        raise HloParseError(f"recursive computation {name}")
    n = 0
    for instr in module.computations[name].instructions.values():
        if instr.opcode not in _BOOKKEEPING:
            n += 1
        if instr.opcode == "while":
            continue
        for targets in instr.called.values():
            for t in targets:
                n += _flat_ops(module, t, (*stack, name))
    return n


def _walk(
    module: Module, name: str, depth: int, derive: bool, stack: tuple[str, ...] = (), sites: tuple[Site, ...] = ()
) -> tuple[list[Loop], int]:
    """(the loops reached from computation ``name`` at nesting ``depth``, their dependent iterations).

    ``sites`` are the call sites that led here (to resolve a loop's initial value through parameters).
    """
    if name in stack:
        raise HloParseError(f"recursive computation {name}")
    stack = (*stack, name)
    comp = module.computations[name]
    loops: list[Loop] = []
    dependent = 0
    for instr in comp.instructions.values():
        if instr.opcode == "while":
            body, cond = instr.called["body"][0], instr.called["condition"][0]
            n, source = trip_count(module, comp, instr, derive, sites)
            inner, inner_dep = _walk(module, body, depth + 1, derive, stack, (*sites, None))
            cond_loops, cond_dep = _walk(module, cond, depth + 1, derive, stack, (*sites, None))
            frame = _FRAME.search(instr.attributes)
            op_name = _OP_NAME.search(instr.attributes)
            opcodes = Counter(
                i.opcode for i in module.computations[body].instructions.values() if i.opcode not in _BOOKKEEPING
            )
            loop = Loop(
                name=instr.name,
                computation=name,
                body=body,
                trip_count=n,
                trip_source=source,
                depth=depth,
                location=module.frames.get(int(frame.group(1)), "") if frame else "",
                op_name=op_name.group(1) if op_name else "",
                body_opcodes=dict(opcodes.most_common()),
                body_ops=_flat_ops(module, body),
                inner=inner + cond_loops,
                # The condition runs trip_count + 1 times; a loop in it (never seen in practice) counts as in the body.
                inner_dependent=inner_dep + cond_dep,
            )
            loops.append(loop)
            dependent += loop.dependent
        elif instr.opcode == "conditional":
            keys = ("branch_computations", "true_computation", "false_computation")
            branches = [t for k in keys for t in instr.called.get(k, [])]
            best = 0
            for t in branches:
                sub, dep = _walk(module, t, depth, derive, stack, (*sites, None))
                loops.extend(sub)
                best = max(best, dep)
            dependent += best
        else:
            for targets in instr.called.values():
                for t in targets:
                    site = (comp, instr) if instr.opcode in ("call", "fusion") else None
                    sub, dep = _walk(module, t, depth, derive, stack, (*sites, site))
                    loops.extend(sub)
                    dependent += dep
    return loops, dependent


def count_iterations(text: str, derive: bool = False) -> dict:
    """Loops and dependent iterations of an HLO module's text: ``{"total", "loops", "n_while"}``."""
    module = parse_hlo(text)
    loops, total = _walk(module, module.entry, 0, derive)
    n_while = sum(1 for c in module.computations.values() for i in c.instructions.values() if i.opcode == "while")
    reached = sum(len(loop.flat()) for loop in loops)
    if reached != n_while:
        # A while in a computation that nothing reaches from ENTRY (dead code) or a call this parser misses.
        raise HloParseError(f"{n_while} while instructions in the module, {reached} reached from ENTRY")
    return {"total": total, "loops": loops, "n_while": n_while}


def _sub_jaxprs(value):
    """The jaxprs in an equation's parameter (a jaxpr, a closed jaxpr, or a tuple of them)."""
    if isinstance(value, (tuple, list)):
        return [j for v in value for j in _sub_jaxprs(v)]
    inner = getattr(value, "jaxpr", None)
    if inner is not None and hasattr(inner, "eqns"):
        return [inner]
    return [value] if hasattr(value, "eqns") else []


def jaxpr_iterations(jaxpr, platform: str) -> int:
    """Dependent loop iterations of a traced program (a jaxpr), inside Pallas kernels too, as lowered for
    ``platform``: the same sum as the compiled count (a ``scan`` of ``length`` trips or a ``while`` counts
    ``trips x (1 + its body's)``), over every nested jaxpr (calls, custom rules, kernels' bodies); of a ``cond`` the
    branch ``platform`` lowers (``jax.lax.platform_dependent``) or else its most expensive branch. A ``while``
    whose trips are not a constant of the jaxpr is an error."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in jaxpr.eqns:
        name, params = eqn.primitive.name, eqn.params
        if name == "scan":
            total += params["length"] * (1 + jaxpr_iterations(params["jaxpr"], platform))
        elif name == "while":
            raise ValueError(f"a while loop with no static trip count: {eqn.source_info.traceback}")
        elif name == "cond":
            branches = [jaxpr_iterations(b, platform) for b in params["branches"]]
            chosen = params.get("branches_platforms")
            if chosen:
                named = [i for i, ps in enumerate(chosen) if ps is not None and platform in ps]
                default = [i for i, ps in enumerate(chosen) if ps is None]
                total += branches[(named or default)[0]]
            else:
                total += max(branches, default=0)
        else:
            total += sum(jaxpr_iterations(j, platform) for v in params.values() for j in _sub_jaxprs(v))
    return total


def format_table(loops: list[Loop], total: int) -> str:
    """The loops, one per row (nested ones indented under their parent), and the total."""
    rows = [("loop", "depth", "trips", "dependent", "ops/iter", "where", "body: opcodes")]
    for top in loops:
        for loop in top.flat():
            top_ops = ", ".join(f"{k} {v}" for k, v in list(loop.body_opcodes.items())[:6])
            rows.append(
                (
                    "  " * loop.depth + loop.name,
                    str(loop.depth),
                    f"{loop.trip_count}{'' if loop.trip_source == 'known' else '*'}",
                    str(loop.dependent),
                    str(loop.body_ops),
                    loop.location or loop.op_name,
                    f"{loop.body}: {top_ops}",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1] for r in rows]
    lines.append(f"total dependent iterations per step: {total}")
    if any(loop.trip_source != "known" for top in loops for loop in top.flat()):
        lines.append("(* trip count derived from the loop's condition, initial value and increment)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- scenes


def _urdf_contacts_x2(text: str) -> str:
    """Every ``<collision>`` followed by an identical copy named ``<name>_copy``."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    for link in root.findall("link"):
        for i, col in enumerate(list(link.findall("collision"))):
            copy = ET.fromstring(ET.tostring(col))
            name = col.get("name") or f"{link.get('name')}_{i}"
            copy.set("name", f"{name}_copy")
            link.insert(list(link).index(col) + 1, copy)
    return ET.tostring(root, encoding="unicode")


def _urdf_joints_x2(text: str) -> str:
    """A revolute joint (axis z, +-0.5 rad) and a 0.05 kg link inserted before every revolute joint."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    for joint in list(root.findall("joint")):
        if joint.get("type") != "revolute":
            continue
        name = joint.get("name")
        parent = joint.find("parent")
        link = ET.SubElement(root, "link", name=f"{name}_extra_link")
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value="0.05")
        ET.SubElement(inertial, "inertia", ixx="1e-4", ixy="0", ixz="0", iyy="1e-4", iyz="0", izz="1e-4")
        extra = ET.SubElement(root, "joint", name=f"{name}_extra", type="revolute")
        ET.SubElement(extra, "parent", link=parent.get("link"))
        ET.SubElement(extra, "child", link=f"{name}_extra_link")
        origin = joint.find("origin")
        if origin is not None:
            extra.append(ET.fromstring(ET.tostring(origin)))
            joint.remove(origin)
        ET.SubElement(extra, "axis", xyz="0 0 1")
        ET.SubElement(extra, "limit", lower="-0.5", upper="0.5", effort="10", velocity="10")
        dynamics = joint.find("dynamics")
        ET.SubElement(
            extra,
            "dynamics",
            damping=dynamics.get("damping", "0") if dynamics is not None else "0",
            friction=dynamics.get("friction", "0") if dynamics is not None else "0",
        )
        parent.set("link", f"{name}_extra_link")
    # Actuators last, as in the original (the loader reads them wherever they are; this keeps the file tidy).
    for act in root.findall("actuator"):
        root.remove(act)
        root.append(act)
    return ET.tostring(root, encoding="unicode")


SCENES = {
    "quadruped": None,
    "contacts_x2": _urdf_contacts_x2,
    "joints_x2": _urdf_joints_x2,
}


def build_scene(scene: str, dtype: str = "float32"):
    """(model, state) of a scene: the bench's quadruped on the ground, or one of its doubled variants."""
    import jax.numpy as jnp

    import jaxmor
    from bench import scenario as sc

    edit = SCENES[scene]
    if edit is None:
        model = jaxmor.load_urdf(str(sc.URDF))
    else:
        model = jaxmor.load_urdf(edit(sc.URDF.read_text()), resource_dir=str(sc.URDF.parent))
    model = jaxmor.add_ground(model, friction=sc.FRICTION)
    dt = jnp.asarray(jnp.dtype(dtype).type(0.002))
    model = model.replace(opt=model.opt.replace(timestep=dt.astype(model.opt.timestep.dtype)))
    # The quadruped's start pose (bench/scenario.py), joint by joint; the added joints of joints_x2 at zero.
    plain = jaxmor.load_urdf(str(sc.URDF))
    stand = sc.standing_qpos(plain)
    q = jaxmor.neutral_q(model)
    for name in sc.JOINTS:
        q = q.at[jaxmor.joint_q_index(model, name)].set(stand[jaxmor.joint_q_index(plain, name)])
    q = q.at[:7].set(jnp.asarray(stand[:7], q.dtype))
    return model, jaxmor.init_state(model, q)


def _dims(model, state) -> dict:
    import jaxmor

    return {
        "contact_slots": int(jaxmor.contact_count(model)),
        "joints": len(jaxmor.joint_names(model)),
        "nv": int(model.nv),
        "actuators": int(model.na),
        "solver_iterations": int(model.opt.solver_iterations),
        "solver": model.opt.solver,
    }


def programs(model, state, n_worlds: int, gradient: bool) -> dict:
    """name -> a thunk returning the optimized HLO text of that program."""
    import jax
    import jax.numpy as jnp

    import jaxmor

    def step_text():
        return jax.jit(jaxmor.step).lower(model, state).compile().as_text()

    def vmap_text():
        states = jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (n_worlds, *x.shape))), state)
        return jax.jit(jax.vmap(jaxmor.step, in_axes=(None, 0))).lower(model, states).compile().as_text()

    def grad_text():
        def loss(q):
            nxt = jaxmor.step(model, state.replace(q=q))
            return jnp.sum(nxt.q) + jnp.sum(nxt.u)

        return jax.jit(jax.grad(loss)).lower(state.q).compile().as_text()

    out = {"step": step_text, f"step_vmap{n_worlds}": vmap_text}
    if gradient:
        out["grad_q"] = grad_text
    return out


def _jaxmor_origin() -> dict:
    """Which jaxmor was imported, and the commit of its checkout (with ``+dirty`` for local changes)."""
    import jaxmor
    from bench.runner import git_commit

    path = Path(jaxmor.__file__).resolve().parent
    commit = git_commit(path)
    return {"jaxmor": str(path), **({"commit": commit} if commit else {})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tools.iterations", description=__doc__.splitlines()[0])
    parser.add_argument("--contacts-x2", action="store_true", help="also the scene with every collision geom doubled")
    parser.add_argument("--joints-x2", action="store_true", help="also the scene with a joint added before each joint")
    parser.add_argument("--gradient", action="store_true", help="also jax.grad of a one-step loss w.r.t. q")
    parser.add_argument("--worlds", type=int, default=4, help="worlds of the vmapped step (default 4)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument(
        "--derive-trip-counts",
        action="store_true",
        help="ignore XLA's known_trip_count and read every trip count from the loop (a check of the parser)",
    )
    parser.add_argument("--solver", choices=("auto", "pgs", "jacobi"), help="Options.solver (default: the model's)")
    parser.add_argument("--out", metavar="FILE", help="append the JSON lines to this file")
    parser.add_argument("--dump", metavar="DIR", help="write each program's optimized HLO text to DIR")
    args = parser.parse_args(argv)

    import jax

    import jaxmor

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    origin = _jaxmor_origin()
    print(f"jaxmor {origin.get('commit', '?')[:10]} from {origin['jaxmor']}; jax {jax.__version__}, {jax.devices()[0]}")
    scenes = ["quadruped"] + ["contacts_x2"] * args.contacts_x2 + ["joints_x2"] * args.joints_x2
    records = []
    for scene in scenes:
        model, state = build_scene(scene, args.dtype)
        if args.solver:
            model = jaxmor.with_options(model, solver=args.solver)
        dims = _dims(model, state)
        for program, text_of in programs(model, state, args.worlds, args.gradient).items():
            text = text_of()
            if args.dump:
                Path(args.dump).mkdir(parents=True, exist_ok=True)
                (Path(args.dump) / f"{scene}.{program}.hlo.txt").write_text(text)
            result = count_iterations(text, derive=args.derive_trip_counts)
            dims_text = ", ".join(f"{k} {v}" for k, v in dims.items())
            print(f"\n== {scene} ({dims_text}), {program}: {result['n_while']} while loops")
            print(format_table(result["loops"], result["total"]))
            record = {
                "scene": scene,
                "program": program,
                **dims,
                "dtype": args.dtype,
                "total_dependent_iterations": result["total"],
                "n_while": result["n_while"],
                "loops": [loop.as_dict() for loop in result["loops"]],
                **origin,
                "jax": jax.__version__,
                "device": str(jax.devices()[0].platform),
            }
            print("ITERATIONS " + json.dumps(record))
            records.append(record)
    if args.out:
        with open(args.out, "a") as f:
            for record in records:
                f.write(json.dumps(record) + "\n")
    summary = {(r["scene"], r["program"]): r["total_dependent_iterations"] for r in records}
    print("\nsummary (total dependent iterations per step):")
    for (scene, program), total in summary.items():
        print(f"  {scene:12s} {program:12s} {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
