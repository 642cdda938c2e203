"""The contact solver on a :class:`~jaxmor.sim.constraint.Problem` ``v = A lam + b``: projected Gauss-Seidel (PGS), or
the accelerated projected Jacobi iteration built from the same row updates (``Options.solver``).

A sweep updates the rows in order, each from the velocity the impulses updated before it leave:

* a contact (problems with friction): the normal impulse ``lam_n <- max(lam_n - (v_n - target) / A_nn,
  0)``, then the tangential pair, jointly: one step of length ``1 / s_max`` along its velocity,
  ``lam_t <- proj(lam_t - v_t / s_max)``, with ``s_max`` the largest eigenvalue of the pair's 2x2 block
  ``A_tt`` and ``proj`` the radial projection onto the **disk** ``|lam_t| <= mu lam_n``. With a scalar
  step the fixed points are exactly Coulomb's law with maximum dissipation: inside the disk ``v_t = 0``
  (stiction), on its rim ``v_t = -c lam_t`` with ``c >= 0`` (friction opposite to the slip). A full 2x2
  solve ``lam_t - A_tt^-1 v_t`` followed by the radial projection does not have this property (its fixed
  points have ``A_tt^-1 v_t || -lam_t``); per-axis bounds would make friction depend on the direction of
  sliding. ``docs/design/solver.md`` has the measurements behind both choices.
* a joint: the friction impulse ``clip(-v_other / a, +-bound)`` (``v_other`` the velocity without the
  joint's own impulses), then the limit impulse ``max(0, (v_lo - v0)/a) + min(0, (v_hi - v0)/a)`` from the
  velocity the friction leaves: exactly two sequential 1-D updates of two identical rows.

A frictionless problem (the position pass) has only the normal updates and the limit updates.

Shape (``docs/design/solver.md`` has the measurements). A sweep is a loop over the contacts in slot order,
then one over the joints, each iteration one row's update; on a CUDA GPU every sweep of a step runs in one
Pallas kernel of the same loops (:mod:`jaxmor.sim.pgs_kernel`). The problems a step solves together share
their sweep loops on a fixed schedule (:func:`solve_all`; no branch): with 20 velocity and 10 position
sweeps, a loop of 10 trips, each two velocity sweeps and one position sweep. A problem's iterate
is three packed arrays, the (R,) row velocities ``v = A lam + b``, the (R,) row impulses and the (nj,)
limit impulses, and the loops read one matrix, ``A`` transposed (its columns as rows), and two tables of
per-row constants. A row reads its velocity and its old impulse, writes its new impulse, and when its
impulse changes by ``d`` adds ``d A[:, row]`` to ``v``. That is the Gauss-Seidel iteration (each row sees
the impulses updated before it) with its fixed points; ``v`` is recomputed from the impulses at the start of
each solve. ``A`` is not symmetric in general (the effective mass holds the velocity-dependent forces'
derivative), so its columns, not its rows, update ``v``.

Sweeps run a fixed number of iterations with ``lax.fori_loop`` so that ``jit``, ``vmap``, ``jvp`` and
reverse-mode ``grad`` all work. Derivatives do not store and replay every sweep: they apply the
Jacobians of one sweep (as a map of the impulses alone, :func:`_impulse_sweep`), taken at the final
impulses (transposed in reverse mode), as many times as there were sweeps (``_iterate_jvp``), exact when the
sweeps have converged. Plain Gauss-Seidel needs many sweeps on long chains of touching bodies (about N^2 for N
bodies in a row); :func:`contact_residuals` measures how far a solution is from the contact laws.

The Jacobi iteration (``solver="jacobi"``, and ``"auto"`` on CUDA) applies every row's update above to the same
iterate at once (:func:`_row_updates`: one product ``A lam``, then the rows in parallel), so a step has no loop
over rows: its sequential depth is the iteration count, whatever the contacts and joints. It steps a fraction
``omega = 1 / lambda_max(D^-1 A)`` toward the updates, with Nesterov's momentum restarted whenever the step turns
against the last change, and puts the impulses back on their sets at the end. Its fixed points are the sweep's, so
it solves the same problem (exact Coulomb disk, Signorini, joint friction and limits) and the derivative rule
below applies to its impulses unchanged. ``docs/design/solver.md`` has its convergence and cost against PGS.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.checks import SOLVERS
from jaxmor.errors import ArgumentError
from jaxmor.math import safe_div, safe_norm, safe_sqrt
from jaxmor.sim import jacobi_kernel
from jaxmor.sim.constraint import Constraints, Impulses, Problem, friction_impulse, limit_impulse
from jaxmor.sim.pgs_kernel import iterate_on_gpu
from jaxmor.types import Model, State


def _project_disk(lam_t: jax.Array, radius: jax.Array) -> jax.Array:
    """Radial projection of the tangential pair (2, ...) onto the disk of ``radius`` (gradient-safe)."""
    norm2 = lam_t[0] * lam_t[0] + lam_t[1] * lam_t[1]
    safe = jnp.sqrt(jnp.where(norm2 > 0, norm2, 1.0))
    scale = jnp.where(norm2 > radius * radius, radius / safe, 1.0)
    return lam_t * scale


def _largest_eigenvalue(block: jax.Array) -> jax.Array:
    """Largest eigenvalue of symmetric 2x2 blocks (..., 2, 2) (gradient-safe when the eigenvalues are equal)."""
    mean = 0.5 * (block[..., 0, 0] + block[..., 1, 1])
    half = 0.5 * (block[..., 0, 0] - block[..., 1, 1])
    off = 0.5 * (block[..., 0, 1] + block[..., 1, 0])
    return mean + safe_sqrt(half * half + off * off)


# A problem as the sweeps read it.


@struct.dataclass
class _Rows:
    """A problem in the sweeps' layout: one matrix and tables of per-row constants, everything a sweep
    reads (nothing loop-invariant is computed inside the loop).

    Attributes:
        columns: (R, R) ``A`` transposed: row ``r`` is ``A``'s column ``r`` (what a change of row ``r``'s
            impulse adds to ``v``); ``columns[r, r]`` is the diagonal entry and ``columns[n, n + 1 : n + 3]``
            the tangent rows' entries in a normal's column.
        laws: (R, 5) per row ``1 / A_rr`` (0 for a row that nothing moves), then for a contact's normal row
            its target [m/s], friction coefficient, ``1 / s_max`` of its tangential block (0 when
            frictionless) and 0, for a joint row its friction bounds ``-b, b`` [N s or Nm s] and its velocity
            bounds from the limits (low, high), zeros on tangent rows.
        limited: (nj, 2) bool, whether each joint row's low and high bound is finite.
        free_velocity: (R,) ``b``.
        nc: number of contact slots (static).
        rows_per_contact: 3, or 1 for a frictionless problem (static).
    """

    columns: jax.Array
    laws: jax.Array
    limited: jax.Array | None
    free_velocity: jax.Array
    nc: int = struct.field(pytree_node=False)
    rows_per_contact: int = struct.field(pytree_node=False)

    @property
    def nj(self) -> int:
        """Number of joint rows."""
        return self.free_velocity.shape[0] - self.rows_per_contact * self.nc


def _rows_of(problem: Problem) -> _Rows:
    """The sweeps' layout of ``problem`` (see :class:`_Rows`)."""
    a, nc = problem.delassus, problem.nc
    zeros = jnp.zeros(nc, a.dtype)
    if problem.with_friction:
        # 1 / the largest eigenvalue of each contact's tangential 2x2 block: the friction pair's step.
        inv_eig = safe_div(1.0, _largest_eigenvalue(problem.tangent_blocks()))
    else:
        inv_eig = zeros
    normal = jnp.stack([problem.contact_target, problem.friction, inv_eig, zeros], axis=1)  # (nc, 4)
    contact = jnp.zeros((nc, problem.rows_per_contact, 4), a.dtype).at[:, 0].set(normal)
    bound, low, high = problem.friction_bound, problem.limit_low, problem.limit_high
    joint = jnp.stack([-bound, bound, low, high], axis=1)  # (nj, 4)
    laws = jnp.concatenate([contact.reshape(-1, 4), joint])
    inv_diag = safe_div(1.0, jnp.diagonal(a))
    laws = jnp.concatenate([inv_diag[:, None], laws], axis=1)
    limited = jnp.stack([jnp.isfinite(low), jnp.isfinite(high)], axis=1)
    return _Rows(a.T, laws, limited, problem.free_velocity, nc, problem.rows_per_contact)


