"""What the proxy panel's tests share: a status as the proxy writes it, the screen's text,
the panel and its tables' cells, and the client key canary."""

from __future__ import annotations

import os
import time
from typing import Any

from textual.widgets import DataTable

from screens.proxy_view import ProxyScreen
from store.proxy.observing.stats import BUCKETS
from tui.app.console import HermesAdminApp

CLIENT_KEY = "hapk-client-canary-0000000000000000000000C1"
SIZE = (80, 24)


def status(**over: Any) -> dict[str, Any]:
    """A status as the proxy writes it: on fallback, two credentials, two pools."""
    now = time.time()
    reqs = [0] * (BUCKETS - 3) + [4, 7, 2]
    limited = [0] * (BUCKETS - 3) + [0, 3, 1]
    st: dict[str, Any] = {
        "pid": os.getpid(), "host": "127.0.0.1", "port": 8645, "url": "http://127.0.0.1:8645/v1",
        "state": "running", "started_at": now - 120, "updated_at": now, "primary": "openrouter",
        "active": "nous", "on_fallback_since": now - 60, "next_restore_check": now + 30,
        "chain": [{"name": "openrouter", "pool": "openrouter", "model": None, "active": False, "rows": 3,
                   "usable": 0, "cooling": 3, "dead": 0},
                  {"name": "nous", "pool": "nous", "model": "fallback-model", "active": True, "rows": 1,
                   "usable": 1, "cooling": 0, "dead": 0}],
        "in_flight": 2, "pending_counts": 0, "inbound_auth": False,
        "credentials": [{"pool": "nous", "id": "ns0aaa", "label": "key-ns0aaa", "in_flight": 2,
                         "requests_per_minute": 9},
                        {"pool": "openrouter", "id": "or0aaa", "label": None, "in_flight": 0,
                         "requests_per_minute": 4}],
        "pools": {"nous": {"bucket_seconds": 10, "requests": [0] * (BUCKETS - 1) + [9],
                           "rate_limited": [0] * BUCKETS},
                  "openrouter": {"bucket_seconds": 10, "requests": reqs, "rate_limited": limited}},
        "requests_total": 22, "errors_total": 0, "stream_failures": 0,
    }
    st.update(over)
    return st


def screen_text(app: HermesAdminApp) -> str:
    return app.export_screenshot().replace("&#160;", " ")


def panel_of(app: HermesAdminApp) -> ProxyScreen:
    screen = app.screen
    assert isinstance(screen, ProxyScreen)
    return screen


def cells(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
