"""spend_of: known spend from the usage ledger, read-only; a ledger that cannot be read is
unknown (None, with a notice), never zero.

The ledger here is made the way its writer makes it (store.usage.record.REQUESTS_TABLE) with
the sqlite3 module. Controls: the same rows counted with every status and no bound show what
the filters leave out; a plain (link-following) open of a symlinked ledger reads the file the
link points to, which spend_of refuses.
"""

from __future__ import annotations

import calendar
import math
import os
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.monitor import spend
from store.monitor.spend import Spend, spend_of, window_start
from store.paths import Home
from store.usage.record import LEDGER_FILE, REQUESTS_TABLE

NOW = float(calendar.timegm((2026, 3, 15, 12, 0, 0, 0, 0, 0)))
DAY = float(calendar.timegm((2026, 3, 15, 0, 0, 0, 0, 0, 0)))
MONTH = float(calendar.timegm((2026, 3, 1, 0, 0, 0, 0, 0, 0)))


def ledger(home: Home, rows: list[tuple[float, str, str | None, object, str]]) -> Path:
    path = home.root / LEDGER_FILE
    con = sqlite3.connect(path)
    con.execute(REQUESTS_TABLE)
    con.executemany("INSERT INTO requests (at, pool, row_id, cost_usd, cost_status) VALUES (?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    return path


ROWS = [
    (NOW - 60, "openrouter", "k1", 1.25, "actual"),
    (NOW - 30, "openrouter", "k1", 0.50, "estimated"),
    (NOW - 20, "openrouter", "k1", 9.00, "included"),      # no dollars
    (NOW - 10, "openrouter", "k1", None, "unknown"),
    (NOW - 5, "openrouter", "k2", 0.25, "actual"),
    (DAY - 1, "openrouter", "k1", 3.00, "actual"),          # yesterday: this month, not today
    (MONTH - 1, "openrouter", "k1", 100.0, "actual"),       # last month
    (NOW - 5, "anthropic", "k1", 7.0, "actual"),            # another pool
    (NOW - 5, "openrouter", "k2", -4.0, "actual"),          # hostile: negative
    (NOW - 5, "openrouter", "k2", 1e300, "actual"),         # hostile: absurd
    (NOW - 5, "openrouter", "k2", "a lot", "actual"),       # hostile: wrong type
]


def test_known_spend_per_key_and_pool_per_calendar_period(tmp_home: Home) -> None:
    ledger(tmp_home, ROWS)
    assert spend_of(tmp_home, "openrouter", "k1", "day", now=NOW) == pytest.approx(1.75)
    assert spend_of(tmp_home, "openrouter", "k2", "day", now=NOW) == pytest.approx(0.25)
    assert spend_of(tmp_home, "openrouter", None, "day", now=NOW) == pytest.approx(2.00)
    assert spend_of(tmp_home, "openrouter", "k1", "month", now=NOW) == pytest.approx(4.75)
    assert spend_of(tmp_home, "openrouter", "nobody", "day", now=NOW) == 0.0    # readable: a known zero
    assert spend_of(tmp_home, "anthropic", None, "day", now=NOW) == pytest.approx(7.0)


def test_control_without_the_filters_the_same_rows_sum_otherwise(tmp_home: Home) -> None:
    path = ledger(tmp_home, ROWS)
    con = sqlite3.connect(path)
    (everything,) = con.execute("SELECT SUM(cost_usd) FROM requests WHERE pool = 'openrouter' AND at >= ? "
                                "AND typeof(cost_usd) = 'real'", (DAY,)).fetchone()
    con.close()
    assert everything != pytest.approx(2.00)


@pytest.mark.parametrize("make, says", [
    (lambda p: None, "no usage ledger"),
    (lambda p: p.write_bytes(b"this is not sqlite" * 100), "corrupt"),
    (lambda p: sqlite3.connect(p).execute("CREATE TABLE other (x)").connection.commit(), "no requests table"),
])
def test_a_ledger_that_cannot_be_read_is_unknown_with_a_notice(tmp_home: Home, make, says: str) -> None:
    make(tmp_home.root / LEDGER_FILE)
    notes: list[str] = []
    assert spend_of(tmp_home, "openrouter", "k1", "day", now=NOW, notes=notes) is None
    assert len(notes) == 1 and says in notes[0]


def test_a_locked_ledger_is_unknown_not_zero(tmp_home: Home) -> None:
    path = ledger(tmp_home, ROWS)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        notes: list[str] = []
        assert spend_of(tmp_home, "openrouter", "k1", "day", now=NOW, notes=notes) is None
        assert "locked" in notes[0]
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert spend_of(tmp_home, "openrouter", "k1", "day", now=NOW) == pytest.approx(1.75)


def test_a_symlinked_ledger_is_never_followed(tmp_home: Home, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = ledger(Home(elsewhere), ROWS)
    os.symlink(real, tmp_home.root / LEDGER_FILE)
    notes: list[str] = []
    assert spend_of(tmp_home, "openrouter", "k1", "day", now=NOW, notes=notes) is None
    assert "link" in notes[0]
    # Control: a plain open follows the link and reads the other file.
    con = sqlite3.connect(tmp_home.root / LEDGER_FILE)
    assert con.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == len(ROWS)
    con.close()


def test_the_ledger_is_opened_read_only(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger(tmp_home, ROWS)
    seen: list[str] = []
    real = sqlite3.connect

    def spy(target, *a, **kw):  # type: ignore[no-untyped-def]
        seen.append(str(target))
        return real(target, *a, **kw)

    monkeypatch.setattr(spend.sqlite3, "connect", spy)
    spend_of(tmp_home, "openrouter", "k1", "day", now=NOW)
    assert seen and all(s.startswith("file:") and s.endswith("?mode=ro") for s in seen)


def test_one_query_per_pool_and_period_for_many_keys(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger(tmp_home, [(NOW - 1, "openrouter", f"k{i}", 0.01, "actual") for i in range(500)])
    calls: list[int] = []
    real = spend.by_key
    monkeypatch.setattr(spend, "by_key", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    s = Spend(NOW)
    assert sum(s(tmp_home, "openrouter", f"k{i}", "day") or 0 for i in range(500)) == pytest.approx(5.0)
    assert len(calls) == 1


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=0, max_value=4e9))
def test_windows_start_at_utc_midnight_and_the_first_of_the_month(now: float) -> None:
    day, month = window_start("day", now), window_start("month", now)
    assert month <= day <= now < day + 86400
    assert day % 86400 == 0 and calendar.timegm(time.gmtime(month)[:3] + (0, 0, 0)) == month
    with pytest.raises(ValueError):
        window_start("week", now)


_hostile = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**18, 10**18),
                     st.text(max_size=20), st.binary(max_size=20))


@settings(max_examples=60, deadline=None)
@given(costs=st.lists(st.tuples(_hostile, st.sampled_from(["actual", "estimated", "included", "unknown", "x"])),
                      max_size=12))
def test_hostile_ledger_values_never_raise_and_never_make_a_spend_that_is_not_finite(
        tmp_path_factory: pytest.TempPathFactory, costs: list[tuple[object, str]]) -> None:
    home = Home(tmp_path_factory.mktemp("hostile"))
    path = ledger(home, [(NOW - 1, "openrouter", "k1", c, s) for c, s in costs])
    got = spend_of(home, "openrouter", "k1", "day", now=NOW)
    assert got is not None and math.isfinite(got) and got >= 0
    con = sqlite3.connect(path)     # the values as stored: the REAL column turns a text like '1' into 1.0
    stored = con.execute("SELECT cost_usd, cost_status FROM requests").fetchall()
    con.close()
    believable = [float(c) for c, s in stored if s in ("actual", "estimated") and isinstance(c, (int, float))
                  and math.isfinite(c) and 0 <= c <= spend.MAX_COST]
    assert got == pytest.approx(sum(believable))
