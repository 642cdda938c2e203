"""All the accelerated Jacobi iterations of a step's solve, one world per program, in one Pallas kernel.

The same iteration as :mod:`jaxmor.sim.solver`'s ``_jacobi_iteration`` (Nesterov's extrapolation, every row's
update from the extrapolated iterate, a step ``omega`` toward them, the gradient restart), with the rows of a world
spread across the lanes of its program instead of one world per lane (:mod:`jaxmor.sim.pgs_kernel`): a world's
product ``A y`` is one tile operation, so 1,024 worlds are 1,024 programs and fill a GPU. The iterate is put back on
its sets and the joint rows swept once, in order, at the end (``solver._jacobi_finish``).

Layout: a problem's rows are regrouped by kind: with friction the normals, the first tangents, the second tangents
and the joints (``G = 4`` groups), frictionless the normals and the joints (``G = 2``); row ``k`` of each contact
group is contact ``k``, row ``i`` of the joint group joint ``i``. Each group is a tile whose length is the power of
two at least its rows (the contacts' ``P_c``, the joints' ``P_j``: Triton's tensor sizes); the rows past the counts
are zero. ``A`` (regrouped) comes in as one ``(S, S)`` matrix, ``S = m P_c + P_j``, and is loaded once as ``G^2``
tiles ``(P_g, P_h)``; every per-row constant is a tile of its group's length. An iteration is then elementwise work
on the tiles and ``G^2`` tile products, no loop over rows. ``omega`` comes in with the inputs (the solver's
``_relaxation``); the impulses go back to the solver in its row order, which puts them back on their sets
(``_jacobi_finish``).

Entry points: :func:`iterate`, the solver's Jacobi iterations on one world whose ``vmap`` is one launch for the
batch (``jax.custom_batching.custom_vmap``); forward only (the solver's ``custom_jvp`` owns the derivative).
"""

from __future__ import annotations

import dataclasses
import functools
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from jaxmor.math import pow2, safe_div
from jaxmor.sim.batched_launch import one_launch_per_batch
from jaxmor.sim.constraint import friction_impulse, limit_impulse
from jaxmor.sim.pgs_kernel import _project_pair

#: Warps per program (one world each).
WARPS = 4

#: The per-row constants of a frictional problem's contact groups and of every problem's joint group, in order (and
#: per group ``inv<g>``, the rows' ``1 / A_rr``).
CONTACT_FIELDS = ("target", "mu", "inv_eig", "a1", "a2")
JOINT_FIELDS = ("diag", "low", "high", "bound")
#: Power-iteration steps that estimate the largest eigenvalue of ``D^-1 A`` (straight-line code, no loop), here and
#: in the solver's XLA iteration.
POWER_STEPS = 8
#: Margin on that estimate (the power iteration approaches the largest eigenvalue from below).
POWER_MARGIN = 1.05


@dataclasses.dataclass(frozen=True)
class _Layout:
    """One problem's shape in the kernel (static): contacts ``nc``, joint rows ``nj``, rows per contact ``m``."""

    nc: int
    nj: int
    m: int

    @property
    def groups(self) -> int:
        return self.m + 1

    @property
    def sizes(self) -> tuple[int, ...]:
        """Each group's tile length: the power of two at least its rows (contacts, or joints for the last)."""
        return (pow2(self.nc),) * self.m + (pow2(self.nj),)

    def offset(self, g: int) -> int:
        """Where group ``g``'s rows start in the regrouped ``A`` and in the kernel's output."""
        return sum(self.sizes[:g])

    @property
    def rows(self) -> int:
        """The regrouped ``A``'s side: every group's tile length."""
        return sum(self.sizes)

    def vector_tiles(self) -> tuple[tuple[str, int], ...]:
        """The tiles of the packed vector input, in order, each with its length: ``b``, ``lam`` and ``inv`` per
        group (the group's length), the limit impulses and the joints' constants (the joints'), the contacts'
        constants (the contacts')."""
        per_group = [(f"{kind}{g}", self.sizes[g]) for kind in ("b", "lam", "inv") for g in range(self.groups)]
        contact = CONTACT_FIELDS if self.m == 3 else CONTACT_FIELDS[:1]
        joints, contacts = self.sizes[-1], self.sizes[0]
        return (
            *per_group,
            ("limit", joints),
            *((n, contacts) for n in contact),
            *((n, joints) for n in JOINT_FIELDS),
        )

    def vector_names(self) -> tuple[str, ...]:
        """The names of :meth:`vector_tiles`, in order."""
        return tuple(name for name, _ in self.vector_tiles())

    def size(self, name: str) -> int:
        """A vector tile's length."""
        return dict(self.vector_tiles())[name]

    def at(self, name: str) -> int:
        """Where a vector tile starts in the packed vector."""
        start = 0
        for n, length in self.vector_tiles():
            if n == name:
                return start
            start += length
        raise KeyError(name)

    @property
    def width(self) -> int:
        return pow2(sum(length for _, length in self.vector_tiles()))


