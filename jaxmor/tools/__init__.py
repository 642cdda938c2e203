"""Applications built on the simulator: randomization, system identification, the MuJoCo comparison,
plots, the demo and the command line.

``jaxmor.sysid`` and ``jaxmor.randomize`` are re-exported by :mod:`jaxmor`; ``jaxmor.tools.plot`` (matplotlib)
and ``jaxmor.tools.compare`` (MuJoCo) are imported on demand, so ``import jaxmor`` needs neither.
"""
