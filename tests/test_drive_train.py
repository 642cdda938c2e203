"""The drive train between the policy and the motor: command delay and the drive controllers at the actuators.

The references are written out here: a delay is a shift of the step response by whole steps (compared bitwise,
float64: tests/conftest.py enables x64), and the decimated PID is its discrete law in a plain NumPy loop over the
recorded joint states.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import PENDULUM_URDF, SERVO_MJCF

import jaxmor
from jaxmor import ArgumentError

N_STEPS = 40


@pytest.fixture(scope="module")
def pendulum():
    return jaxmor.load_urdf(PENDULUM_URDF)


@pytest.fixture(scope="module")
def servo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(SERVO_MJCF)


def _step_input(value, width, n=N_STEPS):
    """(n, width) zero at the first step, ``value`` from the second on."""
    out = np.full((n, width), value, np.float64)
    out[0] = 0.0
    return out


def _run(model, state, controls):
    return jax.jit(jaxmor.rollout)(model, state, controls)[1]


def _assert_shifted(delayed, prompt, k, state0):
    """``delayed`` (a trajectory) is ``prompt`` shifted by ``k`` steps, bitwise, and at rest before."""
    for name in ("q", "u"):
        got, want = np.asarray(getattr(delayed, name)), np.asarray(getattr(prompt, name))
        np.testing.assert_array_equal(got[k:], want[: len(want) - k], err_msg=f"{name}, delay {k}")
        np.testing.assert_array_equal(got[:k], np.broadcast_to(getattr(state0, name), got[:k].shape))
    got, want = np.asarray(delayed.actuator_state.motor_torque), np.asarray(prompt.actuator_state.motor_torque)
    np.testing.assert_array_equal(got[k:], want[: len(want) - k])


@pytest.mark.parametrize("k", [1, 3])
def test_torque_step_response_is_shifted_by_the_delay(pendulum, k):
    state = jaxmor.init_state(pendulum)
    controls = {"actuator_torque": _step_input(2.0, 1)}
    prompt = _run(pendulum, state, controls)
    delayed_model = jaxmor.with_command_delay(pendulum, k)
    delayed = _run(delayed_model, jaxmor.init_state(delayed_model), controls)
    assert float(np.abs(np.asarray(prompt.q)).max()) > 1e-3  # it moved
    _assert_shifted(delayed, prompt, k, state)
    np.testing.assert_array_equal(np.asarray(delayed.actuator_torque), controls["actuator_torque"])  # held as set


def test_pd_target_step_response_is_shifted_by_the_delay(pendulum):
    k = 2
    controls = {"actuator_position_target": _step_input(0.4, 1), "actuator_velocity_target": _step_input(0.1, 1)}

    def run(model):
        state = jaxmor.set_actuator_pd_gains(model, jaxmor.init_state(model), [8.0], [0.5])
        return state, _run(model, state, controls)

    state, prompt = run(pendulum)
    _, delayed = run(jaxmor.with_command_delay(pendulum, k, max_delay=4))
    _assert_shifted(delayed, prompt, k, state)


def test_ctrl_step_response_is_shifted_by_the_delay(servo):
    k = 3
    controls = {"ctrl": _step_input(0.3, 2)}
    state = jaxmor.init_state(servo)
    prompt = _run(servo, state, controls)
    model = jaxmor.with_command_delay(servo, ctrl_steps=[k, k])
    assert model.max_delay == k and model.na == 0
    delayed = _run(model, jaxmor.init_state(model), controls)
    for name in ("q", "u"):
        got, want = np.asarray(getattr(delayed, name)), np.asarray(getattr(prompt, name))
        np.testing.assert_array_equal(got[k:], want[:-k])
        np.testing.assert_array_equal(got[:k], np.zeros_like(got[:k]))


def test_without_delay_attributes_the_step_is_unchanged(pendulum):
    """A loaded model has no delay and no buffers; ``with_command_delay(model, 0)`` steps bitwise alike."""
    assert pendulum.max_delay == 0 and np.asarray(pendulum.actuators.delay).tolist() == [0]
    state = jaxmor.init_state(pendulum)
    assert state.command_history.shape == (0, 1, 3)
    controls = {"actuator_torque": _step_input(2.0, 1)}
    zero = jaxmor.with_command_delay(pendulum, 0, max_delay=2)
    a, b = _run(pendulum, state, controls), _run(zero, jaxmor.init_state(zero), controls)
    np.testing.assert_array_equal(np.asarray(a.q), np.asarray(b.q))


@pytest.fixture(scope="module")
def drawn(pendulum):
    """Four worlds whose delays ``jaxmor.randomize`` drew among 0..3, rolled out in one vmapped batch."""
    models, axes = jaxmor.randomize(pendulum, jax.random.PRNGKey(2), 4, {"actuator.delay": jaxmor.integers(0, 3)})
    states = jaxmor.init_states(models, axes, n_worlds=4)
    controls = {"actuator_torque": _step_input(2.0, 1)}
    batch = jax.jit(jax.vmap(lambda m, s: jaxmor.rollout(m, s, controls)[1], in_axes=(axes, 0)))(models, states)
    return models, batch, controls


def test_randomized_delays_batch_equals_each_world_alone(pendulum, drawn):
    models, batch, controls = drawn
    delays = np.asarray(models.actuators.delay)[:, 0]
    assert models.max_delay == 3 and np.all(delays == np.rint(delays)) and len(set(delays.tolist())) > 1
    for w, d in enumerate(delays):
        alone = jaxmor.with_command_delay(pendulum, int(d), max_delay=3)
        want = _run(alone, jaxmor.init_state(alone), controls)
        np.testing.assert_array_equal(np.asarray(batch.q[w]), np.asarray(want.q))
        np.testing.assert_array_equal(np.asarray(batch.u[w]), np.asarray(want.u))


def test_integer_draws_and_refusals(pendulum):
    models, _ = jaxmor.randomize(pendulum, jax.random.PRNGKey(0), 200, {"actuator.delay": jaxmor.uniform(0.0, 2.0)})
    assert set(np.asarray(models.actuators.delay).ravel().tolist()) == {0, 1, 2} and models.max_delay == 2
    with pytest.raises(ArgumentError, match=r"actuator.delay: .*drew -[12].0, which must be an integer >= 0"):
        jaxmor.randomize(pendulum, jax.random.PRNGKey(0), 2, {"actuator.delay": jaxmor.uniform(-2.0, 1.0)})
    with pytest.raises(ArgumentError, match="integers: low and high must be integers"):
        jaxmor.integers(0, 1.5)
    gains, axes = jaxmor.randomize(
        pendulum,
        jax.random.PRNGKey(1),
        3,
        {"controller.p_gain": jaxmor.uniform(1, 2), "controller.period": jaxmor.integers(1, 4)},
    )
    assert axes.actuators.controller.p_gain == 0 and np.asarray(gains.actuators.controller.period).min() >= 1


def test_with_command_delay_refuses_bad_values(pendulum):
    with pytest.raises(ArgumentError, match=r"steps must be in \[0, 1000\]"):
        jaxmor.with_command_delay(pendulum, -1)
    with pytest.raises(ArgumentError, match=r"steps must be an int or \(1,\) ints"):
        jaxmor.with_command_delay(pendulum, 1.5)
    with pytest.raises(ArgumentError, match=r"max_delay must be an int in \[the longest delay \(3\), 1000\]"):
        jaxmor.with_command_delay(pendulum, 3, max_delay=2)


def test_delays_are_bounded_before_anything_is_allocated(pendulum, tmp_path):
    """A delay beyond MAX_DELAY (1,000 steps) is refused where it is given, in the 64-bit integers it came in: 2^32 + 5
    steps no longer wraps to 5 in int32, and 10^8 steps no longer allocates 1.2 GB of buffers in init_state."""
    from jaxmor.actuation.definitions import MAX_DELAY

    assert MAX_DELAY == 1000
    for steps in (np.int64(2**32 + 5), 10**8, MAX_DELAY + 1):
        with pytest.raises(ArgumentError, match=r"steps must be in \[0, 1000\]"):
            jaxmor.with_command_delay(pendulum, steps)
    with pytest.raises(ArgumentError, match="max_delay"):
        jaxmor.with_command_delay(pendulum, 1, max_delay=MAX_DELAY + 1)
    at_most = jaxmor.with_command_delay(pendulum, MAX_DELAY)
    assert at_most.max_delay == MAX_DELAY
    path = tmp_path / "late.urdf"
    path.write_text(DRIVE_URDF.format(delay='delay="100000000"', controller=""))
    with pytest.raises(jaxmor.ModelError, match=r"delay of <actuator> must be an integer in \[0, 1000\]"):
        jaxmor.load_urdf(path)
    mjcf = tmp_path / "late.xml"
    mjcf.write_text(
        '<mujoco><worldbody><body><joint name="j" type="hinge"/><geom size="0.1"/></body></worldbody>'
        '<actuator><motor joint="j" delay="0.002" nsample="2147483647"/></actuator></mujoco>'
    )
    with pytest.raises(jaxmor.ModelError, match=r"nsample must be in \[0, 1000\]"):
        jaxmor.load_mjcf(mjcf)


# --------------------------------------------------------------------------------------------------
# The drive controller: a PID at a decimated rate, against its discrete law.

KP, KI, KD, PERIOD = 5.0, 4.0, 0.3, 3


def _reference_pid(q, u, targets, h, kp, ki, kd, period, bounds=None):
    """The torques a PID applies at each step, from the joint states ``q[k], u[k]`` at the step's start: updated on
    every ``period``-th step (``e = r - q``, ``I += period h e`` unless the output is clipped in the error's direction,
    ``tau = kp e + ki I + kd (0 - u)``), held in between; ``bounds[k]`` the region's ``(lower, upper)`` or ``None``.
    """
    integral, held, out, integrals = 0.0, 0.0, [], []
    for k in range(len(q)):
        if k % period == 0:
            e = targets[k] - q[k]
            trial = integral + period * h * e
            tau = kp * e + ki * trial + kd * (0.0 - u[k])
            if bounds is not None:
                lower, upper = bounds[k]
                if (tau > upper and e > 0) or (tau < lower and e < 0):
                    trial = integral
            integral = trial
            held = kp * e + ki * integral + kd * (0.0 - u[k])
        out.append(held)
        integrals.append(integral)
    return np.asarray(out), np.asarray(integrals)


@pytest.fixture(scope="module")
def pid_run(pendulum):
    model = jaxmor.with_drive_controller(pendulum, KP, KI, KD, PERIOD)
    state = jaxmor.init_state(model)
    targets = np.where(np.arange(90) < 45, 0.3, -0.2)[:, None]
    traj = _run(model, state, {"actuator_position_target": targets})
    q = np.concatenate([[0.0], np.asarray(traj.q)[:-1, 0]])
    u = np.concatenate([[0.0], np.asarray(traj.u)[:-1, 0]])
    return model, traj, q, u, targets[:, 0]


def test_decimated_pid_follows_its_discrete_law(pid_run):
    model, traj, q, u, targets = pid_run
    assert not np.asarray(traj.actuator_state.saturation).any()  # the region does not clip here
    h = float(model.opt.timestep)
    want, integral = _reference_pid(q, u, targets, h, KP, KI, KD, PERIOD)
    got = np.asarray(traj.actuator_state.motor_torque)[:, 0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(traj.controller_integral)[:, 0], integral, rtol=0, atol=1e-12)
    assert got[1] == got[0] and got[2] == got[0] and got[3] != got[0]  # held between updates


def test_motor_side_controller_scales_by_the_gear(pendulum):
    """On the motor side the law acts on ``G q`` and outputs motor torque: ``G^2`` times the joint law's."""
    gear = 3.0
    geared = pendulum.replace(actuators=pendulum.actuators.replace(gear_ratio=jnp.asarray([gear])))
    joint = jaxmor.with_drive_controller(geared, gear**2 * KP, side="joint")
    motor = jaxmor.with_drive_controller(geared, KP, side="motor")
    targets = {"actuator_position_target": np.full((5, 1), 0.05)}
    a, b = (_run(m, jaxmor.init_state(m), targets) for m in (joint, motor))
    np.testing.assert_allclose(np.asarray(a.controller_torque), np.asarray(b.controller_torque), rtol=1e-14)


