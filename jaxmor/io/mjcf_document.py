"""The document of an MJCF model: its files (``<include>`` expanded, each element's file remembered), the
attribute checks against :mod:`jaxmor.io.mjcf_schema`, attribute values read into numbers with errors at the
element's file and line, the compiler settings and the default classes. :mod:`jaxmor.io.mjcf` reads the model
from it.

Files are read as untrusted input (:func:`jaxmor.io.xml.parse_xml`). An included file is looked up beside the
including file, then beside the main file, and read only inside the main file's directory tree or
``assets_dir``'s; a file is included at most once (no cycles), at most :data:`MAX_INCLUDES` files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxmor.errors import ModelError, brief_repr
from jaxmor.io.files import confined_file, outside_hint, shortened
from jaxmor.io.mjcf_schema import ACTUATOR_SPECS, IGNORED_ELEMENTS, REFUSED_ELEMENTS, SPECS, ElementSpec
from jaxmor.io.xml import STRING_SOURCE, parse_float, parse_xml, tag

#: Most files an MJCF model may include.
MAX_INCLUDES = 256
#: Where an included element keeps the index of its file (a namespaced attribute, invisible to the checks).
_SOURCE_ATTR = "{urn:jaxmor:mjcf}source"
CLASS_ROOT = "main"


# --------------------------------------------------------------------------------------------------
# The document: files, includes, and where each element comes from.


@dataclass
class Document:
    """The model's XML tree with every ``<include>`` expanded, and the file each element comes from."""

    root: object
    sources: list[str]
    main_dir: Path | None
    assets_dir: Path | None
    written: dict[str, set[str]] | None = None

    def source(self, element) -> str:
        index = element.get(_SOURCE_ATTR)
        return self.sources[int(index)] if index is not None else self.sources[0]

    def unnamed(self, stem: str, index: int, group: str) -> str:
        """The name given to an unnamed element: ``stem + index`` (MuJoCo's id), with ``_`` added until no element of
        ``group`` (a tag, or the section tag its elements sit in: ``actuator``, ``sensor``, ``tendon``,
        ``equality``) anywhere in the file is named so, so a generated name never takes a written one."""
        written = self._written_names().get(group, set())
        name = f"{stem}{index}"
        while name in written:
            name += "_"
        return name

    def _written_names(self) -> dict[str, set[str]]:
        if self.written is None:
            self.written = {}
            for el in self.root.iter():
                name, kind = el.get("name"), tag(el)
                if name is None or kind is None:
                    continue
                parent = el.getparent()
                groups = {"freejoint": "joint"}.get(kind, kind), tag(parent) if parent is not None else None
                for group in groups:
                    self.written.setdefault(group, set()).add(name)
        return self.written

    def error(self, element, message: str) -> ModelError:
        """A ModelError at the element's file and line; the message names the element's tag."""
        if f"<{tag(element)}" not in message:
            message = f"<{tag(element)}> {message}"
        return ModelError(self.source(element), element.sourceline, message)


def read_document(path_or_xml, assets_dir) -> Document:
    root, source = parse_xml(path_or_xml)
    main_dir = None if source == STRING_SOURCE else Path(source).resolve().parent
    assets = None if assets_dir is None else Path(assets_dir)
    doc = Document(root, [source], main_dir, assets)
    if tag(root) != "mujoco":
        raise doc.error(root, f"the root element is <{tag(root)}>, not <mujoco>")
    included: set[Path] = set()
    while True:
        pending = [el for el in root.iter() if tag(el) == "include"]
        if not pending:
            return doc
        for el in pending:
            _include(doc, el, included)


#: The root elements an included file may have: MuJoCo takes the children of either.
INCLUDED_ROOTS = ("mujoco", "mujocoinclude")


