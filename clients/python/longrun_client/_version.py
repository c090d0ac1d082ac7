"""The client's version. Its major number is the env server's HTTP protocol version (``PROTOCOL_VERSION``): the
routes, bodies and error codes of ``longrun serve env`` as documented in the longrun repository's
``src/serve/README.md``. A change the client cannot follow bumps both."""

PROTOCOL_VERSION = 1
__version__ = "1.0.0"
