"""The package's structure, checked: the step's stages, the layering of the loaders, the row layout of the
constraints, a State that fits its Model, and the deprecated names of the previous release.

Sources of the expected values: the architecture issue's requirements (kinematics once per step, ``io/``
imports no runtime module, no ``3 * nc`` offsets outside the constraint module) and the README's rename
table; the shapes a State needs are those ``init_state`` gives.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor
import jaxmor.sim.kinematics
from jaxmor import ArgumentError

PACKAGE = Path(jaxmor.__file__).resolve().parent
ROBOTS = PACKAGE.parent / "robots"
QUADRUPED = ROBOTS / "quadruped" / "quadruped.urdf"
PENDULUM = ROBOTS / "pendulum" / "pendulum.urdf"
TURNTABLE = ROBOTS / "turntable" / "turntable.urdf"

#: What the readers in ``jaxmor/io`` may import from jaxmor: errors, the motor constants and their
#: validity rule (the spec's value type, no Model or State), the motor-dynamics definitions beside them
#: (``ThermalModel`` etc.; that module imports neither Model nor State), and each other.
IO_MAY_IMPORT = {"jaxmor.errors", "jaxmor.actuation.motor", "jaxmor.actuation.motor_dynamics"}


@pytest.fixture(scope="module")
def quadruped():
    return jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED))


# --------------------------------------------------------------------------------------------------
# The step: kinematics once per step.


def _count_joint_transforms(monkeypatch, fn, *args) -> int:
    calls = []
    original = jaxmor.sim.kinematics.joint_transforms

    def counting(*a, **k):
        calls.append(1)
        return original(*a, **k)

    monkeypatch.setattr(jaxmor.sim.kinematics, "joint_transforms", counting)
    jax.clear_caches()  # a step traced before (another test in this process) would not be traced again
    jax.make_jaxpr(fn)(*args)
    return len(calls)


@pytest.mark.parametrize("robot", ["quadruped with ground", "pendulum"])
def test_kinematics_is_computed_once_per_traced_step(monkeypatch, quadruped, robot):
    model = quadruped if robot.startswith("quadruped") else jaxmor.load_urdf(PENDULUM)
    state = jaxmor.init_state(model)
    assert _count_joint_transforms(monkeypatch, jaxmor.step, model, state) == 1
    # A rollout traces its step once, so it also computes the kinematics once per step.
    assert _count_joint_transforms(monkeypatch, lambda s: jaxmor.rollout(model, s, n_steps=3)[0], state) == 1


# --------------------------------------------------------------------------------------------------
# Layering: the readers import no runtime module.


def _jaxmor_imports(path: Path) -> set[str]:
    """The jaxmor modules a file imports (``from jaxmor.x import y`` gives ``jaxmor.x``, or
    ``jaxmor.x.y`` when that is a module)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("jaxmor")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxmor"):
            out.add(node.module)
            for alias in node.names:
                sub = PACKAGE.parent / (node.module.replace(".", "/") + f"/{alias.name}.py")
                if sub.is_file():
                    out.add(f"{node.module}.{alias.name}")
    return out


def _module_path(module: str) -> Path:
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    return path if path.is_file() else PACKAGE.parent / module.replace(".", "/") / "__init__.py"


def test_io_imports_no_runtime_module():
    """Walks the imports of every module under ``jaxmor/io`` transitively (the package ``__init__`` aside)."""
    seen, todo = set(), [f"jaxmor.io.{p.stem}" for p in (PACKAGE / "io").glob("*.py") if p.stem != "__init__"]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(m for m in _jaxmor_imports(_module_path(module)) if m != "jaxmor")
    outside = {m for m in seen if not m.startswith("jaxmor.io")}
    assert outside <= IO_MAY_IMPORT, f"io/ reaches runtime modules: {sorted(outside - IO_MAY_IMPORT)}"
    assert "jaxmor.io.urdf" in seen and "jaxmor.io.actuators" in seen  # the walk did run


