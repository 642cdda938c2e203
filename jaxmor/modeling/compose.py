"""Scenes of several free bodies, as model editors: a free box, sphere, capsule or cylinder added to a model
(:func:`add_free_body`), and another model added to one (:func:`combine`: a robot and objects, several
robots). Each returns a new :class:`~jaxmor.Model`; the models must not be batched. A scene of objects alone
starts from an empty world: ``jaxmor.add_ground(jaxmor.load_urdf('<robot name="scene"><link name="world"/></robot>'))``.

Where things go. The new bodies, links, geoms, joints, velocities and actuators come after the model's
(its indices are unchanged; the added model's are shifted), and the added model's free bodies start at the
poses given (``Model.q_default``, the coordinates a new State starts from). The added model's names are
prefixed; the combined model keeps the first model's name, source, options, ground and battery.

Which geoms collide. By default (``collide_with=True``) every new geom is paired with every geom of the
model that :func:`jaxmor.with_self_collision` would pair it with (on another body, not parent and child
across a joint). ``collide_with=False`` adds no pair between the two, and a list of geom names
of the model restricts the pairs to those geoms. The added
model's own ``contact_pairs`` are kept. :func:`jaxmor.with_self_collision` on the result recomputes every
pair, the robot's own self-collision included.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxmor.actuation.definitions import API_SOURCE
from jaxmor.actuation.motor_dynamics import concatenate_dynamics
from jaxmor.actuation.residual import no_residual
from jaxmor.checks import as_scalar, as_stored
from jaxmor.errors import ArgumentError
from jaxmor.fields import declared_leaves
from jaxmor.io.description import Geom, Inertial, Link, RobotDescription
from jaxmor.io.mesh import widened
from jaxmor.model import adjacent_bodies, geom_index
from jaxmor.modeling.builder import build_model, topology_tables
from jaxmor.modeling.equality import combine_equalities
from jaxmor.modeling.height_field import refit_window
from jaxmor.modeling.scene import with_geom_properties
from jaxmor.modeling.sensors import combine_sensors, combine_sites
from jaxmor.modeling.tendons import combine_tendons
from jaxmor.modeling.terrain import binned, terrain_pairs, with_geom_grids
from jaxmor.sim.collision import check_pairs
from jaxmor.state import initial_mocap
from jaxmor.types import (
    AffineActuators,
    Backlash,
    DriveController,
    GeomType,
    JointType,
    Keyframe,
    Model,
    MotorActuators,
)

#: The Model's static fields and dataclasses that :func:`combine` keeps from the first model (and every scalar leaf,
#: by its declared dims).
_KEPT = ("name", "source", "ground", "opt", "battery")
#: The counts along which :func:`combine` concatenates a Model leaf whose declared first dim is one of them.
_CONCATENATED = ("nb", "nl", "ng", "nv", "nq")
#: Below this norm an orientation quaternion has no direction and is refused.
QUATERNION_NORM_FLOOR = 1e-9
#: Round-off allowed in the triangle inequality of principal moments, relative to the largest moment.
INERTIA_TRIANGLE_SLACK = 1e-9


def _vector(x: ArrayLike, n: int, name: str) -> np.ndarray:
    """A finite float64 ``(n,)`` NumPy vector, or an ArgumentError naming ``name`` (the float64 NumPy twin of
    :func:`jaxmor.checks.as_vector` with ``finite=True``, which makes a JAX array of the default dtype)."""
    try:
        v = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ArgumentError(f"{name} must be a ({n},) array of numbers, got {x!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ArgumentError(f"{name} must be a finite ({n},) array, got {x!r}")
    return v


def _pose(position: ArrayLike, orientation: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(translation (3,), unit quaternion w x y z (4,), rotation (3, 3))`` of a checked pose."""
    p = _vector(position, 3, "position [m]")
    quat = _vector(orientation, 4, "orientation (quaternion w x y z)")
    norm = float(np.linalg.norm(quat))
    if norm < QUATERNION_NORM_FLOOR:
        raise ArgumentError(f"orientation must be a quaternion w x y z of nonzero norm, got {quat.tolist()}")
    w, x, y, z = quat / norm
    rotation = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    return p, quat / norm, rotation


