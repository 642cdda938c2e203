"""jaxmor against MuJoCo on third-party MJCF models nobody here wrote (float64).

Models, all read from files installed offline: the Menagerie Unitree Go2 (``../shared/robots/unitree_go2``,
``scene.xml`` and ``scene_mjx.xml``), the Barkour quadruped of mujoco-mjx's test data (its flat floor in place of
the height field jaxmor refuses), and the dm_control suite's cheetah, walker, hopper and humanoid (the
dm-control wheel's XML files, read as files: dm_control is not imported). They cover free and fixed bases,
slide and hinge roots, several joints in one body with anchors off the body's origin, inertias from explicit
``<inertial>`` elements and from geoms (capsules given by ``fromto``, ``settotalmass``), degrees and
radians, default classes and ``childclass``, armature.

The reference is MuJoCo (``mujoco``): ``mj_fullM``, ``qfrc_bias``, ``xpos``/``xmat`` after ``mj_forward``,
converted to jaxmor's conventions by ``tests/reference.py`` (MuJoCo's free-joint angular velocity is in the
body frame). Tolerance 1e-9 relative to ``max(1, max |reference|)``: both engines compute the same recursive
algorithms in float64 (measured: 5e-14 at most); 1e-9 leaves room for the round-off of deeper trees and
catches any modelling difference (a wrong inertia, axis or anchor gives 1e-3 or more).
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
MODELS = ["go2/scene.xml", "go2/scene_mjx.xml", "barkour", "cheetah", "walker", "hopper", "humanoid"]


def _path(name: str, tmp_path_factory) -> str:
    if name == "barkour":
        path = barkour_on_a_plane(tmp_path_factory.mktemp("barkour"))
    else:
        path = mjcf_model(name)
    if path is None:
        pytest.skip(f"{name} is not installed (the Go2 is read from ../shared/robots, or $JAXMOR_GO2_DIR)")
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
        assert rel_err(mass(q), m_ref) < TOL, f"{name}: mass matrix"
        assert rel_err(bias(q, u), b_ref) < TOL, f"{name}: bias"
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
