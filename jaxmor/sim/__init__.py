"""The step, one module per stage in pipeline order.

``kinematics`` -> ``dynamics`` -> ``forces`` -> ``integrator`` (free motion) -> ``collision`` ->
``constraint`` -> ``solver`` -> ``integrator`` (advance, guard), composed by ``pipeline`` (``step``,
``rollout``); ``batch`` runs many worlds. The public names are re-exported by :mod:`jaxmor`; this
``__init__`` imports nothing, so importing one stage does not import the others.
"""
