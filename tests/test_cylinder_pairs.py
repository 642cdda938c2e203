"""Cylinders against every other geom: the exact sphere-cylinder and capsule-cylinder kernels against the
cylinder's signed distance sampled in NumPy, and cylinders resting on a box, a sphere, a capsule and another
cylinder at the heights their geometry gives (``docs/design/collision.md``, "Cylinders").

The box, cylinder and mesh pairs see the cylinder as a prism of ``CYLINDER_SIDES`` faces around its exact caps,
circumscribed: a cylinder lying on one of its side faces rests at its radius, exactly. Rest tolerance: the solver's
penetration allowance (1e-5 m) and its round-off in float32 (1e-5 m), 3e-5 m in all.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import quat_of_axis_angle, rot_of_quat

import jaxmor
from jaxmor.sim.collision import polytope, primitive

REST_TOL = 3e-5
LYING = tuple(quat_of_axis_angle([1, 0, 0], math.pi / 2))  # the cylinder's axis along y


def cylinder_sdf(x, centre, rot, radius, half):
    local = (np.asarray(x) - centre) @ rot
    radial = np.linalg.norm(local[..., :2], axis=-1) - radius
    axial = np.abs(local[..., 2]) - half
    outside = np.hypot(np.maximum(radial, 0.0), np.maximum(axial, 0.0))
    return outside + np.minimum(np.maximum(radial, axial), 0.0)


@pytest.mark.parametrize("seed", range(4))
def test_sphere_and_capsule_against_a_cylinder_equal_its_sampled_signed_distance(seed):
    """float64 (the tests' dtype). Sphere: the distance is the cylinder's exact signed distance
    minus the radius, inside and out, and the point on the cylinder lies on its surface. Capsule: its end spheres
    the same, and the third slot the segment's smallest signed distance (sampled, 20,001 points) minus its radius."""
    rng = np.random.default_rng(seed)
    radius, half = rng.uniform(0.05, 0.2), rng.uniform(0.05, 0.3)
    quat = rng.normal(size=4)
    rot = rot_of_quat(quat / np.linalg.norm(quat))
    size = jnp.array([[radius, half, 0.0]])
    for _ in range(25):
        centre = rng.normal(size=3) * 0.25
        r = rng.uniform(0.01, 0.1)
        d, n, on_a, on_b = primitive.sphere_cylinder(
            jnp.asarray(centre)[None],
            None,
            jnp.array([[r, 0.0, 0.0]]),
            jnp.zeros((1, 3)),
            jnp.asarray(rot)[None],
            size,
        )
        exact = cylinder_sdf(centre, np.zeros(3), rot, radius, half)
        np.testing.assert_allclose(d[0], exact - r, atol=1e-12)
        assert abs(cylinder_sdf(np.asarray(on_b[0]), np.zeros(3), rot, radius, half)) < 1e-12
        np.testing.assert_allclose(np.linalg.norm(n[0]), 1.0, atol=1e-12)
    axis = rot_of_quat(np.array([1.0, 0.3, -0.2, 0.5]) / np.linalg.norm([1.0, 0.3, -0.2, 0.5]))
    centre, r, hl = rng.normal(size=3) * 0.2, 0.03, 0.15
    got = primitive.capsule_cylinder(
        jnp.asarray(centre)[None],
        jnp.asarray(axis)[None],
        jnp.array([[r, hl, 0.0]]),
        jnp.zeros((1, 3)),
        jnp.asarray(rot)[None],
        size,
    )[0][0]
    ends = centre + np.outer([-hl, hl], axis[:, 2])
    np.testing.assert_allclose(got[:2], cylinder_sdf(ends, np.zeros(3), rot, radius, half) - r, atol=1e-12)
    t = np.linspace(0.0, 1.0, 20001)[:, None]
    sampled = cylinder_sdf(ends[0] + t * (ends[1] - ends[0]), np.zeros(3), rot, radius, half).min() - r
    assert sampled - 1e-4 <= got[2] <= sampled + 1e-9


def test_every_geom_type_pair_collides():
    """Every pair of the five geom types has a kernel: no pair is left out, and none is warned about."""
    kinds = [jaxmor.GeomType.SPHERE, jaxmor.GeomType.CAPSULE, jaxmor.GeomType.BOX, jaxmor.GeomType.CYLINDER]
    kinds.append(jaxmor.GeomType.MESH)
    from jaxmor.sim.collision import pair_supported

    assert all(pair_supported(a, b) for a in kinds for b in kinds)


def test_the_cylinder_prism_has_exact_caps_and_side_faces_at_the_radius():
    """The prism's 18 planes: its side faces lie at the radius from the axis, its caps at the half length, and
    every vertex is on 3 of its planes."""
    rot = rot_of_quat(np.array([0.9, 0.1, 0.3, -0.2]) / np.linalg.norm([0.9, 0.1, 0.3, -0.2]))
    centre = np.array([0.1, -0.2, 0.3])
    vertices, planes = (
        np.asarray(x) for x in polytope.cylinder_polytope(jnp.asarray(centre), jnp.asarray(rot), jnp.array([0.1, 0.2]))
    )
    assert vertices.shape == (2 * polytope.CYLINDER_SIDES, 3) and planes.shape == (polytope.CYLINDER_SIDES + 2, 4)
    np.testing.assert_allclose(
        planes[:, 3] - planes[:, :3] @ centre, [0.1] * polytope.CYLINDER_SIDES + [0.2, 0.2], atol=1e-6
    )
    on = np.abs(vertices @ planes[:, :3].T - planes[:, 3]) < 1e-6
    assert np.all(on.sum(1) == 3)
    for face, ring in zip(planes, polytope.PRISM_FACES, strict=True):
        np.testing.assert_allclose(vertices[ring] @ face[:3], face[3], atol=1e-6)


def support(geom: str, xyz: str, rpy: str = "0 0 0") -> jaxmor.Model:
    """A world with one geom welded to it."""
    return jaxmor.load_urdf(
        f'<robot name="s"><link name="world"/><link name="post"><collision><origin xyz="{xyz}" rpy="{rpy}"/>'
        f'<geometry>{geom}</geometry></collision></link><joint name="w" type="fixed"><parent link="world"/>'
        '<child link="post"/></joint></robot>'
    )


R, HALF = 0.05, 0.08
CAPSULE = ('<capsule radius="0.05" length="0.3"/>', "0 0 0.05", "0 1.5707963267948966 0")
SCENES = {
    # name: (support, the cylinder's rest height by geometry, its orientation)
    "on a box, standing": (('<box size="0.4 0.4 0.2"/>', "0 0 0.1"), 0.2 + HALF, (1, 0, 0, 0)),
    "on a box, lying": (('<box size="0.4 0.4 0.2"/>', "0 0 0.1"), 0.2 + R, LYING),
    "on a sphere, standing": (('<sphere radius="0.1"/>', "0 0 0.1"), 0.2 + HALF, (1, 0, 0, 0)),
    "on a sphere, lying": (('<sphere radius="0.1"/>', "0 0 0.1"), 0.2 + R, LYING),
    "on a capsule, standing": (CAPSULE, 0.1 + HALF, (1, 0, 0, 0)),
    "on a capsule, lying": (CAPSULE, 0.1 + R, LYING),
    "on a cylinder, standing": (('<cylinder radius="0.1" length="0.2"/>', "0 0 0.1"), 0.2 + HALF, (1, 0, 0, 0)),
    "on a cylinder, lying across": (
        ('<cylinder radius="0.1" length="0.4"/>', "0 0 0.1", "0 1.5707963267948966 0"),
        0.2 + R,
        LYING,
    ),
}


@pytest.mark.parametrize(
    "scene", [pytest.param(s, marks=() if s.startswith("on a cylinder") else pytest.mark.slow) for s in SCENES]
)
def test_a_cylinder_rests_where_geometry_puts_it(scene):
    """A 0.05 x 0.16 m cylinder released at rest at its geometric rest height on a welded support stays there for
    1 s: height within REST_TOL, no sideways drift beyond 1 mm."""
    geom, height, orientation = SCENES[scene]
    model = jaxmor.add_free_body(
        support(*geom), "can", "cylinder", [R, HALF], 0.5, position=[0, 0, height], orientation=orientation
    )
    assert model.contact_pairs  # the pair is made
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1000))(jaxmor.init_state(model))
    q = np.asarray(traj.q)
    assert np.all(np.abs(q[:, 2] - height) < REST_TOL), (q[:, 2].min(), q[:, 2].max())
    assert np.abs(q[:, :2]).max() < 1e-3


@pytest.mark.slow
def test_a_cylinder_rolls_off_a_box_onto_the_ground():
    """A cylinder lying on a welded box (top at 0.2 m), pushed along x at 1 m/s, rolls off its edge and comes to
    lie on the ground: never below the box's top while over it, and finally at its radius on the ground."""
    model = jaxmor.add_ground(support('<box size="0.4 0.4 0.2"/>', "0 0 0.1"))
    model = jaxmor.add_free_body(
        model, "can", "cylinder", [R, HALF], 0.5, position=[0, 0, 0.2 + R], orientation=LYING, friction=0.8
    )
    state = jaxmor.init_state(model)
    state = state.replace(u=state.u.at[0].set(1.0))
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=3000))(state)
    q = np.asarray(traj.q)
    over = np.abs(q[:, 0]) < 0.2 - R
    assert np.all(q[over, 2] > 0.2 + R - 1e-3)
    assert q[-1, 0] > 0.2 and abs(q[-1, 2] - R) < 2e-3
