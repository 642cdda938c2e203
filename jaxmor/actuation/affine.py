"""MuJoCo-style affine actuators: motors, position servos, velocity servos (``spec/affine-actuator.md``).

An affine actuator drives one 1-DOF joint (hinge/revolute/continuous or slide/prismatic), or pulls one
fixed tendon (:mod:`jaxmor.sim.tendons`: then ``q`` and ``v`` below are the tendon's length and rate and the
force acts through its Jacobian), with one parameter set, so downstream code never branches on the actuator
type::

    c   = clamp(ctrl, ctrl_range)                                          control, clamped first
    a   = clamp(gain * c + bias_0 + bias_q * q + bias_v * v, force_range)  actuator force
    tau = gear * a                                                         generalized force on the joint's DOF

``q`` and ``v`` are the driven joint's position [rad or m] and velocity [rad/s or m/s]. An actuator with activation
dynamics (``dynamics`` ``"integrator"``, ``"filter"``, ``"filterexact"``: MuJoCo's ``dyntype``) takes its activation
``State.act`` in place of ``c`` (:func:`law_inputs`); each step moves the activation towards (or integrates) ``c``
and clamps it to its range (:func:`next_activation`, MuJoCo's ``mj_nextActivation``).

Semantics (the decisions this module makes where the spec is terse)
-------------------------------------------------------------------
* **Order of operations, as in MuJoCo.** The control is clamped to ``ctrl_range`` before the law;
  the spec's "force limits applied after the affine law" are applied to the *actuator* force ``a``,
  before the gear, exactly like MuJoCo's ``forcerange`` (``mjData.actuator_force`` is clamped, then
  ``qfrc_actuator = gear * actuator_force``). So ``force_range`` is in actuator-force units, not
  joint-torque units: with ``gear = 2`` and ``force_range = (-5, 5)`` the joint sees at most 10.
  :func:`affine_actuator_force` returns ``a`` (MuJoCo's ``actuator_force``); :func:`affine_force_at`
  returns ``tau`` per actuator (the spec's ``force_at``); :func:`affine_generalized_force` scatters
  ``tau`` into a length-``nv`` vector (MuJoCo's ``qfrc_actuator``).
* **The bias acts on the joint coordinate, not on MuJoCo's actuator length.** The spec defines
  ``bias_q`` and ``bias_v`` as coefficients on the joint position and velocity, and its servos as
  ``position: tau = gear * (kp * (ctrl - q) - kv * v)`` and ``velocity: tau = gear * kv * (ctrl - v)``.
  MuJoCo instead feeds its bias the actuator length ``gear * q`` and velocity ``gear * v``, so a
  MuJoCo ``<position gear="g" kp kv>`` is ``tau = g * (kp * ctrl - kp * g * q - kv * g * v)``. The
  two agree for ``gear = 1`` (the usual case) and differ otherwise. jaxmor keeps the spec's
  constructors, and :meth:`AffineActuatorDefinition.from_mujoco` converts any MuJoCo affine actuator
  exactly (``bias_q = gear * biasprm[1]``, ``bias_v = gear * biasprm[2]``); the tests compare both
  against ``mujoco.mj_forward`` to 1e-12.
* **A constant bias.** The spec's struct has no constant term; jaxmor adds ``bias_0`` (0 by default, so the
  spec's actuators are unchanged) to take a MuJoCo ``biasprm[0]`` as it is (a spring preload, a gravity
  offset), in actuator-force units like MuJoCo's.
* **Ranges.** ``None`` means unlimited (stored as ``-inf``/``+inf``), as MuJoCo's
  ``ctrllimited``/``forcelimited="auto"`` treat an absent range. ``lo == hi`` is accepted (a fixed
  value); ``lo > hi`` or a NaN bound is an error. Infinite bounds are allowed.
* **One actuator per joint.** :func:`compile_affine` rejects two actuators on one joint (MuJoCo
  would sum them); compose a position and a velocity servo as one ``position(kp, kv)`` instead.
* A NaN control is not clamped away: it propagates to the force (the jitted functions cannot raise
  on values). Shapes are checked when the function is traced.

The functions are pure JAX: ``jit``, ``vmap`` (over controls, states or the actuator parameters, e.g.
per-world gains) and ``grad`` (w.r.t. controls, states or any parameter leaf) all work. They keep the
floating dtype of their array inputs (``ctrl``, ``q``, ``v``): parameters are cast to it, so float32
inputs give float32 forces even when the parameters were compiled in float64.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.definitions import AFFINE_DYNAMICS
from jaxmor.checks import as_finite, as_nonnegative, as_range, stored_failure, stored_problem
from jaxmor.errors import ArgumentError
from jaxmor.types import AffineActuators

__all__ = [
    "AffineActuatorDefinition",
    "AffineActuators",
    "affine_actuator_force",
    "affine_force",
    "affine_force_at",
    "affine_generalized_force",
    "affine_law",
    "clamp_ctrl",
    "compile_affine",
    "empty_affine",
    "joint_state",
    "law_inputs",
    "next_activation",
]

Range = tuple[float, float]


# --------------------------------------------------------------------------------------------------
# Definitions (plain Python, validated)
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AffineActuatorDefinition:
    """One affine actuator as declared in a robot description (the spec's ``Actuator``).

    ``tau = gear * clamp(gain * clamp(ctrl, ctrl_range) + bias_0 + bias_q * q + bias_v * v, force_range)``,
    see the module docstring. The joint index of the spec is resolved later, by
    :func:`compile_affine`, from the joint name. Every number is validated on construction.

    Attributes:
        name: actuator name, as declared in the source model.
        joint: name of the driven 1-DOF joint (``""`` for an actuator on a tendon).
        gear: gear ratio from actuator force to joint torque [Nm/N, m/m, or 1] (any sign, finite).
        gain: coefficient on the clamped control: 1 for a motor, kp for a position servo,
            kv for a velocity servo [actuator force per control unit].
        bias_0: constant bias force [actuator force] (MuJoCo's ``biasprm[0]``; 0 for the spec's actuators).
        bias_q: coefficient on the joint position: -kp for a position servo, else 0 [force/rad or force/m].
        bias_v: coefficient on the joint velocity: -kv for a servo, else 0 [force s/rad or force s/m].
        ctrl_range: ``(lo, hi)`` clamp on the control before the law, in control units; ``None``
            for unlimited.
        force_range: ``(lo, hi)`` clamp on the actuator force, before the gear (MuJoCo's
            ``forcerange``), in actuator-force units; ``None`` for unlimited.
        tendon: name of the pulled fixed tendon, ``""`` for an actuator on a joint; exactly one of ``joint`` and
            ``tendon`` is given. ``q`` and ``v`` of the law are then the tendon's length and rate.
        dynamics: the activation dynamics, one of :data:`AFFINE_DYNAMICS` (MuJoCo's ``dyntype``): with any but
            ``"none"`` the law takes the activation ``State.act`` in place of the clamped control (module
            docstring).
        time_constant: the activation's time constant [s] of a ``"filter"`` or ``"filterexact"`` actuator (MuJoCo's
            ``dynprm[0]``), ``> 0``.
        act_range: ``(lo, hi)`` clamp on the activation after each step (MuJoCo's ``actrange`` where ``actlimited``);
            ``None`` for unlimited.
        act_early: the law takes the activation of the step's end, not its start (MuJoCo's ``actearly``).
    """

    name: str
    joint: str
    gear: float = 1.0
    gain: float = 1.0
    bias_q: float = 0.0
    bias_v: float = 0.0
    ctrl_range: Range | None = None
    force_range: Range | None = None
    tendon: str = ""
    bias_0: float = 0.0
    dynamics: str = "none"
    time_constant: float = 1.0
    act_range: Range | None = None
    act_early: bool = False

    def __post_init__(self) -> None:
        for field in ("name", "joint", "tendon"):
            value = getattr(self, field)
            if not isinstance(value, str) or (field == "name" and not value):
                raise ArgumentError(f"affine actuator: {field} must be a non-empty string, got {value!r}")
        if not self.joint and not self.tendon:
            raise ArgumentError(f"affine actuator '{self.name}': joint must be a non-empty string (or give a tendon)")
        if self.joint and self.tendon:
            raise ArgumentError(
                f"affine actuator '{self.name}': give a joint or a tendon, not both (joint={self.joint!r}, "
                f"tendon={self.tendon!r})"
            )
        owner = f"affine actuator '{self.name}'"
        for field in ("gear", "gain", "bias_0", "bias_q", "bias_v"):
            object.__setattr__(self, field, as_finite(getattr(self, field), f"{owner}: {field}"))
        for field in ("ctrl_range", "force_range", "act_range"):
            object.__setattr__(self, field, as_range(getattr(self, field), f"{owner}: {field}"))
        if self.dynamics not in AFFINE_DYNAMICS:
            raise ArgumentError(f"{owner}: dynamics must be one of {AFFINE_DYNAMICS}, got {self.dynamics!r}")
        tau = as_finite(self.time_constant, f"{owner}: time_constant [s]")
        if not tau > 0:
            raise ArgumentError(f"{owner}: time_constant must be > 0 [s], got {tau!r}")
        object.__setattr__(self, "time_constant", tau)
        if not isinstance(self.act_early, (bool, np.bool_)):
            raise ArgumentError(f"{owner}: act_early must be a bool, got {self.act_early!r}")

    @classmethod
    def motor(
        cls,
        name: str,
        joint: str,
        gear: float = 1.0,
        ctrl_range: Range | None = None,
        force_range: Range | None = None,
    ) -> AffineActuatorDefinition:
        """A direct-force motor: ``tau = gear * clamp(clamp(ctrl), force_range)``."""
        return cls(name, joint, gear=gear, gain=1.0, ctrl_range=ctrl_range, force_range=force_range)

    @classmethod
    def position(
        cls,
        name: str,
        joint: str,
        kp: float,
        kv: float = 0.0,
        gear: float = 1.0,
        ctrl_range: Range | None = None,
        force_range: Range | None = None,
    ) -> AffineActuatorDefinition:
        """A position servo: ``tau = gear * (kp * (ctrl - q) - kv * v)`` (before the force clamp).

        ``kp`` [force/rad or force/m] and ``kv`` [force s/rad] must be finite and non-negative
        (negative gains make the servo push away from its target; use the general form for that).
        Equal to MuJoCo's ``<position>`` for ``gear = 1``; see the module docstring otherwise.
        """
        owner = f"affine actuator '{name}'"
        kp = as_nonnegative(kp, f"{owner}: kp")
        kv = as_nonnegative(kv, f"{owner}: kv")
        return cls(
            name, joint, gear=gear, gain=kp, bias_q=-kp, bias_v=-kv, ctrl_range=ctrl_range, force_range=force_range
        )

    @classmethod
    def velocity(
        cls,
        name: str,
        joint: str,
        kv: float,
        gear: float = 1.0,
        ctrl_range: Range | None = None,
        force_range: Range | None = None,
    ) -> AffineActuatorDefinition:
        """A velocity servo: ``tau = gear * kv * (ctrl - v)`` (before the force clamp).

        ``kv`` [force s/rad or force s/m] must be finite and non-negative. Equal to MuJoCo's
        ``<velocity>`` for ``gear = 1``; see the module docstring otherwise.
        """
        kv = as_nonnegative(kv, f"affine actuator '{name}': kv")
        return cls(name, joint, gear=gear, gain=kv, bias_v=-kv, ctrl_range=ctrl_range, force_range=force_range)

    @classmethod
    def from_mujoco(
        cls,
        name: str,
        joint: str,
        gear: float = 1.0,
        gainprm: float = 1.0,
        biasprm: Sequence[float] = (0.0, 0.0, 0.0),
        ctrl_range: Range | None = None,
        force_range: Range | None = None,
        tendon: str = "",
        dyntype: str = "none",
        dynprm: float = 1.0,
        act_range: Range | None = None,
        act_early: bool = False,
    ) -> AffineActuatorDefinition:
        """The exact equivalent of a MuJoCo affine actuator with a joint or a fixed-tendon transmission.

        Covers ``<motor>``, ``<position>``, ``<velocity>``, ``<intvelocity>`` and ``<general gaintype="fixed"
        biastype="affine"|"none">`` with ``dyntype`` ``none``, ``integrator``, ``filter`` or ``filterexact``.
        MuJoCo's law is
        ``gainprm[0] * ctrl + biasprm[0] + biasprm[1] * (gear * q) + biasprm[2] * (gear * v)``, so
        ``bias_0 = biasprm[0]``, ``bias_q = gear * biasprm[1]`` and ``bias_v = gear * biasprm[2]``.

        Args:
            gear: ``actuator_gear[0]``.
            gainprm: ``actuator_gainprm[0]``.
            biasprm: ``actuator_biasprm[:3]``.
            ctrl_range: the control range if ``actuator_ctrllimited``, else ``None``.
            force_range: the force range if ``actuator_forcelimited``, else ``None``.
            tendon: the pulled fixed tendon's name (with ``joint`` ``""``), for a tendon transmission; MuJoCo's
                actuator length is then ``gear`` times the tendon's length.
            dyntype: ``actuator_dyntype``'s name; the law then takes the activation for ``ctrl``.
            dynprm: ``actuator_dynprm[0]``, the filters' time constant [s].
            act_range: the activation range if ``actuator_actlimited``, else ``None``.
            act_early: ``actuator_actearly``.
        """
        owner = f"affine actuator '{name}'"
        gear = as_finite(gear, f"{owner}: gear")
        try:
            b0, b1, b2 = (biasprm[i] for i in range(3))
        except (TypeError, IndexError, KeyError):
            raise ArgumentError(f"{owner}: biasprm must hold at least 3 numbers, got {biasprm!r}") from None
        b0, b1, b2 = (as_finite(b, f"{owner}: biasprm[{i}]") for i, b in enumerate((b0, b1, b2)))
        return cls(
            name,
            joint,
            gear=gear,
            gain=gainprm,
            bias_q=gear * b1,
            bias_v=gear * b2,
            ctrl_range=ctrl_range,
            force_range=force_range,
            tendon=tendon,
            bias_0=b0,
            dynamics=dyntype,
            time_constant=dynprm,
            act_range=act_range,
            act_early=bool(act_early),
        )


# --------------------------------------------------------------------------------------------------
# Compiled actuators (a pytree)
# --------------------------------------------------------------------------------------------------


def _index(kind: str, mapping: Mapping[str, int], joint: str, actuator: str) -> int:
    if joint not in mapping:
        raise ArgumentError(f"affine actuator '{actuator}': unknown joint '{joint}' (not in {kind})")
    index = mapping[joint]
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise ArgumentError(f"{kind}['{joint}'] must be a non-negative int, got {index!r}")
    return int(index)


def _transmissions(definitions, joint_q_index, joint_v_index, tendon_index) -> tuple[list[int], list[int], list[int]]:
    """``(q_index, v_index, tendon)`` of each definition (``-1`` where it has none), checked as
    :func:`compile_affine` describes."""
    seen_names: set[str] = set()
    driven: dict[str, str] = {}
    q_index, v_index, tendon = [], [], []
    for d in definitions:
        if d.name in seen_names:
            raise ArgumentError(f"affine actuator '{d.name}': duplicate actuator name")
        seen_names.add(d.name)
        if d.tendon:
            if d.tendon not in (tendon_index or {}):
                raise ArgumentError(f"affine actuator '{d.name}': unknown tendon '{d.tendon}'")
            q_index.append(-1)
            v_index.append(-1)
            tendon.append(int(tendon_index[d.tendon]))
            continue
        qi = _index("joint_q_index", joint_q_index, d.joint, d.name)
        vi = _index("joint_v_index", joint_v_index, d.joint, d.name)
        if d.joint in driven:
            raise ArgumentError(
                f"affine actuator '{d.name}': joint '{d.joint}' is already driven by actuator '{driven[d.joint]}'"
            )
        driven[d.joint] = d.name
        q_index.append(qi)
        v_index.append(vi)
        tendon.append(-1)
    return q_index, v_index, tendon


def compile_affine(
    definitions: Sequence[AffineActuatorDefinition],
    joint_q_index: Mapping[str, int],
    joint_v_index: Mapping[str, int],
    tendon_index: Mapping[str, int] | None = None,
) -> AffineActuators:
    """Compile definitions into an :class:`AffineActuators` pytree, in the given order.

    Args:
        definitions: the actuators; names must be unique and no two may drive the same joint (several may pull
            one tendon: their forces add, as in MuJoCo).
        joint_q_index: joint name -> index of its coordinate in ``q``.
        joint_v_index: joint name -> index of its DOF in ``v``.
        tendon_index: tendon name -> its index in ``Model.tendons`` (needed by actuators on tendons).

    Raises:
        ArgumentError: for a non-definition entry, a duplicate actuator name, an unknown joint or tendon,
            a bad index, or two actuators on one joint.
    """
    definitions = tuple(definitions)
    for i, d in enumerate(definitions):
        if not isinstance(d, AffineActuatorDefinition):
            raise ArgumentError(f"definitions[{i}] must be an AffineActuatorDefinition, got {type(d).__name__}")
    q_index, v_index, tendon = _transmissions(definitions, joint_q_index, joint_v_index, tendon_index)
    dtype = jnp.result_type(float)

    def column(values: list[float], name: str) -> jnp.ndarray:
        array = np.asarray(values, dtype=np.float64).reshape(len(definitions))
        problem = stored_problem(array, dtype, coordinates=name.startswith(("ctrl", "force", "act")))
        if problem is not None:
            (i,), reason = problem
            raise ArgumentError(
                f"affine actuator '{definitions[i].name}': {name} {float(array[i])!r} {stored_failure(reason, dtype)}"
            )
        return jnp.asarray(array, dtype=dtype)

    inf = math.inf
    ctrl = [d.ctrl_range or (-inf, inf) for d in definitions]
    force = [d.force_range or (-inf, inf) for d in definitions]
    act = [d.act_range or (-inf, inf) for d in definitions]
    activated = any(d.dynamics != "none" for d in definitions)
    return AffineActuators(
        gear=column([d.gear for d in definitions], "gear"),
        gain=column([d.gain for d in definitions], "gain"),
        bias_0=column([d.bias_0 for d in definitions], "bias_0"),
        bias_q=column([d.bias_q for d in definitions], "bias_q"),
        bias_v=column([d.bias_v for d in definitions], "bias_v"),
        ctrl_lower=column([r[0] for r in ctrl], "ctrl_lower"),
        ctrl_upper=column([r[1] for r in ctrl], "ctrl_upper"),
        force_lower=column([r[0] for r in force], "force_lower"),
        force_upper=column([r[1] for r in force], "force_upper"),
        delay=jnp.asarray(np.asarray([getattr(d, "delay", 0) for d in definitions], np.float64)),
        time_constant=column([d.time_constant for d in definitions], "time_constant"),
        act_lower=column([r[0] for r in act], "act_lower"),
        act_upper=column([r[1] for r in act], "act_upper"),
        names=tuple(d.name for d in definitions),
        q_index=tuple(q_index),
        v_index=tuple(v_index),
        tendon=tuple(tendon) if any(t >= 0 for t in tendon) else (),
        dynamics=tuple(d.dynamics for d in definitions) if activated else (),
        act_early=tuple(bool(d.act_early) for d in definitions) if any(d.act_early for d in definitions) else (),
    )


def empty_affine() -> AffineActuators:
    """No affine actuators (``nu = 0``); every function then returns empty or zero forces."""
    return compile_affine((), {}, {})


# --------------------------------------------------------------------------------------------------
# The law (pure JAX)
# --------------------------------------------------------------------------------------------------


def _dtype(*xs: Any) -> Any:
    """The floating dtype of the inputs (the default float dtype for integer inputs)."""
    dtype = jnp.result_type(*xs)
    return dtype if jnp.issubdtype(dtype, jnp.inexact) else jnp.result_type(float)


def _check_last(act: AffineActuators, name: str, x: jnp.ndarray) -> None:
    if x.ndim == 0 or x.shape[-1] != act.nu:
        raise ArgumentError(f"{name} must have shape (..., nu) with nu = {act.nu}, got {x.shape}")


def clamp_ctrl(act: AffineActuators, ctrl: jnp.ndarray) -> jnp.ndarray:
    """Clamp raw controls, shape ``(..., nu)``, to each actuator's ``ctrl_range``."""
    ctrl = jnp.asarray(ctrl)
    _check_last(act, "ctrl", ctrl)
    dtype = _dtype(ctrl)
    return jnp.clip(ctrl.astype(dtype), act.ctrl_lower.astype(dtype), act.ctrl_upper.astype(dtype))


def affine_actuator_force(
    act: AffineActuators, ctrl: jnp.ndarray, q_joint: jnp.ndarray, v_joint: jnp.ndarray
) -> jnp.ndarray:
    """Actuator force ``clamp(gain * clamp(ctrl) + bias_0 + bias_q * q + bias_v * v, force_range)``, before the gear.

    This is MuJoCo's ``actuator_force`` of actuators without activation dynamics. ``ctrl``, ``q_joint`` and
    ``v_joint`` have shape ``(..., nu)`` (``q_joint``/``v_joint`` are the driven joints' coordinates, see
    :func:`joint_state`).
    """
    ctrl = jnp.asarray(ctrl)
    _check_last(act, "ctrl", ctrl)
    return affine_law(act, clamp_ctrl(act, ctrl), q_joint, v_joint)


def affine_law(act: AffineActuators, inputs: jnp.ndarray, q_joint: jnp.ndarray, v_joint: jnp.ndarray) -> jnp.ndarray:
    """Actuator force ``clamp(gain * inputs + bias_0 + bias_q * q + bias_v * v, force_range)``, before the gear, at
    the law's ``inputs`` ``(..., nu)``: the clamped controls, or the activations (:func:`law_inputs`)."""
    inputs, q_joint, v_joint = jnp.asarray(inputs), jnp.asarray(q_joint), jnp.asarray(v_joint)
    for name, x in (("inputs", inputs), ("q_joint", q_joint), ("v_joint", v_joint)):
        _check_last(act, name, x)
    dtype = _dtype(inputs, q_joint, v_joint)
    c = inputs.astype(dtype)
    raw = act.gain.astype(dtype) * c + act.bias_0.astype(dtype)
    raw = raw + act.bias_q.astype(dtype) * q_joint + act.bias_v.astype(dtype) * v_joint
    return jnp.clip(raw.astype(dtype), act.force_lower.astype(dtype), act.force_upper.astype(dtype))


def next_activation(act: AffineActuators, ctrl: jnp.ndarray, activation: jnp.ndarray, h: jnp.ndarray) -> jnp.ndarray:
    """(nu,) the activations after a step of ``h`` [s] from ``activation`` (nu,) under the controls ``ctrl`` (nu,),
    clamped first to ``ctrl_range``: MuJoCo's ``mj_nextActivation``. ``integrator``: ``act + h c``; ``filter``:
    ``act + h (c - act) / tau`` (explicit Euler); ``filterexact``: ``act + (c - act) (1 - exp(-h / tau))``; then
    clamped to ``[act_lower, act_upper]``. An actuator without dynamics keeps its activation."""
    activation = jnp.asarray(activation)
    if not act.activated:
        return activation
    c = clamp_ctrl(act, ctrl).astype(activation.dtype)
    dtype = activation.dtype
    tau = act.time_constant.astype(dtype)
    kind = np.array(act.dynamics)
    moved = jnp.where(
        kind == "integrator",
        activation + h * c,
        jnp.where(
            kind == "filter",
            activation + h * (c - activation) / tau,
            activation - (c - activation) * jnp.expm1(-h / tau),
        ),
    )
    moved = jnp.clip(moved, act.act_lower.astype(dtype), act.act_upper.astype(dtype))
    return jnp.where(kind == "none", activation, moved)


def law_inputs(act: AffineActuators, ctrl: jnp.ndarray, activation: jnp.ndarray, h: jnp.ndarray) -> jnp.ndarray:
    """(nu,) what each actuator's law takes in a step of ``h`` [s]: its control clamped to ``ctrl_range``, or, with
    activation dynamics, its activation: ``activation`` as the step starts, or with ``act_early`` as it ends
    (:func:`next_activation`)."""
    c = clamp_ctrl(act, ctrl)
    if not act.activated:
        return c
    activation = jnp.asarray(activation, c.dtype)
    if any(act.act_early):
        activation = jnp.where(np.array(act.act_early), next_activation(act, ctrl, activation, h), activation)
    return jnp.where(np.array(act.dynamics) == "none", c, activation)


def affine_force_at(act: AffineActuators, ctrl: jnp.ndarray, q_joint: jnp.ndarray, v_joint: jnp.ndarray) -> jnp.ndarray:
    """The spec's ``force_at``: joint torque ``gear * affine_actuator_force(...)`` per actuator, ``(..., nu)``."""
    force = affine_actuator_force(act, ctrl, q_joint, v_joint)
    return act.gear.astype(force.dtype) * force


def affine_force(act: AffineActuators, ctrl: jnp.ndarray) -> jnp.ndarray:
    """The spec's ``force``: ``gear * clamp(gain * clamp(ctrl) + bias_0, force_range)``, ignoring state feedback.

    Exact for motors; servos also depend on ``q`` and ``v`` (use :func:`affine_force_at`).
    """
    ctrl = jnp.asarray(ctrl)
    zero = jnp.zeros(ctrl.shape, _dtype(ctrl))
    return affine_force_at(act, ctrl, zero, zero)


def joint_state(act: AffineActuators, q: jnp.ndarray, v: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The driven joints' positions ``q[q_index]`` and velocities ``v[v_index]``, each ``(nu,)``.

    Raises:
        ArgumentError: an actuator pulls a tendon (its length needs the model:
            :func:`jaxmor.sim.tendons.actuator_coordinates`).
    """
    if act.on_tendons:
        raise ArgumentError(
            "an affine actuator pulls a tendon, whose length needs the model: use "
            "jaxmor.sim.tendons.actuator_coordinates(model, q, u) and jaxmor.generalized_force"
        )
    q, v = jnp.asarray(q), jnp.asarray(v)
    for name, x, index in (("q", q, act.q_index), ("v", v, act.v_index)):
        if x.ndim != 1:
            raise ArgumentError(f"{name} must be a vector (use vmap for batches), got shape {x.shape}")
        if index and max(index) >= x.shape[0]:
            raise ArgumentError(f"{name} has length {x.shape[0]}, but an actuator drives index {max(index)}")
    q_idx = np.asarray(act.q_index, dtype=np.int64)
    v_idx = np.asarray(act.v_index, dtype=np.int64)
    return q[q_idx], v[v_idx]


def affine_generalized_force(
    act: AffineActuators, ctrl: jnp.ndarray, q: jnp.ndarray, v: jnp.ndarray, nv: int | None = None
) -> jnp.ndarray:
    """Generalized force ``(nv,)`` of all affine actuators (MuJoCo's ``qfrc_actuator``).

    Gathers ``q[q_index]`` and ``v[v_index]``, evaluates the law and adds ``gear * force`` into the
    driven DOFs; other DOFs get 0. For batches of worlds, ``vmap`` this function.

    Args:
        act: the compiled actuators.
        ctrl: raw controls, shape ``(nu,)``.
        q: generalized coordinates, shape ``(nq,)``.
        v: generalized velocities, shape ``(nv,)``.
        nv: length of the result; defaults to ``v.shape[0]`` and must equal it when given.
    """
    ctrl, q, v = jnp.asarray(ctrl), jnp.asarray(q), jnp.asarray(v)
    if ctrl.shape != (act.nu,):
        raise ArgumentError(f"ctrl must have shape ({act.nu},) (use vmap for batches), got {ctrl.shape}")
    q_joint, v_joint = joint_state(act, q, v)
    if nv is None:
        nv = v.shape[0]
    if isinstance(nv, bool) or not isinstance(nv, (int, np.integer)) or nv != v.shape[0]:
        raise ArgumentError(f"nv must be the int length of v ({v.shape[0]}), got {nv!r}")
    return to_dofs(act, affine_force_at(act, ctrl, q_joint, v_joint), int(nv))


def to_dofs(act: AffineActuators, torque: jnp.ndarray, nv: int) -> jnp.ndarray:
    """(nv,) the joint actuators' torques ``torque`` (nu,) [Nm or N] added into their DOFs (``act.v_index``); the
    other DOFs get 0."""
    return jnp.zeros((nv,), torque.dtype).at[np.asarray(act.v_index, np.int32)].add(torque)
