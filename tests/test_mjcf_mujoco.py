"""jaxmor against MuJoCo on third-party MJCF models nobody here wrote (float64).

Models, all read offline: the Menagerie Unitree Go2 (``tests/data/unitree_go2``, ``scene.xml`` and
``scene_mjx.xml``, in the repository), the Barkour quadruped of mujoco-mjx's test data (its flat floor in place of
its height field, which the comparison does not need), mujoco-mjx's humanoid (its feet touch the floor through
explicit ``<pair>``s), the dm_control suite's cheetah, walker, hopper, humanoid and quadruped and its rodent walker
and dog (the dm-control wheel's XML files, read as files: dm_control is not imported; the last three need activation
dynamics, ellipsoid pairs and fixed tendons; the dog runs in the slow tier). They cover free and fixed bases,
slide and hinge roots, several joints in one body with anchors off the body's origin, inertias from explicit
``<inertial>`` elements and from geoms (capsules given by ``fromto``, ``settotalmass``), degrees and
radians, default classes and ``childclass``, armature.

The reference is MuJoCo (``mujoco``): ``mj_fullM``, ``qfrc_bias``, ``xpos``/``xmat`` after ``mj_forward``,
converted to jaxmor's conventions by ``tests/reference.py`` (MuJoCo's free-joint angular velocity is in the
body frame). Tolerance relative to ``max(1, max |reference|)``: 1e-12 on M and bias (``TERMS_TOL``: both engines
compute the same recursive algorithms in float64, measured 4.6e-13 at most; the dog's mesh inertias 5.2e-12), 1e-9
elsewhere; any modelling difference (a wrong inertia, axis or anchor) gives 1e-3 or more.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
from reference import MujocoReference, barkour_on_a_plane, mjcf_model, rel_err

import jaxmor

mujoco = pytest.importorskip("mujoco")

TOL = 1e-9
#: M and bias: 1e-12, the dog 1e-10 (its bodies' inertias come from its mesh volumes, which each engine integrates:
#: measured 5.2e-12 on its mass matrix; the others measured at most 4.6e-13, the humanoid's bias).
TERMS_TOL = {"dog": 1e-10}
MODELS = [
    "go2/scene.xml",
    "go2/scene_mjx.xml",
    "barkour",
    "mjx-humanoid",
    "cheetah",
    "walker",
    "hopper",
    "humanoid",
    "quadruped",
    "rodent",
    pytest.param("dog", marks=pytest.mark.slow),  # 35 s on 2 cores; the default run is at its budget
]


def _path(name: str, tmp_path_factory) -> str:
    if name == "barkour":
        path = barkour_on_a_plane(tmp_path_factory.mktemp("barkour"))
    else:
        path = mjcf_model(name)
    if path is None:
        pytest.skip(f"{name} is not installed (a package of the test extra: mujoco-mjx, dm-control)")
    return str(path)


@pytest.fixture(scope="module", params=MODELS)
def pair(request, tmp_path_factory):
    path = _path(request.param, tmp_path_factory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # condim 6 feet keep only their sliding friction (Go2); deprecations
        model = jaxmor.load_mjcf(path, meshes="ignore")
        mj_model = mujoco.MjModel.from_xml_path(path)
    return request.param, model, MujocoReference(model, mj_model)


def test_mass_matrix_bias_and_body_poses_equal_mujocos(pair):
    name, model, ref = pair
    mass = jax.jit(lambda q: jaxmor.mass_matrix(model, q))
    bias = jax.jit(lambda q, u: jaxmor.bias_force(model, q, u))
    poses = jax.jit(lambda q: jaxmor.forward_kinematics(model, q))
    rng = np.random.default_rng(7)
    assert model.nq == ref.m.nq and model.nv == ref.m.nv
    for _ in range(4):
        q, u, m_ref, b_ref = ref.terms(*ref.random_state(rng))
        assert rel_err(mass(q), m_ref) < TERMS_TOL.get(name, 1e-12), f"{name}: mass matrix"
        assert rel_err(bias(q, u), b_ref) < TERMS_TOL.get(name, 1e-12), f"{name}: bias"
        links = poses(q)
        for body, (rotation, position) in ref.body_poses().items():
            k = model.link_names.index(body)
            assert np.abs(np.asarray(links.rotation[k]) - rotation).max() < TOL, f"{name}: rotation of {body}"
            assert np.abs(np.asarray(links.position[k]) - position).max() < TOL, f"{name}: position of {body}"


def test_the_armature_is_in_the_mass_matrix(pair):
    """The armature enters both engines' mass matrices: a model without it differs by exactly it."""
    name, model, ref = pair
    if not np.any(ref.m.dof_armature):
        pytest.skip(f"{name} has no armature")
    q, _, m_ref, _ = ref.terms(*ref.random_state(np.random.default_rng(1)))
    bare = model.replace(dof_armature=model.dof_armature * 0)
    diff = np.asarray(jaxmor.mass_matrix(model, q) - jaxmor.mass_matrix(bare, q))
    np.testing.assert_allclose(np.diag(diff), ref.m.dof_armature[ref.qvel], atol=1e-12)
    assert rel_err(jaxmor.mass_matrix(model, q), m_ref) < TOL


