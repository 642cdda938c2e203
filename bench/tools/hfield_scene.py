"""Write the Go2 bench scene with a height field: Menagerie's ``scene_mjx.xml`` plus a 200 x 200 ``<hfield>`` of
uniform roughness (0 to 2 cm, seeded) over 4 m x 4 m under the robot, beside its floor plane.

Run ``python -m bench.tools.hfield_scene FOLDER``, then ``python -m bench go2 --xml FOLDER/scene_hfield.xml`` (and
``--xml FOLDER/scene_mjx.xml`` for the flat scene with the same copies): the files the scene includes are copied
into ``FOLDER`` (a model's files stay inside its folder). ``--compile-rounds K`` also compiles the two scenes'
rollouts (1,024 worlds x 100 steps, chunks of 256, as the bench's jaxmor case) alternately in this process, ``K``
times each, and prints the times: a paired comparison that the machine's load moves less than separate runs. The
figures: ``bench/README.md``, "The Go2 on a height field".
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np

GO2_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "unitree_go2"
#: Vertices per side, the field's half side [m], its largest height [m], the seed.
GRID, HALF, TOP, SEED = 200, 2.0, 0.02, 0


def write_scene(folder: Path) -> Path:
    """``folder/scene_hfield.xml`` (and the Go2's files beside it); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("go2_mjx.xml", "scene_mjx.xml", "assets"):
        if not (folder / name).exists():
            (shutil.copytree if (GO2_DIR / name).is_dir() else shutil.copy)(GO2_DIR / name, folder / name)
    grid = np.random.default_rng(SEED).uniform(0.0, 1.0, (GRID, GRID))
    elevation = " ".join(f"{v:.6f}" for v in grid.ravel())
    text = (GO2_DIR / "scene_mjx.xml").read_text()
    asset = f'<asset><hfield name="terrain" nrow="{GRID}" ncol="{GRID}" size="{HALF} {HALF} {TOP} 0.1" '
    text = text.replace("<worldbody>", asset + f'elevation="{elevation}"/></asset>\n  <worldbody>', 1)
    text = text.replace("</worldbody>", '  <geom name="terrain" type="hfield" hfield="terrain"/>\n  </worldbody>', 1)
    path = folder / "scene_hfield.xml"
    path.write_text(text)
    return path


def compile_times(folder: Path, rounds: int) -> dict[str, list[float]]:
    """Seconds to lower and compile each scene's 1,024-world, 100-step rollout, ``rounds`` times, alternating."""
    import time
    import warnings

    import jax
    import jax.numpy as jnp

    import jaxmor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MuJoCo's soft contacts; the feet's condim
        models = {
            kind: jaxmor.load_mjcf(folder / name)
            for kind, name in (("flat", "scene_mjx.xml"), ("field", "scene_hfield.xml"))
        }
    times: dict[str, list[float]] = {kind: [] for kind in models}
    for _ in range(rounds):
        for kind, model in models.items():
            state = jaxmor.set_keyframe(model, jaxmor.init_state(model), "home")
            states = jax.tree.map(lambda x: jnp.broadcast_to(x, (1024, *x.shape)), state)
            ctrl = jnp.broadcast_to(state.ctrl, (1024, 100, model.nu))
            start = time.perf_counter()
            run = jax.jit(
                lambda s, c, m=model: jaxmor.rollout_batch(m, s, controls={"ctrl": c}, n_steps=100, chunk_size=256)
            )
            run.lower(states, ctrl).compile()
            times[kind].append(time.perf_counter() - start)
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--compile-rounds", type=int, default=0, help="compile both scenes this many times each")
    args = parser.parse_args(argv)
    print(write_scene(args.folder))
    if args.compile_rounds > 0:
        for kind, values in compile_times(args.folder, args.compile_rounds).items():
            print(kind, "compile [s]:", ", ".join(f"{v:.2f}" for v in values), f"(median {np.median(values):.2f})")


if __name__ == "__main__":
    main()
