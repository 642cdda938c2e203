"""Affine actuators (spec/affine-actuator.md) against MuJoCo, hand-computed values and JAX transforms."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from jaxmor.actuation.affine import (
    AffineActuatorDefinition,
    AffineActuators,
    affine_actuator_force,
    affine_force,
    affine_force_at,
    affine_generalized_force,
    clamp_ctrl,
    compile_affine,
    empty_affine,
    joint_state,
)
from jaxmor.errors import ArgumentError

A = AffineActuatorDefinition
TOL = 1e-12

# --------------------------------------------------------------------------------------------------
# MuJoCo reference
# --------------------------------------------------------------------------------------------------

# A floating base (free joint: 7 qpos, 6 qvel) carrying a hinge-hinge-slide chain, so that the
# q and v indices of the driven joints differ (hinges at q 7, 8 / v 6, 7; slide at q 9 / v 8).
_BODIES = """
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.1 0.1" mass="2"/>
      <body name="b1">
        <joint name="j1" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5" mass="1"/>
        <body name="b2" pos="0 0 -0.5">
          <joint name="j2" type="hinge" axis="1 0 0"/>
          <geom type="capsule" size="0.05" fromto="0 0 0 0 0 -0.5" mass="1"/>
          <body name="b3" pos="0 0 -0.5">
            <joint name="j3" type="slide" axis="0 0 1"/>
            <geom type="sphere" size="0.05" mass="0.5"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    {actuators}
  </actuator>
</mujoco>
"""

# Sets of actuators (one per joint); ctrlrange/forcerange chosen so the random sweep below both
# clamps controls and saturates forces. ctrllimited/forcelimited are left to MuJoCo's "auto"
# (limited iff a range is given) except where stated.
ACTUATOR_SETS = {
    "motors": """
        <motor name="m1" joint="j1" gear="2.5" ctrlrange="-1 1.5" forcerange="-0.8 1.2"/>
        <motor name="m2" joint="j2" gear="-0.7"/>
        <motor name="m3" joint="j3" gear="4" ctrlrange="-0.5 0.5"/>""",
    "position": """
        <position name="p1" joint="j1" kp="10" kv="2" ctrlrange="-1 1" forcerange="-6 5"/>
        <position name="p2" joint="j2" kp="7.5" gear="3" ctrlrange="-0.8 0.9"/>
        <position name="p3" joint="j3" kp="30" kv="0.4" gear="-1.7" forcerange="-9 9"/>""",
    "velocity": """
        <velocity name="v1" joint="j1" kv="4" ctrlrange="-2 2" forcerange="-3 3"/>
        <velocity name="v2" joint="j2" kv="1.5" gear="2"/>
        <velocity name="v3" joint="j3" kv="12" gear="0.3" forcerange="-1 4"/>""",
    "general": """
        <general name="g1" joint="j1" gaintype="fixed" biastype="affine" gainprm="3.5" biasprm="0.4 -2.25 -0.75"
                 gear="1.5" ctrlrange="-1 2" forcerange="-4 3"/>
        <general name="g2" joint="j2" gaintype="fixed" biastype="affine" gainprm="-2" biasprm="0.75 1.25 -3"
                 ctrlrange="-3 3"/>
        <general name="g3" joint="j3" gainprm="0.6" biastype="none" gear="5" forcerange="-2 2"/>""",
    "mixed_explicit_limits": """
        <position name="p1" joint="j1" kp="5" kv="1" ctrlrange="-1 1" ctrllimited="false" forcerange="-1 1"/>
        <motor name="m2" joint="j2" gear="2" ctrlrange="-0.3 0.3" ctrllimited="true" forcerange="-1 1"
               forcelimited="false"/>
        <velocity name="v3" joint="j3" kv="3" gear="-2" ctrlrange="-1 1" forcerange="-2 0.5" forcelimited="true"/>""",
}


def _mujoco_model(actuators: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(_BODIES.format(actuators=actuators))


def _joint_maps(m: mujoco.MjModel) -> tuple[dict[str, int], dict[str, int]]:
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)]
    q_index = {n: int(m.jnt_qposadr[j]) for j, n in enumerate(names)}
    v_index = {n: int(m.jnt_dofadr[j]) for j, n in enumerate(names)}
    return q_index, v_index


def _definitions_from_mujoco(m: mujoco.MjModel) -> list[AffineActuatorDefinition]:
    """Read MuJoCo's compiled actuators (the effective limited flags included) into definitions."""
    out = []
    for i in range(m.nu):
        assert int(m.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_JOINT)
        assert int(m.actuator_dyntype[i]) == int(mujoco.mjtDyn.mjDYN_NONE)
        assert int(m.actuator_gaintype[i]) == int(mujoco.mjtGain.mjGAIN_FIXED)
        biastype = int(m.actuator_biastype[i])
        assert biastype in (int(mujoco.mjtBias.mjBIAS_AFFINE), int(mujoco.mjtBias.mjBIAS_NONE))
        affine_bias = biastype == int(mujoco.mjtBias.mjBIAS_AFFINE)
        joint = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[i, 0]))
        out.append(
            A.from_mujoco(
                mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i),
                joint,
                gear=m.actuator_gear[i, 0],
                gainprm=m.actuator_gainprm[i, 0],
                biasprm=m.actuator_biasprm[i, :3] if affine_bias else (0.0, 0.0, 0.0),
                ctrl_range=tuple(m.actuator_ctrlrange[i]) if m.actuator_ctrllimited[i] else None,
                force_range=tuple(m.actuator_forcerange[i]) if m.actuator_forcelimited[i] else None,
            )
        )
    return out


