"""The projected Gauss-Seidel solver (``jaxmor.sim.solver``) on hand-made ``jaxmor.sim.constraint.Problem``s.

Sources of the expected values (never the solver's output):

* closed forms derived in the tests' docstrings: a single normal row ``max(0, (target - b) / a)``; a point
  mass on the ground (``A = I / m``, rows decouple) sticking (``lam_t = -m b_t``) or sliding
  (``lam_t = -mu lam_n b_t / |b_t|``); a joint row's Coulomb friction (stick ``-b / a``, slide
  ``-bound sign(b)``), its limits (``max(0, (low - b) / a) + min(0, (high - b) / a)``) and both together;
  a sticking contact whose impulse was chosen first (``b = target - A lam``);
* a brute-force solution of the (box-)LCP written in NumPy from its definition: every assignment of each
  row to "free" (``lam = 0``, ``low <= v <= high``), "at its lower bound" (``v = low``, ``lam >= 0``) or "at
  its upper bound" (``v = high``, ``lam <= 0``) is tried, the active rows solved with ``numpy.linalg.solve``,
  and the one consistent assignment kept (unique for a symmetric positive-definite ``A``);
* Coulomb's law with maximum dissipation for a sliding contact with a coupled Delassus block: ``v_n =
  target``, ``|lam_t| = mu lam_n`` and ``v_t = -c lam_t`` with ``c > 0``;
* derivatives: the implicit-function derivative of the active set's linear system (``d lam_S = -A_SS^-1
  (db_S + dA_SS lam_S)``) and central finite differences of converged solves;
* ``contact_residuals``: its docstring's definitions, recomputed in NumPy.

Tolerances. ``ROUND_OFF`` (1e-13, relative) where the solver reproduces a closed form in a handful of
floating-point operations (one sweep is exact for decoupled rows; further sweeps only repeat it).
``CONVERGED`` (1e-10, relative) where Gauss-Seidel iterates on coupled rows: ``ITERATIONS`` sweeps
contract the error by far more than 1e-12 for the Delassus matrices used here (condition numbers below
~20, checked by the tests' own assertions on the brute-force solution), so 1e-10 leaves round-off of
the 5x5 solves (~1e-15 cond) a wide margin while any wrong row or sign is O(1). Finite differences:
see ``FD_STEP``.

Cost: one module-level ``jax.jit`` of ``solve`` (``iterations`` static); each problem shape compiles once
and the parametrized cases reuse it.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmor.errors import ArgumentError
from jaxmor.sim.constraint import Impulses, Problem
from jaxmor.sim.solver import contact_residuals, solve, solve_all

#: Relative tolerance for closed forms the solver reproduces in a few floating-point operations.
ROUND_OFF = 1e-13
#: Relative tolerance for coupled rows after ``ITERATIONS`` Gauss-Seidel sweeps (module docstring).
CONVERGED = 1e-10
#: Sweeps of every solve of this module (static: one compile per problem shape).
ITERATIONS = 200
#: Central-difference step. The solutions are piecewise linear in b and rational in A: inside one
#: active set the central difference is exact up to round-off ~1e-16 / FD_STEP = 1e-10 (relative).
FD_STEP = 1e-6
#: Tolerance of derivatives against central differences and closed forms: the round-off above plus the
#: derivative's own convergence (the solver's tangent iterates ITERATIONS linearized sweeps).
FD_TOL = 1e-8

SOLVE = jax.jit(solve, static_argnums=2)
RESIDUALS = jax.jit(contact_residuals)
H = 1e-3  # time step [s] of the physical examples
G = 9.81  # gravity [m/s^2]


def problem(
    delassus,
    free_velocity,
    contact_target=(),
    friction=(),
    friction_bound=(),
    limit_low=(),
    limit_high=(),
    rows_per_contact=3,
) -> Problem:
    """A :class:`Problem` from NumPy-like values (float64)."""

    def vec(x):
        return jnp.asarray(np.asarray(x, dtype=float).reshape(-1))

    return Problem(
        delassus=jnp.asarray(np.asarray(delassus, dtype=float)),
        free_velocity=vec(free_velocity),
        contact_target=vec(contact_target),
        friction=vec(friction),
        friction_bound=vec(friction_bound),
        limit_low=vec(limit_low),
        limit_high=vec(limit_high),
        rows_per_contact=rows_per_contact,
    )


def impulses(contact, friction=(), limit=()) -> Impulses:
    contact = np.asarray(contact, dtype=float).reshape(-1, 3)
    return Impulses(
        jnp.asarray(contact),
        jnp.asarray(np.asarray(friction, dtype=float).reshape(-1)),
        jnp.asarray(np.asarray(limit, dtype=float).reshape(-1)),
        jnp.zeros(0),
    )


def numpy_tree(tree):
    return jax.tree.map(np.asarray, tree)


def row_velocity(prob: Problem, lam: Impulses) -> np.ndarray:
    """``v = A lam + b`` in NumPy, with the row impulses laid out as the module docstring of
    ``jaxmor.sim.constraint`` says: each contact's normal (and tangents), then each joint's friction plus limit."""
    contact = np.asarray(lam.contact)
    if prob.rows_per_contact == 1:
        contact = contact[:, :1]
    rows = np.concatenate([contact.reshape(-1), np.asarray(lam.friction) + np.asarray(lam.limit)])
    return np.asarray(prob.delassus) @ rows + np.asarray(prob.free_velocity)


def spd(rng: np.random.Generator, n: int, coupling: float) -> np.ndarray:
    """A random symmetric positive-definite matrix ``I + coupling B B^T / n`` (eigenvalues >= 1)."""
    b = rng.normal(size=(n, n))
    return np.eye(n) + coupling * (b @ b.T) / n


def brute_force_box_lcp(a, b, low, high) -> np.ndarray:
    """The ``lam`` with ``v = a lam + b`` such that every row is free (``lam = 0``, ``low <= v <= high``), at its
    lower bound (``v = low``, ``lam >= 0``) or at its upper bound (``v = high``, ``lam <= 0``); all assignments
    are enumerated (infinite bounds are never active) and exactly one must be consistent."""
    n = len(b)
    scale = max(1.0, float(np.abs(b).max()), float(np.abs(np.where(np.isfinite(low), low, 0.0)).max()))
    slack = 1e-12 * scale
    choices = [(0,) + ((1,) if np.isfinite(low[i]) else ()) + ((2,) if np.isfinite(high[i]) else ()) for i in range(n)]
    solutions = []
    for combo in itertools.product(*choices):
        combo = np.array(combo)
        active = combo > 0
        lam = np.zeros(n)
        if active.any():
            target = np.where(combo == 1, low, high)[active]
            lam[active] = np.linalg.solve(a[np.ix_(active, active)], target - b[active])
        v = a @ lam + b
        free = combo == 0
        ok = (
            np.all(lam[combo == 1] >= -slack)
            and np.all(lam[combo == 2] <= slack)
            and np.all(v[free] >= low[free] - slack)
            and np.all(v[free] <= high[free] + slack)
        )
        if ok:
            solutions.append(lam)
    assert len(solutions) == 1, f"the brute-force LCP found {len(solutions)} solutions"
    return solutions[0]


# --------------------------------------------------------------------------------------------------
# 1. Normal rows without friction.


@pytest.mark.parametrize("rows_per_contact", [1, 3], ids=["frictionless-problem", "mu=0"])
@pytest.mark.parametrize(
    "a, b, target",
    [
        (0.5, -2.0, 0.0),  # approaching a resting contact: pushed to v = 0
        (0.5, 1.0, 0.0),  # separating: no impulse
        (2.0, -2.0, -3.0),  # speculative target of an open gap that the step does not close: inactive
        (2.0, -2.0, -1.5),  # an open gap that the step closes: lands exactly at contact
        (0.25, -1.0, 0.5),  # a restitution target above zero: bounces
    ],
    ids=["approach", "separate", "far", "closing", "bounce"],
)
def test_a_single_normal_row_is_the_clamped_closed_form(a, b, target, rows_per_contact):
    """One contact, ``v_n = a lam_n + b`` with ``lam_n >= 0`` complementary to ``v_n >= target``:
    ``lam_n = max(0, (target - b) / a)`` and ``v_n = max(b, target)``. With tangent rows and ``mu = 0`` (the
    tangents see a free velocity of their own) the tangential impulses must stay zero."""
    if rows_per_contact == 1:
        prob = problem([[a]], [b], [target], [0.0], rows_per_contact=1)
    else:
        prob = problem(a * np.eye(3), [b, 0.7, -0.3], [target], [0.0])
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    expected = max(0.0, (target - b) / a)
    assert lam.contact[0, 0] == pytest.approx(expected, rel=ROUND_OFF, abs=ROUND_OFF), "normal impulse"
    np.testing.assert_array_equal(lam.contact[0, 1:], 0.0, err_msg="tangential impulses of a frictionless contact")
    v_n = row_velocity(prob, lam)[0]
    assert v_n == pytest.approx(max(b, target), rel=ROUND_OFF, abs=ROUND_OFF), "normal velocity"


@pytest.mark.parametrize("seed", range(4))
def test_coupled_frictionless_contacts_solve_the_lcp(seed):
    """Five frictionless contacts coupled by a random SPD Delassus matrix (condition number < 20) against the
    brute-force LCP; the random free velocities and targets leave some contacts active and some open."""
    rng = np.random.default_rng(seed)
    n = 5
    a = spd(rng, n, 3.0)
    assert np.linalg.cond(a) < 20.0, "the test's Delassus matrix should be well conditioned"
    b = rng.normal(size=n)
    target = 0.3 * rng.normal(size=n)
    expected = brute_force_box_lcp(a, b, target, np.full(n, np.inf))
    active = expected > 0
    assert 0 < active.sum() < n, "the case should mix active and open contacts"

    prob = problem(a, b, target, np.zeros(n), rows_per_contact=1)
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    np.testing.assert_allclose(lam.contact[:, 0], expected, rtol=0, atol=CONVERGED, err_msg="normal impulses")
    np.testing.assert_array_equal(lam.contact[:, 1:], 0.0, err_msg="tangential impulses of a frictionless problem")
    residuals = numpy_tree(RESIDUALS(prob, lam))
    assert residuals["signorini"] <= CONVERGED, "Signorini residual"
    assert residuals["normal_velocity"] >= -CONVERGED, "normal velocity below its target"
    assert residuals["cone"] <= CONVERGED, "negative normal impulse"


# --------------------------------------------------------------------------------------------------
# 2. A contact with friction.

MASS = 2.0  # point mass [kg]
MU = 0.5
STICK_SPEED = 0.2 * MU * G * H  # well inside the cone: |m b_t| = 0.2 mu lam_n
SLIDE_SPEED = 0.3  # m/s, far beyond mu g h = 4.9 mm/s


def point_mass_problem(slip_direction, speed: float, mu: float = MU) -> Problem:
    """A point mass resting on the ground (normal +z, tangents x and y) and moving sideways: ``A = I / m``,
    ``b = (-g h, v_x, v_y)`` (the free velocity after gravity), target 0."""
    direction = np.asarray(slip_direction, dtype=float)
    direction = direction / np.linalg.norm(direction)
    return problem(np.eye(3) / MASS, [-G * H, *(speed * direction)], [0.0], [mu])


DIRECTIONS = {"x": (1.0, 0.0), "diagonal": (1.0, 1.0), "-y": (0.0, -1.0), "30deg": (np.cos(0.52), np.sin(0.52))}


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("speed", [STICK_SPEED, SLIDE_SPEED], ids=["stick", "slide"])
def test_a_point_mass_sticks_or_slides_with_the_analytic_impulses(direction, speed):
    """The rows decouple (``A = I / m``): ``lam_n = m g h``. Stick (``m |b_t| <= mu lam_n``): ``lam_t = -m b_t``
    and ``v_t = 0`` exactly. Slide: ``lam_t = -mu lam_n b_t / |b_t|`` on the rim of the disk, anti-parallel to
    the slip ``v_t = b_t (1 - mu g h / |b_t|)``. The same magnitude in every direction (a disk, not a box)."""
    prob = point_mass_problem(DIRECTIONS[direction], speed)
    b_t = np.asarray(prob.free_velocity)[1:]
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    lam_n = MASS * G * H
    assert lam.contact[0, 0] == pytest.approx(lam_n, rel=ROUND_OFF), "normal impulse"
    v = row_velocity(prob, lam)
    if speed == STICK_SPEED:
        np.testing.assert_allclose(lam.contact[0, 1:], -MASS * b_t, rtol=ROUND_OFF, atol=0, err_msg="stiction impulse")
        assert np.abs(v[1:]).max() <= ROUND_OFF * speed, "tangential velocity of a sticking contact"
        assert np.linalg.norm(lam.contact[0, 1:]) < MU * lam_n, "stiction impulse inside the disk"
    else:
        slip = b_t / np.linalg.norm(b_t)
        np.testing.assert_allclose(
            lam.contact[0, 1:], -MU * lam_n * slip, rtol=0, atol=ROUND_OFF * lam_n, err_msg="sliding friction impulse"
        )
        np.testing.assert_allclose(
            v[1:], b_t * (1.0 - MU * G * H / speed), rtol=0, atol=ROUND_OFF * speed, err_msg="slip velocity"
        )
    residuals = numpy_tree(RESIDUALS(prob, lam))
    assert residuals["cone"] <= ROUND_OFF * lam_n, "cone residual"
    assert residuals["signorini"] <= ROUND_OFF * lam_n, "Signorini residual"


def test_a_diagonal_slide_has_the_friction_of_an_axis_aligned_one():
    """Isotropy of the disk: sliding along (1, 1) at the same speed as along x gives the same friction
    magnitude ``mu lam_n``; per-axis bounds would give ``sqrt(2) mu lam_n`` on the diagonal."""
    along_x = numpy_tree(SOLVE(point_mass_problem((1.0, 0.0), SLIDE_SPEED), impulses(np.zeros(3)), ITERATIONS))
    diagonal = numpy_tree(SOLVE(point_mass_problem((1.0, 1.0), SLIDE_SPEED), impulses(np.zeros(3)), ITERATIONS))
    magnitude_x = np.linalg.norm(along_x.contact[0, 1:])
    magnitude_d = np.linalg.norm(diagonal.contact[0, 1:])
    assert magnitude_d == pytest.approx(magnitude_x, rel=ROUND_OFF), "friction magnitude along the diagonal"
    assert magnitude_d == pytest.approx(MU * MASS * G * H, rel=ROUND_OFF), "friction magnitude on the rim"
    np.testing.assert_allclose(diagonal.contact[0, 1], diagonal.contact[0, 2], rtol=ROUND_OFF, err_msg="diagonal")


def coupled_contact_delassus(rng: np.random.Generator) -> np.ndarray:
    """A rigid body's 3x3 contact block: SPD with off-diagonal coupling between normal and tangents and an
    anisotropic tangential block (condition number < 10)."""
    a = spd(rng, 3, 1.5)
    assert np.linalg.cond(a) < 10.0
    return a


@pytest.mark.parametrize("seed", range(3))
def test_a_sticking_contact_with_a_coupled_delassus_block_returns_the_chosen_impulse(seed):
    """Choose an impulse inside the cone (``|lam_t| = 0.5 mu lam_n``) and the free velocity that it stops
    exactly, ``b = target - A lam``; the solution with ``v = target`` on all three rows is this ``lam``."""
    rng = np.random.default_rng(100 + seed)
    a = coupled_contact_delassus(rng)
    lam_n = 0.7
    angle = rng.uniform(0, 2 * np.pi)
    chosen = np.array([lam_n, *(0.5 * MU * lam_n * np.array([np.cos(angle), np.sin(angle)]))])
    target = np.array([0.05, 0.0, 0.0])  # a normal target of a bounce; tangents stop
    prob = problem(a, target - a @ chosen, [target[0]], [MU])
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    np.testing.assert_allclose(lam.contact[0], chosen, rtol=0, atol=CONVERGED, err_msg="sticking contact impulse")
    np.testing.assert_allclose(row_velocity(prob, lam), target, rtol=0, atol=CONVERGED, err_msg="row velocities")


@pytest.mark.parametrize("seed", range(3))
def test_a_sliding_contact_with_a_coupled_delassus_block_obeys_maximum_dissipation(seed):
    """A fast slip with the coupled block: Coulomb's law with maximum dissipation, ``v_n = target``,
    ``|lam_t| = mu lam_n`` and the slip ``v_t`` anti-parallel to ``lam_t`` (the solver's documented fixed
    points; a full 2x2 solve before the projection would leave ``A_tt^-1 v_t`` anti-parallel instead)."""
    rng = np.random.default_rng(200 + seed)
    a = coupled_contact_delassus(rng)
    angle = rng.uniform(0, 2 * np.pi)
    b = np.array([-1.0, 3.0 * np.cos(angle), 3.0 * np.sin(angle)])
    prob = problem(a, b, [0.0], [MU])
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    v = row_velocity(prob, lam)
    lam_n, lam_t, v_t = lam.contact[0, 0], lam.contact[0, 1:], v[1:]
    assert lam_n > 0.1, "the contact should carry a load"
    assert v[0] == pytest.approx(0.0, abs=CONVERGED), "normal velocity at its target"
    assert np.linalg.norm(lam_t) == pytest.approx(MU * lam_n, rel=CONVERGED), "friction on the rim"
    assert np.linalg.norm(v_t) > 0.1, "the contact should slide"
    cosine = lam_t @ v_t / (np.linalg.norm(lam_t) * np.linalg.norm(v_t))
    assert cosine <= -1.0 + CONVERGED, f"friction not opposite to the slip (cosine {cosine})"


# --------------------------------------------------------------------------------------------------
# 3. Joint rows: Coulomb friction, limits, both.

INERTIA = 0.25  # joint-space inertia [kg m^2]: the row's Delassus entry is 1 / INERTIA
TAU_C = 2.0  # Coulomb friction torque [Nm]


def joint_problem(b: float, bound: float, low: float = -np.inf, high: float = np.inf) -> Problem:
    return problem([[1.0 / INERTIA]], [b], friction_bound=[bound], limit_low=[low], limit_high=[high])


@pytest.mark.parametrize(
    "b", [0.3 * TAU_C * H / INERTIA, -0.9 * TAU_C * H / INERTIA, 5.0 * TAU_C * H / INERTIA, -0.5], ids=str
)
def test_joint_coulomb_friction_sticks_or_slides_against_its_bound(b):
    """``v = b + lam / I`` with ``|lam| <= tau_c h``: stick (``v = 0``, ``lam = -I b``) when ``I |b| <= tau_c h``,
    else slide with ``lam = -tau_c h sign(b)`` and ``v = b - tau_c h sign(b) / I``. No limits: no limit impulse."""
    bound = TAU_C * H
    prob = joint_problem(b, bound)
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    v = row_velocity(prob, lam)[0]
    if INERTIA * abs(b) <= bound:
        assert lam.friction[0] == pytest.approx(-INERTIA * b, rel=ROUND_OFF), "stiction impulse"
        assert v == pytest.approx(0.0, abs=ROUND_OFF * abs(b)), "joint velocity of a sticking joint"
    else:
        assert lam.friction[0] == pytest.approx(-bound * np.sign(b), rel=ROUND_OFF), "sliding friction impulse"
        assert v == pytest.approx(b - bound * np.sign(b) / INERTIA, rel=ROUND_OFF), "joint velocity"
    assert lam.limit[0] == 0.0, "limit impulse of a joint without limits"


@pytest.mark.parametrize(
    "b, low, high",
    [(-3.0, -1.0, 2.0), (3.0, -1.0, 2.0), (0.5, -1.0, 2.0), (-0.2, 0.0, 0.0), (4.0, -np.inf, 1.0)],
    ids=["below", "above", "inside", "at-both-limits", "upper-only"],
)
def test_joint_limit_row_is_the_one_dimensional_closed_form(b, low, high):
    """``v = b + lam / I`` with ``lam >= 0`` complementary to ``v >= low`` and ``lam <= 0`` to ``v <= high``
    (``low <= 0 <= high``): ``lam = I max(0, low - b) + I min(0, high - b)``, and no friction impulse."""
    prob = joint_problem(b, 0.0, low, high)
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    expected = INERTIA * (max(0.0, low - b) + min(0.0, high - b))
    assert lam.limit[0] == pytest.approx(expected, rel=ROUND_OFF, abs=ROUND_OFF), "limit impulse"
    assert lam.friction[0] == 0.0, "friction impulse with a zero bound"
    v = row_velocity(prob, lam)[0]
    assert low - ROUND_OFF <= v <= high + ROUND_OFF, "joint velocity outside its limits"


@pytest.mark.parametrize(
    "b, low, high",
    [(-10.0, -2.0, 5.0), (10.0, -5.0, 2.0), (-0.4, -2.0, 5.0), (-10.0, -np.inf, 5.0)],
    ids=["slides-into-lower", "slides-into-upper", "sticks-before-limit", "slides-no-limit"],
)
def test_joint_friction_and_limit_share_one_row(b, low, high):
    """Both act on one row, ``v = b + (lam_f + lam_l) / I``. With ``low < 0 < high`` the split is unique:
    friction first ``lam_f = clip(-I b, +-F)``, then the limit from what friction leaves, ``v' = b + lam_f / I``,
    ``lam_l = I max(0, low - v') + I min(0, high - v')``; a sliding joint stopped at ``low < 0`` still moves
    (``v = low``), so its friction stays at ``+F``, consistent with the law."""
    bound = 1.0 * INERTIA  # F, so that the friction alone changes v by 1
    prob = joint_problem(b, bound, low, high)
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    lam_f = np.clip(-INERTIA * b, -bound, bound)
    v_after_friction = b + lam_f / INERTIA
    lam_l = INERTIA * (max(0.0, low - v_after_friction) + min(0.0, high - v_after_friction))
    assert lam.friction[0] == pytest.approx(lam_f, rel=ROUND_OFF, abs=ROUND_OFF), "friction impulse"
    assert lam.limit[0] == pytest.approx(lam_l, rel=ROUND_OFF, abs=ROUND_OFF), "limit impulse"
    v = row_velocity(prob, lam)[0]
    assert v == pytest.approx(v_after_friction + lam_l / INERTIA, rel=ROUND_OFF, abs=ROUND_OFF), "joint velocity"


def test_a_joint_pressed_against_its_limit_satisfies_both_laws():
    """At the limit (``low = 0``) and pushed into it the row stops (``v = 0``, total impulse ``-I b``); the split
    between friction and limit is not unique there, but each part obeys its law: ``|lam_f| <= F``, ``lam_l >= 0``."""
    b, bound = -10.0, 1.0 * INERTIA
    prob = joint_problem(b, bound, 0.0, 5.0)
    lam = numpy_tree(SOLVE(prob, prob.zero_impulses(), ITERATIONS))
    assert lam.friction[0] + lam.limit[0] == pytest.approx(-INERTIA * b, rel=ROUND_OFF), "total row impulse"
    assert row_velocity(prob, lam)[0] == pytest.approx(0.0, abs=ROUND_OFF * abs(b)), "joint velocity"
    assert abs(lam.friction[0]) <= bound * (1 + ROUND_OFF), "friction impulse beyond its bound"
    assert lam.limit[0] >= 0.0, "a lower limit pulling"


# --------------------------------------------------------------------------------------------------
# 4. The frictionless position problem (rows_per_contact = 1) with contacts and joints.


@pytest.mark.parametrize("seed", range(3))
def test_the_frictionless_position_problem_solves_the_box_lcp(seed):
    """Two contacts (``v >= target``, ``lam >= 0``) and two joints, one with a lower bound only
    (``v >= low``, ``lam >= 0``) and one with an upper bound only (``v <= high``, ``lam <= 0``), coupled by an SPD
    matrix, as the position pass has them (``b = 0``, positive correction targets); against the brute force.
    The Impulses put the joint rows' impulses in ``limit``: no tangential or friction impulses."""
    rng = np.random.default_rng(300 + seed)
    a = spd(rng, 4, 3.0)
    b = np.zeros(4)
    target = rng.uniform(0.0, 1.0, size=2)
    low = np.array([target[0], target[1], rng.uniform(0.0, 1.0), -np.inf])
    high = np.array([np.inf, np.inf, np.inf, -rng.uniform(0.0, 1.0)])
    expected = brute_force_box_lcp(a, b, low, high)

    prob = problem(a, b, target, [0.0, 0.0], [0.0, 0.0], low[2:], high[2:], rows_per_contact=1)
    warm = impulses(rng.normal(size=(2, 3)), rng.normal(size=2), rng.normal(size=2))  # tangents, friction ignored
    lam = numpy_tree(SOLVE(prob, warm, ITERATIONS))
    np.testing.assert_allclose(lam.contact[:, 0], expected[:2], rtol=0, atol=CONVERGED, err_msg="normal impulses")
    np.testing.assert_allclose(lam.limit, expected[2:], rtol=0, atol=CONVERGED, err_msg="joint limit impulses")
    np.testing.assert_array_equal(lam.contact[:, 1:], 0.0, err_msg="tangential impulses of a frictionless problem")
    np.testing.assert_array_equal(lam.friction, 0.0, err_msg="friction impulses of a frictionless problem")


