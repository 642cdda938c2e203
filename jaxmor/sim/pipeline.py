"""One time step, composed from the stages, and a rollout of many steps.

The step is velocity-level and semi-implicit (``h = model.opt.timestep``), as the actuator spec's
"What happens in a simulation step" describes. Each stage is a function of the model and what the
stages before it produced, and lives in the module named after it:

1. :func:`~jaxmor.sim.kinematics.kinematics`: body poses at ``q_t`` (joint transforms computed once);
2. :func:`~jaxmor.sim.dynamics.dynamics`: mass matrix ``M`` and bias ``b(q_t, u_t)``;
3. :func:`~jaxmor.sim.forces.forces`: actuator torques clipped to their motor operating regions at ``u_t``,
   the built-in PD, feed-forward, affine, external and passive forces;
4. :func:`~jaxmor.sim.integrator.free_motion`: the effective mass (implicit PD, damping and velocity-dependent
   forces, ``Options.implicit_bias``) and the unconstrained velocity ``u_free``;
5. :func:`~jaxmor.sim.collision.collide` and :func:`~jaxmor.sim.constraint.constraints`: contact candidates,
   then the velocity problem (contacts, joint friction, joint limits) and the position-correction problem;
6. :func:`~jaxmor.sim.solver.solve`: projected Gauss-Seidel on each problem;
7. :func:`~jaxmor.sim.integrator.advance`: ``q_{t+1} = q_t (+) h (u_{t+1} + u_pos)``, the impulses kept for
   the next warm start, the actuator states of the completed step;
8. :func:`~jaxmor.sim.integrator.accept`: the guard that keeps a world that could not run or whose step went
   non-finite (the stages run at a harmless stand-in for a world that cannot run, a "double where", so its
   derivatives are zero rather than NaN).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmor.checks import check_options
from jaxmor.errors import ArgumentError
from jaxmor.sim.collision import collide
from jaxmor.sim.constraint import constraints, position_change, velocity_change, warm_start
from jaxmor.sim.dynamics import dynamics
from jaxmor.sim.forces import forces
from jaxmor.sim.integrator import accept, advance, finite, free_motion, runnable, stand_in
from jaxmor.sim.kinematics import kinematics
from jaxmor.sim.solver import solve_all
from jaxmor.state import check_state
from jaxmor.types import Model, State


def step(model: Model, state: State) -> State:
    """Advance one world by one time step (``model.opt.timestep``).

    Pure: jit-, vmap- (over states, and over models for randomized worlds) and grad-able. A world that
    cannot run (flagged, non-finite or diverged inputs, a bad time step: :func:`jaxmor.sim.integrator.runnable`)
    or whose step goes non-finite keeps its state (:func:`jaxmor.sim.integrator.accept`); the former gets a
    zero derivative, never a NaN one.

    Args:
        model: the model.
        state: the world's state at the beginning of the step.

    Returns:
        The state at the end of the step, with the actuator states of the completed step, the
        solver's impulses (the next warm start), and external forces cleared.

    Raises:
        ArgumentError: the state does not fit the model (a field of the wrong shape, e.g. a state made
            before ``add_ground``, or a batch of states without ``vmap``), or the options are invalid
            (a time step that is not positive and finite when it is concrete, a sweep count below 1);
            checked when traced.
    """
    check_state(model, state, "step")
    check_options(model.opt, "step")
    healthy = runnable(model, state)
    candidate = _stages(model, jax.tree.map(lambda s, f: jnp.where(healthy, s, f), state, stand_in(model, state)))
    return accept(model, state, candidate, healthy & finite(candidate))


def _stages(model: Model, state: State) -> State:
    """The step's stages, without the guard."""
    kin = kinematics(model, state.q)
    dyn = dynamics(model, kin, state.u)
    frc = forces(model, state)
    free = free_motion(model, state, dyn, frc)
    contacts = collide(model, kin.body)
    cons = constraints(model, state, kin, contacts, free, frc)
    impulses, correction = solve_all(
        (cons.velocity, cons.position),
        (warm_start(model, state), cons.position.zero_impulses()),
        (model.opt.solver_iterations, model.opt.position_iterations),
    )
    u_next = free.velocity + velocity_change(cons, impulses)
    return advance(model, state, frc, u_next, position_change(cons, correction), impulses)


def rollout(
    model: Model, state: State, controls: jax.Array | None = None, n_steps: int | None = None
) -> tuple[State, State]:
    """Run ``n_steps`` steps with ``lax.scan``.

    Args:
        model: the model.
        state: the initial state.
        controls: optional (n_steps, na) actuator torques at the gear outputs, set before each step;
            ``None`` keeps the state's torques.
        n_steps: number of steps; defaults to ``controls.shape[0]``.

    Returns:
        ``(final_state, trajectory)`` where ``trajectory`` is the stacked state after each step
        (under ``jit``, unused parts of the trajectory are not materialized).

    Raises:
        ArgumentError: ``controls`` of the wrong shape, neither ``controls`` nor ``n_steps``, or a state
            that does not fit the model.
    """
    check_state(model, state, "rollout")
    xs = None
    if controls is not None:
        xs = jnp.asarray(controls, state.u.dtype)
        if xs.ndim != 2 or xs.shape[1] != model.na or (n_steps is not None and xs.shape[0] != n_steps):
            steps = "n_steps" if n_steps is None else n_steps
            raise ArgumentError(f"controls must have shape ({steps}, {model.na}), got {xs.shape}")
        n_steps = xs.shape[0]
    if n_steps is None or int(n_steps) < 0:
        raise ArgumentError(f"rollout needs a non-negative n_steps or controls, got n_steps={n_steps}")

    def body(s, torque):
        if torque is not None:
            s = s.replace(actuator_torque=torque)
        s = step(model, s)
        return s, s

    return jax.lax.scan(body, state, xs, length=int(n_steps))
