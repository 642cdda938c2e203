"""All the projected Gauss-Seidel sweeps of a step's solve, for a batch of worlds, in one Pallas kernel.

The same iteration as :mod:`jaxmor.sim.solver`'s forward sweeps (``_sweep`` applied ``counts[j]``
times to problem ``j``): the same rows in the same order, the same updates (the normal
``max(lam - (v - target) / A_nn, 0)``, the tangent pair's step ``1 / s_max`` and its radial projection
onto the disk ``mu lam_n``, a joint's friction clip then its limit), the row velocities ``v = A lam + b``
carried and updated by ``A``'s columns. Only the order of a few additions differs (the start ``A lam +
b`` is summed column by column, a contact's three-column update row by row), so results agree to float rounding.

Layout: worlds are the vectorized axis. Every per-world input of every problem is packed into one
``(N, P)`` array (``N`` padded to a multiple of the block); a program of the grid takes a block of worlds.
Per problem the kernel carries three tiles, ``(block, pad)`` with ``pad`` a power of two: the row
velocities, the row impulses and the limit impulses. A sweep is a ``fori_loop`` over the contacts, then
one over the joints; a row reads its velocity and impulse out of the tiles (a masked sum), and adds its
column of ``A`` (a masked tile load from the packed input) times its change to the velocities. The sweeps
are a ``fori_loop`` inside the kernel. One launch does every sweep of every problem; the derivative is not
the kernel's business (the solver's ``custom_jvp`` linearizes its own compact sweep at the final impulses).

Entry points: :func:`sweep_batch` (batched arrays in, batched impulses out) and :func:`iterate`, a
drop-in for the solver's ``_iterate(counts, params, x0)`` on one world whose ``vmap`` runs
:func:`sweep_batch` once for the whole batch (``jax.custom_batching.custom_vmap``); :func:`iterate_on_gpu`
chooses it on CUDA and the XLA loop elsewhere (``jax.lax.platform_dependent``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache, partial

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton

from jaxmor.math import pow2
from jaxmor.sim.batched_launch import one_launch_per_batch
from jaxmor.sim.constraint import Problem, friction_impulse, limit_impulse

#: Worlds per program (the lanes of a block; a power of two, Triton's rule) and warps per program.
BLOCK = 32
WARPS = 1

Params = tuple[Problem, jax.Array, jax.Array, jax.Array]


def kernel_params(rows) -> Params:
    """The kernel's inputs of one problem from the solver's sweep layout (``solver._Rows``: ``columns`` ``A``
    transposed, the (R, 6) ``laws`` table, ``free_velocity``, ``nc``, ``rows_per_contact``; one world)."""
    laws, m, nc = rows.laws, rows.rows_per_contact, rows.nc
    normal, joint = laws[: m * nc : m], laws[m * nc :]
    problem = Problem(
        delassus=rows.columns,  # unread by the kernel, which reads the columns
        free_velocity=rows.free_velocity,
        contact_target=normal[:, 1],
        friction=normal[:, 2],
        friction_bound=joint[:, 2],
        limit_low=joint[:, 3],
        limit_high=joint[:, 4],
        rows_per_contact=m,
    )
    return problem, rows.columns, normal[:, 3], laws[:, 0]


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where one problem's per-world inputs sit in the packed input (rows of the (P, N) array, static).

    ``fields`` maps a name to its first row; ``size`` is the problem's number of packed rows, ``out`` its
    first row in the packed output (``pad`` row impulses, then ``pad_j`` limit impulses). The tiles the kernel
    works on (``A``'s columns, ``b``, the impulses, the limits) have the powers of two ``pad`` and ``pad_j``
    as their sizes (Triton's rule); the packed fields are not padded: the loads mask the entries past them.
    """

    nc: int
    nj: int
    m: int
    fields: tuple[tuple[str, int], ...]
    size: int
    out: int

    @property
    def rows(self) -> int:
        return self.m * self.nc + self.nj

    @property
    def pad(self) -> int:
        return pow2(self.rows)

    @property
    def pad_j(self) -> int:
        return pow2(self.nj)

    def at(self, name: str) -> int:
        return dict(self.fields)[name]


