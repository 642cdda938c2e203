"""``jaxmor demo``: the shipped quadruped in many parallel worlds, its motors pushed into their voltage band.

Every world starts from the quadruped's standing pose (``robots/quadruped/README.md``) on a ground
plane and runs its own joint PD controller, computed explicitly and sent as actuator torques (so the
motor operating regions clip it), towards sinusoidal joint targets: per world a frequency, and per joint an
amplitude and a phase, drawn from a fixed seed. Fast targets need joint speeds above the motors' corner
speeds, so part of the actuator-steps are limited by the bus voltage and part by the peak torque.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

#: Worlds run by default on a CPU and on an accelerator.
DEFAULT_WORLDS_CPU = 1024
DEFAULT_WORLDS_ACCELERATOR = 8192
#: Simulated time of a default run [s], and the demo's time step [s].
DEFAULT_SECONDS = 0.5
TIMESTEP = 0.002
#: Worlds whose operating points are recorded every step for the figure.
RECORDED_WORLDS = 16

# The PD controller (gear-output torques) and the range of its targets.
_KP = 100.0  # [Nm/rad]
_KD = 8.0  # [Nm s/rad]
_FREQUENCY = (4.0, 8.0)  # per world [Hz]
_AMPLITUDE = (0.3, 0.7)  # per joint [rad]
_SEED = 0


@dataclass
class DemoResult:
    """What a demo run measured.

    Attributes:
        device: the JAX backend and device, in words.
        worlds: number of parallel worlds.
        steps: steps each world ran.
        timestep: time step [s].
        compile_seconds: wall time to compile one chunk of steps [s].
        run_seconds: wall time of all steps after compiling [s].
        voltage_share: share of actuator-steps whose command the bus voltage limited [-].
        peak_share: share of actuator-steps whose command the peak torque limited [-].
        motor_speed: (steps, RECORDED_WORLDS, 12) motor speeds of the recorded worlds [rad/s].
        motor_torque: (steps, RECORDED_WORLDS, 12) motor torques of the recorded worlds [Nm].
        saturation: (steps, RECORDED_WORLDS, 12) int32 :class:`jaxmor.MotorSaturation` values.
    """

    device: str
    worlds: int
    steps: int
    timestep: float
    compile_seconds: float
    run_seconds: float
    voltage_share: float
    peak_share: float
    motor_speed: np.ndarray
    motor_torque: np.ndarray
    saturation: np.ndarray

    @property
    def world_steps_per_second(self) -> float:
        """World-steps per second of wall time, compile excluded."""
        return self.worlds * self.steps / self.run_seconds


def default_worlds() -> int:
    """The default number of worlds on JAX's default backend: more on an accelerator than on a CPU."""
    import jax

    return DEFAULT_WORLDS_CPU if jax.default_backend() == "cpu" else DEFAULT_WORLDS_ACCELERATOR


def demo_model():
    """The shipped quadruped on the ground plane z = 0 with the demo's time step."""
    import jaxmor

    model = jaxmor.add_ground(jaxmor.load_urdf(jaxmor.robots.path("quadruped")))
    return jaxmor.with_options(model, timestep=TIMESTEP)


def _progress(fraction: float, width: int = 30) -> None:
    filled = int(round(fraction * width))
    sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {100 * fraction:3.0f}%")
    if fraction >= 1.0:
        sys.stderr.write("\n")
    sys.stderr.flush()


def _map_worlds(fn, args, chunk: int):
    """``fn`` (vmapped over a leading world axis) on ``chunk`` worlds at a time, one chunk after the other.

    On a CPU, chunks of worlds that stay in the caches run faster than one vmap over all of them.
    """
    import jax
    import jax.numpy as jnp

    from jaxmor.sim.batch import _merge_worlds, _split_worlds

    n = jax.tree.leaves(args)[0].shape[0]
    chunk = min(chunk, n)
    n_chunks, rest = divmod(n, chunk)
    outs = []
    split = _split_worlds(jax.tree.map(lambda x: x[: n_chunks * chunk], args), n_chunks, chunk)
    outs.append(_merge_worlds(jax.lax.scan(lambda _, a: (None, fn(a)), None, split)[1]))
    if rest:
        outs.append(fn(jax.tree.map(lambda x: x[n_chunks * chunk :], args)))
    if len(outs) == 1:
        return outs[0]
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), *outs)


