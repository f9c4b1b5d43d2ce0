"""A home for the layout tests (a helper module, not a test module): the TUI sample plus a
pool with a 40-character name whose rows carry the longest reasons Hermes writes."""

from __future__ import annotations

from typing import Any

from store.paths import Home
from tests.conftest import make_row, write_store
from tests.tui_sample import NOW, sample_doc

LONG_POOL = "custom:together.ai-eu-west-1-production1"
assert len(LONG_POOL) == 40
# (id, label, code, reason, message)
LONG_ROWS = (
    ("t1t1t1", "together-primary", None, "manual_cooldown", "benched by the operator"),
    ("t2t2t2", "together-backup", 403, "personal-team-blocked:spending-limit",
     "Your team has reached its monthly spending limit; raise it in the console"),
    ("t3t3t3", "together-third", 401, "credential_pool_refresh_failure", "refresh failed"),
)
LONGEST = "personal-team-blocked:spending-limit"


def layout_doc(now: float = NOW) -> dict[str, Any]:
    doc = sample_doc(now)
    doc["credential_pool"][LONG_POOL] = [
        make_row(rid, label=label, priority=i, token=f"tg-0123456789abcdef0123456789T00{i}",
                 last_status="exhausted", last_status_at=now - 10, last_error_code=code,
                 last_error_reason=reason, last_error_message=message,
                 last_error_reset_at=now + 3600 * (i + 1))
        for i, (rid, label, code, reason, message) in enumerate(LONG_ROWS)]
    return doc


def write_layout_sample(home: Home, now: float = NOW) -> dict[str, Any]:
    doc = layout_doc(now)
    write_store(home, doc)
    return doc