def _random_states(m: mujoco.MjModel, rng: np.random.Generator, n: int):
    """Random (qpos, qvel, ctrl), the controls reaching well outside their ranges."""
    for _ in range(n):
        qpos = rng.normal(size=m.nq)
        qpos[3:7] /= np.linalg.norm(qpos[3:7])
        qvel = 2.0 * rng.normal(size=m.nv)
        ctrl = 3.0 * rng.normal(size=m.nu)
        yield qpos, qvel, ctrl


def _compare_with_mujoco(m: mujoco.MjModel, act: AffineActuators, seed: int = 0, n: int = 64):
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    clamped = saturated = 0
    for qpos, qvel, ctrl in _random_states(m, rng, n):
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(m, d)
        q, v, u = jnp.asarray(qpos), jnp.asarray(qvel), jnp.asarray(ctrl)
        qfrc = affine_generalized_force(act, u, q, v, m.nv)
        np.testing.assert_allclose(np.asarray(qfrc), d.qfrc_actuator, rtol=0, atol=TOL)
        force = affine_actuator_force(act, u, *joint_state(act, q, v))
        np.testing.assert_allclose(np.asarray(force), d.actuator_force, rtol=0, atol=TOL)
        clamped += int(np.any(np.asarray(clamp_ctrl(act, u)) != ctrl))
        saturated += int(np.any((force == act.force_lower) | (force == act.force_upper)))
    return clamped, saturated


@pytest.mark.parametrize("name", sorted(ACTUATOR_SETS))
def test_matches_mujoco(name):
    m = _mujoco_model(ACTUATOR_SETS[name])
    act = compile_affine(_definitions_from_mujoco(m), *_joint_maps(m))
    assert act.q_index == (7, 8, 9) and act.v_index == (6, 7, 8)
    clamped, saturated = _compare_with_mujoco(m, act)
    # The sweep exercises the control clamp and the force clamp wherever the set has them.
    if np.any(m.actuator_ctrllimited):
        assert clamped > 0
    if np.any(m.actuator_forcelimited):
        assert saturated > 0


