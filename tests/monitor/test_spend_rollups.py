"""The monitor's ``budget`` rule counts the whole month after the ledger's prune (#29): the
spend is read from the hourly roll-ups for the month's whole hours and from the per-request
rows (kept 7 days) only for the hour in progress, in one query.

The ledger is written by its own writer (store.usage.ledger) and pruned as the proxy prunes
it. Negative control: the rows-only read (the split of the window switched off) counts the
last 7 days and the alert does not fire. Hypothesis: on a ledger never pruned, the read
equals the rows-only read, for any answers of the month and the month before.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.config.budgets import Limits, PoolBudget
from store.monitor import budget, spend
from store.monitor import rules as R
from store.monitor.conditions import Evaluation, utc
from store.monitor.spend import Spend, by_key
from store.paths import Home
from store.pools.view import build_pools
from store.usage.ledger import ledger_path, open_ledger, prune, write_batch
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, UNKNOWN, Spent
from tests.conftest import make_row, make_store
from tests.monitor.samples import NOW
from tests.monitor.samples import sample as _sample

assert utc(NOW) == "2027-01-15 08:00:00 UTC"
MONTH_START = spend.window_start("month", NOW)
KEEP = 7 * 86400.0
POOL = "openrouter"


def spent(at: float, cost: float | None, status: str = ACTUAL, row: str | None = "a") -> Spent:
    return Spent(at, POOL, row, "sk-or-…a1B2", model="m", endpoint="chat", cost_usd=cost, cost_status=status)


def written(root: Path, spents: list[Spent], *, prune_at: float | None = None) -> Home:
    conn = open_ledger(ledger_path(root), write=True)
    write_batch(conn, spents)
    if prune_at is not None:
        prune(conn, prune_at, KEEP, 400 * 86400.0)
    conn.close()
    return Home(root)


def rows_only(home: Home, window: str) -> dict[str | None, float]:
    """The read before the roll-ups: the per-request rows of the window alone."""
    con = sqlite3.connect(ledger_path(home.root))
    try:
        got = con.execute(spend._QUERY, (POOL, spend.window_start(window, NOW), NOW + 1.0, *spend._KNOWN)).fetchall()
    finally:
        con.close()
    return {r: c for r, c in got if c is not None}


def month_alerts(home: Home) -> list[str]:
    """The budget rule's conditions for key ``a`` with a month budget of $10 (alerts at 80%)."""
    rows = [make_row("a", priority=0, token="sk-or-v1-" + "a" * 48)]
    budgets = {POOL: PoolBudget(key=Limits(month=10.0))}
    spend_of = Spend(NOW)
    spent_ = budget.gather(home, budgets, build_pools(make_store({POOL: rows}), now=NOW), spend_of)
    ev = Evaluation()
    base = R.defaults()
    budget.add(ev, _sample(rows, budgets=budgets, spend=spent_), R.Rules(
        {**base.rules, R.BUDGET: R.Rule(R.BUDGET, threshold=0.8)}, 0.3, 1, "test rules"), NOW)
    return list(ev.conditions)


def test_a_month_budget_counts_the_days_the_prune_took(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$1 a day from the 1st to the 15th, the rows pruned to the last 7 days: $15 spent of a
    $10 month budget fires. Negative control: read from the rows alone, $7, no alert."""
    home = written(tmp_path, [spent(MONTH_START + d * 86400 + 3600, 1.0) for d in range(15)], prune_at=NOW)
    assert sum(rows_only(home, "month").values()) == pytest.approx(7.0)       # the prune did take 8 days
    assert by_key(home, POOL, "month", now=NOW) == pytest.approx({"a": 15.0})
    assert month_alerts(home) == ["budget/default/openrouter/a/month"]

    monkeypatch.setattr(spend, "spans", lambda since, boundary, rolled: (None, [(since, None)]))
    assert by_key(home, POOL, "month", now=NOW) == pytest.approx({"a": 7.0})
    assert month_alerts(home) == []


def test_the_hour_in_progress_is_read_from_its_rows_and_counted_once(tmp_path: Path) -> None:
    """Answers in the hour in progress and in earlier hours of today: each counted once."""
    home = written(tmp_path, [spent(NOW - 7200, 1.0), spent(NOW - 600, 2.0), spent(NOW + 0.5, 4.0),
                              spent(NOW - 30, 8.0, INCLUDED), spent(NOW - 40, None, UNKNOWN)])
    assert by_key(home, POOL, "day", now=NOW + 1) == pytest.approx({"a": 7.0})


def test_one_statement_per_pool_and_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Roll-ups and rows in one query, whatever the number of keys."""
    home = written(tmp_path, [spent(MONTH_START + i * 600, 0.25, row=f"k{i}") for i in range(300)] +
                   [spent(NOW - 5, 0.25, row=f"k{i}") for i in range(300)])
    statements: list[str] = []
    real = sqlite3.connect

    def traced(*a, **kw):  # type: ignore[no-untyped-def]
        con = real(*a, **kw)
        con.set_trace_callback(statements.append)
        return con

    monkeypatch.setattr(spend.sqlite3, "connect", traced)
    got = by_key(home, POOL, "month", now=NOW)
    assert got is not None and len(got) == 300 and sum(got.values()) == pytest.approx(150.0)
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 1
    assert "hourly" in statements[0] and "requests" in statements[0]


@pytest.mark.parametrize("cost, requests", [(-4.0, 1), (math.inf, 1), (2e9, 1), (3e9, 2), ("a lot", 1), (1.0, -1)])
def test_a_roll_up_beyond_belief_is_not_counted(tmp_path: Path, cost: object, requests: int) -> None:
    """A roll-up's sum counts when finite, not negative and at most MAX_COST per answer
    (what the rows' bound on one answer becomes on a sum); the other hours still count.
    Control: the same sums with no bound would change the spend."""
    home = written(tmp_path, [spent(NOW - 86400 * 3, 1.5)])
    con = sqlite3.connect(ledger_path(home.root))
    con.execute("INSERT INTO hourly VALUES (?, ?, 'a', 'fp', 'x', 'chat', 'actual', ?, 0, 0, 0, 0, 0, ?, 0)",
                (int(NOW // 3600) - 30, POOL, requests, cost))
    con.commit()
    (unbounded,) = con.execute("SELECT total(cost_usd) FROM hourly WHERE typeof(cost_usd) = 'real'").fetchone()
    con.close()
    assert by_key(home, POOL, "month", now=NOW) == {"a": 1.5}
    assert unbounded != 1.5 or not isinstance(cost, float)


_AT = st.floats(MONTH_START - 3 * 86400, NOW + 0.9)
_SPENT = st.builds(
    lambda at, cost, status, row: spent(at, cost if status in (ACTUAL, ESTIMATED) else None, status, row),
    _AT, st.integers(0, 1 << 20).map(lambda c: c / 1024), st.sampled_from([ACTUAL, ESTIMATED, INCLUDED, UNKNOWN]),
    st.sampled_from(["a", "b", None]))


@settings(max_examples=50, deadline=None)
@given(spents=st.lists(_SPENT, max_size=40))
def test_equal_to_the_rows_only_read_on_an_unpruned_ledger(tmp_path_factory: pytest.TempPathFactory,
                                                           spents: list[Spent]) -> None:
    """Costs in 1/1024 dollars: the sums are exact whichever way they are added."""
    home = written(tmp_path_factory.mktemp("ledger"), spents)
    for window in spend.WINDOWS:
        assert by_key(home, POOL, window, now=NOW) == rows_only(home, window)