def _group_rows(lay: _Layout) -> list[np.ndarray]:
    """Each group's rows of ``A`` in the solver's order, (its tile length,), ``-1`` past the counts."""
    out = [-np.ones(size, np.int64) for size in lay.sizes]
    for g in range(lay.m):
        out[g][: lay.nc] = np.arange(lay.nc) * lay.m + g
    out[lay.m][: lay.nj] = lay.m * lay.nc + np.arange(lay.nj)
    return out


def _take(x: jax.Array, index: np.ndarray, fill: float = 0.0) -> jax.Array:
    """``x[..., index]`` with ``fill`` where ``index`` is ``-1`` (all of it when ``x`` has no entries)."""
    if x.shape[-1] == 0:
        return jnp.full((*x.shape[:-1], *index.shape), fill, x.dtype)
    return jnp.where(index >= 0, x[..., np.maximum(index, 0)], fill)


def _pack(lay: _Layout, rows, x0) -> tuple[jax.Array, jax.Array]:
    """A problem's inputs for a batch of N worlds: ``A`` regrouped, (N, S, S) (``S`` the groups' tile lengths
    together), and the vector tiles, (N, W)."""
    index = _group_rows(lay)
    a = jnp.swapaxes(rows.columns, -1, -2)  # A (N, R, R)
    # Row i, column j of the regrouped A: A[order[i], order[j]], zero past each group's count; one gather.
    order = np.concatenate(index)
    live = (order[:, None] >= 0) & (order[None, :] >= 0)
    at = np.maximum(order, 0)
    blocks = jnp.where(live, a[:, at[:, None], at[None, :]], 0.0)
    laws, lam, limit = rows.laws, x0[0], x0[1]
    normal, joint = index[0], index[lay.m]
    values = {f"b{k}": _take(rows.free_velocity, index[k]) for k in range(lay.groups)}
    values.update({f"lam{k}": _take(lam, index[k]) for k in range(lay.groups)})
    values.update({f"inv{k}": _take(laws[:, :, 0], index[k]) for k in range(lay.groups)})
    values["limit"] = _take(limit, np.where(joint >= 0, joint - lay.m * lay.nc, -1))
    values["target"] = _take(laws[:, :, 1], normal)
    if lay.m == 3:
        values.update(mu=_take(laws[:, :, 2], normal), inv_eig=_take(laws[:, :, 3], normal))
        values.update(a1=_pair(a, index, 1), a2=_pair(a, index, 2))
    diag = jnp.diagonal(a, axis1=1, axis2=2)
    values.update(diag=_take(diag, joint), bound=_take(laws[:, :, 2], joint))
    values.update(low=_take(laws[:, :, 3], joint, -jnp.inf), high=_take(laws[:, :, 4], joint, jnp.inf))
    vector = jnp.concatenate([values[name] for name in lay.vector_names()], axis=1)
    vector = jnp.pad(vector, ((0, 0), (0, lay.width - vector.shape[1])))
    return blocks, vector


def _pair(a: jax.Array, index: list[np.ndarray], g: int) -> jax.Array:
    """(N, P) ``A[t_k, n_k]``: each contact's tangent-``g`` row's entry in its normal's column (0 past ``nc``)."""
    rows, cols = np.maximum(index[g], 0), np.maximum(index[0], 0)
    return jnp.where(index[g] >= 0, a[:, rows, cols], 0.0)


def _contacts(lay: _Layout, c: dict, y: list, v: list):
    """Every contact's update from the extrapolated impulses ``y`` and their velocities ``v`` (per group tiles):
    the normal, then (with friction) the tangent pair on its disk (``solver._contact_impulse``, elementwise)."""
    lam_n = jnp.maximum(y[0] - (v[0] - c["target"]) * c["inv0"], 0.0)
    if lay.m == 1:
        return [lam_n]
    d_n = lam_n - y[0]
    t1 = y[1] - (v[1] + c["a1"] * d_n) * c["inv_eig"]
    t2 = y[2] - (v[2] + c["a2"] * d_n) * c["inv_eig"]
    return [lam_n, *_project_pair(t1, t2, c["mu"] * lam_n)]


def _joints(lay: _Layout, c: dict, y: jax.Array, y_limit: jax.Array, v: jax.Array):
    """Every joint row's update (``solver._joint_impulse``, elementwise): friction, then the limit."""
    v_other = v - c["diag"] * y
    low, high = c["low"], c["high"]
    has_low, has_high = jnp.isfinite(low), jnp.isfinite(high)
    if lay.m == 1:
        new_limit = limit_impulse(low, high, has_low, has_high, v_other, c[f"inv{lay.m}"])
        return new_limit, new_limit
    inv = c[f"inv{lay.m}"]
    friction = friction_impulse(-v_other * inv - y_limit, -c["bound"], c["bound"])
    new_limit = limit_impulse(low, high, has_low, has_high, v_other + c["diag"] * friction, inv)
    return friction + new_limit, new_limit


