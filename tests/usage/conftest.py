"""The usage tests' fixtures: ``up``, the scripted upstream the proxy is put in front of
(tests.proxy_helpers, shared with the other folders that need one)."""

from tests.proxy_helpers import up  # noqa: F401 (a fixture, registered for this folder)
