"""The step's sequential depth: dependent loop iterations per step, counted in the traced program.

A GPU runs every iteration of a loop one after the other, whatever the batch: the count bounds how fast one step
can be (``docs/design/solver.md``). Two counts, both ``sum over loops of trips x (1 + the body's dependent
iterations)``:

* :func:`bench.tools.iterations.jaxpr_iterations` on the traced step (``jax.make_jaxpr`` of the vmapped step),
  including the loops inside Pallas kernels, taking the branch each ``platform_dependent`` lowers for CUDA;
* the compiled CPU program's (``bench/tools/iterations.py``, XLA's recorded trip counts), for the Jacobi solver.

Scenes: the bench's quadruped (8 contact slots, 12 joints) and its copy with every collision element doubled, all
16 candidates given a slot (``contacts_x2``). The bound is the issue's: 300 for the default step on a GPU, the same
with the doubled slots. PGS's count, for contrast, grows with the rows (sweeps x rows).
"""

from __future__ import annotations

import jax
import pytest

import jaxmor
from bench.tools.iterations import build_scene, count_iterations, jaxpr_iterations
from jaxmor.sim.collision.budget import contact_budget

BOUND = 300


@pytest.fixture(scope="module")
def scenes():
    """The quadruped and its doubled-contacts copy, every candidate a slot: ``(model, state)`` each."""
    model, state = build_scene("quadruped", "float32")
    doubled, doubled_state = build_scene("contacts_x2", "float32")
    doubled = jaxmor.with_options(doubled, contact_budget=jaxmor.contact_count(doubled))
    doubled_state = jaxmor.init_state(doubled, doubled_state.q)
    assert contact_budget(model) == 8 and contact_budget(doubled) == 16
    return (model, state), (doubled, doubled_state)


def _depths(scenes, solver: str, count) -> list[int]:
    return [count(jaxmor.with_options(model, solver=solver), state) for model, state in scenes]


def _traced_for_cuda(model, state) -> int:
    states = jax.tree.map(lambda x: jax.numpy.stack([x, x]), state)
    return jaxpr_iterations(jax.make_jaxpr(jax.vmap(jaxmor.step, in_axes=(None, 0)))(model, states), "cuda")


def _compiled_here(model, state) -> int:
    return count_iterations(jax.jit(jaxmor.step).lower(model, state).compile().as_text())["total"]


def test_the_default_step_for_a_gpu_has_at_most_300_dependent_iterations_whatever_the_slots(scenes):
    counts = _depths(scenes, "auto", _traced_for_cuda)
    assert 0 < counts[0] <= BOUND, counts
    assert counts[1] == counts[0], f"the depth follows the contact slots: {counts}"


def test_the_jacobi_step_on_this_cpu_has_at_most_300_dependent_iterations_whatever_the_slots(scenes):
    counts = _depths(scenes, "jacobi", _compiled_here)
    assert 0 < counts[0] <= BOUND, counts
    assert counts[1] == counts[0], f"the depth follows the contact slots: {counts}"


def test_the_pgs_step_depth_follows_its_rows(scenes):
    """The contrast the bound is about: PGS updates one row after another, in its kernel as in XLA's loops, so its
    depth grows with the slots."""
    for count in (_traced_for_cuda, _compiled_here):
        counts = _depths(scenes, "pgs", count)
        assert counts[0] > BOUND and counts[1] > counts[0], counts
