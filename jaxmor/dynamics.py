"""Rigid-body dynamics: mass matrix (CRBA), bias forces (RNEA) and forward dynamics.

Formulation. The recursions run in body coordinates with 6-D spatial vectors ordered
``[angular; linear]`` (Featherstone). A free base is first treated in *local* coordinates
``nu = [v_b, w_b]`` (base-origin velocity and angular velocity in the base frame), where its motion
subspace is constant. jaxmor's public convention uses world-frame base velocities
``u = [v, w]``; the two are related by ``nu = T u`` with ``T = blockdiag(R^T, R^T, I)`` and ``R``
the base rotation. Since ``dT/dt u = [-w_b x v_b; 0; 0] =: c``, the equations of motion
``M_l dnu/dt + b_l = T^-T tau`` become

    M(q) = T^T M_l T,        b(q, u) = T^T (b_l + M_l c) = T^T RNEA_l(q, nu, c).

Rotor inertia (``dof_armature``) is added to the diagonal of ``M``. Gravity enters RNEA as a
fictitious upward acceleration of the world. Everything is pure JAX: jit-, vmap- and
grad-able, in float32 or float64 (the dtype of ``q``).
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.kinematics import joint_transforms
from jaxmor.math import quat_to_rotation, skew
from jaxmor.types import JOINT_FREE, JOINT_REVOLUTE, Model


def _spatial_transforms(model: Model, q: jnp.ndarray) -> jnp.ndarray:
    """(nb, 6, 6) motion transforms from each parent's coordinates to the body's."""
    rel_r, rel_p = joint_transforms(model, q)
    e = jnp.swapaxes(rel_r, -1, -2)
    zero = jnp.zeros_like(e)
    top = jnp.concatenate([e, zero], -1)
    bottom = jnp.concatenate([-e @ skew(rel_p), e], -1)
    return jnp.concatenate([top, bottom], -2)


def _spatial_inertias(model: Model, dtype) -> jnp.ndarray:
    """(nb, 6, 6) spatial inertia of each body about its origin, body coordinates."""
    mass = model.body_mass.astype(dtype)[:, None, None]
    cx = skew(model.body_com.astype(dtype))
    cxt = jnp.swapaxes(cx, -1, -2)
    eye = jnp.eye(3, dtype=dtype)
    top = jnp.concatenate([model.body_inertia.astype(dtype) + mass * cx @ cxt, mass * cx], -1)
    bottom = jnp.concatenate([mass * cxt, mass * eye], -1)
    return jnp.concatenate([top, bottom], -2)


def _subspace_columns(model: Model, dtype) -> jnp.ndarray:
    """(nb, 6) motion subspace column of each 1-DoF joint (unused rows for free joints)."""
    axis = model.body_axis.astype(dtype)
    revolute = np.array([k == JOINT_REVOLUTE for k in model.body_joint_type])[:, None]
    zero = jnp.zeros_like(axis)
    return jnp.concatenate([jnp.where(revolute, axis, zero), jnp.where(revolute, zero, axis)], -1)


#: Motion subspace of a free joint for ``nu = [v_b, w_b]`` in ``[angular; linear]`` body coordinates.
_FREE_SUBSPACE = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


def _body_jacobians(model: Model, xs: jnp.ndarray, dtype) -> jnp.ndarray:
    """(nb, 6, nv) Jacobian of each body's spatial velocity (body coordinates) w.r.t. local ``nu``."""
    cols = _subspace_columns(model, dtype)
    jacs = []
    for i, parent in enumerate(model.body_parent):
        v = model.body_v_start[i]
        if model.body_joint_type[i] == JOINT_FREE:
            own = np.zeros((6, model.nv))
            own[:, v : v + 6] = _FREE_SUBSPACE
            own = jnp.asarray(own, dtype)
        else:
            onehot = np.zeros(model.nv)
            onehot[v] = 1.0
            own = cols[i][:, None] * jnp.asarray(onehot, dtype)[None, :]
        jacs.append(own if parent < 0 else xs[i] @ jacs[parent] + own)
    return jnp.stack(jacs)


def _cross_motion(v: jnp.ndarray, m: jnp.ndarray) -> jnp.ndarray:
    """Batched spatial cross product ``v x m`` of motion vectors (..., 6)."""
    w, lin = v[..., :3], v[..., 3:]
    return jnp.concatenate([jnp.cross(w, m[..., :3]), jnp.cross(w, m[..., 3:]) + jnp.cross(lin, m[..., :3])], -1)


def _cross_force(v: jnp.ndarray, f: jnp.ndarray) -> jnp.ndarray:
    """Batched spatial cross product ``v x* f`` of a motion and a force vector (..., 6)."""
    w, lin = v[..., :3], v[..., 3:]
    return jnp.concatenate([jnp.cross(w, f[..., :3]) + jnp.cross(lin, f[..., 3:]), jnp.cross(w, f[..., 3:])], -1)


def _free_bases(model: Model) -> list[int]:
    return [i for i, k in enumerate(model.body_joint_type) if k == JOINT_FREE]


def _local_transform(model: Model, q: jnp.ndarray) -> jnp.ndarray:
    """(nv, nv) matrix ``T`` with ``nu_local = T u``."""
    t = jnp.eye(model.nv, dtype=q.dtype)
    for i in _free_bases(model):
        s, v = model.body_q_start[i], model.body_v_start[i]
        rt = quat_to_rotation(q[s + 3 : s + 7]).T
        t = t.at[v : v + 3, v : v + 3].set(rt).at[v + 3 : v + 6, v + 3 : v + 6].set(rt)
    return t


