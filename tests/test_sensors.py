"""Sensors (``jaxmor.read_sensors``) against MuJoCo's ``sensordata`` after ``mj_forward``, in float64.

The reference is MuJoCo itself, at the same random states (positions, velocities, controls, time): on a small
inline scene whose sites, bodies and references exercise every kind jaxmor reads (a free base, a hinge whose
anchor is off the body origin and whose ``ref`` is not 0, a body with two joints, a welded body, sites in a
``<frame>`` and with a default class, a site on the world, reference frames of each type, cutoffs), and on the
Go2 with sensors on its IMU and feet. Tolerance 1e-9 (absolute and relative): the two engines compute the same
quantities along different paths (rotation matrices and world-aligned Jacobians here, quaternions and spatial
velocities in MuJoCo), which differ by round-off (~1e-15 here); any convention error (a frame, a sign, a point)
is of the order of the readings (0.01-10).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from models import QUADRUPED_URDF, load_shipped

import jaxmor
from jaxmor import ModelError

GO2 = Path(__file__).resolve().parent / "data" / "unitree_go2"
TOL = 1e-9
#: Compiled once per model (eager, every small operation would be dispatched alone).
read = jax.jit(jaxmor.read_sensors)

SCENE = """
<mujoco model="sensed">
  <compiler angle="radian"/>
  <option magnetic="0.1 -0.4 0.3"/>
  <default>
    <site size="0.01"/>
    <default class="tip"><site pos="0 0 -0.2" euler="0.1 0.2 0.3"/></default>
  </default>
  <worldbody>
    <site name="world_site" pos="0.3 -0.2 0.1" euler="0.2 0 0.5"/>
    <body name="trunk" pos="0 0 1" euler="0.1 0.2 0.3">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05" mass="5"/>
      <site name="imu" pos="0.05 0.02 0.03" quat="0.9 0.1 0.2 0.3"/>
      <body name="arm" pos="0.2 0 0" euler="0 0.3 0">
        <joint name="shoulder" axis="0 1 0" pos="0.02 0 0.01" ref="0.2" actuatorfrcrange="-1.5 1.5"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <frame pos="0.3 0 0" euler="0 0 0.4"><site name="hand" class="tip"/></frame>
        <body name="wrist" pos="0.3 0 0" quat="0.8 0 0.6 0">
          <joint name="w1" axis="1 0 0" damping="0.3" stiffness="2" springref="0.1" armature="0.01"/>
          <joint name="w2" type="slide" axis="0 0.6 0.8"/>
          <geom type="sphere" size="0.04" pos="0.05 0 0"/>
          <site name="finger" type="capsule" size="0.01" fromto="0.06 0.01 0 0.1 0.1 0.02"/>
          <body name="cap" pos="0.1 0 0">
            <geom type="box" size="0.02 0.02 0.02" pos="0.01 0 0"/>
            <site name="cap_site" pos="0.01 0 0.02" euler="0.3 0.1 0"/>
          </body>
        </body>
      </body>
      <body name="head" pos="0 0 0.08" euler="0.2 0 0">
        <joint name="neck" type="ball" pos="0 0.01 0" damping="0.2"/>
        <geom type="sphere" size="0.04" pos="0.01 0 0.05" contype="0" conaffinity="0"/>
        <site name="eye" pos="0.03 0 0.06"/>
      </body>
      <body name="leg" pos="-0.2 0 -0.05">
        <joint name="hip" axis="1 0 0" range="-1 1"/>
        <inertial pos="0 0.01 -0.1" mass="1" diaginertia="0.01 0.01 0.002"/>
        <site name="foot" pos="0 0 -0.2"/>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="reins"><joint joint="shoulder" coef="0.5"/><joint joint="w2" coef="-1"/></fixed>
  </tendon>
  <actuator>
    <motor name="m_shoulder" joint="shoulder" gear="2"/>
    <position name="p_hip" joint="hip" kp="30" gear="1.5" forcerange="-3 3"/>
    <velocity name="v_w1" joint="w1" kv="2"/>
    <position name="p_reins" tendon="reins" kp="4" kv="0.5" gear="1.3"/>
  </actuator>
  <sensor>
    <jointpos joint="shoulder"/>
    <jointpos name="w2_pos" joint="w2"/>
    <jointvel name="shoulder_vel" joint="shoulder"/>
    <jointvel name="w2_vel" joint="w2" cutoff="0.5" noise="0.01"/>
    <jointactuatorfrc name="hip_frc" joint="hip"/>
    <jointactuatorfrc name="shoulder_frc" joint="shoulder"/>
    <actuatorpos name="a_pos_m" actuator="m_shoulder"/>
    <actuatorpos name="a_pos_p" actuator="p_hip"/>
    <actuatorvel name="a_vel_m" actuator="m_shoulder"/>
    <actuatorvel name="a_vel_v" actuator="v_w1"/>
    <actuatorfrc name="a_frc_m" actuator="m_shoulder"/>
    <actuatorfrc name="a_frc_p" actuator="p_hip"/>
    <actuatorfrc name="a_frc_v" actuator="v_w1" cutoff="0.7"/>
    <framepos name="pos_imu" objtype="site" objname="imu"/>
    <framepos name="pos_world_site" objtype="site" objname="world_site"/>
    <framepos name="pos_wrist" objtype="xbody" objname="wrist"/>
    <framepos name="pos_leg_com" objtype="body" objname="leg"/>
    <framepos name="pos_hand_in_imu" objtype="site" objname="hand" reftype="site" refname="imu"/>
    <framepos name="pos_cap_in_arm" objtype="site" objname="cap_site" reftype="xbody" refname="arm"/>
    <framepos name="pos_trunk_in_world_site" objtype="xbody" objname="trunk" reftype="site" refname="world_site"/>
    <framepos name="pos_clamped" objtype="site" objname="foot" cutoff="0.9"/>
    <framequat name="quat_hand" objtype="site" objname="hand"/>
    <framequat name="quat_trunk" objtype="xbody" objname="trunk"/>
    <framequat name="quat_finger_in_trunk" objtype="site" objname="finger" reftype="xbody" refname="trunk"/>
    <framexaxis name="x_hand" objtype="site" objname="hand"/>
    <frameyaxis name="y_cap" objtype="site" objname="cap_site" reftype="site" refname="imu"/>
    <framezaxis name="z_wrist" objtype="xbody" objname="wrist"/>
    <framelinvel name="v_hand" objtype="site" objname="hand"/>
    <framelinvel name="v_leg_com" objtype="body" objname="leg"/>
    <framelinvel name="v_finger_in_imu" objtype="site" objname="finger" reftype="site" refname="imu"/>
    <framelinvel name="v_cap_in_world_site" objtype="site" objname="cap_site" reftype="site" refname="world_site"/>
    <frameangvel name="w_wrist" objtype="xbody" objname="wrist"/>
    <frameangvel name="w_leg" objtype="body" objname="leg"/>
    <frameangvel name="w_cap_in_arm" objtype="site" objname="cap_site" reftype="xbody" refname="arm"/>
    <subtreecom name="com_trunk" body="trunk"/>
    <subtreecom name="com_arm" body="arm"/>
    <subtreecom name="com_world" body="world"/>
    <subtreelinvel name="vcom_trunk" body="trunk"/>
    <subtreelinvel name="vcom_wrist" body="wrist"/>
    <subtreeangmom name="l_trunk" body="trunk"/>
    <subtreeangmom name="l_arm" body="arm"/>
    <gyro name="gyro_imu" site="imu"/>
    <gyro name="gyro_hand" site="hand"/>
    <velocimeter name="vel_hand" site="hand"/>
    <velocimeter name="vel_cap" site="cap_site"/>
    <magnetometer name="mag_imu" site="imu"/>
    <accelerometer name="acc_imu" site="imu"/>
    <accelerometer name="acc_finger" site="finger"/>
    <accelerometer name="acc_cap" site="cap_site" cutoff="20"/>
    <clock name="clock"/>
    <touch name="touch_imu" site="imu"/>
    <force name="f_hand" site="hand"/>
    <torque name="t_hand" site="hand"/>
    <force name="f_foot" site="foot"/>
    <force name="f_finger" site="finger"/>
    <torque name="t_eye" site="eye"/>
    <ballquat name="neck_quat" joint="neck"/>
    <ballangvel name="neck_vel" joint="neck"/>
    <accelerometer name="acc_eye" site="eye"/>
    <tendonpos name="reins_pos" tendon="reins"/>
    <tendonvel name="reins_vel" tendon="reins"/>
    <tendonactuatorfrc name="reins_frc" tendon="reins"/>
    <actuatorpos name="p_reins_pos" actuator="p_reins"/>
  </sensor>
