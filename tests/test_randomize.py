"""Domain randomization (``jaxmor.randomize``), contact friction that means what the user set, the battery.

Sources of the expected values (never the code under test):

* the moments of the distributions (uniform ``(a + b)/2`` and ``(b - a)^2 / 12``, normal, log-uniform
  ``E[x] = (b - a) / ln(b / a)``), within 5 standard errors of ``n`` seeded draws;
* each world stepped alone with its own model (``rollout`` per world) for ``rollout_batch``;
* the incline's closed form ``a = g (sin theta - mu cos theta)``;
* the battery's definition: Ohm's law ``V = V_oc - R_int I`` with the load's power ``V I = P``,
  ``P = sum (R i + w / Kv) i`` and ``i = tau_m / Kt`` recomputed in NumPy from the step's reported motor torques
  and speeds (so ``V (V_oc - V) / R_int = P``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF, quadruped_standing_q

import jaxmor
from jaxmor import ArgumentError

N = 4096  # draws for the moments
SE = 5.0  # standard errors allowed


@pytest.fixture(scope="module")
def quadruped():
    return jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF))


def _moments_ok(x: np.ndarray, mean: float, std: float) -> None:
    n = x.size
    assert abs(x.mean() - mean) <= SE * std / math.sqrt(n), (x.mean(), mean)
    # the sample variance's standard error is about var sqrt(2 / n) (normal) and below it for a uniform
    assert abs(x.var() - std**2) <= SE * std**2 * math.sqrt(2.0 / n), (x.var(), std**2)


def test_the_draws_have_the_requested_distributions(quadruped):
    r0 = float(quadruped.actuators.motor.resistance[0])
    spec = {
        "geom.friction": jaxmor.uniform(0.4, 1.2),
        "motor.resistance": jaxmor.scale(0.9, 1.1),
        "gravity": jaxmor.normal([0.0, 0.0, -9.81], [0.1, 0.2, 0.05]),
        "joint.damping": jaxmor.log_uniform(0.01, 1.0),
    }
    models, axes = jaxmor.randomize(quadruped, jax.random.key(7), N, spec)
    friction = np.asarray(models.geom_friction)
    _moments_ok(friction.reshape(-1), 0.8, 0.8 / math.sqrt(12))
    _moments_ok(np.asarray(models.actuators.motor.resistance)[:, 0], r0, r0 * 0.2 / math.sqrt(12))
    gravity = np.asarray(models.opt.gravity)
    for k, (mean, std) in enumerate(zip([0.0, 0.0, -9.81], [0.1, 0.2, 0.05], strict=True)):
        _moments_ok(gravity[:, k], mean, std)
    damping = np.asarray(models.dof_damping)[:, 6:]
    log_mean = (1.0 - 0.01) / math.log(100.0)
    log_var = (1.0**2 - 0.01**2) / (2 * math.log(100.0)) - log_mean**2
    _moments_ok(damping.reshape(-1), log_mean, math.sqrt(log_var))
    assert np.all(np.asarray(models.dof_damping)[:, :6] == 0.0)  # the floating base has no joint damping
    # the same key gives the same worlds
    again, _ = jaxmor.randomize(quadruped, jax.random.key(7), N, spec)
    np.testing.assert_array_equal(again.geom_friction, models.geom_friction)


def test_only_the_randomized_leaves_are_batched(quadruped):
    models, axes = jaxmor.randomize(
        quadruped,
        jax.random.key(0),
        8,
        {"motor.resistance": jaxmor.scale(0.9, 1.1), "timestep": jaxmor.uniform(1e-3, 2e-3)},
    )
    batched = {
        jax.tree_util.keystr(p)
        for p, a in jax.tree_util.tree_flatten_with_path(axes, is_leaf=lambda x: x is None)[0]
        if a == 0
    }
    assert batched == {".actuators.motor.resistance", ".opt.timestep"}
    for (path, leaf), (_, original) in zip(
        jax.tree_util.tree_flatten_with_path(models)[0], jax.tree_util.tree_flatten_with_path(quadruped)[0], strict=True
    ):
        if jax.tree_util.keystr(path) not in batched:
            assert leaf is original, jax.tree_util.keystr(path)  # shared, not copied per world
        else:
            assert leaf.shape == (8, *original.shape)


def test_selection_by_name_and_shared_draws(quadruped):
    knees = ["LF_KFE", "RF_KFE", "LH_KFE", "RH_KFE"]
    models, _ = jaxmor.randomize(
        quadruped,
        jax.random.key(1),
        64,
        {
            "actuator.gear_ratio": jaxmor.uniform(8.0, 12.0, select=knees, shared=True),
            "body.mass": jaxmor.scale(0.5, 2.0, select=["LF_SHANK"]),
        },
    )
    gear = np.asarray(models.actuators.gear_ratio)
    k = [jaxmor.actuator_index(quadruped, n) for n in knees]
    others = [i for i in range(12) if i not in k]
    assert np.all(gear[:, k] == gear[:, k[:1]])  # one draw per world for the four knees
    assert np.unique(gear[:, k[0]]).size == 64
    np.testing.assert_array_equal(gear[:, others], np.broadcast_to(quadruped.actuators.gear_ratio, (64, 12))[:, others])
    # a link selects its body; the inertia scales with the mass
    b = quadruped.body_names.index("LF_SHANK")
    ratio = np.asarray(models.body_mass)[:, b] / float(quadruped.body_mass[b])
    np.testing.assert_allclose(
        np.asarray(models.body_inertia)[:, b], ratio[:, None, None] * np.asarray(quadruped.body_inertia[b]), rtol=1e-12
    )
    np.testing.assert_array_equal(
        np.asarray(models.body_mass)[:, :b], np.broadcast_to(quadruped.body_mass[:b], (64, b))
    )


@pytest.mark.slow  # 1-1.5 minutes on 2 cores (per-world models in the other tests here)
def test_randomized_worlds_in_rollout_batch_equal_each_world_alone(quadruped):
    n, steps = 256, 8
    spec = {
        "motor.resistance": jaxmor.scale(0.8, 1.2),
        "geom.friction": jaxmor.uniform(0.5, 1.0),
        "body.mass": jaxmor.scale(0.9, 1.1, select=["base"]),
        "bus_voltage": jaxmor.uniform(20.0, 24.0),
    }
    models, axes = jaxmor.randomize(quadruped, jax.random.key(3), n, spec)
    states = jaxmor.init_states(models, axes, n, q=jnp.asarray(quadruped_standing_q(quadruped, 0.53)))
    torques = jnp.asarray(np.random.default_rng(0).uniform(-30, 30, (n, steps, 12)))
    # Two full chunks of 128: a remainder would compile the step a second time, and the remainder with per-world
    # model leaves is shown in test_batch.py; the models are arguments of the compiled rollouts, not constants.
    final, _ = jax.jit(lambda m, s, c: jaxmor.rollout_batch(m, s, c, chunk_size=128, model_axes=axes))(
        models, states, torques
    )
    alone = jax.jit(lambda m, s, c: jaxmor.rollout(m, s, c)[0])
    for i in range(n):
        m = jax.tree.map(lambda x, a, i=i: x if a is None else x[i], models, axes, is_leaf=lambda x: x is None)
        s = jax.tree.map(lambda x, i=i: x[i], states)
        one = alone(m, s, torques[i])
        np.testing.assert_allclose(final.q[i], one.q, rtol=1e-12, atol=1e-12, err_msg=f"world {i}: q")
        np.testing.assert_allclose(final.u[i], one.u, rtol=1e-12, atol=1e-12, err_msg=f"world {i}: u")
    np.testing.assert_array_equal(states.bus_voltage, np.broadcast_to(models.actuators.motor.bus_voltage, (n, 12)))


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"motor.resistance": jaxmor.uniform(-0.1, 0.5)},
            r"motor\.resistance: world \d+, \w+: drew -0\.\d+, which must be positive",
        ),
        (
            {"motor.resistance": jaxmor.uniform(0.0, 0.5)},
            r"motor\.resistance: uniform\(0\.0, 0\.5\) reaches 0\.0 in any world, which must be positive",
        ),
        (
            {"body.mass": jaxmor.normal(1.0, 3.0)},
            r"body\.mass: world \d+, \w+: drew -[\d.]+, which must be positive and finite",
        ),
        (
            {"geom.restitution": jaxmor.uniform(0.5, 1.5)},
            r"geom\.restitution: world \d+, \w+: drew 1\.\d+, which must be in \[0, 1\]",
        ),
        (
            {"motor.torque_constant": jaxmor.scale(1e307, 1e308)},
            r"motor\.torque_constant: world 0, actuator 'LF_HAA': the drawn motor is invalid: the stall torque",
        ),
        ({"no.such": jaxmor.uniform(0, 1)}, r"unknown parameter 'no\.such'"),
        (
            {"geom.friction": jaxmor.uniform(0.1, 0.2, select=["nope"])},
            r"geom\.friction: unknown element\(s\) \['nope'\]",
        ),
        ({"geom.friction": (0.1, 0.2)}, r"needs a distribution"),
    ],
)
def test_an_invalid_draw_names_the_parameter_the_world_and_the_rule(quadruped, spec, message):
    with pytest.raises(ArgumentError, match=message):
        jaxmor.randomize(quadruped, jax.random.key(0), 64, spec)


# --------------------------------------------------------------------------------------------------
# Friction that means what the user set.

BOX = """<robot name="box"><link name="box">
  <inertial><mass value="1"/><inertia ixx="0.0067" ixy="0" ixz="0" iyy="0.0067" iyz="0" izz="0.0067"/></inertial>
  <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link></robot>"""
INCLINE = math.radians(25.0)
G = 9.81


def _slide(model: jaxmor.Model) -> float:
    """Acceleration along a 25 degree incline (gravity tilted onto flat ground), from 1 s to 2 s of sliding."""
    model = model.replace(
        opt=model.opt.replace(gravity=jnp.array([G * math.sin(INCLINE), 0.0, -G * math.cos(INCLINE)]))
    )
    q = jnp.array([0.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0])
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=2000))(jaxmor.init_state(model, q=q))
    u = np.asarray(traj.u[:, 0])
    return (u[1999] - u[999]) / 1.0


@pytest.mark.slow
def test_add_ground_friction_is_the_contact_friction_of_a_urdf_box():
    """The issue's case: add_ground(friction=0.25) on a URDF box at 25 degrees (tan 25 = 0.466) slides at
    g (sin - 0.25 cos) = 1.923 m/s^2; with the geometric mean of the default 0.8 it crept at 0.17."""
    model = jaxmor.add_ground(jaxmor.load_urdf(BOX), friction=0.25)
    expected = G * (math.sin(INCLINE) - 0.25 * math.cos(INCLINE))
    assert _slide(model) == pytest.approx(expected, rel=1e-2)


@pytest.mark.parametrize(
    "rule, expected",
    [("geometric_mean", math.sqrt(0.3 * 0.2)), ("mean", 0.25), ("min", 0.2), ("max", 0.3)],
)
def test_two_given_frictions_combine_by_the_models_rule(rule, expected):
    model = jaxmor.with_geom_properties(jaxmor.add_ground(jaxmor.load_urdf(BOX), friction=0.3), "box/0", friction=0.2)
    model = model.replace(opt=model.opt.replace(friction_rule=rule))
    contacts = jaxmor.collide(model, jaxmor.sim.kinematics.body_poses(model, jaxmor.neutral_q(model)))
    np.testing.assert_allclose(contacts.friction, expected, rtol=1e-12)
    bare = jaxmor.add_ground(jaxmor.load_urdf(BOX), friction=0.3).replace(opt=model.opt)
    contacts = jaxmor.collide(bare, jaxmor.sim.kinematics.body_poses(bare, jaxmor.neutral_q(bare)))
    np.testing.assert_allclose(contacts.friction, 0.3, rtol=1e-12)  # a URDF geom gives none: the ground's
    with pytest.raises(ArgumentError, match="friction_rule must be one of"):
        jaxmor.with_options(model, friction_rule="product")


# --------------------------------------------------------------------------------------------------
# The battery.


def test_the_bus_voltage_sags_with_the_current_the_motors_draw(turntable):
    v_oc, r_int = 24.0, 0.5
    model = jaxmor.with_battery(turntable, v_oc, r_int)
    state = jaxmor.set_actuator_torque(model, jaxmor.init_state(model, u=jnp.array([5.0])), "spin", 100.0)
    np.testing.assert_array_equal(state.bus_voltage, [v_oc])
    after = jax.jit(jaxmor.step)(model, state)
    act = after.actuator_state
    kt, r, kv = 0.1, 0.2, 10.0
    i = float(act.motor_torque[0]) / kt
    power = (r * i + float(act.average_motor_speed[0]) / kv) * i
    voltage = float(after.bus_voltage[0])
    assert voltage * (v_oc - voltage) / r_int == pytest.approx(power, rel=1e-10)  # I = (V_oc - V) / R_int, V I = P
    assert voltage < v_oc - 1.0  # a real sag: about 3 V at 15 A
    # randomized per world through the model
    models, axes = jaxmor.randomize(
        model, jax.random.key(0), 4, {"battery.internal_resistance": jaxmor.uniform(0.0, 1.0)}
    )
    states = jaxmor.init_states(models, axes, 4, u=jnp.array([5.0]))
    states = states.replace(actuator_torque=jnp.full((4, 1), 100.0))
    stepped = jax.jit(jax.vmap(jaxmor.step, in_axes=(axes, 0)))(models, states)  # compiled: faster than eager
    voltage = np.asarray(stepped.bus_voltage[:, 0])
    current = (v_oc - voltage) / np.asarray(models.battery.internal_resistance)
    np.testing.assert_allclose(voltage * current, power, rtol=1e-9)
    with pytest.raises(ArgumentError, match="open_circuit_voltage must be positive"):
        jaxmor.with_battery(turntable, 0.0, 0.1)


#: jaxmor.randomize's parameters as the hand-written table held them before their leaves declared them:
#: name -> (path, rule).
_TABLE_BEFORE = {
    "body.mass": (("body_mass",), "positive"),
    "body.com": (("body_com",), "finite"),
    "geom.friction": (("geom_friction",), "non-negative"),
    "geom.restitution": (("geom_restitution",), "in [0, 1]"),
    "joint.damping": (("dof_damping",), "non-negative"),
    "joint.friction": (("dof_friction",), "non-negative"),
    "joint.armature": (("dof_armature",), "non-negative"),
    "joint.stiffness": (("dof_stiffness",), "non-negative"),
    "tendon.stiffness": (("tendons", "stiffness"), "non-negative"),
    "tendon.damping": (("tendons", "damping"), "non-negative"),
    "tendon.friction": (("tendons", "friction"), "non-negative"),
    "tendon.armature": (("tendons", "armature"), "non-negative"),
    "motor.resistance": (("actuators", "motor", "resistance"), "motor"),
    "motor.torque_constant": (("actuators", "motor", "torque_constant"), "motor"),
    "motor.velocity_constant": (("actuators", "motor", "velocity_constant"), "motor"),
    "motor.peak_torque": (("actuators", "motor", "peak_torque"), "motor"),
    "motor.bus_voltage": (("actuators", "motor", "bus_voltage"), "motor"),
    "actuator.gear_ratio": (("actuators", "gear_ratio"), "positive"),
    "actuator.output_damping": (("actuators", "output_damping"), "non-negative"),
    "actuator.output_friction": (("actuators", "output_friction"), "non-negative"),
    "motor.inductance": (("actuators", "dynamics", "inductance"), "non-negative"),
    "motor.thermal_resistance": (("actuators", "dynamics", "thermal_resistance"), "positive"),
    "motor.heat_capacity": (("actuators", "dynamics", "heat_capacity"), "positive"),
    "motor.housing_thermal_resistance": (("actuators", "dynamics", "housing_thermal_resistance"), "positive"),
    "motor.housing_heat_capacity": (("actuators", "dynamics", "housing_heat_capacity"), "positive"),
    "motor.ambient_temperature": (("actuators", "dynamics", "ambient_temperature"), "temperature"),
    "motor.resistance_tempco": (("actuators", "dynamics", "resistance_tempco"), "finite"),
    "motor.flux_tempco": (("actuators", "dynamics", "flux_tempco"), "finite"),
    "motor.cogging_amplitude": (("actuators", "dynamics", "cogging_amplitude"), "finite"),
    "motor.lugre_stiffness": (("actuators", "dynamics", "lugre_stiffness"), "positive"),
    "motor.lugre_coulomb": (("actuators", "dynamics", "lugre_coulomb"), "positive"),
    "motor.lugre_static": (("actuators", "dynamics", "lugre_static"), "positive"),
    "actuator.delay": (("actuators", "delay"), "delay"),
    "affine.delay": (("affine", "delay"), "delay"),
    "controller.p_gain": (("actuators", "controller", "p_gain"), "non-negative"),
    "controller.i_gain": (("actuators", "controller", "i_gain"), "non-negative"),
    "controller.d_gain": (("actuators", "controller", "d_gain"), "non-negative"),
    "controller.period": (("actuators", "controller", "period"), "period"),
    "backlash.width": (("actuators", "backlash", "width"), "non-negative"),
    "backlash.inertia": (("actuators", "backlash", "inertia"), "positive"),
    "gravity": (("opt", "gravity"), "finite"),
    "timestep": (("opt", "timestep"), "positive"),
    "ground.friction": (("ground_friction",), "non-negative"),
    "ground.restitution": (("ground_restitution",), "in [0, 1]"),
    "ground.height": (("ground_height",), "finite"),
    "terrain.heights": (("height_field", "heights"), "finite"),
    "terrain.friction": (("height_field", "friction"), "non-negative"),
    "battery.open_circuit_voltage": (("battery", "open_circuit_voltage"), "positive"),
    "battery.internal_resistance": (("battery", "internal_resistance"), "non-negative"),
}


def test_the_parameters_derived_from_the_declarations_are_the_hand_written_tables(quadruped):
    """The parameter table comes from the Model leaves' declarations (``jaxmor.fields.leaf(randomize=...)``): the
    same public names, paths and rules as the table written by hand before, and the elements named as it named
    them (bodies, geoms, joints, actuators; none for the scalars; x, y, z for the gravity)."""
    from jaxmor.tools.randomization import PARAMETERS

    assert {n: (p.path, p.rule) for n, p in PARAMETERS.items()} == _TABLE_BEFORE
    model = quadruped
    expected = {"body": model.body_names, "geom": model.geom_names, "joint": model.joint_names}
    expected |= dict.fromkeys(("motor", "actuator", "controller", "backlash"), model.actuators.names)
    expected |= {"gravity": ("x", "y", "z"), "tendon": (), "affine": ()}
    for name, parameter in PARAMETERS.items():
        assert parameter.names(model) == expected.get(name.split(".")[0], ()), name
