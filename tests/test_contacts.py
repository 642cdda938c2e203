"""Contacts in the step beyond the ground scenes: self-collision and restitution (float64)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmor

G = 9.81
INERTIA = '<inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/>'

# A two-link arm swinging about y: a light upper link, then an elbow locked by its limits [0, 0], and
# a 1 kg bob at 1 m; a fixed post welded to the world sits where the bob passes. (The post and the
# first link are adjacent, so the bob hangs on the second body.)
ARM = f"""<robot name="arm">
  <link name="world">
    <collision name="post"><origin xyz="0.15 0 0.0"/><geometry><sphere radius="0.05"/></geometry></collision>
  </link>
  <link name="upper"><inertial><origin xyz="0 0 -0.25"/><mass value="0.1"/>{INERTIA}</inertial></link>
  <link name="lower">
    <inertial><origin xyz="0 0 -0.5"/><mass value="1"/>{INERTIA}</inertial>
    <collision name="bob"><origin xyz="0 0 -0.5"/><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <joint name="shoulder" type="continuous">
    <parent link="world"/><child link="upper"/><origin xyz="0 0 1"/><axis xyz="0 1 0"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="upper"/><child link="lower"/><origin xyz="0 0 -0.5"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0" effort="1" velocity="1"/>
  </joint>
</robot>"""

BALL = f"""<robot name="ball"><link name="ball"><inertial><mass value="1"/>{INERTIA}</inertial>
<collision name="ball"><geometry><sphere radius="0.1"/></geometry></collision></link></robot>"""


@pytest.mark.slow
def test_self_collision_stops_a_swinging_arm_at_the_post():
    model = jaxmor.with_self_collision(jaxmor.load_urdf(ARM))
    assert model.contact_pairs == ((0, 1),)
    # Released from 1 rad on the -x side (a positive angle swings the bob towards -x), the bob swings
    # to +x and hits the post: bob centre at (-sin q, 0, 1 - cos q), post at (0.15, 0, 0).
    state = jaxmor.init_state(model, q=jnp.array([1.0, 0.0]))
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=1500))(state)
    q = np.asarray(traj.q)
    assert np.abs(q[:, 1]).max() < 1e-6  # the elbow stays locked by its limits
    bob = np.stack([-np.sin(q[:, 0]), np.zeros(len(q)), 1.0 - np.cos(q[:, 0])], axis=1)
    gap = np.linalg.norm(bob - np.array([0.15, 0.0, 0.0]), axis=1) - 0.15
    assert gap.min() > -1e-3, gap.min()  # never sinks into the post by more than 1 mm
    assert np.asarray(traj.contact_impulse[:, 0, 0]).max() > 0
    # Without the post the bob would swing on to q = -1; it rests against the post instead.
    assert q[:, 0].min() > -0.3
    assert abs(gap[-1]) < 1e-3


def test_a_box_cylinder_self_collision_pair_is_made():
    """Box-cylinder was refused before cylinders collided with everything; now the pair is made."""
    text = ARM.replace('<sphere radius="0.05"/>', '<box size="0.1 0.1 0.1"/>').replace(
        '<sphere radius="0.1"/>', '<cylinder radius="0.1" length="0.1"/>'
    )
    model = jaxmor.with_self_collision(jaxmor.load_urdf(text))
    types = {frozenset((model.geom_type[a], model.geom_type[b])) for a, b in model.contact_pairs}
    assert frozenset((jaxmor.GeomType.BOX, jaxmor.GeomType.CYLINDER)) in types


@pytest.mark.slow
@pytest.mark.parametrize("restitution", [0.5, 0.8])
def test_bouncing_ball_apex_heights(restitution):
    """Apex heights after k bounces are e^(2k) H (closed form) within O(h v) per bounce."""
    model = jaxmor.add_ground(jaxmor.load_urdf(BALL), restitution=restitution)
    height, h = 1.0, 1e-3
    q0 = jaxmor.neutral_q(model).at[2].set(0.1 + height)
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=2500))(jaxmor.init_state(model, q=q0))
    z = np.asarray(traj.q[:, 2]) - 0.1
    vz = np.asarray(traj.u[:, 2])
    apexes = [z[i] for i in range(1, len(z) - 1) if vz[i - 1] > 0 >= vz[i]]
    assert len(apexes) >= 2
    v_impact = np.sqrt(2 * G * height)
    for k, apex in enumerate(apexes[:2], start=1):
        expected = restitution ** (2 * k) * height
        assert abs(apex - expected) <= 2 * h * v_impact, (k, apex, expected)


@pytest.mark.slow
def test_no_bounce_is_lost_whatever_the_last_free_flight_gap():
    """Drops from heights spread over one step's travel (so the last free-flight step ends at every gap
    from 0 to h v above the ground), plus one whose last free flight ends 5 um above it (inside the 1e-5 m
    allowance that used to be taken for a resting contact: the ball stopped dead). Every ball must bounce to
    e^2 H within O(h v) (closed form of the first apex), the test of the bounce's own discretization.

    With ``u += h g`` then ``z += h u`` from rest, the ball's height after n free-flight steps is
    ``z_0 - g h^2 n (n + 1) / 2``; ``z_0`` is chosen from it so that step ``N`` starts at the gap wanted."""
    e, h, radius, n_fall = 0.9, 1e-3, 0.1, 450  # about 1 m of fall, 4.4 m/s at impact
    model = jaxmor.add_ground(jaxmor.load_urdf(BALL), restitution=e)
    model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(h)))
    fall = G * h * h * n_fall * (n_fall + 1) / 2
    v_impact = G * h * n_fall
    gaps = np.r_[np.arange(20) / 20 * h * v_impact, 5e-6]
    heights = fall + gaps  # the drop heights: the ball starts this far above the ground
    q0 = np.tile(np.asarray(jaxmor.neutral_q(model)), (gaps.size, 1))
    q0[:, 2] = radius + heights
    states = jax.vmap(lambda q: jaxmor.init_state(model, q=q))(jnp.asarray(q0))
    _, traj = jax.jit(jax.vmap(lambda s: jaxmor.rollout(model, s, n_steps=1800)))(states)
    z = np.asarray(traj.q[:, :, 2]) - radius
    vz = np.asarray(traj.u[:, :, 2])
    for k, height in enumerate(heights):
        rising = np.flatnonzero((vz[k, :-1] > 0) & (vz[k, 1:] <= 0))
        assert rising.size >= 1, f"drop {k} (last free-flight gap {gaps[k]:.2e} m): no bounce"
        apex = z[k, rising[0] + 1]
        assert abs(apex - e**2 * height) <= 2 * h * v_impact, (k, gaps[k], apex, e**2 * height)


CYLINDER_R, CYLINDER_L = 0.1, 0.2
CYLINDER = f"""<robot name="wheel"><link name="wheel"><inertial><mass value="1"/>
<inertia ixx="{(3 * CYLINDER_R**2 + CYLINDER_L**2) / 12}" iyy="{(3 * CYLINDER_R**2 + CYLINDER_L**2) / 12}"
 izz="{CYLINDER_R**2 / 2}"/></inertial>
