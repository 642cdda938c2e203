"""A world's :class:`~jaxmor.State`: making it, checking that it fits its model, and every setter.

Every setter has the form ``set_...(model, state, ...) -> State`` and returns a new State (the model
gives the sizes, names and limits the arguments are checked against). Shapes are checked whenever the
setter runs; values (finite, non-negative, a valid bus voltage) are checked when they are concrete,
outside ``jit`` (:mod:`jaxmor.checks`). Inputs hold until set again, except external forces, which the
step clears.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.actuation.motor import motor_problem
from jaxmor.actuation.motor_dynamics import ABSOLUTE_ZERO, MotorState, initial_motor_state
from jaxmor.actuation.residual import SIGNALS, history_length, signals
from jaxmor.checks import as_array, as_stored, as_vector, check_real_dtype, concrete, refuse_traced
from jaxmor.errors import ArgumentError
from jaxmor.math import rotation_to_quat
from jaxmor.model import ball_joints, joint_coordinates, neutral_q, resolve_actuator
from jaxmor.sim.collision.budget import contact_budget, initial_keys
from jaxmor.sim.kinematics import point_jacobian
from jaxmor.types import ActuatorState, Keyframe, Model, State

# --------------------------------------------------------------------------------------------------
# Making a state, and checking that one fits a model.


def zero_actuator_state(na: int, dtype: Any = None) -> ActuatorState:
    """Actuator states of a world that has not stepped yet: all zero, saturation NONE."""
    zero = jnp.zeros((na,), dtype)
    return ActuatorState(
        motor_speed=zero,
        average_motor_speed=zero,
        commanded_motor_torque=zero,
        motor_torque=zero,
        joint_loss_torque=zero,
        saturation=jnp.zeros((na,), jnp.int32),
        valid=jnp.ones((na,), bool),
        current=zero,
        voltage=zero,
        derating=jnp.ones((na,), dtype),
    )


def init_state(model: Model, q: ArrayLike | None = None, u: ArrayLike | None = None) -> State:
    """A world's state at time 0: at rest in the neutral configuration unless ``q``/``u`` are given.

    Actuator torques and controls are zero, bus voltages are the robot description's, and the motor
    operating regions are enforced.

    Args:
        model: the model.
        q: (nq,) generalized coordinates; default :func:`jaxmor.neutral_q`.
        u: (nv,) generalized velocities; default zero.

    Returns:
        The state, in the model's floating dtype.

    Raises:
        ArgumentError: ``q`` or ``u`` has the wrong shape.
    """
    dtype = model.body_mass.dtype
    q = neutral_q(model) if q is None else as_vector(q, model.nq, "q", dtype)
    u = jnp.zeros((model.nv,), dtype) if u is None else as_vector(u, model.nv, "u", dtype)
    zero_v = jnp.zeros((model.nv,), dtype)
    return State(
        q=q,
        u=u,
        time=jnp.zeros((), dtype),
        time_compensation=jnp.zeros((), dtype),
        feedforward_force=zero_v,
        pd_p_gain=zero_v,
        pd_d_gain=zero_v,
        pd_position_target=zero_v,
        pd_velocity_target=zero_v,
        external_force=zero_v,
        mor_enforced=jnp.asarray(True),
        actuation_limit=jnp.asarray(model.dof_effort_limit, dtype),
        contact_impulse=jnp.zeros((contact_budget(model), 3), dtype),
        contact_key=jnp.asarray(initial_keys(model)),
        contact_overflow=jnp.zeros((), jnp.int32),
        friction_impulse=zero_v,
        limit_impulse=zero_v,
        equality_impulse=jnp.zeros((model.equality.rows,), dtype),
        nonfinite=jnp.asarray(False),
        invalid=jnp.asarray(False),
        step_count=jnp.zeros((), jnp.int32),
        **_actuator_inputs(model, q, u, dtype),
        **initial_mocap(model, dtype),
    )


def initial_mocap(model: Model, dtype) -> dict[str, jax.Array]:
    """``mocap_pos`` and ``mocap_quat`` as a world starts: each mocap body where the description puts it."""
    links = np.array(model.mocap_links, dtype=np.int32)
    rotation = jnp.asarray(model.link_rotation, dtype)[links].reshape(-1, 3, 3)
    return {
        "mocap_pos": jnp.asarray(model.link_translation, dtype)[links].reshape(-1, 3),
        "mocap_quat": rotation_to_quat(rotation).reshape(-1, 4),
    }


def delay_slots(model: Model) -> int:
    """The slots of the command buffers (``State.command_history``): ``max_delay + 1``, or 0 without delay."""
    return model.max_delay + 1 if model.max_delay > 0 else 0


def initial_history(model: Model, q: jax.Array, u: jax.Array) -> jax.Array:
    """(na, history - 1, 3) the learned residual's history before the first step: no command, the motors at the
    speeds and angles of ``q`` and ``u``, as if held there (:mod:`jaxmor.actuation.residual`)."""
    act = model.actuators
    shape = (model.na, history_length(act.residual), len(SIGNALS))
    if not shape[1]:
        return jnp.zeros(shape, u.dtype)
    transmission, gear = act.transmission.astype(u.dtype), act.gear_ratio.astype(u.dtype)
    now = signals(transmission, gear, jnp.zeros_like(gear), u, joint_coordinates(model, q))
    return jnp.broadcast_to(now[:, None, :], shape)


def _initial_bus_voltage(model: Model, dtype) -> jax.Array:
    """(na,) the description's bus voltages, or the battery's open-circuit voltage when the model has one."""
    if model.battery.enabled:
        return jnp.broadcast_to(jnp.asarray(model.battery.open_circuit_voltage, dtype), (model.na,))
    return jnp.asarray(model.actuators.motor.bus_voltage, dtype)


def state_shapes(model: Model) -> dict[str, tuple[int, ...]]:
    """The shape of every field of a State of one world of ``model``, from the fields' declared ``dims``
    (``actuator_state.*`` and ``motor_state.*`` for the leaves of the nested ones)."""
    counts = {"nq": model.nq, "nv": model.nv, "na": model.na, "nu": model.nu, "nc": contact_budget(model)}
    counts["ne"] = model.equality.rows
    counts["nd"] = delay_slots(model)
    counts["nhist"] = history_length(model.actuators.residual)
    counts["nbl"] = sum(model.actuators.backlash.active)
    counts["nmocap"] = len(model.mocap_links)
    shapes = {}
    for field in dataclasses.fields(State):
        shape = tuple(counts.get(d, d) for d in field.metadata["dims"])
        nested = {"actuator_state": ActuatorState, "motor_state": MotorState}.get(field.name)
        if nested is None:
            shapes[field.name] = shape
        else:
            shapes.update({f"{field.name}.{leaf.name}": shape for leaf in dataclasses.fields(nested)})
    return shapes


def control_fields() -> tuple[str, ...]:
    """The names of the State's inputs a rollout can set per step (declared ``control``), in field order."""
    return tuple(f.name for f in dataclasses.fields(State) if f.metadata["control"])


