"""jaxmor.train's policy: Brax PPO's deterministic action, its file format, and its ONNX export.

References: Brax's own ``make_inference_fn(networks)(params, deterministic=True)`` on random PPO networks
(``make_ppo_networks``, parameters from ``.init``) and a normalizer whose mean and std are Brax's
``running_statistics.update`` of random data (far from 0 and 1); onnxruntime running the exported model, compared
with the JAX policy and with Brax. The file format is read back with plain ``numpy.load`` and ``json``, by the
names the module docstring documents.
"""

from __future__ import annotations

import functools
import json
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmor import ArgumentError, ModelError
from jaxmor.train import Policy, export_onnx, load_policy, policy_from_brax, save_policy
from jaxmor.train import policy as policy_module

ppo_networks = pytest.importorskip("brax.training.agents.ppo.networks")
running_statistics = pytest.importorskip("brax.training.acme.running_statistics")
linen = pytest.importorskip("flax.linen")

OBS, ACT, N = 9, 4, 1000
#: (activation name, Brax's activation, distribution_type): Brax PPO's default first.
CASES = [
    ("swish", "swish", "tanh_normal"),
    ("relu", "relu", "tanh_normal"),
    ("tanh", "tanh", "tanh_normal"),
    ("elu", "elu", "tanh_normal"),
    ("swish", "swish", "normal"),
]
CONFIG = {"env": "Locomotion", "episode_steps": 1000, "command_ranges": [[-1.0, 1.0], [0.0, 0.0], [-0.5, 0.5]]}
#: The observations' offsets and scales: the normalizer learns them, the policy must undo them.
OFFSET = np.linspace(-3.0, 5.0, OBS)
SCALE = np.geomspace(0.1, 20.0, OBS)


def _observations(seed: int, n: int = N) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (OFFSET + SCALE * rng.standard_normal((n, OBS))).astype(np.float32)


@functools.cache
def _brax(activation: str, distribution: str):
    """Random Brax PPO networks: ``(normalizer_params, policy_params, observations, Brax's deterministic action)``."""
    networks = ppo_networks.make_ppo_networks(
        OBS,
        ACT,
        preprocess_observations_fn=running_statistics.normalize,
        policy_hidden_layer_sizes=(32, 16),
        value_hidden_layer_sizes=(8,),
        activation=getattr(linen, activation),
        distribution_type=distribution,
        noise_std_type="scalar",
    )
    key = jax.random.PRNGKey(7)
    policy_params = networks.policy_network.init(key)
    value_params = networks.value_network.init(key)
    normalizer = running_statistics.init_state(jax.ShapeDtypeStruct((OBS,), jnp.float32))
    normalizer = running_statistics.update(normalizer, jnp.asarray(_observations(1, 4096)))
    params = (normalizer, policy_params, value_params)
    observations = _observations(2)
    action, _ = ppo_networks.make_inference_fn(networks)(params, deterministic=True)(observations, key)
    return normalizer, policy_params, observations, np.asarray(action)


@functools.cache
def _policy(activation: str = "swish", distribution: str = "tanh_normal") -> Policy:
    normalizer, policy_params, _, _ = _brax(activation, distribution)
    return policy_from_brax(normalizer, policy_params, action_size=ACT, activation=activation)


@pytest.mark.parametrize(("name", "brax_activation", "distribution"), CASES)
def test_policy_equals_brax_deterministic_inference(name, brax_activation, distribution):
    """The Policy's action equals Brax's deterministic inference on 1,000 observations, to 1e-6."""
    normalizer, _, observations, expected = _brax(brax_activation, distribution)
    # the normalizer is not the identity, and the actions are spread (not all saturated)
    assert np.abs(np.asarray(normalizer.mean) - OFFSET).max() < 0.1 * SCALE.max()
    np.testing.assert_allclose(np.asarray(normalizer.std), SCALE, rtol=0.1)
    assert expected.shape == (N, ACT) and expected.std() > 0.05
    policy = _policy(name, distribution)
    assert policy.squash == (distribution == "tanh_normal")
    assert policy.layers == [32, 16, 2 * ACT if distribution == "tanh_normal" else ACT]
    action = np.asarray(policy(observations))
    np.testing.assert_allclose(action, expected, rtol=0, atol=1e-6)
    if policy.squash:
        assert np.abs(action).max() <= 1.0