# --------------------------------------------------------------------------------------------------
# 5. The layout helpers and the residuals.


@pytest.mark.parametrize("rows_per_contact", [3, 1])
def test_the_row_layout_round_trips_through_impulses(rows_per_contact):
    """The documented layout: ``rows_per_contact`` rows per contact (normal, then tangents), then one row per
    joint holding its friction plus its limit impulse. ``rows`` and ``impulses`` invert each other (a
    frictionless problem drops the tangents and gives zeros back); ``contact_row``/``joint_row`` point at the
    normal and the joint; ``tangent_blocks`` and ``contact_velocities`` read the same positions."""
    nc, nj = 3, 2
    r = rows_per_contact * nc + nj
    rng = np.random.default_rng(7)
    a = rng.normal(size=(r, r))
    prob = problem(
        a, np.zeros(r), np.zeros(nc), np.zeros(nc), np.zeros(nj), np.zeros(nj), np.zeros(nj), rows_per_contact
    )
    contact, friction, limit = rng.normal(size=(nc, 3)), rng.normal(size=nj), rng.normal(size=nj)
    if rows_per_contact == 1:
        contact[:, 1:] = 0.0  # what a frictionless problem can represent
    lam = impulses(contact, friction, limit)

    rows = np.asarray(prob.rows(lam))
    expected_rows = np.concatenate([contact[:, :rows_per_contact].reshape(-1), friction + limit])
    np.testing.assert_array_equal(rows, expected_rows, err_msg="rows(impulses)")
    back = numpy_tree(prob.impulses(jnp.asarray(rows), jnp.asarray(limit)))
    np.testing.assert_array_equal(back.contact, contact, err_msg="impulses(rows).contact")
    np.testing.assert_allclose(back.friction, friction, rtol=0, atol=1e-15, err_msg="impulses(rows).friction")
    np.testing.assert_array_equal(back.limit, limit, err_msg="impulses(rows).limit")
    for k in range(nc):
        assert int(prob.contact_row(k)) == rows_per_contact * k, f"contact_row({k})"
        assert rows[int(prob.contact_row(k))] == contact[k, 0], f"normal impulse of contact {k}"
    for i in range(nj):
        assert int(prob.joint_row(i)) == rows_per_contact * nc + i, f"joint_row({i})"
    v = rng.normal(size=r)
    np.testing.assert_array_equal(
        np.asarray(prob.contact_velocities(jnp.asarray(v))),
        v[: rows_per_contact * nc].reshape(nc, -1),
        "contact_velocities",
    )
    if rows_per_contact == 3:
        blocks = np.asarray(prob.tangent_blocks())
        for k in range(nc):
            np.testing.assert_array_equal(
                blocks[k], a[3 * k + 1 : 3 * k + 3, 3 * k + 1 : 3 * k + 3], f"tangent block {k}"
            )
    zero = numpy_tree(prob.zero_impulses())
    assert zero.contact.shape == (nc, 3) and zero.friction.shape == (nj,) and zero.limit.shape == (nj,)
    assert not np.any(zero.contact) and not np.any(zero.friction) and not np.any(zero.limit), "zero_impulses"


