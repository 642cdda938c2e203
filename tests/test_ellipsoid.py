"""Ellipsoid geoms (MJCF ``type="ellipsoid"``) against the ground.

References: the ground point's two defining properties (it lies on the surface, and the surface's outward normal
there points straight down), checked in float64 at random poses and radii; MuJoCo on the same file for an
ellipsoid rocking on the ground (one contact point in both engines; its soft contacts sink it about 0.3 mm, the
tolerance below allows 1 mm); the closed form of its resting height, its smallest radius.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.math import quat_to_rotation
from jaxmor.sim.collision.ground import ellipsoid_points

ROCKER = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="egg" pos="0 0 0.07" euler="8 5 0"><freejoint/>
      <geom name="egg" type="ellipsoid" size="0.2 0.1 0.06" density="500"/></body>
    {extra}
  </worldbody>
</mujoco>"""


def _load(text: str) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(text)


def test_the_ground_point_is_on_the_surface_where_its_normal_points_down():
    rng = np.random.default_rng(0)
    quat = rng.normal(size=(50, 4))
    rotation = np.asarray(jax.vmap(quat_to_rotation)(jnp.asarray(quat / np.linalg.norm(quat, axis=1, keepdims=True))))
    radii = rng.uniform(0.02, 0.5, size=(50, 3))
    centre = rng.normal(size=(50, 3))
    point = np.asarray(ellipsoid_points(jnp.asarray(centre), jnp.asarray(rotation), jnp.asarray(radii), None))[:, 0]
    local = np.einsum("nji,nj->ni", rotation, point - centre)  # R^T (p - c)
    np.testing.assert_allclose(np.linalg.norm(local / radii, axis=1), 1.0, atol=1e-12)  # on the surface
    normal = np.einsum("nij,nj->ni", rotation, local / radii**2)  # the gradient of |A^-1 R^T (x - c)|^2
    np.testing.assert_allclose(normal / np.linalg.norm(normal, axis=1, keepdims=True), [[0, 0, -1]] * 50, atol=1e-12)


def test_a_rocking_ellipsoid_follows_mujoco_and_rests_on_its_smallest_radius():
    mujoco = pytest.importorskip("mujoco")
    text = ROCKER.format(extra="")
    model = _load(text)
    assert model.geom_type == (jaxmor.GeomType.ELLIPSOID,)
    _, trajectory = jaxmor.rollout(model, jaxmor.init_state(model), jnp.zeros((3000, 0)))
    height = np.asarray(trajectory.q[:, 2])
    m = mujoco.MjModel.from_xml_string(text)
    d = mujoco.MjData(m)
    for step in (500, 1000, 2000):
        mujoco.mj_step(m, d, step - int(round(d.time / m.opt.timestep)))
        assert abs(height[step - 1] - d.qpos[2]) < 1e-3, (step, height[step - 1], d.qpos[2])
    # on its smallest radius (0.06 m), rocking a little (as MuJoCo's still does at 6 s): never through the ground
    assert 0.0595 < height[-1000:].min() and height[-1000:].max() < 0.064


def test_an_ellipsoid_pair_is_refused_with_the_supported_list():
    text = ROCKER.format(extra='<body pos="1 0 0.2"><freejoint/><geom name="crate" type="box" size=".1 .1 .1"/></body>')
    paired = text.replace("<worldbody>", '<contact><pair geom1="egg" geom2="crate"/></contact>\n  <worldbody>')
    with pytest.raises(jaxmor.ModelError, match=r"<string>:\d+: .*'egg' \(ellipsoid\) and geom 'crate' \(box\)"):
        _load(paired)
    wall = ROCKER.format(extra='<geom name="wall" type="box" size=".1 .1 .1" pos="1 0 0.2"/>')
    with pytest.raises(jaxmor.ModelError, match=r"<string>:\d+: self-collision between geom 'wall' \(box\) and geom"):
        _load(wall)  # a world geom found by the collision filters, not named in a <pair>: still the file and a line