def _quat_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, av, bw, bv = a[0], a[1:], b[0], b[1:]
    return np.concatenate([[aw * bw - av @ bv], aw * bv + bw * av + np.cross(av, bv)])


# --------------------------------------------------------------------------------------------------
# add_free_body


#: Number of entries of ``size`` per shape, and what they are.
_SIZES = {
    GeomType.SPHERE: (1, "its radius"),
    GeomType.CAPSULE: (2, "(radius, half length)"),
    GeomType.BOX: (3, "its 3 half-extents"),
    GeomType.CYLINDER: (2, "(radius, half length)"),
}


def solid_inertia(shape: GeomType, size: np.ndarray, mass: float) -> np.ndarray:
    """(3,) principal moments [kg m^2] of a solid of uniform density about its centre, in its axes (the
    capsule's and cylinder's axis is ``z``).

    Args:
        shape: the geom type.
        size: (3,) the geom size as in ``Model.geom_size`` [m].
        mass: [kg].
    """
    if shape == GeomType.SPHERE:
        return np.full(3, 0.4 * mass * size[0] ** 2)
    if shape == GeomType.BOX:
        a, b, c = size**2
        return mass / 3.0 * np.array([b + c, a + c, a + b])
    r, length = size[0], 2.0 * size[1]
    if shape == GeomType.CYLINDER:
        across = mass * (3.0 * r * r + length * length) / 12.0
        return np.array([across, across, 0.5 * mass * r * r])
    # Capsule: a cylinder and two hemispheres of the same density; each hemisphere's centre of mass lies
    # 3 r / 8 from its flat face, its moment across about that point 83/320 m r^2.
    cylinder, spheres = math.pi * r * r * length, 4.0 / 3.0 * math.pi * r**3
    m_c, m_s = mass * cylinder / (cylinder + spheres), mass * spheres / (cylinder + spheres)
    across = m_c * (r * r / 4.0 + length * length / 12.0) + m_s * (
        0.4 * r * r + length**2 / 4.0 + 3.0 * length * r / 8.0
    )
    return np.array([across, across, 0.5 * m_c * r * r + 0.4 * m_s * r * r])


def _shape(shape: str | GeomType) -> GeomType:
    if isinstance(shape, GeomType):
        return shape
    if isinstance(shape, str) and shape.upper() in GeomType.__members__:
        return GeomType[shape.upper()]
    raise ArgumentError(f"shape must be one of {[t.label for t in GeomType]}, got {shape!r}")


def _size(shape: GeomType, size: ArrayLike) -> np.ndarray:
    n, what = _SIZES[shape]
    v = np.asarray(size, dtype=np.float64).reshape(-1) if _numeric(size) else None
    ok = v is not None and v.shape == (n,) and np.all(np.isfinite(v)) and np.all(v > 0)
    if shape == GeomType.CAPSULE and v is not None and v.shape == (2,):
        ok = bool(np.all(np.isfinite(v)) and v[0] > 0 and v[1] >= 0)  # a zero-length capsule is a sphere
    if not ok:
        rule = "radius > 0, half length >= 0" if shape == GeomType.CAPSULE else "each > 0"
        raise ArgumentError(f"size of a {shape.label} must be ({n},): {what} [m], {rule}; got {size!r}")
    return np.concatenate([v, np.zeros(3 - n)])


def _numeric(x) -> bool:
    if isinstance(x, (str, bytes)) or x is None:
        return False
    try:
        np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _inertia(inertia: ArrayLike, mass: float) -> np.ndarray:
    """A checked (3, 3) inertia tensor from (3,) principal moments or a (3, 3) tensor."""
    tensor = np.asarray(inertia, dtype=np.float64) if _numeric(inertia) else np.zeros((0,))
    if tensor.shape == (3,):
        tensor = np.diag(tensor)
    if tensor.shape != (3, 3) or not np.all(np.isfinite(tensor)) or not np.allclose(tensor, tensor.T, rtol=0, atol=0):
        raise ArgumentError(
            f"inertia must be (3,) principal moments or a symmetric (3, 3) tensor [kg m^2] about the centre, "
            f"finite; got {inertia!r}"
        )
    moments = np.linalg.eigvalsh(tensor)
    slack = INERTIA_TRIANGLE_SLACK * moments.max(initial=0.0)
    if moments.min() <= 0 or moments[2] > moments[0] + moments[1] + slack:
        raise ArgumentError(
            f"inertia must be positive definite with principal moments obeying the triangle inequality "
            f"(I3 <= I1 + I2), got moments {moments.tolist()}"
        )
    return tensor


