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

from jaxmor.errors import ArgumentError
from jaxmor.kinematics import joint_transforms
from jaxmor.math import skew
from jaxmor.types import JOINT_FREE, JOINT_REVOLUTE, Model


def _motion_subspace(model: Model, i: int, dtype) -> jnp.ndarray:
    """(6, n_i) motion subspace of body i's joint in body coordinates, local coordinates for free joints."""
    kind = model.body_joint_type[i]
    if kind == JOINT_FREE:
        eye = jnp.eye(3, dtype=dtype)
        zero = jnp.zeros((3, 3), dtype)
        return jnp.block([[zero, eye], [eye, zero]])  # nu = [v_b, w_b] -> [w; v]
    axis = model.body_axis[i].astype(dtype)
    zero = jnp.zeros(3, dtype)
    col = jnp.concatenate([axis, zero]) if kind == JOINT_REVOLUTE else jnp.concatenate([zero, axis])
    return col[:, None]


def _transform_matrix(rotation: jnp.ndarray, translation: jnp.ndarray) -> jnp.ndarray:
    """6x6 motion transform from parent to child coordinates, child pose ``(rotation, translation)`` in the parent."""
    e = rotation.T
    zero = jnp.zeros((3, 3), rotation.dtype)
    return jnp.block([[e, zero], [-e @ skew(translation), e]])


def _spatial_inertia(mass, com, inertia) -> jnp.ndarray:
    cx = skew(com)
    return jnp.block([[inertia + mass * cx @ cx.T, mass * cx], [mass * cx.T, mass * jnp.eye(3, dtype=inertia.dtype)]])


def _cross_motion(v: jnp.ndarray, m: jnp.ndarray) -> jnp.ndarray:
    w, lin = v[:3], v[3:]
    return jnp.concatenate([jnp.cross(w, m[:3]), jnp.cross(w, m[3:]) + jnp.cross(lin, m[:3])])


def _cross_force(v: jnp.ndarray, f: jnp.ndarray) -> jnp.ndarray:
    w, lin = v[:3], v[3:]
    return jnp.concatenate([jnp.cross(w, f[:3]) + jnp.cross(lin, f[3:]), jnp.cross(w, f[3:])])


def _free_bases(model: Model) -> list[int]:
    return [i for i, k in enumerate(model.body_joint_type) if k == JOINT_FREE]


def _local_transform(model: Model, q: jnp.ndarray) -> jnp.ndarray:
    """(nv, nv) matrix ``T`` with ``nu_local = T u``."""
    t = jnp.eye(model.nv, dtype=q.dtype)
    for i in _free_bases(model):
        from jaxmor.math import quat_to_rotation

        s, v = model.body_q_start[i], model.body_v_start[i]
        rt = quat_to_rotation(q[s + 3 : s + 7]).T
        t = t.at[v : v + 3, v : v + 3].set(rt).at[v + 3 : v + 6, v + 3 : v + 6].set(rt)
    return t


def _dofs(model: Model, i: int) -> slice:
    v = model.body_v_start[i]
    return slice(v, v + (6 if model.body_joint_type[i] == JOINT_FREE else 1))


def _rnea_local(model: Model, q, nu, nu_dot, gravity) -> jnp.ndarray:
    """Inverse dynamics in local coordinates (no armature): ``M_l nu_dot + b_l``."""
    dtype = q.dtype
    rel_r, rel_p = joint_transforms(model, q)
    a_world = jnp.concatenate([jnp.zeros(3, dtype), -gravity.astype(dtype)])
    vel, acc, force, xs, ss = [], [], [], [], []
    for i, parent in enumerate(model.body_parent):
        x = _transform_matrix(rel_r[i], rel_p[i])
        s = _motion_subspace(model, i, dtype)
        d = _dofs(model, i)
        vj = s @ nu[d]
        if parent < 0:
            v = vj
            a = x @ a_world + s @ nu_dot[d]
        else:
            v = x @ vel[parent] + vj
            a = x @ acc[parent] + s @ nu_dot[d] + _cross_motion(v, vj)
        inertia = _spatial_inertia(
            model.body_mass[i].astype(dtype), model.body_com[i].astype(dtype), model.body_inertia[i].astype(dtype)
        )
        vel.append(v)
        acc.append(a)
        force.append(inertia @ a + _cross_force(v, inertia @ v))
        xs.append(x)
        ss.append(s)
    tau = jnp.zeros(model.nv, dtype)
    for i in reversed(range(model.nb)):
        tau = tau.at[_dofs(model, i)].set(ss[i].T @ force[i])
        parent = model.body_parent[i]
        if parent >= 0:
            force[parent] = force[parent] + xs[i].T @ force[i]
    return tau


def _crba_local(model: Model, q) -> jnp.ndarray:
    """Joint-space inertia in local coordinates, without armature."""
    dtype = q.dtype
    rel_r, rel_p = joint_transforms(model, q)
    xs = [_transform_matrix(rel_r[i], rel_p[i]) for i in range(model.nb)]
    ss = [_motion_subspace(model, i, dtype) for i in range(model.nb)]
    comp = [
        _spatial_inertia(
            model.body_mass[i].astype(dtype), model.body_com[i].astype(dtype), model.body_inertia[i].astype(dtype)
        )
        for i in range(model.nb)
    ]
    for i in reversed(range(model.nb)):
        parent = model.body_parent[i]
        if parent >= 0:
            comp[parent] = comp[parent] + xs[i].T @ comp[i] @ xs[i]
    m = jnp.zeros((model.nv, model.nv), dtype)
    for i in range(model.nb):
        f = comp[i] @ ss[i]
        di = _dofs(model, i)
        m = m.at[di, di].set(ss[i].T @ f)
        j = i
        while model.body_parent[j] >= 0:
            f = xs[j].T @ f
            j = model.body_parent[j]
            dj = _dofs(model, j)
            block = f.T @ ss[j]
            m = m.at[di, dj].set(block).at[dj, di].set(block.T)
    return m


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
    t = _local_transform(model, q)
    m = t.T @ _crba_local(model, q) @ t
    return m + jnp.diag(model.dof_armature.astype(q.dtype))


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
    t = _local_transform(model, q)
    nu = t @ u
    c = jnp.zeros(model.nv, q.dtype)
    for i in _free_bases(model):
        v = model.body_v_start[i]
        c = c.at[v : v + 3].set(-jnp.cross(nu[v + 3 : v + 6], nu[v : v + 3]))
    return t.T @ _rnea_local(model, q, nu, c, model.gravity)


def inverse_dynamics(model: Model, q: jnp.ndarray, u: jnp.ndarray, du: jnp.ndarray) -> jnp.ndarray:
    """Generalized force ``M(q) du + b(q, u)`` that produces the acceleration ``du`` (nv,)."""
    q, u, du = _check(model, q, u, du)
    return mass_matrix(model, q) @ du + bias_force(model, q, u)


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
    factor = jsl.cho_factor(mass_matrix(model, q), lower=True)
    return jsl.cho_solve(factor, tau - bias_force(model, q, u))
