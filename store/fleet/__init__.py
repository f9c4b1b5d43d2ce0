"""Fleet: hosts that share keys share their cooldowns through Redis/Valkey.

No Textual import here. What a fleet view needs:

- ``connect(url)`` -> redis client; ``FleetClient(r, host)``;
- ``FleetClient.snapshot()`` -> :class:`FleetSnapshot` (hosts with heartbeats and lag,
  every fleet fingerprint's :class:`FleetState` and which hosts hold it);
- ``bench_fleet_wide`` / ``reset_fleet_wide``: one publication, applied by every host's sync;
- ``local_keys(home, secret)``: this host's rows by fleet fingerprint, to label the view;
- ``read_state_file(home)``: the local daemon's connection state ("disconnected since").
"""
