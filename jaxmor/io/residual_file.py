"""A learned residual in an actuator file: ``<residual file="go2_residual.npz"/>`` and the weights file it names.

The element sits at the top level of the file that holds the actuators: a direct child of a URDF's ``<robot>``,
or of the ``<actuators>`` root of an actuator file (the MJCF extension's ``jaxmor:actuators`` file, and what
:func:`jaxmor.import_actuators` reads); at most one, with the one attribute ``file``. The network itself
(:class:`jaxmor.ResidualNetwork`) is a NumPy archive (``.npz``, :func:`numpy.savez`) holding these entries:

* ``history``: () int, the steps of history the network reads (``H >= 1``);
* ``actuators``: (n,) str, the names of the actuators it acts on (at least one, each an actuator of the model);
* ``input_scale`` (3,) [Nm, rad/s, rad], ``output_scale`` () [Nm], ``w_in`` (3 H, W), ``b_in`` (W,),
  ``w_hidden`` (L, W, W), ``b_hidden`` (L, W), ``w_out`` (W,), ``b_out`` (): floating-point arrays, the
  fields of :class:`jaxmor.ResidualNetwork`; the layer sizes ``W`` (units per hidden layer) and ``L + 1``
  (hidden layers) are their shapes.

The file is looked up and confined like an actuator file (:func:`jaxmor.io.actuators.resolve_actuator_file`: the
description's folder tree and the search path; a file outside them, missing or unreadable gets one message),
read without pickles (``allow_pickle=False``) and refused when it declares more than :data:`MAX_RESIDUAL_BYTES`
of arrays. Here it is only read; whether it fits the model (actuator names, shapes, the history's length) is
checked when the model is built (:func:`jaxmor.modeling.learned.residual_from_file`), with the element's file and
line in the message.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxmor.errors import ModelError
from jaxmor.io.actuators import locate_actuator_file
from jaxmor.io.files import shortened
from jaxmor.io.xml import check_attributes, check_children, tag

__all__ = ["MAX_RESIDUAL_BYTES", "RESIDUAL_TAG", "ResidualFile", "load_weights", "read_residual", "weights_file"]

#: The element's tag.
RESIDUAL_TAG = "residual"
#: The most bytes a weights file may hold, compressed and uncompressed (a network of a few thousand weights
#: needs well under a megabyte).
MAX_RESIDUAL_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ResidualFile:
    """A ``<residual>`` element and the arrays of its weights file.

    Attributes:
        file: the file as the element names it.
        path: where it was found (links resolved).
        arrays: entry name -> array, as the file holds them (the module docstring's layout, not yet checked
            against a model).
        source: the file that holds the element (a path, or ``"<string>"``).
        line: the element's line in it.
    """

    file: str
    path: Path
    arrays: dict[str, np.ndarray] = field(repr=False)
    source: str
    line: int | None


def load_weights(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of a weights file, read without pickles.

    Raises:
        ValueError, OSError, zipfile.BadZipFile: not a NumPy archive, one over :data:`MAX_RESIDUAL_BYTES`, an entry
            that is not an array (or needs pickles), or an unreadable file (the reason in the message).
    """
    path = Path(path)
    if path.stat().st_size > MAX_RESIDUAL_BYTES:
        raise ValueError(f"more than {MAX_RESIDUAL_BYTES} bytes")
    with zipfile.ZipFile(path) as archive:
        if sum(info.file_size for info in archive.infolist()) > MAX_RESIDUAL_BYTES:
            raise ValueError(f"its arrays hold more than {MAX_RESIDUAL_BYTES} bytes")
    out = {}
    with np.load(path, allow_pickle=False) as archive:
        for name in archive.files:
            value = archive[name]
            if not isinstance(value, np.ndarray):
                raise ValueError(f"its entry {name!r} is not a NumPy array")
            out[name] = value
    return out


def read_residual(
    root, source: str, *, base_dir: str | os.PathLike | None, extra_dirs: Sequence[str | os.PathLike] = ()
) -> ResidualFile | None:
    """The ``<residual>`` child of ``root`` (a URDF's ``<robot>``, an ``<actuators>`` root) and its weights, or
    ``None`` without one.

    Args:
        root: the element (lxml).
        source: its file in messages (a path or ``"<string>"``).
        base_dir, extra_dirs: where the weights file is looked up, as for an actuator file.

    Raises:
        ModelError: at ``source`` and the line of the element: a second ``<residual>``, an unknown attribute or
            child, no ``file``, a file not found (or not readable, or outside the allowed folders: one message), or
            one that is not a weights file.
    """
    found = [el for el in root if tag(el) == RESIDUAL_TAG]
    if not found:
        return None
    if len(found) > 1:
        raise ModelError(source, found[1].sourceline, f"<{tag(root)}> has a second <residual>; give at most one")
    el = found[0]
    check_attributes(el, ("file",), source)
    check_children(el, (), source)
    file = (el.get("file") or "").strip()
    if not file:
        raise ModelError(source, el.sourceline, '<residual> needs file="..." (a weights file, .npz)')
    path = locate_actuator_file(file, base_dir, extra_dirs, source, el, kind="residual file")
    return weights_file(file, path, source, el)


def weights_file(file: str, path: Path, source: str, element) -> ResidualFile:
    """The weights file at ``path`` (already located), which ``element`` of ``source`` names as ``file``, read.

    Raises:
        ModelError: at ``source`` and the element's line: not a weights file (:func:`load_weights`'s reason).
    """
    try:
        arrays = load_weights(path)
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        reason = getattr(err, "strerror", None) or str(err)
        message = f"{shortened(file)!r} is not a residual weights file ({reason})"
        raise ModelError(source, element.sourceline, message) from None
    return ResidualFile(file, path, arrays, source, element.sourceline)
