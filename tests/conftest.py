"""Test configuration: the suite runs in float64.

Reference comparisons (Pinocchio, MuJoCo, closed forms) need float64, so x64 is enabled once
for the test session. The package itself never changes this setting on import. Tests of the
float32 path pass float32 arrays explicitly; jaxmor keeps the dtype of its inputs.
"""

import jax

jax.config.update("jax_enable_x64", True)
