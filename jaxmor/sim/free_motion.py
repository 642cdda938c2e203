"""Stage 4, free motion: the effective mass and the unconstrained velocity.

Velocity level, with ``h = model.opt.timestep``:

* ``M_eff = M + h diag(kd + h kp + b_j / 2) + h C + K``: the implicit PD and trapezoidal damping terms, ``C``
  the fixed tendons' (:class:`jaxmor.sim.forces.Forces`), and ``K``, the velocity-dependent forces' term
  (:func:`velocity_term`), chosen by ``model.opt.implicit_bias``:

  - ``"kahan"`` (default): ``K = (h/2) D`` with ``D = db/du`` the derivative of the bias for the whole tree
    (:attr:`jaxmor.sim.dynamics.Dynamics.bias_jacobian`). The Coriolis, centrifugal and gyroscopic part of
    ``b`` is a quadratic form ``c(u, u)`` (``D(u) v = 2 c(u, v)``), so ``M (u' - u) = h (tau - g) - h c(u, u')``:
    Kahan's (Hirota-Kimura) discretization, the quadratic term evaluated at the old and new velocities.
    It does not dissipate: a torque-free body keeps a modified energy ``E + O(h^2)``.
  - ``"predicted"``: Kahan's form without ``D``. ``K = (h/2) K_b``, with
    ``K_b`` a floating base's gyroscopic block of the robot locked into one rigid body
    (:func:`jaxmor.sim.dynamics.base_velocity_jacobian`, exact for a single free body), and the rest of the
    tree's term ``(h/2) (D - K_b) du`` taken at the velocity change predicted without it (:func:`free_motion`):
    one forward-mode pass of the bias along that change (:func:`jaxmor.sim.dynamics.bias_derivative_along`).
    Second order and explicit in the joints' terms: it keeps a chain's energy as ``"kahan"`` does at
    small ``h |u|``, and spins much faster than ``1 / h`` are not for it.

  ``M_eff`` is not symmetric; one Gauss-Jordan elimination (:func:`gauss_jordan`, plain array
  operations, no LAPACK) gives ``M_eff^-1`` and ``u_free = u_t + M_eff^-1 h (tau - b(q_t, u_t))``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxmor.math import gauss_jordan
from jaxmor.sim import inverse_kernel
from jaxmor.sim.dynamics import Dynamics, base_velocity_jacobian, bias_derivative_along
from jaxmor.sim.forces import Forces
from jaxmor.sim.kinematics import Kinematics
from jaxmor.types import Model, State


@struct.dataclass
class FreeMotion:
    """The step without constraints.

    Attributes:
        velocity: (nv,) ``u_free``, the end-of-step velocity without constraint impulses.
        inverse_mass: (nv, nv) ``M_eff^-1``.

    The rotors of actuators with backlash move freely in the drive train
    (:attr:`jaxmor.actuation.drive_train.DriveTrain.rotor_velocity`).
    """

    velocity: jax.Array
    inverse_mass: jax.Array


def free_motion(model: Model, state: State, kin: Kinematics, dyn: Dynamics, frc: Forces) -> FreeMotion:
    """The effective mass stage: ``u_free`` and ``M_eff^-1`` (see the module docstring)."""
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    m_eff = dyn.mass + h * jnp.diag(frc.implicit) + velocity_term(model, dyn, state.u)
    if frc.coupled is not None:
        m_eff = m_eff + h * frc.coupled
    inverse_mass = inverse(m_eff)
    impulse = h * (frc.applied - dyn.bias)
    if model.opt.implicit_bias == "predicted":
        impulse = impulse - predicted_term(model, kin, dyn, state.u, inverse_mass @ impulse)
    return FreeMotion(state.u + inverse_mass @ impulse, inverse_mass)


def predicted_term(model: Model, kin: Kinematics, dyn: Dynamics, u: jax.Array, change: jax.Array) -> jax.Array:
    """(nv,) ``(h/2) (D(u) - K_b) du``, the part of Kahan's velocity term that ``"predicted"`` leaves out of the
    effective mass, at the predicted velocity change ``du`` [N s, Nm s].

    Args:
        model: the model.
        kin: the kinematics at ``q``.
        dyn: the dynamics at ``(q, u)``.
        u: (nv,) the velocity at the start of the step.
        change: (nv,) ``du``, the velocity change of the step without this term.
    """
    h = jnp.asarray(model.opt.timestep, u.dtype)
    along = bias_derivative_along(model, kin, u, change) - base_velocity_jacobian(model, dyn.mass, u) @ change
    return 0.5 * h * along


def velocity_term(model: Model, dyn: Dynamics, u: jax.Array) -> jax.Array:
    """(nv, nv) the velocity-dependent forces' part of the effective mass, by ``model.opt.implicit_bias``:
    ``(h/2) D`` (``"kahan"``), or ``h/2`` times the floating base's locked-body gyroscopic block
    (``"predicted"``, :func:`jaxmor.sim.dynamics.base_velocity_jacobian`) [kg, kg m, kg m^2].

    Raises:
        ValueError: ``"kahan"`` with ``dyn.bias_jacobian`` not computed.
    """
    h = jnp.asarray(model.opt.timestep, u.dtype)
    mode = model.opt.implicit_bias
    if mode == "predicted":
        return 0.5 * h * base_velocity_jacobian(model, dyn.mass, u)
    if dyn.bias_jacobian is None:
        raise ValueError(f"opt.implicit_bias={mode!r} needs Dynamics.bias_jacobian (jaxmor.sim.dynamics.dynamics)")
    return 0.5 * h * dyn.bias_jacobian


@jax.custom_jvp
def inverse(a: jax.Array) -> jax.Array:
    """``a^-1`` by :func:`gauss_jordan`, with the derivative ``d(a^-1) = -a^-1 da a^-1`` (two products: the
    elimination itself is not differentiated, which keeps the compiled gradient small). Lowered for CUDA, the
    same elimination in one Pallas kernel (:mod:`jaxmor.sim.inverse_kernel`, up to its ``MAX_SIZE``).

    Args:
        a: (n, n) the effective mass (see :func:`gauss_jordan` for the matrices it handles).

    Returns:
        (n, n) its inverse.
    """

    def eliminated(a):
        return gauss_jordan(a, jnp.eye(a.shape[0], dtype=a.dtype))

    if not 1 <= a.shape[0] <= inverse_kernel.MAX_SIZE:
        return eliminated(a)
    return jax.lax.platform_dependent(a, cuda=inverse_kernel.inverse, default=eliminated)


@inverse.defjvp
def _inverse_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    inv = inverse(a)
    return inv, -inv @ da @ inv