</mujoco>
"""

SMALL = """
<mujoco model="small">
  <worldbody>
    <site name="world_site" pos="0.3 -0.2 0.1" euler="20 0 50"/>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05" mass="5"/>
      <site name="imu" pos="0.05 0.02 0.03" euler="10 20 30"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="shoulder" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <site name="hand" pos="0.3 0 0"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <framepos name="hand_in_imu" objtype="site" objname="hand" reftype="site" refname="imu"/>
    <framepos name="at_world_site" objtype="site" objname="world_site"/>
    <gyro name="gyro" site="imu"/>
    <jointvel name="shoulder_vel" joint="shoulder" cutoff="1"/>
    <subtreecom name="com_world" body="world"/>
  </sensor>
</mujoco>
"""

GO2_SENSORS = """
  <sensor>
    <framequat name="imu_quat" objtype="site" objname="imu"/>
    <gyro name="imu_gyro" site="imu"/>
    <velocimeter name="imu_vel" site="imu"/>
    <magnetometer name="imu_mag" site="imu"/>
    <framepos name="imu_pos" objtype="site" objname="imu"/>
    <framelinvel name="imu_linvel" objtype="site" objname="imu"/>
    <frameangvel name="imu_angvel" objtype="site" objname="imu"/>
    <framezaxis name="up" objtype="site" objname="imu"/>
    <subtreecom name="com" body="base"/>
    <subtreelinvel name="com_vel" body="base"/>
    <subtreeangmom name="angmom" body="base"/>
    <framepos name="FL_calf_in_base" objtype="xbody" objname="FL_calf" reftype="xbody" refname="base"/>
    <framelinvel name="RR_calf_vel_in_imu" objtype="xbody" objname="RR_calf" reftype="site" refname="imu"/>
    <jointpos name="FL_knee_pos" joint="FL_calf_joint"/>
    <jointvel name="RR_hip_vel" joint="RR_hip_joint"/>
    <actuatorfrc name="FR_thigh_frc" actuator="FR_thigh"/>
    <actuatorpos name="RL_calf_pos" actuator="RL_calf"/>
    <jointactuatorfrc name="FL_hip_frc" joint="FL_hip_joint"/>
  </sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def x64():
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