def test_anti_windup_holds_the_integral_while_clipped(pendulum):
    kp, ki, kd, n = 60.0, 40.0, 4.0, 2
    model = jaxmor.with_drive_controller(pendulum, kp, ki, kd, n)
    state = jaxmor.init_state(model)
    steps = 1500
    targets = np.where(np.arange(steps) < 300, 2.5, 0.2)[:, None]  # far first (the region clips), then in reach
    traj = _run(model, state, {"actuator_position_target": targets})
    sat = np.asarray(traj.actuator_state.saturation)[:, 0] != 0
    integral = np.asarray(traj.controller_integral)[:, 0]
    q = np.asarray(traj.q)[:, 0]
    assert sat[:50].all()  # clipped from the start, towards the far target
    assert np.abs(integral[:50]).max() == 0.0  # the integrator held while clipped
    h = float(model.opt.timestep)
    windup = n * h * np.sum((targets[:300:n, 0] - np.concatenate([[0.0], q[:299:1]])[::n])[sat[:300:n]])
    assert windup > 0.5  # what it would have gathered without the rule
    assert np.abs(integral).max() < 0.05 * windup
    # it recovers at once: the first update after the target's return pushes towards it (a wound-up integral would
    # keep the output at the upper bound), and the joint settles towards the new target
    torque = np.asarray(traj.actuator_state.commanded_motor_torque)[:, 0]
    assert torque[299] > 0 and torque[300] < 0
    assert abs(q[-1] - 0.2) < abs(q[299] - 0.2) / 5
    # the reference law with the clip rule, from the recorded states and the recorded bounds
    lower, upper = _bounds_along(model, traj, state)
    qs = np.concatenate([[0.0], q[:-1]])
    us = np.concatenate([[0.0], np.asarray(traj.u)[:-1, 0]])
    _, want = _reference_pid(qs, us, targets[:, 0], h, kp, ki, kd, n, list(zip(lower, upper, strict=True)))
    np.testing.assert_allclose(integral, want, rtol=0, atol=1e-9)


