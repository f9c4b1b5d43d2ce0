"""``hermes-admin monitor``: Prometheus metrics and Apprise alerts for a home or a root.

- :mod:`store.monitor.rules`: the rules file (one small YAML file of hermes-admin's own),
  validated with errors that name the field; the built-in defaults.
- :mod:`store.monitor.sample`: what one evaluation looks at (each profile's pools, the
  proxies' status files, the headroom sidecar), and a credential's state at any later time.
- :mod:`store.monitor.conditions`: the rules applied to a sample (pure, clock passed in): the
  conditions that hold, and when the next one can change by the clock alone.
- :mod:`store.monitor.burn`: ``burn_rate``, a subscription window projected to run out, from
  the history of its readings; :mod:`store.monitor.budget`: ``budget``, a key or pool at a
  share of its budget; both walk the pools through :mod:`store.monitor.keyed` (the pools a
  rule applies to, each key's readings, the one way a per-key condition is made);
  :mod:`store.monitor.judge`: every rule over one sample (pure).
- :mod:`store.monitor.spend`: known spend, read read-only from the usage ledger (unknown, never
  zero, when it cannot be read).
- :mod:`store.monitor.alerts`: dedupe, one recovery per end, the quiet period (pure).
- :mod:`store.monitor.metrics`: the prometheus_client collector built from the latest sample
  at scrape time (families, labels made inert, the proxy's counters).
- :mod:`store.monitor.exposition`: the collector's text, prometheus_client's bytes kept per series.
- :mod:`store.monitor.delivery`: Apprise delivery, redacted, retried with a bound, audited.
- :mod:`store.monitor.dispatch`: a queue per target, worked concurrently with a bound;
  :mod:`store.monitor.pending`: what a stopping monitor still owes, kept for the next run.
- :mod:`store.monitor.status`: ``hermes-admin-monitor.json``, what the console reads.
- :mod:`store.monitor.daemon`: the long-running process that wires the watchers to the rest.

May import ``store`` (the watchers through their public entry points only), aiohttp,
prometheus_client, apprise, PyYAML and sqlite3 (the ledger, read-only); never Textual,
``tui`` or ``screens``. The rules' logic is pure, with IO at the edges (sample reading, the
ledger, delivery, the status file, the daemon).
"""

from __future__ import annotations

# The monitor's own files under the home (or the root, for a whole root).
STATUS_FILE = "hermes-admin-monitor.json"
RULES_FILE = "hermes-admin-monitor.yaml"
DEFAULT_METRICS = "127.0.0.1:9464"
