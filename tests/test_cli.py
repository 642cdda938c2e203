"""The ``jaxmor`` command line: ``info`` figures, one-line errors, ``demo`` and a non-editable install.

Expected figures are computed here from the spec's formulas (spec/actuators-motor-operating-region.md) and
the constants of the actuator files, never by calling jaxmor:

    stall = Kt V / R,  no-load = Kv V,  corner = Kv (V - R peak / Kt),  overspeed = Kv (V + R peak / Kt),
    b = Kt / (R Kv);  at the output: torque x G, speed / G, damping x G^2;  dt bound = 2 I R Kv / (G^2 Kt).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from models import QUADRUPED_URDF, ROOT, SERVO_MJCF, TURNTABLE_URDF

import jaxmor.tools.demo
from jaxmor.actuation.motor import MotorSaturation
from jaxmor.tools import cli
from jaxmor.tools.cli import main

# The turntable's motor (robots/turntable/actuators/spin_actuator.xml) and the quadruped's motor (both files).
SPIN = {"G": 10.0, "R": 0.2, "Kt": 0.1, "Kv": 10.0, "V": 24.0, "peak": 1.5}
HOUND = {"R": 0.4, "Kt": 0.1, "Kv": 10.0, "V": 24.0, "peak": 3.0}


def figures(m: dict, gear: float) -> dict:
    """The spec's characteristic figures at the motor and at the output, by hand."""
    stall = m["Kt"] * m["V"] / m["R"]
    b = m["Kt"] / (m["R"] * m["Kv"])
    no_load = m["Kv"] * m["V"]
    corner = m["Kv"] * (m["V"] - m["R"] * m["peak"] / m["Kt"])
    overspeed = m["Kv"] * (m["V"] + m["R"] * m["peak"] / m["Kt"])
    motor = {"peak": m["peak"], "stall": stall, "no-load": no_load, "corner": corner, "overspeed": overspeed, "b": b}
    output = {k: v * gear for k, v in motor.items() if k in ("peak", "stall")}
    output.update({k: motor[k] / gear for k in ("no-load", "corner", "overspeed")})
    output["b"] = b * gear**2
    return {"motor": motor, "output": output}


def child_env() -> dict[str, str]:
    """The environment of a child jaxmor process: on the CPU unless the caller chose a platform.

    On a machine with JAX's CUDA plugin installed but no GPU, JAX itself logs the plugin's failed start with a
    traceback; the tests that run a child judge jaxmor's own output.
    """
    return dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "jaxmor.tools.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd or ROOT, env=child_env())


def tables(text: str) -> dict[str, dict[str, dict[str, str]]]:
    """The tables of ``jaxmor info``: title line -> row name -> column -> cell."""
    out, lines = {}, text.splitlines()
    for k, line in enumerate(lines):
        if line.endswith(":") and k + 1 < len(lines) and lines[k + 1].startswith("  name"):
            header = lines[k + 1].split()
            rows = {}
            for row in lines[k + 2 :]:
                if not row.startswith("  "):
                    break
                cells = row.split()
                rows[cells[0]] = dict(zip(header, cells, strict=True))
            out[line] = rows
    return out


def section(parsed: dict, prefix: str) -> dict:
    (title,) = [t for t in parsed if t.startswith(prefix)]
    return parsed[title]


def check_figures(motor_row: dict, output_row: dict, expected: dict) -> None:
    columns = {
        "peak": "peak[Nm]",
        "stall": "stall[Nm]",
        "no-load": "no-load[rad/s]",
        "corner": "corner[rad/s]",
        "overspeed": "overspeed[rad/s]",
        "b": "back-EMF_damping[Nm*s/rad]",
    }
    for key, column in columns.items():
        assert float(motor_row[column]) == pytest.approx(expected["motor"][key], rel=1e-5), key
        assert float(output_row[column]) == pytest.approx(expected["output"][key], rel=1e-5), key


