"""Reliability: hostile and huge files, setters under tracing, finite gradients, a Model that cannot go
stale, runtime values that are refused or flagged, exact time, clear errors, and a fuzz test of the loader.

Sources of the expected values (never the code under test):

* the turntable's constants from its URDF comment and the spec (G = 10, R = 0.2, Kt = 0.1, Kv = 10,
  V = 24, peak 1.5, I = 0.042 kg m^2, no damping), with the region of ``oracles.motor_region``;
* for gradients, the same loss computed without the diverged world (its gradient must be identical);
* for time, exact arithmetic: n steps of h add up to n h; a plain float32 running sum is the counterexample;
* for files, what the file says (line numbers counted in the text written by the test).
"""

from __future__ import annotations

import dataclasses
import os
import random
import re
import shutil
import warnings
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from fuzz import mutate
from models import PENDULUM_URDF, QUADRUPED_URDF, TURNTABLE_URDF, quadruped_standing_q
from oracles import motor_region

import jaxmor
import jaxmor.io.urdf
from jaxmor import ArgumentError, ModelError

TT_G, TT_R, TT_KT, TT_KV, TT_V, TT_PEAK, TT_I = 10.0, 0.2, 0.1, 10.0, 24.0, 1.5, 0.042
STEP = jax.jit(jaxmor.step)


def _bad_leaves(tree) -> list[str]:
    return [
        jax.tree_util.keystr(path)
        for path, x in jax.tree_util.tree_flatten_with_path(tree)[0]
        if not np.all(np.isfinite(np.asarray(x)))
    ]


# --------------------------------------------------------------------------------------------------
# 1. Huge and deep files: the loader is linear and iterative.


def _star(n: int) -> str:
    inertial = '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial>'
    head = f'<robot name="star">\n<link name="base">{inertial}</link>\n'
    weld = '<joint name="weld_{0}" type="fixed"><parent link="base"/><child link="leaf_{0}"/></joint>'
    body = "".join(f'<link name="leaf_{i}"/>{weld.format(i)}\n' for i in range(n))
    return head + body + "</robot>\n"


