"""The proxy's edge: what a client's request passes on its way in and what leaves on its way out.

- :mod:`.door`: the inbound key, the body's size and time, the model name, before the chain;
- :mod:`.inbound`: who may use the proxy (loopback, client keys);
- :mod:`.wire`: headers kept or dropped, the raw query, error bodies, an upstream's error read;
- :mod:`.relay` and :mod:`.sse`: a success relayed, a stream redacted over its whole length,
  its cut closed before the proxy's own error event;
- :mod:`.redacting`: keys shown only as fingerprints in everything that leaves;
- :mod:`.answers` and :mod:`.anthropic`: the proxy's own answers, in each protocol's shape.

The edge knows the routing (which row served) and the observing (the request log); neither
knows the edge.
"""
