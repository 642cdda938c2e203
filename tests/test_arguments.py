"""Arguments checked where they enter the API: each test reproduces an input that was once accepted.

Every refusal is a :class:`jaxmor.ArgumentError` (or a :class:`jaxmor.ModelError` for a description) whose
message names the argument and what it must be. Nothing here compiles a step: every check runs before
tracing (or, for the dtype under ``jit``, while tracing, before anything is compiled).
"""

from __future__ import annotations

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
from jaxmor import ArgumentError, ModelError, envs
from jaxmor.checks import as_int
from jaxmor.errors import brief_repr
from jaxmor.tools.randomization import Distribution

# --------------------------------------------------------------------------------------------------
# Counts: integers, not floats, bools or strings.


@pytest.mark.parametrize("n_steps", [2.7, True, "3", -1, np.float64(2.0)])
def test_rollout_refuses_a_step_count_that_is_not_an_integer(turntable, n_steps):
    state = jaxmor.init_state(turntable)
    with pytest.raises(ArgumentError, match=r"rollout: n_steps must be an int >= 0 \(a Python or NumPy integer\)"):
        jaxmor.rollout(turntable, state, n_steps=n_steps)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"n_steps": 2.7}, r"rollout_batch: n_steps must be an int >= 0"),
        ({"n_steps": True}, r"rollout_batch: n_steps must be an int >= 0"),
        ({"n_steps": 2, "chunk_size": True}, r"chunk_size must be a positive int"),
        ({"n_steps": 2, "groups": 1.0}, r"groups must be a positive int"),
    ],
)
def test_rollout_batch_refuses_counts_that_are_not_integers(turntable, arguments, message):
    states = jaxmor.init_states(turntable, None, n_worlds=2)
    with pytest.raises(ArgumentError, match=message):
        jaxmor.rollout_batch(turntable, states, **arguments)


def test_the_count_helper_takes_python_and_numpy_integers_only():
    assert as_int(np.int64(3), "n") == 3 and type(as_int(np.int32(0), "n")) is int
    for bad in (2.0, np.bool_(True), "3", None, 1 + 0j):
        with pytest.raises(ArgumentError, match=r"n must be an int >= 0"):
            as_int(bad, "n")
    with pytest.raises(ArgumentError, match=r"n_worlds must be a positive int .*got 2\.0"):
        jaxmor.init_states(jaxmor.Model, None, n_worlds=2.0)


# --------------------------------------------------------------------------------------------------
# Distributions made directly.


@pytest.mark.parametrize(
    "arguments, message",
    [
        (("triangular", 0.0, 1.0), r"Distribution: kind must be one of \('uniform', 'normal'"),
        (("uniform", 2.0, 1.0), r"uniform: low must not exceed high, got 2\.0 > 1\.0"),
        (("scale", [0.9, 1.2], [1.1, 1.1]), r"scale: low must not exceed high"),
        (("uniform", math.nan, 1.0), r"uniform: low must be finite, got nan"),
        (("uniform", 0.0, math.inf), r"uniform: high must be finite, got inf"),
        (("normal", 0.0, math.nan), r"normal: std must be finite"),
        (("normal", 0.0, -1.0), r"normal: std must not be negative"),
        (("log_uniform", 0.0, 1.0), r"log_uniform: the bounds must be positive"),
        (("uniform", "0", 1.0), r"uniform: low must be a real number, got '0'"),
        (("uniform", [0.0, 0.0], [1.0, 1.0, 1.0]), r"uniform: low \(2,\) and high \(3,\) do not broadcast"),
        (("uniform", 0.0, 1.0, "LF_HAA"), r"uniform: select must be a sequence of names, got 'LF_HAA'"),
        (("uniform", 0.0, 1.0, None, "yes"), r"uniform: shared must be a bool"),
    ],
)
def test_a_distribution_made_directly_is_checked(arguments, message):
    with pytest.raises(ArgumentError, match=message):
        Distribution(*arguments)


