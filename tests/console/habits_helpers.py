"""Homes and proxy status files the #28 habit tests and snapshots share (a helper module, not
a test module): a pool with nothing usable, a proxy's recent requests, a headroom reading."""

from __future__ import annotations

import os

from store.agent.headroom import Headroom
from store.dialects.readings import Reading
from store.paths import Home
from store.pools.view import row_fingerprint
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW, proxy_status, write_sample

FIVE_H = Reading("5h", "anthropic-unified", NOW - 2, utilization=0.62, reset_at=NOW + 3600)


def all_cooling(home: Home, second_until: float = NOW + 900) -> None:
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", label="one", priority=0, last_status="exhausted", last_status_at=NOW - 10,
                 last_error_code=429, last_error_reset_at=NOW + 300),
        make_row("bbbbbb", label="two", priority=1, last_status="exhausted", last_status_at=NOW - 10,
                 last_error_code=429, last_error_reset_at=second_until),
    ], "nous": [make_row("cccccc", label="fine", priority=0)]}))


def proxy_file(home: Home, port: int, recent: list[dict], pid: int | None = None) -> None:
    from store.proxy.observing.stats import status_path, write_status

    st = proxy_status(pid=pid or os.getpid())
    st.update(port=port, recent_requests=recent, updated_at=NOW)
    write_status(home, st)
    assert status_path(home, port).exists()


def req(at: float, pool: str, rid: str, status: int, outcome: str, route: str = "openrouter") -> dict:
    return {"at": at, "rid": "r", "path": "/v1/chat/completions", "route": route, "pool": pool, "id": rid,
            "status": status, "ms": 12.5, "upstream_ms": 10.0, "tries": 1, "outcome": outcome}


def seed_sidecar(home: Home, readings: dict[str, list[Reading]], *, fp_of=None) -> None:
    """The sample home, with *readings* recorded for its openrouter rows (by id)."""
    doc = write_sample(home)
    rows = {r["id"]: r for r in doc["credential_pool"]["openrouter"]}
    room = Headroom(home, clock=lambda: NOW)
    for rid, rs in readings.items():
        fp = fp_of(rid) if fp_of else row_fingerprint("openrouter", rows[rid])
        room.record("openrouter", rid, fp, rs)
    assert room.flush(force=True)