def test_mujoco_auto_and_explicit_limits():
    """ctrllimited/forcelimited "auto": limited iff a range is given; explicit flags win."""
    m = _mujoco_model(ACTUATOR_SETS["motors"])
    np.testing.assert_array_equal(m.actuator_ctrllimited, [1, 0, 1])
    np.testing.assert_array_equal(m.actuator_forcelimited, [1, 0, 0])
    m = _mujoco_model(ACTUATOR_SETS["mixed_explicit_limits"])
    np.testing.assert_array_equal(m.actuator_ctrllimited, [0, 1, 1])
    np.testing.assert_array_equal(m.actuator_forcelimited, [1, 0, 1])
    act = compile_affine(_definitions_from_mujoco(m), *_joint_maps(m))
    np.testing.assert_array_equal(np.asarray(act.ctrl_lower), [-np.inf, -0.3, -1.0])
    np.testing.assert_array_equal(np.asarray(act.force_upper), [1.0, np.inf, 0.5])


def test_spec_constructors_match_mujoco_servos_at_unit_gear():
    """For gear = 1 the spec's motor/position/velocity are MuJoCo's <motor>/<position>/<velocity>."""
    m = _mujoco_model(
        """
        <motor joint="j1" ctrlrange="-1 1" forcerange="-0.5 0.8"/>
        <position joint="j2" kp="8" kv="1.5" ctrlrange="-0.6 0.6" forcerange="-3 2"/>
        <velocity joint="j3" kv="6" ctrlrange="-1 1" forcerange="-4 4"/>"""
    )
    defs = [
        A.motor("m", "j1", ctrl_range=(-1, 1), force_range=(-0.5, 0.8)),
        A.position("p", "j2", kp=8, kv=1.5, ctrl_range=(-0.6, 0.6), force_range=(-3, 2)),
        A.velocity("v", "j3", kv=6, ctrl_range=(-1, 1), force_range=(-4, 4)),
    ]
    clamped, saturated = _compare_with_mujoco(m, compile_affine(defs, *_joint_maps(m)), seed=1)
    assert clamped > 0 and saturated > 0


def test_spec_constructors_with_gear_equal_mujoco_general():
    """The spec's geared servos are MuJoCo <general> with the bias divided by the gear.

    MuJoCo multiplies its bias by the actuator length gear * q, the spec by the joint position q, so
    the spec's position(kp, kv, gear=g) is <general gainprm=kp biasprm="0 -kp/g -kv/g" gear=g>.
    """
    kp, kv, g1, g2, g3 = 9.0, 1.25, 2.5, -3.0, 0.8
    m = _mujoco_model(
        f"""
        <motor joint="j1" gear="{g1!r}" ctrlrange="-0.4 0.7" forcerange="-0.5 0.5"/>
        <general joint="j2" gear="{g2!r}" gainprm="{kp!r}" biastype="affine" biasprm="0 {-kp / g2!r} {-kv / g2!r}"
                 forcerange="-6 6"/>
        <general joint="j3" gear="{g3!r}" gainprm="{kv!r}" biastype="affine" biasprm="0 0 {-kv / g3!r}"
                 ctrlrange="-1 1"/>"""
    )
    defs = [
        A.motor("m", "j1", gear=g1, ctrl_range=(-0.4, 0.7), force_range=(-0.5, 0.5)),
        A.position("p", "j2", kp=kp, kv=kv, gear=g2, force_range=(-6, 6)),
        A.velocity("v", "j3", kv=kv, gear=g3, ctrl_range=(-1, 1)),
    ]
    clamped, saturated = _compare_with_mujoco(m, compile_affine(defs, *_joint_maps(m)), seed=2)
    assert clamped > 0 and saturated > 0