def _chain(n: int) -> str:
    inertial = '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01"/></inertial>'
    parts = ['<robot name="chain">', f'<link name="l0">{inertial}</link>']
    for i in range(1, n):
        parts.append(f'<link name="l{i}">{inertial}</link>')
        parts.append(
            f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
            '<origin xyz="0 0 0.1"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        )
    return "\n".join(parts + ["</robot>"]) + "\n"


@pytest.mark.slow
def test_a_star_of_86034_fixed_links_loads(tmp_path):
    """The file that took 467 s (a quadratic sort key) now loads in seconds (README: about 5 s here)."""
    path = tmp_path / "star.urdf"
    path.write_text(_star(86_034))
    assert path.stat().st_size < jaxmor.io.xml.MAX_XML_BYTES
    model = jaxmor.load_urdf(path, floating_base=False)
    assert model.nl == 86_035 and model.nb == 0


@pytest.mark.slow
def test_a_serial_chain_of_5000_links_loads():
    """1,000 links used to raise RecursionError; the reduction is iterative now."""
    model = jaxmor.load_urdf(_chain(5000), floating_base=False)
    assert model.nb == 4999 and model.nv == 4999 and model.body_parent[-1] == 4997


def _step_program_lines(n_links: int) -> int:
    model = jaxmor.load_urdf(_chain(n_links), floating_base=False)
    return len(jax.jit(jaxmor.step).lower(model, jaxmor.init_state(model)).as_text().splitlines())


def test_the_step_program_of_a_chain_does_not_grow_with_its_length():
    """A 1,000-link chain's step once compiled for over 11 minutes: the program had about 27 lines of
    straight-line code per link (the traversals written out level by level, per-body stacks). Deeper than
    ``UNROLLED_LEVELS`` the traversals loop over the levels, so a chain of 40 links and one of 300 lower to
    programs of the same length (within 1%: the index tables are constants of one line each whatever their
    size; before the change the 300-link program was about three times the 40-link one)."""
    short, long = _step_program_lines(40), _step_program_lines(300)
    assert abs(long - short) <= 0.01 * short, (short, long)


CHAIN_COMPILE = """
import resource, sys, time
import jax, numpy as np, jaxmor
sys.path.insert(0, sys.argv[1])
from test_reliability import _chain
model = jaxmor.load_urdf(_chain(300), floating_base=False)
state = jaxmor.init_state(model)
start = time.perf_counter()
step = jax.jit(jaxmor.step).lower(model, state).compile()
seconds = time.perf_counter() - start
state = step(model, state)
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, bool(np.all(np.isfinite(state.q))))
"""


@pytest.mark.slow
def test_the_step_of_a_300_link_chain_compiles_in_bounded_time_and_memory():
    """A fresh process compiles the step of a 300-link chain with joint limits and takes one step: measured
    at 5 s and 0.7 GB on the 2-core machine (docs/design/performance.md, compile time against depth). The
    bounds are generous, 10 minutes (the subprocess's timeout) and 3 GB, so that load cannot fail it; before
    the change 100 links took 33 s and the growth was faster than linear."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", CHAIN_COMPILE, str(Path(__file__).parent)], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seconds, gigabytes, finite = out.stdout.split()
    assert float(gigabytes) < 3.0 and finite == "True", out.stdout


def test_more_links_than_the_bound_are_refused_at_the_first_extra_link(monkeypatch):
    monkeypatch.setattr(jaxmor.io.urdf, "MAX_LINKS", 10)
    text = _star(12)
    line = text.splitlines().index(next(x for x in text.splitlines() if 'name="leaf_9"' in x)) + 1
    with pytest.raises(ModelError, match=rf"^<string>:{line}: the robot has more than 10 links"):
        jaxmor.load_urdf(text)


def test_errors_beyond_line_65535_name_the_right_line():
    """libxml2 stores line numbers in 16 bits unless a text node follows the element; the star writes a link
    and its joint on one line, so without help every element past line 65535 would be reported at 65535."""
    text = _star(70_000).replace('<link name="leaf_69990"/>', '<link name="leaf_5"/>')
    line = next(i for i, x in enumerate(text.splitlines(), 1) if 'name="weld_69990"' in x)
    with pytest.raises(ModelError, match=rf"^<string>:{line}: duplicate link name 'leaf_5'"):
        jaxmor.load_urdf(text)


# --------------------------------------------------------------------------------------------------
# 2. Setters inside jit and scan, with arrays made outside (closed over) and with traced arguments.


# Every State setter, each with arguments that change what it sets: name -> (world, call). One source: the table
# must name exactly the ``set_*`` functions of ``jaxmor.__all__`` (all of them State setters since 0.3; the Model
# editors are ``with_*``), so a new setter fails the test until it is added here. The quadruped world has a
# keyframe added; set_ctrl needs affine actuators, which the quadruped (a DC motor on every joint) cannot take, so
# it runs on the pendulum with a position servo instead of its DC motor.
SETTERS = {
    "set_keyframe": ("quadruped", lambda m, s, a: jaxmor.set_keyframe(m, s, "crouch")),
    "set_pd_gains": ("quadruped", lambda m, s, a: jaxmor.set_pd_gains(m, s, a["kp"], a["kd"])),
    "set_pd_targets": ("quadruped", lambda m, s, a: jaxmor.set_pd_targets(m, s, a["q_target"], a["v_target"])),
    "set_actuator_pd_gains": ("quadruped", lambda m, s, a: jaxmor.set_actuator_pd_gains(m, s, a["akp"], a["akd"])),
    "set_actuator_pd_targets": (
        "quadruped",
        lambda m, s, a: jaxmor.set_actuator_pd_targets(m, s, a["a_target"], a["a_v_target"]),
    ),
    "set_actuation_limits": ("quadruped", lambda m, s, a: jaxmor.set_actuation_limits(m, s, a["limits"])),
    "set_generalized_force": ("quadruped", lambda m, s, a: jaxmor.set_generalized_force(m, s, a["feedforward"])),
    "set_external_force": (
        "quadruped",
        lambda m, s, a: jaxmor.set_external_force(m, s, "base", a["force"], a["point"], a["torque"]),
    ),
    "set_actuator_torques": ("quadruped", lambda m, s, a: jaxmor.set_actuator_torques(m, s, a["torques"])),
    "set_actuator_torque": ("quadruped", lambda m, s, a: jaxmor.set_actuator_torque(m, s, "LF_KFE", a["torque_lf"])),
    "set_bus_voltage": (
        "quadruped",
        lambda m, s, a: jaxmor.set_bus_voltage(m, jaxmor.set_bus_voltage(m, s, a["volts"]), a["volts_rh"], "RH_HAA"),
    ),
    "set_motor_temperature": (
        "quadruped",
        lambda m, s, a: jaxmor.set_motor_temperature(m, s, a["winding"], a["housing"]),
    ),
    "set_motor_operating_region_enforced": (
        "quadruped",
        lambda m, s, a: jaxmor.set_motor_operating_region_enforced(m, s, a["enforce"]),
    ),
    "set_ctrl": ("affine pendulum", lambda m, s, a: jaxmor.set_ctrl(m, s, a["ctrl"])),
}

# The State fields each world's setters change from init_state's defaults (written from the setters' documented
# effects; every other field must stay as it was).
CHANGED = {
    "quadruped": {
        "q", "u", "time",  # set_keyframe
        "pd_p_gain", "pd_d_gain", "pd_position_target", "pd_velocity_target",
        "actuator_p_gain", "actuator_d_gain", "actuator_position_target", "actuator_velocity_target",
        "actuation_limit", "feedforward_force", "external_force", "actuator_torque", "bus_voltage",
        "motor_state",  # set_motor_temperature
        "mor_enforced",
    },
    "affine pendulum": {"ctrl"},
}  # fmt: skip


@pytest.fixture(scope="module")
def setter_worlds(quadruped, pendulum):
    """``{world: (model, initial state, the setters' arguments as jax Arrays made outside any trace)}``. The
    quadruped without a ground: the setters do not depend on contacts, and its step compiles much faster."""
    m = quadruped
    stand = quadruped_standing_q(m)
    crouch = stand.copy()
    crouch[2] -= 0.05
    crouch[7:] *= 1.2
    keyframe = jaxmor.Keyframe("crouch", 0.25, tuple(crouch), tuple(np.linspace(-0.1, 0.1, m.nv)), ())
    m = m.replace(keyframes=(keyframe,))
    quadruped_args = {
        "kp": jnp.zeros(18).at[6:].set(40.0),
        "kd": jnp.zeros(18).at[6:].set(1.0),
        "q_target": jnp.asarray(stand),
        "v_target": jnp.full(18, 0.1),
        "akp": jnp.full(12, 30.0),
        "akd": jnp.full(12, 0.5),
        "a_target": jnp.asarray(stand[7:]),
        "a_v_target": jnp.full(12, -0.2),
        "limits": jnp.full(18, 50.0),
        "feedforward": jnp.zeros(18).at[7].set(0.5),
        "force": jnp.array([0.0, 0.0, 5.0]),
        "point": jnp.array([0.1, 0.0, 0.0]),
        "torque": jnp.array([0.0, 0.1, 0.0]),
        "torques": jnp.linspace(-3.0, 3.0, 12),
        "torque_lf": jnp.asarray(-2.5),
        "volts": jnp.asarray(22.0),
        "volts_rh": jnp.asarray(20.0),
        "winding": jnp.full(12, 60.0),
        "housing": jnp.full(12, 45.0),
        "enforce": jnp.asarray(False),
    }
    servo = jaxmor.AffineActuatorDefinition.position("servo", "hinge", kp=5.0)
    p = jaxmor.with_affine_actuators(jaxmor.with_actuators(pendulum, []), [servo])  # its DC motor replaced
    return {
        "quadruped": (m, jaxmor.init_state(m, q=jnp.asarray(stand)), quadruped_args),
        "affine pendulum": (p, jaxmor.init_state(p, q=jnp.array([0.3])), {"ctrl": jnp.array([0.7])}),
    }


def _assert_same_states(got, want, what: str) -> None:
    """Every leaf of two States equal: floats within 1e-14 (the setters copy their arguments; the one computed
    field, external_force = J(q)^T (force, torque) with O(1) entries, may round differently once XLA fuses it
    under jit: a few float64 ulps), the rest (bool flags, integer states) exactly."""
    chex.assert_trees_all_equal_structs(got, want)
    for (path, a), b in zip(jax.tree_util.tree_flatten_with_path(got)[0], jax.tree.leaves(want), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype, (what, jax.tree_util.keystr(path), a.shape, b.shape)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14, err_msg=f"{what}{jax.tree_util.keystr(path)}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{what}{jax.tree_util.keystr(path)}")


def _changed_fields(before, after) -> set[str]:
    """The names of the State fields (any leaf of them) that differ between two states."""

    def differs(name):
        pairs = zip(jax.tree.leaves(getattr(before, name)), jax.tree.leaves(getattr(after, name)), strict=True)
        return any(not np.array_equal(np.asarray(x), np.asarray(y)) for x, y in pairs)

    return {f.name for f in dataclasses.fields(jaxmor.State) if differs(f.name)}


def test_the_setter_table_names_every_state_setter():
    public = {name for name in jaxmor.__all__ if name.startswith("set_")}
    assert set(SETTERS) == public, f"missing: {sorted(public - set(SETTERS))}, gone: {sorted(set(SETTERS) - public)}"
    assert len(public) == 14  # as of 0.3: a new setter must be added to SETTERS (and counted here)


@pytest.mark.parametrize("world", ["quadruped", "affine pendulum"])
def test_every_setter_works_inside_a_jitted_scan_with_closed_over_arrays(setter_worlds, world):
    """Each world's setters, applied in turn inside a jitted ``lax.scan`` around ``jaxmor.step`` with arrays made
    outside the trace (closed over), and inside ``jit`` with the arrays passed in (traced arguments): every field
    of the State they make equals the eager call's (``_assert_same_states``), and the eager state differs from the
    initial one in exactly the fields the setters own (``CHANGED``), so each setter's values arrived."""
    model, state, args = setter_worlds[world]
    calls = [call for where, call in SETTERS.values() if where == world]

    def set_all(s, a):
        for call in calls:
            s = call(model, s, a)
        return s

    def body(s, _):
        s = set_all(s, args)
        return jaxmor.step(model, s), s

    final, sets = jax.jit(lambda s: jax.lax.scan(body, s, None, length=2))(state)
    eager = set_all(state, args)
    assert _changed_fields(state, eager) == CHANGED[world]
    _assert_same_states(jax.tree.map(lambda x: x[0], sets), eager, "closed over, in a scan: ")
    _assert_same_states(jax.jit(set_all)(state, args), eager, "traced arguments: ")
    assert np.all(np.isfinite(np.asarray(final.q)))


# --------------------------------------------------------------------------------------------------
# 3. Finite gradients.


def _robot_world(name: str):
    if name == "pendulum":
        model = jaxmor.load_urdf(PENDULUM_URDF)
        return model, jaxmor.init_state(model, q=jnp.array([0.3]))
    if name == "turntable":
        model = jaxmor.load_urdf(TURNTABLE_URDF)
        return model, jaxmor.set_actuator_torque(model, jaxmor.init_state(model, u=jnp.array([5.0])), "spin", 3.0)
    model = jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF))
    state = jaxmor.init_state(model, q=jnp.asarray(quadruped_standing_q(model, 0.54)))
    return model, jaxmor.set_actuator_torques(model, state, jnp.linspace(-5.0, 5.0, 12))


@pytest.mark.parametrize("robot", ["pendulum", "turntable", pytest.param("quadruped", marks=pytest.mark.slow)])
def test_gradients_are_finite_wrt_every_model_leaf(robot):
    """Continuous joints (infinite limits) used to give NaN gradients w.r.t. masses, inertias, axes, armature,
    damping and the time step; every leaf's gradient of a short rollout is finite now."""
    model, state = _robot_world(robot)

    def loss(m):
        final, _ = jaxmor.rollout(m, state, n_steps=3)
        return jnp.sum(final.q) + jnp.sum(final.u)

    grads = jax.jit(jax.grad(loss))(model)
    assert not _bad_leaves(grads), _bad_leaves(grads)
    assert sum(float(jnp.abs(x).sum()) for x in jax.tree.leaves(grads)) > 0.0  # not trivially zero


@pytest.mark.slow
@pytest.mark.parametrize("bad_velocity", [np.nan, 1e12], ids=["nan", "diverged"])
def test_a_diverged_world_masked_in_a_batch_of_8_leaves_the_gradient_as_without_it(bad_velocity):
    """One world of 8 pendulums diverges (a NaN or a velocity beyond ``DIVERGENCE_BOUND``); the loss masks it.
    The batch's gradient w.r.t. the shared model equals the gradient of the 7 healthy worlds alone."""
    model = jaxmor.load_urdf(PENDULUM_URDF)
    u = np.linspace(-1.0, 1.0, 8)
    u[3] = bad_velocity
    q = np.linspace(0.1, 0.8, 8)

    def loss(m, q, u):
        states = jax.vmap(lambda qi, ui: jaxmor.init_state(m, q=qi[None], u=ui[None]))(q, u)
        final, _ = jax.vmap(lambda s: jaxmor.rollout(m, s, n_steps=10))(states)
        return jnp.sum(jnp.where(final.nonfinite, 0.0, final.q[:, 0]))

    grad = jax.jit(jax.grad(loss))
    batch = grad(model, jnp.asarray(q), jnp.asarray(u))
    healthy = np.arange(8) != 3
    alone = grad(model, jnp.asarray(q[healthy]), jnp.asarray(u[healthy]))
    assert not _bad_leaves(batch), _bad_leaves(batch)
    for (path, got), want in zip(jax.tree_util.tree_flatten_with_path(batch)[0], jax.tree.leaves(alone), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15, err_msg=jax.tree_util.keystr(path))


@pytest.mark.slow
def test_one_world_whose_step_overflows_leaves_the_other_63_gradients_as_alone():
    """64 quadrupeds standing on the ground, 3 steps, each with its own start velocity and motor commands (many
    saturated, so the region's constants act); one
    world is pushed with 1e300 on every velocity at its first step: finite inputs within the guard's bound, so
    it runs, and its step overflows (rejected after the fact: it keeps its state, flagged). The loss masks the
    flagged world. The gradient w.r.t. the motors' constants (shared by the batch) and w.r.t. every world's
    start velocity equals, for the 63 others, that of the 63 run alone (float64, 1e-9 relative; measured
    round-off), and the pushed world's is zero. Without the derivative mask of ``jaxmor.sim.guard.shielded``
    every shared parameter's gradient is NaN."""
    model = jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF))
    n, bad = 64, 17
    rng = np.random.default_rng(3)
    q = np.tile(quadruped_standing_q(model), (n, 1))
    q[:, 7:] += rng.uniform(-0.05, 0.05, size=(n, 12))
    u0 = jnp.asarray(rng.normal(scale=0.2, size=(n, model.nv)))
    torques = jnp.asarray(rng.uniform(-60.0, 60.0, size=(n, model.na)))  # many beyond the region
    push = np.zeros((n, model.nv))
    push[bad] = 1e300

    def loss(motor, q, u0, torques, push):
        m = model.replace(actuators=model.actuators.replace(motor=motor))

        def world(qi, ui, ti, pi):
            s = jaxmor.set_actuation_limits(m, jaxmor.init_state(m, q=qi, u=ui), jnp.full(m.nv, jnp.inf))
            s = jaxmor.set_actuator_torques(m, jaxmor.set_generalized_force(m, s, pi), ti)
            final, _ = jaxmor.rollout(m, s, n_steps=3)
            return jnp.where(final.nonfinite, 0.0, jnp.sum(final.q[7:]) + jnp.sum(final.u))

        return jnp.sum(jax.vmap(world)(q, u0, torques, push))

    grad = jax.jit(jax.grad(loss, argnums=(0, 2)))
    motor = model.actuators.motor
    start = jax.tree.map(lambda x: x[bad], jax.vmap(lambda qi: jaxmor.init_state(model, q=qi))(jnp.asarray(q)))
    assert bool(jaxmor.sim.guard.runnable(model, start)), "the pushed world starts within the guard's bound"
    batch_motor, batch_u = grad(motor, jnp.asarray(q), u0, torques, jnp.asarray(push))
    keep = np.arange(n) != bad
    alone_motor, alone_u = grad(motor, jnp.asarray(q[keep]), u0[keep], torques[keep], jnp.asarray(push[keep]))
    assert not _bad_leaves((batch_motor, batch_u)), _bad_leaves((batch_motor, batch_u))
    for (path, got), want in zip(
        jax.tree_util.tree_flatten_with_path(batch_motor)[0], jax.tree.leaves(alone_motor), strict=True
    ):
        scale = max(np.abs(np.asarray(want)).max(), 1e-300)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * scale, err_msg=jax.tree_util.keystr(path))
    assert sum(float(np.abs(np.asarray(x)).sum()) for x in jax.tree.leaves(alone_motor)) > 0.0
    np.testing.assert_allclose(np.asarray(batch_u)[keep], np.asarray(alone_u), rtol=1e-9, atol=1e-12)
    assert np.all(np.asarray(batch_u)[bad] == 0.0)


