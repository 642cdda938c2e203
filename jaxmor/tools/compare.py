"""The same MJCF model in MuJoCo and in jaxmor, side by side: state conversion and per-quantity differences.

``from jaxmor.tools import compare`` needs the ``mujoco`` package (``pip install 'jaxmor[mujoco]'``); ``import
jaxmor`` never loads it. Typical use::

    import mujoco, jaxmor
    from jaxmor.tools import compare

    model = jaxmor.load_mjcf("scene.xml")
    mj_model = mujoco.MjModel.from_xml_path("scene.xml")
    pair = compare.Pair(model, mj_model)
    print(compare.dynamics(pair, qpos, qvel))             # mass matrix, bias, body and geom poses
    print(compare.rollout(pair, qpos, qvel, ctrl, 500))    # 500 steps of both engines from one state

Conventions (jaxmor's README, "Conventions"): both write a free joint's coordinates as position and
quaternion ``w x y z``; MuJoCo's free-joint angular velocity is in the body frame, jaxmor's in the world
frame, so ``u = T^-1 qvel`` with ``T = blockdiag(I, R^T, I)`` per free joint, and (power-conjugate forces)
``M = T^T M_mj T``, ``b = T^T b_mj`` (``dT/dt u`` vanishes: ``d(R^T w)/dt = R^T dw/dt``). Joints, bodies,
geoms and actuators are matched by name; what the MJCF leaves unnamed jaxmor names by MuJoCo's ids
(``joint0``, ``body3``, ``geom12``, ``actuator1``), so they match too.

The steps are each engine's own: MuJoCo's (soft contacts, its integrator and solver) and jaxmor's
(velocity-level, hard contacts by projected Gauss-Seidel), so a rollout's differences measure how far the two
engines' physics part, not a bug alone. Only the quantities of one state (``dynamics``) must agree to
round-off.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError
from jaxmor.io.mjcf_geometry import quat_to_rotation
from jaxmor.sim.dynamics import bias_force, mass_matrix
from jaxmor.sim.kinematics import body_poses, link_poses
from jaxmor.sim.pipeline import rollout as rollout_states
from jaxmor.state import init_state
from jaxmor.types import GeomType, Model, State

try:
    import mujoco
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError("jaxmor.tools.compare needs MuJoCo: pip install 'jaxmor[mujoco]'") from err


def _mj_id(mj_model, kind, name: str, prefix: str) -> int:
    """MuJoCo's id of a named element, or of the unnamed one jaxmor calls ``<prefix><id>``."""
    found = mujoco.mj_name2id(mj_model, kind, name)
    if found >= 0:
        return found
    if name.startswith(prefix) and name[len(prefix) :].isdigit():
        return int(name[len(prefix) :])
    raise ArgumentError(f"MuJoCo's model has no {prefix} named {name!r}")


