"""A trained policy's deterministic action, and its file format (NumPy arrays and JSON, no pickle).

A :class:`Policy` computes the deterministic action of a policy trained with Brax's PPO networks
(``brax.training.agents.ppo.networks.make_ppo_networks`` with ``running_statistics.normalize`` as the observation
preprocessor): what ``make_inference_fn(networks)(params, deterministic=True)`` returns, without Brax.
:func:`policy_from_brax` makes one from the trained parameters; :func:`save_policy` and :func:`load_policy` keep it
in a folder; :func:`jaxmor.train.onnx.export_onnx` writes it as an ONNX model.

The action, for an observation ``o`` of ``observation_size`` entries (any leading batch axes)::

    h_0 = (o - observation_mean) / observation_std
    h_i = act(h_{i-1} @ kernel_{i-1} + bias_{i-1})      i = 1 .. k - 1 (the hidden layers)
    y   = h_{k-1} @ kernel_{k-1} + bias_{k-1}            (the output layer: no activation)
    loc = y[..., :action_size]
    action = tanh(loc) if squash else loc

``act`` is one of :data:`ACTIVATIONS`: ``"swish"`` (``x * sigmoid(x)``, flax's ``swish``, Brax PPO's default),
``"relu"``, ``"tanh"``, ``"elu"`` (``alpha = 1``). The output layer has ``2 * action_size`` outputs when the
network outputs a location and a scale per action (Brax's default ``distribution_type="tanh_normal"``, whose
mode is ``tanh(loc)``: ``squash`` true, the action lies in [-1, 1]) or ``action_size`` when it outputs the location
only (Brax's ``"normal"``, a state-independent noise std kept apart from the network, whose mode is ``loc``
itself: ``squash`` false, the action is not bounded). The scale and the noise std do not enter the
deterministic action and are not kept.

Format, version 1: a folder holding two files.

``policy.json``, a UTF-8 JSON object with exactly these entries:

* ``"format"``: ``"jaxmor.policy"``; ``"version"``: ``1``;
* ``"activation"``: the hidden layers' activation (a name of :data:`ACTIVATIONS`);
* ``"observation_size"``, ``"action_size"``: positive integers;
* ``"layers"``: the layers' output sizes in order, ``[n_1, ..., n_k]``; ``n_k`` is ``action_size`` or
  ``2 * action_size``;
* ``"squash"``: whether the action is ``tanh(loc)`` (true) or ``loc`` (false);
* ``"config"``: a JSON object the trainer writes (the environment's settings, so that ``jaxmor play`` can
  rebuild the environment); this module keeps it and does not read it.

``policy.npz``, a NumPy ``.npz`` archive (uncompressed, each array written with ``allow_pickle=False``) holding
exactly these float32 or float64 arrays:

* ``observation_mean``, ``observation_std``: ``(observation_size,)``, in the observation's units; every std
  positive (Brax's running statistics clip it to at least 1e-6);
* ``layer_{i}/kernel``: ``(n_i_in, n_{i+1})`` and ``layer_{i}/bias``: ``(n_{i+1},)`` for ``i = 0 .. k - 1``,
  where ``n_0_in = observation_size`` and ``n_i_in = n_i`` (``layers[i - 1]``) after.

A policy folder is untrusted input: :func:`load_policy` reads the JSON (at most :data:`MAX_FILE_BYTES`) and checks
it, then reads each array's ``.npy`` header inside the archive and checks the entries' names, dtypes and shapes
against the JSON before it reads any array, and reads the arrays with ``allow_pickle=False``: nothing in a policy
folder runs code. Every problem is a :class:`~jaxmor.ModelError` naming the file (as
:func:`jaxmor.load_checkpoint` reports a damaged checkpoint).
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from jaxmor.errors import ArgumentError, ModelError, brief_repr
from jaxmor.io.files import writing

__all__ = [
    "ACTIVATIONS",
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_FILE_BYTES",
    "Policy",
    "check_policy",
    "load_policy",
    "policy_from_brax",
    "save_policy",
]

#: The format's name and version, written into every ``policy.json``.
FORMAT = "jaxmor.policy"
FORMAT_VERSION = 1
#: The file names in a policy folder.
JSON_NAME = "policy.json"
ARRAYS_NAME = "policy.npz"
#: The largest ``policy.json`` or ``policy.npz`` (and the most bytes the archive's arrays may hold together) that
#: :func:`load_policy` reads: 64 MiB (a policy of a few 256-wide layers is a few hundred KB).
MAX_FILE_BYTES = 64 * 2**20
#: The hidden layers' activations, by the name the format stores (Brax's ``networks.ACTIVATION`` names).
ACTIVATIONS = {"swish": jax.nn.silu, "relu": jax.nn.relu, "tanh": jnp.tanh, "elu": jax.nn.elu}
_ENTRIES = {"format", "version", "activation", "observation_size", "action_size", "layers", "squash", "config"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@flax.struct.dataclass
class Policy:
    """A trained policy's deterministic action (the module docstring has the computation).

    Attributes:
        observation_mean: ``(observation_size,)``, the observation normalizer's mean (observation units).
        observation_std: ``(observation_size,)``, its standard deviation (observation units, positive).
        kernels: the layers' weights, a tuple of ``(n_in, n_out)`` arrays (layer ``i``'s ``n_out`` is layer
            ``i + 1``'s ``n_in``; the last one's ``n_out`` is ``action_size`` or ``2 * action_size``).
        biases: the layers' biases, a tuple of ``(n_out,)`` arrays.
        action_size: the number of actions (static).
        activation: the hidden layers' activation, a name of :data:`ACTIVATIONS` (static).
        squash: whether the action is ``tanh(loc)``, in [-1, 1] (Brax's ``tanh_normal``), or ``loc`` (Brax's
            ``normal``) (static).
    """

    observation_mean: jax.Array
    observation_std: jax.Array
    kernels: tuple[jax.Array, ...]
    biases: tuple[jax.Array, ...]
    action_size: int = flax.struct.field(pytree_node=False)
    activation: str = flax.struct.field(pytree_node=False, default="swish")
    squash: bool = flax.struct.field(pytree_node=False, default=True)

    @property
    def observation_size(self) -> int:
        """The number of observation entries."""
        return int(np.shape(self.observation_mean)[-1])

    @property
    def layers(self) -> list[int]:
        """The layers' output sizes, in order."""
        return [int(np.shape(b)[-1]) for b in self.biases]

    def __call__(self, observation: jax.Array) -> jax.Array:
        """The deterministic action. Jittable and vmappable; batched over leading axes.

        Args:
            observation: ``(..., observation_size)``, the environment's observation.

        Returns:
            ``(..., action_size)``: the action, in [-1, 1] when ``squash`` (the environment's action units).

        Raises:
            ArgumentError: ``observation``'s last axis is not ``observation_size`` long.
        """
        x = jnp.asarray(observation)
        if x.ndim < 1 or x.shape[-1] != self.observation_size:
            raise ArgumentError(f"Policy: observation must have shape (..., {self.observation_size}), got {x.shape}")
        h = (x - self.observation_mean) / self.observation_std
        last = len(self.kernels) - 1
        for i, (kernel, bias) in enumerate(zip(self.kernels, self.biases, strict=True)):
            h = h @ kernel + bias
            if i < last:
                h = ACTIVATIONS[self.activation](h)
        loc = h[..., : self.action_size]
        return jnp.tanh(loc) if self.squash else loc


