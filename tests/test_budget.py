"""The contact budget (jaxmor.sim.collision.budget): the solver's fixed number of contact slots, filled every step
from all the candidates, nearest first; the overflow count; warm starts that follow their contact.

The scenes are small MJCF strings whose gaps are known in closed form: spheres of radius ``R`` at heights ``z``
over the ground plane have the gap ``z - R``. float64 (the suite's conftest).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF, quadruped_standing_q

import jaxmor
from jaxmor import ArgumentError
from jaxmor.sim.collision import collide, contact_budget, contact_count, default_budget, select
from jaxmor.sim.collision.budget import follow
from jaxmor.sim.kinematics import body_poses
from jaxmor.sim.pipeline import stages

R = 0.05
# Sphere heights above the base origin [m]; with the base at BASE_Z the gaps are BASE_Z + dz - R.
OFFSETS = (0.0, 0.3, 0.004, 0.1, 0.002, 0.2)
BASE_Z = R  # the first sphere rests on the ground


def spheres_xml(offsets=OFFSETS, bodies: int = 1) -> str:
    """``bodies`` free bodies side by side, each carrying one sphere per offset (x spacing 0.3 m within a body)."""
    parts = []
    for b in range(bodies):
        geoms = "".join(
            f'<geom type="sphere" size="{R}" pos="{0.3 * i} 0 {dz}" mass="0.2"/>' for i, dz in enumerate(offsets)
        )
        parts.append(f'<body name="b{b}" pos="0 {3.0 * b} {BASE_Z}"><freejoint/>{geoms}</body>')
    return (
        '<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="10 10 0.1"/>'
        + "".join(parts)
        + "</worldbody></mujoco>"
    )


@pytest.fixture(scope="module")
def spheres():
    return jaxmor.load_mjcf(spheres_xml())


def gaps(model, state) -> np.ndarray:
    return np.asarray(collide(model, body_poses(model, state.q)).distance)


# --------------------------------------------------------------------------------------------------
# the budget's size


def test_default_budget_follows_the_rule():
    """Every pair candidate, and of the candidates against the world at most max(8, 4 per floating body): the
    rule of default_budget's docstring, counted here."""
    one = jaxmor.load_mjcf(spheres_xml())  # 6 candidates, 1 floating body
    assert contact_count(one) == 6 and default_budget(one) == 6
    many = jaxmor.load_mjcf(spheres_xml(offsets=(0.0,) * 5, bodies=3))  # 15 candidates, 3 bodies
    assert contact_count(many) == 15 and default_budget(many) == 12
    big = jaxmor.load_mjcf(spheres_xml(offsets=(0.0,) * 10))  # 10 candidates, 1 body
    assert default_budget(big) == 8
    quadruped = jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF))  # 4 box corners + 4 feet
    assert contact_count(quadruped) == 8 and contact_budget(quadruped) == 8
    # Three free boxes: 3 x 4 ground corners, and 3 box-box pairs of 8 slots each, all kept.
    boxes = "".join(
        f'<body pos="0 0 {0.1 + 0.2 * i}"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>'
        for i in range(3)
    )
    stack = jaxmor.load_mjcf(f'<mujoco><worldbody><geom type="plane" size="5 5 .1"/>{boxes}</worldbody></mujoco>')
    stack = jaxmor.with_self_collision(stack)
    assert contact_count(stack) == 12 + 3 * 8 and default_budget(stack) == 36


def test_budget_option(spheres):
    assert contact_budget(jaxmor.with_options(spheres, contact_budget=2)) == 2
    assert contact_budget(jaxmor.with_options(spheres, contact_budget=100)) == 6, "never more than the candidates"
    state = jaxmor.init_state(jaxmor.with_options(spheres, contact_budget=2))
    assert state.contact_impulse.shape == (2, 3) and state.contact_key.shape == (2,)
    assert np.all(np.asarray(state.contact_key) == -1), "no candidate held yet"


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "4"])
def test_bad_budget_is_refused(spheres, value):
    with pytest.raises(ArgumentError, match="contact_budget must be None or an int >= 1"):
        jaxmor.with_options(spheres, contact_budget=value)


