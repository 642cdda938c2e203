"""How an array leaf of the Model's dataclasses is declared: once, where the field is, with its shape and kind.

Every ``jax.Array`` field of :class:`~jaxmor.Model` and of the dataclasses it holds is written
``name: jax.Array = leaf(dims, ...)``. The code derives from that declaration what it needs to know of the field:
the checkpoint format's expected shape and dtype kind (:mod:`jaxmor.modeling.checkpoint_format`), how
:func:`jaxmor.combine` merges a Model leaf (along its first dim, or kept when it is a scalar), and
:func:`jaxmor.randomize`'s parameter table (the public name, the valid domain, the elements' names from the first
dim: :mod:`jaxmor.tools.randomization`). ``tests/test_checkpoint_fuzz.py`` fails on an array field without one.

A dim is an ``int`` or the name of a count of :data:`COUNTS`, counted from the static fields of the dataclass or
of its parents (the checkpoint reader's ``_COUNTS``), or bound by the first leaf that uses it.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from typing import Any

from flax import struct

__all__ = ["COUNTS", "DOMAINS", "KINDS", "LeafDeclaration", "declared_leaves", "leaf", "model_leaves"]

#: The counts a leaf's dims may name, and what each counts.
COUNTS = {
    "nb": "bodies",
    "nl": "links",
    "ng": "geoms",
    "nm": "meshes",
    "mesh_vertices": "a mesh's vertices, padded to the largest mesh's",
    "mesh_planes": "a mesh's face planes, padded to the largest mesh's",
    "nq": "generalized coordinates",
    "nv": "generalized velocities",
    "na": "motor actuators",
    "nk": "the motor actuators' couplings, all actuators together",
    "nu": "affine actuators",
    "nf": "the learned residual's inputs (3 per step of history)",
    "width": "the learned residual's units per hidden layer",
    "extra": "the learned residual's hidden layers after the first",
    "ns": "sites",
    "nsensor": "sensors",
    "ni": "the sensors that read an inertial frame",
    "np": "connect and weld equalities",
    "nj": "joint equalities (in Model: joints)",
    "nt": "tendons (in Equalities: tendon equalities)",
    "ntj": "the tendons' joint terms, all tendons together",
    "ne": "equalities",
    "nw": "a terrain grid's world geoms",
    "nr": "a terrain grid's robot geoms",
    "ncell": "a terrain grid's cells",
    "capacity": "a terrain grid cell's slots",
    "ny": "a height field's rows",
    "nx": "a height field's columns",
}
#: A leaf's dtype kinds (NumPy's ``dtype.kind``): float (float32 or float64, the model's), int, bool.
KINDS = ("f", "i", "b")
#: The valid domains a leaf may state (``None``: not stated): each element ``> 0``, ``>= 0``, within ``[0, 1]``,
#: finite, a temperature (finite, above absolute zero), a motor constant (the motor's validity rule), a delay [steps]
#: (an integer ``>= 0``), a period [steps] (an integer ``>= 1``).
DOMAINS = ("positive", "non-negative", "in [0, 1]", "finite", "temperature", "motor", "delay", "period")


@dataclasses.dataclass(frozen=True)
class LeafDeclaration:
    """What a field's :func:`leaf` declares (see its arguments)."""

    dims: tuple
    kind: str = "f"
    domain: str | None = None
    randomize: str | None = None


def leaf(
    dims: tuple, *, kind: str = "f", domain: str | None = None, randomize: str | None = None, **field_options: Any
):
    """The declaration of an array leaf (a ``dataclasses.field`` of a ``flax.struct`` dataclass).

    Args:
        dims: the leaf's shape for one world: ints and names of :data:`COUNTS`.
        kind: its dtype kind, one of :data:`KINDS`.
        domain: its valid values, one of :data:`DOMAINS`, or ``None`` (not stated).
        randomize: its public name in :func:`jaxmor.randomize` (e.g. ``"body.mass"``; needs ``domain``), or ``None``.
        **field_options: ``default`` or ``default_factory``, as ``dataclasses.field`` takes them.

    Returns:
        The field, its :class:`LeafDeclaration` in its metadata (``"leaf"``).

    Raises:
        ValueError: a dim that is neither an int nor a count's name, an unknown kind or domain, or a randomized
            leaf without a domain (a jaxmor bug, found when the class is defined).
    """
    dims = tuple(dims)
    odd = [d for d in dims if not isinstance(d, int) and d not in COUNTS]
    if odd or kind not in KINDS or domain not in (None, *DOMAINS) or (randomize and not domain):
        raise ValueError(f"leaf{(dims, kind, domain, randomize)}: a dim, kind or domain jaxmor does not know")
    declaration = LeafDeclaration(dims, kind, domain, randomize)
    return struct.field(metadata={"leaf": declaration}, **field_options)


def declared_leaves(cls: type) -> dict[str, LeafDeclaration]:
    """``{field: declaration}`` for the declared array leaves of a dataclass, in field order."""
    return {f.name: f.metadata["leaf"] for f in dataclasses.fields(cls) if "leaf" in f.metadata}


def model_leaves(cls: type) -> Iterator[tuple[tuple[str, ...], LeafDeclaration]]:
    """``(attribute path, declaration)`` of every declared leaf below a dataclass (e.g. the Model), following its
    fields that hold one dataclass (or ``None``); tuples of them (the terrain grids) are not followed."""
    yield from (((name,), d) for name, d in declared_leaves(cls).items())
    for name, hint in typing.get_type_hints(cls).items():
        inner = [a for a in (hint, *typing.get_args(hint)) if dataclasses.is_dataclass(a)]
        if inner and typing.get_origin(hint) is not tuple:
            yield from (((name, *path), d) for path, d in model_leaves(inner[0]))