def test_a_world_spinning_faster_than_its_step_resolves_is_flagged_and_kept():
    """The guard's bound relative to the world's own time step: a joint turning more than half a turn per
    step (``|u| h > pi``) has run away, far below the fixed 1e8 bound. One batch of three pendulums: one at
    0.9 pi / h runs; one given 1.1 pi / h is flagged at once; one at rest pushed by 1e9 Nm for one step (its
    step would end near 1e7 rad/s, inside the fixed bound) is flagged and keeps its state."""
    model = jaxmor.load_urdf(PENDULUM_URDF)
    h = float(model.opt.timestep)
    u = jnp.asarray([[0.9 * np.pi / h], [1.1 * np.pi / h], [0.0]])

    def world(ui, push):
        state = jaxmor.init_state(model, q=jnp.asarray([0.2]), u=ui)
        state = jaxmor.set_actuation_limits(model, state, jnp.full(1, jnp.inf))  # the push is not clamped
        return jaxmor.set_generalized_force(model, state, push)

    states = jax.vmap(world)(u, jnp.asarray([[0.0], [0.0], [1e9]]))
    after = jax.jit(jax.vmap(lambda s: jaxmor.step(model, s)))(states)
    assert np.asarray(after.nonfinite).tolist() == [False, True, True]
    assert float(after.q[0, 0]) != 0.2 and np.all(np.isfinite(np.asarray(after.u)))
    np.testing.assert_array_equal(after.q[1:], states.q[1:])
    np.testing.assert_array_equal(after.u[1:], states.u[1:])