def check_policy(policy: Policy, where: str) -> None:
    """Check that ``policy`` is a :class:`Policy` whose arrays fit together.

    Args:
        policy: the policy.
        where: the calling function's name, for the message.

    Raises:
        ArgumentError: ``policy`` is not a Policy, or an activation, an array's shape or dtype (float32 or float64),
            the number of kernels and biases, or the output size does not fit (the message names the field).
    """
    if not isinstance(policy, Policy):
        raise ArgumentError(f"{where}: policy must be a jaxmor.train.Policy, got {type(policy).__name__}")
    if policy.activation not in ACTIVATIONS:
        raise ArgumentError(
            f"{where}: policy.activation must be one of {sorted(ACTIVATIONS)}, got {policy.activation!r}"
        )
    size = np.shape(policy.observation_mean)
    if len(size) != 1 or size[0] < 1 or np.shape(policy.observation_std) != size:
        raise ArgumentError(
            f"{where}: policy.observation_mean and observation_std must have one shape (observation_size,), got "
            f"{size} and {np.shape(policy.observation_std)}"
        )
    kernels, biases = policy.kernels, policy.biases
    if not isinstance(kernels, tuple) or not isinstance(biases, tuple) or not kernels or len(kernels) != len(biases):
        raise ArgumentError(f"{where}: policy.kernels and policy.biases must be tuples of one length (at least 1)")
    n_in = size[0]
    for i, (kernel, bias) in enumerate(zip(kernels, biases, strict=True)):
        n_out = np.shape(bias)[0] if np.ndim(bias) == 1 else -1
        if np.shape(kernel) != (n_in, n_out) or n_out < 1:
            raise ArgumentError(
                f"{where}: policy layer {i}: kernel {np.shape(kernel)} and bias {np.shape(bias)} must be ({n_in}, n) "
                "and (n,)"
            )
        n_in = n_out
    a = policy.action_size
    if type(a) is not int or a < 1 or n_in not in (a, 2 * a):
        raise ArgumentError(
            f"{where}: policy.action_size {brief_repr(a)} must be a positive int, with the last layer's {n_in} "
            "outputs action_size or 2 * action_size"
        )
    for leaf in jax.tree.leaves(policy):
        if np.dtype(leaf.dtype) not in _FLOATS:
            raise ArgumentError(f"{where}: the policy's arrays must be float32 or float64, got {leaf.dtype}")