def add_free_body(
    model: Model,
    name: str,
    shape: str | GeomType,
    size: ArrayLike,
    mass: float,
    *,
    position: ArrayLike = (0.0, 0.0, 0.0),
    orientation: ArrayLike = (1.0, 0.0, 0.0, 0.0),
    inertia: ArrayLike | None = None,
    friction: float | None = None,
    restitution: float | None = None,
    collide_with: bool | Iterable[str] = True,
) -> Model:
    """A copy of ``model`` with a free rigid body of one collision shape added after its bodies.

    The body, its link and its geom are all called ``name``; its frame is the shape's (centre, and the
    axis of a capsule or cylinder along its ``z``), its centre of mass at the centre. Its 7 coordinates
    ``[p, quat w x y z]`` and 6 velocities (world frame, as every free joint's) follow the model's, and a new
    State starts at ``position``/``orientation`` (``Model.q_default``). It touches the ground if the model
    has one, and the model's geoms as the module docstring says.

    Args:
        model: the model (not batched).
        name: the new body's name; must not name a link, joint, geom or actuator of the model.
        shape: ``"box"``, ``"sphere"``, ``"capsule"`` or ``"cylinder"`` (or a :class:`~jaxmor.GeomType`).
        size: the shape's size [m], as ``Model.geom_size`` holds it: a box's (3,) half-extents, a sphere's
            radius (a scalar or (1,)), a capsule's or cylinder's (2,) ``(radius, half length)``.
        mass: its mass [kg] (``> 0``).
        position: (3,) the initial position of its centre in the world frame [m].
        orientation: (4,) its initial orientation, a quaternion ``w x y z`` (normalized here).
        inertia: its rotational inertia about the centre in its axes [kg m^2], (3,) principal moments or a
            symmetric (3, 3) tensor; default the uniform solid's (:func:`solid_inertia`).
        friction: the geom's Coulomb friction coefficient (``>= 0``, given: combined with the other surface's by
            ``model.opt.friction_rule``); default none given (:data:`jaxmor.modeling.builder.DEFAULT_FRICTION`, which
            takes the other surface's).
        restitution: the geom's coefficient of restitution in ``[0, 1]``; default 0.
        collide_with: ``True``: contact pairs with every geom of the model it can collide with (module
            docstring); ``False``: none; a list of geom names of the model: those only.

    Returns:
        The new model; ``nq`` grows by 7, ``nv`` by 6, ``ng`` and the bodies and links by one.

    Raises:
        ArgumentError: a name that is taken, an unknown shape, a size, mass, pose, inertia, friction or
            restitution out of range (the message names the argument and the expected shape or range), an
            unknown geom in ``collide_with`` or an unsupported pair asked for there.
    """
    if not isinstance(name, str) or not name or name == "world":
        raise ArgumentError(f"name must be a non-empty str other than 'world', got {name!r}")
    kind = _shape(shape)
    geom_size = _size(kind, size)
    as_stored(as_scalar(mass, "mass [kg]", lower=0.0), "mass [kg]", model.body_mass.dtype)
    mass = float(mass)
    if mass <= 0.0:
        raise ArgumentError(f"mass [kg] must be > 0, got {mass}")
    tensor = np.diag(solid_inertia(kind, geom_size, mass)) if inertia is None else _inertia(inertia, mass)
    _pose(position, orientation)  # checked before anything is built
    link = Link(
        name, 0, Inertial(mass, np.zeros(3), tensor), [Geom(name, kind.label, geom_size, np.eye(3), np.zeros(3))]
    )
    body = build_model(RobotDescription(name, API_SOURCE, 0, [link], [], name))
    if friction is not None or restitution is not None:
        body = with_geom_properties(body, name, friction=friction, restitution=restitution)
    return combine(model, body, position=position, orientation=orientation, collide_with=collide_with)


# --------------------------------------------------------------------------------------------------
# combine