@dataclass(frozen=True)
class Pair:
    """A jaxmor model and the MuJoCo model of the same file, with the index maps between them.

    Attributes:
        model: the jaxmor model (:func:`jaxmor.load_mjcf`).
        mj_model: MuJoCo's ``MjModel`` of the same file.
        qpos_index: (nq,) MuJoCo's ``qpos`` index of each jaxmor coordinate.
        qvel_index: (nv,) MuJoCo's ``qvel`` index of each jaxmor velocity.
        ctrl_index: (nu,) MuJoCo's actuator index of each jaxmor affine actuator.
        body_links: ``(jaxmor link index, MuJoCo body id)`` of every MuJoCo body but the world.
        geoms: ``(jaxmor geom index, MuJoCo geom id)`` of every jaxmor geom MuJoCo has (walls made of planes
            excepted).
    """

    model: Model
    mj_model: object
    qpos_index: np.ndarray
    qvel_index: np.ndarray
    ctrl_index: np.ndarray
    body_links: tuple[tuple[int, int], ...]
    geoms: tuple[tuple[int, int], ...]

    def __init__(self, model: Model, mj_model):
        m = mj_model
        qpos, qvel = [], []
        for b in range(model.nb):
            joint = _mj_id(m, mujoco.mjtObj.mjOBJ_JOINT, model.body_joint_name[b], "joint")
            kind = model.body_joint_type[b]
            qpos += range(m.jnt_qposadr[joint], m.jnt_qposadr[joint] + kind.qpos_width())
            qvel += range(m.jnt_dofadr[joint], m.jnt_dofadr[joint] + kind.dof_width())
        if len(qpos) != m.nq or len(qvel) != m.nv:
            raise ArgumentError(f"the models differ: jaxmor nq={model.nq} nv={model.nv}, MuJoCo nq={m.nq} nv={m.nv}")
        ctrl = [_mj_id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, name, "actuator") for name in model.affine.names]
        links = []
        for body in range(1, m.nbody):
            name = m.body(body).name or f"body{body}"
            links.append((model.link_names.index(name), body))
        geoms = []
        for g, name in enumerate(model.geom_names):
            found = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)
            gid = found if found >= 0 else (int(name[4:]) if name.startswith("geom") and name[4:].isdigit() else -1)
            if gid >= 0 and m.geom_type[gid] != mujoco.mjtGeom.mjGEOM_PLANE:
                geoms.append((g, gid))
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "mj_model", m)
        object.__setattr__(self, "qpos_index", np.array(qpos, dtype=np.int64))
        object.__setattr__(self, "qvel_index", np.array(qvel, dtype=np.int64))
        object.__setattr__(self, "ctrl_index", np.array(ctrl, dtype=np.int64))
        object.__setattr__(self, "body_links", tuple(links))
        object.__setattr__(self, "geoms", tuple(geoms))

    def _rotations(self, q: np.ndarray) -> list[tuple[int, np.ndarray]]:
        return [
            (s, quat_to_rotation(q[self.model.body_q_start[b] + 3 : self.model.body_q_start[b] + 7]))
            for b, s in zip(self.model.free_body, self.model.free_u, strict=True)
        ]

    def from_mujoco(self, qpos, qvel) -> tuple[np.ndarray, np.ndarray]:
        """MuJoCo's ``(qpos, qvel)`` in jaxmor's order and conventions: ``(q, u)``."""
        q = np.asarray(qpos, dtype=np.float64)[self.qpos_index]
        u = np.asarray(qvel, dtype=np.float64)[self.qvel_index].copy()
        for s, rotation in self._rotations(q):
            u[s + 3 : s + 6] = rotation @ u[s + 3 : s + 6]
        return q, u

    def to_mujoco(self, q, u) -> tuple[np.ndarray, np.ndarray]:
        """jaxmor's ``(q, u)`` as MuJoCo's ``(qpos, qvel)``."""
        q, u = np.asarray(q, dtype=np.float64), np.asarray(u, dtype=np.float64).copy()
        for s, rotation in self._rotations(q):
            u[s + 3 : s + 6] = rotation.T @ u[s + 3 : s + 6]
        qpos, qvel = np.zeros(self.mj_model.nq), np.zeros(self.mj_model.nv)
        qpos[self.qpos_index], qvel[self.qvel_index] = q, u
        return qpos, qvel

    def velocity_map(self, q) -> np.ndarray:
        """(nv, nv) ``T`` with ``qvel = T u`` (in jaxmor's velocity order)."""
        t = np.eye(self.model.nv)
        for s, rotation in self._rotations(np.asarray(q, dtype=np.float64)):
            t[s + 3 : s + 6, s + 3 : s + 6] = rotation.T
        return t

    def state(self, qpos, qvel, ctrl=None) -> State:
        """A jaxmor State at MuJoCo's ``(qpos, qvel)``, with MuJoCo's controls of the affine actuators."""
        q, u = self.from_mujoco(qpos, qvel)
        state = init_state(self.model, q=q, u=u)
        if ctrl is not None:
            state = state.replace(ctrl=jnp.asarray(np.asarray(ctrl)[self.ctrl_index], state.q.dtype))
        return state


@dataclass(frozen=True)
class Difference:
    """One quantity in both engines.

    Attributes:
        name: what it is.
        jaxmor, mujoco: its values, in jaxmor's conventions (over the steps of a rollout: the leading axis).
        max_abs: the largest absolute difference.
        scale: the largest absolute MuJoCo value (for a relative reading).
    """

    name: str
    jaxmor: np.ndarray
    mujoco: np.ndarray

    @property
    def max_abs(self) -> float:
        return float(np.max(np.abs(self.jaxmor - self.mujoco), initial=0.0))

    @property
    def scale(self) -> float:
        return float(np.max(np.abs(self.mujoco), initial=0.0))


