"""Contact candidates (jaxmor.sim.collision) against geometry computed independently here with NumPy.

Models are small URDF strings. Pair tests use a world-rooted robot: a ``post`` link welded to the
world (its geom has body -1, geom 0) and a ``base`` link on a floating joint (body 0, geom 1), so the
second geom can be put anywhere with ``q = [p, quat]``. A free joint does not make the base adjacent
to the world, so ``with_self_collision`` pairs the two geoms.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import quat_of_axis_angle, rot_of_quat, rpy

from jaxmor import ArgumentError, GeomType, add_ground, load_urdf, with_geom_properties, with_self_collision
from jaxmor.sim.collision import Contacts, collide, contact_count, tangent_frame
from jaxmor.sim.kinematics import body_poses

I = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>'  # noqa: E741
LIMIT = '<limit lower="-3" upper="3" effort="10" velocity="5"/>'
TOL = 1e-12


# --------------------------------------------------------------------------------------------------
# helpers


def robot(*lines: str) -> str:
    return "\n".join(['<robot name="r">', *lines, "</robot>"])


def col(shape: str, xyz=(0, 0, 0), rpy=(0, 0, 0), name: str | None = None) -> str:
    attr = f' name="{name}"' if name else ""
    origin = f'<origin xyz="{" ".join(map(str, xyz))}" rpy="{" ".join(map(str, rpy))}"/>'
    return f"<collision{attr}>{origin}<geometry>{shape}</geometry></collision>"


def sphere(r):
    return f'<sphere radius="{r}"/>'


def capsule(r, length):
    return f'<capsule radius="{r}" length="{length}"/>'


def cylinder(r, length):
    return f'<cylinder radius="{r}" length="{length}"/>'


def box(sx, sy, sz):
    return f'<box size="{sx} {sy} {sz}"/>'


def floating(*collisions: str):
    """One floating link ``base`` carrying ``collisions``; q = [p (3), quat w x y z (4)]."""
    return load_urdf(robot(f'<link name="base">{I}{"".join(collisions)}</link>'))


def pair_model(world_collision: str, base_collision: str, post_xyz=(0, 0, 0), post_rpy=(0, 0, 0)):
    """Geom 0 welded to the world (on link ``post`` placed at ``post_xyz``/``post_rpy``), geom 1 on a
    floating ``base``; self-collision enabled (the pair (0, 1))."""
    text = robot(
        '<link name="world"/>',
        f'<link name="post">{world_collision}</link>',
        f'<link name="base">{I}{base_collision}</link>',
        '<joint name="weld" type="fixed"><parent link="world"/><child link="post"/>'
        f'<origin xyz="{" ".join(map(str, post_xyz))}" rpy="{" ".join(map(str, post_rpy))}"/></joint>',
        '<joint name="free" type="floating"><parent link="world"/><child link="base"/></joint>',
    )
    model = with_self_collision(load_urdf(text))
    assert model.geom_body == (-1, 0)
    assert model.contact_pairs == ((0, 1),)
    return model


def free_q(p, quat=(1, 0, 0, 0)):
    return jnp.asarray(np.concatenate([np.asarray(p, float), np.asarray(quat, float)]))


def run(model, q) -> Contacts:
    contacts = collide(model, body_poses(model, q))
    assert contacts.distance.shape == (contact_count(model),)
    check_frames(contacts)
    return contacts


def check_frames(contacts_or_frame) -> None:
    frame = np.asarray(getattr(contacts_or_frame, "frame", contacts_or_frame))
    assert np.all(np.isfinite(frame))
    np.testing.assert_allclose(frame @ np.swapaxes(frame, -1, -2), np.broadcast_to(np.eye(3), frame.shape), atol=1e-12)
    np.testing.assert_allclose(np.cross(frame[:, 1], frame[:, 2]), frame[:, 0], atol=1e-12)


def match_points(actual, expected, tol=1e-12):
    """Every expected point has its own actual point within ``tol`` (order-free comparison)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    used = set()
    for e in expected:
        d = np.linalg.norm(actual - e, axis=1)
        k = int(np.argmin(d))
        assert d[k] < tol and k not in used, (e, actual)
        used.add(k)


# --------------------------------------------------------------------------------------------------
# ground contacts


def test_ground_sphere_resting_and_raised_ground():
    model = add_ground(floating(col(sphere(0.1), xyz=(0.0, 0.0, 0.05))), height=0.02)
    q = free_q([0.3, -0.2, 0.07])
    c = run(model, q)
    assert contact_count(model) == 1 and tuple(c.body_a) == (-1,) and tuple(c.body_b) == (0,)
    # centre at z = 0.12: lowest point 0.02, exactly on the ground
    np.testing.assert_allclose(c.distance, [0.0], atol=TOL)
    np.testing.assert_allclose(c.position, [[0.3, -0.2, 0.02]], atol=TOL)
    np.testing.assert_allclose(c.frame[0], np.eye(3)[[2, 0, 1]], atol=TOL)
    # rotating the body moves the offset centre; the lowest point is still straight below it
    quat = quat_of_axis_angle([1, 1, 0], 0.7)
    centre = np.array([0.3, -0.2, 0.5]) + rot_of_quat(quat) @ [0, 0, 0.05]
    c = run(model, free_q([0.3, -0.2, 0.5], quat))
    np.testing.assert_allclose(c.distance, [centre[2] - 0.1 - 0.02], atol=TOL)
    np.testing.assert_allclose(c.position[0], centre - [0, 0, 0.1], atol=TOL)


def test_ground_capsule_tilted():
    model = add_ground(floating(col(capsule(0.05, 0.4), xyz=(0.1, 0, 0), rpy=(0.3, 0.2, 0))))
    quat = quat_of_axis_angle([0.2, -1, 0.5], 0.9)
    p = np.array([0.0, 0.1, 0.6])
    c = run(model, free_q(p, quat))
    r_geom = rot_of_quat(quat) @ rpy(0.3, 0.2, 0)
    centre = p + rot_of_quat(quat) @ [0.1, 0, 0]
    ends = [centre + s * 0.2 * r_geom[:, 2] for s in (-1, 1)]
    expected = np.array([e - [0, 0, 0.05] for e in ends])
    assert tuple(c.body_b) == (0, 0)
    np.testing.assert_allclose(c.position, expected, atol=TOL)
    np.testing.assert_allclose(c.distance, expected[:, 2], atol=TOL)
    np.testing.assert_allclose(c.frame[:, 0], np.tile([0, 0, 1.0], (2, 1)), atol=TOL)


def test_ground_capsule_lying_touches_at_both_ends():
    model = add_ground(floating(col(capsule(0.05, 0.4), rpy=(0, math.pi / 2, 0))))
    c = run(model, free_q([0, 0, 0.05]))
    np.testing.assert_allclose(c.distance, [0.0, 0.0], atol=TOL)
    match_points(c.position, [[-0.2, 0, 0], [0.2, 0, 0]])


def test_ground_box_corners_at_rotated_pose():
    half = np.array([0.1, 0.2, 0.3])
    model = add_ground(floating(col(box(*(2 * half)), xyz=(0.05, -0.02, 0.1), rpy=(0.4, -0.3, 1.1))), height=-0.1)
    quat = quat_of_axis_angle([1, 2, 3], 1.3)
    p = np.array([0.5, 0.4, 0.3])
    c = run(model, free_q(p, quat))
    r_body = rot_of_quat(quat)
    r_geom = r_body @ rpy(0.4, -0.3, 1.1)
    centre = p + r_body @ [0.05, -0.02, 0.1]
    signs = box_face_signs(r_geom, half)
    corners = np.array([centre + r_geom @ (s * half) for s in signs])
    assert contact_count(model) == 4
    np.testing.assert_allclose(c.position, corners, atol=TOL)  # the documented slot order
    np.testing.assert_allclose(c.distance, np.asarray(c.position)[:, 2] + 0.1, atol=TOL)
    all_corners = np.array([centre + r_geom @ (np.array(s) * half) for s in itertools.product((-1, 1), repeat=3)])
    assert np.min(np.asarray(c.distance)) == pytest.approx(all_corners[:, 2].min() + 0.1, abs=TOL)
    assert np.min(np.asarray(c.distance)) < 0.3  # some corners are lower than the centre


