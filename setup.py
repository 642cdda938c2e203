"""The package list, the one part of the build configuration that is code (the rest is in ``pyproject.toml``).

``pyproject.toml`` cannot list found packages and mapped ones together, so the list is made here: every package
under ``jaxmor/``, and the data package ``jaxmor.robots.data`` with its folders, which
``[tool.setuptools.package-dir]`` maps to the top-level ``robots/`` folder (the shipped robot files, found by
``jaxmor.robots.path``).
"""

from setuptools import find_namespace_packages, setup

ROBOTS = [f"jaxmor.robots.data.{name}" for name in find_namespace_packages(where="robots")]

setup(packages=[*find_namespace_packages(include=["jaxmor*"]), "jaxmor.robots.data", *ROBOTS])
