"""Centre-of-mass offsets in ``jaxmor.randomize`` (``"body.com"``), tested against the moments.

Sources of the expected values (never the code under test):

* the moments of the distributions over ``N`` seeded worlds: uniform ``(a + b)/2`` and ``(b - a)^2 / 12``, normal
  ``mean`` and ``std^2``, each within 5 standard errors (the mean's ``std / sqrt(N)``; the sample variance's
  ``var sqrt(0.8 / N)`` for a uniform, from its fourth moment ``(b - a)^4 / 80``, and ``var sqrt(2 / N)`` for a
  normal), and the axes' correlation within ``5 / sqrt(N)`` of 0;
* the first moment of the mass: the total centre of mass ``sum m_i c_i / sum m_i`` with ``c_i = p_i + R_i com_i``
  from the body frames' forward kinematics, moved by ``sum m_i R_i d_i / sum m_i``;
* statics: at zero velocity the bias ``b(q, 0)`` holds gravity, so its free-base rows (``v`` of the base origin,
  ``w``, both in the world frame: README "Conventions") are ``-M g`` and ``-(c - p_base) x M g``, and each hinge's
  row ``-a . sum_subtree (c_i - o) x m_i g``;
* the second moment: the base's 6 x 6 block of ``M(q)`` is the composite rigid body's inertia about the base origin,
  ``[[M E, -M [r]x], [M [r]x, sum R_i I_i R_i^T + m_i (|r_i|^2 E - r_i r_i^T)]]`` with ``r = c - p_base`` and the
  inertia ``I_i`` about each body's centre of mass unchanged by the offset.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor import ArgumentError
from jaxmor.sim.kinematics import body_poses

N = 4096  # worlds for the moments
SE = 5.0  # standard errors allowed


@pytest.fixture(scope="module")
def quadruped():
    """The shipped quadruped in float64 (tests/conftest.py enables x64 for the session; checked here)."""
    assert jax.config.jax_enable_x64
    return jaxmor.load_urdf(jaxmor.robots.path("quadruped"))


def _offsets(models: jaxmor.Model, model: jaxmor.Model) -> np.ndarray:
    """(n, nb, 3) drawn offsets: each world's centres of mass less the nominal ones [m]."""
    return np.asarray(models.body_com) - np.asarray(model.body_com)


def _mean_ok(x: np.ndarray, mean: float, std: float) -> float:
    """The sample mean's distance from ``mean``, in standard errors (asserted within ``SE``)."""
    z = abs(x.mean() - mean) / (std / math.sqrt(x.size))
    assert z <= SE, (x.mean(), mean, z)
    return z


def _var_ok(x: np.ndarray, var: float, relative_se: float) -> float:
    """The sample variance's distance from ``var``, in standard errors ``var * relative_se``."""
    z = abs(x.var() - var) / (var * relative_se)
    assert z <= SE, (x.var(), var, z)
    return z


def test_offsets_have_the_moments_of_their_distribution_per_axis(quadruped):
    a = np.array([0.01, 0.02, 0.05])  # per-axis half widths [m]
    spec = {"body.com": jaxmor.uniform(-a, a, select=["base", "LF_FOOT"])}  # a link selects its body (LF_SHANK)
    models, axes = jaxmor.randomize(quadruped, jax.random.key(11), N, spec)
    d = _offsets(models, quadruped)
    selected = [quadruped.body_names.index(b) for b in ("base", "LF_SHANK")]
    worst_mean = worst_var = worst_r = 0.0
    for b in selected:
        for k in range(3):
            worst_mean = max(worst_mean, _mean_ok(d[:, b, k], 0.0, a[k] / math.sqrt(3)))
            worst_var = max(worst_var, _var_ok(d[:, b, k], a[k] ** 2 / 3, math.sqrt(0.8 / N)))
            assert np.all(np.abs(d[:, b, k]) <= a[k])
        r = np.corrcoef(d[:, b].T)[np.triu_indices(3, 1)]  # the axes are drawn independently
        worst_r = max(worst_r, float(np.max(np.abs(r))) * math.sqrt(N))
        assert worst_r <= SE, r
    print(f"uniform: worst |mean| {worst_mean:.2f} SE, |var| {worst_var:.2f} SE, |corr| {worst_r:.2f} SE")
    others = [i for i in range(quadruped.nb) if i not in selected]
    assert np.all(d[:, others] == 0.0)  # unselected bodies keep their centre of mass exactly
    assert axes.body_com == 0 and axes.body_inertia is None and axes.body_mass is None
    assert models.body_inertia is quadruped.body_inertia  # about the centre of mass: unchanged, shared
    assert models.body_com.dtype == quadruped.body_com.dtype
    again, _ = jaxmor.randomize(quadruped, jax.random.key(11), N, spec)
    np.testing.assert_array_equal(again.body_com, models.body_com)  # the same key, the same worlds


