"""The step, one module per stage in pipeline order.

``kinematics`` -> ``dynamics`` -> ``forces`` -> ``free_motion`` -> ``collision`` -> ``constraint`` ->
``solver`` -> ``integrator``, with ``guard`` around them, composed by ``pipeline`` (``step``, ``stages``,
``rollout``); ``batch`` runs many worlds. The public names are re-exported by :mod:`jaxmor`; this
``__init__`` imports nothing, so importing one stage does not import the others.
"""