def test_ground_box_resting_flat():
    model = add_ground(floating(col(box(0.4, 0.2, 0.1))))
    c = run(model, free_q([0, 0, 0.05], quat_of_axis_angle([0, 0, 1], 0.5)))
    d = np.sort(np.asarray(c.distance))
    np.testing.assert_allclose(d, [0] * 4, atol=TOL)  # the bottom face's 4 corners


def box_face_signs(rot, half) -> np.ndarray:
    """(4, 3) corner signs of the box face nearest the ground by docs/design/collision.md's rule: the axis
    maximizing ``h_i |r_i . z|`` (ties: larger ``|r_i . z|``, then lower index), the side facing down, the
    corners in their order among ``itertools.product((-1, 1), repeat=3)``."""
    a = np.asarray(rot)[2]
    c = np.asarray(half) * np.abs(a)
    k = max(range(3), key=lambda i: (c[i], abs(a[i]), -i))
    side = -1 if a[k] > 0 else 1
    return np.array([s for s in itertools.product((-1, 1), repeat=3) if s[k] == side], float)


def random_rotations(rng, n):
    quats = rng.normal(size=(n, 4))
    return quats / np.linalg.norm(quats, axis=1, keepdims=True)


@pytest.mark.parametrize("half", [(0.1, 0.2, 0.3), (0.2, 0.2, 0.2), (0.5, 0.05, 0.2)])
def test_ground_box_face_holds_the_lowest_corners(half):
    """For random orientations, against all 8 corner heights computed here: the 4 slots are corners, include
    the lowest one, every other corner is at least ``2 max_i h_i |a_i| >= 2 / sqrt(sum h_i^-2) >= 2 h_min /
    sqrt(3)`` above the lowest, and the slots are the 4 lowest corners exactly when ``c_k >= c_j + c_l``
    (``c_i = h_i |a_i|``, ``k`` the largest), as the module docstring proves."""
    half = np.array(half)
    h_min = half.min()
    model = add_ground(floating(col(box(*(2 * half)))), height=-0.05)
    rng = np.random.default_rng(7)
    p = np.array([0.1, -0.2, 0.3])
    jitted = jax.jit(lambda q: collide(model, body_poses(model, q)))
    exact_cases = other_cases = 0
    for quat in random_rotations(rng, 200):
        c = jitted(free_q(p, quat))
        rot = rot_of_quat(quat)
        corners = np.array([p + rot @ (np.array(s) * half) for s in itertools.product((-1, 1), repeat=3)])
        heights = corners[:, 2] + 0.05
        chosen = np.asarray(c.position)
        np.testing.assert_allclose(c.distance, chosen[:, 2] + 0.05, atol=TOL)
        # which of the 8 corners each slot is
        which = [int(np.argmin(np.linalg.norm(corners - x, axis=1))) for x in chosen]
        np.testing.assert_allclose(chosen, corners[which], atol=TOL)
        assert len(set(which)) == 4
        others = np.setdiff1d(np.arange(8), which)
        lowest = heights.min()
        assert np.min(np.asarray(c.distance)) == pytest.approx(lowest, abs=TOL)
        cs = np.sort(half * np.abs(rot[2]))  # c_i, ascending
        gap = heights[others].min() - lowest
        assert gap >= 2 * cs[2] - TOL
        assert 2 * cs[2] >= 2 / np.sqrt(np.sum(half**-2.0)) - TOL
        assert 2 / np.sqrt(np.sum(half**-2.0)) >= 2 * h_min / np.sqrt(3) - TOL
        four_lowest = np.sort(heights)[:4]
        if cs[2] >= cs[0] + cs[1] + 1e-9:
            np.testing.assert_allclose(np.sort(np.asarray(c.distance)), four_lowest, atol=TOL)
            exact_cases += 1
        elif cs[2] < cs[0] + cs[1] - 1e-9:
            assert np.sort(np.asarray(c.distance))[-1] > four_lowest[-1] + 1e-9  # not the 4 lowest
            other_cases += 1
    assert exact_cases > 10 and other_cases > 10


def test_ground_cube_on_a_corner_keeps_a_face():
    """The docstring's example: a cube standing on a corner has corners 0, 2c, 2c, 2c, 4c, 4c, 4c, 6c above
    the lowest (c = h / sqrt(3)); the slots hold 0, 2c, 2c, 4c."""
    h = 0.1
    model = add_ground(floating(col(box(2 * h, 2 * h, 2 * h))))
    # rotate the diagonal (1, 1, 1) onto +z
    axis = np.cross([1.0, 1.0, 1.0], [0.0, 0.0, 1.0])
    angle = math.acos(1 / math.sqrt(3))
    c = run(model, free_q([0, 0, math.sqrt(3) * h], quat_of_axis_angle(axis, angle)))
    cc = 2 * h / math.sqrt(3)
    np.testing.assert_allclose(np.sort(np.asarray(c.distance)), [0, cc, cc, 2 * cc], atol=1e-12)


def test_ground_flat_plate_gets_its_four_corners():
    """A zero-thickness plate lying flat: every ``c_i = h_i |a_i|`` is 0, and the tie goes to the axis most
    aligned with the normal (its normal), so the slots are the plate's 4 distinct corners, not an edge."""
    model = add_ground(floating(col(box(0.4, 0.2, 0.0))))
    c = run(model, free_q([0.1, 0.2, 0.0], quat_of_axis_angle([0, 0, 1], 0.3)))
    rot = rot_of_quat(quat_of_axis_angle([0, 0, 1], 0.3))
    corners = [[0.1, 0.2, 0.0] + rot @ [sx * 0.2, sy * 0.1, 0.0] for sx in (-1, 1) for sy in (-1, 1)]
    np.testing.assert_allclose(c.position, corners, atol=TOL)
    np.testing.assert_allclose(c.distance, 0.0, atol=TOL)


BOX_TIES = {
    "axis-aligned": (1.0, 0.0, 0.0, 0.0),
    "flat, 45 deg about z": tuple(quat_of_axis_angle([0, 0, 1], math.pi / 4)),
    "45 deg about x": tuple(quat_of_axis_angle([1, 0, 0], math.pi / 4)),
    "on an edge, 45 deg about y": tuple(quat_of_axis_angle([0, 1, 0], math.pi / 4)),
    "on a corner": tuple(quat_of_axis_angle(np.cross([1.0, 1.0, 1.0], [0, 0, 1.0]), math.acos(1 / math.sqrt(3)))),
    "upside down": tuple(quat_of_axis_angle([1, 0, 0], math.pi)),
}


@pytest.mark.parametrize("half", [(0.1, 0.1, 0.1), (0.2, 0.1, 0.1), (0.1, 0.1, 0.0)], ids=["cube", "bar", "plate"])
@pytest.mark.parametrize("name", list(BOX_TIES))
def test_ground_box_gradients_finite_at_ties(name, half):
    """Orientations where two or three axes tie for the face choice (and a zero-thickness plate, all ties at
    0 when flat): finite gradients of the slots' distances wrt the pose; d(sum of distances)/dz = 4."""
    half = np.array(half)
    model = add_ground(floating(col(box(*(2 * half)))))
    q = free_q([0.1, 0.2, 0.3], BOX_TIES[name])
    c = run(model, q)
    assert np.all(np.isfinite(np.asarray(c.distance))) and np.all(np.isfinite(np.asarray(c.position)))
    for g in grad_distance(model, q):
        assert np.all(np.isfinite(g)), name
    poses = body_poses(model, q)
    gp = jax.grad(lambda p: jnp.sum(collide(model, poses.replace(position=p)).distance))(poses.position)
    np.testing.assert_allclose(gp, [[0, 0, 4.0]], atol=1e-12)
    gq = jax.jit(jax.grad(lambda q: jnp.sum(collide(model, body_poses(model, q)).distance)))(q)
    assert np.all(np.isfinite(np.asarray(gq)))
    # the lowest corner is among the slots
    rot = rot_of_quat(np.asarray(BOX_TIES[name]))
    lowest = 0.3 - np.sum(half * np.abs(rot[2]))
    assert np.min(np.asarray(c.distance)) == pytest.approx(lowest, abs=1e-12)


