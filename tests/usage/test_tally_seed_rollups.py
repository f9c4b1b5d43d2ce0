"""A month budget counts the whole month after a restart (#29): the tally's seed reads the
per-request rows where they are kept (7 days by default) and the hourly roll-ups before, so
a month of spend survives the rows' prune; exact at the hour the prune cut through."""

from __future__ import annotations

import calendar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.usage import tally as tally_mod
from store.usage.ledger import ledger_path, open_ledger, prune, write_batch
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, UNKNOWN, Spent
from store.usage.tally import DAY, MONTH, Tally

NOW = float(calendar.timegm((2027, 1, 25, 12, 0, 0)))       # the 25th: most of the month is past 7 days
MONTH_START = float(calendar.timegm((2027, 1, 1, 0, 0, 0)))
KEEP = 7 * 86400.0


def spent(at: float, cost: float | None, status: str = ACTUAL, row: str = "or1") -> Spent:
    return Spent(at, "openrouter", row, "sk-or-…a1B2", cost_usd=cost, cost_status=status)


def seeded(tmp_path, spents: list[Spent], cutoff: float) -> Tally:
    """A ledger written by its own writer, pruned at *cutoff* as the proxy prunes it, then
    seeded into a fresh tally (a proxy restarting at NOW)."""
    conn = open_ledger(ledger_path(tmp_path), write=True)
    write_batch(conn, spents)
    prune(conn, cutoff + KEEP, KEEP, 400 * 86400.0)
    conn.close()
    t = Tally(clock=lambda: NOW)
    assert t.seed(ledger_path(tmp_path)) is None
    return t


def test_a_month_of_spend_survives_the_prune_of_its_rows(tmp_path, monkeypatch) -> None:
    """$1 a day from the 1st: 25 dollars this month, though the rows hold the last 7 days.
    Negative control: seeded from the rows alone (as before), the month counts 7 or 8."""
    spents = [spent(MONTH_START + d * 86400 + 3600, 1.0) for d in range(25)]
    t = seeded(tmp_path, spents, NOW - KEEP)
    assert t.key("openrouter", "or1", MONTH, NOW) == pytest.approx(25.0)
    assert t.key("openrouter", "or1", DAY, NOW) == pytest.approx(1.0)
    assert t.pool("openrouter", MONTH, NOW) == pytest.approx(25.0)

    def rows_only(conn, since, until):
        return conn.execute(tally_mod._ROWS_COST, (since, until, *tally_mod.KNOWN)).fetchall()

    monkeypatch.setattr(tally_mod, "ledger_cost", rows_only)
    t = Tally(clock=lambda: NOW)
    t.seed(ledger_path(tmp_path))
    assert t.key("openrouter", "or1", MONTH, NOW) < 9.0


def test_the_hour_the_prune_cut_through_counts_whole(tmp_path) -> None:
    """Answers at :10 and :50 of one hour, the rows pruned at :30: the roll-up's $3 counts,
    not the surviving row's $2 alone, nor both ($5)."""
    hour = NOW - 10 * 86400 - 3 * 3600
    t = seeded(tmp_path, [spent(hour + 600, 1.0), spent(hour + 3000, 2.0), spent(NOW - 60, 0.5)], hour + 1800)
    assert t.key("openrouter", "or1", MONTH, NOW) == pytest.approx(3.5)


_AT = st.integers(int(MONTH_START) - 3 * 86400, int(NOW) - 1).map(float)
_SPENT = st.builds(
    lambda at, cost, status, row: spent(at, cost if status in (ACTUAL, ESTIMATED) else None, status, row),
    _AT, st.integers(0, 4096).map(lambda c: c / 1024), st.sampled_from([ACTUAL, ESTIMATED, INCLUDED, UNKNOWN]),
    st.sampled_from(["or1", "or2"]))


@settings(max_examples=40, deadline=None)
@given(spents=st.lists(_SPENT, max_size=40), cutoff=st.one_of(_AT, st.just(MONTH_START - 86400.0)))
def test_seed_equals_the_known_cost_of_the_month_and_the_day(tmp_path_factory, spents, cutoff) -> None:
    """Any answers, pruned at any second: the seed's month and day are the known cost of the
    answers in them (costs in 1/1024 dollars: exact sums)."""
    t = seeded(tmp_path_factory.mktemp("ledger"), spents, cutoff)
    day_start = NOW // 86400 * 86400
    for row in ("or1", "or2"):
        known = [s for s in spents if s.row_id == row and s.cost_status in (ACTUAL, ESTIMATED)]
        assert t.key("openrouter", row, MONTH, NOW) == sum(s.cost_usd for s in known if s.at >= MONTH_START)
        assert t.key("openrouter", row, DAY, NOW) == sum(s.cost_usd for s in known if s.at >= day_start)
