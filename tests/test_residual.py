"""The learned torque residual (``jaxmor.actuation.residual``): ``tau_m = clip_region(tau_cmd + f_theta(history))``.

The rig is the shipped turntable (one continuous joint, gear 10, peak 1.5 Nm at the motor), float64. Oracles:
the step without a residual (a network whose output layer is zero must step bitwise as it), the trajectory's own
commands, speeds and angles for the history (read off the rollout, not computed by the residual code), the motor
region's bounds (``actuator_torque_bounds`` before each step) for the clip, and central differences for the
gradient. The fit (slow tier) learns a LuGre friction with a Stribeck peak, which the fitted model lacks, from
synthetic recordings, and is judged on held-out recordings against the physics-only fit.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import TURNTABLE_URDF

import jaxmor
from jaxmor import ArgumentError, sysid

GEAR = 10.0
STEPS = 60


def _commands(seed: int, steps: int, dt: float) -> np.ndarray:
    """(steps, 1) a sum of three sines of random amplitude (0.5-2.5 Nm at the output), frequency and phase."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps) * dt
    parts = [rng.uniform(0.5, 2.5) * np.sin(2 * np.pi * rng.uniform(0.2, 2.0) * t + rng.uniform(0, 6)) for _ in "abc"]
    return np.sum(parts, axis=0)[:, None]


@pytest.fixture(scope="module")
def rig():
    model = jaxmor.load_urdf(TURNTABLE_URDF)
    net = jaxmor.residual_network(model, jax.random.key(0), history=3, width=8, layers=2)
    rng = np.random.default_rng(1)
    acting = net.replace(w_out=jnp.asarray(rng.normal(size=net.w_out.shape)), b_out=jnp.asarray(0.05))
    torques = jnp.asarray(_commands(0, STEPS, float(model.opt.timestep)))
    run = jax.jit(lambda m, s, t: jaxmor.rollout(m, s, t))
    return {"model": model, "net": net, "acting": acting, "torques": torques, "run": run}


