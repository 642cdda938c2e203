"""The robot files shipped with jaxmor, installed as the data package ``jaxmor.robots.data`` (no code: read them
with :func:`jaxmor.robots.path`; ``README.md`` lists them)."""
