"""What a compiled GPU program launches per call, read from XLA's dump: kernels, copies, graphs, loops, stages.

``XLA_FLAGS=--xla_dump_to=DIR`` makes XLA's GPU compiler write the executable's thunk sequence
(``*.thunk_sequence_after_thunk_passes.txt``: what the runtime launches, most of it inside CUDA graphs,
``kCommandBuffer``) and each thunk's HLO instruction (``*.thunk_metadata.txt``: ``thunk_id`` ->
``profile_annotation``). With the optimized HLO (``Compiled.as_text()``) this module counts, per call:

* kernels (every leaf thunk that is not a copy, a memset or control flow: ``kCustomKernel``, GEMMs,
  custom calls...), device-to-device copies (``kCopy``), memsets and graph launches (``kCommandBuffer``);
* loops (``kWhile``): their bodies count once per trip, the trip count being the while's
  ``known_trip_count`` in the HLO (:mod:`bench.tools.iterations` reads it); a loop without one syncs with
  the host every trip to read its condition (counted as ``host_syncs``, its condition's kernels included);
* conditionals (``kConditional``): one branch runs per execution, which one is data; each branch counts for
  an equal share of the executions (the mean), and ``*_range`` gives the counts with every conditional at
  its lightest and at its heaviest branch;
* stages: a thunk's HLO instruction carries the ``op_name`` of the JAX operation it came from, which holds
  the ``jax.named_scope`` names around it (``jit(f)/vmap(dynamics)/...``); a copy without one takes its
  operand's, or the loop's it is in.

Bytes per stage are the kernels' operands plus results (their HLO shapes), copies' twice their size: a
rough split of the traffic, beside the whole program's figure from XLA's cost analysis (:func:`loop_costs`,
:func:`total_cost`: the module's cost, each loop body's once more per extra trip, each conditional at the mean
of its branches).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.tools.iterations import _INSTRUCTION, _OP_NAME, Computation, _balanced, count_iterations, parse_hlo

#: Thunk kinds that are not kernels: copies, memsets and control flow (counted on their own or walked into).
COPY, MEMSETS = "kCopy", ("kMemset32BitValue", "kMemzero")
CONTROL = ("kCommandBuffer", "kWhile", "kConditional", "kSequential", "kWaitForStreams")
#: A kernel launching at most this many threads is "small" (an H200 holds 132 x 2,048 resident threads).
SMALL_KERNEL = 65536
#: op_name path components that are transformations or control flow, not scopes.
_NOT_SCOPES = {"", "while", "body", "cond", "closed_call", "checkpoint", "remat", "pjit", "jvp", "transpose"}
_LINE = re.compile(r"^(\s*)(\d+):\s+(k\w+)\s*(?:\[[^\]]*\])?\s*(.*)$")
_HEADER = re.compile(r"^(\s*)(\w+):\s*$")
_LAUNCH = re.compile(r"grid: \[(\d+), (\d+), (\d+)\] threads: \[(\d+), (\d+), (\d+)\]")
_META = re.compile(r'profile_annotation:\s*"([^"]*)"\s*(?:thunk_id:\s*(\d+)\s*)?\}\s*thunk_kind:\s*"(\w+)"')
_ARRAY = re.compile(r"\b(pred|[fsuc]\d+|bf16)\[([\d,]*)\]")
_BITS = re.compile(r"(\d+)$")
#: Fused operations that read only part of their first operand.
_SLICES = ("slice", "dynamic-slice", "gather")


@dataclass
class Thunk:
    """One line of the thunk sequence; ``sections``: a graph's ``commands``, a loop's ``condition`` and
    ``body``, a conditional's branches, in order."""

    id: int
    kind: str
    indent: int
    text: str
    sections: dict[str, list[Thunk]] = field(default_factory=dict)

    @property
    def threads(self) -> int | None:
        m = _LAUNCH.search(self.text)
        return math.prod(int(x) for x in m.groups()) if m else None


