"""Benchmarks of jaxmor against MuJoCo and MJX: ``python -m bench --help`` lists the scenarios. See bench/README.md."""
