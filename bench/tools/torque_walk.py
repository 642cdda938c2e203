"""The torque walk: how often one step's drive-train work passes between ``jaxmor.sim`` and ``jaxmor.actuation``.

``python -m bench.tools.torque_walk [--plain]`` traces the stages of one step (:func:`jaxmor.sim.pipeline.stages`,
the guard left out) of the bench quadruped with the whole drive train (a command delay of 2 steps, a drive
controller, a 0.02 rad backlash on every actuator: ``bench.final_states --drive-train``'s model; ``--plain``: the
motors alone) under ``sys.setprofile``, and records every call whose callee is a function of a module in ``sim/``
or ``actuation/``, with its caller: the nearest such function up the stack (calls through JAX's own functions,
``jax.tree.map`` or ``vmap``, count as made by the jaxmor function that made them). It prints:

* ``calls into actuation``: calls of ``actuation/`` functions (the hops the drive train's work takes);
* ``crossings``: calls whose caller and callee are in different folders (``sim/`` -> ``actuation/`` or back);
* ``modules``: the modules of both folders entered;
* ``rotor views``: calls of :func:`jaxmor.actuation.backlash.rotor_view` (the rotors' view of the State);
* the distinct ``sim/`` -> ``actuation/`` edges, the places where the stages reach into the drive train.

Counts, not times: the same on every machine, a property of the code's structure. The issue's hand count (about
30 hops and 14 crossings following one torque) used another rule; compare this tool's numbers with each other.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

FOLDERS = ("sim", "actuation")


def _place(code) -> tuple[str, str] | None:
    """``(folder, module)`` of a code object in ``jaxmor/sim`` or ``jaxmor/actuation``, else ``None``."""
    parts = Path(code.co_filename).parts
    if "jaxmor" not in parts:
        return None
    rest = parts[len(parts) - 1 - parts[::-1].index("jaxmor") + 1 :]
    if len(rest) < 2 or rest[0] not in FOLDERS:
        return None
    return rest[0], "/".join(rest)[: -len(".py")]


def walk(drive_train: bool = True) -> dict:
    """The counts of the module docstring, from tracing one step's stages."""
    import jax
    import jax.numpy as jnp

    import jaxmor
    from bench import scenario as sc
    from jaxmor.sim.pipeline import stages

    model = sc.jaxmor_model(0.002, jnp.float32)
    if drive_train:
        model = jaxmor.with_command_delay(model, steps=2)
        model = jaxmor.with_drive_controller(model, p_gain=5.0, d_gain=0.1, period=2)
        model = jaxmor.with_backlash(model, width=0.02)
    state = jaxmor.init_state(model)
    calls: list[tuple[tuple[str, str], tuple[str, str], str]] = []

    def profile(frame, event, _):
        if event != "call":
            return
        callee = _place(frame.f_code)
        if callee is None:
            return
        up = frame.f_back
        while up is not None and _place(up.f_code) is None:
            up = up.f_back
        if up is not None:
            calls.append((_place(up.f_code), callee, f"{up.f_code.co_name} -> {frame.f_code.co_name}"))

    sys.setprofile(profile)
    try:
        jax.make_jaxpr(lambda s: stages(model, s).state)(state)
    finally:
        sys.setprofile(None)
    into = [c for c in calls if c[1][0] == "actuation"]
    crossings = [c for c in calls if c[0][0] != c[1][0]]
    edges = collections.Counter(
        f"{c[0][1]}.{c[2].split(' -> ')[0]} -> {c[1][1]}.{c[2].split(' -> ')[1]}"
        for c in calls
        if c[0][0] == "sim" and c[1][0] == "actuation"
    )
    return {
        "drive_train": drive_train,
        "calls_into_actuation": len(into),
        "crossings": len(crossings),
        "modules": sorted({c[1][1] for c in calls} | {c[0][1] for c in calls}),
        "rotor_views": sum(1 for c in calls if c[2].endswith("-> rotor_view")),
        "sim_to_actuation_edges": dict(sorted(edges.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tools.torque_walk", description=__doc__.splitlines()[0])
    parser.add_argument("--plain", action="store_true", help="the motors alone (no delay, controller, backlash)")
    args = parser.parse_args(argv)
    out = walk(drive_train=not args.plain)
    print(f"calls into actuation: {out['calls_into_actuation']}")
    print(f"crossings:            {out['crossings']}")
    print(f"modules:              {len(out['modules'])}")
    print(f"rotor views:          {out['rotor_views']}")
    print("sim -> actuation edges:")
    for edge, count in out["sim_to_actuation_edges"].items():
        print(f"  {count:3d}  {edge}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
