"""The Go2 on flat ground, on a 50-step staircase and on a field of 2,500 boxes: compile time, peak memory and
step time of one world's jitted step (the terrain grids of ``Model.terrain``).

The figures of docs/design/collision.md, "Terrain". Run: ``python -m bench.tools.terrain`` (each scene in its
own process, so that the peak RSS is that scene's). Per scene: the model's load time; the compile time of
``jax.jit(lambda s: jaxmor.step(model, s))`` (lowering included) and the process's peak RSS after it
(``resource.getrusage``); the step's time for one world and for 64 vmapped worlds (median of ``--calls`` calls).
The scene builders are shared with ``tests/test_terrain.py``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

GO2_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "unitree_go2"
#: The staircase: steps, tread depth [m], riser [m], width [m]; the field: boxes per side, box side [m], heights [m].
STAIRS = {"steps": 50, "tread": 0.3, "riser": 0.1, "width": 1.2}
FIELD = {"n": 50, "side": 0.2, "low": 0.02, "high": 0.06}
SCENES = ("flat", "stairs", "field")
#: A scene measured only with ``--pairs``: the staircase with its boxes as contact pairs (``with_geom_grids(...,
#: enabled=False)``), the path without grids.
PAIRS_SCENE = "stairs_pairs"


def box(name: str, centre, half) -> str:
    """An MJCF world box geom."""
    pos, size = " ".join(f"{x:.6g}" for x in centre), " ".join(f"{x:.6g}" for x in half)
    return f'<geom name="{name}" type="box" pos="{pos}" size="{size}"/>'


def go2_scene(geoms) -> str:
    """MJCF text: the Go2 (``go2_mjx.xml``, 23 collision spheres), a floor plane and the world geoms ``geoms``."""
    return (
        '<mujoco><include file="go2_mjx.xml"/><worldbody><geom name="floor" size="0 0 0.05" type="plane"/>'
        f"{''.join(geoms)}</worldbody></mujoco>"
    )


def staircase(steps: int, tread: float, riser: float, width: float) -> tuple[list[str], np.ndarray]:
    """Gym-style stairs up along ``+x`` from ``x = 0``: step ``i`` a block from the floor to ``riser (i + 1)``.

    Returns:
        The geoms and (steps, 3) ``(x_start, x_end, top)`` of each tread [m].
    """
    geoms, treads = [], []
    for i in range(steps):
        top = riser * (i + 1)
        geoms.append(box(f"step{i}", (tread * (i + 0.5), 0.0, top / 2), (tread / 2, width / 2, top / 2)))
        treads.append((tread * i, tread * (i + 1), top))
    return geoms, np.array(treads)


def box_field(n: int, side: float, low: float, high: float, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """An ``n x n`` grid of boxes of side ``side`` centred on the origin, each from the floor to a random height in
    ``[low, high]``.

    Returns:
        The geoms and (n, n) the boxes' heights [m] (box ``(i, j)`` covers ``x`` in ``side (i - n/2) + [0, side]``).
    """
    heights = np.random.default_rng(seed).uniform(low, high, (n, n))
    geoms = [
        box(
            f"b{i}_{j}",
            (side * (i - n / 2 + 0.5), side * (j - n / 2 + 0.5), heights[i, j] / 2),
            (side / 2,) * 2 + (heights[i, j] / 2,),
        )
        for i in range(n)
        for j in range(n)
    ]
    return geoms, heights


def scene_model(name: str):
    """``(model, standing state)`` of a scene of :data:`SCENES`: the Go2 at its home keyframe, 1 cm above the
    surface (on the staircase straddling treads 20 and 21)."""
    import jaxmor

    if name in ("stairs", PAIRS_SCENE):
        geoms, treads = staircase(**STAIRS)
        xy, top = (treads[20, 1], 0.0), treads[20, 2]
    elif name == "field":
        geoms, heights = box_field(**FIELD)
        xy, top = (0.0, 0.0), float(heights.max())
    else:
        geoms, xy, top = [], (0.0, 0.0), 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Go2's condim 6 feet keep only their sliding friction
        model = jaxmor.load_mjcf(go2_scene(geoms), assets_dir=GO2_DIR)
    if name == PAIRS_SCENE:
        model = jaxmor.with_geom_grids(model, enabled=False)
    state = jaxmor.set_keyframe(model, jaxmor.init_state(model), "home")
    q = state.q.at[0].set(xy[0]).at[1].set(xy[1]).at[2].add(top + 0.01)
    return model, state.replace(q=q)


def _median_time(function, argument, calls: int) -> float:
    import jax

    jax.block_until_ready(function(argument))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(function(argument))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def measure(name: str, calls: int) -> dict:
    """The figures of one scene (module docstring)."""
    import jax
    import jax.numpy as jnp

    import jaxmor

    start = time.perf_counter()
    model, state = scene_model(name)
    load = time.perf_counter() - start
    step = jax.jit(lambda s: jaxmor.step(model, s))
    start = time.perf_counter()
    compiled = step.lower(state).compile()
    compile_s = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (64, *x.shape)), state)
    many = jax.jit(jax.vmap(lambda s: jaxmor.step(model, s)))
    return {
        "scene": name,
        "world_geoms": sum(b < 0 for b in model.geom_body),
        "grids": [(g.kind.label, g.shape, g.capacity, float(g.cell_size)) for g in model.terrain],
        "candidates": jaxmor.contact_count(model),
        "load_s": load,
        "compile_s": compile_s,
        "hlo_chars": len(compiled.as_text()),
        "peak_rss_gib": rss,
        "step_1_ms": 1e3 * _median_time(compiled, state, calls),
        "step_64_ms": 1e3 * _median_time(many, batch, calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", choices=(*SCENES, PAIRS_SCENE), help="measure this scene in this process (internal)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--pairs", action="store_true", help=f"also measure {PAIRS_SCENE!r} (the path without grids)")
    args = parser.parse_args()
    if args.scene:
        print(json.dumps(measure(args.scene, args.calls)))
        return
    rows = []
    for name in SCENES + ((PAIRS_SCENE,) if args.pairs else ()):
        command = [sys.executable, "-m", "bench.tools.terrain", "--scene", name, "--calls", str(args.calls)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    flat = rows[0]
    print(
        f"{'scene':8} {'geoms':>6} {'cand':>5} {'load s':>7} {'compile s':>9} {'RSS GiB':>8} {'1 world ms':>10} "
        f"{'64 worlds ms':>12} {'x flat (1, 64)':>15}"
    )
    for r in rows:
        ratio = f"{r['step_1_ms'] / flat['step_1_ms']:.2f}, {r['step_64_ms'] / flat['step_64_ms']:.2f}"
        print(
            f"{r['scene']:8} {r['world_geoms']:6d} {r['candidates']:5d} {r['load_s']:7.1f} {r['compile_s']:9.1f} "
            f"{r['peak_rss_gib']:8.2f} {r['step_1_ms']:10.3f} {r['step_64_ms']:12.3f} {ratio:>15}"
        )


if __name__ == "__main__":
    main()