def test_policy_jit_vmap_and_leading_axes():
    """Jitted, vmapped and over two leading axes, the action is the batched one."""
    policy, observations = _policy(), _observations(3)
    expected = np.asarray(policy(observations))
    np.testing.assert_allclose(np.asarray(jax.jit(lambda p, o: p(o))(policy, observations)), expected, atol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.vmap(policy)(observations)), expected, atol=1e-12)
    grid = np.asarray(policy(observations.reshape(10, N // 10, OBS)))
    np.testing.assert_array_equal(grid.reshape(N, ACT), expected)
    with pytest.raises(ArgumentError, match=rf"observation must have shape \(\.\.\., {OBS}\)"):
        policy(observations[:, :-1])


def test_policy_from_brax_refuses_what_it_cannot_represent():
    normalizer, policy_params, _, _ = _brax("swish", "tanh_normal")
    with pytest.raises(ArgumentError, match="'tanh_normal' policy of action_size 3 has 6 outputs"):
        policy_from_brax(normalizer, policy_params, action_size=3)
    with pytest.raises(ArgumentError, match="action_size must be a positive int"):
        policy_from_brax(normalizer, policy_params, action_size=0)
    with pytest.raises(ArgumentError, match="activation must be one of"):
        policy_from_brax(normalizer, policy_params, action_size=ACT, activation="gelu")
    with_norm = {"params": {**policy_params["params"], "LayerNorm_0": {"scale": jnp.ones(32)}}}
    with pytest.raises(ArgumentError, match="policy_params"):
        policy_from_brax(normalizer, with_norm, action_size=ACT)
    nested = normalizer.replace(mean={"state": normalizer.mean}, std={"state": normalizer.std})
    with pytest.raises(ArgumentError, match="normalizer_params"):
        policy_from_brax(nested, policy_params, action_size=ACT)


@pytest.mark.parametrize("distribution", ["tanh_normal", "normal"])
def test_save_load_round_trip(tmp_path, distribution):
    """Leaf for leaf (values and dtypes), the static fields and the config come back; the files hold what the
    module docstring documents, read with plain json and numpy."""
    policy = _policy("swish", distribution)
    folder = save_policy(policy, tmp_path / "runs" / "policy", CONFIG)
    assert folder == tmp_path / "runs" / "policy"
    assert sorted(p.name for p in folder.iterdir()) == ["policy.json", "policy.npz"]
    meta = json.loads((folder / "policy.json").read_text())
    last = 2 * ACT if distribution == "tanh_normal" else ACT
    assert meta == {
        "format": "jaxmor.policy",
        "version": 1,
        "activation": "swish",
        "observation_size": OBS,
        "action_size": ACT,
        "layers": [32, 16, last],
        "squash": distribution == "tanh_normal",
        "config": CONFIG,
    }
    with np.load(folder / "policy.npz", allow_pickle=False) as archive:
        assert sorted(archive.files) == sorted(
            ["observation_mean", "observation_std"] + [f"layer_{i}/{k}" for i in range(3) for k in ("kernel", "bias")]
        )
        np.testing.assert_array_equal(archive["layer_2/kernel"], np.asarray(policy.kernels[2]))
    loaded, config = load_policy(folder)
    assert config == CONFIG
    assert (loaded.action_size, loaded.activation, loaded.squash) == (ACT, "swish", distribution == "tanh_normal")
    assert jax.tree.structure(loaded) == jax.tree.structure(policy)
    for got, saved in zip(jax.tree.leaves(loaded), jax.tree.leaves(policy), strict=True):
        assert got.dtype == saved.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(saved))


def test_load_without_x64_gives_float32(tmp_path):
    """With ``jax_enable_x64`` off, the saved float64 normalizer loads as float32 (no warning, no error) and the
    action stays Brax's (float64 here) to float32 rounding."""
    _, _, observations, expected = _brax("swish", "tanh_normal")
    folder = save_policy(_policy(), tmp_path, CONFIG)
    with jax.enable_x64(False):
        loaded, _ = load_policy(folder)
        assert {leaf.dtype for leaf in jax.tree.leaves(loaded)} == {np.dtype(np.float32)}
        action = np.asarray(loaded(observations))
    assert action.dtype == np.float32
    np.testing.assert_allclose(action, expected, rtol=0, atol=1e-5)


class _Sentinel:
    """Unpickling it records that it ran: no loader may."""

    ran: list = []

    def __reduce__(self):
        return (_Sentinel.ran.append, ("unpickled",))


def _rewrite_arrays(folder, change):
    """Rewrite ``policy.npz`` with ``change(arrays)`` applied (``np.savez``, pickling allowed)."""
    with np.load(folder / "policy.npz", allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    change(arrays)
    np.savez(folder / "policy.npz", **arrays)


def _rewrite_json(folder, change):
    meta = json.loads((folder / "policy.json").read_text())
    change(meta)
    (folder / "policy.json").write_text(json.dumps(meta))


#: A damaged folder: (the change, the file the error must name, a part of its message).
DAMAGES = {
    "json does not parse": (
        lambda f: (f / "policy.json").write_text('{"format": "jaxmor.policy", '),
        "policy.json",
        "does not parse",
    ),
    "json not utf-8": (lambda f: (f / "policy.json").write_bytes(b"\xff\xfe"), "policy.json", "does not parse"),
    "json foreign": (lambda f: _rewrite_json(f, lambda m: m.update(format="other")), "policy.json", "not a policy"),
    "json version": (lambda f: _rewrite_json(f, lambda m: m.update(version=2)), "policy.json", "version 2"),
    "json entry missing": (lambda f: _rewrite_json(f, lambda m: m.pop("squash")), "policy.json", "squash"),
    "json bad size": (lambda f: _rewrite_json(f, lambda m: m.update(action_size=True)), "policy.json", "action_size"),
    "json layers": (lambda f: _rewrite_json(f, lambda m: m.update(layers=[32, 16, 5])), "policy.json", "last layer"),
    "json missing": (lambda f: (f / "policy.json").unlink(), "policy.json", "no such file"),
    "npz missing": (lambda f: (f / "policy.npz").unlink(), "policy.npz", "no such file"),
    "array missing": (lambda f: _rewrite_arrays(f, lambda a: a.pop("layer_1/bias")), "policy.npz", "layer_1/bias"),
    "array extra": (lambda f: _rewrite_arrays(f, lambda a: a.update(extra=np.zeros(2))), "policy.npz", "extra"),
    "wrong shape": (
        lambda f: _rewrite_arrays(f, lambda a: a.update({"layer_0/kernel": a["layer_0/kernel"].T})),
        "policy.npz",
        r"layer_0/kernel: float32 \(32, 9\), expected float32 or float64 \(9, 32\)",
    ),
    "layers disagree": (
        lambda f: _rewrite_json(f, lambda m: m.update(layers=[32, 17, 8])),
        "policy.npz",
        "layer_1/kernel",
    ),
    "float16": (
        lambda f: _rewrite_arrays(f, lambda a: a.update(observation_std=a["observation_std"].astype(np.float16))),
        "policy.npz",
        "observation_std: float16",
    ),
    "object array (pickle)": (
        lambda f: _rewrite_arrays(f, lambda a: a.update(observation_mean=np.array([_Sentinel()] * OBS, object))),
        "policy.npz",
        "pickle",
    ),
    "a pickle file": (
        lambda f: (f / "policy.npz").write_bytes(pickle.dumps(_Sentinel())),
        "policy.npz",
        "not a readable .npz",
    ),
    "truncated": (
        lambda f: (f / "policy.npz").write_bytes((f / "policy.npz").read_bytes()[:-200]),
        "policy.npz",
        "not a readable .npz",
    ),
    "not finite": (
        lambda f: _rewrite_arrays(f, lambda a: a["layer_2/bias"].__setitem__(0, np.nan)),
        "policy.npz",
        "layer_2/bias holds values that are not finite",
    ),
    "std zero": (
        lambda f: _rewrite_arrays(f, lambda a: a["observation_std"].__setitem__(3, 0.0)),
        "policy.npz",
        "observation_std must be positive",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_load_refuses_a_damaged_folder(tmp_path, damage):
    """Each damage is a ModelError naming the file and the problem; nothing is unpickled."""
    change, name, message = DAMAGES[damage]
    policy = _policy()
    if damage == "float16":  # the saved arrays are float64 and float32 (the normalizer's are Brax's float64 here)
        assert {leaf.dtype for leaf in jax.tree.leaves(policy)} == {np.dtype(np.float64), np.dtype(np.float32)}
    folder = save_policy(policy, tmp_path, CONFIG)
    change(folder)
    with pytest.raises(ModelError, match=message) as caught:
        load_policy(folder)
    assert str(caught.value).startswith(str(folder / name) + ":")
    assert _Sentinel.ran == []


def test_load_refuses_a_file_over_the_size_limit(tmp_path, monkeypatch):
    folder = save_policy(_policy(), tmp_path, CONFIG)
    size = (folder / "policy.npz").stat().st_size
    monkeypatch.setattr(policy_module, "MAX_FILE_BYTES", size - 1)
    with pytest.raises(ModelError, match=rf"policy.npz: {size} bytes, more than a policy file may hold"):
        load_policy(folder)


def test_save_refuses_bad_arguments(tmp_path):
    policy = _policy()
    with pytest.raises(ArgumentError, match="config must be JSON-able"):
        save_policy(policy, tmp_path, {"gain": float("nan")})
    with pytest.raises(ArgumentError, match="config must be JSON-able"):
        save_policy(policy, tmp_path, {"env": object()})
    with pytest.raises(ArgumentError, match="config must be a dict"):
        save_policy(policy, tmp_path, [1, 2])
    with pytest.raises(ArgumentError, match="policy must be a jaxmor.train.Policy"):
        save_policy({"kernels": ()}, tmp_path, {})
    with pytest.raises(ArgumentError, match="policy layer 1"):
        save_policy(policy.replace(kernels=(policy.kernels[0], policy.kernels[0], policy.kernels[2])), tmp_path, {})
    (tmp_path / "file").write_text("")
    with pytest.raises(ArgumentError, match="save_policy: folder .* cannot be written"):
        save_policy(policy, tmp_path / "file", {})


@pytest.mark.parametrize(("name", "brax_activation", "distribution"), CASES)
def test_export_onnx_runs_in_onnxruntime(tmp_path, name, brax_activation, distribution):
    """onnxruntime's action for 1,000 observations equals the JAX policy's and Brax's to 1e-5; the batch is free."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    _, _, observations, expected = _brax(brax_activation, distribution)
    policy = _policy(name, distribution)
    path = export_onnx(policy, tmp_path / "policy.onnx")
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["observation"]
    assert [o.name for o in model.graph.output] == ["action"]
    assert model.opset_import[0].version == 17
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (action,) = session.run(["action"], {"observation": observations})
    assert action.shape == (N, ACT) and action.dtype == np.float32
    np.testing.assert_allclose(action, np.asarray(policy(observations)), rtol=0, atol=1e-5)
    np.testing.assert_allclose(action, expected, rtol=0, atol=1e-5)
    (one,) = session.run(["action"], {"observation": observations[:1]})
    np.testing.assert_allclose(one, action[:1], rtol=0, atol=1e-6)


def test_export_onnx_refuses_bad_arguments(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    policy = _policy()
    for opset in (12, 10_000, 17.0):
        with pytest.raises(ArgumentError, match="opset must be an int from 13"):
            export_onnx(policy, tmp_path / "p.onnx", opset=opset)
    with pytest.raises(ArgumentError, match="export_onnx: path .* cannot be written"):
        export_onnx(policy, tmp_path / "missing" / "p.onnx")
    with pytest.raises(ArgumentError, match="policy must be a jaxmor.train.Policy"):
        export_onnx(None, tmp_path / "p.onnx")
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install 'jaxmor\[onnx\]'"):
        export_onnx(policy, tmp_path / "p.onnx")