def test_contact_residuals_follow_their_definitions():
    """``cone = max(|lam_t| - mu lam_n, -lam_n, 0)``, ``signorini = max |lam_n (v_n - target)|`` and
    ``normal_velocity = min(v_n - target)`` (at most 0), with ``v = A lam + b``, recomputed in NumPy for impulses
    that violate every law (a negative normal impulse, one outside the cone, one approaching)."""
    rng = np.random.default_rng(11)
    nc, nj = 3, 1
    r = 3 * nc + nj
    a, b = spd(rng, r, 1.0), rng.normal(size=r)
    target, mu = rng.normal(size=nc), np.array([0.3, 0.8, 0.5])
    prob = problem(a, b, target, mu, [0.1], [-1.0], [1.0])
    contact = np.array([[-0.2, 0.0, 0.0], [1.0, 2.0, -1.0], [0.5, 0.1, 0.1]])
    lam = impulses(contact, [0.05], [0.02])
    residuals = numpy_tree(RESIDUALS(prob, lam))
    v = row_velocity(prob, lam)
    gap = v[0 : 3 * nc : 3] - target
    cone = np.maximum(np.linalg.norm(contact[:, 1:], axis=1) - mu * contact[:, 0], -contact[:, 0])
    assert residuals["cone"] == pytest.approx(max(cone.max(), 0.0), rel=ROUND_OFF), "cone residual"
    assert residuals["signorini"] == pytest.approx(np.abs(contact[:, 0] * gap).max(), rel=ROUND_OFF), "Signorini"
    assert residuals["normal_velocity"] == pytest.approx(min(gap.min(), 0.0), rel=ROUND_OFF), "normal velocity"