class Report(dict):
    """Quantity name -> :class:`Difference`; prints as a table of the largest differences."""

    def __str__(self) -> str:
        rows = [f"{'quantity':<24} {'max |jaxmor - MuJoCo|':>22} {'max |MuJoCo|':>14}"]
        rows += [f"{d.name:<24} {d.max_abs:>22.3e} {d.scale:>14.3e}" for d in self.values()]
        return "\n".join(rows)


def _report(items) -> Report:
    return Report((d.name, d) for d in items)


def _mesh_rows(pair: Pair) -> np.ndarray:
    """The rows of ``pair.geoms`` that are mesh geoms."""
    mesh = GeomType.MESH
    return np.array([k for k, (g, _) in enumerate(pair.geoms) if pair.model.geom_type[g] == mesh], dtype=np.int64)


def _bounds(points):
    """(n, 2, 3) the lowest and highest corners of the world-axis bounding boxes of ``points`` (n, V, 3)."""
    return jnp.stack([points.min(axis=1), points.max(axis=1)], axis=1)


def _poses(pair: Pair, q):
    """jaxmor's link positions and rotations of the MuJoCo bodies, its geom positions (``dynamics``) and its mesh
    geoms' world bounding boxes, at ``q`` (traceable)."""
    model = pair.model
    bodies = body_poses(model, jnp.asarray(q, model.body_mass.dtype))
    links = link_poses(model, bodies)
    li = np.array([k for k, _ in pair.body_links], dtype=np.int64)
    gb = np.array(model.geom_body, dtype=np.int64) + 1
    body_r = jnp.concatenate([jnp.eye(3, dtype=bodies.rotation.dtype)[None], bodies.rotation])[gb]
    body_p = jnp.concatenate([jnp.zeros((1, 3), bodies.position.dtype), bodies.position])[gb]
    centres = body_p + jnp.einsum("gij,gj->gi", body_r, model.geom_translation.astype(body_p.dtype))
    gi = np.array([g for g, _ in pair.geoms], dtype=np.int64)
    rows = _mesh_rows(pair)
    g = gi[rows]
    hulls = model.mesh_vertices[np.array([model.geom_mesh[k] for k in g], dtype=np.int64)].astype(body_p.dtype)
    local = model.geom_translation[g][:, None].astype(body_p.dtype) + jnp.einsum(
        "gij,gvj->gvi", model.geom_rotation[g].astype(body_p.dtype), hulls
    )
    bounds = _bounds(body_p[g][:, None] + jnp.einsum("gij,gvj->gvi", body_r[g], local))
    return links.position[li], links.rotation[li], centres[gi].at[rows].set(bounds.mean(axis=1)), bounds


def _mujoco_geoms(pair: Pair, data) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's geom positions (``geom_xpos``; a mesh geom's: the centre of its world bounding box) and its mesh
    geoms' world bounding boxes (of ``mesh_vert`` moved by ``geom_xpos`` and ``geom_xmat``)."""
    m = pair.mj_model
    geoms = np.array([g for _, g in pair.geoms], dtype=np.int64)
    positions = np.array(data.geom_xpos[geoms])
    bounds = np.zeros((0, 2, 3))
    rows = _mesh_rows(pair)
    if len(rows):
        boxes = []
        for g in geoms[rows]:
            mesh = m.geom_dataid[g]
            start, count = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
            vertices = np.asarray(m.mesh_vert[start : start + count], dtype=np.float64)
            boxes.append(data.geom_xpos[g] + vertices @ data.geom_xmat[g].reshape(3, 3).T)
        bounds = np.stack([np.stack([b.min(axis=0), b.max(axis=0)]) for b in boxes])
        positions[rows] = bounds.mean(axis=1)
    return positions, bounds


