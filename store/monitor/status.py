"""``hermes-admin-monitor.json``: what a running monitor tells the console and ``monitor status``.

Written under the home (for ``--root``, the root's own home) when the monitor starts, when an
alert opens or closes, after each delivery and when it stops; never on a timer, so an idle
monitor writes nothing. Atomic, 0600, no symlink followed (a link or special file at its name is
refused), no fsync (it is a view). It holds no secret: alert texts were redacted when the
alert was made, and delivery targets appear in Apprise's privacy form only.

Keys: ``version pid host state`` (running | stopped) ``started_at updated_at`` (epoch s),
``mode`` (home | root), ``path``, ``metrics`` (the scrape URL or null), ``rules`` (where the rules
came from), ``targets``, ``open_alerts`` (per alert: key, rule, severity, profile, pool, id,
label, fingerprint, title, text, since), ``last_deliveries`` (the newest last; per delivery:
time, key, rule, kind, target, result, attempts, error), ``pending`` (once stopped: what it
still owed, per notification its targets, :mod:`store.monitor.pending`) and ``pending_dropped``.
:func:`is_running` tells a live monitor from a file left behind.
"""

from __future__ import annotations

import json
from typing import Any

from store import safeio
from store.authfile import atomic_write_bytes
from store.errors import StoreUnreadable
from store.monitor import STATUS_FILE
from store.paths import Home
from store.pids import process_exists

VERSION = 1
STATUS_CAP = 16 * 1024 * 1024     # room for the alerts a stopped monitor owed 10,000 pools
KEEP_DELIVERIES = 50


def status_path(home: Home) -> Any:
    return home.root / STATUS_FILE


def write(home: Home, status: dict[str, Any]) -> None:
    """Replace the status file (raises WriteFailed for a symlink or special file at its name)."""
    data = json.dumps(status, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()
    atomic_write_bytes(status_path(home), data, sync=False, follow_link=False)


def read(home: Home) -> dict[str, Any] | None:
    """The status file, or None when there is none or it is not a monitor's."""
    try:
        got = safeio.read_checked(status_path(home), STATUS_CAP)
    except StoreUnreadable:
        return None
    if got is None:
        return None
    try:
        data = json.loads(got[0])
    except (ValueError, RecursionError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("version") == VERSION else None


def is_running(status: dict[str, Any] | None) -> bool:
    """True when the monitor that wrote *status* says it runs and its process is still there."""
    if not status or status.get("state") != "running":
        return False
    return process_exists(status.get("pid"))
