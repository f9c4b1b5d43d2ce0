"""The subscription proxy: any OpenAI-compatible app served from the home's pools.

- :mod:`store.proxy.chain`: the primary pool and the fallback chain on an in-memory view
  of the store (kept current by :mod:`store.watch.home`), outcomes through the agent's own
  :class:`store.agent.pool_client.PoolClient` rules, request counts written behind.
- :mod:`store.proxy.picks`: choosing a row from a kept list of usable rows, exactly as
  ``policy.select`` would, without re-deriving every row's status per request.
- :mod:`store.proxy.inbound`: who may use the proxy (loopback rule, client-keys file).
- :mod:`store.proxy.stats`: traffic counters and the status file the console reads.
- :mod:`store.proxy.server`: the aiohttp server and its one pooled upstream session.

Imports ``store`` and aiohttp only; never Textual, ``tui`` or ``screens``.
"""

from __future__ import annotations

ALLOWED_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models")
DEFAULT_PORT = 8645
DRAIN_TIMEOUT = 10.0      # seconds SIGTERM waits for in-flight requests
# One status file per proxy (two proxies may share a home): hermes-admin-proxy-<port>.json
STATUS_PREFIX = "hermes-admin-proxy-"
CLIENT_KEYS_FILE = "hermes-admin-proxy-keys"