def test_normal_offsets_and_shared_offsets(quadruped):
    mean, std = np.array([0.01, 0.0, -0.02]), 0.01
    models, _ = jaxmor.randomize(quadruped, jax.random.key(5), N, {"body.com": jaxmor.normal(mean, std)})
    d = _offsets(models, quadruped)
    worst_mean = worst_var = 0.0
    for k in range(3):
        x = d[:, :, k].reshape(-1)  # every body independently: N * nb draws per axis
        worst_mean = max(worst_mean, _mean_ok(x, mean[k], std))
        worst_var = max(worst_var, _var_ok(x, std**2, math.sqrt(2.0 / x.size)))
    print(f"normal: worst |mean| {worst_mean:.2f} SE, |var| {worst_var:.2f} SE")
    # shared: one offset (3,) per world for all selected bodies, different across worlds and axes
    legs = ["LF_SHANK", "RF_SHANK", "LH_SHANK", "RH_SHANK"]
    models, _ = jaxmor.randomize(
        quadruped, jax.random.key(6), 64, {"body.com": jaxmor.uniform(-0.03, 0.03, select=legs, shared=True)}
    )
    d = _offsets(models, quadruped)
    b = [quadruped.body_names.index(n) for n in legs]
    assert np.all(d[:, b] == d[:, b[:1]])
    assert np.unique(d[:, b[0], 0]).size == 64
    assert np.all(d[:, b[0], 0] != d[:, b[0], 1]) and np.all(d[:, b[0], 1] != d[:, b[0], 2])
    assert np.all(np.delete(d, b, axis=1) == 0.0)