# --------------------------------------------------------------------------------------------------
# 6. Warm starts.


def test_a_warm_start_at_the_solution_stays_there():
    """Warm-started at a known solution, one sweep changes nothing (to round-off): the sliding point mass
    (closed form), the coupled frictionless contacts (brute force) and a joint sliding into its limit (closed
    form, friction ``F`` and limit ``I (low - b) - F``)."""
    lam_n = MASS * G * H
    slide = point_mass_problem((1.0, 0.0), SLIDE_SPEED)
    at = impulses([lam_n, -MU * lam_n, 0.0])
    after = numpy_tree(SOLVE(slide, at, 1))
    np.testing.assert_allclose(after.contact, np.asarray(at.contact), rtol=ROUND_OFF, atol=0, err_msg="sliding contact")

    rng = np.random.default_rng(0)
    a, b, target = spd(rng, 5, 3.0), rng.normal(size=5), 0.3 * rng.normal(size=5)
    expected = brute_force_box_lcp(a, b, target, np.full(5, np.inf))
    coupled = problem(a, b, target, np.zeros(5), rows_per_contact=1)
    contact = np.zeros((5, 3))
    contact[:, 0] = expected
    after = numpy_tree(SOLVE(coupled, impulses(contact), 1))
    np.testing.assert_allclose(after.contact[:, 0], expected, rtol=0, atol=ROUND_OFF, err_msg="coupled contacts")

    b, low, bound = -10.0, -2.0, 1.0 * INERTIA
    joint = joint_problem(b, bound, low, 5.0)
    limit = INERTIA * (low - b) - bound
    after = numpy_tree(SOLVE(joint, impulses(np.zeros((0, 3)), [bound], [limit]), 1))
    assert after.friction[0] == pytest.approx(bound, rel=ROUND_OFF), "joint friction impulse"
    assert after.limit[0] == pytest.approx(limit, rel=ROUND_OFF), "joint limit impulse"


