"""What the compiled step contains, read from XLA's programs, and a big batched gradient that must finish.

Why: jaxlib 0.10.2's batched LAPACK kernels on CPU (``lu_solve`` under ``vmap`` inside ``jacfwd`` of a
rollout) deadlocked; the step was rewritten to solve its small systems in plain array ops. A later change
that brings back ``jnp.linalg.solve``, ``cho_solve``, ``inv`` and the like would not fail any numerical
test; it would hang a batched gradient some day. So:

(a) the step, its ``vmap`` over 4 worlds, the ``jax.grad`` of a 3-step rollout (w.r.t. the initial ``q``
    and the motor resistance and torque constant) and that gradient ``vmap``-ed over 4 worlds, for the
    quadruped on the ground in float32, must contain no LAPACK custom call: neither in the lowered
    StableHLO (``stablehlo.custom_call @lapack_...``) nor in XLA's optimized HLO
    (``custom_call_target="lapack_..."``; jaxlib 0.10.2 names them ``lapack_sgetrf_ffi``,
    ``lapack_strsm_ffi``, ``lapack_spotrf_ffi``, ...). A failure lists every custom call found. A sanity
    test first shows the check can fail: a jitted batched 18x18 ``jnp.linalg.solve`` does call LAPACK.
(b) a 64-world ``vmap`` of the gradient of a 50-step rollout w.r.t. each world's motor resistance and
    torque constant completes and is finite, in a subprocess with a generous timeout, so that a
    deadlock fails the test instead of hanging the run.

No timing assertions. The programs of (a) are compiled once per module (a module-scoped fixture).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from models import QUADRUPED_URDF, ROOT, quadruped_standing_q

import jaxmor

WORLDS = 4
ROLLOUT_STEPS = 3
DT = 0.002

_HLO_CUSTOM_CALL = re.compile(r'custom_call_target="([^"]+)"')
_MLIR_CUSTOM_CALL = re.compile(r'custom_call\s+@([\w.$\-]+)|call_target_name\s*=\s*"([^"]+)"')


# The programs are compiled with LLVM's optimizations off (``xla_backend_optimization_level=0``), which takes about
# 40% less time. The HLO that is read is the same: the option sets the optimization of the machine code XLA emits
# for the finished HLO, after every HLO pass; a custom call is an HLO instruction, so the machine code cannot add
# one. Checked with jaxlib 0.10.2: the compiled HLO text of each of the four programs below is identical, byte for
# byte, at the default level and at level 0.
_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}


def custom_calls(lowered) -> dict[str, set[str]]:
    """The custom-call targets of a ``jax.stages.Lowered``: in its StableHLO and in the compiled HLO."""
    mlir = {a or b for a, b in _MLIR_CUSTOM_CALL.findall(lowered.as_text())}
    hlo = set(_HLO_CUSTOM_CALL.findall(lowered.compile(compiler_options=_COMPILER_OPTIONS).as_text()))
    return {"stablehlo": mlir, "hlo": hlo}


def lapack(calls: dict[str, set[str]]) -> set[str]:
    return {name for names in calls.values() for name in names if "lapack" in name.lower()}


def _float32(tree):
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


@pytest.fixture(scope="module")
def world():
    """The quadruped on the ground in float32 (dt 2 ms), standing 2 cm above the ground, and its State."""
    model = _float32(jaxmor.add_ground(jaxmor.load_urdf(QUADRUPED_URDF)))
    model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(DT, jnp.float32)))
    state = jaxmor.init_state(model, jnp.asarray(quadruped_standing_q(model, 0.54), jnp.float32))
    assert state.q.dtype == jnp.float32 and model.body_mass.dtype == jnp.float32
    return model, state


def _loss(model, state):
    """Sum of the final velocities of a 3-step rollout as a function of (q, resistance, torque constant)."""

    def loss(q, resistance, torque_constant):
        motor = model.actuators.motor.replace(resistance=resistance, torque_constant=torque_constant)
        m = model.replace(actuators=model.actuators.replace(motor=motor))
        final, _ = jaxmor.rollout(m, state.replace(q=q), n_steps=ROLLOUT_STEPS)
        return jnp.sum(final.u)

    return loss


@pytest.fixture(scope="module")
def programs(world):
    """name -> the custom calls of that program (each lowered and compiled once)."""
    model, state = world
    motor = model.actuators.motor
    loss = _loss(model, state)
    grad = jax.grad(loss, argnums=(0, 1, 2))
    args = (state.q, motor.resistance, motor.torque_constant)

    def batch(x):
        return jnp.array(jnp.broadcast_to(x, (WORLDS, *x.shape)))

    states = jax.tree.map(batch, state)
    lowered = {
        "step": jax.jit(jaxmor.step).lower(model, state),
        f"step_vmap{WORLDS}": jax.jit(jax.vmap(jaxmor.step, in_axes=(None, 0))).lower(model, states),
        "grad_rollout": jax.jit(grad).lower(*args),
        f"grad_rollout_vmap{WORLDS}": jax.jit(jax.vmap(grad)).lower(*(batch(a) for a in args)),
    }
    return {name: custom_calls(low) for name, low in lowered.items()}


def test_the_check_detects_lapack():
    """A jitted batched 18x18 solve in float32 calls LAPACK (getrf): the check below can fail."""
    a = jnp.eye(18, dtype=jnp.float32) * 4.0 + jnp.ones((WORLDS, 18, 18), jnp.float32)
    b = jnp.ones((WORLDS, 18, 1), jnp.float32)
    calls = custom_calls(jax.jit(jnp.linalg.solve).lower(a, b))
    found = lapack(calls)
    assert found, f"no LAPACK custom call detected in a batched solve; custom calls: {calls}"
    assert any("getrf" in name for name in found), found


@pytest.mark.parametrize("name", ["step", f"step_vmap{WORLDS}", "grad_rollout", f"grad_rollout_vmap{WORLDS}"])
def test_no_lapack_in_the_compiled_step(programs, name):
    calls = programs[name]
    assert not lapack(calls), (
        f"{name} calls LAPACK: {sorted(lapack(calls))}; all custom calls: "
        f"StableHLO {sorted(calls['stablehlo'])}, compiled HLO {sorted(calls['hlo'])}"
    )


_BIG_GRADIENT = """
import json

