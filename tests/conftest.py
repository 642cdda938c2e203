"""Test configuration: float64 and the session's shared models.

Reference comparisons (Pinocchio, MuJoCo, closed forms) need float64, so x64 is enabled once
for the test session. The package itself never changes this setting on import. Tests of the
float32 path pass float32 arrays explicitly; jaxmor keeps the dtype of its inputs.

The robot paths and helpers the test files import live in ``tests/models.py`` (``from models import ...``);
the fixtures here are session-scoped: loading is cheap but not free, and models are immutable pytrees
(``replace`` returns a new model), so no test can change what another one gets.
"""

from __future__ import annotations

import warnings

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
SLOW_NOTEBOOKS = ("05_train_locomotion.ipynb",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The notebooks in notebooks/ (run by nbmake, ``addopts = "--nbmake"``) that train (``SLOW_NOTEBOOKS``) count
    as slow tests; the others run by default.

    It sees the notebooks whenever tests/ is collected too (the default).
    """
    for item in items:
        if item.path.suffix == ".ipynb" and item.path.name in SLOW_NOTEBOOKS:
            item.add_marker(pytest.mark.slow)


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