# --------------------------------------------------------------------------------------------------
# 7. Derivatives of converged solves.


def _lcp_impulse(a, b, target):
    """The normal impulses of the converged frictionless solve of ``v = a lam + b >= target``, cold-started."""
    n = b.shape[0]
    prob = Problem(a, b, target, jnp.zeros(n), jnp.zeros(0), jnp.zeros(0), jnp.zeros(0), rows_per_contact=1)
    return solve(prob, prob.zero_impulses(), ITERATIONS).contact[:, 0]


@jax.jit
def _lcp_objective(a, b, target, weights):
    """``w . lam_n``: a scalar for reverse mode."""
    return weights @ _lcp_impulse(a, b, target)


_LCP_GRADIENTS = jax.jit(jax.grad(_lcp_objective, argnums=(0, 1)))
_LCP_JACOBIAN_B = jax.jit(jax.jacfwd(_lcp_impulse, argnums=1))


@pytest.fixture(scope="module")
def lcp_case():
    """The coupled frictionless contacts of seed 1, with their brute-force solution and active set."""
    rng = np.random.default_rng(1)
    a, b, target = spd(rng, 5, 3.0), rng.normal(size=5), 0.3 * rng.normal(size=5)
    lam = brute_force_box_lcp(a, b, target, np.full(5, np.inf))
    active = lam > 0
    v = a @ lam + b - target
    # Strict complementarity keeps the active set under the finite-difference steps.
    assert np.all(lam[active] > 1e-3) and np.all(v[~active] > 1e-3)
    weights = rng.normal(size=5)
    return a, b, target, lam, active, weights


