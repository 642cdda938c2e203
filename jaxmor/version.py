"""The installed package's version, ``jaxmor.__version__`` (from the package metadata, as pip installed it)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("jaxmor")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
