"""Projected Gauss-Seidel (PGS) on impulses: contacts, joint Coulomb friction and joint limits.

Formulation
-----------
The step has computed the unconstrained end-of-step velocity ``u_free`` and the effective mass
``M_eff`` (mass matrix plus the implicit PD, damping and gyroscopic terms). Constraint rows with
Jacobians ``J`` (``R x nv``) add impulses ``lam``::

    u_next = u_free + M_eff^-1 J^T lam,       v = J u_next = A lam + J u_free,    A = J M_eff^-1 J^T

(``A`` is the Delassus matrix, built once per step). Rows, in order:

* **contacts** (``nc`` slots x 3 rows: normal ``n``, tangents ``t1``, ``t2``). Normal: ``lam_n >= 0``
  complementary to ``v_n >= v_target``. The target is *speculative*: ``v_target = -max(d, 0) / h``
  for a gap ``d``, so a contact that would close during the step lands exactly at contact, and far
  contacts stay inactive without masks. Restitution ``e > 0`` acts on an impact: a contact that is
  open at the beginning of the step (``d > PENETRATION_ALLOWANCE``) and closes within it
  (``d + h v_n^- <= 0``) at an approach speed ``v_n^- < -0.01`` m/s gets ``v_target = max(-d/h,
  -e v_n^-)``: it leaves with ``e`` times its approach speed from at most ``h |v_n^-|`` above the
  surface, an ``O(h v)`` error in the bounce height. Resting contacts (``d ~ 0``) never bounce.
  Friction: the tangential pair is updated
  jointly and projected radially onto the **disk** ``|lam_t| <= mu lam_n``, so friction does not
  depend on the direction of sliding (per-axis bounds would make a diagonal push about 2.5x off).
  The pair's update is one step of length ``1 / s_max`` along its velocity,
  ``lam_t <- proj(lam_t - v_t / s_max)``, with ``s_max`` the largest eigenvalue of its 2x2 diagonal
  block ``A_tt``. With a scalar step the fixed points are exactly Coulomb's law with maximum
  dissipation: inside the disk ``v_t = 0`` (stiction), on its rim ``v_t = -c lam_t`` with ``c >= 0``
  (friction opposite to the slip). A full 2x2 solve ``lam_t - A_tt^-1 v_t`` followed by the radial
  (Euclidean) projection does not have this property: its fixed points satisfy
  ``A_tt^-1 v_t || -lam_t``, so with an anisotropic block the friction is not opposite to the slip,
  and on the four corners of a sliding box it settled on self-cancelling tangential impulses that
  used part of each disk (a box sliding at 3 m/s on mu = 0.5 went 14% too far and then crept, and
  one on a 30 degree incline with mu = 0.6 > tan 30 degrees slid instead of sticking).
* **joint Coulomb friction** (per 1-DoF joint): ``|lam| <= (tau_c_joint + tau_c_out) h``, target
  ``v = 0``: sticking is exact (stiction), sliding gets the full friction impulse.
* **joint limits** (per 1-DoF joint): ``v >= (lower - q)/h`` with ``lam >= 0`` and
  ``v <= (upper - q)/h`` with ``lam <= 0``; the 1-D solution is
  ``lam = max(0, (v_lo - v0)/a) + min(0, (v_hi - v0)/a)``, again speculative.

A joint's friction and limit impulses act along the same unit row of ``J``, so ``A`` holds that row
once and its impulse is their sum: the joint's Gauss-Seidel update takes the friction impulse, then
the limit impulse, each from the velocity the other leaves (exactly the two sequential 1-D updates of
two identical rows, with one product instead of two and a smaller ``A``).

Penetration (``d < 0``) or a violated limit is not corrected by the velocity: the target is
clamped at zero there, so no energy is added. Instead a second, frictionless PGS solve on the
normal and joint rows of the same ``A`` computes a *pseudo-velocity* ``u_pos = M_eff^-1 J^T lam_pos``
that removes a fraction ``POSITION_CORRECTION`` of the error beyond ``PENETRATION_ALLOWANCE`` per
step; it moves ``q`` only and is discarded afterwards (split impulses).

Sweeps run a fixed number of iterations (``model.solver_iterations``) with ``lax.fori_loop`` so
that ``jit``, ``vmap``, ``jvp`` and reverse-mode ``grad`` all work. Derivatives do not store and
replay every sweep: they apply the Jacobians of one sweep, taken at the final impulses (transposed
in reverse mode), as many times as there were sweeps (``_iterate_jvp``), exact when the sweeps have converged; this cut
the gradient's compile time and memory (bench/README.md). Sweeps are warm-started from the previous
step's impulses (the position pass starts from zero). Plain Gauss-Seidel needs many sweeps on long
chains of touching bodies (about N^2 for N bodies in a row); the residuals can be inspected
with :func:`contact_residuals`.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

#: Fraction of the penetration (beyond the allowance) removed per step by the position pass.
POSITION_CORRECTION = 0.2
#: Penetration depth [m] (and limit violation [rad or m]) left uncorrected, to keep contacts warm.
PENETRATION_ALLOWANCE = 1e-5
#: Approach speed [m/s] below which restitution is ignored (resting contacts do not bounce).
RESTITUTION_THRESHOLD = 1e-2


@struct.dataclass
class Problem:
    """One step's constraint problem (shapes for ``nc`` contacts and ``nj`` 1-DoF joints).

    Rows: ``3 nc`` contact rows (normal, tangent 1, tangent 2 of each contact), then one row per
    1-DoF joint, shared by the joint's friction and limit impulses (their Jacobians are the same
    unit row, so ``A`` needs the row once). A *frictionless* problem (``solve(..., with_friction=False)``,
    the position pass) has one normal row per contact instead of three.

    Attributes:
        delassus: (R, R) ``A = J M_eff^-1 J^T``, ``R = 3 nc + nj`` (frictionless: ``nc + nj``).
        free_velocity: (R,) ``J u_free``.
        contact_target: (nc,) lower bound of each normal velocity [m/s].
        friction: (nc,) friction coefficient of each contact.
        friction_bound: (nj,) joint friction impulse bound [N s or Nm s].
        limit_low, limit_high: (nj,) bounds of each joint velocity from the limits.
    """

    delassus: jnp.ndarray
    free_velocity: jnp.ndarray
    contact_target: jnp.ndarray
    friction: jnp.ndarray
    friction_bound: jnp.ndarray
    limit_low: jnp.ndarray
    limit_high: jnp.ndarray


def _safe_div(a, b):
    ok = b > 0
    return jnp.where(ok, a / jnp.where(ok, b, 1.0), 0.0)


def _project_disk(lam_t, radius):
    """Radial projection of the tangential pair onto the disk of ``radius`` (gradient-safe)."""
    norm2 = jnp.sum(lam_t * lam_t)
    safe = jnp.sqrt(jnp.where(norm2 > 0, norm2, 1.0))
    scale = jnp.where(norm2 > radius * radius, radius / safe, 1.0)
    return lam_t * scale


def _largest_eigenvalue(block):
    """Largest eigenvalue of a symmetric 2x2 block (gradient-safe when its eigenvalues are equal)."""
    mean = 0.5 * (block[0, 0] + block[1, 1])
    half = 0.5 * (block[0, 0] - block[1, 1])
    off = 0.5 * (block[0, 1] + block[1, 0])
    disc = half * half + off * off
    return mean + jnp.where(disc > 0, jnp.sqrt(jnp.where(disc > 0, disc, 1.0)), 0.0)


def _limit_impulse(low, high, v0, diag):
    """Impulse of a limit row (1-D): ``v >= low`` pushes with ``lam >= 0``, ``v <= high`` with ``lam <= 0``."""
    return jnp.maximum(_safe_div(low - v0, diag), 0.0) + jnp.minimum(_safe_div(high - v0, diag), 0.0)


def _velocity_sweep(params: tuple[Problem, jnp.ndarray], carry):
    """One Gauss-Seidel sweep with friction: contacts in slot order, then each joint (friction, limit).

    ``params`` is the problem and the (nc,) inverse largest eigenvalues of the contacts' tangential
    blocks; ``carry`` is ``(row_impulse, limit)``: the (R,) impulse of each row (a joint row's is its friction
    plus its limit impulse) and the (nj,) limit impulses. The loops over contacts and joints are
    ``fori_loop``s with dynamic row indices, so the compiled size does not grow with the rows; a
    contact's three velocities come from one (3, R) product (the tangents' are then corrected for
    the normal's change), a joint's from one row.
    """
    problem, inv_eig = params
    a, b = problem.delassus, problem.free_velocity
    nc = problem.contact_target.shape[0]
    nj = problem.friction_bound.shape[0]

    def contact(k, carry):
        lam, limit = carry
        n = 3 * k
        rows = jax.lax.dynamic_slice_in_dim(a, n, 3)
        v = rows @ lam + jax.lax.dynamic_slice_in_dim(b, n, 3)
        old = jax.lax.dynamic_slice_in_dim(lam, n, 3)
        lam_n = jnp.maximum(old[0] - _safe_div(v[0] - problem.contact_target[k], rows[0, n]), 0.0)
        v_t = v[1:] + jax.lax.dynamic_index_in_dim(rows[1:], n, axis=1, keepdims=False) * (lam_n - old[0])
        lam_t = _project_disk(old[1:] - v_t * inv_eig[k], problem.friction[k] * lam_n)
        return jax.lax.dynamic_update_slice_in_dim(lam, jnp.concatenate([lam_n[None], lam_t]), n, 0), limit

    def joint(i, carry):
        lam, limit = carry
        r = 3 * nc + i
        row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
        diag = row[r]
        v_other = row @ lam + b[r] - diag * lam[r]  # the velocity without this joint's impulses
        bound = problem.friction_bound[i]
        friction = jnp.clip(-_safe_div(v_other, diag) - limit[i], -bound, bound)
        new_limit = _limit_impulse(problem.limit_low[i], problem.limit_high[i], v_other + diag * friction, diag)
        return lam.at[r].set(friction + new_limit), limit.at[i].set(new_limit)

    if nc:
        carry = jax.lax.fori_loop(0, nc, contact, carry)
    if nj:
        carry = jax.lax.fori_loop(0, nj, joint, carry)
    return carry


def _frictionless_sweep(problem: Problem, lam: jnp.ndarray) -> jnp.ndarray:
    """One Gauss-Seidel sweep of a frictionless problem: normal rows, then joint limit rows."""
    a, b = problem.delassus, problem.free_velocity
    nc = problem.contact_target.shape[0]
    nj = problem.limit_low.shape[0]

    def contact(k, lam):
        row = jax.lax.dynamic_index_in_dim(a, k, keepdims=False)
        v = row @ lam + b[k]
        return lam.at[k].set(jnp.maximum(lam[k] - _safe_div(v - problem.contact_target[k], row[k]), 0.0))

    def joint(i, lam):
        r = nc + i
        row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
        v0 = row @ lam + b[r] - row[r] * lam[r]
        return lam.at[r].set(_limit_impulse(problem.limit_low[i], problem.limit_high[i], v0, row[r]))

    if nc:
        lam = jax.lax.fori_loop(0, nc, contact, lam)
    if nj:
        lam = jax.lax.fori_loop(0, nj, joint, lam)
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


def solve(problem: Problem, warm_start: jnp.ndarray, iterations: int, *, with_friction: bool = True) -> jnp.ndarray:
    """Run ``iterations`` PGS sweeps from ``warm_start`` and return the impulses.

    Args:
        problem: the problem; with friction its rows are ``3 nc`` contact rows then ``nj`` joint rows,
            frictionless ``nc`` normal rows then ``nj`` joint rows (see :class:`Problem`).
        warm_start: with friction (3 nc + 2 nj,): the contact impulses (normal, t1, t2 per contact),
            the joints' friction impulses, the joints' limit impulses; frictionless (nc + nj,): the
            normal impulses, the joints' limit impulses.
        iterations: number of sweeps (static).
        with_friction: solve the contacts' friction and the joints' friction (the velocity pass), or
            only the normal and limit rows (the position pass).

    Returns:
        The impulses, laid out as ``warm_start``.
    """
    nc = problem.contact_target.shape[0]
    nj = problem.limit_low.shape[0]
    if problem.free_velocity.shape[0] == 0:
        return warm_start
    if not with_friction:
        return _iterate(_frictionless_sweep, problem, warm_start, iterations)
    a = problem.delassus
    # 1 / the largest eigenvalue of each contact's tangential 2x2 block: the friction pair's step.
    inv_eig = (
        jnp.stack(
            [_safe_div(1.0, _largest_eigenvalue(a[3 * k + 1 : 3 * k + 3, 3 * k + 1 : 3 * k + 3])) for k in range(nc)]
        )
        if nc
        else jnp.zeros((0,), a.dtype)
    )
    contact, friction, limit = jnp.split(warm_start, [3 * nc, 3 * nc + nj])
    carry = (jnp.concatenate([contact, friction + limit]), limit)
    lam, limit = _iterate(_velocity_sweep, (problem, inv_eig), carry, iterations)
    return jnp.concatenate([lam[: 3 * nc], lam[3 * nc :] - limit, limit])


def row_impulses(problem: Problem, lam: jnp.ndarray) -> jnp.ndarray:
    """(R,) impulse of each row of a problem with friction from :func:`solve`'s (3 nc + 2 nj,) result."""
    nc = problem.contact_target.shape[0]
    nj = problem.limit_low.shape[0]
    return jnp.concatenate([lam[: 3 * nc], lam[3 * nc : 3 * nc + nj] + lam[3 * nc + nj :]])


def contact_residuals(problem: Problem, lam: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Residuals of a solution (ContactBench's criteria), for tests and diagnostics.

    Returns a dict with ``cone`` (largest ``max(|lam_t| - mu lam_n, -lam_n, 0)``), ``signorini``
    (largest ``|lam_n (v_n - target)|``) and ``normal_velocity`` (most negative ``v_n - target``).
    """
    nc = problem.contact_target.shape[0]
    v = problem.delassus @ row_impulses(problem, lam) + problem.free_velocity
    lam_c = lam[: 3 * nc].reshape(nc, 3)
    v_c = v[: 3 * nc].reshape(nc, 3)
    gap = v_c[:, 0] - problem.contact_target
    cone = jnp.maximum(jnp.linalg.norm(lam_c[:, 1:], axis=1) - problem.friction * lam_c[:, 0], -lam_c[:, 0])
    return {
        "cone": jnp.max(jnp.maximum(cone, 0.0), initial=0.0),
        "signorini": jnp.max(jnp.abs(lam_c[:, 0] * gap), initial=0.0),
        "normal_velocity": jnp.min(gap, initial=0.0),
    }