def test_the_derivative_of_coupled_contacts_is_the_active_set_derivative(lcp_case):
    """Inside one active set ``S``, ``A_SS lam_S = target_S - b_S`` and ``lam = 0`` elsewhere, so
    ``d lam_S / d b = -A_SS^-1`` on the active columns and zero on the rest (forward mode, ``jax.jacfwd``)."""
    a, b, target, lam, active, _ = lcp_case
    jac = np.asarray(_LCP_JACOBIAN_B(jnp.asarray(a), jnp.asarray(b), jnp.asarray(target)))
    expected = np.zeros((5, 5))
    expected[np.ix_(active, active)] = -np.linalg.inv(a[np.ix_(active, active)])
    np.testing.assert_allclose(jac, expected, rtol=0, atol=FD_TOL, err_msg="d lam / d b")


def test_the_gradient_of_coupled_contacts_matches_central_differences(lcp_case):
    """Reverse mode (``jax.grad``) of ``w . lam`` w.r.t. the free velocity and every Delassus entry against
    central differences of the converged solve, and against the implicit-function form
    ``d(w . lam) / dA_ij = -(A_SS^-T w_S)_i lam_j`` on the active block (zero elsewhere)."""
    a, b, target, lam, active, weights = lcp_case
    args = [jnp.asarray(x) for x in (a, b, target, weights)]
    grad_a, grad_b = (np.asarray(g) for g in _LCP_GRADIENTS(*args))

    def objective(a_, b_):
        return float(_lcp_objective(jnp.asarray(a_), jnp.asarray(b_), args[2], args[3]))

    fd_b = np.zeros(5)
    for i in range(5):
        e = np.zeros(5)
        e[i] = FD_STEP
        fd_b[i] = (objective(a, b + e) - objective(a, b - e)) / (2 * FD_STEP)
    np.testing.assert_allclose(grad_b, fd_b, rtol=0, atol=FD_TOL, err_msg="d(w . lam) / d b")

    fd_a = np.zeros((5, 5))
    for i, j in itertools.product(range(5), range(5)):
        e = np.zeros((5, 5))
        e[i, j] = FD_STEP
        fd_a[i, j] = (objective(a + e, b) - objective(a - e, b)) / (2 * FD_STEP)
    np.testing.assert_allclose(grad_a, fd_a, rtol=0, atol=FD_TOL, err_msg="d(w . lam) / d A (central differences)")
    adjoint = np.zeros(5)
    adjoint[active] = np.linalg.solve(a[np.ix_(active, active)].T, weights[active])
    np.testing.assert_allclose(grad_a, -np.outer(adjoint, lam), rtol=0, atol=FD_TOL, err_msg="d(w . lam) / d A")


