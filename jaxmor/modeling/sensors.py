"""A description's sites and sensors compiled into the Model's :class:`~jaxmor.types.Sites` and
:class:`~jaxmor.types.Sensors` (by :func:`jaxmor.modeling.builder.build_model`), combined by :func:`jaxmor.combine`,
and added to a loaded model (:func:`with_sensors`)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ModelError
from jaxmor.io.description import SITE_SIZE, RobotDescription
from jaxmor.io.mjcf_document import Document
from jaxmor.io.mjcf_sensors import SUPPORTED, Targets, read_sections
from jaxmor.io.xml import STRING_SOURCE, parse_xml, tag
from jaxmor.model import ball_joints
from jaxmor.types import JointType, Model, Sensors, Sites

#: MuJoCo's default magnetic flux (``<option magnetic>``), world frame.
MUJOCO_MAGNETIC = (0.0, -0.5, 0.0)


def compile_sites(description: RobotDescription, link_names, dtype) -> Sites:
    """The description's sites on their links (``-1``: the world)."""
    index = {name: k for k, name in enumerate(link_names)}
    sites = description.sites
    return Sites(
        rotation=jnp.asarray(np.reshape([s.rotation for s in sites], (len(sites), 3, 3)), dtype),
        translation=jnp.asarray(np.reshape([s.translation for s in sites], (len(sites), 3)), dtype),
        size=jnp.asarray(np.reshape([s.size for s in sites], (len(sites), 3)), dtype),
        names=tuple(s.name for s in sites),
        link=tuple(index.get(s.link, -1) for s in sites),
        shape=tuple(s.shape for s in sites),
    )


def compile_sensors(model: Model, description: RobotDescription) -> Sensors:
    """The description's sensors, their objects resolved into the model's tables (:class:`~jaxmor.types.Sensors`).

    Raises:
        ModelError: a sensor's object is not in the model (named at the sensor's line).
    """
    return resolve_sensors(model, description.sensors, description.source, description.magnetic)


def resolve_sensors(model: Model, sensors: list, source: str, magnetic) -> Sensors:
    """``sensors`` (:class:`~jaxmor.io.description.SensorDescription`, read from ``source``) resolved into the model's
    tables, with the global magnetic flux ``magnetic`` (``None``: MuJoCo's default).

    Raises:
        ModelError: a sensor's object is not in the model (named at the sensor's line).
    """
    dtype = model.body_mass.dtype
    links = {name: k for k, name in enumerate(model.link_names)}
    inertial_link, inertial_translation = [], []

    def resolve(kind: str, name: str, sensor, role: str) -> int:
        tables = {
            "joint": model.joint_names,
            "ball": tuple(model.body_joint_name[b] for b, _, _ in ball_joints(model)),
            "actuator": model.affine.names,
            "site": model.sites.names,
            "tendon": model.tendons.names,
        }
        if kind == "":
            return -1
        if name == "world" and kind in ("xbody", "subtree"):
            return -1
        if kind in tables:
            if name not in tables[kind]:
                raise ModelError(source, sensor.line, f"sensor {sensor.name!r}: no {kind} {name!r}")
            return tables[kind].index(name)
        link = links[name]
        if kind == "xbody":
            return link
        if kind == "subtree":
            return model.link_body[link]
        inertial_link.append(link)
        inertial_translation.append(sensor.inertial[role])
        return len(inertial_link) - 1

    entries = [(resolve(s.obj_type, s.obj_name, s, "obj"), resolve(s.ref_type, s.ref_name, s, "ref")) for s in sensors]
    return Sensors(
        noise=jnp.asarray([s.noise for s in sensors], dtype).reshape(len(sensors)),
        cutoff=jnp.asarray([s.cutoff for s in sensors], dtype).reshape(len(sensors)),
        inertial_translation=jnp.asarray(np.reshape(inertial_translation, (len(inertial_link), 3)), dtype),
        magnetic=jnp.asarray(magnetic or MUJOCO_MAGNETIC, dtype),
        names=tuple(s.name for s in sensors),
        kinds=tuple(s.kind for s in sensors),
        dims=tuple(SUPPORTED[s.kind][1] for s in sensors),
        obj_type=tuple(s.obj_type for s in sensors),
        obj_id=tuple(e[0] for e in entries),
        ref_type=tuple(s.ref_type for s in sensors),
        ref_id=tuple(e[1] for e in entries),
        inertial_link=tuple(inertial_link),
    )


