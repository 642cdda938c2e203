"""MJCF constructs third-party robot files use, read with MuJoCo's semantics and checked against MuJoCo (float64):
``actuatorfrcrange``/``actuatorfrclimited`` on joints, damping, armature and friction loss on free joints,
``<position inheritrange>``, and errors that name only what the file sets.

Each test writes a small scene inline (no contacts, so that MuJoCo's soft contacts play no part) and compares
MuJoCo's compiled fields and, where dynamics are concerned, its steps (``integrator="Euler"``, whose update is
jaxmor's semi-implicit one) with jaxmor's. The tolerance of each comparison is argued in its docstring.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF

import jaxmor
from jaxmor import ModelError
from jaxmor.math import quat_to_rotation

mujoco = pytest.importorskip("mujoco")

H = 0.002  # the scenes' time step [s]


@pytest.fixture(scope="module", autouse=True)
def float64():
    jax.config.update("jax_enable_x64", True)


def load(text: str):
    """The scene compiled by jaxmor and by MuJoCo."""
    return jaxmor.load_mjcf(text), mujoco.MjModel.from_xml_string(text)


def refused(text: str, *parts: str) -> str:
    """Loading ``text`` raises a ModelError holding every part; returns the message."""
    with pytest.raises(ModelError) as info:
        jaxmor.load_mjcf(text)
    message = str(info.value)
    for part in parts:
        assert part in message, message
    return message


# --------------------------------------------------------------------------------------------------
# actuatorfrcrange

PENDULUM = (
    '<body name="{n}" pos="{x} 0 0"><joint name="{n}" axis="0 1 0" {attrs}/>'
    '<geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03" mass="1"/></body>'
)
FRCRANGE = f"""<mujoco><option integrator="Euler" timestep="{H}"/>
<default><joint actuatorfrcrange="-1 2"/><default class="tight"><joint actuatorfrcrange="-0.5 0.5"/></default></default>
<worldbody>
{PENDULUM.format(n="a", x=0, attrs="")}
{PENDULUM.format(n="b", x=1, attrs='class="tight"')}
{PENDULUM.format(n="c", x=2, attrs='actuatorfrclimited="false"')}
{PENDULUM.format(n="d", x=3, attrs='actuatorfrcrange="0.2 1"')}
{PENDULUM.format(n="e", x=4, attrs='actuatorfrclimited="false"')}
</worldbody>
<actuator><motor joint="a" gear="2"/><position joint="b" kp="4"/><motor joint="c" gear="3"/>
<velocity joint="e" kv="2"/></actuator></mujoco>"""


@pytest.fixture(scope="module")
def frcrange():
    return load(FRCRANGE)


def test_actuatorfrcrange_bounds_are_mujocos(frcrange):
    """The bounds, through the root and a nested default class, overridden by ``actuatorfrclimited="false"``
    (MuJoCo keeps the inherited range but does not limit): MuJoCo's ``jnt_actfrcrange`` where
    ``jnt_actfrclimited``, infinite elsewhere; exact (numbers read from the file)."""
    model, m = frcrange
    limited = m.jnt_actfrclimited.astype(bool)
    expected_low = np.where(limited, m.jnt_actfrcrange[:, 0], -np.inf)
    expected_high = np.where(limited, m.jnt_actfrcrange[:, 1], np.inf)
    np.testing.assert_array_equal(model.dof_actuator_force_lower, expected_low)
    np.testing.assert_array_equal(model.dof_actuator_force_upper, expected_high)
    assert limited.tolist() == [True, True, False, True, False]


def test_actuatorfrcrange_clamps_the_joint_force_as_mujoco(frcrange):
    """The joints' actuator force against MuJoCo's ``qfrc_actuator`` (which its clamp acts on; an unactuated
    joint whose range excludes 0 gets its nearest bound), at controls in and beyond the ranges, then a 0.5 s
    rollout of the pendulums under sinusoidal controls: no contacts, one-dof bodies without velocity terms, so
    both engines take the same semi-implicit Euler step and agree to round-off (1e-12)."""
    model, m = frcrange
    d = mujoco.MjData(m)
    state = jaxmor.init_state(model)
    for ctrl in ([0.1, 0.05, 0.1, 0.1], [1.3, -0.7, 0.4, 2.0], [-3.0, 3.0, -1.0, -2.0]):
        d.ctrl[:] = ctrl
        mujoco.mj_forward(m, d)
        force = jaxmor.generalized_force(model, state.replace(ctrl=jnp.asarray(ctrl)))
        np.testing.assert_allclose(force, d.qfrc_actuator, rtol=0, atol=1e-12)
    assert np.isclose(d.qfrc_actuator[0], -1.0) and np.isclose(d.qfrc_actuator[3], 0.2)  # clamped, unactuated
    n = 250
    controls = 2.5 * np.sin(np.linspace(0.0, 6.0, n))[:, None] * np.array([1.0, 1.0, 1.0, -1.0])
    final, trajectory = jax.jit(lambda s, c: jaxmor.rollout(model, s, {"ctrl": c}))(state, jnp.asarray(controls))
    d = mujoco.MjData(m)
    qpos = []
    for ctrl in controls:
        d.ctrl[:] = ctrl
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
    np.testing.assert_allclose(trajectory.q, np.array(qpos), rtol=0, atol=1e-12)
    assert np.abs(np.array(qpos)).max() > 1.0  # the pendulums swing


def test_urdf_joints_have_no_actuator_force_bounds():
    """A URDF model gets infinite bounds (the clamp is the identity, bit for bit)."""
    model = jaxmor.load_urdf(QUADRUPED_URDF)
    assert np.all(np.isneginf(model.dof_actuator_force_lower)) and np.all(np.isposinf(model.dof_actuator_force_upper))


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ('actuatorfrcrange="1 -1"', "actuatorfrcrange lower 1.0 >= upper -1.0"),
        ('actuatorfrclimited="true"', "actuatorfrcrange lower 0.0 >= upper 0.0"),
    ],
)
def test_bad_actuatorfrcrange_is_refused(attrs, message):
    refused(f"<mujoco><worldbody>{PENDULUM.format(n='a', x=0, attrs=attrs)}</worldbody></mujoco>", message, ":1:")


def test_actuatorfrcrange_without_autolimits_needs_actuatorfrclimited():
    """As MuJoCo: a range with ``actuatorfrclimited="auto"`` and ``autolimits="false"`` is an error."""
    text = '<mujoco><compiler autolimits="false"/><worldbody>{}</worldbody></mujoco>'
    body = PENDULUM.format(n="a", x=0, attrs='actuatorfrcrange="-1 1"')
    refused(text.format(body), "actuatorfrclimited='auto' while the compiler's autolimits is false")
    with pytest.raises(ValueError, match="actuatorfrclimited"):
        mujoco.MjModel.from_xml_string(text.format(body))


# --------------------------------------------------------------------------------------------------
# Free joints: damping, armature, friction loss

FREE = f"""<mujoco><option integrator="Euler" timestep="{H}" gravity="0 0 0"/>
<default><joint frictionloss="0.3" armature="0.01" damping="{{damping}}"/></default>
<worldbody>
<body name="box" pos="0 0 1" euler="0 0 45"><joint name="free" type="free"/>
<geom type="box" size="0.1 0.2 0.3" mass="2"/></body>
</worldbody></mujoco>"""


@pytest.fixture(scope="module")
def free_box():
    return load(FREE.format(damping=0))


def test_free_joint_losses_are_mujocos(free_box):
    """Friction loss, armature and damping reach the six free dofs through the top-level default class, as in
    MuJoCo (exact)."""
    model, m = free_box
    np.testing.assert_array_equal(model.dof_friction, m.dof_frictionloss)
    np.testing.assert_array_equal(model.dof_armature, m.dof_armature)
    np.testing.assert_array_equal(model.dof_damping, m.dof_damping)
    assert model.free_friction_u == (0,)


def test_free_joint_friction_loss_sticks_and_slips_per_body_axis(free_box):
    """A force and a torque held for 0.1 s on the box (turned 45 degrees about z): per dof, MuJoCo's friction
    loss is a box ``|f| <= 0.3`` on the world-frame linear velocity and on the body-frame angular velocity.
    Components below the bound stick, those above slip with ``(f - 0.3) / (m + armature)``.

    The sharp facts are compared: where a component slips, MuJoCo's friction force sits on its bound exactly,
    so the velocities agree to 1e-6 relative (the rotation that turns the torque in the body frame meanwhile is
    the same in both); where it sticks, jaxmor's velocity is zero (to round-off, 1e-12 of the slip) and MuJoCo's
    creeps by its soft constraint (1 % of the slip here, < 3 % asserted). World-frame angular rows would get the
    torque's stick and slip the other way round (its world components are 0.25 and 0.39)."""
    model, m = free_box
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    rotation = d.xmat[1].reshape(3, 3)
    force = np.array([0.2, 0.5, 0.0])  # world x sticks, y slips
    torque = rotation @ np.array([0.45, 0.1, 0.0])  # body x slips, body y sticks
    external = jnp.asarray(np.concatenate([force, torque]))
    n = 50
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, {"external_force": jnp.tile(external, (n, 1))}))(
        jaxmor.init_state(model)
    )
    for _ in range(n):
        d.xfrc_applied[1] = np.asarray(external)
        mujoco.mj_step(m, d)
    u = np.asarray(final.u)
    linear, angular = u[:3], np.asarray(quat_to_rotation(final.q[3:7])).T @ u[3:]  # MuJoCo's qvel convention
    slip = (0.5 - 0.3) / (2.0 + 0.01) * n * H
    assert np.isclose(linear[1], slip, rtol=1e-9)
    np.testing.assert_allclose([linear[1], angular[0]], [d.qvel[1], d.qvel[3]], rtol=1e-6)
    assert abs(linear[0]) < 1e-12 * slip and abs(angular[1]) < 1e-12 * angular[0]
    assert 0 < abs(d.qvel[0]) < 0.03 * slip and 0 < abs(d.qvel[4]) < 0.03 * d.qvel[3]