# --------------------------------------------------------------------------------------------------
# 4. Runtime values only seen under jit are flagged, never applied silently; the Model cannot go stale.


def test_a_negative_bus_voltage_set_under_jit_is_flagged_and_applies_no_torque(turntable):
    state = jaxmor.set_actuator_torque(turntable, jaxmor.init_state(turntable), "spin", 3.0)
    run = jax.jit(lambda s, v: jaxmor.step(turntable, jaxmor.set_bus_voltage(turntable, s, v)))
    bad = run(state, -24.0)
    assert bool(bad.invalid) and not bool(bad.actuator_state.valid[0])
    assert float(bad.actuator_state.motor_torque[0]) == 0.0 and float(bad.u[0]) == 0.0  # nothing applied
    good = run(state, 24.0)  # the same command with a valid voltage: 0.3 Nm motor torque, 3 Nm at the joint
    assert not bool(good.invalid) and bool(good.actuator_state.valid[0])
    assert float(good.u[0]) == pytest.approx(1e-3 * 3.0 / TT_I, rel=1e-12)
    with pytest.raises(ArgumentError, match="voltage"):  # outside jit the setter refuses it
        jaxmor.set_bus_voltage(turntable, state, -24.0)


@pytest.mark.parametrize("gear", [5.0, 20.0])
def test_a_changed_gear_ratio_gives_the_torque_of_the_new_gear(turntable, gear):
    """The transmission is built from the gear ratio whenever it is used: T = [gear], and at 2 rad/s with a
    command of 100 Nm the joint gets gear * clip(100 / gear, region(gear * 2 rad/s))."""
    model = turntable.replace(actuators=turntable.actuators.replace(gear_ratio=jnp.array([gear])))
    np.testing.assert_array_equal(jaxmor.transmission_matrix(model), [[gear]])
    state = jaxmor.set_actuator_torque(model, jaxmor.init_state(model, u=jnp.array([2.0])), "spin", 100.0)
    lower, upper = motor_region(gear * 2.0, TT_R, TT_KT, TT_KV, TT_V, TT_PEAK)
    expected = gear * np.clip(100.0 / gear, lower, upper)
    tau, _ = jaxmor.actuate(model, state)
    assert float(tau[0]) == pytest.approx(float(expected), rel=1e-12)
    lo, hi = jaxmor.actuator_torque_bounds(model, state)
    assert (float(lo[0]), float(hi[0])) == pytest.approx((gear * float(lower), gear * float(upper)), rel=1e-12)


