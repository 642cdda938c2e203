"""The wrench a body's parent exerts on its subtree through the joint (MuJoCo's ``cfrc_int``, what its ``force``
and ``torque`` sensors read): by Newton and Euler, the subtree's rate of momentum, less gravity and the contact
forces acting on it. The step's joint friction and limit impulses act through the joint, so they are part of it;
equality constraints' forces on the subtree are not subtracted (a loop closed through the subtree is read as if
its force came through the joint)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmor.types import Model


def subtree_wrench(
    model: Model, run, inside: jax.Array, point: jax.Array, motion, rates
) -> tuple[jax.Array, jax.Array]:
    """``(force (3,) [N], torque (3,) about ``point`` [Nm])``, world frame, of the parent on the bodies ``inside``.

    Args:
        model: the model.
        run: the step's stages at the state (:func:`jaxmor.sim.pipeline.stages`): its contacts and impulses.
        inside: (nb,) bool, the subtree's bodies.
        point: (3,) the point the torque is taken about [m].
        motion: ``(centres, rotations, centre velocities, angular velocities)`` of the bodies, world frame.
        rates: their time derivatives (only those of the velocities are used) [m/s^2, rad/s^2].
    """
    centre, rotation, _, spin = motion
    _, _, linear_acc, angular_acc = rates
    dtype = point.dtype
    mass = jnp.asarray(model.body_mass, dtype)
    inertia = jnp.einsum("bij,bjk,blk->bil", rotation, jnp.asarray(model.body_inertia, dtype), rotation)
    gravity = jnp.asarray(model.opt.gravity, dtype)
    force = mass[:, None] * (linear_acc - gravity)
    momentum_rate = jnp.einsum("bij,bj->bi", inertia, angular_acc) + jnp.cross(
        spin, jnp.einsum("bij,bj->bi", inertia, spin)
    )
    torque = momentum_rate + jnp.cross(centre - point, force)
    keep = inside[:, None]
    total_force = jnp.sum(jnp.where(keep, force, 0.0), axis=0)
    total_torque = jnp.sum(jnp.where(keep, torque, 0.0), axis=0)
    contact_force, contact_torque = _contact_wrench(model, run, inside, point)
    return total_force - contact_force, total_torque - contact_torque


def _contact_wrench(model: Model, run, inside: jax.Array, point: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The contact forces on the bodies ``inside`` (the step's impulses over ``h``) and their torque about
    ``point``."""
    contacts, impulses = run.contacts, run.impulses
    dtype = point.dtype
    h = jnp.asarray(model.opt.timestep, dtype)
    on_b = jnp.einsum("ci,cij->cj", impulses.contact, contacts.frame) / h  # the force on body B
    member = jnp.concatenate([inside, jnp.zeros(1, bool)])  # index -1: the world, never inside
    sign = member[contacts.body_b].astype(dtype) - member[contacts.body_a].astype(dtype)
    force = sign[:, None] * on_b
    return jnp.sum(force, axis=0), jnp.sum(jnp.cross(contacts.position - point, force), axis=0)
