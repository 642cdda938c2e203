"""Final states of the bench rollout in float64, saved or compared: a check that a refactor kept the physics.

The bench scenario (``bench/scenario.py``: the quadruped dropped onto the ground under open-loop actuator
torques, dt 2 ms) run for ``--worlds`` worlds x ``--steps`` steps in float64 with ``jaxmor.rollout_batch``;
the final ``q``, ``u``, impulses and actuator states (and the trajectory of ``q``) go to an ``.npz``.

    python -m bench.final_states --save before.npz          # on the old commit
    python -m bench.final_states --compare before.npz       # on the new one: max differences per field

``--drive-train`` runs the same scenario through the whole drive train: a command delay of 2 steps, a drive
controller at the joints (p 5 Nm/rad, d 0.1 Nm s/rad, every 2 steps) and a 0.02 rad backlash on every actuator.

``--compare`` exits with status 1 when a field differs by more than ``--tolerance`` (default 1e-12,
absolute, the figure the architecture issue asks for).
"""

from __future__ import annotations

import argparse
import sys

import jax
import numpy as np


def final_states(n_worlds: int, n_steps: int, dt: float, drive_train: bool = False) -> dict[str, np.ndarray]:
    """The fields compared, after ``n_steps`` steps of ``n_worlds`` worlds (float64)."""
    import jax.numpy as jnp

    import jaxmor
    from bench import scenario as sc

    model = sc.jaxmor_model(dt, jnp.float64)
    if drive_train:
        model = jaxmor.with_command_delay(model, steps=2)
        model = jaxmor.with_drive_controller(model, p_gain=5.0, d_gain=0.1, period=2)
        model = jaxmor.with_backlash(model, width=0.02)
    states = sc.jaxmor_states(model, n_worlds)
    controls = jnp.asarray(sc.controls(n_worlds, n_steps, dt))
    final, traj = jax.jit(lambda s, c: jaxmor.rollout_batch(model, s, c))(states, controls)
    act = final.actuator_state
    out = {
        "q": final.q,
        "u": final.u,
        "time": final.time,
        "contact_impulse": final.contact_impulse,
        "friction_impulse": final.friction_impulse,
        "limit_impulse": final.limit_impulse,
        "motor_torque": act.motor_torque,
        "average_motor_speed": act.average_motor_speed,
        "joint_loss_torque": act.joint_loss_torque,
        "trajectory_q": traj.q,
    }
    if drive_train:
        out |= {
            k: getattr(final, k) for k in ("command_history", "controller_torque", "backlash_play", "backlash_rate")
        }
    return {k: np.asarray(v) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.final_states", description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", metavar="NPZ", help="write the final states to this file")
    group.add_argument("--compare", metavar="NPZ", help="compare with the final states in this file")
    parser.add_argument("--worlds", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--dt", type=float, default=0.002)
    parser.add_argument("--tolerance", type=float, default=1e-12)
    parser.add_argument("--drive-train", action="store_true", help="with delay, drive controller and backlash")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    states = final_states(args.worlds, args.steps, args.dt, args.drive_train)
    if args.save:
        np.savez(args.save, **states)
        print(f"saved {len(states)} fields of {args.worlds} worlds x {args.steps} steps to {args.save}")
        return 0
    reference = np.load(args.compare)
    worst = 0.0
    for name, value in states.items():
        diff = float(np.max(np.abs(value - reference[name]))) if value.size else 0.0
        worst = max(worst, diff)
        print(f"{name:22s} {str(value.shape):16s} max |difference| {diff:.3e}")
    print(f"largest difference {worst:.3e} (tolerance {args.tolerance:g})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
