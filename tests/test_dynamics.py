"""Mass matrix, bias force and forward dynamics against Pinocchio (and MuJoCo), in float64.

The reference values are converted to jaxmor's conventions in ``tests/reference.py``
(validation-anchors §1.4). States are random and ignore joint limits.

Tolerance: ``max |jaxmor - ref| <= 1e-9 * max(1, max |ref|)``. Both sides are float64 recursions
(round-off ~1e-16 per operation, growing with the depth of the tree); Pinocchio and MuJoCo agree to
~1e-14 on these quantities, and jaxmor agrees with Pinocchio to ~1e-15 here. Forward dynamics
also goes through a linear solve, which multiplies the round-off by the condition number of ``M``
(up to ~1e4 for these robots), so 1e-9 leaves a wide margin while still catching any wrong term
(convention mix-ups are O(1), validation-anchors §1.4).

Compile cost: the three functions are jitted together once per model (``_terms``, cached by the
model's pytree structure) and reused across configurations; talos (33 bodies) dominates.
"""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF
from reference import TESTBOT, PinReference, load, missing_robot_reason, mujoco_terms, random_state, rel_err, robot_urdf

import jaxmor
from jaxmor.sim.dynamics import dynamics
from jaxmor.sim.kinematics import kinematics

pin = pytest.importorskip("pinocchio")

TOL = 1e-9
N_CONFIGS = 6

