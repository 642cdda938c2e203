"""The public API is small and explicit: pinned here, documented, and free of import side effects."""

import inspect
import subprocess
import sys

import pytest

import jaxmor

PUBLIC = [
    "ActuatorCoupling", "ActuatorDefinition", "ActuatorState", "AffineActuatorDefinition", "AffineActuators",
    "ArgumentError", "Backlash", "Battery", "CoggingModel", "Contacts", "DcMotorParameters", "Distribution",
    "DriveController", "DriveControllerDefinition", "Equalities",
    "GeomType", "HeightField",
    "JaxmorError", "JointType", "Keyframe", "LugreModel", "Model", "ModelError", "MotorActuators", "MotorSaturation",
    "MotorState", "MotorTorqueBounds", "MujocoDifferenceWarning", "Options", "Poses", "ResidualNetwork",
    "Sensors", "Sites", "State", "Tendons", "ThermalModel", "actuate", "actuator_index",
    "actuator_names", "actuator_states", "actuator_torque_bounds", "actuator_torques", "add_free_body", "add_ground",
    "affine_force", "affine_force_at", "affine_generalized_force", "affine_joint_force", "bias_force", "clamp_ctrl",
    "clip_motor_torque", "collide", "combine", "contact_budget", "contact_count", "envs", "export_actuators",
    "export_package",
    "export_world", "forward_dynamics", "forward_kinematics", "generalized_force", "geom_index", "get_actuators",
    "import_actuators", "init_state", "integers", "init_states", "integrate_positions", "inverse_dynamics",
    "is_motor_operating_region_enforced", "joint_damping", "joint_friction", "joint_index", "joint_names",
    "joint_q_index", "keyframe_names", "link_jacobian", "load_checkpoint", "load_mjcf", "load_urdf", "load_world",
    "log_uniform", "mass_matrix", "motor_operating_region_violation", "motor_speeds", "motor_torque_bounds",
    "motor_torque_bounds_from_constants", "neutral_q", "normal", "point_jacobian", "randomize", "read_sensors",
    "residual_network",
    "reset_actuator_state", "robots", "rollout", "rollout_batch", "save_checkpoint", "scale", "set_actuation_limits",
    "set_actuator_pd_gains", "set_actuator_pd_targets", "set_actuator_torque", "set_actuator_torques",
    "set_bus_voltage", "set_ctrl", "set_external_force", "set_generalized_force", "set_keyframe",
    "set_motor_operating_region_enforced", "set_motor_temperature", "set_pd_gains", "set_pd_targets", "shard_worlds",
    "step", "summary", "sysid", "terrain", "transmission_matrix", "uniform", "with_actuators", "with_affine_actuators",
    "with_backlash", "with_battery", "with_command_delay",
    "with_drive_controller", "with_geom_properties", "with_ground_contact", "with_height_field", "with_options",
    "with_residual",
    "with_self_collision",
    "with_sensors", "with_geom_grids",
]  # fmt: skip


def test_public_api_is_pinned():
    assert sorted(jaxmor.__all__) == sorted(PUBLIC)
    assert len(set(jaxmor.__all__)) == len(jaxmor.__all__)
    for name in PUBLIC:
        assert hasattr(jaxmor, name), name


def test_public_api_is_documented_and_typed():
    for name in PUBLIC:
        obj = getattr(jaxmor, name)
        assert inspect.getdoc(obj), f"{name} has no docstring"
        if inspect.isfunction(obj):
            sig = inspect.signature(obj)
            untyped = [p for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
            assert not untyped, f"{name}: parameters without type hints: {[p.name for p in untyped]}"


@pytest.mark.slow
def test_import_changes_no_global_setting():
    code = (
        "import jax, numpy as np; x64 = jax.config.jax_enable_x64; opts = np.get_printoptions(); "
        "import jaxmor; assert jax.config.jax_enable_x64 == x64, 'x64 changed'; "
        "assert np.get_printoptions() == opts, 'print options changed'; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
