"""Test configuration: float64, the shipped robots' paths, shared models and the quadruped's standing pose.

Reference comparisons (Pinocchio, MuJoCo, closed forms) need float64, so x64 is enabled once
for the test session. The package itself never changes this setting on import. Tests of the
float32 path pass float32 arrays explicitly; jaxmor keeps the dtype of its inputs.

The constants and ``quadruped_standing_q`` are imported by the test files (``from conftest import ...``);
the fixtures are session-scoped: loading is cheap but not free, and models are immutable pytrees
(``replace`` returns a new model), so no test can change what another one gets.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)

import jaxmor  # noqa: E402  (after the x64 switch, so that nothing is traced before it)

ROOT = Path(__file__).resolve().parent.parent
ROBOTS = ROOT / "robots"
TURNTABLE_URDF = ROBOTS / "turntable" / "turntable.urdf"
QUADRUPED_URDF = ROBOTS / "quadruped" / "quadruped.urdf"
PENDULUM_URDF = ROBOTS / "pendulum" / "pendulum.urdf"
HOUND_URDF = Path(__file__).resolve().parent / "data" / "actuators" / "hound" / "hound.urdf"

# The quadruped (jaxmor/robots/quadruped/README.md): four legs, joints in this order; thigh and shank 0.3 m,
# spherical feet of radius 0.025 m. Its nominal standing pose: base level, HAA 0, HFE 0.6, KFE -1.2 rad,
# which puts each foot under its hip, on the ground, at base height 2 * 0.3 cos(0.6) + 0.025 = 0.520201 m.
QUADRUPED_LEGS = ("LF", "RF", "LH", "RH")
QUADRUPED_JOINTS = tuple(f"{leg}_{j}" for leg in QUADRUPED_LEGS for j in ("HAA", "HFE", "KFE"))
QUADRUPED_LEG_LENGTH = 0.3  # thigh and shank
QUADRUPED_FOOT_RADIUS = 0.025
QUADRUPED_STAND_HFE, QUADRUPED_STAND_KFE = 0.6, -1.2
QUADRUPED_STAND_HEIGHT = 2 * QUADRUPED_LEG_LENGTH * math.cos(QUADRUPED_STAND_HFE) + QUADRUPED_FOOT_RADIUS


def quadruped_standing_q(model: jaxmor.Model, height: float = QUADRUPED_STAND_HEIGHT) -> np.ndarray:
    """(nq,) float64 NumPy array: the standing pose with the base level at ``height`` (quaternion w x y z)."""
    q = np.zeros(model.nq)
    q[2] = height
    q[3] = 1.0
    for leg in QUADRUPED_LEGS:
        q[jaxmor.joint_q_index(model, f"{leg}_HFE")] = QUADRUPED_STAND_HFE
        q[jaxmor.joint_q_index(model, f"{leg}_KFE")] = QUADRUPED_STAND_KFE
    return q


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The notebooks in notebooks/ (run by nbmake, ``addopts = "--nbmake"``) count as slow tests.

    This hook lives here because a conftest.py in notebooks/ would shadow this one in the test modules'
    ``from conftest import ...``. It sees the notebooks whenever tests/ is collected too (the default).
    """
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.slow)


def load_shipped(path: Path) -> jaxmor.Model:
    """Load with every warning turned into an error: the shipped robots must load silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return jaxmor.load_urdf(path)


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