def _check_names(model: Model, other: Model, prefix: str) -> None:
    """Refuse a name of ``other`` (prefixed) that ``model`` has in the same namespace."""

    def joints(m: Model) -> set[str]:
        return {j for j, _ in m.urdf_joints} | set(m.joint_names) | {j for j in m.body_joint_name if j}

    spaces = {
        "link (body)": (set(model.link_names) | {"world"}, other.link_names),
        "joint": (joints(model), joints(other)),
        "geom": (set(model.geom_names), other.geom_names),
        "actuator": (set(model.actuators.names) | set(model.affine.names), other.actuators.names + other.affine.names),
    }
    for what, (taken, names) in spaces.items():
        for n in names:
            if prefix + n in taken:
                raise ArgumentError(
                    f"combine: the {what} name {prefix + n!r} of the added model is already in the model; "
                    f"give a prefix (prefix={prefix!r} now) that makes the added model's names unique"
                )


def _motors(a: MotorActuators, b: MotorActuators, prefix: str, nv_a: int, nv: int) -> MotorActuators:
    """``a``'s actuators, then ``b``'s: every declared array leaf of :class:`MotorActuators` concatenated (a new one
    needs nothing here), the nested parts and the static tables merged below."""

    def cat(x, y):
        return jnp.concatenate([jnp.asarray(x), jnp.asarray(y, jnp.asarray(x).dtype)])

    arrays = {
        f.name: cat(getattr(a, f.name), getattr(b, f.name))
        for f in dataclasses.fields(MotorActuators)
        if f.metadata.get("pytree_node", True) and isinstance(getattr(a, f.name), (jax.Array, np.ndarray))
    }
    return MotorActuators(
        **arrays,
        names=a.names + tuple(prefix + n for n in b.names),
        models=a.models + b.models,
        joints=a.joints + tuple(prefix + j for j in b.joints),
        couplings=a.couplings + tuple(tuple(prefix + j for j in c) for c in b.couplings),
        joint_v_index=a.joint_v_index + tuple(v + nv_a for v in b.joint_v_index),
        coupling_actuator=a.coupling_actuator + tuple(i + len(a.names) for i in b.coupling_actuator),
        coupling_v_index=a.coupling_v_index + tuple(v + nv_a for v in b.coupling_v_index),
        nv=nv,
        motor=jax.tree.map(cat, a.motor, b.motor),
        dynamics=concatenate_dynamics(a.dynamics, b.dynamics),
        controller=DriveController(
            **{k: cat(getattr(a.controller, k), getattr(b.controller, k)) for k in ("p_gain", "i_gain", "d_gain")},
            period=cat(a.controller.period, b.controller.period),
            active=a.controller.active + b.controller.active,
            motor_side=a.controller.motor_side + b.controller.motor_side,
        ),
        residual=no_residual(len(a.names) + len(b.names)),
        backlash=Backlash(
            width=cat(a.backlash.width, b.backlash.width),
            inertia=cat(a.backlash.inertia, b.backlash.inertia),
            active=a.backlash.active + b.backlash.active,
        ),
    )


def _affine(a: AffineActuators, b: AffineActuators, prefix: str, shifts: tuple[int, int, int]) -> AffineActuators:
    """``a``'s actuators, then ``b``'s: names prefixed, joints and tendons shifted by ``shifts`` (``a``'s model's
    ``nq``, ``nv`` and number of tendons)."""
    nq_a, nv_a, nt_a = shifts
    leaves = {
        f.name: jnp.concatenate([getattr(a, f.name), jnp.asarray(getattr(b, f.name), getattr(a, f.name).dtype)])
        for f in dataclasses.fields(AffineActuators)
        if f.metadata.get("pytree_node", True)
    }
    return AffineActuators(
        **leaves,
        names=a.names + tuple(prefix + n for n in b.names),
        q_index=a.q_index + tuple(q + nq_a if q >= 0 else q for q in b.q_index),
        v_index=a.v_index + tuple(v + nv_a if v >= 0 else v for v in b.v_index),
        tendon=(a.tendon or (-1,) * a.nu) + (tuple(t + nt_a if t >= 0 else t for t in b.tendon) or (-1,) * b.nu)
        if a.on_tendons or b.on_tendons
        else (),
        dynamics=(a.dynamics or ("none",) * a.nu) + (b.dynamics or ("none",) * b.nu)
        if a.activated or b.activated
        else (),
        act_early=(a.act_early or (False,) * a.nu) + (b.act_early or (False,) * b.nu)
        if any(a.act_early) or any(b.act_early)
        else (),
    )