def test_ground_cylinder_upright_and_tilted():
    """Upright: the four points of each rim start from the local x axis (the lowest direction is undefined);
    tilted: on each rim the lowest point (brute force over 20,001 rim samples) and the points 90, 180 and
    270 degrees from it."""
    r, hl = 0.1, 0.15
    model = add_ground(floating(col(cylinder(r, 2 * hl))))
    c = run(model, free_q([0.2, 0.0, hl]))
    assert contact_count(model) == 8
    angles = np.arange(4) * np.pi / 2
    rim = lambda z: [[0.2 + r * math.cos(t), r * math.sin(t), z] for t in angles]  # noqa: E731
    match_points(c.position, rim(0.0) + rim(2 * hl))
    np.testing.assert_allclose(np.sort(np.asarray(c.distance)), [0.0] * 4 + [2 * hl] * 4, atol=TOL)

    quat = quat_of_axis_angle([1, -0.5, 0.2], 0.8)
    p = np.array([0.0, 0.3, 0.5])
    c = run(model, free_q(p, quat))
    rot = rot_of_quat(quat)
    t = np.linspace(0.0, 2.0 * np.pi, 20001)
    pts, lowest = [], []
    for s in (-1, 1):
        samples = p[:, None] + rot @ np.stack([r * np.cos(t), r * np.sin(t), s * hl * np.ones_like(t)])
        low = t[np.argmin(samples[2])]
        pts += [p + rot @ [r * math.cos(low + a), r * math.sin(low + a), s * hl] for a in angles]
        lowest.append(samples[2].min())
    match_points(c.position, pts, tol=r * 2 * np.pi / 20000)  # the samples' spacing on the rim
    np.testing.assert_allclose(c.distance, np.asarray(c.position)[:, 2], atol=TOL)
    # each rim's lowest slot is at least as low as every sample of that rim (and within their spacing)
    rim_lows = np.asarray(c.distance).reshape(2, 4).min(axis=1)
    assert np.all(rim_lows <= np.array(lowest) + 1e-12), (rim_lows, lowest)


def test_ground_cylinder_on_its_side_touches_exactly():
    """Lying on its side, whatever its spin about its axis, its lowest points are exactly on the ground
    (the 16 sampled rim points used to let it sink by up to r (1 - cos(pi / 8)) and roll like an octagon)."""
    r, hl = 0.1, 0.2
    model = add_ground(floating(col(cylinder(r, 2 * hl), rpy=(math.pi / 2, 0, 0))))
    for spin in np.linspace(0.0, 1.0, 7):  # roll about the cylinder's axis (world y)
        c = run(model, free_q([0, 0, r], quat_of_axis_angle([0, 1, 0], spin)))
        d = np.sort(np.asarray(c.distance))
        np.testing.assert_allclose(d[:2], 0.0, atol=1e-12)
        assert d[2] >= r - 1e-12


def test_ground_slots_only_for_moving_geoms_in_geom_order():
    text = robot(
        '<link name="world"/>',
        f'<link name="post">{col(box(1, 1, 1))}</link>',
        f'<link name="a">{I}{col(sphere(0.1))}{col(box(0.1, 0.1, 0.1))}</link>',
        f'<link name="b">{I}{col(capsule(0.1, 0.2))}{col(cylinder(0.1, 0.2))}</link>',
        '<joint name="weld" type="fixed"><parent link="world"/><child link="post"/></joint>',
        f'<joint name="ja" type="revolute"><parent link="world"/><child link="a"/>{LIMIT}</joint>',
        f'<joint name="jb" type="revolute"><parent link="a"/><child link="b"/>{LIMIT}</joint>',
    )
    model = load_urdf(text)
    assert contact_count(model) == 0
    assert collide(model, body_poses(model, jnp.zeros(2))).distance.shape == (0,)
    model = add_ground(model)
    assert model.geom_type == (GeomType.BOX, GeomType.SPHERE, GeomType.BOX, GeomType.CAPSULE, GeomType.CYLINDER)
    assert model.geom_body == (-1, 0, 0, 1, 1)
    c = run(model, jnp.zeros(2))
    assert contact_count(model) == 1 + 4 + 2 + 8
    assert tuple(c.body_a) == (-1,) * 15
    assert tuple(c.body_b) == (0,) * 5 + (1,) * 10
    assert c.friction.shape == c.restitution.shape == (15,)


# --------------------------------------------------------------------------------------------------
# pairs


def test_sphere_sphere_separated_and_overlapping():
    model = pair_model(col(sphere(0.1)), col(sphere(0.2)), post_xyz=(0.1, 0.2, 0.3))
    a = np.array([0.1, 0.2, 0.3])
    for p in ([0.5, 0.4, 0.1], [0.2, 0.25, 0.35]):
        p = np.asarray(p)
        c = run(model, free_q(p))
        n = (p - a) / np.linalg.norm(p - a)
        assert tuple(c.body_a) == (-1,) and tuple(c.body_b) == (0,)
        np.testing.assert_allclose(c.distance, [np.linalg.norm(p - a) - 0.3], atol=TOL)
        np.testing.assert_allclose(c.frame[0, 0], n, atol=TOL)
        np.testing.assert_allclose(c.position[0], p - 0.2 * n, atol=TOL)


def closest_on_segment(p0, p1, x):
    d = p1 - p0
    t = np.clip(np.dot(x - p0, d) / np.dot(d, d), 0, 1)
    return p0 + t * d


@pytest.mark.parametrize("where", ["middle", "beyond_end"])
def test_sphere_capsule(where):
    # sphere (world, A) against a capsule on the base (B)
    model = pair_model(col(sphere(0.05)), col(capsule(0.1, 0.6), rpy=(0, 0.4, 0)))
    quat = quat_of_axis_angle([0.3, 1, -0.2], 0.6)
    p = np.array([0.2, -0.1, 0.15]) if where == "middle" else np.array([0.0, 0.1, -0.5])
    c = run(model, free_q(p, quat))
    axis = rot_of_quat(quat) @ rpy(0, 0.4, 0)[:, 2]
    q_point = closest_on_segment(p - 0.3 * axis, p + 0.3 * axis, np.zeros(3))
    dist = np.linalg.norm(q_point)
    n = q_point / dist
    np.testing.assert_allclose(c.distance, [dist - 0.15], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], n, atol=TOL)
    np.testing.assert_allclose(c.position[0], q_point - 0.1 * n, atol=TOL)
    # the same pair the other way round: capsule is A, sphere is B
    flipped = run(model.replace(contact_pairs=((1, 0),)), free_q(p, quat))
    assert tuple(flipped.body_a) == (0,) and tuple(flipped.body_b) == (-1,)
    np.testing.assert_allclose(flipped.distance, c.distance, atol=TOL)
    np.testing.assert_allclose(flipped.frame[0, 0], -n, atol=TOL)
    np.testing.assert_allclose(flipped.position[0], 0.05 * n, atol=TOL)


def segment_distance_reference(p0, p1, q0, q1):
    """Minimum of |p(s) - q(t)| over the unit square: the interior stationary point and the minima on
    the four edges (each a point-segment problem)."""
    candidates = [
        (p0, closest_on_segment(q0, q1, p0)),
        (p1, closest_on_segment(q0, q1, p1)),
        (closest_on_segment(p0, p1, q0), q0),
        (closest_on_segment(p0, p1, q1), q1),
    ]
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    m = np.array([[d1 @ d1, -d1 @ d2], [-d1 @ d2, d2 @ d2]])
    if abs(np.linalg.det(m)) > 1e-12:
        s, t = np.linalg.solve(m, [-d1 @ r, d2 @ r])
        if 0 <= s <= 1 and 0 <= t <= 1:
            candidates.append((p0 + s * d1, q0 + t * d2))
    return min(candidates, key=lambda ab: np.linalg.norm(ab[1] - ab[0]))