@jax.jit
def _point_mass_impulse(b):
    prob = Problem(
        jnp.eye(3) / MASS,
        b,
        jnp.zeros(1),
        jnp.full(1, MU),
        jnp.zeros(0),
        jnp.zeros(0),
        jnp.zeros(0),
        rows_per_contact=3,
    )
    return solve(prob, prob.zero_impulses(), ITERATIONS).contact[0]


_POINT_MASS_JACOBIAN = jax.jit(jax.jacfwd(_point_mass_impulse))


def test_the_derivative_of_a_sliding_contact_is_the_rim_derivative():
    """Sliding point mass: ``lam_n = -m b_n`` and ``lam_t = -mu lam_n b_t / |b_t|``, so ``d lam_t / d b_t =
    -(mu lam_n / |b_t|) (I - s s^T)`` (``s`` the slip direction) and ``d lam_t / d b_n = mu m s``; forward mode
    against this closed form and against central differences."""
    direction = np.array([np.cos(0.4), np.sin(0.4)])
    b = np.array([-G * H, *(SLIDE_SPEED * direction)])
    jac = np.asarray(_POINT_MASS_JACOBIAN(jnp.asarray(b)))
    lam_n = MASS * G * H
    expected = np.zeros((3, 3))
    expected[0, 0] = -MASS
    expected[1:, 0] = MU * MASS * direction
    expected[1:, 1:] = -(MU * lam_n / SLIDE_SPEED) * (np.eye(2) - np.outer(direction, direction))
    np.testing.assert_allclose(jac, expected, rtol=0, atol=FD_TOL * MASS, err_msg="d lam / d b (closed form)")
    fd = np.zeros((3, 3))
    for i in range(3):
        e = np.zeros(3)
        e[i] = FD_STEP
        fd[:, i] = np.asarray(_point_mass_impulse(jnp.asarray(b + e))) - np.asarray(
            _point_mass_impulse(jnp.asarray(b - e))
        )
        fd[:, i] /= 2 * FD_STEP
    np.testing.assert_allclose(jac, fd, rtol=0, atol=FD_TOL * MASS, err_msg="d lam / d b (central differences)")


