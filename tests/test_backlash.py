"""Backlash: the gear's dead band between a rotor and its joint (:mod:`jaxmor.actuation.backlash`).

References, written out here (float64, tests/conftest.py enables x64): a rotor of inertia ``J`` driven by a constant
torque ``tau`` across the play into a free load of inertia ``I`` (the turntable's disc about its vertical axis, so
gravity does no work) takes up at ``t1 = sqrt(2 (b/2) J / tau)`` with speed ``w1 = tau t1 / J``; the teeth meet
inelastically, both then turn at ``v = J w1 / (J + I)`` and accelerate at ``tau / (J + I)``, and the impact loses
``J w1^2 I / (2 (J + I))``. The angular momentum of rotor and load, ``I u + J w``, equals ``tau t`` whatever the
teeth do (they are internal). A passive rattle (spring on the joint, no torque) may not gain energy.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import TURNTABLE_URDF

import jaxmor
from jaxmor import ArgumentError

H = 1e-4  # [s], small enough that the one-step uncertainty of the take-up is far below the tolerances below
J_ROTOR = 0.002  # the turntable's rotor_inertia [kg m^2], moved to the rotor
I_DISC = 0.04  # the disc's izz [kg m^2]
WIDTH = 0.1  # [rad]
TAU = 0.5  # [Nm] at the gear output: far inside the region (15 Nm at rest, 9.5 Nm motor side at 50 rad/s)


@pytest.fixture(scope="module")
def turntable():
    return jaxmor.with_options(jaxmor.load_urdf(TURNTABLE_URDF), timestep=H)


@pytest.fixture(scope="module")
def geared(turntable):
    return jaxmor.with_backlash(turntable, width=WIDTH)


@pytest.fixture(scope="module")
def run():
    return jax.jit(lambda m, s, torque: jaxmor.rollout(m, s, torque)[1])


def _torque_run(run, model, torque):
    state = jaxmor.init_state(model)
    return run(model, state, jnp.asarray(torque, jnp.float64)[:, None])


def test_the_armature_moves_to_the_rotor(turntable, geared):
    assert float(turntable.dof_armature[0]) == J_ROTOR
    assert float(geared.dof_armature[0]) == 0.0
    assert geared.actuators.backlash.active == (True,)
    np.testing.assert_array_equal(geared.actuators.backlash.inertia, [J_ROTOR])
    np.testing.assert_array_equal(geared.actuators.backlash.width, [WIDTH])


@pytest.fixture(scope="module")
def take_up(geared, run):
    n = 1000
    return _torque_run(run, geared, np.full(n, TAU)), (np.arange(n) + 1) * H


def test_a_rigid_load_through_the_gap_follows_the_closed_form(take_up):
    traj, t = take_up
    t1 = np.sqrt(2 * (WIDTH / 2) * J_ROTOR / TAU)
    w1 = TAU * t1 / J_ROTOR
    v = J_ROTOR * w1 / (J_ROTOR + I_DISC)
    a = TAU / (J_ROTOR + I_DISC)
    after = np.clip(t - t1, 0.0, None)
    q_ref = v * after + 0.5 * a * after**2
    q, u = np.asarray(traj.q[:, 0]), np.asarray(traj.u[:, 0])
    # Before the take-up the joint feels nothing (the crossing step excluded).
    np.testing.assert_array_equal(q[t < t1 - H], 0.0)
    # After it: the discrete take-up is off by at most a step, and the semi-implicit rotor leads the continuous one
    # by h w / 2; each shifts the load's motion by about a step: |q - q_ref| <= 2 h max(u).
    assert np.max(np.abs(q - q_ref)) <= 2 * H * u.max()
    np.testing.assert_allclose(u[-1], v + a * (t[-1] - t1), rtol=1e-9)


def test_the_teeth_conserve_momentum_and_stay_engaged_without_bouncing(take_up):
    traj, t = take_up
    u, rate, play = np.asarray(traj.u[:, 0]), np.asarray(traj.backlash_rate[:, 0]), np.asarray(traj.backlash_play[:, 0])
    momentum = I_DISC * u + J_ROTOR * (u + rate)
    np.testing.assert_allclose(momentum, TAU * t, rtol=1e-12, atol=1e-15)
    t1 = np.sqrt(2 * (WIDTH / 2) * J_ROTOR / TAU)
    engaged = t > t1 + H
    # An impulse at take-up, then no chatter: the play sits at the edge and the rotor moves with the load.
    np.testing.assert_allclose(play[engaged], WIDTH / 2, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rate[engaged], 0.0, atol=1e-12)
    assert np.all(play <= WIDTH / 2 + 1e-12)


def test_the_take_up_loses_the_inelastic_impact_energy(take_up):
    traj, t = take_up
    u, rate, play = (np.asarray(x[:, 0]) for x in (traj.u, traj.backlash_rate, traj.backlash_play))
    q = np.asarray(traj.q[:, 0])
    rotor_angle = q + play  # the torque's work is tau times the rotor's angle (from 0)
    kinetic = 0.5 * I_DISC * u**2 + 0.5 * J_ROTOR * (u + rate) ** 2
    t1 = np.sqrt(2 * (WIDTH / 2) * J_ROTOR / TAU)
    w1 = TAU * t1 / J_ROTOR
    loss = 0.5 * J_ROTOR * w1**2 * I_DISC / (J_ROTOR + I_DISC)
    lost = TAU * rotor_angle[-1] - kinetic[-1]
    # Semi-implicit Euler's energy error under a constant torque is O(h tau w) per unit time: 1 % here.
    np.testing.assert_allclose(lost, loss, rtol=0.01)


def test_a_reversal_shows_the_dead_band(geared, run):
    n = 6000  # 0.6 s of a 2.5 Hz torque: the rotor crosses the play at every reversal
    t = np.arange(n) * H
    traj = _torque_run(run, geared, 0.2 * np.cos(2 * np.pi * 2.5 * t))
    play = np.asarray(traj.backlash_play[:, 0])
    rotor = np.asarray(traj.q[:, 0]) + play
    # The motor-joint angle spans the band, edge to edge, and never leaves it.
    assert play.max() == pytest.approx(WIDTH / 2, abs=1e-12)
    assert play.min() == pytest.approx(-WIDTH / 2, abs=1e-12)
    assert rotor.max() - rotor.min() > np.ptp(np.asarray(traj.q[:, 0]))  # the motor swings further than the joint
    # While the rotor crosses the play the joint coasts: no torque reaches it, its velocity holds.
    inside = (np.abs(play[1:]) < WIDTH / 2 - 1e-9) & (np.abs(play[:-1]) < WIDTH / 2 - 1e-9)
    assert inside.sum() > 100
    u = np.asarray(traj.u[:, 0])
    np.testing.assert_allclose(u[2:][inside[1:]], u[1:-1][inside[1:]], rtol=0, atol=1e-12)


def test_a_passive_rattle_never_gains_energy(turntable, run):
    stiffness = 2.0  # [Nm/rad], a spring on the joint: the load swings, the free rotor rattles in the play
    model = jaxmor.with_backlash(turntable.replace(dof_stiffness=jnp.array([stiffness])), width=WIDTH)
    model = jaxmor.with_options(model, timestep=1e-3)
    state = jaxmor.init_state(model, u=np.array([1.0]))
    traj = run(model, state, jnp.zeros((3000, 1)))
    q, u, rate = (np.asarray(x[:, 0]) for x in (traj.q, traj.u, traj.backlash_rate))
    energy = 0.5 * I_DISC * u**2 + 0.5 * stiffness * q**2 + 0.5 * J_ROTOR * (u + rate) ** 2
    start = 0.5 * (I_DISC + J_ROTOR) * 1.0**2
    assert np.all(np.diff(np.concatenate([[start], energy])) <= 1e-12 * start)
    assert energy[-1] < 0.99 * start  # the impacts dissipate


def test_zero_width_is_a_rigid_gear(turntable, run):
    n = 300
    torque = 0.5 * np.sin(np.arange(n) * 0.05)
    rigid = _torque_run(run, turntable, torque)
    geared = _torque_run(run, jaxmor.with_backlash(turntable, width=0.0), torque)
    np.testing.assert_allclose(geared.q, rigid.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(geared.u, rigid.u, rtol=0, atol=1e-10)
    np.testing.assert_allclose(geared.actuator_state.motor_torque, rigid.actuator_state.motor_torque, atol=1e-10)
    np.testing.assert_allclose(geared.backlash_play, 0.0, atol=1e-12)


def _with_width(model, width):
    """``model`` with its backlash width replaced by ``width`` (a number, possibly traced)."""
    backlash = model.actuators.backlash.replace(width=jnp.reshape(jnp.asarray(width, jnp.float64), (1,)))
    return model.replace(actuators=model.actuators.replace(backlash=backlash))


def test_per_world_widths_batch_equals_each_alone(geared, run):
    widths = np.array([0.0, 0.03, 0.1])
    models = jax.vmap(lambda w: _with_width(geared, w))(jnp.asarray(widths))
    torque = jnp.full((200, 1), TAU)
    state = jaxmor.init_state(geared)
    batch = jax.jit(jax.vmap(lambda m: jaxmor.rollout(m, state, torque)[1]))(models)
    for i, w in enumerate(widths):
        alone = run(_with_width(geared, w), state, torque)
        np.testing.assert_array_equal(batch.q[i], alone.q)
        np.testing.assert_array_equal(batch.backlash_play[i], alone.backlash_play)


def test_the_final_angle_is_differentiable_in_the_width(geared):
    torque = jnp.full((400, 1), TAU)
    state = jaxmor.init_state(geared)

    def final_angle(width):
        return jaxmor.rollout(_with_width(geared, width), state, torque)[0].q[0]

    grad = jax.jit(jax.grad(final_angle))(WIDTH)
    eps = 1e-6
    central = (jax.jit(final_angle)(WIDTH + eps) - jax.jit(final_angle)(WIDTH - eps)) / (2 * eps)
    # Closed form: dq/db at t after take-up, q = v (t - t1) + a (t - t1)^2 / 2 with t1 ~ sqrt(b): negative.
    assert float(grad) < 0
    np.testing.assert_allclose(grad, central, rtol=1e-4)


def test_a_checkpoint_keeps_the_backlash_and_the_play(geared, run, tmp_path):
    state = jaxmor.init_state(geared)
    mid = run(geared, state, jnp.full((150, 1), TAU))
    state = jax.tree.map(lambda x: x[-1], mid)
    path = tmp_path / "backlash.npz"
    jaxmor.save_checkpoint(path, geared, state)
    model, loaded = jaxmor.load_checkpoint(path)
    assert model.actuators.backlash.active == (True,)
    torque = jnp.full((100, 1), TAU)
    np.testing.assert_array_equal(run(model, loaded, torque).q, run(geared, state, torque).q)


def test_a_motor_side_controller_reads_the_rotor(geared):
    model = jaxmor.with_drive_controller(geared, p_gain=0.01, side="motor")
    state = jaxmor.init_state(model).replace(backlash_play=jnp.array([0.03]))
    stepped = jaxmor.step(model, state)
    gear = 10.0
    # First update: motor-side error G (target - (q + s)) = -0.3 rad of motor angle, torque G kp error at the output.
    np.testing.assert_allclose(stepped.controller_torque, [gear * 0.01 * gear * (0.0 - 0.03)], rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"width": -0.1}, r"width must be finite and >= 0"),
        ({"width": np.nan}, r"width must be finite and >= 0"),
        ({"width": [0.1, 0.2]}, r"width must be a number or \(1,\) numbers"),
        ({"width": 0.1, "inertia": 0.0}, r"inertia must be finite and > 0"),
        ({"width": 0.1, "actuators": ["nope"]}, r"unknown actuators \['nope'\]"),
        ({"width": 0.1, "actuators": "spin"}, r"unknown actuators 'spin'"),
    ],
)
def test_bad_arguments_are_refused(turntable, kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        jaxmor.with_backlash(turntable, **kwargs)


def test_a_joint_without_armature_needs_an_inertia(turntable):
    bare = turntable.replace(dof_armature=jnp.zeros(1))
    with pytest.raises(ArgumentError, match=r"no armature to move to the rotor; pass inertia="):
        jaxmor.with_backlash(bare, width=0.1)
    assert jaxmor.with_backlash(bare, width=0.1, inertia=1e-3).actuators.backlash.active == (True,)


def test_coupled_knees_read_their_rotors_through_the_transmission():
    """The quadruped's knee motors are coupled to the hip joints (``T`` has a hip column): with a rigid gear (width 0)
    every rotor turns with its gear output ``T_a u / G_a``, so each motor's speed is the transmission's, ``T u``.
    200 solver sweeps converge the teeth rows with the feet's contacts to round-off (the default 20 leave rates of
    about 1e-5 rad/s: measured)."""
    quadruped = jaxmor.envs.Locomotion().model
    assert quadruped.actuators.coupling_actuator  # the premise
    model = jaxmor.with_backlash(jaxmor.with_options(quadruped, solver_iterations=200), width=0.0)
    state = jaxmor.init_state(model, q=jaxmor.robots.quadruped_standing_q(model))
    state = jaxmor.set_actuator_pd_gains(model, state, np.full(12, 30.0), np.full(12, 0.5))
    state = jaxmor.set_actuator_pd_targets(
        model, state, state.q[7:] + 0.1
    )  # the 12 leg joints after the base's 7 coordinates
    traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=60)[1])(state)
    transmission = np.asarray(model.actuators.transmission)
    speeds = np.einsum("an,tn->ta", transmission, np.asarray(traj.u))
    assert np.abs(speeds).max() > 1.0  # the legs move
    np.testing.assert_allclose(traj.actuator_state.motor_speed[1:], speeds[:-1], rtol=0, atol=1e-8)
    np.testing.assert_allclose(traj.backlash_play, 0.0, atol=1e-9)


def test_randomize_draws_widths_and_inertias_per_world(geared, turntable):
    spec = {"backlash.width": jaxmor.uniform(0.0, 0.02), "backlash.inertia": jaxmor.scale(0.5, 2.0)}
    models, axes = jaxmor.randomize(geared, jax.random.PRNGKey(0), 5, spec)
    widths, inertias = np.asarray(models.actuators.backlash.width), np.asarray(models.actuators.backlash.inertia)
    assert widths.shape == (5, 1) and np.all((widths >= 0) & (widths <= 0.02)) and np.ptp(widths) > 0
    assert np.all((inertias >= 0.5 * J_ROTOR) & (inertias <= 2 * J_ROTOR))
    assert axes.actuators.backlash.width == 0 and axes.actuators.backlash.active == (True,)
    with pytest.raises(ArgumentError, match=r"backlash.width: actuators \['spin'\] have no backlash"):
        jaxmor.randomize(turntable, jax.random.PRNGKey(0), 2, {"backlash.width": jaxmor.uniform(0.0, 0.01)})
    with pytest.raises(ArgumentError, match=r"backlash.inertia.*positive|> 0"):
        jaxmor.randomize(geared, jax.random.PRNGKey(0), 2, {"backlash.inertia": jaxmor.uniform(-1.0, 0.0)})


def test_locomotion_draws_backlash_per_episode_and_none_without_randomization():
    from jaxmor import envs

    spec = envs.default_randomization()
    assert spec["backlash.width"] == jaxmor.uniform(0.0, 0.01)
    env = envs.Locomotion(randomization=spec, randomization_pool=8, seed=1, substeps=2)
    assert all(env._pool_model.actuators.backlash.active)
    assert not any(envs.Locomotion().model.actuators.backlash.active)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(3), 4))
    widths = np.asarray(states.data.world.actuators.backlash.width)
    assert widths.shape == (4, 12) and np.all((widths >= 0) & (widths <= 0.01)) and np.ptp(widths) > 0
    step = jax.jit(jax.vmap(env.step))
    for _ in range(5):
        states = step(states, jnp.zeros((4, env.action_size)))
    assert np.isfinite(np.asarray(states.obs)).all() and np.isfinite(np.asarray(states.reward)).all()
    play = np.asarray(states.sim.backlash_play)
    assert np.all(np.abs(play) <= widths / 2 + 1e-6) and np.any(play != 0)


def _turntable_with(tmp_path, actuator_children: str, rotor_inertia: str = "0.002"):
    """A copy of the turntable whose ``<actuator>`` element holds ``actuator_children``; the model and its URDF."""
    folder = tmp_path / "turntable"
    shutil.copytree(Path(TURNTABLE_URDF).parent, folder)
    urdf = folder / "turntable.urdf"
    text = urdf.read_text()
    text = text.replace('rotor_inertia="0.002"', f'rotor_inertia="{rotor_inertia}"')
    text = text.replace(
        '<actuator joint="spin" file="spin_actuator.xml"/>',
        f'<actuator joint="spin" file="spin_actuator.xml">\n    {actuator_children}\n  </actuator>',
    )
    urdf.write_text(text)
    return urdf


def test_an_actuator_file_gives_the_backlash(tmp_path, geared):
    model = jaxmor.load_urdf(_turntable_with(tmp_path, '<backlash width="0.1"/>'))
    model = jaxmor.with_options(model, timestep=H)
    assert model.actuators.backlash.active == (True,)
    np.testing.assert_array_equal(model.dof_armature, geared.dof_armature)
    for a, b in zip(jax.tree.leaves(model.actuators.backlash), jax.tree.leaves(geared.actuators.backlash), strict=True):
        np.testing.assert_array_equal(a, b)
    explicit = jaxmor.load_urdf(_turntable_with(tmp_path / "b", '<backlash width="0.05" inertia="0.001"/>'))
    assert float(explicit.actuators.backlash.inertia[0]) == 0.001 and float(explicit.dof_armature[0]) == J_ROTOR
    # Exported and read back onto the model it came from: the same backlash.
    state = jaxmor.init_state(model)
    again, _ = jaxmor.import_actuators(model, state, jaxmor.export_actuators(model, state))
    assert again.actuators.backlash.active == (True,)
    np.testing.assert_array_equal(again.actuators.backlash.width, [WIDTH])
    np.testing.assert_array_equal(again.actuators.backlash.inertia, [J_ROTOR])
    np.testing.assert_array_equal(again.dof_armature, [0.0])


@pytest.mark.parametrize(
    ("children", "rotor_inertia", "message"),
    [
        ("<backlash/>", "0.002", r"<backlash> needs width"),
        ('<backlash width="-0.1"/>', "0.002", r"width"),
        ('<backlash width="0.1" inertia="0"/>', "0.002", r"inertia must be finite and > 0"),
        ('<backlash width="0.1"/><backlash width="0.2"/>', "0.002", r"second <backlash>"),
        ('<backlash width="0.1" gap="1"/>', "0.002", r"gap"),
        ('<backlash width="0.1"/>', "0", r"no armature to move to the rotor"),
    ],
)
def test_a_bad_backlash_element_names_its_file_and_line(tmp_path, children, rotor_inertia, message):
    urdf = _turntable_with(tmp_path, children, rotor_inertia)
    with pytest.raises(jaxmor.ModelError, match=message) as error:
        jaxmor.load_urdf(urdf)
    assert "turntable.urdf" in str(error.value) and re.search(r":\d+", str(error.value))


def test_info_shows_the_backlash(tmp_path, capsys):
    from jaxmor.tools.cli import main

    assert main(["info", str(_turntable_with(tmp_path, '<backlash width="0.01"/>'))]) == 0
    out = capsys.readouterr().out
    header, row = out.split("\nbacklash")[1].splitlines()[1:3]
    assert header.split()[:3] == ["name", "width[rad", "or"]
    assert row.split() == ["spin", "0.01", "0.572958", "0.002"]


@pytest.fixture(scope="module")
def reversing_recording(turntable):
    """0.4 s of a 3 Hz torque from rest through a 0.04 rad play (time step 1 ms): two reversals."""
    model = jaxmor.with_options(turntable, timestep=1e-3)
    truth = jaxmor.with_backlash(model, width=0.04)
    torque = 0.3 * np.sin(2 * np.pi * 3 * np.arange(400) * 1e-3)[:, None]
    return model, jaxmor.sysid.record(truth, jaxmor.init_state(truth), torque)


def test_sysid_finds_the_width_from_reversals(reversing_recording):
    model, recording = reversing_recording
    guess = jaxmor.with_backlash(model, width=0.06)
    result = jaxmor.sysid.fit(guess, recording, ["spin"], ["backlash_width"], window=400, iterations=30, progress=False)
    # Noise-free data from the same simulator: the fit lands on the truth to the solver's round-off.
    np.testing.assert_allclose(result.values["backlash_width"], [0.04], rtol=1e-6)
    assert result.identifiable["backlash_width"].all()


@pytest.mark.slow  # about a minute on 2 cores; the width's fit is the test above
def test_sysid_reports_a_width_that_still_data_cannot_show(reversing_recording):
    model = jaxmor.with_backlash(reversing_recording[0], width=0.04)
    still = jaxmor.sysid.record(model, jaxmor.init_state(model), np.zeros((50, 1)))
    result = jaxmor.sysid.fit(model, still, ["spin"], ["backlash_width"], window=50, iterations=2, progress=False)
    assert not result.identifiable["backlash_width"].any()
    assert any("not identifiable" in f for f in result.findings)


def test_sysid_refuses_backlash_parameters_without_backlash(reversing_recording):
    model, recording = reversing_recording
    with pytest.raises(ArgumentError, match=r"actuators \[.spin.\] have none"):
        jaxmor.sysid.fit(model, recording, ["spin"], ["backlash_width"], window=400, progress=False)


def test_the_mjcf_extension_gives_the_backlash(tmp_path):
    """The MJCF extension (``<custom><text name="jaxmor:actuators" data="FILE"/>``) reads the same actuator
    files: a ``<backlash>`` there moves the joint's ``armature`` to the rotor."""
    (tmp_path / "motors.xml").write_text(
        '<actuators><actuator joint="hinge" name="m" gear_ratio="10"><motor resistance="0.5" torque_constant="0.1"'
        ' velocity_constant="10" bus_voltage="24" peak_torque="2"/><backlash width="0.02"/></actuator></actuators>'
    )
    (tmp_path / "arm.xml").write_text(
        '<mujoco><worldbody><body name="arm"><joint name="hinge" type="hinge" axis="0 0 1" armature="0.003"/>'
        '<geom type="box" size=".1 .02 .02" mass="1"/></body></worldbody>'
        '<custom><text name="jaxmor:actuators" data="motors.xml"/></custom></mujoco>'
    )
    model = jaxmor.load_mjcf(tmp_path / "arm.xml")
    assert model.actuators.backlash.active == (True,)
    np.testing.assert_array_equal(model.actuators.backlash.width, [0.02])
    np.testing.assert_array_equal(model.actuators.backlash.inertia, [0.003])
    np.testing.assert_array_equal(model.dof_armature, [0.0])


def test_a_world_file_keeps_a_file_given_backlash_and_the_play(tmp_path):
    model = jaxmor.load_urdf(_turntable_with(tmp_path, '<backlash width="0.1"/>'))
    state = jaxmor.set_actuator_torques(model, jaxmor.init_state(model), [TAU])
    run = jax.jit(lambda m, s: jaxmor.rollout(m, s, n_steps=30))
    state, _ = run(model, state)
    assert float(state.backlash_play[0]) != 0.0
    jaxmor.export_world(model, state, tmp_path / "world.xml")
    loaded_model, loaded = jaxmor.load_world(tmp_path / "world.xml")
    assert loaded_model.actuators.backlash.active == (True,)
    np.testing.assert_array_equal(loaded.backlash_play, state.backlash_play)
    np.testing.assert_array_equal(run(loaded_model, loaded)[1].q, run(model, state)[1].q)
    edited = jaxmor.with_backlash(jaxmor.load_urdf(_turntable_with(tmp_path / "b", "")), width=0.1)
    with pytest.raises(ArgumentError, match="dof_armature differs"):  # set in Python: a checkpoint holds it
        jaxmor.export_world(edited, jaxmor.init_state(edited), tmp_path / "edited.xml")