def parse_thunks(text: str) -> list[Thunk]:
    """The top-level thunks of a ``thunk_sequence*.txt`` dump, nested by indentation and section headers."""
    root: list[Thunk] = []
    stack: list[tuple[int, list[Thunk]]] = [(-1, root)]  # (owner's indent, the list its children go to)
    owners: list[Thunk] = []  # loops and conditionals, in order
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m:
            indent = len(m.group(1))
            while stack[-1][0] >= indent:
                stack.pop()
            # A kSequential lists its first thunk on its own line: "198: kSequential [...]   196: kCopy [...]".
            while m is not None:
                thunk = Thunk(int(m.group(2)), m.group(3), indent, m.group(4).strip())
                stack[-1][1].append(thunk)
                if thunk.kind in ("kWhile", "kConditional"):
                    owners.append(thunk)
                elif thunk.kind in ("kCommandBuffer", "kSequential"):
                    stack.append((indent, thunk.sections.setdefault("commands", [])))
                m, indent = _LINE.match(" " + thunk.text), indent + 1
                if m is not None:
                    thunk.text = ""
            continue
        h = _HEADER.match(line)
        if not h:
            raise ValueError(f"cannot read the thunk line {line.strip()[:200]!r}")
        indent = len(h.group(1))
        owner = next((t for t in reversed(owners) if t.indent <= indent), None)
        if owner is None:
            raise ValueError(f"section {h.group(2)!r} outside a loop or conditional")
        while stack[-1][0] >= owner.indent:
            stack.pop()
        stack.append((owner.indent, owner.sections.setdefault(h.group(2), [])))
    return root


def parse_metadata(text: str) -> dict[int, str]:
    """``thunk_metadata.txt``: thunk id -> its HLO instruction's name (``profile_annotation``)."""
    return {int(i): name for name, i, _ in _META.findall(text) if i}