<collision><geometry><cylinder radius="{CYLINDER_R}" length="{CYLINDER_L}"/></geometry></collision></link></robot>"""


def _rolling(gravity, speed: float, n_steps: int):
    """A solid cylinder (I = m r^2 / 2 about its axis) on its side, axis along world y, on ground with
    friction 0.8, launched rolling at ``speed`` along x; its x velocity over ``n_steps`` steps of 1 ms."""
    model = jaxmor.add_ground(jaxmor.load_urdf(CYLINDER), friction=0.8)
    model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(1e-3), gravity=jnp.asarray(gravity)))
    half = math.sqrt(0.5)
    q = jnp.array([0.0, 0.0, CYLINDER_R, half, half, 0.0, 0.0])  # 90 degrees about x: the axis along -y
    u = jnp.array([speed, 0.0, 0.0, 0.0, speed / CYLINDER_R, 0.0])  # rolling: v = w_y r
    _, traj = jax.jit(lambda s: jaxmor.rollout(model, s, n_steps=n_steps))(jaxmor.init_state(model, q=q, u=u))
    return np.asarray(traj.u[:, 0]), np.asarray(traj.q[:, 2])


@pytest.mark.slow
def test_a_cylinder_rolls_down_an_incline_like_the_closed_form():
    """On a 20 degree incline (gravity tilted; tan 20 = 0.36 < 3 mu, so it rolls without slipping) a solid
    cylinder accelerates at (2/3) g sin(theta) = 2.237 m/s^2 (the 16 sampled rim points gave 0.098)."""
    theta = math.radians(20.0)
    vx, z = _rolling([G * math.sin(theta), 0.0, -G * math.cos(theta)], 0.0, 1500)
    acceleration = (vx[1499] - vx[499]) / 1.0
    assert acceleration == pytest.approx(2.0 / 3.0 * G * math.sin(theta), rel=1e-2)
    assert np.all(np.abs(z - CYLINDER_R) < 1e-4)  # on the ground, no bumps


@pytest.mark.slow
def test_a_rolling_cylinder_keeps_its_speed_on_flat_ground():
    """Launched rolling at 1 m/s on flat ground: no rolling resistance in the model, so it keeps above
    0.99 m/s after 2 s (the octagon of sampled rim points had slowed it to 0.05 m/s)."""
    vx, _ = _rolling([0.0, 0.0, -G], 1.0, 2000)
    assert vx[-1] > 0.99, vx[-1]
