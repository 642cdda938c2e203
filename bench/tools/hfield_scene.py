"""Write the Go2 bench scene with a height field: Menagerie's ``scene_mjx.xml`` plus a 200 x 200 ``<hfield>`` of
uniform roughness (0 to 2 cm, seeded) over 4 m x 4 m under the robot, beside its floor plane.

Run ``python -m bench.tools.hfield_scene FOLDER``, then ``python -m bench go2 --xml FOLDER/scene_hfield.xml`` (and
``--xml FOLDER/scene_mjx.xml`` for the flat scene with the same copies): the files the scene includes are copied
into ``FOLDER`` (a model's files stay inside its folder). The figures: ``bench/README.md``, "Height field".
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


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    print(write_scene(parser.parse_args(argv).folder))


if __name__ == "__main__":
    main()