def test_per_world_gear_ratios_and_a_zero_gear_under_vmap(turntable):
    gears = jnp.array([5.0, 10.0, 0.0, 20.0])
    models = turntable.replace(actuators=turntable.actuators.replace(gear_ratio=gears[:, None]))
    axes = jax.tree.map(lambda _: None, turntable)
    axes = axes.replace(actuators=axes.actuators.replace(gear_ratio=0))
    state = jaxmor.set_actuator_torque(turntable, jaxmor.init_state(turntable, u=jnp.array([2.0])), "spin", 100.0)
    after = jax.jit(jax.vmap(jaxmor.step, in_axes=(axes, None)))(models, state)
    for i, gear in enumerate(np.asarray(gears)):
        if gear == 0.0:
            assert bool(after.invalid[i]) and not bool(after.actuator_state.valid[i, 0])
            assert float(after.u[i, 0]) == 2.0  # no torque, no damping: the speed stays
            continue
        lower, upper = motor_region(gear * 2.0, TT_R, TT_KT, TT_KV, TT_V, TT_PEAK)
        torque = gear * float(np.clip(100.0 / gear, lower, upper))
        assert float(after.u[i, 0]) == pytest.approx(2.0 + 1e-3 * torque / TT_I, rel=1e-12), gear


def test_the_transmission_cannot_be_replaced_on_its_own(turntable):
    with pytest.raises(TypeError, match="transmission"):
        turntable.actuators.replace(transmission=jnp.ones((1, 1)))