def test_from_mujoco_position_with_gear():
    """MuJoCo's <position gear=g kp kv> has bias_q = -g kp and bias_v = -g kv on the joint."""
    d = A.from_mujoco("p", "j", gear=3.0, gainprm=10.0, biasprm=(0.0, -10.0, -2.0))
    assert (d.gain, d.bias_q, d.bias_v) == (10.0, -30.0, -6.0)
    act = compile_affine([d], {"j": 0}, {"j": 0})
    # MuJoCo, one hinge: force = 10 * 0.5 - 10 * (3 * 0.3) - 2 * (3 * 0.1) = -4.6, qfrc = 3 * force = -13.8;
    # the spec's position(gear=3) instead gives 3 * (10 * (0.5 - 0.3) - 2 * 0.1) = 5.4.
    m = mujoco.MjModel.from_xml_string(
        """<mujoco><worldbody><body><joint name="j" type="hinge"/><geom size="0.1" mass="1"/></body></worldbody>
        <actuator><position joint="j" kp="10" kv="2" gear="3"/></actuator></mujoco>"""
    )
    data = mujoco.MjData(m)
    data.qpos[0], data.qvel[0], data.ctrl[0] = 0.3, 0.1, 0.5
    mujoco.mj_forward(m, data)
    np.testing.assert_allclose(data.actuator_force, [-4.6], rtol=0, atol=TOL)
    np.testing.assert_allclose(data.qfrc_actuator, [-13.8], rtol=0, atol=TOL)
    tau = affine_force_at(act, jnp.array([0.5]), jnp.array([0.3]), jnp.array([0.1]))
    np.testing.assert_allclose(np.asarray(tau), [-13.8], rtol=0, atol=TOL)
    spec = compile_affine([A.position("p", "j", kp=10.0, kv=2.0, gear=3.0)], {"j": 0}, {"j": 0})
    tau = affine_force_at(spec, jnp.array([0.5]), jnp.array([0.3]), jnp.array([0.1]))
    np.testing.assert_allclose(np.asarray(tau), [5.4], rtol=0, atol=TOL)


# --------------------------------------------------------------------------------------------------
# The spec's constructors, by hand
# --------------------------------------------------------------------------------------------------


def _one(defn: AffineActuatorDefinition) -> AffineActuators:
    return compile_affine([defn], {defn.joint: 0}, {defn.joint: 0})


def _at(act: AffineActuators, ctrl: float, q: float = 0.0, v: float = 0.0) -> float:
    return float(affine_force_at(act, jnp.array([ctrl]), jnp.array([q]), jnp.array([v]))[0])


def test_constructor_parameters():
    assert A.motor("m", "j", gear=2.0) == A("m", "j", gear=2.0, gain=1.0, bias_q=0.0, bias_v=0.0)
    assert A.position("p", "j", kp=10, kv=2, gear=3) == A("p", "j", gear=3.0, gain=10.0, bias_q=-10.0, bias_v=-2.0)
    assert A.velocity("v", "j", kv=4, gear=2) == A("v", "j", gear=2.0, gain=4.0, bias_q=0.0, bias_v=-4.0)
    assert A("x", "j", ctrl_range=[-1, 2]).ctrl_range == (-1.0, 2.0)


def test_motor_by_hand():
    act = _one(A.motor("m", "j", gear=2.0, ctrl_range=(-1.0, 1.0)))
    assert _at(act, 0.4) == pytest.approx(0.8, abs=TOL)
    assert _at(act, 3.0) == pytest.approx(2.0, abs=TOL)
    assert _at(act, -5.0, q=7.0, v=-3.0) == pytest.approx(-2.0, abs=TOL)  # no state feedback
    assert float(affine_force(act, jnp.array([0.4]))[0]) == pytest.approx(0.8, abs=TOL)
    # force_range is in actuator units, before the gear: |f| <= 0.5, so |tau| <= 1.
    act = _one(A.motor("m", "j", gear=2.0, force_range=(-0.5, 0.5)))
    assert _at(act, 0.8) == pytest.approx(1.0, abs=TOL)
    assert _at(act, -0.2) == pytest.approx(-0.4, abs=TOL)
    np.testing.assert_allclose(
        np.asarray(clamp_ctrl(_one(A.motor("m", "j", ctrl_range=(-1, 1))), jnp.array([3.0]))), [1]
    )