def _dynamics_terms(model: Model, q: jnp.ndarray, u: jnp.ndarray | None):
    """Mass matrix and (if ``u`` is given) bias force, in jaxmor's coordinates, sharing the kinematics.

    With body Jacobians ``J_i`` (``v_i = J_i nu``), ``M_l = sum_i J_i^T I_i J_i`` and the bias is
    ``b_l = sum_i J_i^T f_i`` with ``f_i = I_i a_i + v_i x* I_i v_i`` and ``a_i`` the velocity-product
    and gravity accelerations (the RNEA's forward pass; the backward pass is the sum over ``J_i^T``).
    Few, large operations: the recursion only carries ``J_i`` and ``a_i``.
    """
    dtype = q.dtype
    if model.nb == 0:
        zero = jnp.zeros((model.nv, model.nv), dtype)
        return zero, (None if u is None else jnp.zeros(model.nv, dtype))
    xs = _spatial_transforms(model, q)
    inertia = _spatial_inertias(model, dtype)
    jac = _body_jacobians(model, xs, dtype)
    t = _local_transform(model, q)
    m_local = jnp.einsum("bkn,bkl,blm->nm", jac, inertia, jac)
    mass = t.T @ m_local @ t + jnp.diag(model.dof_armature.astype(dtype))
    if u is None:
        return mass, None
    nu = t @ u
    vel = jnp.einsum("bkn,n->bk", jac, nu)
    # Velocity of each joint alone, S_i nu_i, as the body velocity minus the transported parent's.
    parent_vel = jnp.stack([jnp.zeros(6, dtype) if p < 0 else xs[i] @ vel[p] for i, p in enumerate(model.body_parent)])
    product = _cross_motion(vel, vel - parent_vel)
    # dT/dt u for a free base: the local velocity coordinates rotate with the base.
    nu_dot = jnp.zeros(model.nv, dtype)
    for i in _free_bases(model):
        v = model.body_v_start[i]
        nu_dot = nu_dot.at[v : v + 3].set(-jnp.cross(nu[v + 3 : v + 6], nu[v : v + 3]))
    a_world = jnp.concatenate([jnp.zeros(3, dtype), -model.gravity.astype(dtype)])
    accs = []
    for i, parent in enumerate(model.body_parent):
        base = xs[i] @ (a_world if parent < 0 else accs[parent])
        accs.append(base + product[i])
    acc = jnp.stack(accs) + jnp.einsum("bkn,n->bk", jac, nu_dot)
    momentum = jnp.einsum("bkl,bl->bk", inertia, vel)
    force = jnp.einsum("bkl,bl->bk", inertia, acc) + _cross_force(vel, momentum)
    bias = t.T @ jnp.einsum("bkn,bk->n", jac, force)
    return mass, bias


def _check(model: Model, q, u=None, tau=None):
    q = jnp.asarray(q)
    if q.shape != (model.nq,):
        raise ArgumentError(f"q must have shape ({model.nq},), got {q.shape}")
    out = [q]
    for name, x in (("u", u), ("tau", tau)):
        if x is not None:
            x = jnp.asarray(x, dtype=q.dtype)
            if x.shape != (model.nv,):
                raise ArgumentError(f"{name} must have shape ({model.nv},), got {x.shape}")
            out.append(x)
    return out


def mass_matrix(model: Model, q: jnp.ndarray) -> jnp.ndarray:
    """Joint-space inertia matrix ``M(q)`` (CRBA) in jaxmor's velocity coordinates.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.

    Returns:
        (nv, nv) symmetric positive-definite matrix [kg, kg m, kg m^2], rotor inertia included.

    Raises:
        ArgumentError: ``q`` has the wrong shape.
    """
    (q,) = _check(model, q)
    return _dynamics_terms(model, q, None)[0]


def bias_force(model: Model, q: jnp.ndarray, u: jnp.ndarray) -> jnp.ndarray:
    """Bias force ``b(q, u)``: gravity plus Coriolis and centrifugal terms (RNEA at zero acceleration).

    The equations of motion are ``M(q) du/dt + b(q, u) = tau``.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.

    Returns:
        (nv,) generalized force [N, Nm].

    Raises:
        ArgumentError: wrong shapes.
    """
    q, u = _check(model, q, u)
    return _dynamics_terms(model, q, u)[1]


def mass_matrix_and_bias(model: Model, q: jnp.ndarray, u: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """``(mass_matrix(q), bias_force(q, u))`` computed together, sharing the kinematics (used by the step).

    Raises:
        ArgumentError: wrong shapes.
    """
    q, u = _check(model, q, u)
    return _dynamics_terms(model, q, u)


def inverse_dynamics(model: Model, q: jnp.ndarray, u: jnp.ndarray, du: jnp.ndarray) -> jnp.ndarray:
    """Generalized force ``M(q) du + b(q, u)`` that produces the acceleration ``du`` (nv,)."""
    q, u, du = _check(model, q, u, du)
    mass, bias = _dynamics_terms(model, q, u)
    return mass @ du + bias


def forward_dynamics(model: Model, q: jnp.ndarray, u: jnp.ndarray, tau: jnp.ndarray) -> jnp.ndarray:
    """Generalized acceleration ``du/dt = M^-1 (tau - b)`` (Cholesky solve), without constraints.

    Args:
        model: the model.
        q: (nq,) generalized coordinates.
        u: (nv,) generalized velocities.
        tau: (nv,) generalized force [N, Nm] in jaxmor's coordinates (for a free base: world-frame
            force at the base origin, then world-frame torque).

    Returns:
        (nv,) acceleration: for a free base the time derivative of the world-frame velocities.

    Raises:
        ArgumentError: wrong shapes.
    """
    q, u, tau = _check(model, q, u, tau)
    mass, bias = _dynamics_terms(model, q, u)
    factor = jsl.cho_factor(mass, lower=True)
    return jsl.cho_solve(factor, tau - bias)