def test_info_turntable(capsys):
    assert main(["info", str(TURNTABLE_URDF)]) == 0
    parsed = tables(capsys.readouterr().out)
    expected = figures(SPIN, SPIN["G"])
    motor, output = (
        section(parsed, "actuators at the motor")["spin"],
        section(parsed, "actuators at the output")["spin"],
    )
    assert float(motor["gear"]) == SPIN["G"] and motor["couplings"] == "-"
    check_figures(motor, output, expected)
    # spec: stall 12 Nm, no-load 240 rad/s; output 15 Nm peak, 24 rad/s (guards the hand formulas themselves)
    assert expected["motor"]["stall"] == pytest.approx(12.0) and expected["output"]["no-load"] == pytest.approx(24.0)
    # I = the disc's izz 0.04 (m r^2 / 2 = 2 * 0.2^2 / 2) + the reflected rotor inertia 0.002 kg m^2.
    inertia = 2.0 * 0.2**2 / 2 + 0.002
    bound = 2 * inertia * SPIN["R"] * SPIN["Kv"] / (SPIN["G"] ** 2 * SPIN["Kt"])
    row = section(parsed, "time-step bound")["spin"]
    assert float(row["I[kg*m^2]"]) == pytest.approx(inertia, rel=1e-5)
    assert float(row["bound[ms]"]) == pytest.approx(1e3 * bound, rel=1e-5)  # 16.8 ms
    assert section(parsed, "joints")["spin"]["effort"] == "5"


def test_info_quadruped(capsys):
    assert main(["info", str(QUADRUPED_URDF)]) == 0
    parsed = tables(capsys.readouterr().out)
    at_motor, at_output = section(parsed, "actuators at the motor"), section(parsed, "actuators at the output")
    assert list(at_motor) == [f"{leg}_{j}" for leg in ("LF", "RF", "LH", "RH") for j in ("HAA", "HFE", "KFE")]
    for name, row in at_motor.items():
        leg, joint = name.split("_")
        gear = 6.0 if joint == "HAA" else 10.0
        assert float(row["gear"]) == gear
        assert row["couplings"] == (f"{leg}_HFE*1" if joint == "KFE" else "-")
        check_figures(row, at_output[name], figures(HOUND, gear))
    # The knee's inertia does not depend on the posture: the shank (a rod: m 0.3 kg, length 0.3 m, radius
    # 0.015 m, COM 0.15 m below the knee) about the knee axis, plus the reflected rotor inertia 100 * 6e-5.
    m, length, r = 0.3, 0.3, 0.015
    inertia = m * (3 * r**2 + length**2) / 12 + m * (length / 2) ** 2 + 100 * 6e-5
    bound = 2 * inertia * HOUND["R"] * HOUND["Kv"] / (10.0**2 * HOUND["Kt"])
    row = section(parsed, "time-step bound")["RH_KFE"]
    assert float(row["I[kg*m^2]"]) == pytest.approx(inertia, rel=1e-5)
    assert float(row["bound[ms]"]) == pytest.approx(1e3 * bound, rel=1e-5)  # 12.0 ms (quadruped/README.md)


def test_info_warns_when_the_step_exceeds_the_bound(capsys):
    bound_ms = 1e3 * 2 * 0.042 * SPIN["R"] * SPIN["Kv"] / (SPIN["G"] ** 2 * SPIN["Kt"])  # 16.8 ms
    assert main(["info", str(TURNTABLE_URDF), "--dt", str(0.9 * bound_ms / 1e3)]) == 0
    assert "WARNING" not in capsys.readouterr().out
    assert main(["info", str(TURNTABLE_URDF), "--dt", str(1.1 * bound_ms / 1e3)]) == 0
    (warning,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("WARNING")]
    assert "spin" in warning and "16.8 ms" in warning


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_info_shows_affine_delays_without_dc_motors(tmp_path, capsys):
    """A model whose actuators are all affine lists their control delays (the wrist motor's 3 steps of MuJoCo's
    default 2 ms: 6 ms); without a delay there is no drive-train table."""
    path = tmp_path / "servo.xml"
    path.write_text(SERVO_MJCF.replace('joint="wrist"', 'joint="wrist" delay="0.006" nsample="3"'))
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no DC-motor actuators" in out and "max_delay 3 steps" in out
    drive = section(tables(out), "drive train")
    assert [drive[name]["delay[steps]"] for name in ("servo", "wrist_motor")] == ["0", "3"]
    assert float(drive["wrist_motor"]["delay[s]"]) == pytest.approx(0.006)
    assert drive["wrist_motor"]["controller"] == "-"
    path.write_text(SERVO_MJCF)
    assert main(["info", str(path)]) == 0
    assert "drive train" not in capsys.readouterr().out


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("jaxmor: error: ")
    return lines[0]