def _go2_xml() -> str:
    text = (GO2 / "go2.xml").read_text()
    return text[: text.rindex("</mujoco>")] + GO2_SENSORS


@pytest.fixture(scope="module")
def scene(x64):
    return jaxmor.load_mjcf(SCENE), mujoco.MjModel.from_xml_string(SCENE)


@pytest.fixture(scope="module")
def small(x64):
    model = jaxmor.load_mjcf(SMALL)
    q = jnp.asarray([0.1, -0.2, 0.9, 0.9, 0.1, -0.3, 0.2, 0.4])
    states = [
        jaxmor.init_state(model, q.at[3:7].set(q[3:7] / jnp.linalg.norm(q[3:7])) + 0.1 * k, jnp.arange(7.0) / 3 - k)
        for k in range(3)
    ]
    return model, [s.replace(q=s.q.at[3:7].set(s.q[3:7] / jnp.linalg.norm(s.q[3:7]))) for s in states]


@pytest.fixture(scope="module")
def go2(x64):
    text = _go2_xml()
    spec = mujoco.MjSpec.from_string(text)
    spec.meshdir = str(GO2 / "assets")
    return jaxmor.load_mjcf(text, assets_dir=GO2), spec.compile()


def _random_state(model: jaxmor.Model, mj_model, seed: int):
    """A random state in both engines: MuJoCo's data after ``mj_forward`` and jaxmor's State, the free joints'
    angular velocities turned from MuJoCo's body frame into jaxmor's world frame."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(mj_model)
    data.qpos[:] = mj_model.qpos0 + rng.uniform(-0.8, 0.8, mj_model.nq)
    data.qvel[:] = rng.uniform(-2.0, 2.0, mj_model.nv)
    data.ctrl[:] = rng.uniform(-2.0, 2.0, mj_model.nu)
    data.time = rng.uniform(0.0, 10.0)
    q, u = np.zeros(model.nq), np.zeros(model.nv)
    for j in range(mj_model.njnt):
        name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_JOINT, j) or f"joint{j}"
        qa, va = mj_model.jnt_qposadr[j], mj_model.jnt_dofadr[j]
        if mj_model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            data.qpos[qa + 3 : qa + 7] /= np.linalg.norm(data.qpos[qa + 3 : qa + 7])
            b = model.body_joint_name.index(name)
            qs, vs = model.body_q_start[b], model.body_v_start[b]
            q[qs : qs + 7] = data.qpos[qa : qa + 7]
            rotation = np.zeros(9)
            mujoco.mju_quat2Mat(rotation, data.qpos[qa + 3 : qa + 7])
            u[vs : vs + 3] = data.qvel[va : va + 3]
            u[vs + 3 : vs + 6] = rotation.reshape(3, 3) @ data.qvel[va + 3 : va + 6]
        elif mj_model.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:  # body-frame velocities in both engines
            data.qpos[qa : qa + 4] /= np.linalg.norm(data.qpos[qa : qa + 4])
            b = model.body_joint_name.index(name)
            qs, vs = model.body_q_start[b], model.body_v_start[b]
            q[qs : qs + 4], u[vs : vs + 3] = data.qpos[qa : qa + 4], data.qvel[va : va + 3]
        else:
            q[jaxmor.joint_q_index(model, name)] = data.qpos[qa]
            u[jaxmor.joint_index(model, name)] = data.qvel[va]
    mujoco.mj_forward(mj_model, data)
    ctrl = np.zeros(model.nu)
    for a in range(mj_model.nu):
        ctrl[model.affine.names.index(mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_ACTUATOR, a))] = data.ctrl[a]
    state = jaxmor.set_ctrl(model, jaxmor.init_state(model, q, u), ctrl).replace(time=jnp.asarray(data.time))
    return data, state


def _expected(mj_model, data) -> dict[str, np.ndarray]:
    out = {}
    for i in range(mj_model.nsensor):
        name = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_SENSOR, i) or f"sensor{i}"
        adr, dim = mj_model.sensor_adr[i], mj_model.sensor_dim[i]
        out[name] = np.array(data.sensordata[adr : adr + dim])
    return out


def _check(model, mj_model, seeds, skipped=()):
    kinds_seen = set()
    for seed in seeds:
        data, state = _random_state(model, mj_model, seed)
        got = read(model, state)
        want = {k: v for k, v in _expected(mj_model, data).items() if k not in skipped}
        compared = [(n, k) for n, k in zip(model.sensors.names, model.sensors.kinds, strict=True) if n not in skipped]
        assert [n for n, _ in compared] == list(want) and set(got) == set(want) | set(skipped)
        for name, kind in compared:
            value = np.asarray(got[name])
            assert value.dtype == np.float64 and value.shape == want[name].shape, name
            if kind == "framequat":  # one rotation, two quaternions: jaxmor's has w >= 0
                assert value[0] >= 0
                value = value if np.dot(value, want[name]) >= 0 else -value
            np.testing.assert_allclose(value, want[name], rtol=TOL, atol=TOL, err_msg=f"{name} ({kind}), seed {seed}")
            kinds_seen.add(kind)
    return kinds_seen


def test_every_kind_equals_mujoco_on_the_scene(scene):
    model, mj_model = scene
    seen = _check(model, mj_model, seeds=range(4))
    assert seen == set(jaxmor.io.mjcf_sensors.SUPPORTED)
    # The cutoffs bound their readings (and were reached at some of the random states).
    state = _random_state(model, mj_model, 0)[1].replace(u=jnp.full(model.nv, 5.0))
    assert abs(float(read(model, state)["w2_vel"][0])) == pytest.approx(0.5)


def test_the_sensor_table(scene):
    model, mj_model = scene
    s = model.sensors
    assert s.names[0] == "sensor0"  # MuJoCo's id names an unnamed sensor
    assert s.dims == tuple(int(d) for d in mj_model.sensor_dim)
    np.testing.assert_array_equal(np.asarray(s.noise), mj_model.sensor_noise)
    np.testing.assert_array_equal(np.asarray(s.cutoff), mj_model.sensor_cutoff)
    np.testing.assert_array_equal(np.asarray(s.magnetic), mj_model.opt.magnetic)
    names = [mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_SITE, i) for i in range(mj_model.nsite)]
    assert model.sites.names == tuple(names)


def test_go2_sensors_equal_mujoco(go2):
    model, mj_model = go2
    _check(model, mj_model, seeds=range(3))


TOUCH = """<mujoco><option timestep="0.002"/>
<worldbody><geom name="floor" type="plane" size="5 5 0.1"/>
<body name="box" pos="0 0 0.3"><freejoint/><geom type="box" size="0.1 0.08 0.05" mass="2"/>
  <site name="bottom" type="box" size="0.11 0.09 0.02" pos="0 0 -0.05"/>
  <site name="top" type="box" size="0.11 0.09 0.02" pos="0 0 0.05"/>
  <site name="left_half" type="box" size="0.05 0.09 0.03" pos="-0.06 0 -0.05"/></body>