def _brax_dense(layer, where: str) -> tuple[jax.Array, jax.Array]:
    """A flax ``Dense`` layer's ``(kernel, bias)``.

    Raises:
        ArgumentError: ``layer`` is not a mapping with a kernel and a bias (a layer without bias).
    """
    if not isinstance(layer, Mapping) or set(layer) != {"kernel", "bias"}:
        keys = sorted(layer) if isinstance(layer, Mapping) else type(layer).__name__
        raise ArgumentError(f"policy_from_brax: policy_params {where} must hold a kernel and a bias, got {keys}")
    return jnp.asarray(layer["kernel"]), jnp.asarray(layer["bias"])


def _brax_mlp(tree: Mapping, where: str) -> list[tuple[jax.Array, jax.Array]]:
    """The Dense layers of Brax's ``networks.MLP`` parameters (``hidden_0``, ``hidden_1``, ...), in order.

    Raises:
        ArgumentError: other entries than ``hidden_i`` (layer norm), or none.
    """
    names = [f"hidden_{i}" for i in range(len(tree))]
    if not names or set(tree) != set(names):
        raise ArgumentError(
            f"policy_from_brax: policy_params {where} must hold the layers hidden_0, hidden_1, ... of Brax's MLP "
            f"(without layer_norm), got {brief_repr(sorted(tree))}"
        )
    return [_brax_dense(tree[name], f"{where}/{name}") for name in names]


def _brax_layers(policy_params, action_size: int) -> tuple[list[tuple[jax.Array, jax.Array]], bool]:
    """The layers of Brax's PPO policy parameters and whether the action is squashed.

    ``distribution_type="tanh_normal"`` makes the policy an ``MLP`` (``{"params": {"hidden_0": ..., ...}}``) whose
    output is ``(loc, scale)``; ``"normal"`` makes it a ``PolicyModuleWithStd`` (``MLP_0``, the mean's
    ``Dense_0``, the noise std's ``std_param`` or ``std_logparam``, or a state-dependent std's ``Dense_1``).

    Raises:
        ArgumentError: the parameters have neither layout, or the output size does not fit ``action_size``.
    """
    tree = policy_params
    if isinstance(tree, Mapping) and set(tree) == {"params"}:
        tree = tree["params"]
    if not isinstance(tree, Mapping):
        raise ArgumentError(f"policy_from_brax: policy_params must be Brax's parameter tree, got {type(tree).__name__}")
    if "MLP_0" in tree and "Dense_0" in tree:
        layers, squash, outputs = (
            _brax_mlp(tree["MLP_0"], "MLP_0") + [_brax_dense(tree["Dense_0"], "Dense_0")],
            False,
            1,
        )
    elif tree and all(str(k).startswith("hidden_") for k in tree):
        layers, squash, outputs = _brax_mlp(tree, "params"), True, 2
    else:
        raise ArgumentError(
            "policy_from_brax: policy_params must be a Brax PPO policy (distribution_type 'tanh_normal': hidden_0, "
            f"hidden_1, ...; 'normal': MLP_0 and Dense_0), got the entries {brief_repr(sorted(map(str, tree)))}"
        )
    n_out = np.shape(layers[-1][1])[-1] if np.ndim(layers[-1][1]) else None
    if n_out != outputs * action_size:
        kind = "tanh_normal" if squash else "normal"
        raise ArgumentError(
            f"policy_from_brax: a '{kind}' policy of action_size {action_size} has {outputs * action_size} outputs; "
            f"policy_params' last layer has {n_out}"
        )
    return layers, squash


