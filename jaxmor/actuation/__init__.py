"""The actuators: DC motors and their operating regions, motor dynamics, MuJoCo-style affine actuators.

The public names are re-exported by :mod:`jaxmor`; this ``__init__`` imports nothing, so the readers in
:mod:`jaxmor.io` can import the motor definitions without the runtime.
"""
