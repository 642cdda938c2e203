"""A learned torque residual inside the motor region: ``tau_m = clip_region(tau_cmd + f_theta(history))``.

``f_theta`` is a small multilayer perceptron shared by the actuators it is active on. Its input, per
actuator, is the last ``history`` steps (the current one first) of three motor-side signals, each divided
by its scale (:attr:`ResidualNetwork.input_scale`): the commanded motor torque before the residual
``tau_a / G`` [Nm], the motor speed ``T u`` [rad/s] and the motor angle ``T q`` [rad] relative to the
current one (so the input does not depend on where the joint is, only on how it moved). Its output, times
:attr:`ResidualNetwork.output_scale` [Nm], is added to the commanded motor torque, and the sum is clipped to
the motor operating region like any command (:func:`jaxmor.actuation.drive.actuate`): whatever the
network says, the motor delivers only what its region admits. The past steps' signals are carried in
:attr:`jaxmor.State.actuator_history`.

The formulation, its limits and how it is fitted (:func:`jaxmor.sysid.fit` with ``"residual"`` among the
parameters) are in ``docs/design/drive-train.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmor.fields import leaf

#: Signals per step of history: commanded motor torque, motor speed, motor angle.
SIGNALS = ("commanded_motor_torque", "motor_speed", "motor_angle")


@struct.dataclass
class ResidualNetwork:
    """A learned torque residual (``F = 3 history`` inputs, ``W`` units per hidden layer, ``L + 1`` hidden layers).

    Attributes:
        history: steps of history the network reads, the current one included (static; 0: no residual).
        active: per actuator, whether the residual acts on it (static).
        input_scale: (3,) the scales the signals are divided by: torque [Nm], speed [rad/s], angle moved [rad].
        output_scale: () the torque one unit of output means [Nm], at the motor.
        w_in: (F, W) first layer's weights, the features in order (step 0's three signals, step 1's, ...).
        b_in: (W,) its biases.
        w_hidden: (L, W, W) the further hidden layers' weights.
        b_hidden: (L, W) their biases.
        w_out: (W,) output weights.
        b_out: () output bias.
    """

    input_scale: jax.Array = leaf((3,))
    output_scale: jax.Array = leaf(())
    w_in: jax.Array = leaf(("nf", "width"))
    b_in: jax.Array = leaf(("width",))
    w_hidden: jax.Array = leaf(("extra", "width", "width"))
    b_hidden: jax.Array = leaf(("extra", "width"))
    w_out: jax.Array = leaf(("width",))
    b_out: jax.Array = leaf(())
    history: int = struct.field(pytree_node=False, default=0)
    active: tuple[bool, ...] = struct.field(pytree_node=False, default=())

    @property
    def enabled(self) -> bool:
        """Whether the residual acts on any actuator (static)."""
        return self.history > 0 and any(self.active)


def no_residual(na: int = 0) -> ResidualNetwork:
    """The residual of a model of ``na`` motor actuators without one: no history, no weights (JAX's default
    floating dtype)."""
    zero = jnp.zeros
    return ResidualNetwork(
        input_scale=jnp.ones(len(SIGNALS)),
        output_scale=zero(()),
        w_in=zero((0, 0)),
        b_in=zero((0,)),
        w_hidden=zero((0, 0, 0)),
        b_hidden=zero((0, 0)),
        w_out=zero((0,)),
        b_out=zero(()),
        history=0,
        active=(False,) * na,
    )


def history_length(residual: ResidualNetwork) -> int:
    """Past steps a State carries for the residual: ``history - 1`` (the current step is computed), or 0."""
    return max(residual.history - 1, 0)


def signals(transmission: jax.Array, gear: jax.Array, commanded: jax.Array, u: jax.Array, q_joint: jax.Array):
    """(na, 3) the residual's signals now: commanded motor torque ``tau_a / G`` [Nm] (0 where ``G`` is not
    positive), motor speed ``T u`` [rad/s] and motor angle ``T q`` [rad] (``q_joint``: (nv,) the joint
    coordinates per velocity index)."""
    ok = gear > 0
    torque = jnp.where(ok, commanded / jnp.where(ok, gear, 1.0), 0.0)
    return jnp.stack([torque, transmission @ u, transmission @ q_joint], axis=-1)


def residual_torque(residual: ResidualNetwork, now: jax.Array, past: jax.Array) -> jax.Array:
    """(na,) the residual motor torque [Nm] (zero on the actuators it is not active on).

    Args:
        residual: the network.
        now: (na, 3) the signals of this step (:func:`signals`).
        past: (na, history - 1, 3) those of the previous steps, the latest first (:attr:`State.actuator_history`).
    """
    dtype = now.dtype
    x = jnp.concatenate([now[:, None, :], past], axis=1)
    x = x.at[..., 2].add(-now[:, None, 2]) / jnp.asarray(residual.input_scale, dtype)
    x = jnp.tanh(x.reshape(now.shape[0], -1) @ jnp.asarray(residual.w_in, dtype) + jnp.asarray(residual.b_in, dtype))
    w_hidden, b_hidden = jnp.asarray(residual.w_hidden, dtype), jnp.asarray(residual.b_hidden, dtype)
    for layer in range(w_hidden.shape[0]):
        x = jnp.tanh(x @ w_hidden[layer] + b_hidden[layer])
    out = (x @ jnp.asarray(residual.w_out, dtype) + jnp.asarray(residual.b_out, dtype)) * residual.output_scale
    return jnp.where(np.asarray(residual.active, bool), out, 0.0)


def next_history(now: jax.Array, past: jax.Array) -> jax.Array:
    """(na, history - 1, 3) the history after this step: this step's signals first, the oldest dropped."""
    return jnp.concatenate([now[:, None, :], past], axis=1)[:, : past.shape[1]]


def init_residual(
    key: jax.Array,
    na: int,
    *,
    history: int = 3,
    width: int = 16,
    layers: int = 1,
    input_scale=(1.0, 10.0, 3.14159),
    output_scale: float = 1.0,
    active=None,
    dtype=jnp.float32,
) -> ResidualNetwork:
    """A residual network with random hidden weights and a zero output layer (so it starts as no residual).

    Args:
        key: a JAX PRNG key.
        na: number of motor actuators of the model.
        history: steps of history, ``>= 1``.
        width: units per hidden layer, ``>= 1``.
        layers: hidden layers, ``>= 1``.
        input_scale: scales of torque [Nm], speed [rad/s] and angle [rad], each ``> 0``.
        output_scale: the torque [Nm] of one unit of output.
        active: per actuator bools (default: all).
        dtype: the model's floating dtype.

    Returns:
        The :class:`ResidualNetwork`.
    """
    features = len(SIGNALS) * history
    k_in, k_hidden = jax.random.split(key)
    w_in = jax.random.normal(k_in, (features, width), dtype) / np.sqrt(features)
    w_hidden = jax.random.normal(k_hidden, (layers - 1, width, width), dtype) / np.sqrt(width)
    return ResidualNetwork(
        input_scale=jnp.asarray(input_scale, dtype),
        output_scale=jnp.asarray(output_scale, dtype),
        w_in=w_in,
        b_in=jnp.zeros((width,), dtype),
        w_hidden=w_hidden,
        b_hidden=jnp.zeros((layers - 1, width), dtype),
        w_out=jnp.zeros((width,), dtype),
        b_out=jnp.zeros((), dtype),
        history=history,
        active=tuple(bool(a) for a in ((True,) * na if active is None else active)),
    )
