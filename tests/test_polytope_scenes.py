"""Boxes resting and sliding on boxes through the separating-axis manifold (``docs/design/collision.md``,
"Polytope contacts"), the box scenes of the third physics review, in float64.

Cubes of 0.1 m and 1 kg. Rest tolerance: the solver's penetration allowance is 1e-5 m per contact; sink under
1e-4 m (the review's bound) allows a stack of a few of them with margin.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor

H = 0.05  # half edge [m]


def quat_z(degrees: float) -> list[float]:
    a = math.radians(degrees) / 2
    return [math.cos(a), 0.0, 0.0, math.sin(a)]


def stack(angles) -> jaxmor.Model:
    """Cubes on the ground, cube ``i`` centred at ``H + 2 H i`` turned by ``angles[i]`` degrees about z."""
    model = jaxmor.add_ground(jaxmor.load_urdf('<robot name="s"><link name="world"/></robot>'))
    for i, angle in enumerate(angles):
        model = jaxmor.add_free_body(
            model, f"c{i}", "box", [H] * 3, 1.0, position=[0, 0, H + 2 * H * i], orientation=quat_z(angle)
        )
    return model


def test_a_cube_twisted_on_an_equal_cube_rests():
    """A cube on an equal cube, turned by 45, 5, 1 and 0.1 degrees (one batch: the turn is in the initial state),
    rests for 3 s: sink under 1e-4 m, no drift or turn beyond 1e-4."""
    model = stack([0.0, 0.0])
    twists = [45.0, 5.0, 1.0, 0.1]
    q0 = np.tile(np.asarray(model.q_default), (len(twists), 1))
    q0[:, 10:14] = [quat_z(t) for t in twists]
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.asarray(q0))
    final, _ = jax.jit(jax.vmap(lambda s: jaxmor.rollout(model, s, n_steps=3000)))(states)
    q = np.asarray(final.q)
    assert not np.any(np.asarray(final.nonfinite))
    np.testing.assert_allclose(q[:, 9], 3 * H, atol=1e-4)  # the top cube's centre
    np.testing.assert_allclose(q[:, 2], H, atol=1e-4)
    np.testing.assert_allclose(q[:, [7, 8]], 0.0, atol=1e-4)
    np.testing.assert_allclose(np.abs(q[:, 10:14]), np.abs(q0[:, 10:14]), atol=1e-4)


def test_three_stacked_cylinders_come_to_rest_upright_and_twisted():
    """Three cylinders (radius 0.1 m, half length 0.05 m) stacked upright, and the same twisted 10 degrees per level
    (one batch: the twist is in the initial state): after 2 s every speed is below 1e-3 m/s and 1e-3 rad/s and
    no cylinder has sunk 0.1 mm. The face-face manifold keeps 8 of a 16-gon's corners; kept by depth alone they all
    sat on the side tilted down and the stack rocked from side to side (0.08 rad/s after 1 s)."""
    model = jaxmor.add_ground(jaxmor.load_urdf('<robot name="s"><link name="world"/></robot>'))
    for i in range(3):
        model = jaxmor.add_free_body(model, f"c{i}", "cylinder", [0.1, 0.05], 1.0, position=[0, 0, 0.05 + 0.1 * i])
    q0 = np.tile(np.asarray(model.q_default), (2, 1))
    for i in range(3):
        q0[1, 7 * i + 3 : 7 * i + 7] = quat_z(10.0 * i)
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.asarray(q0))
    final, _ = jax.jit(jax.vmap(lambda s: jaxmor.rollout(model, s, n_steps=2000)))(states)  # 2 s of 1 ms steps
    u = np.asarray(final.u).reshape(2, 3, 6)
    assert np.abs(u[..., :3]).max() < 1e-3 and np.abs(u[..., 3:]).max() < 1e-3, u
    sink = np.array([0.05, 0.15, 0.25]) - np.asarray(final.q).reshape(2, 3, 7)[..., 2]
    assert np.all(sink < 1e-4), sink


@pytest.mark.slow
def test_a_twisted_stack_of_five_cubes_stands():
    """Five cubes, cube ``i`` turned by 20 i degrees, stand for 3 s with the top cube's centre at 0.45 m."""
    model = stack([20.0 * i for i in range(5)])
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=3000))(jaxmor.init_state(model))
    heights = np.asarray(traj.q)[:, 2::7][:, :5]
    np.testing.assert_allclose(heights[-1], H + 2 * H * np.arange(5), atol=1e-4)
    assert heights[:, 4].min() > 0.45 - 1e-4


@pytest.mark.slow
def test_a_cube_slides_edge_first_over_a_box_edge():
    """A cube turned 45 degrees about z slides edge-first at 1 m/s (frictionless) along a welded 0.4 x 0.4 x 0.2 m
    box and off its edge: while its centre is over the box it never sinks into it by more than 1e-4 m, and it
    leaves the box and lands on the ground beyond."""
    model = jaxmor.add_ground(
        jaxmor.load_urdf(
            '<robot name="s"><link name="world"/><link name="table"><collision><origin xyz="0 0 0.1"/>'
            '<geometry><box size="0.4 0.4 0.2"/></geometry></collision></link><joint name="w" type="fixed">'
            '<parent link="world"/><child link="table"/></joint></robot>'
        ),
        friction=0.0,
    )
    model = jaxmor.add_free_body(
        model, "cube", "box", [H] * 3, 1.0, position=[0, 0, 0.2 + H], orientation=quat_z(45), friction=0.0
    )
    state = jaxmor.init_state(model)
    state = state.replace(u=state.u.at[0].set(1.0))
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1500))(state)
    q = np.asarray(traj.q)
    over = q[:, 0] < 0.2 - H * math.sqrt(2)
    assert over.sum() > 50 and np.all(q[over, 2] > 0.2 + H - 1e-4)
    assert q[-1, 0] > 0.3 and q[-1, 2] < 0.2
