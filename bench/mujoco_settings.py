"""The MuJoCo family's settings in the bench (MuJoCo, MJX, MJWarp), written beside each case's figures.

* :func:`like_for_like`: the settings RL users run MJX and MJWarp at, on a copy of an ``MjModel``: MuJoCo
  Playground's Go1 (``iterations="1" ls_iterations="5"``, only the feet collide, with the floor).
* :func:`collision_pairs`: the geom pairs MuJoCo's contype/conaffinity filter lets through.
* :func:`settings`: time step, solver, iterations, tolerances, cone and collision pairs of a model.
"""

from __future__ import annotations

import copy

import numpy as np

#: MuJoCo Playground's Go1 (its MJX scenes' ``<option iterations="1" ls_iterations="5">``): the solver
#: iterations of the like-for-like cases.
RL_ITERATIONS = 1
RL_LS_ITERATIONS = 5


def like_for_like(mj_model, feet: tuple[str, ...] | None):
    """A copy of ``mj_model`` at :data:`RL_ITERATIONS` / :data:`RL_LS_ITERATIONS`; with ``feet`` (geom names)
    only those geoms collide, with the world's (the feet's contype set to 0 and their conaffinity to the world's
    contype bits, the other robot geoms' contype and conaffinity to 0), as in Playground's feet-only Go1 scenes.

    Raises:
        ValueError: a name of ``feet`` that is no geom of the model.
    """
    import mujoco

    m = copy.copy(mj_model)
    m.opt.iterations, m.opt.ls_iterations = RL_ITERATIONS, RL_LS_ITERATIONS
    if feet:
        ids = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name): name for name in feet}
        if -1 in ids:
            raise ValueError(f"feet: no geom named {ids[-1]!r} in the model")
        world = int(np.bitwise_or.reduce(m.geom_contype[m.geom_bodyid == 0]))
        for g in range(m.ngeom):
            if m.geom_bodyid[g] == 0:
                continue
            if g in ids:  # touches the world's geoms, not another foot
                m.geom_contype[g], m.geom_conaffinity[g] = 0, m.geom_conaffinity[g] | world
            else:
                m.geom_contype[g] = m.geom_conaffinity[g] = 0
    return m


def collision_pairs(mj_model) -> int:
    """Geom pairs that MuJoCo's broad phase may test: contype/conaffinity compatible, on bodies that are not
    welded together, not both static, and not parent and child (unless the ``filterparent`` flag is off); plus
    the explicit ``<pair>`` elements."""
    import mujoco

    m = mj_model
    weld, parent = m.body_weldid, m.body_parentid
    filter_parent = not (m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    count = int(m.npair)
    for a in range(m.ngeom):
        for b in range(a + 1, m.ngeom):
            wa, wb = weld[m.geom_bodyid[a]], weld[m.geom_bodyid[b]]
            if wa == wb or not (
                (m.geom_contype[a] & m.geom_conaffinity[b]) or (m.geom_contype[b] & m.geom_conaffinity[a])
            ):
                continue
            if filter_parent and (weld[parent[wa]] == wb or weld[parent[wb]] == wa) and 0 not in (wa, wb):
                continue
            count += 1
    return count


def settings(mj_model, extra: dict | None = None) -> dict:
    """The settings recorded beside an MJX or MJWarp case: time step, solver, iterations, tolerances, cone,
    impratio and collision pairs of ``mj_model``."""
    o = mj_model.opt
    out = {k: int(getattr(o, k)) for k in ("integrator", "solver", "iterations", "ls_iterations", "cone")}
    out.update(timestep=float(o.timestep), tolerance=float(o.tolerance), ls_tolerance=float(o.ls_tolerance))
    out.update(impratio=float(o.impratio), collision_pairs=collision_pairs(mj_model))
    return {**out, **(extra or {})}
