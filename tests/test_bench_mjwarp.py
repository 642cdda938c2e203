"""MuJoCo Warp in the bench (bench/mjwarp.py, bench/mujoco_settings.py): the collision-pair count written beside
each engine's settings against MJWarp's own filtered pair list, the like-for-like settings, the launch counter
against launches made by hand, and (slow) MJWarp's launches per Go2 step. Warp runs on its CPU device; no timing
assertions."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from models import ROOT

if str(ROOT) not in sys.path:  # the bench package lives in the checkout, beside jaxmor
    sys.path.insert(0, str(ROOT))

mujoco = pytest.importorskip("mujoco")
mjw = pytest.importorskip("mujoco_warp")
wp = pytest.importorskip("warp")

from bench import mjwarp, mujoco_settings  # noqa: E402

GO2 = ROOT / "tests" / "data" / "unitree_go2" / "scene_mjx.xml"
FEET = ("FL", "FR", "RL", "RR")

#: A floor, a free box with a two-link arm (hinges) and a ball welded to the world; contype/conaffinity masks
#: chosen so that the filter's every rule decides some pair (counted by hand in the test).
CHAIN = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <geom name="post" type="sphere" size=".1" pos="3 0 1"/>
    <body name="fixed" pos="2 0 1"><geom name="ball" type="sphere" size=".1"/></body>
    <body name="base" pos="0 0 1">
      <freejoint/>
      <geom name="box" type="box" size=".1 .1 .1"/>
      <body name="upper" pos=".3 0 0">
        <joint type="hinge" axis="0 1 0"/>
        <geom name="upper" type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
        <body name="lower" pos=".3 0 0">
          <joint type="hinge" axis="0 1 0"/>
          <geom name="lower" type="capsule" fromto="0 0 0 .3 0 0" size=".03" contype="2" conaffinity="2"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _mjwarp_pairs(mj_model) -> int:
    """MJWarp's own count: the geom pairs its broad phase keeps after its filters (``nxn_pairid_filtered``)."""
    with wp.ScopedDevice("cpu"):
        return int(mjw.put_model(mj_model).nxn_pairid_filtered.shape[0])


def test_collision_pairs_of_a_hand_counted_model():
    """Geoms: floor, post and ball are static (all on the world's weld), box on the free base, upper and lower on
    the arm. Masks 1 except lower's 2 (it meets no geom but itself). Static-static pairs are skipped (3), box-upper
    is parent and child (skipped); left: box with floor, post, ball (3) and upper with floor, post, ball (3): 6."""
    m = mujoco.MjModel.from_xml_string(CHAIN)
    assert mujoco_settings.collision_pairs(m) == 6 == _mjwarp_pairs(m)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_FILTERPARENT  # box and upper collide as well
    assert mujoco_settings.collision_pairs(m) == 7 == _mjwarp_pairs(m)


@pytest.mark.skipif(not GO2.is_file(), reason="the Go2 scene is not there")
def test_go2_pairs_as_the_file_has_them_and_feet_only():
    """The Go2 scene: MJX's and MJWarp's 233 pairs; like for like, the 4 feet against the floor only, at
    Playground's iterations, the model it was made from unchanged."""
    m = mujoco.MjModel.from_xml_path(str(GO2))
    assert mujoco_settings.collision_pairs(m) == _mjwarp_pairs(m) == 233
    contype = m.geom_contype.copy()
    feet = mujoco_settings.like_for_like(m, FEET)
    assert mujoco_settings.collision_pairs(feet) == _mjwarp_pairs(feet) == 4
    assert (
        (feet.opt.iterations, feet.opt.ls_iterations)
        == (mujoco_settings.RL_ITERATIONS, mujoco_settings.RL_LS_ITERATIONS)
        == (1, 5)
    )
    np.testing.assert_array_equal(m.geom_contype, contype)
    s = mujoco_settings.settings(feet, {"dtype": "float32"})
    assert s["collision_pairs"] == 4 and s["timestep"] == m.opt.timestep and s["dtype"] == "float32"
    with pytest.raises(ValueError, match="feet: no geom named 'paw'"):
        mujoco_settings.like_for_like(m, ("FL", "paw"))


