"""Reference values from Pinocchio and MuJoCo, converted to jaxmor's conventions.

Shared by ``test_dynamics.py`` and ``test_kinematics.py``. Conventions (validation-anchors §1):

* jaxmor: ``q = [p, quat w x y z, joints]``, ``u = [v, w, joints]`` with the base-origin velocity
  ``v`` and the angular velocity ``w`` both in the world frame.
* Pinocchio: ``q = [p, quat x y z w, joints]`` (continuous joints as ``(cos, sin)``),
  ``v = [R^T v, R^T w, joints]`` (both local); the joint order may differ, so joints are matched
  by name.
* MuJoCo: ``qpos = [p, quat w x y z, joints]``, ``qvel = [v (world), R^T w (local), joints]``.

With ``T = blockdiag(R^T, R^T, I)`` (jaxmor order) so that ``v_pin = T u``, and
``c = dT/dt u = [-w_b x v_b; 0; 0]``:

    M = T^T M_pin T,    b = T^T (b_pin + M_pin c),    tau_pin = T^-T tau,    du = T^-1 (a_pin - c),

i.e. the linear base acceleration is ``R (a_pin,lin + w_b x v_b)`` and the angular one ``R a_pin,ang``
(``d/dt (R w_b) = R (w_b x w_b) + R dw_b/dt = R dw_b/dt``).
"""

from __future__ import annotations

import glob
import os
import site
import sys
import warnings
from pathlib import Path

import numpy as np

import jaxmor

DATA_DIR = Path(__file__).resolve().parent / "data"
TESTBOT = DATA_DIR / "testbot_floating.urdf"

_ROBOTS_SUFFIX = os.path.join("cmeel.prefix", "share", "example-robot-data", "robots")


def _find_robots_dir() -> Path | None:
    """The ``robots`` folder of the ``example-robot-data`` wheel (it ships files only, no module)."""
    roots = []
    try:
        roots += site.getsitepackages()
    except AttributeError:  # some virtualenvs
        pass
    roots += [p for p in sys.path if p.endswith("site-packages")]
    roots += glob.glob(os.path.join(sys.prefix, "lib", "python*", "site-packages"))
    roots += glob.glob(os.path.join(sys.prefix, "Lib", "site-packages"))
    for root in roots:
        candidate = Path(root) / _ROBOTS_SUFFIX
        if candidate.is_dir():
            return candidate
    return None


ROBOTS_DIR = _find_robots_dir()


def robot_urdf(relative: str) -> Path | None:
    """Path of an example-robot-data URDF, or ``None`` if the package (or that file) is missing."""
    if ROBOTS_DIR is None:
        return None
    path = ROBOTS_DIR / relative
    return path if path.is_file() else None


def missing_robot_reason(relative: str) -> str:
    return (
        f"example-robot-data's {relative} was not found under site-packages/{_ROBOTS_SUFFIX} "
        "(pip install example-robot-data)"
    )


