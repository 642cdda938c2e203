"""The package's structure, checked: the step's stages, the layering of the loaders, the row layout of the
constraints, a State that fits its Model, and the deprecated names of the previous release.

Sources of the expected values: the architecture issue's requirements (kinematics once per step, ``io/``
imports no runtime module, no ``3 * nc`` offsets outside the constraint module) and the README's rename
table; the shapes a State needs are those ``init_state`` gives.
"""

from __future__ import annotations

import ast
import inspect
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
IO_MAY_IMPORT = {
    "jaxmor.errors",
    "jaxmor.fields",
    "jaxmor.actuation.motor",
    "jaxmor.actuation.motor_dynamics",
    "jaxmor.actuation.definitions",
}


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
# Layering (docs/architecture.md): a module imports modules of its own layer or below, never above; no cycles;
# no module is named like a function of the public API.

#: The layers from the bottom, each a list of module names or package prefixes (``jaxmor.sim.`` = every module
#: under ``jaxmor/sim``). A module belongs to the most specific entry that names it.
LAYERS = [
    ("base", ["jaxmor.errors", "jaxmor.math", "jaxmor.checks", "jaxmor.fields", "jaxmor.version"]),
    (
        "motor laws",
        [
            "jaxmor.actuation.motor",
            "jaxmor.actuation.motor_dynamics",
            "jaxmor.actuation.residual",
            "jaxmor.actuation.definitions",
        ],
    ),
    ("readers", ["jaxmor.io", "jaxmor.io."]),
    ("core types", ["jaxmor.types", "jaxmor.model"]),
    ("actuation", ["jaxmor.actuation", "jaxmor.actuation."]),
    ("simulation", ["jaxmor.sim", "jaxmor.sim.", "jaxmor.state"]),
    ("building", ["jaxmor.modeling", "jaxmor.modeling.", "jaxmor.robots"]),
    ("tools", ["jaxmor.tools", "jaxmor.tools."]),
    ("environments", ["jaxmor.envs", "jaxmor.envs."]),
    ("public API", ["jaxmor"]),
    ("applications", ["jaxmor.tools.demo", "jaxmor.viewer", "jaxmor.viewer."]),
    ("training", ["jaxmor.train", "jaxmor.train."]),
    ("command line", ["jaxmor.tools.cli"]),
]


def _modules() -> list[str]:
    """Every module of the package, by dotted name (a package by its ``__init__``)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _layer(module: str) -> int:
    """The layer of a module: the one whose entry names it most specifically (an exact name before a prefix)."""
    claims = []
    for i, (_, members) in enumerate(LAYERS):
        for m in members:
            if module == m:
                claims.append((len(m) + 1, i))
            elif m.endswith(".") and module.startswith(m):
                claims.append((len(m), i))
    assert claims, f"{module} belongs to no layer of LAYERS: place it"
    return max(claims)[1]


def _jaxmor_imports(path: Path) -> set[str]:
    """The jaxmor modules a file imports: ``from jaxmor.x import y`` gives ``jaxmor.x.y`` when that is a module,
    else ``jaxmor.x``; imports inside functions count too."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("jaxmor")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("jaxmor"):
            base = PACKAGE.parent / node.module.replace(".", "/")
            subs = [a.name for a in node.names if (base / f"{a.name}.py").is_file() or (base / a.name).is_dir()]
            out |= {f"{node.module}.{name}" for name in subs}
            if len(subs) < len(node.names):
                out.add(node.module)
    return out


def _graph() -> dict[str, set[str]]:
    modules = set(_modules())
    return {m: {i for i in _jaxmor_imports(_module_path(m)) if i in modules and i != m} for m in modules}


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} ({LAYERS[_layer(m)][0]}) imports {i} ({LAYERS[_layer(i)][0]})"
        for m, imports in sorted(graph.items())
        for i in sorted(imports)
        if _layer(i) > _layer(m)
    ]


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    state, cycles = {}, []

    def visit(module, trail):
        state[module] = "open"
        for other in sorted(graph[module]):
            if state.get(other) == "open":
                cycles.append(" -> ".join([*trail[trail.index(other) :], other]))
            elif other not in state:
                visit(other, [*trail, other])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return cycles


