"""The feet of a legged robot, as a locomotion task reads them: where each foot is, whether it touches the ground,
how long it has been in the air, how high it swung and how fast it slides.

A foot is a sphere collision geom (the shipped quadruped's ``*_foot`` spheres, the Go2's ``FL``/``FR``/``RL``/``RR``).
Its **clearance** is the height of the sphere's lowest point above the ground under its centre
(:func:`~jaxmor.sim.collision.height_field.ground_heights`, so a height field counts); a foot **touches** the ground
while its clearance is below ``tolerance`` (a resting sphere sits about a millimetre into the ground: the contact
is soft). All of it is kinematic, read from the configuration at the end of each control step, so it costs one
forward-kinematics pass per control step and no contact bookkeeping.

Definitions, per foot, over one control step of length ``dt`` [s]:

* **air time**: the time since the foot last touched [s]; it grows by ``dt`` each step the foot is off the ground;
* **touchdown**: the foot touches now and did not at the previous step; the air time of the swing that ended is
  reported with it (legged_gym's and MuJoCo Playground's ``feet_air_time``);
* **swing peak**: the highest clearance reached since the foot last left the ground [m];
* **slip speed**: the horizontal displacement over the step of the foot's material point that was lowest at the
  step's start (the sole), divided by ``dt``, where the foot touched at both ends of the step (a stance foot)
  [m/s]; zero elsewhere. The sole, not the sphere's centre: a foot rolling without slipping moves its centre by
  ``r`` times its rotation (0.125 m/s for a 2.5 cm sphere on a shank turning at 5 rad/s) and its sole not at all.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.errors import ArgumentError
from jaxmor.math import quat_to_rotation
from jaxmor.model import match_geoms
from jaxmor.sim.collision.height_field import ground_heights
from jaxmor.sim.kinematics import body_poses
from jaxmor.types import GeomType, Model

__all__ = ["Feet", "FeetState", "feet_of"]


@struct.dataclass
class FeetState:
    """The feet of one world at the end of the last control step.

    Attributes:
        position: (nf, 3) each foot sphere's centre in the world [m].
        sole: (nf, 3) each foot sphere's lowest point, in its body's frame [m] (the material point tracked for
            the slip).
        touching: (nf,) bool, the foot touches the ground.
        air_time: (nf,) time since the foot last touched the ground [s] (0 while it touches).
        peak: (nf,) highest clearance since the foot last left the ground [m].
    """

    position: jax.Array
    sole: jax.Array
    touching: jax.Array
    air_time: jax.Array
    peak: jax.Array


@struct.dataclass
class FeetStep:
    """What one control step did to the feet (see the module docstring).

    Attributes:
        touchdown: (nf,) bool, the foot landed in this step.
        landed_air_time: (nf,) the air time of the swing that ended at a touchdown [s], 0 elsewhere.
        landed_peak: (nf,) the swing peak of the swing that ended at a touchdown [m], 0 elsewhere.
        slip_speed: (nf,) the horizontal speed of a stance foot [m/s], 0 for a foot that left or reached the ground.
        clearance: (nf,) each foot's clearance now [m].
        speed: (nf,) each foot's sole's horizontal speed over the step [m/s] (the slip speed, stance or not).
    """

    touchdown: jax.Array
    landed_air_time: jax.Array
    landed_peak: jax.Array
    slip_speed: jax.Array
    clearance: jax.Array
    speed: jax.Array


class Feet:
    """The foot spheres of a model, selected once (static), and the functions that track them.

    Args:
        model: the model.
        names: geom names, link names or ``fnmatch`` patterns (:func:`jaxmor.model.match_geoms`) that select the
            feet, e.g. ``("*_foot",)``.
        tolerance: clearance below which a foot touches the ground [m] (``> 0``).

    Raises:
        ArgumentError: a selection that matches nothing, a selected geom that is not a sphere, or a tolerance
            that is not a positive finite number.
    """

    def __init__(self, model: Model, names: Sequence[str], tolerance: float = 0.005):
        geoms = match_geoms(model.geom_names, model.geom_link, model.link_names, names, "feet")
        kinds = {model.geom_names[g]: GeomType(model.geom_type[g]).label for g in geoms}
        if any(kind != "sphere" for kind in kinds.values()):
            raise ArgumentError(f"feet must be sphere geoms, got {kinds}")
        tolerance = float(tolerance)
        if not (np.isfinite(tolerance) and tolerance > 0):
            raise ArgumentError(f"the feet's contact tolerance must be a positive finite length [m], got {tolerance}")
        self.geoms = np.asarray(geoms, np.int32)
        self.bodies = np.asarray([model.geom_body[g] for g in geoms], np.int32)
        self.names = tuple(model.geom_names[g] for g in geoms)
        self.tolerance = tolerance

    @property
    def count(self) -> int:
        """Number of feet."""
        return len(self.names)

    def place(self, model: Model, q: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(position (nf, 3) [m], clearance (nf,) [m])`` of the feet at configuration ``q``."""
        position, clearance, _, _ = self._frames(model, q)
        return position, clearance

    def in_base(self, model: Model, q: np.ndarray) -> np.ndarray:
        """(nf, 3) the feet's centres at the floating-base configuration ``q`` in the base's frame [m] (host)."""
        q = np.asarray(q, np.float64)
        position, _ = self.place(model, jnp.asarray(q, model.body_mass.dtype))
        rotation = np.asarray(quat_to_rotation(jnp.asarray(q[3:7])), np.float64)
        return (np.asarray(position, np.float64) - q[:3]) @ rotation

    def _frames(self, model: Model, q: jax.Array):
        """The feet's centres and clearances at ``q``, their bodies' poses, and their soles in the bodies' frames."""
        poses = body_poses(model, q)
        rotation, origin = poses.rotation[self.bodies], poses.position[self.bodies]
        offset = jnp.asarray(model.geom_translation, q.dtype)[self.geoms]
        position = origin + jnp.einsum("fij,fj->fi", rotation, offset)
        radius = jnp.asarray(model.geom_size, q.dtype)[self.geoms, 0]
        clearance = position[:, 2] - radius - ground_heights(model, position[:, :2])
        lowest = position - radius[:, None] * jnp.asarray([0.0, 0.0, 1.0], q.dtype)
        sole = jnp.einsum("fji,fj->fi", rotation, lowest - origin)
        return position, clearance, (origin, rotation), sole

    def start(self, model: Model, q: jax.Array) -> FeetState:
        """The feet at the start of an episode (air time and peak zero)."""
        position, clearance, _, sole = self._frames(model, q)
        zero = jnp.zeros((self.count,), q.dtype)
        touching = clearance < self.tolerance
        return FeetState(position=position, sole=sole, touching=touching, air_time=zero, peak=zero)

    def advance(self, model: Model, q: jax.Array, before: FeetState, dt: float) -> tuple[FeetState, FeetStep]:
        """The feet after a control step of ``dt`` [s] that ended at configuration ``q``.

        Returns:
            ``(state, step)``: the new :class:`FeetState` and what the step did (:class:`FeetStep`).
        """
        position, clearance, (origin, rotation), sole = self._frames(model, q)
        moved = origin + jnp.einsum("fij,fj->fi", rotation, before.sole)  # the last step's sole, now
        touching = clearance < self.tolerance
        speed = jnp.linalg.norm(moved[:, :2] - before.position[:, :2], axis=-1) / dt  # the sole lay under the centre
        touchdown = touching & ~before.touching
        air_time = before.air_time + dt
        peak = jnp.maximum(before.peak, clearance)
        step = FeetStep(
            touchdown=touchdown,
            landed_air_time=jnp.where(touchdown, air_time, 0.0),
            landed_peak=jnp.where(touchdown, peak, 0.0),
            slip_speed=jnp.where(touching & before.touching, speed, 0.0),
            clearance=clearance,
            speed=speed,
        )
        state = FeetState(
            position=position,
            sole=sole,
            touching=touching,
            air_time=jnp.where(touching, 0.0, air_time),
            peak=jnp.where(touching, 0.0, peak),
        )
        return state, step


def feet_of(model: Model, names: Sequence[str] | None) -> tuple[str, ...]:
    """The feet selection for ``model``: ``names`` when given, else every sphere geom whose name or link name
    ends in ``foot`` (any case), as patterns for :class:`Feet`.

    Raises:
        ArgumentError: no names given and no such geom.
    """
    if names is not None:
        return tuple(names)
    found = tuple(
        name
        for name, link, kind in zip(model.geom_names, model.geom_link, model.geom_type, strict=True)
        if GeomType(kind) == GeomType.SPHERE
        and (name.lower().endswith("foot") or (link >= 0 and model.link_names[link].lower().endswith("foot")))
    )
    if not found:
        raise ArgumentError(
            "the model's feet are not found (no sphere geom named or on a link named '*foot'): pass feet=[...] "
            f"with the foot geoms' names; the geoms are {list(model.geom_names)}"
        )
    return found
