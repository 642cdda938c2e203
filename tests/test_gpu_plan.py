"""``python -m bench gpu-plan``'s counting (bench/tools/thunks.py) on a saved compiler output, without the CUDA wheels.

``tests/data/bench/gpu_plan/`` is the XLA dump of the deviceless H200 compile of the bench's quadruped step
(``jax.vmap`` of ``jaxmor.step`` over 8,192 worlds, float32, the model closed over as ``--no-model-input`` does;
``python -m bench gpu-plan --keep-dump DIR`` at 308aa04, jax 0.10.2), trimmed by
``tests/data/bench/trim_gpu_dump.py``: the thunk sequence and metadata whole, the optimized HLO without the fused
computations' insides.

The expected counts were read from ``thunk_sequence_after_thunk_passes.txt`` (471 lines) with grep, by line ranges
(``sed -n A,Bp FILE | grep -c kCustomKernel``, and ``grep -c "kCopy "`` for the copies):

* line 1 opens a graph (``kCommandBuffer``) holding 298 kernels and 3 copies (lines 2-302);
* line 303 is the loop (``302: kWhile``, HLO ``while.175``, ``known_trip_count`` 20 in the HLO); its condition
  (line 305) is one kernel, which does not run with a known trip count;
* the loop's body is one graph (line 307): 25 kernels and 27 + 33 = 60 copies outside its conditional (lines
  308-359 and 415-447), and the conditional ``408: kConditional`` (line 360): a ``false_branch`` of 7 kernels and
  12 copies (lines 362-380) and a ``true_branch`` of 33 copies (lines 382-414);
* line 448 opens the last graph: 18 kernels and 5 copies.

So, with each branch counted for half the trips: kernels 298 + 18 = 316 outside, 20 x (25 + 7 / 2) = 570 inside;
copies 3 + 5 + 20 x (60 + (12 + 33) / 2) = 1,658; graph launches 1 + 20 + 1 = 22. The lightest branch every trip
gives 316 + 20 x 25 = 816 kernels, the heaviest 316 + 20 x 32 = 956.
"""

from pathlib import Path

import pytest

from bench import gpu_plan
from bench.tools import thunks

DATA = Path(__file__).parent / "data" / "bench" / "gpu_plan"


@pytest.fixture(scope="module")
def dump():
    return {
        "hlo": (DATA / "optimized.hlo.txt").read_text(),
        "thunks": (DATA / "thunk_sequence_after_thunk_passes.txt").read_text(),
        "metadata": (DATA / "thunk_metadata.txt").read_text(),
    }


@pytest.fixture(scope="module")
def plan(dump):
    return thunks.plan_of(dump["hlo"], dump["thunks"], dump["metadata"], None, gpu_plan.JAXMOR_STAGES)


def _kinds(section):
    return [t.kind for t in section]


def test_thunk_tree(dump):
    top = thunks.parse_thunks(dump["thunks"])
    assert _kinds(top) == ["kCommandBuffer", "kWhile", "kCommandBuffer"]
    first, loop, last = top
    assert _kinds(first.sections["commands"]).count("kCustomKernel") == 298
    assert _kinds(last.sections["commands"]).count("kCopy") == 5
    assert list(loop.sections) == ["condition", "body"]
    assert _kinds(loop.sections["condition"]) == ["kCustomKernel"]
    (graph,) = loop.sections["body"]
    body = graph.sections["commands"]
    (cond,) = [t for t in body if t.kind == "kConditional"]
    assert cond.id == 408
    assert list(cond.sections) == ["false_branch", "true_branch"]
    assert _kinds(cond.sections["false_branch"]).count("kCustomKernel") == 7
    assert _kinds(cond.sections["false_branch"]).count("kCopy") == 12
    assert _kinds(cond.sections["true_branch"]) == ["kCopy"] * 33
    # The launch shape of the first kernel: grid [64, 1, 1] x threads [128, 1, 1].
    assert first.sections["commands"][0].threads == 64 * 128


#: Four lines of the MJX Go2 step's thunk sequence (the same compile for MJX 3.17.0): a kSequential names its first
#: thunk on its own line, the others below it, indented.
SEQUENTIAL = """\
195: kCustomKernel  [prev=194 (1) | next=198 (1)] input_select_transpose_fusion grid: [8192, 1, 1] threads: [128, 1, 1]
198: kSequential    [prev=195 (1) | next=201 (1)]   196: kCopy            [source       | next=197 (1)] kCopy
  197: kTriangularSolve [prev=196 (1) | sink        ] (no description)
201: kSequential    [prev=198 (1) | next=000 (1)]   199: kCopy            [source       | next=200 (1)] kCopy
  200: kTriangularSolve [prev=199 (1) | sink        ] (no description)
"""


