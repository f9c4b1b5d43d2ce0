"""A window's whole hours are read from the hourly roll-ups (#29): the same figures as the
per-request rows, exact at the window's edges, and no scan of the per-request table."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.usage import ledger as ledger_mod
from store.usage import report
from store.usage.record import Spent

NOW = 1_800_000_000.0           # 00:00 UTC, a whole hour
HOUR = 3600.0


def ledger(spents: list[Spent]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for ddl in (ledger_mod.REQUESTS_TABLE, ledger_mod.HOURLY_TABLE, *ledger_mod.INDEXES):
        conn.execute(ddl)
    if spents:
        ledger_mod.write_batch(conn, spents)
    return conn


def figures(found: dict[str, dict[str | None, report.Group]]) -> dict:
    return {(pool, name): (g.requests, g.tokens, g.partial, g.cost_status, g.fingerprint,
                           None if g.known_usd is None else round(g.known_usd, 9))
            for pool, groups in found.items() for name, g in groups.items()}


@st.composite
def windows(draw) -> tuple[list[Spent], float, float]:
    """Answers anywhere in 3 days, and near the window's two edges (where the rows are read
    instead of the roll-ups); the window starts and ends anywhere in an hour."""
    now = NOW + draw(st.integers(-3600, 3600))
    since = now - draw(st.integers(0, 4 * 86400))
    at = st.one_of(st.integers(-3 * 86400, 3600).map(lambda d: NOW + d),
                   st.integers(-3600, 3600).map(lambda d: since + d),
                   st.integers(-3600, 60).map(lambda d: now + d))
    one = st.builds(
        lambda at, row, model, status, inp, cost, partial: Spent(
            at, "p", row, None if row is None else f"fp-{row}", model=model, endpoint="/chat", input_tokens=inp,
            output_tokens=7, cost_usd=cost if status in ("actual", "estimated") else None, cost_status=status,
            partial=partial),
        at, st.sampled_from(["a", "b", None]), st.sampled_from(["m1", "m2", None]),
        st.sampled_from(["actual", "estimated", "included", "unknown"]), st.none() | st.integers(0, 10**9),
        st.integers(0, 10**6).map(lambda c: c / 1024), st.booleans())
    return draw(st.lists(one, max_size=40)), since, now


@settings(max_examples=80, deadline=None)
@given(windows(), st.sampled_from(["key", "model", "day"]))
def test_rolled_up_hours_give_the_figures_of_the_rows(window, by) -> None:
    """Any window, any moment in an hour: roll-ups for the whole hours and rows at the edges
    sum to what the per-request rows alone say (costs are multiples of 1/1024: exact sums)."""
    spents, since, now = window
    conn = ledger(spents)
    rows_only = report.spent_by(conn, since, 0.0, by=by)
    rolled = report.spent_by(conn, since, 0.0, by=by, rolled_before=now)
    assert figures(rolled) == figures(rows_only)


@settings(max_examples=40, deadline=None)
@given(windows(), st.integers(1, 48))
def test_a_pruned_window_reads_the_same_with_or_without_the_rolled_hours(window, hours) -> None:
    """Per-request rows pruned before a whole hour: the window reads the same either way."""
    spents, since, now = window
    boundary = (now // HOUR - hours) * HOUR
    conn = ledger(spents)
    conn.execute("DELETE FROM requests WHERE at < ?", (boundary,))
    rolled = report.spent_by(conn, since, boundary, rolled_before=now)
    assert figures(rolled) == figures(report.spent_by(conn, since, boundary))


def test_the_first_part_hour_is_counted_from_the_rows_not_whole() -> None:
    """A window starting at 10:30 counts an answer of 10:40 and not one of 10:20 (one roll-up
    row holds both). Negative control: with its first hour read whole from the roll-up, the
    10:20 answer is counted and the test sees it."""
    since = NOW - 5 * HOUR + 1800
    conn = ledger([Spent(since - 600, "p", "a", "fp"), Spent(since + 600, "p", "a", "fp"),
                   Spent(NOW - 2 * HOUR, "p", "a", "fp"), Spent(NOW + 60, "p", "a", "fp")])
    got = report.spent_by(conn, since, 0.0, rolled_before=NOW + 120)
    assert got["p"]["a"].requests == 3

    real = report.spans

    def whole_first_hour(since: float, boundary: float, rolled_before: float | None):
        _hours, rows = real(since, boundary, rolled_before)
        return (int(since // HOUR), int(rolled_before // HOUR)), [r for r in rows if r[1] is None]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "spans", whole_first_hour)
        assert report.spent_by(conn, since, 0.0, rolled_before=NOW + 120)["p"]["a"].requests == 4


def test_whole_hours_come_from_the_rollups() -> None:
    """What a whole hour's roll-up row says is what the window counts (the rows of that hour
    are not read); the control: without *rolled_before*, the rows are read."""
    conn = ledger([Spent(NOW - 3 * HOUR, "p", "a", "fp", input_tokens=5)])
    conn.execute("UPDATE hourly SET requests = 40, input_tokens = 500")
    assert report.spent_by(conn, NOW - 86400, 0.0, rolled_before=NOW)["p"]["a"].requests == 40
    assert report.spent_by(conn, NOW - 86400, 0.0)["p"]["a"].requests == 1


def test_spans_cover_the_window_once() -> None:
    assert report.spans(NOW - 5 * HOUR + 1800, 0.0, NOW + 60) == (
        (500000 - 4, 500000), [(NOW - 5 * HOUR + 1800, NOW - 4 * HOUR), (NOW, None)])
    # a window shorter than its hour: rows only
    assert report.spans(NOW + 60, 0.0, NOW + 120) == (None, [(NOW + 60, None)])
    # pruned before the boundary: the first hour whole from its roll-up, as without rolling
    assert report.spans(NOW - 30 * 86400 + 1800, NOW - 7 * 86400, NOW + 60) == (
        (int((NOW - 30 * 86400) // HOUR), 500000), [(NOW, None)])
    assert report.spans(NOW - 86400, 0.0, None) == (None, [(NOW - 86400, None)])


def test_the_thirty_day_read_never_scans_the_rows() -> None:
    """EXPLAIN QUERY PLAN of every statement the read runs: the roll-ups by their primary key,
    the rows by the ``at`` index, no table scan of ``requests``. Control: the same window
    read from the rows alone scans them."""
    conn = ledger([Spent(NOW - i * 600.0, "p", f"k{i % 9}", "fp", cost_usd=0.01, cost_status="actual")
                   for i in range(2000)])

    def plans(**kw) -> list[str]:
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        report.spent_by(conn, NOW - 30 * 86400, NOW - 7 * 86400, **kw)
        conn.set_trace_callback(None)
        return [" ".join(str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}")) for sql in seen]

    rolled = plans(rolled_before=NOW + 60)
    assert any("SEARCH hourly USING PRIMARY KEY" in p for p in rolled)
    assert not any("SCAN requests" in p for p in rolled), rolled
    assert any("SCAN requests" in p for p in plans())