<body name="ball" pos="0.5 0 0.3"><freejoint/><geom type="sphere" size="0.05" mass="1"/>
  <site name="ball_zone" type="sphere" size="0.06"/>
  <site name="ball_cap" type="capsule" size="0.01 0.02" pos="0 0 -0.03"/>
  <site name="ball_up" type="ellipsoid" size="0.01 0.01 0.01" pos="0 0 0.05"/></body>
</worldbody>
<sensor><touch name="bottom" site="bottom"/><touch name="top" site="top"/><touch name="left_half" site="left_half"/>
<touch name="ball_zone" site="ball_zone"/><touch name="ball_cap" site="ball_cap"/><touch name="ball_up" site="ball_up"/>
<force name="box_force" site="top"/><torque name="box_torque" site="top"/>
</sensor></mujoco>"""


def test_touch_sensors_read_the_weight_at_rest_as_mujoco(x64):
    """A box (2 kg) and a ball (1 kg) dropped on the floor, 1.5 s in both engines: at rest each contact zone reads
    the normal forces MuJoCo reads: the box's bottom zone its weight, the zone over two of its four corners half
    of it, the top zone and a zone whose rays miss (above the ball, the ray pointing down) nothing, the ball's
    sphere and capsule zones its weight. A force and a torque sensor on the box (a free body: nothing comes through
    its joint) read zero: its weight less the contact forces. MuJoCo's contacts are soft but at rest carry the
    weight too (measured difference 5e-10 relative); tolerance 1e-6 relative to the weight."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MujocoDifferenceWarning: soft contacts
        model = jaxmor.load_mjcf(TOUCH)
    assert model.sites.shape == ("box", "box", "box", "sphere", "capsule", "ellipsoid")
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=750))(jaxmor.init_state(model))
    readings = read(model, final)
    wrench = np.concatenate([readings.pop("box_force"), readings.pop("box_torque")])
    ours = {k: float(v[0]) for k, v in readings.items()}
    mj_model = mujoco.MjModel.from_xml_string(TOUCH)
    data = mujoco.MjData(mj_model)
    for _ in range(750):
        mujoco.mj_step(mj_model, data)
    mujoco.mj_forward(mj_model, data)
    touches = [i for i in range(mj_model.nsensor) if mj_model.sensor_type[i] == mujoco.mjtSensor.mjSENS_TOUCH]
    theirs = {mj_model.sensor(i).name: float(data.sensordata[mj_model.sensor_adr[i]]) for i in touches}
    weight = 2.0 * 9.81
    expected = {"bottom": weight, "top": 0.0, "left_half": weight / 2, "ball_zone": weight / 2, "ball_cap": weight / 2}
    for name, value in expected.items():
        assert theirs[name] == pytest.approx(value, abs=1e-6 * weight), name
        assert ours[name] == pytest.approx(theirs[name], abs=1e-6 * weight), name
    assert ours["ball_up"] == theirs["ball_up"] == 0.0
    np.testing.assert_allclose(wrench, data.sensordata[-6:], rtol=0, atol=1e-6 * weight)
    assert np.abs(wrench).max() < 1e-6 * weight