def test_free_joint_damping_and_armature_decay_as_mujoco():
    """A 0.2 kg box drifting and spinning about a principal axis, damped (``b = 0.05``) with armature
    ``a = 0.01`` on its free joint, 0.5 s: both engines decay each velocity by ``exp(-b t / (m_k + a))``
    (``m_k`` the mass or the principal moment; by 11 % and 90 %), MuJoCo by backward Euler, jaxmor by the
    trapezoidal rule: each within 2 % of the exponential (MuJoCo's first-order error ``n (h b / (m_k + a))^2 / 2``
    is 1 % on the spin, jaxmor's is second order) and within 3 % of each other."""
    text = FREE.format(damping=0.05).replace('frictionloss="0.3"', "").replace('mass="2"', 'mass="0.2"')
    model, m = load(text)
    assert model.free_friction_u == ()
    d = mujoco.MjData(m)
    qvel = np.array([0.3, -0.2, 0.1, 0.0, 0.0, 1.0])  # the spin about the body z axis
    d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    state = jaxmor.init_state(model)
    rotation = d.xmat[1].reshape(3, 3)
    state = state.replace(u=jnp.asarray(np.concatenate([qvel[:3], rotation @ qvel[3:]])))
    n = 250
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=n))(state)
    for _ in range(n):
        mujoco.mj_step(m, d)
    inertia_z = 0.2 * (0.2**2 + 0.4**2) / 12.0
    decay = np.exp(-0.05 * n * H / np.array([0.21] * 3 + [inertia_z + 0.01]))
    expected = qvel[[0, 1, 2, 5]] * decay
    u = np.asarray(final.u)
    ours = np.concatenate([u[:3], [(np.asarray(quat_to_rotation(final.q[3:7])).T @ u[3:])[2]]])
    np.testing.assert_allclose(ours, expected, rtol=0.02)
    np.testing.assert_allclose(d.qvel[[0, 1, 2, 5]], expected, rtol=0.02)
    np.testing.assert_allclose(ours, d.qvel[[0, 1, 2, 5]], rtol=0.03)


