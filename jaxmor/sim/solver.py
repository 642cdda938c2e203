"""Projected Gauss-Seidel (PGS) on a :class:`~jaxmor.sim.constraint.Problem` ``v = A lam + b``.

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

Shape for speed (``docs/design/solver.md`` has the measurements). A sweep is straight-line code: the rows
are unrolled, so the only loop is the one over sweeps, and the step's velocity and position problems
share it (:func:`solve_all`): the dependent loop iterations of a step are the largest sweep count,
whatever the number of rows. The sweep carries the row velocities ``v = A lam + b`` with the impulses
(kept row by row, no scatter): a row reads its velocity and, when its impulse changes by ``d``, adds
``A[:, row] d`` to ``v``. That is the same Gauss-Seidel iteration (each row sees the impulses updated
before it) with the same fixed points; ``v`` is recomputed from the impulses at the start of each solve.
``A`` is not symmetric in general (the effective mass holds the velocity-dependent forces' derivative), so its
columns, not its rows, update ``v``.

Sweeps run a fixed number of iterations with ``lax.fori_loop`` so that ``jit``, ``vmap``, ``jvp`` and
reverse-mode ``grad`` all work. Derivatives do not store and replay every sweep: they apply the
Jacobians of one sweep (as a map of the impulses alone), taken at the final impulses (transposed in
reverse mode), as many times as there were sweeps (``_iterate_jvp``), exact when the sweeps have
converged. Plain Gauss-Seidel needs many sweeps on long chains of touching bodies (about N^2 for N
bodies in a row); :func:`contact_residuals` measures how far a solution is from the contact laws.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from jaxmor.math import safe_div, safe_norm, safe_sqrt
from jaxmor.sim.constraint import Constraints, Impulses, Problem
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


def _limit_impulse(low: jax.Array, high: jax.Array, v0: jax.Array, inv_diag: jax.Array) -> jax.Array:
    """Impulse of a limit row (1-D): ``v >= low`` pushes with ``lam >= 0``, ``v <= high`` with ``lam <= 0``;
    ``inv_diag`` is ``1 / A_rr`` (0 for a row that nothing moves).

    An infinite bound (a joint without that limit) contributes nothing, with finite derivatives: the bound
    is replaced before the product (a double ``where``), so no ``inf * 0`` reaches the gradient.
    """
    has_low, has_high = jnp.isfinite(low), jnp.isfinite(high)
    push = jnp.maximum((jnp.where(has_low, low, v0) - v0) * inv_diag, 0.0)
    pull = jnp.minimum((jnp.where(has_high, high, v0) - v0) * inv_diag, 0.0)
    return jnp.where(has_low, push, 0.0) + jnp.where(has_high, pull, 0.0)


# The row updates, shared by both forms of a sweep below.


def _contact_impulse(problem: Problem, inv_eig: jax.Array, k, inv_nn, a_tn, v: jax.Array, old: jax.Array):
    """New (rows_per_contact,) impulses of contact ``k``: the normal row, then (with friction) the tangential
    pair on the disk.

    ``inv_nn`` is ``1 /`` the normal row's diagonal entry of ``A``, ``a_tn`` (2,) the tangent rows' entries
    in the normal's column (unused when frictionless), ``v`` the rows' velocities at the impulses ``old``.
    """
    lam_n = jnp.maximum(old[0] - (v[0] - problem.contact_target[k]) * inv_nn, 0.0)
    if not problem.with_friction:
        return lam_n[None]
    v_t = v[1:] + a_tn * (lam_n - old[0])
    lam_t = _project_disk(old[1:] - v_t * inv_eig[k], problem.friction[k] * lam_n)
    return jnp.concatenate([lam_n[None], lam_t])


def _joint_impulse(problem: Problem, i, diag, inv_diag, v_other, limit):
    """New ``(friction + limit, limit)`` impulses of joint ``i``'s row (diagonal entry ``diag``, its inverse
    ``inv_diag``) from the velocity ``v_other`` without its impulses and its previous limit impulse:
    friction first, then the limit (a frictionless problem: the limit alone)."""
    if not problem.with_friction:
        new_limit = _limit_impulse(problem.limit_low[i], problem.limit_high[i], v_other, inv_diag)
        return new_limit, new_limit
    bound = problem.friction_bound[i]
    friction = jnp.clip(-v_other * inv_diag - limit, -bound, bound)
    new_limit = _limit_impulse(problem.limit_low[i], problem.limit_high[i], v_other + diag * friction, inv_diag)
    return friction + new_limit, new_limit


# The sweep as straight-line code carrying the row velocities: the forward solve.


@struct.dataclass
class _Sweeping:
    """A problem's iterate inside the sweeps: the row velocities and the impulses, unit by unit.

    Attributes:
        velocity: (R,) ``v = A lam + b``.
        contact: nc arrays (rows_per_contact,), each contact's impulses.
        joint: nj scalars, each joint row's impulse (friction plus limit).
        limit: nj scalars, the limit part of each joint row's impulse (all of it for a frictionless problem).
    """

    velocity: jax.Array
    contact: tuple[jax.Array, ...]
    joint: tuple[jax.Array, ...]
    limit: tuple[jax.Array, ...]


def _start(problem: Problem, rows: jax.Array, limit: jax.Array) -> _Sweeping:
    """The iterate at impulses ``rows`` (R,) and ``limit`` (nj,)."""
    m = problem.rows_per_contact
    return _Sweeping(
        velocity=problem.delassus @ rows + problem.free_velocity,
        contact=tuple(rows[m * k : m * k + m] for k in range(problem.nc)),
        joint=tuple(rows[problem.joint_row(i)] for i in range(problem.nj)),
        limit=tuple(limit[i] for i in range(problem.nj)),
    )


def _finish(it: _Sweeping) -> tuple[jax.Array, jax.Array]:
    """The (R,) row impulses and (nj,) limit impulses of an iterate."""
    dtype = it.velocity.dtype
    rows = jnp.concatenate([*it.contact, jnp.stack(it.joint) if it.joint else jnp.zeros(0, dtype)])
    limit = jnp.stack(it.limit) if it.limit else jnp.zeros(0, dtype)
    return rows, limit


def _fast_sweep(params: tuple[Problem, jax.Array, jax.Array, jax.Array], it: _Sweeping) -> _Sweeping:
    """One sweep, rows unrolled: contacts in slot order, then each joint; a changed impulse ``d`` adds
    ``A[:, row] d`` to the carried velocities. ``params`` is the problem, ``A`` transposed (its columns as
    rows), the (nc,) inverse largest eigenvalues of the tangential blocks (unused when frictionless) and the
    (R,) inverse diagonal of ``A``."""
    problem, columns, inv_eig, inv_diag = params
    a = problem.delassus
    v, contact, joint, limit = it.velocity, list(it.contact), list(it.joint), list(it.limit)
    for k in range(problem.nc):
        n, old = problem.contact_row(k), contact[k]
        m = problem.rows_per_contact
        contact[k] = _contact_impulse(problem, inv_eig, k, inv_diag[n], a[n + 1 : n + 3, n], v[n : n + m], old)
        v = v + (contact[k] - old) @ columns[n : n + m]
    for i in range(problem.nj):
        r = problem.joint_row(i)
        v_other = v[r] - a[r, r] * joint[i]
        new, limit[i] = _joint_impulse(problem, i, a[r, r], inv_diag[r], v_other, limit[i])
        v = v + columns[r] * (new - joint[i])
        joint[i] = new
    return _Sweeping(v, tuple(contact), tuple(joint), tuple(limit))


# The same sweep as loops over the rows, from the impulses alone: the map the derivative linearizes
# (compact to compile; the fast form's carried velocities are ``A lam + b`` of these impulses).


def _compact_sweep(params: tuple[Problem, jax.Array, jax.Array, jax.Array], x: tuple[jax.Array, jax.Array]):
    """One sweep as ``(rows, limit) -> (rows, limit)`` with ``fori_loop``s over the contacts and joints."""
    problem, _, inv_eig, inv_diag = params
    a, b, m = problem.delassus, problem.free_velocity, problem.rows_per_contact

    def contact(k, x):
        lam, limit = x
        n = problem.contact_row(k)
        rows = jax.lax.dynamic_slice_in_dim(a, n, m)
        v = rows @ lam + jax.lax.dynamic_slice_in_dim(b, n, m)
        old = jax.lax.dynamic_slice_in_dim(lam, n, m)
        a_tn = jax.lax.dynamic_index_in_dim(rows[1:], n, axis=1, keepdims=False)
        new = _contact_impulse(problem, inv_eig, k, inv_diag[n], a_tn, v, old)
        return jax.lax.dynamic_update_slice_in_dim(lam, new, n, 0), limit

    def joint(i, x):
        lam, limit = x
        r = problem.joint_row(i)
        row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
        diag = row[r]
        v_other = row @ lam + b[r] - diag * lam[r]
        new, new_limit = _joint_impulse(problem, i, diag, inv_diag[r], v_other, limit[i])
        return lam.at[r].set(new), limit.at[i].set(new_limit)

    if problem.nc:
        x = jax.lax.fori_loop(0, problem.nc, contact, x)
    if problem.nj:
        x = jax.lax.fori_loop(0, problem.nj, joint, x)
    return x


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _iterate(counts, params, x0):
    """``counts[j]`` sweeps of problem ``j`` (``params[j]``) from its impulses ``x0[j] = (rows, limit)``.

    The problems are independent, so their sweeps share one loop of ``max(counts)`` iterations, in which
    a problem with fewer sweeps is skipped (a ``lax.cond`` on the loop index, which stays a branch under
    ``vmap``) once it has had its count: the dependent iterations are the largest count, and each sweep's
    code is compiled once.
    """
    its = tuple(_start(p[0], *x) for p, x in zip(params, x0, strict=True))
    total = max(counts)

    def body(i, its):
        out = []
        for p, it, count in zip(params, its, counts, strict=True):
            if count == total:
                out.append(_fast_sweep(p, it))
            else:
                out.append(jax.lax.cond(i < count, _fast_sweep, lambda _, it: it, p, it))
        return tuple(out)

    return tuple(_finish(it) for it in jax.lax.fori_loop(0, total, body, its))


@_iterate.defjvp
def _iterate_jvp(counts, primals, tangents):
    """Derivative of the sweeps with every sweep's Jacobians taken at the final iterate ``x_K``.

    With ``S_x``, ``S_p`` the Jacobians of one sweep (:func:`_compact_sweep`, a map of the impulses) at
    ``x_K``, the tangent of ``x_K`` is ``S_x^K dx_0 + sum_{j<K} S_x^j S_p dp``: the exact derivative of the
    K sweeps whenever the iterates have converged (``x_k = x_K``), and otherwise different only in
    evaluating the Jacobians at ``x_K`` instead of at each ``x_k``. The tangent recursion is linear, so
    reverse mode transposes it without storing anything per sweep, and the compiled derivative holds one
    linearized sweep per problem instead of K.
    """
    params, x0 = primals
    d_params, d_x0 = tangents
    x = _iterate(counts, params, x0)
    d_x = []
    for count, p, xj, dp, dxj in zip(counts, params, x, d_params, d_x0, strict=True):
        _, linear = jax.linearize(_compact_sweep, p, xj)
        zero_x = jax.tree.map(jnp.zeros_like, xj)
        zero_p = jax.tree.map(jnp.zeros_like, p)
        drive = linear(dp, zero_x)

        def body(_, t, linear=linear, zero_p=zero_p, drive=drive):
            return jax.tree.map(jnp.add, linear(zero_p, t), drive)

        d_x.append(jax.lax.fori_loop(0, count, body, dxj))
    return x, tuple(d_x)


def solve_all(
    problems: tuple[Problem, ...], warm_starts: tuple[Impulses, ...], iterations: tuple[int, ...]
) -> tuple[Impulses, ...]:
    """Run ``iterations[j]`` PGS sweeps on ``problems[j]`` from ``warm_starts[j]``, the problems together.

    Independent problems (the step's velocity and position problems) share their sweep loops, so the
    dependent loop iterations are ``max(iterations)``, not their sum.

    Args:
        problems: the problems (with friction, or frictionless: ``problem.rows_per_contact``).
        warm_starts: the impulses to start each from (a frictionless problem uses the normal and limit parts).
        iterations: number of sweeps of each (static, at least 1).

    Returns:
        The impulses of each problem (a frictionless problem's tangential and joint friction impulses are zero).
    """
    out = list(warm_starts)
    live = [j for j, p in enumerate(problems) if p.free_velocity.shape[0] > 0]
    if not live:
        return tuple(out)
    counts, params, x0 = [], [], []
    for j in live:
        problem, warm = problems[j], warm_starts[j]
        rows = problem.rows(warm)
        if problem.with_friction:
            # 1 / the largest eigenvalue of each contact's tangential 2x2 block: the friction pair's step.
            inv_eig = safe_div(1.0, _largest_eigenvalue(problem.tangent_blocks()))
            limit = warm.limit
        else:
            inv_eig = jnp.zeros(problem.nc, rows.dtype)
            limit = rows[problem.joint_row(0) :]
        counts.append(int(iterations[j]))
        inv_diag = safe_div(1.0, jnp.diagonal(problem.delassus))
        params.append((problem, problem.delassus.T, inv_eig, inv_diag))
        x0.append((rows, limit))
    x = _iterate(tuple(counts), tuple(params), tuple(x0))
    for j, (rows, limit) in zip(live, x, strict=True):
        out[j] = problems[j].impulses(rows, limit)
    return tuple(out)


def solve_step(model: Model, state: State, cons: Constraints) -> tuple[Impulses, Impulses]:
    """The step's solve: the velocity problem from the last step's impulses (``opt.solver_iterations`` sweeps)
    and the position problem from zero (``opt.position_iterations``), in one shared loop (:func:`solve_all`).

    Returns:
        ``(impulses, correction)``: the velocity and the position problem's impulses.
    """
    problems = (cons.velocity, cons.position)
    starts = (cons.start, cons.position.zero_impulses())
    iterations = (model.opt.solver_iterations, model.opt.position_iterations)
    impulses, correction = solve_all(problems, starts, iterations)
    return impulses, correction


def solve(problem: Problem, warm_start: Impulses, iterations: int) -> Impulses:
    """Run ``iterations`` PGS sweeps from ``warm_start`` and return the impulses.

    Args:
        problem: the problem (with friction, or frictionless: ``problem.rows_per_contact``).
        warm_start: the impulses to start from (a frictionless problem uses the normal and limit parts).
        iterations: number of sweeps (static).

    Returns:
        The impulses (a frictionless problem's tangential and joint friction impulses are zero).
    """
    return solve_all((problem,), (warm_start,), (iterations,))[0]


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