def _fields(problem: Problem, columns, inv_eig, inv_diag, rows, limit) -> list[tuple[str, jax.Array]]:
    """The packed fields of one problem, each (N, k): batched arrays with a leading world axis."""
    n, r = rows.shape
    out = [("col", columns.reshape(n, r * r)), ("b", problem.free_velocity), ("lam", rows), ("limit", limit)]
    out += [("inv_diag", inv_diag)]
    out += [("target", problem.contact_target), ("low", problem.limit_low), ("high", problem.limit_high)]
    if problem.rows_per_contact == 3:
        out += [("mu", problem.friction), ("inv_eig", inv_eig), ("bound", problem.friction_bound)]
    return out


def _pack(params: tuple[Params, ...], x0) -> tuple[jax.Array, tuple[_Layout, ...]]:
    """(P, N) packed inputs of all problems (world last) and each problem's layout."""
    blocks, layouts, start, out = [], [], 0, 0
    for (problem, columns, inv_eig, inv_diag), (rows, limit) in zip(params, x0, strict=True):
        fields, offsets = _fields(problem, columns, inv_eig, inv_diag, rows, limit), []
        for name, value in fields:
            offsets.append((name, start))
            start += value.shape[1]
            blocks.append(value)
        nc, nj = problem.contact_target.shape[1], problem.limit_low.shape[1]
        size = sum(v.shape[1] for _, v in fields)
        lay = _Layout(nc, nj, problem.rows_per_contact, tuple(offsets), size, out)
        layouts.append(lay)
        out += lay.pad + lay.pad_j
    # Zeros after the last field: a tile read past it (masked) stays inside the block.
    blocks.append(jnp.zeros((x0[0][0].shape[0], max(lay.pad for lay in layouts)), blocks[0].dtype))
    return jnp.concatenate(blocks, axis=1), tuple(layouts)


def _project_pair(t1, t2, radius):
    """Radial projection of the tangential pair onto the disk of ``radius`` (the solver's formula)."""
    norm2 = t1 * t1 + t2 * t2
    safe = jnp.sqrt(jnp.where(norm2 > 0, norm2, 1.0))
    scale = jnp.where(norm2 > radius * radius, radius / safe, 1.0)
    return t1 * scale, t2 * scale


class _Block:
    """One problem on one block of worlds inside the kernel: loads from the packed input by field.

    ``one(name, j)`` is field ``name``'s entry ``j`` in every world of the block, (block,); ``column(c)``
    is ``A[:, c]``, (pad, block); ``tile(name, size)`` a padded tile; ``row(x, j)`` row ``j`` of a tile and
    ``put(x, j, value)`` the tile with row ``j`` replaced (``j`` may be traced).
    """

    def __init__(self, lay: _Layout, ref):
        self.lay, self.ref = lay, ref

    def one(self, name, j):
        return self.ref[:, self.lay.at(name) + j]

    def tile(self, name, size, valid, j=0):
        """Entries ``j .. j + size`` of field ``name``, (block, size), those from ``valid`` on zero (not read)."""
        index = (slice(None), pl.ds(self.lay.at(name) + j, size))
        mask = jax.lax.broadcasted_iota(jnp.int32, (self.ref.shape[0], size), 1) < valid
        return pltriton.load(self.ref.at[index], mask=mask, other=0.0)

    def column(self, c):
        return self.tile("col", self.lay.pad, self.lay.rows, c * self.lay.rows)

    def entry(self, r, c):
        return self.one("col", c * self.lay.rows + r)

    @staticmethod
    def row(x, j):
        rows = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
        return jnp.sum(jnp.where(rows == j, x, 0.0), axis=1)

    @staticmethod
    def put(x, j, value):
        rows = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
        return jnp.where(rows == j, value[:, None], x)


