"""Monitor samples built in memory for the rule and alert tests: one profile of one pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store.monitor.sample import ProfileSample, Sample
from store.paths import Home
from store.pools.view import build_pools
from tests.conftest import make_row, make_store

NOW = 1_800_000_000.0
HOME = Home(Path("/nonexistent-monitor-home"))


def sample(rows: list[dict[str, Any]], now: float = NOW, **kw: Any) -> Sample:
    """Profile ``default`` with *rows* as its ``openrouter`` pool (``findings`` and the
    ProfileSample's own keywords pass through)."""
    findings = kw.pop("findings", [])
    return Sample([ProfileSample("default", HOME, build_pools(make_store({"openrouter": rows}), now=now), None,
                                 now, **kw)], findings)


def bench(rid: str, i: int, seconds: float, code: int = 429, **kw: Any) -> dict[str, Any]:
    """Row *rid* at priority *i*, benched at NOW with *code* for *seconds*."""
    return make_row(rid, priority=i, token=f"sk-or-v1-{i:048d}", last_status="exhausted", last_status_at=NOW,
                    last_error_code=code, last_error_reset_at=NOW + seconds, **kw)