def _bounds_along(model, traj, state0):
    """The region's bounds at the start of every step of a trajectory."""
    starts = jax.tree.map(lambda s0, t: jnp.concatenate([s0[None], t[:-1]]), state0, traj)
    lower, upper = jax.vmap(lambda s: jaxmor.actuator_torque_bounds(model, s))(starts)
    return np.asarray(lower)[:, 0], np.asarray(upper)[:, 0]


def test_controller_gains_get_gradients(pendulum):
    model = jaxmor.with_drive_controller(pendulum, KP, KI, KD, 2)
    state = jaxmor.init_state(model)
    targets = {"actuator_position_target": np.full((20, 1), 0.3)}

    def final_angle(kp):
        m = model.replace(actuators=model.actuators.replace(controller=model.actuators.controller.replace(p_gain=kp)))
        return jaxmor.rollout(m, state, targets)[0].q[0]

    grad = jax.grad(final_angle)(jnp.asarray([KP]))
    assert np.isfinite(grad).all() and float(grad[0]) > 0


def test_with_drive_controller_refuses_bad_values(pendulum):
    with pytest.raises(ArgumentError, match="p_gain must be finite and >= 0"):
        jaxmor.with_drive_controller(pendulum, -1.0)
    with pytest.raises(ArgumentError, match=r"period must be ints >= 1"):
        jaxmor.with_drive_controller(pendulum, 1.0, period=0)
    with pytest.raises(ArgumentError, match="side must be one of"):
        jaxmor.with_drive_controller(pendulum, 1.0, side="rotor")
    with pytest.raises(ArgumentError, match="unknown actuators"):
        jaxmor.with_drive_controller(pendulum, 1.0, actuators=["elbow"])