def test_errors_are_one_line(tmp_path):
    missing = tmp_path / "missing.urdf"
    assert str(missing) in one_line_error(run_cli("info", str(missing)))
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'>\n<link name='a'>\n</robot>\n")
    line = one_line_error(run_cli("info", str(bad)))
    assert str(bad) in line and "malformed XML" in line
    line = one_line_error(run_cli("plot-region", str(TURNTABLE_URDF), "--actuator", "nope", "-o", "x.png"))
    assert "unknown actuator 'nope'" in line and "spin" in line
    assert not (ROOT / "x.png").exists()


def test_plot_region_without_matplotlib_is_one_line(tmp_path):
    code = (
        "import sys; sys.modules['matplotlib'] = None; from jaxmor.tools.cli import main; "
        f"sys.exit(main(['plot-region', {str(TURNTABLE_URDF)!r}, '-o', {str(tmp_path / 'r.png')!r}]))"
    )
    cmd = [sys.executable, "-c", code]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=child_env())
    assert "pip install 'jaxmor[plot]'" in one_line_error(proc)
    assert not (tmp_path / "r.png").exists()


def test_plot_region_writes_a_png(tmp_path, capsys):
    out = tmp_path / "region.png"
    assert main(["plot-region", str(TURNTABLE_URDF), "--side", "joint", "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG") and out.stat().st_size > 10_000


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """``jaxmor demo --worlds 8 --seconds 0.05 --out TMP`` in this process; the run's result is kept too."""
    results = []
    original = jaxmor.tools.demo.run_demo

    def spy(*args, **kwargs):
        results.append(original(*args, **kwargs))
        return results[-1]

    out = tmp_path_factory.mktemp("demo") / "made" / "by-the-demo"  # a missing folder is made
    mp = pytest.MonkeyPatch()
    mp.setattr(jaxmor.tools.demo, "run_demo", spy)
    import contextlib
    import io

    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            code = main(["demo", "--worlds", "8", "--seconds", "0.05", "--out", str(out)])
    finally:
        mp.undo()
    return code, stdout.getvalue(), out, results[0]


def test_demo_refuses_a_file_as_its_folder(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    assert main(["demo", "--worlds", "8", "--out", str(taken)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_prints_its_figures_and_writes_the_png(demo_run):
    code, text, out, result = demo_run
    assert code == 0
    png = out / "demo_regions.png"
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 50_000
    figures_ = dict(re.findall(r"^([a-z/ -]+):\s+(.*)$", text, flags=re.M))
    assert figures_["device"].startswith("cpu")
    assert figures_["worlds"].startswith("8 x ")
    assert float(figures_["compile time"].split()[0]) > 0
    assert float(figures_["world-steps/s"].split()[0].replace(",", "")) > 0
    # All 8 worlds are recorded: the printed shares are those of the recorded saturations.
    assert result.saturation.shape == (result.steps, 8, 12)
    voltage = np.mean(result.saturation == int(MotorSaturation.VOLTAGE))
    peak = np.mean(result.saturation == int(MotorSaturation.PEAK_TORQUE))
    assert figures_["voltage-limited"] == f"{100 * voltage:.1f}% of actuator-steps"
    assert figures_["peak-torque-limited"] == f"{100 * peak:.1f}% of actuator-steps"
    assert peak > 0  # the commands reach the region's bounds


@pytest.mark.slow
def test_demo_operating_points_lie_in_the_hand_computed_regions(demo_run):
    result = demo_run[3]
    m = HOUND
    stall, b = m["Kt"] * m["V"] / m["R"], m["Kt"] / (m["R"] * m["Kv"])
    w, tau = result.motor_speed.astype(np.float64), result.motor_torque.astype(np.float64)
    upper = np.clip(stall - b * w, -m["peak"], m["peak"])
    lower = np.clip(-stall - b * w, -m["peak"], m["peak"])
    tol = 1e-9 * m["peak"]
    assert np.all(tau <= upper + tol) and np.all(tau >= lower - tol)


@pytest.mark.slow
def test_non_editable_install_runs_the_demo_from_an_empty_folder(tmp_path):
    """What this proves: a wheel built from the checkout's sources (pip's ordinary PEP 517 build, not
    ``-e``) contains the shipped robots as package data (URDFs and actuator files), and once installed
    with ``pip install --no-deps --target DIR`` its ``jaxmor`` console script runs ``jaxmor demo --worlds 8
    --seconds 0.05`` from an empty folder outside the checkout: the robots are found inside the installed
    package, not in the source tree. jax, flax etc. come from the test environment (``--no-deps``: a fresh
    environment with jax would take minutes to install); ``jaxmor`` itself is imported from DIR (asserted).
    matplotlib is hidden from that run, so it also proves the demo runs and says how to get the PNG
    without it.
    """
    start = time.perf_counter()
    src = tmp_path / "src"
    src.mkdir()
    for folder in ("jaxmor", "robots"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(src)], check=True, capture_output=True)
    (wheel,) = wheels.glob("jaxmor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for robot in jaxmor.robots.NAMES:  # the description file: a URDF, or the Go2's MJCF
        assert f"jaxmor/robots/data/{robot}/{jaxmor.robots.path(robot).name}" in names
    for actuator in (
        "go2/actuators/go2_motors.xml",
        "go2/assets/foot.obj",
        "go2/LICENSE",
        "quadruped/actuators/abduction_actuator.xml",
        "quadruped/actuators/hound_leg_actuator.xml",
        "turntable/actuators/spin_actuator.xml",
    ):
        assert f"jaxmor/robots/data/{actuator}" in names

    target = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)], check=True)
    hide = tmp_path / "hide"  # a matplotlib that is not there
    (hide / "matplotlib").mkdir(parents=True)
    (hide / "matplotlib" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**child_env(), "PYTHONPATH": os.pathsep.join([str(target), str(hide)])}
    where = subprocess.run(
        [sys.executable, "-c", "import jaxmor; print(jaxmor.__file__)"],
        capture_output=True, text=True, check=True, cwd=empty, env=env,
    )  # fmt: skip
    assert where.stdout.strip().startswith(str(target))
    script = target / "bin" / "jaxmor"
    demo = subprocess.run(
        [sys.executable, str(script), "demo", "--worlds", "8", "--seconds", "0.05"],
        capture_output=True, text=True, check=False, cwd=empty, env=env,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stderr
    assert "world-steps/s" in demo.stdout and "voltage-limited" in demo.stdout
    assert "pip install 'jaxmor[plot]'" in demo.stdout
    assert list(empty.iterdir()) == []
    print(f"non-editable install and demo: {time.perf_counter() - start:.1f} s")


def test_version_is_the_installed_packages(capsys):
    """``jaxmor --version`` and ``jaxmor.__version__`` give pyproject.toml's version (what pip installed)."""
    import tomllib

    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert jaxmor.__version__ == expected
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.strip() == f"jaxmor {expected}"


def test_info_checks_its_time_step_before_printing(capsys):
    assert main(["info", str(TURNTABLE_URDF), "--dt", "-1"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "--dt must be a positive time step [s], got -1.0" in out.err


def test_view_does_not_replace_an_existing_page_unless_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "turntable.html").write_text("a page the user keeps")
    assert main(["view", str(TURNTABLE_URDF)]) == 2
    assert "turntable.html exists: pass --out turntable.html to replace it" in capsys.readouterr().err
    assert (tmp_path / "turntable.html").read_text() == "a page the user keeps"


@pytest.mark.filterwarnings("ignore::jaxmor.MujocoDifferenceWarning")
def test_info_lists_the_affine_actuators_law_and_limits(tmp_path, capsys):
    """The servo file's position servo (kp 20: gain 20, bias_q -20) and its motor (gear 2, force range 1.5 on
    each side): the table shows the file's numbers."""
    path = tmp_path / "servo.xml"
    path.write_text(SERVO_MJCF.replace('gear="2"', 'gear="2" forcerange="-1.5 1.5" ctrlrange="-3 4"'))
    assert main(["info", str(path)]) == 0
    rows = section(tables(capsys.readouterr().out), "affine actuators")
    servo, motor = rows["servo"], rows["wrist_motor"]
    assert servo["target"] == "hinge" and float(servo["gain"]) == 20 and float(servo["bias_q"]) == -20
    assert motor["target"] == "wrist" and float(motor["gear"]) == 2 and float(motor["bias_q"]) == 0
    assert [float(motor[k]) for k in ("ctrl_lower", "ctrl_upper", "force_lower", "force_upper")] == [-3, 4, -1.5, 1.5]
    assert servo["force_upper"] == "inf"


def test_info_lists_activation_dynamics(tmp_path, capsys):
    """A servo given MuJoCo's ``timeconst`` filters its control exactly: its dynamics, time constant and unlimited
    activation are listed; the motor without dynamics is not."""
    path = tmp_path / "servo.xml"
    path.write_text(SERVO_MJCF.replace('kp="20"', 'kp="20" timeconst="0.05"'))
    assert main(["info", str(path)]) == 0
    rows = section(tables(capsys.readouterr().out), "activation dynamics")
    assert set(rows) == {"servo"}
    servo = rows["servo"]
    assert servo["dynamics"] == "filterexact" and float(servo["time_constant[s]"]) == 0.05
    assert servo["act_upper"] == "inf" and servo["act_early"] == "no"


def test_package_dir_lets_a_file_read_meshes_beside_its_folder(tmp_path, capsys):
    """An MJCF whose mesh sits in a sibling folder (as Gymnasium-Robotics' Fetch keeps its meshes) is refused, the
    error naming the file outside the allowed folders; ``--package-dir`` with the parent folder lets ``info`` read
    it."""
    robot, meshes = tmp_path / "robot", tmp_path / "meshes"
    robot.mkdir()
    meshes.mkdir()
    corners = [(x, y, z) for x in (0, 0.1) for y in (0, 0.1) for z in (0, 0.1)]
    (meshes / "cube.obj").write_text(
        "".join(f"v {x} {y} {z}\n" for x, y, z in corners)
        + "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n"
    )
    (robot / "r.xml").write_text(
        '<mujoco><asset><mesh name="cube" file="../meshes/cube.obj"/></asset><worldbody><body name="arm">'
        '<joint name="swing" axis="0 0 1"/><geom type="mesh" mesh="cube"/></body></worldbody></mujoco>'
    )
    assert main(["info", str(robot / "r.xml")]) == 2
    assert "cube.obj" in capsys.readouterr().err
    assert main(["info", str(robot / "r.xml"), "--package-dir", str(tmp_path)]) == 0
    assert "swing" in capsys.readouterr().out


def test_a_second_run_loads_the_compiled_programs_from_the_cache_folder(tmp_path):
    """``jaxmor`` keeps compiled programs in ``$JAXMOR_COMPILE_CACHE``: the first ``info`` writes them, the second
    finds every one (JAX logs each hit with ``JAX_LOG_COMPILES``, each miss with ``JAX_EXPLAIN_CACHE_MISSES``);
    ``off`` keeps none."""
    folder = tmp_path / "xla"
    env = {k: v for k, v in child_env().items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env.update(
        JAXMOR_COMPILE_CACHE=str(folder),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_LOG_COMPILES="1",
        JAX_EXPLAIN_CACHE_MISSES="1",
    )
    cmd = [sys.executable, "-m", "jaxmor.tools.cli", "info", str(QUADRUPED_URDF)]
    runs = [subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT, env=env) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert len(list(folder.glob("*-cache"))) > 10
    assert "PERSISTENT COMPILATION CACHE MISS" in runs[0].stderr
    assert "Persistent compilation cache hit" in runs[1].stderr
    assert "PERSISTENT COMPILATION CACHE MISS" not in runs[1].stderr
    off = subprocess.run(
        cmd, capture_output=True, text=True, check=False, cwd=ROOT, env={**env, "JAXMOR_COMPILE_CACHE": "off"}
    )
    assert off.returncode == 0 and "ersistent compilation cache" not in off.stderr.lower()


def test_the_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("JAXMOR_COMPILE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cli._compile_cache_folder() == str(tmp_path / "jaxmor" / "xla")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cli._compile_cache_folder() == str(tmp_path / "home" / ".cache" / "jaxmor" / "xla")
    for off in ("off", "OFF", "", "0", "none"):
        monkeypatch.setenv("JAXMOR_COMPILE_CACHE", off)
        assert cli._compile_cache_folder() is None
    monkeypatch.setenv("JAXMOR_COMPILE_CACHE", str(tmp_path / "mine"))
    assert cli._compile_cache_folder() == str(tmp_path / "mine")


def test_a_cache_configured_for_jax_is_left_as_it_is(monkeypatch, tmp_path):
    """The test run configures JAX's cache itself (conftest): the command keeps it and makes no folder of its own."""
    import jax

    before = jax.config.jax_compilation_cache_dir
    assert before is not None
    monkeypatch.setenv("JAXMOR_COMPILE_CACHE", str(tmp_path / "mine"))
    try:
        cli._compile_cache()
        assert jax.config.jax_compilation_cache_dir == before
        assert not (tmp_path / "mine").exists()
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