# --------------------------------------------------------------------------------------------------
# Sensors added to a loaded model (jaxmor.with_sensors): MJCF's vocabulary on any model, a URDF's links as sites.


def test_sensors_added_to_the_loaded_go2_equal_mujoco(go2):
    """The Go2 loaded without its ``<sensor>`` section, then given the same section by ``jaxmor.with_sensors``: the
    same table as the file's own, and readings equal to MuJoCo's ``sensordata`` on the file with the sensors
    (the same tolerance, ``TOL``)."""
    file_model, mj_model = go2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MujocoDifferenceWarning, as in the fixture
        bare = jaxmor.load_mjcf((GO2 / "go2.xml").read_text(), assets_dir=GO2)
    assert bare.sensors.names == ()
    section = GO2_SENSORS[: GO2_SENSORS.index("</sensor>") + len("</sensor>")]
    model = jaxmor.with_sensors(bare, section)
    for field in ("names", "kinds", "dims", "obj_type", "obj_id", "ref_type", "ref_id"):
        assert getattr(model.sensors, field) == getattr(file_model.sensors, field), field
    _check(model, mj_model, seeds=range(2))


def test_a_urdf_link_is_a_site_and_its_readings_are_the_kinematics(x64):
    """The shipped quadruped (URDF) given a gyro, a velocimeter and a frame sensor on its ``LF_FOOT`` link (welded
    to the shank by a fixed joint: a named frame, not a body): the link becomes a site at its frame, and the
    readings are its angular and linear velocity in its own frame, checked against central differences of its pose
    along the state's motion (``integrate_positions`` over +-1e-6 s: truncation ~1e-12, round-off ~1e-10; tolerance
    1e-7)."""
    from jaxmor.sim.integrator import integrate_positions

    model = jaxmor.with_sensors(
        load_shipped(QUADRUPED_URDF),
        """<sensor>
          <gyro name="foot_gyro" site="LF_FOOT"/>
          <velocimeter name="foot_vel" site="LF_FOOT" cutoff="100"/>
          <framepos name="foot_in_base" objtype="xbody" objname="LF_FOOT" reftype="xbody" refname="base"/>
          <jointpos name="knee" joint="LF_KFE"/>
        </sensor>""",
    )
    assert model.sites.names[-1] == "LF_FOOT"
    assert model.sensors.names == ("foot_gyro", "foot_vel", "foot_in_base", "knee")
    rng = np.random.default_rng(3)
    q = jaxmor.neutral_q(model) + jnp.asarray(np.r_[np.zeros(7), 0.3 * rng.normal(size=model.nq - 7)])
    u = jnp.asarray(rng.normal(size=model.nv))
    got = read(model, jaxmor.init_state(model, q=q, u=u))
    foot, base = model.link_names.index("LF_FOOT"), model.link_names.index("base")
    links = [jaxmor.forward_kinematics(model, integrate_positions(model, q, u, dt)) for dt in (-1e-6, 0.0, 1e-6)]
    rotation = np.asarray(links[1].rotation[foot])
    d_rotation = (np.asarray(links[2].rotation[foot]) - np.asarray(links[0].rotation[foot])) / 2e-6
    spin = rotation.T @ d_rotation  # the angular velocity's cross-product matrix, in the foot's frame
    d_position = (np.asarray(links[2].position[foot]) - np.asarray(links[0].position[foot])) / 2e-6
    np.testing.assert_allclose(got["foot_gyro"], [spin[2, 1], spin[0, 2], spin[1, 0]], atol=1e-7)
    np.testing.assert_allclose(got["foot_vel"], rotation.T @ d_position, atol=1e-7)
    offset = np.asarray(links[1].position[foot] - links[1].position[base])
    np.testing.assert_allclose(got["foot_in_base"], np.asarray(links[1].rotation[base]).T @ offset, atol=1e-12)
    assert float(got["knee"][0]) == float(q[jaxmor.joint_q_index(model, "LF_KFE")])


