"""The largest physics step at which an explicit actuator PD is stable (``docs/design/step-artifacts.md``).

A PD computed at the start of every physics step, ``tau = kp (target - q_j) - kd u_j`` (the actuator PD of
:func:`jaxmor.set_actuator_pd_gains`, and :class:`jaxmor.envs.Locomotion`'s ``action_mode="pd"``), is explicit: its
torque does not see the velocity change it causes within the step. Above a step that depends on the gains and on
the inertia the joints move, the joints of a leg in the air chatter at the Nyquist frequency ``1 / (2 h)`` (their
error flips sign every step and grows until the motors saturate), and a foot that touches the ground while its leg
chatters skates; a leg whose foot is loaded does not chatter (the body's inertia is behind the contact). The policy of
issue 51, trained at 10 ms, never lifted its feet. :func:`pd_step_limit` gives that step, :func:`check_pd_step`
refuses a step beyond it and :func:`pd_spectral_radius` says how fast the chatter grows.

One joint of inertia ``I`` (no contact) under the PD and the step's semi-implicit Euler
(``u' = u + h tau / I``, ``q' = q + h u'``): with ``e = q - target``, ``v = h u``, ``a = kd h / I``,
``b = kp h^2 / I``::

    [e', v'] = [[1 - b, 1 - a], [-b, 1 - a]] [e, v],    characteristic polynomial  l^2 - (2 - a - b) l + (1 - a).

Jury's conditions put both roots inside the unit circle iff ``|1 - a| < 1``, ``b > 0`` and ``4 - 2 a - b > 0``,
i.e. (for ``kp, kd > 0``) iff ``kd h / I + kp h^2 / (2 I) < 2`` (with ``kd = 0`` the roots stay on the circle, undamped,
up to ``b = 4``)::

    h < h* = (sqrt(kd^2 + 4 kp I) - kd) / kp         (2 I / kd for kp = 0; 2 sqrt(I / kp) for kd = 0).

At ``h*`` the root ``l = -1`` leaves the circle: the Nyquist chatter. (``docs/training.md`` states the sufficient
``kd h / I + kp h^2 / I < 2``.)

A robot's driven joints are coupled through the mass matrix, and a leg in the air moves less inertia than its
diagonal entry of ``M`` (what ``jaxmor info`` prints: every other joint held): the knee torque also turns the thigh
and the hip, and a free base. The functions here linearize the step of all driven joints together at a
configuration ``q`` without contacts, at rest (gravity and velocity terms left out: they are small beside ``kp`` and
vanish at rest), with the trapezoidal joint damping the step applies (``b_j``, joint plus actuator output damping,
half of it implicit). With ``y`` the driven joints' errors, ``w`` their velocities, ``S`` (na x nv) selecting the
driven joints, ``T_out = diag(1 / G) T`` the transmission at the gear outputs and
``M_eff = M + (h / 2) S^T diag(b_j) S``::

    w' = w - h W (Kp y + Kd w) - h D w,     y' = y + h w',
    W = S M_eff^-1 T_out^T,   D = S M_eff^-1 S^T diag(b_j),

a linear map of ``(y, w)`` whose spectral radius (:func:`pd_spectral_radius`) must not exceed 1. With gains in a
common ratio ``kd = c kp`` and no damping it splits into the scalar recurrences above, one per eigenvalue ``1 / I_k``
of ``W``: the modal inertias ``I_k`` (:func:`modal_inertias`), the smallest of which sets ``h*``. For the shipped
quadruped in the air at its standing pose the smallest is 0.0120 kg m^2 (a knee mode), not the 0.0150 kg m^2 of the
knee's diagonal entry: with ``kp = 150`` Nm/rad and ``kd = 3`` Nm s/rad, ``h* = 6.8`` ms, and 10 ms is unstable
(``kd h / I = 2.5`` alone exceeds 2).

Contacts only add inertia behind a stance leg (the body's), and joint friction only adds a dead band, so the limit
of the robot in the air bounds the step for any contact state. An actuator with backlash counts its rotor's inertia
at its joint (the teeth engaged), which is the loop of a PD that reads the joint; one that reads the rotor (the
State's actuator PD, ``rotor_feedback=True``) moves the rotor alone within the dead band, a one-joint loop with the
rotor's inertia ``G^2 J_rotor``. The inertia depends on the posture: pass the configurations the robot works around
(its standing pose, the poses its targets reach); the model's default configuration otherwise.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import numpy as np
from numpy.typing import ArrayLike

from jaxmor.checks import as_positive, refuse_traced
from jaxmor.errors import ArgumentError
from jaxmor.sim.dynamics import mass_matrix
from jaxmor.sim.forces import joint_damping
from jaxmor.types import Model

#: Spectral radii up to ``1 + RADIUS_TOLERANCE`` count as stable (undamped modes sit on the unit circle, rigid ones
#: at 1; rounding moves them by far less).
RADIUS_TOLERANCE = 1e-7
#: The scan for the first unstable step: from ``SCAN_START`` seconds up by ``SCAN_RATIO`` per point, to
#: ``SCAN_END``; then bisection to a relative ``1e-10``.
SCAN_START, SCAN_RATIO, SCAN_END = 1e-6, 1.02, 10.0

#: The mass matrix, compiled once per model structure (10x faster than running its operations one by one).
_MASS_MATRIX = jax.jit(mass_matrix)


def _gains(model: Model, value, name: str) -> np.ndarray:
    """``value`` as (na,) float64 gains, finite and ``>= 0`` (a scalar applies to every actuator).

    Raises:
        ArgumentError: traced, not numeric, another shape, not finite or negative, naming ``name``.
    """
    refuse_traced(value, name)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a number or an ({model.na},) array, got {value!r}") from None
    if arr.shape not in ((), (model.na,)):
        raise ArgumentError(f"{name} must be a number or an ({model.na},) array (one per actuator), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ArgumentError(f"{name} must be finite and >= 0, got {arr.tolist()}")
    return np.broadcast_to(arr, (model.na,)).copy()


def _configurations(model: Model, q) -> np.ndarray:
    """``q`` as (k, nq) float64 configurations (``model.q_default`` for ``None``, one row for an (nq,) ``q``).

    Raises:
        ArgumentError: a model without DC-motor actuators, or a ``q`` that is traced, not (nq,) or (k, nq) with
            ``k >= 1``, or not finite.
    """
    if model.na == 0:
        raise ArgumentError("the PD step limit needs a model with DC-motor actuators (model.na == 0)")
    refuse_traced(q, "q")
    try:
        arr = np.asarray(model.q_default if q is None else q, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentError(f"q must be an ({model.nq},) or (k, {model.nq}) array [m, rad], got {q!r}") from None
    arr = arr[None] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] != model.nq or not np.all(np.isfinite(arr)):
        raise ArgumentError(
            f"q must be a finite ({model.nq},) configuration or (k, {model.nq}) configurations [m, rad], "
            f"got shape {np.shape(q)}"
        )
    return arr


class _Loop(NamedTuple):
    """The PD's loop at one configuration, float64: ``mass`` (nv, nv) the mass matrix with each backlash rotor's
    inertia on its joint [kg m^2 or kg], ``t_out`` (na, nv) the transmission at the gear outputs, ``select``
    (na, nv) the driven joints, ``damping`` (na,) theirs [Nm s/rad or N s/m], ``rotors`` (na,) the inertia the PD
    moves within a gear's dead band (its rotor's, where the PD reads the rotor; ``inf`` elsewhere) [kg m^2 or kg]."""

    mass: np.ndarray
    t_out: np.ndarray
    select: np.ndarray
    damping: np.ndarray
    rotors: np.ndarray


def _loop(model: Model, q: np.ndarray, rotor_feedback: bool) -> _Loop:
    """The :class:`_Loop` of ``model`` at one configuration ``q`` (nq,)."""
    act = model.actuators
    v = np.asarray(act.joint_v_index, dtype=np.int64)
    mass = np.array(_MASS_MATRIX(model, q.astype(np.asarray(model.q_default).dtype)), dtype=np.float64)
    rotors = np.full(model.na, np.inf)
    if act.backlash.any_active:
        active = np.asarray(act.backlash.active, bool)
        inertia = np.asarray(act.backlash.inertia, np.float64)
        mass[v[active], v[active]] += inertia[active]
        if rotor_feedback:
            rotors[active] = inertia[active]
    gear = np.asarray(act.gear_ratio, np.float64)
    select = np.zeros((model.na, model.nv))
    select[np.arange(model.na), v] = 1.0
    damping = np.asarray(joint_damping(model), np.float64)[v]
    return _Loop(mass, np.asarray(act.transmission, np.float64) / gear[:, None], select, damping, rotors)


def _amplification(loop: _Loop, kp: np.ndarray, kd: np.ndarray, h: float) -> np.ndarray:
    """(2 na, 2 na) the linearized step's map of ``(y, w)`` (module docstring)."""
    mass, t_out, select, damping, _ = loop
    na = kp.shape[0]
    inverse = np.linalg.inv(mass + 0.5 * h * select.T @ np.diag(damping) @ select)
    w = select @ inverse @ t_out.T
    d = select @ inverse @ select.T @ np.diag(damping)
    velocity_of_y = -h * w @ np.diag(kp)
    velocity_of_w = np.eye(na) - h * w @ np.diag(kd) - h * d
    return np.block([[np.eye(na) + h * velocity_of_y, h * velocity_of_w], [velocity_of_y, velocity_of_w]])