def _include(doc: Document, el, included: set[Path]) -> None:
    check_known(doc, el, SPECS["include"])
    if len(el):
        raise doc.error(el, "<include> must be empty")
    name = el.get("file")
    if not name:
        raise doc.error(el, "<include> needs a file attribute")
    source = doc.source(el)
    includer = None if source == STRING_SOURCE else Path(source).resolve().parent
    bases = [d for d in (includer, doc.main_dir, doc.assets_dir) if d is not None]
    if not bases:
        raise doc.error(el, f"<include file={name!r}> in MJCF text needs assets_dir (the folder it is in)")
    trees = [d for d in (doc.main_dir, doc.assets_dir) if d is not None]
    candidates = [base / name for base in bases]  # an absolute name stays itself
    found = confined_file(candidates, trees)
    if found is None:
        where = ", ".join(str(t) for t in trees)
        hint = outside_hint(candidates, trees, "assets_dir={folder!r}")
        raise doc.error(
            el,
            f"included file {shortened(name)!r} not found or not readable inside the model's folders "
            f"(searched: {where}){hint}",
        )
    if found in included:
        raise doc.error(el, f"file {name!r} is included twice (an include cycle?)")
    if len(included) == MAX_INCLUDES:
        raise doc.error(el, f"the model includes more than {MAX_INCLUDES} files")
    included.add(found)
    sub_root, sub_source = parse_xml(found)
    if tag(sub_root) not in INCLUDED_ROOTS:
        raise ModelError(
            sub_source,
            sub_root.sourceline,
            f"an included file's root is <{tag(sub_root)}>, not <mujoco> (or <mujocoinclude>)",
        )
    index = str(len(doc.sources))
    doc.sources.append(sub_source)
    for node in sub_root.iter():
        if tag(node) is not None:
            node.set(_SOURCE_ATTR, index)
    parent = el.getparent()
    position = parent.index(el)
    parent.remove(el)
    for offset, child in enumerate([c for c in sub_root if tag(c) is not None]):
        parent.insert(position + offset, child)


def attributes(element) -> dict[str, str]:
    """The element's own attributes (namespaced ones, e.g. the source marker, left out)."""
    return {k: v for k, v in element.attrib.items() if not k.startswith("{")}


def check_known(doc: Document, element, spec: ElementSpec, attrs: dict[str, str] | None = None) -> None:
    """Refuse an attribute MuJoCo does not know (``attrs`` defaults to the element's own)."""
    for name in attributes(element) if attrs is None else attrs:
        if name not in spec.known:
            known = ", ".join(sorted(spec.known))
            raise doc.error(element, f"unknown attribute '{name}' on <{tag(element)}> (known: {known})")


def check_refused(doc: Document, element, spec: ElementSpec, attrs: dict[str, str]) -> None:
    """Refuse an attribute whose value asks for physics jaxmor does not model."""
    for name, (neutral, reason) in spec.refused.items():
        text = attrs.get(name)
        if text is not None and not neutral(text):
            raise doc.error(element, f"<{tag(element)}> {name}={brief_repr(text)}: {reason}")


# --------------------------------------------------------------------------------------------------
# Values of attributes.


class Values:
    """An element's attributes after its default class, read into numbers with errors at its line."""

    def __init__(self, doc: Document, element, attrs: dict[str, str]):
        self.doc, self.element, self.attrs = doc, element, attrs
        self.line = element.sourceline

    def error(self, message: str) -> ModelError:
        return self.doc.error(self.element, message)

    def has(self, name: str) -> bool:
        return name in self.attrs

    def text(self, name: str, default: str | None = None) -> str | None:
        return self.attrs.get(name, default)

    def numbers(self, name: str, low: int, high: int | None = None, default=None) -> np.ndarray | None:
        """Between ``low`` and ``high`` (default ``low``) numbers, as a float64 array, or ``default``."""
        text = self.attrs.get(name)
        if text is None:
            return None if default is None else np.asarray(default, dtype=np.float64)
        parts = text.split()
        high = low if high is None else high
        if not low <= len(parts) <= high:
            count = f"{low}" if low == high else f"{low} to {high}"
            got = f"got {len(parts)}: {brief_repr(text)}"
            raise self.error(f"{name} of <{tag(self.element)}> needs {count} numbers, {got}")
        what = f"{name} of <{tag(self.element)}>"
        return np.array([parse_float(p, self.doc.source(self.element), self.element, what) for p in parts])

    def number(self, name: str, default: float | None = None) -> float | None:
        values = self.numbers(name, 1)
        return default if values is None else float(values[0])

    def integer(self, name: str, default: int) -> int:
        text = self.attrs.get(name)
        if text is None:
            return default
        try:
            return int(text)
        except ValueError:
            raise self.error(f"{name} of <{tag(self.element)}> is not an integer: {brief_repr(text)}") from None

    def choice(self, name: str, options: Sequence[str], default: str) -> str:
        text = self.attrs.get(name, default).strip()
        if text not in options:
            allowed = ", ".join(options)
            raise self.error(f"{name} of <{tag(self.element)}> must be one of {allowed}, got {brief_repr(text)}")
        return text

    def flag(self, name: str, default: bool) -> bool:
        return self.choice(name, ("true", "false"), "true" if default else "false") == "true"

    def nonnegative(self, name: str, default: float = 0.0) -> float:
        value = self.number(name, default)
        if value < 0.0:
            raise self.error(f"{name} of <{tag(self.element)}> must not be negative, got {value!r}")
        return value