def _keyframes(model: Model, other: Model, placed: dict) -> tuple[Keyframe, ...]:
    """The first model's keyframes, extended by the added model at its (placed) default coordinates, at rest,
    its controls and activations zero, its mocap bodies where it (placed) puts them; the added model's own keyframes
    are dropped."""
    q = tuple(float(x) for x in np.asarray(placed.get("q_default", other.q_default)))
    links = {name: placed[name] for name in ("link_rotation", "link_translation") if name in placed}
    start = initial_mocap(other.replace(**links), other.link_translation.dtype)
    pos, quat = (tuple(np.asarray(start[name]).reshape(-1).tolist()) for name in ("mocap_pos", "mocap_quat"))
    return tuple(
        Keyframe(
            k.name,
            k.time,
            k.q + q,
            k.u + (0.0,) * other.nv,
            k.ctrl + (0.0,) * other.nu,
            None if k.mocap_pos is None else k.mocap_pos + pos,
            None if k.mocap_quat is None else k.mocap_quat + quat,
            None if k.act is None else k.act + (0.0,) * other.nu,
        )
        for k in model.keyframes
    )


def _placed(other: Model, translation: np.ndarray, quat: np.ndarray, rotation: np.ndarray) -> dict:
    """The leaves of ``other`` that the placement changes: what is welded to the world (roots' joint frames,
    links and geoms of the world) moved by the pose, and the free bodies' default coordinates."""
    r = jnp.asarray(rotation, other.body_tree_rotation.dtype)
    t = jnp.asarray(translation, other.body_tree_translation.dtype)

    def move(rot, pos, welded):
        if not welded.any():
            return rot, pos
        return jnp.where(welded[:, None, None], r @ rot, rot), jnp.where(welded[:, None], pos @ r.T + t, pos)

    kinds = zip(other.body_parent, other.body_joint_type, strict=True)
    roots = np.array([p < 0 and k != JointType.FREE for p, k in kinds], dtype=bool)
    tree = move(other.body_tree_rotation, other.body_tree_translation, roots)
    links = move(other.link_rotation, other.link_translation, np.array(other.link_body, dtype=int) < 0)
    geoms = move(other.geom_rotation, other.geom_translation, np.array(other.geom_body, dtype=int) < 0)
    q = np.asarray(other.q_default, dtype=np.float64).copy()
    for s in other.free_q:
        q[s : s + 3] = rotation @ q[s : s + 3] + translation
        q[s + 3 : s + 7] = _quat_product(quat, q[s + 3 : s + 7])
    return {
        "body_tree_rotation": tree[0],
        "body_tree_translation": tree[1],
        "link_rotation": links[0],
        "link_translation": links[1],
        "geom_rotation": geoms[0],
        "geom_translation": geoms[1],
        "q_default": jnp.asarray(q, other.q_default.dtype),
    }


def _cross_pairs(model: Model, old: int, collide_with: bool | Iterable[str]) -> list[tuple[int, int]]:
    """Pairs between the geoms ``< old`` (the first model's) and the others, of the combined ``model``."""
    if collide_with is True:
        candidates, explicit = range(old), False
    elif collide_with is False:
        return []
    elif isinstance(collide_with, (str, bytes)) or not isinstance(collide_with, Iterable):
        raise ArgumentError(f"collide_with must be True, False or a list of geom names, got {collide_with!r}")
    else:
        candidates, explicit = sorted({geom_index(model, n) for n in collide_with}), True
        for g in candidates:
            if g >= old:
                raise ArgumentError(f"collide_with: geom {model.geom_names[g]!r} is not a geom of the model")
    pairs = []
    for i in candidates:
        for j in range(old, model.ng):
            bi, bj = model.geom_body[i], model.geom_body[j]
            if not explicit and (bi == bj or adjacent_bodies(model, bi, bj)):
                continue
            pairs.append((i, j))
    check_pairs(model, pairs)
    return pairs