import jax
import jax.numpy as jnp
import numpy as np

import jaxmor

G, K, DT = {worlds}, {steps}, 0.002
model = jaxmor.add_ground(jaxmor.load_urdf({urdf!r}))
model = model.replace(opt=model.opt.replace(timestep=jnp.asarray(DT, model.opt.timestep.dtype)))
q = jnp.asarray(jaxmor.robots.quadruped_standing_q(model), model.opt.timestep.dtype).at[2].set(0.54)
state = jaxmor.init_state(model, q)
motor = model.actuators.motor
rng = np.random.default_rng(0)
factor = jnp.asarray(rng.uniform(0.9, 1.1, (2, G, model.na)), q.dtype)
resistance, torque_constant = motor.resistance * factor[0], motor.torque_constant * factor[1]
phase = rng.uniform(0.0, 2 * np.pi, (G, 1, model.na))
t = np.arange(K)[None, :, None] * DT
controls = jnp.asarray(10.0 * np.sin(2 * np.pi * 2.0 * t + phase), q.dtype)  # (G, K, na) [Nm]


def loss(r, kt, c):
    m = model.replace(actuators=model.actuators.replace(motor=motor.replace(resistance=r, torque_constant=kt)))
    final, _ = jaxmor.rollout(m, state, c)
    return jnp.sum(final.u)


grads = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1))))(resistance, torque_constant, controls)
grads = [np.asarray(jax.block_until_ready(g)) for g in grads]
print("RESULT " + json.dumps({{
    "shapes": [list(g.shape) for g in grads],
    "dtypes": [str(g.dtype) for g in grads],
    "finite": bool(all(np.all(np.isfinite(g)) for g in grads)),
    "abs_sum": [float(np.sum(np.abs(g))) for g in grads],
}}))
"""


@pytest.mark.slow
def test_a_64_world_gradient_of_a_50_step_rollout_completes():
    """vmap over 64 worlds of grad of a 50-step rollout w.r.t. each world's R and Kt: finishes (no deadlock)."""
    worlds, steps = 64, 50
    code = textwrap.dedent(_BIG_GRADIENT.format(worlds=worlds, steps=steps, urdf=str(QUADRUPED_URDF)))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the batched gradient did not finish in {e.timeout} s (a deadlock?)")
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(lines[-1][len("RESULT ") :])
    na = 12
    assert result["shapes"] == [[worlds, na], [worlds, na]]
    assert result["dtypes"] == ["float32", "float32"]  # a fresh process: jaxmor's default dtype
    assert result["finite"], result
    # Not identically zero: the 10 Nm torques saturate the motors, whose bounds depend on R and Kt.
    assert np.all(np.isfinite(result["abs_sum"])) and min(result["abs_sum"]) > 0, result
