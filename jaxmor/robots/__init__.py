"""The robot descriptions shipped with jaxmor (package data, so they are there after any install).

* ``"turntable"``: the actuator spec's one-motor turntable (a disc on a continuous joint, gear 10).
* ``"quadruped"``: a KAIST-Hound-like quadruped, 12 DC-motor actuators, knees coupled to their hips
  (``quadruped/README.md`` documents its numbers).
* ``"pendulum"``: a uniform rod on a revolute joint, no actuator (``pendulum/README.md``).
"""

from __future__ import annotations

from pathlib import Path

from jaxmor.errors import ArgumentError

#: The shipped robots, by name.
NAMES = ("turntable", "quadruped", "pendulum")


def path(name: str) -> Path:
    """The URDF file of a shipped robot, e.g. ``jaxmor.load_urdf(jaxmor.robots.path("quadruped"))``.

    Raises:
        ArgumentError: no shipped robot has that name (the message lists them).
    """
    if name not in NAMES:
        raise ArgumentError(f"unknown shipped robot {name!r}; the shipped robots are {list(NAMES)}")
    return Path(__file__).resolve().parent / name / f"{name}.urdf"
