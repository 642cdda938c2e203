"""Domain randomization: many worlds' models drawn from one model, ready for ``vmap`` and ``rollout_batch``.

``randomize(model, key, n_worlds, {parameter: distribution, ...})`` returns ``(models, axes)``: a Model
whose randomized leaves carry a leading world axis of size ``n_worlds`` (every other leaf is shared, so
memory grows only with what is randomized) and the ``in_axes``-style pytree that says which leaves those
are. Use them as::

    models, axes = jaxmor.randomize(model, key, 256, {"motor.resistance": jaxmor.scale(0.9, 1.1)})
    states = jaxmor.init_states(models, axes, n_worlds=256)     # bus voltages etc. from each world's model
    final, _ = jaxmor.rollout_batch(models, states, n_steps=100, model_axes=axes)
    jax.vmap(jaxmor.step, in_axes=(axes, 0))(models, states)

Parameters (``select`` picks elements by name; without it every element is drawn):

=========================================  ======================================  ===================
name                                       what                                    ``select`` by
=========================================  ======================================  ===================
``body.mass``                              a body's mass, its inertia scaled along  link or body name
                                           (the same mass distribution, heavier)
``body.com``                               an offset [m] added to a body's centre    link or body name
                                           of mass, (x, y, z) in its body frame; the
                                           inertia about the centre of mass stays
``geom.friction``, ``geom.restitution``    contact properties (drawn frictions      geom name
                                           count as given, ``Model.geom_friction_given``)
``joint.damping``, ``joint.friction``,     per 1-DoF joint                          joint name
``joint.armature``, ``joint.stiffness``
``motor.resistance``, ``.torque_constant``,  the motor constants; ``motor.bus_voltage``  actuator name
``.velocity_constant``, ``.peak_torque``,  (alias ``bus_voltage``) is the voltage a
``.bus_voltage``                           new State starts with
``motor.inductance``,                      the motors' dynamic features             actuator name
``motor.thermal_resistance``,              (:mod:`jaxmor.actuation.motor_dynamics`): drawn
``.heat_capacity``,                        for every selected actuator, used by
``.housing_thermal_resistance``,           those that have the feature; a new
``.housing_heat_capacity``,                State starts at the drawn ambient
``.ambient_temperature``,                  temperature (``init_state`` of the
``.resistance_tempco``, ``.flux_tempco``,  world's model)
``.cogging_amplitude``,
``.lugre_stiffness``, ``.lugre_coulomb``,
``.lugre_static``
``actuator.gear_ratio``,                   the transmission and output losses       actuator name
``actuator.output_damping``,
``actuator.output_friction``
``gravity``                                the 3-vector (elements are x, y, z)       --
``timestep``                               the time step                            --
``ground.friction``, ``ground.restitution``, ``ground.height``                      --
``battery.open_circuit_voltage``,          the supply (``jaxmor.with_battery``)       --
``battery.internal_resistance``
``actuator.delay``                         the command delay [steps] of a DC-motor   actuator name
                                           actuator (an integer ``>= 0``)
``affine.delay``                           the control delay [steps] of an affine    affine actuator name
                                           actuator (an integer ``>= 0``)
``controller.p_gain``, ``.i_gain``,        the drive controllers' gains (used by     actuator name
``.d_gain``                                the actuators that have one)
``controller.period``                      their period [steps] (an integer ``>= 1``) actuator name
``backlash.width``, ``backlash.inertia``   the gears' play [rad or m] and the rotors' actuator name
                                           inertia (``jaxmor.with_backlash``; only
                                           actuators that have backlash)
=========================================  ======================================  ===================

Integer parameters (the delays and the periods) take each draw rounded to the nearest integer (``numpy.rint``,
halves to even); :func:`integers` draws them uniformly among the integers ``low .. high``. Drawing a delay raises
the model's ``max_delay`` (static, the length of the State's command buffers) to the longest delay the distribution
can give (its ``high``, rounded; for :func:`normal`, the longest drawn), so make the worlds' states after
``randomize``.

``body.com`` draws three values per selected body, its offset along the body frame's x, y and z axes (bounds: a
number for all three axes, three values, or anything that broadcasts to ``(n_worlds, selected bodies, 3)``); the
offset moves the body's mass rigidly, so ``Model.body_inertia``, stored about the centre of mass, is unchanged (the
inertia about the body origin changes by the parallel-axis theorem, as the dynamics compute it). It is added to the
nominal centre of mass, so :func:`scale` (a factor on a nominal offset of zero) is refused.

Distributions: :func:`uniform`, :func:`normal`, :func:`log_uniform` (absolute values), :func:`scale` (the nominal
value times a uniform factor) and :func:`integers` (uniform among whole numbers). Each draws every selected element
independently, or one value per world for all of them with ``shared=True`` (``body.com``: one offset (3,) per
world for all selected bodies). Draws are checked per world: a motor that the spec's validity rule refuses, a negative
mass, damping or friction, a centre of mass that is not finite, a restitution outside [0, 1], a gear ratio or time
step that is not positive, an ambient temperature below absolute zero (-273.15 degC), a delay below 0 or a period
below 1 (after rounding), a draw that the model's dtype cannot hold (overflowing, or nonzero and below its smallest
normal number: :func:`jaxmor.checks.stored_problem`) raise an :class:`~jaxmor.ArgumentError` naming the parameter, the
world, the element and the rule, before anything runs. The motor rule is evaluated in the model's dtype (a stall
torque overflowing float32 is refused). A :class:`Distribution` checks itself when it is made (a known kind, finite
bounds, ``low <= high``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.motor import MOTOR_FIELDS, DcMotorParameters, motor_problem
from jaxmor.actuation.motor_dynamics import ABSOLUTE_ZERO
from jaxmor.checks import as_finite, as_key, as_positive_int, is_traced, quoted, stored_failure, stored_problem
from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.fields import model_leaves
from jaxmor.types import Model

#: The most values one parameter's draws may hold (``n_worlds`` times its elements; 2 GiB of float64).
MAX_DRAWS = 2**28

#: The kinds of :class:`Distribution`.
KINDS = ("uniform", "normal", "log_uniform", "scale", "integers")


@dataclasses.dataclass(frozen=True)
class Distribution:
    """How to draw a parameter (made by :func:`uniform`, :func:`normal`, :func:`log_uniform`, :func:`scale`).

    Attributes:
        kind: ``"uniform"``, ``"normal"``, ``"log_uniform"`` or ``"scale"``.
        a, b: the bounds (uniform, log-uniform, scale) or the mean and standard deviation (normal); finite
            floats or sequences that broadcast against each other and the selected elements.
        select: names of the elements to draw (``None``: all).
        shared: one draw per world for all selected elements.

    Raises:
        ArgumentError: at construction: an unknown ``kind``; bounds that are not finite real numbers or do not
            broadcast; ``a > b`` (bounded kinds); a bound that is not positive (``log_uniform``); a negative
            standard deviation (``normal``); ``select`` not a sequence of names, or ``shared`` not a bool.
    """

    kind: str
    a: Any
    b: Any
    select: tuple[str, ...] | None = None
    shared: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ArgumentError(f"Distribution: kind must be one of {KINDS}, got {brief_repr(self.kind)}")
        first, second = ("mean", "std") if self.kind == "normal" else ("low", "high")
        a, b = _finite_bounds(self.kind, first, self.a), _finite_bounds(self.kind, second, self.b)
        try:
            np.broadcast(a, b)
        except ValueError:
            raise ArgumentError(f"{self.kind}: {first} {a.shape} and {second} {b.shape} do not broadcast") from None
        if self.kind == "normal" and np.any(b < 0):
            raise ArgumentError(f"normal: std must not be negative, got {brief_repr(self.b)}")
        if self.kind != "normal" and np.any(a > b):
            given = f"{brief_repr(self.a)} > {brief_repr(self.b)}"
            raise ArgumentError(f"{self.kind}: low must not exceed high, got {given}")
        if self.kind == "integers" and not (np.all(a == np.rint(a)) and np.all(b == np.rint(b))):
            raise ArgumentError(
                f"integers: low and high must be integers, got {brief_repr(self.a)}, {brief_repr(self.b)}"
            )
        if self.kind == "log_uniform" and np.any(a <= 0):
            raise ArgumentError(f"log_uniform: the bounds must be positive, got low={brief_repr(self.a)}")
        if self.select is not None:
            if isinstance(self.select, str) or not all(isinstance(n, str) for n in self.select):
                raise ArgumentError(f"{self.kind}: select must be a sequence of names, got {brief_repr(self.select)}")
            object.__setattr__(self, "select", tuple(self.select))
        if not isinstance(self.shared, (bool, np.bool_)):
            raise ArgumentError(f"{self.kind}: shared must be a bool, got {brief_repr(self.shared)}")

    def sample(self, key: jax.Array, shape: tuple[int, ...], nominal: np.ndarray, *, components: int = 0) -> np.ndarray:
        """Draws of ``shape`` (worlds, elements...) for the nominal values ``nominal`` (elements...).

        ``components``: the number of trailing axes of ``shape`` that are one element's components (a centre of
        mass's x, y, z), drawn independently even when ``shared`` (which shares the rest of the axes).
        """
        kept = len(shape) - components
        draw_shape = (shape[0],) + (1,) * (kept - 1) + tuple(shape[kept:]) if self.shared else shape
        a, b = np.asarray(self.a, np.float64), np.asarray(self.b, np.float64)
        if self.kind == "normal":
            out = a + b * np.asarray(jax.random.normal(key, draw_shape), np.float64)
            return np.broadcast_to(out, shape).astype(np.float64)
        unit = np.asarray(jax.random.uniform(key, draw_shape), np.float64)
        if self.kind == "uniform":
            out = a + (b - a) * unit
        elif self.kind == "log_uniform":
            out = np.exp(np.log(a) + (np.log(b) - np.log(a)) * unit)
        elif self.kind == "integers":
            out = np.minimum(a + np.floor((b - a + 1) * unit), b)
        else:  # scale
            out = nominal * (a + (b - a) * unit)
        return np.broadcast_to(out, shape).astype(np.float64)


def _finite_bounds(kind: str, name: str, value: Any) -> np.ndarray:
    """A distribution's bound (or mean, or standard deviation) as a float64 array of finite real numbers.

    Raises:
        ArgumentError: an entry that is not a real number (a string, a bool, ``None``), NaN or infinite.
    """
    entries = np.ravel(np.asarray(value, dtype=object))
    for x in entries:
        as_finite(x, f"{kind}: {name}")
    return np.asarray([float(x) for x in entries], np.float64).reshape(np.shape(value))


def _bounds(kind: str, low: Any, high: Any, select, shared) -> Distribution:
    """A bounded distribution (checked by :class:`Distribution`)."""
    return Distribution(kind, low, high, select, shared)


def uniform(low: Any, high: Any, *, select: Sequence[str] | None = None, shared: bool = False) -> Distribution:
    """Values uniform in ``[low, high]`` (in the parameter's units)."""
    return _bounds("uniform", low, high, select, shared)


def log_uniform(low: Any, high: Any, *, select: Sequence[str] | None = None, shared: bool = False) -> Distribution:
    """Values whose logarithm is uniform in ``[log low, log high]`` (``0 < low <= high``)."""
    return _bounds("log_uniform", low, high, select, shared)


def scale(low: Any, high: Any, *, select: Sequence[str] | None = None, shared: bool = False) -> Distribution:
    """The nominal value times a factor uniform in ``[low, high]``."""
    return _bounds("scale", low, high, select, shared)


def integers(low: int, high: int, *, select: Sequence[str] | None = None, shared: bool = False) -> Distribution:
    """Integers uniform among ``low, low + 1, ..., high`` (``low <= high``, both integers): for the delays and
    periods."""
    return _bounds("integers", low, high, select, shared)


def normal(mean: Any, std: Any, *, select: Sequence[str] | None = None, shared: bool = False) -> Distribution:
    """Values normal with ``mean`` and standard deviation ``std`` (``>= 0``)."""
    return Distribution("normal", mean, std, select, shared)


# --------------------------------------------------------------------------------------------------
# The parameters: where each lives in the Model, how its elements are named, what a valid value is.


@dataclasses.dataclass(frozen=True)
class _Parameter:
    path: tuple[str, ...]  # attribute path in the Model
    names: Callable[[Model], tuple[str, ...]]  # element names (empty: a scalar or an unnamed vector)
    rule: str  # the validity rule: "positive", "non-negative", "in [0, 1]", "finite", "temperature", "motor", and
    # for integers (each draw rounded) "delay" (>= 0) and "period" (>= 1)


def _joints(model: Model) -> tuple[str, ...]:
    return model.joint_names


def _actuators(model: Model) -> tuple[str, ...]:
    return model.actuators.names


def _none(model: Model) -> tuple[str, ...]:
    return ()


def _axes(model: Model) -> tuple[str, ...]:
    return ("x", "y", "z")


#: How a parameter's elements are named, by its leaf's first declared dim (other leaves: none, a vector (3,): axes).
_NAMES: dict[str, Callable[[Model], tuple[str, ...]]] = {
    "nb": lambda m: m.body_names,
    "ng": lambda m: m.geom_names,
    "nv": _joints,
    "na": _actuators,
    "nu": lambda m: m.affine.names,
    "nt": lambda m: m.tendons.names,
}


def _declared_parameters() -> dict[str, _Parameter]:
    """The parameters, from the Model leaves declared with a ``randomize`` name (:func:`jaxmor.fields.leaf`)."""
    out = {}
    for path, leaf in model_leaves(Model):
        if leaf.randomize:
            names = _axes if leaf.dims == (3,) else _NAMES.get(leaf.dims[0] if leaf.dims else None, _none)
            out[leaf.randomize] = _Parameter(path, names, leaf.domain)
    return out


#: The parameters by their public name: each a Model leaf declared with that name, its domain and dims.
PARAMETERS: dict[str, _Parameter] = _declared_parameters()
ALIASES = {"bus_voltage": "motor.bus_voltage"}


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        tree = getattr(tree, part)
    return tree


def _set(tree: Any, path: tuple[str, ...], value: Any) -> Any:
    """``tree`` with the leaf at ``path`` replaced (plain dataclass replace: the draws are checked here)."""
    if len(path) == 1:
        return dataclasses.replace(tree, **{path[0]: value})
    return dataclasses.replace(tree, **{path[0]: _set(getattr(tree, path[0]), path[1:], value)})


def _selection(model: Model, name: str, parameter: _Parameter, dist: Distribution, size: int) -> np.ndarray:
    """Indices (in the parameter's element list) of the selected elements; all ``size`` elements of a parameter
    whose elements have no names."""
    names = parameter.names(model)
    if dist.select is None:
        return np.arange(len(names) or max(size, 1))
    if not names:
        raise ArgumentError(f"randomize: {name} has no named elements to select; drop select={dist.select!r}")
    if name in ("body.mass", "body.com"):  # a link name selects the body that carries it
        lookup = dict(zip(model.body_names, range(model.nb), strict=True))
        lookup |= {link: b for link, b in zip(model.link_names, model.link_body, strict=True) if b >= 0}
    else:
        lookup = {n: i for i, n in enumerate(names)}
    unknown = [s for s in dist.select if s not in lookup]
    if unknown:
        raise ArgumentError(f"randomize: {name}: unknown element(s) {unknown}; the elements are {list(names)}")
    return np.array(sorted({lookup[s] for s in dist.select}), dtype=np.int64)


def _check_backlash(model: Model, name: str, index: np.ndarray) -> None:
    """A backlash parameter is drawn only for actuators that have backlash (else the draw would act on nothing)."""
    if not name.startswith("backlash."):
        return
    active = model.actuators.backlash.active
    bare = [model.actuators.names[i] for i in index if not active[i]]
    if bare:
        raise ArgumentError(
            f"randomize: {name}: actuators {bare} have no backlash; give them one first with jaxmor.with_backlash "
            "(width 0 for a gear without play) or select the others"
        )


def _check(name: str, parameter: _Parameter, values: np.ndarray, labels: Sequence[str]) -> None:
    """Raise for the first world and element whose draw breaks the parameter's rule."""
    rule = parameter.rule
    bad = np.isnan(values) if rule == "motor" else ~np.isfinite(values)  # a motor's peak torque may be inf
    if rule in ("positive", "motor"):
        bad |= values <= 0
    elif rule == "period":
        bad |= values < 1
    elif rule in ("non-negative", "delay"):
        bad |= values < 0
    elif rule == "in [0, 1]":
        bad |= (values < 0) | (values > 1)
    elif rule == "temperature":
        bad |= values < ABSOLUTE_ZERO
    if bad.any():
        world, *element = np.unravel_index(int(np.argmax(bad)), values.shape)
        which = f", {labels[element[0]]}" if element and labels else ""
        must = {
            "finite": "finite",
            "motor": "positive (the motor validity rule)",
            "temperature": f"finite and >= {ABSOLUTE_ZERO} degC (absolute zero)",
            "delay": "an integer >= 0 [steps] (after rounding)",
            "period": "an integer >= 1 [steps] (after rounding)",
        }.get(rule, f"{rule} and finite")
        raise ArgumentError(
            f"randomize: {name}: world {world}{which}: drew {float(values[(world, *element)])!r}, which must be {must}"
        )


def _check_stored(name: str, values: np.ndarray, labels: Sequence[str], dtype: Any, coordinates: bool) -> None:
    """Raise for the first world and element whose draw the model's dtype cannot hold
    (:func:`jaxmor.checks.stored_problem`: an overflow, or a nonzero draw below the smallest normal number)."""
    problem = stored_problem(values, dtype, coordinates=coordinates)
    if problem is not None:
        (world, *element), reason = problem
        which = f", {labels[element[0]]}" if element and labels else ""
        raise ArgumentError(
            f"randomize: {name}: world {world}{which}: drew {float(values[(world, *element)])!r}, which "
            f"{stored_failure(reason, dtype)}"
        )


def _check_support(name: str, parameter: _Parameter, dist: Distribution, nominal: np.ndarray) -> None:
    """Refuse a bounded distribution whose range reaches values the parameter cannot take (a resistance
    range reaching 0, say), even where no world happened to draw one."""
    if dist.kind == "normal":
        return
    low = np.min(np.asarray(dist.a, np.float64) * (nominal if dist.kind == "scale" else 1.0))
    rule = "positive" if parameter.rule == "motor" else parameter.rule
    if rule in ("delay", "period"):
        low, rule = np.rint(low) - (rule == "period"), "non-negative"  # rounded, a period of 1 counts as 0
    if (rule == "positive" and low <= 0) or (rule in ("non-negative", "in [0, 1]") and low < 0):
        reach = f"{dist.kind}({dist.a!r}, {dist.b!r}) reaches {float(low)!r} in any world"
        raise ArgumentError(f"randomize: {name}: {reach}, which must be {rule}")
    high = np.max(np.asarray(dist.b, np.float64) * (nominal if dist.kind == "scale" else 1.0))
    if rule == "in [0, 1]" and high > 1:
        reach = f"{dist.kind}({dist.a!r}, {dist.b!r}) reaches {float(high)!r} in any world"
        raise ArgumentError(f"randomize: {name}: {reach}, which must be {rule}")


def _check_motors(model: Model, motor: DcMotorParameters, drawn: set[str]) -> None:
    """Every world's motors must pass the spec's validity rule (:func:`jaxmor.actuation.motor.motor_problem`)."""
    fields = MOTOR_FIELDS
    values = np.broadcast_arrays(*(np.asarray(getattr(motor, f), np.float64) for f in fields))
    worlds = values[0].shape[0] if values[0].ndim == 2 else 1
    for world in range(worlds):
        for i, actuator in enumerate(model.actuators.names):
            at = (world, i) if values[0].ndim == 2 else (i,)
            problem = motor_problem(DcMotorParameters(*(float(v[at]) for v in values)), motor.resistance.dtype)
            if problem is not None:
                parameters = ", ".join(sorted(drawn))
                where = f"world {world}, actuator '{actuator}'"
                raise ArgumentError(f"randomize: {parameters}: {where}: the drawn motor is invalid: {problem}")


def _nominal(model: Model, name: str, parameter: _Parameter) -> np.ndarray:
    """The nominal values of a parameter, checked to be those of an unbatched, concrete model.

    Raises:
        ArgumentError: a traced leaf (randomize under jit), or a leaf of another shape than an unbatched model's
            (a model already randomized, a leaf replaced by hand).
    """
    leaf = _get(model, parameter.path)
    field = "model." + ".".join(parameter.path)
    if is_traced(leaf):
        raise ArgumentError(f"randomize: {field} is traced: randomize draws on the host, so call it outside jit/vmap")
    try:
        nominal = np.asarray(leaf, np.float64)
    except (TypeError, ValueError):
        raise ArgumentError(f"randomize: {field} must be an array of numbers, got {quoted(leaf)}") from None
    names = parameter.names(model)
    if name.startswith("joint."):
        expected: tuple[int, ...] | int = (model.nv,)
    elif name == "body.com":
        expected = (len(names), 3)
    elif names:
        expected = (len(names),)
    else:
        expected = 2 if name == "terrain.heights" else ()
    if nominal.shape != expected and (not isinstance(expected, int) or nominal.ndim != expected):
        shape = f"{expected}-dimensional" if isinstance(expected, int) else f"of shape {expected}"
        raise ArgumentError(
            f"randomize: {name}: {field} has shape {nominal.shape}, not {shape}: randomize draws from an unbatched "
            "model (give every parameter in one spec rather than randomizing a randomized model)"
        )
    return nominal


def _check_distribution(name: str, dist: Any) -> None:
    """Refuse what is not a :class:`Distribution` (whose own construction checked its kind, bounds and ``select``)
    and an empty ``select``.

    Raises:
        ArgumentError: naming the parameter and what is wrong.
    """
    if not isinstance(dist, Distribution):
        raise ArgumentError(f"randomize: {name} needs a distribution (jaxmor.uniform, ...), got {quoted(dist)}")
    if dist.select is not None and not dist.select:
        raise ArgumentError(
            f"randomize: {name}: select must be a non-empty sequence of names, got {quoted(dist.select)}"
        )


def _labels(dist: Distribution) -> tuple[str, str]:
    """The names of a distribution's two bounds."""
    return ("mean", "std") if dist.kind == "normal" else ("low", "high")


def _check_broadcast(name: str, dist: Distribution, draws: tuple[int, ...]) -> None:
    """Refuse bounds that do not broadcast against ``draws`` (``(n_worlds, selected elements)``, or
    ``(n_worlds, selected bodies, 3)`` for ``body.com``).

    Raises:
        ArgumentError: naming the parameter, the bound, its shape and the shapes it may have.
    """
    for label, bound in zip(_labels(dist), (dist.a, dist.b), strict=True):
        shape = np.shape(np.asarray(bound, np.float64))
        if not _fits(shape, draws):
            n, k = draws[:2]
            if len(draws) == 3:
                axes, give = "(n_worlds, selected bodies, x y z)", f"3 values (x, y, z), ({k}, 3)"
            else:
                axes, give = "(n_worlds, selected elements)", f"{k} values"
            raise ArgumentError(
                f"randomize: {name}: {label} has shape {shape}, which does not broadcast against the draws {draws}"
                f" {axes}: give a number, {give}, or an array of shape {draws}"
            )


def _check_size(name: str, n: int, nominal: np.ndarray) -> None:
    """Refuse more than :data:`MAX_DRAWS` values for one parameter (``n`` worlds of ``nominal.size`` values)."""
    if n * max(nominal.size, 1) > MAX_DRAWS:
        raise ArgumentError(
            f"randomize: {name}: n_worlds = {n} worlds of {nominal.size} values each are more than MAX_DRAWS = "
            f"{MAX_DRAWS} values"
        )


def _draw_com(model: Model, axes: Model, dist: Distribution, key: jax.Array, n: int) -> tuple[Model, Model]:
    """``body.com``: each selected body's centre of mass moved by a drawn offset (3,) [m] along its body axes.

    ``Model.body_inertia`` is the rotational inertia about the centre of mass, so it stays as it is: the offset
    moves the body's mass rigidly (the dynamics form the inertia about the body origin from the centre of mass by
    the parallel-axis theorem). The drawn offsets must be finite, and the moved centres of mass finite in the
    model's dtype (:func:`jaxmor.checks.stored_problem`, with underflows accepted as for positions).

    Args:
        model: the model (its ``body_com`` unbatched: (nb, 3) [m]).
        axes: the ``in_axes`` pytree so far.
        dist: the offset's distribution [m] (not :func:`scale`: the nominal offset is zero).
        key: the parameter's ``jax.random`` key.
        n: number of worlds.

    Returns:
        ``(model, axes)`` with ``body_com`` of shape (n, nb, 3) [m] and its axis ``0``.

    Raises:
        ArgumentError: as :func:`randomize` does for any parameter, and for a :func:`scale` distribution.
    """
    name, parameter = "body.com", PARAMETERS["body.com"]
    nominal = _nominal(model, name, parameter)
    _check_size(name, n, nominal)
    _check_distribution(name, dist)
    if dist.kind == "scale":
        raise ArgumentError(
            f"randomize: {name} draws an offset [m] added to the centre of mass, and scale() would scale a nominal "
            "offset of zero: give uniform(-a, a), normal(0, s), ..."
        )
    index = _selection(model, name, parameter, dist, nominal.shape[0])
    _check_broadcast(name, dist, (n, index.size, 3))
    offsets = dist.sample(key, (n, index.size, 3), np.zeros((index.size, 3)), components=1)
    labels = [f"{model.body_names[i]} {axis}" for i in index for axis in "xyz"]
    _check(name, parameter, offsets.reshape(n, -1), labels)
    values = np.broadcast_to(nominal, (n, *nominal.shape)).copy()
    values[:, index] += offsets
    moved = values[:, index].reshape(n, -1)
    _check(f"{name} (the moved centre of mass)", parameter, moved, labels)
    _check_stored(f"{name} (the moved centre of mass)", moved, labels, model.body_com.dtype, coordinates=True)
    model = _set(model, parameter.path, jnp.asarray(values, model.body_com.dtype))
    return model, _set(axes, parameter.path, 0)


def _fits(shape: tuple[int, ...], draws: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` broadcasts to ``draws`` without growing it."""
    try:
        return np.broadcast_shapes(shape, draws) == draws
    except ValueError:
        return False


def randomize(model: Model, key: jax.Array, n_worlds: int, spec: Mapping[str, Distribution]) -> tuple[Model, Model]:
    """Per-world models drawn from ``model`` (see the module docstring for the parameters).

    Args:
        model: the nominal model (unbatched, concrete: randomize runs on the host, outside ``jit``).
        key: one ``jax.random`` key (``jax.random.key(seed)`` or ``jax.random.PRNGKey(seed)``); the same key gives
            the same worlds.
        n_worlds: number of worlds (``>= 1``; ``n_worlds`` times a parameter's elements at most :data:`MAX_DRAWS`).
        spec: parameter name -> :class:`Distribution`, whose bounds are numbers that broadcast against the draws
            ``(n_worlds, selected elements)``.

    Returns:
        ``(models, axes)``: the model with a leading axis of ``n_worlds`` on each randomized leaf, and the
        pytree of the model's structure holding ``0`` on those leaves and ``None`` elsewhere (the
        ``model_axes`` of :func:`jaxmor.rollout_batch`, the ``in_axes`` of ``jax.vmap``).

    Raises:
        ArgumentError: not a Model; a key that is not one concrete key (an int, a batch of keys, a traced key);
            too many draws; an unknown parameter or element name, a distribution that is not one or whose bounds
            do not broadcast against the draws, a model that is batched or traced, or a draw that breaks a rule
            (naming the parameter, the world, the element and the rule).
    """
    if not isinstance(model, Model):
        raise ArgumentError(f"randomize: model must be a jaxmor.Model, got {type(model).__name__}")
    key = as_key(key, "randomize")
    n = as_positive_int(n_worlds, "n_worlds")
    if not isinstance(spec, Mapping):
        raise ArgumentError(f"spec must map parameter names to distributions, got {type(spec).__name__}")
    axes = jax.tree.map(lambda _: None, model)
    keys = jax.random.split(key, max(len(spec), 1))
    drawn_motor: set[str] = set()
    longest = model.max_delay
    given = list(model.geom_friction_given)
    for (name, dist), sub in zip(spec.items(), keys, strict=False):
        name = ALIASES.get(name, name)
        if name not in PARAMETERS:
            raise ArgumentError(f"randomize: unknown parameter {quoted(name)}; the parameters are {sorted(PARAMETERS)}")
        parameter = PARAMETERS[name]
        if parameter.path[0] == "height_field" and model.height_field is None:
            raise ArgumentError(f"randomize: {name} needs a model with a height field (jaxmor.with_height_field)")
        if _get(axes, parameter.path) is not None:
            raise ArgumentError(f"randomize: {name} is given twice")
        if name == "body.com":
            model, axes = _draw_com(model, axes, dist, sub, n)
            continue
        nominal = _nominal(model, name, parameter)
        _check_size(name, n, nominal)
        _check_distribution(name, dist)
        index = _selection(model, name, parameter, dist, nominal.size)
        _check_backlash(model, name, index)
        _check_broadcast(name, dist, (n, index.size))
        labels = [parameter.names(model)[i] for i in index] if parameter.names(model) else []
        slots = np.asarray(model.joint_u, dtype=np.int64)[index] if name.startswith("joint.") else index
        base = nominal.reshape(-1) if nominal.ndim else nominal.reshape(1)
        draws = dist.sample(sub, (n, slots.size), base[slots])
        dtype = jnp.asarray(_get(model, parameter.path)).dtype
        integral = parameter.rule in ("delay", "period")
        draws = np.rint(draws) if integral else draws
        _check(name, parameter, draws, labels)
        if not integral:
            _check_stored(name, draws, labels, dtype, coordinates=parameter.rule == "finite")
        _check_support(name, parameter, dist, base[slots])
        values = np.broadcast_to(base, (n, base.size)).copy()
        values[:, slots] = draws
        values = values.reshape((n, *nominal.shape))
        model = _set(model, parameter.path, jnp.asarray(values, dtype))
        axes = _set(axes, parameter.path, 0)
        if name == "body.mass":
            model, axes = _inertia_with_mass(model, axes, nominal, values)
        if name == "geom.friction":
            for i in slots:
                given[int(i)] = True
        if name.startswith("motor.") and name.split(".")[1] in DcMotorParameters.__dataclass_fields__:
            drawn_motor.add(name)
        if parameter.rule == "delay":
            longest = max(longest, _longest_delay(dist, base[slots], draws))
    if drawn_motor:
        _check_motors(model, model.actuators.motor, drawn_motor)
    static = {"geom_friction_given": tuple(given), "max_delay": longest}
    return dataclasses.replace(model, **static), dataclasses.replace(axes, **static)


def _inertia_with_mass(model: Model, axes: Model, nominal: np.ndarray, masses: np.ndarray) -> tuple[Model, Model]:
    """The inertias scaled with the drawn ``masses`` (n, nb) [kg]: the same distribution of mass, heavier."""
    ratio = np.where(nominal > 0, masses / np.where(nominal > 0, nominal, 1.0), 1.0)
    inertia = np.asarray(model.body_inertia, np.float64) * ratio[..., None, None]
    scaled = np.where(np.isfinite(inertia), inertia, 0.0).reshape(masses.shape[0], -1)
    _check_stored("body.mass (the inertia it scales)", scaled, [], model.body_inertia.dtype, False)
    model = _set(model, ("body_inertia",), jnp.asarray(inertia, model.body_inertia.dtype))
    return model, _set(axes, ("body_inertia",), 0)


def _longest_delay(dist: Distribution, nominal: np.ndarray, draws: np.ndarray) -> int:
    """The longest delay a distribution can give (its ``high``, rounded; the longest drawn for a normal one)."""
    if dist.kind == "normal":
        return int(np.max(draws, initial=0))
    high = np.asarray(dist.b, np.float64) * (nominal if dist.kind == "scale" else 1.0)
    return int(max(np.rint(np.max(high)), np.max(draws, initial=0)))
