"""System identification of motor constants (``jaxmor.sysid``) on the quadruped's hip and knee motors.

The recordings are synthetic: the quadruped with its base welded to the world, its left front leg driven
by square waves beyond the motors' peak (so they run on the voltage band and at the peak), simulated with
motor constants the fit does not see (``TRUE``); the fit starts 30% off. Sources of the expected values:
``TRUE`` itself (the data were made with it), the physics of what motion can tell (inside the region the
torque does not depend on the motor; on the voltage band it is ``(Kt/R)(V - w/Kv)``, so ``R`` and ``Kt`` are
not separable from motion alone), and central differences of the loss for its gradient.

Tolerances: 2% without noise and 10% with 1% measurement noise (the issue's figures; noise-free fits land
within 1e-6), 1e-6 relative for the gradient against central differences (step 1e-6, float64).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF

import jaxmor
from jaxmor import ArgumentError, sysid

pytestmark = pytest.mark.slow

ACTUATORS = ["LF_HFE", "LF_KFE"]
TRUE = {
    "resistance": np.array([0.44, 0.36]),
    "torque_constant": np.array([0.092, 0.108]),
    "velocity_constant": np.array([10.8, 9.3]),
}
STEPS, DT = 1500, 0.002


def _with(model, values, actuators=ACTUATORS):
    index = np.array([jaxmor.actuator_index(model, a) for a in actuators])
    for name, value in values.items():
        model = sysid._set(model, name, index, jnp.asarray(value))
    return model


def _commands(model, phase: float) -> np.ndarray:
    """Square waves of 45 Nm (1.5 x the 30 Nm peak at the output) on the hip and the knee."""
    t = np.arange(STEPS) * DT
    torque = np.zeros((STEPS, model.na))
    torque[:, jaxmor.actuator_index(model, "LF_HFE")] = 45.0 * np.sign(np.sin(2 * np.pi * 1.3 * t + phase))
    torque[:, jaxmor.actuator_index(model, "LF_KFE")] = 45.0 * np.sign(np.sin(2 * np.pi * 1.7 * t + 0.5 + phase))
    return torque


@pytest.fixture(scope="module")
def setup():
    nominal = jaxmor.load_urdf(QUADRUPED_URDF, floating_base=False)
    nominal = nominal.replace(opt=nominal.opt.replace(timestep=jnp.asarray(DT)))
    truth = _with(nominal, TRUE)
    q0 = jaxmor.neutral_q(nominal).at[jaxmor.joint_q_index(nominal, "LF_KFE")].set(-1.2)
    state = jaxmor.init_state(truth, q=q0)
    clean = sysid.record(truth, state, _commands(nominal, 0.0))
    noisy = [
        sysid.record(truth, state, _commands(nominal, phase), noise=0.01, key=jax.random.key(k))
        for k, phase in enumerate((0.0, 1.0))
    ]
    start = _with(nominal, {k: 1.3 * v for k, v in TRUE.items()})
    return {"nominal": nominal, "start": start, "clean": clean, "noisy": noisy}


def _errors(result, name):
    return np.abs(result.values[name] / TRUE[name] - 1.0)


def test_motion_alone_gives_kt_over_r_and_kv_and_says_r_and_kt_do_not_separate(setup):
    result = sysid.fit(setup["start"], setup["clean"], ACTUATORS + ["LF_HAA"], use_currents=False, progress=False)
    ratio = result.values["torque_constant"][:2] / result.values["resistance"][:2]
    true_ratio = TRUE["torque_constant"] / TRUE["resistance"]
    assert np.all(np.abs(ratio / true_ratio - 1) <= 0.02), ratio / true_ratio - 1
    assert np.all(np.abs(result.values["velocity_constant"][:2] / TRUE["velocity_constant"] - 1) <= 0.02)
    for name in ("resistance", "torque_constant"):
        assert not result.identifiable[name][:2].any() and np.all(np.isnan(result.relative_std[name][:2]))
    assert result.identifiable["velocity_constant"][:2].all()
    for i, actuator in enumerate(ACTUATORS):
        assert result.findings[i].startswith(f"{actuator}: resistance and torque_constant are not separately")
    # LF_HAA is never commanded: its torque (zero) lies inside its region, so the data do not depend on it.
    assert result.findings[2].startswith("LF_HAA: not identifiable at all")
    assert not any(result.identifiable[name][2] for name in result.parameters)
    assert result.loss_history[-1] < 1e-4 * result.loss_history[0]  # converged (the start was 30% off)


def test_recorded_currents_separate_r_and_kt(setup):
    result = sysid.fit(setup["start"], setup["clean"], ACTUATORS, progress=False)
    for name in TRUE:
        assert np.all(_errors(result, name) <= 0.02), (name, _errors(result, name))
        assert result.identifiable[name].all()
    assert result.findings == [f"{a}: every parameter is identified." for a in ACTUATORS]
    assert "rel. std" in result.summary()


def test_with_1_percent_noise_two_recordings_give_every_identifiable_value_within_10_percent(setup):
    motion = sysid.fit(setup["start"], setup["noisy"], ACTUATORS, use_currents=False, progress=False)
    ratio = motion.values["torque_constant"] / motion.values["resistance"]
    assert np.all(np.abs(ratio / (TRUE["torque_constant"] / TRUE["resistance"]) - 1) <= 0.10)
    assert np.all(_errors(motion, "velocity_constant") <= 0.10)
    with_currents = sysid.fit(setup["start"], setup["noisy"], ACTUATORS, progress=False)
    for name in TRUE:
        assert np.all(_errors(with_currents, name) <= 0.10), (name, _errors(with_currents, name))


def test_the_ideal_motor_identity_separates_r_and_kt_from_motion(setup):
    """The nominal motor is ideal (Kt = 1 / Kv = 0.1 in SI units); with only R changed, motion alone then
    gives all three."""
    truth = _with(setup["nominal"], {"resistance": np.array([0.5, 0.32])})
    state = jaxmor.init_state(truth, q=jaxmor.neutral_q(truth).at[jaxmor.joint_q_index(truth, "LF_KFE")].set(-1.2))
    recording = sysid.record(truth, state, _commands(truth, 0.0))
    start = _with(
        setup["nominal"], {"resistance": np.array([0.65, 0.416]), "velocity_constant": np.array([13.0, 13.0])}
    )
    result = sysid.fit(start, recording, ACTUATORS, use_currents=False, ideal_motor=True, progress=False)
    np.testing.assert_allclose(result.values["resistance"], [0.5, 0.32], rtol=0.02)
    np.testing.assert_allclose(result.values["velocity_constant"], [10.0, 10.0], rtol=0.02)
    np.testing.assert_allclose(result.values["torque_constant"], 1.0 / result.values["velocity_constant"], rtol=1e-12)
    assert result.identifiable["resistance"].all() and result.identifiable["torque_constant"].all()


def test_the_gradient_of_the_loss_matches_central_differences(setup):
    short = sysid.Recording(setup["clean"].q[:201], setup["clean"].u[:201], setup["clean"].torque[:200])
    residuals, _, size = sysid.residual_function(setup["start"], [short], ACTUATORS, window=50)

    def loss(theta):
        r = residuals(theta)
        return 0.5 * jnp.mean(r * r)

    theta = jnp.asarray(np.linspace(-0.3, -0.1, size))
    # One compiled program gives the gradient and the loss values of the differences (a separate jit(loss) would
    # compile the rollout once more).
    value_and_grad = jax.jit(jax.value_and_grad(loss))
    grad = np.asarray(value_and_grad(theta)[1])

    def value(t):
        return float(value_and_grad(t)[0])

    eps = 1e-6
    fd = np.array([(value(theta.at[k].add(eps)) - value(theta.at[k].add(-eps))) / (2 * eps) for k in range(size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-9 * np.abs(fd).max())


def test_the_optax_method_descends(setup):
    import optax

    short = sysid.Recording(setup["clean"].q[:301], setup["clean"].u[:301], setup["clean"].torque[:300])
    result = sysid.fit(
        setup["start"], short, ACTUATORS, method="optax", optimizer=optax.adam(0.05), iterations=40, progress=False
    )
    assert result.loss_history[-1] < 0.2 * result.loss_history[0]


def test_bad_arguments(setup):
    with pytest.raises(ArgumentError, match="actuators must name"):
        sysid.fit(setup["start"], setup["clean"], ["NOPE"], progress=False)
    with pytest.raises(ArgumentError, match="parameters must be among"):
        sysid.fit(setup["start"], setup["clean"], ACTUATORS, ["mass"], progress=False)
    with pytest.raises(ArgumentError, match="does not fit the model"):
        sysid.fit(jaxmor.load_urdf(QUADRUPED_URDF), setup["clean"], ACTUATORS, progress=False)
    with pytest.raises(ArgumentError, match="a Recording needs"):
        sysid.Recording(np.zeros((3, 12)), np.zeros((2, 12)), np.zeros((2, 12)))
    with pytest.raises(ArgumentError, match="method must be"):
        sysid.fit(setup["start"], setup["clean"], ACTUATORS, method="bfgs", progress=False)


# --------------------------------------------------------------------------------------------------
# Bad data: the reported inputs. Short synthetic arrays on the nominal model (no recorded rollout needed).

BAD_STEPS = 60


@pytest.fixture(scope="module")
def nominal():
    model = jaxmor.load_urdf(QUADRUPED_URDF, floating_base=False)
    return model.replace(opt=model.opt.replace(timestep=jnp.asarray(DT)))


def _flat_recording(model, steps: int = BAD_STEPS) -> sysid.Recording:
    """A recording of ``steps`` steps at rest with 1 Nm on the hip (finite everywhere)."""
    torque = np.zeros((steps, model.na))
    torque[:, jaxmor.actuator_index(model, "LF_HFE")] = 1.0
    return sysid.Recording(np.zeros((steps + 1, model.nq)), np.zeros((steps + 1, model.nv)), torque)


def test_one_nan_torque_in_60_samples_is_refused_naming_recording_field_and_sample(nominal):
    """The reported case: 1 NaN commanded torque in 60 samples gave a torque constant 4x off, silently."""
    good, bad = _flat_recording(nominal), _flat_recording(nominal)
    bad.torque[17, 0] = np.nan
    message = r"recordings\[1\]\.torque has 1 non-finite sample\(s\) of 60 \(the first: sample 17\)"
    with pytest.raises(ArgumentError, match=message):
        sysid.fit(nominal, [good, bad], ACTUATORS, progress=False)


def test_a_nan_in_q_is_refused_not_a_bare_numpy_error(nominal):
    rec = _flat_recording(nominal)
    rec.q[5, 2] = np.nan
    rec.q[9, 0] = np.inf
    with pytest.raises(
        ArgumentError, match=r"recordings\[0\]\.q has 2 non-finite sample\(s\) of 61 \(the first: sample 5\)"
    ):
        sysid.fit(nominal, rec, ACTUATORS, progress=False)


def test_an_all_zero_recording_reports_nothing_identifiable(nominal):
    """No torque and no motion: the motor constants do not act (``J = 0``), so ``J^T J`` has no curvature; the
    report says so (every fitted parameter not identifiable, std nan) instead of a bare numpy error, and lists
    only the fitted parameters."""
    zero = sysid.Recording(np.zeros((21, nominal.nq)), np.zeros((21, nominal.nv)), np.zeros((20, nominal.na)))
    result = sysid.fit(nominal, zero, ["LF_HFE"], window=10, iterations=2, progress=False)
    assert set(result.identifiable) == {"resistance", "torque_constant", "velocity_constant"}
    for name in result.parameters:
        assert not result.identifiable[name].any() and np.isnan(result.relative_std[name]).all()
    assert "not identifiable" in result.findings[0]
