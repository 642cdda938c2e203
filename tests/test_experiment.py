"""The seed paper's speed sweep (jaxmor.train.experiment) on scripted records: its figures against their definitions."""

from __future__ import annotations

import numpy as np

from jaxmor.train.experiment import _rows, table


def _scripted():
    """Two commands (1 and 2 m/s), two worlds each, ten 1 s control steps. World 0 runs at 1.0 m/s; world 1 at
    0.5 m/s for 5 s, then 0.95 m/s; world 2 at 2.0 m/s and falls in step 7 (index 6); world 3 at 1.5 m/s."""
    steps, worlds = 10, 4
    speed = np.zeros((steps, worlds))
    speed[:, 0], speed[:5, 1], speed[5:, 1], speed[:, 2], speed[:, 3] = 1.0, 0.5, 0.95, 2.0, 1.5
    fell = np.zeros((steps, worlds), bool)
    fell[6, 2] = True
    outside = np.zeros((steps, worlds))
    outside[:, 3] = 0.25  # a quarter of world 3's motors outside the region at every step
    ratio = np.tile(np.linspace(0.0, 0.9, steps)[:, None], (1, worlds))
    return {
        "forward_speed": speed,
        "tracking_error": np.abs(speed - np.asarray([1.0, 1.0, 2.0, 2.0])),
        "outside_region": outside,
        "speed_ratio": ratio,
        "fell": fell,
    }


def test_speed_sweep_figures_follow_their_definitions():
    out = _rows(_scripted(), [1.0, 2.0], 2, control=1.0, hold=5.0, settle=2.0, motor_model="box")
    slow, fast = out["rows"]
    assert slow["speed"] == 0.975  # the last 5 s: 1.0 and 0.95
    assert slow["held"] == 1.0 and slow["falls"] == 0.0  # both within 0.1 m/s (10% of 1 m/s)
    assert fast["speed"] == 1.5 and fast["falls"] == 0.5  # the fallen world left out
    assert fast["held"] == 0.0  # 1.5 is 0.5 from 2 m/s: beyond 10%
    np.testing.assert_allclose(slow["tracking_error"], (0.0 + (0.5 * 3 + 0.05 * 5) / 8) / 2)  # steps 3-10
    # world 2 alive for steps 1-7 (the falling step counts): 5 tracked steps with error 0; world 3: 8 of 0.5
    np.testing.assert_allclose(fast["tracking_error"], 0.25)
    np.testing.assert_allclose(fast["outside_region"], 0.25 * 10 / 17)  # 7 steps of world 2 at 0, 10 of world 3
    np.testing.assert_allclose(slow["speed_ratio"], 0.9)  # 95th percentile of 0, 0, 0.1, 0.1, ..., 0.9, 0.9
    assert out["top_held"] == 1.0 and out["motor_model"] == "box"


def test_the_comparison_table_has_a_row_per_policy_model_and_speed():
    sweep = _rows(_scripted(), [1.0, 2.0], 2, control=1.0, hold=5.0, settle=2.0, motor_model="em")
    comparison = {"speeds": [1.0, 2.0], "results": {"em-policy": {"em": sweep, "box": sweep}}}
    lines = table(comparison).splitlines()
    assert len(lines) == 2 + 2 * (2 + 1)  # header, rule; per model two speeds and the top held
    assert lines[2] == "| em-policy | em | 1.00 | 0.97 | 100% | 0.11 | 0% | 0.0% | 0.90 |"
    assert lines[4] == "| em-policy | em | top held | 1.00 | | | | | |"
