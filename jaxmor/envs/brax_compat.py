"""A compatibility shim that lets Brax 0.14's trainers run on JAX 0.10.

Brax 0.14.2 (the newest release) calls ``jax.device_put_replicated`` in its PPO, APG and SAC trainers and in
``brax.training.pmap``; JAX removed that function (its attribute now raises ``AttributeError`` pointing to
``jax.device_put``). :func:`install` puts back a function of the same contract, built on ``jax.device_put``: the
tree's every leaf stacked along a new leading axis of one entry per device, that entry on that device, as one array
sharded over the devices (what ``jax.pmap`` takes). It touches nothing where JAX still has the function.

:class:`jaxmor.envs.brax.BraxEnv` installs it when it is constructed, so a user of the adapter never calls it. It is
the only place where jaxmor sets an attribute of another package (docs/training.md, "Trainers").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

__all__ = ["device_put_replicated", "install"]


def device_put_replicated(x: Any, devices: Sequence[jax.Device]) -> Any:
    """``x``'s every leaf copied onto each of ``devices``, stacked along a new leading axis.

    Args:
        x: a pytree of arrays.
        devices: the devices, one entry of the new axis each.

    Returns:
        The pytree whose leaves have shape ``(len(devices), *leaf.shape)``, sharded one entry per device.
    """
    devices = list(devices)
    mesh = jax.sharding.Mesh(np.asarray(devices), ("replica",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("replica"))

    def put(leaf):
        leaf = jax.numpy.asarray(leaf)
        pieces = [jax.device_put(leaf[None], d) for d in devices]
        return jax.make_array_from_single_device_arrays((len(devices), *leaf.shape), sharding, pieces)

    return jax.tree.map(put, x)


def _missing(name: str) -> bool:
    try:
        getattr(jax, name)
    except AttributeError:
        return True
    return False


def install() -> bool:
    """Put :func:`device_put_replicated` on the ``jax`` module where JAX no longer has it.

    Returns:
        True when it was installed now, False when JAX has the function (its own, or this one already).
    """
    if not _missing("device_put_replicated"):
        return False
    jax.device_put_replicated = device_put_replicated
    return True