def test_a_joint_without_friction_at_rest_has_no_impulse_derivative():
    """A joint row with friction bound 0 and no limits has impulse 0 whatever its free velocity ``b``, so
    ``d lam / d b = 0``, also at ``b = 0`` (a joint at rest: every ball joint of a body at rest, every hinge at an
    equilibrium). ``jnp.clip`` split the derivative at the tie ``x = low = high = 0``: -0.0625 here, -0.25 in a step
    (which made the velocity's derivative 0.75 instead of 1 through a step). Exact: 0."""

    def impulse(b):
        one, none = jnp.ones(1), jnp.zeros(0)
        prob = Problem(jnp.eye(1) / INERTIA, b[None], none, none, 0.0 * one, -jnp.inf * one, jnp.inf * one)
        lam = solve(prob, prob.zero_impulses(), ITERATIONS)
        return lam.friction[0] + lam.limit[0]

    for b in (0.0, 0.3, -0.2):
        assert float(jax.jit(jax.grad(impulse))(jnp.asarray(b))) == 0.0, b
        assert float(jax.jit(impulse)(jnp.asarray(b))) == 0.0


@pytest.mark.parametrize("counts", [(7, 3), (20, 10), (10, 20), (5, 5), (1, 1), (3, 8)])
def test_problems_solved_together_equal_each_solved_alone(counts):
    """``solve_all`` runs the problems in shared loops over sweeps on a fixed schedule: each result must be
    what ``solve`` gives that problem alone with its own count, and the sweeps must not leak from one problem
    into the other (different counts in either order, equal counts, one sweep, coupled rows, a non-symmetric
    ``A``, warm starts, a joint with friction and limits)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(8, 8))
    a = x @ x.T / 8 + np.eye(8) + 0.05 * rng.normal(size=(8, 8))  # non-symmetric, like the effective mass's
    velocity = problem(a, rng.normal(size=8), [0.01, -0.02], [0.8, 0.5], [0.3, 0.0], [-0.5, -np.inf], [0.4, np.inf])
    keep = np.array([0, 3, 6, 7])
    position = problem(
        a[np.ix_(keep, keep)],
        np.zeros(4),
        [0.2, 0.0],
        [0.0, 0.0],
        [0.0, 0.0],
        [0.1, 0.0],
        [0.0, 0.0],
        rows_per_contact=1,
    )
    warm = impulses([[0.1, 0.01, -0.02], [0.0, 0.0, 0.0]], [0.05, 0.0], [0.0, 0.0])
    together = jax.jit(lambda: solve_all((velocity, position), (warm, position.zero_impulses()), counts))()
    alone = (SOLVE(velocity, warm, counts[0]), SOLVE(position, position.zero_impulses(), counts[1]))
    for got, want, name in zip(together, alone, ("velocity", "position"), strict=True):
        for field in ("contact", "friction", "limit"):
            np.testing.assert_allclose(
                getattr(got, field), getattr(want, field), rtol=ROUND_OFF, atol=1e-15, err_msg=f"{name}.{field}"
            )
    # and few sweeps differ from the converged solution (the counts were applied, not more sweeps)
    if counts[1] <= 3:
        assert not np.allclose(together[1].contact, SOLVE(position, position.zero_impulses(), ITERATIONS).contact)


@pytest.mark.parametrize("counts", [(0, 3), (2, -1), (2.5, 3), (True, 3), (3,)])
def test_solve_all_rejects_bad_sweep_counts(counts):
    """A count must be an int >= 1, one per problem."""
    prob = point_mass_problem((1.0, 0.0), SLIDE_SPEED)
    with pytest.raises(ArgumentError, match="sweep count"):
        solve_all((prob, prob), (prob.zero_impulses(), prob.zero_impulses()), counts)