def _radius(loop: _Loop, kp: np.ndarray, kd: np.ndarray, h: float) -> float:
    """The spectral radius of the joints' map and, where the PD reads a rotor, of its rotor's map in the dead band
    (the one-joint map of the module docstring with the rotor's inertia)."""
    radius = float(np.max(np.abs(np.linalg.eigvals(_amplification(loop, kp, kd, h)))))
    free = np.isfinite(loop.rotors)
    if np.any(free):
        a, b = kd[free] * h / loop.rotors[free], kp[free] * h**2 / loop.rotors[free]
        maps = np.stack([np.stack([1 - b, 1 - a], -1), np.stack([-b, 1 - a], -1)], -2)
        radius = max(radius, float(np.max(np.abs(np.linalg.eigvals(maps)))))
    return radius


def pd_spectral_radius(model: Model, kp, kd, timestep, q=None, *, rotor_feedback: bool = False) -> float:
    """The spectral radius of one physics step of the explicit actuator PD on the driven joints, in the air
    (the module docstring derives the map): above 1 the joints chatter, their error growing by about that factor
    per step until the motors saturate.

    Args:
        model: a concrete model with DC-motor actuators.
        kp: () or (na,) proportional gains at the gear outputs [Nm/rad or N/m], ``>= 0``.
        kd: () or (na,) derivative gains at the gear outputs [Nm s/rad or N s/m], ``>= 0``.
        timestep: () the physics step ``h`` [s], ``> 0``.
        q: (nq,) a configuration [m, quaternion w x y z, rad], or (k, nq) several (the largest radius over them);
            default ``model.q_default``.
        rotor_feedback: the PD reads the rotors of the actuators with backlash (the State's actuator PD,
            :func:`jaxmor.set_actuator_pd_gains`), not their joints (:class:`jaxmor.envs.Locomotion`'s): within a
            gear's dead band it then moves the rotor alone, and that loop counts too.

    Returns:
        The spectral radius (a float ``>= 0``; 1 for an undamped or rigid mode).

    Raises:
        ArgumentError: a model without actuators, a gain that is not finite and ``>= 0`` (or of another shape), a
            time step that is not finite and ``> 0``, or a bad ``q``.
    """
    h = as_positive(timestep, "timestep [s]")
    configurations = _configurations(model, q)
    kp, kd = _gains(model, kp, "kp [Nm/rad]"), _gains(model, kd, "kd [Nm s/rad]")
    return max(_radius(_loop(model, x, rotor_feedback), kp, kd, h) for x in configurations)