@pytest.mark.parametrize("value", [-0.01, np.inf, np.nan])
def test_bad_reach_is_refused(spheres, value):
    with pytest.raises(ArgumentError, match=r"contact_reach must be finite and >= 0 \[m\]"):
        jaxmor.with_options(spheres, contact_reach=value)


def test_state_of_another_budget_is_refused(spheres):
    state = jaxmor.init_state(spheres)
    with pytest.raises(ArgumentError, match="contact_impulse has shape .* new opt.contact_budget"):
        jaxmor.step(jaxmor.with_options(spheres, contact_budget=3), state)


# --------------------------------------------------------------------------------------------------
# selection and overflow


def test_select_keeps_the_nearest(spheres):
    model = jaxmor.with_options(spheres, contact_budget=3)
    state = jaxmor.init_state(model)
    expected_gaps = BASE_Z + np.array(OFFSETS) - R  # closed form
    np.testing.assert_allclose(gaps(model, state), expected_gaps, atol=1e-12)
    chosen = select(model, collide(model, body_poses(model, state.q)))
    nearest = [0, 2, 4]  # gaps 0, 0.004, 0.002: the three smallest, in the candidates' order
    assert list(np.asarray(chosen.key)) == nearest
    np.testing.assert_allclose(np.asarray(chosen.distance), expected_gaps[nearest], atol=1e-12)
    assert list(np.asarray(chosen.body_b)) == [0, 0, 0] and list(np.asarray(chosen.body_a)) == [-1, -1, -1]
    # Within the default reach (0.01 m): 3 candidates, all kept.
    assert int(chosen.overflow) == 0


@pytest.mark.parametrize(("budget", "reach", "overflow"), [(1, 0.01, 2), (2, 0.01, 1), (2, 0.15, 2), (3, 1.0, 3)])
def test_overflow_counts_what_the_budget_leaves_out(spheres, budget, reach, overflow):
    """Gaps 0, 0.002, 0.004, 0.1, 0.2, 0.3: within ``reach`` minus the budget, counted by hand."""
    model = jaxmor.with_options(spheres, contact_budget=budget, contact_reach=reach)
    state = jaxmor.init_state(model)
    assert int(select(model, collide(model, body_poses(model, state.q))).overflow) == overflow
    after = jax.jit(jaxmor.step)(model, state)
    assert int(after.contact_overflow) == overflow, "the step keeps the count in the state"


def test_resting_box_overflow_in_a_rollout():
    """A box resting on a face touches with its four lowest corners: a budget of 2 leaves 2 out, every step."""
    xml = (
        '<mujoco><option timestep="0.002"/><worldbody><geom type="plane" size="5 5 0.1"/>'
        '<body pos="0 0 0.1"><freejoint/><geom type="box" size="0.2 0.1 0.1" mass="1"/></body></worldbody></mujoco>'
    )
    model = jaxmor.with_options(jaxmor.load_mjcf(xml), contact_budget=2)
    final, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=20))(jaxmor.init_state(model))
    assert np.all(np.asarray(traj.contact_overflow) == 2)
    assert np.isfinite(np.asarray(final.q)).all()


# --------------------------------------------------------------------------------------------------
# warm starts