# The row updates, shared by both forms of a sweep below.


def _held(x: jax.Array, one: jax.Array | None) -> jax.Array:
    """``x``, or (``one`` given: an array of ones XLA cannot see are ones) ``x / one``: the same values, but a
    division is an operation XLA's fusion does not duplicate, so a row's new impulse is computed once and read
    by each of its consumers (the velocity update's (R,) columns, the scan's outputs) instead of recomputed in
    each of them, per element of the (R,) update (docs/design/solver.md, "A row's impulse computed once")."""
    return x if one is None else x / one


def _contact_impulse(with_friction: bool, law: jax.Array, a_tn: jax.Array, v: jax.Array, old: jax.Array):
    """New (rows_per_contact,) impulses of a contact: the normal row, then (with friction) the tangential
    pair on the disk.

    ``law`` is the normal row's (5,) constants (:class:`_Rows`), ``a_tn`` (2,) the tangent rows' entries in
    the normal's column (unused when frictionless), ``v`` the rows' velocities at the impulses ``old``.
    """
    inv_nn, target, mu, inv_eig = law[0], law[1], law[2], law[3]
    lam_n = jnp.maximum(old[0] - (v[0] - target) * inv_nn, 0.0)
    if not with_friction:
        return lam_n[None]
    v_t = v[1:] + a_tn * (lam_n - old[0])
    lam_t = _project_disk(old[1:] - v_t * inv_eig, mu * lam_n)
    return jnp.concatenate([lam_n[None], lam_t])


