"""Frames and videos without a browser: ``jaxmor.viewer.render`` (MuJoCo's offscreen renderer) timed, against the
page captured in headless Chromium (``engine="page"``) on a few frames.

    python -m bench.render [--frames 100] [--page-frames 5] [--out bench/results/render-DATE.json]

Cases, each at 640 x 480 on this machine's OpenGL (EGL; Mesa's llvmpipe where there is no GPU):

* ``quadruped``: the shipped quadruped, one world, ``--frames`` frames of a rollout under random torques, written
  as a GIF by ``write_video`` (the whole call: kinematics, scene build, drawing, encoding), then ``render`` alone;
* ``go2``: the Menagerie Go2 (its visual meshes, 340k triangles), the same;
* ``quadruped-64``: 64 quadruped worlds side by side, ``render`` of 20 frames;
* ``live-closed``: 10,000 steps of one quadruped world (a jitted ``jaxmor.step``) in a Python loop, with and
  without ``LiveViewer.update`` after every step and no page open; the rounds alternate, medians compared; and
  ``update`` alone, called 100,000 times (its cost per call against the step's);
* ``page``: ``write_video(engine="page")`` of ``--page-frames`` of the quadruped's frames (0: skipped), one
  call.

Each figure is one timed call after a warm-up call of the same case (the warm-up compiles the kinematics); the
median of ``--repeats`` calls is reported.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _trajectory(model, standing, worlds: int, steps: int):
    import jax
    import jax.numpy as jnp

    import jaxmor

    stand = jnp.asarray(standing)
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.tile(stand, (worlds, 1)))
    torques = jax.random.uniform(jax.random.key(0), (worlds, steps, model.na), minval=-5.0, maxval=5.0)
    return jax.jit(lambda s, t: jaxmor.rollout_batch(model, s, t))(states, torques)[1]


def _timed(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def live_overhead(steps: int = 10_000, rounds: int = 9) -> dict:
    """The ``live-closed`` case: seconds per loop without and with the viewer's ``update``, medians of ``rounds``."""
    import jax
    import jax.numpy as jnp

    import jaxmor
    from jaxmor.viewer.live_view import live

    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    start = jaxmor.init_state(model, q=jnp.asarray(jaxmor.robots.quadruped_standing_q(model)))
    step = jax.jit(lambda s: jaxmor.step(model, s))
    jax.block_until_ready(step(start))
    viewer = live(model)

    def loop(update: bool) -> float:
        state, began = start, time.perf_counter()
        for _ in range(steps):
            state = step(state)
            if update:
                viewer.update(state)
        jax.block_until_ready(state)
        return time.perf_counter() - began

    times: dict[str, list[float]] = {"bare": [], "viewer": []}
    try:
        for _ in range(rounds):
            times["bare"].append(loop(False))
            times["viewer"].append(loop(True))
        began, calls = time.perf_counter(), 100_000
        for _ in range(calls):
            viewer.update(start)
        update_us = (time.perf_counter() - began) / calls * 1e6
    finally:
        viewer.close()
    bare, with_viewer = statistics.median(times["bare"]), statistics.median(times["viewer"])
    return {
        "steps": steps,
        "rounds": rounds,
        "bare_s": round(bare, 3),
        "viewer_s": round(with_viewer, 3),
        "ratio": round(with_viewer / bare, 4),
        "update_us": round(update_us, 3),
        "step_us": round(bare / steps * 1e6, 1),
        "draws": viewer.draws,
        "times": times,
    }


def run(frames: int, page_frames: int, repeats: int) -> dict:
    import jaxmor
    from jaxmor import viewer

    quadruped = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    go2 = jaxmor.robots.go2()
    cases = {
        "quadruped": (quadruped, _trajectory(quadruped, jaxmor.robots.quadruped_standing_q(quadruped), 1, frames)),
        "go2": (go2, _trajectory(go2, jaxmor.robots.go2_standing_q(go2), 1, frames)),
    }
    results: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, (model, trajectory) in cases.items():
            gif = Path(folder) / f"{name}.gif"
            video = _timed(lambda m=model, t=trajectory, g=gif: viewer.write_video(m, t, g, progress=False), repeats)
            drawn = _timed(lambda m=model, t=trajectory: viewer.render(m, t, progress=False), repeats)
            results[name] = {"frames": frames, "write_video_s": round(video, 3), "render_s": round(drawn, 3)}
            print(f"{name}: {frames} frames, write_video {video:.2f} s, render {drawn:.2f} s", file=sys.stderr)
        many = _trajectory(quadruped, jaxmor.robots.quadruped_standing_q(quadruped), 64, 20)
        drawn = _timed(lambda: viewer.render(quadruped, many, progress=False), repeats)
        results["quadruped-64"] = {"worlds": 64, "frames": 20, "render_s": round(drawn, 3)}
        print(f"quadruped-64: 20 frames, render {drawn:.2f} s", file=sys.stderr)
        results["live-closed"] = live_overhead()
        print(f"live-closed: {results['live-closed']}", file=sys.stderr)
        if page_frames:
            model, trajectory = cases["quadruped"]
            gif = Path(folder) / "page.gif"
            began = time.perf_counter()
            viewer.write_video(model, trajectory, gif, engine="page", max_frames=page_frames)
            seconds = time.perf_counter() - began
            results["page"] = {"frames": page_frames, "write_video_s": round(seconds, 3)}
            print(f"page: {page_frames} frames, write_video {seconds:.2f} s", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.render", description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--page-frames", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    results = run(args.frames, args.page_frames, args.repeats)
    record = {
        "scenario": "render",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "size": [640, 480],
        "results": results,
    }
    today = datetime.date.today().isoformat()
    out = args.out or Path(__file__).parent / "results" / f"render-{today}.json"
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
