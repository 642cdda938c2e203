"""Rotations, quaternions, small spatial-algebra helpers and safe numerics (pure JAX, any float dtype).

Quaternions are ``w x y z`` with ``w`` the scalar part. Rotation matrices map body coordinates
to world (parent) coordinates: ``x_world = R @ x_body``.

Safe numerics. :func:`safe_div`, :func:`safe_sqrt` and :func:`safe_norm` share one contract: where
the operation is undefined (a zero or negative denominator, a non-positive radicand, a zero vector)
the value is 0 and so is the gradient, and elsewhere both are the plain operation's. They are built
with the "double where": the unsafe input is replaced before the operation, so the branch that is not
taken cannot put a NaN or an infinity into the gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def pow2(n: int) -> int:
    """The smallest power of two at least ``max(n, 1)`` (Triton's tensor sizes in the Pallas kernels)."""
    return 1 << max(n - 1, 0).bit_length()


def skew(v: jnp.ndarray) -> jnp.ndarray:
    """(..., 3) -> (..., 3, 3) matrix ``[v]x`` with ``[v]x w = v x w``."""
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    zero = jnp.zeros_like(x)
    return jnp.stack([jnp.stack([zero, -z, y], -1), jnp.stack([z, zero, -x], -1), jnp.stack([-y, x, zero], -1)], -2)


def quat_to_rotation(quat: jnp.ndarray) -> jnp.ndarray:
    """Rotation matrix (..., 3, 3) of a quaternion (..., 4) ``w x y z``; the quaternion is normalized."""
    quat = quat / jnp.linalg.norm(quat, axis=-1, keepdims=True)
    w, x, y, z = quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]
    r00 = 1 - 2 * (y * y + z * z)
    r01 = 2 * (x * y - w * z)
    r02 = 2 * (x * z + w * y)
    r10 = 2 * (x * y + w * z)
    r11 = 1 - 2 * (x * x + z * z)
    r12 = 2 * (y * z - w * x)
    r20 = 2 * (x * z - w * y)
    r21 = 2 * (y * z + w * x)
    r22 = 1 - 2 * (x * x + y * y)
    return jnp.stack(
        [jnp.stack([r00, r01, r02], -1), jnp.stack([r10, r11, r12], -1), jnp.stack([r20, r21, r22], -1)], -2
    )


def rotation_to_quat(rotation: jnp.ndarray) -> jnp.ndarray:
    """The unit quaternion (..., 4) ``w x y z`` with ``w >= 0`` of a rotation matrix (..., 3, 3): Shepperd's method,
    each case taken where its diagonal term is the largest, so no division is by a small number."""
    r = rotation
    r00, r11, r22 = r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]
    d21, d02, d10 = r[..., 2, 1] - r[..., 1, 2], r[..., 0, 2] - r[..., 2, 0], r[..., 1, 0] - r[..., 0, 1]
    s01, s02, s12 = r[..., 0, 1] + r[..., 1, 0], r[..., 0, 2] + r[..., 2, 0], r[..., 1, 2] + r[..., 2, 1]
    case = jnp.argmax(jnp.stack([r00 + r11 + r22, r00, r11, r22], -1), axis=-1)
    # 4 q_k^2 of the case's own component k, and the other components times 4 q_k
    square = 1.0 + jnp.stack([r00 + r11 + r22, r00 - r11 - r22, r11 - r00 - r22, r22 - r00 - r11], -1)
    big = jnp.sqrt(jnp.maximum(square, 1e-12)) / 2  # q_k where k is the case
    rows = jnp.stack(
        [
            jnp.stack([big[..., 0], d21, d02, d10], -1),
            jnp.stack([d21, big[..., 1], s01, s02], -1),
            jnp.stack([d02, s01, big[..., 2], s12], -1),
            jnp.stack([d10, s02, s12, big[..., 3]], -1),
        ],
        -2,
    )
    quat = jnp.take_along_axis(rows, case[..., None, None], axis=-2)[..., 0, :]
    own = jnp.take_along_axis(big, case[..., None], axis=-1)
    quat = jnp.where(jnp.arange(4) == case[..., None], quat, quat / (4.0 * own))
    return quat * jnp.where(quat[..., :1] < 0, -1.0, 1.0)