def _world_controller(model, worlds: int):
    """The worlds' start states, their target parameters and the one-world step with its PD controller.

    Returns:
        ``(states, params, world_step)``: ``world_step(state, params_of_one_world)`` is the next state.
    """
    import jax
    import jax.numpy as jnp

    import jaxmor

    dtype = model.body_mass.dtype
    na = model.na
    q_act = np.array([jaxmor.joint_q_index(model, model.actuators.joints[a]) for a in range(na)])
    v_act = np.array(model.actuators.joint_v_index)
    q0 = jaxmor.robots.quadruped_standing_q(model)

    rng = np.random.default_rng(_SEED)
    frequency = rng.uniform(*_FREQUENCY, size=(worlds, 1))
    amplitude = rng.uniform(*_AMPLITUDE, size=(worlds, na))
    phase = rng.uniform(0.0, 2 * np.pi, size=(worlds, na))
    # Targets q0 + A sin(w t + phi), started at zero offset: the phase enters as sin(w t + phi) - sin(phi).
    params = jax.tree.map(lambda x: jnp.asarray(x, dtype), (2 * np.pi * frequency, amplitude, phase))
    states = jaxmor.init_states(model, None, worlds, q=jnp.asarray(q0, dtype))
    q_home = jnp.asarray(q0[q_act], dtype)

    def world_step(s, p):
        omega, amp, phi = p
        t = s.time
        target = q_home + amp * (jnp.sin(omega * t + phi) - jnp.sin(phi))
        target_speed = amp * omega * jnp.cos(omega * t + phi)
        torque = _KP * (target - s.q[q_act]) + _KD * (target_speed - s.u[v_act])
        return jaxmor.step(model, s.replace(actuator_torque=torque.astype(dtype)))

    return states, params, world_step


