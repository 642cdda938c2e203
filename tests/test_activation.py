"""Activation dynamics of affine actuators (MJCF ``dyntype`` integrator, filter, filterexact; ``<intvelocity>``;
``<position timeconst>``; ``actlimited``/``actrange``; ``actearly``), against MuJoCo, float64.

* **Step by step**: MuJoCo is driven by random controls; before each of its steps jaxmor is given MuJoCo's state
  (``qpos``, ``qvel``, ``act``, ``ctrl``), and jaxmor's actuator forces and its activations after one step must
  equal MuJoCo's ``qfrc_actuator`` and ``act`` to 1e-12 (the same arithmetic in float64; measured 3e-16), on a
  scene written here (every dynamics type, an activation range, ``actearly``) and on the MJX test file
  ``general_dyntype.xml`` shipped in the ``mujoco`` wheel (its forces and activations; its mass matrix is
  singular, so its motion is not compared).
* **Trajectory**: 0.6 s of the scene under random controls stays within 3 mm of MuJoCo's joint positions (measured
  2.18 mm). The same scene without activation dynamics (the servos given their controls directly) differs from
  MuJoCo by 2.21 mm over the same time: the engines' integrators, not the activations (which agree to 1e-15 step
  by step), make the difference.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor.actuation.affine import AffineActuatorDefinition, next_activation
from jaxmor.errors import ArgumentError, ModelError
from jaxmor.sim.forces import affine_joint_force

mujoco = pytest.importorskip("mujoco")

SCENE = """<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body pos="0 0 1"><joint name="j1" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
      <body pos="0.3 0 0"><joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.5"/>
        <body pos="0.3 0 0"><joint name="j3" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03" mass="0.3"/>
          <body pos="0.2 0 0"><joint name="j4" type="slide" axis="1 0 0"/><geom type="sphere" size="0.05" mass="0.2"/>
            <body pos="0.1 0 0"><joint name="j5" axis="1 0 0"/><geom type="sphere" size="0.03" mass="0.1"/></body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <general joint="j1" dyntype="integrator" gainprm="2" ctrlrange="-1 1" actrange="-0.5 0.5"/>
    <general joint="j2" dyntype="filter" dynprm="0.05" gainprm="3" biastype="affine" biasprm="0 -3 -0.2"
             ctrlrange="-1 1" actearly="true"/>
    <position joint="j3" kp="2" kv="0.1" timeconst="0.03"/>
    <intvelocity joint="j4" kp="20" kv="1" actrange="-0.1 0.1"/>
    <motor joint="j5" ctrlrange="-0.1 0.1"/>
  </actuator>