def test_options_are_checked_where_they_are_set(pendulum):
    """``with_options`` (the checked editor since 0.3) refuses bad options, naming them; ``Options.replace`` is a
    plain replace, and ``step`` checks what it builds."""
    with pytest.raises(ArgumentError, match=r"with_options: opt\.timestep must be positive and finite"):
        jaxmor.with_options(pendulum, timestep=-1e-3)
    with pytest.raises(ArgumentError, match=r"opt\.solver_iterations must be an int >= 1"):
        jaxmor.with_options(pendulum, solver_iterations=0)
    with pytest.raises(ArgumentError, match=r"opt\.position_iterations must be an int >= 1"):
        jaxmor.with_options(pendulum, position_iterations=2.5)
    with pytest.raises(ArgumentError, match=r"opt\.gravity must be a finite 3-vector"):
        jaxmor.with_options(pendulum, gravity=jnp.array([0.0, np.nan, -9.81]))
    with pytest.raises(ArgumentError, match=r"unknown options \['timestamp'\]"):
        jaxmor.with_options(pendulum, timestamp=1e-3)
    unchecked = pendulum.replace(opt=pendulum.opt.replace(timestep=-1e-3))  # plain: no check here
    with pytest.raises(ArgumentError, match=r"step: opt\.timestep must be positive and finite"):
        jaxmor.step(unchecked, jaxmor.init_state(pendulum))
    with pytest.raises(ArgumentError, match=r"step: opt\.timestep"):
        jaxmor.step(
            pendulum.replace(opt=jaxmor.Options(jnp.asarray(0.0), pendulum.opt.gravity, 30)),
            jaxmor.init_state(pendulum),
        )
    # A Python float is a fine time step (it used to end in an AttributeError).
    model = jaxmor.with_options(pendulum, timestep=0.002)
    assert float(jaxmor.step(model, jaxmor.init_state(model)).time) == pytest.approx(0.002)


def test_a_traced_negative_time_step_flags_the_world_and_it_does_not_move(pendulum):
    state = jaxmor.init_state(pendulum, q=jnp.array([0.4]), u=jnp.array([0.2]))
    run = jax.jit(lambda h: jaxmor.step(pendulum.replace(opt=pendulum.opt.replace(timestep=h)), state))
    after = run(-1e-3)
    assert bool(after.invalid) and not bool(after.nonfinite)
    assert float(after.q[0]) == 0.4 and float(after.u[0]) == 0.2 and float(after.time) == 0.0
    assert not bool(run(1e-3).invalid)