# --------------------------------------------------------------------------------------------------
# Files, jaxmor info, checkpoints.

DRIVE_URDF = """<robot name="drive">
  <link name="world"/>
  <link name="rod">
    <inertial><origin xyz="0 0 -0.5"/><mass value="1"/>
      <inertia ixx="0.08" ixy="0" ixz="0" iyy="0.08" iyz="0" izz="1e-4"/></inertial>
  </link>
  <joint name="hinge" type="continuous"><parent link="world"/><child link="rod"/><axis xyz="0 1 0"/>
    <limit effort="10" velocity="20"/></joint>
  <actuator joint="hinge" gear_ratio="2" {delay}>
    <motor resistance="1.0" torque_constant="0.5" back_emf_constant="0.5" bus_voltage="24" peak_torque="6"/>
    {controller}
  </actuator>
</robot>
"""
GOOD_CONTROLLER = '<controller p_gain="5" i_gain="4" d_gain="0.3" period="3" side="motor"/>'


@pytest.fixture(scope="module")
def drive_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("drive") / "drive.urdf"
    path.write_text(DRIVE_URDF.format(delay='delay="2"', controller=GOOD_CONTROLLER))
    return path


def test_actuator_file_gives_delay_and_controller(drive_file):
    model = jaxmor.load_urdf(drive_file)
    ctl = model.actuators.controller
    assert model.max_delay == 2 and np.asarray(model.actuators.delay).tolist() == [2]
    assert ctl.active == (True,) and ctl.motor_side == (True,) and np.asarray(ctl.period).tolist() == [3]
    assert [float(np.asarray(g)[0]) for g in (ctl.p_gain, ctl.i_gain, ctl.d_gain)] == [5.0, 4.0, 0.3]
    (defn,) = jaxmor.get_actuators(model)
    assert defn.delay == 2 and defn.controller == jaxmor.DriveControllerDefinition(5.0, 4.0, 0.3, 3, "motor")
    again = jaxmor.with_actuators(jaxmor.with_actuators(model, []), [defn])  # the definition rebuilds the same
    assert again.max_delay == 2 and again.actuators.controller == model.actuators.controller
    exported = jaxmor.export_actuators(model, jaxmor.init_state(model))
    assert 'delay="2"' in exported and '<controller p_gain="5.0"' in exported


