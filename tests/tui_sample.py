"""Sample homes and app helpers the TUI tests share (a helper module, not a test module)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from store.paths import Home
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.app.console import HermesAdminApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable

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