def load(path_or_xml, floating_base: bool) -> jaxmor.Model:
    """Load with jaxmor for dynamics comparisons: meshes left out (``meshes="ignore"``; they collide, which these
    comparisons do not need), its warnings about them silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jaxmor.load_urdf(str(path_or_xml), floating_base=floating_base, meshes="ignore")


def rel_err(value, ref) -> float:
    """``max |value - ref| / max(1, max |ref|)``."""
    value, ref = np.asarray(value), np.asarray(ref)
    return float(np.max(np.abs(value - ref), initial=0.0) / max(1.0, float(np.max(np.abs(ref), initial=0.0))))


def random_state(model: jaxmor.Model, rng: np.random.Generator, joint_range: float = 1.5):
    """Random ``(q, u, tau)``: unit quaternion, normal base position, joints uniform in
    ``[-joint_range, joint_range]`` (limits ignored), normal velocities and forces."""
    q = rng.uniform(-joint_range, joint_range, size=model.nq)
    if model.floating_base:
        q[0:3] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[3:7] = quat / np.linalg.norm(quat)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def quat_wxyz_to_rotation(quat) -> np.ndarray:
    """Rotation matrix of a ``w x y z`` quaternion, computed by Pinocchio (independent of jaxmor.math)."""
    import pinocchio as pin

    w, x, y, z = (float(c) for c in quat)
    return pin.Quaternion(w, x, y, z).normalized().toRotationMatrix()


def vee_rate(r_dot: np.ndarray, r: np.ndarray) -> np.ndarray:
    """World angular velocity ``w`` from ``dR/dt = [w]x R``."""
    s = r_dot @ r.T
    s = 0.5 * (s - s.T)
    return np.array([s[2, 1], s[0, 2], s[1, 0]])


class PinReference:
    """Pinocchio's ``M``, ``b``, ABA, frame placements and frame Jacobians in jaxmor's conventions.

    Args:
        model: the jaxmor model (its joint names and order define the mapping).
        urdf: path of the URDF, or the URDF text.
        armature: optional (nv,) rotor inertia in jaxmor's velocity order, set as ``model.armature``.
    """

    def __init__(self, model: jaxmor.Model, urdf, armature=None):
        import pinocchio as pin

        self.pin = pin
        self.floating = model.floating_base
        self.jax_model = model
        text = str(urdf)
        root = pin.JointModelFreeFlyer()
        if text.lstrip().startswith("<"):
            self.model = pin.buildModelFromXML(text, root) if self.floating else pin.buildModelFromXML(text)
        else:
            self.model = pin.buildModelFromUrdf(text, root) if self.floating else pin.buildModelFromUrdf(text)
        self.data = self.model.createData()
        assert self.model.nv == model.nv, (self.model.nv, model.nv)
        base = 6 if self.floating else 0
        self.perm = np.zeros(model.nv, dtype=int)  # pin velocity index of each jaxmor velocity
        self.perm[:base] = np.arange(base)
        self.joints = []  # (jaxmor q index, pin idx_q, pin nq) per movable joint
        for k, name in enumerate(model.joint_names):
            joint = self.model.joints[self.model.getJointId(name)]
            self.perm[base + k] = joint.idx_v
            self.joints.append((jaxmor.joint_q_index(model, name), joint.idx_q, joint.nq))
        if armature is not None:
            arm = np.array(self.model.armature)
            arm[self.perm] = np.asarray(armature)
            self.model.armature = arm
            self.data = self.model.createData()

    # -- conversions ----------------------------------------------------------------------------
    def rotation(self, q) -> np.ndarray:
        return quat_wxyz_to_rotation(q[3:7]) if self.floating else np.eye(3)

    def transform(self, q) -> np.ndarray:
        """``T`` (nv, nv), jaxmor order: ``v_pin[perm] = T u``."""
        t = np.eye(self.jax_model.nv)
        if self.floating:
            rt = self.rotation(q).T
            t[0:3, 0:3] = rt
            t[3:6, 3:6] = rt
        return t

    def pin_q(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        qp = np.array(self.pin.neutral(self.model))
        if self.floating:
            qp[0:3] = q[0:3]
            quat = q[3:7] / np.linalg.norm(q[3:7])
            qp[3:7] = [quat[1], quat[2], quat[3], quat[0]]
        for qi, pi, nq in self.joints:
            if nq == 2:  # continuous joint: (cos, sin)
                qp[pi], qp[pi + 1] = np.cos(q[qi]), np.sin(q[qi])
            else:
                qp[pi] = q[qi]
        return qp

    def to_pin_vector(self, x) -> np.ndarray:
        """Scatter a jaxmor-ordered (already transformed) vector into Pinocchio's order."""
        out = np.zeros(self.model.nv)
        out[self.perm] = x
        return out

    def _corr(self, t, u) -> np.ndarray:
        """``c = dT/dt u = [-w_b x v_b; 0; 0]`` (jaxmor order)."""
        c = np.zeros(self.jax_model.nv)
        if self.floating:
            nu = t @ u
            c[0:3] = -np.cross(nu[3:6], nu[0:3])
        return c

    # -- dynamics -------------------------------------------------------------------------------
    def _mass_pin(self, qp) -> np.ndarray:
        m = np.array(self.pin.crba(self.model, self.data, qp))
        m = np.triu(m) + np.triu(m, 1).T  # older Pinocchio versions fill only the upper triangle
        return m[np.ix_(self.perm, self.perm)]

    def mass_matrix(self, q) -> np.ndarray:
        t = self.transform(q)
        return t.T @ self._mass_pin(self.pin_q(q)) @ t

    def bias_force(self, q, u) -> np.ndarray:
        q, u = np.asarray(q, float), np.asarray(u, float)
        t = self.transform(q)
        qp = self.pin_q(q)
        b = np.array(self.pin.nonLinearEffects(self.model, self.data, qp, self.to_pin_vector(t @ u)))[self.perm]
        return t.T @ (b + self._mass_pin(qp) @ self._corr(t, u))

    def bias_jacobian(self, q, u, columns=None) -> np.ndarray:
        """(nv, nv) ``db/du`` by central differences with unit steps (exact up to round-off: ``b`` is quadratic
        in ``u``); only the velocities in ``columns`` (default all), the other columns zero."""
        u = np.asarray(u, float)
        out = np.zeros((len(u), len(u)))
        for k in range(len(u)) if columns is None else columns:
            e = np.zeros(len(u))
            e[k] = 1.0
            out[:, k] = 0.5 * (self.bias_force(q, u + e) - self.bias_force(q, u - e))
        return out

    def forward_dynamics(self, q, u, tau) -> np.ndarray:
        q, u, tau = np.asarray(q, float), np.asarray(u, float), np.asarray(tau, float)
        t = self.transform(q)
        tau_pin = np.linalg.solve(t.T, tau)  # power-conjugate: tau_pin = T^-T tau
        a = np.array(
            self.pin.aba(self.model, self.data, self.pin_q(q), self.to_pin_vector(t @ u), self.to_pin_vector(tau_pin))
        )[self.perm]
        return np.linalg.solve(t, a - self._corr(t, u))

    # -- kinematics -----------------------------------------------------------------------------
    def frame_poses(self, q, links) -> tuple[np.ndarray, np.ndarray]:
        """World rotation (n, 3, 3) and position (n, 3) of the BODY frame of each link."""
        pin = self.pin
        pin.framesForwardKinematics(self.model, self.data, self.pin_q(q))
        rots, poss = [], []
        for name in links:
            placement = self.data.oMf[self.model.getFrameId(name, pin.FrameType.BODY)]
            rots.append(np.array(placement.rotation))
            poss.append(np.array(placement.translation))
        return np.array(rots), np.array(poss)

    def frame_jacobians(self, q, links) -> np.ndarray:
        """(n, 6, nv) ``[linear; angular]`` Jacobians of the link origins in jaxmor's velocities."""
        pin = self.pin
        qp = self.pin_q(q)
        pin.computeJointJacobians(self.model, self.data, qp)
        pin.updateFramePlacements(self.model, self.data)
        t = self.transform(q)
        out = []
        for name in links:
            fid = self.model.getFrameId(name, pin.FrameType.BODY)
            j = np.array(pin.getFrameJacobian(self.model, self.data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED))
            out.append(j[:, self.perm] @ t)
        return np.array(out)


