"""Fixed tendons (:class:`~jaxmor.types.Tendons`, MJCF ``<tendon><fixed>``), MuJoCo's semantics.

A fixed tendon's length is linear in the positions of the hinges and slides it sums, ``L = sum_i c_i q_i``, so its
Jacobian ``J`` (``dL/dt = J u``) is a constant row: ``c_i`` at each joint's velocity. Everything a tendon does goes
through ``J``:

* **armature** ``a``: ``a J^T J`` in the mass matrix (:func:`tendon_inertia`);
* **spring** ``k`` with the dead band ``[s_lo, s_hi]`` and **damping** ``b``: the force ``f = -k (L - s_hi)`` above
  the band, ``-k (L - s_lo)`` below it, minus ``b dL/dt``, acting as ``J^T f``; integrated like a joint's spring and
  damping (the spring implicit to first order, the damping trapezoidal), so :func:`tendon_passive` returns the
  explicit force and the matrix ``(h k_active + b / 2) J^T J`` that the effective mass adds ``h`` times;
* **friction loss** and **limits**: one row of the velocity problem per tendon, Jacobian ``J``, like a joint's
  (:mod:`jaxmor.sim.constraint`);
* **actuators** on a tendon: their "joint position and velocity" are ``L`` and ``dL/dt`` and their force acts as
  ``J^T gear a`` (:func:`actuator_coordinates`, :func:`actuator_moment`);
* **equality** constraints coupling two tendons' lengths (:mod:`jaxmor.sim.equality`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.types import Model


def _wraps(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(tendon, q, u)``: for every joint of every tendon (``nw``), its tendon and its ``q`` and ``u`` indices."""
    ten = model.tendons
    owner = np.repeat(np.arange(ten.nt), [len(j) for j in ten.joint_q]).astype(np.int32)
    q = np.array([i for joints in ten.joint_q for i in joints], dtype=np.int32)
    u = np.array([i for joints in ten.joint_u for i in joints], dtype=np.int32)
    return owner, q, u


def tendon_jacobian(model: Model, dtype=None) -> jax.Array:
    """(nt, nv) the tendons' Jacobian: ``dL/dt = J u`` [m or rad per unit velocity]."""
    ten = model.tendons
    dtype = dtype or ten.coefficient.dtype
    owner, _, u = _wraps(model)
    return jnp.zeros((ten.nt, model.nv), dtype).at[owner, u].add(ten.coefficient.astype(dtype))


def tendon_lengths(model: Model, q: jax.Array) -> jax.Array:
    """(nt,) each tendon's length ``L = sum_i c_i q_i`` at the coordinates ``q`` [m or rad]."""
    ten = model.tendons
    owner, index, _ = _wraps(model)
    terms = ten.coefficient.astype(q.dtype) * q[index]
    return jnp.zeros(ten.nt, q.dtype).at[owner].add(terms)


def tendon_inertia(model: Model, dtype) -> jax.Array:
    """(nv, nv) the tendons' armature in the mass matrix, ``J^T diag(armature) J`` [kg, kg m, kg m^2]."""
    jac = tendon_jacobian(model, dtype)
    return jac.T @ (model.tendons.armature.astype(dtype)[:, None] * jac)


def spring_force(model: Model, length: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(force (nt,), stiffness (nt,))``: each tendon spring's force along the tendon at the lengths ``length``
    (``-k (L - s_hi)`` above the dead band, ``-k (L - s_lo)`` below, 0 inside) [N or Nm], and the stiffness that
    acts there (``k`` outside the band, 0 inside) [N/m or Nm/rad]."""
    ten = model.tendons
    dtype = length.dtype
    k = ten.stiffness.astype(dtype)
    low, high = ten.spring_lower.astype(dtype), ten.spring_upper.astype(dtype)
    stretch = jnp.where(length > high, length - high, jnp.where(length < low, length - low, 0.0))
    return -k * stretch, jnp.where((length > high) | (length < low), k, 0.0)


def tendon_passive(model: Model, q: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(force (nv,), implicit (nv, nv))``: the tendon springs' and dampers' explicit generalized force at ``q``,
    ``u`` (the spring at ``L + h dL/dt``, the damping ``-b dL/dt``) [N, Nm], and ``(h k + b / 2) J^T J``, whose
    ``h`` multiple the effective mass adds (module docstring) [N s/m, Nm s/rad]."""
    dtype = u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    jac = tendon_jacobian(model, dtype)
    rate = jac @ u
    spring, k = spring_force(model, tendon_lengths(model, q))
    damping = model.tendons.damping.astype(dtype)
    along = spring - h * k * rate - damping * rate
    weight = h * k + 0.5 * damping
    return jac.T @ along, jac.T @ (weight[:, None] * jac)


def actuator_coordinates(model: Model, q: jax.Array, u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(position (nu,), velocity (nu,))`` of the affine actuators' transmissions: the driven joint's coordinate
    and velocity, or the pulled tendon's length and rate [rad or m, rad/s or m/s] (before the gear)."""
    act = model.affine
    q_joint = q[np.maximum(np.array(act.q_index, dtype=np.int32), 0)]
    v_joint = u[np.maximum(np.array(act.v_index, dtype=np.int32), 0)]
    if not act.on_tendons:
        return q_joint, v_joint
    tendon = np.array(act.tendon, dtype=np.int32)
    on = tendon >= 0
    lengths = tendon_lengths(model, q)[np.maximum(tendon, 0)]
    rates = (tendon_jacobian(model, u.dtype) @ u)[np.maximum(tendon, 0)]
    return jnp.where(on, lengths, q_joint), jnp.where(on, rates, v_joint)


def actuator_moment(model: Model, dtype) -> jax.Array:
    """(nu, nv) each affine actuator's transmission before its gear: the unit row of its joint's velocity, or its
    tendon's Jacobian row; the actuators' generalized force is ``moment^T (gear a)``."""
    act = model.affine
    rows = np.arange(act.nu)
    moment = jnp.zeros((act.nu, model.nv), dtype)
    joints = np.array([v >= 0 for v in act.v_index], dtype=bool)
    moment = moment.at[rows[joints], np.array(act.v_index, dtype=np.int32)[joints]].set(1.0)
    if act.on_tendons:
        tendon = np.array(act.tendon, dtype=np.int32)
        moment = moment.at[rows[tendon >= 0]].set(tendon_jacobian(model, dtype)[tendon[tendon >= 0]])
    return moment