def check_state(model: Model, state: State, where: str, batch_ndim: int = 0) -> None:
    """Check that a State (or a batch of them) fits a model; free at run time (shapes and dtypes only).

    Args:
        model: the model.
        state: the state; with ``batch_ndim`` leading world axes on every field.
        where: the calling function, for the message.
        batch_ndim: number of leading batch axes.

    Raises:
        ArgumentError: ``state`` is not a State, a field is not real numbers (complex, strings: e.g. torques
            put in with ``state.replace``), or a field has the wrong shape; the message names the field, the
            shapes and the likely cause.
    """
    if not isinstance(state, State):
        raise ArgumentError(f"{where}: state must be a jaxmor State, got {type(state).__name__}")
    for name, expected in state_shapes(model).items():
        value = state
        for part in name.split("."):
            value = getattr(value, part)
        check_real_dtype(value, f"{where}: state.{name}")
        got = tuple(np.shape(value))
        if got[batch_ndim:] == expected and len(got) == batch_ndim + len(expected):
            continue
        if batch_ndim == 0 and got[1:] == expected:
            hint = "a batch of worlds? vmap the function over the worlds, or use jaxmor.rollout_batch"
        elif name in ("contact_impulse", "contact_key"):
            hint = (
                "the state was made for another contact layout (e.g. before add_ground, "
                "with_self_collision or a new opt.contact_budget): make it again with jaxmor.init_state(model)"
            )
        else:
            hint = "the state was made for another model: make it with jaxmor.init_state(model)"
        lead = f"(worlds...) + {expected}" if batch_ndim else f"{expected}"
        raise ArgumentError(f"{where}: state.{name} has shape {got}, but the model needs {lead}; {hint}")