def mujoco_terms(urdf_text: str, model: jaxmor.Model, q, u) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's ``M`` and ``qfrc_bias`` for a floating-base URDF, in jaxmor's conventions.

    The root body gets a free joint via ``MjSpec``. MuJoCo's angular base velocity is local, so with
    ``S = blockdiag(I, R^T, I)`` (``qvel = S u``) ``M = S^T M_mj S`` and ``b = S^T b_mj``
    (``dS/dt u = [0; -w_b x R^T w; 0] = 0``). The URDF must give every moving link an ``<inertial>``
    (MuJoCo infers masses from geoms otherwise).
    """
    import mujoco

    spec = mujoco.MjSpec.from_string(urdf_text)
    spec.worldbody.first_body().add_freejoint()
    m = spec.compile()
    d = mujoco.MjData(m)
    q, u = np.asarray(q, float), np.asarray(u, float)
    r = quat_wxyz_to_rotation(q[3:7])
    qpos, qvel = np.zeros(m.nq), np.zeros(m.nv)
    qpos[0:7] = q[0:7]
    qvel[0:3] = u[0:3]
    qvel[3:6] = r.T @ u[3:6]
    perm = np.arange(model.nv)
    for name in model.joint_names:
        joint = m.joint(name)
        qi, vi = jaxmor.joint_q_index(model, name), jaxmor.joint_index(model, name)
        qpos[joint.qposadr[0]] = q[qi]
        qvel[joint.dofadr[0]] = u[vi]
        perm[vi] = joint.dofadr[0]
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, full)  # MuJoCo >= 4.0
    except TypeError:  # MuJoCo 3.x
        mujoco.mj_fullM(m, full, d.qM)
    s = np.eye(model.nv)
    s[3:6, 3:6] = r.T
    return s.T @ full[np.ix_(perm, perm)] @ s, s.T @ np.asarray(d.qfrc_bias)[perm]


# --------------------------------------------------------------------------------------------------
# Third-party MJCF models, and MuJoCo's values for them in jaxmor's conventions.


def _package_file(package: str, *parts: str) -> Path | None:
    """A file inside an installed package, found without importing the package."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent.joinpath(*parts)
    return path if path.is_file() else None