def _joined_hulls(model: Model, other: Model) -> dict:
    """``mesh_vertices`` and ``mesh_planes`` of both models, the narrower padded to the wider
    (:func:`jaxmor.io.mesh.widened`)."""
    width = max(model.mesh_vertices.shape[1], other.mesh_vertices.shape[1])
    depth = max(model.mesh_planes.shape[1], other.mesh_planes.shape[1])
    dtype = model.mesh_vertices.dtype
    parts = [
        widened(np.asarray(m.mesh_vertices), np.asarray(m.mesh_planes), m.mesh_vertex_count, width, depth)
        for m in (model, other)
    ]
    return {
        "mesh_vertices": jnp.asarray(np.concatenate([parts[0][0], parts[1][0]]), dtype),
        "mesh_planes": jnp.asarray(np.concatenate([parts[0][1], parts[1][1]]), dtype),
    }


def combine(
    model: Model,
    other: Model,
    *,
    prefix: str = "",
    position: ArrayLike = (0.0, 0.0, 0.0),
    orientation: ArrayLike = (1.0, 0.0, 0.0, 0.0),
    collide_with: bool | Iterable[str] = True,
) -> Model:
    """A copy of ``model`` with everything of ``other`` added after its own (module docstring).

    ``other``'s bodies, links, geoms, joints, velocities, DC-motor and affine actuators and contact pairs
    follow ``model``'s, their names prefixed with ``prefix`` and their indices shifted. ``other`` is placed
    by the pose ``(position, orientation)``: its free bodies' default coordinates (``Model.q_default``) and
    whatever it welds to the world (a fixed base's first joints, links and geoms of its ``world``) are moved
    by it. The result keeps ``model``'s name, source, options (time step, gravity, solver sweeps, friction
    rule), ground (its height field included) and battery; ``other``'s are dropped (its geoms touch ``model``'s
    ground if there is one).

    Args:
        model: the first model (not batched).
        other: the model to add (not batched); its leaves are cast to ``model``'s dtypes.
        prefix: put before every name of ``other`` (bodies and links, joints, geoms, actuators).
        position: (3,) the translation of ``other``'s world frame in ``model``'s [m].
        orientation: (4,) its rotation, a quaternion ``w x y z`` (normalized here).
        collide_with: ``True``: contact pairs between ``other``'s geoms and every geom of ``model`` they can
            collide with (module docstring); ``False``: none; a list of geom names of ``model``: those only.

    Returns:
        The combined model: ``nq``, ``nv``, the bodies, links, geoms and actuators are the sums.

    Raises:
        ArgumentError: a name of ``other`` (prefixed) that ``model`` has (the message names it), a pose of
            the wrong shape or not finite, a zero quaternion, or a bad ``collide_with``; either model has a
            learned residual (its network is the model's own: set it on the combined model).
    """
    if not isinstance(model, Model) or not isinstance(other, Model):
        raise ArgumentError(f"combine needs two Models, got {type(model).__name__} and {type(other).__name__}")
    if not isinstance(prefix, str):
        raise ArgumentError(f"prefix must be a str, got {prefix!r}")
    translation, quat, rotation = _pose(position, orientation)
    _check_names(model, other, prefix)
    if model.actuators.residual.enabled or other.actuators.residual.enabled:
        raise ArgumentError(
            "combine: a model with a learned residual (with_residual) cannot be combined; set it on the combined model"
        )
    fields = _joined_structure(model, other, prefix, (translation, quat, rotation))
    placed = _placed(other, translation, quat, rotation)
    fields["keyframes"] = _keyframes(model, other, placed)
    fields.update(_joined_leaves(model, other, placed, skip=fields))
    combined = Model(**fields)
    pairs = _cross_pairs(combined, model.ng, collide_with)
    combined = refit_window(combined.replace(contact_pairs=combined.contact_pairs + tuple(pairs)))
    return with_geom_grids(combined) if model.terrain or other.terrain else binned(combined)


def _shift(indices: tuple[int, ...], by: int) -> tuple[int, ...]:
    """Indices moved by ``by``; negative ones (none, the world) kept."""
    return tuple(i + by if i >= 0 else i for i in indices)