# --------------------------------------------------------------------------------------------------
# Joint inputs: feed-forward force, built-in PD, actuation limits, external forces.


def _joint_only(model: Model, value: np.ndarray | None, name: str) -> None:
    """Refuse nonzero (concrete) entries on the velocities of a floating base and of ball joints (the built-in
    PD acts on 1-DoF joints only)."""
    if value is None:
        return
    base = np.array([v + k for v in model.free_u for k in range(6)], dtype=np.int64)
    if np.any(value[base] != 0):
        raise ArgumentError(f"{name} must be zero on the floating base's six velocities, got {value[base].tolist()}")
    for b, _, v in ball_joints(model):
        if np.any(value[v : v + 3] != 0):
            raise ArgumentError(
                f"{name} must be zero on the three velocities of ball joint '{model.body_joint_name[b]}' (the PD "
                f"drives 1-DoF joints), got {value[v : v + 3].tolist()}"
            )


def set_generalized_force(model: Model, state: State, force: ArrayLike) -> State:
    """Set the feed-forward generalized force (nv,) [N, Nm] (``State.feedforward_force``); it holds until set again.

    It is clamped, together with the explicit part of the built-in PD torque, to the actuation
    limits (:func:`set_actuation_limits`); the motor operating regions do not clip it.

    Raises:
        ArgumentError: wrong shape, or non-finite (checked outside ``jit``).
    """
    check_state(model, state, "set_generalized_force")
    return state.replace(feedforward_force=as_vector(force, model.nv, "force", state.u.dtype, finite=True))


def set_pd_gains(model: Model, state: State, p_gain: ArrayLike, d_gain: ArrayLike) -> State:
    """Set the built-in joint PD controller's gains, each (nv,) [Nm/rad, Nm s/rad or N/m, N s/m].

    The PD torque is integrated implicitly (stable for any gain) and its explicit part is clamped to
    the actuation limits; it is not an actuator torque and the motor regions do not clip it.

    Raises:
        ArgumentError: wrong shapes, negative or non-finite gains, or gains on a floating base.
    """
    check_state(model, state, "set_pd_gains")
    kp, kd = _gains(p_gain, d_gain, model.nv, state.u.dtype)
    for name, given in (("p_gain", p_gain), ("d_gain", d_gain)):
        _joint_only(model, concrete(given), name)
    return state.replace(pd_p_gain=kp, pd_d_gain=kd)


def _gains(p_gain: ArrayLike, d_gain: ArrayLike, n: int, dtype: Any) -> tuple[jax.Array, jax.Array]:
    """PD gains ``(kp, kd)``, each (n,): shapes and finiteness checked, and concrete values non-negative."""
    kp = as_vector(p_gain, n, "p_gain", dtype, finite=True)
    kd = as_vector(d_gain, n, "d_gain", dtype, finite=True)
    for name, given in (("p_gain", p_gain), ("d_gain", d_gain)):
        value = concrete(given)
        if value is not None and np.any(value < 0):
            raise ArgumentError(f"{name} must not be negative, got {value.tolist()}")
    return kp, kd


def set_pd_targets(model: Model, state: State, position_target: ArrayLike, velocity_target: ArrayLike) -> State:
    """Set the PD targets: ``position_target`` (nq,) like ``q`` (the floating base's entries are
    ignored) [rad or m], ``velocity_target`` (nv,) [rad/s or m/s].

    Raises:
        ArgumentError: wrong shapes or non-finite values.
    """
    check_state(model, state, "set_pd_targets")
    qt = as_vector(position_target, model.nq, "position_target", state.u.dtype, finite=True)
    vt = as_vector(velocity_target, model.nv, "velocity_target", state.u.dtype, finite=True)
    q_idx, v_idx = np.array(model.joint_q, dtype=np.int32), np.array(model.joint_u, dtype=np.int32)
    per_dof = jnp.zeros(model.nv, state.u.dtype).at[v_idx].set(qt[q_idx])
    return state.replace(pd_position_target=per_dof, pd_velocity_target=vt)