@pytest.mark.parametrize(
    "text, message",
    [
        ("<sensors><gyro site='base'/></sensors>", "the root element is <sensors>, not <sensor>"),
        ("<sensor>\n<gyro site='nowhere'/></sensor>", "unknown site 'nowhere'"),
        ("<sensor>\n<framepos objtype='body' objname='base'/></sensor>", "keeps no inertial frames"),
        ("<sensor>\n<jointpos name='a' joint='LF_KFE'/><jointvel name='a' joint='LF_KFE'/></sensor>", "duplicate"),
        ("<sensor>\n<gyro site='LF_FOOT' cutoff='-1'/></sensor>", "cutoff"),
    ],
)
def test_added_sensors_are_checked_as_in_a_file(x64, text, message):
    model = load_shipped(QUADRUPED_URDF)
    with pytest.raises(ModelError, match=message) as info:
        jaxmor.with_sensors(model, text)
    assert info.value.line == (1 if "sensors>" in text else 2)


def test_go2_mjx_file_reads_all_its_sensors(x64):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # condim 6 feet
        model = jaxmor.load_mjcf(GO2 / "go2_mjx.xml")
    mj_model = mujoco.MjModel.from_xml_path(str(GO2 / "go2_mjx.xml"))
    assert len(model.sensors.names) == mj_model.nsensor
    # Its joints' friction loss is a soft constraint in MuJoCo, a hard one in jaxmor: the accelerations differ.
    _check(model, mj_model, seeds=[7], skipped={"accelerometer"})