def test_every_module_has_a_layer_and_imports_run_one_way():
    graph = _graph()
    assert {"jaxmor.sim.pipeline", "jaxmor.actuation.drive", "jaxmor.io.urdf", "jaxmor.tools.cli"} <= set(graph)
    assert not _upward(graph), "imports that run up the layers:\n" + "\n".join(_upward(graph))


def test_actuation_imports_no_reader():
    """The actuators' definitions and checks live in ``actuation/`` and the readers in ``io/`` produce them: no
    module of ``jaxmor.actuation`` imports one of ``jaxmor.io`` (the readers sit below the drive train only
    because they describe it)."""
    graph = _graph()
    edges = [(m, i) for m, imports in graph.items() if m.startswith("jaxmor.actuation") for i in imports]
    assert ("jaxmor.actuation.compile", "jaxmor.actuation.definitions") in edges  # the walk sees the package
    assert not [(m, i) for m, i in edges if i.startswith("jaxmor.io")]


def test_the_simulation_reads_no_file_module():
    """The step works on the Model alone: no module of ``jaxmor.sim`` (nor the State's) imports a reader of
    ``jaxmor.io`` (the hulls' padded topology lives with the hull contacts, ``sim/collision/polytope.py``)."""
    graph = _graph()
    sim = [m for m in graph if m.startswith("jaxmor.sim") or m == "jaxmor.state"]
    assert "jaxmor.sim.collision.driver" in sim
    assert not [(m, i) for m in sim for i in graph[m] if i.startswith("jaxmor.io")]


def test_the_import_graph_has_no_cycle():
    assert not _cycles(_graph())


def test_the_bench_imports_have_no_cycle():
    """``bench/`` (runners, cases, tools) imports in one direction too: ``case`` runs in the case process and
    holds the scenario table that ``runner`` reads."""
    root = PACKAGE.parent / "bench"
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        imports = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench"):
                subs = {f"{node.module}.{a.name}" for a in node.names} & set(modules)
                imports |= subs or {node.module}
            elif isinstance(node, ast.Import):
                imports |= {a.name for a in node.names if a.name.startswith("bench")}
        graph[name] = {i for i in imports if i in modules and i != name}
    assert "bench.case" in graph["bench.runner"]
    assert not _cycles(graph)


def test_the_layering_checks_can_fail():
    """The checks on a made-up graph: an upward import and a cycle are both reported."""
    graph = {"jaxmor.io.urdf": {"jaxmor.sim.pipeline"}, "jaxmor.sim.pipeline": {"jaxmor.sim.solver"}}
    graph["jaxmor.sim.solver"] = {"jaxmor.sim.pipeline"}
    assert _upward(graph) == ["jaxmor.io.urdf (readers) imports jaxmor.sim.pipeline (simulation)"]
    assert _cycles(graph) == ["jaxmor.sim.pipeline -> jaxmor.sim.solver -> jaxmor.sim.pipeline"]
    assert _layer("jaxmor.actuation.motor") < _layer("jaxmor.io.urdf") < _layer("jaxmor.actuation.drive")
    assert _layer("jaxmor.tools.cli") > _layer("jaxmor") > _layer("jaxmor.tools.plot")


def test_no_module_is_named_like_a_public_function():
    public = {n: getattr(jaxmor, n) for n in jaxmor.__all__}
    functions = {n for n, obj in public.items() if inspect.isfunction(obj)}
    clashes = sorted({m.rsplit(".", 1)[-1] for m in _modules()} & functions)
    assert not clashes, f"modules named like public functions: {clashes}"
    assert {"step", "randomize", "rollout", "collide"} <= functions  # the check sees the functions
    assert inspect.ismodule(jaxmor.sysid) and inspect.ismodule(jaxmor.envs)


def test_subpackage_inits_import_nothing():
    """``jaxmor.sim``, ``.actuation``, ``.modeling``, ``.tools`` and ``.io`` only document: importing one stage does
    not import the others, and no layer is crossed through an ``__init__``."""
    for package in ("sim", "actuation", "modeling", "tools", "io"):
        tree = ast.parse((PACKAGE / package / "__init__.py").read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], package


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
# The names removed in 0.3 (CHANGELOG.md) are gone, not silently remapped.