def set_actuation_limits(model: Model, state: State, limit: ArrayLike) -> State:
    """Set the limits (nv,) of ``|feed-forward force + explicit PD|`` [Nm or N]; ``inf`` for none.

    They do not clip actuator torques (the motor operating regions do).

    Raises:
        ArgumentError: wrong shape, or a negative or NaN limit.
    """
    check_state(model, state, "set_actuation_limits")
    arr = as_vector(limit, model.nv, "limit", state.u.dtype)
    value = concrete(limit)
    if value is not None and np.any(np.isnan(value) | (value < 0)):
        raise ArgumentError(f"limit must be non-negative (inf allowed), got {value.tolist()}")
    return state.replace(actuation_limit=arr)


def set_external_force(
    model: Model,
    state: State,
    link: str | int,
    force: ArrayLike,
    point: ArrayLike | None = None,
    torque: ArrayLike | None = None,
) -> State:
    """Apply a world-frame force [N] at a point of a link (and optionally a torque [Nm]) for the next
    step. Forces set before one step add up; the step clears them. They are not clipped.

    Args:
        model: the model.
        state: the state (its ``q`` places the point).
        link: link name or index.
        force: (3,) force in world coordinates [N].
        point: (3,) application point in the link's frame [m]; default its origin.
        torque: (3,) optional world-frame torque [Nm].

    Raises:
        ArgumentError: unknown link, wrong shapes or non-finite values.
    """
    check_state(model, state, "set_external_force")
    f = as_vector(force, 3, "force", state.u.dtype, finite=True)
    p = None if point is None else as_vector(point, 3, "point", state.u.dtype, finite=True)
    jac = point_jacobian(model, state.q, link, p, angular=True)
    moment = jnp.zeros(3, f.dtype) if torque is None else as_vector(torque, 3, "torque", f.dtype, finite=True)
    return state.replace(external_force=state.external_force + jac.T @ jnp.concatenate([f, moment]))


# --------------------------------------------------------------------------------------------------
# Actuator inputs and settings.


def set_actuator_torques(model: Model, state: State, torques: ArrayLike) -> State:
    """Set every actuator torque at the gear outputs [Nm or N]; they hold until set again.

    Args:
        model: the model.
        state: the state.
        torques: (na,) finite torques, in :func:`jaxmor.actuator_names` order.

    Raises:
        ArgumentError: wrong shape, or a non-finite value (checked outside ``jit``).
    """
    check_state(model, state, "set_actuator_torques")
    return state.replace(
        actuator_torque=as_vector(torques, model.na, "torques", state.actuator_torque.dtype, finite=True)
    )


def set_actuator_torque(model: Model, state: State, name_or_index: str | int, torque: ArrayLike) -> State:
    """Set one actuator's torque at its gear output [Nm or N], by name or index.

    Raises:
        ArgumentError: unknown actuator, or a non-scalar or non-finite torque.
    """
    check_state(model, state, "set_actuator_torque")
    i = resolve_actuator(model, name_or_index)
    value = as_array(torque, "torque", state.actuator_torque.dtype)
    if value.shape != ():
        raise ArgumentError(f"torque must be a scalar, got shape {value.shape}")
    given = concrete(torque)
    if given is not None and not np.isfinite(given.astype(float)):
        raise ArgumentError(f"torque must be finite, got {float(given)}")
    return state.replace(actuator_torque=state.actuator_torque.at[i].set(value))


def set_actuator_pd_gains(model: Model, state: State, p_gain: ArrayLike, d_gain: ArrayLike) -> State:
    """Set the gains of the actuators' own PD controller, each (na,) [Nm/rad, Nm s/rad or N/m, N s/m, at
    the gear outputs], in :func:`jaxmor.actuator_names` order; they hold until set again.

    Unlike the built-in joint PD (:func:`set_pd_gains`), this PD commands the motors: at the start of every
    step each actuator's torque is ``actuator_torque + kp (position_target - q_j) + kd (velocity_target -
    u_j)``, with ``q_j, u_j`` its driven joint's position and velocity at the start of the step, and that sum
    is clipped to the motor operating region like any actuator torque (in monitor mode it is applied as
    commanded). ``ActuatorState.commanded_motor_torque`` includes it. The PD torque is explicit, so it is
    stable only while ``kd h / I + kp h^2 / I`` stays below about 2, with ``I`` the inertia the joint
    moves, the reflected rotor inertia ``G^2 J_rotor`` included (docs/training.md); zero gains (the
    default) switch it off.

    Raises:
        ArgumentError: wrong shapes, or negative or non-finite gains (values checked outside ``jit``).
    """
    check_state(model, state, "set_actuator_pd_gains")
    kp, kd = _gains(p_gain, d_gain, model.na, state.u.dtype)
    return state.replace(actuator_p_gain=kp, actuator_d_gain=kd)