def test_a_traced_negative_actuation_limit_flags_the_world_and_it_does_not_move(pendulum):
    """Set under ``jit`` (where ``set_actuation_limits`` cannot check it), a negative limit used to turn a commanded
    +3 Nm into a clip to [+L, -L] (the sign flipped or shrunk, unflagged); now the world keeps its state and
    ``invalid`` says why. A limit of +inf (none) and of 0 still run."""
    state = jaxmor.init_state(pendulum, q=jnp.array([0.4]), u=jnp.array([0.2]))
    state = state.replace(feedforward_force=jnp.array([3.0]))
    run = jax.jit(lambda limit: jaxmor.step(pendulum, state.replace(actuation_limit=jnp.full((1,), limit))))
    after = run(-2.0)
    assert bool(after.invalid) and not bool(after.nonfinite)
    assert float(after.q[0]) == 0.4 and float(after.u[0]) == 0.2 and float(after.time) == 0.0
    for limit in (float("inf"), 0.0, 2.0):
        good = run(limit)
        assert not bool(good.invalid) and not bool(good.nonfinite) and float(good.time) > 0.0


@pytest.mark.parametrize(
    "old, new, element, message",
    [
        ('rotor_inertia="0"', 'rotor_inertia="1e39"', "<joint", r"joint rotor_inertia 1e\+39 overflows in float32"),
        ('<mass value="1.0"/>', '<mass value="1e-50"/>', "<link", r"body mass 1e-50 underflows to zero in float32"),
    ],
    ids=["overflow", "underflow"],
)
def test_values_that_overflow_or_underflow_the_models_dtype_are_refused_at_load(tmp_path, old, new, element, message):
    """Finite in float64, not in float32: refused at load with the file and the line of the element (the
    joint, or the link whose mass it is), instead of a frozen joint or a massless link later."""
    text = PENDULUM_URDF.read_text()
    changed = text.replace(old, new, 1)
    assert changed != text
    lines = changed.splitlines()
    at = next(i for i, x in enumerate(lines) if new in x)
    line = max(i for i in range(at + 1) if lines[i].lstrip().startswith(element)) + 1
    path = tmp_path / "pendulum.urdf"
    path.write_text(changed)
    with jax.enable_x64(False):
        with pytest.raises(ModelError, match=rf"^{re.escape(str(path))}:{line}: {message}"):
            jaxmor.load_urdf(path)
    assert jaxmor.load_urdf(path).body_mass.dtype == jnp.float64  # float64 holds it


# --------------------------------------------------------------------------------------------------
# 5. Time, flagged worlds, rollout_batch.


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_time_after_100000_steps_of_1_ms_is_the_exact_sum(dtype):
    """Compensated summation: after n = 100,000 steps of h = 1 ms the time is n h correctly rounded, where a
    plain float32 running sum ends about 0.05 s away. In float64 that is 100.0 s to 1e-12. In float32, 1 ms
    itself is h = 1.0000000475e-3 and n h = 100.00000475 s, whose nearest float32 (the spacing there is
    7.6e-6 s) is what the step must return: exact to the dtype's resolution (1e-9 relative is below it)."""
    model = jaxmor.load_urdf(PENDULUM_URDF)
    model = jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, model)
    model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(1e-3, dtype)))
    state = jaxmor.init_state(model, q=jnp.array([0.3], dtype))
    assert state.time.dtype == dtype
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=100_000))(state)
    h = np.float64(np.asarray(model.opt.timestep))  # the time step as the dtype holds it, exactly
    exact = np.asarray(100_000 * h, dtype=dtype)  # n h, correctly rounded to the dtype
    assert float(final.time) == float(exact)
    if dtype == jnp.float64:
        assert float(final.time) == pytest.approx(100.0, rel=1e-12)
    naive = np.float32(0.0)
    for _ in range(100_000):
        naive = np.float32(naive + np.float32(1e-3))
    assert abs(float(naive) - 100.0) > 1e-3  # what the compensation avoids


def test_a_flagged_world_stops_until_the_flag_is_cleared(pendulum):
    state = jaxmor.init_state(pendulum, q=jnp.array([0.7]), u=jnp.array([0.3])).replace(nonfinite=jnp.asarray(True))
    after = STEP(pendulum, STEP(pendulum, state))
    assert float(after.q[0]) == 0.7 and float(after.u[0]) == 0.3 and float(after.time) == 0.0
    resumed = STEP(pendulum, after.replace(nonfinite=jnp.asarray(False)))
    assert float(resumed.time) == pytest.approx(1e-3) and float(resumed.q[0]) != 0.7


# --------------------------------------------------------------------------------------------------
# 6. Files: actuator files only from the robot's tree, no DTD, clear errors for bad paths.


def _robot_with_actuator_file(root: Path, file: str) -> Path:
    shutil.copytree(TURNTABLE_URDF.parent, root / "robot")
    path = root / "robot" / "turntable.urdf"
    path.write_text(path.read_text().replace('file="spin_actuator.xml"', f'file="{file}"'))
    return path


def _message(path: Path, file: str, **kwargs) -> str:
    with pytest.raises(ModelError) as error:
        jaxmor.load_urdf(path, **kwargs)
    return str(error.value).replace(file, "<FILE>")