def _relaxation(lay: _Layout, blocks, c: dict):
    """The step ``1 / lambda`` (``solver._relaxation`` on the tiles): ``lambda`` the power iterations' estimate of
    ``D^-1 A``'s largest eigenvalue times the margin, capped by Gershgorin's bound."""
    groups = lay.groups
    scaled = [[c[f"inv{g}"][:, None] * blocks[g][h] for h in range(groups)] for g in range(groups)]

    def product(x):
        return [sum(jnp.sum(scaled[g][h] * x[h][None, :], axis=1) for h in range(groups)) for g in range(groups)]

    rows = [sum(jnp.sum(jnp.abs(scaled[g][h]), axis=1) for h in range(groups)) for g in range(groups)]
    gershgorin = functools.reduce(jnp.maximum, [jnp.max(r) for r in rows])
    x = [jnp.ones_like(c[f"inv{g}"]) for g in range(groups)]
    for _ in range(POWER_STEPS):
        y = product(x)
        top = functools.reduce(jnp.maximum, [jnp.max(jnp.abs(t)) for t in y])
        x = [safe_div(t, top) for t in y]
    y = product(x)
    estimate = safe_div(sum(jnp.sum(a * b) for a, b in zip(x, y, strict=True)), sum(jnp.sum(a * a) for a in x))
    return safe_div(1.0, jnp.minimum(POWER_MARGIN * estimate, gershgorin))


def _finish(lay: _Layout, c: dict, lam: list, limit):
    """The impulses put back on their sets (``solver._project`` on the tiles)."""
    lam_n = jnp.maximum(lam[0], 0.0)
    out = [lam_n]
    if lay.m == 3:
        out += _project_pair(lam[1], lam[2], c["mu"] * lam_n)
    signed = jnp.where(jnp.isfinite(c["low"]), limit, jnp.minimum(limit, 0.0))
    signed = jnp.where(jnp.isfinite(c["high"]), signed, jnp.maximum(signed, 0.0))
    friction = friction_impulse(lam[lay.m] - limit, -c["bound"], c["bound"]) if lay.m == 3 else 0.0
    out.append(friction + signed)
    return out, signed


def _joint_sweep(lay: _Layout, blocks, b: list, c: dict, lam: list, limit):
    """One Gauss-Seidel sweep of the joint rows from the projected impulses (``solver._jacobi_finish``): joint
    ``i`` (a traced index) reads its velocity, takes its friction then its limit, and adds its column of ``A`` times
    the change to the velocities."""
    groups, g = lay.groups, lay.m
    lanes = jax.lax.broadcasted_iota(jnp.int32, lam[g].shape, 0)
    columns = [jax.lax.broadcasted_iota(jnp.int32, blocks[h][g].shape, 1) for h in range(groups)]

    def pick(x, i):
        return jnp.sum(jnp.where(lanes == i, x, 0.0))

    def joint(i, state):
        v, rows, lim = state
        row = {name: pick(c[name], i) for name in ("diag", f"inv{g}", "low", "high", *(("bound",) if g == 3 else ()))}
        old = pick(rows, i)
        new, new_limit = _joints(lay, row, old, pick(lim, i), pick(v[g], i))
        column = [jnp.sum(jnp.where(columns[h] == i, blocks[h][g], 0.0), axis=1) for h in range(groups)]
        v = [vh + col * (new - old) for vh, col in zip(v, column, strict=True)]
        return v, jnp.where(lanes == i, new, rows), jnp.where(lanes == i, new_limit, lim)

    if not lay.nj:
        return lam, limit
    v = [b[h] + sum(jnp.sum(blocks[h][k] * lam[k][None, :], axis=1) for k in range(groups)) for h in range(groups)]
    _, rows, limit = jax.lax.fori_loop(0, lay.nj, joint, (v, lam[g], limit))
    return [*lam[:g], rows], limit


