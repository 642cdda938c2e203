"""Issue 51: an explicit actuator PD beyond its stable step (``jaxmor.envs.stability``,
``docs/design/step-artifacts.md``).

A policy trained with the quadruped's PD (kp = 150 Nm/rad, kd = 3 Nm s/rad) at a 10 ms physics step never lifted
its feet. Every physics step computes the PD torque at its start; for a leg in the air that is stable only below
``h* = (sqrt(kd^2 + 4 kp I) - kd) / kp`` (``I`` the inertia of the joints' fastest mode), 6.8 ms here: at 10 ms a
swing leg chatters at 50 Hz, a leg held by the ground does not. The tests check the limit against the closed form of
one joint (the pendulum, ``I = m L^2 / 3``), the refusal of the 10 ms configuration, and the simulator: the quadruped on
a rail (base level, free to translate) lifted off the ground by a harness, its knees kicked, just below and just above
the limit; and with half its weight carried and a diagonal pair of legs lifted, whose stance feet hold and swing legs
stay still within the limit, and whose swing legs chatter beyond it.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_LEGS, QUADRUPED_URDF

import jaxmor
from jaxmor.envs.stability import check_pd_step, modal_inertias, pd_spectral_radius, pd_step_limit
from jaxmor.sim.pipeline import stages

KP, KD = 150.0, 3.0  # Locomotion's PD gains [Nm/rad, Nm s/rad]
STANDING = {"HAA": 0.0, "HFE": 0.6, "KFE": -1.2}  # the quadruped's README: feet under the hips [rad]
PENDULUM_INERTIA = 1.0 / 3.0  # robots/pendulum/README.md: m L^2 / 3, m = 1 kg, L = 1 m [kg m^2]


def closed_form(kp: float, kd: float, inertia: float) -> float:
    """The one-joint limit: the smallest ``h > 0`` with ``kd h / I + kp h^2 / (2 I) = 2`` [s]."""
    if kp == 0.0:
        return 2.0 * inertia / kd
    return (math.sqrt(kd**2 + 4.0 * kp * inertia) - kd) / kp


def driven_joints(model: jaxmor.Model) -> tuple[np.ndarray, np.ndarray]:
    """The driven joints' q and u indices, from the joint names (not from the module under test)."""
    names = [model.actuators.names[a] for a in range(model.na)]
    return (
        np.array([jaxmor.joint_q_index(model, n) for n in names]),
        np.array([jaxmor.joint_index(model, n) for n in names]),
    )


def standing_joints(model: jaxmor.Model) -> np.ndarray:
    """(na,) the README's standing angles of the driven joints [rad]."""
    return np.array([STANDING[name.rsplit("_", 1)[1]] for name in model.actuators.names])


def chatter(q: np.ndarray) -> np.ndarray:
    """Per column, the largest ``|q_t - (q_{t-1} + q_{t+1}) / 2|``: the Nyquist-frequency part of a trajectory
    [rad]; zero for a straight line, the amplitude for an alternating sequence."""
    return np.abs(q[1:-1] - 0.5 * (q[:-2] + q[2:])).max(axis=0)


# ---------------------------------------------------------------------------------------------------
# 1. The limit of one joint is the closed form.


@pytest.mark.parametrize("kp, kd", [(150.0, 3.0), (1e4, 100.0), (1e4, 0.0), (0.0, 50.0)])
def test_one_joint_limit_is_the_closed_form(pendulum, kp, kd):
    assert modal_inertias(pendulum) == pytest.approx([PENDULUM_INERTIA], rel=1e-12)
    assert pd_step_limit(pendulum, kp, kd) == pytest.approx(closed_form(kp, kd, PENDULUM_INERTIA), rel=1e-6)
    limit = closed_form(kp, kd, PENDULUM_INERTIA)
    assert pd_spectral_radius(pendulum, kp, kd, 0.99 * limit) <= 1.0 + 1e-9
    assert pd_spectral_radius(pendulum, kp, kd, 1.01 * limit) > 1.0


def test_no_gain_no_limit(pendulum):
    assert pd_step_limit(pendulum, 0.0, 0.0) == math.inf


# ---------------------------------------------------------------------------------------------------
# 3. The configuration is refused, naming its numbers; the default one passes.


def test_a_10ms_step_is_refused_with_its_numbers(quadruped_ground):
    model = quadruped_ground
    stand = jaxmor.robots.quadruped_standing_q(model)
    with pytest.raises(jaxmor.ArgumentError) as error:
        check_pd_step(model, KP, KD, 0.01, stand)
    message = str(error.value)
    for text in ("timestep 0.01 s", "limit 0.006808 s", "kp=150", "kd=3", "50 Hz", "0.01195 kg m^2", "3.14"):
        assert text in message, (text, message)
    assert check_pd_step(model, KP, KD, 0.004, stand) == pytest.approx(6.808e-3, rel=1e-3)

    # Locomotion's default targets reach standing +- 0.5 rad: its 4 ms step is inside the limit of every pose.
    qi, _ = driven_joints(model)
    poses = np.stack([stand, stand, stand])
    poses[1, qi] += 0.5
    poses[2, qi] -= 0.5
    assert 4e-3 < check_pd_step(model, KP, KD, 0.004, poses) < pd_step_limit(model, KP, KD, stand)


