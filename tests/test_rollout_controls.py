"""Rollouts driven by per-step controls of any State input: the Menagerie Go2's position servos through ``ctrl``,
the built-in PD through its targets, and the refusals.

Oracles: a rollout with per-step controls must equal the same steps taken one at a time with the State setters
(the setters are the documented way to set an input; the rollout must do nothing else), and the Go2's servos
(MuJoCo ``general`` actuators: ``kp (ctrl - q) - kd u``, kp 50 Nm/rad) must pull their joints towards a
target that changes during the rollout, which they cannot do if the per-step ``ctrl`` is not applied.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import GO2_DIR

import jaxmor
from jaxmor import ArgumentError

STEPS = 40


@pytest.fixture(scope="module")
def go2():
    model = jaxmor.load_mjcf(GO2_DIR / "scene_mjx.xml")
    home = jaxmor.set_keyframe(model, jaxmor.init_state(model), "home")
    return model, home


@pytest.fixture(scope="module")
def go2_run(go2):
    """Two Go2 worlds from the home keyframe, 40 steps: world 0 holds the home pose, world 1's knee targets bend
    0.3 rad further from step 10 on. Returns the targets, the rollout_batch result and the same world 1 stepped
    one step at a time with ``set_ctrl``."""
    model, home = go2
    hold = np.tile(np.asarray(home.ctrl), (STEPS, 1))
    bend = hold.copy()
    knees = [i for i, name in enumerate(model.affine.names) if name.endswith("calf")]
    bend[10:, knees] -= 0.3
    ctrl = jnp.asarray(np.stack([hold, bend]), home.q.dtype)
    states = jax.tree.map(lambda x: jnp.stack([x, x]), home)
    final, traj = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, {"ctrl": c}))(states, ctrl)
    step = jax.jit(jaxmor.step)
    s = home
    for k in range(STEPS):
        s = step(model, jaxmor.set_ctrl(model, s, ctrl[1, k]))
    return knees, ctrl, final, traj, s


def test_the_go2_servos_follow_per_step_ctrl(go2, go2_run):
    model, home = go2
    knees, ctrl, final, traj, _ = go2_run
    knee_q = [model.affine.q_index[i] for i in knees]
    q0 = np.asarray(home.q)[knee_q]
    held, bent = np.asarray(final.q[0])[knee_q], np.asarray(final.q[1])[knee_q]
    target = np.asarray(ctrl[1, -1])[knees]
    # the compliant servos (kp 50 Nm/rad under the body's weight) let the held knees settle by 0.12-0.15 rad within
    # 0.1 s (the same before and after the position pass could move joints); after these 40 steps they are 0.10-0.115
    # rad along (0.06-0.09 when the pass could lift only the base out of the keyframe's foot penetration: it now
    # corrects that through the legs too). The bent world's knees went well past that (0.12-0.135 rad further),
    # towards their new target.
    assert np.all(np.abs(held - q0) < 0.12), held - q0
    assert np.all(np.abs(bent - target) < np.abs(held - target) - 0.1), (held, bent, target)
    np.testing.assert_array_equal(final.ctrl, ctrl[:, -1])  # the last step's controls stay set
    assert traj.q.shape == (2, STEPS, model.nq)
    # before step 10 both worlds had the same controls: identical trajectories up to there
    np.testing.assert_array_equal(traj.q[0, :10], traj.q[1, :10])


def test_a_batch_rollout_with_ctrl_equals_the_setter_loop(go2_run):
    """rollout_batch vmaps the worlds, the loop steps one world: the same operations, which XLA may fuse and
    order differently, so the two agree to float32 rounding amplified by 40 steps of contact (measured ~1e-6 in
    q), not bit for bit; 1e-4 [rad, m] would not hide a missing or shifted control (the knees move 0.1-0.3 rad)."""
    _, _, final, _, looped = go2_run
    np.testing.assert_allclose(np.asarray(final.q[1]), np.asarray(looped.q), atol=1e-4)
    np.testing.assert_allclose(np.asarray(final.u[1]), np.asarray(looped.u), atol=1e-2)


def test_pd_targets_per_step_equal_the_setter_loop():
    """The same step in both programs; the setter converts and checks its arguments first, which XLA may fuse into
    the step differently: measured 1 ulp (2.7e-16 relative) in float64, hence 1e-13."""
    model = jaxmor.load_urdf(jaxmor.robots.path("pendulum"))
    state = jaxmor.set_pd_gains(model, jaxmor.init_state(model), [20.0], [2.0])
    targets = jnp.linspace(0.0, 1.0, 25, dtype=state.q.dtype)[:, None]
    final, traj = jax.jit(lambda s, t: jaxmor.rollout(model, s, {"pd_position_target": t}))(state, targets)

    def one(s, t):
        s = jaxmor.step(model, jaxmor.set_pd_targets(model, s, t, jnp.zeros(1, t.dtype)))
        return s, s.q

    _, qs = jax.jit(lambda s, t: jax.lax.scan(one, s, t))(state, targets)
    np.testing.assert_allclose(traj.q, qs, rtol=1e-13, atol=1e-18)
    assert np.all(np.diff(np.asarray(traj.q[:, 0])) > 0) and float(final.q[0]) > 0  # it follows the rising target


def test_controls_are_checked_before_anything_runs(go2):
    model, home = go2
    with pytest.raises(ArgumentError, match=r"rollout: unknown controls \['torque'\]; a rollout can set"):
        jaxmor.rollout(model, home, {"torque": jnp.zeros((3, model.na))})
    with pytest.raises(ArgumentError, match=r"rollout: unknown controls \['q'\]"):
        jaxmor.rollout(model, home, {"q": jnp.zeros((3, model.nq))})  # the dynamic state is no input
    with pytest.raises(ArgumentError, match=r"controls\['ctrl'\] must have shape \(3, 12\), got \(3, 11\)"):
        jaxmor.rollout(model, home, {"ctrl": jnp.zeros((3, 11))}, n_steps=3)
    with pytest.raises(ArgumentError, match=r"controls\['ctrl'\] must have shape \(4, 12\), got \(3, 12\)"):
        jaxmor.rollout(model, home, {"ctrl": jnp.zeros((3, 12))}, n_steps=4)
    states = jax.tree.map(lambda x: jnp.stack([x, x]), home)
    message = r"rollout_batch: controls\['ctrl'\] must have shape \(2, n_steps, 12\), got \(5, 12\)"
    with pytest.raises(ArgumentError, match=message):
        jaxmor.rollout_batch(model, states, {"ctrl": jnp.zeros((5, 12))})
    with pytest.raises(ArgumentError, match=r"rollout_batch: groups=3 must divide the number of worlds, 2"):
        jaxmor.rollout_batch(model, states, n_steps=1, groups=3)
    assert jaxmor.state.control_fields()[:2] == ("actuator_torque", "actuator_p_gain")
    assert "ctrl" in jaxmor.state.control_fields() and "q" not in jaxmor.state.control_fields()