def combine_sites(model: Model, other: Model, prefix: str, rotation, translation) -> Sites:
    """``model``'s sites, then ``other``'s (names prefixed, links shifted, cast to ``model``'s dtype); ``other``'s
    sites on its world are moved by the pose ``(rotation (3, 3), translation (3,) [m])`` it is placed at."""
    a, b = model.sites, other.sites
    dtype = a.rotation.dtype
    world = np.array([k < 0 for k in b.link], dtype=bool)[:, None]
    place_r, place_p = jnp.asarray(rotation, dtype), jnp.asarray(translation, dtype)
    b_r = b.rotation.astype(dtype)
    b_p = b.translation.astype(dtype)
    b_r = jnp.where(world[:, :, None], jnp.einsum("ij,sjk->sik", place_r, b_r), b_r)
    b_p = jnp.where(world, place_p + b_p @ place_r.T, b_p)
    return Sites(
        rotation=jnp.concatenate([a.rotation, b_r]),
        translation=jnp.concatenate([a.translation, b_p]),
        size=jnp.concatenate([a.size, b.size.astype(dtype)]),
        names=a.names + tuple(prefix + n for n in b.names),
        link=a.link + tuple(k + model.nl if k >= 0 else k for k in b.link),
        shape=a.shape + b.shape,
    )


def combine_sensors(model: Model, other: Model, prefix: str) -> Sensors:
    """``model``'s sensors, then ``other``'s: names prefixed, objects shifted to the combined tables; ``model``'s
    magnetic flux is kept."""
    a, b = model.sensors, other.sensors
    shift = {
        "joint": model.nj,
        "ball": len(ball_joints(model)),
        "actuator": model.nu,
        "site": len(model.sites.names),
        "xbody": model.nl,
        "body": len(a.inertial_link),
        "subtree": model.nb,
        "tendon": model.tendons.nt,
        "": 0,
    }

    # ``other``'s world subtree is no subtree of the combined tree: such a sensor is left out, with a warning.
    keep = [not (k == "subtree" and i < 0) for k, i in zip(b.obj_type, b.obj_id, strict=True)]
    if not all(keep):
        left = [n for n, k in zip(b.names, keep, strict=True) if not k]
        warnings.warn(f"combine: {other.name}'s sensor(s) of its world's subtree are left out: {left}", stacklevel=3)
    b = _select(b, np.flatnonzero(keep))
    b = b.replace(
        names=tuple(prefix + n for n in b.names),
        inertial_link=tuple(k + model.nl if k >= 0 else k for k in b.inertial_link),
    )
    return _append(a, b, shift)


def _select(s: Sensors, rows: np.ndarray) -> Sensors:
    """The sensors of ``rows``, in order (their inertial frames kept whole)."""
    static = {f: tuple(getattr(s, f)[i] for i in rows) for f in ("names", "kinds", "dims", "obj_type", "obj_id")}
    static |= {f: tuple(getattr(s, f)[i] for i in rows) for f in ("ref_type", "ref_id")}
    return s.replace(noise=s.noise[rows], cutoff=s.cutoff[rows], **static)


def with_sensors(model: Model, sensors: str | os.PathLike) -> Model:
    """``model`` with more sensors, written as MuJoCo's: a ``<sensor>`` element (XML text, or a file holding one)
    whose children are read as in an MJCF file (``docs/sensors.md``: the kinds, their objects, ``noise`` and
    ``cutoff``, what is skipped with a warning). Their objects are the model's: its joints, affine actuators,
    sites and links (a link is MJCF's body: ``objtype="xbody"``, a subtree's ``body=``).

    A URDF has no sites: where a sensor names a site the model does not have, but a link of that name, the link's
    frame is the site (a named frame, such as an ``imu_link`` on a fixed joint): it is added to ``model.sites``
    under the link's name. The new sensors follow the model's own in ``model.sensors`` (an unnamed one is
    ``sensor<i>``, ``i`` its index there); the magnetic flux stays the model's.

    Args:
        model: the model.
        sensors: the ``<sensor>`` element, as XML text or a file's path.

    Returns:
        The model with the sensors added (:func:`jaxmor.read_sensors` reads them).

    Raises:
        ModelError: malformed XML, a root that is not ``<sensor>``, an unknown sensor, object or attribute, a name
            the model's sensors already use, an inertial frame (``objtype="body"``: a loaded model keeps none), or a
            value MuJoCo refuses; with the text's file and line.
    """
    root, source = parse_xml(sensors)
    main_dir = None if source == STRING_SOURCE else Path(source).resolve().parent
    doc = Document(root, [source], main_dir, None)
    if tag(root) != "sensor":
        raise doc.error(root, f"the root element is <{tag(root)}>, not <sensor>")
    found = read_sections(doc, [root], _model_targets(model), taken=model.sensors.names, stacklevel=3)
    model = _with_link_sites(model, found)
    added = resolve_sensors(model, found, source, None)
    # Resolved on the same model: only the inertial frames' indices move.
    return model.replace(sensors=_append(model.sensors, added, {"body": len(model.sensors.inertial_link)}))