def test_sequential_thunks():
    top = thunks.parse_thunks(SEQUENTIAL)
    assert [(t.id, t.kind) for t in top] == [(195, "kCustomKernel"), (198, "kSequential"), (201, "kSequential")]
    assert [(t.id, t.kind) for t in top[1].sections["commands"]] == [(196, "kCopy"), (197, "kTriangularSolve")]
    assert [(t.id, t.kind) for t in top[2].sections["commands"]] == [(199, "kCopy"), (200, "kTriangularSolve")]
    plan = thunks.plan_of("ENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(0)\n}\n", SEQUENTIAL, "", None)
    assert (plan["kernels"], plan["copies"], plan["graph_launches"]) == (3, 2, 0)
    assert plan["kernel_kinds"] == {"kTriangularSolve": 2, "kCustomKernel": 1}
    assert plan["small_kernels"] == 0  # 8,192 x 128 threads; the solves' launch shapes are not in the dump


def test_metadata_names_hlo_instructions(dump):
    names = thunks.parse_metadata(dump["metadata"])
    assert names[302] == "while.175"
    assert names[408] == "cond.83"
    assert f"%{names[1]} = " in dump["hlo"]


def test_counts(plan):
    assert plan["kernels_outside"] == 316
    assert plan["kernels_inside"] == 570
    assert plan["kernels"] == 886
    assert plan["kernels_range"] == [816, 956]
    assert plan["copies"] == 1658
    assert plan["graph_launches"] == 22
    assert plan["host_syncs"] == 0
    assert plan["memsets"] == 0
    (loop,) = plan["loops"]
    assert loop["name"] == "while.175"
    assert loop["trip_count"] == 20 and loop["trip_known"]
    assert loop["per_trip"]["kernels"] == 25 + 7 / 2
    assert loop["per_trip"]["copies"] == 60 + (12 + 33) / 2
    assert loop["per_trip"]["graph_launches"] == 1


def test_stages(plan):
    """Every stage's named scope reaches the compiled program's op_name; the loop is the solver's; the stages'
    kernels and copies add up to the totals."""
    stages = plan["stages"]
    # The saved dump (308aa04) predates the commands stage, which a model without delays or controllers does not
    # reach anyway.
    assert set(gpu_plan.JAXMOR_STAGES) - {"commands"} <= set(stages)
    assert plan["loops"][0]["stage"] == "solver"
    assert stages["solver"]["kernels"] >= 570
    assert stages["solver"]["copies"] >= 20 * (60 + (12 + 33) / 2)
    assert sum(s["kernels"] for s in stages.values()) == plan["kernels"]
    assert sum(s["copies"] for s in stages.values()) == plan["copies"]


def test_stage_of():
    stages = gpu_plan.JAXMOR_STAGES
    assert thunks.stage_of("jit(<lambda>)/vmap(dynamics)/vmap(jvp())/transpose", stages) == "dynamics"
    assert thunks.stage_of("jit(<lambda>)/vmap(solver)/while/body/closed_call/add", stages) == "solver"
    assert thunks.stage_of("jit(f)/vmap(jvp())/mul", stages) is None
    assert thunks.stage_of(None, stages) is None
    # Without a list: the first scope, not the operation's own name.
    assert thunks.stage_of("jit(step)/vmap(fwd_position)/while/body/collision/add") == "fwd_position"
    assert thunks.stage_of("jit(step)/vmap(add)") is None


def test_costs_count_each_trip(dump):
    """The module's cost holds the body once: each of the 19 further trips adds the body's cost."""
    (loop,) = thunks._Hlo(dump["hlo"]).loops.values()
    costs = {"module": {"flops": 1000.0, "bytes": 400.0}, "bodies": {loop.body: {"flops": 10.0, "bytes": 3.0}}}
    plan = thunks.plan_of(dump["hlo"], dump["thunks"], dump["metadata"], costs, gpu_plan.JAXMOR_STAGES)
    assert plan["flops"] == 1000.0 + 19 * 10.0
    assert plan["bytes"] == 400.0 + 19 * 3.0


def test_costs_take_the_mean_branch(dump):
    """XLA's figure holds the body once with its conditional at the costlier branch (4 of a 10-flop body); with
    the branches' mean (2) each of the 20 trips costs 8: 1000 - 10 + 20 x 8."""
    hlo = thunks._Hlo(dump["hlo"])
    (loop,) = hlo.loops.values()
    costs = {
        "entry": "main",
        "module": {"flops": 1000.0, "bytes": 0.0},
        "bodies": {loop.body: {"flops": 10.0, "bytes": 0.0}},
        "branches": {"main": [], loop.body: [[{"flops": 4.0, "bytes": 0.0}, {"flops": 0.0, "bytes": 0.0}]]},
    }
    assert thunks.total_cost(costs, hlo.loops)["flops"] == 1000.0 - 10.0 + 20 * 8.0


