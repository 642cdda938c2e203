"""MJCF height fields (``<asset><hfield>`` and a ``<geom type="hfield">`` in the world body), read with MuJoCo's
conventions into a :class:`~jaxmor.io.description.HeightFieldDescription` (the builder gives it to the ground,
:func:`jaxmor.with_height_field`).

The heights come from ``elevation`` (``nrow x ncol`` numbers, the file's first row at the largest ``y``, as MuJoCo
reads it; without it all 0, as MuJoCo starts them, with a warning), from a PNG ``file`` (its first pixel row at the
largest ``y``; a colour PNG's red channel, as MuJoCo's decoder reads it; read with Pillow, an optional dependency) or
from a MuJoCo binary ``file`` (two int32 ``nrow``, ``ncol``, then ``nrow x ncol`` float32, its first row at the
smallest ``y``); files are found as mesh files are, beside the model. Either is normalized to ``[0, 1]`` as in MuJoCo
(a constant field is all zeros), then scaled by ``size``'s elevation and raised by the geom's ``z``. The geom is
static, in the world body, axis-aligned (a rotation is refused), one per model; its ``friction`` is the field's; its
``size[3]`` (the base's depth) has no effect.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np

from jaxmor.io.description import HeightFieldDescription
from jaxmor.io.mjcf_document import Values

#: Largest rotation entry difference from the identity accepted for a height field geom.
AXIS_ALIGNED = 1e-9


@dataclass
class HeightFieldAsset:
    """An ``<hfield>``: its normalized data (nrow, ncol), row 0 at the smallest ``y``, and its ``size``."""

    data: np.ndarray
    size: np.ndarray
    element: object


#: The most pixels a PNG height field may have (4096 x 4096), checked from its header before it is decoded.
MAX_HFIELD_PIXELS = 2**24


def read_hfield_asset(v: Values, name: str, read_file) -> HeightFieldAsset:
    """An ``<hfield>`` asset (module docstring); ``read_file(file) -> bytes`` reads a file beside the model.

    Raises:
        ModelError: a missing or bad size, grid or data (the element's line).
    """
    size = v.numbers("size", 4)
    if size is None or np.any(size[:3] <= 0) or size[3] < 0:
        raise v.error(f"hfield {name!r} needs size='radius_x radius_y elevation_z base_z' (three positive, base >= 0)")
    file = v.text("file")
    if file:
        if v.has("elevation"):
            raise v.error(f"hfield {name!r}: give file or elevation, not both")
        raw = read_file(file)
        data = _png(v, name, raw) if file.lower().endswith(".png") else _binary(v, name, raw)
    else:
        data = _elevation(v, name)
    if not np.all(np.isfinite(data)):
        raise v.error(f"hfield {name!r}: its data must be finite")
    low, high = float(data.min()), float(data.max())
    data = (data - low) / (high - low) if high > low else np.zeros_like(data)
    return HeightFieldAsset(data, size, v.element)


def _elevation(v: Values, name: str) -> np.ndarray:
    nrow, ncol = v.integer("nrow", 0), v.integer("ncol", 0)
    if nrow < 2 or ncol < 2:
        raise v.error(f"hfield {name!r} needs nrow and ncol >= 2 with elevation (or a file), got {nrow} x {ncol}")
    if nrow * ncol > MAX_HFIELD_PIXELS:
        raise v.error(f"hfield {name!r}: {nrow} x {ncol} exceeds the {MAX_HFIELD_PIXELS:,} samples jaxmor reads")
    values = v.numbers("elevation", nrow * ncol)
    if values is None:
        warnings.warn(
            f"{v.doc.source(v.element)}:{v.line}: hfield {name!r} has no elevation data: its heights are all 0, as "
            "MuJoCo starts them; a program that fills MuJoCo's hfield_data at run time sets jaxmor's with "
            "jaxmor.with_height_field",
            UserWarning,
            stacklevel=2,
        )
        return np.zeros((nrow, ncol))
    return values.reshape(nrow, ncol)[::-1]  # the file's first row is the largest y


def _png(v: Values, name: str, raw: bytes) -> np.ndarray:
    """A PNG's pixels (a colour one's red channel), its first row at the largest ``y`` (MuJoCo's reading); read with
    Pillow."""
    try:
        from PIL import Image  # optional: Pillow comes with the plot and test extras
    except ImportError:
        raise v.error(f"hfield {name!r}: reading a PNG height field needs Pillow (pip install pillow)") from None
    try:
        image = Image.open(io.BytesIO(raw))  # reads the header only
        width, height = image.size
        if width * height > MAX_HFIELD_PIXELS:
            raise v.error(
                f"hfield {name!r}: a PNG of {width} x {height} pixels, more than MAX_HFIELD_PIXELS "
                f"({MAX_HFIELD_PIXELS:,}), refused before it is decoded"
            )
        image.load()
    except (OSError, ValueError, Image.DecompressionBombError) as err:
        raise v.error(f"hfield {name!r}: not a readable PNG ({err})") from None
    if image.mode in ("L", "I;16", "I"):
        data = np.asarray(image, dtype=np.float64)
    else:  # MuJoCo's PNG decoder (lodepng) turns colour into grey by keeping the red channel
        data = np.asarray(image.convert("RGBA"))[..., 0].astype(np.float64)
    if data.ndim != 2 or min(data.shape) < 2:
        raise v.error(f"hfield {name!r}: a PNG height field needs at least 2 x 2 pixels, got {data.shape}")
    return data[::-1]


def _binary(v: Values, name: str, raw: bytes) -> np.ndarray:
    if len(raw) < 8:
        raise v.error(f"hfield {name!r}: the binary file is shorter than its header")
    nrow, ncol = (int(x) for x in np.frombuffer(raw[:8], dtype="<i4"))
    if nrow < 2 or ncol < 2 or len(raw) != 8 + 4 * nrow * ncol:
        raise v.error(f"hfield {name!r}: the binary file holds {len(raw)} bytes, not a {nrow} x {ncol} grid's")
    return np.frombuffer(raw[8:], dtype="<f4").astype(np.float64).reshape(nrow, ncol)


def read_hfield_geom(
    v: Values, name: str, asset: HeightFieldAsset, rotation: np.ndarray, translation: np.ndarray, friction: float
) -> HeightFieldDescription:
    """A ``<geom type="hfield">`` of the world body on its asset, at its world pose.

    Raises:
        ModelError: a rotated geom.
    """
    if np.abs(rotation - np.eye(3)).max() > AXIS_ALIGNED:
        raise v.error(f"geom {name!r}: a rotated height field is not supported (jaxmor's is axis-aligned)")
    size = asset.size
    nrow, ncol = asset.data.shape
    return HeightFieldDescription(
        heights=translation[2] + size[2] * asset.data,
        spacing=(2.0 * size[0] / (ncol - 1), 2.0 * size[1] / (nrow - 1)),
        origin=(translation[0] - size[0], translation[1] - size[1]),
        friction=friction,
        line=v.line,
        name=name,
    )