def _contact(blk: _Block, k, state):
    """Contact ``k``'s update (traced ``k``) of the state ``(v, lam, limit)`` tiles: normal, then the pair."""
    v, lam, limit = state
    n, row, put = blk.lay.m * k, blk.row, blk.put
    old_n = row(lam, n)
    lam_n = jnp.maximum(old_n - (row(v, n) - blk.one("target", k)) * blk.one("inv_diag", n), 0.0)
    d_n = lam_n - old_n
    if blk.lay.m == 1:
        return v + blk.column(n) * d_n[:, None], put(lam, n, lam_n), limit
    old_1, old_2, inv_eig = row(lam, n + 1), row(lam, n + 2), blk.one("inv_eig", k)
    t1 = old_1 - (row(v, n + 1) + blk.entry(n + 1, n) * d_n) * inv_eig
    t2 = old_2 - (row(v, n + 2) + blk.entry(n + 2, n) * d_n) * inv_eig
    t1, t2 = _project_pair(t1, t2, blk.one("mu", k) * lam_n)
    cols = (blk.column(n), blk.column(n + 1), blk.column(n + 2))
    dv = d_n[:, None] * cols[0] + (t1 - old_1)[:, None] * cols[1] + (t2 - old_2)[:, None] * cols[2]
    return v + dv, put(put(put(lam, n, lam_n), n + 1, t1), n + 2, t2), limit


def _joint(blk: _Block, i, state):
    """Joint ``i``'s update (traced ``i``) of the state tiles: its friction, then its limit."""
    v, lam, limit = state
    r = blk.lay.m * blk.lay.nc + i
    diag, inv_diag, old = blk.entry(r, r), blk.one("inv_diag", r), blk.row(lam, r)
    v_other = blk.row(v, r) - diag * old
    low, high = blk.one("low", i), blk.one("high", i)
    if blk.lay.m == 1:
        new_limit = limit_impulse(low, high, jnp.isfinite(low), jnp.isfinite(high), v_other, inv_diag)
        new = new_limit
    else:
        bound = blk.one("bound", i)
        friction = friction_impulse(-v_other * inv_diag - blk.row(limit, i), -bound, bound)
        new_limit = limit_impulse(low, high, jnp.isfinite(low), jnp.isfinite(high), v_other + diag * friction, inv_diag)
        new = friction + new_limit
    v = v + blk.column(r) * (new - old)[:, None]
    return v, blk.put(lam, r, new), blk.put(limit, i, new_limit)


def _solve_block(lay: _Layout, count: int, in_ref, out_ref) -> None:
    """``count`` sweeps of one problem on one block of worlds: read the start, iterate, write the impulses."""
    blk = _Block(lay, in_ref)
    lam, limit = blk.tile("lam", lay.pad, lay.rows), blk.tile("limit", lay.pad_j, lay.nj)
    v = jax.lax.fori_loop(
        0, lay.rows, lambda c, v: v + blk.column(c) * blk.row(lam, c)[:, None], blk.tile("b", lay.pad, lay.rows)
    )

    def sweep(_, state):
        if lay.nc:
            state = jax.lax.fori_loop(0, lay.nc, lambda k, s: _contact(blk, k, s), state)
        if lay.nj:
            state = jax.lax.fori_loop(0, lay.nj, lambda i, s: _joint(blk, i, s), state)
        return state

    _, lam, limit = jax.lax.fori_loop(0, count, sweep, (v, lam, limit))
    out_ref[:, pl.ds(lay.out, lay.pad)] = lam
    out_ref[:, pl.ds(lay.out + lay.pad, lay.pad_j)] = limit


def _kernel(layouts, counts, in_ref, out_ref) -> None:
    """The kernel: every problem's sweeps on this program's block of worlds, one after the other."""
    for lay, count in zip(layouts, counts, strict=True):
        _solve_block(lay, count, in_ref, out_ref)