def test_an_accelerometer_at_rest_on_the_ground_reads_gravity_up(x64):
    xml = (
        "<mujoco><worldbody><geom type='plane' size='5 5 .1'/><body pos='0 0 0.1'><freejoint/>"
        "<geom type='box' size='0.1 0.1 0.1' mass='2'/><site name='s' euler='30 0 0'/></body></worldbody>"
        "<sensor><accelerometer name='acc' site='s'/></sensor></mujoco>"
    )
    model = jaxmor.load_mjcf(xml)
    state = jaxmor.rollout(model, jaxmor.init_state(model), n_steps=3)[0]
    up = 9.81 * np.array([0.0, np.sin(np.radians(30)), np.cos(np.radians(30))])  # world z in the tilted site's frame
    np.testing.assert_allclose(read(model, state)["acc"], up, rtol=1e-5, atol=1e-5)
    # Through the step's stages it still batches and differentiates.
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    np.testing.assert_allclose(
        jax.jit(jax.vmap(lambda s: jaxmor.read_sensors(model, s)))(batch)["acc"][1], up, atol=1e-5
    )
    grad = jax.jit(jax.grad(lambda q: jaxmor.read_sensors(model, state.replace(q=q))["acc"][2]))(state.q)
    assert np.all(np.isfinite(np.asarray(grad)))


def test_batched_jitted_and_differentiable(small):
    model, states = small
    batch = jax.tree.map(lambda *x: jnp.stack(x), *states)
    batched = jax.jit(jax.vmap(lambda s: jaxmor.read_sensors(model, s)))(batch)
    for k, state in enumerate(states):
        one = read(model, state)
        for name in one:
            np.testing.assert_allclose(batched[name][k], one[name], rtol=1e-12, atol=1e-12)

    # d(framepos of the hand in the IMU's frame)/dq against central differences.
    @jax.jit
    def hand(q):
        return jaxmor.read_sensors(model, states[0].replace(q=q))["hand_in_imu"]

    q0 = states[0].q
    jac = jax.jit(jax.jacfwd(hand))(q0)
    eps = 1e-6
    for i in range(model.nq):
        dq = jnp.zeros(model.nq).at[i].set(eps)
        np.testing.assert_allclose(jac[:, i], (hand(q0 + dq) - hand(q0 - dq)) / (2 * eps), atol=1e-8)
    # grad works on model leaves too: d(sum of the hand's position in the IMU frame)/d(the hand's offset on its
    # link) is (the IMU's rotation transposed times the arm's rotation) transposed applied to (1, 1, 1).
    g = jax.jit(jax.grad(lambda m: jnp.sum(jaxmor.read_sensors(m, states[0])["hand_in_imu"])))(model)
    frames = jaxmor.forward_kinematics(model, q0)
    imu, hand_site = model.sites.names.index("imu"), model.sites.names.index("hand")
    r_imu = frames.rotation[model.sites.link[imu]] @ model.sites.rotation[imu]
    r_arm = frames.rotation[model.sites.link[hand_site]]
    np.testing.assert_allclose(g.sites.translation[hand_site], (r_imu.T @ r_arm).T @ jnp.ones(3), atol=1e-12)


def test_a_model_without_sensors_reads_none(x64):
    model = jaxmor.load_mjcf("<mujoco><worldbody><body><joint/><geom size='0.1'/></body></worldbody></mujoco>")
    assert jaxmor.read_sensors(model, jaxmor.init_state(model)) == {}


def _load(sensor: str, extra: str = "") -> jaxmor.Model:
    xml = (
        "<mujoco><worldbody><site name='s'/><body name='b'><joint name='j'/><geom size='0.1'/><site name='on_b'/>"
        f"<body name='w'><geom size='0.1'/><site name='on_w'/></body></body></worldbody>{extra}<sensor>\n{sensor}\n"
        "</sensor></mujoco>"
    )
    return jaxmor.load_mjcf(xml)


