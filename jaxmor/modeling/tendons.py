"""A description's fixed tendons compiled into the Model's :class:`~jaxmor.types.Tendons`, and their coupling
equalities into :class:`~jaxmor.types.Equalities`' tendon rows.

MuJoCo's compiler is followed: a spring length of ``-1`` (the default) is the tendon's length at the reference
configuration (MuJoCo's ``qpos0``, jaxmor's ``Model.q_default``), and so are the reference lengths of a tendon
equality (MuJoCo's ``tendon_length0``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from jax import numpy as jnp

from jaxmor.actuation.compile import check_representable
from jaxmor.errors import ModelError
from jaxmor.io.description import RobotDescription, TendonEquality
from jaxmor.sim.tendons import tendon_lengths
from jaxmor.types import Equalities, Model, Tendons


def compile_tendons(model: Model, description: RobotDescription) -> Tendons:
    """The description's fixed tendons on ``model``.

    Raises:
        ModelError: a tendon naming a joint the model does not have as a hinge or a slide, or a number the
            model's dtype cannot hold (file and line).
    """
    dtype = model.body_mass.dtype
    index = {name: i for i, name in enumerate(model.joint_names)}
    q0 = np.asarray(model.q_default, np.float64)
    joint_q, joint_u, coefficient, lines, columns = [], [], [], [], {}
    for t in description.tendons:
        for joint, _ in t.joints:
            if joint not in index:
                raise ModelError(description.source, t.line, f"tendon {t.name!r}: no hinge or slide {joint!r}")
        joint_q.append(tuple(model.joint_q[index[j]] for j, _ in t.joints))
        joint_u.append(tuple(model.joint_u[index[j]] for j, _ in t.joints))
        coefficient.extend(c for _, c in t.joints)
        lines.extend(t.line for _ in t.joints)
        columns[t.name] = sum(c * q0[model.joint_q[index[j]]] for j, c in t.joints)
    inf = math.inf
    spring = [t.spring_length or (columns[t.name], columns[t.name]) for t in description.tendons]
    ranges = [t.range or (-inf, inf) for t in description.tendons]
    per_tendon = {
        "lower": [r[0] for r in ranges],
        "upper": [r[1] for r in ranges],
        "spring_lower": [s[0] for s in spring],
        "spring_upper": [s[1] for s in spring],
        "stiffness": [t.stiffness for t in description.tendons],
        "damping": [t.damping for t in description.tendons],
        "friction": [t.friction for t in description.tendons],
        "armature": [t.armature for t in description.tendons],
    }
    tendon_lines = [t.line for t in description.tendons]
    leaves = {}
    for name, values in per_tendon.items():
        leaves[name] = _array(values, dtype, description.source, tendon_lines, f"tendon {name}")
    return Tendons(
        coefficient=_array(coefficient, dtype, description.source, lines, "tendon coef"),
        **leaves,
        names=tuple(t.name for t in description.tendons),
        joint_q=tuple(joint_q),
        joint_u=tuple(joint_u),
    )


def _array(values, dtype, source: str, lines, what: str):
    """float64 ``values`` as a Model leaf of ``dtype``, refusing one the dtype cannot hold (infinite bounds pass)."""
    values = np.asarray(values, np.float64).reshape(len(lines))
    check_representable(np.where(np.isinf(values), 0.0, values), dtype, source, lines, what)
    return jnp.asarray(values, dtype)


def tendon_couplings(model: Model, description: RobotDescription) -> dict:
    """The tendon couplings of the description as :class:`~jaxmor.types.Equalities` fields (``tendon``,
    ``tendon_polycoef``, ``tendon_reference``; their names and ``active`` flags are the caller's to append).

    Raises:
        ModelError: a coupling naming a tendon the model does not have (file and line).
    """
    couplings = [e for e in description.equalities if isinstance(e, TendonEquality)]
    dtype = model.body_mass.dtype
    index = {name: i for i, name in enumerate(model.tendons.names)}
    lengths = np.asarray(tendon_lengths(model, jnp.asarray(model.q_default)), np.float64)
    pairs, reference = [], []
    for e in couplings:
        ids = []
        for name in (e.tendon1, e.tendon2):
            if name is not None and name not in index:
                raise ModelError(
                    description.source, e.line, f"equality constraint {e.name or 'tendon'!r}: no tendon {name!r}"
                )
            ids.append(-1 if name is None else index[name])
        pairs.append(tuple(ids))
        reference.append([lengths[i] if i >= 0 else 0.0 for i in ids])
    return {
        "tendon": tuple(pairs),
        "tendon_polycoef": jnp.asarray(np.reshape([e.polycoef for e in couplings], (len(couplings), 5)), dtype),
        "tendon_reference": jnp.asarray(np.reshape(reference, (len(couplings), 2)), dtype),
    }


def combine_tendons(model: Model, other: Model, prefix: str) -> Tendons:
    """``model``'s tendons, then ``other``'s (:func:`jaxmor.combine`): names prefixed, joints shifted, leaves cast to
    ``model``'s dtype."""
    a, b = model.tendons, other.tendons
    leaves = {
        f.name: jnp.concatenate([getattr(a, f.name), getattr(b, f.name).astype(getattr(a, f.name).dtype)])
        for f in dataclasses.fields(Tendons)
        if f.metadata.get("pytree_node", True)
    }
    return Tendons(
        **leaves,
        names=a.names + tuple(prefix + n for n in b.names),
        joint_q=a.joint_q + tuple(tuple(i + model.nq for i in t) for t in b.joint_q),
        joint_u=a.joint_u + tuple(tuple(i + model.nv for i in t) for t in b.joint_u),
    )


def with_tendon_couplings(model: Model, description: RobotDescription) -> Equalities:
    """``model.equality`` with the description's tendon couplings appended (after its points and joint couplings)."""
    couplings = [e for e in description.equalities if isinstance(e, TendonEquality)]
    if not couplings:
        return model.equality
    eq = model.equality
    dtype = eq.active.dtype if eq.active.size else model.body_mass.dtype
    return eq.replace(
        **tendon_couplings(model, description),
        names=eq.names + tuple(e.name for e in couplings),
        active=jnp.concatenate([eq.active.astype(dtype), jnp.asarray([float(e.active) for e in couplings], dtype)]),
    )
