"""Safe XML reading shared by the URDF and actuator readers.

Robot descriptions are often downloaded, so they are parsed as untrusted input:

* no external entities are resolved (an XXE entity naming a local file does not leak it),
* no DTD is loaded and nothing is fetched from the network,
* a document type declaration with an internal subset (entity, element or attribute declarations) is
  refused outright: no entity is ever defined (which also refuses entity-expansion bombs, "billion
  laughs") and no DTD attribute default ever fills in a value the file does not write; URDF never needs
  them,
* files larger than :data:`MAX_XML_BYTES` (16 MiB) are refused before parsing.

Numbers are parsed with Python's ``float`` (locale independent) and must be finite.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from lxml import etree

from jaxmor.errors import ArgumentError, ModelError, brief_repr
from jaxmor.io.files import shortened

#: Largest robot description accepted, in bytes. Real URDFs are a few hundred KiB at most.
MAX_XML_BYTES = 16 * 1024 * 1024

STRING_SOURCE = "<string>"

#: Line count from which libxml2 needs help to report line numbers (see ``parse_xml``).
_BIG_LINES = 65535

#: A document type declaration's internal subset, and a declaration inside it.
_INTERNAL_SUBSET = re.compile(rb"<!DOCTYPE[^\[>]*\[(.*?)\]\s*>", re.DOTALL)
_DECLARATION = re.compile(rb"<!(ENTITY|ATTLIST|ELEMENT|NOTATION)")


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        attribute_defaults=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def looks_like_xml(text: str) -> bool:
    """Whether a string argument is XML text rather than a file path."""
    return text.lstrip().startswith("<")


def parse_xml(path_or_text: str | os.PathLike, *, max_bytes: int = MAX_XML_BYTES):
    """Parse a file or an XML string safely.

    Args:
        path_or_text: a file path, or XML text (a string whose first non-blank character is ``<``).
        max_bytes: the largest accepted input in bytes.

    Returns:
        ``(root, source)``: the root element and the name used in error messages
        (the path as given, or ``"<string>"``).

    Raises:
        ModelError: the file is missing or cannot be read (a name over the system's length limit, no
            permission), too large, not well-formed XML, or has a DTD with declarations.
        ArgumentError: ``path_or_text`` is neither a string nor an ``os.PathLike``.
    """
    if not isinstance(path_or_text, (str, os.PathLike)):
        raise ArgumentError(
            f"a robot description must be given as a path (str or os.PathLike) or as XML text (str), "
            f"got {type(path_or_text).__name__}"
        )
    if isinstance(path_or_text, str) and looks_like_xml(path_or_text):
        source = STRING_SOURCE
        data = path_or_text.encode("utf-8")
        if len(data) > max_bytes:
            raise ModelError(source, None, f"XML text of {len(data)} bytes exceeds the limit of {max_bytes} bytes")
    else:
        source = str(path_or_text)
        data = _read_file(Path(path_or_text), source, max_bytes)
    if data.count(b"\n") >= _BIG_LINES:
        # libxml2 keeps a line number above 65535 only in the text node after an element; with none (as in
        # "<a/><b>") it reports 65535. A space between adjacent tags (where "<" cannot be part of an
        # attribute value) gives every element such a text node without moving any line.
        data = data.replace(b"><", b"> <")
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else None
        raise ModelError(source, line, f"malformed XML: {exc.msg}") from None
    doctype = root.getroottree().docinfo.internalDTD
    subset = _INTERNAL_SUBSET.search(data)
    declared = subset is not None and _DECLARATION.search(subset.group(1)) is not None
    if doctype is not None and (declared or any(True for _ in doctype.iterentities())):
        line = data[: subset.start()].count(b"\n") + 1 if subset is not None else 1
        raise ModelError(
            source, line, "DTD declarations (entities, elements, attribute lists) are not allowed in robot descriptions"
        )
    for el in root.iter():
        if isinstance(el, etree._Entity):
            raise ModelError(source, el.sourceline, f"unresolved entity reference &{el.name};")
    return root, source


def _read_file(path: Path, source: str, max_bytes: int) -> bytes:
    """The bytes of a description file.

    Raises:
        ModelError: at ``source``: the file is missing, not a regular file, larger than ``max_bytes``, or the
            system refuses its path or its reading (a name over the system's length limit, no permission).
    """
    try:
        if not path.is_file():
            raise ModelError(source, None, "no such file")
        size = path.stat().st_size
        if size > max_bytes:
            raise ModelError(source, None, f"file of {size} bytes exceeds the limit of {max_bytes} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise ModelError(shortened(source), None, f"cannot be read: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the path
        raise ModelError(source, None, "no such file (the path holds a NUL character)") from None


def parse_float(text: str | None, source: str, element, what: str) -> float:
    """Parse one finite number of an attribute.

    Raises:
        ModelError: naming ``what`` and the element's line, if the text is missing, not a
            number, or not finite.
    """
    if text is None:
        raise ModelError(source, element.sourceline, f"{what} is missing")
    try:
        if "_" in text:  # Python's float() accepts "1_0" (= 10); XML numbers do not
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise ModelError(source, element.sourceline, f"{what} is not a number: {brief_repr(text)}") from None
    if not math.isfinite(value):
        raise ModelError(source, element.sourceline, f"{what} is not finite: {brief_repr(text)}")
    return value


def parse_vector(text: str | None, n: int, source: str, element, what: str, default=None) -> tuple[float, ...]:
    """Parse ``n`` finite numbers separated by white space (e.g. ``xyz="0 0 1"``).

    Raises:
        ModelError: if the count is not ``n`` or an entry is not a finite number.
    """
    if text is None:
        if default is not None:
            return tuple(default)
        raise ModelError(source, element.sourceline, f"{what} is missing")
    parts = text.split()
    if len(parts) != n:
        raise ModelError(source, element.sourceline, f"{what} needs {n} numbers, got {len(parts)}: {brief_repr(text)}")
    return tuple(parse_float(p, source, element, what) for p in parts)


# --------------------------------------------------------------------------------------------------
# Reading elements and attributes: every problem is a ModelError naming the source and the line.


def tag(element) -> str | None:
    """The tag of an element, ``None`` for comments and processing instructions."""
    name = element.tag
    return name if isinstance(name, str) else None


def check_attributes(element, allowed: Iterable[str], source: str) -> None:
    """Refuse attributes outside ``allowed`` (namespaced ones, e.g. ``xacro:...``, are not ours and pass).

    Raises:
        ModelError: an unknown attribute, naming it and the known ones.
    """
    allowed = frozenset(allowed)
    for attr in element.attrib:
        if attr.startswith("{"):
            continue
        if attr not in allowed:
            known = ", ".join(sorted(allowed))
            raise ModelError(
                source, element.sourceline, f"unknown attribute '{attr}' on <{element.tag}> (known: {known})"
            )


def check_children(element, allowed: Iterable[str], source: str, misplaced: Mapping[str, str] | None = None) -> None:
    """Refuse child elements outside ``allowed``; ``misplaced`` maps a tag to a more helpful message.

    Raises:
        ModelError: an unexpected child, at its line.
    """
    allowed = frozenset(allowed)
    for child in element:
        name = tag(child)
        if name is None or name in allowed:
            continue
        if misplaced and name in misplaced:
            reason = misplaced[name]
        else:
            known = ", ".join(f"<{t}>" for t in sorted(allowed)) or "none"
            reason = f"unexpected element <{name}> in <{element.tag}> (allowed: {known})"
        raise ModelError(source, child.sourceline, reason)


def number(element, attr: str, source: str, what: str | None = None) -> float | None:
    """A finite number attribute, ``None`` when absent; ``what`` names it in messages
    (default ``"<attr> of <tag>"``).

    Raises:
        ModelError: present but not a finite number.
    """
    text = element.get(attr)
    if text is None:
        return None
    return parse_float(text, source, element, what or f"{attr} of <{element.tag}>")


def required_number(element, attr: str, source: str) -> float:
    """A finite number attribute that must be present.

    Raises:
        ModelError: absent, or not a finite number.
    """
    value = number(element, attr, source)
    if value is None:
        raise ModelError(source, element.sourceline, f"<{element.tag}> needs a {attr} attribute")
    return value


def positive(element, attr: str, value: float, source: str) -> float:
    """``value`` (read from ``attr``) if it is positive.

    Raises:
        ModelError: zero or negative.
    """
    if value <= 0.0:
        raise ModelError(source, element.sourceline, f"{attr} of <{element.tag}> must be positive, got {value!r}")
    return value


def nonnegative(element, attr: str, source: str, default: float, what: str | None = None) -> float:
    """A finite non-negative number attribute, ``default`` when absent; ``what`` names it in messages.

    Raises:
        ModelError: not a finite number, or negative.
    """
    what = what or f"{attr} of <{element.tag}>"
    value = number(element, attr, source, what)
    if value is None:
        return default
    if value < 0.0:
        raise ModelError(source, element.sourceline, f"{what} must not be negative, got {value!r}")
    return value
