"""Forward kinematics, link/point Jacobians and the position update, in float64.

* ``forward_kinematics`` against Pinocchio's frame placements for every link, including links
  merged by fixed joints. A pose is a product of a few rotations: round-off ~1e-16 per factor, so
  1e-12 is a wide margin.
* ``link_jacobian`` / ``point_jacobian`` against the derivative of the link poses along
  ``integrate_positions(model, q, u, h)`` (jaxmor's velocity convention: world-frame base
  velocities), both exactly (``jax.jvp``, 1e-12) and by central differences (h = 1e-5: truncation
  ~h^2 |u|^3 ~ 1e-9, round-off ~1e-16/h; tolerance 1e-7), and against Pinocchio's
  ``LOCAL_WORLD_ALIGNED`` frame Jacobians mapped to jaxmor's velocities (1e-12).
* ``integrate_positions`` on a free base is R^3 x SO(3) (not the SE(3) exponential of
  ``pin.integrate``) and keeps quaternions unit.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import skew
from reference import (
    TESTBOT,
    PinReference,
    load,
    missing_robot_reason,
    quat_wxyz_to_rotation,
    random_state,
    rel_err,
    robot_urdf,
    vee_rate,
)

import jaxmor

pin = pytest.importorskip("pinocchio")

MODELS = {"testbot": None, "go1": "go1_description/urdf/go1.urdf"}


@pytest.fixture(scope="module", params=list(MODELS))
def robot(request):
    """(name, jaxmor model, Pinocchio reference)."""
    relative = MODELS[request.param]
    path = TESTBOT if relative is None else robot_urdf(relative)
    if path is None:
        pytest.skip(missing_robot_reason(relative))
    model = load(path, True)
    return request.param, model, PinReference(model, path)


@jax.jit
def _fk(model, q):
    return jaxmor.forward_kinematics(model, q)


@jax.jit
def _fk_along(model, q, u, h):
    """Link poses at ``q (+) h u``."""
    return jaxmor.forward_kinematics(model, jaxmor.integrate_positions(model, q, u, h))


@jax.jit
def _fk_rate(model, q, u):
    """Exact derivative of the link poses along ``h -> q (+) h u`` at ``h = 0``."""
    zero = jnp.zeros((), q.dtype)
    return jax.jvp(
        lambda h: jaxmor.forward_kinematics(model, jaxmor.integrate_positions(model, q, u, h)),
        (zero,),
        (jnp.ones_like(zero),),
    )


@partial(jax.jit, static_argnames="links")
def _jacobians(model, q, points, links):
    """(n, 6, nv) Jacobians of the given links and (n, 3, nv) Jacobians of ``points[k]`` (link frame)
    on ``links[k]``; links by index for the former, by name for the latter."""
    frames = jnp.stack([jaxmor.link_jacobian(model, q, i) for i in links])
    pts = jnp.stack([jaxmor.point_jacobian(model, q, model.link_names[i], points[k]) for k, i in enumerate(links)])
    return frames, pts


def _jacobian_links(model) -> tuple[int, ...]:
    """Every link of a small model; every third link of a large one (each Jacobian is traced and
    compiled separately, ~0.3 s per link). For go1 that is 16 of 46 links: the root, all four feet,
    rotors, cameras and leg links, i.e. links on the base and on every depth of the legs."""
    return tuple(range(model.nl)) if model.nl <= 16 else tuple(range(0, model.nl, 3))


def test_forward_kinematics_matches_pinocchio(robot):
    name, model, ref = robot
    rng = np.random.default_rng(sum(map(ord, name)))
    for _ in range(5):
        q, _, _ = random_state(model, rng)
        poses = _fk(model, q)
        assert poses.rotation.shape == (model.nl, 3, 3)
        r_ref, p_ref = ref.frame_poses(q, model.link_names)
        assert rel_err(poses.rotation, r_ref) <= 1e-12, rel_err(poses.rotation, r_ref)
        assert rel_err(poses.position, p_ref) <= 1e-12, rel_err(poses.position, p_ref)


def test_merged_links_are_kept(robot):
    """Every URDF link has a frame, including those merged into their parent by fixed joints."""
    _, model, ref = robot
    pin_links = [f.name for f in ref.model.frames if f.type == pin.FrameType.BODY]
    assert sorted(model.link_names) == sorted(pin_links)
    assert model.nl > model.nb


def test_jacobians(robot):
    name, model, ref = robot
    rng = np.random.default_rng(sum(map(ord, name)) + 1)
    links = _jacobian_links(model)
    sel = np.array(links)
    names = [model.link_names[i] for i in links]
    points = rng.normal(scale=0.2, size=(len(links), 3))
    for _ in range(3):
        q, u, _ = random_state(model, rng)
        frames, pts = (np.asarray(x) for x in _jacobians(model, q, points, links))
        poses, rates = _fk_rate(model, q, u)
        rot = np.asarray(poses.rotation)[sel]

        # Exact derivative along the position update.
        lin_rate = np.asarray(rates.position)[sel]
        ang_rate = np.array([vee_rate(rd, r) for rd, r in zip(np.asarray(rates.rotation)[sel], rot, strict=True)])
        assert rel_err(frames[:, :3] @ u, lin_rate) <= 1e-12
        assert rel_err(frames[:, 3:] @ u, ang_rate) <= 1e-12
        point_rate = lin_rate + np.cross(ang_rate, np.einsum("lij,lj->li", rot, points))
        assert rel_err(pts @ u, point_rate) <= 1e-12

        # Central differences.
        h = 1e-5
        plus, minus = _fk_along(model, q, u, h), _fk_along(model, q, u, -h)
        r_plus, r_minus = np.asarray(plus.rotation)[sel], np.asarray(minus.rotation)[sel]
        p_plus, p_minus = np.asarray(plus.position)[sel], np.asarray(minus.position)[sel]
        fd_ang = np.array([vee_rate(rd, r) for rd, r in zip((r_plus - r_minus) / (2 * h), rot, strict=True)])
        world_plus = p_plus + np.einsum("lij,lj->li", r_plus, points)
        world_minus = p_minus + np.einsum("lij,lj->li", r_minus, points)
        assert rel_err(frames[:, :3] @ u, (p_plus - p_minus) / (2 * h)) <= 1e-7
        assert rel_err(frames[:, 3:] @ u, fd_ang) <= 1e-7
        assert rel_err(pts @ u, (world_plus - world_minus) / (2 * h)) <= 1e-7

        # Pinocchio's frame Jacobians (LOCAL_WORLD_ALIGNED, mapped to jaxmor's velocities).
        assert rel_err(frames, ref.frame_jacobians(q, names)) <= 1e-12


def test_point_jacobian_default_point_is_link_origin():
    model = load(TESTBOT, True)
    q = jnp.asarray(random_state(model, np.random.default_rng(2))[0])
    for link in ("sensor", "wheel"):  # a link merged by a fixed joint, and the deepest body
        np.testing.assert_array_equal(jaxmor.point_jacobian(model, q, link), jaxmor.link_jacobian(model, q, link)[:3])


def test_integrate_free_base_is_r3_x_so3():
    """u = [1,0,0, 0,0,1] for dt = 1: the position moves along the world x axis to (1, 0, 0) while
    the base turns 1 rad about z (the SE(3) exponential would end at (0.841, 0.460, 0))."""
    model = load(TESTBOT, True)
    q = np.array(jaxmor.neutral_q(model))
    q[7:] = [0.3, -0.05, 2.0]
    u = np.zeros(model.nv)
    u[0], u[5] = 1.0, 1.0
    u[6:] = [0.5, 0.1, -1.0]
    out = np.asarray(jaxmor.integrate_positions(model, jnp.asarray(q), jnp.asarray(u), 1.0))
    np.testing.assert_allclose(out[0:3], [1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(out[3:7], [np.cos(0.5), 0.0, 0.0, np.sin(0.5)], atol=1e-15)
    np.testing.assert_allclose(out[7:], q[7:] + u[6:], atol=1e-15)


def test_integrate_rotates_about_world_axes():
    """The angular velocity is world-frame: R(dt) = exp(dt [w]x) R(0)."""
    model = load(TESTBOT, True)
    q, u, _ = random_state(model, np.random.default_rng(4))
    dt = 0.3
    out = np.asarray(jaxmor.integrate_positions(model, jnp.asarray(q), jnp.asarray(u), dt))
    w = u[3:6] * dt
    angle = np.linalg.norm(w)
    k = skew(w) / angle
    step = np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k
    np.testing.assert_allclose(quat_wxyz_to_rotation(out[3:7]), step @ quat_wxyz_to_rotation(q[3:7]), atol=1e-14)
    np.testing.assert_allclose(out[0:3], q[0:3] + dt * u[0:3], atol=1e-15)


def test_integrate_keeps_quaternion_unit():
    model = load(TESTBOT, True)
    rng = np.random.default_rng(6)
    q, _, _ = random_state(model, rng)
    step = jax.jit(jaxmor.integrate_positions)
    for _ in range(200):
        q = step(model, q, 10.0 * rng.normal(size=model.nv), 0.05)
        assert abs(float(jnp.linalg.norm(q[3:7])) - 1.0) <= 1e-14
    # A small velocity (the series branch of the exponential map) also stays unit.
    q = step(model, q, 1e-12 * rng.normal(size=model.nv), 1e-3)
    assert abs(float(jnp.linalg.norm(q[3:7])) - 1.0) <= 1e-14


def test_integrate_accepts_numpy_arrays():
    """Like the other public functions, integrate_positions should accept NumPy arrays."""
    model = load(TESTBOT, True)
    q, u, _ = random_state(model, np.random.default_rng(8))
    expected = jaxmor.integrate_positions(model, jnp.asarray(q), jnp.asarray(u), 0.1)
    np.testing.assert_array_equal(jaxmor.integrate_positions(model, q, u, 0.1), expected)


def test_integrate_rejects_wrong_shapes():
    model = load(TESTBOT, True)
    q = jaxmor.neutral_q(model)
    with pytest.raises(jaxmor.ArgumentError, match="u must have shape"):
        jaxmor.integrate_positions(model, q, np.zeros(model.nv + 1), 0.1)
    with pytest.raises(jaxmor.ArgumentError, match="q must have shape"):
        jaxmor.integrate_positions(model, q[:-1], np.zeros(model.nv), 0.1)


# The tree traversal by levels (``parent_first``) against its definition: body by body, parents first.

TREES = {
    "chain": (-1, 0, 1, 2),
    "quadruped": (-1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11),  # legs alike: strided levels, reordered
    "irregular": (-1, 0, 0, 1, 3, 2, -1, 6, 1, 8, 4),  # two roots, uneven levels: gathers
    "roots only": (-1, -1, -1),
    # deeper than UNROLLED_LEVELS (16): the levels run in a lax.scan over a padded table
    "deep chain": (-1,) + tuple(range(39)),
    "deep branches": (-1, 0, 0) + tuple(range(1, 41)) + (0, 43),  # arms of 21, 21 and 2: spare slots
}


def _sequential(parent, combine, world, per_body):
    """``parent_first``'s definition: each body from its parent's value, in index order."""
    values = []
    for i, p in enumerate(parent):
        entries = jax.tree.map(lambda x, i=i: x[i], per_body)
        values.append(combine(world if p < 0 else values[p], entries))
    return jax.tree.map(lambda *x: jnp.stack(x), *values)


@pytest.mark.parametrize("tree", list(TREES))
@pytest.mark.parametrize("world", ["none", "value"])
def test_parent_first_equals_the_traversal_body_by_body(tree, world):
    """Float64, random 3x3 transforms and offsets: equal to rounding (the same products, grouped by
    level; 1e-14), for a world value and for ``None`` (roots from their own entries), entries of three leaves."""
    from jaxmor.sim.kinematics import UNROLLED_LEVELS, parent_first, tree_levels

    parent = TREES[tree]
    nb = len(parent)
    keys = jax.random.split(jax.random.key(3), 3)
    xs = jax.random.normal(keys[0], (nb, 3, 3), jnp.float64)
    own = jax.random.normal(keys[1], (nb, 3, 2), jnp.float64)
    scale = jax.random.uniform(keys[2], (nb,), jnp.float64, 0.5, 1.5)
    base = None if world == "none" else jnp.ones((3, 2), jnp.float64)

    def combine(above, body):
        x, o, s = body
        return (o if above is None else x @ above + o) * s

    class Tree:  # the only field parent_first reads
        body_parent = parent

    got = parent_first(Tree, combine, base, (xs, own, scale))
    want = _sequential(parent, combine, base, (xs, own, scale))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14 * float(jnp.max(jnp.abs(want))))
    depths = [len(level) for level, _ in tree_levels(parent)]
    assert sum(depths) == nb  # every body at exactly one level
    if tree.startswith("deep"):
        assert len(depths) > UNROLLED_LEVELS  # the scanned traversal is the one tested


@pytest.mark.parametrize(
    "index",
    [
        (0, 1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12),  # the quadruped's bodies back from its levels: 5 runs
        (3,),
        (4, 4, 4, 0, 0, 1, 2),  # repeats: a broadcast run
        (6, 5, 0),  # decreasing
        (0, 2, 4, 5, 6, 1),
        tuple(range(19, -1, -1)),  # 20 runs: more than TAKE_RUNS, gathered
    ],
)
def test_take_is_indexing_along_the_leading_axis(index):
    """``take_static`` (strided slices and broadcasts joined, or a gather) is ``x[index]`` exactly, for every kind
    of index, along the leading axis and the last."""
    from jaxmor.math import TAKE_RUNS, _strided_runs, take_static

    x = jnp.arange(20 * 3, dtype=jnp.float32).reshape(20, 3)
    np.testing.assert_array_equal(take_static(x, index), np.asarray(x)[np.asarray(index)])
    np.testing.assert_array_equal(take_static(x.T, index, axis=-1), np.asarray(x).T[:, np.asarray(index)])
    runs = _strided_runs(index)
    assert sum(count for _, count, _ in runs) == len(index)
    if len(index) == 13:
        assert len(runs) == 5 <= TAKE_RUNS