def test_position_by_hand():
    act = _one(A.position("p", "j", kp=10.0, kv=2.0, gear=3.0))
    # 3 * (10 * (0.5 - 0.3) - 2 * 0.1) = 3 * 1.8
    assert _at(act, 0.5, q=0.3, v=0.1) == pytest.approx(5.4, abs=TOL)
    # force(ctrl) ignores the state: 3 * 10 * 0.5
    assert float(affine_force(act, jnp.array([0.5]))[0]) == pytest.approx(15.0, abs=TOL)
    # ctrl clamped to 1 first, then the force clamped to 4: 3 * min(10 * (1 - 0) - 0, 4) = 12
    act = _one(A.position("p", "j", kp=10.0, kv=2.0, gear=3.0, ctrl_range=(-1, 1), force_range=(-4, 4)))
    assert _at(act, 5.0) == pytest.approx(12.0, abs=TOL)
    # inside both ranges: 3 * (10 * (0.2 - 0.1) - 2 * 0.05) = 2.7
    assert _at(act, 0.2, q=0.1, v=0.05) == pytest.approx(2.7, abs=TOL)


def test_velocity_by_hand():
    act = _one(A.velocity("v", "j", kv=4.0, gear=2.0))
    assert _at(act, 0.7, q=123.0, v=1.0) == pytest.approx(-2.4, abs=TOL)  # 2 * 4 * (0.7 - 1)
    act = _one(A.velocity("v", "j", kv=4.0, gear=2.0, ctrl_range=(-0.5, 0.5), force_range=(-1.0, 3.0)))
    assert _at(act, 2.0, v=-1.0) == pytest.approx(6.0, abs=TOL)  # 2 * min(4 * (0.5 + 1), 3)
    assert _at(act, -2.0, v=0.0) == pytest.approx(-2.0, abs=TOL)  # 2 * max(4 * -0.5, -1)


def test_generalized_force_scatter_and_empty():
    defs = [A.motor("a", "ja", gear=2.0), A.velocity("b", "jb", kv=3.0)]
    act = compile_affine(defs, {"ja": 4, "jb": 1}, {"ja": 3, "jb": 0})
    assert act.nu == 2 and act.names == ("a", "b")
    q = jnp.arange(5.0)
    v = jnp.array([0.5, 0.0, 0.0, 9.0])
    tau = affine_generalized_force(act, jnp.array([1.5, 1.0]), q, v)
    np.testing.assert_allclose(np.asarray(tau), [1.5, 0.0, 0.0, 3.0], rtol=0, atol=TOL)
    empty = empty_affine()
    assert empty.nu == 0
    np.testing.assert_array_equal(np.asarray(affine_generalized_force(empty, jnp.zeros(0), q, v, 4)), np.zeros(4))


# --------------------------------------------------------------------------------------------------
# JAX transforms and dtypes
# --------------------------------------------------------------------------------------------------


def _servo_set() -> AffineActuators:
    defs = [
        A.motor("m", "j0", gear=2.0, ctrl_range=(-1, 1), force_range=(-5, 5)),
        A.position("p", "j1", kp=10.0, kv=1.0, gear=-1.5, ctrl_range=(-2, 2), force_range=(-50, 50)),
        A.velocity("v", "j2", kv=3.0, gear=0.5, ctrl_range=(-4, 4), force_range=(-60, 60)),
    ]
    index = {"j0": 0, "j1": 1, "j2": 2}
    return compile_affine(defs, index, index)


def test_jit_matches_eager():
    act = _servo_set()
    ctrl, q, v = jnp.array([0.3, 3.0, -1.0]), jnp.array([0.1, -0.2, 0.3]), jnp.array([1.0, 2.0, -0.5])
    eager = affine_generalized_force(act, ctrl, q, v, 3)
    jitted = jax.jit(affine_generalized_force, static_argnums=4)(act, ctrl, q, v, 3)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(jitted))
    np.testing.assert_array_equal(np.asarray(jax.jit(affine_force)(act, ctrl)), np.asarray(affine_force(act, ctrl)))


