"""Errors raised by jaxmor.

Every error raised for bad input derives from :class:`JaxmorError`. Errors about a
robot description carry the file (or ``"<string>"``) and the line of the offending
element, so a message reads ``robot.urdf:42: joint 'knee' names a missing link 'shin'``.
"""

from __future__ import annotations


class JaxmorError(Exception):
    """Base class of every error jaxmor raises for bad input."""


class ModelError(JaxmorError):
    """A robot description (URDF, actuator file) is invalid.

    Attributes:
        source: the file path, or ``"<string>"`` for XML given as a string.
        line: the 1-based line of the offending element, or ``None`` when unknown.
        reason: the message without the location prefix.
    """

    def __init__(self, source: str, line: int | None, reason: str):
        self.source = source
        self.line = line
        self.reason = reason
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {reason}")


class ArgumentError(JaxmorError, ValueError):
    """An API call received an argument of the wrong shape, type or value."""
