"""The warning that says what MuJoCo does differently with an MJCF file, and the difference it predicts, measured.

References: MuJoCo itself. The self-collision count is MuJoCo's own filter written out here (contype/conaffinity,
different weld bodies, never parent and child, never the world) on MuJoCo's compiled model; the Go2's feet are
measured in MuJoCo (``mj_step`` from the ``home`` keyframe, servos holding it) and in jaxmor on the same file.
"""

from __future__ import annotations

import itertools
import warnings

import jax
import mujoco
import numpy as np
import pytest
from reference import GO2_DIR

import jaxmor
from jaxmor import MujocoDifferenceWarning

GO2 = GO2_DIR / "scene_mjx.xml"
SETTLE_S = 1.0


def _differences(source, **kwargs) -> list[str]:
    """The lines of the load's MujocoDifferenceWarning (none: [])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jaxmor.load_mjcf(source, **kwargs)
    said = [str(w.message) for w in caught if issubclass(w.category, MujocoDifferenceWarning)]
    assert len(said) <= 1, said
    return [line.strip()[2:] for line in said[0].splitlines()[1:]] if said else []


def _mujoco_self_pairs(m: mujoco.MjModel) -> int:
    """Geom pairs MuJoCo's collision filter lets through among the robot's own geoms."""
    count = 0
    for i, j in itertools.combinations(range(m.ngeom), 2):
        bi, bj = m.geom_bodyid[i], m.geom_bodyid[j]
        if 0 in (bi, bj) or not (
            m.geom_contype[i] & m.geom_conaffinity[j] or m.geom_contype[j] & m.geom_conaffinity[i]
        ):
            continue
        wi, wj = m.body_weldid[bi], m.body_weldid[bj]
        if wi == wj or m.body_weldid[m.body_parentid[wi]] == wj or m.body_weldid[m.body_parentid[wj]] == wi:
            continue
        count += 1
    return count


def test_the_go2_warning_names_what_its_file_sets():
    lines = _differences(GO2)
    kinds = [line.split(" ")[0] for line in lines]
    assert kinds == ["soft", "friction", "solver", "qpos0", "self-collision:"], lines
    assert "2 element(s)" in lines[0]  # the foot default and the floor set solimp/solref-type attributes
    assert 'cone="pyramidal" impratio="100"' in lines[1]
    assert "(iterations, ls_iterations)" in lines[2]
    # the calves' range is -156 to -48 degrees in the file (MuJoCo's qpos0 0 outside it); hips and thighs hold 0
    m = mujoco.MjModel.from_xml_path(str(GO2))
    calves = [
        m.joint(i).name for i in range(m.njnt) if m.jnt_limited[i] and not m.jnt_range[i, 0] <= 0 <= m.jnt_range[i, 1]
    ]
    assert sorted(calves) == [f"{leg}_calf_joint" for leg in ("FL", "FR", "RL", "RR")]
    assert all(f"{name} (0 outside [-2.723, -0.8378])" in lines[3] for name in calves), lines[3]
    assert "thigh" not in lines[3] and "hip" not in lines[3]
    pairs = _mujoco_self_pairs(m)
    assert pairs == 210 and f"tests {pairs} pair(s)" in lines[4]
    assert not any(line.startswith("self-collision") for line in _differences(GO2, self_collision=True))


SCENE = """<mujoco>
  <option {option}/>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 1"><joint type="hinge" {joint}/><geom type="sphere" size="0.1" {geom}/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize(
    ("option", "joint", "geom", "expected"),
    [
        (
            "",
            "",
            "",
            ["soft contacts (MuJoCo's defaults)", 'friction cone="pyramidal" impratio="1" (MuJoCo\'s defaults)'],
        ),
        ('cone="elliptic" impratio="100"', "", "", ["soft contacts (MuJoCo's defaults)"]),
        (
            'cone="elliptic" impratio="100" integrator="RK4" noslip_iterations="3"',
            'solreflimit="0.01 1"',
            'solref="0.01 1"',
            [
                "soft contacts (the file sets them on 1",
                "soft joint and tendon limits",
                'integrator="RK4"',
                'noslip_iterations="3"',
            ],
        ),
    ],
)
def test_each_setting_gets_its_line(option, joint, geom, expected):
    lines = _differences(SCENE.format(option=option, joint=joint, geom=geom))
    assert len(lines) == len(expected), lines
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)


@pytest.fixture(scope="module")
def feet_gaps():
    """The Go2's foot-floor gaps [m] after 1 s holding the home keyframe: (MuJoCo's, jaxmor's), four each."""
    m = mujoco.MjModel.from_xml_path(str(GO2))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    d.ctrl[:] = m.key_ctrl[0]
    for _ in range(round(SETTLE_S / m.opt.timestep)):
        mujoco.mj_step(m, d)
    feet = [m.geom(name).id for name in ("FL", "FR", "RL", "RR")]
    theirs = np.array([d.geom_xpos[g][2] - m.geom_size[g][0] for g in feet])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = jaxmor.load_mjcf(GO2)
    home = jaxmor.set_keyframe(model, jaxmor.init_state(model), "home")
    steps = round(SETTLE_S / float(model.opt.timestep))
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=steps))(home)
    bodies = jaxmor.sim.kinematics.body_poses(model, final.q)
    ours = []
    for name in ("FL", "FR", "RL", "RR"):
        g = model.geom_names.index(name)
        b = model.geom_body[g]
        centre = bodies.position[b] + bodies.rotation[b] @ model.geom_translation[g]
        ours.append(float(centre[2] - model.geom_size[g, 0]))
    ours = np.array(ours)
    return theirs, ours


def test_mujoco_feet_sink_and_jaxmor_feet_rest_on_the_floor(feet_gaps):
    """What the warning's first line quotes: MuJoCo's soft contacts let the standing Go2's feet sink about 5 mm
    (4.9-5.3 mm measured), jaxmor's hard contacts hold them within 0.2 mm of the floor (0.05 mm measured; its
    position pass corrects the gap each step)."""
    theirs, ours = feet_gaps
    assert np.all(theirs < -0.003) and np.all(theirs > -0.008), theirs
    assert np.all(np.abs(ours) < 0.0002), ours