def test_the_row_layout_lives_in_the_constraint_module():
    """No ``3 * nc`` offset arithmetic on the flat impulse vector outside ``jaxmor/sim/constraint.py``."""
    pattern = re.compile(r"\b3\s*\*\s*nc\b|\bnc\s*\*\s*3\b")
    offenders = [
        f"{p.relative_to(PACKAGE)}:{i}"
        for p in PACKAGE.rglob("*.py")
        if p.name != "constraint.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not offenders, offenders


# --------------------------------------------------------------------------------------------------
# A State must fit its Model.


def test_a_state_made_before_add_ground_is_refused_naming_the_field(quadruped):
    bare = jaxmor.load_urdf(QUADRUPED)
    stale = jaxmor.init_state(bare)  # no contact slots
    assert stale.contact_impulse.shape == (0, 3) and jaxmor.contact_count(quadruped) == 8
    with pytest.raises(ArgumentError, match=r"step: state\.contact_impulse has shape \(0, 3\).*\(8, 3\).*add_ground"):
        jaxmor.step(quadruped, stale)
    with pytest.raises(ArgumentError, match=r"state\.contact_impulse"):
        jax.jit(jaxmor.step)(quadruped, stale)  # at trace time
    with pytest.raises(ArgumentError, match=r"rollout: state\.contact_impulse"):
        jaxmor.rollout(quadruped, stale, n_steps=2)
    worlds = jax.tree.map(lambda x: jnp.stack([x, x]), stale)
    with pytest.raises(ArgumentError, match=r"rollout_batch: state\.contact_impulse has shape \(2, 0, 3\)"):
        jaxmor.rollout_batch(quadruped, worlds, n_steps=2)


def test_a_state_of_another_robot_or_an_unvmapped_batch_is_refused():
    other, turntable = jaxmor.load_urdf(QUADRUPED), jaxmor.load_urdf(TURNTABLE)
    with pytest.raises(
        ArgumentError, match=r"step: state\.q has shape \(19,\), but the model needs \(1,\); .*another model"
    ):
        jaxmor.step(turntable, jaxmor.init_state(other))
    batch = jax.tree.map(lambda x: jnp.stack([x, x, x]), jaxmor.init_state(turntable))
    with pytest.raises(ArgumentError, match=r"state\.q has shape \(3, 1\).*vmap.*rollout_batch"):
        jaxmor.step(turntable, batch)
    with pytest.raises(ArgumentError, match="must be a jaxmor State"):
        jaxmor.step(turntable, {"q": jnp.zeros(1)})
    with pytest.raises(
        ArgumentError, match=r"rollout_batch: state\.q has shape \(2, 19\), .*\(worlds\.\.\.\) \+ \(1,\)"
    ):
        jaxmor.rollout_batch(turntable, jax.tree.map(lambda x: jnp.stack([x, x]), jaxmor.init_state(other)), n_steps=1)


def test_every_state_field_is_checked(quadruped):
    """Each field, given one entry too many, is named in the error (the check covers the whole State)."""
    state = jaxmor.init_state(quadruped)
    names = jaxmor.state.state_shapes(quadruped)
    assert len(names) == len(jax.tree.leaves(state))
    for name in names:
        parts = name.split(".")
        holder = state if len(parts) == 1 else getattr(state, parts[0])
        value = getattr(holder, parts[-1])
        bad_value = jnp.zeros(value.shape[:-1] + (value.shape[-1] + 1,) if value.ndim else (1,), value.dtype)
        bad_holder = holder.replace(**{parts[-1]: bad_value})
        bad = bad_holder if len(parts) == 1 else state.replace(**{parts[0]: bad_holder})
        with pytest.raises(ArgumentError, match=rf"state\.{re.escape(name)} has shape"):
            jaxmor.state.check_state(quadruped, bad, "step")


# --------------------------------------------------------------------------------------------------
# Deprecated names keep working for one release, with a DeprecationWarning (README's rename table).


def test_deprecated_model_fields_and_replace():
    model = jaxmor.load_urdf(PENDULUM)
    with pytest.warns(DeprecationWarning, match=r"Model\.timestep is deprecated; use Model\.opt\.timestep"):
        assert float(model.timestep) == float(model.opt.timestep)
    with pytest.warns(DeprecationWarning, match=r"Model\.gravity"):
        np.testing.assert_array_equal(model.gravity, model.opt.gravity)
    with pytest.warns(DeprecationWarning, match=r"Model\.solver_iterations"):
        assert model.solver_iterations == model.opt.solver_iterations
    with pytest.warns(DeprecationWarning, match=r"Model\.replace\(timestep=\.\.\.\)"):
        changed = model.replace(timestep=jnp.asarray(0.004), gravity=jnp.zeros(3), solver_iterations=7)
    assert float(changed.opt.timestep) == 0.004 and changed.opt.solver_iterations == 7
    np.testing.assert_array_equal(changed.opt.gravity, np.zeros(3))


def test_deprecated_state_field():
    model = jaxmor.load_urdf(PENDULUM)
    state = jaxmor.set_generalized_force(model, jaxmor.init_state(model), [2.5])
    with pytest.warns(DeprecationWarning, match=r"State\.generalized_force.*feedforward_force"):
        assert float(state.generalized_force[0]) == 2.5
    with pytest.warns(DeprecationWarning, match=r"State\.replace\(generalized_force"):
        assert float(state.replace(generalized_force=jnp.asarray([1.5])).feedforward_force[0]) == 1.5


def test_deprecated_setter_signatures_warn_and_do_the_same():
    model = jaxmor.load_urdf(TURNTABLE)
    state = jaxmor.init_state(model)
    with pytest.warns(
        DeprecationWarning,
        match=r"set_actuator_torques\(state, \.\.\.\) is deprecated; use set_actuator_torques\(model, state, \.\.\.\)",
    ):
        old = jaxmor.set_actuator_torques(state, [3.0])
    np.testing.assert_array_equal(old.actuator_torque, jaxmor.set_actuator_torques(model, state, [3.0]).actuator_torque)
    with pytest.warns(DeprecationWarning, match=r"set_motor_operating_region_enforced\(state, \.\.\.\)"):
        old = jaxmor.set_motor_operating_region_enforced(state, False)
    assert not bool(old.mor_enforced) and not bool(
        jaxmor.set_motor_operating_region_enforced(model, state, False).mor_enforced
    )
    affine = jaxmor.with_affine_actuators(
        jaxmor.with_actuators(model, []), [jaxmor.AffineActuatorDefinition.motor("m", "spin")]
    )
    fitted = jaxmor.reset_actuator_state(affine, state)
    with pytest.warns(DeprecationWarning, match=r"set_ctrl\(state, \.\.\.\)"):
        old = jaxmor.set_ctrl(fitted, [0.25])
    np.testing.assert_array_equal(old.ctrl, jaxmor.set_ctrl(affine, fitted, [0.25]).ctrl)


def test_deprecated_model_editor_with_a_state_returns_the_old_pair():
    model = jaxmor.load_urdf(TURNTABLE)
    state = jaxmor.set_actuator_torques(model, jaxmor.init_state(model), [3.0])
    with pytest.warns(DeprecationWarning, match=r"with_actuators\(model, definitions, state\)"):
        new_model, new_state = jaxmor.with_actuators(model, jaxmor.get_actuators(model), state)
    assert isinstance(new_model, jaxmor.Model) and float(new_state.actuator_torque[0]) == 0.0
    with pytest.warns(DeprecationWarning, match=r"with_affine_actuators\(model, definitions, state\)"):
        bare = jaxmor.with_actuators(model, [])
        _, affine_state = jaxmor.with_affine_actuators(
            bare, [jaxmor.AffineActuatorDefinition.motor("m", "spin")], jaxmor.reset_actuator_state(bare, state)
        )
    assert affine_state.ctrl.shape == (1,)


def test_reset_actuator_state_fits_the_new_actuators():
    model = jaxmor.load_urdf(TURNTABLE)
    state = jaxmor.set_bus_voltage(model, jaxmor.set_actuator_torques(model, jaxmor.init_state(model), [3.0]), 20.0)
    bare = jaxmor.with_affine_actuators(
        jaxmor.with_actuators(model, []), [jaxmor.AffineActuatorDefinition.position("servo", "spin", kp=2.0)]
    )
    fitted = jaxmor.reset_actuator_state(bare, state)
    assert fitted.actuator_torque.shape == fitted.bus_voltage.shape == (0,)
    np.testing.assert_array_equal(fitted.ctrl, [0.0])
    np.testing.assert_array_equal(fitted.q, state.q)
    jaxmor.step(bare, fitted)  # fits: no error
    back = jaxmor.reset_actuator_state(model, fitted)
    np.testing.assert_array_equal(back.bus_voltage, [24.0])  # the definition's, not the 20 V set before
