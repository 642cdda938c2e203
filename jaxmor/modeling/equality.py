"""A description's equality constraints compiled into the Model's :class:`~jaxmor.types.Equalities`.

MuJoCo's compiler is followed: a ``connect`` by bodies keeps its anchor on body1 and gets, on body2, the point that
coincides with it at the reference configuration (MuJoCo's ``qpos0``, jaxmor's ``Model.q_default``); a ``weld``
by bodies without ``relpose`` keeps its anchor on body2, gets the coinciding point on body1 and the two bodies'
relative orientation there; with ``relpose``, body1's point is the relpose's position and the orientation its
quaternion; a constraint by sites takes the two sites' origins and orientations. Points and orientations given
on an MJCF body are moved into the frame of the jaxmor body it was merged into, or kept in a mocap body's frame
(which the State places). A joint coupling keeps its two joints' reference positions.
"""

from __future__ import annotations

import numpy as np
from jax import numpy as jnp

from jaxmor.errors import ModelError
from jaxmor.io.description import JointEquality, PointEquality, RobotDescription
from jaxmor.io.mjcf_geometry import quat_to_rotation, rotation_to_quat
from jaxmor.sim.kinematics import forward_kinematics
from jaxmor.types import Equalities, Model, empty_equalities


def compile_equalities(model: Model, description: RobotDescription) -> Equalities:
    """The description's equality constraints on ``model`` (points first, then joint couplings).

    Raises:
        ModelError: a constraint naming a body, site or joint the model does not have, or a joint that is not
            a hinge or a slide (file and line).
    """
    points = [e for e in description.equalities if isinstance(e, PointEquality)]
    joints = [e for e in description.equalities if isinstance(e, JointEquality)]
    if not points and not joints:
        return empty_equalities()
    dtype = model.body_mass.dtype
    frames = _Frames(model, description)
    compiled = [frames.point(e) for e in points]
    q0 = np.asarray(model.q_default, np.float64)
    couplings = [_coupling(model, description, e, q0) for e in joints]
    return Equalities(
        point_anchor=jnp.asarray(np.reshape([c[1] for c in compiled], (len(points), 2, 3)), dtype),
        point_frame=jnp.asarray(np.reshape([c[2] for c in compiled], (len(points), 2, 4)), dtype),
        point_torque_scale=jnp.asarray([e.torque_scale for e in points], dtype),
        joint_polycoef=jnp.asarray(np.reshape([e.polycoef for e in joints], (len(joints), 5)), dtype),
        joint_reference=jnp.asarray(np.reshape([c[2] for c in couplings], (len(joints), 2)), dtype),
        active=jnp.asarray([float(e.active) for e in points] + [float(e.active) for e in joints], dtype),
        names=tuple(e.name for e in points) + tuple(e.name for e in joints),
        point_body=tuple(c[0] for c in compiled),
        point_weld=tuple(e.kind == "weld" for e in points),
        point_rotation_rows=tuple(e.kind == "weld" and e.torque_scale > 0 for e in points),
        point_mocap=tuple(c[3] for c in compiled),
        joint_q=tuple(c[0] for c in couplings),
        joint_u=tuple(c[1] for c in couplings),
    )