def test_vmap_over_states_and_parameters():
    act = _servo_set()
    rng = np.random.default_rng(3)
    ctrl, q, v = (jnp.asarray(rng.normal(size=(8, 3))) for _ in range(3))
    batched = jax.vmap(affine_generalized_force, in_axes=(None, 0, 0, 0))(act, ctrl, q, v)
    for i in range(8):
        np.testing.assert_array_equal(
            np.asarray(batched[i]), np.asarray(affine_generalized_force(act, ctrl[i], q[i], v[i]))
        )
    # per-world gains: vmap over a parameter leaf
    gains = jnp.asarray(rng.uniform(0.5, 2.0, size=(8, 3)))
    per_world = jax.vmap(lambda g, c: affine_force(act.replace(gain=g), c))(gains, ctrl)
    for i in range(8):
        expected = affine_force(act.replace(gain=gains[i]), ctrl[i])
        np.testing.assert_array_equal(np.asarray(per_world[i]), np.asarray(expected))
    # leading batch dimensions broadcast in the per-actuator functions
    np.testing.assert_array_equal(
        np.asarray(affine_force_at(act, ctrl, q, v)),
        np.asarray(jax.vmap(lambda c, qq, vv: affine_force_at(act, c, qq, vv))(ctrl, q, v)),
    )


def test_grad_wrt_gain_and_ctrl():
    act = _servo_set()
    ctrl, q, v = jnp.array([0.3, 1.2, -1.0]), jnp.array([0.0, 0.2, 0.0]), jnp.array([0.0, 0.5, 1.0])
    # inside the control and force ranges: d tau_i / d gain_i = gear_i * ctrl_i, d tau_i / d ctrl_i = gear_i * gain_i
    jac_gain = jax.jacobian(lambda g: affine_force_at(act.replace(gain=g), ctrl, q, v))(act.gain)
    np.testing.assert_allclose(np.asarray(jac_gain), np.diag(np.asarray(act.gear * ctrl)), rtol=0, atol=TOL)
    jac_ctrl = jax.jacobian(lambda c: affine_force_at(act, c, q, v))(ctrl)
    np.testing.assert_allclose(np.asarray(jac_ctrl), np.diag(np.asarray(act.gear * act.gain)), rtol=0, atol=TOL)
    # d tau / d q, v of the servos: gear * bias
    jac_q = jax.jacobian(lambda qq: affine_force_at(act, ctrl, qq, v))(q)
    np.testing.assert_allclose(np.asarray(jac_q), np.diag(np.asarray(act.gear * act.bias_q)), rtol=0, atol=TOL)
    # through the generalized force, under jit
    g = jax.jit(jax.grad(lambda gain: affine_generalized_force(act.replace(gain=gain), ctrl, q, v).sum()))(act.gain)
    np.testing.assert_allclose(np.asarray(g), np.asarray(act.gear * ctrl), rtol=0, atol=TOL)
    # outside the control range the clamped control carries no gradient
    out = jnp.array([3.0, 1.2, -1.0])
    jac_ctrl = jax.jacobian(lambda c: affine_force_at(act, c, q, v))(out)
    assert float(jac_ctrl[0, 0]) == 0.0
    jac_gain = jax.jacobian(lambda gg: affine_force_at(act.replace(gain=gg), out, q, v))(act.gain)
    assert float(jac_gain[0, 0]) == pytest.approx(2.0 * 1.0, abs=TOL)  # gear * clamp(ctrl)


def test_keeps_input_dtype():
    act = _servo_set()  # float64 leaves (x64 enabled)
    assert act.gain.dtype == jnp.float64
    ctrl, q, v = (jnp.array([0.3, 1.2, -1.0], dtype=jnp.float32) for _ in range(3))
    assert clamp_ctrl(act, ctrl).dtype == jnp.float32
    assert affine_force(act, ctrl).dtype == jnp.float32
    assert affine_force_at(act, ctrl, q, v).dtype == jnp.float32
    assert affine_generalized_force(act, ctrl, q, v).dtype == jnp.float32
    assert affine_generalized_force(
        act, ctrl.astype(jnp.float64), q.astype(jnp.float64), v.astype(jnp.float64)
    ).dtype == (jnp.float64)