@pytest.mark.parametrize(
    ("delay", "controller", "line", "message"),
    [
        ('delay="-1"', "", 9, r"delay of <actuator> must be an integer in \[0, 1000\], got '-1'"),
        ('delay="1.5"', "", 9, r"delay of <actuator> must be an integer in \[0, 1000\]"),
        ("", '<controller i_gain="1"/>', 11, "<controller> needs p_gain"),
        ("", '<controller p_gain="-1"/>', 11, "p_gain of <controller> must not be negative"),
        ("", '<controller p_gain="1" period="0"/>', 11, r"period of <controller> must be an integer >= 1"),
        ("", '<controller p_gain="1" side="rotor"/>', 11, "side must be one of"),
        ("", GOOD_CONTROLLER + GOOD_CONTROLLER, 11, "a second <controller>"),
        ("", '<controller p_gain="1" ki="2"/>', 11, "ki"),
    ],
)
def test_bad_drive_attributes_are_refused_with_file_and_line(tmp_path, delay, controller, line, message):
    path = tmp_path / "bad.urdf"
    path.write_text(DRIVE_URDF.format(delay=delay, controller=controller))
    with pytest.raises(jaxmor.ModelError, match=message) as err:
        jaxmor.load_urdf(path)
    assert str(err.value).startswith(f"{path}:{line}:")


def test_info_shows_the_drive_train(drive_file, capsys):
    from jaxmor.tools.cli import main

    assert main(["info", str(drive_file)]) == 0
    out = capsys.readouterr().out
    header, row = out.split("drive train")[1].splitlines()[1:3]
    assert header.split()[:4] == ["name", "delay[steps]", "delay[s]", "controller"]
    assert row.split() == ["hinge", "2", "0.002", "motor", "5", "4", "0.3", "3", "333.333"]


