"""jaxmor's dynamic DC motor side by side with MuJoCo's ``<dcmotor>`` (float64, MuJoCo 4).

The scene: a rotor on a vertical hinge (inertia ``I`` about it, no gravity torque, no contacts, no joint
damping) driven through a gear ``G`` by a dcmotor with resistance ``R``, motor constant ``K``, a winding
inductance (``te = L / R = 10`` steps of 1 ms) and a thermal model (``R_th C = 2 s``, copper's ``alpha``), spun
up from rest at the full bus voltage for 2 s (to 99 % of the no-load speed). The winding heats by about 28 K,
which lowers the torque by up to 10 %. The same MJCF is loaded by :func:`jaxmor.load_mjcf` (the ``<dcmotor>`` mapping of
:mod:`jaxmor.io.mjcf_actuators`); MuJoCo's ``ctrl`` is the bus voltage, jaxmor commands an actuator torque of
``1e6`` Nm, beyond the region, so its driver applies the full bus voltage too. MuJoCo steps with ``mj_step``
(its default Euler integrator), jaxmor with :func:`jaxmor.rollout`.

Step alignment: after step ``k`` both report the motor speed of the step's beginning (MuJoCo's
``actuator_velocity``, jaxmor's ``ActuatorState.motor_speed``), the step's motor torque ``K i_{k+1}`` with the
current at the step's end (MuJoCo's ``actuator_force``, the dcmotor forces actearly; jaxmor's ``motor_torque``),
that current (MuJoCo's last activation slot; jaxmor's ``ActuatorState.current``) and the winding temperature at
the step's end (MuJoCo's temperature slot, the rise above ambient, plus the ambient; jaxmor's
``MotorState.winding_temperature``). Where the two models agree (``alpha = 0``: the resistance does not follow
the temperature) the speeds, torques and currents are the same to round-off, which checks that alignment.

Where they differ, and the tolerance:

1. Heating. MuJoCo integrates ``C dT/dt = R(T) i^2 - (T - T_a) / R_th`` by explicit Euler with the current of
   the step's beginning ``i_k``; jaxmor exactly, for the loss ``R(T_k) i_{k+1}^2`` held over the step. Both are
   first order in ``h``. The current shift telescopes: the temperatures differ by at most ``2 h P_max / C``
   with ``P_max = V^2 / R`` (the current never exceeds the stall current), Euler's error adds
   ``h / (2 R_th C)`` times the rise (``sum (T* - T) (h / tau)^2 / 2`` with ``tau dT/dt = T* - T``). So
   ``|dT| <= 2 h V^2 / (R C) + h rise / (2 tau)``: 0.37 K at ``h`` = 1 ms (measured 0.15 K).
2. The temperature's effect: ``R(T)`` changes the torque by ``alpha dT`` of the stall torque at most
   (``tau = K (V - K w) / R(T)``): ``1.5e-3`` (measured ``4.9e-4``); the current likewise; the speed error
   relative to the no-load speed is at most the relative torque error (a torque error ``d tau`` at the
   output moves the speed by ``tau_m G^2 d tau / I = d tau R / K^2`` against the back-EMF, ``tau_m`` the
   mechanical time constant): measured ``1.1e-4``.
3. The current's time constant. MuJoCo decays the current with ``te = L / R_ref`` fixed, jaxmor with
   ``R(T) / L``: MuJoCo's effective inductance is ``L R(T) / R_ref``. That is a difference of the models, not
   of the discretizations: it does not vanish with ``h``. The current lags its quasi-static value by
   ``te di/dt``, ``|di/dt| <~ i_stall / tau_m``, so it adds ``(1 - R_ref / R(T)) te / tau_m`` of the stall
   torque: ``2.5e-3`` (the full difference measured: ``1.2e-3``, bound ``4.0e-3``).

So two MuJoCo runs: MuJoCo as it is (bounds 1-3), and MuJoCo with its ``te`` set to ``L / R(T_k)`` before every
step, jaxmor's inductance (bounds 1-2). Against the latter every difference is first order: at ``h / 2`` it
halves (measured ratios 2.001); against the former the torque's does not (measured 1.10). jaxmor with the
winding's heating off (``resistance_tempco`` 0) misses MuJoCo's torque by 3.7e-2 of stall, nine times the
bound: the tolerance discriminates. Without inductance (``te = 0``) both compute the current of the step's beginning
``(V - K w) / R(T_k)``, so only Euler's heating error remains: ``h rise / (2 tau)`` (measured ``5.7e-3`` K,
torque ``8e-6`` of stall; bounds 1.5 times the estimate: ``1.0e-2`` K, ``4.1e-5``), and it halves too.

Runtime: two compiled rollouts (with and without inductance), run in chunks for every time step and variant.
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest

import jaxmor

mujoco = pytest.importorskip("mujoco")

GEAR = 2.0
INERTIA = 5e-3  # rotor about the hinge [kg m^2]
R_REF = 0.8  # [Ohm] at the reference temperature
K = 0.05  # [Nm/A] = [V s/rad]
VOLTS = 12.0
TE = 0.01  # L / R_ref [s]
INDUCTANCE = TE * R_REF
R_TH, HEAT_CAPACITY = 2.0, 1.0  # [K/W], [J/K]: time constant 2 s
TAU_TH = R_TH * HEAT_CAPACITY
ALPHA = 0.004  # [1/K]
AMBIENT = 25.0  # = the reference temperature [degC]
H = 1e-3
DURATION = 2.0
CHUNK = 250  # steps per compiled rollout call

STALL_TORQUE = K * VOLTS / R_REF  # rotor side [Nm]
STALL_CURRENT = VOLTS / R_REF
NO_LOAD_SPEED = VOLTS / K  # rotor [rad/s]
TAU_M = INERTIA * R_REF / (GEAR**2 * K**2)  # mechanical time constant [s]
CHANNELS = ("speed", "torque", "current", "temperature")
SCALES = np.array([NO_LOAD_SPEED, STALL_TORQUE, STALL_CURRENT, 1.0])  # temperatures in K

_ROLLOUT = jax.jit(lambda model, state: jaxmor.rollout(model, state, n_steps=CHUNK))


def scene(h: float, *, inductance: bool = True, alpha: float = ALPHA) -> str:
    electrical = f'inductance="{INDUCTANCE}"' if inductance else ""
    return f"""<mujoco><option timestep="{h}" gravity="0 0 -9.81"/>
  <worldbody><body name="rotor"><joint name="spin" axis="0 0 1"/>
    <inertial pos="0 0 0" mass="1" diaginertia="{INERTIA} {INERTIA} {INERTIA}"/></body></worldbody>
  <actuator><dcmotor name="motor" joint="spin" gear="{GEAR}" resistance="{R_REF}" motorconst="{K}" {electrical}
    thermal="{R_TH} {HEAT_CAPACITY} 0 {alpha} {AMBIENT} {AMBIENT}" ctrlrange="-{VOLTS} {VOLTS}"/></actuator>