def test_free_joint_stiffness_error_names_only_stiffness():
    """Item 5 of issue 28: the refusal names what the file (or its class) sets, nothing else."""
    text = FREE.format(damping=0).replace('frictionloss="0.3"', 'stiffness="2"')
    message = refused(text, "stiffness='2' (from its default class) on a free joint is not supported")
    assert "frictionloss" not in message
    with_own = FREE.format(damping=0).replace('type="free"', 'type="free" stiffness="1"')
    message = refused(with_own, "stiffness='1' on a free joint")
    assert "default class" not in message and "frictionloss" not in message


# --------------------------------------------------------------------------------------------------
# inheritrange

INHERIT = """<mujoco><compiler angle="degree"/>
<default><position kp="2"/><default class="half"><position inheritrange="0.5"/></default>
<default class="fixed"><position ctrlrange="-1 1"/></default></default>
<worldbody>
<body><joint name="a" range="-30 90"/><geom size=".1" mass="1"/></body>
<body pos="1 0 0"><joint name="b" range="-30 90"/><geom size=".1" mass="1"/></body>
<body pos="2 0 0"><joint name="c" type="slide" range="-0.1 0.3"/><geom size=".1" mass="1"/></body>
<body pos="3 0 0"><joint name="d" range="-30 90"/><geom size=".1" mass="1"/></body>
<body pos="4 0 0"><joint name="e" range="-30 90"/><geom size=".1" mass="1"/></body>
<body pos="5 0 0"><joint name="f" range="-30 90"/><geom size=".1" mass="1"/></body>
</worldbody>
<actuator>
<position joint="a" inheritrange="1"/>
<position joint="b" class="half"/>
<position joint="c" inheritrange="2"/>
<position joint="d" class="half" ctrlrange="-2 2"/>
<position joint="e" class="fixed" inheritrange="1.5"/>
<position joint="f" inheritrange="1" ctrllimited="false"/>
</actuator></mujoco>"""