def test_the_distribution_helpers_share_its_checks():
    with pytest.raises(ArgumentError, match="uniform: low must be finite"):
        jaxmor.uniform(math.nan, 1.0)
    with pytest.raises(ArgumentError, match="uniform: select must be a sequence of names"):
        jaxmor.uniform(0.0, 1.0, select="LF_HAA")
    assert jaxmor.scale(0.9, 1.1, select=["LF_HAA"]).select == ("LF_HAA",)


# --------------------------------------------------------------------------------------------------
# The locomotion task's numbers (checked before the model is loaded).


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"kp": math.nan}, r"kp \[Nm/rad\] must be finite, got nan"),
        ({"kp": -1.0}, r"kp \[Nm/rad\] must be >= 0"),
        ({"kd": math.inf}, r"kd \[Nm s/rad\] must be finite"),
        ({"action_scale": math.inf}, r"action_scale \[rad\] must be finite, got inf"),
        ({"action_scale": 0.0}, r"action_scale \[rad\] must be > 0"),
        ({"timestep": -0.004}, r"timestep \[s\] must be > 0"),
        ({"timestep": "0.004"}, r"timestep \[s\] must be a real number"),
        ({"joint_noise": -0.1}, r"joint_noise \[rad\] must be >= 0"),
        ({"min_base_height": math.nan}, r"min_base_height must be finite"),
        ({"reward_weights": {"tracking_linear": math.nan}}, r"reward_weights\['tracking_linear'\] must be finite"),
        ({"substeps": 2.0}, r"substeps must be a positive int"),
        ({"episode_steps": True}, r"episode_steps must be a positive int"),
        ({"seed": 1.5}, r"seed must be an int >= 0"),
    ],
)
def test_locomotion_refuses_numbers_outside_their_range(arguments, message):
    with pytest.raises(ArgumentError, match=message):
        envs.Locomotion(**arguments)


# --------------------------------------------------------------------------------------------------
# Controls that are not real numbers.


@pytest.mark.parametrize(
    "make, dtype",
    [(lambda n: jnp.ones((2, n), complex), "complex128"), (lambda n: np.full((2, n), "1"), "str32")],
)
def test_rollout_refuses_complex_or_string_controls(turntable, make, dtype):
    state = jaxmor.init_state(turntable)
    message = rf"rollout: controls\['actuator_torque'\] must be real numbers \(a float array\), got dtype {dtype}"
    with pytest.raises(ArgumentError, match=message):
        jaxmor.rollout(turntable, state, make(turntable.na))
    with pytest.raises(ArgumentError, match=r"controls\['ctrl'\] must be real numbers"):
        jaxmor.rollout(turntable, state, {"ctrl": make(turntable.nu)}, n_steps=2)


def test_complex_torques_are_refused_under_jit_too(turntable):
    state = jaxmor.init_state(turntable)
    torques = jnp.ones((2, turntable.na), complex)
    with pytest.raises(ArgumentError, match=r"rollout: controls\['actuator_torque'\] must be real numbers"):
        jax.jit(lambda c: jaxmor.rollout(turntable, state, c))(torques)
    with pytest.raises(ArgumentError, match=r"step: state\.actuator_torque must be real numbers"):
        jax.jit(lambda s: jaxmor.step(turntable, s))(state.replace(actuator_torque=torques[0]))


def test_step_and_the_setters_refuse_complex_torques(turntable):
    state = jaxmor.init_state(turntable)
    torques = jnp.full((turntable.na,), 1 + 2j)
    with pytest.raises(ArgumentError, match=r"step: state\.actuator_torque must be real numbers.*complex128"):
        jaxmor.step(turntable, state.replace(actuator_torque=torques))
    with pytest.raises(ArgumentError, match=r"torques must be real numbers"):
        jaxmor.set_actuator_torques(turntable, state, torques)
    with pytest.raises(ArgumentError, match=r"torque must be real numbers"):
        jaxmor.set_actuator_torque(turntable, state, 0, 1 + 2j)


# --------------------------------------------------------------------------------------------------
# Temperatures below absolute zero.


def _thermal(model, **fields):
    definition = jaxmor.get_actuators(model)[0]
    thermal = jaxmor.ThermalModel(thermal_resistance=1.0, heat_capacity=1.0, **fields)
    return jaxmor.with_actuators(model, [definition.replace(thermal=thermal)])