def capsule_pair(rpy_a, p, quat):
    """Capsule A (r 0.05, 0.8 long) welded at the origin with ``rpy_a``; capsule B (r 0.1, 0.4 long) on
    the base at ``p``, ``quat``. Returns the model, q and both segments' end points."""
    model = pair_model(col(capsule(0.05, 0.8)), col(capsule(0.1, 0.4)), post_rpy=rpy_a)
    ra, rb = rpy(*rpy_a), rot_of_quat(quat)
    a_ends = (-0.4 * ra[:, 2], 0.4 * ra[:, 2])
    b_ends = (np.asarray(p) - 0.2 * rb[:, 2], np.asarray(p) + 0.2 * rb[:, 2])
    return model, free_q(p, quat), a_ends, b_ends


@pytest.mark.parametrize(
    ("p", "axis", "angle"),
    [
        ([0.1, 0.2, 0.3], [1, 0, 0], 0.7),  # skew, interior closest points
        ([0.5, -0.3, 0.2], [0.3, 1, 0.2], 1.9),  # closest point at an end
        ([0.0, 0.0, 0.9], [0, 1, 0], 0.3),  # beyond A's end
    ],
)
def test_capsule_capsule_general(p, axis, angle):
    quat = quat_of_axis_angle(axis, angle)
    model, q, (p0, p1), (q0, q1) = capsule_pair((0.2, 0.1, 0.0), p, quat)
    c = run(model, q)
    a, b = segment_distance_reference(p0, p1, q0, q1)
    dist = np.linalg.norm(b - a)
    n = (b - a) / dist
    np.testing.assert_allclose(c.distance, [dist - 0.15], atol=1e-10)
    np.testing.assert_allclose(c.frame[0, 0], n, atol=1e-9)
    np.testing.assert_allclose(c.position[0], b - 0.1 * n, atol=1e-9)


def test_capsule_capsule_crossing():
    # A along world z (0.8 long); B along x, crossing 0.12 away along y: touches at the axes' crossing
    quat = quat_of_axis_angle([0, 1, 0], math.pi / 2)
    model, q, _, _ = capsule_pair((0, 0, 0), [0.0, 0.12, 0.1], quat)
    c = run(model, q)
    np.testing.assert_allclose(c.distance, [0.12 - 0.15], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], [0, 1, 0], atol=TOL)
    np.testing.assert_allclose(c.position[0], [0, 0.02, 0.1], atol=TOL)


def test_capsule_capsule_parallel():
    # both along z, 0.3 apart in x; B (0.4 long, z in [0.1, 0.5]) overlaps A (z in [-0.4, 0.4]) on [0.1, 0.4]
    model, q, _, _ = capsule_pair((0, 0, 0), [0.3, 0.0, 0.3], (1, 0, 0, 0))
    c = run(model, q)
    np.testing.assert_allclose(c.distance, [0.3 - 0.15], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], [1, 0, 0], atol=TOL)
    np.testing.assert_allclose(c.position[0], [0.2, 0, 0.25], atol=TOL)  # middle of the overlap
    # antiparallel, overlapping (B flipped): same distance and normal
    c = run(model, free_q([0.3, 0.0, 0.3], quat_of_axis_angle([1, 0, 0], math.pi)))
    np.testing.assert_allclose(c.distance, [0.15], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], [1, 0, 0], atol=TOL)
    # parallel, collinear and apart along the axis: end to end
    c = run(model, free_q([0.0, 0.0, 1.0]))
    np.testing.assert_allclose(c.distance, [1.0 - 0.2 - 0.4 - 0.15], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], [0, 0, 1], atol=TOL)
    assert np.all(np.isfinite(np.asarray(c.position)))


def sphere_box_reference(centre_local, half):
    """(distance from the sphere centre to the box surface, signed (negative inside); box point; normal
    from the sphere to the box), all in box coordinates."""
    closest = np.clip(centre_local, -half, half)
    gap = closest - centre_local
    if np.linalg.norm(gap) > 0:
        return np.linalg.norm(gap), closest, gap / np.linalg.norm(gap)
    depth = half - np.abs(centre_local)
    k = int(np.argmin(depth))
    s = 1.0 if centre_local[k] >= 0 else -1.0
    face = centre_local.copy()
    face[k] = s * half[k]
    n = np.zeros(3)
    n[k] = -s
    return -depth[k], face, n


@pytest.mark.parametrize(
    ("case", "local"),
    [
        ("face", [0.0, 0.05, 0.45]),
        ("edge", [0.3, 0.0, 0.45]),
        ("corner", [0.3, -0.4, 0.5]),
        ("inside", [0.05, 0.12, -0.1]),
    ],
)
def test_sphere_box(case, local):
    half = np.array([0.2, 0.3, 0.4])
    r_box, p_box = rpy(0.3, -0.5, 0.8), np.array([0.1, 0.2, 0.3])
    r = 0.07
    # box welded to the world (geom 0, A), sphere on the base (geom 1, B): the pair is box-sphere
    model = pair_model(col(box(*(2 * half))), col(sphere(r)), post_xyz=p_box, post_rpy=(0.3, -0.5, 0.8))
    centre = p_box + r_box @ np.asarray(local)
    gap, point_local, n_local = sphere_box_reference(np.asarray(local, float), half)
    n_sphere_to_box = r_box @ n_local
    point_box = p_box + r_box @ point_local
    if case == "inside":
        assert gap < 0
    else:
        assert gap > 0
    # given as (box, sphere): A = box, B = sphere; n from the box to the sphere
    c = run(model, free_q(centre))
    np.testing.assert_allclose(c.distance, [gap - r], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], -n_sphere_to_box, atol=TOL)
    np.testing.assert_allclose(c.position[0], centre + r * n_sphere_to_box, atol=TOL)
    # as (sphere, box): n from the sphere to the box, position on the box
    c = run(model.replace(contact_pairs=((1, 0),)), free_q(centre))
    assert tuple(c.body_a) == (0,) and tuple(c.body_b) == (-1,)
    np.testing.assert_allclose(c.distance, [gap - r], atol=TOL)
    np.testing.assert_allclose(c.frame[0, 0], n_sphere_to_box, atol=TOL)
    np.testing.assert_allclose(c.position[0], point_box, atol=TOL)


def test_position_minus_distance_normal_lies_on_a():
    model = pair_model(col(sphere(0.1)), col(capsule(0.05, 0.3)), post_xyz=(0, 0, 0.2))
    c = run(model, free_q([0.1, 0.2, 0.3], quat_of_axis_angle([1, 0, 1], 0.4)))
    on_a = np.asarray(c.position[0] - c.distance[0] * c.frame[0, 0])
    np.testing.assert_allclose(np.linalg.norm(on_a - [0, 0, 0.2]), 0.1, atol=TOL)


# --------------------------------------------------------------------------------------------------
# box-box and capsule-box (the oracles: a box's exact signed distance and corners in NumPy, dense sampling)


def box_sdf(x, centre, rot, half):
    """Exact signed distance of points ``x`` (..., 3) to a box (negative inside)."""
    q = np.abs((np.asarray(x) - centre) @ rot) - half
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(-1), 0.0)


def box_corners(centre, rot, half):
    return centre + (np.array(list(itertools.product((-1.0, 1.0), repeat=3))) * half) @ rot.T


def face_region(x, centre, rot, half):
    """Whether the point is inside the box or projects onto one of its faces (at most one axis beyond)."""
    return int(np.sum(np.abs((np.asarray(x) - centre) @ rot) > half)) <= 1


def box_pair(half_a, half_b, r_a_rpy=(0, 0, 0), p_a=(0, 0, 0)):
    """Box A (half-extents ``half_a``) welded to the world at ``p_a``/``r_a_rpy``, box B on the free base."""
    return pair_model(col(box(*(2 * np.asarray(half_a)))), col(box(*(2 * np.asarray(half_b)))), p_a, r_a_rpy)