def test_the_names_removed_in_0_3_are_gone():
    model = jaxmor.load_urdf(TURNTABLE)
    state = jaxmor.init_state(model)
    for name in ("timestep", "gravity", "solver_iterations"):
        assert not hasattr(model, name), name  # model.opt.* only
    assert not hasattr(state, "generalized_force")
    with pytest.raises(TypeError):
        model.replace(timestep=jnp.asarray(0.004))  # a plain dataclass replace: no remapping into opt
    with pytest.raises(TypeError):
        jaxmor.set_actuator_torques(state, [3.0])  # the model-less form
    with pytest.raises(TypeError):
        jaxmor.with_actuators(model, jaxmor.get_actuators(model), state)  # editors take no state
    for old in ("set_actuators", "set_affine_actuators", "set_battery", "set_geom_properties", "set_ground_contact"):
        assert not hasattr(jaxmor, old), old
    assert not hasattr(jaxmor, "enable_self_collision")


def test_with_options_checks_every_value():
    model = jaxmor.load_urdf(PENDULUM)
    changed = jaxmor.with_options(model, timestep=0.004, gravity=(0.0, 0.0, -1.62), solver_iterations=7)
    assert float(changed.opt.timestep) == 0.004 and changed.opt.solver_iterations == 7
    assert changed.opt.timestep.dtype == model.opt.timestep.dtype  # stored in the model's dtype
    np.testing.assert_allclose(changed.opt.gravity, [0.0, 0.0, -1.62], rtol=1e-6)
    assert float(model.opt.timestep) != 0.004  # a new model; the old one is unchanged
    for bad, match in (
        ({"timestep": 0.0}, r"timestep must be positive and finite"),
        ({"timestep": float("nan")}, r"timestep"),
        ({"gravity": (0.0, float("inf"), 0.0)}, r"gravity must be a finite 3-vector"),
        ({"solver_iterations": 0}, r"solver_iterations must be an int >= 1"),
        ({"friction_rule": "median"}, r"friction_rule must be one of"),
        ({"time_step": 0.001}, r"unknown options \['time_step'\]"),
    ):
        with pytest.raises(ArgumentError, match=match):
            jaxmor.with_options(model, **bad)


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


# --------------------------------------------------------------------------------------------------
# CHANGELOG.md is a short list of one-line entries (issue 53); measured figures belong in docs/design/.

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"


def test_the_changelog_is_short_with_one_line_entries():
    size = CHANGELOG.stat().st_size
    assert size < 15_000, f"CHANGELOG.md is {size} bytes, not under 15,000: move details to docs/design/"
    lines = CHANGELOG.read_text(encoding="utf-8").splitlines()
    continued = [
        number
        for number, (line, after) in enumerate(zip(lines, lines[1:] + [""], strict=True), start=1)
        if line.startswith("- ") and after.strip() and not after.startswith(("- ", "|", "#"))
    ]
    assert not continued, f"CHANGELOG.md entries that go on past their line (line numbers): {continued}"


def test_the_stages_enter_the_drive_train_at_its_start_and_end_only():
    """``bench.tools.torque_walk`` on the quadruped with delay, controller and backlash: the pipeline calls the drive
    train twice (``drive_train.begin``, ``drive_train.end`` from the integrator), the forces and free-motion stages
    call nothing of the motors, delay, controller or residual, and the rotors' view is built twice (at the start and
    for the motors' end); 9 sim/actuation crossings, 32 before the drive train was one pytree and the constraint
    rows had one layout."""
    from bench.tools.torque_walk import walk

    out = walk(drive_train=True)
    edges = out["sim_to_actuation_edges"]
    assert edges["sim/pipeline.stages -> actuation/drive_train.begin"] == 1
    assert edges["sim/integrator.advance -> actuation/drive_train.end"] == 1
    reached = {edge.split(" -> ")[1].split(".")[0] for edge in edges}
    assert reached <= {"actuation/drive_train", "actuation/backlash", "actuation/affine", "actuation/motor_dynamics"}
    assert not any(edge.startswith(("sim/forces.forces -> actuation/drive", "sim/free_motion")) for edge in edges)
    assert out["rotor_views"] == 2 and out["crossings"] <= 9