def _model_targets(model: Model) -> Targets:
    """What a sensor added to a loaded model may name (:func:`with_sensors`)."""
    slide = [model.body_joint_type[model.dof_body[u]] == JointType.PRISMATIC for u in model.joint_u]
    joints = {n: "slide" if s else "hinge" for n, s in zip(model.joint_names, slide, strict=True)}
    joints.update({model.body_joint_name[b]: "ball" for b, _, _ in ball_joints(model)})
    free = [b for b in range(model.nb) if model.body_joint_type[b] == JointType.FREE]
    joints.update({model.body_joint_name[b]: "free" for b in free})
    motors = model.actuators
    return Targets(
        joints=joints,
        bodies={"world"} | set(model.link_names),
        jointed={"world"} | set(model.body_names),
        sites={
            n: model.link_names[k] if k >= 0 else "world"
            for n, k in zip(model.sites.names, model.sites.link, strict=True)
        }
        | {n: n for n in model.link_names if n not in model.sites.names},
        links=None,
        affine=set(model.affine.names),
        actuators=set(model.affine.names) | set(motors.names),
        motor_joints=set(motors.joints),
        tendons=set(model.tendons.names),
    )


def _with_link_sites(model: Model, sensors: list) -> Model:
    """``model`` with a site at each link that ``sensors`` name as a site and that is not one (its frame)."""
    named = [s.obj_name for s in sensors if s.obj_type == "site"]
    named += [s.ref_name for s in sensors if s.ref_type == "site"]
    links = [n for n in dict.fromkeys(named) if n not in model.sites.names]
    if not links:
        return model
    a, dtype = model.sites, model.body_mass.dtype
    return model.replace(
        sites=Sites(
            rotation=jnp.concatenate([a.rotation, jnp.tile(jnp.eye(3, dtype=dtype), (len(links), 1, 1))]),
            translation=jnp.concatenate([a.translation, jnp.zeros((len(links), 3), dtype)]),
            size=jnp.concatenate([a.size, jnp.full((len(links), 3), SITE_SIZE, dtype)]),
            names=a.names + tuple(links),
            link=a.link + tuple(model.link_names.index(n) for n in links),
            shape=a.shape + ("sphere",) * len(links),
        )
    )


def _append(a: Sensors, b: Sensors, shift: dict[str, int]) -> Sensors:
    """``a``'s sensors, then ``b``'s, whose objects and references of each type move by ``shift[type]`` (``0``
    where the type is missing)."""

    def moved(kinds, ids):
        return tuple(i + shift.get(k, 0) if i >= 0 else i for k, i in zip(kinds, ids, strict=True))

    def cat(x, y):
        return jnp.concatenate([x, y.astype(x.dtype)])

    return Sensors(
        noise=cat(a.noise, b.noise),
        cutoff=cat(a.cutoff, b.cutoff),
        inertial_translation=cat(a.inertial_translation, b.inertial_translation),
        magnetic=a.magnetic,
        names=a.names + b.names,
        kinds=a.kinds + b.kinds,
        dims=a.dims + b.dims,
        obj_type=a.obj_type + b.obj_type,
        obj_id=a.obj_id + moved(b.obj_type, b.obj_id),
        ref_type=a.ref_type + b.ref_type,
        ref_id=a.ref_id + moved(b.ref_type, b.ref_id),
        inertial_link=a.inertial_link + b.inertial_link,
    )