#: The Menagerie Unitree Go2, in the repository (``tests/data/unitree_go2``, unmodified: its ``NOTICE``), or
#: ``$JAXMOR_GO2_DIR``.
GO2_DIR = Path(os.environ.get("JAXMOR_GO2_DIR", DATA_DIR / "unitree_go2"))


def mjcf_model(name: str) -> Path | None:
    """A third-party MJCF file: ``go2/<file>`` (Menagerie, in the repository), ``barkour`` or ``mjx-humanoid``
    (mujoco-mjx's test data), ``rodent`` (dm_control's walker) or a dm_control suite domain (``cheetah``);
    ``None`` when the package holding it is not installed.

    Raises:
        FileNotFoundError: a Go2 file is missing (it is part of the repository: a failure, never a skip).
    """
    if name.startswith("go2/"):
        path = GO2_DIR / name[4:]
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the Menagerie Go2 is in the repository (tests/data/unitree_go2)")
        return path
    if name == "barkour":
        return _package_file("mujoco.mjx", "test_data", "barkour_v0", "assets", "barkour_v0_mjx.xml")
    if name == "mjx-humanoid":
        return _package_file("mujoco.mjx", "test_data", "humanoid", "humanoid.xml")
    if name == "rodent":
        return _package_file("dm_control", "locomotion", "walkers", "assets", "rodent.xml")
    return _package_file("dm_control", "suite", f"{name}.xml")