def test_checkpoint_round_trips_delay_and_controller(drive_file, tmp_path):
    model = jaxmor.load_urdf(drive_file)
    state = jaxmor.init_state(model)
    state = jaxmor.rollout(model, state, {"actuator_position_target": _step_input(0.3, 1, 5)})[0]
    assert int(state.step_count) == 5 and np.asarray(state.command_history).any()
    path = tmp_path / "drive.jaxmor"
    jaxmor.save_checkpoint(path, model, state)
    got_model, got_state = jaxmor.load_checkpoint(path)
    assert got_model.max_delay == 2 and got_model.actuators.controller.active == (True,)
    for want, got in ((model, got_model), (state, got_state)):
        assert jax.tree.structure(want) == jax.tree.structure(got)
        for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_locomotion_draws_command_delays_per_episode():
    from jaxmor import envs

    spec = envs.default_randomization()
    assert spec["actuator.delay"] == jaxmor.integers(0, 2)
    env = envs.Locomotion(randomization=spec, randomization_pool=8, seed=1, substeps=2)
    assert env._pool_model.max_delay == 2 and envs.Locomotion().model.max_delay == 0
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(3), 4))
    assert len(set(np.asarray(states.data.world.actuators.delay).ravel().tolist())) > 1
    step = jax.jit(jax.vmap(env.step))
    for _ in range(3):
        states = step(states, jnp.zeros((4, env.action_size)))
    assert np.isfinite(np.asarray(states.obs)).all() and np.isfinite(np.asarray(states.reward)).all()


def test_sysid_identifies_the_controller_gains(pendulum):
    """A joint-side PID stepping the pendulum to 0.5 rad (its target in the template state, the torque zero): the gains
    the motion shows are recovered from a start off by 40 %; a start at 0 is refused (the fit is in log space)."""
    truth = jaxmor.with_drive_controller(pendulum, p_gain=8.0, i_gain=2.0, d_gain=0.4, period=2)
    template = jaxmor.set_actuator_pd_targets(truth, jaxmor.init_state(truth), [0.5])
    recording = jaxmor.sysid.record(truth, template, np.zeros((300, 1)))
    guess = jaxmor.with_drive_controller(pendulum, p_gain=5.0, i_gain=3.0, d_gain=0.6, period=2)
    names = ["controller_p_gain", "controller_i_gain", "controller_d_gain"]
    result = jaxmor.sysid.fit(
        guess, recording, [pendulum.actuators.names[0]], names, state=template, window=300, iterations=40,
        progress=False,
    )  # fmt: skip
    for name, want in zip(names, (8.0, 2.0, 0.4), strict=True):
        np.testing.assert_allclose(result.values[name], [want], rtol=1e-5, err_msg=name)
    with pytest.raises(ArgumentError, match=r"controller_i_gain of .* starts at 0"):
        zero = jaxmor.with_drive_controller(pendulum, p_gain=5.0, d_gain=0.6, period=2)
        jaxmor.sysid.fit(zero, recording, [pendulum.actuators.names[0]], names, state=template, progress=False)
    with pytest.raises(ArgumentError, match=r"have none: give them one with jaxmor.with_drive_controller"):
        jaxmor.sysid.fit(pendulum, recording, [pendulum.actuators.names[0]], names, state=template, progress=False)


#: A hinge pendulum driven by a motor shortcut through a delayed control (MuJoCo 4.0's actuator delay).
DELAYED_MJCF = """
<mujoco model="delayed">
  <option timestep="0.002" integrator="implicitfast"/>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="m" joint="hinge" gear="2" {delay}/>
  </actuator>
</mujoco>
"""