def dynamics(pair: Pair, qpos: np.ndarray, qvel: np.ndarray) -> Report:
    """The mass matrix, the bias forces and the body and geom poses of both engines at one state (MuJoCo's
    ``mj_forward``: ``mj_fullM``, ``qfrc_bias``, ``xpos``, ``xmat``, ``geom_xpos``), in jaxmor's conventions.
    They agree to round-off when the model is the same.

    A mesh geom is compared by its vertices, not its frame (MuJoCo moves a mesh geom's frame to the mesh's
    centre of mass and principal axes; jaxmor keeps the file's): ``mesh_bounds`` (n_mesh, 2, 3) holds the
    lowest and highest corners of each mesh geom's world-axis bounding box (jaxmor's hull vertices, MuJoCo's
    ``mesh_vert`` placed by ``geom_xpos``/``geom_xmat``), and ``geom_position`` the centre of that box. They
    agree to MuJoCo's float32 vertices (~1e-7 relative), or within the hull's simplification
    (:attr:`jaxmor.io.mesh.Hull.deviation`) for a mesh of more than 64 hull vertices.

    Args:
        pair: the two models.
        qpos: MuJoCo's coordinates (nq,).
        qvel: MuJoCo's velocities (nv,).
    """
    m = pair.mj_model
    data = mujoco.MjData(m)
    data.qpos[:], data.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, data)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, data, full)
    q, u = pair.from_mujoco(qpos, qvel)
    t = pair.velocity_map(q)
    vi = pair.qvel_index
    dtype = pair.model.body_mass.dtype
    jq, ju = jnp.asarray(q, dtype), jnp.asarray(u, dtype)
    position, rotation, centres, bounds = _poses(pair, q)
    bodies = np.array([b for _, b in pair.body_links], dtype=np.int64)
    mj_centres, mj_bounds = _mujoco_geoms(pair, data)
    return _report(
        [
            Difference("mass_matrix", np.asarray(mass_matrix(pair.model, jq)), t.T @ full[np.ix_(vi, vi)] @ t),
            Difference("bias", np.asarray(bias_force(pair.model, jq, ju)), t.T @ data.qfrc_bias[vi]),
            Difference("body_position", np.asarray(position), data.xpos[bodies]),
            Difference("body_rotation", np.asarray(rotation), data.xmat[bodies].reshape(-1, 3, 3)),
            Difference("geom_position", np.asarray(centres), mj_centres),
            Difference("mesh_bounds", np.asarray(bounds), mj_bounds),
        ]
    )


def rollout(pair: Pair, qpos, qvel, ctrl=None, n_steps: int = 1) -> Report:
    """Both engines stepped ``n_steps`` times from MuJoCo's ``(qpos, qvel)`` with the controls ``ctrl`` held
    (MuJoCo's actuator order), each with its own integrator and contact model (the module docstring). jaxmor's
    steps run in one compiled :func:`jaxmor.rollout`.

    Returns:
        A :class:`Report` over the steps (the leading axis; entry ``k`` after step ``k + 1``): ``q`` and ``u``
        (jaxmor's conventions), ``body_position``, ``geom_position`` (the matched geoms' centres, e.g. the feet;
        a mesh geom's: as in :func:`dynamics`) and ``contacts``: MuJoCo's contacts with a positive normal force
        against jaxmor's contact slots with a positive normal impulse, each engine's contacts of that step
        (found at its start).
    """
    m = pair.mj_model
    data = mujoco.MjData(m)
    data.qpos[:], data.qvel[:] = qpos, qvel
    if ctrl is not None:
        data.ctrl[:] = ctrl
    n_steps = int(n_steps)
    _, trajectory = jax.jit(lambda s: rollout_states(pair.model, s, n_steps=n_steps))(pair.state(qpos, qvel, ctrl))
    poses = jax.jit(jax.vmap(lambda q: _poses(pair, q)))(trajectory.q)
    bodies = np.array([b for _, b in pair.body_links], dtype=np.int64)
    force = np.zeros(6)
    theirs: dict[str, list] = {k: [] for k in ("q", "u", "body_position", "geom_position", "contacts")}
    for _ in range(n_steps):
        mujoco.mj_step(m, data)
        pushing = 0  # the contacts of the step just taken (mj_step computed them at its start, as jaxmor does)
        for c in range(data.ncon):
            mujoco.mj_contactForce(m, data, c, force)
            pushing += force[0] > 0
        mujoco.mj_kinematics(m, data)  # the poses at the new qpos (mj_step leaves those of its start)
        q, u = pair.from_mujoco(data.qpos, data.qvel)
        geom_position = _mujoco_geoms(pair, data)[0]
        for key, value in zip(theirs, (q, u, data.xpos[bodies], geom_position, pushing), strict=True):
            theirs[key].append(np.array(value, dtype=float))
    ours = {
        "q": trajectory.q,
        "u": trajectory.u,
        "body_position": poses[0],
        "geom_position": poses[2],
        "contacts": np.sum(np.asarray(trajectory.contact_impulse)[..., 0] > 0, axis=-1),
    }
    return _report([Difference(k, np.asarray(ours[k], dtype=float), np.asarray(v)) for k, v in theirs.items()])


__all__ = ["Difference", "Pair", "Report", "dynamics", "rollout"]
