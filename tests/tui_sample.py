"""Sample homes and app helpers the TUI tests share (a helper module, not a test module)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

from store.paths import Home
from store.proxy.observing.stats import BUCKETS
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable
from tui.widgets.plain_table import FittedTable

NOW = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC: fixed, so snapshots never move
CANARY = "sk-or-v1-CANARY0123456789abcdefXYZ9"


def sample_doc(now: float = NOW) -> dict[str, Any]:
    """Two pools: ok/cooling/cooling-by-ms-reset in openrouter, one dead row in anthropic."""
    return make_store({
        "openrouter": [
            make_row("a1b2c3", label="primary", priority=0, token="sk-or-v1-0123456789abcdefAAA1",
                     request_count=12),
            make_row("d4e5f6", label="backup-key", priority=1, token=CANARY,
                     last_status="exhausted", last_status_at=now - 30, last_error_code=402,
                     last_error_reason="insufficient_credits",
                     last_error_message="Insufficient credits", request_count=3,
                     custom_note={"team": "ops"}),
            make_row("0f0f0f", label="third", priority=2, token="sk-or-v1-abcdefabcdef0123QQQ2",
                     last_status="exhausted", last_status_at=now - 100, last_error_code=429,
                     last_error_reason="rate_limit_exceeded", last_error_message="slow down",
                     last_error_reset_at=(now + 95) * 1000, request_count=40,
                     model_cooldowns={"openai/gpt-5": now + 600}),
        ],
        "anthropic": [
            make_row("aa11bb", label="claude", priority=0, source="claude_code", auth_type="oauth",
                     secret_fingerprint="sha256:fedcba9876543210", last_status="dead",
                     last_status_at=now - 5000, last_error_code=401,
                     last_error_reason="invalid_grant", last_error_message="refresh failed"),
        ],
    })


def write_sample(home: Home, now: float = NOW) -> dict[str, Any]:
    doc = sample_doc(now)
    write_store(home, doc)
    return doc



def visible_text(app: HermesAdminApp) -> str:
    """The visible text of the current screen, from its SVG screenshot (spans joined in order)."""
    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))).replace("\xa0", " ")


def app_for(home: Home, **kw: Any) -> HermesAdminApp:
    return HermesAdminApp(home, clock=kw.pop("clock", None) or FakeClock(NOW), watch=False,
                          tick=False, **kw)


def key(pool: str, rid: str) -> str:
    return f"cred\x1f{pool}\x1f{rid}"


def table_of(app: HermesAdminApp) -> CredentialTable:
    return app.dashboard.query_one(CredentialTable)


def rows_by_id(home: Home, pool: str = "openrouter") -> dict[str, dict]:
    return {r["id"]: r for r in read_doc(home)["credential_pool"].get(pool, [])}


def notes(app: HermesAdminApp) -> list[str]:
    """Every message the console told the operator (the flash line's log), oldest first."""
    return ["\n".join(m.lines) for m in app.messages]


def audit_lines(home: Home) -> list[dict]:
    if not home.audit.exists():
        return []
    return [json.loads(line) for line in home.audit.read_text().splitlines()]


async def settle(app: HermesAdminApp, pilot: Any) -> None:
    """Wait for every write worker, then let the app handle what they posted (bounded)."""
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def fitted(pilot: Any) -> None:
    """Wait (bounded) until every table that fits its columns to its width has done so at the
    width it has now: on a busy machine the refit can land after a pause."""
    for _ in range(100):
        tables = [t for s in pilot.app.screen_stack for t in s.query(FittedTable) if t.size.width]
        if all(t.fitted == t.size.width for t in tables):
            return
        await pilot.pause()
    raise AssertionError("the tables were never fitted to their width")


async def ready(pilot: Any) -> None:
    """The screen a snapshot may take (bounded): every worker done and what it posted handled,
    every fitted table at its width, and one more pause so the last refresh is painted. On a
    busy machine a worker's result or a refit can land after a plain pause. A text field's
    cursor stops blinking and stays shown: a slow capture must not land on its off half-second."""
    await settle(pilot.app, pilot)
    await fitted(pilot)
    for screen in pilot.app.screen_stack:
        for field in screen.query("Input, TextArea"):
            field.cursor_blink = False
    await pilot.pause()


def proxy_status(now: float = NOW, pid: int = 4242) -> dict[str, Any]:
    """A proxy on fallback, as its status file would say (``store.proxy.observing.stats.write_status``)."""
    buckets = BUCKETS
    return {
        "pid": pid, "host": "127.0.0.1", "port": 8645, "url": "http://127.0.0.1:8645/v1",
        "state": "running", "started_at": now - 3600, "updated_at": now, "primary": "openrouter",
        "active": "nous", "on_fallback_since": now - 600, "next_restore_check": now + 120,
        "chain": [{"name": "openrouter", "pool": "openrouter", "model": None, "active": False, "rows": 3,
                   "usable": 0, "cooling": 2, "dead": 1},
                  {"name": "nous", "pool": "nous", "model": "hermes-4", "active": True, "rows": 1,
                   "usable": 1, "cooling": 0, "dead": 0}],
        "in_flight": 2, "pending_counts": 0, "inbound_auth": True,
        "credentials": [{"pool": "nous", "id": "ns0aaa", "label": "nous-main", "in_flight": 2,
                         "requests_per_minute": 9},
                        {"pool": "openrouter", "id": "a1b2c3", "label": "primary", "in_flight": 0,
                         "requests_per_minute": 4}],
        "pools": {"nous": {"bucket_seconds": 10, "requests": [i % 5 for i in range(buckets)],
                           "rate_limited": [0] * buckets},
                  "openrouter": {"bucket_seconds": 10, "requests": [(i * 7) % 9 for i in range(buckets)],
                                 "rate_limited": [1 if i % 11 == 0 else 0 for i in range(buckets)]}},
        "requests_total": 1234, "errors_total": 5, "stream_failures": 0,
        "affinity": {"conversations": {"openrouter": {"a1b2c3": 3}}, "pins": 3, "moved": {}},
    }


async def on_row(app: HermesAdminApp, pilot: Any, pool: str, rid: str) -> None:
    assert table_of(app).move_to_key(key(pool, rid))
    await pilot.pause()


def snapshot_home(base: Path, name: str, *, create: bool = True) -> Home:
    """A snapshot test's home, ``<base>/<name>``. Snapshot tests set ``$HOME`` to *base* (a
    per-run folder: tests/console/conftest.py ``home_at``), so the screen shows ``~/<name>``
    whatever the folder is, and two runs at once share nothing."""
    root = base / name
    shutil.rmtree(root, ignore_errors=True)
    if create:
        root.mkdir(parents=True, mode=0o700)
    return Home(root)


def make_app(home: Home, **kw) -> HermesAdminApp:
    app = HermesAdminApp(home, clock=FakeClock(NOW), watch=False, tick=False, **kw)
    # Tab underlines and scrolls animate; a snapshot must not depend on when it is taken.
    app.animation_level = "none"
    return app


# A home with a config.yaml that carries the operator's comments.
CONFIG = """\
# Operator notes: keep these.
model:
  provider: nous
  default: hermes-4   # the primary
credential_pool_strategies:
  openrouter: least_used   # cheap keys first
fallback_providers:
  # first choice when nous is out
  - provider: openrouter
    model: anthropic/claude-sonnet-4
  - provider: custom
    model: local
    base_url: http://localhost:8000/v1
provider_routing:
  sort: price   # watch the bill
  ignore: [together]
unknown_section: {kept: true}
"""


def config_home(home: Home) -> None:
    write_sample(home)
    home.config.write_text(CONFIG)


async def tour_events_and_config(app: HermesAdminApp, pilot: Any, seen: dict[str, str],
                                 text: Any = visible_text) -> None:
    """After a reload: the events log, then each tab of the config view, into *seen* by name
    (what the secret and hostile-value tours of the console read)."""
    app.reload()
    await pilot.press("e")
    await pilot.pause()
    seen["events"] = text(app)
    await pilot.press("e")
    await pilot.press("v")
    await pilot.pause()
    for tab in "1234":
        await pilot.press(tab)
        await pilot.pause()
        seen[f"config tab {tab}"] = text(app)