def _joint_impulse(with_friction: bool, law: jax.Array, limited: jax.Array, diag, v_other, limit, one=None):
    """New ``(friction + limit, limit)`` impulses of a joint's row (constants ``law`` (5,) and ``limited``
    (2,), :class:`_Rows`; diagonal entry ``diag``) from the velocity ``v_other`` without its impulses and its
    previous limit impulse: friction first, then the limit (a frictionless problem: the limit alone). ``one``:
    the sweep's ones that hold each impulse (:func:`_held`), or None."""
    inv_diag, low, high = law[0], law[3], law[4]
    if not with_friction:
        new_limit = _held(limit_impulse(low, high, limited[0], limited[1], v_other, inv_diag), one)
        return new_limit, new_limit
    friction = _held(friction_impulse(-v_other * inv_diag - limit, law[1], law[2]), one)
    new_limit = _held(limit_impulse(low, high, limited[0], limited[1], v_other + diag * friction, inv_diag), one)
    return friction + new_limit, new_limit


# The sweep. An iterate is ``(v, rows, limit)``: the (R,) row velocities ``A rows + b``, the (R,) row impulses
# and the (nj,) limit part of the joint rows' impulses.


def _start(p: _Rows, x: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The iterate at impulses ``x = (rows, limit)``."""
    rows, limit = x
    return p.columns.T @ rows + p.free_velocity, rows, limit


def _sweep(
    p: _Rows, it: tuple[jax.Array, jax.Array, jax.Array], joints_only: bool = False
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One sweep (``joints_only``: of the joint rows alone): a ``lax.scan`` over the contacts in slot order, then one
    over the joints. The scans carry the
    row velocities alone: a row reads its velocity from them and its old impulse from the scanned impulses,
    emits its new impulse, and a change ``d`` adds ``d A[:, row]`` (a row of ``p.columns``) to the velocities.
    The impulses enter and leave as the scans' inputs and outputs, never as a carried array updated in place,
    which XLA's CPU loops copied every iteration.

    A row's update is rematerialized under differentiation (``jax.checkpoint``): the sweep's linearization
    (:func:`_iterate_jvp`) recomputes a row's columns and scalar steps from ``A`` and the scanned values
    instead of stacking each of them per row (docs/design/performance.md, "The gradient's compile")."""
    c, laws, m, nc = p.columns, p.laws, p.rows_per_contact, p.nc
    v, rows, limit = it
    one = (laws[0, 0] == laws[0, 0]).astype(laws.dtype)

    @partial(jax.checkpoint, prevent_cse=False)
    def contact(v, inputs):
        k, old = inputs
        n = m * k
        cols = [jax.lax.dynamic_index_in_dim(c, n + j, keepdims=False) for j in range(m)]  # A's columns n .. n + m
        a_tn = jax.lax.dynamic_slice_in_dim(cols[0], n + 1, 2) if m == 3 else None
        law = jax.lax.dynamic_index_in_dim(laws, n, keepdims=False)
        new = _held(_contact_impulse(m == 3, law, a_tn, jax.lax.dynamic_slice_in_dim(v, n, m), old), one)
        change = new - old
        for j in range(m):  # column by column: under vmap an (m, R) product is a batched dot, 1.4x slower on a CPU
            v = v + change[j] * cols[j]
        return v, new

    @partial(jax.checkpoint, prevent_cse=False)
    def joint(v, inputs):
        i, old, old_limit = inputs
        r = m * nc + i
        col = jax.lax.dynamic_index_in_dim(c, r, keepdims=False)  # A's column r
        diag = jax.lax.dynamic_index_in_dim(col, r, keepdims=False)
        law = jax.lax.dynamic_index_in_dim(laws, r, keepdims=False)
        limited = jax.lax.dynamic_index_in_dim(p.limited, i, keepdims=False)
        v_other = jax.lax.dynamic_index_in_dim(v, r, keepdims=False) - diag * old
        new, new_limit = _joint_impulse(m == 3, law, limited, diag, v_other, old_limit, one)
        return v + (new - old) * col, (new, new_limit)

    parts = []
    if nc and joints_only:
        parts.append(rows[: m * nc])
    elif nc:
        v, new = jax.lax.scan(contact, v, (jnp.arange(nc), rows[: m * nc].reshape(nc, m)))
        parts.append(new.reshape(m * nc))
    if p.nj:
        v, (new, limit) = jax.lax.scan(joint, v, (jnp.arange(p.nj), rows[m * nc :], limit))
        parts.append(new)
    return v, jnp.concatenate(parts) if parts else rows, limit


def _impulse_sweep(p: _Rows, x: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    """One sweep as a map of the impulses alone, ``(rows, limit) -> (rows, limit)``: what the derivative
    linearizes (the carried velocities are ``A rows + b`` of the impulses)."""
    _, rows, limit = _sweep(p, _start(p, x))
    return rows, limit


# The accelerated projected Jacobi iteration: every row's update from the same iterate.


def _row_updates(p: _Rows, rows: jax.Array, limit: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Every row's update of a sweep (:func:`_contact_impulse`, :func:`_joint_impulse`), all from the iterate
    ``(rows, limit)``: a contact's normal then its tangent pair, a joint's friction then its limit, each
    row reading the velocities ``A rows + b`` of the same iterate. The map's fixed points are the sweep's."""
    c, m, nc = p.columns, p.rows_per_contact, p.nc
    v = c.T @ rows + p.free_velocity
    parts, new_limit = [], limit
    if nc:
        normal = np.arange(nc) * m
        if m == 3:
            a_tn = c[normal[:, None], normal[:, None] + np.array([1, 2])]
        else:
            a_tn = jnp.zeros((nc, 2), rows.dtype)
        update = jax.vmap(partial(_contact_impulse, m == 3))
        new = update(p.laws[normal], a_tn, v[: m * nc].reshape(nc, m), rows[: m * nc].reshape(nc, m))
        parts.append(new.reshape(m * nc))
    if p.nj:
        r = m * nc + np.arange(p.nj)
        diag, old = c[r, r], rows[m * nc :]
        update = jax.vmap(partial(_joint_impulse, m == 3))
        new, new_limit = update(p.laws[r], p.limited, diag, v[m * nc :] - diag * old, limit)
        parts.append(new)
    return jnp.concatenate(parts), new_limit


def _relaxation(p: _Rows) -> jax.Array:
    """The Jacobi step ``omega = 1 / lambda``: ``lambda`` the largest eigenvalue of ``D^-1 A`` (``D`` the
    diagonal of ``A``), estimated by ``jacobi_kernel.POWER_STEPS`` power iterations times ``POWER_MARGIN`` and
    capped by Gershgorin's bound (the largest absolute row sum, never below the spectral radius)."""
    scaled = p.laws[:, 0:1] * p.columns.T  # D^-1 A (a row nothing moves is zero)
    gershgorin = jnp.max(jnp.sum(jnp.abs(scaled), axis=1))
    x = jnp.ones(scaled.shape[0], scaled.dtype)
    for _ in range(jacobi_kernel.POWER_STEPS):
        y = scaled @ x
        x = safe_div(y, jnp.max(jnp.abs(y)))
    estimate = safe_div(jnp.dot(x, scaled @ x), jnp.dot(x, x))
    return safe_div(1.0, jnp.minimum(jacobi_kernel.POWER_MARGIN * estimate, gershgorin))


def _jacobi_start(p: _Rows, x: tuple[jax.Array, jax.Array]):
    """The Jacobi iterate at impulses ``x``: the impulses, the previous impulses, the momentum's ``t`` and the
    step (:func:`_relaxation`, computed once)."""
    rows, limit = x
    return rows, limit, rows, limit, jnp.ones((), rows.dtype), _relaxation(p)


def _jacobi_iteration(p: _Rows, it):
    """One iteration: extrapolate along the last change (Nesterov's momentum, ``t`` as in FISTA), step a
    fraction ``omega`` toward every row's update (:func:`_row_updates`) from there, and restart the momentum
    (``t = 1``) when the step turns against the last change (O'Donoghue and Candes' gradient restart)."""
    rows, limit, prev, prev_limit, t, omega = it
    t_next = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
    beta = (t - 1.0) / t_next
    y, y_limit = rows + beta * (rows - prev), limit + beta * (limit - prev_limit)
    f, f_limit = _row_updates(p, y, y_limit)
    new, new_limit = y + omega * (f - y), y_limit + omega * (f_limit - y_limit)
    restart = jnp.dot(f - y, new - rows) < 0.0
    return new, new_limit, rows, limit, jnp.where(restart, 1.0, t_next), omega


def _jacobi_finish(p: _Rows, it) -> tuple[jax.Array, jax.Array]:
    """The impulses of a Jacobi iterate: put back on their laws' sets (:func:`_project`), then one Gauss-Seidel
    sweep of the joint rows (:func:`_sweep`), so that where the rows conflict (a contact pushing a joint past its
    limit: no solution, the impulses drift) the limits have the last word, as in PGS's sweep order. A converged
    iterate is unchanged."""
    _, rows, limit = _sweep(p, _start(p, _project(p, it)), joints_only=True)
    return rows, limit


def _project(p: _Rows, it) -> tuple[jax.Array, jax.Array]:
    """A Jacobi iterate's impulses put back on their laws' sets: a normal impulse ``>= 0``, a tangent pair on its
    disk, a joint's friction impulse within its bounds, a limit impulse of the sign its finite bounds allow (the
    extrapolation can leave them by a little)."""
    rows, limit = it[0], it[1]
    m, nc = p.rows_per_contact, p.nc
    parts = []
    if nc:
        contact = rows[: m * nc].reshape(nc, m)
        lam_n = jnp.maximum(contact[:, 0], 0.0)
        if m == 3:
            mu = p.laws[np.arange(nc) * m, 2]
            lam_t = _project_disk(contact[:, 1:].T, mu * lam_n).T
            contact = jnp.concatenate([lam_n[:, None], lam_t], axis=1)
        else:
            contact = lam_n[:, None]
        parts.append(contact.reshape(m * nc))
    if p.nj:
        low, high = p.limited[:, 0], p.limited[:, 1]
        limit = jnp.where(low, limit, jnp.minimum(limit, 0.0))
        limit = jnp.where(high, limit, jnp.maximum(limit, 0.0))
        joint = p.laws[m * nc :]
        friction = friction_impulse(rows[m * nc :] - it[1], joint[:, 1], joint[:, 2]) if m == 3 else 0.0
        parts.append(friction + limit)
    return jnp.concatenate(parts), limit


def _schedule(counts: tuple[int, ...]) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """A fixed schedule of the sweeps of independent problems: stages ``(trips, sweeps)``, each a loop of
    ``trips`` trips in which problem ``j`` has ``sweeps[j]`` sweeps (0: not in that loop).

    A stage runs as many trips as the fewest sweeps left and gives each problem as many sweeps per trip as
    its count allows; what is left goes to the next stage. Every problem gets exactly ``counts[j]``
    sweeps: (20, 10) -> 10 trips x (2, 1); (7, 3) -> 3 x (2, 1), then 1 x (1, 0); (5, 5) -> 5 x (1, 1).
    """
    stages, left = [], list(counts)
    while any(left):
        trips = min(c for c in left if c > 0)
        sweeps = tuple(c // trips for c in left)
        stages.append((trips, sweeps))
        left = [c - trips * s for c, s in zip(left, sweeps, strict=True)]
    return tuple(stages)


def _repeat(step, p: _Rows, count: int, it, unroll: bool = False):
    """``count`` applications of ``step`` (a sweep or a Jacobi iteration) to ``p``'s iterate ``it``: a loop
    when there are several (one compiled), or with ``unroll`` straight-line code (no dependent loop)."""
    if count == 1 or unroll:
        for _ in range(count):
            it = step(p, it)
        return it
    return jax.lax.fori_loop(0, count, lambda _, it: step(p, it), it)


def _sweep_at(limited: jax.Array, p: _Rows, x: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
    """:func:`_impulse_sweep` of ``p`` with its bound flags ``limited`` put back."""
    return _impulse_sweep(p.replace(limited=limited), x)


class _Plan(NamedTuple):
    """A solve by another method than PGS alone: ``solver`` ``"jacobi"`` (the accelerated Jacobi everywhere) or
    ``"auto"`` (it on CUDA, PGS elsewhere); ``sweeps`` the PGS counts (PGS's solve and every derivative),
    ``iterations`` the Jacobi counts, per problem."""

    solver: str
    sweeps: tuple[int, ...]
    iterations: tuple[int, ...]


def _sweep_counts(counts) -> tuple[int, ...]:
    """The PGS sweep counts of ``_iterate``'s static argument (the derivative's trips)."""
    return counts.sweeps if isinstance(counts, _Plan) else counts


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _iterate(counts, params, x0):
    """The solve of problem ``j`` (``params[j]``) from ``x0[j]``. ``counts`` a tuple of sweep counts: PGS, on
    a CUDA GPU (or a program compiled for one) in one Pallas kernel for all the sweeps
    (:mod:`jaxmor.sim.pgs_kernel`), elsewhere the XLA loops of :func:`_xla_iterate`; a :class:`_Plan`: the
    accelerated Jacobi iteration, on CUDA in one Pallas kernel (:mod:`jaxmor.sim.jacobi_kernel`), elsewhere in
    XLA loops, or (``"auto"``) PGS's XLA loops there. Chosen when the program is lowered."""
    if not isinstance(counts, _Plan):
        return iterate_on_gpu(counts, params, x0, _xla_iterate)
    on_gpu = partial(_jacobi_kernel, counts.iterations)
    if counts.solver == "jacobi":
        default = partial(_xla_iterate, counts.iterations, method="jacobi")
    else:
        default = partial(_xla_iterate, counts.sweeps)
    return jax.lax.platform_dependent(params, x0, cuda=on_gpu, default=default)


def _jacobi_kernel(counts, params, x0, interpret: bool = False):
    """The Jacobi iterations in Pallas kernels (:mod:`jaxmor.sim.jacobi_kernel`): the same step (:func:`_relaxation`),
    iteration and impulses (:func:`_jacobi_finish`), each computed in the kernel."""
    return jacobi_kernel.iterate(counts, params, x0, interpret=interpret)


#: How each method starts from impulses, takes one step (a sweep, an iteration) and gives back impulses.
_METHODS = {
    "pgs": (_start, _sweep, lambda p, it: (it[1], it[2])),
    "jacobi": (_jacobi_start, _jacobi_iteration, _jacobi_finish),
}


def _xla_iterate(counts, params, x0, method: str = "pgs"):
    """``counts[j]`` steps of ``method`` (``"pgs"``: sweeps, ``"jacobi"``: iterations) on problem ``j``
    (``params[j]``, a :class:`_Rows`) from its impulses ``x0[j] = (rows, limit)``.

    The problems are independent, so they share loops (:func:`_schedule`): no branch, each problem's
    iterates exactly those of its own steps, and each loop carries only its problems' iterates (and,
    invariant, their matrix and constants).
    """
    start, step, finish = _METHODS[method]
    its = [start(p, x) for p, x in zip(params, x0, strict=True)]
    for trips, steps in _schedule(counts):
        live = [j for j, n in enumerate(steps) if n]

        def body(_, carry, live=live, steps=steps):
            unroll = method == "jacobi"  # a few small iterations per trip: no loop inside the trip's loop
            return tuple(_repeat(step, params[j], steps[j], it, unroll) for j, it in zip(live, carry, strict=True))

        carry = tuple(its[j] for j in live)
        carry = body(0, carry) if trips == 1 else jax.lax.fori_loop(0, trips, body, carry)
        for j, it in zip(live, carry, strict=True):
            its[j] = it
    return tuple(finish(p, it) for p, it in zip(params, its, strict=True))


@_iterate.defjvp
def _iterate_jvp(counts, primals, tangents):
    """Derivative of the solve with every PGS sweep's Jacobians taken at the final iterate ``x_K``.

    With ``S_x``, ``S_p`` the Jacobians of one sweep (:func:`_impulse_sweep`, a map of the impulses) at
    ``x_K``, the tangent of ``x_K`` is ``S_x^K dx_0 + sum_{j<K} S_x^j S_p dp`` (``K`` the sweep count):
    the exact derivative of the K sweeps whenever the iterates have converged (``x_k = x_K``), and otherwise
    different only in evaluating the Jacobians at ``x_K`` instead of at each ``x_k``. The Jacobi iteration
    has the sweep's fixed points, so its converged impulses get the same derivative (the fixed point's).
    The tangent recursion is linear, so reverse mode transposes it without storing anything per sweep, and
    the compiled derivative holds one linearized sweep per problem instead of K.
    """
    params, x0 = primals
    d_params, d_x0 = tangents
    x = _iterate(counts, params, x0)
    d_x = []
    for count, p, xj, dp, dxj in zip(_sweep_counts(counts), params, x, d_params, d_x0, strict=True):
        # The (boolean) bound flags are constants of the sweep, not one of its differentiable inputs.
        sweep = partial(_sweep_at, p.limited)
        p, dp = p.replace(limited=None), dp.replace(limited=None)
        # S_p dp once; S_x alone in the recursion (a zero dp would still be pushed through S_p every trip).
        _, drive = jax.jvp(lambda q, xj=xj, sweep=sweep: sweep(q, xj), (p,), (dp,))
        _, linear = jax.linearize(lambda y, p=p, sweep=sweep: sweep(p, y), xj)

        def body(_, t, linear=linear, drive=drive):
            return jax.tree.map(jnp.add, linear(t), drive)

        d_x.append(jax.lax.fori_loop(0, count, body, dxj))
    return x, tuple(d_x)


def _check_counts(counts, n: int, what: str) -> None:
    if len(counts) != n or any(isinstance(c, bool) or int(c) != c or c < 1 for c in counts):
        raise ArgumentError(f"solve_all needs one {what} count (an int >= 1) per problem, got {tuple(counts)!r}")


def solve_all(
    problems: tuple[Problem, ...],
    warm_starts: tuple[Impulses, ...],
    iterations: tuple[int, ...],
    solver: str = "pgs",
    jacobi_iterations: tuple[int, ...] | None = None,
) -> tuple[Impulses, ...]:
    """Solve ``problems[j]`` from ``warm_starts[j]``, the problems together.

    Independent problems (the step's velocity and position problems) share their loops (:func:`_schedule`,
    no branch): with counts (20, 10), 10 trips of two sweeps of the first and one of the second.

    Args:
        problems: the problems (with friction, or frictionless: ``problem.rows_per_contact``).
        warm_starts: the impulses to start each from (a frictionless problem uses the normal and limit parts).
        iterations: PGS sweeps of each (static, at least 1); also the derivative's sweeps, whatever the solver.
        solver: ``"pgs"`` (projected Gauss-Seidel), ``"jacobi"`` (the accelerated projected Jacobi iteration)
            or ``"auto"`` (Jacobi when the program is lowered for CUDA, PGS elsewhere).
        jacobi_iterations: Jacobi iterations of each (static, at least 1; needed unless ``solver="pgs"``).

    Returns:
        The impulses of each problem (a frictionless problem's tangential and joint friction impulses are zero).

    Raises:
        ArgumentError: an unknown solver, a count that is not an int >= 1, or not one count per problem.
    """
    if solver not in SOLVERS:
        raise ArgumentError(f"solve_all: solver must be one of {SOLVERS}, got {solver!r}")
    _check_counts(iterations, len(problems), "sweep")
    if solver != "pgs":
        _check_counts(() if jacobi_iterations is None else jacobi_iterations, len(problems), "Jacobi iteration")
    out = list(warm_starts)
    live = [j for j, p in enumerate(problems) if p.free_velocity.shape[0] > 0]
    if not live:
        return tuple(out)
    counts = tuple(int(iterations[j]) for j in live)
    if solver != "pgs":
        counts = _Plan(solver, counts, tuple(int(jacobi_iterations[j]) for j in live))
    params = tuple(_rows_of(problems[j]) for j in live)
    x0 = tuple(problems[j].start(warm_starts[j]) for j in live)
    x = _iterate(counts, params, x0)
    for j, (rows, limit) in zip(live, x, strict=True):
        out[j] = problems[j].impulses(rows, limit)
    return tuple(out)


def solve_step(model: Model, state: State, cons: Constraints) -> tuple[Impulses, Impulses]:
    """The step's solve (``opt.solver``): the velocity problem from the last step's impulses and the position
    problem from zero, in one shared loop (:func:`solve_all`); PGS runs ``opt.solver_iterations`` and
    ``opt.position_iterations`` sweeps, the Jacobi iteration ``opt.jacobi_iterations`` and half as many.

    Returns:
        ``(impulses, correction)``: the velocity and the position problem's impulses.
    """
    opt = model.opt
    problems = (cons.velocity, cons.position)
    starts = (cons.start, cons.position.zero_impulses())
    sweeps = (opt.solver_iterations, opt.position_iterations)
    jacobi = (opt.jacobi_iterations, max(1, opt.jacobi_iterations // 2))
    impulses, correction = solve_all(problems, starts, sweeps, opt.solver, jacobi)
    return impulses, correction


def solve(
    problem: Problem, warm_start: Impulses, iterations: int, solver: str = "pgs", jacobi_iterations: int | None = None
) -> Impulses:
    """Solve one problem from ``warm_start`` and return the impulses (:func:`solve_all` of one problem).

    Args:
        problem: the problem (with friction, or frictionless: ``problem.rows_per_contact``).
        warm_start: the impulses to start from (a frictionless problem uses the normal and limit parts).
        iterations: PGS sweeps (static; the derivative's, whatever the solver).
        solver: ``"pgs"``, ``"jacobi"`` or ``"auto"`` (:func:`solve_all`).
        jacobi_iterations: Jacobi iterations (static; needed unless ``solver="pgs"``).

    Returns:
        The impulses (a frictionless problem's tangential and joint friction impulses are zero).
    """
    jacobi = None if jacobi_iterations is None else (jacobi_iterations,)
    return solve_all((problem,), (warm_start,), (iterations,), solver, jacobi)[0]


def contact_residuals(problem: Problem, impulses: Impulses) -> dict[str, jax.Array]:
    """Residuals of a solution (ContactBench's criteria), for tests and diagnostics.

    Returns a dict with ``cone`` (largest ``max(|lam_t| - mu lam_n, -lam_n, 0)``), ``signorini``
    (largest ``|lam_n (v_n - target)|``) and ``normal_velocity`` (most negative ``v_n - target``).
    """
    v = problem.delassus @ problem.rows(impulses) + problem.free_velocity
    lam_c = impulses.contact
    gap = problem.contact_velocities(v)[:, 0] - problem.contact_target
    cone = jnp.maximum(safe_norm(lam_c[:, 1:], axis=1) - problem.friction * lam_c[:, 0], -lam_c[:, 0])
    return {
        "cone": jnp.max(jnp.maximum(cone, 0.0), initial=0.0),
        "signorini": jnp.max(jnp.abs(lam_c[:, 0] * gap), initial=0.0),
        "normal_velocity": jnp.min(gap, initial=0.0),
    }