class _Frames:
    """Links and sites of a model at its reference configuration, for turning MJCF anchors into body points."""

    def __init__(self, model: Model, description: RobotDescription):
        self.model, self.description = model, description
        self.links = {name: i for i, name in enumerate(model.link_names)}
        self.sites = {name: i for i, name in enumerate(model.sites.names)}
        self.mocap = {link: m for m, link in enumerate(model.mocap_links)}
        poses = forward_kinematics(model, jnp.asarray(model.q_default))
        self.rotation = np.asarray(poses.rotation, np.float64)  # (nl, 3, 3) world poses at q_default
        self.position = np.asarray(poses.position, np.float64)

    def _error(self, e, message: str) -> ModelError:
        return ModelError(self.description.source, e.line, message)

    def link(self, e, name: str | None) -> int:
        """The link index of an MJCF body (``-1``: the world)."""
        if name is None:
            return -1
        if name not in self.links:
            raise self._error(e, f"equality constraint {e.name or e.kind!r}: no body {name!r}")
        return self.links[name]

    def world(self, link: int) -> tuple[np.ndarray, np.ndarray]:
        """A link's world pose at the reference configuration (the world's: identity)."""
        if link < 0:
            return np.eye(3), np.zeros(3)
        return self.rotation[link], self.position[link]

    def in_body(self, link: int, point: np.ndarray, rotation: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
        """A point and an orientation given in a link's frame, in the frame of the body carrying it (a mocap body's
        own frame: they stay)."""
        if link < 0 or link in self.mocap:
            return -1, point, rotation
        body = self.model.link_body[link]
        r = np.asarray(self.model.link_rotation[link], np.float64)
        t = np.asarray(self.model.link_translation[link], np.float64)
        return body, r @ point + t, r @ rotation

    def site(self, e, name: str) -> tuple[int, np.ndarray, np.ndarray]:
        """A site's link, origin and orientation in that link's frame."""
        if name not in self.sites:
            raise self._error(e, f"equality constraint {e.name or e.kind!r}: no site {name!r}")
        i = self.sites[name]
        s = self.model.sites
        return s.link[i], np.asarray(s.translation[i], np.float64), np.asarray(s.rotation[i], np.float64)

    def point(self, e: PointEquality) -> tuple[tuple[int, int], np.ndarray, np.ndarray, tuple[int, int]]:
        """``((body1, body2), anchors (2, 3), frame quaternions (2, 4), (mocap1, mocap2))`` of a connect or weld."""
        if e.site1 is not None:
            (l1, a1, r1), (l2, a2, r2) = self.site(e, e.site1), self.site(e, e.site2)
        else:
            l1, l2 = self.link(e, e.link1), self.link(e, e.link2)
            (rot1, pos1), (rot2, pos2) = self.world(l1), self.world(l2)
            r2 = np.eye(3)
            if e.kind == "connect":
                a1 = e.anchor
                a2 = rot2.T @ (pos1 + rot1 @ a1 - pos2)
                r1 = np.eye(3)
            elif e.relpose is not None:
                a1, a2, r1 = e.relpose[:3], e.anchor, quat_to_rotation(e.relpose[3:])
            else:
                a2 = e.anchor
                a1 = rot1.T @ (pos2 + rot2 @ a2 - pos1)
                r1 = rot1.T @ rot2
        b1, a1, r1 = self.in_body(l1, np.asarray(a1, np.float64), np.asarray(r1, np.float64))
        b2, a2, r2 = self.in_body(l2, np.asarray(a2, np.float64), r2)
        quats = np.stack([rotation_to_quat(r1), rotation_to_quat(r2)])
        return (int(b1), int(b2)), np.stack([a1, a2]), quats, (self.mocap.get(l1, -1), self.mocap.get(l2, -1))


def _coupling(model: Model, description: RobotDescription, e: JointEquality, q0: np.ndarray):
    """``((q1, q2), (u1, u2), (ref1, ref2))`` of a joint coupling (``-1`` and 0 for a missing joint2)."""
    index = {name: i for i, name in enumerate(model.joint_names)}
    out = []
    for name in (e.joint1, e.joint2):
        if name is None:
            out.append((-1, -1, 0.0))
            continue
        if name not in index:
            raise ModelError(
                description.source, e.line, f"equality constraint {e.name or 'joint'!r}: no hinge or slide {name!r}"
            )
        i = index[name]
        out.append((model.joint_q[i], model.joint_u[i], float(q0[model.joint_q[i]])))
    return (out[0][0], out[1][0]), (out[0][1], out[1][1]), (out[0][2], out[1][2])


def combine_equalities(
    model: Model, other: Model, prefix: str, quat: np.ndarray, translation: np.ndarray
) -> Equalities:
    """``model``'s equality constraints, then ``other``'s (:func:`jaxmor.combine`): bodies and coordinates shifted,
    names prefixed, leaves cast to ``model``'s dtype, and what ``other`` fixes to its world (a point or frame on
    body ``-1`` and no mocap body) moved by the pose ``(quat (4,) w x y z, translation (3,) [m])`` it is placed at."""
    a, b = model.equality, other.equality
    dtype = a.point_anchor.dtype
    sides = zip(b.point_body, b.point_mocap, strict=True)
    world = np.array([[body < 0 and m < 0 for body, m in zip(*s, strict=True)] for s in sides], bool).reshape(-1, 2)
    rotation = quat_to_rotation(quat)
    anchor = np.asarray(b.point_anchor, np.float64)
    anchor = np.where(world[:, :, None], anchor @ rotation.T + translation, anchor)
    frame = np.asarray(b.point_frame, np.float64)
    turned = rotation @ np.array([quat_to_rotation(f) for f in frame.reshape(-1, 4)]).reshape(-1, 3, 3)  # (2 k, 3, 3)
    moved = np.array([rotation_to_quat(r) for r in turned]).reshape(frame.shape)
    frame = np.where(world[:, :, None], moved, frame)

    def shift(pairs, by):
        return tuple(tuple(i + by if i >= 0 else i for i in pair) for pair in pairs)

    k_a, k_b = len(a.point_body), len(b.point_body)
    j_a, j_b = k_a + len(a.joint_q), k_b + len(b.joint_q)
    return Equalities(
        point_anchor=jnp.concatenate([a.point_anchor, jnp.asarray(anchor, dtype)]),
        point_frame=jnp.concatenate([a.point_frame, jnp.asarray(frame, dtype)]),
        point_torque_scale=jnp.concatenate([a.point_torque_scale, b.point_torque_scale.astype(dtype)]),
        joint_polycoef=jnp.concatenate([a.joint_polycoef, b.joint_polycoef.astype(dtype)]),
        joint_reference=jnp.concatenate([a.joint_reference, b.joint_reference.astype(dtype)]),
        active=jnp.concatenate(
            [
                a.active[:k_a],
                b.active[:k_b].astype(dtype),
                a.active[k_a:j_a],
                b.active[k_b:j_b].astype(dtype),
                a.active[j_a:],
                b.active[j_b:].astype(dtype),
            ]
        ),
        names=a.names[:k_a]
        + tuple(prefix + n for n in b.names[:k_b])
        + a.names[k_a:j_a]
        + tuple(prefix + n for n in b.names[k_b:j_b])
        + a.names[j_a:]
        + tuple(prefix + n for n in b.names[j_b:]),
        point_body=a.point_body + shift(b.point_body, model.nb),
        point_weld=a.point_weld + b.point_weld,
        point_rotation_rows=a.point_rotation_rows + b.point_rotation_rows,
        point_mocap=a.point_mocap + shift(b.point_mocap, len(model.mocap_links)),
        joint_q=a.joint_q + shift(b.joint_q, model.nq),
        joint_u=a.joint_u + shift(b.joint_u, model.nv),
        tendon_polycoef=jnp.concatenate([a.tendon_polycoef.astype(dtype), b.tendon_polycoef.astype(dtype)]),
        tendon_reference=jnp.concatenate([a.tendon_reference.astype(dtype), b.tendon_reference.astype(dtype)]),
        tendon=a.tendon + shift(b.tendon, model.tendons.nt),
    )
