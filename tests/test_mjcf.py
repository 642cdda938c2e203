"""The MJCF reader, feature by feature, against MuJoCo's own compiler (``mujoco``, float64).

Each test writes a small model that uses one feature, compiles it with MuJoCo and with jaxmor, and compares
what MuJoCo computed (body poses, masses and inertias, joint constants, actuator forces, contacts, keyframes)
with jaxmor's model; MuJoCo is the independent reference. Refused features each get a test that the error
names the file, the line and the element. Tolerances: 1e-12 where both sides compute the same closed forms in
float64 (round-off of a few operations on values of order 1).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shutil
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracles import motor_region
from reference import MujocoReference, rel_err

import jaxmor
from jaxmor import ArgumentError, ModelError

mujoco = pytest.importorskip("mujoco")


def model_text(body: str = "", *, head: str = "", actuators: str = "", after: str = "") -> str:
    """An MJCF model: ``head`` before the world body (compiler, option, defaults, assets), ``body`` in it,
    ``actuators`` in an ``<actuator>`` section, ``after`` at the end (contact, keyframe, custom)."""
    act = f"<actuator>{actuators}</actuator>" if actuators else ""
    return f"<mujoco>{head}<worldbody>{body}</worldbody>{act}{after}</mujoco>"


def both(text: str, **kwargs):
    """The model compiled by jaxmor and by MuJoCo."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(text, **kwargs)
    return model, mujoco.MjModel.from_xml_string(text)


def refused(text: str, *parts: str, line: int | None = None):
    """Loading ``text`` raises a ModelError whose message holds every part (and names ``line``)."""
    with pytest.raises(ModelError) as info:
        jaxmor.load_mjcf(text)
    message = str(info.value)
    for part in parts:
        assert part in message, message
    if line is not None:
        assert info.value.line == line, message
    return info.value


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first occurrence of ``needle``."""
    return text[: text.index(needle)].count("\n") + 1


FREE_BOX = '<body name="box" pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3"/></body>'


# --------------------------------------------------------------------------------------------------
# Frames, joints and inertias: the kinematic tree against MuJoCo's.


ORIENTED = """
<body name="a" pos="0.1 0.2 0.3" euler="10 20 30">
  <joint name="ja" axis="0 1 0"/>
  <geom type="box" size=".1 .2 .3" euler="5 -15 25"/>
  <body name="b" pos=".1 .2 .3" axisangle="1 1 0 40">
    <joint name="jb" type="slide" axis="1 0 1" ref="0.2"/>
    <geom type="capsule" fromto="0 0 0 .1 .2 .3" size=".05"/>
    <body name="c" xyaxes="0 1 0 -1 0 .3">
      <joint name="jc" pos=".1 0 .2" axis="1 0 0" ref="30"/>
      <joint name="jd" pos="0 .1 0" axis="0 0 1"/>
      <geom type="cylinder" fromto="0 0 0 0 0 -.3" size=".04"/>
      <frame pos="0 0 .1" euler="0 0 90">
        <body name="d" zaxis="0 0 -1"><joint name="je"/><geom type="ellipsoid" size=".1 .05 .08" contype="0"
            conaffinity="0"/>
          <body name="e" zaxis="1 2 3"><joint name="jf" axis="0 1 0"/><geom size=".05" pos=".1 0 0"/></body>
        </body>
      </frame>
    </body>
  </body>
</body>
"""


@pytest.mark.parametrize(
    "compiler",
    [
        '<compiler angle="degree" eulerseq="xyz"/>',
        '<compiler angle="degree" eulerseq="XYZ"/>',
        '<compiler angle="degree" eulerseq="zyx"/>',
        '<compiler angle="degree" eulerseq="ZxY"/>',
    ],
)
def test_frames_anchors_refs_and_inertias_from_geoms_equal_mujocos(compiler):
    """Every way MJCF writes an orientation (``euler`` in four sequences, ``axisangle``, ``xyaxes``, ``zaxis``,
    ``fromto``), a ``<frame>``, two joints in one body with anchors off its origin, ``ref`` on a slide and a
    hinge (in degrees), inertias from a box, capsule, cylinder, ellipsoid and sphere: the mass matrix, bias and
    body poses at random states."""
    text = model_text(ORIENTED, head=compiler)
    model, m = both(text)
    ref = MujocoReference(model, m)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, u, mass, bias = ref.terms(*ref.random_state(rng))
        assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12
        assert rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-12
        poses = jaxmor.forward_kinematics(model, q)
        for name, (rotation, position) in ref.body_poses().items():
            k = model.link_names.index(name)
            np.testing.assert_allclose(poses.rotation[k], rotation, atol=1e-12, err_msg=name)
            np.testing.assert_allclose(poses.position[k], position, atol=1e-12, err_msg=name)
    # MuJoCo's qpos0 is each joint's ref; jaxmor's q_default too (so the two coordinates are the same).
    np.testing.assert_allclose(np.asarray(model.q_default), m.qpos0[ref.qpos], atol=1e-15)
    assert float(model.q_default[jaxmor.joint_q_index(model, "jc")]) == pytest.approx(math.radians(30))


def _body_inertias(model: jaxmor.Model, m) -> None:
    """Mass, centre of mass and inertia tensor of every MuJoCo body equal jaxmor's body carrying its link."""
    for i in range(1, m.nbody):
        b = model.link_body[model.link_names.index(m.body(i).name)]
        rotation = np.zeros(9)
        mujoco.mju_quat2Mat(rotation, m.body_iquat[i])
        rotation = rotation.reshape(3, 3)
        tensor = rotation @ np.diag(m.body_inertia[i]) @ rotation.T
        name = m.body(i).name
        assert float(model.body_mass[b]) == pytest.approx(m.body_mass[i], rel=1e-12), name
        np.testing.assert_allclose(model.body_com[b], m.body_ipos[i], atol=1e-12, err_msg=name)
        np.testing.assert_allclose(model.body_inertia[b], tensor, atol=1e-12 * max(1.0, tensor.max()), err_msg=name)


GEOM_BODIES = """
<body name="spheres"><joint/><geom size=".1"/><geom size=".05" pos=".2 0 0" density="500"/></body>
<body name="capsule" pos="1 0 0"><joint/><geom type="capsule" size=".05 .2" euler="0 30 0"/></body>
<body name="cylinder" pos="2 0 0"><joint/><geom type="cylinder" size=".05 .2" mass="3"/></body>
<body name="boxes" pos="3 0 0"><joint/><geom type="box" size=".1 .2 .3"/>
  <geom type="box" size=".05 .05 .05" pos=".3 0 0" group="4" mass="1"/></body>
<body name="ellipsoid" pos="4 0 0"><joint/><geom type="ellipsoid" size=".1 .2 .3" quat="1 2 3 4" contype="0"
  conaffinity="0"/></body>
<body name="visual_only" pos="5 0 0"><joint/><geom size=".1" contype="0" conaffinity="0" group="2"/></body>
<body name="explicit" pos="6 0 0"><joint/><inertial pos=".1 0 0" mass="2" diaginertia=".1 .2 .3" euler="0 0 45"/>
  <geom size=".3"/></body>
<body name="full" pos="7 0 0"><joint/><inertial pos="0 0 0" mass="2" fullinertia=".3 .3 .3 .01 .02 .03"/></body>
"""