def _joined_structure(model: Model, other: Model, prefix: str, pose: tuple) -> dict:
    """The combined model's static fields (names, topology, indices), sub-models and kept options.

    ``pose`` is ``other``'s placement: (translation, quaternion, rotation matrix).
    """
    translation, quat, rotation = pose
    nb, nl, ng = model.nb, model.nl, model.ng
    parent = model.body_parent + _shift(other.body_parent, nb)
    kinds = model.body_joint_type + other.body_joint_type
    fields = dict(topology_tables(parent, kinds))
    fields.update({f: getattr(model, f) for f in _KEPT})
    fields.update({f: getattr(model, f) for f, leaf in declared_leaves(Model).items() if leaf.dims == ()})
    fields.update(
        body_names=model.body_names + tuple(prefix + n for n in other.body_names),
        body_parent=parent,
        body_joint_type=kinds,
        body_joint_name=model.body_joint_name + tuple(prefix + n if n else n for n in other.body_joint_name),
        joint_names=model.joint_names + tuple(prefix + n for n in other.joint_names),
        link_names=model.link_names + tuple(prefix + n for n in other.link_names),
        link_body=model.link_body + _shift(other.link_body, nb),
        geom_type=model.geom_type + other.geom_type,
        geom_link=model.geom_link + _shift(other.geom_link, nl),
        geom_names=model.geom_names + tuple(prefix + n for n in other.geom_names),
        geom_body=model.geom_body + _shift(other.geom_body, nb),
        geom_friction_given=model.geom_friction_given + other.geom_friction_given,
        geom_priority=model.geom_priority + other.geom_priority,
        geom_mesh=model.geom_mesh + _shift(other.geom_mesh, model.mesh_vertices.shape[0]),
        geom_ground=model.geom_ground + other.geom_ground,
        mesh_vertex_count=model.mesh_vertex_count + other.mesh_vertex_count,
        mesh_faces=model.mesh_faces + other.mesh_faces,
        mesh_edges=model.mesh_edges + other.mesh_edges,
        **_joined_hulls(model, other),
        mesh_geoms=model.mesh_geoms + tuple((prefix + link, mesh) for link, mesh in other.mesh_geoms),
        urdf_joints=model.urdf_joints + tuple((prefix + n, kind) for n, kind in other.urdf_joints),
        contact_pairs=tuple(terrain_pairs(model))
        + model.contact_pairs
        + tuple((a + ng, b + ng) for a, b in (*terrain_pairs(other), *other.contact_pairs)),
        terrain=(),
        collision_exclude=model.collision_exclude + tuple((a + ng, b + ng) for a, b in other.collision_exclude),
        mocap_links=model.mocap_links + _shift(other.mocap_links, nl),
        actuators=_motors(model.actuators, other.actuators, prefix, model.nv, fields["nv"]),
        affine=_affine(model.affine, other.affine, prefix, (model.nq, model.nv, model.tendons.nt)),
        tendons=combine_tendons(model, other, prefix),
        sites=combine_sites(model, other, prefix, rotation, translation),
        sensors=combine_sensors(model, other, prefix),
        equality=combine_equalities(model, other, prefix, quat, translation),
        height_field=model.height_field,
        free_friction_u=model.free_friction_u + tuple(v + model.nv for v in other.free_friction_u),
        max_delay=max(model.max_delay, other.max_delay),
    )
    return fields


def _joined_leaves(model: Model, other: Model, placed: dict, skip: dict) -> dict:
    """The per-body, per-geom, ... array leaves not in ``skip``: ``model``'s then ``other``'s (placed)."""
    leaves = declared_leaves(Model)
    fields = {}
    for f in dataclasses.fields(Model):
        if f.name in skip:
            continue
        mine = getattr(model, f.name)
        if f.name in leaves and leaves[f.name].dims[0] in _CONCATENATED:
            theirs = placed.get(f.name, getattr(other, f.name))
            fields[f.name] = jnp.concatenate([mine, jnp.asarray(theirs, mine.dtype)])
        else:  # a field this editor does not know how to combine: fail loudly rather than guess
            raise NotImplementedError(f"combine: the Model field {f.name!r} has no combination rule")
    return fields
