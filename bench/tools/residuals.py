"""How far the PGS sweeps are from converged after k sweeps: the data behind the default sweep counts.

``python -m bench.tools.residuals [--worlds 128] [--steps 20,60,100] [--sweeps 5,10,15,20,25,30,40]``

The bench scenario (:mod:`bench.scenario`) is run for each of ``--steps`` steps; at that state the step's
velocity problem (warm-started from the last step's impulses, as the step does) and position problem
(from zero) are solved with k sweeps and with ``--reference`` sweeps (float64). Printed per k: the
velocity error ``|M_eff^-1 J^T (lam_k - lam_ref)|`` (max over the worlds and its median over the worlds),
:func:`jaxmor.sim.solver.contact_residuals` (most negative normal velocity, Signorini), and the position
pass's pseudo-velocity error. ``--jacobi 25,50,100`` adds the accelerated Jacobi solver at those iteration counts
(``Options.solver="jacobi"``; its position pass at half the count), and every line gives the fixed-point residual
too: the largest ``A_rr |F(lam) - lam|_r`` over the rows [m/s or rad/s], ``F`` one PGS sweep, zero exactly at a
solution of the contact laws whichever solver found it. Recorded in docs/design/solver.md.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np


def problems(n_worlds: int, n_steps: int, dt: float):
    """The model, and the constraint stage's output and warm starts of every world after ``n_steps``."""
    import jax.numpy as jnp

    import jaxmor
    from bench import scenario as sc
    from jaxmor.sim.constraint import warm_start
    from jaxmor.sim.pipeline import stages

    model = sc.jaxmor_model(dt, jnp.float64)
    states = sc.jaxmor_states(model, n_worlds)
    controls = jnp.asarray(sc.controls(n_worlds, n_steps + 1, dt))
    final, _ = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c))(states, controls[:, :n_steps])
    final = final.replace(actuator_torque=controls[:, n_steps])

    def stage(s):
        out = stages(model, s)
        return out.constraints, warm_start(model, s, out.contacts)

    return jax.jit(jax.vmap(stage))(final)


def fixed_point_residual(problem, impulses):
    """The largest ``A_rr |F(lam) - lam|_r`` over the rows, ``F`` one PGS sweep (zero at a solution)."""
    from jaxmor.sim.solver import _impulse_sweep, _rows_of

    rows = _rows_of(problem)
    x = problem.start(impulses)
    swept, _ = _impulse_sweep(rows, x)
    return jax.numpy.max(jax.numpy.abs(swept - x[0]) * jax.numpy.abs(jax.numpy.diagonal(problem.delassus)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tools.residuals", description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=128)
    parser.add_argument("--steps", default="20,60,100")
    parser.add_argument("--sweeps", default="5,10,15,20,25,30,40")
    parser.add_argument("--jacobi", default="", help="Jacobi iteration counts to compare (e.g. 25,50,100)")
    parser.add_argument("--reference", type=int, default=3000)
    parser.add_argument("--dt", type=float, default=0.002)
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    from jaxmor.sim.solver import contact_residuals, solve

    for n_steps in (int(s) for s in args.steps.split(",")):
        cons, warm = problems(args.worlds, n_steps, args.dt)
        keep = np.array(cons.position_rows)

        def run(k, solver="pgs", cons=cons, warm=warm):
            jacobi = (k, max(1, k // 2)) if solver == "jacobi" else (None, None)
            velocity = jax.vmap(lambda c, w: solve(c.velocity, w, k, solver, jacobi[0]))(cons, warm)
            position = jax.vmap(lambda c: solve(c.position, c.position.zero_impulses(), k, solver, jacobi[1]))(cons)
            return velocity, position

        ref_v, ref_p = jax.jit(lambda: run(args.reference))()
        active = float((np.asarray(ref_v.contact[..., 0]) > 0).sum(-1).mean())
        print(f"after {n_steps} steps ({args.worlds} worlds, {active:.1f} active contacts per world on average):")
        cases = [("pgs", int(k)) for k in args.sweeps.split(",")]
        cases += [("jacobi", int(k)) for k in args.jacobi.split(",") if k]
        for solver, k in cases:
            imp, pos = jax.jit(lambda k=k, solver=solver: run(k, solver))()
            res = jax.vmap(contact_residuals)(cons.velocity, imp)
            dv = jax.vmap(lambda c, a, b: c.response @ (c.velocity.rows(a) - c.velocity.rows(b)))(cons, imp, ref_v)
            dp = jax.vmap(lambda c, a, b, keep=keep: c.response[:, keep] @ (c.position.rows(a) - c.position.rows(b)))(
                cons, pos, ref_p
            )
            dv, dp = np.abs(np.asarray(dv)).max(-1), np.abs(np.asarray(dp)).max(-1)
            fixed = np.asarray(jax.vmap(fixed_point_residual)(cons.velocity, imp))
            print(
                f"  {solver:6s} {k:4d}: velocity error max {dv.max():.1e}, median {np.median(dv):.1e}; fixed-point "
                f"residual max {fixed.max():.1e}, p99 {np.quantile(fixed, 0.99):.1e}, median {np.median(fixed):.1e}; "
                f"normal velocity {-float(np.min(res['normal_velocity'])):.1e}; Signorini "
                f"{float(np.max(res['signorini'])):.1e}; position pass error max {dp.max():.1e}, median "
                f"{np.median(dp):.1e}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