def _type_bytes(text: str) -> int:
    total = 0
    for dtype, dims in _ARRAY.findall(text):
        bits = 1 if dtype == "pred" else int(_BITS.search(dtype).group(1))
        total += max(bits // 8, 1) * math.prod(int(d) for d in dims.split(",") if d)
    return total


def result_bytes(hlo: str) -> dict[str, int]:
    """Instruction name -> bytes of its result (every array of a tuple result), from the HLO text."""
    out = {}
    for line in hlo.splitlines():
        m = _INSTRUCTION.match(line)
        if not m:
            continue
        rest = m.group(3)
        end = _balanced(rest, 0) if rest.startswith("(") else len(rest.split(None, 1)[0])
        out[m.group(2)] = _type_bytes(rest[:end])
    return out


# ---------------------------------------------------------------------------------------------- stages


def _unwrap(part: str) -> str:
    """``vmap(dynamics)`` -> ``dynamics``, ``vmap(jvp())`` -> ``""``: the scope inside transformation wrappers."""
    while (m := re.fullmatch(r"[\w\-]+\((.*)\)", part)) is not None:
        part = m.group(1)
    return part


def stage_of(op_name: str | None, stages: tuple[str, ...] | None = None) -> str | None:
    """The stage of an ``op_name``: its first scope in ``stages``, or (``stages`` None) its first scope, the
    path components between the ``jit(...)`` and the operation's name, transformations unwrapped."""
    if not op_name:
        return None
    parts = [_unwrap(p) for p in op_name.split("/")[1:]]
    if stages is not None:
        return next((p for p in parts if p in stages), None)
    return next((p for p in parts[:-1] if p not in _NOT_SCOPES and not p.startswith("branch_")), None)


class _Hlo:
    """The optimized HLO's instructions by name: op_name, operands, result bytes, the whiles' trip counts."""

    def __init__(self, hlo: str):
        module = parse_hlo(hlo)
        self.computations = module.computations
        self.instructions = {n: i for c in module.computations.values() for n, i in c.instructions.items()}
        self.bytes = result_bytes(hlo)
        self.loops = {x.name: x for loop in count_iterations(hlo)["loops"] for x in loop.flat()}

    def _fused(self, instr) -> Computation | None:
        calls = instr.called.get("calls") if instr.opcode == "fusion" else None
        return self.computations.get(calls[0]) if calls else None

    def op_name(self, name: str | None, depth: int = 0) -> str | None:
        """The instruction's op_name, or a fusion's root's, or (copies, tuple plumbing) its first operand's."""
        instr = self.instructions.get(name or "")
        if instr is None or depth > 4:
            return None
        m = _OP_NAME.search(instr.attributes)
        if m:
            return m.group(1)
        fused = self._fused(instr)
        if fused is not None and fused.root is not None and fused.root.name != name:
            found = self.op_name(fused.root.name, depth + 1)
            if found:
                return found
        return self.op_name(instr.operands[0], depth + 1) if instr.operands else None

    def traffic(self, name: str | None, kind: str) -> int:
        """Bytes a kernel reads and writes: its operands and result, where a fusion reads only the slices it
        takes of an operand and writes only the update of an in-place dynamic-update-slice; a copy's twice
        its size."""
        instr = self.instructions.get(name or "")
        if instr is None:
            return 0
        own = self.bytes.get(instr.name, 0)
        fused = self._fused(instr)
        if kind == COPY:
            return 2 * own
        if fused is None:
            return own + sum(self.bytes.get(x, 0) for x in instr.operands)
        users: dict[str, list] = {}
        for i in fused.instructions.values():
            for x in i.operands:
                users.setdefault(x, []).append(i)
        read = 0
        for p in (i for i in fused.instructions.values() if i.opcode == "parameter"):
            us = users.get(p.name, [])
            if us and all(u.opcode in _SLICES and u.operands[0] == p.name for u in us):
                read += sum(self.bytes.get(u.name, 0) for u in us)
            elif not (us and all(u.opcode == "dynamic-update-slice" and u.operands[0] == p.name for u in us)):
                read += self.bytes.get(instr.operands[int(p.operands[0])], 0)
        root = fused.root
        write = self.bytes.get(root.operands[1], 0) if root.opcode == "dynamic-update-slice" else own
        return read + write


# ---------------------------------------------------------------------------------------------- counting


@dataclass
class _Walk:
    """The running totals of :func:`plan_of`'s walk over the thunk tree."""

    hlo: _Hlo
    names: dict[int, str]
    stages: tuple[str, ...] | None
    totals: Counter = field(default_factory=Counter)
    by_stage: dict[str, Counter] = field(default_factory=dict)
    kinds: Counter = field(default_factory=Counter)
    loops: list[dict] = field(default_factory=list)
    spread: list[float] = field(default_factory=lambda: [0.0, 0.0])  # kernels below / above the mean


def _leaf(w: _Walk, t: Thunk, mult: float, depth: int, loop_stage: str | None, out: Counter) -> None:
    name = w.names.get(t.id)
    op_name = w.hlo.op_name(name)
    stage = stage_of(op_name, w.stages) or loop_stage or ("(other)" if op_name else "(no op_name)")
    s = w.by_stage.setdefault(stage, Counter())
    if t.kind == COPY:
        key = "copies"
    elif t.kind in MEMSETS:
        key = "memsets"
    else:
        key = "kernels"
        w.kinds[t.kind] += mult
        out["kernels_inside" if depth else "kernels_outside"] += mult
        threads = t.threads
        if threads is not None and threads <= SMALL_KERNEL:
            out["small_kernels"] += mult
    out[key] += mult
    s[key] += mult
    traffic = mult * w.hlo.traffic(name, t.kind)
    s["bytes"] += traffic
    out["shape_bytes"] += traffic


def _loop(w: _Walk, t: Thunk, mult: float, depth: int, out: Counter) -> None:
    name = w.names.get(t.id)
    info = w.hlo.loops.get(name or "")
    known = info is not None and info.trip_source == "known"
    trips = info.trip_count if info is not None else 1
    stage = stage_of(info.op_name if info else w.hlo.op_name(name), w.stages)
    per_trip, scratch = Counter(), _Walk(w.hlo, w.names, w.stages)  # one trip's counts only
    _walk(scratch, t.sections.get("body", []), 1.0, depth + 1, stage, per_trip)
    if not known:  # the condition runs on the device and its result is read by the host, every trip and once more
        _walk(scratch, t.sections.get("condition", []), 1.0, depth + 1, stage, per_trip)
        out["host_syncs"] += mult * (trips + 1)
    w.loops.append(
        {
            "name": name,
            "trip_count": trips,
            "trip_known": known,
            "depth": depth,
            "stage": stage,
            "op_name": info.op_name if info else None,
            "location": info.location if info else None,
            "per_trip": {k: per_trip[k] for k in ("kernels", "copies", "memsets", "graph_launches")},
        }
    )
    _walk(w, t.sections.get("body", []), mult * trips, depth + 1, stage, out)
    if not known:
        _walk(w, t.sections.get("condition", []), mult * (trips + 1), depth + 1, stage, out)


def _conditional(w: _Walk, t: Thunk, mult: float, depth: int, loop_stage: str | None, out: Counter) -> None:
    branches = list(t.sections.values())
    if not branches:
        return
    counts = []
    for b in branches:
        c = Counter()
        _walk(_Walk(w.hlo, w.names, w.stages), b, 1.0, depth, loop_stage, c)  # a scratch walk: counts only
        counts.append(c["kernels"])
    mean = sum(counts) / len(counts)
    w.spread[0] += mult * (mean - min(counts))
    w.spread[1] += mult * (max(counts) - mean)
    for b in branches:
        _walk(w, b, mult / len(branches), depth, loop_stage, out)


def _walk(w: _Walk, thunks: list[Thunk], mult: float, depth: int, loop_stage: str | None, out: Counter) -> None:
    for t in thunks:
        if t.kind == "kWhile":
            _loop(w, t, mult, depth, out)
        elif t.kind == "kConditional":
            _conditional(w, t, mult, depth, loop_stage, out)
        elif t.kind in ("kCommandBuffer", "kSequential"):
            if t.kind == "kCommandBuffer":
                out["graph_launches"] += mult
            _walk(w, t.sections.get("commands", []), mult, depth, loop_stage, out)
        elif t.kind not in CONTROL:
            _leaf(w, t, mult, depth, loop_stage, out)


def plan_of(hlo: str, thunks: str, metadata: str, costs: dict | None, stages: tuple[str, ...] | None = None) -> dict:
    """Per call of the program: kernels (outside and inside loops), copies, memsets, graph launches, host syncs,
    small kernels, kernels by thunk kind, the loops (trip counts, one trip's counts), the stages' kernels,
    copies and bytes, and with ``costs`` (:func:`loop_costs`) the flops and bytes.

    Args:
        hlo: the optimized HLO text (``Compiled.as_text()``).
        thunks: the dump's ``*thunk_sequence_after_thunk_passes.txt`` (or ``*thunk_sequence.txt``).
        metadata: the dump's ``*thunk_metadata.txt``, of the same sequence.
        costs: :func:`loop_costs`' result for ``hlo``, or None.
        stages: the scope names that are stages (None: every op_name's first scope).
    """
    w = _Walk(_Hlo(hlo), parse_metadata(metadata), stages)
    out = Counter()
    _walk(w, parse_thunks(thunks), 1.0, 0, None, out)
    keys = ("kernels", "kernels_outside", "kernels_inside", "copies", "memsets", "graph_launches", "host_syncs")
    result = {k: _round(out[k]) for k in keys}
    result["kernels_range"] = [_round(out["kernels"] - w.spread[0]), _round(out["kernels"] + w.spread[1])]
    result["small_kernels"] = _round(out["small_kernels"])
    result["shape_bytes"] = _round(out["shape_bytes"])
    result["kernel_kinds"] = {k: _round(v) for k, v in w.kinds.most_common()}
    result["loops"] = w.loops
    order = list(stages or ()) + sorted(set(w.by_stage) - set(stages or ()))
    result["stages"] = {
        s: {k: _round(w.by_stage[s][k]) for k in ("kernels", "copies", "bytes")} for s in order if s in w.by_stage
    }
    if costs is not None:
        result.update(total_cost(costs, w.hlo.loops))
    return result


def _round(x: float) -> float | int:
    return int(round(x)) if abs(x - round(x)) < 1e-9 else round(x, 3)


# ---------------------------------------------------------------------------------------------- costs


def dump_files(dump: str | Path) -> dict[str, Path]:
    """The GPU program's files in an XLA dump folder: ``thunks`` (after the thunk passes, else the plain sequence),
    ``metadata``; the GPU module is the one with a ``gpu_target_config`` (the others are CPU programs)."""
    dump = Path(dump)
    gpu = sorted(p.name[: -len(".gpu_target_config.pbtxt")] for p in dump.glob("*.gpu_target_config.pbtxt"))
    if len(gpu) != 1:
        raise RuntimeError(f"{dump}: expected one GPU module in the dump, found {gpu}")
    after = dump / f"{gpu[0]}.thunk_sequence_after_thunk_passes.txt"
    thunks = after if after.exists() else dump / f"{gpu[0]}.thunk_sequence.txt"
    return {"thunks": thunks, "metadata": dump / f"{gpu[0]}.thunk_metadata.txt"}


def _as_entry(hlo: str, computation: str) -> str:
    """The module's text with ``computation`` as its ENTRY (header attributes dropped, for the parser)."""
    lines = hlo.splitlines()
    out = ["HloModule " + re.sub(r"\W", "_", computation)]
    head = re.compile(r"^%?" + re.escape(computation) + r"\s")
    for line in lines[1:]:
        if line.startswith("ENTRY "):
            line = line[len("ENTRY ") :]
        if head.match(line):
            line = "ENTRY " + line
        out.append(line)
    return "\n".join(out)


def loop_costs(hlo: str) -> dict:
    """XLA's HLO cost analysis of the module (which counts a loop body once, and a conditional at its most
    costly branch), of each loop body alone, and of each branch of the conditionals in the entry computation
    and in the loop bodies: ``{"entry", "module": {"flops", "bytes"}, "bodies": {body: {...}}, "branches":
    {computation: [[branch costs] per conditional]}}``. Uses the CPU backend's cost analysis on the HLO text
    (no GPU needed)."""
    from jax._src import xla_bridge
    from jax._src.lib import _jax
    from jaxlib import _hlo

    cpu = xla_bridge.get_backend("cpu")

    def cost(text: str) -> dict:
        c = _jax.hlo_module_cost_analysis(cpu, _hlo.hlo_module_from_text(text))
        return {"flops": float(c.get("flops", 0.0)), "bytes": float(c.get("bytes accessed", 0.0))}

    module = parse_hlo(hlo)
    loops = [x for loop in count_iterations(hlo)["loops"] for x in loop.flat()]
    branches = {}
    for comp in [module.entry, *(x.body for x in loops)]:
        conds = [i for i in module.computations[comp].instructions.values() if i.opcode == "conditional"]
        keys = ("branch_computations", "true_computation", "false_computation")
        branches[comp] = [[cost(_as_entry(hlo, b)) for k in keys for b in c.called.get(k, [])] for c in conds]
    return {
        "entry": module.entry,
        "module": cost(hlo),
        "bodies": {x.body: cost(_as_entry(hlo, x.body)) for x in loops},
        "branches": branches,
    }


def total_cost(costs: dict, loops: dict) -> dict:
    """Flops and bytes per call, each loop body counted once per trip and each conditional at the mean of its
    branches (as the kernels are counted): ``mean(c) = own(c) + sum over c's conditionals of (mean - max of
    the branches) + sum over c's loops of (trips x mean(body) - own(body))``, where ``own`` is XLA's figure,
    which holds each body once and each conditional at its costliest branch."""

    def adjust(comp: str, key: str) -> float:
        per = [[b[key] for b in c] for c in costs.get("branches", {}).get(comp, []) if c]
        return sum(sum(b) / len(b) - max(b) for b in per)

    def mean(comp: str, own: float, inner: list, key: str) -> float:
        loops_part = sum(x.trip_count * mean(x.body, costs["bodies"][x.body][key], x.inner, key) for x in inner)
        return own + adjust(comp, key) + loops_part - sum(costs["bodies"][x.body][key] for x in inner)

    top = [x for x in loops.values() if x.depth == 0]
    entry = costs.get("entry", "")
    return {key: mean(entry, costs["module"][key], top, key) for key in ("flops", "bytes")}