def modal_inertias(model: Model, q=None) -> np.ndarray:
    """The inertias of the driven joints' modes in the air: ``1 / eig(S M^-1 T_out^T)`` (module docstring), the
    inertia each mode of the actuators' torques moves with the other joints and a floating base free, reflected
    rotor inertia included, smallest first.

    Args:
        model: a concrete model with DC-motor actuators.
        q: (nq,) a configuration [m, quaternion w x y z, rad], or (k, nq) several; default ``model.q_default``.

    Returns:
        (na,) float64 [kg m^2 or kg] for one configuration, (k, na) for several (the real parts; the coupling of a
        knee motor to its hip makes the map slightly unsymmetric).

    Raises:
        ArgumentError: a model without actuators, or a bad ``q``.
    """
    configurations = _configurations(model, q)
    out = []
    for x in configurations:
        mass, t_out, select, _, _ = _loop(model, x, False)
        out.append(np.sort(1.0 / np.linalg.eigvals(select @ np.linalg.inv(mass) @ t_out.T).real))
    return out[0] if q is None or np.ndim(q) == 1 else np.stack(out)


def pd_step_limit(
    model: Model, kp: ArrayLike, kd: ArrayLike, q: ArrayLike | None = None, *, rotor_feedback: bool = False
) -> float:
    """The largest physics step [s] at which the explicit actuator PD ``kp (target - q_j) - kd u_j`` is stable on
    every driven joint of ``model`` in the air: the first step at which :func:`pd_spectral_radius` exceeds 1.

    For one joint of inertia ``I``: ``h* = (sqrt(kd^2 + 4 kp I) - kd) / kp`` (the module docstring derives it); for a
    robot, the same with the smallest modal inertia (:func:`modal_inertias`) when ``kd / kp`` is the same for every
    actuator and the joints have no damping, and in general the linearized step's spectral radius, found by a scan
    (from 1 us up by 2 % a point) and bisection (to a relative 1e-10). The shipped quadruped, ``kp = 150``,
    ``kd = 3``: 6.81 ms at its standing pose (knees at -1.2 rad), 5.58 ms with straight legs (knees at -0.1 rad: the
    knee mode moves less inertia), 8.1 ms with the knees at -2.2 rad; with backlash and ``rotor_feedback``, 1.39 ms
    (an abduction rotor alone, ``36 J_rotor = 2.16e-3 kg m^2``).

    Args:
        model: a concrete model with DC-motor actuators (one world: not batched, not traced).
        kp: () or (na,) proportional gains at the gear outputs [Nm/rad or N/m], ``>= 0``.
        kd: () or (na,) derivative gains at the gear outputs [Nm s/rad or N s/m], ``>= 0``.
        q: (nq,) the configuration the robot works around [m, quaternion w x y z, rad] (e.g. its standing pose), or
            (k, nq) several (the smallest limit over them: the poses its targets reach); default ``model.q_default``.
        rotor_feedback: the PD reads the rotors of the actuators with backlash (:func:`pd_spectral_radius`).

    Returns:
        The limit [s]; ``inf`` when every gain is zero or no step up to 10 s is unstable.

    Raises:
        ArgumentError: a model without actuators, a gain that is not finite and ``>= 0`` (or of another shape), or a
            bad ``q``.
    """
    configurations = _configurations(model, q)
    kp, kd = _gains(model, kp, "kp [Nm/rad]"), _gains(model, kd, "kd [Nm s/rad]")
    if not np.any(kp) and not np.any(kd):
        return math.inf
    return min(_first_unstable_step(_loop(model, x, rotor_feedback), kp, kd) for x in configurations)


