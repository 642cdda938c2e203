"""Backlash: a dead band in each gear between the motor and the joint it drives.

An actuator with backlash (:class:`jaxmor.types.Backlash`) has a rotor of its own: a degree of freedom on the joint
side of the gear, at angle ``y + s`` and velocity ``dy/dt + r``, with ``y = T_a q / G_a`` the gear output's coordinate
(the driven joint's, plus its couplings' share), ``s`` the play (``State.backlash_play``), ``r`` its rate
(``State.backlash_rate``) and the inertia ``I_r`` (``Backlash.inertia``, the rotor's ``G^2 J_rotor``). The actuator
acts on the rotor: its motor torque, clipped to the region at the rotor's speed, cogging at the rotor's angle, LuGre
friction, the actuator PD and a motor-side drive controller (which read the motor's encoder, :func:`rotor_view`); the
actuator's output damping and friction, and a joint-side drive controller, stay on the joint. The rotor reaches the
joint only through the gear's teeth: a limit row of the constraint solver on the play, ``|s| <= width / 2``, solved
with the contacts and joint limits (:mod:`jaxmor.sim.constraint`). With ``h`` the time step and ``c`` the LuGre
slope::

    m = I_r + h c,    w_free = (T_a u / G_a + r) + h tau_rotor / m
    row velocity v = w_rotor - T_a u / G_a (Jacobian -T_a / G_a on u, +1 on the rotor),  A_rr += 1 / m
    (-width/2 - s) / h <= v <= (width/2 - s) / h    (speculative, at most 0 / at least 0, as a joint limit's)
    w_next = w_free + lam / m,   r' = w_next - T_a u_next / G_a,   s' = s + h (r' + w_pos - T_a u_pos / G_a)

The teeth therefore meet without bouncing (the speculative bound lands the play exactly at the edge: a perfectly
inelastic impact at take-up, solved together with everything else the step constrains) and push only while the
rotor drives the joint into them. ``docs/design/backlash.md`` has the derivation and the limits.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.checks import as_stored, concrete
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.math import gauss_jordan
from jaxmor.model import joint_coordinates
from jaxmor.types import Model, State


def backlash_actuators(model: Model) -> np.ndarray:
    """(nb,) int32 indices of the actuators with backlash (static)."""
    return np.flatnonzero(np.asarray(model.actuators.backlash.active, bool)).astype(np.int32)


def backlash_dofs(model: Model) -> np.ndarray:
    """(nb,) int32 velocity indices of their driven joints (static)."""
    return np.asarray(model.actuators.joint_v_index, np.int32)[backlash_actuators(model)]


def active_mask(model: Model, dtype) -> jax.Array:
    """(na,) 1 where an actuator has backlash, else 0."""
    return jnp.asarray(np.asarray(model.actuators.backlash.active, bool), dtype)


def _view_shift(model: Model, play: jax.Array) -> jax.Array:
    """(nb,) what the view adds to the backlash joints' coordinates (or velocities) for a play (or its rate) ``play``
    (nb,): the ``d`` with ``T_b[:, joints_b] d = G_b play_b``, so that each motor's transmission ``T_a`` reads its
    rotor, ``G_a`` times its gear output plus its play, also where it is coupled to another backlash joint (without
    couplings ``d = play``). Solved by :func:`jaxmor.math.gauss_jordan` (no LAPACK)."""
    act, dofs = backlash_actuators(model), backlash_dofs(model)
    transmission = model.actuators.transmission.astype(play.dtype)[act][:, dofs]
    gear = model.actuators.gear_ratio.astype(play.dtype)[act]
    if not model.actuators.coupling_actuator:
        return play
    return gauss_jordan(transmission, (gear * play)[:, None])[:, 0]


def rotor_view(model: Model, state: State) -> State:
    """The state as the actuators see it (their motors' encoders): each backlash joint's coordinate and velocity
    shifted so that every motor's transmission gives its rotor's angle and speed (:func:`_view_shift`; the joint's
    plus the play and its rate, without couplings); ``state`` itself without backlash."""
    if not model.actuators.backlash.any_active:
        return state
    dofs = backlash_dofs(model)
    q_of_v = dict(zip(model.joint_u, model.joint_q, strict=True))
    q_index = np.array([q_of_v[v] for v in dofs], dtype=np.int32)
    return state.replace(
        q=state.q.at[q_index].add(_view_shift(model, state.backlash_play)),
        u=state.u.at[dofs].add(_view_shift(model, state.backlash_rate)),
    )


def rotor_coordinates(model: Model, view: State) -> tuple[jax.Array, jax.Array]:
    """``(angle, velocity)`` (na,) of each actuator's driven joint as its motor reads it, from the state's view
    (:func:`rotor_view`) [rad or m, rad/s or m/s]: the joint's own where the actuator has no backlash."""
    dofs = np.asarray(model.actuators.joint_v_index, np.int32)
    return joint_coordinates(model, view.q)[dofs], view.u[dofs]


def rotor_inertia(model: Model, dtype) -> jax.Array:
    """(nb,) the rotors' inertia on the joint side [kg m^2 or kg]."""
    return jnp.asarray(model.actuators.backlash.inertia, dtype)[backlash_actuators(model)]


def _output_matrix(model: Model, dtype) -> jax.Array:
    """(nb, nv) the gear outputs' Jacobian ``T_b / G_b`` of the actuators with backlash: the velocity of the joint
    side of each gear (the driven joint's, plus its couplings' share)."""
    act = backlash_actuators(model)
    transmission = model.actuators.transmission.astype(dtype)[act]
    return transmission / model.actuators.gear_ratio.astype(dtype)[act][:, None]


def free_rotor_velocity(model: Model, state: State, torque: jax.Array, slope: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(w_free, 1/m)`` (nb,) of the rotors: their end-of-step velocity without the teeth's impulse and the inverse
    of their effective inertia ``m = I_r + h c`` (``torque`` the actuators' torque on them, ``slope`` ``c``)."""
    dtype = state.u.dtype
    if not model.actuators.backlash.any_active:  # no operation in the compiled step
        return jnp.zeros(0, dtype), jnp.zeros(0, dtype)
    h = jnp.asarray(model.opt.timestep, dtype)
    velocity = _output_matrix(model, dtype) @ state.u + state.backlash_rate
    inverse = 1.0 / (rotor_inertia(model, dtype) + h * slope)
    return velocity + h * torque * inverse, inverse


def gap_jacobian(model: Model, dtype) -> jax.Array:
    """(nb, nv) the joint side of the teeth rows' Jacobian: ``-T_b / G_b``, minus each gear output's velocity
    (``-1`` at the driven joint's velocity, without couplings)."""
    return -_output_matrix(model, dtype)


def gap_limits(model: Model, state: State) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(lower, upper, play)`` (nb,) of the teeth rows: ``-+width/2`` and the play at the step's start [rad or m]."""
    dtype = state.u.dtype
    if not model.actuators.backlash.any_active:
        return jnp.zeros(0, dtype), jnp.zeros(0, dtype), jnp.zeros(0, dtype)
    act = backlash_actuators(model)
    half = 0.5 * jnp.asarray(model.actuators.backlash.width, dtype)[act]
    return -half, half, state.backlash_play


def rotor_velocities(
    free_velocity: jax.Array, inverse_inertia: jax.Array, impulse: jax.Array, correction: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``(w_next, w_pos)`` (nb,): the rotors' end-of-step velocity and position-correction pseudo-velocity from the
    teeth rows' impulses of the velocity and the position problems."""
    if not free_velocity.shape[0]:
        return free_velocity, free_velocity
    return free_velocity + inverse_inertia * impulse, inverse_inertia * correction


def next_play(
    model: Model, state: State, u_next: jax.Array, u_pos: jax.Array, rotor: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    """``(backlash_play, backlash_rate)`` (nb,) at the end of the step, from the joints' ``u_next``, ``u_pos`` and
    the rotors' ``(w_next, w_pos)`` (:func:`rotor_velocities`)."""
    if not model.actuators.backlash.any_active:
        return state.backlash_play, state.backlash_rate
    h = jnp.asarray(model.opt.timestep, state.u.dtype)
    output = _output_matrix(model, state.u.dtype)
    w_next, w_pos = rotor
    rate = w_next - output @ u_next
    return state.backlash_play + h * (rate + w_pos - output @ u_pos), rate


def rotor_velocity_view(model: Model, u: jax.Array, rate: jax.Array) -> jax.Array:
    """(nv,) ``u`` as the actuators see it (:func:`rotor_view`) for the plays' rates ``rate`` (nb,)."""
    if not model.actuators.backlash.any_active:
        return u
    return u.at[backlash_dofs(model)].add(_view_shift(model, rate))


def with_backlash(
    model: Model,
    width: ArrayLike,
    inertia: ArrayLike | None = None,
    *,
    actuators: Sequence[str] | None = None,
) -> Model:
    """A model whose selected actuators have backlash in their gears (module docstring).

    Args:
        model: the model (unbatched).
        width: the dead band's full width at the joint [rad or m], a number or one per selected actuator, finite and
            ``>= 0`` (0: the teeth touch on both sides, a rigid gear through the solver).
        inertia: the rotor's inertia reflected to the joint, ``G^2 J_rotor`` [kg m^2 or kg], a number or one per
            selected actuator, finite and ``> 0``. ``None`` moves each driven joint's armature (``dof_armature``,
            the reflected rotor inertia of MJCF ``armature`` and URDF ``rotor_inertia``) to its rotor; a number
            leaves the armature on the joint, which then stands for the joint side alone.
        actuators: the names of the actuators that get it (``None``: all), in the order of the per-actuator values.

    Returns:
        The model with ``actuators.backlash`` set for the selected actuators (the others keep theirs). A State made
        for the old model fits it (the play starts at 0, centred).

    Raises:
        ArgumentError: an unknown actuator; an actuator with couplings, or whose joint another actuator drives too;
            a width or inertia of the wrong shape, not finite, out of range or not held by the model's dtype; no
            inertia given for a joint without armature.
    """
    act = model.actuators
    names = list(act.names if actuators is None else actuators)
    if isinstance(actuators, str) or any(n not in act.names for n in names):
        raise ArgumentError(
            f"with_backlash: unknown actuators {brief_repr(actuators)}; the actuators are {list(act.names)}"
        )
    index = np.array([act.names.index(n) for n in names], dtype=np.int64)
    _check_transmission(model, index)
    dtype = act.backlash.width.dtype
    widths = _per_actuator(width, len(names), "width", dtype, positive=False)
    dofs = np.asarray(act.joint_v_index, np.int64)[index]
    armature = model.dof_armature
    if inertia is None:
        inertias = np.asarray(concrete(armature), np.float64)[dofs]
        if np.any(inertias <= 0):
            bad = [names[i] for i in np.flatnonzero(inertias <= 0)]
            raise ArgumentError(
                f"with_backlash: the joints of {bad} have no armature to move to the rotor; pass inertia= "
                "(the rotor's inertia reflected to the joint, kg m^2 or kg, > 0)"
            )
        armature = armature.at[dofs].set(0.0)
    else:
        inertias = _per_actuator(inertia, len(names), "inertia", dtype, positive=True)
    old = act.backlash
    active = list(old.active)
    for i in index:
        active[i] = True
    backlash = old.replace(
        width=jnp.asarray(old.width).at[index].set(jnp.asarray(widths, dtype)),
        inertia=jnp.asarray(old.inertia).at[index].set(jnp.asarray(inertias, dtype)),
        active=tuple(active),
    )
    return model.replace(actuators=act.replace(backlash=backlash), dof_armature=armature)


def _check_transmission(model: Model, index: np.ndarray) -> None:
    """Backlash needs an actuator that alone drives its joint (its play is that of one gear)."""
    act = model.actuators
    shared = [act.names[i] for i in index if list(act.joint_v_index).count(act.joint_v_index[i]) > 1]
    if shared:
        raise ArgumentError(
            f"with_backlash: backlash needs an actuator that alone drives its joint; {shared} share theirs with "
            "another actuator"
        )


def _per_actuator(value: ArrayLike, n: int, name: str, dtype, positive: bool) -> np.ndarray:
    """``value`` as (n,) float64 values, finite and ``>= 0`` (``> 0`` when ``positive``), held by ``dtype``."""
    found = concrete(value)
    if found is None:
        raise ArgumentError(f"with_backlash: {name} must be concrete (it sets the model), got a traced value")
    if found.dtype.kind not in "fiu" or found.ndim > 1 or (found.ndim == 1 and found.shape != (n,)):
        raise ArgumentError(f"with_backlash: {name} must be a number or ({n},) numbers, got {brief_repr(value)}")
    values = np.broadcast_to(found.astype(np.float64), (n,))
    bad = ~np.isfinite(values) | ((values <= 0) if positive else (values < 0))
    if bad.any():
        bound = "> 0" if positive else ">= 0"
        raise ArgumentError(f"with_backlash: {name} must be finite and {bound}, got {brief_repr(value)}")
    as_stored(values, f"with_backlash: {name}", dtype)
    return values
