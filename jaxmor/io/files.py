"""Files a robot description names (actuator files, meshes, textures, includes), read only in allowed folders.

Robot descriptions are untrusted: a path in one (``..``, a symbolic link, an absolute path) may name any file
on the machine. The readers and :func:`jaxmor.export_package` therefore accept a named file only where it
really lies (links resolved) inside one of the allowed folder trees the caller gives, and only if it is a
readable regular file. A file outside them, a missing file and an unreadable file are one and the same
outcome (``None``), so that an error built from it never tells whether a file exists elsewhere. A name the
system refuses (longer than its limit of 255 bytes per name, say) names no file: the same outcome.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from jaxmor.errors import ArgumentError

__all__ = ["confined_file", "inside", "outside_hint", "readable_file", "shortened", "writing"]

#: The most characters of a file name a message quotes.
QUOTED_CHARACTERS = 80


def inside(path: Path, tree: Path) -> bool:
    """Whether ``path`` is ``tree`` or lies below it (both already resolved)."""
    return path == tree or tree in path.parents


def shortened(name: str | os.PathLike) -> str:
    """A file name (or path) for a message: each of its components (names between separators) longer than
    :data:`QUOTED_CHARACTERS` with its middle elided (``...``), the others as they are."""
    keep = (QUOTED_CHARACTERS - 3) // 2
    parts = str(name).split(os.sep)
    return os.sep.join(p if len(p) <= QUOTED_CHARACTERS else f"{p[:keep]}...{p[-keep:]}" for p in parts)


@contextlib.contextmanager
def writing(where: str, argument: str, path: str | os.PathLike) -> Iterator[None]:
    """Writes of the file or folder ``path``, given as ``argument`` of the function ``where``: a failure the system
    reports (a name over its length limit, a folder where a file belongs, no permission, a full disk) is an
    ArgumentError naming the argument, the path (:func:`shortened`) and the system's reason.

    Raises:
        ArgumentError: from the OSError of a write in the block.
    """
    try:
        yield
    except OSError as err:
        reason = err.strerror or str(err)
        other = err.filename is not None and str(err.filename) != os.fspath(path)
        detail = f" ({shortened(err.filename)})" if other else ""
        raise ArgumentError(f"{where}: {argument} {shortened(path)!r} cannot be written: {reason}{detail}") from None


def archive_bytes(path: str | os.PathLike) -> int | None:
    """The bytes a NumPy file's arrays take once read: an ``.npz`` archive's by the sizes its entries declare (nothing
    decompressed), another file's by its size; ``None`` for a file that cannot be looked at (the reader names why)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return sum(info.file_size for info in archive.infolist())
        return os.path.getsize(path)
    except (OSError, zipfile.BadZipFile, ValueError, NotImplementedError):  # the last: a zip version or method
        return None


def readable_file(path: Path) -> bool:
    """Whether ``path`` is a readable regular file.

    Returns:
        ``False`` also for a path the system refuses to look up (a name over its length limit, a NUL byte).
    """
    try:
        return path.is_file() and os.access(path, os.R_OK)
    except (OSError, ValueError):
        return False


def _unhidden(path: Path, root: Path) -> bool:
    """Whether no name of ``path`` below ``root`` is hidden (starts with a dot)."""
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def _resolved(candidates: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """Each candidate with its links resolved, in order; those that cannot be resolved left out."""
    for candidate in candidates:
        try:
            yield Path(candidate).resolve()
        except (OSError, RuntimeError, ValueError):
            continue


def outside_hint(candidates: Iterable[str | os.PathLike], trees: Sequence[str | os.PathLike], keyword: str) -> str:
    """The end of a refusal's message for a file name that points outside the allowed folders:
    ``"; PATH is outside them: to read it from there, pass KEYWORD"``, from the first candidate that resolves
    outside every one of ``trees``, or ``""``. The same whether the file exists or not (a refusal says nothing about
    what lies outside), and nothing for a path with a hidden name on it (``.ssh``).

    Args:
        candidates: the paths the file name may mean.
        trees: the allowed folders.
        keyword: the loader argument that allows a folder, with ``{folder}`` where the folder goes, e.g.
            ``"assets_dir={folder!r}"``.
    """
    roots = [Path(t).resolve() for t in trees]
    for real in _resolved(candidates):
        if any(inside(real, t) for t in roots):
            continue
        # the names below where the file's path leaves the model's folders (not the hidden ones above both)
        below = [real.relative_to(os.path.commonpath([real, t])).parts for t in roots] or [real.parts[1:]]
        if any(part.startswith(".") for part in min(below, key=len)):
            continue
        allow = keyword.format(folder=str(real.parent))
        return f"; {shortened(real)} is outside them: to read it from there, pass {allow}"
    return ""


def confined_file(
    candidates: Iterable[str | os.PathLike],
    trees: Sequence[str | os.PathLike],
    parents: Sequence[str | os.PathLike] = (),
) -> Path | None:
    """The first candidate that is an allowed, readable regular file, links resolved.

    Args:
        candidates: the paths a description's file name may mean, in search order.
        trees: folders in which (at any depth) a file may lie.
        parents: folders directly in which (not below) a file may lie.

    Returns:
        The resolved path of the first candidate whose real path lies in one of ``trees`` or directly in one of
        ``parents``, with no hidden name (``.ssh``, ``.env``) on its way below that folder, and that is a readable
        regular file; ``None`` if there is none (whether missing, not readable or outside).
    """
    roots = [Path(t).resolve() for t in trees]
    folders = [Path(p).resolve() for p in parents]
    for real in _resolved(candidates):
        where = any(inside(real, t) and _unhidden(real, t) for t in roots)
        where = where or (real.parent in folders and not real.name.startswith("."))
        if where and readable_file(real):
            return real
    return None