def sweep_batch(
    counts: tuple[int, ...],
    params: tuple[Params, ...],
    x0: tuple[tuple[jax.Array, jax.Array], ...],
    *,
    block: int = BLOCK,
    warps: int = WARPS,
    interpret: bool = False,
) -> tuple[tuple[jax.Array, jax.Array], ...]:
    """``counts[j]`` PGS sweeps of problem ``j`` in every world, all of them in one kernel launch.

    Args:
        counts: the static sweep count of each problem (at least 1).
        params: per problem ``(problem, columns, inv_eig, inv_diag)`` as the solver's ``_iterate`` gets
            them, every array with a leading world axis N: the :class:`Problem`'s arrays, ``A``
            transposed (unused: the kernel reads ``A``), the (N, nc) inverse largest eigenvalues of the
            tangential blocks (unused when frictionless), the (N, R) inverse diagonal of ``A``.
        x0: per problem ``(rows, limit)``: the (N, R) start impulses and the (N, nj) start limit impulses.
        block: worlds per program (a power of two); N is padded to a multiple of it.
        warps: warps per program (Triton).
        interpret: run the kernel in Pallas's interpreter (any platform; for tests).

    Returns:
        Per problem ``(rows, limit)``, (N, R) and (N, nj): the impulses after the sweeps.
    """
    live = [j for j, (rows, _) in enumerate(x0) if rows.shape[1] > 0]
    if not live:
        return tuple(x0)
    packed, layouts = _pack(tuple(params[j] for j in live), tuple(x0[j] for j in live))
    n = packed.shape[0]
    padded = -(-n // block) * block
    packed = jnp.pad(packed, ((0, padded - n), (0, 0)))
    n_out = sum(lay.pad + lay.pad_j for lay in layouts)
    out = pl.pallas_call(
        lambda i, o: _kernel(layouts, tuple(counts[j] for j in live), i, o),
        out_shape=jax.ShapeDtypeStruct((padded, n_out), packed.dtype),
        grid=(padded // block,),
        in_specs=[pl.BlockSpec((block, packed.shape[1]), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block, n_out), lambda i: (i, 0)),
        compiler_params=pltriton.CompilerParams(num_warps=warps, num_stages=1),
        interpret=interpret,
        name="pgs_sweeps",
    )(packed)[:n]
    result = list(x0)
    for j, lay in zip(live, layouts, strict=True):
        part = out[:, lay.out : lay.out + lay.pad + lay.pad_j]
        result[j] = (part[:, : lay.rows], part[:, lay.pad : lay.pad + lay.nj])
    return tuple(result)


@cache
def _batched_iterate(counts: tuple[int, ...], block: int, warps: int, interpret: bool):
    """The one-world sweeps whose ``vmap`` is one :func:`sweep_batch` over the batch (cached per options)."""
    return one_launch_per_batch(partial(sweep_batch, counts, block=block, warps=warps, interpret=interpret))


def iterate(
    counts: tuple[int, ...],
    params: tuple,
    x0: tuple[tuple[jax.Array, jax.Array], ...],
    *,
    block: int = BLOCK,
    warps: int = WARPS,
    interpret: bool = False,
) -> tuple[tuple[jax.Array, jax.Array], ...]:
    """The solver's ``_iterate(counts, params, x0)`` on one world's unbatched arrays (forward only; ``params``
    in the solver's sweep layout, :func:`kernel_params`): under ``jax.vmap`` every world's sweeps run in one
    :func:`sweep_batch` launch; without it, a batch of one."""
    params = tuple(kernel_params(p) for p in params)
    return _batched_iterate(tuple(int(c) for c in counts), block, warps, interpret)(params, tuple(x0))


def iterate_on_gpu(counts, params, x0, xla_iterate: Callable):
    """:func:`iterate` when the program is lowered for CUDA (a GPU, or a deviceless GPU compile), else
    ``xla_iterate(counts, params, x0)`` (the solver's XLA loop): chosen at lowering, nothing runs twice.

    Forward only: the caller keeps its derivative rule (the solver's ``custom_jvp`` calls this for the
    primal impulses and linearizes its XLA sweep for the tangents).
    """
    return jax.lax.platform_dependent(
        params,
        x0,
        cuda=lambda p, x: iterate(counts, p, x),
        default=lambda p, x: xla_iterate(counts, p, x),
    )
