"""One time step, composed from the stages, and a rollout of many steps.

The step is velocity-level and semi-implicit (``h = model.opt.timestep``), as the actuator spec's
"What happens in a simulation step" describes. Each stage is a function of the model and what the
stages before it produced, lives in the module named after it (in :mod:`jaxmor.sim`; the drive train's in
:mod:`jaxmor.actuation`), and runs under a
``jax.named_scope`` of its name (profiles and compiled programs show the stages):

0. :func:`~jaxmor.actuation.drive_train.begin`: the drive train at the step's start, carried to its end as one
   pytree: the commands delayed, the drive controllers updated, the motors' torques clipped to their regions at
   their rotors' angles and speeds, split between the joints and the rotors of actuators with backlash;
1. :func:`~jaxmor.sim.kinematics.kinematics`: body poses at ``q_t`` (joint transforms computed once);
2. :func:`~jaxmor.sim.dynamics.dynamics`: mass matrix ``M`` and bias ``b(q_t, u_t)``;
3. :func:`~jaxmor.sim.forces.forces`: the drive train's joint torques, the built-in PD, feed-forward, affine,
   external and passive forces; with a fluid medium
   (``Options.fluid_forces``), :func:`~jaxmor.sim.fluid.fluid`: its drag on the bodies;
4. :func:`~jaxmor.sim.free_motion.free_motion`: the effective mass (implicit PD, damping and
   velocity-dependent forces, ``Options.implicit_bias``) and the unconstrained velocity ``u_free``;
5. :func:`~jaxmor.sim.collision.collide`, :func:`~jaxmor.sim.collision.budget.select` and
   :func:`~jaxmor.sim.constraint.constraints`: contact candidates, the contact budget's slots filled from them
   nearest first, then the velocity problem (contacts, joint friction, joint limits) and the position-correction
   problem;
6. :func:`~jaxmor.sim.solver.solve_step`: projected Gauss-Seidel on both problems;
7. :func:`~jaxmor.sim.integrator.advance`: ``q_{t+1} = q_t (+) h (u_{t+1} + u_pos)``, the impulses kept for
   the next warm start, the drive train completed (:func:`jaxmor.actuation.drive_train.end`: the gears' play, the
   actuator states, the commands as set);
8. :func:`~jaxmor.sim.guard.accept`: the guard that keeps a world that could not run or whose step went
   non-finite (the stages run at a harmless stand-in for a world that cannot run, a "double where", and
   :func:`~jaxmor.sim.guard.shielded` masks the derivatives of a step it rejects, so they are zero rather than NaN).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmor.actuation import drive_train
from jaxmor.checks import as_array_leaves, as_int, check_options, check_real_dtype
from jaxmor.errors import ArgumentError
from jaxmor.sim.collision import Contacts, collide
from jaxmor.sim.collision.budget import select
from jaxmor.sim.constraint import Constraints, Impulses, constraints, impulse_velocities, teeth_impulse
from jaxmor.sim.dynamics import Dynamics, dynamics
from jaxmor.sim.fluid import fluid
from jaxmor.sim.forces import Forces, forces
from jaxmor.sim.free_motion import FreeMotion, free_motion
from jaxmor.sim.guard import accept, runnable, shielded, stand_in, verdict, where_tree
from jaxmor.sim.integrator import advance
from jaxmor.sim.kinematics import Kinematics, kinematics
from jaxmor.sim.solver import solve_step
from jaxmor.state import check_state, control_fields, state_shapes
from jaxmor.types import Model, State


def step(model: Model, state: State) -> State:
    """Advance one world by one time step (``model.opt.timestep``).

    Pure: jit-, vmap- (over states, and over models for randomized worlds) and grad-able. A world that
    cannot run (flagged, non-finite or diverged inputs, a bad time step: :func:`jaxmor.sim.guard.runnable`)
    or whose step goes non-finite or turns a joint by more than half a turn (:func:`jaxmor.sim.guard.resolved`)
    keeps its state (:func:`jaxmor.sim.guard.accept`); both get a zero derivative, never a NaN one
    (:func:`jaxmor.sim.guard.shielded`).

    Args:
        model: the model.
        state: the world's state at the beginning of the step.

    Returns:
        The state at the end of the step, with the actuator states of the completed step, the
        solver's impulses (the next warm start), and external forces cleared.

    Raises:
        ArgumentError: the state does not fit the model (a field of the wrong shape, e.g. a state made
            before ``add_ground``, or a batch of states without ``vmap``), the options are invalid
            (a time step that is not positive and finite when it is concrete, a gravity that is not a
            3-vector, a sweep count below 1), a model field holds something that is not numeric (a list or
            a number put where an array belongs is taken as one), or the model has no degrees of freedom;
            checked when traced.
    """
    if model.nv == 0:
        raise ArgumentError(
            "the model has no degrees of freedom (nv = 0: no joint, no free body): nothing in it moves, so there "
            "is nothing to step"
        )
    model = as_array_leaves(model, "model", "step")
    check_state(model, state, "step")
    check_options(model.opt, "step")
    with jax.named_scope("guard"):
        healthy = runnable(model, state)
        safe = where_tree(healthy, state, stand_in(model, state))
    candidate = shielded(_end_of_step, model, safe)
    with jax.named_scope("guard"):
        return accept(model, state, candidate, healthy & verdict(model, candidate))


def _end_of_step(model: Model, state: State) -> State:
    """The state at the end of the step, unguarded."""
    return stages(model, state).state


class Stages(NamedTuple):
    """What each stage of one step produced, in pipeline order (``state``: the end of the step, unguarded)."""

    kinematics: Kinematics
    dynamics: Dynamics
    forces: Forces
    free_motion: FreeMotion
    contacts: Contacts
    constraints: Constraints
    impulses: Impulses
    correction: Impulses
    state: State


def stages(model: Model, state: State) -> Stages:
    """The step's stages, without the guard: the composition :func:`step` runs, every result kept (under
    ``jit`` the unused ones are not computed). The stages see the delayed commands
    (:func:`jaxmor.actuation.drive_train.begin`); the end state keeps the commands as set."""
    with jax.named_scope("drive_train"):
        state, drive = drive_train.begin(model, state)
    with jax.named_scope("kinematics"):
        kin = kinematics(model, state.q)
    with jax.named_scope("dynamics"):
        dyn = dynamics(model, kin, state.u)
    with jax.named_scope("forces"):
        frc = forces(model, state, drive)
    if model.opt.fluid_forces:
        with jax.named_scope("fluid"):
            frc = frc.replace(applied=frc.applied + fluid(model, kin, state.u))
    with jax.named_scope("free_motion"):
        free = free_motion(model, state, kin, dyn, frc)
    with jax.named_scope("collision"):
        contacts = select(model, collide(model, kin.body, (state.mocap_pos, state.mocap_quat)))
    with jax.named_scope("constraint"):
        cons = constraints(model, state, kin, contacts, free, frc)
    with jax.named_scope("solver"):
        impulses, correction = solve_step(model, state, cons)
    with jax.named_scope("integrator"):
        du, u_pos = impulse_velocities(cons, impulses, correction)
        teeth = (teeth_impulse(model, impulses), teeth_impulse(model, correction))
        end = advance(model, state, frc, free.velocity + du, u_pos, impulses, contacts, teeth)
    return Stages(kin, dyn, frc, free, contacts, cons, impulses, correction, end)


def rollout(
    model: Model, state: State, controls: jax.Array | Mapping[str, jax.Array] | None = None, n_steps: int | None = None
) -> tuple[State, State]:
    """Run ``n_steps`` steps with ``lax.scan``, setting per-step inputs before each step.

    Args:
        model: the model.
        state: the initial state.
        controls: the inputs of each step, set before it: an (n_steps, na) array of actuator torques at the gear
            outputs [Nm or N], or a mapping from State input names (:func:`jaxmor.state.control_fields`:
            ``"actuator_torque"``, ``"ctrl"`` for affine actuators and position servos, ``"pd_position_target"``,
            ``"actuator_position_target"``, ``"bus_voltage"``, ...) to arrays of shape ``(n_steps, *field)``;
            fields not named keep the state's values. ``None`` keeps every input.
        n_steps: number of steps, a Python or NumPy integer ``>= 0``; defaults to the controls' leading axis.

    Returns:
        ``(final_state, trajectory)`` where ``trajectory`` is the stacked state after each step
        (under ``jit``, unused parts of the trajectory are not materialized).

    Raises:
        ArgumentError: an unknown input name, controls of the wrong shape or of a dtype that is not real
            (complex, strings: checked under ``jit`` too), an ``n_steps`` that is not an integer ``>= 0``
            (a float, a bool, a string), neither ``controls`` nor ``n_steps``, or a state that does not fit
            the model.
    """
    check_state(model, state, "rollout")
    xs, n_steps = per_step_controls(model, state, controls, n_steps, "rollout")

    def body(s, inputs):
        s = step(model, s.replace(**inputs))
        return s, s

    return jax.lax.scan(body, _perturbed_with(state, model, xs), xs, length=n_steps)


@jax.custom_jvp
def _perturbed_with(state: State, model: Model, inputs: dict[str, jax.Array]) -> State:
    """``state``, whose every floating leaf has a tangent (zero where it had none) whenever ``state``, ``model`` or
    ``inputs`` has one: the derivative of the identity in ``state``, zero in the others.

    A scan's derivative finds which carried values have tangents by linearizing its body once per guess, until
    the guess holds. A rollout differentiated with respect to the model alone starts from a state without
    tangents: the first guess is wrong and the step (with the guard's derivative rule) is linearized three
    times. From a state whose floating leaves all have tangents the first guess holds.
    """
    del model, inputs
    return state


def _perturbed_with_jvp(primals, tangents):
    zero = jax.custom_derivatives.SymbolicZero
    given = [
        t
        for t in jax.tree.leaves(tangents, is_leaf=lambda t: isinstance(t, zero))
        if not isinstance(t, zero) and t.dtype != jax.dtypes.float0
    ]
    state = primals[0]
    if not given:
        return state, tangents[0]
    # A zero that JAX's linearization counts as a tangent: it must depend on a given tangent (a zero computed from
    # the values alone is known, hence dropped). A select, not a product, so the transpose sends back an exact zero.
    seed = jax.lax.select(False, jnp.ravel(given[0])[0], jnp.zeros((), given[0].dtype))
    leaves, tree = jax.tree.flatten(state)
    slopes = jax.tree.leaves(tangents[0], is_leaf=lambda t: isinstance(t, zero))
    out = [
        jnp.broadcast_to(seed.astype(x.dtype), x.shape)
        if isinstance(t, zero) and jnp.issubdtype(x.dtype, jnp.inexact)
        else t
        for x, t in zip(leaves, slopes, strict=True)
    ]
    return state, jax.tree.unflatten(tree, out)


_perturbed_with.defjvp(_perturbed_with_jvp, symbolic_zeros=True)


def per_step_controls(
    model: Model,
    state: State,
    controls: jax.Array | Mapping[str, jax.Array] | None,
    n_steps: int | None,
    where: str,
    batch: tuple[int, ...] = (),
) -> tuple[dict[str, jax.Array], int]:
    """``controls`` as a mapping of State inputs to arrays of shape ``batch + (n_steps, *field)`` in the
    state's dtype, checked, and the number of steps.

    Raises:
        ArgumentError: as :func:`rollout` describes, naming ``where``.
    """
    if n_steps is not None:
        n_steps = as_int(n_steps, f"{where}: n_steps", minimum=0)
    if controls is None:
        controls = {}
    elif not isinstance(controls, Mapping):
        controls = {"actuator_torque": controls}
    known = control_fields()
    unknown = sorted(set(controls) - set(known))
    if unknown:
        raise ArgumentError(f"{where}: unknown controls {unknown}; a rollout can set {list(known)}")
    shapes = state_shapes(model)
    out = {}
    for name, value in controls.items():
        check_real_dtype(value, f"{where}: controls[{name!r}]")
        value = jnp.asarray(value, getattr(state, name).dtype)
        field = shapes[name]
        lead = value.shape[len(batch)] if value.ndim == len(batch) + 1 + len(field) else None
        steps = n_steps if n_steps is not None else lead
        if value.shape != (*batch, steps, *field) or steps is None:
            expected = ", ".join(str(d) for d in (*batch, "n_steps" if steps is None else steps, *field))
            if 0 in field:
                count = {"ctrl": "nu = 0: no affine actuators", "bus_voltage": "na = 0: no DC-motor actuators"}
                why = count.get(name, f"its field {name!r} is empty")
                raise ArgumentError(f"{where}: controls[{name!r}]: the model takes none ({why}), got {value.shape}")
            raise ArgumentError(f"{where}: controls[{name!r}] must have shape ({expected}), got {value.shape}")
        out[name], n_steps = value, steps
    if n_steps is None:
        raise ArgumentError(f"{where} needs a non-negative n_steps or controls, got n_steps=None")
    return out, n_steps
