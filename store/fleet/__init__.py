"""Fleet: hosts that share keys share their cooldowns through Redis/Valkey.

No Textual import here. What a fleet view needs:

- ``connect(url)`` -> redis client; ``FleetClient(r, host)``;
- ``FleetClient.snapshot()`` -> :class:`FleetSnapshot` (hosts with heartbeats and lag,
  every fleet fingerprint's :class:`FleetState` and which hosts hold it);
- ``bench_fleet_wide`` / ``reset_fleet_wide``: one publication, applied by every host's sync;
- ``local_keys(home, secret)``: this host's rows by fleet fingerprint, to label the view;
- ``read_state_file(home)``: the local daemon's connection state ("disconnected since").
"""

from __future__ import annotations

from redis import RedisError

from .api import bench_fleet_wide, local_keys, reset_fleet_wide
from .client import DEFAULT_NAMESPACE, FleetClient, connect, parse_event
from .keys import fleet_fingerprint, load_secret, row_fleet_fp, safe_url, scrub, short
from .model import DEAD, EXHAUSTED, OK, FleetSnapshot, FleetState, HostInfo, KeyInfo
from .sync import STATE_FILE, SyncDaemon, read_state_file

__all__ = [
    "DEAD", "DEFAULT_NAMESPACE", "RedisError", "EXHAUSTED", "OK", "STATE_FILE", "FleetClient", "FleetSnapshot",
    "FleetState", "HostInfo", "KeyInfo", "SyncDaemon", "bench_fleet_wide", "connect",
    "fleet_fingerprint", "load_secret", "local_keys", "parse_event", "read_state_file",
    "reset_fleet_wide", "row_fleet_fp", "safe_url", "scrub", "short",
]