def test_follow_maps_impulses_by_key():
    last_keys = jnp.array([7, 3, -1, 5], jnp.int32)
    last = jnp.array([[1.0, 0.1, 0.2], [2.0, 0.3, 0.4], [9.0, 9.0, 9.0], [3.0, 0.5, 0.6]])
    keys = jnp.array([3, 5, 8, -1], jnp.int32)  # 3 and 5 moved slot, 8 is new, -1 matches nothing
    out = np.asarray(follow(keys, last_keys, last))
    np.testing.assert_array_equal(out, [[2.0, 0.3, 0.4], [3.0, 0.5, 0.6], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


def test_warm_start_follows_a_contact_into_another_slot(spheres):
    """The same last-step impulses stored in another slot order (keys permuted with them) give the same step."""
    model = jaxmor.with_options(spheres, contact_budget=3)
    step = jax.jit(jaxmor.step)
    state = jaxmor.init_state(model)
    for _ in range(5):
        state = step(model, state)
    assert np.asarray(state.contact_impulse)[:, 0].max() > 0, "the resting sphere pushes"
    perm = np.array([2, 0, 1])
    shuffled = state.replace(contact_impulse=state.contact_impulse[perm], contact_key=state.contact_key[perm])
    a, b = step(model, state), step(model, shuffled)
    np.testing.assert_array_equal(np.asarray(a.q), np.asarray(b.q))
    np.testing.assert_array_equal(np.asarray(a.contact_impulse), np.asarray(b.contact_impulse))
    cold = step(model, state.replace(contact_key=jnp.full(3, -1, jnp.int32)))
    assert not np.array_equal(np.asarray(cold.contact_impulse), np.asarray(a.contact_impulse)), "keys matter"


# --------------------------------------------------------------------------------------------------
# physics with a budget that covers the active contacts


@pytest.fixture(scope="module")
def quadruped_runs():
    """The quadruped dropped onto its feet, 8 worlds x 50 steps with random torques, with the full budget (8:
    4 base corners, 4 feet) and with 4 slots (the feet touch; the base stays 0.3 m up)."""
    model = jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF), friction=0.8)
    model = jaxmor.with_options(model, timestep=0.002)
    q0 = quadruped_standing_q(model)
    q0[2] += 0.02
    rng = np.random.default_rng(0)
    torques = jnp.asarray(rng.uniform(-5, 5, (8, 50, model.na)))
    out = {}
    for budget in (8, 4):
        m = jaxmor.with_options(model, contact_budget=budget)
        s = jax.tree.map(lambda x: jnp.broadcast_to(x, (8, *x.shape)), jaxmor.init_state(m, q0))
        out[budget] = jax.jit(lambda s, c, m=m: jaxmor.rollout_batch(m, s, c))(s, torques)
    return model, out


def test_budget_covering_the_contacts_gives_the_same_motion(quadruped_runs):
    """With the feet (every active contact) in the budget, the far base corners' rows only add exact zeros to
    the solver: the motion agrees to rounding, which the impacts amplify (measured: 1e-10 after the first steps,
    ~1e-7 in q after 100 steps on the bench scenario; the solver's own truncation at 20 sweeps is ~1e-4,
    docs/design/performance.md)."""
    _, out = quadruped_runs
    (_, traj8), (_, traj4) = out[8], out[4]
    q8, q4 = np.asarray(traj8.q), np.asarray(traj4.q)
    np.testing.assert_allclose(q4[:, :5], q8[:, :5], rtol=0, atol=1e-12)
    np.testing.assert_allclose(q4, q8, rtol=0, atol=1e-6)
    assert np.all(np.asarray(traj4.contact_overflow) == 0)
    feet = np.asarray(traj8.contact_impulse)[:, -1, 4:, 0]
    np.testing.assert_allclose(np.sort(np.asarray(traj4.contact_impulse)[:, -1, :, 0]), np.sort(feet), atol=1e-5)


def test_selected_slots_hold_the_feet(quadruped_runs):
    _, out = quadruped_runs
    keys = np.asarray(out[4][1].contact_key)[:, -1]
    assert np.all(np.sort(keys, axis=-1) == [4, 5, 6, 7]), "the feet's slots (after the base box's 4 corners)"


@pytest.mark.slow  # 1-2.5 minutes on 2 cores
def test_gradient_through_the_selection(spheres):
    """d(final height)/d(initial height) through steps whose slots are selected: finite, and the same with a
    budget that holds every candidate."""
    out = []
    for budget in (2, 6):
        model = jaxmor.with_options(spheres, contact_budget=budget)
        state = jaxmor.init_state(model)

        def final_z(z0, model=model, state=state):
            s = state.replace(q=state.q.at[2].set(z0))
            return jaxmor.rollout(model, s, n_steps=10)[0].q[2]

        out.append(jax.grad(final_z)(jnp.asarray(BASE_Z + 0.001)))
    assert np.isfinite(out[0])
    np.testing.assert_allclose(out[0], out[1], rtol=1e-9)


def test_stages_expose_the_selected_slots(spheres):
    model = jaxmor.with_options(spheres, contact_budget=2)
    st = stages(model, jaxmor.init_state(model))
    assert st.contacts.distance.shape == (2,) and st.constraints.velocity.nc == 2
