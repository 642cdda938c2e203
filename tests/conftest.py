"""Test configuration: float64 and the session's shared models.

Reference comparisons (Pinocchio, MuJoCo, closed forms) need float64, so x64 is enabled once
for the test session. The package itself never changes this setting on import. Tests of the
float32 path pass float32 arrays explicitly; jaxmor keeps the dtype of its inputs.

The robot paths and helpers the test files import live in ``tests/models.py`` (``from models import ...``);
the fixtures here are session-scoped: loading is cheap but not free, and models are immutable pytrees
(``replace`` returns a new model), so no test can change what another one gets.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)

from models import (  # noqa: E402
    HOUND_URDF,
    PENDULUM_URDF,
    QUADRUPED_URDF,
    TURNTABLE_URDF,
    load_shipped,
)

import jaxmor  # noqa: E402  (after the x64 switch, so that nothing is traced before it)

#: The notebooks that take over a minute on 2 cores (training).
SLOW_NOTEBOOKS: tuple[str, ...] = ()
#: The files of the default run that took longest on 2 cores (``--durations=0``, 2026-12-04 and -05: 60-150 s
#: each), longest first. pytest-xdist hands whole files to its two workers in collection order (``--dist loadfile
#: --no-loadscope-reorder`` in pyproject.toml's addopts): these go out first, so that the run does not end with one
#: worker alone on a long file while the other idles. The order changes what runs when, never what runs.
LONGEST_FIRST = (
    "test_train.py",
    "test_envs.py",
    "test_viewer.py",
    "test_render.py",
    "test_live.py",
    "test_backlash.py",
    "test_ball_joints.py",
    "test_collision.py",
    "test_drive_train.py",
    "test_motor_dynamics.py",
    "test_equality.py",
    "test_dynamics.py",
    "test_sensors.py",
    "test_budget.py",
    "test_mjcf_mujoco.py",
    "test_scene_bodies.py",
    "test_step.py",
    "test_reliability.py",
    "test_compiled.py",
    "test_tendons.py",
    "test_rl.py",
    "test_policies.py",
)


#: The environment variable that names the run's compilation cache (JAX reads it at import, so the notebooks' kernels
#: and the tests' subprocesses share the cache too).
CACHE_VARIABLE = "JAX_COMPILATION_CACHE_DIR"
_CACHE_MADE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--solver",
        choices=("auto", "pgs", "jacobi"),
        help="Options.solver of every model the run loads (jaxmor.modeling.builder.DEFAULT_SOLVER; default: auto): "
        "the physics tests run with one solver",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The run's solver (``--solver``), then its compilation cache (below)."""
    if config.getoption("--solver"):
        from jaxmor.modeling import builder

        builder.DEFAULT_SOLVER = config.getoption("--solver")
    _compilation_cache(config)


def _compilation_cache(config: pytest.Config) -> None:
    """One persistent compilation cache for the run, in a fresh temporary folder: the same program (the quadruped's
    step, the Go2's rollout) compiled by several modules, workers or notebooks compiles once per run. The main
    process makes the folder before the workers start (they inherit the variable) and removes it at the end; a cache
    the caller set is used as it is. Keys hold the program, the flags and the versions, so a hit is the same
    executable."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None and not os.environ.get(CACHE_VARIABLE):
        os.environ[CACHE_VARIABLE] = tempfile.mkdtemp(prefix="jaxmor-tests-xla-cache-")
        config.stash[_CACHE_MADE] = os.environ[CACHE_VARIABLE]
    jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_VARIABLE])


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_CACHE_MADE, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(CACHE_VARIABLE, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The notebooks in notebooks/ (run by nbmake, ``addopts = "--nbmake"``) that train (``SLOW_NOTEBOOKS``) count
    as slow tests; the others run by default. The files of ``LONGEST_FIRST`` are collected first, in its order (a
    stable sort: every file's tests stay together and in their order).

    It sees the notebooks whenever tests/ is collected too (the default).
    """
    for item in items:
        if item.path.suffix == ".ipynb" and item.path.name in SLOW_NOTEBOOKS:
            item.add_marker(pytest.mark.slow)
    missing = [name for name in LONGEST_FIRST if not (Path(__file__).parent / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py: LONGEST_FIRST names files that do not exist: {missing}")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(scope="session")
def turntable() -> jaxmor.Model:
    return load_shipped(TURNTABLE_URDF)


@pytest.fixture(scope="session")
def pendulum() -> jaxmor.Model:
    return load_shipped(PENDULUM_URDF)


@pytest.fixture(scope="session")
def quadruped() -> jaxmor.Model:
    return load_shipped(QUADRUPED_URDF)


@pytest.fixture(scope="session")
def quadruped_ground(quadruped) -> jaxmor.Model:
    """The quadruped with ``jaxmor.add_ground`` at its defaults (the plane z = 0)."""
    return jaxmor.add_ground(quadruped)


@pytest.fixture(scope="session")
def hound() -> jaxmor.Model:
    """One Hound leg on a floating base (tests/data/actuators/hound)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the leg's links are massless (singular mass matrix); irrelevant here
        return jaxmor.load_urdf(HOUND_URDF)
