"""The ``jaxmor`` command line: ``jaxmor demo`` and ``jaxmor info ROBOT.urdf``."""

from __future__ import annotations

import argparse
import sys

import numpy as np


def _demo() -> int:
    import jax
    import jax.numpy as jnp

    import jaxmor

    path = jaxmor.robots.path("turntable")
    model = jaxmor.load_urdf(path)
    print(jaxmor.summary(model))
    state = jaxmor.init_state(model)
    state = jaxmor.set_actuator_torque(model, state, "spin", 100.0)
    print("\nThe actuator 'spin' is commanded 100 Nm at its gear output. Its motor region allows:")
    print(f"  {'joint speed [rad/s]':>20} {'lower [Nm]':>11} {'upper [Nm]':>11}")
    bounds = jax.jit(jaxmor.actuator_torque_bounds)
    for speed in (0.0, 12.0, 21.0, 23.8, 24.0, 30.0):
        lower, upper = bounds(model, state.replace(u=jnp.full_like(state.u, speed)))
        print(f"  {speed:20.1f} {float(lower[0]):11.3f} {float(upper[0]):11.3f}")

    steps = 10
    run = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=steps))
    print(f"\nSpinning up from rest, dt = {float(model.opt.timestep) * 1e3:g} ms (the back EMF eats the bus voltage):")
    print(f"  {'time [s]':>9} {'speed [rad/s]':>14} {'motor torque [Nm]':>18}  saturation")
    for _ in range(10):
        state, _ = run(state)
        act = state.actuator_state
        sat = jaxmor.MotorSaturation(int(act.saturation[0])).name
        print(f"  {float(state.time):9.3f} {float(state.u[0]):14.3f} {float(act.motor_torque[0]):18.4f}  {sat}")
    print("  the speed approaches the no-load speed 240 rad/s / gear 10 = 24 rad/s, where the region closes.")
    return 0


def _info(path: str) -> int:
    import jaxmor

    model = jaxmor.load_urdf(path)
    print(jaxmor.summary(model))
    np.set_printoptions(precision=4, suppress=True)
    if model.na:
        print("transmission matrix T (actuators x velocities):")
        print(np.asarray(model.actuators.transmission))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``jaxmor`` command."""
    parser = argparse.ArgumentParser(prog="jaxmor", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="load the shipped turntable and print its motor operating region")
    info = sub.add_parser("info", help="load a URDF and print its summary")
    info.add_argument("urdf")
    args = parser.parse_args(argv)
    from jaxmor.errors import JaxmorError

    try:
        if args.command == "demo":
            return _demo()
        return _info(args.urdf)
    except JaxmorError as exc:
        print(f"jaxmor: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
