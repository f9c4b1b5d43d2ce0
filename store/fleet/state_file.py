"""The sync daemon's state file (``<home>/fleet-sync.json``): its last word on its connection.

Written by the daemon as one of hermes-admin's own files: never through a symlink and
never onto a special file (RELIABILITY 40; a link to auth.json there leaves auth.json
byte-identical). Read by ``fleet status`` and the console's fleet view, checked: a special
file, a giant, or a time that is not one reads as no word at all.
"""

from __future__ import annotations

import json
import time
from typing import Any

from store import authfile, outside, safeio
from store.errors import HermesAdminError
from store.paths import Home

STATE_FILE = "fleet-sync.json"
STATE_CAP = 64 * 1024
# The daemon writes its own clock's "now"; another reader's clock may lag it a little.
NOW_SLACK = 60.0


def write_state_file(home: Home, data: dict[str, Any]) -> None:
    """Replace the state file (0600, same directory, no fsync: it is a courtesy).
    Raises WriteFailed for a link or special file at its name, OSError for a missing home."""
    authfile.atomic_write_bytes(home.root / STATE_FILE, json.dumps(data).encode(), sync=False,
                                follow_link=False)


def read_state_file(home: Home, now: float | None = None) -> dict[str, Any] | None:
    """The daemon's last word, or None; ``disconnected_since`` is a checked epoch or None."""
    try:
        got = safeio.read_checked(home.root / STATE_FILE, STATE_CAP)
        data = json.loads(got[0].decode("utf-8")) if got is not None else None
    except (HermesAdminError, OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    since = data.get("disconnected_since")
    if since is not None:
        since = outside.epoch(since, "disconnected_since", now=time.time() if now is None else now,
                              ahead=NOW_SLACK)
    return {**data, "connected": data.get("connected") is True, "disconnected_since": since}
