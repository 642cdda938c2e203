"""A description's sites and sensors compiled into the Model's :class:`~jaxmor.types.Sites` and
:class:`~jaxmor.types.Sensors` (by :func:`jaxmor.build.builder.build_model`), and combined by
:func:`jaxmor.combine`."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ModelError
from jaxmor.io.description import RobotDescription
from jaxmor.io.mjcf_sensors import SUPPORTED
from jaxmor.model import ball_joints
from jaxmor.types import Model, Sensors, Sites

#: MuJoCo's default magnetic flux (``<option magnetic>``), world frame.
MUJOCO_MAGNETIC = (0.0, -0.5, 0.0)


def compile_sites(description: RobotDescription, link_names, dtype) -> Sites:
    """The description's sites on their links (``-1``: the world)."""
    index = {name: k for k, name in enumerate(link_names)}
    sites = description.sites
    return Sites(
        rotation=jnp.asarray(np.reshape([s.rotation for s in sites], (len(sites), 3, 3)), dtype),
        translation=jnp.asarray(np.reshape([s.translation for s in sites], (len(sites), 3)), dtype),
        names=tuple(s.name for s in sites),
        link=tuple(index.get(s.link, -1) for s in sites),
    )


def compile_sensors(model: Model, description: RobotDescription) -> Sensors:
    """The description's sensors, their objects resolved into the model's tables (:class:`~jaxmor.types.Sensors`).

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
        }
        if kind == "":
            return -1
        if name == "world" and kind in ("xbody", "subtree"):
            return -1
        if kind in tables:
            if name not in tables[kind]:
                raise ModelError(description.source, sensor.line, f"sensor {sensor.name!r}: no {kind} {name!r}")
            return tables[kind].index(name)
        link = links[name]
        if kind == "xbody":
            return link
        if kind == "subtree":
            return model.link_body[link]
        inertial_link.append(link)
        inertial_translation.append(sensor.inertial[role])
        return len(inertial_link) - 1

    entries = [
        (resolve(s.obj_type, s.obj_name, s, "obj"), resolve(s.ref_type, s.ref_name, s, "ref"))
        for s in description.sensors
    ]
    sensors = description.sensors
    return Sensors(
        noise=jnp.asarray([s.noise for s in sensors], dtype).reshape(len(sensors)),
        cutoff=jnp.asarray([s.cutoff for s in sensors], dtype).reshape(len(sensors)),
        inertial_translation=jnp.asarray(np.reshape(inertial_translation, (len(inertial_link), 3)), dtype),
        magnetic=jnp.asarray(description.magnetic or MUJOCO_MAGNETIC, dtype),
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
        names=a.names + tuple(prefix + n for n in b.names),
        link=a.link + tuple(k + model.nl if k >= 0 else k for k in b.link),
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
        "": 0,
    }

    def moved(kinds, ids):
        return tuple(i + shift[k] if i >= 0 else i for k, i in zip(kinds, ids, strict=True))

    def cat(x, y):
        return jnp.concatenate([x, y.astype(x.dtype)])

    # ``other``'s world subtree is no subtree of the combined tree: such a sensor is left out, with a warning.
    keep = [not (k == "subtree" and i < 0) for k, i in zip(b.obj_type, b.obj_id, strict=True)]
    if not all(keep):
        left = [n for n, k in zip(b.names, keep, strict=True) if not k]
        warnings.warn(f"combine: {other.name}'s sensor(s) of its world's subtree are left out: {left}", stacklevel=3)
    b = _select(b, np.flatnonzero(keep))
    return Sensors(
        noise=cat(a.noise, b.noise),
        cutoff=cat(a.cutoff, b.cutoff),
        inertial_translation=cat(a.inertial_translation, b.inertial_translation),
        magnetic=a.magnetic,
        names=a.names + tuple(prefix + n for n in b.names),
        kinds=a.kinds + b.kinds,
        dims=a.dims + b.dims,
        obj_type=a.obj_type + b.obj_type,
        obj_id=a.obj_id + moved(b.obj_type, b.obj_id),
        ref_type=a.ref_type + b.ref_type,
        ref_id=a.ref_id + moved(b.ref_type, b.ref_id),
        inertial_link=a.inertial_link + tuple(k + model.nl if k >= 0 else k for k in b.inertial_link),
    )


def _select(s: Sensors, rows: np.ndarray) -> Sensors:
    """The sensors of ``rows``, in order (their inertial frames kept whole)."""
    static = {f: tuple(getattr(s, f)[i] for i in rows) for f in ("names", "kinds", "dims", "obj_type", "obj_id")}
    static |= {f: tuple(getattr(s, f)[i] for i in rows) for f in ("ref_type", "ref_id")}
    return s.replace(noise=s.noise[rows], cutoff=s.cutoff[rows], **static)