</mujoco>"""

PUBLIC = Path(mujoco.__file__).parent / "mjx" / "test_data" / "actuator" / "general_dyntype.xml"


def _load(source) -> jaxmor.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        return jaxmor.load_mjcf(source)


def _step_by_step(model: jaxmor.Model, m, steps: int = 200, whole_step: bool = True) -> tuple[float, float]:
    """The largest differences from MuJoCo of the actuator forces and of the next activations over ``steps`` steps,
    jaxmor started from MuJoCo's state before each (the activations of ``jaxmor.step``, or with ``whole_step``
    false of :func:`next_activation`, the function the step calls, for a model whose step is slow to compile)."""
    d = mujoco.MjData(m)
    dyn = np.array([i for i, kind in enumerate(model.affine.dynamics) if kind != "none"])
    forces = jax.jit(lambda s: affine_joint_force(model, s))
    h = model.opt.timestep
    if whole_step:
        advance = jax.jit(lambda s: jaxmor.step(model, s).act)
    else:
        advance = jax.jit(lambda s: next_activation(model.affine, s.ctrl, s.act, h))
    rng = np.random.default_rng(0)
    force_error = act_error = 0.0
    for _ in range(steps):
        d.ctrl[:] = rng.uniform(-1.2, 1.2, m.nu)
        state = jaxmor.init_state(model, q=jnp.asarray(d.qpos)).replace(
            u=jnp.asarray(d.qvel), ctrl=jnp.asarray(d.ctrl), act=jnp.zeros(model.nu).at[dyn].set(d.act)
        )
        mujoco.mj_step(m, d)
        force_error = max(force_error, float(np.abs(np.asarray(forces(state)) - d.qfrc_actuator).max()))
        act_error = max(act_error, float(np.abs(np.asarray(advance(state))[dyn] - d.act).max()))
    return force_error, act_error


def test_forces_and_activations_equal_mujocos_step_by_step():
    m = mujoco.MjModel.from_xml_string(SCENE)
    model = _load(SCENE)
    assert model.affine.dynamics == ("integrator", "filter", "filterexact", "integrator", "none")
    assert model.affine.act_early == (False, True, False, False, False)
    assert m.na == 4 and list(m.actuator_dyntype) == [1, 2, 3, 1, 0]
    force_error, act_error = _step_by_step(model, m)
    assert force_error < 1e-12 and act_error < 1e-12, (force_error, act_error)


def test_the_public_mjx_file_equals_mujoco():
    """MJX's ``general_dyntype.xml``: one actuator of each dynamics on four slide joints. Its fourth joint slides along
    the first two's sum, so its mass matrix is singular and MuJoCo resets it at the first step; both engines get the
    same armature (1 kg on each joint) so that it steps."""
    m = mujoco.MjModel.from_xml_path(str(PUBLIC))
    m.dof_armature[:] = 1.0
    model = _load(str(PUBLIC))
    model = model.replace(dof_armature=jnp.ones(model.nv))
    assert model.affine.dynamics == ("none", "integrator", "filter", "filterexact")
    force_error, act_error = _step_by_step(model, m)
    assert force_error < 1e-12 and act_error < 1e-12, (force_error, act_error)


def test_dm_controls_rodent_actuators_equal_mujocos_step_by_step():
    """dm_control's rodent walker (its wheel's ``rodent.xml``): 38 ``general`` actuators with filter dynamics, their
    affine biases with constant terms on 28 of them (``biasprm[0]``, e.g. 2.62 Nm), over a 67-DoF body; the
    forces and next activations from MuJoCo's states equal MuJoCo's to 1e-12 over 30 steps, and its ``<skin>`` is
    named in the load's warning."""
    from reference import mjcf_model

    path = mjcf_model("rodent")
    if path is None:
        pytest.skip("dm-control is not installed (the test extra)")
    with pytest.warns(jaxmor.MujocoDifferenceWarning, match=r"1 <skin> element\(s\) ignored"):
        model = jaxmor.load_mjcf(str(path), meshes="ignore")
    m = mujoco.MjModel.from_xml_path(str(path))
    assert set(model.affine.dynamics) == {"filter"} and m.na == model.nu == 38
    assert np.count_nonzero(m.actuator_biasprm[:, 0]) == 28
    force_error, act_error = _step_by_step(model, m, steps=30, whole_step=False)
    assert force_error < 1e-12 and act_error < 1e-12, (force_error, act_error)


def test_a_trajectory_stays_within_3_mm_of_mujocos():
    model = _load(SCENE)
    m = mujoco.MjModel.from_xml_string(SCENE)
    d = mujoco.MjData(m)
    ctrls = np.random.default_rng(0).uniform(-1.0, 1.0, (300, m.nu))
    _, trajectory = jax.jit(lambda s, c: jaxmor.rollout(model, s, {"ctrl": c}))(
        jaxmor.init_state(model), jnp.asarray(ctrls)
    )
    positions = []
    for c in ctrls:
        d.ctrl[:] = c
        mujoco.mj_step(m, d)
        positions.append(d.qpos.copy())
    error = np.abs(np.asarray(trajectory.q) - np.array(positions)).max()
    assert error < 3e-3, error
    assert np.abs(np.asarray(trajectory.act[:, :4])).max() > 0.05  # the activations moved


