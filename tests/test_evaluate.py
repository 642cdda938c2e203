"""jaxmor.train.evaluate's figures on scripted records (no policy): the gait's swing share counts the steps under a
moving command only, tracking leaves out the settle time, and a fall ends a world's figures."""

from __future__ import annotations

import numpy as np

from jaxmor.train.evaluate import MIN_SWING, _per_world, _summary

STEPS, FEET = 100, 4


def _records(commands, lifted_every):
    """Worlds under fixed ``commands``; world ``w``'s feet are all off the ground one step in ``lifted_every[w]``
    (0: never)."""
    worlds = len(commands)
    touching = np.ones((STEPS, worlds, FEET), bool)
    for w, every in enumerate(lifted_every):
        if every:
            touching[::every, w, :] = False
    return {
        "command": np.broadcast_to(np.asarray(commands, np.float32), (STEPS, worlds, 3)),
        "tracking_error": np.full((STEPS, worlds), 0.05),
        "yaw_rate_error": np.full((STEPS, worlds), 0.02),
        "forward_speed": np.zeros((STEPS, worlds)),
        "slip_speed": np.full((STEPS, worlds), 0.01),
        "touching": touching,
        "fell": np.zeros((STEPS, worlds), bool),
    }


def test_a_standing_command_does_not_dilute_the_swing_share():
    """A standing world keeps its feet down (as the task asks); a walking world lifts each foot a quarter of the
    time. The gait's swing is the walking world's 0.25, not the two worlds' mean 0.125."""
    commands = [(0.0, 0.0, 0.0), (0.5, 0.0, 0.0)]
    per = _per_world(_records(commands, [0, 4]), control_period=0.02, settle=0.0)
    report = _summary(per, commands, 0.005, 4, 2)
    np.testing.assert_allclose(report["swing"], 0.25)
    assert report["gait"] and 0.125 < MIN_SWING
    assert [row["swing"] for row in report["rows"]] == [0.0, 0.25]  # each command's own share


def test_only_standing_commands_show_no_gait():
    commands = [(0.0, 0.0, 0.0)] * 2
    report = _summary(_per_world(_records(commands, [0, 0]), 0.02, 0.0), commands, 0.005, 4, 2)
    assert report["swing"] == [0.0] * FEET and not report["gait"]


def test_a_world_that_falls_stops_counting_and_is_a_fall():
    commands = [(0.5, 0.0, 0.0)] * 2
    records = _records(commands, [4, 4])
    records["fell"][49, 1] = True  # world 1 falls at step 49: its steps 50.. are not counted
    records["touching"][50:, 1] = False  # what a fallen robot's feet do afterwards
    per = _per_world(records, 0.02, 0.0)
    report = _summary(per, commands, 0.005, 4, 2)
    assert report["falls"] == 0.5
    np.testing.assert_allclose(per["moving_swing"][1], 13 / 50)  # steps 0, 4, .., 48 of the 50 alive ones