def test_backlash_counts_the_rotor_with_its_joint_or_alone(quadruped_ground):
    """With backlash the rotor is a degree of freedom of its own: a PD that reads the joint (Locomotion's) moves it
    with the joint (the limit of the robot without backlash), one that reads the rotor (the State's actuator PD)
    moves it alone within the dead band: ``I = G^2 J_rotor``, 36 x 6e-5 kg m^2 at the abduction (the README's)."""
    stand = jaxmor.robots.quadruped_standing_q(quadruped_ground)
    geared = jaxmor.with_backlash(quadruped_ground, width=0.01)
    plain = pd_step_limit(quadruped_ground, KP, KD, stand)
    assert pd_step_limit(geared, KP, KD, stand) == pytest.approx(plain, rel=1e-6)
    rotor = pd_step_limit(geared, KP, KD, stand, rotor_feedback=True)
    assert rotor == pytest.approx(closed_form(KP, KD, 36 * 6e-5), rel=1e-6)  # 1.39 ms
    with pytest.raises(jaxmor.ArgumentError, match="0.00216 kg m"):
        check_pd_step(geared, KP, KD, 0.004, stand, rotor_feedback=True)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(kp=[1.0, 2.0], kd=3.0, timestep=0.004), "kp"),
        (dict(kp=150.0, kd=-1.0, timestep=0.004), "kd"),
        (dict(kp=150.0, kd=float("nan"), timestep=0.004), "kd"),
        (dict(kp=150.0, kd=3.0, timestep=0.0), "timestep"),
        (dict(kp=150.0, kd=3.0, timestep=0.004, q=np.zeros(3)), "q"),
    ],
)
def test_bad_arguments_are_refused_by_name(quadruped, kwargs, name):
    with pytest.raises(jaxmor.ArgumentError, match=name):
        check_pd_step(quadruped, **kwargs)


def test_a_model_without_motors_is_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxmor.MujocoDifferenceWarning)
        model = jaxmor.load_mjcf(
            '<mujoco><worldbody><body><joint type="hinge"/><geom size="0.1"/></body></worldbody></mujoco>'
        )
    with pytest.raises(jaxmor.ArgumentError, match="DC-motor actuators"):
        pd_step_limit(model, KP, KD)


# ---------------------------------------------------------------------------------------------------
# 4. The simulator: the quadruped on a rail (its base level, free to translate), a harness carrying part of its weight
#    through the rail's vertical slide. Scene: half the weight carried and a diagonal pair lifted; within the limit
#    the stance feet hold and the swing legs are still; beyond it the swing legs chatter (their feet in the air),
#    while the loaded stance legs, held by the ground, do not. Threshold: 1.2 times the weight carried (the robot
#    rises off the ground, every leg in the air), the knees kicked, just below and just above the limit. One
#    compiled program for all the worlds.

LIFT = np.array([0.0, 0.2, -0.4])  # per lifted leg: HAA, HFE forward, KFE flexed [rad] (the foot rises under the hip)
LIFTED = np.array([1.0, 0.0, 0.0, 1.0])  # LF and RH
STEPS = 250


def rail_quadruped() -> jaxmor.Model:
    """The quadruped whose base hangs from three prismatic slides (x, y, z): level, free to translate."""
    carriage = (
        '<link name="{}"><inertial><mass value="0.01"/>'
        '<inertia ixx="1e-5" ixy="0" ixz="0" iyy="1e-5" iyz="0" izz="1e-5"/></inertial></link>'
    )
    slide = (
        '<joint name="slide_{}" type="prismatic"><parent link="{}"/><child link="{}"/><axis xyz="{}"/>'
        '<limit lower="-100" upper="100" effort="1e5" velocity="100"/></joint>'
    )
    rig = "".join(
        [
            '<link name="world"/>',
            carriage.format("rail_x"),
            carriage.format("rail_y"),
            slide.format("x", "world", "rail_x", "1 0 0"),
            slide.format("y", "rail_x", "rail_y", "0 1 0"),
            slide.format("z", "rail_y", "base", "0 0 1"),
        ]
    )
    text = QUADRUPED_URDF.read_text().replace('<robot name="quadruped">', '<robot name="quadruped">' + rig, 1)
    return jaxmor.add_ground(jaxmor.load_urdf(text, resource_dir=QUADRUPED_URDF.parent))


def rail_standing(model: jaxmor.Model) -> np.ndarray:
    """(nq,) the rail quadruped standing: the base at the README's standing height, the legs at the standing angles."""
    q = np.zeros(model.nq)
    q[jaxmor.joint_q_index(model, "slide_z")] = jaxmor.robots.QUADRUPED_STANDING_HEIGHT
    q[driven_joints(model)[0]] = standing_joints(model)
    return q