def test_the_mjcf_rules_and_refusals():
    """``<intvelocity>`` integrates with its activation range, ``<position timeconst>`` filters exactly; an actrange
    without dynamics, a muscle and a filter without a positive time constant are refused naming the line."""
    model = _load(SCENE)
    np.testing.assert_array_equal(model.affine.act_lower, [-0.5, -np.inf, -np.inf, -0.1, -np.inf])
    np.testing.assert_allclose(model.affine.time_constant, [1.0, 0.05, 0.03, 1.0, 1.0])
    joint = '<worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody>'
    bad = {
        '<general joint="j" actrange="0 1"/>': "an actrange needs activation dynamics",
        '<general joint="j" dyntype="muscle"/>': "dyntype 'muscle' is not supported",
        '<general joint="j" dyntype="filter" dynprm="0"/>': "a filter needs a positive time constant",
    }
    for element, message in bad.items():
        with pytest.raises(ModelError, match=rf"<string>:1: .*{message}"):
            _load(f"<mujoco>{joint}<actuator>{element}</actuator></mujoco>")


def test_definitions_check_their_dynamics_and_editors_keep_them(tmp_path):
    for kwargs, message in (
        ({"dynamics": "muscle"}, "dynamics must be one of"),
        ({"dynamics": "filter", "time_constant": 0.0}, "time_constant must be > 0"),
        ({"act_range": (1.0, -1.0)}, "act_range"),
    ):
        with pytest.raises(ArgumentError, match=message):
            AffineActuatorDefinition("a", "j", **kwargs)
    model = _load(SCENE)
    combined = jaxmor.combine(model, _load(SCENE), prefix="b/", position=(0.0, 1.0, 0.0))
    assert (
        combined.affine.dynamics == model.affine.dynamics * 2
        and combined.affine.act_early == model.affine.act_early * 2
    )
    state = jaxmor.init_state(model).replace(act=jnp.arange(5.0) / 10)
    jaxmor.save_checkpoint(tmp_path / "act.npz", model, state)
    loaded, loaded_state = jaxmor.load_checkpoint(tmp_path / "act.npz")
    assert loaded.affine.dynamics == model.affine.dynamics and loaded.affine.act_early == model.affine.act_early
    np.testing.assert_array_equal(loaded_state.act, state.act)


def test_a_keyframes_activations_are_mujocos():
    """A key's ``act`` gives the activations of the actuators with dynamics, in MuJoCo's order (``mj_resetDataKeyframe``
    sets ``d.act``); the forces from that keyframe equal MuJoCo's (1e-12); a key without ``act`` starts them at 0.
    ``act`` of the wrong length, and ``act`` beside a ``<dcmotor>`` (whose states MuJoCo counts in it), are refused
    naming the line."""
    text = SCENE.replace(
        "</actuator>",
        '</actuator>\n<keyframe><key name="active" qpos="0.1 0.2 0.3 0.05 0" act="0.3 -0.2 0.1 0.05" ctrl="1 1 0 0 0"/>'
        '<key name="plain" qpos="0.1 0 0 0 0"/></keyframe>',
    )
    model, m = _load(text), mujoco.MjModel.from_xml_string(text)
    d = mujoco.MjData(m)
    dyn = np.array([i for i, kind in enumerate(model.affine.dynamics) if kind != "none"])
    for key in ("active", "plain"):
        mujoco.mj_resetDataKeyframe(m, d, m.key(key).id)
        mujoco.mj_forward(m, d)
        state = jaxmor.set_keyframe(model, jaxmor.init_state(model).replace(act=jnp.ones(model.nu)), key)
        np.testing.assert_allclose(np.asarray(state.act)[dyn], d.act, atol=1e-15)
        assert float(state.act[4]) == 0.0  # the motor has no activation
        np.testing.assert_allclose(affine_joint_force(model, state), d.qfrc_actuator, atol=1e-12)
    with pytest.raises(ModelError, match=r"<string>:\d+: act of <key> needs 4 numbers, got 3"):
        _load(text.replace('act="0.3 -0.2 0.1 0.05"', 'act="0.3 -0.2 0.1"'))
    dc = '<dcmotor joint="j5" resistance="1" motorconst="0.1" ctrlrange="-24 24"/></actuator>'
    with pytest.raises(ModelError, match=r"key act beside <dcmotor> actuators is not supported"):
        _load(text.replace('<motor joint="j5" ctrlrange="-0.1 0.1"/>\n  </actuator>', dc))