# name -> (example-robot-data path, or None for the bundled testbot; floating base)
MODELS = {
    "testbot": (None, True),  # revolute + unaligned prismatic + continuous + fixed sensor link
    "go1": ("go1_description/urdf/go1.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "panda": ("panda_description/urdf/panda.urdf", False),  # root 'panda_link0' is welded to the world
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
    # a zero inertia with a 2.4e-35 entry and round-off offsets down to 1e-66: loads, same dynamics
    "icub": ("icub_description/robots/icub.urdf", True),
}


def _terms_impl(model, q, u, tau):
    return jaxmor.mass_matrix(model, q), jaxmor.bias_force(model, q, u), jaxmor.forward_dynamics(model, q, u, tau)


_terms = jax.jit(_terms_impl)


def _urdf(name: str):
    relative, _ = MODELS[name]
    if relative is None:
        return TESTBOT
    path = robot_urdf(relative)
    if path is None:
        pytest.skip(missing_robot_reason(relative))
    return path


@pytest.fixture(scope="module", params=list(MODELS))
def robot(request):
    """(name, jaxmor model, Pinocchio reference, URDF path)."""
    name = request.param
    path = _urdf(name)
    model = load(path, MODELS[name][1])
    return name, model, PinReference(model, path), path


@pytest.fixture(scope="module")
def testbot():
    model = load(TESTBOT, True)
    return model, PinReference(model, TESTBOT)


# --------------------------------------------------------------------------------------------------
# Pinocchio comparisons


def test_against_pinocchio(robot):
    name, model, ref, _ = robot
    _check_terms(name, model, ref, np.random.default_rng(sum(map(ord, name))), N_CONFIGS)


def _check_terms(name, model, ref, rng, count):
    """``M``, ``b`` and forward dynamics against Pinocchio at ``count`` random states (module tolerance)."""
    for _ in range(count):
        q, u, tau = random_state(model, rng)
        m, b, du = (np.asarray(x) for x in _terms(model, q, u, tau))
        m_ref, b_ref, du_ref = ref.mass_matrix(q), ref.bias_force(q, u), ref.forward_dynamics(q, u, tau)
        assert rel_err(m, m_ref) <= TOL, (name, "M", rel_err(m, m_ref))
        assert rel_err(b, b_ref) <= TOL, (name, "b", rel_err(b, b_ref))
        assert rel_err(du, du_ref) <= TOL, (name, "forward dynamics", rel_err(du, du_ref))
        assert rel_err(m, m.T) <= 1e-14  # T^T M_l T is symmetric up to round-off, not bitwise
        assert rel_err(m @ du + b, tau) <= TOL


def test_zero_velocity_bias_is_gravity(testbot):
    """Sanity check of the reference conversion: at u = 0 the bias is pure gravity, and on a free
    base its linear part is exactly the weight, -m_total g (world frame)."""
    model, ref = testbot
    q, _, tau = random_state(model, np.random.default_rng(3))
    _, b, _ = _terms(model, q, np.zeros(model.nv), tau)
    total = float(np.sum(np.asarray(model.body_mass)))
    np.testing.assert_allclose(np.asarray(b)[:3], -total * np.asarray(model.opt.gravity), rtol=1e-12, atol=1e-12)
    assert rel_err(b, ref.bias_force(q, np.zeros(model.nv))) <= TOL


def _with_rotor_inertia(text: str, values: dict[str, float]) -> str:
    root = ET.fromstring(text)
    for joint in root.findall("joint"):
        if joint.get("name") in values:
            dyn = joint.find("dynamics")
            if dyn is None:
                dyn = ET.SubElement(joint, "dynamics")
            dyn.set("rotor_inertia", repr(values[joint.get("name")]))
    return ET.tostring(root, encoding="unicode")


def test_rotor_inertia_matches_pinocchio_armature():
    """``<dynamics rotor_inertia>`` adds to M's diagonal like Pinocchio's ``model.armature``, and
    forward dynamics sees it (Pinocchio's ABA uses the armature)."""
    path = _urdf("panda")
    plain = load(path, False)
    values = {name: 0.05 * (k + 1) for k, name in enumerate(plain.joint_names)}
    text = _with_rotor_inertia(path.read_text(), values)
    model = load(text, False)
    armature = np.array([values[n] for n in model.joint_names])
    np.testing.assert_array_equal(np.asarray(model.dof_armature), armature)
    # Same topology as the plain model; relabel the source so the cached compile is reused.
    model = model.replace(source=plain.source)
    ref = PinReference(model, path, armature=armature)
    ref_plain = PinReference(plain, path)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, u, tau = random_state(model, rng)
        m, b, du = (np.asarray(x) for x in _terms(model, q, u, tau))
        assert rel_err(m, ref.mass_matrix(q)) <= TOL
        assert rel_err(m - ref_plain.mass_matrix(q), np.diag(armature)) <= TOL
        assert rel_err(b, ref.bias_force(q, u)) <= TOL
        assert rel_err(du, ref.forward_dynamics(q, u, tau)) <= TOL


# --------------------------------------------------------------------------------------------------
# MuJoCo as a second opinion (free base: world linear / local angular velocity)


def _strip_geometry(text: str) -> str:
    """Drop visuals and collisions: MuJoCo cannot read the meshes, and every link has an <inertial>."""
    text = re.sub(r"<visual\b.*?</visual>", "", text, flags=re.S)
    return re.sub(r"<collision\b.*?</collision>", "", text, flags=re.S)


@pytest.mark.parametrize("name", ["testbot", "go1"])
def test_against_mujoco(name):
    pytest.importorskip("mujoco")
    path = _urdf(name)
    text = path.read_text()
    if name == "go1":
        # go1's massless 'base' link has a rank-1 inertia (every entry 1e-6), which MuJoCo rejects
        # ("inertia must have positive eigenvalues"). Zero its products on both sides.
        rank1 = 'ixx="1e-6" ixy="1e-6" ixz="1e-6" iyy="1e-6" iyz="1e-6" izz="1e-6"'
        assert rank1 in text
        text = text.replace(rank1, 'ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"', 1)
    # Same topology as the file's model; relabel the source so the cached compile is reused.
    model = load(text, True).replace(source=load(path, True).source)
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, u, tau = random_state(model, rng)
        m, b, _ = _terms(model, q, u, tau)
        m_mj, b_mj = mujoco_terms(_strip_geometry(text), model, q, u)
        assert rel_err(m, m_mj) <= TOL, rel_err(m, m_mj)
        assert rel_err(b, b_mj) <= TOL, rel_err(b, b_mj)


# --------------------------------------------------------------------------------------------------
# Transformations: vmap, derivatives, float32


def test_vmap_matches_loop(testbot):
    model, _ = testbot
    rng = np.random.default_rng(5)
    states = [random_state(model, rng) for _ in range(64)]
    qs, us, taus = (np.stack(s) for s in zip(*states, strict=True))
    batched = jax.jit(jax.vmap(_terms_impl, in_axes=(None, 0, 0, 0)))(model, qs, us, taus)
    for k in range(64):
        single = _terms(model, qs[k], us[k], taus[k])
        for x_batch, x_single in zip(batched, single, strict=True):
            assert rel_err(x_batch[k], x_single) <= 1e-12


def _central_jacobian(f, x, h):
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def test_forward_dynamics_jacobians_match_finite_differences(testbot):
    """jacfwd w.r.t. u, tau and the joint coordinates against central differences (h = 1e-6: the
    truncation error ~h^2 and the round-off ~1e-16/h are both far below the 1e-6 tolerance)."""
    model, _ = testbot
    q, u, tau = random_state(model, np.random.default_rng(13))
    nj = model.nq - 7

    def fd(qj, u, tau):
        return jaxmor.forward_dynamics(model, jnp.concatenate([jnp.asarray(q[:7]), qj]), u, tau)

    jac = jax.jit(jax.jacfwd(fd, argnums=(0, 1, 2)))
    fd_jit = jax.jit(fd)
    d_qj, d_u, d_tau = (np.asarray(x) for x in jac(q[7:], u, tau))
    assert d_qj.shape == (model.nv, nj)
    h = 1e-6
    for analytic, numeric in (
        (d_qj, _central_jacobian(lambda x: fd_jit(x, u, tau), q[7:], h)),
        (d_u, _central_jacobian(lambda x: fd_jit(q[7:], x, tau), u, h)),
        (d_tau, _central_jacobian(lambda x: fd_jit(q[7:], u, x), tau, h)),
    ):
        assert rel_err(analytic, numeric) <= 1e-6, rel_err(analytic, numeric)
    # d(du)/d(tau) = M^-1 exactly.
    m, _, _ = _terms(model, q, u, tau)
    assert rel_err(d_tau @ np.asarray(m), np.eye(model.nv)) <= 1e-12


def test_grad_wrt_model_parameters(testbot):
    """jax.grad of a scalar of forward_dynamics w.r.t. body masses, COMs and rotor inertias."""
    model, _ = testbot
    q, u, tau = random_state(model, np.random.default_rng(17))
    weights = np.random.default_rng(18).normal(size=model.nv)

    def loss(mass, com, armature):
        m = model.replace(body_mass=mass, body_com=com, dof_armature=armature)
        return jnp.dot(weights, jaxmor.forward_dynamics(m, q, u, tau))

    params = (np.asarray(model.body_mass), np.asarray(model.body_com), np.asarray(model.dof_armature) + 0.01)
    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(*params)
    loss_jit = jax.jit(loss)
    h = 1e-6
    for k, (param, grad) in enumerate(zip(params, grads, strict=True)):

        def f(x, k=k, shape=param.shape):
            args = list(params)
            args[k] = x.reshape(shape)
            return loss_jit(*args)

        numeric = _central_jacobian(f, param.ravel(), h).reshape(param.shape)
        assert rel_err(grad, numeric) <= 1e-6, (k, rel_err(grad, numeric))


def test_float32(testbot):
    """float32 inputs give float32 outputs within ~2e-5 relative of float64 (validation-anchors §1.4:
    eps32 ~1.2e-7 times the tree depth and conditioning)."""
    model, _ = testbot
    rng = np.random.default_rng(19)
    for _ in range(3):
        q, u, tau = random_state(model, rng)
        out64 = _terms(model, q, u, tau)
        out32 = _terms(model, *(np.asarray(x, np.float32) for x in (q, u, tau)))
        for x32, x64 in zip(out32, out64, strict=True):
            assert x32.dtype == jnp.float32
            assert rel_err(x32, x64) <= 2e-5, rel_err(x32, x64)


# --------------------------------------------------------------------------------------------------
# The bias's velocity derivative D = db/du (Dynamics.bias_jacobian, the implicit integrator's term)

GO2_MJCF = Path(__file__).resolve().parent / "data" / "unitree_go2" / "scene_mjx.xml"
D_TOL = 1e-12


def _quiet(loader, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return loader(*args, **kwargs)


def _bias_jacobian_models():
    """name -> loader: floating and fixed bases, revolute and prismatic joints, several free bodies."""
    return {
        "quadruped": lambda: load(QUADRUPED_URDF, True),
        "testbot": lambda: load(TESTBOT, True),  # revolute + unaligned prismatic + continuous
        "testbot_fixed": lambda: load(TESTBOT, False),  # the same chain welded to the world
        "panda": lambda: load(_urdf("panda"), False),
        "go2": lambda: _quiet(jaxmor.load_mjcf, GO2_MJCF, meshes="ignore"),  # MJCF, with its torsional friction
        "quadruped_and_boxes": lambda: jaxmor.add_free_body(
            jaxmor.add_free_body(load(QUADRUPED_URDF, True), "a", "box", [0.1, 0.2, 0.3], 2.0), "b", "sphere", 0.1, 1.0
        ),
    }


def _random_state_all_free(model, rng):
    """``random_state`` with every free joint's quaternion random (not only the first)."""
    q, u, _ = random_state(model, rng)
    for start in model.free_q:
        quat = rng.normal(size=4)
        q[start + 3 : start + 7] = quat / np.linalg.norm(quat)
    return q, 3.0 * u  # fast enough that the velocity terms dominate gravity


def _bias_jacobian(model, q, u):
    model = model.replace(opt=model.opt.replace(implicit_bias="kahan"))
    return dynamics(model, kinematics(model, q), u).bias_jacobian


@pytest.mark.parametrize("name", list(_bias_jacobian_models()))
def test_bias_jacobian_matches_forward_mode_of_the_bias(name):
    """``Dynamics.bias_jacobian`` equals ``jax.jacfwd`` of the public ``bias_force`` w.r.t. ``u`` (forward-mode
    differentiation of the recursion, independent of the closed form) to round-off, at random states."""
    model = _bias_jacobian_models()[name]()
    rng = np.random.default_rng(sum(map(ord, name)))
    closed = jax.jit(_bias_jacobian)
    oracle = jax.jit(jax.jacfwd(jaxmor.bias_force, argnums=2))
    for _ in range(4):
        q, u = _random_state_all_free(model, rng)
        d, d_ref = np.asarray(closed(model, q, u)), np.asarray(oracle(model, q, u))
        assert d.shape == (model.nv, model.nv)
        err = np.max(np.abs(d - d_ref)) / np.max(np.abs(d_ref))
        assert err <= D_TOL, (name, err)
    # b is quadratic in u plus gravity: D(u) u = 2 (b(u) - b(0)).
    b, b0 = (np.asarray(jaxmor.bias_force(model, q, x)) for x in (u, np.zeros(model.nv)))
    assert rel_err(d @ u, 2.0 * (b - b0)) <= 1e-11


def test_bias_jacobian_derivatives_match_forward_mode(testbot):
    """The closed form's own derivatives (w.r.t. body masses by reverse mode, w.r.t. ``q`` by forward mode)
    equal those of the forward-mode oracle: the gradient through the implicit term is exact too."""
    model, _ = testbot
    q, u = _random_state_all_free(model, np.random.default_rng(23))
    weights = np.random.default_rng(24).normal(size=(model.nv, model.nv))

    def closed(mass, q):
        return jnp.sum(weights * _bias_jacobian(model.replace(body_mass=mass), q, u))

    def oracle(mass, q):
        m = model.replace(body_mass=mass)
        return jnp.sum(weights * jax.jacfwd(jaxmor.bias_force, argnums=2)(m, q, u))

    mass = np.asarray(model.body_mass)
    for argnum in (0, 1):
        diff = jax.grad if argnum == 0 else jax.jacfwd
        got, ref = (np.asarray(jax.jit(diff(f, argnums=argnum))(mass, q)) for f in (closed, oracle))
        assert rel_err(got, ref) <= 1e-11, (argnum, rel_err(got, ref))


@pytest.mark.parametrize("n", [1, 6, 18])
def test_both_forms_of_the_elimination_solve_the_system(n):
    """The Gauss-Jordan elimination as a loop (the CPU's) and unrolled (a GPU's) give the same ``a^-1 b`` as
    numpy's LU solve, for the effective mass's kind of matrix (symmetric positive definite plus a small
    non-symmetric term): 1e-12 relative in float64 (condition numbers of a few hundred here)."""
    from jaxmor.math import _eliminate_looped, _eliminate_unrolled, gauss_jordan

    rng = np.random.default_rng(n)
    root = rng.normal(size=(n, n))
    a = root @ root.T + n * np.eye(n) + 0.05 * rng.normal(size=(n, n))
    b = rng.normal(size=(n, 3))
    want = np.linalg.solve(a, b)
    aug = jnp.concatenate([jnp.asarray(a), jnp.asarray(b)], axis=1)
    for form in (_eliminate_looped, _eliminate_unrolled):
        got = np.asarray(jax.jit(form)(aug))[:, n:]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(np.asarray(gauss_jordan(jnp.asarray(a), jnp.asarray(b))), want, rtol=1e-12, atol=1e-12)


def _deep_chain_urdf(n: int) -> str:
    """n links in a chain, joint axes cycling through x, y, z and a tilted axis, every fifth joint prismatic,
    links with offset centres of mass and full inertia tensors."""
    axes = ("1 0 0", "0 1 0", "0 0 1", "0.6 0 0.8")
    parts, parent = (
        [
            '<robot name="deep"><link name="base"><inertial><mass value="1"/>'
            '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        ],
        "base",
    )
    for i in range(n):
        kind = "prismatic" if i % 5 == 4 else "revolute"
        parts.append(
            f'<link name="l{i}"><inertial><origin xyz="0.04 0.01 {0.002 * i}"/><mass value="{0.1 + 0.01 * i}"/>'
            '<inertia ixx="2e-4" iyy="3e-4" izz="4e-4" ixy="1e-5" ixz="-2e-5" iyz="3e-5"/></inertial></link>'
            f'<joint name="j{i}" type="{kind}"><parent link="{parent}"/><child link="l{i}"/>'
            f'<origin xyz="0.1 0 0.01" rpy="0.1 0 {0.2 * (i % 3)}"/><axis xyz="{axes[i % 4]}"/>'
            '<limit lower="-3" upper="3" effort="10" velocity="10"/></joint>'
        )
        parent = f"l{i}"
    return "".join(parts) + "</robot>"


def test_a_chain_deeper_than_the_unrolled_levels_against_pinocchio():
    """31 levels (more than ``UNROLLED_LEVELS``): the traversal runs as a loop over the levels; the terms
    equal Pinocchio's to the module's tolerance on a free-floating chain of mixed joints."""
    from jaxmor.sim.kinematics import UNROLLED_LEVELS, tree_levels

    text = _deep_chain_urdf(30)
    model = load(text, True)
    assert len(tree_levels(tuple(model.body_parent))) > UNROLLED_LEVELS
    _check_terms("deep chain", model, PinReference(model, text), np.random.default_rng(31), 3)


def test_each_bodys_columns_are_the_velocities_that_move_it():
    """The dynamics keep each body's Jacobian only at the velocities of the body and its ancestors
    (``dynamics.ancestor_columns``): on the quadruped, the base's 6 and the leg's 3 of 18. Checked against the
    kinematics at a random pose: a joint's velocity is in a body's list exactly when its coordinate moves the body
    (a nonzero derivative of the body's world pose), and the base's six are in every list. A chain, whose last
    body depends on every velocity, keeps the dense columns (``None``)."""
    from jaxmor.sim.dynamics import ancestor_columns

    model = load(QUADRUPED_URDF, True)
    widths = tuple(jaxmor.JointType(k).dof_width() for k in model.body_joint_type)
    table = ancestor_columns(tuple(model.body_parent), tuple(model.body_v_start), widths)
    assert table is not None and table[0].shape == (model.nb, 9)
    q = jnp.asarray(random_state(model, np.random.default_rng(3))[0])

    def pose(q):
        bodies = kinematics(model, q).body
        return jnp.concatenate([bodies.position, bodies.rotation.reshape(model.nb, 9)], 1)

    moves = np.abs(np.asarray(jax.jacfwd(pose)(q))).max(1) > 1e-12  # (nb, nq): coordinate k moves body b
    base = model.body_joint_type.index(jaxmor.JointType.FREE)
    for b in range(model.nb):
        expected = set(range(model.body_v_start[base], model.body_v_start[base] + 6))
        expected |= {model.body_v_start[j] for j in range(model.nb) if j != base and moves[b, model.body_q_start[j]]}
        listed = table[0][b][table[0][b] < model.nv]
        assert set(listed.tolist()) == expected, b
    assert ancestor_columns((-1, 0, 1), (0, 1, 2), (1, 1, 1)) is None