def on_the_rail(model: jaxmor.Model, steps, support, lift, kick):
    """Per world (one per entry of the (w,) arrays: time step ``h`` [s], weight share carried, lift of the pair
    ``0`` or ``1``, knee kick [rad/s] at 0.3 s), per step: the driven joints' angles (w, n, na) [rad], each foot's
    normal force (w, n, 4) [N] and its contact point's slip speed (w, n, 4) [m/s] (the contact rows' tangential
    velocity at the end of the step)."""
    qi, vi = driven_joints(model)
    q0 = rail_standing(model)
    lifted = (LIFTED[:, None] * LIFT[None, :]).reshape(-1)
    weight = float(np.sum(np.asarray(model.body_mass))) * 9.81
    shanks = [int(model.link_body[model.link_names.index(f"{leg}_FOOT")]) for leg in QUADRUPED_LEGS]
    lift_v = jaxmor.joint_index(model, "slide_z")

    def world(h, share, up, kick):
        m = jaxmor.with_options(model, timestep=h)
        s = jaxmor.init_state(m, jnp.asarray(q0))
        s = jaxmor.set_actuator_pd_gains(m, s, jnp.full(m.na, KP), jnp.full(m.na, KD))
        s = jaxmor.set_generalized_force(m, s, jnp.zeros(m.nv).at[lift_v].set(share * weight))

        def body(s, k):
            ramp = up * jnp.minimum(k * h / 0.2, 1.0)  # the pair lifts over 0.2 s
            s = s.replace(u=s.u.at[vi[2::3]].add(jnp.where(k == jnp.round(0.3 / h), kick, 0.0)))  # at 0.3 s
            stage = stages(m, s.replace(actuator_position_target=jnp.asarray(q0[qi]) + ramp * jnp.asarray(lifted)))
            problem, impulses = stage.constraints.velocity, stage.impulses
            v = problem.contact_velocities(problem.delassus @ problem.rows(impulses) + problem.free_velocity)
            on = [stage.contacts.body_b == b for b in shanks]
            load = jnp.stack([jnp.sum(jnp.where(o, impulses.contact[:, 0], 0.0)) for o in on]) / h
            slip = jnp.stack([jnp.max(jnp.where(o, jnp.linalg.norm(v[:, 1:], axis=1), 0.0)) for o in on])
            return stage.state, (stage.state.q[qi], load, slip)

        return jax.lax.scan(body, s, jnp.arange(STEPS))[1]

    arrays = (jnp.asarray(x, jnp.float64) for x in (steps, support, lift, kick))
    return [np.asarray(x) for x in jax.jit(jax.vmap(world))(*arrays)]


def test_on_the_rail_the_legs_chatter_beyond_the_limit_and_stance_feet_hold_within_it():
    model = rail_quadruped()
    limit = pd_step_limit(model, KP, KD, rail_standing(model))  # the base cannot turn: 6.84 ms (design note)
    assert 6.5e-3 < limit < 7.0e-3
    scene = [4e-3, 6.5e-3, 1e-2]
    threshold = [0.97 * limit, 1.03 * limit]
    q, load, slip = on_the_rail(
        model,
        [*scene, *threshold],
        support=[0.5] * 3 + [1.2] * 2,
        lift=[1.0] * 3 + [0.0] * 2,
        kick=[0.0] * 3 + [2.0] * 2,
    )
    swing, stance = LIFTED.astype(bool), ~LIFTED.astype(bool)
    for w, h in enumerate(scene):
        window = slice(int(round(0.3 / h)), STEPS)  # after the lift, 0.3 s to 1 s (4 ms) or 2.5 s (10 ms)
        loaded = load[w, window][:, stance]
        assert loaded.min() > 25.0, (h, loaded.min())  # the stance pair carries the rest of the weight [N]
        assert slip[w, window][:, stance].max() < 0.1, (h, slip[w, window][:, stance].max())  # and holds [m/s]
        assert load[w, window][:, swing].max() == 0.0  # the lifted feet stay in the air
        knees = chatter(q[w, window][:, 2::3])
        if h < limit:
            assert knees.max() < 1e-3, (h, knees)
        else:
            assert knees[swing].min() > 0.05, (h, knees)  # the swing knees chatter (0.12 rad measured)
            assert knees[stance].max() < 0.01, (h, knees)  # the loaded knees do not
            with pytest.raises(jaxmor.ArgumentError, match="beyond the stability limit"):
                check_pd_step(model, KP, KD, h, rail_standing(model))

    below, above = (q[w, -40:] for w in (3, 4))
    assert load[3:, STEPS // 2 :].max() == 0.0  # lifted off the ground: every leg in the air
    assert chatter(below).max() < 1e-6, chatter(below)  # settled (joint friction holds what is left)
    assert chatter(above)[2::3].min() > 0.05, chatter(above)  # every knee chatters, the motors saturated
    knee = np.diff(above[:, 2])
    assert np.all(knee[1:] * knee[:-1] < 0)  # its velocity flips sign every step: the Nyquist frequency