def test_a_network_with_a_zero_output_layer_steps_bitwise_as_no_residual(rig):
    model, run = rig["model"], rig["run"]
    learned = jaxmor.with_residual(model, rig["net"])  # residual_network starts with w_out = 0, b_out = 0
    _, plain = run(model, jaxmor.init_state(model), rig["torques"])
    _, with_net = run(learned, jaxmor.init_state(learned), rig["torques"])
    for name in ("q", "u", "actuator_state"):
        for a, b in zip(jax.tree.leaves(getattr(plain, name)), jax.tree.leaves(getattr(with_net, name)), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_history_holds_the_previous_steps_commands_speeds_and_angles(rig):
    model = jaxmor.with_residual(rig["model"], rig["acting"])
    start = jaxmor.init_state(model, q=jnp.array([0.3]), u=jnp.array([1.5]))
    assert start.actuator_history.shape == (1, 2, 3)
    held = np.array([0.0, GEAR * 1.5, GEAR * 0.3])  # no command, the start's speed and angle, held
    np.testing.assert_array_equal(np.asarray(start.actuator_history[0]), [held, held])
    _, traj = rig["run"](model, start, rig["torques"])
    q = np.concatenate([[0.3], np.asarray(traj.q[:, 0])])
    u = np.concatenate([[1.5], np.asarray(traj.u[:, 0])])
    tau = np.asarray(rig["torques"][:, 0])
    for k in (5, 30, STEPS - 1):  # after step k (0-based) the latest entry is step k's start, then step k - 1's
        got = np.asarray(traj.actuator_history[k, 0])
        want = [[tau[j] / GEAR, GEAR * u[j], GEAR * q[j]] for j in (k, k - 1)]
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


def test_the_region_clips_the_command_plus_the_residual(rig):
    model = jaxmor.with_residual(rig["model"], rig["acting"].replace(b_out=jnp.asarray(3.0)))  # 3 x 12 Nm offset
    start = jaxmor.init_state(model)
    _, traj = rig["run"](model, start, rig["torques"])
    before = jax.tree.map(lambda s, t: jnp.concatenate([s[None], t[:-1]]), start, traj)
    lower, upper = jax.vmap(lambda s: jaxmor.actuator_torque_bounds(model, s))(before)
    applied = GEAR * np.asarray(traj.actuator_state.motor_torque)
    commanded = GEAR * np.asarray(traj.actuator_state.commanded_motor_torque)
    assert np.all(applied <= np.asarray(upper) + 1e-12) and np.all(applied >= np.asarray(lower) - 1e-12)
    assert np.all(commanded - np.asarray(rig["torques"]) > 30.0)  # the residual asked for far more...
    np.testing.assert_allclose(applied, np.asarray(upper), rtol=1e-12)  # ...and got the region's edge
    assert np.all(np.asarray(traj.actuator_state.saturation) != int(jaxmor.MotorSaturation.NONE))


def test_networks_batched_per_world_equal_each_world_alone(rig):
    base = jaxmor.with_residual(rig["model"], rig["acting"])

    def with_w_out(w_out):
        net = base.actuators.residual.replace(w_out=w_out)
        return base.replace(actuators=base.actuators.replace(residual=net))

    w_outs = jnp.array([0.5, 1.0, 2.0])[:, None] * base.actuators.residual.w_out
    start = jaxmor.init_state(base)
    batch = jax.jit(jax.vmap(lambda w: jaxmor.rollout(with_w_out(w), start, rig["torques"])[0]))(w_outs)
    for k in range(3):
        alone = rig["run"](with_w_out(w_outs[k]), start, rig["torques"])[0]
        np.testing.assert_allclose(np.asarray(batch.q[k]), np.asarray(alone.q), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(batch.u[k]), np.asarray(alone.u), rtol=1e-12, atol=1e-12)
    assert float(jnp.abs(batch.u[0] - batch.u[2]).max()) > 1e-3  # the worlds differ


def test_the_gradient_through_the_weights_matches_central_differences(rig):
    model = jaxmor.with_residual(rig["model"], rig["acting"])
    start = jaxmor.init_state(model)
    torques = rig["torques"][:20]

    def loss(w_out):
        m = model.replace(actuators=model.actuators.replace(residual=model.actuators.residual.replace(w_out=w_out)))
        return jaxmor.rollout(m, start, torques)[0].u[0]

    w = model.actuators.residual.w_out
    grad = np.asarray(jax.jit(jax.grad(loss))(w))
    value = jax.jit(loss)
    h = 1e-6
    for i in (0, 3, 7):
        e = jnp.zeros_like(w).at[i].set(h)
        fd = (float(value(w + e)) - float(value(w - e))) / (2 * h)
        assert abs(grad[i] - fd) <= 1e-6 * max(abs(fd), 1e-3), (i, grad[i], fd)
    assert np.any(np.abs(grad) > 1e-6)


def test_a_checkpoint_keeps_the_network_and_the_history(rig, tmp_path):
    model = jaxmor.with_residual(rig["model"], rig["acting"])
    state, _ = rig["run"](model, jaxmor.init_state(model), rig["torques"][:10])
    jaxmor.save_checkpoint(tmp_path / "net.jaxmor", model, state)
    model2, state2 = jaxmor.load_checkpoint(tmp_path / "net.jaxmor")
    assert model2.actuators.residual.history == 3 and model2.actuators.residual.active == (True,)
    a, b = jaxmor.step(model, state), jaxmor.step(model2, state2)
    np.testing.assert_array_equal(np.asarray(a.u), np.asarray(b.u))
    np.testing.assert_array_equal(np.asarray(a.actuator_history), np.asarray(b.actuator_history))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda n: n.replace(w_in=n.w_in[:-1]), r"residual.w_in must have shape \(9, W\)"),
        (lambda n: n.replace(b_hidden=jnp.zeros((1, 7))), r"residual.b_hidden must have shape \(1, 8\)"),
        (lambda n: n.replace(w_out=n.w_out.at[2].set(jnp.nan)), "residual.w_out must be finite"),
        (lambda n: n.replace(input_scale=jnp.array([1.0, 0.0, 1.0])), "input_scale must be positive"),
        (lambda n: n.replace(active=(True, False)), r"one bool per motor actuator \(1\)"),
        (lambda n: n.replace(history=0), "residual.history must be a positive int"),
        (lambda n: "net", "must be a ResidualNetwork"),
    ],
)
def test_with_residual_refuses_a_network_that_does_not_fit(rig, change, message):
    with pytest.raises(ArgumentError, match=message):
        jaxmor.with_residual(rig["model"], change(rig["net"]))