@pytest.mark.parametrize(
    "compiler",
    [
        "",
        '<compiler inertiafromgeom="true"/>',
        '<compiler inertiagrouprange="0 3"/>',
        '<compiler settotalmass="10"/>',
        '<compiler boundmass="1.5" boundinertia="0.05"/>',
    ],
)
def test_masses_and_inertias_equal_mujocos(compiler):
    """Geom inertias (density, a given mass, each primitive), explicit ``<inertial>`` (``diaginertia`` with an
    orientation, ``fullinertia``), visual geoms' mass, and the compiler's ``inertiafromgeom``,
    ``inertiagrouprange``, ``settotalmass``, ``boundmass`` and ``boundinertia``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MuJoCo: settotalmass is deprecated
        model, m = both(model_text(GEOM_BODIES, head=compiler))
    _body_inertias(model, m)


def test_inertia_from_geoms_false_takes_the_inertials_alone():
    bodies = """<body name="a"><joint/><inertial pos=".1 0 0" mass="2" diaginertia=".1 .2 .3"/><geom size=".3"/>
      <body name="b" pos="1 0 0"><joint/><inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>
        <geom type="box" size=".1 .2 .3"/></body></body>"""
    for compiler in ('<compiler inertiafromgeom="false"/>', '<compiler inertiafromgeom="true"/>'):
        model, m = both(model_text(bodies, head=compiler))
        _body_inertias(model, m)


def test_joint_constants_limits_degrees_and_defaults_equal_mujocos():
    """Joint ranges in degrees (hinge) and metres (slide), limited/autolimits, damping, frictionloss,
    armature, stiffness and springref from nested default classes and childclass."""
    text = model_text(
        """
        <body name="a" childclass="leg"><joint name="j1" range="-30 60"/><geom size=".1"/>
          <body name="b" pos="0 0 -.5"><joint name="j2" class="knee"/><geom size=".1"/>
            <body name="c" pos="0 0 -.5"><joint name="j3" type="slide" range="-.1 .2" limited="false"/>
              <geom size=".1"/><body name="d" pos="0 0 -.5"><joint name="j4" type="slide" range="-.1 .2"
                stiffness="50" springref=".05"/><geom size=".1"/></body></body></body></body>
        """,
        head="""<default><joint damping=".5"/>
            <default class="leg"><joint axis="0 1 0" armature=".02" frictionloss=".3" stiffness="3" springref="10"/>
              <default class="knee"><joint range="-120 0" damping="2"/></default></default></default>""",
    )
    model, m = both(text)
    for j in range(m.njnt):
        v = jaxmor.joint_index(model, m.joint(j).name)
        dof = m.jnt_dofadr[j]
        lower, upper = m.jnt_range[j] if m.jnt_limited[j] else (-np.inf, np.inf)
        got = [float(getattr(model, f)[v]) for f in ("dof_lower", "dof_upper", "dof_damping", "dof_friction")]
        got += [float(getattr(model, f)[v]) for f in ("dof_armature", "dof_stiffness", "dof_springref")]
        expected = [lower, upper, m.dof_damping[dof], m.dof_frictionloss[dof], m.dof_armature[dof]]
        expected += [m.jnt_stiffness[j], m.qpos_spring[m.jnt_qposadr[j]]]
        np.testing.assert_allclose(got, expected, atol=1e-15, err_msg=m.joint(j).name)
    assert not np.isfinite(float(model.dof_lower[jaxmor.joint_index(model, "j3")]))  # limited="false"


def test_joint_springs_act_as_mujocos_and_integrate_implicitly():
    """The passive spring torque at rest equals MuJoCo's ``qfrc_spring``; stepped, a spring follows the
    semi-implicit recurrence ``(I + h^2 k) (u' - u) = h k (ref - q - h u)``, ``q' = q + h u'`` (the torque at the
    step's end with ``u'`` implicit), exactly."""
    text = model_text(
        '<body name="p"><joint name="j" axis="0 0 1" stiffness="40" springref="20"/>'
        '<geom type="box" size=".5 .1 .1" mass="2"/></body>',
        head='<option gravity="0 0 0"/>',
    )
    model, m = both(text)
    data = mujoco.MjData(m)
    data.qpos[0] = 0.7
    mujoco.mj_forward(m, data)
    state = jaxmor.init_state(model, q=[0.7])
    np.testing.assert_allclose(jaxmor.sim.forces.joint_spring(model, state), data.qfrc_spring, atol=1e-12)
    inertia = float(jaxmor.mass_matrix(model, jnp.zeros(1))[0, 0])
    h, k, ref = float(model.opt.timestep), 40.0, math.radians(20)
    q, u = 0.7, 0.0
    step = jax.jit(jaxmor.step)
    for _ in range(50):
        state = step(model, state)
        u = u + h * k * (ref - q - h * u) / (inertia + h * h * k)
        q = q + h * u
        assert float(state.u[0]) == pytest.approx(u, abs=1e-12)
        assert float(state.q[0]) == pytest.approx(q, abs=1e-12)


def test_free_joint_armature_and_damping_act_on_its_six_velocities():
    text = model_text(
        '<body name="b" pos="0 0 1" euler="10 20 30"><joint type="free" armature=".3" damping=".2"/>'
        '<geom type="box" size=".1 .2 .3"/></body>',
        head='<compiler angle="degree"/>',
    )
    model, m = both(text)
    ref = MujocoReference(model, m)
    q, _, mass, _ = ref.terms(*ref.random_state(np.random.default_rng(2)))
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12  # isotropic armature: the same in both frames
    np.testing.assert_allclose(model.dof_damping, m.dof_damping, atol=0)
    np.testing.assert_allclose(np.asarray(model.q_default), m.qpos0, atol=1e-15)  # the body where the file puts it


def test_unnamed_elements_are_named_by_mujocos_ids():
    text = model_text(
        '<geom type="plane" size="1 1 1"/><body pos="0 0 1"><freejoint/><geom size=".1"/>'
        '<body pos="0 0 -.3"><joint name="h"/><geom size=".1"/><geom size=".1" pos=".1 0 0"/></body></body>',
        actuators='<motor joint="h"/>',
    )
    model, m = both(text)
    assert model.body_joint_name == ("joint0", "h")
    assert model.link_names == ("body1", "body2")
    assert model.geom_names == ("geom1", "geom2", "geom3")
    assert model.affine.names == ("actuator0",)
    assert m.nbody == 3 and m.njnt == 2 and m.ngeom == 4 and m.nu == 1


def test_a_generated_name_never_takes_a_written_one():
    """mujoco-mjx's ``pendula.xml`` names its eighth joint ``joint7`` after leaving the seventh unnamed: the name made
    for the unnamed one (MuJoCo's id, ``joint7``) must step aside, not make the file a duplicate-name error."""
    text = model_text(
        '<body><joint/><geom name="geom1" size=".1"/><body name="body1"><joint name="joint0"/><geom size=".1"/>'
        "</body></body>",
        actuators='<motor joint="joint0"/>',
    )
    model, m = both(text)
    assert model.body_joint_name == ("joint0_", "joint0")
    assert model.link_names == ("body1_", "body1")
    assert model.geom_names == ("geom1", "geom1_")
    assert model.affine.v_index == (1,)  # the joint written "joint0", not the unnamed one
    assert m.njnt == 2 and m.nbody == 3 and m.ngeom == 2 and m.actuator_trnid[0, 0] == 1
    both_named = model_text(
        '<body><joint name="a"/><geom size=".1"/><body><joint name="b"/><geom size=".1"/></body></body>',
        actuators='<motor joint="a"/><motor joint="b" name="actuator0"/>',
    )
    assert jaxmor.load_mjcf(both_named).affine.names == ("actuator0_", "actuator0")


# --------------------------------------------------------------------------------------------------
# Actuators, default classes and keyframes.

ARM = """
<body name="a"><joint name="j1" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".05"/>
  <body name="b" pos=".3 0 0"><joint name="j2" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .3 0 0" size=".05"/>
    <body name="c" pos=".3 0 0"><joint name="j3" type="slide" axis="1 0 0"/><geom size=".05"/>
      <body name="d" pos=".1 0 0"><joint name="j4" axis="0 0 1"/><geom size=".05"/></body></body></body></body>
"""


def test_affine_actuators_and_their_defaults_equal_mujocos():
    """motor (gear, ctrlrange clamp), position (kp, kv, forcerange clamp), velocity (kv), general (affine bias),
    with ctrlrange, gear and gains from nested default classes, MuJoCo's shared actuator default of a class
    (a ``<motor>`` default's gear reaching a ``<position>``) and autolimits; jaxmor's generalized actuator
    force against MuJoCo's ``qfrc_actuator`` and ``actuator_force`` at random states and controls."""
    head = """<default><motor ctrlrange="-1 1" gear="2"/>
        <default class="servo"><position kp="30" kv="2" forcerange="-5 5"/></default>
        <default class="g"><general gainprm="7" biastype="affine" biasprm="0 -3 -1" ctrlrange="-2 2"/></default>
        <default class="geared"><motor gear="3"/></default></default>"""
    actuators = """<motor name="m1" joint="j1"/><position name="p2" class="servo" joint="j2"/>
        <general name="g3" class="g" joint="j3" gear="1.5"/><velocity name="v4" joint="j4" kv="4" ctrlrange="-9 9"/>"""
    text = model_text(ARM, head=head, actuators=actuators)
    model, m = both(text)
    assert model.affine.names == ("m1", "p2", "g3", "v4")
    data = mujoco.MjData(m)
    rng = np.random.default_rng(5)
    for _ in range(5):
        data.qpos[:], data.qvel[:], data.ctrl[:] = rng.normal(size=4), rng.normal(size=4), 3 * rng.normal(size=4)
        mujoco.mj_forward(m, data)
        state = jaxmor.init_state(model, q=data.qpos, u=data.qvel)
        state = jaxmor.set_ctrl(model, state, data.ctrl)
        np.testing.assert_allclose(jaxmor.affine_joint_force(model, state), data.qfrc_actuator, atol=1e-12)
    # A <motor> default's gear reaches a <position> of the same class (MuJoCo shares one actuator default).
    text = model_text(ARM, head=head, actuators='<position class="geared" joint="j1" kp="4"/>')
    model, m = both(text)
    assert float(model.affine.gear[0]) == m.actuator_gear[0, 0] == 3.0


def test_keyframes_and_set_keyframe_equal_mujocos_reset():
    text = model_text(
        FREE_BOX.replace("</body>", ARM + "</body>"),
        actuators='<motor name="m1" joint="j1"/><position name="p2" joint="j2" kp="10"/>',
        after="""<keyframe><key name="one" time="1.5" qpos="1 2 3 .5 .5 .5 .5 .1 .2 .3 .4"
            qvel="1 2 3 4 5 6 .1 .2 .3 .4" ctrl=".5 -.5"/><key name="two" qpos="0 0 1 0 1 0 0 0 0 0 0"/></keyframe>""",
    )
    model, m = both(text)
    assert jaxmor.keyframe_names(model) == ["one", "two"]
    ref = MujocoReference(model, m)
    data = mujoco.MjData(m)
    for key in range(2):
        mujoco.mj_resetDataKeyframe(m, data, key)
        q, u, _, _ = ref.terms(data.qpos, data.qvel)
        state = jaxmor.set_keyframe(model, jaxmor.init_state(model), m.key(key).name)
        np.testing.assert_allclose(state.q, q, atol=1e-15)
        np.testing.assert_allclose(state.u, u, atol=1e-12)  # the free joint's angular velocity, world frame
        np.testing.assert_allclose(state.ctrl, data.ctrl, atol=0)
        assert float(state.time) == data.time
    assert jaxmor.set_keyframe(model, jaxmor.init_state(model), 1).q[3] == 0.0
    with pytest.raises(jaxmor.ArgumentError, match="unknown keyframe 'three'"):
        jaxmor.set_keyframe(model, jaxmor.init_state(model), "three")


# --------------------------------------------------------------------------------------------------
# Contacts: which geoms touch the ground and each other, and their friction.


def _ground_slots(model, q) -> np.ndarray:
    contacts = jaxmor.collide(model, jaxmor.sim.kinematics.body_poses(model, jnp.asarray(q)))
    return contacts


def test_ground_contacts_follow_contype_conaffinity_and_friction_priority_as_mujoco():
    """Spheres sunk 1 cm into the floor: those whose bit masks MuJoCo pairs with the floor touch jaxmor's
    ground, at the same depth, with the friction MuJoCo's contact gets (the higher priority's, else the larger;
    condim 1 frictionless)."""
    spheres = [
        ("plain", ""),
        ("no_type", 'contype="0"'),
        ("no_affinity", 'conaffinity="0"'),
        ("other_bit", 'contype="2" conaffinity="2"'),
        ("grippy", 'friction="1.7"'),
        ("slick_priority", 'friction="0.2" priority="1"'),
        ("frictionless", 'condim="1" priority="1"'),
    ]
    body = '<geom name="floor" type="plane" size="5 5 .1" friction="0.9" pos="0 0 0.1"/>'
    for k, (name, attrs) in enumerate(spheres):
        body += f'<body name="{name}" pos="{k} 0 0.19"><freejoint/><geom name="{name}" size=".1" {attrs}/></body>'
    model, m = both(model_text(body))
    data = mujoco.MjData(m)
    mujoco.mj_forward(m, data)
    mj = {m.geom(data.contact[c].geom[1]).name: data.contact[c] for c in range(data.ncon)}
    assert float(model.ground_height) == 0.1
    contacts = _ground_slots(model, model.q_default)
    slots = {model.geom_names[g]: k for k, g in enumerate(g for g in range(model.ng) if model.geom_ground[g])}
    assert set(slots) == set(mj)
    for name, c in mj.items():
        k = slots[name]
        assert float(contacts.distance[k]) == pytest.approx(c.dist, abs=1e-12), name
        expected = c.friction[0] if c.dim > 1 else 0.0
        assert float(contacts.friction[k]) == pytest.approx(expected, abs=1e-12), name


def test_walls_self_collision_and_exclusions_follow_mujocos_filter():
    """Every geom overlaps every other, so MuJoCo's contacts are exactly the pairs its filter keeps. A vertical
    plane is a static wall (a box filling the half space behind it); robot geoms collide with world geoms always
    and with each other with ``self_collision=True``, never with their parent's, across an ``<exclude>`` or
    with incompatible bit masks: jaxmor's pairs are MuJoCo's contacts, at MuJoCo's distances."""
    body = """<geom name="wall" type="plane" size="1 1 1" pos="0.2 0 0" zaxis="-1 0 0"/>
      <geom name="post" type="box" size=".05 .05 .5" pos="-0.2 0 0"/>
      <body name="a"><freejoint/><geom name="a" size=".3"/>
        <body name="b" pos="0 0 .05"><joint/><geom name="b" size=".3"/>
          <body name="c" pos="0 0 .05"><joint/><geom name="c" size=".3"/></body></body></body>
      <body name="d" pos=".05 0 0"><freejoint/><geom name="d" size=".3"/></body>
      <body name="e" pos="-.05 0 .02"><freejoint/><geom name="e" size=".3" contype="2" conaffinity="2"/></body>"""
    text = model_text(body, after='<contact><exclude body1="a" body2="d"/></contact>')
    for self_collision in (False, True):
        model, m = both(text, self_collision=self_collision)
        data = mujoco.MjData(m)
        mujoco.mj_forward(m, data)
        mj = {frozenset(m.geom(g).name for g in c.geom): c for c in data.contact[: data.ncon]}
        expected = {p for p in mj if self_collision or p & {"wall", "post"}}
        pairs = [frozenset(model.geom_names[g] for g in p) for p in model.contact_pairs]
        assert set(pairs) == expected
        distance = np.asarray(_ground_slots(model, model.q_default).distance)
        slot = 0
        for pair, geoms in zip(pairs, model.contact_pairs, strict=True):
            assert distance[slot] == pytest.approx(mj[pair].dist, abs=1e-12), sorted(pair)
            slot += jaxmor.sim.collision.pair_slot_count(model, geoms)


# --------------------------------------------------------------------------------------------------
# Files: includes, DC motors through the extension, meshes.


def test_includes_are_found_beside_the_including_file_then_the_main_one(tmp_path):
    (tmp_path / "parts" / "deep").mkdir(parents=True)
    (tmp_path / "parts" / "deep" / "options.xml").write_text('<mujoco><option timestep="0.005"/></mujoco>')
    (tmp_path / "defaults.xml").write_text('<mujoco><default><geom size=".2"/></default></mujoco>')
    (tmp_path / "parts" / "robot.xml").write_text(
        '<mujoco><include file="deep/options.xml"/><include file="defaults.xml"/>'
        f"<worldbody>{FREE_BOX}</worldbody></mujoco>"
    )
    (tmp_path / "scene.xml").write_text('<mujoco><include file="parts/robot.xml"/></mujoco>')
    model, m = jaxmor.load_mjcf(tmp_path / "scene.xml"), mujoco.MjModel.from_xml_path(str(tmp_path / "scene.xml"))
    assert float(model.opt.timestep) == m.opt.timestep == 0.005
    assert model.nq == m.nq == 7


def test_include_errors_name_the_included_file_and_its_line(tmp_path):
    (tmp_path / "bad.xml").write_text('<mujoco>\n<worldbody>\n<body><geom type="sdf"/></body></worldbody></mujoco>')
    (tmp_path / "main.xml").write_text('<mujoco>\n<include file="bad.xml"/>\n</mujoco>')
    with pytest.raises(ModelError) as info:
        jaxmor.load_mjcf(tmp_path / "main.xml")
    assert info.value.source.endswith("bad.xml") and info.value.line == 3
    (tmp_path / "loop.xml").write_text('<mujoco><include file="main2.xml"/></mujoco>')
    (tmp_path / "main2.xml").write_text('<mujoco>\n<include file="loop.xml"/></mujoco>')
    with pytest.raises(ModelError, match="included twice"):
        jaxmor.load_mjcf(tmp_path / "main2.xml")
    outside = tmp_path.parent / f"{tmp_path.name}_outside.xml"
    outside.write_text("<mujoco/>")
    (tmp_path / "escape.xml").write_text(f'<mujoco>\n<include file="../{outside.name}"/></mujoco>')
    with pytest.raises(ModelError, match="not found or not readable inside the model's folders") as info:
        jaxmor.load_mjcf(tmp_path / "escape.xml")
    assert info.value.line == 2
    with pytest.raises(ModelError, match="needs assets_dir"):
        jaxmor.load_mjcf('<mujoco><include file="defaults.xml"/></mujoco>')


def test_dc_motor_actuators_come_from_the_jaxmor_extension_and_replace_the_mjcf_ones(tmp_path):
    """``<custom><text name="jaxmor:actuators" data="FILE"/>``, which MuJoCo loads and ignores: the file's
    DC-motor actuators replace the MJCF actuators of their joints, and the step clips their torques to the
    motor region (the closed form of ``tests/oracles.py``)."""
    (tmp_path / "motors.xml").write_text(
        '<actuators><actuator joint="j1" name="hip" gear_ratio="10"><motor resistance="0.5" torque_constant="0.1"'
        ' velocity_constant="10" bus_voltage="24" peak_torque="2"/></actuator></actuators>'
    )
    text = model_text(
        ARM,
        actuators='<motor name="m1" joint="j1"/><motor name="m2" joint="j2"/>',
        after='<custom><text name="jaxmor:actuators" data="motors.xml"/></custom>'
        '<keyframe><key name="k" ctrl="0.5 0.7"/></keyframe>',
    )
    (tmp_path / "arm.xml").write_text(text)
    mujoco.MjModel.from_xml_path(str(tmp_path / "arm.xml"))  # MuJoCo loads it
    model = jaxmor.load_mjcf(tmp_path / "arm.xml")
    assert jaxmor.actuator_names(model) == ["hip"] and model.affine.names == ("m2",)
    assert model.keyframes[0].ctrl == (0.7,)  # m1's control went with m1
    state = jaxmor.init_state(model, u=[20.0, 0, 0, 0])
    state = jaxmor.set_actuator_torques(model, state, [100.0])
    state = jaxmor.step(model, state)
    lower, upper = motor_region(10 * 20.0, 0.5, 0.1, 10.0, 24.0, 2.0)
    assert float(state.actuator_state.motor_torque[0]) == pytest.approx(upper, rel=1e-12)
    assert lower < upper < 2.0  # the voltage, not the peak torque, limits it at this speed


def test_collision_meshes_are_their_convex_hulls(tmp_path):
    pytest.importorskip("trimesh")
    corners = [(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    faces = "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
    (tmp_path / "cube.obj").write_text("".join(f"v {x} {y} {z}\n" for x, y, z in corners) + faces)
    text = model_text(
        '<body name="b"><freejoint/><inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>'
        '<geom type="mesh" mesh="cube" pos="0 0 .5"/></body>',
        head='<asset><mesh file="cube.obj" scale=".1 .2 .3"/></asset>',
    )
    model = jaxmor.load_mjcf(text, assets_dir=tmp_path)
    assert model.geom_type == (jaxmor.GeomType.MESH,)
    vertices = np.asarray(model.mesh_vertices[0, : model.mesh_vertex_count[0]])
    np.testing.assert_allclose(np.sort(np.abs(vertices), axis=0), np.tile([0.1, 0.2, 0.3], (8, 1)), atol=1e-12)
    no_inertial = text.replace('<inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/>', "")
    solid = jaxmor.load_mjcf(no_inertial, assets_dir=tmp_path)  # the mesh's mass: a box's (test_mesh_inertia.py)
    assert float(solid.body_mass[0]) == pytest.approx(1000.0 * 0.2 * 0.4 * 0.6, rel=1e-12)
    ignored = jaxmor.load_mjcf(text, assets_dir=tmp_path, meshes="ignore")
    assert ignored.ng == 0 and ignored.mesh_geoms == (("b", "cube.obj"),)


def _write_msh(path, vertices, faces, normals: bool = True, extra: bytes = b"") -> None:
    """A MuJoCo ``.msh`` file (written from its documented layout, not by jaxmor's reader's code)."""
    vertices, faces = np.asarray(vertices, "<f4"), np.asarray(faces, "<i4")
    nn = len(vertices) if normals else 0
    header = np.array([len(vertices), nn, 0, len(faces)], "<i4")
    unit = vertices / np.linalg.norm(vertices, axis=1, keepdims=True)
    path.write_bytes(
        header.tobytes() + vertices.tobytes() + (unit.tobytes() if normals else b"") + faces.tobytes() + extra
    )


def _box_triangles(half):
    corners = np.array([(x, y, z) for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float) * half
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return corners, [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]


def test_an_msh_mesh_loads_as_mujoco_reads_it(tmp_path):
    """MuJoCo's binary ``.msh`` format (the dm_control fruit fly's meshes): a box written as one gives MuJoCo's body
    mass and inertia (from the mesh's volume) and its vertices where MuJoCo puts them; the tolerance is float32's,
    the file's precision."""
    corners, triangles = _box_triangles(np.array([0.1, 0.2, 0.3]))
    _write_msh(tmp_path / "box.msh", corners, triangles)
    text = model_text(
        '<body name="b" pos="0 0 1" euler="10 20 30"><freejoint/><geom type="mesh" mesh="box" pos=".1 0 0"/></body>',
        head='<asset><mesh file="box.msh" scale="1 2 1"/></asset>',
    )
    (tmp_path / "scene.xml").write_text(text)
    model = jaxmor.load_mjcf(tmp_path / "scene.xml")
    m = mujoco.MjModel.from_xml_path(str(tmp_path / "scene.xml"))
    assert float(model.body_mass[0]) == pytest.approx(m.body_mass[1], rel=1e-6)
    assert float(model.body_mass[0]) == pytest.approx(1000 * 0.2 * 0.8 * 0.6, rel=1e-6)  # density x the box's volume
    ref = MujocoReference(model, m)
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(4)))
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-6 and rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-6
    d, pose, k = ref.data, jaxmor.forward_kinematics(model, q), model.geom_link[0]  # MuJoCo's data at q
    local = np.asarray(model.mesh_vertices[0, : model.mesh_vertex_count[0]])
    in_body = local @ np.asarray(model.geom_rotation[0]).T + np.asarray(model.geom_translation[0])
    ours = in_body @ np.asarray(pose.rotation[k]).T + np.asarray(pose.position[k])
    start, count = m.mesh_vertadr[0], m.mesh_vertnum[0]
    theirs = m.mesh_vert[start : start + count] @ d.geom_xmat[0].reshape(3, 3).T + d.geom_xpos[0]
    np.testing.assert_allclose(np.sort(ours, axis=0), np.sort(theirs, axis=0), atol=1e-6)


@pytest.mark.parametrize(
    "case, message",
    [
        ("short", "shorter than its 16-byte header"),
        ("extra", "where its .msh header declares"),
        ("index", "a face index outside its 8 vertices"),
        ("normals", "invalid .msh header"),
    ],
)
def test_a_broken_msh_file_is_refused_naming_file_and_line(tmp_path, case, message):
    corners, triangles = _box_triangles(np.array([0.1, 0.1, 0.1]))
    path = tmp_path / "box.msh"
    if case == "short":
        path.write_bytes(b"\x08\x00\x00\x00")
    elif case == "extra":
        _write_msh(path, corners, triangles, extra=b"\x00" * 4)
    elif case == "index":
        _write_msh(path, corners, [*triangles[:-1], (0, 1, 8)])
    else:
        path.write_bytes(np.array([8, 3, 0, 0], "<i4").tobytes() + np.zeros(8 * 3 + 9, "<f4").tobytes())
    text = model_text(
        '<body><freejoint/><geom type="mesh" mesh="box"/></body>',
        head='<asset>\n<mesh file="box.msh"/></asset>',
    )
    (tmp_path / "scene.xml").write_text(text)
    with pytest.raises(ModelError, match=re.escape(message)) as info:
        jaxmor.load_mjcf(tmp_path / "scene.xml")
    assert "scene.xml:2:" in str(info.value) and "box.msh" in str(info.value)


def test_dm_controls_asset_test_model_loads_as_mujoco_reads_it():
    """dm_control's ``mjcf/test_assets/model_with_assets.xml`` (shipped in its wheel): STL meshes, a ``.msh`` mesh and
    a height field from an RGB PNG (MuJoCo's decoder keeps the red channel). Every geom's vertices stand where
    MuJoCo's do, and the heights are MuJoCo's (its field kept in float32)."""
    dm_control = pytest.importorskip("dm_control")
    path = os.path.join(os.path.dirname(dm_control.__file__), "mjcf", "test_assets", "model_with_assets.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(path)
    m = mujoco.MjModel.from_xml_path(path)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    meshes = [g for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH]
    assert len(meshes) == 3 and sorted(model.geom_mesh) == [0, 1, 2]
    for g, ours in zip(meshes, range(3), strict=True):
        local = np.asarray(model.mesh_vertices[model.geom_mesh[ours], : model.mesh_vertex_count[model.geom_mesh[ours]]])
        world = local @ np.asarray(model.geom_rotation[ours]).T + np.asarray(model.geom_translation[ours])
        mesh = m.geom_dataid[g]
        start, count = m.mesh_vertadr[mesh], m.mesh_vertnum[mesh]
        theirs = m.mesh_vert[start : start + count] @ d.geom_xmat[g].reshape(3, 3).T + d.geom_xpos[g]
        assert model.geom_link[ours] == -1 and len(world) == 8  # a cube's hull: its 8 corners
        np.testing.assert_allclose(np.unique(world.round(6), axis=0), np.unique(theirs.round(6), axis=0), atol=2e-6)
    field = model.height_field
    rows, cols = m.hfield_nrow[0], m.hfield_ncol[0]
    size = m.hfield_size[0]
    want = d.geom_xpos[3][2] + size[2] * m.hfield_data.reshape(rows, cols)
    np.testing.assert_allclose(np.asarray(field.heights), want, rtol=0, atol=1e-6)
    assert np.ptp(np.asarray(field.heights)) > 0.1  # the image is not blank: a red-channel misread would show


def test_options_flags_and_visual_geoms():
    text = model_text(
        FREE_BOX.replace("</body>", '<geom size=".3" contype="0" conaffinity="0" rgba="1 0 0 1"/></body>'),
        head='<option timestep="0.004" gravity="0 1 -3"><flag frictionloss="disable" limit="disable"/></option>',
    )
    model, m = both(text)
    assert float(model.opt.timestep) == 0.004 and model.opt.friction_rule == "max"
    np.testing.assert_array_equal(np.asarray(model.opt.gravity), m.opt.gravity)
    assert model.ng == 1  # the visual sphere is dropped (its mass counted: MuJoCo's body mass)
    assert float(model.body_mass[0]) == pytest.approx(m.body_mass[1], rel=1e-12)
    off = jaxmor.load_mjcf(model_text(FREE_BOX, head='<option><flag gravity="disable" contact="disable"/></option>'))
    assert np.all(np.asarray(off.opt.gravity) == 0) and off.ng == 0
    no_limits = jaxmor.load_mjcf(
        model_text(
            '<body><joint range="-1 1" frictionloss="1"/><geom size=".1"/></body>',
            head='<option><flag limit="disable" frictionloss="disable"/></option>',
        )  # fmt: skip
    )
    assert not np.isfinite(float(no_limits.dof_upper[0])) and float(no_limits.dof_friction[0]) == 0.0


def test_mjcf_is_read_as_untrusted_input(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("password")
    text = f'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file://{secret}">]><mujoco model="&x;"/>'
    with pytest.raises(ModelError, match="external entity|DTD declarations") as info:
        jaxmor.load_mjcf(text)
    assert "password" not in str(info.value)
    with pytest.raises(ModelError, match="malformed XML"):
        jaxmor.load_mjcf("<mujoco><worldbody></mujoco>")
    with pytest.raises(ModelError, match="no such file"):
        jaxmor.load_mjcf(tmp_path / "missing.xml")
    with pytest.raises(ModelError, match="not <mujoco>"):
        jaxmor.load_mjcf("<robot name='r'/>")


# --------------------------------------------------------------------------------------------------
# Refused features: one test each, the error naming the file, the line and the element.

BODY = '<body name="b">\n<joint name="j"/>\n<geom size=".1"/>\n</body>'
#: A default class whose <general> parameters a <position> must not inherit.
DEFAULTS = '<default><default class="g"><general gainprm="3"/></default></default>'

#: feature -> (section, snippet, marker, reason): the snippet goes into the section ("world", "actuator",
#: "head" or "after"), the error must name the line of ``marker`` and say ``reason``.
REFUSALS = {
    "ball joint range": ("world", '<body name="c"><joint type="ball" range="10 60"/><geom size=".1"/></body>',
                         'range="10', "a ball joint's range is '0 angle'"),
    "equality of a joint with itself": ("after", '<equality>\n<joint joint1="j" joint2="j"/></equality>',
                                        '<joint joint1', "with itself"),
    "height field without its asset": ("world", '<geom type="hfield" hfield="h"/>', "hfield", "unknown hfield 'h'"),
    "sdf geom": ("world", '<body><geom type="sdf"/></body>', "sdf", "sdf geoms"),
    "mesh fitting": ("world", '<body><geom type="box" mesh="m"/></body>', 'mesh="m"', "fitting a box to a mesh"),
    "spatial tendon": ("after", '<tendon>\n<spatial><site site="s"/></spatial></tendon>', "<spatial>",
                       "spatial tendons"),
    "site transmission": ("actuator", '<general site="s"/>', "site=", "site transmissions"),
    "muscle dynamics": ("actuator", '<general joint="j" dyntype="muscle"/>', "muscle", "dyntype 'muscle'"),
    "affine gain": ("actuator", '<general joint="j" gaintype="affine"/>', "gaintype", "gaintype='fixed'"),
    "actdim": ("actuator", '<general joint="j" dyntype="filter" actdim="2"/>', "actdim", "actdim is not supported"),
    "damper actuator": ("actuator", '<damper joint="j" kv="1"/>', "damper", "damper actuators"),
    "cylinder actuator": ("actuator", '<cylinder joint="j"/>', "cylinder", "cylinder actuators"),
    "muscle actuator": ("actuator", '<muscle joint="j"/>', "muscle", "muscle actuators"),
    "adhesion actuator": ("actuator", '<adhesion body="b"/>', "adhesion", "adhesion actuators"),
    "dcmotor controller input": ("actuator", '<dcmotor joint="j" resistance="1" motorconst="0.1" input="pos vel"/>',
                                 "input=", "only the voltage input"),
    "dcmotor controller gains": ("actuator", '<dcmotor joint="j" resistance="1" motorconst="0.1"\n'
                                 'controller="0 0 0 0 0 5"/>', "controller=", "on-board controller"),
    "dcmotor current rate": ("actuator", '<dcmotor joint="j" resistance="1" motorconst="0.1" ctrlrange="-1 1"\n'
                             'saturation="0 0 5" inductance="0.01"/>', "saturation=", "current rate limit"),
    "dcmotor damping with nominal": ("actuator", '<dcmotor joint="j" nominal="12 1 100" damping="0.001"/>', "nominal=",
                                     "solving a quadratic"),
    "dcmotor damping": ("actuator", '<dcmotor joint="j" resistance="1" motorconst="0.1" damping="0.001"/>', "damping=",
                        "actuator damping is not supported"),
    "dcmotor armature": ("actuator", '<dcmotor joint="j" resistance="1" motorconst="0.1" armature="0.001"/>',
                         "armature=", "actuator armature"),
    "dcmotor default": ("head", '<default>\n<dcmotor resistance="1" motorconst="0.1"/></default>', "<dcmotor",
                        "dcmotor defaults are not supported"),
    "actuator on a free joint": ("actuator", '<motor joint="free"/>', 'joint="free"', "actuators on a free joint"),
    "two actuators on a joint": ("actuator", '<motor name="a1" joint="j"/>\n<motor name="a2" joint="j"/>', "a2",
                                 "already driven"),
    "actuator damping": ("actuator", '<motor joint="j" damping="1"/>', "damping", "actuator damping"),
    "position dampratio": ("actuator", '<position joint="j" dampratio="1"/>', "dampratio", "dampratio"),
    "mixed shortcut defaults": ("actuator", '<position joint="j" class="g"/>', '<position joint="j" class',
                                "would inherit gainprm"),
    "mocap body with a joint": ("world", '<body name="m" mocap="true"><joint/><geom size=".1"/></body>', "mocap",
                                "cannot have joints"),
    "gravity compensation": ("world", '<body gravcomp="1"><joint/><geom size=".1"/></body>', "gravcomp", "gravcomp"),
    "nested free joint": ("world", '<body><joint/><geom size=".1"/>\n<body name="n"><freejoint/></body></body>',
                          '<freejoint/></body></body>', "only in a top-level body"),
    "free joint with another joint": ("world", '<body name="f2"><freejoint/>\n<joint/><geom size=".1"/></body>',
                                      '<freejoint/>\n<joint/><geom', "the body's only joint"),
    "springdamper on a ball joint": ("world", '<body><joint type="ball" springdamper="1 1"/><geom size=".1"/></body>',
                                     "springdamper", "springdamper on a ball joint"),
    "free-joint stiffness": ("world", '<body><joint type="free" stiffness="1"/><geom size=".1"/></body>', "stiffness",
                             "stiffness='1' on a free joint"),
    "shell inertia": ("world", '<body><joint/><geom size=".1" shellinertia="true"/></body>', "shell", "shellinertia"),
    "surface velocity": ("world", '<body><joint/><geom size=".1" surfacevel="1 0 0"/></body>', "surfacevel",
                         "surfacevel"),
    "unknown attribute": ("world", '<body><joint/><geom size=".1" sise="1"/></body>', "sise", "attribute 'sise'"),
    "unknown class": ("world", '<body><joint/><geom size=".1" class="nope"/></body>', "nope", "unknown default class"),
    "composite": ("world", '<composite type="grid" count="2 2 1"/>', "composite", "composite objects"),
    "flexcomp": ("world", '<flexcomp name="fc" type="grid" count="2 2 1"/>', "flexcomp", "deformable objects"),
    "attach": ("world", '<attach model="m" body="b" prefix="p"/>', "attach", "attaching models"),
    "replicate": ("world", '<replicate count="2"><geom size=".1"/></replicate>', "replicate", "<replicate> is not"),
    "plugin": ("world", '<plugin plugin="p"/>', "plugin", "plugins are not supported"),
    "fluid ellipsoid model": (
        "world",
        '<body name="fl"><freejoint/><geom size=".1" fluidshape="ellipsoid"/></body>',
        "fluidshape",
        "ellipsoid fluid model",
    ),
    "global coordinates": ("head", '<compiler coordinate="global"/>', "coordinate", "global coordinates"),
    "balanceinertia": ("head", '<compiler balanceinertia="true"/>', "balance", "balanceinertia"),
    "disabled filterparent": ("head", '<option>\n<flag filterparent="disable"/></option>', "filterparent",
                              "filterparent"),
    "disabled clampctrl": ("head", '<option>\n<flag clampctrl="disable"/></option>', "clampctrl", "clampctrl"),
    "inline mesh": ("head", '<asset>\n<mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset>', "vertex",
                    "meshes given by their vertices"),
}  # fmt: skip


@pytest.mark.parametrize("feature", sorted(REFUSALS))
def test_refused_feature_names_the_element_and_its_line(feature):
    section, snippet, marker, reason = REFUSALS[feature]
    parts = {"world": "", "actuator": "", "head": "", "after": ""}
    parts[section] = snippet
    world = f'{BODY}\n<body name="fb"><freejoint name="free"/><geom size=".1"/></body>\n{parts["world"]}\n'
    text = model_text(world, head=f"\n{DEFAULTS}\n{parts['head']}\n", actuators=f"\n{parts['actuator']}\n",
                      after=f"\n{parts['after']}\n")  # fmt: skip
    at = text.index(marker)
    element = re.match(r"<([a-z_]+)", text[text.rindex("<", 0, at + 1) :]).group(1)
    error = refused(text, reason, line=line_of(text, marker))
    assert error.source == "<string>"
    assert f"<{element}" in str(error), (element, str(error))


# --------------------------------------------------------------------------------------------------
# Robustness: mutated third-party files load or fail with a ModelError naming a file and a line.

MJCF_TAGS = ("body", "joint", "geom", "inertial", "motor", "general", "default", "worldbody", "key", "freejoint")
MJCF_TYPES = ("hinge", "slide", "ball", "free", "sphere", "box", "capsule", "plane", "mesh", "x")


@pytest.mark.slow
def test_fuzzed_mjcf_files_load_or_fail_cleanly(tmp_path):
    """Seeded mutations of the dm_control walker and cheetah (degrees, fromto capsules, default classes,
    settotalmass) and the Go2 (includes, nested classes, keyframe): each loads, or raises a
    ModelError that names one of the model's files and a line."""

    outcomes = {"loaded": 0, "refused": 0}
    for case, main, files in _mutations(_fuzz_cases(tmp_path), 20261201, 150):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jaxmor.load_mjcf(main, meshes="ignore")
            outcomes["loaded"] += 1
        except ModelError as error:
            assert error.source in {str(f) for f in files}, (case, str(error))
            assert isinstance(error.line, int) and error.line >= 1, (case, str(error))
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 0 and outcomes["refused"] > 0, outcomes


def _fuzz_cases(tmp_path):
    """The fuzzed sources (the dm_control walker and cheetah where installed, the Go2), each copied into its own
    folder (their includes are read inside the tree): ``[(main file, files a mutation may edit)]``."""
    from reference import mjcf_model

    sources = [*(p for p in (mjcf_model("walker"), mjcf_model("cheetah")) if p), mjcf_model("go2/scene_mjx.xml")]
    cases = []
    for source in sources:
        folder = tmp_path / source.stem
        folder.mkdir(exist_ok=True)
        for f in source.parent.glob("*.xml"):
            (folder / f.name).write_text(f.read_text())
        if (source.parent / "common").is_dir():
            shutil.copytree(source.parent / "common", folder / "common")
        files = [folder / source.name] + ([folder / "go2_mjx.xml"] if source.name == "scene_mjx.xml" else [])
        cases.append((folder / source.name, files))
    return cases


def _mutations(cases, seed: int, count: int):
    """``count`` seeded mutations of the cases' files: yields ``(case, main file, files)`` with one file mutated,
    and puts the file back before the next."""
    import random

    from fuzz import mutate

    rng = random.Random(seed)
    for case in range(count):
        main, files = cases[case % len(cases)]
        target = files[-1]
        original = target.read_text()
        target.write_text(mutate(original, rng, MJCF_TAGS, MJCF_TYPES))
        try:
            yield case, main, files
        finally:
            target.write_text(original)


#: The State fields' guards (``types._field``) under which a value must be finite (``non_negative`` allows inf).
FINITE_GUARDS = ("finite", "bounded")
#: Mutated files per run of the stepping fuzzer (the issue's floor: 2,000).
STEPPED_CASES = int(os.environ.get("JAXMOR_FUZZ_CASES", "2000"))


@pytest.mark.slow  # one compile per new model structure: about 20-40 minutes on 2 cores, more on a slow one
@pytest.mark.timeout(4 * 3600)  # the default run's 20-minute limit would stop it
def test_fuzzed_mjcf_files_that_load_also_step(tmp_path):
    """Every mutated file that loads is stepped (one world, 5 steps from its default state): the state stays finite,
    or the step flags the world (``nonfinite`` or ``invalid``) and keeps its last good state; nothing raises. A
    refusal is a ModelError or ArgumentError; no case may raise anything else."""

    outcomes = {"stepped": 0, "flagged": 0, "refused": 0}
    run = jax.jit(lambda model, state: jaxmor.rollout(model, state, n_steps=5)[0])
    for count, (case, main, _) in enumerate(_mutations(_fuzz_cases(tmp_path), 20261205, STEPPED_CASES)):
        if count % 50 == 0:  # each new model structure compiles a program: drop them, or the process runs out of
            jax.clear_caches()  # memory maps after about 800 (LLVM: "Unable to allocate section memory")
            print(f"stepping fuzzer: case {count} of {STEPPED_CASES}: {outcomes}", flush=True)  # shown with -s
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = jaxmor.load_mjcf(main, meshes="ignore")
                end = run(model, jaxmor.init_state(model))
        except (ModelError, ArgumentError):
            outcomes["refused"] += 1
            continue
        guarded = [getattr(end, f.name) for f in dataclasses.fields(end) if f.metadata.get("guard") in FINITE_GUARDS]
        floats = [x for x in jax.tree.leaves(guarded) if jnp.issubdtype(x.dtype, jnp.floating)]
        finite = all(bool(jnp.all(jnp.isfinite(x))) for x in floats)  # the fields the step's guard keeps finite
        flagged = bool(end.nonfinite) or bool(end.invalid)
        assert finite, (case, "a non-finite state", flagged)
        outcomes["flagged" if flagged else "stepped"] += 1
    print(f"stepping fuzzer: {STEPPED_CASES} cases: {outcomes}", flush=True)
    assert outcomes["stepped"] > 0 and outcomes["refused"] > 0, outcomes


def test_the_command_line_reads_mjcf_files(tmp_path, capsys):
    from jaxmor.tools import cli

    (tmp_path / "arm.xml").write_text(model_text(ARM, actuators='<motor name="m1" joint="j1"/>'))
    assert cli.main(["info", str(tmp_path / "arm.xml")]) == 0
    out = capsys.readouterr().out
    assert "affine actuators: m1" in out and "j3" in out and "prismatic" in out
    (tmp_path / "bad.xml").write_text("<mujoco>\n<worldbody><body><geom type='sdf'/></body></worldbody></mujoco>")
    assert cli.main(["info", str(tmp_path / "bad.xml")]) == 2
    assert "bad.xml:2: <geom>" in capsys.readouterr().err


def test_joint_stiffness_is_randomized_per_world():
    model = jaxmor.load_mjcf(model_text(ARM))
    models, axes = jaxmor.randomize(model, jax.random.key(0), 64, {"joint.stiffness": jaxmor.uniform(10.0, 20.0)})
    drawn = np.asarray(models.dof_stiffness)
    assert drawn.shape == (64, 4) and axes.dof_stiffness == 0
    assert drawn.min() >= 10.0 and drawn.max() <= 20.0 and len(np.unique(drawn)) == drawn.size


# --------------------------------------------------------------------------------------------------
# MuJoCo's <dcmotor>: a jaxmor DC motor with the constants MuJoCo's compiler derives, and the same forces.

ROTOR = '<body name="r"><joint name="j" axis="0 0 1"/><inertial pos="0 0 0" mass="1" diaginertia=".01 .01 .01"/></body>'
SLIDER = '<body name="s"><joint name="x" type="slide" axis="1 0 0"/><geom size=".1"/></body>'
#: attributes of a <dcmotor joint="j"> -> what the case exercises. Each compiles in MuJoCo 4 and in jaxmor.
DCMOTOR_CASES = {
    "both motor constants: their geometric mean": 'gear="2" resistance="1.5" motorconst="0.1 0.2" ctrlrange="-12 12"',
    "torque constant only": 'resistance="1" motorconst="0.1" ctrlrange="-24 24"',
    "back-EMF constant only, asymmetric range": 'resistance="1" motorconst="0 0.08" ctrlrange="-6 12"',
    "nominal point alone (V, stall torque, no-load speed)": 'gear="3" nominal="12 2 100"',
    "nominal with a torque constant: Ke from the no-load speed": 'motorconst="0.1" nominal="12 2 100"',
    "nominal with a resistance": 'resistance="3" nominal="12 2 100" ctrlrange="-10 10"',
    "saturation torque": 'resistance="2" motorconst="0.1" saturation="0.3 5" ctrlrange="-12 12"',
    "saturation current": 'resistance="2" motorconst="0.1" saturation="0 4" ctrlrange="-12 12"',
    "inductance": 'resistance="2" motorconst="0.1" inductance="0.01 0.5" ctrlrange="-12 12"',
    "electrical time constant": 'resistance="2" motorconst="0.1" inductance="0 0.004" ctrlrange="-12 12"',
    "thermal resistance and capacitance": 'resistance="1" motorconst="0.1" thermal="2 30 0 .0039 20 25"'
    ' ctrlrange="0 1"',
    "thermal time constant with the resistance": 'resistance="1" motorconst="0.1" thermal="2 0 50 .004 25 30"'
    ' ctrlrange="-1 1"',
    "thermal time constant with the capacitance": 'resistance="1" motorconst="0.1" thermal="0 10 40 .004"'
    ' ctrlrange="-1 1"',
    "thermal, all three (time constant first)": 'resistance="1" motorconst="0.1" thermal="2 1 3 .004 20 25"'
    ' ctrlrange="-1 1"',
    "cogging": 'gear="4" resistance="1" motorconst="0.1" cogging="0.02 6 0.3" ctrlrange="-12 12"',
    "lugre": 'gear="5" resistance="1" motorconst="0.1" lugre="100 0.5 0.05 0.08 0.2" ctrlrange="-12 12"',
    "everything, explicit voltage input": 'gear="2.5" resistance="1" motorconst="0.05 0.06" inductance="0.002" '
    'thermal="3 20 0 .0039 25 25" cogging="-0.01 8" lugre="50 0.1 0.02 0.03 1" saturation="0.4" input="voltage" '
    'ctrlrange="-24 24"',
}  # fmt: skip


def _dcmotor(attributes: str, body: str = ROTOR, joint: str = "j", name: str = "m") -> str:
    return model_text(body, actuators=f'<dcmotor name="{name}" joint="{joint}" {attributes}/>')


@pytest.mark.parametrize("case", sorted(DCMOTOR_CASES))
def test_dcmotor_constants_equal_mujocos_compiled_ones(case):
    """Each attribute against what MuJoCo compiled (``actuator_gainprm`` = [R, K, alpha, T_ref, ...],
    ``actuator_dynprm`` = [te, di/dt max, R_th, C, T_a, sigma0, sigma1, ...], ``actuator_biasprm`` = [A, N, phi,
    F_C, F_S, v_S], ``forcerange``, ``gear``, ``ctrlrange``), converted where jaxmor's conventions differ: one
    motor constant K as Kt = K and Kv = 1/K, the inductance L = te R, LuGre at the output (gear G)."""
    from jaxmor.actuation.motor_dynamics import features_of

    text = _dcmotor(DCMOTOR_CASES[case])
    model, m = both(text)
    assert model.affine.names == () and jaxmor.actuator_names(model) == ["m"]
    gain, dyn, bias = m.actuator_gainprm[0], m.actuator_dynprm[0], m.actuator_biasprm[0]
    motor = jax.tree.map(lambda x: float(np.asarray(x)[0]), model.actuators.motor)
    gear = float(model.actuators.gear_ratio[0])
    assert gear == m.actuator_gear[0, 0]
    r, k = gain[0], gain[1]
    assert motor.resistance == pytest.approx(r, rel=1e-14)
    assert motor.torque_constant == pytest.approx(k, rel=1e-14)
    assert motor.velocity_constant == pytest.approx(1.0 / k, rel=1e-14)
    volts = float(text.split('nominal="')[1].split()[0]) if "nominal" in text else None
    bus = np.abs(m.actuator_ctrlrange[0]).max() if m.actuator_ctrllimited[0] else volts
    assert motor.bus_voltage == bus
    peak = m.actuator_forcerange[0, 1] if m.actuator_forcelimited[0] else math.inf
    assert m.actuator_forcerange[0, 0] == -m.actuator_forcerange[0, 1]
    assert motor.peak_torque == pytest.approx(peak, rel=1e-14)
    features = features_of(model.actuators.dynamics, 0)
    assert features["inductance"] == pytest.approx(dyn[0] * r, rel=1e-14)  # MuJoCo's te = L / R
    thermal = features["thermal"]
    assert (thermal is None) == (dyn[2] == 0)
    if thermal is not None:
        assert thermal.thermal_resistance == pytest.approx(dyn[2], rel=1e-14)
        assert thermal.heat_capacity == pytest.approx(dyn[3], rel=1e-14)
        assert thermal.ambient_temperature == dyn[4]
        assert thermal.resistance_tempco == pytest.approx(gain[2], rel=1e-14)
        assert thermal.reference_temperature == gain[3]
        assert thermal.flux_tempco == 0.0 and thermal.housing_heat_capacity == 0.0
        assert m.actuator_actnum[0] >= 1  # MuJoCo's temperature slot
    cogging = features["cogging"]
    assert (cogging is None) == (bias[0] == 0)
    if cogging is not None:
        assert (cogging.amplitude, cogging.periods, cogging.phase) == pytest.approx(tuple(bias[:3]), rel=1e-14)
    lugre = features["lugre"]
    assert (lugre is None) == (dyn[5] == 0)
    if lugre is not None:  # actuator side (velocity G v) -> output side: tests/test_mjcf.py checks the forces too
        expected = (gear**2 * dyn[5], gear**2 * dyn[6], gear * bias[3], gear * bias[4], bias[5] / gear)
        got = (lugre.stiffness, lugre.damping, lugre.coulomb, lugre.static, lugre.stribeck_velocity)
        assert got == pytest.approx(expected, rel=1e-14)


def test_dcmotor_forces_equal_mujocos():
    """The motor, its temperature, cogging and LuGre friction act as MuJoCo's (stateless current, ``te = 0``), at
    random positions, velocities, winding temperatures and bristle deflections: MuJoCo's actuator force at
    ``ctrl = +-V`` and ``0`` against jaxmor's region at the gear output (``G (K V / R(T) - K^2 w / R(T))``: the
    half width is the voltage's torque, the midpoint the back-EMF's), its cogging torque and its LuGre friction
    (the step's, extrapolated to ``h -> 0``: the continuous force MuJoCo evaluates explicitly)."""
    from jaxmor.actuation.drive import cogging_joint_torque
    from jaxmor.actuation.motor_dynamics import lugre_coefficients

    attrs = ('gear="3" resistance="1.2" motorconst="0.05 0.07" thermal="2 40 0 .0039 20 25" cogging="0.01 6 0.4" '
             'lugre="80 0.02 0.03 0.05 2" ctrlrange="-24 24"')  # fmt: skip
    for body, joint in ((ROTOR, "j"), (SLIDER, "x")):
        model, m = both(_dcmotor(attrs, body, joint))
        data = mujoco.MjData(m)
        gear = m.actuator_gear[0, 0]
        dyn = model.actuators.dynamics
        rng = np.random.default_rng(3)
        for _ in range(6):
            q, v, rise, z = rng.normal(), 2 * rng.normal(), 60 * rng.random(), 1e-3 * rng.normal()
            forces = {}
            for ctrl in (24.0, -24.0, 0.0):
                data.qpos[0], data.qvel[0], data.ctrl[0] = q, v, ctrl
                data.act[:] = rise, z  # MuJoCo's slots: temperature rise above ambient, bristle (actuator side)
                mujoco.mj_forward(m, data)
                forces[ctrl] = gear * data.actuator_force[0]
            state = jaxmor.init_state(model, q=[q], u=[v])
            state = jaxmor.set_motor_temperature(model, state, 25.0 + rise)
            state = state.replace(motor_state=state.motor_state.replace(bristle=jnp.asarray([z / gear])))
            lower, upper = (float(b[0]) for b in jaxmor.actuator_torque_bounds(model, state))
            cogging = float(cogging_joint_torque(model, state)[0])

            def friction(h, state=state, v=v, dyn=dyn):
                offset, slope, _ = lugre_coefficients(dyn, state.motor_state.bristle, state.u, jnp.asarray(h))
                return -float(offset[0] + slope[0] * v)

            lugre = 2 * friction(0.5e-9) - friction(1e-9)  # first order in h: Richardson to h -> 0 (1e-11)
            scale = abs(forces[24.0]) + abs(forces[-24.0])
            assert (upper - lower) / 2 == pytest.approx((forces[24.0] - forces[-24.0]) / 2, rel=1e-12)
            assert abs((upper + lower) / 2 + cogging + lugre - forces[0.0]) < 1e-9 * scale, (joint, forces, lugre)
            assert abs(cogging) > 1e-3 * gear * 0.01 and abs(lugre) > 0  # both act


def test_dcmotor_and_the_extension_on_one_joint(tmp_path):
    """The jaxmor:actuators extension's motors replace the MJCF actuators of their joints, dcmotors too; the other
    dcmotors stay, in document order before the extension's; a dcmotor's keyframe control (a voltage) is dropped,
    an affine actuator's kept."""
    (tmp_path / "motors.xml").write_text(
        '<actuators><actuator joint="j2" name="knee" gear_ratio="10"><motor resistance="0.5" torque_constant="0.1"'
        ' velocity_constant="10" bus_voltage="24"/></actuator></actuators>'
    )
    text = model_text(
        ARM,
        actuators='<dcmotor name="d1" joint="j1" resistance="1" motorconst="0.1" ctrlrange="-12 12"/>'
        '<dcmotor name="d2" joint="j2" resistance="1" motorconst="0.1" ctrlrange="-12 12"/>'
        '<motor name="m3" joint="j3"/><dcmotor name="d4" joint="j4" gear="2" nominal="24 1 50"/>',
        after='<custom><text name="jaxmor:actuators" data="motors.xml"/></custom>'
        '<keyframe><key name="k" ctrl="1 2 3 4"/></keyframe>',
    )
    (tmp_path / "arm.xml").write_text(text)
    mujoco.MjModel.from_xml_path(str(tmp_path / "arm.xml"))  # MuJoCo loads it
    model = jaxmor.load_mjcf(tmp_path / "arm.xml")
    assert jaxmor.actuator_names(model) == ["d1", "d4", "knee"] and model.affine.names == ("m3",)
    assert model.actuators.joints == ("j1", "j4", "j2")
    assert model.keyframes[0].ctrl == (3.0,)
    assert np.asarray(model.actuators.motor.bus_voltage).tolist() == [12.0, 24.0, 24.0]


def test_dcmotor_errors_name_the_element_and_its_line():
    """Beyond the refusals of REFUSALS: what MuJoCo refuses too, the bus voltage jaxmor needs, LuGre constants
    jaxmor's model refuses, a dcmotor's (dropped) control in a key is fine."""
    cases = {
        'resistance="1" ctrlrange="-1 1"': "motor constant K must be positive",
        'motorconst="0.1" ctrlrange="-1 1"': "resistance R must be positive",
        'resistance="1" motorconst="0.1"': "needs a bus voltage: give ctrlrange or nominal",
        'resistance="1" motorconst="-0.1" ctrlrange="-1 1"': "motor constants must be non-negative",
        'resistance="1" motorconst="0.1" ctrlrange="-1 1" thermal="2"': "thermal needs two",
        'resistance="1" motorconst="0.1" ctrlrange="-1 1" inductance="-1"': "must be non-negative",
        'resistance="1" motorconst="0.1" ctrlrange="-1 1" lugre="10 0 0.2 0.1 1"': "static >= coulomb",
        'resistance="1" motorconst="0.1" ctrlrange="-1 1" lugre="10 0 0.1 0.2 0"': "positive Stribeck",
        'resistance="1" motorconst="0.1" ctrlrange="-1 1" gear="-2"': "must be positive",
    }
    for attrs, reason in cases.items():
        text = model_text(BODY, actuators=f'\n<dcmotor name="bad" joint="j" {attrs}/>')
        error = refused(text, reason, "<dcmotor", "'bad'", line=line_of(text, "<dcmotor"))
        assert error.source == "<string>"


# --------------------------------------------------------------------------------------------------
# Visual-only elements: ignored, and named in the MuJoCo-difference warning.

SKIN_FREE = """<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1"><joint name="j" axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
    </body>
  </worldbody>{skin}
</mujoco>"""
SKIN = """
  <deformable>
    <skin name="sleeve" vertex="0 0 0  0.3 0 0  0 0.05 0" face="0 1 2">
      <bone body="arm" bindpos="0 0 0" bindquat="1 0 0 0" vertid="0 1 2" vertweight="1 1 1"/>
    </skin>
  </deformable>"""


def test_a_skin_is_ignored_with_a_named_warning_and_changes_nothing():
    """A ``<skin>`` (visual only in MuJoCo: it draws a mesh bound to bodies) loads in MuJoCo and in jaxmor; jaxmor's
    model is the same file's without it, leaf for leaf, and the warning names it. A ``<deformable>`` with a flex is
    still refused."""
    mujoco = pytest.importorskip("mujoco")
    with_skin = SKIN_FREE.format(skin=SKIN)
    assert mujoco.MjModel.from_xml_string(with_skin).nskin == 1  # valid MJCF
    with pytest.warns(jaxmor.MujocoDifferenceWarning, match=r"1 <skin> element\(s\) ignored"):
        skinned = jaxmor.load_mjcf(with_skin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        plain = jaxmor.load_mjcf(SKIN_FREE.format(skin=""))
    for a, b in zip(jax.tree.leaves(skinned), jax.tree.leaves(plain), strict=True):
        np.testing.assert_array_equal(a, b)
    flex = SKIN.replace("<skin", '<flex name="f" dim="1" body="arm world" vertex="0 0 0 0 0 0"/>\n    <skin')
    with pytest.raises(ModelError, match="deformable objects are not supported"):
        jaxmor.load_mjcf(SKIN_FREE.format(skin=flex))


def test_an_included_file_may_have_a_mujocoinclude_root(tmp_path):
    """MuJoCo takes the children of an included file's root whether it is ``<mujoco>`` or the older
    ``<mujocoinclude>`` (dm_control and robosuite files use it): both engines load the same two bodies, with
    MuJoCo's mass matrix and bias (float64, 1e-12)."""
    mujoco = pytest.importorskip("mujoco")
    (tmp_path / "arms.xml").write_text(
        '<mujocoinclude>\n  <body name="upper" pos="0 0 1"><joint name="a" axis="0 1 0"/>\n'
        '    <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>\n'
        '    <body name="lower" pos="0.3 0 0"><joint name="b" axis="0 0 1"/><geom type="box" size=".1 .05 .02"/>\n'
        "    </body></body>\n</mujocoinclude>\n"
    )
    main = tmp_path / "main.xml"
    main.write_text('<mujoco>\n  <worldbody>\n    <include file="arms.xml"/>\n  </worldbody>\n</mujoco>\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        model = jaxmor.load_mjcf(main)
    ref = MujocoReference(model, mujoco.MjModel.from_xml_path(str(main)))
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(0)))
    assert model.nv == 2
    assert rel_err(jaxmor.mass_matrix(model, q), mass) < 1e-12
    assert rel_err(jaxmor.bias_force(model, q, u), bias) < 1e-12
    (tmp_path / "arms.xml").write_text("<robot/>\n")
    with pytest.raises(ModelError, match=r"arms.xml:1: an included file's root is <robot>"):
        jaxmor.load_mjcf(main)


def test_gymnasium_robotics_adroit_hammer_with_mujocoinclude_files_is_mujocos():
    """Gymnasium-Robotics' ``adroit_hand/adroit_hammer.xml`` (its wheel) includes ``adroit_assets.xml`` and
    ``adroit_model.xml``, both ``<mujocoinclude>`` roots: the 33-DoF hand, arm and hammer load with MuJoCo's mass
    matrix and bias (float64, 1e-12 of the largest entry)."""
    mujoco = pytest.importorskip("mujoco")
    from reference import _package_file

    path = _package_file("gymnasium_robotics", "envs", "assets", "adroit_hand", "adroit_hammer.xml")
    if path is None:
        pytest.skip("gymnasium-robotics is not installed (the test extra)")
    for part in ("adroit_assets.xml", "adroit_model.xml"):
        assert "<mujocoinclude" in (path.parent / part).read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(path, meshes="ignore")
    ref = MujocoReference(model, mujoco.MjModel.from_xml_path(str(path)))
    assert model.nv == 33
    q, u, mass, bias = ref.terms(*ref.random_state(np.random.default_rng(0)))
    terms = jax.jit(lambda q, u: (jaxmor.mass_matrix(model, q), jaxmor.bias_force(model, q, u)))
    mine = terms(q, u)
    assert rel_err(mine[0], mass) < 1e-12 and rel_err(mine[1], bias) < 1e-12


def test_a_qpos0_outside_its_joints_range_is_named_in_the_warning():
    """A hinge limited to 30-70 degrees starts at its ``ref`` (0, MuJoCo's qpos0 too), outside its range: the warning
    names it with its range in radians, not the joint that starts inside; with limits disabled nothing is said."""
    body = (
        '<body pos="0 0 1"><joint name="{name}" axis="0 1 0" range="{range}" limited="true"/>'
        '<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/></body>'
    )
    bodies = body.format(name="ankle", range="30 70") + body.format(name="knee", range="-10 70")
    text = f"<mujoco>{{flag}}<worldbody>{bodies}</worldbody></mujoco>"
    with pytest.warns(jaxmor.MujocoDifferenceWarning) as caught:
        jaxmor.load_mjcf(text.format(flag=""))
    said = " ".join(str(w.message) for w in caught)
    assert "qpos0 outside the joint's range for ankle (0 outside [0.5236, 1.222])" in said and "knee (" not in said
    with pytest.warns(jaxmor.MujocoDifferenceWarning) as caught:
        jaxmor.load_mjcf(text.format(flag='<option><flag limit="disable"/></option>'))
    assert "qpos0" not in " ".join(str(w.message) for w in caught)


SPRING_CHAIN = """<mujoco>{head}
  <worldbody>
    <body name="upper" pos="0 0 1"><joint name="shoulder" axis="0 1 0" springdamper="{sd}" armature="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
      <body name="lower" pos="0.3 0 0"><joint name="elbow" axis="0 1 0" ref="40" range="-90 90"/>
        <geom type="capsule" fromto="0 0 0 0.25 0 0" size="0.04"/>
        <body name="tip" pos="0.25 0 0"><joint name="reach" type="slide" axis="1 0 0" springdamper="0.2 1.5"
            stiffness="99" damping="7"/><geom type="box" size=".05 .03 .02"/></body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_springdamper_sets_stiffness_and_damping_as_mujoco_does():
    """``springdamper="tc zeta"`` overrides a hinge's or slide's stiffness and damping with values from its effective
    inertia at qpos0 (here the shoulder's depends on the elbow's ``ref`` of 40 degrees, and its armature counts):
    MuJoCo's
    compiled ``jnt_stiffness`` and ``dof_damping`` to 1e-12 (float64); ``0 0`` leaves the file's values; a ball
    joint's, a negative one, a single zero, and one with springs disabled are refused."""
    mujoco = pytest.importorskip("mujoco")
    for sd in ("0.1 0.7", "0.05 2", "0 0"):
        text = SPRING_CHAIN.format(head="", sd=sd)
        m, model = mujoco.MjModel.from_xml_string(text), jaxmor.load_mjcf(text)
        assert rel_err(model.dof_stiffness, m.jnt_stiffness) < 1e-12, sd
        assert rel_err(model.dof_damping, m.dof_damping) < 1e-12, sd
    assert float(model.dof_stiffness[0]) == 0.0  # "0 0": the shoulder keeps the file's (none)
    for bad in ("-0.1 1", "0 1"):  # MuJoCo refuses both ("when defined, springdamper values must be positive")
        with pytest.raises(ModelError, match=r"springdamper must be two finite numbers > 0 \(or 0 0: none\)"):
            jaxmor.load_mjcf(SPRING_CHAIN.format(head="", sd=bad))
    with pytest.raises(ModelError, match=r"joint 'shoulder': springdamper with springs or dampers disabled"):
        jaxmor.load_mjcf(SPRING_CHAIN.format(head='<option><flag spring="disable"/></option>', sd="0.1 1"))


def test_dm_controls_dog_springdampers_are_mujocos():
    """The dm_control suite's dog (its wheel's ``dog.xml``): a default class gives its 73 hinges
    ``springdamper="0.001 50"``, each turned into a stiffness and a damping from the joint's effective inertia at
    qpos0; every hinge's ``jnt_stiffness`` and ``dof_damping`` equal MuJoCo's compiled ones to 1e-12 of the largest
    (float64: the same formula on inertias equal to 1e-13). Loading the dog takes about 11 s on 2 cores; its M and
    bias against MuJoCo's are in the slow tier (``tests/test_mjcf_mujoco.py``)."""
    mujoco = pytest.importorskip("mujoco")
    from reference import public_models

    model, m = public_models("dog")
    hinges = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    assert len(hinges) == 73 and np.all(m.jnt_stiffness[hinges] > 0)
    index = [jaxmor.joint_index(model, m.joint(j).name) for j in hinges]
    assert rel_err(np.asarray(model.dof_stiffness)[index], m.jnt_stiffness[hinges]) < 1e-12
    assert rel_err(np.asarray(model.dof_damping)[index], m.dof_damping[m.jnt_dofadr[hinges]]) < 1e-12