def _centres(model: jaxmor.Model, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Body rotations (nb, 3, 3), origins (nb, 3) and centres of mass (nb, 3) in the world [m] at ``q``."""
    poses = body_poses(model, jnp.asarray(q))
    rotation, origin = np.asarray(poses.rotation), np.asarray(poses.position)
    return rotation, origin, origin + np.einsum("bij,bj->bi", rotation, np.asarray(model.body_com))


def _pose(model: jaxmor.Model) -> np.ndarray:
    """A generic configuration: the base tilted and displaced, every joint off zero."""
    rng = np.random.default_rng(3)
    q = np.asarray(jaxmor.neutral_q(model), np.float64).copy()
    quat = rng.normal(size=4)
    q[:3], q[3:7], q[7:] = [0.3, -0.2, 0.5], quat / np.linalg.norm(quat), rng.uniform(-1.0, 1.0, model.nq - 7)
    return q


def _gravity_rows(model: jaxmor.Model, q: np.ndarray) -> np.ndarray:
    """(nv,) the bias at zero velocity from statics: the generalized force that holds the robot against gravity."""
    rotation, origin, c = _centres(model, q)
    m, g = np.asarray(model.body_mass), np.asarray(model.opt.gravity)
    weight = m[:, None] * g  # (nb, 3) [N]
    total = m.sum()
    c_total = (m[:, None] * c).sum(0) / total
    rows = np.zeros(model.nv)
    rows[:3] = -total * g
    rows[3:6] = -np.cross(c_total - origin[0], total * g)
    parent = model.body_parent
    for j in range(1, model.nb):  # each hinge: the torque of its subtree's weight about its axis
        subtree = [i for i in range(model.nb) if _descends(parent, i, j)]
        axis = rotation[j] @ np.asarray(model.body_axis[j])
        torque = np.cross(c[subtree] - origin[j], weight[subtree]).sum(0)
        rows[model.body_v_start[j]] = -axis @ torque
    return rows


def _descends(parent: tuple[int, ...], i: int, j: int) -> bool:
    """Whether body ``i`` is ``j`` or below it."""
    while i >= 0:
        if i == j:
            return True
        i = parent[i]
    return False


def _base_block(model: jaxmor.Model, q: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """(6, 6) the whole robot's inertia for the base velocities ``[v, w]`` (world frame, about the base origin),
    from the bodies' rotational inertias ``inertia`` (nb, 3, 3) about their centres of mass [kg m^2]."""
    rotation, origin, c = _centres(model, q)
    m = np.asarray(model.body_mass)
    r = c - origin[0]
    r_c = (m[:, None] * r).sum(0) / m.sum()
    cross = np.array([[0.0, -r_c[2], r_c[1]], [r_c[2], 0.0, -r_c[0]], [-r_c[1], r_c[0], 0.0]])
    about_com = np.einsum("bij,bjk,blk->bil", rotation, inertia, rotation)
    shift = m[:, None, None] * (np.einsum("bi,bi->b", r, r)[:, None, None] * np.eye(3) - r[:, :, None] * r[:, None])
    return np.block([[m.sum() * np.eye(3), -m.sum() * cross], [m.sum() * cross, (about_com + shift).sum(0)]])


def test_the_dynamics_see_the_moved_mass(quadruped):
    n = 8
    models, axes = jaxmor.randomize(quadruped, jax.random.key(2), n, {"body.com": jaxmor.uniform(-0.05, 0.05)})
    q = _pose(quadruped)
    zeros = jnp.zeros(quadruped.nv)
    bias = np.asarray(jax.vmap(jaxmor.bias_force, in_axes=(axes, None, None))(models, jnp.asarray(q), zeros))
    block = np.asarray(jax.vmap(jaxmor.mass_matrix, in_axes=(axes, None))(models, jnp.asarray(q)))[:, :6, :6]
    m = np.asarray(quadruped.body_mass)
    rotation, _, c_nominal = _centres(quadruped, q)
    inertia = np.asarray(quadruped.body_inertia)  # about each centre of mass: the offsets leave it as it was
    worst = {"com": 0.0, "bias": 0.0, "mass": 0.0}
    moved = 0.0
    for w in range(n):
        world = jax.tree.map(lambda x, a, w=w: x if a is None else x[w], models, axes, is_leaf=lambda x: x is None)
        d = np.asarray(world.body_com) - np.asarray(quadruped.body_com)
        _, _, c = _centres(world, q)
        shift = (m[:, None] * (c - c_nominal)).sum(0) / m.sum()
        expected = (m[:, None] * np.einsum("bij,bj->bi", rotation, d)).sum(0) / m.sum()
        worst["com"] = max(worst["com"], float(np.max(np.abs(shift - expected))))
        moved = max(moved, float(np.linalg.norm(expected)))
        worst["bias"] = max(worst["bias"], float(np.max(np.abs(bias[w] - _gravity_rows(world, q)))))
        expected_block = _base_block(world, q, inertia)
        worst["mass"] = max(worst["mass"], float(np.max(np.abs(block[w] - expected_block))))
    print(f"total COM moved up to {moved:.4f} m; worst errors {worst}")
    assert moved > 5e-3  # the offsets move the robot's centre of mass: a no-op would not
    assert worst["com"] <= 1e-12
    assert worst["bias"] <= 1e-10  # [N, Nm]
    assert worst["mass"] <= 1e-10  # [kg, kg m, kg m^2]
    nominal = np.asarray(jaxmor.bias_force(quadruped, jnp.asarray(q), zeros))
    assert np.max(np.abs(bias[:, 3:6] - nominal[3:6])) > 1e-2  # the base torque changes with the offsets [Nm]


@pytest.mark.parametrize(
    "dist, message",
    [
        (jaxmor.scale(0.9, 1.1), r"body\.com draws an offset \[m\].*scale\(\) would scale a nominal offset of zero"),
        (jaxmor.uniform([-0.1, -0.1], [0.1, 0.1]), r"body\.com: low has shape \(2,\).*3 values \(x, y, z\)"),
        (jaxmor.uniform(-0.1, 0.1, select=["nope"]), r"body\.com: unknown element\(s\) \['nope'\]"),
    ],
)
def test_a_bad_offset_distribution_is_refused(quadruped, dist, message):
    with pytest.raises(ArgumentError, match=message):
        jaxmor.randomize(quadruped, jax.random.key(0), 4, {"body.com": dist})


def test_an_offset_float32_cannot_hold_is_refused():
    model = jaxmor.load_urdf(jaxmor.robots.path("quadruped"))
    model = model.replace(body_com=jnp.asarray(model.body_com, jnp.float32))  # the centres of mass stored in float32
    with pytest.raises(ArgumentError, match=r"body\.com \(the moved centre of mass\): world 0, base x: .*float32"):
        jaxmor.randomize(model, jax.random.key(0), 4, {"body.com": jaxmor.uniform(1e39, 2e39)})
    models, _ = jaxmor.randomize(model, jax.random.key(0), 4, {"body.com": jaxmor.uniform(-0.01, 0.01)})
    assert models.body_com.dtype == np.float32