def test_the_residual_is_refused_where_it_cannot_go(rig, tmp_path):
    model = rig["model"]
    with pytest.raises(ArgumentError, match="history must be a positive int"):
        jaxmor.residual_network(model, jax.random.key(0), history=0)
    with pytest.raises(ArgumentError, match="actuators must be a non-empty list"):
        jaxmor.residual_network(model, jax.random.key(0), actuators="spin")
    with pytest.raises(ArgumentError, match="no learned residual"):
        sysid.fit(model, sysid.record(model, jaxmor.init_state(model), np.zeros((5, 1))), ["spin"], ["residual"])
    learned = jaxmor.with_residual(model, rig["net"])
    with pytest.raises(ArgumentError, match="learned residual"):
        jaxmor.combine(learned, model, prefix="b_")
    assert not jaxmor.with_residual(learned, None).actuators.residual.enabled


@pytest.fixture(scope="module")
def lugre_fits():
    """Recordings of the turntable with LuGre friction (Stribeck peak 1.2 Nm over a 0.3 Nm Coulomb level, at the
    output), which the fitted models lack; the physics-only fit (output friction and damping) and the joint fit
    with a residual (3 steps of history, one hidden layer of 8)."""
    base = jaxmor.load_urdf(TURNTABLE_URDF)
    (spin,) = jaxmor.get_actuators(base)
    truth = jaxmor.with_actuators(base, [dataclasses.replace(spin, lugre=jaxmor.LugreModel(1e4, 2.0, 0.3, 1.2, 1.0))])
    start = dataclasses.replace(spin, output_friction=0.2, output_damping=0.01)
    physics = jaxmor.with_actuators(base, [start])
    dt = float(base.opt.timestep)
    s0 = jaxmor.init_state(truth)
    train = [sysid.record(truth, s0, _commands(k, 400, dt)) for k in range(4)]
    held_out = [sysid.record(truth, s0, _commands(10 + k, 400, dt)) for k in range(2)]
    options = {"use_currents": False, "progress": False, "window": 20}
    physical = sysid.fit(physics, train, ["spin"], ["output_friction", "output_damping"], iterations=30, **options)
    learned = jaxmor.with_residual(physics, jaxmor.residual_network(physics, jax.random.key(0), history=3, width=8))
    fitted = ["output_friction", "output_damping", "residual"]
    joint = sysid.fit(learned, train, ["spin"], fitted, iterations=60, **options)

    def error(model):
        residuals, _, size = sysid.residual_function(
            model, held_out, ["spin"], ["output_damping"], window=20, use_currents=False
        )  # motion only: the residual acts as motor torque, so its current includes what it stands in for
        r = residuals(jnp.zeros(size))
        return float(jnp.sqrt(jnp.mean(r * r)))

    return {"physical": physical, "joint": joint, "error": error, "held_out": held_out}


