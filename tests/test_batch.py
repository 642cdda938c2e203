"""``rollout_batch``: chunked batches of worlds give exactly what one ``vmap`` over all worlds gives; per-step
inputs of any State field (``rollout`` and ``rollout_batch``) act as the public setters do.

The reference is ``jax.vmap`` of :func:`jaxmor.rollout` (itself checked world by world in test_step.py);
float64, so the two compiled programs agree to rounding (1e-12 absolute on O(1) values).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import quadruped_standing_q

import jaxmor
from jaxmor.errors import ArgumentError

N_WORLDS = 7  # chunks of 3: two full chunks and a remainder of one
N_STEPS = 4
TOL = 1e-12


@pytest.fixture(scope="module")
def worlds(quadruped_ground):
    model = quadruped_ground
    rng = np.random.default_rng(3)
    q = np.tile(quadruped_standing_q(model, 0.5), (N_WORLDS, 1))
    q[:, 7:] += rng.uniform(-0.2, 0.2, (N_WORLDS, 12))
    state = jaxmor.init_state(model)
    states = jax.tree.map(lambda x: jnp.array(jnp.broadcast_to(x, (N_WORLDS, *x.shape))), state)
    states = states.replace(q=jnp.asarray(q))
    controls = jnp.asarray(rng.uniform(-30.0, 30.0, (N_WORLDS, N_STEPS, 12)))
    resistance = jnp.asarray(rng.uniform(0.3, 1.5, (N_WORLDS, 12)))
    motor = model.actuators.motor.replace(resistance=resistance)
    models = model.replace(actuators=model.actuators.replace(motor=motor))
    axes = jax.tree.map(lambda _: None, model)
    axes = axes.replace(actuators=axes.actuators.replace(motor=axes.actuators.motor.replace(resistance=0)))
    return model, models, axes, states, controls


def _assert_same(got, want):
    for name in ("q", "u", "time", "contact_impulse", "limit_impulse", "nonfinite"):
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0, atol=TOL, err_msg=name)
    np.testing.assert_allclose(
        got.actuator_state.motor_torque, want.actuator_state.motor_torque, rtol=0, atol=TOL, err_msg="motor_torque"
    )


@pytest.fixture(scope="module")
def programs(worlds):
    """The compiled programs, shared by the tests: the models are arguments (not closed over), so a model of the
    same structure (the shared model's resistance broadcast over the worlds) runs the same compiled program.
    Every quadruped step compiled costs about a minute on CI; the file compiles four."""
    _, _, axes, _, _ = worlds
    chunked = jax.jit(lambda m, s, c: jaxmor.rollout_batch(m, s, c, chunk_size=3, model_axes=axes))
    vmapped = jax.jit(jax.vmap(lambda m, s, c: jaxmor.rollout(m, s, c), in_axes=(axes, 0, 0)))
    return chunked, vmapped


def _per_world(model, resistance):
    motor = model.actuators.motor.replace(resistance=jnp.asarray(resistance))
    return model.replace(actuators=model.actuators.replace(motor=motor))


@pytest.mark.slow
def test_chunks_equal_one_vmap_with_a_remainder_and_per_world_motors(worlds, programs):
    model, models, axes, states, controls = worlds
    run, ref = programs
    final, traj = run(models, states, controls)
    want_final, want_traj = ref(models, states, controls)
    _assert_same(final, want_final)
    assert traj.q.shape == (N_WORLDS, N_STEPS, model.nq)
    _assert_same(jax.tree.map(lambda x: x[:, 1], traj), jax.tree.map(lambda x: x[:, 1], want_traj))
    # The per-world resistance matters: the shared model's resistance in every world (the same compiled program,
    # the resistance an argument) gives other motor torques.
    shared = _per_world(model, jnp.broadcast_to(model.actuators.motor.resistance, (N_WORLDS, model.na)))
    shared_final, _ = run(shared, states, controls)
    assert np.abs(np.asarray(shared_final.actuator_state.motor_torque - final.actuator_state.motor_torque)).max() > 1e-3


@pytest.mark.slow
def test_one_chunk_and_no_controls(worlds, programs):
    """chunk_size above the number of worlds (one chunk), no controls (each state's torques are kept). The
    reference is the one vmap of ``rollout`` compiled above, with the shared model's resistance in every world and
    each state's own torques as the controls of every step (what ``controls=None`` means), after 2 steps."""
    model, _, _, states, _ = worlds
    final, _ = jax.jit(lambda m, s: jaxmor.rollout_batch(m, s, n_steps=2, chunk_size=64))(model, states)
    _, ref = programs
    shared = _per_world(model, jnp.broadcast_to(model.actuators.motor.resistance, (N_WORLDS, model.na)))
    held = jnp.repeat(states.actuator_torque[:, None], N_STEPS, axis=1)
    _, want = ref(shared, states, held)
    _assert_same(final, jax.tree.map(lambda x: x[:, 1], want))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"chunk_size": 0}, "chunk_size must be a positive int"),
        ({"chunk_size": 2.5}, "chunk_size must be a positive int"),
        (
            {"controls": np.zeros((N_WORLDS, N_STEPS))},
            r"rollout_batch: controls\['actuator_torque'\] must have shape \(7, n_steps, 12\), got \(7, 4\)",
        ),
        ({"controls": np.zeros((N_WORLDS + 1, N_STEPS, 12))}, r"must have shape \(7, 4, 12\), got \(8, 4, 12\)"),
        ({"controls": np.zeros((N_WORLDS, N_STEPS, 12)), "n_steps": N_STEPS + 1}, r"shape \(7, 5, 12\), got"),
        ({"controls": {"pd_p_gain": np.zeros((N_WORLDS, N_STEPS, 17))}}, r"controls\['pd_p_gain'\] must have shape"),
        (
            {"controls": {"actuator_torques": np.zeros((N_WORLDS, N_STEPS, 12))}},
            r"unknown controls \['actuator_torques'\]",
        ),
        ({}, "needs a non-negative n_steps or controls"),
    ],
)
def test_bad_arguments_are_named(worlds, kwargs, match):
    model, _, _, states, _ = worlds
    with pytest.raises(ArgumentError, match=match):
        jaxmor.rollout_batch(model, states, **kwargs)


