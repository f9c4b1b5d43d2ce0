"""What the proxy shows of itself: the counters and status file (:mod:`.stats`), its
Prometheus metrics (:mod:`.metrics`), the request log and latency histograms
(:mod:`.requests`), and the chain as seen from outside (:mod:`.report`).

Observing reads the routing; the routing never reports to it directly.
"""
