"""What the monitor view's tests share: a status as ``hermes-admin monitor`` writes it, a pid
that is gone, and the screen's text."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from store.paths import Home
from tests.tui_sample import NOW
from tui.app.console import HermesAdminApp

SIZE = (80, 24)
NOON = NOW + 12 * 3600     # the status's times fall on the console clock's day: shown as HH:MM:SS


def monitor_status(home: Home, now: float = NOON, pid: int | None = None, **over: Any) -> dict[str, Any]:
    """A monitor on *home* with two open alerts and two deliveries (one failed after retries)."""
    st: dict[str, Any] = {
        "version": 1, "pid": os.getpid() if pid is None else pid, "host": "ops-1", "state": "running",
        "started_at": now - 3600, "updated_at": now - 60, "mode": "home", "path": str(home.root),
        "metrics": "http://127.0.0.1:9464/metrics", "rules": str(home.root / "hermes-admin-monitor.yaml"),
        "targets": ["json://localhost:8099/hook", "slack://T...2/A...D/T...Q"],
        "open_alerts": [
            {"key": "key_dead/default/anthropic/d3ad00", "rule": "key_dead", "severity": "warning",
             "profile": "default", "pool": "anthropic", "id": "d3ad00", "label": "old-key",
             "fingerprint": "sk-ant…ab12", "title": "anthropic: key old-key went dead",
             "text": "anthropic/d3ad00 (old-key) is dead: 401 invalid key", "since": now - 900},
            {"key": "pool_empty/default/openrouter", "rule": "pool_empty", "severity": "critical",
             "profile": "default", "pool": "openrouter", "id": None, "label": None, "fingerprint": None,
             "title": "openrouter: no usable key", "text": "every key of openrouter is cooling", "since": now - 300},
        ],
        "last_deliveries": [
            {"time": now - 300, "key": "pool_empty/default/openrouter", "rule": "pool_empty", "kind": "firing",
             "target": "json://localhost:8099/hook", "result": "sent", "attempts": 1, "error": None},
            {"time": now - 299, "key": "pool_empty/default/openrouter", "rule": "pool_empty", "kind": "firing",
             "target": "slack://T...2/A...D/T...Q", "result": "failed", "attempts": 4,
             "error": "connection refused"},
            {"time": now - 120, "key": "long_cooldown/default/openrouter/a1b2c3", "rule": "long_cooldown",
             "kind": "resolved", "target": "json://localhost:8099/hook", "result": "sent", "attempts": 1,
             "error": None},
        ],
    }
    st.update(over)
    return st


def gone_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    out = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def screen_text(app: HermesAdminApp) -> str:
    return app.export_screenshot().replace("&#160;", " ")
