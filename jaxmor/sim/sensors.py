"""The sensors of a model read at a State (:func:`read_sensors`), as MuJoCo's ``sensordata`` after ``mj_forward``.

Every reading is a function of the model and the state (``q``, ``u``, ``ctrl``, ``time``; the accelerometer also
of the step's constraint impulses, from :func:`jaxmor.sim.pipeline.stages`), so it is pure: jit-, vmap- and
grad-able. The kinds, their definitions and units, and where they differ from MuJoCo, are
in ``docs/sensors.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.affine import affine_actuator_force
from jaxmor.math import quat_multiply, safe_div, safe_sqrt
from jaxmor.model import ball_joints
from jaxmor.sim.constraint import velocity_change
from jaxmor.sim.dynamics import forward_dynamics
from jaxmor.sim.forces import actuator_joint_force, spring_force
from jaxmor.sim.kinematics import ancestor_mask, dof_axes, kinematics, link_poses, relative_point_jacobians
from jaxmor.sim.pipeline import stages
from jaxmor.sim.tendons import actuator_coordinates, tendon_jacobian, tendon_lengths
from jaxmor.sim.touch import touch_force
from jaxmor.sim.wrench import subtree_wrench
from jaxmor.state import check_state
from jaxmor.types import Model, State

#: The kinds whose reading is an axis or a quaternion: a cutoff never applies to them.
_UNCLAMPED = ("framequat", "framexaxis", "frameyaxis", "framezaxis", "ballquat")


def rotation_to_quat(rotation: jax.Array) -> jax.Array:
    """(4,) the unit quaternion ``w x y z`` of a (3, 3) rotation, ``w >= 0`` (Shepperd's method: the largest of
    the four candidates' squares is divided by, so the result and its derivatives are finite everywhere)."""
    r = rotation
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    squares = jnp.stack([1 + trace, 1 + 2 * r[0, 0] - trace, 1 + 2 * r[1, 1] - trace, 1 + 2 * r[2, 2] - trace])
    k = jnp.argmax(squares)
    big = 0.5 * safe_sqrt(squares[k])
    d = 0.25 / jnp.where(big > 0, big, 1.0)
    candidates = jnp.stack(
        [
            jnp.stack([big, (r[2, 1] - r[1, 2]) * d, (r[0, 2] - r[2, 0]) * d, (r[1, 0] - r[0, 1]) * d]),
            jnp.stack([(r[2, 1] - r[1, 2]) * d, big, (r[0, 1] + r[1, 0]) * d, (r[0, 2] + r[2, 0]) * d]),
            jnp.stack([(r[0, 2] - r[2, 0]) * d, (r[0, 1] + r[1, 0]) * d, big, (r[1, 2] + r[2, 1]) * d]),
            jnp.stack([(r[1, 0] - r[0, 1]) * d, (r[0, 2] + r[2, 0]) * d, (r[1, 2] + r[2, 1]) * d, big]),
        ]
    )
    quat = candidates[k]
    quat = quat / jnp.linalg.norm(quat)
    return jnp.where(quat[0] < 0, -quat, quat)


class _Reading:
    """What the sensors of one state share: the body and link poses, and (when first asked) the bodies' world
    velocities."""

    def __init__(self, model: Model, state: State):
        self.model, self.state = model, state
        self.bodies = kinematics(model, state.q).body
        self.links = link_poses(model, self.bodies)
        self._velocities = None
        self._stages = None
        self._acceleration = None

    def stages(self):
        """The step's stages at the state (:func:`jaxmor.sim.pipeline.stages`), computed once."""
        if self._stages is None:
            self._stages = stages(self.model, self.state)
        return self._stages

    def acceleration(self) -> jax.Array:
        """(nv,) ``du/dt`` at the state (:func:`acceleration`), computed once."""
        if self._acceleration is None:
            self._acceleration = acceleration(self.model, self.state, self.stages())
        return self._acceleration

    def velocities(self) -> tuple[jax.Array, jax.Array]:
        """``(v (nb, 3), w (nb, 3))``: the world velocity of each body's origin and its world angular velocity."""
        if self._velocities is None:
            model, u, bodies = self.model, self.state.u, self.bodies
            world, each = np.full(model.nb, -1), np.arange(model.nb)
            jacobians = relative_point_jacobians(model, bodies, bodies.position, world, each)  # (nb, nv, 3)
            linear = jnp.einsum("bdk,d->bk", jacobians, u)
            axis, _ = dof_axes(model, bodies)
            mask = jnp.asarray(ancestor_mask(model)[1:], u.dtype)
            angular = (mask * jnp.asarray(model.dof_rotational, u.dtype)) @ (axis * u[:, None])
            self._velocities = (linear, angular)
        return self._velocities

    def frame(self, kind: str, index: int) -> tuple[int, jax.Array, jax.Array]:
        """``(body, rotation (3, 3), position (3,))`` of a site, a link's frame (``"xbody"``) or an inertial frame
        (``"body"``, its rotation the link's); body ``-1`` is the world."""
        model, dtype = self.model, self.state.q.dtype
        if kind == "site":
            sites = model.sites
            link, local_r, local_p = sites.link[index], sites.rotation[index], sites.translation[index]
        elif kind == "xbody":
            link, local_r, local_p = index, jnp.eye(3), jnp.zeros(3)
        else:
            sensors = model.sensors
            link, local_r, local_p = sensors.inertial_link[index], jnp.eye(3), sensors.inertial_translation[index]
        local_r, local_p = jnp.asarray(local_r, dtype), jnp.asarray(local_p, dtype)
        if link < 0:
            return -1, local_r, local_p
        r, p = self.links.rotation[link], self.links.position[link]
        return model.link_body[link], r @ local_r, p + r @ local_p

    def point_velocity(self, body: int, point: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(v, w)``: the world velocity of a point fixed on a body and the body's angular velocity."""
        if body < 0:
            return jnp.zeros(3, point.dtype), jnp.zeros(3, point.dtype)
        v, w = self.velocities()
        return v[body] + jnp.cross(w[body], point - self.bodies.position[body]), w[body]


def coordinate_rate(model: Model, q: jax.Array, u: jax.Array) -> jax.Array:
    """(nq,) ``dq/dt`` of the velocities ``u``: a free joint's quaternion rate ``0.5 [0, w] * quat`` (``w`` in the
    world frame), a ball joint's ``0.5 quat * [0, w]`` (``w`` in the body frame), every other coordinate's rate its
    velocity."""
    rate = jnp.zeros_like(q)
    joints_q, joints_u = np.array(model.joint_q, dtype=np.int32), np.array(model.joint_u, dtype=np.int32)
    rate = rate.at[joints_q].set(u[joints_u])
    for s, v in zip(model.free_q, model.free_u, strict=True):
        spin = jnp.concatenate([jnp.zeros(1, u.dtype), u[v + 3 : v + 6]])
        rate = rate.at[s : s + 3].set(u[v : v + 3]).at[s + 3 : s + 7].set(0.5 * quat_multiply(spin, q[s + 3 : s + 7]))
    for _, s, v in ball_joints(model):
        spin = jnp.concatenate([jnp.zeros(1, u.dtype), u[v : v + 3]])
        rate = rate.at[s : s + 4].set(0.5 * quat_multiply(q[s : s + 4], spin))
    return rate


def acceleration(model: Model, state: State, run=None) -> jax.Array:
    """(nv,) ``du/dt`` at a state, as MuJoCo's ``qacc`` after ``mj_forward``: the forward dynamics of the affine
    actuators, the joint springs and dampers and the external force, plus the step's constraint impulses (contacts,
    limits, joint friction) over the time step. Without active constraints it equals MuJoCo's; the DC motors, the
    built-in PD and the feed-forward force are not counted. ``run``: the step's stages at the state, if computed."""
    q, u = state.q, state.u
    dtype = u.dtype
    tau = (
        actuator_joint_force(model, state, jnp.zeros_like(u))
        + spring_force(model, q)
        - jnp.asarray(model.dof_damping, dtype) * u
        + state.external_force
    )
    run = stages(model, state) if run is None else run
    h = jnp.asarray(model.opt.timestep, dtype)
    return forward_dynamics(model, q, u, tau) + velocity_change(run.constraints, run.impulses) / h


def _accelerometer(r: _Reading, i: int) -> jax.Array:
    """The accelerometer: the site's acceleration minus gravity, in the site's frame [m/s^2]."""
    model, state, index = r.model, r.state, r.model.sensors.obj_id[i]

    def velocity(q, u):
        reading = _Reading(model, state.replace(q=q, u=u))
        body, _, position = reading.frame("site", index)
        return reading.point_velocity(body, position)[0]

    tangents = (coordinate_rate(model, state.q, state.u), r.acceleration())
    _, linear = jax.jvp(velocity, (state.q, state.u), tangents)
    _, rotation, _ = r.frame("site", index)
    return rotation.T @ (linear - jnp.asarray(model.opt.gravity, linear.dtype))


def _touch_reading(r: _Reading, i: int) -> jax.Array:
    """The touch sensor (1,): the normal forces of the step's contacts in the site's zone [N]
    (:func:`jaxmor.sim.touch.touch_force`)."""
    site = r.model.sensors.obj_id[i]
    body, rotation, position = r.frame("site", site)
    return touch_force(r.model, r.stages(), site, body, rotation, position)[None]


def _wrench_reading(r: _Reading, kind: str, i: int) -> jax.Array:
    """A force [N] or torque [Nm] sensor: the wrench the site's body's parent exerts on its subtree through the
    joint, at the site and in its frame (MuJoCo's ``cfrc_int``): the subtree's rate of momentum less gravity and
    the contact forces on it."""
    model, state = r.model, r.state
    body, rotation, position = r.frame("site", model.sensors.obj_id[i])
    inside = jnp.asarray(np.isin(np.arange(model.nb), _subtree(model, body)))
    accelerations = jax.jvp(
        lambda q, u: _mass_motion(model, state.replace(q=q, u=u)),
        (state.q, state.u),
        (coordinate_rate(model, state.q, state.u), r.acceleration()),
    )
    force, torque = subtree_wrench(model, r.stages(), inside, position, *accelerations)
    return rotation.T @ (force if kind == "force" else torque)


def _mass_motion(model: Model, state: State) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(centres (nb, 3), rotations (nb, 3, 3), centre velocities (nb, 3), angular velocities (nb, 3))`` of the
    bodies, world frame."""
    r = _Reading(model, state)
    v, w = r.velocities()
    rotation, origin = r.bodies.rotation, r.bodies.position
    centre = origin + jnp.einsum("bij,bj->bi", rotation, jnp.asarray(model.body_com, origin.dtype))
    return centre, rotation, v + jnp.cross(w, centre - origin), w


def _subtree(model: Model, body: int) -> np.ndarray:
    """The bodies in the subtree of ``body`` (``-1``: every body), in order."""
    inside = np.zeros(model.nb, dtype=bool)
    for b, parent in enumerate(model.body_parent):
        inside[b] = body < 0 or b == body or (parent >= 0 and inside[parent])
    return np.flatnonzero(inside)


def _subtree_reading(r: _Reading, kind: str, body: int) -> jax.Array:
    """A subtree's centre of mass (``subtreecom``) [m], its velocity (``subtreelinvel``) [m/s], or its angular
    momentum about it (``subtreeangmom``) [kg m^2/s], world frame."""
    model, dtype = r.model, r.state.q.dtype
    members = _subtree(model, body)
    mass = jnp.asarray(model.body_mass, dtype)[members]
    rotation, origin = r.bodies.rotation[members], r.bodies.position[members]
    com = origin + jnp.einsum("bij,bj->bi", rotation, jnp.asarray(model.body_com, dtype)[members])
    total = jnp.sum(mass)
    centre = safe_div(jnp.sum(mass[:, None] * com, axis=0), total)
    if kind == "subtreecom":
        return centre
    v, w = r.velocities()
    v_com = v[members] + jnp.cross(w[members], com - origin)
    if kind == "subtreelinvel":
        return safe_div(jnp.sum(mass[:, None] * v_com, axis=0), total)
    inertia = rotation @ jnp.asarray(model.body_inertia, dtype)[members] @ jnp.swapaxes(rotation, -1, -2)
    spin = jnp.einsum("bij,bj->bi", inertia, w[members])
    # Sum m (c - C) x V is zero: the subtree's own velocity drops out of the orbital term.
    return jnp.sum(spin + mass[:, None] * jnp.cross(com - centre, v_com), axis=0)


def _frame_reading(r: _Reading, kind: str, i: int) -> jax.Array:
    """A frame sensor's reading, in the world frame or its reference's."""
    s = r.model.sensors
    body, rotation, position = r.frame(s.obj_type[i], s.obj_id[i])
    ref = s.ref_type[i]
    ref_body, ref_r, ref_p = r.frame(ref, s.ref_id[i]) if ref else (-1, None, None)
    if kind == "framepos":
        return position if not ref else ref_r.T @ (position - ref_p)
    if kind == "framequat":
        return rotation_to_quat(rotation if not ref else ref_r.T @ rotation)
    if kind in ("framexaxis", "frameyaxis", "framezaxis"):
        axis = rotation[:, "xyz".index(kind[5])]
        return axis if not ref else ref_r.T @ axis
    v, w = r.point_velocity(body, position)
    if ref:
        ref_v, ref_w = r.point_velocity(ref_body, ref_p)
        v = ref_r.T @ (v - ref_v - jnp.cross(ref_w, position - ref_p))
        w = ref_r.T @ (w - ref_w)
    return v if kind == "framelinvel" else w


def _site_reading(r: _Reading, kind: str, i: int) -> jax.Array:
    """A gyro [rad/s], velocimeter [m/s] or magnetometer reading, in the site's frame."""
    body, rotation, position = r.frame("site", r.model.sensors.obj_id[i])
    if kind == "magnetometer":
        return rotation.T @ jnp.asarray(r.model.sensors.magnetic, rotation.dtype)
    v, w = r.point_velocity(body, position)
    return rotation.T @ (w if kind == "gyro" else v)


def _scalar_reading(r: _Reading, kind: str, i: int) -> jax.Array:
    """A joint's or an affine actuator's reading, or the clock: shape (1,); a ball joint's: its normalized quaternion
    (4,) or its body-frame angular velocity (3,)."""
    model, state = r.model, r.state
    index = model.sensors.obj_id[i]
    if kind == "clock":
        return state.time[None]
    if kind in ("jointpos", "jointvel"):
        return (state.q[model.joint_q[index]] if kind == "jointpos" else state.u[model.joint_u[index]])[None]
    if kind in ("ballquat", "ballangvel"):
        _, s, v = ball_joints(model)[index]
        return state.q[s : s + 4] / jnp.linalg.norm(state.q[s : s + 4]) if kind == "ballquat" else state.u[v : v + 3]
    if kind in ("tendonpos", "tendonvel"):
        if kind == "tendonpos":
            return tendon_lengths(model, state.q)[index][None]
        return (tendon_jacobian(model, state.u.dtype)[index] @ state.u)[None]
    if kind == "jointactuatorfrc":
        return actuator_joint_force(model, state, jnp.zeros_like(state.u))[model.joint_u[index]][None]
    act = model.affine
    q_joint, v_joint = actuator_coordinates(model, state.q, state.u)
    gear = jnp.asarray(act.gear, state.q.dtype)[index]
    if kind == "actuatorpos":
        return (gear * q_joint[index])[None]
    if kind == "actuatorvel":
        return (gear * v_joint[index])[None]
    force = affine_actuator_force(act, state.ctrl, q_joint, v_joint)
    if kind == "tendonactuatorfrc":
        pulls = np.array([t == index for t in act.tendon] or [False] * act.nu, dtype=bool)
        return jnp.sum(jnp.where(pulls, force, 0.0))[None]
    return force[index][None]


def read_sensors(model: Model, state: State) -> dict[str, jax.Array]:
    """Every sensor's reading at a state, by its name, as MuJoCo's ``sensordata`` after ``mj_forward``
    (``docs/sensors.md``: each kind's definition and unit, and where jaxmor differs).

    An accelerometer runs the step's stages for their constraint impulses (:func:`acceleration`); the other kinds
    need only the kinematics. The readings carry no noise (``model.sensors.noise`` is metadata, as in MuJoCo); a
    positive ``model.sensors.cutoff`` clamps a reading to ``[-cutoff, cutoff]`` (never a quaternion or an axis). Pure:
    jit-, vmap- (over states and models) and grad-able.

    Args:
        model: the model (its sensors: ``model.sensors``, MJCF ``<sensor>``).
        state: one world's state.

    Returns:
        A dict from each sensor's name, in the model's order, to its reading: shape ``(dim,)`` (``(1,)`` for a
        joint, an actuator or the clock, ``(3,)`` for a vector, ``(4,)`` for a quaternion ``w x y z``), in the
        state's dtype.

    Raises:
        ArgumentError: the state does not fit the model.
    """
    check_state(model, state, "read_sensors")
    s = model.sensors
    if not s.names:
        return {}
    r = _Reading(model, state)
    out = {}
    for i, (name, kind) in enumerate(zip(s.names, s.kinds, strict=True)):
        if s.obj_type[i] == "subtree":
            value = _subtree_reading(r, kind, s.obj_id[i])
        elif kind.startswith("frame"):
            value = _frame_reading(r, kind, i)
        elif kind == "accelerometer":
            value = _accelerometer(r, i)
        elif kind == "touch":
            value = _touch_reading(r, i)
        elif kind in ("force", "torque"):
            value = _wrench_reading(r, kind, i)
        elif kind in ("gyro", "velocimeter", "magnetometer"):
            value = _site_reading(r, kind, i)
        else:
            value = _scalar_reading(r, kind, i)
        value = value.astype(state.q.dtype)
        if kind not in _UNCLAMPED:
            cutoff = jnp.asarray(s.cutoff, value.dtype)[i]
            value = jnp.where(cutoff > 0, jnp.clip(value, -cutoff, cutoff), value)
        out[name] = value
    return out
