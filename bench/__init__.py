"""Benchmarks of jaxmor against MuJoCo and MJX; run ``python -m bench --help``. See bench/README.md."""