def test_inheritrange_gives_mujocos_ctrlrange():
    """``ctrlrange`` from the joint's range (degrees converted, a slide's in metres) scaled about its midpoint,
    from the element or a class; the element's own ``ctrlrange`` beats a class's ``inheritrange`` and its own
    ``inheritrange`` a class's ``ctrlrange``; ``ctrllimited="false"`` leaves the control unlimited. MuJoCo's
    ``actuator_ctrlrange`` where ``actuator_ctrllimited``, to round-off (1e-15 rad)."""
    model, m = load(INHERIT)
    limited = m.actuator_ctrllimited.astype(bool)
    assert limited.tolist() == [True, True, True, True, True, False]
    np.testing.assert_allclose(
        model.affine.ctrl_lower, np.where(limited, m.actuator_ctrlrange[:, 0], -np.inf), atol=1e-15
    )
    np.testing.assert_allclose(
        model.affine.ctrl_upper, np.where(limited, m.actuator_ctrlrange[:, 1], np.inf), atol=1e-15
    )


@pytest.mark.parametrize(
    ("joint", "actuator", "message"),
    [
        ('range="-30 90"', 'inheritrange="1" ctrlrange="-1 1"', "cannot both be set on one <position>"),
        ("", 'inheritrange="1"', "inheritrange needs joint 'j' to be limited"),
        ('range="-30 90" limited="false"', 'inheritrange="1"', "inheritrange needs joint 'j' to be limited"),
    ],
)
def test_bad_inheritrange_is_refused(joint, actuator, message):
    """MuJoCo refuses the first two too; the third it reads with the range unconverted (degrees as radians)."""
    text = (
        f'<mujoco><worldbody><body><joint name="j" {joint}/><geom size=".1" mass="1"/></body></worldbody>'
        f'<actuator><position joint="j" {actuator}/></actuator></mujoco>'
    )
    refused(text, message)


def test_combine_keeps_the_free_friction_rows(free_box):
    """``jaxmor.combine`` shifts the free joints with friction rows by the first model's velocities."""
    model, _ = free_box
    ball = jaxmor.add_free_body(model, "ball", "sphere", 0.1, 1.0, position=(1.0, 0.0, 1.0))
    assert ball.free_friction_u == (0,) and ball.nv == 12
    first = jaxmor.combine(ball, model, prefix="copy/")
    assert first.free_friction_u == (0, 12)
    np.testing.assert_array_equal(first.dof_friction, [0.3] * 6 + [0.0] * 6 + [0.3] * 6)