# --------------------------------------------------------------------------------------------------
# Compiler settings and default classes.


@dataclass
class Compiler:
    degree: bool = True
    eulerseq: str = "xyz"
    autolimits: bool = True
    meshdir: str = ""
    strippath: bool = False
    inertiafromgeom: str = "auto"
    inertiagroups: tuple[int, int] = (0, 5)
    boundmass: float = 0.0
    boundinertia: float = 0.0
    settotalmass: float = -1.0

    def angle(self, value: float) -> float:
        return math.radians(value) if self.degree else value


def read_compiler(doc: Document, el, compiler: Compiler) -> None:
    spec = SPECS["compiler"]
    attrs = attributes(el)
    check_known(doc, el, spec)
    check_refused(doc, el, spec, attrs)
    for child in el:
        if tag(child) not in (None, "lengthrange"):
            raise doc.error(child, f"unexpected element <{tag(child)}> in <compiler>")
    v = Values(doc, el, attrs)
    compiler.degree = v.choice("angle", ("degree", "radian"), "degree" if compiler.degree else "radian") == "degree"
    seq = v.text("eulerseq", compiler.eulerseq)
    if len(seq) != 3 or any(c not in "xyzXYZ" for c in seq):
        raise v.error(f"eulerseq must be three of x, y, z, X, Y, Z, got {seq!r}")
    compiler.eulerseq = seq
    compiler.autolimits = v.flag("autolimits", compiler.autolimits)
    compiler.meshdir = v.text("meshdir", v.text("assetdir", compiler.meshdir))
    compiler.strippath = v.flag("strippath", compiler.strippath)
    compiler.inertiafromgeom = v.choice("inertiafromgeom", ("auto", "true", "false"), compiler.inertiafromgeom)
    if v.has("inertiagrouprange"):
        groups = v.numbers("inertiagrouprange", 2)
        compiler.inertiagroups = (int(groups[0]), int(groups[1]))
    compiler.boundmass = v.nonnegative("boundmass", compiler.boundmass)
    compiler.boundinertia = v.nonnegative("boundinertia", compiler.boundinertia)
    compiler.settotalmass = v.number("settotalmass", compiler.settotalmass)


#: The elements a default class can hold that the reader uses; the others in a default are looks (camera,
#: light, material, texture) or refused wherever used.
DEFAULTED = ("joint", "geom", "mesh", "site", "pair", "equality", "tendon", *ACTUATOR_SPECS)


@dataclass
class ClassDefaults:
    parent: str | None
    attrs: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The actuator shortcuts of this class in document order: ``(kind, attributes)``.
    actuators: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def read_defaults(doc: Document, sections) -> dict[str, ClassDefaults]:
    classes: dict[str, ClassDefaults] = {CLASS_ROOT: ClassDefaults(None)}
    stack = [(el, None) for el in reversed(sections)]
    while stack:
        el, parent = stack.pop()
        check_known(doc, el, SPECS["default"])
        name = el.get("class") or CLASS_ROOT if parent is None else el.get("class")
        if parent is not None and not name:
            raise doc.error(el, "a nested <default> needs a class attribute")
        if parent is not None and name in classes:
            raise doc.error(el, f"default class {name!r} is defined twice")
        cls = classes.setdefault(name, ClassDefaults(parent))
        for child in el:
            kind = tag(child)
            if kind is None:
                continue
            if kind == "default":
                stack.append((child, name))
            elif kind in ACTUATOR_SPECS:
                check_known(doc, child, ACTUATOR_SPECS[kind])
                cls.actuators.append((kind, attributes(child)))
            elif kind in DEFAULTED:
                check_known(doc, child, SPECS[kind])
                cls.attrs.setdefault(kind, {}).update(attributes(child))
            elif kind in REFUSED_ELEMENTS:
                raise doc.error(child, f"<{kind}> in <default>: {REFUSED_ELEMENTS[kind]}")
            elif kind not in IGNORED_ELEMENTS:
                raise doc.error(child, f"unexpected element <{kind}> in <default>")
    return classes


def class_chain(doc: Document, classes: dict[str, ClassDefaults], name: str, element) -> list[ClassDefaults]:
    if name not in classes:
        raise doc.error(element, f"unknown default class {name!r} (defined: {', '.join(sorted(classes))})")
    chain = []
    while name is not None:
        chain.append(classes[name])
        name = classes[name].parent
    return chain[::-1]