def test_bad_model_axes_and_states(worlds):
    model, models, axes, states, _ = worlds
    with pytest.raises(ArgumentError, match="leading world axis of size 7"):
        jaxmor.rollout_batch(model, states, n_steps=1, model_axes=axes)  # resistance is not batched
    bad = axes.replace(actuators=axes.actuators.replace(motor=axes.actuators.motor.replace(resistance=1)))
    with pytest.raises(ArgumentError, match="must be 0 or None"):
        jaxmor.rollout_batch(models, states, n_steps=1, model_axes=bad)
    with pytest.raises(ArgumentError, match="same size"):
        jaxmor.rollout_batch(model, states.replace(u=states.u[:3]), n_steps=1)


# --------------------------------------------------------------------------------------------------
# Per-step inputs of any State field (a mapping of field names), on a pendulum driven by a position servo.

K_STEPS = 6
STEP = jax.jit(jaxmor.step)


@pytest.fixture(scope="module")
def servo_pendulum(pendulum):
    """The pendulum with its DC motor replaced by an affine position servo (kp = 5), its built-in PD on."""
    servo = jaxmor.AffineActuatorDefinition.position("servo", "hinge", kp=5.0)
    model = jaxmor.with_affine_actuators(jaxmor.with_actuators(pendulum, []), [servo])
    state = jaxmor.set_pd_gains(model, jaxmor.init_state(model, q=jnp.array([0.3])), [2.0], [0.1])
    rng = np.random.default_rng(11)
    inputs = {
        "ctrl": jnp.asarray(rng.uniform(-1.0, 1.0, (K_STEPS, 1))),
        "pd_position_target": jnp.asarray(rng.uniform(-0.5, 0.5, (K_STEPS, 1))),
    }
    return model, state, inputs


def test_a_rollout_sets_each_step_inputs_of_any_field_as_the_setters_do(servo_pendulum):
    """``rollout(model, state, {"ctrl": ..., "pd_position_target": ...})``: every step's state equals stepping by
    hand after the public setters (set_ctrl, set_pd_targets) put that step's values in (the scan body and a lone
    step compile separately: 1e-12 on O(1) values over 6 steps without contacts); the inputs act (the
    trajectory is not the one without them); ``rollout_batch`` with a world axis gives each world's rollout."""
    model, state, inputs = servo_pendulum
    _, trajectory = jax.jit(jaxmor.rollout)(model, state, inputs)
    s, by_hand = state, []
    for k in range(K_STEPS):
        s = jaxmor.set_ctrl(model, s, inputs["ctrl"][k])
        s = jaxmor.set_pd_targets(model, s, inputs["pd_position_target"][k], s.pd_velocity_target)
        s = STEP(model, s)
        by_hand.append(s)
    by_hand = jax.tree.map(lambda *x: jnp.stack(x), *by_hand)
    chex.assert_trees_all_close(trajectory, by_hand, rtol=1e-12, atol=1e-12)
    _, still = jax.jit(jaxmor.rollout, static_argnums=3)(model, state, None, K_STEPS)
    # The servo's 5 (ctrl - q) Nm and the PD's 2 (q* - q) Nm on I = 1/3 kg m^2 change the acceleration by a few
    # rad/s^2: about 1e-4 rad in 6 ms (measured 1.4e-4), far above rounding.
    assert np.abs(np.asarray(still.q - trajectory.q)).max() > 2e-5, "the inputs should move the pendulum"

    worlds = 3
    states = jax.tree.map(lambda x: jnp.stack([x] * worlds), state)
    states = states.replace(q=jnp.array([[0.3], [-0.2], [1.0]]))
    batch = {name: jnp.stack([x, -x, 0.5 * x]) for name, x in inputs.items()}
    _, batched = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c, chunk_size=2))(states, batch)
    for w in range(worlds):
        one = jax.tree.map(lambda x, w=w: x[w], (states, batch))
        _, alone = jax.jit(jaxmor.rollout)(model, *one)
        chex.assert_trees_all_close(jax.tree.map(lambda x, w=w: x[w], batched), alone, rtol=1e-12, atol=1e-12)
