"""Analysis tools beside the benchmark runner, each its own command (``python -m bench.tools.NAME --help``).

* ``iterations``: dependent loop iterations per step, read from the compiled program's HLO text;
* ``residuals``: how far the PGS sweeps are from converged after k sweeps (the data behind the sweep counts);
* ``profile_step``: where jaxmor's step spends its time (ablations of the quadruped's rollout, black-box);
* ``implicit_cost``: the cost of each ``Options.implicit_bias``, one mode and one kind per process;
* ``ground_filter``: the Go1 with every geom touching the ground against its feet only;
* ``thunks`` (no command: ``python -m bench gpu-plan`` runs it): kernels, copies, graphs, loops and stages of a
  GPU program, read from XLA's dump of a deviceless compile.

Their figures are in docs/design/performance.md; they locate costs, they are not benchmark results.
"""