def test_a_motor_temperature_below_absolute_zero_is_refused(turntable):
    model = _thermal(turntable)
    state = jaxmor.init_state(model)
    with pytest.raises(ArgumentError, match=r"winding temperature must be >= -273\.15 degC \(absolute zero\)"):
        jaxmor.set_motor_temperature(model, state, -300.0)
    with pytest.raises(ArgumentError, match=r"housing temperature must be >= -273\.15 degC"):
        jaxmor.set_motor_temperature(model, state, 20.0, housing=-300.0)
    assert float(jaxmor.set_motor_temperature(model, state, -273.15).motor_state.winding_temperature[0]) == -273.15


@pytest.mark.parametrize("field", ["ambient_temperature", "reference_temperature", "max_temperature"])
def test_a_thermal_model_below_absolute_zero_is_refused(turntable, field):
    extra = {"limit_start": -400.0} if field == "max_temperature" else {}
    with pytest.raises(ModelError, match=rf"thermal {field} must be >= -273\.15 degC \(absolute zero\), got -300\.0"):
        _thermal(turntable, **{field: -300.0}, **extra)


def test_a_drawn_ambient_temperature_below_absolute_zero_is_refused(turntable):
    model = _thermal(turntable)
    spec = {"motor.ambient_temperature": jaxmor.uniform(-400.0, -300.0)}
    message = r"motor\.ambient_temperature: world 0, spin: drew -3\d\d\.\d+, which must be finite and >= -273\.15"
    with pytest.raises(ArgumentError, match=message):
        jaxmor.randomize(model, jax.random.key(0), 4, spec)


# --------------------------------------------------------------------------------------------------
# Huge attribute values are quoted briefly.

HUGE = 6 * 1024 * 1024

URDF = """<robot name="r">
  <link name="base"><inertial><mass value="{mass}"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>
  </inertial></link>
  <joint name="j" type="{kind}"><parent link="base"/><child link="{child}"/><origin xyz="{xyz}"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""

MJCF = """<mujoco><worldbody><body pos="{pos}"><joint type="{kind}"/><geom size="0.1" mass="1"/></body>
</worldbody></mujoco>"""


#: Documents with one huge attribute value (built in the test, not at collection), and the error's reason.
HUGE_DOCUMENTS = {
    "urdf xyz": (lambda: URDF.format(mass="1", kind="revolute", child="arm", xyz="1 " * (HUGE // 2)), "needs 3"),
    "urdf mass": (lambda: URDF.format(mass="x" * HUGE, kind="revolute", child="arm", xyz="0 0 0"), "not a number"),
    "urdf type": (lambda: URDF.format(mass="1", kind="k" * HUGE, child="arm", xyz="0 0 0"), "unknown type"),
    "urdf link": (lambda: URDF.format(mass="1", kind="revolute", child="a" * HUGE, xyz="0 0 0"), "missing child"),
    "mjcf pos": (lambda: MJCF.format(pos="1 " * (HUGE // 2), kind="hinge"), "needs 3 numbers"),
    "mjcf type": (lambda: MJCF.format(pos="0 0 0", kind="h" * HUGE), "must be one of"),
}


@pytest.mark.parametrize("case", sorted(HUGE_DOCUMENTS))
def test_a_huge_attribute_value_is_quoted_briefly(case):
    make, reason = HUGE_DOCUMENTS[case]
    text = make()
    load = jaxmor.load_mjcf if text.startswith("<mujoco") else jaxmor.load_urdf
    with pytest.raises(ModelError, match=reason) as info:
        load(text)
    message = str(info.value)
    assert len(message) < 500, message[:600]
    assert re.search(r"\.\.\. \(\d{7} characters\)", message), message


def test_brief_repr_keeps_short_values_and_cuts_long_ones():
    assert brief_repr("abc") == "'abc'"
    assert brief_repr("x" * 100) == repr("x" * 80) + "... (100 characters)"
    assert brief_repr(list(range(100))).endswith("... (390 characters)")
