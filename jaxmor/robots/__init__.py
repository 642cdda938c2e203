"""The robot descriptions shipped with jaxmor: the repository's top-level ``robots/`` folder, installed as the
data package ``jaxmor.robots.data`` (``setup.py`` and ``pyproject.toml`` map it), so they are there after any install.

* ``"turntable"``: the actuator spec's one-motor turntable (a disc on a continuous joint, gear 10).
* ``"quadruped"``: a KAIST-Hound-like quadruped, 12 DC-motor actuators, knees coupled to their hips
  (``robots/quadruped/README.md`` documents its numbers).
* ``"pendulum"``: a uniform rod on a revolute joint driven by one DC motor (``robots/pendulum/README.md``).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from jaxmor.errors import ArgumentError

#: The shipped robots, by name.
NAMES = ("turntable", "quadruped", "pendulum")

_HERE = Path(__file__).resolve().parent


def _root() -> Path:
    """The folder holding the robot folders: ``jaxmor/robots/data`` in an installed wheel, else the checkout's
    ``robots/`` beside ``jaxmor/`` (an editable install, whose ``jaxmor`` is the checkout's, or a source tree on
    ``sys.path``; a checkout's ``jaxmor/robots/`` has no ``data/``)."""
    installed = _HERE / "data"
    return installed if installed.is_dir() else _HERE.parents[1] / "robots"


def path(name: str) -> Path:
    """The URDF file of a shipped robot, e.g. ``jaxmor.load_urdf(jaxmor.robots.path("quadruped"))``.

    Raises:
        ArgumentError: no shipped robot has that name (the message lists them).
    """
    if name not in NAMES:
        raise ArgumentError(f"unknown shipped robot {name!r}; the shipped robots are {list(NAMES)}")
    return _root() / name / f"{name}.urdf"


#: The quadruped's standing pose (``robots/quadruped/README.md``): every leg at HAA 0, HFE 0.6, KFE -1.2 rad puts
#: its foot (radius 25 mm) right under its hip, so the level base stands ``2 * 0.3 cos(0.6) + 0.025`` m high.
QUADRUPED_STANDING = {"HAA": 0.0, "HFE": 0.6, "KFE": -1.2}
QUADRUPED_STANDING_HEIGHT = 2 * 0.3 * math.cos(0.6) + 0.025


def quadruped_standing_q(model) -> np.ndarray:
    """(nq,) float64 coordinates of the shipped quadruped standing level with its feet touching ``z = 0``
    [m, quaternion w x y z, rad], for a model loaded from ``path("quadruped")`` (any ground height aside).

    Raises:
        ArgumentError: the model's joints are not the quadruped's.
    """
    from jaxmor.model import joint_q_index  # the Model helpers import nothing from here

    expected = {f"{leg}_{joint}" for leg in ("LF", "RF", "LH", "RH") for joint in QUADRUPED_STANDING}
    if set(model.joint_names) != expected or not model.floating_base:
        raise ArgumentError("quadruped_standing_q needs the shipped quadruped (robots.path('quadruped')), floating")
    q = np.asarray(model.q_default, dtype=np.float64).copy()
    q[2] = QUADRUPED_STANDING_HEIGHT
    q[3:7] = (1.0, 0.0, 0.0, 0.0)
    for name in model.joint_names:
        q[joint_q_index(model, name)] = QUADRUPED_STANDING[name.rsplit("_", 1)[1]]
    return q