def test_box_on_a_box_rests_on_its_four_bottom_corners():
    """B (yawed 0.7) sinks 2 mm into the top face of A (yawed 0.3): slots 0-3 are B's bottom corners at
    -2 mm with A's top normal; A's corners all lie outside B laterally, so slots 4-7 are separated."""
    half_a, half_b = np.array([0.3, 0.2, 0.1]), np.array([0.1, 0.08, 0.05])
    model = box_pair(half_a, half_b, r_a_rpy=(0, 0, 0.3))
    assert contact_count(model) == 8
    p_b = np.array([0.02, -0.01, 0.1 + 0.05 - 0.002])
    c = run(model, free_q(p_b, quat_of_axis_angle([0, 0, 1], 0.7)))
    assert tuple(c.body_a) == (-1,) * 8 and tuple(c.body_b) == (0,) * 8
    np.testing.assert_allclose(c.distance[:4], -0.002, atol=TOL)
    np.testing.assert_allclose(c.frame[:4, 0], np.tile([0.0, 0.0, 1.0], (4, 1)), atol=TOL)
    bottom = box_corners(p_b, rot_of_quat(quat_of_axis_angle([0, 0, 1], 0.7)), half_b)[::2]  # s_z = -1
    match_points(c.position[:4], bottom)
    assert np.all(np.asarray(c.distance[4:]) > 0.05)


def box_overlap(a, b):
    """How deep the two boxes ``(centre, rotation, half)`` overlap, by a linear program (SciPy), not the
    separating-axis test: the largest ``t`` with a point ``t`` inside every face of both (> 0 where they
    overlap)."""
    from scipy.optimize import linprog

    def faces(centre, rot, half):
        normals = np.concatenate([rot.T, -rot.T])
        return normals, normals @ centre + np.concatenate([half, half])

    na, da = faces(*a)
    nb, db = faces(*b)
    normals, offsets = np.concatenate([na, nb]), np.concatenate([da, db])
    lp = linprog([0, 0, 0, -1.0], A_ub=np.hstack([normals, np.ones((12, 1))]), b_ub=offsets, bounds=[(None, None)] * 4)
    return -lp.fun


@pytest.mark.parametrize("seed", range(8))
def test_box_box_detects_overlap_and_puts_points_on_both_surfaces(seed):
    """Random rotated boxes, overlapping or near: the deepest slot is negative exactly where the boxes overlap
    (a linear program says whether they do); where they do, every used slot's point lies on B's surface and
    ``point - distance n`` on A's (the box's exact signed distance in NumPy, to the clipping tolerance 1e-5 of
    the pair's size)."""
    rng = np.random.default_rng(seed)
    half_a, half_b = rng.uniform(0.05, 0.3, 3), rng.uniform(0.05, 0.3, 3)
    r_a_rpy = rng.uniform(-np.pi, np.pi, 3)
    model = box_pair(half_a, half_b, r_a_rpy=r_a_rpy)
    r_a = rpy(*r_a_rpy)
    size = 2 * max(np.linalg.norm(half_a), np.linalg.norm(half_b))
    for trial in range(4):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        r_b = rot_of_quat(quat)
        p_b = rng.normal(size=3)
        p_b *= rng.uniform(0.6, 1.1) * (np.linalg.norm(half_a) + np.linalg.norm(half_b)) / np.linalg.norm(p_b)
        depth = box_overlap((np.zeros(3), r_a, half_a), (p_b, r_b, half_b))
        if abs(depth) < 1e-4:
            continue  # touching: either answer is right
        c = run(model, free_q(p_b, quat))
        d, n, pos = (np.asarray(x) for x in (c.distance, c.frame[:, 0], c.position))
        used = d < 1.0
        assert used.any()
        assert (d.min() < 0) == (depth > 0), (trial, d.min(), depth)
        if depth <= 0:
            continue
        on_b = box_sdf(pos[used], p_b, r_b, half_b)
        on_a = box_sdf(pos[used] - d[used, None] * n[used], np.zeros(3), r_a, half_a)
        assert np.abs(on_b).max() <= 1e-5 * size and np.abs(on_a).max() <= 1e-5 * size


def rz(angle):
    return rpy(0.0, 0.0, angle)


@pytest.mark.parametrize("degrees", [45.0, 5.0, 1.0, 0.1])
def test_twisted_equal_cube_rests_on_the_overlap_of_the_two_faces(degrees):
    """A cube on an equal cube, turned about the vertical, 1e-4 m into it: no corner of either lies over the
    other's face, and all 8 slots are the corners of the octagon the two squares share, at -1e-4 with the lower
    cube's normal. At 45 degrees the octagon's corners are (+-h, +-h (sqrt 2 - 1)) and the swapped ones."""
    h = 0.1
    model = box_pair([h] * 3, [h] * 3)
    theta = math.radians(degrees)
    c = run(model, free_q([0.0, 0.0, 2 * h - 1e-4], quat_of_axis_angle([0, 0, 1], theta)))
    np.testing.assert_allclose(c.distance, -1e-4, atol=1e-12)
    np.testing.assert_allclose(c.frame[:, 0], np.tile([0.0, 0.0, 1.0], (8, 1)), atol=1e-12)
    xy = np.asarray(c.position)[:, :2]
    local = xy @ rz(theta)[:2, :2]  # in the upper cube's axes
    assert np.abs(xy).max() <= h + 1e-12 and np.abs(local).max() <= h + 1e-12  # over both squares
    corners = [np.isclose(np.abs(xy).max(), h) for xy in xy]
    assert all(corners) and all(np.isclose(np.abs(p).max(), h) for p in local)  # on both squares' edges
    if degrees == 45.0:
        k = h * (math.sqrt(2) - 1)
        want = [(s * h, t * k) for s in (-1, 1) for t in (-1, 1)] + [(t * k, s * h) for s in (-1, 1) for t in (-1, 1)]
        match_points(np.c_[xy, np.zeros(8)], np.c_[np.array(want), np.zeros(8)])