def set_actuator_pd_targets(
    model: Model, state: State, position_target: ArrayLike, velocity_target: ArrayLike | None = None
) -> State:
    """Set the targets of the actuator PD (:func:`set_actuator_pd_gains`), one per actuator, for its driven
    joint, in :func:`jaxmor.actuator_names` order; they hold until set again.

    Args:
        model: the model.
        state: the state.
        position_target: (na,) driven-joint positions [rad or m].
        velocity_target: (na,) driven-joint velocities [rad/s or m/s]; ``None`` sets zero.

    Raises:
        ArgumentError: wrong shapes, or non-finite values (checked outside ``jit``).
    """
    check_state(model, state, "set_actuator_pd_targets")
    qt = as_vector(position_target, model.na, "position_target", state.u.dtype, finite=True)
    if velocity_target is None:
        vt = jnp.zeros_like(qt)
    else:
        vt = as_vector(velocity_target, model.na, "velocity_target", state.u.dtype, finite=True)
    return state.replace(actuator_position_target=qt, actuator_velocity_target=vt)


def _check_voltage(model: Model, voltage: jax.Array, which: np.ndarray) -> None:
    """Reject a voltage that makes a selected motor invalid (:func:`jaxmor.actuation.motor.motor_problem`).

    Checked only when the voltage and the motor constants are concrete: under ``jit``/``vmap`` it is
    skipped rather than concretizing a tracer. A model batched without ``vmap`` (fields of shape
    (..., na)) is checked in every world.
    """
    m = model.actuators.motor
    values = [concrete(x) for x in (voltage, m.resistance, m.torque_constant, m.velocity_constant, m.peak_torque)]
    if any(v is None for v in values):
        return
    v = float(values[0])
    r, kt, kv, peak = np.broadcast_arrays(*(x.astype(float) for x in values[1:]))
    for i in np.flatnonzero(which):
        for world in np.ndindex(r.shape[:-1]):
            at = (*world, i)
            problem = motor_problem(
                m.replace(
                    resistance=r[at],
                    torque_constant=kt[at],
                    velocity_constant=kv[at],
                    bus_voltage=v,
                    peak_torque=peak[at],
                ),
                m.resistance.dtype,
            )
            if problem is not None:
                raise ArgumentError(f"bus voltage {v} is invalid for actuator '{model.actuators.names[i]}': {problem}")


def set_bus_voltage(model: Model, state: State, voltage: ArrayLike, name: str | None = None) -> State:
    """Change the bus voltage [V] of all actuators, or of the one named.

    Only the stored voltage changes; it can be called every step (and batched per world).

    Raises:
        ArgumentError: unknown actuator, non-scalar voltage, a voltage the State's dtype cannot hold
            (:func:`jaxmor.checks.as_stored`), or one that makes a motor invalid (not positive and finite,
            or overflowing its stall torque or no-load speed in the model's dtype; checked outside ``jit``).
    """
    check_state(model, state, "set_bus_voltage")
    as_stored(voltage, "voltage", state.bus_voltage.dtype)
    value = as_array(voltage, "voltage", state.bus_voltage.dtype)
    if value.shape != ():
        raise ArgumentError(f"voltage must be a scalar, got shape {value.shape}")
    if name is None:
        _check_voltage(model, voltage, np.ones(model.na, bool))
        return state.replace(bus_voltage=jnp.full_like(state.bus_voltage, value))
    i = resolve_actuator(model, name)
    _check_voltage(model, voltage, np.arange(model.na) == i)
    return state.replace(bus_voltage=state.bus_voltage.at[i].set(value))


