"""Projected Gauss-Seidel (PGS) on a :class:`~jaxmor.constraint.Problem` ``v = A lam + b``.

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
``A`` is not symmetric in general (the effective mass holds the base's gyroscopic terms), so its
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

from jaxmor.constraint import Impulses, Problem
from jaxmor.math import safe_div, safe_norm, safe_sqrt


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


def _limit_impulse(low: jax.Array, high: jax.Array, v0: jax.Array, diag: jax.Array) -> jax.Array:
    """Impulse of a limit row (1-D): ``v >= low`` pushes with ``lam >= 0``, ``v <= high`` with ``lam <= 0``.

    An infinite bound (a joint without that limit) contributes nothing, with finite derivatives: the bound
    is replaced before the division (a double ``where``), so no ``inf * 0`` reaches the gradient of ``diag``.
    """
    has_low, has_high = jnp.isfinite(low), jnp.isfinite(high)
    push = jnp.maximum(safe_div(jnp.where(has_low, low, v0) - v0, diag), 0.0)
    pull = jnp.minimum(safe_div(jnp.where(has_high, high, v0) - v0, diag), 0.0)
    return jnp.where(has_low, push, 0.0) + jnp.where(has_high, pull, 0.0)


@struct.dataclass
class _Sweeping:
    """A problem's iterate inside the sweeps: the row velocities and the impulses, unit by unit.

    Attributes:
        velocity: (R,) ``v = A lam + b``.
        contact: nc arrays (rows_per_contact,), each contact's impulses.
        joint: nj scalars, each joint row's impulse (friction plus limit).
        limit: nj scalars, the limit part of each joint row's impulse (empty for a frictionless problem).
    """

    velocity: jax.Array
    contact: tuple[jax.Array, ...]
    joint: tuple[jax.Array, ...]
    limit: tuple[jax.Array, ...]


def _start(problem: Problem, rows: jax.Array, limit: jax.Array) -> _Sweeping:
    """The iterate at impulses ``rows`` (R,) and ``limit`` (nj or 0,)."""
    m = problem.rows_per_contact
    return _Sweeping(
        velocity=problem.delassus @ rows + problem.free_velocity,
        contact=tuple(rows[m * k : m * k + m] for k in range(problem.nc)),
        joint=tuple(rows[problem.joint_row(i)] for i in range(problem.nj)),
        limit=tuple(limit[i] for i in range(limit.shape[0])),
    )


def _finish(it: _Sweeping) -> tuple[jax.Array, jax.Array]:
    """The (R,) row impulses and (nj or 0,) limit impulses of an iterate."""
    dtype = it.velocity.dtype
    rows = jnp.concatenate([*it.contact, jnp.stack(it.joint) if it.joint else jnp.zeros(0, dtype)])
    limit = jnp.stack(it.limit) if it.limit else jnp.zeros(0, dtype)
    return rows, limit


def _velocity_sweep(params: tuple[Problem, jax.Array, jax.Array], it: _Sweeping) -> _Sweeping:
    """One Gauss-Seidel sweep with friction: contacts in slot order, then each joint (friction, limit).

    ``params`` is the problem, ``A`` transposed (its columns as rows) and the (nc,) inverse largest
    eigenvalues of the contacts' tangential blocks.
    """
    problem, columns, inv_eig = params
    a = problem.delassus
    v, contact, joint, limit = it.velocity, list(it.contact), list(it.joint), list(it.limit)
    for k in range(problem.nc):
        n, old = problem.contact_row(k), contact[k]
        lam_n = jnp.maximum(old[0] - safe_div(v[n] - problem.contact_target[k], a[n, n]), 0.0)
        v_t = v[n + 1 : n + 3] + a[n + 1 : n + 3, n] * (lam_n - old[0])
        lam_t = _project_disk(old[1:] - v_t * inv_eig[k], problem.friction[k] * lam_n)
        contact[k] = jnp.concatenate([lam_n[None], lam_t])
        change = contact[k] - old
        v = v + columns[n] * change[0] + columns[n + 1] * change[1] + columns[n + 2] * change[2]
    for i in range(problem.nj):
        r = problem.joint_row(i)
        diag = a[r, r]
        v_other = v[r] - diag * joint[i]  # the velocity without this joint's impulses
        bound = problem.friction_bound[i]
        friction = jnp.clip(-safe_div(v_other, diag) - limit[i], -bound, bound)
        limit[i] = _limit_impulse(problem.limit_low[i], problem.limit_high[i], v_other + diag * friction, diag)
        v = v + columns[r] * (friction + limit[i] - joint[i])
        joint[i] = friction + limit[i]
    return _Sweeping(v, tuple(contact), tuple(joint), tuple(limit))


def _frictionless_sweep(params: tuple[Problem, jax.Array], it: _Sweeping) -> _Sweeping:
    """One Gauss-Seidel sweep of a frictionless problem: normal rows, then joint limit rows."""
    problem, columns = params
    a = problem.delassus
    v, contact, joint = it.velocity, list(it.contact), list(it.joint)
    for k in range(problem.nc):
        new = jnp.maximum(contact[k] - safe_div(v[k] - problem.contact_target[k], a[k, k]), 0.0)
        v = v + columns[k] * (new[0] - contact[k][0])
        contact[k] = new
    for i in range(problem.nj):
        r = problem.joint_row(i)
        new = _limit_impulse(problem.limit_low[i], problem.limit_high[i], v[r] - a[r, r] * joint[i], a[r, r])
        v = v + columns[r] * (new - joint[i])
        joint[i] = new
    return _Sweeping(v, tuple(contact), tuple(joint), it.limit)


def _impulse_map(sweep):
    """One sweep as a map of the impulses alone (the iteration the derivative linearizes)."""

    def apply(params, x):
        return _finish(sweep(params, _start(params[0], *x)))

    return apply


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _iterate(plan, params, x0):
    """Each sweep of ``plan`` (pairs ``(sweep, count)``) applied ``count`` times to its problem's impulses.

    The problems are independent, so their sweeps share loops: the first loop runs every problem for the
    smallest count, the next the remaining ones for the next count, and so on; the dependent iterations
    are the largest count. ``x0[j]`` and the result are ``(row impulses, limit impulses)``.
    """
    its = [_start(p[0], *x) for p, x in zip(params, x0, strict=True)]
    done = 0
    for count in sorted({c for _, c in plan}):
        live = [j for j, (_, c) in enumerate(plan) if c >= count]

        def body(_, xs, live=live):
            return tuple(plan[j][0](params[j], xj) for j, xj in zip(live, xs, strict=True))

        out = jax.lax.fori_loop(0, count - done, body, tuple(its[j] for j in live))
        for j, xj in zip(live, out, strict=True):
            its[j] = xj
        done = count
    return tuple(_finish(it) for it in its)


@_iterate.defjvp
def _iterate_jvp(plan, primals, tangents):
    """Derivative of the sweeps with every sweep's Jacobians taken at the final iterate ``x_K``.

    With ``S_x``, ``S_p`` the Jacobians of one sweep (a map of the impulses) at ``x_K``, the tangent of
    ``x_K`` is ``S_x^K dx_0 + sum_{j<K} S_x^j S_p dp``: the exact derivative of the K sweeps whenever the
    iterates have converged (``x_k = x_K``), and otherwise different only in evaluating the Jacobians
    at ``x_K`` instead of at each ``x_k``. The tangent recursion is linear, so reverse mode transposes
    it without storing anything per sweep, and the compiled derivative holds one linearized sweep per
    problem instead of K.
    """
    params, x0 = primals
    d_params, d_x0 = tangents
    x = _iterate(plan, params, x0)
    d_x = []
    for (sweep, count), p, xj, dp, dxj in zip(plan, params, x, d_params, d_x0, strict=True):
        _, linear = jax.linearize(_impulse_map(sweep), p, xj)
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
    plan, params, x0 = [], [], []
    for j in live:
        problem, warm = problems[j], warm_starts[j]
        columns = problem.delassus.T
        if problem.with_friction:
            # 1 / the largest eigenvalue of each contact's tangential 2x2 block: the friction pair's step.
            inv_eig = safe_div(1.0, _largest_eigenvalue(problem.tangent_blocks()))
            plan.append((_velocity_sweep, int(iterations[j])))
            params.append((problem, columns, inv_eig))
            x0.append((problem.rows(warm), warm.limit))
        else:
            plan.append((_frictionless_sweep, int(iterations[j])))
            params.append((problem, columns))
            x0.append((problem.rows(warm), jnp.zeros(0, problem.free_velocity.dtype)))
    x = _iterate(tuple(plan), tuple(params), tuple(x0))
    for j, (rows, limit) in zip(live, x, strict=True):
        problem = problems[j]
        if not problem.with_friction:
            limit = rows[problem.joint_row(0) :]
        out[j] = problem.impulses(rows, limit)
    return tuple(out)


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
