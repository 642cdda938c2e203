"""Making, editing and saving a Model: the builder, scene and actuator editors, composition, world files
and checkpoints.

The public names are re-exported by :mod:`jaxmor`; this ``__init__`` imports nothing.
"""
