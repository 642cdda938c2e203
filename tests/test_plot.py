"""jaxmor.tools.plot: the drawn outlines are the closed-form region bounds, computed here from the motor constants.

Region (spec/actuators-motor-operating-region.md), motor side: upper(w) = clamp(stall - b w, -peak, peak),
lower(w) = clamp(-stall - b w, -peak, peak); after joint losses (damping d, friction c at the joint):
minus (d / G^2) w + (c / G) sgn(w). At the joint: speed w / G, torque G tau.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from models import ROOT

from jaxmor.actuation.motor import DcMotorParameters, MotorSaturation
from jaxmor.errors import ArgumentError
from jaxmor.tools import plot

# The turntable's motor: R 0.2, Kt 0.1, Kv 10, V 24, peak 1.5, G 10 -> stall 12 Nm, b 0.05 Nm s/rad.
SPIN = DcMotorParameters(0.2, 0.1, 10.0, 24.0, 1.5)
STALL, B, PEAK, G = 0.1 * 24 / 0.2, 0.1 / (0.2 * 10), 1.5, 10.0


def axes():
    return Figure().add_subplot()


def lines_by_gid(ax) -> dict:
    out = {}
    for line in ax.lines:
        out.setdefault(line.get_gid(), []).append(line)
    return out


@pytest.mark.parametrize("side", ["motor", "joint"])
def test_outline_is_the_closed_form_region(side):
    ax = axes()
    damping, friction = 0.8, 0.3  # at the joint [Nm s/rad], [Nm]
    plot.draw_region(ax, SPIN, gear_ratio=G, side=side, damping=damping, friction=friction)
    drawn = lines_by_gid(ax)
    speed_scale, torque_scale = (1.0, 1.0) if side == "motor" else (1 / G, G)
    (upper,), (lower,) = drawn["region_upper"], drawn["region_lower"]
    w = upper.get_xdata() / speed_scale
    assert len(w) > 200 and w.min() < -(STALL + PEAK) / B and w.max() > (STALL + PEAK) / B  # past the overspeed
    np.testing.assert_allclose(upper.get_ydata(), torque_scale * np.clip(STALL - B * w, -PEAK, PEAK), atol=1e-12)
    np.testing.assert_allclose(lower.get_ydata(), torque_scale * np.clip(-STALL - B * w, -PEAK, PEAK), atol=1e-12)
    # The kinks are vertices: corner speed 210 and overspeed 270 rad/s at the motor.
    for kink in (210.0, 270.0, -210.0, -270.0):
        assert np.min(np.abs(w - kink)) < 1e-9
    (net_upper,), (net_lower,) = drawn["net_upper"], drawn["net_lower"]
    moving = w != 0
    loss = (damping / G**2) * w + (friction / G) * np.sign(w)
    expected = torque_scale * (np.clip(STALL - B * w, -PEAK, PEAK) - loss)
    np.testing.assert_allclose(net_upper.get_ydata()[moving], expected[moving], atol=1e-12)
    expected = torque_scale * (np.clip(-STALL - B * w, -PEAK, PEAK) - loss)
    np.testing.assert_allclose(net_lower.get_ydata()[moving], expected[moving], atol=1e-12)
    # Friction jumps at rest: from +c/G (moving backwards) to -c/G (forwards), relative to the region.
    at_rest = np.flatnonzero(w == 0)
    assert len(at_rest) == 2
    jump = net_upper.get_ydata()[at_rest] - upper.get_ydata()[at_rest]
    np.testing.assert_allclose(jump, torque_scale * np.array([friction / G, -friction / G]), atol=1e-12)
    # The voltage lines: +-stall - b w over the drawn range.
    for line in drawn["voltage_limit"]:
        x = line.get_xdata() / speed_scale
        y = line.get_ydata() / torque_scale
        offset = y + B * x
        np.testing.assert_allclose(np.abs(offset), STALL)


def test_no_loss_outline_without_losses():
    ax = axes()
    plot.draw_region(ax, SPIN, gear_ratio=G)
    assert "net_upper" not in lines_by_gid(ax)


def test_box_mor_at_the_motor_and_at_the_joint():
    ax = axes()
    (motor,) = [plot.draw_box_mor(ax, 5.0, 30.0, gear_ratio=G, side="motor")]
    joint = plot.draw_box_mor(ax, 5.0, 30.0, gear_ratio=G, side="joint")
    assert set(zip(motor.get_xdata(), motor.get_ydata(), strict=True)) == {
        (s * 300.0, t * 0.5) for s in (-1, 1) for t in (-1, 1)
    }
    assert set(zip(joint.get_xdata(), joint.get_ydata(), strict=True)) == {
        (s * 30.0, t * 5.0) for s in (-1, 1) for t in (-1, 1)
    }
    assert plot.draw_box_mor(ax, float("inf"), 30.0) is None


def test_operating_points_are_coloured_by_saturation():
    ax = axes()
    speed = np.array([[0.0, 100.0, 230.0], [-50.0, 10.0, 200.0]])
    torque = np.array([[1.0, 1.5, 0.5], [-1.5, 0.2, 1.5]])
    sat = np.array([[0, 1, 2], [1, 3, 2]])  # every label, TEMPERATURE (a derated peak) among them
    drawn = plot.draw_operating_points(ax, speed, torque, sat, gear_ratio=G, side="joint")
    assert len(drawn) == 4
    for value, collection in zip(MotorSaturation, drawn, strict=True):
        mask = sat == int(value)
        np.testing.assert_allclose(collection.get_offsets(), np.c_[speed[mask] / G, torque[mask] * G])
        np.testing.assert_allclose(collection.get_facecolor()[0], to_rgba(plot.SATURATION_COLORS[value]))
    with pytest.raises(ArgumentError):
        plot.draw_operating_points(ax, speed, torque[:1], sat)


def test_quadruped_figure_is_a_png_of_its_twelve_regions(quadruped, tmp_path):
    traj_like = type(
        "Recorded", (), {"motor_speed": np.zeros((5, 12)), "motor_torque": np.ones((5, 12)), "saturation": None}
    )
    fig = plot.plot_actuators(quadruped, traj_like, title="quadruped")
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 12
        for ax, name in zip(panels, quadruped.actuators.names, strict=True):
            gear = 6.0 if name.endswith("HAA") else 10.0
            assert ax.get_title().startswith(name)
            drawn = lines_by_gid(ax)
            (upper,) = drawn["region_upper"]
            w = upper.get_xdata()
            np.testing.assert_allclose(upper.get_ydata(), np.clip(6.0 - 0.025 * w, -3.0, 3.0), atol=1e-6)
            (box,) = drawn["box_mor"]
            effort = 18.0 if gear == 6.0 else 30.0
            np.testing.assert_allclose(np.max(box.get_ydata()), effort / gear, rtol=1e-6)
            np.testing.assert_allclose(np.max(box.get_xdata()), 240.0, rtol=1e-6)  # velocity limit x G
        out = tmp_path / "regions.png"
        fig.savefig(out, dpi=40)
        assert out.read_bytes().startswith(b"\x89PNG") and out.stat().st_size > 10_000
    finally:
        plot.close(fig)


def test_bad_arguments(quadruped):
    with pytest.raises(ArgumentError, match="unknown actuator"):
        plot.plot_actuator(quadruped, "nope", ax=axes())
    with pytest.raises(ArgumentError, match="side"):
        plot.draw_region(axes(), SPIN, side="rotor")
    with pytest.raises(ArgumentError, match="gear_ratio"):
        plot.draw_region(axes(), SPIN, gear_ratio=0.0)


@pytest.mark.slow
def test_jaxmor_imports_without_matplotlib():
    code = (
        "import sys; sys.modules['matplotlib'] = None; import jaxmor; "
        "assert 'jaxmor.tools.plot' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