def _solve_world(lay: _Layout, count: int, a_ref, v_ref, out_ref) -> None:
    """``count`` iterations of one problem on this program's world: load, iterate, write the impulses."""
    groups, sizes = lay.groups, lay.sizes

    def tile(name):
        return v_ref[0, pl.ds(lay.at(name), lay.size(name))]

    blocks = [
        [a_ref[0, pl.ds(lay.offset(g), sizes[g]), pl.ds(lay.offset(h), sizes[h])] for h in range(groups)]
        for g in range(groups)
    ]
    b = [tile(f"b{g}") for g in range(groups)]
    state = {f"b{g}" for g in range(groups)} | {f"lam{g}" for g in range(groups)} | {"limit"}
    c = {name: tile(name) for name in lay.vector_names() if name not in state}
    omega = _relaxation(lay, blocks, c)

    def body(_, state):
        lam, limit, prev, prev_limit, t = state
        t_next = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t_next
        y = [x + beta * (x - x0) for x, x0 in zip(lam, prev, strict=True)]
        y_limit = limit + beta * (limit - prev_limit)
        v = [b[g] + sum(jnp.sum(blocks[g][h] * y[h][None, :], axis=1) for h in range(groups)) for g in range(groups)]
        f = _contacts(lay, c, y, v)
        f_joint, f_limit = _joints(lay, c, y[lay.m], y_limit, v[lay.m])
        f.append(f_joint)
        new = [yg + omega * (fg - yg) for yg, fg in zip(y, f, strict=True)]
        new_limit = y_limit + omega * (f_limit - y_limit)
        turn = sum(jnp.sum((fg - yg) * (ng - xg)) for fg, yg, ng, xg in zip(f, y, new, lam, strict=True))
        return new, new_limit, lam, limit, jnp.where(turn < 0.0, 1.0, t_next)

    lam = [tile(f"lam{g}") for g in range(groups)]
    limit = tile("limit")
    one = jnp.ones((), lam[0].dtype)
    lam, limit, *_ = jax.lax.fori_loop(0, count, body, (lam, limit, lam, limit, one))
    lam, limit = _joint_sweep(lay, blocks, b, c, *_finish(lay, c, lam, limit))
    for g in range(groups):
        out_ref[0, pl.ds(lay.offset(g), sizes[g])] = lam[g]
    out_ref[0, pl.ds(lay.rows, sizes[-1])] = limit


def _unpack(lay: _Layout, out: jax.Array, n_rows: int) -> tuple[jax.Array, jax.Array]:
    """The (N, R) row impulses in the solver's order and the (N, nj) limit impulses from a kernel output."""
    index = np.concatenate(_group_rows(lay))
    valid = index >= 0
    order = np.argsort(index[valid])
    lam = out[:, : lay.rows][:, np.flatnonzero(valid)[order]]
    limit = out[:, lay.rows : lay.rows + lay.nj]
    assert lam.shape[1] == n_rows
    return lam, limit


def iterate_batch(counts, params, x0, *, warps: int = WARPS, interpret: bool = False):
    """``counts[j]`` Jacobi iterations of problem ``j`` in every world, one launch (one program per world).

    Args:
        counts: static iteration counts.
        params: per problem the solver's ``_Rows`` (``columns``, ``laws``, ``limited``, ``free_velocity``, ``nc``,
            ``rows_per_contact``), every array with a leading world axis N.
        x0: per problem ``(rows, limit)``, (N, R) and (N, nj): the start impulses.
        warps: warps per program.
        interpret: run in Pallas's interpreter (any platform; for tests).

    Returns:
        Per problem ``(rows, limit)``: the impulses in the solver's row order, put back on their sets.
    """
    result = []
    for count, rows, x in zip(counts, params, x0, strict=True):
        lay = _Layout(rows.nc, x[1].shape[1], rows.rows_per_contact)
        blocks, vector = _pack(lay, rows, x)
        n_out = pow2(lay.rows + lay.sizes[-1])
        out = pl.pallas_call(
            lambda a, v, o, lay=lay, count=count: _solve_world(lay, count, a, v, o),
            out_shape=jax.ShapeDtypeStruct((vector.shape[0], n_out), vector.dtype),
            grid=(vector.shape[0],),
            in_specs=[
                pl.BlockSpec((1, *blocks.shape[1:]), lambda i: (i, 0, 0)),
                pl.BlockSpec((1, vector.shape[1]), lambda i: (i, 0)),
            ],
            out_specs=pl.BlockSpec((1, n_out), lambda i: (i, 0)),
            compiler_params=pltriton.CompilerParams(num_warps=warps, num_stages=1),
            interpret=interpret,
            name="jacobi_iterations",
        )(blocks, vector)
        result.append(_unpack(lay, out, x[0].shape[1]))
    return tuple(result)


@cache
def _batched(counts: tuple[int, ...], warps: int, interpret: bool):
    """The one-world iterations whose ``vmap`` is one :func:`iterate_batch` over the batch (cached per options)."""
    return one_launch_per_batch(functools.partial(iterate_batch, counts, warps=warps, interpret=interpret))


def iterate(counts, params, x0, *, warps: int = WARPS, interpret: bool = False):
    """The Jacobi iterations on one world's unbatched arrays (:func:`iterate_batch`; under ``jax.vmap`` one launch
    for the batch)."""
    return _batched(tuple(int(c) for c in counts), warps, interpret)(tuple(params), tuple(x0))
