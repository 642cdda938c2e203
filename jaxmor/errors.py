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


def brief_repr(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut to its first ``limit`` characters when longer.

    Args:
        value: anything.
        limit: the most characters of the representation kept.

    Returns:
        The representation, or its first ``limit`` characters followed by ``"... (N characters)"`` (for a
        string: the quoted first ``limit`` characters and the string's length).
    """
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"
