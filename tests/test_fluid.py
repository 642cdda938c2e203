"""The fluid stage (``jaxmor.sim.fluid``: MuJoCo's inertia-box model; MJCF ``<option density viscosity wind>``),
against MuJoCo, float64.

* **Forces**: at random states, jaxmor's generalized fluid force equals MuJoCo's ``qfrc_fluid`` to 1e-12 of its
  largest entry (the same formulas in float64; measured 2e-15) on the public files Brax ships (the swimmer at
  density 4000 and viscosity 0.1, a box with an offset centre of mass, a wind) and on a scene written here (free
  boxes turned off their axes, two geoms on one body, a hinge chain).
* **Trajectory**: the swimmer under random controls for 5 s (500 steps of 10 ms) stays within 0.1 of MuJoCo's
  coordinates (measured 0.034 m or rad, while it travels 1.7); without the fluid it would be 2.6 away.
* Bodies with two equal principal moments whose axes MuJoCo's compiler picks differently from jaxmor's Jacobi
  rotations (an off-axis capsule) are left out: the quadratic drag in that plane depends on the choice
  (``docs/mjcf.md``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.errors import ArgumentError, ModelError
from jaxmor.sim.fluid import fluid, principal_axes
from jaxmor.sim.kinematics import kinematics
from jaxmor.tools.compare import Pair

mujoco = pytest.importorskip("mujoco")
brax = pytest.importorskip("brax")
BRAX = Path(brax.__file__).parent

SCENE = """<mujoco><option timestep="0.002" density="1000" viscosity="0.01" wind="0.3 -0.2 0.1"/>
<worldbody>
 <body pos="0 0 1" euler="10 20 30"><freejoint/><geom type="box" size="0.1 0.05 0.02" mass="1"/></body>
 <body pos="1 0 1"><freejoint/><geom type="box" size="0.2 0.1 0.04" mass="2" euler="0 30 0"/>
   <geom type="sphere" size="0.05" pos="0.1 0 0.1" mass="0.5"/></body>
 <body pos="2 0 1"><joint axis="0 1 0"/><geom type="box" size="0.15 0.03 0.02" pos="0.15 0 0" mass="1"/>
   <body pos="0.3 0 0"><joint axis="1 0 0"/><geom type="box" size="0.1 0.03 0.02" pos="0.1 0 0" mass="0.5"/></body>
 </body>
</worldbody></mujoco>"""

FILES = ["envs/assets/swimmer.xml", "test_data/fluid_box_offset_com.xml", "test_data/fluid_wind.xml"]


def _load(source) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(source)


@pytest.mark.parametrize("source", [*FILES, "scene"])
def test_the_fluid_force_equals_mujocos(source):
    path = SCENE if source == "scene" else str(BRAX / source)
    model = _load(path)
    m = mujoco.MjModel.from_xml_string(SCENE) if source == "scene" else mujoco.MjModel.from_xml_path(path)
    assert model.opt.fluid_forces and float(model.opt.density) == pytest.approx(m.opt.density)
    pair, d = Pair(model, m), mujoco.MjData(m)
    force = jax.jit(lambda q, u: fluid(model, kinematics(model, q), u))
    rng = np.random.default_rng(0)
    for _ in range(10):
        d.qpos[:] = m.qpos0 + 0.3 * rng.normal(size=m.nq)
        mujoco.mj_normalizeQuat(m, d.qpos)
        d.qvel[:] = 2 * rng.normal(size=m.nv)
        mujoco.mj_forward(m, d)
        q, u = pair.from_mujoco(d.qpos, d.qvel)
        ours = pair.velocity_map(q) @ np.asarray(force(jnp.asarray(q), jnp.asarray(u)))  # MuJoCo's velocities
        theirs = d.qfrc_fluid[pair.qvel_index]
        assert np.abs(theirs).max() > 1e-3  # a force to compare
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12 * np.abs(theirs).max())


def test_the_swimmer_swims_as_in_mujoco():
    path = str(BRAX / "envs" / "assets" / "swimmer.xml")
    model, m = _load(path), mujoco.MjModel.from_xml_path(path)
    pair, d = Pair(model, m), mujoco.MjData(m)
    ctrls = np.random.default_rng(0).uniform(-1.0, 1.0, (500, m.nu))
    run = jax.jit(lambda model, c: jaxmor.rollout(model, jaxmor.init_state(model), {"ctrl": c})[1].q)
    ours = np.asarray(run(model, jnp.asarray(ctrls[:, pair.ctrl_index])))
    theirs = []
    for c in ctrls:
        d.ctrl[:] = c
        mujoco.mj_step(m, d)
        theirs.append(d.qpos[pair.qpos_index])
    theirs = np.array(theirs)
    assert np.abs(ours - theirs).max() < 0.1 and np.abs(theirs[-1] - theirs[0]).max() > 1.0
    still = jaxmor.with_options(model, density=0.0, viscosity=0.0, fluid_forces=False)
    assert np.abs(np.asarray(run(still, jnp.asarray(ctrls[:, pair.ctrl_index]))) - theirs).max() > 1.0


def test_principal_axes_diagonalize_without_lapack():
    rng = np.random.default_rng(3)
    rotations = np.linalg.qr(rng.normal(size=(5, 3, 3)))[0]
    moments = rng.uniform(0.1, 2.0, (5, 3))
    inertia = np.einsum("nij,nj,nkj->nik", rotations, moments, rotations)
    found, axes = principal_axes(jnp.asarray(inertia))
    np.testing.assert_allclose(np.sort(found, axis=1), np.sort(moments, axis=1), rtol=1e-12)
    rebuilt = np.einsum("nij,nj,nkj->nik", axes, found, axes)
    np.testing.assert_allclose(rebuilt, inertia, rtol=0, atol=1e-12)


def test_options_turn_the_fluid_on_and_check_it(tmp_path):
    body = _load('<mujoco><worldbody><body><freejoint/><geom size=".1"/></body></worldbody></mujoco>')
    assert not body.opt.fluid_forces
    wet = jaxmor.with_options(body, density=1000.0)
    assert wet.opt.fluid_forces and float(wet.opt.density) == 1000.0
    for options, message in (({"density": -1.0}, "density must be finite and >= 0"), ({"wind": (1, 2)}, "wind")):
        with pytest.raises(ArgumentError, match=message):
            jaxmor.with_options(body, **options)
    jaxmor.save_checkpoint(tmp_path / "wet.npz", wet, jaxmor.init_state(wet))
    loaded, _ = jaxmor.load_checkpoint(tmp_path / "wet.npz")
    assert loaded.opt.fluid_forces and float(loaded.opt.density) == 1000.0
    with pytest.raises(ModelError, match=r"<string>:1: .*the ellipsoid fluid model \(fluidshape\) is not modelled"):
        _load(
            '<mujoco><option density="1"/><worldbody><body><freejoint/><geom size=".1" fluidshape="ellipsoid"/>'
            "</body></worldbody></mujoco>"
        )


def test_a_welded_body_in_a_fluid_is_named_in_the_warning():
    """jaxmor merges a body without a joint into its parent; MuJoCo's fluid model gives each its own box."""
    text = (
        '<mujoco><option density="1000"/><worldbody><body name="hull"><freejoint/><geom type="box" size=".2 .1 .1"/>'
        '<body name="fin" pos="0.3 0 0"><geom type="box" size=".05 .01 .1"/></body></body></worldbody></mujoco>'
    )
    with pytest.warns(jaxmor.MujocoDifferenceWarning, match=r"the fluid acts on 1 body\(ies\) .*\['hull', 'fin'\]"):
        jaxmor.load_mjcf(text)
