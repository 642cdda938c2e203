"""The contact budget: the fixed number of slots the solver works on, filled every step from all candidates.

:func:`~jaxmor.sim.collision.driver.collide` returns every contact candidate the model can have (its slot
count grows with the geoms and pairs); :func:`select` keeps the ``contact_budget(model)`` nearest of them
(smallest gap first: the deepest penetrations, then the nearest gaps), in the candidates' order, with static
shapes, so that the solver's rows, its matrices and the step's program follow the budget, not the candidates.
The candidates within ``opt.contact_reach`` that do not fit are counted (``Contacts.overflow``, kept in
``State.contact_overflow``); each selected slot carries its candidate's key, so that the next step's warm
start follows the contact into whatever slot it lands in. Design and cost: ``docs/design/collision.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.sim.collision.contacts import Contacts
from jaxmor.sim.collision.driver import contact_bodies, contact_count, vertex_geoms
from jaxmor.sim.collision.height_field import VERTEX_SLOTS
from jaxmor.types import Model

#: The default budget's contacts per floating body, and its least value (:func:`default_budget`).
CONTACTS_PER_FREE_BODY = 4
MIN_DEFAULT_BUDGET = 8


def default_budget(model: Model) -> int:
    """The budget a model gets when ``opt.contact_budget`` is ``None`` (static): every candidate between two
    bodies (self-collision pairs), and of the candidates against the world (the ground, world geoms) at most
    ``max(MIN_DEFAULT_BUDGET, CONTACTS_PER_FREE_BODY x floating bodies)``: four points hold a body on a face,
    and a fixed-base robot or a single legged robot rarely touches the world in more than eight places at once.
    With a height field, each box and hull on the ground adds its vertex slots (:func:`vertex_geoms`) to the four per
    floating body (on a flat stretch of field they touch beside its ground points) before that least value applies:
    a legged robot whose base box meets the field keeps the eight.
    """
    body_a, body_b = contact_bodies(model)
    world = sum(1 for a, b in zip(body_a, body_b, strict=True) if a < 0 or b < 0)
    wanted = CONTACTS_PER_FREE_BODY * len(model.free_u) + VERTEX_SLOTS * len(vertex_geoms(model))
    cap = max(MIN_DEFAULT_BUDGET, wanted)
    return min(world, cap) + len(body_a) - world


def contact_budget(model: Model) -> int:
    """Number of contact slots of the solver per step (static): ``opt.contact_budget`` (at most the candidates
    of :func:`~jaxmor.sim.collision.driver.contact_count`), or :func:`default_budget` when it is ``None``.

    Raises:
        ArgumentError: ``opt.contact_budget`` is not ``None`` or an int ``>= 1``.
    """
    budget = model.opt.contact_budget
    if budget is None:
        return default_budget(model)
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, (int, np.integer)) or budget < 1:
        raise ArgumentError(f"opt.contact_budget must be None or an int >= 1, got {budget!r}")
    return min(contact_count(model), int(budget))


def selects(model: Model) -> bool:
    """Whether the budget holds fewer slots than there are candidates, or the candidates' keys change from step
    to step (a terrain grid's, ``Model.terrain``) (static): only then :func:`select` reorders anything and the
    warm start follows the keys."""
    return bool(model.terrain) or contact_budget(model) < contact_count(model)


def select(model: Model, candidates: Contacts) -> Contacts:
    """The budget's slots filled from the candidates, smallest gap first.

    Args:
        model: the model.
        candidates: :func:`~jaxmor.sim.collision.driver.collide`'s result.

    Returns:
        :class:`Contacts` with :func:`contact_budget` slots and the overflow count; the candidates
        themselves when the budget holds them all (no overflow, keys in slot order).
    """
    if not selects(model):
        return candidates
    k = contact_budget(model)
    _, nearest = jax.lax.top_k(-jax.lax.stop_gradient(candidates.distance), k)
    index = jnp.sort(nearest)  # the chosen in candidate order: the solver visits them as it would all of them
    reach = jnp.asarray(model.opt.contact_reach, candidates.distance.dtype)
    within = jnp.sum(candidates.distance <= reach).astype(jnp.int32)
    c = candidates
    return Contacts(
        distance=c.distance[index],
        position=c.position[index],
        frame=c.frame[index],
        friction=c.friction[index],
        restitution=c.restitution[index],
        body_a=jnp.asarray(c.body_a)[index],
        body_b=jnp.asarray(c.body_b)[index],
        key=jnp.asarray(c.key)[index],
        overflow=jnp.maximum(within - k, 0).astype(jnp.int32),
    )


def follow(keys: jax.Array, last_keys: jax.Array, last_impulses: jax.Array) -> jax.Array:
    """(k, 3) each slot's warm start: the last step's impulses of the slot that held the same candidate, zero
    for a candidate no slot held.

    Args:
        keys: (k,) int32 the candidates the slots hold now.
        last_keys: (k,) int32 the candidates they held in the last step (``-1``: none).
        last_impulses: (k, 3) the last step's impulses of the slots [N s].
    """
    same = (keys[:, None] == last_keys[None, :]) & (last_keys[None, :] >= 0)
    return jnp.sum(jnp.where(same[:, :, None], last_impulses[None, :, :], 0.0), axis=1)


def initial_keys(model: Model) -> np.ndarray:
    """(k,) int32 the keys of a fresh state: the slots' own candidates when the budget holds them all, else
    ``-1`` (no contact yet)."""
    k = contact_budget(model)
    if selects(model):
        return np.full(k, -1, np.int32)
    return np.arange(k, dtype=np.int32)