def _chunk_length(n_steps: int) -> int:
    """About a twentieth of ``n_steps`` (one progress update a chunk), a divisor of it where one is near."""
    near = -(-n_steps // 20)
    exact = [k for k in range(max(1, near // 2), 2 * near + 1) if n_steps % k == 0]
    return min(exact, key=lambda k: abs(k - near)) if exact else near


def _chunk_function(world_step, chunk_steps: int, recorded: int, worlds: int):
    """``chunk(states, params)``: ``chunk_steps`` steps of every world.

    It returns the final states, the counts of voltage- and peak-torque-limited actuator-steps, and the
    operating points of the first ``recorded`` worlds.
    """
    import jax
    import jax.numpy as jnp

    import jaxmor

    on_cpu = jax.default_backend() == "cpu"

    def chunk(states, params):
        def one_world(args):
            s, p = args

            def body(s, _):
                s = world_step(s, p)
                a = s.actuator_state
                return s, (a.motor_speed, a.motor_torque, a.saturation)

            return jax.lax.scan(body, s, None, length=chunk_steps)

        final, (speed, torque, sat) = _map_worlds(jax.vmap(one_world), (states, params), 256 if on_cpu else worlds)
        limits = (jaxmor.MotorSaturation.VOLTAGE, jaxmor.MotorSaturation.PEAK_TORQUE)
        counts = jnp.stack([jnp.sum(sat == int(limit)) for limit in limits])
        record = jax.tree.map(lambda x: jnp.swapaxes(x[:recorded], 0, 1), (speed, torque, sat))
        return final, counts, record

    return chunk


def _run_chunks(compiled, states, params, n_chunks: int, progress: bool):
    """Run the compiled chunk ``n_chunks`` times; returns the summed counts, the records and the wall time [s]."""
    import jax

    counts = np.zeros(2, dtype=np.int64)
    records = []
    if progress:
        _progress(0.0)
    start = time.perf_counter()
    for k in range(n_chunks):
        states, c, record = compiled(states, params)
        counts += np.asarray(c, dtype=np.int64)
        records.append(jax.tree.map(np.asarray, record))
        if progress:
            _progress((k + 1) / n_chunks)
    jax.block_until_ready(states)
    run_seconds = time.perf_counter() - start
    return counts, records, run_seconds


def run_demo(worlds: int, seconds: float, progress: bool = True) -> DemoResult:
    """Run the demo: ``worlds`` quadrupeds for ``seconds`` of simulated time, in chunks of steps.

    Args:
        worlds: number of parallel worlds (>= 1).
        seconds: simulated time [s] (> 0); rounded up to whole chunks of steps.
        progress: draw a progress bar on stderr.

    Returns:
        The measured figures and the recorded operating points.
    """
    import jax

    model = demo_model()
    na = model.na
    states, params, world_step = _world_controller(model, worlds)

    n_steps = max(1, round(seconds / TIMESTEP))
    chunk_steps = _chunk_length(n_steps)
    n_chunks = -(-n_steps // chunk_steps)
    recorded = min(RECORDED_WORLDS, worlds)
    chunk = _chunk_function(world_step, chunk_steps, recorded, worlds)

    start = time.perf_counter()
    compiled = jax.jit(chunk).lower(states, params).compile()
    compile_seconds = time.perf_counter() - start

    counts, records, run_seconds = _run_chunks(compiled, states, params, n_chunks, progress)

    total = worlds * n_chunks * chunk_steps * na
    speed, torque, sat = (np.concatenate(x) for x in zip(*records, strict=True))
    device = jax.devices()[0]
    return DemoResult(
        device=f"{jax.default_backend()} ({device.device_kind}, {jax.device_count()} device(s))",
        worlds=worlds,
        steps=n_chunks * chunk_steps,
        timestep=TIMESTEP,
        compile_seconds=compile_seconds,
        run_seconds=run_seconds,
        voltage_share=counts[0] / total,
        peak_share=counts[1] / total,
        motor_speed=speed,
        motor_torque=torque,
        saturation=sat,
    )


#: Worlds a demo video shows, and the most frames it has.
VIDEO_WORLDS = 4
VIDEO_FRAMES = 50


def video_trajectory(worlds: int, seconds: float):
    """The first ``min(worlds, VIDEO_WORLDS)`` demo worlds run for ``seconds``, every k-th state kept (at most
    :data:`VIDEO_FRAMES`): ``(model, states (T, W, ...))``."""
    import jax

    model = demo_model()
    shown = min(worlds, VIDEO_WORLDS)
    states, params, world_step = _world_controller(model, shown)
    n_steps = max(1, round(seconds / TIMESTEP))
    stride = -(-n_steps // VIDEO_FRAMES)

    def frame(s, _):
        s = jax.lax.fori_loop(0, stride, lambda _, x: jax.vmap(world_step)(x, params), s)
        return s, s

    _, frames = jax.jit(lambda s: jax.lax.scan(frame, s, None, length=-(-n_steps // stride)))(states)
    return model, frames


def write_demo_video(worlds: int, seconds: float, path: str) -> None:
    """Write the demo's first worlds as a video (:func:`jaxmor.viewer.write_video`; ``.gif`` or ``.mp4``)."""
    from jaxmor import viewer

    model, frames = video_trajectory(worlds, seconds)
    viewer.write_video(model, frames, path, world_axis=1, actuators=True)
    print(f"video:               {path} ({frames.q.shape[0]} frames of {frames.q.shape[1]} worlds)")


def main(worlds: int | None, seconds: float, out: str, video: str | None = None) -> int:
    """``jaxmor demo``: run, print the figures, write ``out/demo_regions.png`` (and the video ``video``, a ``.gif``
    or ``.mp4``, of the first worlds); returns the exit code."""
    from jaxmor.errors import ArgumentError

    if worlds is None:
        worlds = default_worlds()
    if worlds < 1:
        raise ArgumentError(f"--worlds must be at least 1, got {worlds}")
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ArgumentError(f"--seconds must be positive, got {seconds}")
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise ArgumentError(f"--out {out!r} is a file, not a folder")
    if video is not None and Path(video).suffix.lower() not in (".gif", ".mp4"):
        raise ArgumentError(f"--video must name a .gif or .mp4 file, got {video!r}")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArgumentError(f"--out {out!r}: cannot create the folder: {exc.strerror}") from None

    print(
        f"jaxmor demo: the shipped quadruped, standing, {worlds:,} worlds x {seconds:g} s"
        f" at dt = {TIMESTEP * 1e3:g} ms, each with its own PD targets sent as actuator torques"
    )
    result = run_demo(worlds, seconds)
    if video is not None:
        write_demo_video(worlds, seconds, video)
    print(f"device:              {result.device}")
    print(f"worlds:              {result.worlds:,} x {result.steps} steps ({result.steps * result.timestep:g} s)")
    print(f"compile time:        {result.compile_seconds:.1f} s")
    print(f"world-steps/s:       {result.world_steps_per_second:,.0f} (run {result.run_seconds:.1f} s)")
    print(f"voltage-limited:     {100 * result.voltage_share:.1f}% of actuator-steps")
    print(f"peak-torque-limited: {100 * result.peak_share:.1f}% of actuator-steps")

    try:
        from jaxmor.tools import plot
    except ImportError as exc:
        if exc.name != "matplotlib":
            raise
        print("figure:              not drawn, matplotlib is missing: pip install 'jaxmor[plot]'")
        return 0
    plot._use_file_backend()
    recorded = SimpleNamespace(
        motor_speed=result.motor_speed, motor_torque=result.motor_torque, saturation=result.saturation
    )
    fig = plot.plot_actuators(
        demo_model(),
        recorded,
        title=f"jaxmor demo: motor operating regions, {min(RECORDED_WORLDS, worlds)} of {worlds:,} worlds",
    )
    path = out_dir / "demo_regions.png"
    fig.savefig(path, dpi=80)
    plot.close(fig)
    print(f"figure:              {path}")
    return 0
