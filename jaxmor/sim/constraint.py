"""Constraint rows and the problems the solver solves: contacts, joint Coulomb friction, joint limits.

The integrator has computed the unconstrained end-of-step velocity ``u_free`` and the inverse of the
effective mass ``M_eff`` (mass matrix plus the implicit PD, damping and gyroscopic terms). Constraint
rows with Jacobians ``J`` (``R x nv``) add impulses ``lam``::

    u_next = u_free + M_eff^-1 J^T lam,       v = J u_next = A lam + J u_free,    A = J M_eff^-1 J^T

(``A`` is the Delassus matrix, built once per step). Rows, in order:

* **contacts** (the ``nc`` slots of the contact budget, :mod:`jaxmor.sim.collision.budget`, x 3 rows:
  normal ``n``, tangents ``t1``, ``t2``). Normal: ``lam_n >= 0`` complementary to ``v_n >= v_target``. The target is
  *speculative*: ``v_target = -max(d, 0) / h`` for a gap ``d``, so a contact that would close during the
  step lands exactly at contact, and far contacts stay inactive without masks. Restitution ``e > 0``
  acts on an impact (:func:`restitution_targets`), decided by the approach velocity and the time of
  impact, not by the gap: a contact that approaches at ``v_n^- < -RESTITUTION_THRESHOLD`` and reaches
  the surface within the step (``d + h v_n^- <= 0``, its time of impact ``d / -v_n^-`` in ``[0, h]``; a
  gap down to ``-PENETRATION_ALLOWANCE``, the resting band, counts as reached at the start) gets
  ``v_target = max(-d/h, -e v_n^-)``: it leaves with ``e`` times its approach speed from at most
  ``h |v_n^-|`` above the surface, an ``O(h v)`` error in the bounce height, whatever the last
  free-flight gap. Resting contacts (approach speed below the threshold) never bounce; a contact
  penetrating beyond the allowance is left to the position pass. Friction: ``|lam_t| <= mu lam_n`` on the disk,
  with maximum dissipation (the solver's projection, :mod:`jaxmor.sim.solver`).
* **joints** (one row per 1-DoF joint, its Jacobian the unit row of its velocity): the joint's Coulomb
  friction ``|lam_f| <= (tau_c_joint + tau_c_out) h`` with target ``v = 0`` (stiction is exact), and its
  limits ``v >= (lower - q)/h`` with ``lam_l >= 0``, ``v <= (upper - q)/h`` with ``lam_l <= 0``, again
  speculative. Friction and limit share the row (same Jacobian); its impulse is ``lam_f + lam_l``.
* **free-joint friction** (six rows per free joint in ``Model.free_friction_u``, after the joints'): MuJoCo's
  friction loss on a free joint's velocities, ``|lam_f| <= tau_c h`` on each of the body origin's world-frame
  velocity components and of the body-frame angular velocity's (:func:`free_friction_jacobian`); no limits.
* **ball joints** (four rows per ball joint, after those, :func:`ball_jacobian`): MuJoCo's friction loss on each of
  its three body-frame velocities, ``|lam_f| <= tau_c h`` with target ``v = 0``, then MuJoCo's cone limit on its
  rotation angle ``theta`` (the row's velocity is ``d theta / dt``, its Jacobian the unit rotation axis), speculative
  like a joint's: ``v <= (theta_max - theta)/h`` with ``lam_l <= 0``. Inactive (infinite bound) without a range.
* **fixed tendons** (one row per tendon, after those; its Jacobian the tendon's, :mod:`jaxmor.sim.tendons`): the
  tendon's friction loss and its length limits, a joint row's law on the tendon's length ``L``. Their impulses are
  not kept in the State (the warm start of these rows is zero).
* **gear teeth** (one row per actuator with backlash, after those; :mod:`jaxmor.actuation.backlash`): a limit row
  on the play ``s`` between the rotor and its joint, ``|s| <= width / 2``, speculative like a joint's; its Jacobian
  is ``-1`` at the joint, its rotor is a degree of freedom outside ``u`` (its inverse inertia added to the row's
  diagonal of ``A``, its free velocity to the row's). Not kept in the State either.
* **equality constraints** (``Model.equality.rows`` rows, last; :mod:`jaxmor.sim.equality`): bilateral, their
  impulses unbounded, each row's velocity driven to ``-EQUALITY_CORRECTION e / h`` for its residual ``e``
  (Baumgarte: a violation shrinks by that fraction per step; the target enters as a shift of the row's free
  velocity, so the solver's law for them is the joint rows' with infinite friction bounds). They are not in the
  position pass.

Penetration (``d < 0``) or a violated limit is not corrected by the velocity: the target is clamped
at zero there, so no energy is added. Instead a second, frictionless problem on the normal and joint
rows of the same ``A`` gives a *pseudo-velocity* ``u_pos = M_eff^-1 J^T lam_pos`` that removes a fraction
``POSITION_CORRECTION`` of the error beyond ``PENETRATION_ALLOWANCE`` per step; it moves ``q`` only and
is discarded afterwards (split impulses).
A contact with a gap ``d > 0`` gets the speculative target ``v_n >= -d / h`` in this pass too, so that
the correction of one body never pushes another one through a far contact (before, the target was
``v_n >= 0`` however far: a quadruped corrected out of the ground dragged a box 1 m away).
Its limit rows (joints, ball cones, tendons) push back only a limit violated beyond the allowance; the others
keep the velocity problem's speculative bound (a joint may approach its limit, never pass it; no bound without
one), so the pass moves joints freely to correct a penetration (``docs/design/solver.md``, "The position pass").

Layout. This module owns the row layout: :func:`rows_of` (a :class:`RowLayout`) places each kind of joint row
and maps the rows to the State's per-velocity warm starts, :class:`Problem` knows where a contact's and a joint's
rows are and converts between its rows and :class:`Impulses`, so the solver and the step never compute offsets.
Since a joint's row selects one velocity, the joint rows' part of ``A`` is read off ``M_eff^-1`` and only the
contact rows need products.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.actuation.backlash import gap_jacobian, gap_limits
from jaxmor.math import quat_angle_axis
from jaxmor.model import ball_joints
from jaxmor.sim.collision import Contacts
from jaxmor.sim.collision.budget import follow, selects
from jaxmor.sim.equality import equality_rows
from jaxmor.sim.forces import Forces
from jaxmor.sim.free_motion import FreeMotion
from jaxmor.sim.kinematics import Kinematics, relative_point_jacobians
from jaxmor.sim.tendons import tendon_jacobian, tendon_lengths
from jaxmor.types import Model, State

#: Fraction of the penetration (beyond the allowance) removed per step by the position pass.
POSITION_CORRECTION = 0.2
#: Penetration depth [m] (and limit violation [rad or m]) left uncorrected, to keep contacts warm.
PENETRATION_ALLOWANCE = 1e-5
#: Approach speed [m/s] below which restitution is ignored (resting contacts do not bounce).
RESTITUTION_THRESHOLD = 1e-2
#: Fraction of an equality constraint's residual removed per step by its rows' target velocity.
EQUALITY_CORRECTION = 0.2


@struct.dataclass
class Impulses:
    """The impulses of one step's constraints.

    Attributes:
        contact: (nc, 3) normal, tangent 1 and tangent 2 impulse of each contact slot [N s] (a
            frictionless problem's tangential impulses are zero).
        friction: (nj + 6 nf + 4 nb + nt + ng,) friction impulse of each 1-DoF joint, then of each free joint's
            friction rows, of each ball joint's rows, of each tendon's row, of each gear teeth row
            (:attr:`RowLayout.friction_dofs`) [Nm s or N s].
        limit: (nj + 6 nf + 4 nb + nt + ng,) limit impulse of each of these rows [Nm s or N s] (zero but on the 1-DoF
            joints', the ball joints' cone-limit, the tendons' and the teeth rows, :attr:`RowLayout.limit_dofs`).
        equality: (ne,) impulse of each equality constraint row (``Model.equality.rows``) [N s or Nm s].
    """

    contact: jax.Array
    friction: jax.Array
    limit: jax.Array
    equality: jax.Array


@struct.dataclass
class Problem:
    """One constraint problem ``v = A lam + b`` (shapes for ``nc`` contacts and ``nj`` 1-DoF joints).

    Rows: ``rows_per_contact`` rows per contact (3: normal, tangent 1, tangent 2; 1 for a frictionless
    problem: the normal), then one row per joint, shared by its friction and limit impulses, the last
    ``equality_rows`` of them an equality constraint's each (bilateral: infinite friction bounds, no limits).

    Attributes:
        delassus: (R, R) ``A = J M_eff^-1 J^T``, ``R = rows_per_contact nc + nj``.
        free_velocity: (R,) ``b = J u_free``.
        contact_target: (nc,) lower bound of each normal velocity [m/s].
        friction: (nc,) friction coefficient of each contact.
        friction_bound: (nj,) joint friction impulse bound [N s or Nm s].
        limit_low, limit_high: (nj,) bounds of each joint velocity from the limits.
        rows_per_contact: 3, or 1 for a frictionless problem (static).
        equality_rows: how many of the ``nj`` joint rows, the last ones, are equality constraint rows (static).
    """

    delassus: jax.Array
    free_velocity: jax.Array
    contact_target: jax.Array
    friction: jax.Array
    friction_bound: jax.Array
    limit_low: jax.Array
    limit_high: jax.Array
    rows_per_contact: int = struct.field(pytree_node=False, default=3)
    equality_rows: int = struct.field(pytree_node=False, default=0)

    @property
    def nc(self) -> int:
        """Number of contact slots."""
        return self.contact_target.shape[0]

    @property
    def nj(self) -> int:
        """Number of joint rows."""
        return self.limit_low.shape[0]

    @property
    def with_friction(self) -> bool:
        """Whether the contacts have tangent rows."""
        return self.rows_per_contact == 3

    def contact_row(self, k):
        """Row of contact ``k``'s normal (its tangents follow); ``k`` may be traced."""
        return self.rows_per_contact * k

    def joint_row(self, i):
        """Row of joint ``i``; ``i`` may be traced."""
        return self.rows_per_contact * self.nc + i

    def tangent_blocks(self) -> jax.Array:
        """(nc, 2, 2) each contact's tangential block of ``A`` (problems with friction)."""
        tangents = np.arange(self.nc)[:, None] * 3 + np.array([1, 2])[None, :]
        return self.delassus[tangents[:, :, None], tangents[:, None, :]]

    def rows(self, impulses: Impulses) -> jax.Array:
        """(R,) the impulse of each row: a contact's (normal and tangents, or normal), a joint's friction plus
        limit, an equality row's."""
        contact = impulses.contact if self.with_friction else impulses.contact[:, 0]
        return jnp.concatenate([contact.reshape(-1), impulses.friction + impulses.limit, impulses.equality])

    def start(self, impulses: Impulses) -> tuple[jax.Array, jax.Array]:
        """The solver's iterate at ``impulses``: the (R,) row impulses and the (nj,) limit part of the joint rows
        (zero on the equality rows; a frictionless problem's joint rows are all limit)."""
        rows = self.rows(impulses)
        if not self.with_friction:
            return rows, rows[self.joint_row(0) :]
        return rows, jnp.concatenate([impulses.limit, jnp.zeros_like(impulses.equality)])

    def impulses(self, row_impulses: jax.Array, limit: jax.Array) -> Impulses:
        """:class:`Impulses` from the (R,) row impulses and the (nj,) limit part of the joint rows."""
        split = self.rows_per_contact * self.nc
        end = row_impulses.shape[0] - self.equality_rows
        contact = row_impulses[:split].reshape(self.nc, self.rows_per_contact)
        if not self.with_friction:
            contact = jnp.concatenate([contact, jnp.zeros((self.nc, 2), contact.dtype)], axis=1)
        joint_limit = limit[: self.nj - self.equality_rows]
        return Impulses(contact, row_impulses[split:end] - joint_limit, joint_limit, row_impulses[end:])

    def contact_velocities(self, v: jax.Array) -> jax.Array:
        """(nc, rows_per_contact) the contact rows' part of a (R,) row velocity."""
        return v[: self.rows_per_contact * self.nc].reshape(self.nc, self.rows_per_contact)

    def zero_impulses(self) -> Impulses:
        """Zero impulses of this problem's shape."""
        dtype = self.free_velocity.dtype
        joints = jnp.zeros(self.nj - self.equality_rows, dtype)
        return Impulses(jnp.zeros((self.nc, 3), dtype), joints, joints, jnp.zeros(self.equality_rows, dtype))


@struct.dataclass
class Constraints:
    """The constraint stage's result: the step's two problems and how impulses change the velocity.

    Attributes:
        velocity: the velocity problem (contacts with friction, joint friction and limits).
        position: the frictionless position-correction problem (normal and joint rows).
        response: (nv, R) ``M_eff^-1 J^T`` of the velocity problem's rows.
        start: the velocity problem's warm start (:func:`warm_start`).
        position_rows: the velocity problem's rows that the position problem keeps (static).
    """

    velocity: Problem
    position: Problem
    response: jax.Array
    start: Impulses
    position_rows: tuple[int, ...] = struct.field(pytree_node=False)


def contact_jacobian(model: Model, kin: Kinematics, contacts: Contacts) -> jax.Array:
    """(3 nc, nv) Jacobian of the contact rows (normal, t1, t2 of each contact), all contacts at once.

    A row is a direction of the contact frame applied to the velocity of body B's contact point relative
    to body A's (:func:`jaxmor.sim.kinematics.relative_point_jacobians`).
    """
    nc = contacts.distance.shape[0]
    if nc == 0:
        return jnp.zeros((0, model.nv), kin.body.position.dtype)
    cols = relative_point_jacobians(model, kin.body, contacts.position, contacts.body_a, contacts.body_b)
    return jnp.einsum("kij,kdj->kid", contacts.frame, cols).reshape(3 * nc, model.nv)


class RowLayout(NamedTuple):
    """Where each kind of row lies among a model's joint rows (the rows after the contacts'), in this order: the
    1-DoF joints' (one each), the free joints' friction (six per free joint in ``Model.free_friction_u``), the ball
    joints' (three friction rows and a cone limit each), the fixed tendons' (one each), the gear teeth of the
    actuators with backlash (one each), the equality constraints' (``Model.equality.rows``). Static; :func:`rows_of`
    builds it, the one place that computes these offsets.

    Attributes:
        joints, free, ball, tendons, teeth, equality: ``(start, stop)`` of each kind among the joint rows.
        friction_dofs: (rows before the equality rows,) int32: where ``State.friction_impulse`` keeps each row's
            friction impulse, a velocity index (``nv`` for a row whose impulse is not kept: a ball joint's cone
            limit, a tendon's, a gear teeth row's, which start each step from zero).
        limit_dofs: the same for ``State.limit_impulse`` (``nv`` for the free and ball joints' friction rows, the
            tendons' and the teeth rows; a ball joint's cone limit kept at its first velocity).
    """

    joints: tuple[int, int]
    free: tuple[int, int]
    ball: tuple[int, int]
    tendons: tuple[int, int]
    teeth: tuple[int, int]
    equality: tuple[int, int]
    friction_dofs: np.ndarray
    limit_dofs: np.ndarray


def rows_of(model: Model) -> RowLayout:
    """The :class:`RowLayout` of ``model``'s constraint problems."""
    teeth = sum(model.actuators.backlash.active)  # one row per actuator with backlash
    counts = (model.nj, 6 * len(model.free_friction_u), 4 * len(ball_joints(model)), model.tendons.nt)
    counts += (teeth, model.equality.rows)
    ends = np.cumsum((0, *counts)).tolist()
    spans = [(ends[i], ends[i + 1]) for i in range(len(counts))]
    nv, cold = model.nv, np.full(model.tendons.nt + teeth, model.nv)
    joints = np.array(model.joint_u, dtype=np.int32)
    free = [np.arange(v, v + 6) for v in model.free_friction_u]
    ball = [np.array([v, v + 1, v + 2, nv]) for _, _, v in ball_joints(model)]
    friction = np.concatenate([joints, *free, *ball, cold]).astype(np.int32)
    free = [np.full(6, nv) for _ in model.free_friction_u]
    ball = [np.array([nv] * 3 + [v]) for _, _, v in ball_joints(model)]
    limit = np.concatenate([joints, *free, *ball, cold]).astype(np.int32)
    return RowLayout(*spans, friction, limit)


def ball_jacobian(model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(jacobian (4 n, nv), angle (n,))`` of the ``n`` ball joints' rows, and each one's rotation angle [rad].

    Per ball joint (:func:`jaxmor.model.ball_joints`) three friction-loss rows, the unit rows of its body-frame
    velocities (MuJoCo's), then its cone-limit row: the unit axis of its rotation on them, so that the row's
    velocity is the rate of the rotation angle (:func:`jaxmor.math.quat_angle_axis`; a zero row at the identity,
    where the limit cannot act).
    """
    blocks, angles = [jnp.zeros((0, model.nv), q.dtype)], [jnp.zeros(0, q.dtype)]
    for _, s, v in ball_joints(model):
        angle, axis = quat_angle_axis(q[s : s + 4])
        block = jnp.zeros((4, model.nv), q.dtype).at[:3, v : v + 3].set(jnp.eye(3, dtype=q.dtype))
        blocks.append(block.at[3, v : v + 3].set(axis))
        angles.append(angle[None])
    return jnp.concatenate(blocks), jnp.concatenate(angles)


def _ball_bounds(model: Model, angle: jax.Array, h: jax.Array, position: bool) -> tuple[jax.Array, jax.Array]:
    """``(low, high)`` of the ball joints' rows: in the velocity problem (``position`` False, the rows of
    :func:`ball_jacobian`) no bounds on the friction rows and the cone limit's speculative ``v <= (upper - angle)
    / h`` (at least 0); in the position problem (the cone rows alone) ``v <= -POSITION_CORRECTION x violation /
    h`` where the joint is limited, no bound where it is not."""
    upper = model.dof_upper.astype(angle.dtype)[np.array([v for _, _, v in ball_joints(model)], dtype=np.int32)]
    if position:
        return _position_bounds(jnp.full_like(upper, -jnp.inf), upper, angle, h)
    cone = jnp.maximum(_bound_velocity(upper, angle, h), 0.0)
    high = jnp.concatenate([jnp.full((angle.shape[0], 3), jnp.inf, angle.dtype), cone[:, None]], axis=1).reshape(-1)
    return jnp.full_like(high, -jnp.inf), high


def free_friction_jacobian(model: Model, kin: Kinematics) -> jax.Array:
    """(6 nf, nv) Jacobian of the free joints' friction-loss rows (``Model.free_friction_u``): per free joint the
    world-frame velocity of its body's origin, then its angular velocity in the body frame (MuJoCo's free-joint
    velocities; jaxmor's angular one is in the world frame, so those rows are the body axes ``R^T``)."""
    dtype = kin.body.rotation.dtype
    blocks = [jnp.zeros((0, model.nv), dtype)]
    for v in model.free_friction_u:
        rotation = kin.body.rotation[model.dof_body[v]]
        block = jnp.zeros((6, model.nv), dtype).at[:3, v : v + 3].set(jnp.eye(3, dtype=dtype))
        blocks.append(block.at[3:, v + 3 : v + 6].set(rotation.T))
    return jnp.concatenate(blocks)


def _position_bounds(lower: jax.Array, upper: jax.Array, value: jax.Array, h: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(low, high)`` of limit rows in the position problem: a limit violated beyond ``PENETRATION_ALLOWANCE``
    is pushed back by ``POSITION_CORRECTION`` of that per step, the others bound the pseudo-velocity only as the
    velocity problem does (speculatively: ``v >= (lower - value) / h`` up to 0, infinite without a limit), so
    the pass moves an unviolated row freely and never through its limit."""
    below = jnp.maximum(lower - value - PENETRATION_ALLOWANCE, 0.0)
    above = jnp.maximum(value - upper - PENETRATION_ALLOWANCE, 0.0)
    low, high = _speculative_bounds(lower, upper, value, h)
    return jnp.where(below > 0, POSITION_CORRECTION * below / h, low), jnp.where(
        above > 0, -POSITION_CORRECTION * above / h, high
    )


def _speculative_bounds(
    lower: jax.Array, upper: jax.Array, value: jax.Array, h: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``(low, high)`` of limit rows in the velocity problem: ``v >= (lower - value) / h`` and ``v <= (upper - value) /
    h``, the velocities that reach the limits in one step, but never past 0 (a violated limit is not corrected by the
    velocity); infinite without a limit."""
    return jnp.minimum(_bound_velocity(lower, value, h), 0.0), jnp.maximum(_bound_velocity(upper, value, h), 0.0)


def _bound_velocity(bound: jax.Array, q: jax.Array, h: jax.Array) -> jax.Array:
    """``(bound - q) / h``, the velocity that reaches a limit in one step; ``+-inf`` for an infinite bound,
    computed so that its derivatives stay finite there (a double ``where``: no ``inf * 0``)."""
    finite = jnp.isfinite(bound)
    return jnp.where(finite, (jnp.where(finite, bound, 0.0) - q) / h, bound)


def restitution_targets(
    target: jax.Array, gap: jax.Array, approach: jax.Array, restitution: jax.Array, h: jax.Array
) -> jax.Array:
    """Normal velocity targets with restitution on impacts (see the module docstring).

    Args:
        target: (nc,) the speculative targets ``-max(d, 0) / h``.
        gap: (nc,) the gaps ``d`` at the beginning of the step [m].
        approach: (nc,) the normal velocities ``v_n^-`` at the beginning of the step [m/s].
        restitution: (nc,) the coefficients of restitution.
        h: the time step [s].
    """
    impact = (
        (approach < -RESTITUTION_THRESHOLD)
        & (gap >= -PENETRATION_ALLOWANCE)
        & (gap + h * approach <= 0.0)
        & (restitution > 0)
    )
    return jnp.where(impact, jnp.maximum(target, -restitution * approach), target)


def constraints(
    model: Model, state: State, kin: Kinematics, contacts: Contacts, free: FreeMotion, frc: Forces
) -> Constraints:
    """The constraint stage: the step's velocity and position problems (see the module docstring).

    Args:
        model: the model.
        state: the world's state at the beginning of the step.
        kin: its kinematics.
        contacts: its contact candidates.
        free: the unconstrained end-of-step velocity and the inverse effective mass.
        frc: the step's forces (the joints' Coulomb friction).

    Returns:
        :class:`Constraints`.
    """
    dtype = state.u.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    nc, nj = contacts.distance.shape[0], model.nj
    dofs = np.array(model.joint_u, dtype=np.int32)
    rows = contact_jacobian(model, kin, contacts)
    m_inv = free.inverse_mass
    # M_eff^-1 J^T and A of the contact rows, the joint rows, then the rows with their own Jacobians (if any).
    ball, angle = ball_jacobian(model, state.q)
    extra = _general_rows(model, kin, state, frc, h, ball, angle)
    response = jnp.concatenate([m_inv @ rows.T, m_inv[:, dofs], m_inv @ extra.jacobian.T], axis=1)
    delassus = jnp.concatenate([rows @ response, response[dofs], extra.jacobian @ response])
    layout = rows_of(model)
    gaps = 3 * nc + np.arange(*layout.teeth)
    if gaps.size:  # the rotors' own share of the teeth rows
        delassus = delassus.at[gaps, gaps].add(frc.drive.rotor_inverse_inertia)
    gap = contacts.distance
    approach = rows[::3] @ state.u
    target = restitution_targets(-jnp.maximum(gap, 0.0) / h, gap, approach, contacts.restitution.astype(dtype), h)
    q_joint = state.q[np.array(model.joint_q, dtype=np.int32)]
    lower = model.dof_lower.astype(dtype)[dofs]
    upper = model.dof_upper.astype(dtype)[dofs]
    joint_speculative = _speculative_bounds(lower, upper, q_joint, h)
    velocity = Problem(
        delassus=delassus,
        free_velocity=jnp.concatenate(
            [rows @ free.velocity, free.velocity[dofs], extra.jacobian @ free.velocity - extra.shift]
        ),
        contact_target=target,
        friction=contacts.friction.astype(dtype),
        friction_bound=jnp.concatenate([frc.friction[dofs] * h, extra.bound]),
        limit_low=jnp.concatenate([joint_speculative[0], extra.low]),
        limit_high=jnp.concatenate([joint_speculative[1], extra.high]),
        equality_rows=model.equality.rows,
    )
    # The position pass: normal, joint, cone-limit, tendon and teeth rows, frictionless, targets from the penetration
    # and violation.
    cones = 3 * nc + np.arange(*layout.ball)[3::4]
    tendons = 3 * nc + np.arange(*layout.tendons)
    keep = np.concatenate([np.arange(nc) * 3, 3 * nc + np.arange(nj), cones, tendons, gaps]).astype(np.int32)
    cone_low, cone_high = _ball_bounds(model, angle, h, position=True)
    tendon_low, tendon_high = _tendon_bounds(model, state.q, h, position=True)
    gap_low, gap_high = _position_bounds(*gap_limits(model, state), h)
    depth = jnp.maximum(-gap - PENETRATION_ALLOWANCE, 0.0)
    joint_low, joint_high = _position_bounds(lower, upper, q_joint, h)
    position = Problem(
        delassus=delassus[keep[:, None], keep[None, :]],
        free_velocity=jnp.zeros(keep.size, dtype),
        contact_target=POSITION_CORRECTION * depth / h - jnp.maximum(gap, 0.0) / h,  # a gap may close, not open
        friction=jnp.zeros(nc, dtype),
        friction_bound=jnp.zeros(nj + cones.size + tendons.size + gaps.size, dtype),
        limit_low=jnp.concatenate([joint_low, cone_low, tendon_low, gap_low]),
        limit_high=jnp.concatenate([joint_high, cone_high, tendon_high, gap_high]),
        rows_per_contact=1,
    )
    start = warm_start(model, state, contacts)
    return Constraints(velocity, position, response, start, tuple(int(r) for r in keep))


class _GeneralRows(NamedTuple):
    """The velocity problem's rows after the joints' that have Jacobians of their own (:func:`_general_rows`).

    Attributes:
        jacobian: (n, nv) their Jacobian.
        shift: (n,) their target velocities (zero but on equality rows, ``-EQUALITY_CORRECTION e / h``), which
            the problem subtracts from the rows' free velocities [m/s or rad/s].
        bound: (n,) their friction bounds [N s or Nm s] (zero on a cone-limit row, infinite on equality rows).
        low, high: (n,) their velocity bounds from limits (infinite but on the ball joints' cone-limit rows).
    """

    jacobian: jax.Array
    shift: jax.Array
    bound: jax.Array
    low: jax.Array
    high: jax.Array


def _general_rows(
    model: Model,
    kin: Kinematics,
    state: State,
    frc: Forces,
    h: jax.Array,
    ball: jax.Array,
    angle: jax.Array,
) -> _GeneralRows:
    """The free joints' friction rows (:func:`free_friction_jacobian`), the ball joints' rows (``ball``, ``angle``
    from :func:`ball_jacobian`), the fixed tendons' rows, the gear teeth's rows of the actuators with backlash
    (:mod:`jaxmor.actuation.backlash`: their rotors' velocity enters as the shift), then the equality constraints'
    (:mod:`jaxmor.sim.equality`)."""
    q = state.q
    dtype = q.dtype
    friction_jac = free_friction_jacobian(model, kin)
    equality_jac, residual = equality_rows(model, kin.body, q, (state.mocap_pos, state.mocap_quat))
    layout = rows_of(model)
    nb = layout.teeth[1] - layout.teeth[0]
    n_free = layout.teeth[0] - layout.free[0]
    ball_low, ball_high = _ball_bounds(model, angle, h, position=False)
    tendon_low, tendon_high = _tendon_bounds(model, q, h, position=False)
    gap_low, gap_high = _speculative_bounds(*gap_limits(model, state), h)
    unlimited = jnp.full(friction_jac.shape[0], jnp.inf, dtype)
    bilateral = jnp.full(residual.shape, jnp.inf, dtype)
    joint_bounds = frc.friction.at[layout.friction_dofs[layout.free[0] : layout.ball[1]]].get(
        mode="fill", fill_value=0.0
    )
    tendon_bounds = model.tendons.friction.astype(dtype)
    return _GeneralRows(
        jacobian=jnp.concatenate(
            [friction_jac, ball, tendon_jacobian(model, dtype), gap_jacobian(model, dtype), equality_jac]
        ),
        shift=jnp.concatenate(
            [jnp.zeros(n_free, dtype), -frc.drive.rotor_velocity, -EQUALITY_CORRECTION * residual / h]
        ),
        bound=jnp.concatenate([joint_bounds * h, tendon_bounds * h, jnp.zeros(nb, dtype), bilateral]),
        low=jnp.concatenate([-unlimited, ball_low, tendon_low, gap_low, -bilateral]),
        high=jnp.concatenate([unlimited, ball_high, tendon_high, gap_high, bilateral]),
    )


def _tendon_bounds(model: Model, q: jax.Array, h: jax.Array, position: bool) -> tuple[jax.Array, jax.Array]:
    """``(low, high)`` of the tendon rows from their length limits, a joint row's: speculative in the velocity problem
    (``position`` False), ``+-POSITION_CORRECTION x violation / h`` in the position problem."""
    ten = model.tendons
    length = tendon_lengths(model, q)
    lower, upper = ten.lower.astype(q.dtype), ten.upper.astype(q.dtype)
    if position:
        return _position_bounds(lower, upper, length, h)
    return _speculative_bounds(lower, upper, length, h)


def friction_impulse(x: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """Friction impulse of a joint row (the law the solver's sweeps share): the unconstrained impulse ``x`` clamped
    to the bounds ``[low, high]``, at a bound the bound itself (derivative 0 in ``x``). ``jnp.clip`` splits the
    derivative at a tie, which gave a joint without friction (bounds ``+-0``) at rest a share of a sticking row's
    derivative, though its impulse is zero whatever ``x``."""
    return jnp.where(x >= high, high, jnp.where(x <= low, low, x))


def limit_impulse(low, high, has_low, has_high, v0, inv_diag) -> jax.Array:
    """Impulse of a limit row (1-D), the law the solver's sweeps share: ``v >= low`` pushes with ``lam >= 0``,
    ``v <= high`` with ``lam <= 0``; ``has_low``, ``has_high`` (bool) say which bounds are finite, ``v0`` is the
    row's velocity without the limit's impulse, ``inv_diag`` is ``1 / A_rr`` (0 for a row that nothing moves).

    An infinite bound (a joint without that limit) contributes nothing, with finite derivatives: the bound
    is replaced before the product (a double ``where``), so no ``inf * 0`` reaches the gradient.
    """
    push = jnp.maximum((jnp.where(has_low, low, v0) - v0) * inv_diag, 0.0)
    pull = jnp.minimum((jnp.where(has_high, high, v0) - v0) * inv_diag, 0.0)
    return jnp.where(has_low, push, 0.0) + jnp.where(has_high, pull, 0.0)


def warm_start(model: Model, state: State, contacts: Contacts) -> Impulses:
    """The velocity problem's warm start: the impulses of the state's last step, each contact's from the slot
    that held its candidate (:func:`jaxmor.sim.collision.budget.follow`) when the budget selects."""
    layout = rows_of(model)
    friction = state.friction_impulse.at[layout.friction_dofs].get(mode="fill", fill_value=0.0)
    limit = state.limit_impulse.at[layout.limit_dofs].get(mode="fill", fill_value=0.0)
    contact = state.contact_impulse
    if selects(model):
        contact = follow(contacts.key, state.contact_key, contact)
    return Impulses(contact, friction, limit, state.equality_impulse)


def impulse_velocities(cons: Constraints, impulses: Impulses, correction: Impulses) -> tuple[jax.Array, jax.Array]:
    """The velocities the solved problems give: ``(du, u_pos)``, the velocity problem's change of velocity
    (:func:`velocity_change`) and the position problem's pseudo-velocity (:func:`position_change`), (nv,) each."""
    return velocity_change(cons, impulses), position_change(cons, correction)


def teeth_impulse(model: Model, impulses: Impulses) -> jax.Array:
    """(nb,) the gear teeth rows' impulses (the last joint rows before the equality rows) [Nm s or N s], of either
    problem; what the rotor feels, ``+lam``, its joint ``-lam`` (:mod:`jaxmor.actuation.backlash`)."""
    start, stop = rows_of(model).teeth
    if stop == start:
        return jnp.zeros(0, impulses.friction.dtype)
    rows = impulses.friction + impulses.limit
    return rows[start:stop]


def velocity_change(cons: Constraints, impulses: Impulses) -> jax.Array:
    """(nv,) ``M_eff^-1 J^T lam``: the velocity the velocity problem's impulses add."""
    return cons.response @ cons.velocity.rows(impulses)


def position_change(cons: Constraints, impulses: Impulses) -> jax.Array:
    """(nv,) ``M_eff^-1 J^T lam_pos``: the pseudo-velocity of the position problem's impulses."""
    keep = np.array(cons.position_rows, dtype=np.int32)
    return cons.response[:, keep] @ cons.position.rows(impulses)