@pytest.mark.parametrize(
    ("sensor", "message"),
    [
        ("<bogus joint='j'/>", "<string>:2: .*unknown sensor <bogus>"),
        ("<jointpos joint='nope'/>", "<string>:2: .*unknown joint 'nope'"),
        ("<jointpos/>", "<string>:2: .*needs joint="),
        ("<gyro site='nope'/>", "unknown site 'nope'"),
        ("<framepos objtype='xbody' objname='nope'/>", "unknown body 'nope'"),
        ("<framepos objtype='site'/>", "needs objtype= and objname="),
        ("<framepos objtype='thing' objname='b'/>", "objtype must be"),
        ("<framepos objtype='site' objname='s' reftype='site'/>", "reftype= without refname="),
        ("<actuatorpos actuator='nope'/>", "unknown actuator 'nope'"),
        ("<subtreecom body='nope'/>", "unknown body 'nope'"),
        ("<jointpos joint='j' frobnicate='1'/>", "frobnicate"),
        ("<jointpos joint='j' delay='0.1'/>", "delays are not supported"),
        ("<framequat objtype='site' objname='s' cutoff='1'/>", "a cutoff cannot apply to a framequat"),
        ("<jointpos joint='j' noise='-1'/>", "must not be negative"),
        ("<jointpos name='a' joint='j'/><jointvel name='a' joint='j'/>", "duplicate sensor name 'a'"),
        ("<jointpos joint='j' noise='loud'/>", "noise"),
        ("<jointpos joint='j' cutoff='1 2'/>", "cutoff of <jointpos> needs 1 numbers"),
        ("<jointpos joint='j'><jointvel joint='j'/></jointpos>", "takes no child elements"),
    ],
)
def test_errors_name_the_file_and_line(x64, sensor, message):
    with pytest.raises(ModelError, match=message):
        _load(sensor)


def test_a_force_sensor_on_a_welded_body_is_left_out(x64):
    """A force or torque sensor reads the wrench through its body's joint; a body welded to its parent has none in
    jaxmor (it is merged into its parent), so such a sensor is listed in the warning and left out, as a subtree
    sensor of a welded body is."""
    with pytest.warns(UserWarning, match="'f' \\(force: the site's body 'w' is welded to its parent\\)"):
        model = _load("<force name='f' site='on_w'/><force name='g' site='on_b'/>").replace()
    assert model.sensors.names == ("g",)


def test_unsupported_sensors_are_listed_in_one_warning(x64):
    sensors = (
        "<rangefinder name='acc' site='s'/><jointlimitpos joint='j'/>"
        "<framequat name='inertial' objtype='body' objname='b'/>"
        "<subtreecom name='welded' body='w'/><jointpos name='kept' joint='j'/>"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = _load(sensors)
    messages = [str(w.message) for w in caught if "sensor(s) are not read" in str(w.message)]
    assert len(messages) == 1
    for part in ("4 sensor(s)", "'acc' (rangefinder", "'sensor1' (jointlimitpos", "'inertial'", "'welded'", "welded"):
        assert part in messages[0]
    assert model.sensors.names == ("kept",)


def test_combine_keeps_both_models_sensors(small):
    model, states = small
    with pytest.warns(UserWarning, match="'com_world'"):
        both = jaxmor.combine(model, model, prefix="b/", position=(1.0, 2.0, 0.0))
    state = states[1]
    joined = jaxmor.init_state(both, jnp.concatenate([state.q, state.q]), jnp.concatenate([state.u, state.u]))
    one, two = read(model, state), read(both, joined)
    assert len(two) == 2 * len(one) - 1  # the second world subtree is left out
    for name in ("hand_in_imu", "gyro", "shoulder_vel", "at_world_site"):
        np.testing.assert_allclose(two[name], one[name], rtol=1e-12, atol=1e-12, err_msg=name)
        if name != "at_world_site":
            np.testing.assert_allclose(two["b/" + name], one[name], rtol=1e-12, atol=1e-12, err_msg=name)
    # The second copy's world site moved by the pose it was placed at; its free base, at the same q, is where the
    # first is, so the world subtree (both copies) has the first's centre of mass.
    shift = np.array([1.0, 2.0, 0.0])
    np.testing.assert_allclose(two["b/at_world_site"], np.asarray(one["at_world_site"]) + shift, atol=1e-12)
    np.testing.assert_allclose(two["com_world"], one["com_world"], atol=1e-12)


def test_a_checkpoint_keeps_the_sites_and_sensors(small, tmp_path):
    model, states = small
    jaxmor.save_checkpoint(tmp_path / "ckpt.npz", model, states[0])
    restored, state = jaxmor.load_checkpoint(tmp_path / "ckpt.npz")
    assert restored.sensors.names == model.sensors.names and restored.sites.names == model.sites.names
    for name, value in read(model, states[0]).items():
        np.testing.assert_array_equal(read(restored, state)[name], value)