def quat_multiply(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """Hamilton product ``a * b`` of quaternions ``w x y z``."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        -1,
    )


def axis_angle_to_rotation(axis: jnp.ndarray, angle: jnp.ndarray) -> jnp.ndarray:
    """Rodrigues' formula: rotation by ``angle`` [rad] about the unit ``axis``."""
    k = skew(axis)
    s = jnp.sin(angle)[..., None, None]
    c = jnp.cos(angle)[..., None, None]
    eye = jnp.eye(3, dtype=k.dtype)
    return eye + s * k + (1 - c) * (k @ k)


def safe_div(num: jax.Array, den: jax.Array, ok: jax.Array | None = None) -> jax.Array:
    """``num / den`` where ``ok`` (default ``den > 0``), 0 elsewhere, with finite gradients everywhere."""
    if ok is None:
        ok = den > 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def safe_sqrt(x: jax.Array) -> jax.Array:
    """``sqrt(x)`` for ``x > 0``, 0 elsewhere; the gradient is 0 (not infinite) at ``x <= 0``."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def safe_norm(v: jax.Array, axis: int = -1, keepdims: bool = False) -> jax.Array:
    """Euclidean norm along ``axis``; its gradient is 0 (not NaN) at the zero vector."""
    return safe_sqrt(jnp.sum(v * v, axis=axis, keepdims=keepdims))


def quat_exp(omega: jnp.ndarray, dt) -> jnp.ndarray:
    """(..., 4) the unit quaternion of the rotation by the vector ``omega dt`` (axis times angle), ``w x y z``;
    its value and gradient are finite at ``omega = 0`` (a plain norm's gradient is NaN there)."""
    norm2 = jnp.sum(omega * omega, axis=-1)
    small = norm2 * dt * dt <= 1e-16
    theta = jnp.sqrt(jnp.where(small, 1.0, norm2)) * dt
    theta = jnp.where(small, 0.0, theta)
    half = 0.5 * theta
    # sin(half)/theta with its series below 1e-8 rad.
    safe = jnp.where(small, 1.0, theta)
    sinc = jnp.where(small, 0.5 - norm2 * dt * dt / 48.0, jnp.sin(half) / safe)
    return jnp.concatenate([jnp.cos(half)[..., None], (sinc * dt)[..., None] * omega], -1)


def quat_integrate(quat: jnp.ndarray, omega_world: jnp.ndarray, dt) -> jnp.ndarray:
    """Rotate ``quat`` by the world-frame angular velocity ``omega_world`` over ``dt`` (exponential map).

    Returns the normalized quaternion ``exp(omega dt / 2) * quat``.
    """
    out = quat_multiply(quat_exp(omega_world, dt), quat)
    return out / jnp.linalg.norm(out, axis=-1, keepdims=True)


def quat_integrate_local(quat: jnp.ndarray, omega_body: jnp.ndarray, dt) -> jnp.ndarray:
    """Rotate ``quat`` by the angular velocity ``omega_body``, given in the rotated (body) frame, over ``dt``:
    the normalized ``quat * exp(omega dt / 2)`` (a ball joint's update, as MuJoCo's ``mj_integratePos``)."""
    out = quat_multiply(quat, quat_exp(omega_body, dt))
    return out / jnp.linalg.norm(out, axis=-1, keepdims=True)


def quat_angle_axis(quat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The rotation of a quaternion ``w x y z`` (not necessarily normalized) as ``(angle (...), axis (..., 3))``:
    the angle of the shortest rotation, in ``[0, pi]`` [rad], and its unit axis (the same in the rotated and the
    fixed frame; ``q`` and ``-q`` give the same). At the identity the axis is zero, and value and gradients are
    finite everywhere (:func:`safe_norm`)."""
    sign = jnp.where(quat[..., :1] < 0, -1.0, 1.0)
    w, xyz = sign[..., 0] * quat[..., 0], sign * quat[..., 1:]
    s = safe_norm(xyz)
    angle = 2.0 * jnp.arctan2(s, w)
    return angle, safe_div(1.0, s)[..., None] * xyz


def quat_rotation_vector(quat: jnp.ndarray) -> jnp.ndarray:
    """(..., 3) the rotation vector (angle times unit axis, the angle in ``[0, pi]`` [rad]) of a unit quaternion
    ``w x y z``, ``q`` and ``-q`` alike. Smooth through the identity, where its derivative is ``2 I`` on
    ``x y z`` (the ratio ``angle / sin(angle / 2)`` by its series there; :func:`quat_angle_axis`'s axis has no
    derivative at the identity)."""
    sign = jnp.where(quat[..., :1] < 0, -1.0, 1.0)
    w, xyz = sign[..., 0] * quat[..., 0], sign * quat[..., 1:]
    s2 = jnp.sum(xyz * xyz, axis=-1)
    small = s2 < 1e-12
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    ratio = jnp.where(small, 2.0 / w * (1.0 - s2 / (3.0 * w * w)), 2.0 * jnp.arctan2(s, w) / s)
    return ratio[..., None] * xyz


def take_static(x: jax.Array, index: tuple[int, ...], axis: int = 0) -> jax.Array:
    """``jnp.take(x, index, axis)`` for a static ``index``, in slices: one per run of evenly spaced increasing
    entries (a strided slice) or of one repeated entry (a broadcast), joined. A quadruped's bodies back in order
    from its levels are 5 runs. A gather when the runs are more than :data:`TAKE_RUNS` (a CPU gathers one element
    at a time: several times slower)."""
    runs = _strided_runs(tuple(int(i) for i in index))
    if len(runs) > TAKE_RUNS:
        return jnp.take(x, np.asarray(index, dtype=np.int32), axis)
    axis = axis % x.ndim
    pieces = []
    for start, count, step in runs:
        if step:
            pieces.append(jax.lax.slice_in_dim(x, start, start + (count - 1) * step + 1, step, axis))
        else:
            one = jax.lax.slice_in_dim(x, start, start + 1, 1, axis)
            pieces.append(jnp.broadcast_to(one, x.shape[:axis] + (count,) + x.shape[axis + 1 :]))
    return pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis)


#: Most slices :func:`take_static` joins before it gathers instead.
TAKE_RUNS = 16


def _strided_runs(index: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """``index`` split greedily into maximal runs ``(start, count, step)`` of evenly spaced entries: increasing
    (``step > 0``) or repeated (``step`` 0); a decreasing pair starts a new run."""
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(index):
        step = index[i + 1] - index[i] if i + 1 < len(index) else 0
        step = step if step >= 0 else 0
        j = i
        while j + 1 < len(index) and index[j + 1] - index[j] == step:
            j += 1
        runs.append((index[i], j - i + 1, step))
        i = j + 1
    return runs


#: Largest number of velocities whose elimination is unrolled on a GPU (above it, a ``fori_loop`` there too).
UNROLL_LIMIT = 64


def gauss_jordan(a: jax.Array, b: jax.Array) -> jax.Array:
    """``a^-1 b`` by Gauss-Jordan elimination without pivoting, in plain array operations (no LAPACK).

    ``a`` is the effective mass: the symmetric positive-definite mass matrix plus positive diagonal terms
    and the velocity-dependent forces' term (``h D`` or ``(h/2) D``), a small non-symmetric perturbation
    while ``h`` times the speeds is small. Elimination
    without pivoting is stable for such matrices (every leading block stays positive definite for the
    symmetric part). Each of the ``n`` steps scales the pivot row and subtracts it from every other row of
    ``[a | b]``: ``n (n + k) n`` multiply-adds. The steps are a ``fori_loop`` on the CPU (one compiled step
    whatever ``n``: each step is one small kernel either way, and the loop compiles in a fraction of the
    time) and unrolled elsewhere for ``n <= UNROLL_LIMIT`` (on a GPU a loop's trips are launches and break
    the step's CUDA graph); chosen when the program is lowered, the same arithmetic either way. Plain
    operations batch and differentiate like any others, and avoid jaxlib 0.10.2's batched LAPACK kernels,
    which can deadlock a small CPU (``docs/design/cpu-deadlock.md``).

    Args:
        a: (n, n) the matrix.
        b: (n, k) the right-hand sides.

    Returns:
        (n, k) the solution.
    """
    n = a.shape[0]
    aug = jnp.concatenate([a, b], axis=1)
    if n == 0 or n > UNROLL_LIMIT:
        aug = _eliminate_looped(aug)
    else:
        aug = jax.lax.platform_dependent(aug, cpu=_eliminate_looped, default=_eliminate_unrolled)
    return aug[:, n:]


def _eliminate(i, aug: jax.Array) -> jax.Array:
    """Step ``i`` of the elimination of ``aug = [a | b]`` (n, n + k): pivot row ``i`` scaled, taken from the rest."""
    pivot_row = jax.lax.dynamic_index_in_dim(aug, i, keepdims=False)
    pivot_row = pivot_row / jax.lax.dynamic_index_in_dim(pivot_row, i, keepdims=False)
    column = jax.lax.dynamic_index_in_dim(aug, i, axis=1, keepdims=False)
    factors = column.at[i].set(0.0)
    aug = aug - factors[:, None] * pivot_row[None, :]
    return jax.lax.dynamic_update_index_in_dim(aug, pivot_row, i, axis=0)


#: Steps of the elimination per trip of its CPU loop: each trip copies the (n, n + k) array once (XLA's in-place
#: update of the pivot row), so three steps a trip take about half the time of one (the quadruped's 18 velocities).
LOOP_UNROLL = 3


def _eliminate_looped(aug: jax.Array) -> jax.Array:
    """Every step of the elimination as a ``fori_loop`` (:data:`LOOP_UNROLL` steps a trip)."""
    return jax.lax.fori_loop(0, aug.shape[0], _eliminate, aug, unroll=LOOP_UNROLL)


def _eliminate_unrolled(aug: jax.Array) -> jax.Array:
    """Every step of the elimination, unrolled."""
    for i in range(aug.shape[0]):
        aug = _eliminate(i, aug)
    return aug
