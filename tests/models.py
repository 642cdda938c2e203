"""The test suite's shared robot files and helpers, imported by the test files as ``from models import ...``.

A plain module (not ``conftest.py``, which pytest does not mean to be imported): ``tests/`` is on ``sys.path``
because the suite's rootdir ``conftest.py`` lives there (pytest's default ``prepend`` import mode), in every
pytest-xdist worker too. The fixtures (the session's loaded models) stay in ``conftest.py``.

The shipped robots are found through :func:`jaxmor.robots.path`, wherever the package keeps them; the
quadruped's standing pose is the library's :func:`jaxmor.robots.quadruped_standing_q` (one source). Its
independent check against the quadruped's README geometry is ``test_robots.py``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

import jaxmor

ROOT = Path(__file__).resolve().parent.parent
TURNTABLE_URDF = jaxmor.robots.path("turntable")
QUADRUPED_URDF = jaxmor.robots.path("quadruped")
PENDULUM_URDF = jaxmor.robots.path("pendulum")
HOUND_URDF = Path(__file__).resolve().parent / "data" / "actuators" / "hound" / "hound.urdf"

#: A hinge hanging at rest under gravity with a position servo (``ctrl``: the target angle) and, below it, a wrist
#: with a motor (``ctrl``: the torque): affine actuators only (test_drive_train.py, test_cli.py).
SERVO_MJCF = """
<mujoco model="servo">
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="1"/>
      <body name="tip" pos="0 0 -0.5">
        <joint name="wrist" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="servo" joint="hinge" kp="20"/>
    <motor name="wrist_motor" joint="wrist" gear="2"/>
  </actuator>
</mujoco>
"""

# The quadruped's documented layout (its README): four legs, the joints (and their actuators) in this order,
# spherical feet of radius 0.025 m.
QUADRUPED_LEGS = ("LF", "RF", "LH", "RH")
QUADRUPED_JOINTS = tuple(f"{leg}_{j}" for leg in QUADRUPED_LEGS for j in ("HAA", "HFE", "KFE"))
QUADRUPED_FOOT_RADIUS = 0.025


def quadruped_standing_q(model: jaxmor.Model, height: float | None = None) -> np.ndarray:
    """(nq,) float64 NumPy array: :func:`jaxmor.robots.quadruped_standing_q` (feet on ``z = 0``), with the
    level base moved to ``height`` [m] when one is given (the legs unchanged: a drop from that height)."""
    q = jaxmor.robots.quadruped_standing_q(model)
    if height is not None:
        q[2] = height
    return q


def load_shipped(path: Path) -> jaxmor.Model:
    """Load with every warning turned into an error: the shipped robots must load silently."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return jaxmor.load_urdf(path)