def public_models(name: str):
    """jaxmor's (meshes ignored, warnings silenced) and MuJoCo's model of the third-party file :func:`mjcf_model`
    names; the calling test is skipped where its package is not installed."""
    import pytest

    mujoco = pytest.importorskip("mujoco")
    path = mjcf_model(name)
    if path is None:
        pytest.skip(f"{name} is not installed (a package of the test extra: mujoco-mjx, dm-control)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(str(path), meshes="ignore")
    return model, mujoco.MjModel.from_xml_path(str(path))


def barkour_on_a_plane(folder: Path) -> Path | None:
    """mujoco-mjx's Barkour with the flat floor its file holds commented out in place of its height field
    (its M and bias do not need it), written into ``folder`` beside links to its meshes."""
    source = mjcf_model("barkour")
    if source is None:
        return None
    text = source.read_text()
    text = text.replace('<geom name="hfield_floor" type="hfield" hfield="rand_uniform" conaffinity="1"/>', "")
    text = text.replace('<!-- <geom name="floor"', '<geom name="floor"')
    text = text.replace('material="groundplane"/> -->', 'material="groundplane"/>')
    assert 'type="hfield"' not in text and '<geom name="floor"' in text
    for mesh in source.parent.glob("*.stl"):
        (folder / mesh.name).symlink_to(mesh)
    (folder / "hfield_240_280.png").symlink_to(source.parent / "hfield_240_280.png")
    path = folder / "barkour_plane.xml"
    path.write_text(text)
    return path


class MujocoReference:
    """MuJoCo's mass matrix, bias forces and body poses of an MJCF model, in jaxmor's order and conventions.

    Joints are matched by name, unnamed ones by MuJoCo's id (``joint3``, jaxmor's name for them); the free
    joints' angular velocity turns from MuJoCo's body frame to jaxmor's world frame with ``T`` (module
    docstring), the rotation from Pinocchio's quaternion routine.
    """

    def __init__(self, model: jaxmor.Model, mj_model):
        import mujoco

        self.mujoco, self.m, self.model = mujoco, mj_model, model
        self.data = mujoco.MjData(mj_model)
        qpos, qvel = [], []
        for b in range(model.nb):
            name = model.body_joint_name[b]
            jid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
            if jid < 0:
                assert name.startswith("joint"), name
                jid = int(name[5:])
            kind = model.body_joint_type[b]
            qpos += range(mj_model.jnt_qposadr[jid], mj_model.jnt_qposadr[jid] + kind.qpos_width())
            qvel += range(mj_model.jnt_dofadr[jid], mj_model.jnt_dofadr[jid] + kind.dof_width())
        assert len(qpos) == mj_model.nq and len(qvel) == mj_model.nv, (len(qpos), mj_model.nq)
        self.qpos, self.qvel = np.array(qpos), np.array(qvel)

    def random_state(self, rng: np.random.Generator):
        """MuJoCo's ``(qpos, qvel)``: ``qpos0`` plus normal noise, uniformly random unit quaternions on the free and
        ball joints (a ball joint's velocities are in its body frame in both engines: no conversion)."""
        m, kinds = self.m, self.mujoco.mjtJoint
        qpos = m.qpos0 + 0.5 * rng.normal(size=m.nq)
        for j in range(m.njnt):
            if m.jnt_type[j] in (kinds.mjJNT_FREE, kinds.mjJNT_BALL):
                a = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == kinds.mjJNT_FREE else 0)
                quat = rng.normal(size=4)
                qpos[a : a + 4] = quat / np.linalg.norm(quat)
        return qpos, rng.normal(size=m.nv)

    def transform(self, q) -> np.ndarray:
        """``T`` with MuJoCo's velocities ``= T u`` (jaxmor's order)."""
        t = np.eye(self.model.nv)
        for b in self.model.free_body:
            s, a = self.model.body_v_start[b], self.model.body_q_start[b]
            t[s + 3 : s + 6, s + 3 : s + 6] = quat_wxyz_to_rotation(q[a + 3 : a + 7]).T
        return t

    def terms(self, qpos, qvel):
        """``(q, u, M, b)`` in jaxmor's conventions at MuJoCo's ``(qpos, qvel)``; MuJoCo's data is left there."""
        mujoco, d = self.mujoco, self.data
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(self.m, d)
        full = np.zeros((self.m.nv, self.m.nv))
        mujoco.mj_fullM(self.m, d, full)
        q = np.asarray(qpos)[self.qpos]
        t = self.transform(q)
        u = np.linalg.solve(t, np.asarray(qvel)[self.qvel])
        v = self.qvel
        return q, u, t.T @ full[np.ix_(v, v)] @ t, t.T @ d.qfrc_bias[v]

    def body_poses(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Body name (MuJoCo's, or ``body<id>``) -> ``(rotation, position)`` at the last ``terms`` state."""
        m, d = self.m, self.data
        return {(m.body(i).name or f"body{i}"): (d.xmat[i].reshape(3, 3), d.xpos[i]) for i in range(1, m.nbody)}
