"""The budgets' tally (store.usage.tally): known cost per row and pool, per UTC day and
month, fed Spent values directly, seeded read-only from the ledger's table."""

from __future__ import annotations

import calendar
import math
import sqlite3
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.usage import tally as tally_mod
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, REQUESTS_TABLE, UNKNOWN, Spent
from store.usage.tally import DAY, MONTH, Tally, resets

NOON = calendar.timegm((2026, 12, 3, 12, 0, 0))
LAST_NIGHT = calendar.timegm((2026, 12, 2, 23, 59, 0))
LAST_MONTH = calendar.timegm((2026, 11, 30, 12, 0, 0))


def spent(cost, status=ACTUAL, at=NOON, pool="openrouter", row="or0001"):
    return Spent(at=at, pool=pool, row_id=row, fingerprint="sk-or-…a1B2", cost_usd=cost, cost_status=status)


def test_known_cost_only_counts_per_row_and_pool_day_and_month():
    t = Tally(clock=lambda: NOON)
    t(spent(0.50))
    t(spent(0.25, ESTIMATED, row="or0002"))
    t(spent(9.0, INCLUDED))
    t(spent(None, UNKNOWN))
    t(spent(1.0, at=LAST_NIGHT))          # yesterday: this month, not today
    t(spent(4.0, at=LAST_MONTH))          # last month: neither (and then pruned)
    assert t.key("openrouter", "or0001", DAY, NOON) == pytest.approx(0.50)
    assert t.key("openrouter", "or0001", MONTH, NOON) == pytest.approx(1.50)
    assert t.key("openrouter", "or0002", DAY, NOON) == pytest.approx(0.25)
    assert t.pool("openrouter", DAY, NOON) == pytest.approx(0.75)
    assert t.pool("openrouter", MONTH, NOON) == pytest.approx(1.75)
    assert t.key("other", "x", DAY, NOON) == 0.0


def test_resets_are_the_next_utc_midnight_and_first_of_month():
    assert resets(DAY, NOON) == calendar.timegm((2026, 12, 4, 0, 0, 0))
    assert resets(MONTH, NOON) == calendar.timegm((2027, 1, 1, 0, 0, 0))
    assert resets(MONTH, LAST_MONTH) == calendar.timegm((2026, 12, 1, 0, 0, 0))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(min_value=-10**20, max_value=10**20)),
       st.sampled_from([ACTUAL, ESTIMATED, INCLUDED, UNKNOWN, "bogus"]))
def test_hostile_costs_never_count_or_raise(cost, status):
    t = Tally(clock=lambda: NOON)
    t(spent(cost, status))
    got = t.key("openrouter", "or0001", DAY, NOON)
    assert math.isfinite(got) and got >= 0
    ok = status in (ACTUAL, ESTIMATED) and not isinstance(cost, bool | str) and cost is not None \
        and math.isfinite(cost) and cost >= 0
    assert got == (float(cost) if ok else 0.0)


def test_thread_safe_under_concurrent_adds():
    t = Tally(clock=lambda: NOON)
    threads = [threading.Thread(target=lambda: [t(spent(0.01)) for _ in range(2000)]) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert t.key("openrouter", "or0001", DAY, NOON) == pytest.approx(80.0)


def _ledger(path, rows):
    conn = sqlite3.connect(path)
    conn.execute(REQUESTS_TABLE)
    conn.executemany("INSERT INTO requests (at, pool, row_id, fingerprint, cost_usd, cost_status) "
                     "VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def test_seed_reads_today_and_this_month_read_only(tmp_path):
    path = tmp_path / "hermes-admin-usage.sqlite"
    _ledger(path, [(NOON - 60, "openrouter", "or0001", "fp", 0.5, ACTUAL),
                   (NOON - 120, "openrouter", "or0001", "fp", 0.25, ESTIMATED),
                   (NOON - 60, "openrouter", "or0001", "fp", 3.0, INCLUDED),
                   (NOON - 60, "openrouter", "or0001", "fp", -5.0, ACTUAL),
                   (LAST_NIGHT, "openrouter", "or0001", "fp", 1.0, ACTUAL),
                   (LAST_MONTH, "openrouter", "or0001", "fp", 7.0, ACTUAL)])
    before = path.read_bytes()
    t = Tally(clock=lambda: NOON)
    assert t.seed(path) is None
    assert t.key("openrouter", "or0001", DAY, NOON) == pytest.approx(0.75)
    assert t.key("openrouter", "or0001", MONTH, NOON) == pytest.approx(1.75)
    assert t.pool("openrouter", MONTH, NOON) == pytest.approx(1.75)
    assert path.read_bytes() == before
    assert t.owed() == {}           # seeded spend is not owed to the fleet again


@pytest.mark.parametrize("make", ["missing", "corrupt", "no_table"])
def test_unreadable_ledger_is_a_notice_and_zero(tmp_path, make):
    path = tmp_path / "hermes-admin-usage.sqlite"
    if make == "corrupt":
        path.write_bytes(b"not a database at all" * 100)
    elif make == "no_table":
        sqlite3.connect(path).execute("CREATE TABLE other (x)").connection.close()
    t = Tally(clock=lambda: NOON)
    notice = t.seed(path)
    assert notice is not None and "could not be read" in notice and "from zero" in notice
    assert t.notices == [notice]
    assert t.key("openrouter", "or0001", DAY, NOON) == 0.0
    assert not path.exists() or make != "missing"     # read-only: nothing created


def test_seed_negative_control_without_read_only_a_missing_ledger_is_created(tmp_path, monkeypatch):
    """The protection (mode=ro) matters: without it sqlite creates the missing file."""
    path = tmp_path / "hermes-admin-usage.sqlite"
    real = sqlite3.connect
    monkeypatch.setattr(tally_mod.sqlite3, "connect",
                        lambda target, **kw: real(str(target).replace("?mode=ro", "?mode=rwc"), **kw))
    Tally(clock=lambda: NOON).seed(path)
    assert path.exists()


def test_fleet_totals_and_what_is_owed():
    t = Tally(clock=lambda: NOON)
    t(spent(0.5))
    day = tally_mod.day_of(NOON)
    assert t.owed() == {("openrouter", "or0001", day): 0.5}
    t.settle({("openrouter", "or0001", day): 0.5}, [(("openrouter", "or0001", day), 1.75)])
    assert t.owed() == {}
    assert t.key("openrouter", "or0001", DAY, NOON) == pytest.approx(1.75)     # the fleet's total
    t(spent(0.25))
    assert t.key("openrouter", "or0001", DAY, NOON) == pytest.approx(2.0)      # + what it owes
    assert t.pool("openrouter", DAY, NOON) == pytest.approx(2.0)