def policy_from_brax(normalizer_params, policy_params, *, action_size: int, activation: str = "swish") -> Policy:
    """The deterministic policy of Brax PPO's trained parameters.

    For networks from ``make_ppo_networks(..., preprocess_observations_fn=running_statistics.normalize,
    activation=...)`` with the default ``layer_norm=False`` and ``mean_clip_scale=None``; the result equals
    ``make_inference_fn(networks)(params, deterministic=True)`` where ``params = (normalizer_params, policy_params,
    value_params)``. Networks trained without the normalizer pass Brax's untouched ``running_statistics.init_state``
    (mean 0, std 1).

    Args:
        normalizer_params: Brax's ``RunningStatisticsState`` (anything with ``mean`` and ``std`` arrays of shape
            ``(observation_size,)``).
        policy_params: the policy network's parameters (``params[1]``).
        action_size: the number of actions.
        activation: the name of the activation the networks were made with (:data:`ACTIVATIONS`).

    Returns:
        The Policy (the arrays with their dtypes).

    Raises:
        ArgumentError: ``action_size`` is not a positive int, ``activation`` is not supported, the normalizer's
            mean and std are not one 1-D shape (a dict observation), or ``policy_params`` is not a Brax PPO
            policy that fits them (the message names what).
    """
    if type(action_size) is not int or action_size < 1:
        raise ArgumentError(f"policy_from_brax: action_size must be a positive int, got {brief_repr(action_size)}")
    if activation not in ACTIVATIONS:
        raise ArgumentError(f"policy_from_brax: activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    mean, std = getattr(normalizer_params, "mean", None), getattr(normalizer_params, "std", None)
    if isinstance(mean, Mapping) or mean is None or std is None:
        raise ArgumentError(
            "policy_from_brax: normalizer_params must be Brax's RunningStatisticsState of an array observation, "
            f"got {type(normalizer_params).__name__} (mean: {type(mean).__name__})"
        )
    layers, squash = _brax_layers(policy_params, action_size)
    policy = Policy(
        observation_mean=jnp.asarray(mean),
        observation_std=jnp.asarray(std),
        kernels=tuple(k for k, _ in layers),
        biases=tuple(b for _, b in layers),
        action_size=action_size,
        activation=activation,
        squash=squash,
    )
    check_policy(policy, "policy_from_brax")
    return policy


def _arrays(policy: Policy) -> dict[str, np.ndarray]:
    """The policy's arrays by their names in ``policy.npz``, on the host."""
    arrays = {"observation_mean": policy.observation_mean, "observation_std": policy.observation_std}
    for i, (kernel, bias) in enumerate(zip(policy.kernels, policy.biases, strict=True)):
        arrays[f"layer_{i}/kernel"], arrays[f"layer_{i}/bias"] = kernel, bias
    return {name: np.asarray(jax.device_get(a)) for name, a in arrays.items()}


def save_policy(policy: Policy, folder: str | os.PathLike, config: dict) -> Path:
    """Write a policy to ``folder`` in the format of the module docstring (``policy.npz`` and ``policy.json``).

    Args:
        policy: the policy.
        folder: the folder to write (created with its parents when missing; the two files are replaced).
        config: a JSON-able dict the trainer keeps with the policy (the environment's settings).

    Returns:
        ``folder`` as a Path.

    Raises:
        ArgumentError: ``policy`` does not fit together (:func:`check_policy`), ``config`` is not a dict that JSON
            can write (a NaN, an object), or the folder or a file cannot be written (the system's reason).
    """
    check_policy(policy, "save_policy")
    if not isinstance(config, dict):
        raise ArgumentError(f"save_policy: config must be a dict, got {type(config).__name__}")
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "activation": policy.activation,
        "observation_size": policy.observation_size,
        "action_size": policy.action_size,
        "layers": policy.layers,
        "squash": bool(policy.squash),
        "config": config,
    }
    try:
        text = json.dumps(meta, indent=2, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise ArgumentError(f"save_policy: config must be JSON-able (no NaN, no objects): {err}") from None
    folder = Path(folder)
    with writing("save_policy", "folder", folder):
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ARRAYS_NAME, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
            for name, array in _arrays(policy).items():
                with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)
        (folder / JSON_NAME).write_text(text + "\n", encoding="utf-8")
    return folder