def set_motor_temperature(
    model: Model, state: State, winding: ArrayLike, housing: ArrayLike | None = None, name: str | None = None
) -> State:
    """Set the winding (and housing) temperature [degC] of all motors, or of the one named.

    A motor without a thermal model keeps its constants whatever its temperature; one without a housing node
    ignores ``housing``. The cut-off flag of the temperature limit is cleared.

    Args:
        model: the model.
        state: the state.
        winding: the winding temperature [degC]: a scalar, or (na,) for all motors.
        housing: the housing temperature [degC], same shape; default: unchanged.
        name: an actuator's name, to set only its motor (scalar temperatures).

    Raises:
        ArgumentError: unknown actuator, a wrong shape, or a temperature that is not finite or lies below
            absolute zero, -273.15 degC (checked outside ``jit``).
    """
    check_state(model, state, "set_motor_temperature")
    ms = state.motor_state
    dtype = ms.winding_temperature.dtype
    select = np.ones(model.na, bool) if name is None else np.arange(model.na) == resolve_actuator(model, name)
    shape = () if name is not None else None
    out = {}
    for field, value in (("winding_temperature", winding), ("housing_temperature", housing)):
        if value is None:
            continue
        label = "winding" if field == "winding_temperature" else "housing"
        as_stored(value, f"{label} temperature", dtype, coordinates=True)
        array = as_array(value, label, dtype)
        if array.shape not in ((), (model.na,)) or (shape == () and array.shape != ()):
            expected = "a scalar" if shape == () else f"a scalar or ({model.na},)"
            raise ArgumentError(f"{label} must be {expected} [degC], got shape {array.shape}")
        known = concrete(array)
        if known is not None and not np.all(np.isfinite(known)):
            raise ArgumentError(f"{label} temperature must be finite, got {known!r}")
        if known is not None and np.any(known < ABSOLUTE_ZERO):
            raise ArgumentError(
                f"{label} temperature must be >= {ABSOLUTE_ZERO} degC (absolute zero), got {known.tolist()!r}"
            )
        out[field] = jnp.where(select, jnp.broadcast_to(array, (model.na,)), getattr(ms, field))
    return state.replace(motor_state=ms.replace(cutout=ms.cutout & ~select, **out))


def set_motor_operating_region_enforced(model: Model, state: State, enforce: bool | ArrayLike) -> State:
    """Clip actuator torques to their motor operating regions (``True``, the default) or only
    monitor them (``False``: torques are applied as commanded, the states still report the motor
    quantities and the bound that the command exceeds)."""
    check_state(model, state, "set_motor_operating_region_enforced")
    flag = None if isinstance(enforce, (str, bytes)) or enforce is None else jnp.asarray(enforce)
    if flag is None or flag.dtype != jnp.bool_ or flag.shape != ():
        raise ArgumentError(f"enforce must be a bool (or a bool array of shape ()), got {enforce!r}")
    return state.replace(mor_enforced=flag)


def set_ctrl(model: Model, state: State, ctrl: ArrayLike) -> State:
    """Set the controls of the affine actuators.

    Args:
        model: the model.
        state: the state.
        ctrl: (nu,) finite controls, in the order of the affine actuators.

    Raises:
        ArgumentError: wrong shape, or a non-finite value (checked outside ``jit``).
    """
    check_state(model, state, "set_ctrl")
    return state.replace(ctrl=as_vector(ctrl, model.nu, "ctrl", state.ctrl.dtype, finite=True))


def keyframe_names(model: Model) -> list[str]:
    """The names of the model's keyframes (MJCF ``<key>``), in order."""
    return [k.name for k in model.keyframes]


def set_keyframe(model: Model, state: State, key: str | int) -> State:
    """The state at one of the model's keyframes: its coordinates, velocities, controls, activations (zero where the
    keyframe gives none), mocap poses (the model's where it gives none) and time (as MuJoCo's
    ``mj_resetDataKeyframe``); the other inputs (actuator torques, gains, bus voltages) are kept.

    Args:
        model: the model.
        state: the state.
        key: the keyframe's name or index (:func:`keyframe_names`).

    Returns:
        The new state; its time compensation is zeroed.

    Raises:
        ArgumentError: an unknown name (the message lists them), an index out of range or traced, or a state
            that does not fit the model.
    """
    check_state(model, state, "set_keyframe")
    refuse_traced(key, "key")
    names = keyframe_names(model)
    if isinstance(key, str):
        if key not in names:
            raise ArgumentError(f"unknown keyframe {key!r}; the model has {names}")
        frame = model.keyframes[names.index(key)]
    elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and -len(names) <= key < len(names):
        frame = model.keyframes[int(key)]
    else:
        raise ArgumentError(f"key must be a keyframe name or an index below {len(names)}, got {key!r}")
    dtype = state.q.dtype
    values = {**initial_mocap(model, dtype), **_keyframe_values(frame, dtype)}
    values["ctrl"] = values["ctrl"].reshape(model.nu)
    values.setdefault("act", jnp.zeros((model.nu,), dtype))  # as MuJoCo's key without act
    return state.replace(**values, time_compensation=jnp.zeros((), dtype))