</mujoco>"""


@functools.cache
def mujoco_run(h: float, inductance: bool = True, alpha: float = ALPHA, follow: bool = False) -> np.ndarray:
    """(n, 4) MuJoCo's speed, torque, current and winding temperature after each step; ``follow``: its ``te`` set
    to ``L / R(T_k)`` before each step (jaxmor's inductance)."""
    m = mujoco.MjModel.from_xml_string(scene(h, inductance=inductance, alpha=alpha))
    d = mujoco.MjData(m)
    d.ctrl[0] = VOLTS
    n = round(DURATION / h)
    out = np.zeros((n, 4))
    for k in range(n):
        if follow:  # the temperature slot holds the rise above ambient, and T_ref = T_a here
            m.actuator_dynprm[0, 0] = INDUCTANCE / (R_REF * (1 + alpha * d.act[0]))
        mujoco.mj_step(m, d)
        current = d.act[-1] if inductance else d.actuator_force[0] / K  # stateless: K i
        out[k] = d.actuator_velocity[0], d.actuator_force[0], current, d.act[0] + AMBIENT  # slot 0: the rise
    return out


def jaxmor_model(h: float, inductance: bool = True, alpha: float = ALPHA) -> jaxmor.Model:
    model = jaxmor.load_mjcf(scene(h, inductance=inductance, alpha=alpha))
    assert float(model.opt.timestep) == h and model.opt.timestep.dtype == np.float64
    return model


@functools.cache
def jaxmor_run(h: float, inductance: bool = True, alpha: float = ALPHA, cold: bool = False) -> np.ndarray:
    """(n, 4) jaxmor's speed, torque, current and winding temperature after each step, at a commanded output
    torque of 1e6 Nm (the full bus voltage); ``cold``: the resistance does not follow the temperature."""
    model = jaxmor_model(h, inductance, alpha)
    if cold:
        dyn = model.actuators.dynamics
        model = model.replace(
            actuators=model.actuators.replace(dynamics=dyn.replace(resistance_tempco=0 * dyn.resistance_tempco))
        )
    state = jaxmor.set_actuator_torques(model, jaxmor.init_state(model), [1e6])
    parts = []
    for _ in range(round(DURATION / h) // CHUNK):
        state, trajectory = _ROLLOUT(model, state)
        a = trajectory.actuator_state
        np.testing.assert_allclose(a.voltage[:, 0], VOLTS, rtol=1e-12)  # the driver applies the bus voltage
        parts.append(
            np.stack(
                [
                    a.motor_speed[:, 0],
                    a.motor_torque[:, 0],
                    a.current[:, 0],
                    trajectory.motor_state.winding_temperature[:, 0],
                ],
                axis=1,
            )
        )
    return np.concatenate(parts)


def difference(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """(4,) the largest differences over the run: speed / no-load speed, torque / stall torque, current / stall
    current, temperature [K]."""
    assert ours.shape == theirs.shape
    return np.abs(ours - theirs).max(axis=0) / SCALES


def report(**diffs) -> str:
    return "; ".join(
        f"{k}: " + ", ".join(f"{c} {x:.3g}" for c, x in zip(CHANNELS, d, strict=True)) for k, d in diffs.items()
    )


def bounds(h: float, rise: float, *, inductance: bool = True, fixed_te: bool = False) -> np.ndarray:
    """(4,) the stated bounds (the module docstring): speed, torque, current (relative), temperature [K]."""
    temperature = h * rise / (2 * TAU_TH)  # explicit Euler's heating
    if inductance:
        temperature += 2 * h * VOLTS**2 / (R_REF * HEAT_CAPACITY)  # the current of the step's start or end
    else:
        temperature *= 1.5  # margin: the estimate is close (measured 0.8 of it)
    torque = ALPHA * temperature  # R(T): alpha dT of the stall torque at most
    if fixed_te:
        hot = R_REF * (1 + ALPHA * rise)
        torque += (1 - R_REF / hot) * TE / TAU_M  # MuJoCo's te = L / R_ref against jaxmor's L / R(T)
    return np.array([torque, torque, torque, temperature])


def test_where_the_models_agree_the_steps_are_the_same():
    """``alpha = 0``: the resistance stays ``R_ref``, so jaxmor's current decay equals MuJoCo's and the only
    difference left is the heating (which then changes nothing else): speeds, torques and currents agree to
    round-off, step by step, which checks the alignment (one step off would differ by ``h`` times the rates,
    about 1e-2 here); the first step has the closed form ``K (1 - exp(-h / te)) V / R`` at speed 0."""
    ours, theirs = jaxmor_run(H, alpha=0.0), mujoco_run(H, alpha=0.0)
    diff = difference(ours, theirs)
    rise = theirs[:, 3].max() - AMBIENT
    assert np.all(diff[:3] < 1e-12), report(alpha0=diff)
    assert diff[3] < bounds(H, rise)[3], report(alpha0=diff)
    first = K * (1 - math.exp(-H / TE)) * VOLTS / R_REF
    for run in (ours, theirs):
        assert run[0, 0] == 0.0 and run[0, 1] == pytest.approx(first, rel=1e-12)
    assert theirs[-1, 0] > 0.95 * NO_LOAD_SPEED  # spun up


def test_spin_up_with_heating_and_inductance_converges_to_mujocos():
    """The full scene: every difference against MuJoCo with jaxmor's inductance below its bound at ``h`` and
    halved at ``h / 2``; against MuJoCo as it is, below the bound with its fixed ``te``, the torque's not halving
    (a difference of the models); jaxmor without the heating's effect on ``R`` far outside the bound."""
    theirs = {h: mujoco_run(h, follow=True) for h in (H, H / 2)}
    plain = {h: mujoco_run(h) for h in (H, H / 2)}
    ours = {h: jaxmor_run(h) for h in (H, H / 2)}
    rise = plain[H][:, 3].max() - AMBIENT
    assert 20.0 < rise < 40.0  # tens of kelvin: R(T) changes the torque by about 10 %
    matched = {h: difference(ours[h], theirs[h]) for h in (H, H / 2)}
    as_is = {h: difference(ours[h], plain[h]) for h in (H, H / 2)}
    text = report(matched=matched[H], matched_half=matched[H / 2], mujoco=as_is[H], mujoco_half=as_is[H / 2])
    assert np.all(matched[H] < bounds(H, rise)), text
    ratio = matched[H] / matched[H / 2]
    assert np.all((ratio > 1.5) & (ratio < 2.7)), f"ratios {ratio}; {text}"
    assert np.all(as_is[H] < bounds(H, rise, fixed_te=True)), text
    assert as_is[H][1] / as_is[H / 2][1] < 1.5, text  # MuJoCo's te = L / R_ref: a model difference
    assert as_is[H][1] > 1.5 * matched[H][1], text
    cold = difference(jaxmor_run(H, cold=True), plain[H])
    assert cold[1] > 3 * bounds(H, rise, fixed_te=True)[1], report(cold=cold)
    assert cold[0] > 3 * bounds(H, rise, fixed_te=True)[0], report(cold=cold)


def test_heating_without_inductance_agrees_closer_and_converges():
    """``te = 0``: MuJoCo's stateless current ``(V - K w) / R(T)`` is jaxmor's step's current, so only explicit
    Euler's heating differs: the temperatures by ``h rise / (2 tau)`` (with a margin of 1.5), the torques by
    ``alpha`` times that; halved at ``h / 2``."""
    theirs = {h: mujoco_run(h, inductance=False) for h in (H, H / 2)}
    ours = {h: jaxmor_run(h, inductance=False) for h in (H, H / 2)}
    rise = theirs[H][:, 3].max() - AMBIENT
    diff = {h: difference(ours[h], theirs[h]) for h in (H, H / 2)}
    text = report(h=diff[H], half=diff[H / 2])
    assert np.all(diff[H] < bounds(H, rise, inductance=False)), text
    ratio = diff[H] / diff[H / 2]
    assert np.all((ratio > 1.5) & (ratio < 2.7)), f"ratios {ratio}; {text}"
    assert np.all(diff[H] < 0.1 * difference(jaxmor_run(H), mujoco_run(H, follow=True))), text  # much closer