def _first_unstable_step(loop: _Loop, kp: np.ndarray, kd: np.ndarray) -> float:
    """The largest step below the first one (scanned, then bisected) whose spectral radius exceeds 1 [s]."""
    stable, h = 0.0, SCAN_START
    while h <= SCAN_END:
        if _radius(loop, kp, kd, h) > 1.0 + RADIUS_TOLERANCE:
            break
        stable, h = h, h * SCAN_RATIO
    else:
        return math.inf
    unstable = h
    while unstable - stable > 1e-10 * unstable:
        mid = 0.5 * (stable + unstable)
        if _radius(loop, kp, kd, mid) > 1.0 + RADIUS_TOLERANCE:
            unstable = mid
        else:
            stable = mid
    return stable


def check_pd_step(
    model: Model,
    kp: ArrayLike,
    kd: ArrayLike,
    timestep: float,
    q: ArrayLike | None = None,
    *,
    rotor_feedback: bool = False,
) -> float:
    """Refuse a physics step at which the explicit actuator PD chatters (:func:`pd_step_limit`).

    Args:
        model: a concrete model with DC-motor actuators.
        kp: () or (na,) proportional gains at the gear outputs [Nm/rad or N/m], ``>= 0``.
        kd: () or (na,) derivative gains at the gear outputs [Nm s/rad or N s/m], ``>= 0``.
        timestep: () the physics step [s], ``> 0``.
        q: (nq,) the configuration the robot works around, or (k, nq) several; default ``model.q_default``.
        rotor_feedback: the PD reads the rotors of the actuators with backlash (:func:`pd_spectral_radius`).

    Returns:
        The limit [s] (``timestep`` is below it).

    Raises:
        ArgumentError: ``timestep >= pd_step_limit(model, kp, kd, q)``; the message gives the step, the limit, the
            gains, the smallest modal inertia, ``kd h / I + kp h^2 / (2 I)`` with the largest gains (stable below 2)
            and the chatter's growth per step; or, as :func:`pd_step_limit`, a bad argument.
    """
    h = as_positive(timestep, "timestep [s]")
    limit = pd_step_limit(model, kp, kd, q, rotor_feedback=rotor_feedback)
    if h < limit:
        return limit
    kp_a, kd_a = _gains(model, kp, "kp [Nm/rad]"), _gains(model, kd, "kd [Nm s/rad]")
    inertia = _smallest_inertia(model, q, rotor_feedback)
    index = kd_a.max() * h / inertia + kp_a.max() * h**2 / (2 * inertia)
    growth = pd_spectral_radius(model, kp_a, kd_a, h, q, rotor_feedback=rotor_feedback)
    raise ArgumentError(
        f"timestep {h:.6g} s is beyond the stability limit {limit:.4g} s of the explicit actuator PD with "
        f"kp={_brief(kp_a)} Nm/rad, kd={_brief(kd_a)} Nm s/rad: the joints of a leg in the air chatter at "
        f"{0.5 / h:.4g} Hz (the error grows {growth:.3g}x per step) and a foot they put down skates. The smallest "
        f"inertia the PD moves is {inertia:.4g} kg m^2, kd h / I + kp h^2 / (2 I) = {index:.3g} (stable below 2). "
        f"Use timestep < {limit:.4g} s (more substeps per control step) or smaller gains "
        f"(jaxmor.envs.stability.pd_step_limit)"
    )


def _smallest_inertia(model: Model, q, rotor_feedback: bool) -> float:
    """The smallest modal inertia over the configurations, or a backlash rotor's when the PD reads the rotors and
    that is smaller [kg m^2 or kg]."""
    inertia = float(np.min(modal_inertias(model, q)))
    backlash = model.actuators.backlash
    if rotor_feedback and backlash.any_active:
        inertia = min(inertia, float(np.min(np.asarray(backlash.inertia)[np.asarray(backlash.active, bool)])))
    return inertia


def _brief(gains: np.ndarray) -> str:
    """One number when every actuator has the same gain, else the array."""
    return f"{gains[0]:g}" if np.all(gains == gains[0]) else np.array2string(gains, precision=4)
