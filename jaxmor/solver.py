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

Sweeps run a fixed number of iterations with ``lax.fori_loop`` so that ``jit``, ``vmap``, ``jvp`` and
reverse-mode ``grad`` all work; the loops over contacts and joints are ``fori_loop``s with dynamic row
indices, so the compiled size does not grow with the rows. Derivatives do not store and replay every
sweep: they apply the Jacobians of one sweep, taken at the final impulses (transposed in reverse mode),
as many times as there were sweeps (``_iterate_jvp``), exact when the sweeps have converged. Plain
Gauss-Seidel needs many sweeps on long chains of touching bodies (about N^2 for N bodies in a row);
:func:`contact_residuals` measures how far a solution is from the contact laws.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from jaxmor.constraint import Impulses, Problem
from jaxmor.math import safe_div, safe_norm, safe_sqrt


def _project_disk(lam_t: jax.Array, radius: jax.Array) -> jax.Array:
    """Radial projection of the tangential pair onto the disk of ``radius`` (gradient-safe)."""
    norm2 = jnp.sum(lam_t * lam_t)
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


def _velocity_sweep(params: tuple[Problem, jax.Array], carry: tuple[jax.Array, jax.Array]):
    """One Gauss-Seidel sweep with friction: contacts in slot order, then each joint (friction, limit).

    ``params`` is the problem and the (nc,) inverse largest eigenvalues of the contacts' tangential
    blocks; ``carry`` is ``(row_impulse, limit)``: the (R,) impulse of each row (a joint row's is its
    friction plus its limit impulse) and the (nj,) limit impulses. A contact's three velocities come
    from one (3, R) product (the tangents' are then corrected for the normal's change), a joint's from
    one row.
    """
    problem, inv_eig = params
    a, b = problem.delassus, problem.free_velocity

    def contact(k, carry):
        lam, limit = carry
        n = problem.contact_row(k)
        rows = jax.lax.dynamic_slice_in_dim(a, n, 3)
        v = rows @ lam + jax.lax.dynamic_slice_in_dim(b, n, 3)
        old = jax.lax.dynamic_slice_in_dim(lam, n, 3)
        lam_n = jnp.maximum(old[0] - safe_div(v[0] - problem.contact_target[k], rows[0, n]), 0.0)
        v_t = v[1:] + jax.lax.dynamic_index_in_dim(rows[1:], n, axis=1, keepdims=False) * (lam_n - old[0])
        lam_t = _project_disk(old[1:] - v_t * inv_eig[k], problem.friction[k] * lam_n)
        return jax.lax.dynamic_update_slice_in_dim(lam, jnp.concatenate([lam_n[None], lam_t]), n, 0), limit

    def joint(i, carry):
        lam, limit = carry
        r = problem.joint_row(i)
        row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
        diag = row[r]
        v_other = row @ lam + b[r] - diag * lam[r]  # the velocity without this joint's impulses
        bound = problem.friction_bound[i]
        friction = jnp.clip(-safe_div(v_other, diag) - limit[i], -bound, bound)
        new_limit = _limit_impulse(problem.limit_low[i], problem.limit_high[i], v_other + diag * friction, diag)
        return lam.at[r].set(friction + new_limit), limit.at[i].set(new_limit)

    if problem.nc:
        carry = jax.lax.fori_loop(0, problem.nc, contact, carry)
    if problem.nj:
        carry = jax.lax.fori_loop(0, problem.nj, joint, carry)
    return carry


def _frictionless_sweep(problem: Problem, lam: jax.Array) -> jax.Array:
    """One Gauss-Seidel sweep of a frictionless problem: normal rows, then joint limit rows."""
    a, b = problem.delassus, problem.free_velocity

    def contact(k, lam):
        n = problem.contact_row(k)
        row = jax.lax.dynamic_index_in_dim(a, n, keepdims=False)
        v = row @ lam + b[n]
        return lam.at[n].set(jnp.maximum(lam[n] - safe_div(v - problem.contact_target[k], row[n]), 0.0))

    def joint(i, lam):
        r = problem.joint_row(i)
        row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
        v0 = row @ lam + b[r] - row[r] * lam[r]
        return lam.at[r].set(_limit_impulse(problem.limit_low[i], problem.limit_high[i], v0, row[r]))

    if problem.nc:
        lam = jax.lax.fori_loop(0, problem.nc, contact, lam)
    if problem.nj:
        lam = jax.lax.fori_loop(0, problem.nj, joint, lam)
    return lam


@partial(jax.custom_jvp, nondiff_argnums=(0, 3))
def _iterate(sweep, params, x0, iterations: int):
    """``iterations`` applications of ``x <- sweep(params, x)`` from ``x0``."""
    return jax.lax.fori_loop(0, iterations, lambda _, x: sweep(params, x), x0)


@_iterate.defjvp
def _iterate_jvp(sweep, iterations, primals, tangents):
    """Derivative of the sweeps with every sweep's Jacobians taken at the final iterate ``x_K``.

    With ``S_x``, ``S_p`` the Jacobians of one sweep at ``x_K``, the tangent of ``x_K`` is
    ``S_x^K dx_0 + sum_{j<K} S_x^j S_p dp``: the exact derivative of the K sweeps whenever the
    iterates have converged (``x_k = x_K``), and otherwise different only in evaluating the
    Jacobians at ``x_K`` instead of at each ``x_k``. The tangent recursion is linear, so reverse
    mode transposes it without storing anything per sweep, and the compiled derivative holds one
    linearized sweep instead of K.
    """
    params, x0 = primals
    d_params, d_x0 = tangents
    x = _iterate(sweep, params, x0, iterations)
    _, linear = jax.linearize(sweep, params, x)
    zero_x = jax.tree.map(jnp.zeros_like, x)
    zero_p = jax.tree.map(jnp.zeros_like, params)
    drive = linear(d_params, zero_x)

    def body(_, t):
        return jax.tree.map(jnp.add, linear(zero_p, t), drive)

    return x, jax.lax.fori_loop(0, iterations, body, d_x0)


def solve(problem: Problem, warm_start: Impulses, iterations: int) -> Impulses:
    """Run ``iterations`` PGS sweeps from ``warm_start`` and return the impulses.

    Args:
        problem: the problem (with friction, or frictionless: ``problem.rows_per_contact``).
        warm_start: the impulses to start from (a frictionless problem uses the normal and limit parts).
        iterations: number of sweeps (static).

    Returns:
        The impulses (a frictionless problem's tangential and joint friction impulses are zero).
    """
    if problem.free_velocity.shape[0] == 0:
        return warm_start
    rows = problem.rows(warm_start)
    if not problem.with_friction:
        lam = _iterate(_frictionless_sweep, problem, rows, iterations)
        return problem.impulses(lam, lam[problem.joint_row(0) :])
    # 1 / the largest eigenvalue of each contact's tangential 2x2 block: the friction pair's step.
    inv_eig = safe_div(1.0, _largest_eigenvalue(problem.tangent_blocks()))
    lam, limit = _iterate(_velocity_sweep, (problem, inv_eig), (rows, warm_start.limit), iterations)
    return problem.impulses(lam, limit)


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
