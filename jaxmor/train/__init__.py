"""Training policies for :mod:`jaxmor.envs` and keeping them: the trained policy's file format and its export.

:mod:`jaxmor.train.policy` holds a trained policy's deterministic action (:class:`Policy`, made from Brax's PPO
networks by :func:`policy_from_brax`) and its file format (:func:`save_policy`, :func:`load_policy`: NumPy arrays
and JSON, no pickle); :func:`export_onnx` writes it as an ONNX model (optional extra ``jaxmor[onnx]``, imported
only when called). Brax is not imported here.
"""

from jaxmor.train.onnx import export_onnx
from jaxmor.train.policy import Policy, load_policy, policy_from_brax, save_policy

__all__ = ["Policy", "export_onnx", "load_policy", "policy_from_brax", "save_policy"]