def test_per_step_of_a_scan(dump):
    """The saved program's 20-trip loop read as a 20-step scan: one trip's kernels (25 + 7 / 2), copies
    (60 + 45 / 2) and graph launch per step, no loop left inside it, the costs (1000 + 19 x 10 flops) and the
    stages spread over the 20 steps, the totals kept."""
    (loop,) = thunks._Hlo(dump["hlo"]).loops.values()
    costs = {"module": {"flops": 1000.0, "bytes": 400.0}, "bodies": {loop.body: {"flops": 10.0, "bytes": 3.0}}}
    plan = thunks.plan_of(dump["hlo"], dump["thunks"], dump["metadata"], costs, gpu_plan.JAXMOR_STAGES)
    step = gpu_plan.per_step(plan, 20)
    assert (step["kernels"], step["kernels_outside"], step["kernels_inside"]) == (28.5, 28.5, 0)
    assert (step["copies"], step["graph_launches"], step["loops"]) == (82.5, 1, [])
    assert step["flops"] == pytest.approx(1190.0 / 20) and step["bytes"] == pytest.approx(457.0 / 20)
    assert step["rollout"]["kernels"] == 886 and step["rollout"]["copies"] == 1658
    assert step["stages"]["solver"]["kernels"] == pytest.approx(plan["stages"]["solver"]["kernels"] / 20)
    with pytest.raises(ValueError, match="no outer loop of 8 trips"):
        gpu_plan.per_step(plan, 8)


def test_estimate():
    """1 ms of arithmetic (the larger term) plus 1,000 launches at 3 us: 4 ms for 1,000 worlds."""
    e = gpu_plan.estimate({"flops": 67e9, "bytes": 1e9, "kernels": 1000}, 1000)
    assert e["estimate_s"] == pytest.approx(4e-3)
    assert e["estimate_wsps"] == pytest.approx(250_000)
    assert e["kb_per_world_step"] == pytest.approx(1e3)


def test_dump_files(tmp_path):
    """The GPU module is the one with a target config; the sequence after the thunk passes is preferred."""
    for name in ("module_0000.jit_stage.thunk_sequence.txt", "module_0001.jit_f.gpu_target_config.pbtxt"):
        (tmp_path / name).write_text("")
    (tmp_path / "module_0001.jit_f.thunk_sequence.txt").write_text("")
    assert thunks.dump_files(tmp_path)["thunks"].name == "module_0001.jit_f.thunk_sequence.txt"
    (tmp_path / "module_0001.jit_f.thunk_sequence_after_thunk_passes.txt").write_text("")
    files = thunks.dump_files(tmp_path)
    assert files["thunks"].name == "module_0001.jit_f.thunk_sequence_after_thunk_passes.txt"
    assert files["metadata"].name == "module_0001.jit_f.thunk_metadata.txt"


def test_readme_table_is_regenerated_from_the_results():
    """bench/README.md's gpu-plan block is what ``--from-results`` writes from the run its header names."""
    import re

    from bench import report
    from bench.runner import README, ROOT

    start, end = report.markers("gpu-plan")
    block = README.read_text().split(start, 1)[1].split(end, 1)[0].strip("\n")
    run_id, results = re.match(r"Run `([^`]+)` \([^)]*\), results in `([^`]+)`", block).groups()
    records = report.load_run(ROOT / results, run_id)
    assert block == f"{report.header(records, ROOT / results)}\n\n{gpu_plan.render(records)}"
    assert "| jaxmor quadruped | 8,192 |" in block


def test_gpu_trace_counts_the_gpu_processes_launches(tmp_path):
    """``bench.tools.gpu_trace.launches`` on a hand-written Perfetto trace: the complete events of the processes named
    after a GPU are counted by name (a host thread's events and the metadata are not), and copies and memsets are
    told from kernels by their names."""
    import gzip
    import json

    from bench.tools import gpu_trace

    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 7, "name": "loop_add_fusion", "ts": 0, "dur": 1},
        {"ph": "X", "pid": 1, "tid": 7, "name": "loop_add_fusion", "ts": 2, "dur": 1},
        {"ph": "X", "pid": 1, "tid": 8, "name": "MemcpyDtoD", "ts": 3, "dur": 1},
        {"ph": "X", "pid": 1, "tid": 8, "name": "Memset", "ts": 4, "dur": 1},
        {"ph": "X", "pid": 2, "tid": 3, "name": "loop_add_fusion", "ts": 0, "dur": 9},
        {"ph": "i", "pid": 1, "tid": 7, "name": "marker", "ts": 5},
    ]
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    names = gpu_trace.launches(str(path))
    assert names == {"loop_add_fusion": 2, "MemcpyDtoD": 1, "Memset": 1}
    assert [n for n in names if gpu_trace.is_copy(n)] == ["MemcpyDtoD", "Memset"]
    assert gpu_trace.is_copy("copy_fusion_3") and not gpu_trace.is_copy("loop_add_fusion")
