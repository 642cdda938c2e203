"""The world around the robot, as model editors: the ground plane, the contact properties of geoms,
and which geoms collide with each other. Each returns a new :class:`~jaxmor.Model`.

How contacts are generated from these settings is :mod:`jaxmor.sim.collision`'s documentation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import jax.numpy as jnp
import numpy as np

from jaxmor.checks import as_array, as_scalar, as_stored, check_options, is_traced
from jaxmor.errors import ArgumentError
from jaxmor.model import collision_candidates, exclusion_pairs, geom_index, match_geoms
from jaxmor.modeling.builder import DEFAULT_FRICTION
from jaxmor.modeling.height_field import refit_window
from jaxmor.modeling.terrain import binned, with_geom_grids
from jaxmor.sim.collision import check_pairs
from jaxmor.types import Battery, Model


def add_ground(
    model: Model, height: float = 0.0, friction: float = DEFAULT_FRICTION, restitution: float = 0.0
) -> Model:
    """A copy of ``model`` with a ground plane ``z = height`` (normal ``+z``).

    Args:
        model: the model.
        height: height of the plane [m] (finite).
        friction: the ground's Coulomb friction coefficient (``>= 0``): the contacts' friction for geoms
            whose description gives none (every URDF geom), else combined with the geom's by
            ``model.opt.friction_rule`` (:func:`jaxmor.sim.collision.combine_friction`).
        restitution: the ground's coefficient of restitution in ``[0, 1]``, combined with each
            geom's as the maximum.

    Raises:
        ArgumentError: an argument is not a finite number in its range; the message names it.
    """
    height = as_stored(as_scalar(height, "height"), "height", model.ground_height.dtype, coordinates=True)
    friction = as_stored(as_scalar(friction, "friction", lower=0.0), "friction", model.ground_friction.dtype)
    restitution = as_scalar(restitution, "restitution", lower=0.0, upper=1.0)
    return model.replace(
        ground=True,
        ground_height=jnp.asarray(height, model.ground_height.dtype),
        ground_friction=jnp.asarray(friction, model.ground_friction.dtype),
        ground_restitution=jnp.asarray(restitution, model.ground_restitution.dtype),
    )


def with_geom_properties(
    model: Model, name: str, *, friction: float | None = None, restitution: float | None = None
) -> Model:
    """A copy of ``model`` with the contact properties of geom ``name`` changed.

    Args:
        model: the model.
        name: the geom's name (``model.geom_names``).
        friction: its Coulomb friction coefficient (``>= 0``); ``None`` keeps it. Once set, it is a given
            friction: combined with the other surface's by ``model.opt.friction_rule``.
        restitution: its coefficient of restitution in ``[0, 1]``; ``None`` keeps it.

    Raises:
        ArgumentError: unknown geom (the message lists the names), or a value out of range.
    """
    i = geom_index(model, name)
    if friction is not None:
        friction = as_stored(as_scalar(friction, "friction", lower=0.0), "friction", model.geom_friction.dtype)
        given = tuple(g or k == i for k, g in enumerate(model.geom_friction_given))
        model = model.replace(geom_friction=model.geom_friction.at[i].set(friction), geom_friction_given=given)
    if restitution is not None:
        restitution = as_scalar(restitution, "restitution", lower=0.0, upper=1.0)
        model = model.replace(geom_restitution=model.geom_restitution.at[i].set(restitution))
    return model


def with_ground_contact(model: Model, names: Iterable[str] | None = None) -> Model:
    """A copy of ``model`` in which only the selected geoms touch the ground (``Model.geom_ground``).

    Each geom that touches the ground costs contact slots in every step (:func:`jaxmor.sim.collision.contact_count`):
    a robot whose feet alone meet the ground runs faster with only its feet selected.

    Args:
        model: the model.
        names: geom names, link names (every geom of the link, including links merged into a body by a fixed
            joint, e.g. a foot frame) or ``fnmatch`` patterns over both (``["*_foot"]``); ``None``: every geom
            (the default of a loaded model).

    Raises:
        ArgumentError: a single string instead of a list, or an entry that matches no geom (the message lists
            the geoms and their links).
    """
    if names is None:
        return refit_window(model.replace(geom_ground=(True,) * model.ng))
    chosen = set(match_geoms(model.geom_names, model.geom_link, model.link_names, names))
    return refit_window(model.replace(geom_ground=tuple(g in chosen for g in range(model.ng))))


def with_self_collision(
    model: Model, enabled: bool = True, exclude: Iterable = (), only: Iterable[str] | None = None
) -> Model:
    """A copy of ``model`` whose ``contact_pairs`` test its geoms against each other.

    The pairs are every pair of geoms ``(i, j)``, ``i < j``, on different bodies (a geom welded to
    the world, body ``-1``, counts as on the world body) that are not parent and child across a
    joint (a free joint does not make a floating base adjacent to the world), both selected by ``only``,
    minus ``exclude`` and minus the description's exclusions (``Model.collision_exclude``, from
    ``<disable_collisions link1 link2/>`` elements).

    A selection (an entry of ``only``, a side of an ``exclude`` pair) is a geom name, a link name (all of the
    link's geoms) or an ``fnmatch`` pattern over both (:func:`jaxmor.model.match_geoms`).

    Args:
        model: the model.
        enabled: ``False`` clears the pairs (no self-collision).
        exclude: pairs ``(selection_a, selection_b)``: no pair between a geom of one and a geom of the other
            is tested, in either order.
        only: selections of the geoms that take part (``None``: every geom).

    Raises:
        ArgumentError: a selection that matches no geom or a malformed exclusion; or a remaining pair of types
            that is not supported (any pair with a cylinder): the message names the two geoms and their
            types; exclude the pair.
    """
    if not enabled:
        return model.replace(contact_pairs=(), terrain=())
    if isinstance(exclude, (str, bytes)):
        raise ArgumentError(f"exclude must be a list of (geom name, geom name) pairs, got {exclude!r}")
    excluded = {frozenset(pair) for pair in model.collision_exclude}
    for item in exclude:
        if isinstance(item, (str, bytes)) or not isinstance(item, Iterable):
            raise ArgumentError(f"exclude must hold (geom name, geom name) pairs, got {item!r}")
        item = tuple(item)
        if len(item) != 2:
            raise ArgumentError(f"exclude must hold (geom name, geom name) pairs, got {item!r}")
        excluded |= exclusion_pairs(model.geom_names, model.geom_link, model.link_names, *item, what="exclude")
    selected = None
    if only is not None:
        selected = set(match_geoms(model.geom_names, model.geom_link, model.link_names, only, "only"))
    pairs = collision_candidates(model, excluded, selected)
    check_pairs(model, pairs)
    return binned(model.replace(contact_pairs=tuple(pairs), terrain=()))


def with_battery(model: Model, open_circuit_voltage: float, internal_resistance: float) -> Model:
    """A copy of ``model`` whose actuators share a battery: their bus voltage sags with the current drawn.

    After every step the bus voltage of every actuator becomes the terminal voltage ``V`` of the battery
    delivering the power ``P`` [W] the motors drew in that step (each motor's electrical power
    ``(R i + w / Kv) i``, ``i = tau_m / Kt``): ``V = V_oc - R_int I`` with ``V I = P``, solved in closed form,
    ``V = (V_oc + sqrt(V_oc^2 - 4 R_int P)) / 2`` (:func:`jaxmor.actuation.drive.battery_voltage`), so ``V``
    stays within ``[V_oc / 2, V_oc]`` for any ``R_int``: a demand beyond the most power ``V_oc^2 / (4 R_int)``
    gets ``V_oc / 2``, and power braking motors return leaves the bus at ``V_oc``. A new State starts at
    ``V_oc``. Both values are leaves (``model.battery``), so they can be randomized per world.

    Works under ``jit`` and ``vmap``: traced values are stored as given once their shape is checked; a traced
    value out of range (``V_oc`` not positive, ``R_int`` negative, either not finite) makes both NaN, so the
    worlds stepped with them are flagged (``State.nonfinite``) rather than run with a battery that cannot be.

    Args:
        model: the model.
        open_circuit_voltage: ``V_oc`` [V] (``> 0``), a scalar.
        internal_resistance: ``R_int`` [Ohm] (``>= 0``), a scalar.

    Raises:
        ArgumentError: not a scalar; a concrete value out of range, or one the model's dtype cannot hold
            (overflowing, or nonzero and below its smallest normal number: :func:`jaxmor.checks.as_stored`); the
            message names it.
    """
    dtype = model.body_mass.dtype
    voltage = _battery_value(open_circuit_voltage, "open_circuit_voltage", dtype)
    resistance = _battery_value(internal_resistance, "internal_resistance", dtype)
    if not is_traced(voltage) and float(voltage) <= 0.0:
        raise ArgumentError(f"open_circuit_voltage must be positive, got {float(voltage)}")
    if is_traced(voltage) or is_traced(resistance):
        usable = (voltage > 0) & (resistance >= 0) & jnp.isfinite(voltage) & jnp.isfinite(resistance)
        voltage, resistance = (jnp.where(usable, x, jnp.nan) for x in (voltage, resistance))
    return model.replace(battery=Battery(voltage, resistance, enabled=True))


def _battery_value(value: object, name: str, dtype) -> jnp.ndarray:
    """A battery constant as a scalar array of ``dtype``; a concrete one checked finite, ``>= 0`` and held by
    ``dtype``.

    Raises:
        ArgumentError: naming ``name``: not a number, not a scalar, or a concrete value out of range.
    """
    as_scalar(value, name, lower=0.0)
    as_stored(value, name, dtype)
    out = as_array(value, name, dtype)
    if out.shape != ():
        raise ArgumentError(f"{name} must be a scalar, got shape {out.shape}")
    return out


def with_options(model: Model, **options: object) -> Model:
    """The model with simulation options replaced (:class:`jaxmor.Options`), each checked.

    Args:
        model: the model.
        **options: option names and values, e.g. ``timestep=0.001`` [s], ``gravity=(0, 0, -9.81)`` [m/s^2],
            ``solver_iterations=30``, ``contact_budget=12`` (slots), ``density=1.2`` [kg/m^3] (a density or a
            viscosity other than 0 turns ``fluid_forces`` on); array options are stored in the model's
            floating-point dtype.

    Returns:
        The new model.

    Raises:
        ArgumentError: an unknown option name, or a value out of its range (:func:`jaxmor.checks.check_options`:
            a positive finite time step, a finite gravity 3-vector, at least one sweep, a known rule).
    """
    known = {f.name for f in dataclasses.fields(model.opt)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ArgumentError(f"with_options: unknown options {unknown}; the options are {sorted(known)}")
    dtype = model.opt.timestep.dtype
    arrays = {"timestep", "gravity", "contact_reach", "density", "viscosity", "wind"}
    for name in arrays & set(options):
        as_stored(options[name], f"with_options: {name}", dtype, coordinates=name in ("gravity", "wind"))
    values = {k: (jnp.asarray(v, dtype) if k in arrays and not is_traced(v) else v) for k, v in options.items()}
    if "fluid_forces" not in options and {"density", "viscosity"} & set(options):
        values["fluid_forces"] = model.opt.fluid_forces or any(
            is_traced(options[k]) or np.any(np.asarray(options[k]) != 0)
            for k in ("density", "viscosity")
            if k in options
        )
    new = model.opt.replace(**values)
    check_options(new, "with_options")
    model = model.replace(opt=new)
    return with_geom_grids(model) if model.terrain and "contact_reach" in options else model
