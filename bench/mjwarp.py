"""MuJoCo Warp (MJWarp) in the bench: its rollout program and its kernel launches (its settings, and the
like-for-like ones: :mod:`bench.mujoco_settings`).

* :func:`program`: N worlds x ``steps`` steps of ``mujoco_warp.step`` on Warp's default device, the controls set
  before each step; on a CUDA device the whole rollout (reset, then the steps) is captured once as a CUDA graph
  and each timed call launches that graph, as MJWarp's own benchmark does; on Warp's CPU device each call runs
  the Python loop (a check that it runs, not a speed to compare).
* :func:`launches`: MJWarp's kernel launches in one step on Warp's CPU device, read from Warp's launch log
  (``warp.config.print_launches`` through ``warp.set_logger``), split into launches with work and launches of
  an empty grid (a model without flexes, tendons or equalities still calls their kernels; Warp skips a grid of
  no threads, so those launch nothing on a GPU).

Needs the ``mjwarp`` extra (``mujoco-warp``, ``warp-lang``).
"""

from __future__ import annotations

import re
import time
from collections import Counter

import numpy as np

#: Per world: contacts and constraint rows MJWarp allocates (``put_data``'s ``nconmax`` and ``njmax``).
NCONMAX = 24
NJMAX = 160
_LAUNCH = re.compile(r"^kernel: (\S+) dim: (.*?) inputs: ")


def _put(mj_model, data, nworld: int):
    """(MJWarp's Model, its Data of ``nworld`` worlds at ``data``), without the per-step warning that the solver
    reached its iteration cap (the like-for-like cases' one iteration reaches it by design)."""
    import mujoco_warp as mjw

    mx = mjw.put_model(mj_model)
    mx.opt.warn_overflow &= ~int(mjw.OverflowType.ITERATIONS)
    return mx, mjw.put_data(mj_model, data, nworld=nworld, nconmax=NCONMAX, njmax=NJMAX)


def _rollout(mx, dx, qpos, controls):
    """Reset ``dx`` to ``qpos`` (n, nq) with zero velocity, warm start and time, then step through ``controls``
    (steps, n, nu)."""
    import mujoco_warp as mjw
    import warp as wp

    wp.copy(dx.qpos, qpos)
    for name in ("qvel", "qacc_warmstart", "time", "act"):
        getattr(dx, name).zero_()
    for i in range(controls.shape[0]):
        wp.copy(dx.ctrl, controls[i])
        mjw.step(mx, dx)


def program(mj_model, qpos: np.ndarray, controls: np.ndarray, load_s: float):
    """MJWarp's :class:`bench.case.Program`: ``qpos`` (n, nq) per world, ``controls`` (n, steps, nu), float32 on
    Warp's default device. The compile time is the first rollout's (Warp builds its kernels on first launch) plus
    the graph capture on CUDA. The check: mean final base height and the count of non-finite worlds."""
    import mujoco
    import warp as wp

    from bench import case, mujoco_settings

    n = len(qpos)
    device = wp.get_device()
    t = time.perf_counter()
    mx, dx = _put(mj_model, mujoco.MjData(mj_model), n)
    start = wp.array(np.asarray(qpos, np.float32), dtype=float)
    ctrl = wp.array(np.ascontiguousarray(np.swapaxes(controls, 0, 1), np.float32), dtype=float)
    baseline = case.current_rss_mb()
    _rollout(mx, dx, start, ctrl)
    wp.synchronize()
    graph = None
    if device.is_cuda:
        with wp.ScopedCapture() as capture:
            _rollout(mx, dx, start, ctrl)
        graph = capture.graph
    compile_s = time.perf_counter() - t

    def call():
        wp.capture_launch(graph) if graph is not None else _rollout(mx, dx, start, ctrl)
        wp.synchronize()

    def check():
        q, v = dx.qpos.numpy(), dx.qvel.numpy()
        finite = np.all(np.isfinite(q), 1) & np.all(np.isfinite(v), 1)
        return {
            "base_z_start": float(qpos[0, 2]),
            "base_z_mean": float(np.mean(q[:, 2])),
            "nonfinite_worlds": int(np.sum(~finite)),
        }

    extra = {"device": str(device), "cuda_graph": graph is not None, "nconmax": NCONMAX, "njmax": NJMAX}
    extra["dtype"] = "float32"
    p = case.Program(call, check, compile_s, mujoco_settings.settings(mj_model, extra), baseline_rss_mb=baseline)
    p.timing["load_s"] = load_s
    return p


class _LaunchLog:
    """A Warp logger (``warp.set_logger``) that counts the launch lines of ``warp.config.print_launches``:
    kernel name -> [launches with threads, launches of an empty grid]."""

    def __init__(self):
        self.kernels: dict[str, list[int]] = {}

    def info(self, message: str) -> None:
        m = _LAUNCH.match(message)
        if m:
            empty = 0 in tuple(int(x) for x in re.findall(r"\d+", m.group(2)))
            self.kernels.setdefault(m.group(1), [0, 0])[empty] += 1

    def debug(self, message: str) -> None:
        pass

    def warning(self, message: str, category=None, stacklevel: int = 1) -> None:
        pass

    def error(self, message: str) -> None:
        pass


def launches(mj_model, nworld: int = 4, qpos: np.ndarray | None = None) -> dict:
    """MJWarp's kernel launches in one ``mujoco_warp.step`` on Warp's CPU device, at ``qpos`` (default the model's
    ``qpos0``), after one step that builds the kernels: ``launches`` (grids with threads), ``empty`` (grids of
    none), ``distinct_kernels``, ``by_kernel`` {name: launches}, ``solver_iterations`` (the
    most any world ran) and the kernel build seconds. Memory fills and copies are not launches and not counted."""
    import mujoco
    import mujoco_warp as mjw
    import warp as wp

    data = mujoco.MjData(mj_model)
    if qpos is not None:
        data.qpos[:] = qpos
    log = _LaunchLog()
    with wp.ScopedDevice("cpu"):
        t = time.perf_counter()
        mx, dx = _put(mj_model, data, nworld)
        mjw.step(mx, dx)
        build_s = time.perf_counter() - t
        previous = wp.config.print_launches
        wp.set_logger(log)
        wp.config.print_launches = True
        try:
            mjw.step(mx, dx)
        finally:
            wp.config.print_launches = previous
            wp.set_logger(None)
        niter = int(np.max(dx.solver_niter.numpy()))
    counts = Counter({k: v[0] for k, v in log.kernels.items() if v[0]})
    return {
        "launches": sum(counts.values()),
        "empty": sum(v[1] for v in log.kernels.values()),
        "distinct_kernels": len(counts),
        "by_kernel": dict(counts.most_common()),
        "solver_iterations": niter,
        "build_s": build_s,
    }