@pytest.mark.parametrize("file", ["/etc/passwd", "../../outside.xml", "link_out.xml"])
def test_actuator_files_outside_the_robots_tree_are_refused_like_missing_ones(tmp_path, file):
    outside = tmp_path / "outside.xml"  # a real actuator file, two levels above the URDF's directory
    outside.write_text((TURNTABLE_URDF.parent / "actuators" / "spin_actuator.xml").read_text())
    path = _robot_with_actuator_file(tmp_path / "a", file)  # the URDF is tmp/a/robot/turntable.urdf
    if file == "link_out.xml":
        os.symlink(outside, path.parent / "link_out.xml")  # a link inside the tree that points out of it
    assert file == "/etc/passwd" or (path.parent / file).resolve() == outside.resolve()
    missing = _message(_robot_with_actuator_file(tmp_path / "b", "no_such_file.xml"), "no_such_file.xml")
    refused = _message(path, file)
    assert refused.replace(str(tmp_path / "a"), "<DIR>") == missing.replace(str(tmp_path / "b"), "<DIR>")
    assert "not found or not readable" in refused and "<actuator_model>" not in refused


def test_an_allowed_directory_lets_a_file_outside_the_tree_load(tmp_path):
    shared = tmp_path / "shared_actuators"
    shared.mkdir()
    (shared / "spin.xml").write_text((TURNTABLE_URDF.parent / "actuators" / "spin_actuator.xml").read_text())
    path = _robot_with_actuator_file(tmp_path, str(shared / "spin.xml"))
    with pytest.raises(ModelError, match="not found or not readable"):
        jaxmor.load_urdf(path)
    assert jaxmor.load_urdf(path, actuator_dirs=[shared]).na == 1


def test_a_dtd_with_attribute_defaults_is_refused():
    text = (
        '<?xml version="1.0"?>\n<!DOCTYPE robot [ <!ATTLIST mass value CDATA "7.5"> ]>\n'
        '<robot name="r"><link name="a"><inertial><mass/></inertial></link></robot>\n'
    )
    with pytest.raises(ModelError, match=r"^<string>:2: DTD declarations .* are not allowed"):
        jaxmor.load_urdf(text)


@pytest.mark.parametrize("path", [b"<robot/>", None, 3])
def test_a_path_of_the_wrong_type_is_an_argument_error(path):
    with pytest.raises(ArgumentError, match=f"got {type(path).__name__}"):
        jaxmor.load_urdf(path)


def test_bad_indices_and_flags_are_refused(turntable):
    state = jaxmor.init_state(turntable)
    with pytest.raises(ArgumentError, match="int index, got 0.9"):
        jaxmor.set_actuator_torque(turntable, state, 0.9, 1.0)
    with pytest.raises(ArgumentError, match="int index, got True"):
        jaxmor.set_actuator_torque(turntable, state, True, 1.0)
    with pytest.raises(ArgumentError, match="enforce must be a bool"):
        jaxmor.set_motor_operating_region_enforced(turntable, state, "false")
    with pytest.raises(ArgumentError, match="enforce must be a bool"):
        jaxmor.set_motor_operating_region_enforced(turntable, state, 0)
    other = jaxmor.init_state(jaxmor.load_urdf(QUADRUPED_URDF))
    with pytest.raises(ArgumentError, match=r"set_actuator_torque: state\.q has shape \(19,\)"):
        jaxmor.set_actuator_torque(turntable, other, "spin", 1.0)


# --------------------------------------------------------------------------------------------------
# 7. A fuzz test of the loader: every mutated file loads or gives a clean ModelError with file and line.

FUZZ_SEED = 20261130
FUZZ_CASES = 300
URDF_TAGS = ("link", "joint", "inertial", "collision", "actuator", "limit", "origin", "robot", "mass")
URDF_TYPES = ("fixed", "floating", "planar", "prismatic", "x")


@pytest.mark.slow
def test_fuzzed_robot_files_load_or_fail_cleanly(tmp_path):
    """A few hundred seeded mutations of the quadruped (its URDF or an actuator file): each loads, or raises a
    ModelError that names one of the robot's files and a line."""
    robot = tmp_path / "quadruped"
    shutil.copytree(QUADRUPED_URDF.parent, robot)
    files = [robot / "quadruped.urdf", *sorted((robot / "actuators").glob("*.xml"))]
    originals = {f: f.read_text() for f in files}
    rng = random.Random(FUZZ_SEED)
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(FUZZ_CASES):
        target = files[0] if rng.random() < 0.8 else rng.choice(files[1:])
        mutated = mutate(originals[target], rng, URDF_TAGS, URDF_TYPES)
        target.write_text(mutated)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jaxmor.load_urdf(files[0])
            outcomes["loaded"] += 1
        except ModelError as error:
            assert error.source in {str(f) for f in files}, (case, str(error))
            assert isinstance(error.line, int) and error.line >= 1, (case, str(error))
            assert str(error).startswith(f"{error.source}:{error.line}: "), (case, str(error))
            outcomes["refused"] += 1
        finally:
            target.write_text(originals[target])
    assert outcomes["loaded"] > 0 and outcomes["refused"] > 0, outcomes