@pytest.mark.slow
def test_a_fitted_residual_predicts_held_out_recordings_5x_better_than_the_physics_fit(lugre_fits):
    physical, joint = lugre_fits["physical"].model, lugre_fits["joint"].model
    without, with_net = lugre_fits["error"](physical), lugre_fits["error"](joint)
    assert with_net * 5.0 <= without, (with_net, without)
    # The report says what the residual makes unidentifiable: it can stand in for friction and damping.
    findings = " ".join(lugre_fits["joint"].findings)
    assert "spin: not identifiable at all" in findings and "output_friction" in findings
    assert lugre_fits["joint"].identifiable["residual"].shape == lugre_fits["joint"].values["residual"].shape


@pytest.mark.slow
def test_every_prediction_of_the_fitted_model_stays_in_the_region(lugre_fits):
    model = lugre_fits["joint"].model
    for rec in lugre_fits["held_out"]:
        start = jaxmor.init_state(model, q=jnp.asarray(rec.q[0]), u=jnp.asarray(rec.u[0]))
        _, traj = jaxmor.rollout(model, start, jnp.asarray(rec.torque))
        before = jax.tree.map(lambda s, t: jnp.concatenate([s[None], t[:-1]]), start, traj)
        lower, upper = jax.vmap(lambda s: jaxmor.actuator_torque_bounds(model, s))(before)
        applied = GEAR * np.asarray(traj.actuator_state.motor_torque)
        assert np.all(applied <= np.asarray(upper) + 1e-12) and np.all(applied >= np.asarray(lower) - 1e-12)


def test_a_world_file_saves_and_loads_the_residual(rig, tmp_path):
    """``export_world`` writes the weights beside the world file (``<residual file=.../>``), ``load_world`` reads them
    back: the loaded world steps bitwise as the one saved, mid-run (the residual's history is in the state)."""
    learned = jaxmor.with_residual(rig["model"], rig["acting"])
    run, torques = rig["run"], rig["torques"]
    state, _ = run(learned, jaxmor.init_state(learned), torques[:20])
    path = tmp_path / "turntable_world.xml"
    jaxmor.export_world(learned, state, path)
    assert (tmp_path / "turntable_world.residual.npz").is_file()
    model, loaded = jaxmor.load_world(path)
    assert model.actuators.residual.active == (True,) and model.actuators.residual.history == 3
    np.testing.assert_array_equal(loaded.actuator_history, state.actuator_history)
    _, want = run(learned, state, torques[20:])
    _, got = run(model, loaded, torques[20:])
    np.testing.assert_array_equal(got.q, want.q)
    np.testing.assert_array_equal(got.actuator_state.motor_torque, want.actuator_state.motor_torque)


def test_a_bad_residual_file_names_the_world_file_and_line(rig, tmp_path):
    learned = jaxmor.with_residual(rig["model"], rig["acting"])
    path = tmp_path / "w.xml"
    jaxmor.export_world(learned, jaxmor.init_state(learned), path)
    text = path.read_text()
    line = text[: text.index("<residual")].count("\n") + 1
    weights = tmp_path / "w.residual.npz"
    good = dict(np.load(weights))
    cases = [
        (text.replace('file="w.residual.npz"', 'file="../w.residual.npz"'), None, "inside the world file's folder"),
        (text, {**good, "actuators": np.asarray(["elbow"])}, r"acts on actuators \['elbow'\]"),
        (text, {**good, "w_in": good["w_in"][:2]}, r"residual.w_in must have shape"),
        (text, {k: v for k, v in good.items() if k != "b_out"}, r"a residual file holds"),
    ]
    for world, arrays, message in cases:
        path.write_text(world)
        if arrays is not None:
            np.savez(weights, **arrays)
        with pytest.raises(jaxmor.ModelError, match=message) as err:
            jaxmor.load_world(path)
        assert str(err.value).startswith(f"{path}:{line}:")
    weights.write_bytes(b"not a zip")
    path.write_text(text)
    with pytest.raises(jaxmor.ModelError, match="is not a residual weights file"):
        jaxmor.load_world(path)