# --------------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: A("a", "j", gear=math.nan), "gear must be finite"),
        (lambda: A("a", "j", gain=math.inf), "gain must be finite"),
        (lambda: A("a", "j", bias_q=-math.inf), "bias_q must be finite"),
        (lambda: A("a", "j", bias_v=math.nan), "bias_v must be finite"),
        (lambda: A("a", "j", gear="2"), "gear must be a real number"),
        (lambda: A("a", "j", gain=True), "gain must be a real number"),
        (lambda: A("a", "j", ctrl_range=(1.0, -1.0)), "ctrl_range has lo > hi"),
        (lambda: A("a", "j", ctrl_range=(math.nan, 1.0)), "ctrl_range contains NaN"),
        (lambda: A("a", "j", ctrl_range=(0.0, 1.0, 2.0)), "ctrl_range must be a pair"),
        (lambda: A("a", "j", force_range=(2.0, 1.0)), "force_range has lo > hi"),
        (lambda: A("a", "j", force_range=(-1.0, math.nan)), "force_range contains NaN"),
        (lambda: A("a", "j", force_range=5.0), "force_range must be a pair"),
        (lambda: A("", "j"), "name must be a non-empty string"),
        (lambda: A("a", None), "joint must be a non-empty string"),
        (lambda: A.motor("a", "j", gear=math.inf), "gear must be finite"),
        (lambda: A.position("a", "j", kp=-1.0), "kp must be >= 0"),
        (lambda: A.position("a", "j", kp=1.0, kv=math.nan), "kv must be finite"),
        (lambda: A.velocity("a", "j", kv=-2.0), "kv must be >= 0"),
        (lambda: A.from_mujoco("a", "j", biasprm=(float("nan"), 0.0, 0.0)), r"biasprm\[0\]"),
        (lambda: A.from_mujoco("a", "j", biasprm=(0.0, 1.0)), "biasprm must hold at least 3"),
    ],
)
def test_bad_definition(make, match):
    with pytest.raises(ArgumentError, match=match):
        make()


def test_ranges_accept_infinite_and_degenerate_bounds():
    d = A("a", "j", ctrl_range=(-math.inf, 1.0), force_range=(2.0, 2.0))
    assert d.ctrl_range == (-math.inf, 1.0) and d.force_range == (2.0, 2.0)


def test_compile_errors():
    m = A.motor("m", "j")
    with pytest.raises(ArgumentError, match="unknown joint 'j'"):
        compile_affine([m], {"k": 0}, {"k": 0})
    with pytest.raises(ArgumentError, match=r"unknown joint 'j' .*joint_v_index"):
        compile_affine([m], {"j": 0}, {"k": 0})
    with pytest.raises(ArgumentError, match="joint 'j' is already driven by actuator 'm'"):
        compile_affine([m, A.velocity("v", "j", kv=1.0)], {"j": 0}, {"j": 0})
    with pytest.raises(ArgumentError, match="duplicate actuator name"):
        compile_affine([m, A.motor("m", "k")], {"j": 0, "k": 1}, {"j": 0, "k": 1})
    with pytest.raises(ArgumentError, match="must be a non-negative int"):
        compile_affine([m], {"j": -1}, {"j": 0})
    with pytest.raises(ArgumentError, match="must be a non-negative int"):
        compile_affine([m], {"j": 0}, {"j": 1.0})
    with pytest.raises(ArgumentError, match="must be an AffineActuatorDefinition"):
        compile_affine([{"name": "m"}], {"j": 0}, {"j": 0})


def test_call_shape_errors():
    act = _servo_set()
    ok = jnp.zeros(3)
    with pytest.raises(ArgumentError, match="ctrl must have shape"):
        affine_generalized_force(act, jnp.zeros(2), ok, ok)
    with pytest.raises(ArgumentError, match="q must be a vector"):
        affine_generalized_force(act, ok, jnp.zeros((2, 3)), ok)
    with pytest.raises(ArgumentError, match="v has length 2"):
        affine_generalized_force(act, ok, ok, jnp.zeros(2))
    with pytest.raises(ArgumentError, match="nv must be"):
        affine_generalized_force(act, ok, ok, ok, 4)
    with pytest.raises(ArgumentError, match="ctrl must have shape"):
        affine_force(act, jnp.zeros(()))
    with pytest.raises(ArgumentError, match="v_joint must have shape"):
        affine_force_at(act, ok, ok, jnp.zeros(4))
