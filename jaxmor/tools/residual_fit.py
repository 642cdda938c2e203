"""What :func:`jaxmor.sysid.fit` needs to fit a learned torque residual (:mod:`jaxmor.actuation.residual`).

The network's weights are fitted as they are (not in log space: they have no sign), as one block of the
parameter vector after the motor constants; the scales stay the model's. A window starts from the
recorded state and from the history the recording gives before it (the residual's signals at the earlier
samples; before the first sample, the first state held with no command, as :func:`jaxmor.init_state` makes it).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.actuation.drive import residual_signals
from jaxmor.actuation.residual import history_length
from jaxmor.types import Model, State

#: The name of the residual's weights among :func:`jaxmor.sysid.fit`'s parameters.
RESIDUAL = "residual"
#: The network's fitted leaves, in the order of the flat vector.
WEIGHTS = ("w_in", "b_in", "w_hidden", "b_hidden", "w_out", "b_out")


def flat_weights(model: Model) -> jax.Array:
    """(n,) the model's residual weights as one vector (:data:`WEIGHTS` order)."""
    net = model.actuators.residual
    return jnp.concatenate([jnp.ravel(getattr(net, name)) for name in WEIGHTS])


def with_weights(model: Model, flat: jax.Array) -> Model:
    """``model`` with its residual's weights taken from ``flat`` (:func:`flat_weights`' layout)."""
    net = model.actuators.residual
    leaves, start = {}, 0
    for name in WEIGHTS:
        shape = jnp.shape(getattr(net, name))
        size = int(np.prod(shape))
        leaves[name] = flat[start : start + size].reshape(shape)
        start += size
    return model.replace(actuators=model.actuators.replace(residual=net.replace(**leaves)))


def window_histories(model: Model, template: State, recordings: Sequence, window: int) -> jax.Array:
    """(n_windows, na, history - 1, 3) each window's starting history, in the windows' order (each recording's
    windows of ``window`` steps from its start, recordings in order)."""
    length = history_length(model.actuators.residual)
    dtype = template.u.dtype

    def signals_at(q, u, torque):
        return residual_signals(model, template.replace(q=q, u=u, actuator_torque=torque))

    out = []
    for r in recordings:
        q, u, torque = (jnp.asarray(x, dtype) for x in (r.q, r.u, r.torque))
        held = signals_at(q[0], u[0], jnp.zeros_like(torque[0]))
        sampled = jax.vmap(signals_at)(q[:-1], u[:-1], torque)
        padded = jnp.concatenate([jnp.broadcast_to(held, (length,) + held.shape), sampled])  # sample k at k + length
        for start in range(0, torque.shape[0] - window + 1, window):
            latest_first = padded[start : start + length][::-1]
            out.append(jnp.moveaxis(latest_first, 0, 1))
    return jnp.stack(out)


def residual_finding(alone: np.ndarray) -> str:
    """The sentence on the residual's weights, from which of them no unidentified direction involves."""
    n, free = alone.size, int(alone.sum())
    if free == n:
        return f"{RESIDUAL}: each of its {n} weights is determined by the data."
    return (
        f"{RESIDUAL}: {n - free} of its {n} weights move along directions the data do not determine (a network has "
        "more weights than the data need: its prediction, not each weight, is what the fit identifies)."
    )