@wp.kernel
def _fill(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0


def test_launch_log_counts_launches_with_threads_and_empty_grids_apart():
    """Three launches made here: two of 3 threads, one of none (which Warp skips)."""
    log = mjwarp._LaunchLog()
    with wp.ScopedDevice("cpu"):
        x = wp.zeros(3, dtype=float)
        wp.launch(_fill, dim=3, inputs=[x])  # builds the kernel, before the log listens
        wp.set_logger(log)
        wp.config.print_launches = True
        try:
            wp.launch(_fill, dim=3, inputs=[x])
            wp.launch(_fill, dim=(3,), inputs=[x])
            wp.launch(_fill, dim=0, inputs=[x])
        finally:
            wp.config.print_launches = False
            wp.set_logger(None)
    assert list(log.kernels.values()) == [[2, 1]]
    assert x.numpy().tolist() == [1.0, 1.0, 1.0]


@pytest.mark.slow
@pytest.mark.skipif(not GO2.is_file(), reason="the Go2 scene is not there")
def test_go2_step_launches():
    """One Go2 step on Warp's CPU device: every stage of MJWarp's step launches (its kinematics, collision,
    solver and integrator kernels among those counted); more solver iterations, more launches; the feet-only
    model launches what the file's does (the same kernels, fewer pairs)."""
    m = mujoco.MjModel.from_xml_path(str(GO2))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    file = mjwarp.launches(m, 2, d.qpos.copy())
    feet = mjwarp.launches(mujoco_settings.like_for_like(m, FEET), 2, d.qpos.copy())
    assert file["launches"] == sum(file["by_kernel"].values()) and file["solver_iterations"] == 1
    for name in ("_kinematics_branch", "_nxn_broadphase", "_linesearch_iterative", "_next_position"):
        assert any(k.startswith(name) for k in file["by_kernel"]), name
    assert feet["launches"] == file["launches"]
    more = mujoco_settings.like_for_like(m, FEET)
    more.opt.iterations = 20
    deeper = mjwarp.launches(more, 2, d.qpos.copy())
    assert deeper["solver_iterations"] > 1 and deeper["launches"] > file["launches"]


@pytest.mark.slow
@pytest.mark.skipif(not GO2.is_file(), reason="the Go2 scene is not there")
def test_rollout_program_against_mujoco():
    """The bench's MJWarp rollout (Warp's CPU device): 2 Go2 worlds x 10 steps from the home keyframe, 2 cm up,
    under the home controls, end where MuJoCo's own steps end (float32 against float64, 10 steps: 1e-5 m on the
    base height, which falls about 2 mm); a second call starts again from the same state and ends in the same place."""
    from bench import go2

    m = mujoco.MjModel.from_xml_path(str(GO2))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.qpos[2] += go2.DROP
    qpos, ctrl = np.tile(d.qpos, (2, 1)), np.tile(d.ctrl, (2, 10, 1))
    with wp.ScopedDevice("cpu"):
        program = mjwarp.program(m, qpos, ctrl, 0.0)
        program.call()
        first = program.check()
        program.call()
        second = program.check()
    for _ in range(10):
        mujoco.mj_step(m, d)
    assert first["nonfinite_worlds"] == 0 and first["base_z_start"] == pytest.approx(qpos[0, 2])
    assert d.qpos[2] < qpos[0, 2] - 2e-3  # it fell about 2 mm: the comparison below is not of standing still
    assert first["base_z_mean"] == pytest.approx(d.qpos[2], abs=1e-5)
    assert second["base_z_mean"] == pytest.approx(first["base_z_mean"], abs=1e-6)
    assert program.settings["collision_pairs"] == 233 and not program.settings["cuda_graph"]
