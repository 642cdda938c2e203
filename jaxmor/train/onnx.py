"""A trained policy as an ONNX model, for deployment outside JAX (onnxruntime, TensorRT, a robot's computer).

:func:`export_onnx` writes the deterministic action of a :class:`~jaxmor.train.policy.Policy` (the computation in
:mod:`jaxmor.train.policy`'s docstring) as an ONNX graph: input ``observation``, float32 ``(batch,
observation_size)``; output ``action``, float32 ``(batch, action_size)``; the batch size is free. The graph is
``Sub`` and ``Div`` (the normalizer), then per layer ``MatMul`` and ``Add`` and, between layers, the activation
(swish as ``Sigmoid`` and ``Mul``; ``Relu``, ``Tanh``, ``Elu``), then ``Tanh`` (or ``Identity`` for a policy
that does not squash). The output layer keeps only its ``action_size`` location columns (the scale columns do not
enter the deterministic action), so the graph has no ``Slice``. Weights are stored as float32 initializers.

The graph is built with ``onnx.helper`` rather than traced by a converter: jax2onnx 0.17.1 (the maintained JAX
converter) does convert this policy under JAX 0.10.2 (checked, installed apart: the same graph with ``Gemm`` for
``MatMul`` and a ``Slice`` of the location, and onnxruntime's actions equal to this graph's bit for bit), but it cannot
be installed beside jaxmor's other extras: it pins ``orbax-checkpoint<0.11.37`` (flax and Brax
have 0.12.8 here), requires Python 3.11 (jaxmor supports 3.10) and brings some twenty packages (huggingface-hub, netron,
equinox, dm-pix, orbax-export). The graph is a handful of standard ops, which opset 13 and later all hold, so
``onnx`` alone writes it (optional extra ``jaxmor[onnx]``: ``onnx``, and ``onnxruntime`` to run the model).
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import numpy as np

from jaxmor.errors import ArgumentError, brief_repr
from jaxmor.io.files import writing
from jaxmor.train.policy import Policy, check_policy

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "export_onnx"]

#: The opset :func:`export_onnx` writes unless told otherwise (onnxruntime 1.18 and TensorRT 8.6 run it).
DEFAULT_OPSET = 17
#: The oldest opset :func:`export_onnx` writes.
MIN_OPSET = 13


def _import_onnx():
    """The ``onnx`` module.

    Raises:
        ImportError: onnx is not installed (the message names the extra).
    """
    try:
        import onnx
    except ImportError as err:
        raise ImportError(
            "jaxmor.train.export_onnx needs the onnx package: pip install 'jaxmor[onnx]' (onnx, onnxruntime)"
        ) from err
    return onnx


def _activation(helper, name: str, x: str, prefix: str) -> tuple[list, str]:
    """The nodes of a hidden layer's activation of the tensor ``x``, and their output's name."""
    y = f"{prefix}/{name}"
    if name == "swish":  # x * sigmoid(x), as flax's swish (jax.nn.silu)
        return [
            helper.make_node("Sigmoid", [x], [f"{prefix}/sigmoid"]),
            helper.make_node("Mul", [x, f"{prefix}/sigmoid"], [y]),
        ], y
    op = {"relu": "Relu", "tanh": "Tanh", "elu": "Elu"}[name]
    attributes = {"alpha": 1.0} if op == "Elu" else {}
    return [helper.make_node(op, [x], [y], **attributes)], y


def _model(onnx, policy: Policy, opset: int):
    """The ONNX ModelProto of ``policy``'s deterministic action (module docstring)."""
    helper, numpy_helper = onnx.helper, onnx.numpy_helper

    def host(a) -> np.ndarray:
        return np.asarray(jax.device_get(a), dtype=np.float32)

    tensors = {"observation_mean": host(policy.observation_mean), "observation_std": host(policy.observation_std)}
    nodes = [
        helper.make_node("Sub", ["observation", "observation_mean"], ["centered"]),
        helper.make_node("Div", ["centered", "observation_std"], ["normalized"]),
    ]
    x, last, a = "normalized", len(policy.kernels) - 1, policy.action_size
    for i, (kernel, bias) in enumerate(zip(policy.kernels, policy.biases, strict=True)):
        kernel, bias = host(kernel), host(bias)
        if i == last:  # the location columns only
            kernel, bias = kernel[:, :a], bias[:a]
        tensors[f"layer_{i}/kernel"], tensors[f"layer_{i}/bias"] = kernel, bias
        nodes.append(helper.make_node("MatMul", [x, f"layer_{i}/kernel"], [f"layer_{i}/matmul"]))
        nodes.append(helper.make_node("Add", [f"layer_{i}/matmul", f"layer_{i}/bias"], [f"layer_{i}/output"]))
        x = f"layer_{i}/output"
        if i < last:
            more, x = _activation(helper, policy.activation, x, f"layer_{i}")
            nodes += more
    nodes.append(helper.make_node("Tanh" if policy.squash else "Identity", [x], ["action"]))
    float32 = onnx.TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "jaxmor_policy",
        inputs=[helper.make_tensor_value_info("observation", float32, ["batch", policy.observation_size])],
        outputs=[helper.make_tensor_value_info("action", float32, ["batch", a])],
        initializer=[numpy_helper.from_array(t, name) for name, t in tensors.items()],
    )
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(
        graph,
        opset_imports=opsets,
        ir_version=helper.find_min_ir_version_for(opsets),
        producer_name="jaxmor",
        doc_string="jaxmor.train policy: deterministic action (jaxmor.train.policy)",
    )


def export_onnx(policy: Policy, path: str | os.PathLike, *, opset: int = DEFAULT_OPSET) -> Path:
    """Write ``policy``'s deterministic action as an ONNX model (module docstring: the graph).

    Args:
        policy: the policy (:func:`jaxmor.train.policy_from_brax` or :func:`jaxmor.train.load_policy`).
        path: the ``.onnx`` file to write (the suffix is not added; the folder must exist).
        opset: the ONNX opset, from :data:`MIN_OPSET` to the installed onnx's newest.

    Returns:
        ``path`` as a Path. The model's input is ``observation``, float32 ``(batch, observation_size)``; its
        output ``action``, float32 ``(batch, action_size)``.

    Raises:
        ArgumentError: ``policy`` does not fit together (:func:`jaxmor.train.policy.check_policy`), ``opset`` is
            not an int in range, or ``path`` cannot be written (the system's reason).
        ImportError: onnx is not installed (``pip install 'jaxmor[onnx]'``).
    """
    check_policy(policy, "export_onnx")
    onnx = _import_onnx()
    newest = onnx.defs.onnx_opset_version()
    if type(opset) is not int or not MIN_OPSET <= opset <= newest:
        raise ArgumentError(f"export_onnx: opset must be an int from {MIN_OPSET} to {newest}, got {brief_repr(opset)}")
    model = _model(onnx, policy, opset)
    onnx.checker.check_model(model, full_check=True)
    path = Path(path)
    with writing("export_onnx", "path", path):
        onnx.save_model(model, os.fspath(path))
    return path