def _keyframe_values(frame: Keyframe, dtype) -> dict[str, jax.Array]:
    """A keyframe's values as State fields of ``dtype`` (its mocap poses only where it gives them).

    Raises:
        ArgumentError: a value that ``dtype`` cannot hold (it would be infinite).
    """
    given = {"q": frame.q, "u": frame.u, "ctrl": frame.ctrl, "time": frame.time}
    given |= {"mocap_pos": frame.mocap_pos, "mocap_quat": frame.mocap_quat, "act": frame.act}
    width = {"mocap_pos": 3, "mocap_quat": 4}
    out = {}
    for name, value in given.items():
        if value is None:
            continue
        with np.errstate(over="ignore"):
            stored = np.asarray(value, np.float64).astype(dtype)
        if not np.all(np.isfinite(stored)):
            at = int(np.flatnonzero(~np.isfinite(stored.reshape(-1)))[0])
            number = np.asarray(value, np.float64).reshape(-1)[at]
            raise ArgumentError(f"keyframe {frame.name!r}: {name}[{at}] = {number} does not fit {np.dtype(dtype).name}")
        out[name] = jnp.asarray(stored.reshape(-1, width[name]) if name in width else stored)
    return out


def _actuator_inputs(model: Model, q: jax.Array, u: jax.Array, dtype: Any) -> dict[str, Any]:
    """The State fields that belong to the actuators, as a world starts (:func:`init_state`) and as
    :func:`reset_actuator_state` sets them: zero torques, gains, targets, controls, buffers and controller states,
    the descriptions' bus voltages, cleared actuator states, the motors at ambient temperature, the residual's
    history held at ``q`` and ``u``, the rotors at the centre of their play."""
    zero_a = jnp.zeros((model.na,), dtype)
    slots, play = delay_slots(model), sum(model.actuators.backlash.active)
    return dict(
        actuator_torque=zero_a,
        actuator_p_gain=zero_a,
        actuator_d_gain=zero_a,
        actuator_position_target=zero_a,
        actuator_velocity_target=zero_a,
        ctrl=jnp.zeros((model.nu,), dtype),
        bus_voltage=_initial_bus_voltage(model, dtype),
        actuator_state=zero_actuator_state(model.na, dtype),
        motor_state=initial_motor_state(model.actuators.dynamics, model.na, dtype),
        actuator_history=initial_history(model, q, u),
        command_history=jnp.zeros((slots, model.na, 3), dtype),
        ctrl_history=jnp.zeros((slots, model.nu), dtype),
        controller_integral=zero_a,
        controller_torque=zero_a,
        backlash_play=jnp.zeros((play,), dtype),
        backlash_rate=jnp.zeros((play,), dtype),
        act=jnp.zeros((model.nu,), dtype),
    )


def reset_actuator_state(model: Model, state: State) -> State:
    """A state whose actuator inputs fit the model's actuators again, after the actuators changed.

    The actuator torques and the actuator PD's gains and targets are zeroed, the bus voltages reset to the
    actuator definitions', the actuator states cleared, the motors at their ambient temperature without
    current (:func:`jaxmor.actuation.motor_dynamics.initial_motor_state`), the residual's history as if held at
    the state's speeds and angles, the affine controls and activations, the command buffers and the drive controllers
    zeroed, and
    the rotors at the centre of their gears' play, moving with their joints; everything else is kept.

    Args:
        model: the model with its new actuators (``with_actuators``, ``with_affine_actuators``).
        state: a state of a world of the model (made before the actuators changed).
    """
    return state.replace(**_actuator_inputs(model, state.q, state.u, state.q.dtype))


# --------------------------------------------------------------------------------------------------
# Getters (the spec's getActuatorTorques, getActuatorStates, isMotorOperatingRegionEnforced).


def actuator_torques(state: State) -> jax.Array:
    """(na,) actuator torques as set [Nm or N], not clipped."""
    return state.actuator_torque


def actuator_states(state: State) -> ActuatorState:
    """The actuator states of the last step (each field (na,))."""
    return state.actuator_state


def is_motor_operating_region_enforced(state: State) -> jax.Array:
    """Whether actuator torques are clipped to their regions (a bool array, per world when batched)."""
    return state.mor_enforced
