"""The fluid stage: drag of the medium on each body, MuJoCo's inertia-box model (``Options.density``, ``viscosity``,
``wind``; MJCF ``<option density viscosity wind>``).

Each body with mass is, for the fluid, its equivalent inertia box: in the frame of its principal axes of inertia
(moments ``I_x, I_y, I_z``, mass ``m``) a box of sides ``b_x = sqrt(6 (I_y + I_z - I_x) / m)`` and the others
alike. With the body's angular velocity ``w`` and the velocity ``v`` of its centre of mass relative to the wind,
both in that frame, the medium (density ``rho`` [kg/m^3], viscosity ``beta`` [Pa s]) applies at the centre of mass

* viscous resistance, Stokes' law for a sphere of diameter ``d = (b_x + b_y + b_z) / 3``: force ``-3 pi d beta v``,
  torque ``-pi d^3 beta w``;
* quadratic drag on each axis: force ``-rho / 2 b_y b_z |v_x| v_x`` (and the others alike), torque
  ``-rho / 64 b_x (b_y^4 + b_z^4) |w_x| w_x`` (and the others alike),

as MuJoCo's ``mj_inertiaBoxFluidModel`` does. The forces enter the step explicitly, as generalized forces through
the bodies' Jacobians (MuJoCo's implicit integrators also differentiate them; its Euler integrator, the one jaxmor
is compared with, does not). The principal axes come from the inertia tensor by Jacobi rotations (a fixed count,
no LAPACK): where two principal moments are equal the axes in their plane are a choice, MuJoCo's (from its
compiler) and jaxmor's may differ, and the quadratic drag in that plane with them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.sim.kinematics import Kinematics, angular_jacobians, relative_point_jacobians
from jaxmor.types import Model

#: Jacobi sweeps over the three pairs of axes: float64 converges in 4 (the convergence is quadratic).
JACOBI_SWEEPS = 6

#: MuJoCo's floor on a mass and on an inertia-box side's square (``mjMINVAL``-like), for massless bodies.
FLOOR = 1e-12


def principal_axes(inertia: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(moments (n, 3), axes (n, 3, 3))``: the eigenvalues of symmetric 3 x 3 matrices ``inertia`` (n, 3, 3) and
    their eigenvectors as the columns of ``axes`` (``inertia = axes diag(moments) axes^T``), by cyclic Jacobi
    rotations (:data:`JACOBI_SWEEPS`)."""
    a = inertia
    axes = jnp.broadcast_to(jnp.eye(3, dtype=a.dtype), a.shape)
    for _ in range(JACOBI_SWEEPS):
        for p, q in ((0, 1), (0, 2), (1, 2)):
            apq, app, aqq = a[:, p, q], a[:, p, p], a[:, q, q]
            turn = jnp.abs(apq) > 0
            theta = 0.5 * jnp.arctan2(2 * apq, jnp.where(turn, aqq - app, 1.0))
            c, s = jnp.where(turn, jnp.cos(theta), 1.0), jnp.where(turn, jnp.sin(theta), 0.0)
            rotation = jnp.broadcast_to(jnp.eye(3, dtype=a.dtype), a.shape)
            rotation = rotation.at[:, p, p].set(c).at[:, q, q].set(c).at[:, p, q].set(s).at[:, q, p].set(-s)
            a = jnp.einsum("nji,njk,nkl->nil", rotation, a, rotation)
            axes = axes @ rotation
    return jnp.diagonal(a, axis1=1, axis2=2), axes


def inertia_box(mass: jax.Array, moments: jax.Array) -> jax.Array:
    """(n, 3) the sides [m] of the equivalent inertia boxes of bodies of ``mass`` (n,) [kg] and principal ``moments``
    (n, 3) [kg m^2]: ``sqrt(6 (I_j + I_k - I_i) / m)``, 0 for a massless body."""
    others = jnp.sum(moments, axis=-1, keepdims=True) - 2 * moments
    sides = jnp.sqrt(6 * jnp.maximum(others, FLOOR) / jnp.maximum(mass, FLOOR)[:, None])
    return jnp.where(mass[:, None] > 0, sides, 0.0)


def box_drag(sides: jax.Array, w: jax.Array, v: jax.Array, density, viscosity) -> tuple[jax.Array, jax.Array]:
    """``(torque, force)`` (n, 3) on bodies with inertia boxes ``sides`` (n, 3) turning at ``w`` and moving at ``v``
    relative to the medium (n, 3), all in the boxes' frames (module docstring)."""
    d = jnp.mean(sides, axis=-1, keepdims=True)
    torque = -jnp.pi * d**3 * viscosity * w
    force = -3 * jnp.pi * d * viscosity * v
    bx, by, bz = sides[:, 0], sides[:, 1], sides[:, 2]
    face = jnp.stack([by * bz, bx * bz, bx * by], axis=-1)
    spin = jnp.stack([bx * (by**4 + bz**4), by * (bx**4 + bz**4), bz * (bx**4 + by**4)], axis=-1)
    force = force - 0.5 * density * face * jnp.abs(v) * v
    torque = torque - density * spin * jnp.abs(w) * w / 64
    return torque, force


def fluid(model: Model, kin: Kinematics, u: jax.Array) -> jax.Array:
    """(nv,) the generalized force of the medium's drag on every body at the velocities ``u`` [Nm or N] (module
    docstring); zero without fluid forces (``model.opt.fluid_forces``)."""
    dtype = u.dtype
    if not model.opt.fluid_forces or model.nb == 0:
        return jnp.zeros(model.nv, dtype)
    bodies = kin.body
    moments, axes = principal_axes(model.body_inertia.astype(dtype))
    frames = bodies.rotation @ axes  # the principal frames in the world
    centres = bodies.position + jnp.einsum("bij,bj->bi", bodies.rotation, model.body_com.astype(dtype))
    linear = relative_point_jacobians(model, bodies, centres, np.full(model.nb, -1), np.arange(model.nb))
    angular = jnp.swapaxes(angular_jacobians(model, bodies, np.arange(model.nb)), 1, 2)  # (nb, nv, 3)
    opt = model.opt
    v = jnp.einsum("bdk,d->bk", linear, u) - jnp.asarray(opt.wind, dtype)
    w = jnp.einsum("bdk,d->bk", angular, u)
    local = jax.vmap(lambda r, x: r.T @ x)
    torque, force = box_drag(
        inertia_box(model.body_mass.astype(dtype), moments),
        local(frames, w),
        local(frames, v),
        jnp.asarray(opt.density, dtype),
        jnp.asarray(opt.viscosity, dtype),
    )
    world = jax.vmap(lambda r, x: r @ x)
    return jnp.einsum("bdk,bk->d", linear, world(frames, force)) + jnp.einsum(
        "bdk,bk->d", angular, world(frames, torque)
    )