def test_joint_limits_damping_friction_and_springs_are_mujocos(pair):
    name, model, ref = pair
    m = ref.m
    hinge = [j for j in range(m.njnt) if m.jnt_type[j] in (2, 3)]  # slide, hinge
    for j in hinge:
        joint = m.joint(j).name or f"joint{j}"
        v = jaxmor.joint_index(model, joint)
        lower, upper = m.jnt_range[j] if m.jnt_limited[j] else (-np.inf, np.inf)
        dof = m.jnt_dofadr[j]
        expected = {
            "dof_lower": lower,
            "dof_upper": upper,
            "dof_damping": m.dof_damping[dof],
            "dof_friction": m.dof_frictionloss[dof],
            "dof_armature": m.dof_armature[dof],
            "dof_stiffness": m.jnt_stiffness[j],
            "dof_springref": m.qpos_spring[m.jnt_qposadr[j]],
        }
        for field, value in expected.items():
            assert float(getattr(model, field)[v]) == pytest.approx(value, abs=1e-12), f"{name}: {joint} {field}"
    np.testing.assert_allclose(np.asarray(model.q_default), m.qpos0[ref.qpos], atol=1e-12)
    assert float(model.opt.timestep) == m.opt.timestep
    np.testing.assert_array_equal(np.asarray(model.opt.gravity), m.opt.gravity)


# --------------------------------------------------------------------------------------------------
# The Go2 falling onto its feet and standing, in both engines, and the comparison helper itself.

FEET = ("FL", "FR", "RL", "RR")


