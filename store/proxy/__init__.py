"""The subscription proxy: any OpenAI-compatible app served from the home's pools.

- :mod:`store.proxy.routing.chain`: the primary pool and the fallback chain on an in-memory view
  of the store (kept current by :mod:`store.watch.home`), a key's faults through the
  agent's own :class:`store.agent.pool_client.PoolClient` rules; before any "no key"
  answer it looks again (:meth:`~store.proxy.routing.chain.Chain.look_again`).
- :mod:`store.proxy.routing.eligibility`: may this row serve this request now, as small named
  filters (protocol, cooling, model, breaker, headroom, tried), for selection, the status
  file and the reason a 503 gives.
- :mod:`store.proxy.routing.verdict`: each answer judged once into a
  :class:`~store.agent.outcomes.Verdict` (:mod:`store.agent.judge`) that every consumer takes.
- :mod:`store.proxy.routing.picks`: choosing a row from a kept list of usable rows, exactly as
  ``policy.select`` would, without re-deriving every row's status per request.
- :mod:`store.proxy.routing.counts`: request counts written behind, once a second.
- :mod:`store.proxy.routing.direct`: benches of keys taken from the home's ``.env``.
- :mod:`store.proxy.routing.upstreams`: default base URLs and the circuit breakers of failing
  upstreams (a route's faults, in memory only).
- :mod:`store.proxy.observing.report`: the chain as the status file and a 503 show it.
- :mod:`store.proxy.edge.inbound`: who may use the proxy (loopback rule, client-keys file);
  :mod:`store.proxy.edge.door`: what every request passes first (key, body, model name), and the
  redacted answer to a request that cannot be parsed.
- :mod:`store.proxy.edge.wire`: headers kept or dropped, the raw query, error bodies, reading
  and relaying a provider's error answer.
- :mod:`store.proxy.edge.redacting`: the home's secrets as fingerprints in every way out
  (answers, log).
- :mod:`store.proxy.routing.protocols`: the paths of each protocol (OpenAI Chat Completions,
  Anthropic Messages, OpenAI Responses) and which routes speak which.
- :mod:`store.proxy.edge.anthropic`: Anthropic-shaped errors. How each provider wants its
  credential and its paths is :mod:`store.dialects`'s; the retry loop names no provider.
- :mod:`store.proxy.routing.model_benches`, :mod:`store.proxy.routing.request_client`,
  :mod:`store.proxy.routing.overlay`: per-model benches (newer Hermes's ``model_cooldowns``), the
  agent's outcome rules for one request (a composed ``PoolClient``), benches the store does
  not show yet.
- :mod:`store.proxy.forward`: one request's way along the chain, judged and relayed;
  :mod:`store.proxy.edge.answers`: the answers it gives when it relays no success.
- :mod:`store.proxy.edge.relay`: a success on its way to the client (a stream redacted over its
  chunks, a cut framed, a departed client let go); :mod:`store.proxy.edge.sse`: the stream's
  hold-back redaction, event boundaries and each protocol's error event.
- :mod:`store.proxy.loop`: the event loop the proxy runs on (uvloop where installed).
- :mod:`store.proxy.offloop`: blocking calls in daemon threads (a bounded shutdown).
- :mod:`store.proxy.observing.stats`: traffic counters and the status file the console reads.
- :mod:`store.proxy.server`: the aiohttp server, its one pooled upstream session, the
  background work and the bounded shutdown.

Imports ``store`` and aiohttp only; never Textual, ``tui`` or ``screens``.
"""

from __future__ import annotations

ALLOWED_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
                 "/v1/messages", "/v1/messages/count_tokens", "/v1/responses")
DEFAULT_PORT = 8645
DRAIN_TIMEOUT = 10.0      # seconds SIGTERM waits for in-flight requests
BODY_TIMEOUT = 60.0       # seconds a request body may take to arrive (a slow client is cut)
# One status file per proxy (two proxies may share a home): hermes-admin-proxy-<port>.json
STATUS_PREFIX = "hermes-admin-proxy-"
CLIENT_KEYS_FILE = "hermes-admin-proxy-keys"