def _read_bytes(path: Path) -> bytes:
    """A policy file's bytes.

    Raises:
        ModelError: the file is missing, not a regular file, larger than :data:`MAX_FILE_BYTES`, or unreadable.
    """
    if not path.is_file():
        raise ModelError(str(path), None, "no such file (a policy folder holds policy.json and policy.npz)")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ModelError(str(path), None, f"{size} bytes, more than a policy file may hold ({MAX_FILE_BYTES})")
        return path.read_bytes()
    except OSError as err:
        raise ModelError(str(path), None, f"cannot be read: {err.strerror or err}") from None


def _positive_int(value) -> bool:
    return type(value) is int and value >= 1


def _read_meta(path: Path) -> dict:
    """The checked content of ``policy.json``.

    Raises:
        ModelError: the file is missing, too large, not UTF-8 JSON, not of this format and version, or an entry is
            missing, extra or of the wrong type or value (named).
    """
    try:
        meta = json.loads(_read_bytes(path).decode("utf-8"))
    except (ValueError, RecursionError) as err:  # UTF-8, JSON, an integer too long; nesting too deep
        raise ModelError(str(path), None, f"not a policy (does not parse as JSON: {err!s:.80})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(str(path), None, f'not a policy (no "format": "{FORMAT}" entry)')
    version = meta.get("version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise ModelError(
            str(path), None, f"policy format version {brief_repr(version)}; this jaxmor reads {FORMAT_VERSION}"
        )
    if set(meta) != _ENTRIES:
        missing, extra = sorted(_ENTRIES - set(meta)), sorted(set(meta) - _ENTRIES)
        raise ModelError(str(path), None, f"entries missing: {missing}, unexpected: {brief_repr(extra)}")
    checks = {
        "activation": (meta["activation"] in ACTIVATIONS, f"one of {sorted(ACTIVATIONS)}"),
        "observation_size": (_positive_int(meta["observation_size"]), "a positive integer"),
        "action_size": (_positive_int(meta["action_size"]), "a positive integer"),
        "layers": (
            isinstance(meta["layers"], list) and meta["layers"] and all(map(_positive_int, meta["layers"])),
            "a list of positive integers (at least one)",
        ),
        "squash": (type(meta["squash"]) is bool, "true or false"),
        "config": (isinstance(meta["config"], dict), "a JSON object"),
    }
    for name, (ok, expected) in checks.items():
        if not ok:
            raise ModelError(str(path), None, f'"{name}" must be {expected}, got {brief_repr(meta[name])}')
    last, a = meta["layers"][-1], meta["action_size"]
    if last not in (a, 2 * a):
        raise ModelError(str(path), None, f"the last layer's {last} outputs must be action_size {a} or twice it")
    return meta


def _expected_shapes(meta: dict) -> dict[str, tuple[int, ...]]:
    """The shape of every array ``policy.npz`` must hold, by name, from the checked ``policy.json``."""
    n = meta["observation_size"]
    shapes = {"observation_mean": (n,), "observation_std": (n,)}
    for i, n_out in enumerate(meta["layers"]):
        shapes[f"layer_{i}/kernel"], shapes[f"layer_{i}/bias"] = (n, n_out), (n_out,)
        n = n_out
    return shapes


def _header(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype in the ``.npy`` header of one archive member (its data not read).

    Raises:
        ValueError: not an ``.npy`` header of version 1 or 2 (numpy's reason).
    """
    with archive.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"npy format version {version}")
    return shape, dtype


def _check_archive(path: Path, meta: dict) -> None:
    """Check the entries of ``policy.npz`` (names, dtypes, shapes, sizes) against the JSON, before reading arrays.

    Raises:
        ModelError: the file is missing, too large, not a zip archive, or its entries are not exactly the arrays
            the JSON's sizes name with their shapes, float32 or float64 (an object array, which would need
            unpickling, is refused unread).
    """
    _read_bytes(path)  # exists, is a regular file, within the size limit
    expected = _expected_shapes(meta)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            names = [i.filename[:-4] if i.filename.endswith(".npy") else f"{i.filename} (not .npy)" for i in infos]
            if sorted(names) != sorted(expected):
                missing, extra = sorted(set(expected) - set(names)), sorted(set(names) - set(expected))
                raise ModelError(str(path), None, f"arrays missing: {missing}, unexpected: {brief_repr(extra)}")
            if sum(i.file_size for i in infos) > MAX_FILE_BYTES:
                raise ModelError(str(path), None, f"its arrays hold more than {MAX_FILE_BYTES} bytes")
            for name, info in zip(names, infos, strict=True):
                shape, dtype = _header(archive, info)
                if dtype.hasobject:
                    raise ModelError(str(path), None, f"{name}: an object array (a pickle), refused unread")
                if dtype.kind != "f" or dtype.itemsize not in (4, 8) or shape != expected[name]:
                    raise ModelError(
                        str(path), None, f"{name}: {dtype} {shape}, expected float32 or float64 {expected[name]}"
                    )
                if info.file_size < math.prod(shape) * dtype.itemsize:
                    raise ModelError(str(path), None, f"{name}: truncated ({info.file_size} bytes)")
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - zipfile and numpy raise many types for damaged bytes
        reason = f"{type(err).__name__}: {err!s:.80}"
        raise ModelError(str(path), None, f"not a readable .npz archive (damaged or not a policy; {reason})") from None


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the checked ``policy.npz``, read with ``allow_pickle=False``, finite, stds positive.

    Float64 arrays become float32 while ``jax_enable_x64`` is off (what JAX would compute them in).

    Raises:
        ModelError: an array cannot be read, is not finite, or a std is not positive.
    """
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except Exception as err:  # noqa: BLE001 - damaged data under a valid header
        raise ModelError(str(path), None, f"an array cannot be read ({type(err).__name__}: {err!s:.80})") from None
    for name, array in arrays.items():
        if not np.all(np.isfinite(array)):
            raise ModelError(str(path), None, f"{name} holds values that are not finite")
        if not jax.config.jax_enable_x64:
            array = array.astype(np.float32)
        arrays[name] = array.astype(array.dtype.newbyteorder("="))
    if not np.all(arrays["observation_std"] > 0):
        raise ModelError(str(path), None, "observation_std must be positive")
    return arrays


def load_policy(folder: str | os.PathLike) -> tuple[Policy, dict]:
    """Read a policy folder written by :func:`save_policy` (the format and its checks: the module docstring).

    Args:
        folder: the folder holding ``policy.json`` and ``policy.npz``.

    Returns:
        ``(policy, config)``: the Policy (its arrays with the dtypes saved, float64 as float32 while
        ``jax_enable_x64`` is off) and the config dict the trainer saved.

    Raises:
        ModelError: a file is missing, too large, damaged, of another format or version, or its content does not
            fit the format (a wrong entry, a missing or extra array, a wrong dtype or shape, a pickle, a value not
            finite, a std not positive); the message names the file and what is wrong.
    """
    folder = Path(folder)
    meta = _read_meta(folder / JSON_NAME)
    _check_archive(folder / ARRAYS_NAME, meta)
    arrays = _read_arrays(folder / ARRAYS_NAME)
    count = len(meta["layers"])
    policy = Policy(
        observation_mean=jnp.asarray(arrays["observation_mean"]),
        observation_std=jnp.asarray(arrays["observation_std"]),
        kernels=tuple(jnp.asarray(arrays[f"layer_{i}/kernel"]) for i in range(count)),
        biases=tuple(jnp.asarray(arrays[f"layer_{i}/bias"]) for i in range(count)),
        action_size=meta["action_size"],
        activation=meta["activation"],
        squash=meta["squash"],
    )
    return policy, meta["config"]