@pytest.mark.parametrize(
    ("delay", "steps"),
    [
        ('delay="0.006" nsample="3"', 3),  # a whole number of steps
        ('delay="0.005" nsample="4"', 3),  # between steps, zero-order hold: the sample before, ceil(2.5)
        ('delay="0.008" nsample="2"', 2),  # the history holds 2 samples: MuJoCo delays by 2
        ('delay="0.004" nsample="2" interp="linear"', 2),  # on a step, every interpolation is the sample
        ('delay="0.00600000000001" nsample="5"', 4),  # 1e-14 s past 3 steps: the sample before (MuJoCo's 1e-15 s)
        ('delay="0.0005" nsample="2"', 1),  # under a step: one (MuJoCo reads the history before it writes it)
    ],
)
def test_an_mjcf_control_delay_matches_mujoco(delay, steps):
    """The same file in MuJoCo and jaxmor, a control sequence starting at 0 (MuJoCo's history starts at zero;
    jaxmor repeats the first command, the same here). MuJoCo's applied force is the control ``steps`` back, exactly;
    jaxmor's delay is ``steps``; the joint angles agree to 2e-5 rad over 60 steps (the integrators differ, MuJoCo's
    implicitfast and jaxmor's semi-implicit Kahan step: measured 7e-6), where the undelayed control is off by far
    more."""
    mujoco = pytest.importorskip("mujoco")
    text = DELAYED_MJCF.format(delay=delay)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        model = jaxmor.load_mjcf(text)
    assert int(model.affine.delay[0]) == steps and model.max_delay == steps
    ctrl = np.concatenate([[0.0], 0.8 * np.sin(np.arange(59) * 0.3)])
    mj_model = mujoco.MjModel.from_xml_string(text)
    data = mujoco.MjData(mj_model)
    angles, forces = [], []
    for c in ctrl:
        data.ctrl[0] = c
        mujoco.mj_step(mj_model, data)
        angles.append(data.qpos[0])
        forces.append(data.actuator_force[0])
    np.testing.assert_array_equal(forces, np.concatenate([np.zeros(steps), ctrl[: len(ctrl) - steps]]))
    traj = _run(model, jaxmor.init_state(model), {"ctrl": ctrl[:, None]})
    np.testing.assert_allclose(np.asarray(traj.q[:, 0]), angles, rtol=0, atol=2e-5)
    undelayed = jaxmor.with_command_delay(model, 0, ctrl_steps=0)
    moved = _run(undelayed, jaxmor.init_state(undelayed), {"ctrl": ctrl[:, None]})
    assert np.max(np.abs(np.asarray(moved.q[:, 0]) - angles)) > 20 * 2e-5  # the delay shows (measured ~1e-3)


def test_mujocos_zoh_delay_slips_a_step_with_its_clock():
    """Why the comparison above stops at 60 steps: MuJoCo 4.0 reads a delayed control from its history at
    ``data.time - delay``, matching sample times to 1e-15 s, and ``data.time`` is a running sum whose round-off
    outgrows that. A delay of exactly 5 steps of 0.01 s then reads 6 steps back from step 204 on (zero-order hold),
    or blends two samples with a weight off by round-off (linear: within 1e-9 of the 5-step sample here, measured
    4e-11). jaxmor's delay stays 5 steps (docs/design/drive-train.md)."""
    mujoco = pytest.importorskip("mujoco")
    ctrl = np.random.default_rng(0).normal(size=400)
    lags = {}
    for interp in ("zoh", "linear"):
        text = DELAYED_MJCF.format(delay=f'delay="0.05" nsample="7" interp="{interp}"')
        mj_model = mujoco.MjModel.from_xml_string(text.replace('timestep="0.002"', 'timestep="0.01"'))
        data, forces = mujoco.MjData(mj_model), []
        for c in ctrl:
            data.ctrl[0] = c
            mujoco.mj_step(mj_model, data)
            forces.append(data.actuator_force[0])
        lags[interp] = np.asarray(forces)[5:] - ctrl[:-5]
    slipped = np.flatnonzero(lags["zoh"] != 0) + 5
    assert slipped.size and 150 < slipped[0] < 300  # exact 5 steps for the first 1.5 s, then a step late at times
    np.testing.assert_allclose(lags["linear"], 0.0, atol=1e-9)


@pytest.mark.parametrize(
    ("delay", "message"),
    [
        ('delay="0.005" nsample="4" interp="linear"', r"2.5 time steps: interp='linear' would blend"),
        ('delay="0.004"', r"a delay needs a history: nsample >= 1"),
        ('delay="-0.004" nsample="2"', r"delay must be finite and >= 0"),
        ('delay="0.004" nsample="2" interp="spline"', r"interp must be one of"),
    ],
)
def test_an_unsupported_mjcf_delay_names_its_line(tmp_path, delay, message):
    path = tmp_path / "delayed.xml"
    path.write_text(DELAYED_MJCF.format(delay=delay))
    with pytest.raises(jaxmor.ModelError, match=message) as err:
        jaxmor.load_mjcf(path)
    assert str(err.value).startswith(f"{path}:11:")
