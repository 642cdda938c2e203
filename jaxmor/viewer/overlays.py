"""Optional overlays computed from the trajectory: contact points and forces, and the actuators' operating points
beside their regions.

Contacts: a State keeps, per slot of the contact budget, the candidate it held in the last step
(``contact_key``) and that step's impulse (``contact_impulse``, in the contact frame: normal, two tangents). The
viewer recomputes the candidates at each frame's ``q`` (:func:`jaxmor.collide`, then the budget's selection), finds
each slot's candidate by its key, and draws the point and the force ``impulse / dt`` in the world frame. The point
is where the contact lies at the end of the step (the impulse was computed at its start): a few millimetres off
at most, for display.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.motor import MotorSaturation, motor_torque_bounds
from jaxmor.sim.collision import collide
from jaxmor.sim.collision.budget import select
from jaxmor.sim.kinematics import body_poses
from jaxmor.types import Model
from jaxmor.viewer.frames import Frames, world_model

#: Speeds drawn of a region: this many samples between the two ends.
REGION_SAMPLES = 64


@jax.jit
def _contacts_over_time(model: Model, q: jax.Array, keys: jax.Array, impulses: jax.Array, mocap):
    def one(q1, key, impulse, pose):
        found = select(model, collide(model, body_poses(model, q1), pose))
        match = (found.key[None, :] == key[:, None]) & (key[:, None] >= 0)
        slot = jnp.argmax(match, axis=1)
        held = jnp.any(match, axis=1) & (impulse[:, 0] > 0)
        force = jnp.einsum("sji,sj->si", found.frame[slot], impulse) / model.opt.timestep
        return found.position[slot], force, held

    return jax.vmap(one)(q, keys, impulses, mocap)


def contact_forces(model: Model, frames: Frames, model_axes: Model | None = None):
    """Contact points and forces in every frame.

    Returns:
        ``(points (T, W, nc, 3) [m], forces (T, W, nc, 3) [N], held (T, W, nc) bool)``: each slot's contact point
        and the force on body B (world frame), ``held`` where the slot held a contact that pushed.
    """
    nc = frames.states.contact_key.shape[-1]
    t, w = frames.q.shape[:2]
    if nc == 0:
        return np.zeros((t, w, 0, 3)), np.zeros((t, w, 0, 3)), np.zeros((t, w, 0), bool)
    out = []
    for k in range(w):
        m = world_model(model, model_axes, k)
        dtype = m.body_mass.dtype
        q, key = frames.q[:, k].astype(dtype), frames.states.contact_key[:, k]
        impulse = np.asarray(frames.states.contact_impulse[:, k], dtype)
        mocap = (np.asarray(frames.states.mocap_pos[:, k], dtype), np.asarray(frames.states.mocap_quat[:, k], dtype))
        out.append([np.asarray(x) for x in _contacts_over_time(m, q, key, impulse, mocap)])
    return tuple(np.stack([world[i] for world in out], axis=1) for i in range(3))


@dataclass(frozen=True)
class Regions:
    """Each DC-motor actuator's operating region at its default bus voltage, rotor side.

    Attributes:
        speed: (na, S) motor speeds [rad/s] along the outline.
        lower, upper: (na, S) the admissible motor torque's bounds at those speeds [Nm].
        speed_scale, torque_scale: (na,) the half ranges the panel normalizes speeds and torques by
            [rad/s], [Nm].
    """

    speed: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    speed_scale: np.ndarray
    torque_scale: np.ndarray


def regions(model: Model) -> Regions:
    """The operating regions of the model's DC-motor actuators (from its motor constants, :class:`Regions`)."""
    motor = jax.tree.map(lambda x: np.asarray(x, np.float64), model.actuators.motor)
    stall, damping = np.asarray(motor.stall_torque()), np.asarray(motor.back_emf_damping())
    peak = np.broadcast_to(np.asarray(motor.peak_torque, np.float64), stall.shape)
    finite = np.isfinite(peak)
    limit = np.where(finite, 1.15 * (stall + np.where(finite, peak, 0.0)) / damping, 1.3 * stall / damping)
    speed = np.linspace(-1.0, 1.0, REGION_SAMPLES)[None, :] * limit[:, None]
    bounds = motor_torque_bounds(jax.tree.map(lambda x: x[:, None], motor), speed)
    lower, upper = np.asarray(bounds.lower, float), np.asarray(bounds.upper, float)
    torque = np.where(finite, peak, stall)
    return Regions(speed, lower, upper, limit, 1.1 * torque)


#: Colours of an operating point by the bound that limited it.
SATURATION_COLOURS = {
    int(MotorSaturation.NONE): (40, 170, 60),
    int(MotorSaturation.VOLTAGE): (240, 150, 20),
    int(MotorSaturation.PEAK_TORQUE): (220, 40, 40),
}
OTHER_SATURATION_COLOUR = (120, 40, 160)


def saturation_colours(saturation: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 colours of operating points by :class:`jaxmor.MotorSaturation` value."""
    out = np.empty((*saturation.shape, 3), np.uint8)
    out[...] = OTHER_SATURATION_COLOUR
    for value, colour in SATURATION_COLOURS.items():
        out[saturation == value] = colour
    return out
