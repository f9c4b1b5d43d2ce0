"""A root of profiles for the console tests (a helper module, not a test module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store.paths import Home
from store.profiles.root import Root
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW
from tui.app.root_console import RootApp
from tui.services.clock import FakeClock
from tui.widgets import CredentialTable

SHARED = "sk-or-v1-SHAREDcanary0123456789abcdQ1"
OWN_A = "sk-or-v1-TEAMAcanary0123456789abcdefA2"
OWN_B = "sk-ant-TEAMBcanary0123456789abcdefB3"
CANARIES = (SHARED, OWN_A, OWN_B)
SEP = "\x1f"


def home(root: Root, name: str) -> Home:
    h = root.profile(name).home
    h.root.mkdir(parents=True, exist_ok=True)
    return h


def make_root(tmp_path: Path) -> Root:
    """default + team-a + team-b; the key SHARED is in default and team-a (same id in both)."""
    root = Root(tmp_path / "hermes")
    benched = {"last_status": "exhausted", "last_status_at": NOW - 30, "last_error_code": 429,
               "last_error_reason": "rate_limit_exceeded", "last_error_reset_at": NOW + 3600}
    write_store(home(root, "default"), make_store({
        "openrouter": [make_row("a1a1a1", label="ops-key", token=SHARED, **benched)]}))
    home(root, "default").config.write_text("model:\n  provider: openrouter\n  default: openai/gpt-5-mini\n")
    write_store(home(root, "team-a"), make_store({
        "openrouter": [make_row("a1a1a1", label="copied", token=SHARED, **benched),
                       make_row("b2b2b2", label="own-a", token=OWN_A, priority=1)]}))
    home(root, "team-a").config.write_text(
        "model:\n  provider: openrouter\n  default: openai/gpt-5\n"
        "fallback_providers:\n  - provider: anthropic\n    model: claude-sonnet-4-5\n"
        "  - provider: nous\n    model: hermes-4\n")
    write_store(home(root, "team-b"), make_store({
        "anthropic": [make_row("c3c3c3", label="own-b", token=OWN_B)]}))
    return root


def root_app(root: Root, **kw: Any) -> RootApp:
    return RootApp(root, clock=kw.pop("clock", None) or FakeClock(NOW), watch=kw.pop("watch", False),
                   tick=False, **kw)


def table(app: RootApp) -> CredentialTable:
    return app.dashboard.query_one(CredentialTable)


def row_key(profile: str, pool: str, rid: str) -> str:
    return f"cred{SEP}{profile}/{pool}{SEP}{rid}"


def banner_key(profile: str) -> str:
    return f"pool{SEP}profile{SEP}{profile}"


def screen_text(app: RootApp) -> str:
    """Every line the table paints plus the chrome's text (for canaries)."""
    t = table(app)
    lines = [" ".join(t.row_texts(k)) for k in t.order]
    return "\n".join(lines)