def test_crossing_edges_touch_at_one_point_along_their_common_normal():
    """Two cubes standing on edges, the lower one's top edge along y, the upper one's bottom edge along x,
    crossing 3 mm deep: one contact at the crossing, distance -3 mm, normal +z; the other slots are unused."""
    h = 0.1
    apex = h * math.sqrt(2)
    model = box_pair([h] * 3, [h] * 3, r_a_rpy=(0.0, math.pi / 4, 0.0))
    c = run(model, free_q([0.01, 0.02, 2 * apex - 0.003], quat_of_axis_angle([1, 0, 0], math.pi / 4)))
    k = int(np.argmin(np.asarray(c.distance)))
    np.testing.assert_allclose(c.distance[k], -0.003, atol=1e-12)
    np.testing.assert_allclose(c.frame[k, 0], [0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(c.position[k], [0.0, 0.02, apex - 0.003], atol=1e-12)
    assert np.sum(np.asarray(c.distance) < 1.0) == 1


def test_box_box_separated_vertex_face_gap_and_lower_bound_against_sampling():
    """B balanced on a corner 1 cm above A's top face: the smallest slot distance is the 1 cm gap, with A's top
    normal. At random separated poses the smallest slot distance never exceeds the true gap (an upper bound
    of it by dense sampling of B's faces, 41 x 41 points each)."""
    half = np.array([0.1, 0.1, 0.1])
    model = box_pair(np.array([0.4, 0.4, 0.1]), half)
    quat = quat_of_axis_angle([1, -1, 0], math.atan(math.sqrt(2)))  # the (-1,-1,-1) corner straight down
    r_b = rot_of_quat(quat)
    lowest = (np.array([-1.0, -1.0, -1.0]) * half) @ r_b.T
    p_b = np.array([0.05, 0.02, 0.1 + 0.01]) - lowest
    c = run(model, free_q(p_b, quat))
    k = int(np.argmin(np.asarray(c.distance)))
    np.testing.assert_allclose(c.distance[k], 0.01, atol=TOL)
    np.testing.assert_allclose(c.frame[k, 0], [0, 0, 1], atol=TOL)
    grid = np.linspace(-1, 1, 41)
    u, v = (x.reshape(-1) for x in np.meshgrid(grid, grid))
    faces = np.concatenate(
        [np.stack(np.roll(np.stack([np.full_like(u, s), u, v]), a, axis=0), -1) for a in range(3) for s in (-1, 1)]
    )
    rng = np.random.default_rng(7)
    for _ in range(5):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        r_b = rot_of_quat(quat)
        p_b = np.concatenate([rng.uniform(-0.5, 0.5, 2), [rng.uniform(0.28, 0.4)]])  # 0.1 + sqrt(3) 0.1 < 0.28
        sampled = box_sdf(p_b + (faces * half) @ r_b.T, np.zeros(3), np.eye(3), np.array([0.4, 0.4, 0.1])).min()
        c = run(model, free_q(p_b, quat))
        assert sampled > 0 and float(np.min(c.distance)) <= sampled + 1e-12


def segment_min_sdf(p0, p1, box_args):
    """The smallest signed distance to the box along the segment, by sampling 2001 points, then twice 2001
    points within two spacings of the best (final spacing 1e-9 of the segment; the distance is 1-Lipschitz)."""
    lo, hi = 0.0, 1.0
    for _ in range(3):
        t = np.linspace(lo, hi, 2001)
        f = box_sdf(p0 + t[:, None] * (p1 - p0), *box_args)
        k, step = int(np.argmin(f)), t[1] - t[0]
        lo, hi = max(t[k] - 2 * step, 0.0), min(t[k] + 2 * step, 1.0)
    return f.min()


@pytest.mark.parametrize("seed", range(6))
def test_capsule_box_against_sampling(seed):
    """Capsule (on the base) against a rotated box (welded): slots 0, 1 are the end spheres (exact signed
    distance minus r, normal from the sphere to the box's closest point), slot 2 the segment's deepest point
    (the sampled minimum minus r); given the other way round the normals flip."""
    rng = np.random.default_rng(100 + seed)
    half, r_rpy = rng.uniform(0.05, 0.3, 3), rng.uniform(-np.pi, np.pi, 3)
    radius, half_length = rng.uniform(0.02, 0.1), rng.uniform(0.0, 0.3)
    model = pair_model(col(box(*(2 * half))), col(capsule(radius, 2 * half_length)), (0, 0, 0), r_rpy)
    assert contact_count(model) == 3
    r_box = rpy(*r_rpy)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    axis = rot_of_quat(quat)[:, 2]
    centre = rng.normal(size=3) * 0.5 * np.linalg.norm(half)
    ends = [centre - half_length * axis, centre + half_length * axis]
    box_args = (np.zeros(3), r_box, half)
    for flipped in (False, True):
        m = model.replace(contact_pairs=((1, 0),)) if flipped else model
        c = run(m, free_q(centre, quat))
        d, n = np.asarray(c.distance), np.asarray(c.frame[:, 0]) * (-1.0 if flipped else 1.0)  # from box to capsule
        for k, end in enumerate(ends):
            np.testing.assert_allclose(d[k], box_sdf(end, *box_args) - radius, atol=TOL)
            if box_sdf(end, *box_args) > 1e-9:  # outside: the normal is along the closest-point direction
                closest = r_box @ np.clip(r_box.T @ end, -half, half)
                np.testing.assert_allclose(n[k], (end - closest) / np.linalg.norm(end - closest), atol=1e-9)
        np.testing.assert_allclose(d[2], segment_min_sdf(*ends, box_args) - radius, atol=1e-8)
        assert d[2] <= min(d[0], d[1]) + 1e-8  # the golden-section bracket: 4e-9 of the segment


def test_capsule_lying_on_a_box_touches_at_both_ends_and_between():
    model = pair_model(col(box(0.4, 0.4, 0.2)), col(capsule(0.05, 0.2)))
    quat = quat_of_axis_angle([0, 1, 0], math.pi / 2)  # axis along x
    c = run(model, free_q([0.03, 0.01, 0.1 + 0.05 - 0.001], quat))
    np.testing.assert_allclose(c.distance, [-0.001] * 3, atol=TOL)
    np.testing.assert_allclose(c.frame[:, 0], np.tile([0, 0, 1.0], (3, 1)), atol=TOL)
    np.testing.assert_allclose(c.position[:2, 0], [-0.07, 0.13], atol=TOL)  # under the end spheres


def test_box_and_capsule_pairs_jit_vmap_and_float32():
    text = robot(
        '<link name="world"/>',
        f'<link name="post">{col(box(0.3, 0.2, 0.2))}</link>',
        f'<link name="base">{I}{col(box(0.1, 0.2, 0.3))}{col(capsule(0.05, 0.3), xyz=(0.2, 0, 0))}</link>',
        '<joint name="weld" type="fixed"><parent link="world"/><child link="post"/></joint>',
        '<joint name="free" type="floating"><parent link="world"/><child link="base"/></joint>',
    )
    model = with_self_collision(load_urdf(text))
    assert contact_count(model) == 8 + 3
    rng = np.random.default_rng(3)
    quats = rng.normal(size=(4, 4))
    qs = jnp.asarray(np.concatenate([rng.normal(size=(4, 3)) * 0.2, quats / np.linalg.norm(quats, axis=1)[:, None]], 1))
    batch = jax.vmap(lambda q: collide(model, body_poses(model, q)))(qs)
    jitted = jax.jit(lambda q: collide(model, body_poses(model, q)))
    # The last slot is the capsule segment's point deepest in the box, found by golden-section steps: compiled
    # and eager code round differently and stop at points up to the final bracket apart (4e-9 of the segment),
    # whose normals differ by up to ~1e-8 near an edge of the box (3.4e-8 measured here). Exact elsewhere.
    searched = np.arange(contact_count(model)) == 10
    for k in range(4):
        eager = run(model, qs[k])
        for field in ("distance", "position", "frame"):
            for got in (getattr(jitted(qs[k]), field), getattr(batch, field)[k]):
                np.testing.assert_allclose(got[~searched], getattr(eager, field)[~searched], atol=1e-12)
                np.testing.assert_allclose(got[searched], getattr(eager, field)[searched], atol=1e-7)
        single = collide(model, body_poses(model, qs[k].astype(jnp.float32)))
        assert single.distance.dtype == jnp.float32
        # float32 round-off (1e-7 relative, on lengths of 0.5 m); a different corner choice would differ by cm
        np.testing.assert_allclose(single.distance, eager.distance, atol=2e-6)


# --------------------------------------------------------------------------------------------------
# frames, combination rule


def test_tangent_frame_orthonormal_right_handed():
    rng = np.random.default_rng(0)
    n = rng.normal(size=(500, 3))
    n = np.concatenate([n, [[0, 0, 1], [0, 0, -1], [1, 0, 0], [0, 0.6, -0.8], [1e-9, 0, -1]]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    frame = np.asarray(tangent_frame(jnp.asarray(n)))
    np.testing.assert_allclose(frame[:, 0], n, atol=0)
    check_frames(frame)
    np.testing.assert_allclose(frame[-5], np.eye(3)[[2, 0, 1]], atol=0)


def test_friction_and_restitution_combination():
    model = pair_model(col(sphere(0.1), name="ball"), col(sphere(0.2), name="bob"))
    model = add_ground(model, friction=0.5, restitution=0.3)
    model = with_geom_properties(model, "bob", friction=0.2, restitution=0.6)
    model = with_geom_properties(model, "ball", friction=1.8)
    c = run(model, free_q([0, 0, 1.0]))
    # ground slot for bob (the only moving geom), then the pair
    assert tuple(c.body_a) == (-1, -1) and tuple(c.body_b) == (0, 0)
    np.testing.assert_allclose(c.friction, [math.sqrt(0.5 * 0.2), math.sqrt(1.8 * 0.2)], atol=TOL)
    np.testing.assert_allclose(c.restitution, [0.6, 0.6], atol=TOL)
    model = with_geom_properties(model, "bob", friction=0.0, restitution=0.0)
    c = run(model, free_q([0, 0, 1.0]))
    np.testing.assert_allclose(c.friction, [0.0, 0.0], atol=0)
    np.testing.assert_allclose(c.restitution, [0.3, 0.0], atol=TOL)
    # defaults: 0.8 everywhere, restitution 0
    default = add_ground(floating(col(sphere(0.1))))
    c = run(default, free_q([0, 0, 1.0]))
    np.testing.assert_allclose(c.friction, [0.8], atol=TOL)
    np.testing.assert_allclose(c.restitution, [0.0], atol=0)
    # gradient of the friction with respect to a zero geom friction is finite
    poses = body_poses(model, free_q([0, 0, 1.0]))
    g = jax.grad(lambda mu: collide(model.replace(geom_friction=mu), poses).friction.sum())(model.geom_friction)
    assert np.all(np.isfinite(np.asarray(g)))


def test_add_ground_sets_leaves():
    model = floating(col(sphere(0.1)))
    assert not model.ground
    grounded = add_ground(model, height=0.25, friction=1.2, restitution=0.5)
    assert grounded.ground
    assert float(grounded.ground_height) == 0.25
    assert float(grounded.ground_friction) == 1.2
    assert float(grounded.ground_restitution) == 0.5


# --------------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"height": math.inf}, "height"),
        ({"height": math.nan}, "height"),
        ({"friction": -0.1}, "friction"),
        ({"restitution": 1.5}, "restitution"),
        ({"restitution": -0.5}, "restitution"),
        ({"friction": "high"}, "friction"),
    ],
    ids=[
        "infinite_height",
        "nan_height",
        "negative_friction",
        "restitution_above_one",
        "negative_restitution",
        "non_number",
    ],
)
def test_add_ground_rejects(kwargs, match):
    with pytest.raises(ArgumentError, match=match):
        add_ground(floating(col(sphere(0.1))), **kwargs)


def test_set_geom_properties_unknown_name_lists_names():
    model = floating(col(sphere(0.1), name="foot"), col(box(1, 1, 1)))
    with pytest.raises(ArgumentError, match="hand") as err:
        with_geom_properties(model, "hand", friction=1.0)
    assert "foot" in str(err.value) and model.geom_names[1] in str(err.value)


def test_set_geom_properties_rejects_negative_friction():
    model = floating(col(sphere(0.1), name="foot"))
    with pytest.raises(ArgumentError, match="friction"):
        with_geom_properties(model, "foot", friction=-1.0)


def test_set_geom_properties_rejects_infinite_friction():
    model = floating(col(sphere(0.1), name="foot"))
    with pytest.raises(ArgumentError, match="friction"):
        with_geom_properties(model, "foot", friction=math.inf)


def test_set_geom_properties_rejects_restitution_out_of_range():
    model = floating(col(sphere(0.1), name="foot"))
    with pytest.raises(ArgumentError, match="restitution"):
        with_geom_properties(model, "foot", restitution=2.0)


def test_set_geom_properties_changes_one_geom():
    model = floating(col(sphere(0.1), name="foot"), col(box(1, 1, 1), name="torso"))
    model = with_geom_properties(model, "torso", friction=0.3, restitution=0.2)
    np.testing.assert_allclose(model.geom_friction, [0.8, 0.3])
    np.testing.assert_allclose(model.geom_restitution, [0.0, 0.2])


def chain(*shapes: str):
    """Fixed-base chain world - l0 - l1 - l2 ... (revolute joints), link i carries ``shapes[i]``
    (geom named ``g<i>``); plus a geom ``w`` welded to the world."""
    lines = ['<link name="world"/>', f'<link name="post">{col(sphere(0.1), name="w")}</link>']
    lines.append('<joint name="weld" type="fixed"><parent link="world"/><child link="post"/></joint>')
    parent = "world"
    for i, shape in enumerate(shapes):
        lines.append(f'<link name="l{i}">{I}{col(shape, name=f"g{i}")}</link>')
        lines.append(f'<joint name="j{i}" type="revolute"><parent link="{parent}"/><child link="l{i}"/>{LIMIT}</joint>')
        parent = f"l{i}"
    return load_urdf(robot(*lines))


def test_enable_self_collision_excludes_adjacent_bodies():
    model = chain(sphere(0.1), capsule(0.1, 0.2), sphere(0.1), capsule(0.1, 0.2))
    assert model.geom_names == ("w", "g0", "g1", "g2", "g3")
    model = with_self_collision(model)
    names = [(model.geom_names[a], model.geom_names[b]) for a, b in model.contact_pairs]
    # w (world) is adjacent to l0; each link to the next
    assert names == [("w", "g1"), ("w", "g2"), ("w", "g3"), ("g0", "g2"), ("g0", "g3"), ("g1", "g3")]


def test_enable_self_collision_exclude_and_disable():
    model = chain(sphere(0.1), capsule(0.1, 0.2), sphere(0.1), capsule(0.1, 0.2))
    model = with_self_collision(model, exclude=[("g3", "w"), ("g0", "g2")])
    names = [(model.geom_names[a], model.geom_names[b]) for a, b in model.contact_pairs]
    assert names == [("w", "g1"), ("w", "g2"), ("g0", "g3"), ("g1", "g3")]
    n_ground = contact_count(add_ground(model)) - len(model.contact_pairs)
    assert contact_count(add_ground(model)) == n_ground + 4
    assert with_self_collision(model, enabled=False).contact_pairs == ()


def test_enable_self_collision_same_body_geoms_are_not_paired():
    model = with_self_collision(floating(col(sphere(0.1)), col(sphere(0.2))))
    assert model.contact_pairs == ()


def test_enable_self_collision_unknown_exclude_name():
    model = chain(sphere(0.1), sphere(0.1), sphere(0.1))
    with pytest.raises(ArgumentError, match="nope") as err:
        with_self_collision(model, exclude=[("g0", "nope")])
    assert "g2" in str(err.value)


def test_enable_self_collision_malformed_exclude():
    model = chain(sphere(0.1), sphere(0.1), sphere(0.1))
    with pytest.raises(ArgumentError, match="exclude"):
        with_self_collision(model, exclude=[("g0", "g1", "g2")])


def test_enable_self_collision_pairs_cylinders_with_every_type():
    """Every geom type pair collides now, cylinders included: with_self_collision pairs a cylinder with the box,
    the spheres and another cylinder, and collide gives each pair its kernel's slots (PAIR_SLOTS)."""
    from jaxmor.sim.collision import PAIR_SLOTS

    model = with_self_collision(chain(sphere(0.1), box(0.1, 0.1, 0.1), sphere(0.1), cylinder(0.2, 0.2)))
    cylinder_geom = model.geom_names.index("g3")
    assert {pair for pair in model.contact_pairs if cylinder_geom in pair} >= {(1, 4), (2, 4)}
    kinds = [
        tuple(sorted((model.geom_type[a], model.geom_type[b]), key=lambda t: t.value)) for a, b in model.contact_pairs
    ]
    want = sum(PAIR_SLOTS.get(k, PAIR_SLOTS.get(k[::-1], 0)) for k in kinds)
    assert all(k in PAIR_SLOTS or k[::-1] in PAIR_SLOTS for k in kinds)
    assert contact_count(model) == want
    text = robot(
        '<link name="world"/>',
        f'<link name="post">{col(box(1, 1, 1))}</link>',
        f'<link name="base">{I}{col(cylinder(0.1, 0.2))}</link>',
        '<joint name="weld" type="fixed"><parent link="world"/><child link="post"/></joint>',
        '<joint name="free" type="floating"><parent link="world"/><child link="base"/></joint>',
    )
    pair = load_urdf(text).replace(contact_pairs=((0, 1),))
    # the cylinder standing 1 mm above the 1 m cube's top face: its bottom cap's 4 manifold corners at +1 mm
    c = run(pair, free_q([0, 0, 0.5 + 0.1 + 0.001]))
    used = np.asarray(c.distance) < 1.0
    np.testing.assert_allclose(np.asarray(c.distance)[used], 0.001, atol=1e-12)
    assert used.sum() >= 4


# --------------------------------------------------------------------------------------------------
# transformations: jit, vmap, grad, dtype


def mixed_model():
    """Ground, and all four supported pair kinds (both orders where one exists)."""
    text = robot(
        '<link name="world"/>',
        f'<link name="post">{col(sphere(0.1), name="w_sphere")}{col(capsule(0.05, 0.4), name="w_capsule")}'
        f"{col(box(0.2, 0.2, 0.2), xyz=(0.5, 0, 0), name='w_box')}</link>",
        f'<link name="base">{I}{col(sphere(0.1), name="b_sphere")}{col(capsule(0.05, 0.3), name="b_capsule")}'
        f"{col(box(0.1, 0.2, 0.3), xyz=(0, 0.3, 0), name='b_box')}"
        f"{col(cylinder(0.1, 0.1), xyz=(0, -0.3, 0), name='b_cylinder')}</link>",
        '<joint name="weld" type="fixed"><parent link="world"/><child link="post"/></joint>',
        '<joint name="free" type="floating"><parent link="world"/><child link="base"/></joint>',
    )
    model = add_ground(load_urdf(text))
    return with_self_collision(
        model,
        exclude=[
            ("w_box", "b_box"),
            ("w_box", "b_capsule"),
            ("w_capsule", "b_box"),
            ("w_box", "b_cylinder"),
            ("w_sphere", "b_cylinder"),
            ("w_capsule", "b_cylinder"),
        ],
    )


def test_mixed_model_layout():
    model = mixed_model()
    assert contact_count(model) == 1 + 2 + 4 + 8 + len(model.contact_pairs)
    assert len(model.contact_pairs) == 6


def test_jit_and_vmap_over_poses():
    model = mixed_model()
    rng = np.random.default_rng(1)
    qs = []
    for _ in range(5):
        quat = rng.normal(size=4)
        qs.append(np.concatenate([rng.normal(size=3) * 0.3, quat / np.linalg.norm(quat)]))
    qs = jnp.asarray(np.array(qs))
    batch = jax.vmap(lambda q: collide(model, body_poses(model, q)))(qs)
    jitted = jax.jit(lambda q: collide(model, body_poses(model, q)))
    nc = contact_count(model)
    assert batch.distance.shape == (5, nc) and batch.frame.shape == (5, nc, 3, 3)
    for k in (0, 3):
        eager = run(model, qs[k])
        compiled = jitted(qs[k])
        for field in ("distance", "position", "frame", "friction", "restitution"):
            np.testing.assert_allclose(getattr(compiled, field), getattr(eager, field), atol=1e-12)
            np.testing.assert_allclose(getattr(batch, field)[k], getattr(eager, field), atol=1e-12)
        assert np.array_equal(compiled.body_a, eager.body_a)


def grad_distance(model, q):
    poses = body_poses(model, q)

    def total(position, rotation):
        c = collide(model, poses.replace(position=position, rotation=rotation))
        return jnp.sum(c.distance) + jnp.sum(c.frame) + jnp.sum(c.position)

    g = jax.grad(total, argnums=(0, 1))(poses.position, poses.rotation)
    gq = jax.grad(lambda q: jnp.sum(collide(model, body_poses(model, q)).distance))(q)
    return [np.asarray(x) for x in (*g, gq)]


@pytest.mark.parametrize(
    ("name", "world", "base", "q"),
    [
        ("coincident spheres", col(sphere(0.1)), col(sphere(0.2)), free_q([0, 0, 0])),
        ("sphere on capsule axis", col(sphere(0.1)), col(capsule(0.1, 0.4)), free_q([0, 0, 0.1])),
        ("sphere centre at capsule end", col(sphere(0.1)), col(capsule(0.1, 0.4)), free_q([0, 0, 0.2])),
        ("parallel capsules", col(capsule(0.1, 0.4)), col(capsule(0.1, 0.4)), free_q([0.15, 0, 0.1])),
        ("coaxial capsules", col(capsule(0.1, 0.4)), col(capsule(0.1, 0.4)), free_q([0, 0, 0.1])),
        (
            "intersecting capsule axes",
            col(capsule(0.1, 0.4)),
            col(capsule(0.1, 0.4)),
            free_q([0, 0, 0], quat_of_axis_angle([1, 0, 0], math.pi / 2)),
        ),
        ("zero-length capsules", col(capsule(0.1, 0.0)), col(capsule(0.1, 0.0)), free_q([0, 0, 0])),
        ("sphere at box centre", col(box(0.2, 0.2, 0.2)), col(sphere(0.1)), free_q([0, 0, 0])),
        ("sphere centre on box face", col(box(0.2, 0.2, 0.2)), col(sphere(0.1)), free_q([0.1, 0, 0])),
        ("sphere centre on box corner", col(box(0.2, 0.2, 0.2)), col(sphere(0.1)), free_q([0.1, 0.1, 0.1])),
        ("zero-size box", col(box(0, 0, 0)), col(sphere(0.1)), free_q([0, 0, 0])),
        ("stacked equal boxes", col(box(0.2, 0.2, 0.2)), col(box(0.2, 0.2, 0.2)), free_q([0, 0, 0.2])),
        ("coincident boxes", col(box(0.2, 0.2, 0.2)), col(box(0.2, 0.2, 0.2)), free_q([0, 0, 0])),
        (
            "box edge on a face",
            col(box(0.4, 0.4, 0.2)),
            col(box(0.2, 0.2, 0.2)),
            free_q([0, 0, 0.1 + 0.1 * math.sqrt(2)], quat_of_axis_angle([1, 0, 0], math.pi / 4)),
        ),
        ("zero-size boxes", col(box(0, 0, 0)), col(box(0, 0, 0)), free_q([0, 0, 0])),
        ("capsule centre at box centre", col(box(0.2, 0.2, 0.2)), col(capsule(0.1, 0.4)), free_q([0, 0, 0])),
        (
            "capsule lying on a box face",
            col(box(0.4, 0.4, 0.2)),
            col(capsule(0.05, 0.2)),
            free_q([0, 0, 0.15], quat_of_axis_angle([0, 1, 0], math.pi / 2)),
        ),
        ("zero-length capsule at box corner", col(box(0.2, 0.2, 0.2)), col(capsule(0.1, 0.0)), free_q([0.1] * 3)),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("<") else "",
)
def test_gradients_finite_in_degenerate_configurations(name, world, base, q):
    model = add_ground(pair_model(world, base))
    for flipped in (False, True):
        m = model.replace(contact_pairs=((1, 0),)) if flipped else model
        c = run(m, q)
        for x in (c.distance, c.position, c.frame):
            assert np.all(np.isfinite(np.asarray(x))), name
        for g in grad_distance(m, q):
            assert np.all(np.isfinite(g)), name


def test_gradient_matches_normal():
    # d(distance)/d(position of B) = n for a sphere pair
    model = pair_model(col(sphere(0.1)), col(sphere(0.2)))
    poses = body_poses(model, free_q([0.3, 0.2, 0.1]))
    g = jax.grad(lambda p: collide(model, poses.replace(position=p)).distance[0])(poses.position)
    n = np.array([0.3, 0.2, 0.1]) / np.linalg.norm([0.3, 0.2, 0.1])
    np.testing.assert_allclose(g[0], n, atol=1e-12)


def test_float32_poses_give_float32_contacts():
    model = mixed_model()
    poses = body_poses(model, free_q([0.1, 0.0, 0.2]).astype(jnp.float32))
    c = collide(model, poses)
    for x in (c.distance, c.position, c.frame, c.friction, c.restitution):
        assert x.dtype == jnp.float32
        assert np.all(np.isfinite(np.asarray(x)))
    reference = run(model, free_q([0.1, 0.0, 0.2]))
    np.testing.assert_allclose(c.distance, reference.distance, atol=1e-5)


def test_rejects_wrong_pose_shape():
    model = mixed_model()
    poses = body_poses(model, free_q([0, 0, 0]))
    with pytest.raises(ArgumentError, match="poses"):
        collide(model, poses.replace(position=poses.position[:, :2]))
