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
* **joint Coulomb friction** (one row per 1-DoF joint): ``|lam| <= (tau_c_joint + tau_c_out) h``, target
  ``v = 0``: sticking is exact (stiction), sliding gets the full friction impulse.
* **joint limits** (one row per 1-DoF joint): ``v >= (lower - q)/h`` with ``lam >= 0`` and
  ``v <= (upper - q)/h`` with ``lam <= 0``; the 1-D solution is
  ``lam = max(0, (v_lo - v0)/a) + min(0, (v_hi - v0)/a)``, again speculative.

Penetration (``d < 0``) or a violated limit is not corrected by the velocity: the target is
clamped at zero there, so no energy is added. Instead a second, frictionless PGS solve on the same
``A`` computes a *pseudo-velocity* ``u_pos = M_eff^-1 J^T lam_pos`` that removes a fraction
``POSITION_CORRECTION`` of the error beyond ``PENETRATION_ALLOWANCE`` per step; it moves ``q``
only and is discarded afterwards (split impulses).

Sweeps run a fixed number of iterations (``model.solver_iterations``) with ``lax.fori_loop`` so
that ``jit``, ``vmap`` and reverse-mode ``grad`` all work; they are warm-started from the previous
step's impulses. Plain Gauss-Seidel needs many sweeps on long chains of touching bodies (about N^2
for N bodies in a row); the residuals can be inspected with :func:`contact_residuals`.
"""

from __future__ import annotations

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
    """One step's constraint problem (shapes for ``nc`` contacts and ``nv`` velocities).

    Attributes:
        delassus: (R, R) ``A = J M_eff^-1 J^T`` with ``R = 3 nc + 2 nj`` (``nj`` 1-DoF joints).
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


def _sweep(problem: Problem, lam: jnp.ndarray, with_friction: bool) -> jnp.ndarray:
    """One Gauss-Seidel sweep: contacts in slot order, then each joint's friction and limit rows.

    The loops over contacts and joints are ``fori_loop``s with dynamic row indices, so the compiled
    size does not grow with the number of rows.
    """
    a, b = problem.delassus, problem.free_velocity
    nc = problem.contact_target.shape[0]
    nj = problem.friction_bound.shape[0]

    def contact(k, lam):
        n = 3 * k
        row_n = jax.lax.dynamic_index_in_dim(a, n, keepdims=False)
        v_n = row_n @ lam + b[n]
        lam_n = jnp.maximum(lam[n] - _safe_div(v_n - problem.contact_target[k], row_n[n]), 0.0)
        lam = lam.at[n].set(lam_n)
        if with_friction:
            rows_t = jax.lax.dynamic_slice_in_dim(a, n + 1, 2)
            v_t = rows_t @ lam + jax.lax.dynamic_slice_in_dim(b, n + 1, 2)
            block = jax.lax.dynamic_slice_in_dim(rows_t, n + 1, 2, axis=1)
            step = _safe_div(v_t, _largest_eigenvalue(block))
            lam_t = jax.lax.dynamic_slice_in_dim(lam, n + 1, 2)
            lam = jax.lax.dynamic_update_slice_in_dim(
                lam, _project_disk(lam_t - step, problem.friction[k] * lam_n), n + 1, 0
            )
        return lam

    def joint(i, lam):
        base = 3 * nc
        if with_friction:
            r = base + i
            row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
            v = row @ lam + b[r]
            bound = problem.friction_bound[i]
            lam = lam.at[r].set(jnp.clip(lam[r] - _safe_div(v, row[r]), -bound, bound))
        r = base + nj + i
        row = jax.lax.dynamic_index_in_dim(a, r, keepdims=False)
        v0 = row @ lam + b[r] - row[r] * lam[r]
        lo = _safe_div(problem.limit_low[i] - v0, row[r])
        hi = _safe_div(problem.limit_high[i] - v0, row[r])
        return lam.at[r].set(jnp.maximum(lo, 0.0) + jnp.minimum(hi, 0.0))

    if nc:
        lam = jax.lax.fori_loop(0, nc, contact, lam)
    if nj:
        lam = jax.lax.fori_loop(0, nj, joint, lam)
    return lam


def solve(problem: Problem, warm_start: jnp.ndarray, iterations: int, *, with_friction: bool = True) -> jnp.ndarray:
    """Run ``iterations`` PGS sweeps from ``warm_start`` (R,) and return the impulses (R,)."""
    if problem.free_velocity.shape[0] == 0:
        return warm_start
    return jax.lax.fori_loop(0, iterations, lambda _, lam: _sweep(problem, lam, with_friction), warm_start)


def contact_residuals(problem: Problem, lam: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Residuals of a solution (ContactBench's criteria), for tests and diagnostics.

    Returns a dict with ``cone`` (largest ``max(|lam_t| - mu lam_n, -lam_n, 0)``), ``signorini``
    (largest ``|lam_n (v_n - target)|``) and ``normal_velocity`` (most negative ``v_n - target``).
    """
    nc = problem.contact_target.shape[0]
    v = problem.delassus @ lam + problem.free_velocity
    lam_c = lam[: 3 * nc].reshape(nc, 3)
    v_c = v[: 3 * nc].reshape(nc, 3)
    gap = v_c[:, 0] - problem.contact_target
    cone = jnp.maximum(jnp.linalg.norm(lam_c[:, 1:], axis=1) - problem.friction * lam_c[:, 0], -lam_c[:, 0])
    return {
        "cone": jnp.max(jnp.maximum(cone, 0.0), initial=0.0),
        "signorini": jnp.max(jnp.abs(lam_c[:, 0] * gap), initial=0.0),
        "normal_velocity": jnp.min(gap, initial=0.0),
    }