@pytest.fixture(scope="module")
def go2_landing():
    """1 s of the Go2 (``scene_mjx.xml``: position servos held at the home keyframe's targets) dropped from 5 cm
    above the home pose, in both engines. MuJoCo's cone is set to elliptic, as in ``go2.xml`` (the MJX variant
    picks pyramidal for speed): its pyramidal cone lets the feet slide 9-15 mm apart while landing (measured),
    which jaxmor's Coulomb disk, like MuJoCo's elliptic cone, does not."""
    from jaxmor.tools import compare

    path = mjcf_model("go2/scene_mjx.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(path)
    mj_model = mujoco.MjModel.from_xml_path(str(path))
    mj_model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    pair = compare.Pair(model, mj_model)
    data = mujoco.MjData(mj_model)
    mujoco.mj_resetDataKeyframe(mj_model, data, 0)
    qpos = data.qpos.copy()
    qpos[2] += 0.05
    report = compare.rollout(pair, qpos, np.zeros(mj_model.nv), data.ctrl.copy(), 500)
    feet = [k for k, (g, _) in enumerate(pair.geoms) if model.geom_names[g] in FEET]
    radius = float(mj_model.geom_size[pair.geoms[feet[0]][1], 0])
    return report, feet, radius


@pytest.mark.slow
def test_go2_lands_and_stands_like_mujoco(go2_landing):
    """Contacts, foot heights and the standing height of the base over 1 s.

    Tolerances, from the two contact models: jaxmor's contacts are hard, MuJoCo's soft (solref/solimp: the
    MJX Go2's feet, ``solimp="0.015 1 0.031"``, sink up to 22 mm and rest 17 mm deep, measured). So a foot's
    height agrees once MuJoCo's own sinking ``r - z_mujoco`` is added (to 1e-4 m: measured 3e-6), and the base's
    height at rest is compared above the feet's lowest points (each engine's foot height minus the radius),
    within 5 mm (measured 1.3 mm; the servos' sag under the robot's weight is the same law in both).
    """
    report, feet, radius = go2_landing
    contacts = report["contacts"]
    touchdown = int(np.argmax(contacts.mujoco > 0))
    assert 10 < touchdown < 100 and contacts.jaxmor[touchdown] > 0  # the same step
    # Every foot touches from then on, in both engines, and nothing else does; at most one step differs.
    assert np.count_nonzero(contacts.jaxmor != contacts.mujoco) <= 1
    np.testing.assert_array_equal(contacts.jaxmor[touchdown + 10 :], 4)
    # Falling: the same state in both (semi-implicit steps of gravity and the servos).
    q = report["q"]
    assert np.abs(q.jaxmor[:touchdown] - q.mujoco[:touchdown]).max() < 1e-9
    z = report["geom_position"]
    foot_j, foot_m = z.jaxmor[:, feet, 2], z.mujoco[:, feet, 2]
    sinking = np.maximum(radius - foot_m, 0.0)
    assert sinking.max() < 0.03  # MuJoCo's reference behaves (its feet never sink more than 3 cm)
    np.testing.assert_array_less(np.abs(foot_j - foot_m) - sinking, 1e-4)
    # jaxmor's feet stand on the ground: no sinking, no bounce, from touchdown on.
    assert np.abs(foot_j[touchdown + 5 :] - radius).max() < 1e-5
    # Horizontally the feet stay where they landed in both (MuJoCo's soft friction creeps: measured 2 mm).
    assert np.abs(z.jaxmor[:, feet, :2] - z.mujoco[:, feet, :2]).max() < 3e-3
    # At rest (the last 0.1 s): the base's height above the feet's lowest points.
    rest = slice(-50, None)
    above_j = q.jaxmor[rest, 2] - (foot_j[rest].mean(axis=1) - radius)
    above_m = q.mujoco[rest, 2] - (foot_m[rest].mean(axis=1) - radius)
    assert np.abs(above_j - above_m).max() < 5e-3
    assert np.abs(q.jaxmor[rest, 2] - q.jaxmor[-1, 2]).max() < 1e-3  # jaxmor's base has come to rest


def test_the_mjx_humanoid_falls_as_in_mujoco_until_its_feet_touch():
    """mujoco-mjx's humanoid (feet against the floor only through explicit ``<pair>``s; its other geoms visual)
    dropped from 0.2 m above ``qpos0``: the same states in both engines (1e-9, measured 4e-16) until either
    reports a contact, and the first contacts within a step of each other (jaxmor's contacts count from the step
    that would reach the floor, MuJoCo's once the feet touch it), both the four foot capsules' (two points each)."""
    from jaxmor.tools import compare

    path = mjcf_model("mjx-humanoid")
    if path is None:
        pytest.skip("mujoco-mjx's test data is not installed (a package of the test extra)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(path)
    mj_model = mujoco.MjModel.from_xml_path(str(path))
    qpos = mj_model.qpos0.copy()
    qpos[2] += 0.2
    report = compare.rollout(compare.Pair(model, mj_model), qpos, np.zeros(mj_model.nv), np.zeros(mj_model.nu), 60)
    contacts, q = report["contacts"], report["q"]
    first = [int(np.argmax(c > 0)) for c in (contacts.jaxmor, contacts.mujoco)]
    assert 20 < min(first) and abs(first[0] - first[1]) <= 1 and contacts.mujoco[first[1]] == 8, first
    before = min(first)
    assert np.abs(q.jaxmor[:before] - q.mujoco[:before]).max() < TOL


def _moved(m) -> float:
    """How far MuJoCo moved geoms it found in their body's inertial frame [m]: it flags a geom whose frame lies
    within its compiler's tolerance of that frame ``mjSAMEFRAME_INERTIA`` and places it at ``xipos`` instead of at
    ``xpos + xmat geom_pos`` (the dog's humeri by 2.9e-7 m); jaxmor places every geom at its ``pos``."""
    same = m.geom_sameframe == mujoco.mjtSameFrame.mjSAMEFRAME_INERTIA
    if not same.any():
        return 0.0
    return float(np.abs(m.geom_pos[same] - m.body_ipos[m.geom_bodyid[same]]).max())


def test_compare_converts_as_the_reference_does(pair):
    """``jaxmor.tools.compare``'s conversions and quantities against the test reference's (independent code)."""
    from jaxmor.tools import compare

    name, model, ref = pair
    helper = compare.Pair(model, ref.m)
    rng = np.random.default_rng(3)
    qpos, qvel = ref.random_state(rng)
    q, u, m_ref, b_ref = ref.terms(qpos, qvel)
    got_q, got_u = helper.from_mujoco(qpos, qvel)
    np.testing.assert_allclose(got_q, q, atol=1e-15)
    np.testing.assert_allclose(got_u, u, atol=1e-12)
    back = helper.to_mujoco(got_q, got_u)
    np.testing.assert_allclose(back[0], qpos, atol=1e-15)
    np.testing.assert_allclose(back[1], qvel, atol=1e-12)
    report = compare.dynamics(helper, qpos, qvel)
    np.testing.assert_allclose(report["mass_matrix"].mujoco, m_ref, atol=1e-12)
    np.testing.assert_allclose(report["bias"].mujoco, b_ref, atol=1e-12)
    assert report["mass_matrix"].max_abs < TOL * max(1.0, report["mass_matrix"].scale), name
    assert report["bias"].max_abs < TOL * max(1.0, report["bias"].scale), name
    assert report["body_position"].max_abs < TOL and report["geom_position"].max_abs < TOL + _moved(ref.m), name
    assert "mass_matrix" in str(report)


@pytest.mark.slow
def test_compare_rollout_steps_mujoco_as_mj_step_does(go2_landing):
    """The MuJoCo side of ``compare.rollout`` is MuJoCo's own trajectory: replayed here with ``mj_step``."""
    path = mjcf_model("go2/scene_mjx.xml")
    mj_model = mujoco.MjModel.from_xml_path(str(path))
    mj_model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    data = mujoco.MjData(mj_model)
    mujoco.mj_resetDataKeyframe(mj_model, data, 0)
    data.qpos[2] += 0.05
    report, _, _ = go2_landing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = MujocoReference(jaxmor.load_mjcf(path, meshes="ignore"), mj_model)
    for k in range(60):
        mujoco.mj_step(mj_model, data)
        np.testing.assert_allclose(report["q"].mujoco[k], data.qpos[ref.qpos], atol=1e-15)
