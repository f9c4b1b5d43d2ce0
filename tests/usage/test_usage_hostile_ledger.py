"""A usage ledger written outside the usage feed (forged, damaged) with negative, NaN, infinite
or absurd counts and costs: ``usage --json`` (by key) and ``usage --by model`` agree on every
pool's totals, and neither shows a negative, NaN or infinite number.

Found by a hostile session: the values were checked after SQLite summed them per group, so a
negative cost cancelled a real one in one grouping and stood alone (and was dropped) in the
other. The rule now is the feed's (store.dialects.readings.usage_block): a hostile value is
dropped where it is stored, row by row, before any sum (a dropped cost makes that answer's
cost unknown), in the one query both views read (store.usage.report).
"""

from __future__ import annotations

import json
import math
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.usage.ledger import HOURLY_TABLE, ledger_path
from store.usage.record import REQUESTS_TABLE
from tests.cli.inprocess import run_main
from tests.conftest import make_store, write_store

TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
HOSTILE = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-5, max_value=5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1.5, -0.0, 0.25, 3.0, 1e6, 1e6 + 1, 1e12, 1e12 + 1, "12", "-3", "inf", "NaN", "x", b"\x00"]),
)
STATUS = st.sampled_from(["actual", "estimated", "included", "unknown", "forged"])


def _row(draw: Any, at: float) -> dict[str, Any]:
    return {"at": at, "pool": draw(st.sampled_from(["openrouter", "anthropic"])),
            "row_id": draw(st.sampled_from(["k1", "k2", None])), "fingerprint": "sk-or-…a1B2",
            "model": draw(st.sampled_from(["m/a", "m/b", None])), "endpoint": "/v1/chat/completions",
            "route": None, **{t: draw(HOSTILE) for t in TOKENS}, "cost_usd": draw(HOSTILE),
            "cost_status": draw(STATUS), "partial": draw(st.sampled_from([0, 1, -4, 2.5]))}


@st.composite
def ledgers(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-request rows in the hour in progress (read from the rows) and roll-ups of the
    window's whole hours before it (read from the roll-ups)."""
    now = time.time()
    this_hour = int(now // 3600)
    requests = [_row(draw, this_hour * 3600 + draw(st.floats(0, 1)) * (now - this_hour * 3600))
                for _ in range(draw(st.integers(0, 8)))]
    hourly = []
    for _ in range(draw(st.integers(0, 6))):
        r = _row(draw, 0.0)
        r.pop("at"), r.pop("route")
        hourly.append({"hour": this_hour - draw(st.integers(2, 20)), **r, "row_id": r["row_id"] or "",
                       "model": r["model"] or "", "requests": draw(HOSTILE)})
    return requests, hourly


def _forge(home: Home, requests: list[dict[str, Any]], hourly: list[dict[str, Any]]) -> None:
    # The writer's tables, less their NOT NULLs (a forger writes what it likes), then forged rows.
    with sqlite3.connect(ledger_path(home.root)) as conn:
        for ddl in (REQUESTS_TABLE, HOURLY_TABLE):
            conn.execute(ddl.replace(" NOT NULL", ""))
        for table, rows in (("requests", requests), ("hourly", hourly)):
            for i, r in enumerate(rows):
                if table == "hourly":
                    r = {**r, "endpoint": f"/e{i}"}               # one roll-up row per forged row
                cols = ", ".join(r)
                conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(r))})", list(r.values()))


def _numbers(node: Any) -> list[float]:
    if isinstance(node, dict):
        return [n for v in node.values() for n in _numbers(v)]
    if isinstance(node, list):
        return [n for v in node for n in _numbers(v)]
    return [node] if isinstance(node, (int, float)) and not isinstance(node, bool) else []


def _totals(home: Home, *argv: str) -> dict[str, dict[str, Any]]:
    code, out, err = run_main(["usage", "--home", str(home.root), "--since", "24h", "--json", *argv], b"")
    assert code == 0, err
    doc = json.loads(out, parse_constant=lambda c: float(c))      # NaN/Infinity would be read, then refused
    for n in _numbers(doc["pools"]):
        assert math.isfinite(n) and n >= 0, (n, argv)
    return {pool: body["totals"] for pool, body in doc["pools"].items()}


def _agree(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert {k: a[k] for k in ("requests", "partial", "cost_status", *TOKENS)} == \
           {k: b[k] for k in ("requests", "partial", "cost_status", *TOKENS)}
    for k in ("cost_usd", "cost_known_usd"):
        assert (a[k] is None) == (b[k] is None), (k, a[k], b[k])
        if a[k] is not None:
            assert math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12), (k, a[k], b[k])


@settings(max_examples=120, deadline=None)
@given(ledger=ledgers())
def test_a_forged_ledger_reads_the_same_by_key_and_by_model(ledger) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "hermes-home")
        write_store(home, make_store({}))
        _forge(home, *ledger)
        by_key, by_model, by_day = _totals(home), _totals(home, "--by", "model"), _totals(home, "--by", "day")
        assert set(by_key) == set(by_model) == set(by_day)
        for pool in by_key:
            _agree(by_key[pool], by_model[pool])
            _agree(by_key[pool], by_day[pool])


def test_a_negative_cost_cancels_nothing_and_a_dropped_cost_is_unknown(tmp_home) -> None:
    """The case the hostile session found, spelled out: one real answer ($2) and one forged
    (-$2, another model). Before: by key $0 (summed, then checked), by model $2."""
    write_store(tmp_home, make_store({}))
    now = time.time()
    at = now - (now % 3600) * 0.5
    row = {"pool": "openrouter", "row_id": "k1", "fingerprint": "f", "endpoint": "/v1/chat/completions",
           "route": None, "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0,
           "cache_write_tokens": 0, "reasoning_tokens": 0, "cost_status": "actual", "partial": 0}
    _forge(tmp_home, [{"at": at, **row, "model": "m/a", "cost_usd": 2.0},
                      {"at": at, **row, "model": "m/b", "cost_usd": -2.0, "output_tokens": -7}], [])
    by_key, by_model = _totals(tmp_home)["openrouter"], _totals(tmp_home, "--by", "model")["openrouter"]
    _agree(by_key, by_model)
    assert by_key["output_tokens"] == 5 and by_key["requests"] == 2
    assert by_key["cost_known_usd"] == 2.0 and by_key["cost_status"] == "unknown" and by_key["cost_usd"] is None
