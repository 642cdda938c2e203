"""How far the PGS sweeps are from converged after k sweeps: the data behind the default sweep counts.

``python -m bench.tools.residuals [--worlds 128] [--steps 20,60,100] [--sweeps 5,10,15,20,25,30,40]``

The bench scenario (:mod:`bench.scenario`) is run for each of ``--steps`` steps; at that state the step's
velocity problem (warm-started from the last step's impulses, as the step does) and position problem
(from zero) are solved with k sweeps and with ``--reference`` sweeps (float64). Printed per k: the
velocity error ``|M_eff^-1 J^T (lam_k - lam_ref)|`` (max over the worlds and its median over the worlds),
:func:`jaxmor.sim.solver.contact_residuals` (most negative normal velocity, Signorini), and the position
pass's pseudo-velocity error. Recorded in docs/design/solver.md.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tools.residuals", description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, default=128)
    parser.add_argument("--steps", default="20,60,100")
    parser.add_argument("--sweeps", default="5,10,15,20,25,30,40")
    parser.add_argument("--reference", type=int, default=3000)
    parser.add_argument("--dt", type=float, default=0.002)
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    from jaxmor.sim.solver import contact_residuals, solve

    for n_steps in (int(s) for s in args.steps.split(",")):
        cons, warm = problems(args.worlds, n_steps, args.dt)
        keep = np.array(cons.position_rows)

        def run(k, cons=cons, warm=warm):
            velocity = jax.vmap(lambda c, w: solve(c.velocity, w, k))(cons, warm)
            position = jax.vmap(lambda c: solve(c.position, c.position.zero_impulses(), k))(cons)
            return velocity, position

        ref_v, ref_p = jax.jit(lambda: run(args.reference))()
        active = float((np.asarray(ref_v.contact[..., 0]) > 0).sum(-1).mean())
        print(f"after {n_steps} steps ({args.worlds} worlds, {active:.1f} active contacts per world on average):")
        for k in (int(s) for s in args.sweeps.split(",")):
            imp, pos = jax.jit(lambda k=k: run(k))()
            res = jax.vmap(contact_residuals)(cons.velocity, imp)
            dv = jax.vmap(lambda c, a, b: c.response @ (c.velocity.rows(a) - c.velocity.rows(b)))(cons, imp, ref_v)
            dp = jax.vmap(lambda c, a, b, keep=keep: c.response[:, keep] @ (c.position.rows(a) - c.position.rows(b)))(
                cons, pos, ref_p
            )
            dv, dp = np.abs(np.asarray(dv)).max(-1), np.abs(np.asarray(dp)).max(-1)
            print(
                f"  {k:4d} sweeps: velocity error max {dv.max():.1e}, median {np.median(dv):.1e}; normal velocity "
                f"{-float(np.min(res['normal_velocity'])):.1e}; Signorini {float(np.max(res['signorini'])):.1e}; "
                f"position pass error max {dp.max():.1e}, median {np.median(dp):.1e}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
