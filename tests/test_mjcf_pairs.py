"""Explicit contact pairs (MJCF ``<contact><pair>``): what they collide, what MuJoCo does differently, what is refused.

References: MuJoCo's own reading of the same text (which geoms its compiled model pairs, ``npair``/``pair_geom1``,
and where a dropped ball comes to rest), and the pairing rules of MuJoCo's documentation: an explicit pair is tested
whatever the geoms' ``contype``/``conaffinity`` and ``<exclude>`` say, with its own friction (default 1).
"""

from __future__ import annotations

import warnings

import jax
import mujoco
import numpy as np
import pytest

import jaxmor
from jaxmor import ModelError, MujocoDifferenceWarning

RADIUS = 0.1

SCENE = """<mujoco>
  <default><geom contype="0" conaffinity="0"/>{default}</default>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" contype="1" conaffinity="1"/>
    <body name="a" pos="0 0 0.5"><freejoint/><geom name="ball" type="sphere" size="{r}" friction="{mu}"/></body>
    <body name="b" pos="0.5 0 0.5"><freejoint/><geom name="other" type="sphere" size="{r}"/>
      <body name="c" pos="0 0 0.3"><joint axis="0 1 0"/><geom name="child" type="sphere" size="0.05"/></body>
    </body>
  </worldbody>
  <contact>{pairs}</contact>
</mujoco>"""


def _scene(pairs: str, default: str = "", mu: float = 1.0) -> str:
    return SCENE.format(pairs=pairs, default=default, r=RADIUS, mu=mu)


def _load(text: str, **kwargs) -> tuple[jaxmor.Model, list[str]]:
    """The model and the lines of its MujocoDifferenceWarning."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = jaxmor.load_mjcf(text, **kwargs)
    said = [str(w.message) for w in caught if issubclass(w.category, MujocoDifferenceWarning)]
    return model, [line.strip()[2:] for line in said[0].splitlines()[1:]] if said else []


def test_paired_visual_geoms_collide_as_mujoco_pairs_them():
    text = _scene('<pair geom1="ball" geom2="floor"/><pair geom1="other" geom2="ball"/>')
    model, lines = _load(text)
    m = mujoco.MjModel.from_xml_string(text)
    names = [{m.geom(int(a)).name, m.geom(int(b)).name} for a, b in zip(m.pair_geom1, m.pair_geom2, strict=True)]
    assert names == [{"ball", "floor"}, {"other", "ball"}]
    # jaxmor: the ball touches the ground, the two balls each other (not asked for self-collision: the pair says so)
    ground = {model.geom_names[g] for g in range(model.ng) if model.geom_ground[g]}
    assert ground == {"ball"}
    pairs = {frozenset((model.geom_names[i], model.geom_names[j])) for i, j in model.contact_pairs}
    assert pairs == {frozenset(("ball", "other"))}
    # with_self_collision recomputes the pairs: the explicit one stays (the bit masks keep everything else apart)
    again = jaxmor.with_self_collision(model)
    assert {frozenset((again.geom_names[i], again.geom_names[j])) for i, j in again.contact_pairs} == pairs
    assert not any(line.startswith("explicit pair") for line in lines)  # friction 1 = max(1, 1): nothing differs


def test_a_paired_ball_rests_on_the_floor_in_both_engines():
    """Dropped from 0.5 m, 1 s: both balls' centres end within 2 mm of ``r`` above the floor (MuJoCo's soft contact
    sinks it by about 1 mm), and the unpaired visual ball falls through the floor in both."""
    text = _scene('<pair geom1="ball" geom2="floor"/>')
    m = mujoco.MjModel.from_xml_string(text)
    d = mujoco.MjData(m)
    for _ in range(round(1.0 / m.opt.timestep)):
        mujoco.mj_step(m, d)
    model, _ = _load(text)
    final, _ = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=round(1.0 / float(model.opt.timestep))))(
        jaxmor.init_state(model)
    )
    z_mujoco, z_jaxmor = d.qpos[[2, 9]], np.asarray(final.q)[[2, 9]]
    assert abs(z_mujoco[0] - RADIUS) < 2e-3 and abs(z_jaxmor[0] - RADIUS) < 2e-3, (z_mujoco, z_jaxmor)
    assert z_mujoco[1] < -1.0 and z_jaxmor[1] < -1.0


def test_a_pair_friction_other_than_the_geoms_is_said():
    _, lines = _load(_scene('<pair geom1="ball" geom2="floor" friction="0.3 0.3 0.005 0.0001 0.0001"/>'))
    (line,) = [line for line in lines if line.startswith("explicit pair")]
    assert "('ball', 'floor')" in line and "friction 0.3 (the pair's) where jaxmor uses 1" in line
    # the pair's default (1, MuJoCo's) against a ball of friction 0.5 on a floor of 1: max is 1, no line
    _, lines = _load(_scene('<pair geom1="ball" geom2="floor"/>', mu=0.5))
    assert not any(line.startswith("explicit pair") for line in lines)
    # a default class's pair friction counts as the pair's own
    _, lines = _load(_scene('<pair geom1="ball" geom2="floor"/>', default='<pair friction="0.6"/>'))
    assert any("friction 0.6 (the pair's)" in line for line in lines)


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ('<pair geom1="ball" geom2="nowhere"/>', "unknown geom 'nowhere'"),
        ('<pair geom1="ball" geom2="ball"/>', "pairs geom 'ball' with itself"),
        ('<pair geom1="ball"/>', "needs geom1 and geom2"),
        ('<pair geom1="ball" geom2="floor" condim="2"/>', "condim must be 1, 3, 4 or 6"),
        ('<pair geom1="ball" geom2="floor" friction="-1"/>', "friction must not be negative"),
        ('<pair geom1="other" geom2="child"/>', "on one body or on a parent and its child"),
        ('<pair geom1="ball" geom2="floor" bogus="1"/>', "unknown attribute 'bogus'"),
    ],
)
def test_bad_pairs_are_refused_at_their_line(pairs, message):
    text = _scene(pairs)
    line = text.splitlines().index(next(ln for ln in text.splitlines() if "<contact>" in ln)) + 1
    with pytest.raises(ModelError, match=message) as err:
        jaxmor.load_mjcf(text)
    assert err.value.line == line
