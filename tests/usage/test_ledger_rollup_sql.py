"""The ledger's write path (#29): rows and their hourly roll-up inserted a few statements a
batch, in one transaction. For generated batches, the roll-ups equal a ``GROUP BY`` over the
rows in SQL (the writer sums them in Python), across batches that share hours and keys;
controls: a roll-up that counts a row twice, keeps a stale fingerprint or shifts an hour, and
INSERTs wider than SQLite's parameter limit, are caught."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.usage import ledger as ledger_mod
from store.usage.ledger import chunk_of, open_ledger, write_batch
from store.usage.record import COST_STATUSES, LEDGER_FILE, Spent

NOW = 1_800_000_000.0
COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")

tokens = st.none() | st.integers(0, 10**9)
spents = st.builds(
    Spent,
    at=st.floats(NOW - 3 * 3600, NOW + 3 * 3600, allow_nan=False),
    pool=st.sampled_from(["openrouter", "anthropic"]),
    row_id=st.sampled_from([None, "or0001", "or0002"]),
    fingerprint=st.sampled_from([None, "sk-or-…a1B2", "sk-or-…c3D4"]),
    model=st.sampled_from([None, "m1", "m2"]),
    endpoint=st.sampled_from([None, "/chat/completions"]),
    route=st.none(),
    input_tokens=tokens, output_tokens=tokens, cache_read_tokens=tokens, cache_write_tokens=tokens,
    reasoning_tokens=tokens,
    # costs in 1/1024 of a dollar: their sums are exact in any order, so equal is equal
    cost_usd=st.none() | st.integers(0, 10**6).map(lambda n: n / 1024),
    cost_status=st.sampled_from(COST_STATUSES),
    partial=st.booleans())


def expected(conn: sqlite3.Connection) -> dict[tuple, tuple]:
    """The roll-ups as they must be: one ``GROUP BY`` over every kept row, in SQL (apart from
    the writer's Python), the fingerprint that of the group's latest row (the bare column
    beside the one ``max(rowid)``)."""
    got = conn.execute(f"""SELECT CAST(at AS INTEGER) / 3600, pool, coalesce(row_id, ''), coalesce(model, ''),
        coalesce(endpoint, ''), cost_status, coalesce(fingerprint, ''), max(rowid), count(*),
        {', '.join(f'sum(coalesce({c}, 0))' for c in COUNTS)}, sum(cost_usd), sum(partial)
        FROM requests GROUP BY 1, 2, 3, 4, 5, 6""")
    return {tuple(r[:6]): (r[6], *r[8:]) for r in got}


def hourly(conn: sqlite3.Connection) -> dict[tuple, tuple]:
    return {tuple(r[:3]) + tuple(r[4:7]): (r[3], *r[7:]) for r in conn.execute(
        f"SELECT hour, pool, row_id, fingerprint, model, endpoint, cost_status, requests, {', '.join(COUNTS)}, "
        f"cost_usd, partial FROM hourly")}


def written(tmp_path, batches: list[list[Spent]]) -> sqlite3.Connection:
    for old in tmp_path.glob(f"{LEDGER_FILE}*"):
        old.unlink()
    conn = open_ledger(tmp_path / LEDGER_FILE, write=True)
    for batch in batches:
        write_batch(conn, batch)
    return conn


@pytest.mark.parametrize("chunk", [512, 4])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(spents, max_size=40), min_size=1, max_size=4))
def test_the_rollups_equal_a_group_by_over_the_rows(tmp_path, monkeypatch, chunk, batches) -> None:
    """Every row kept, in order, and the roll-ups equal to the rows grouped by hour, key,
    model, endpoint and cost status (with *chunk* 4, a batch spans many INSERTs)."""
    monkeypatch.setattr(ledger_mod, "_CHUNK", chunk)
    conn = written(tmp_path, batches)
    kept = conn.execute("SELECT at, pool, input_tokens, cost_usd, partial FROM requests ORDER BY rowid").fetchall()
    assert kept == [(s.at, s.pool, s.input_tokens, s.cost_usd, int(s.partial)) for b in batches for s in b]
    assert hourly(conn) == expected(conn)
    conn.close()


def test_control_a_rollup_that_counts_a_row_twice_is_caught(tmp_path, monkeypatch) -> None:
    """Negative control: the batch's roll-up made to count its first row twice, the same
    comparison sees the difference."""
    batches = [[Spent(NOW, "openrouter", "or0001", "sk-or-…a1B2", input_tokens=3, cost_usd=0.5,
                      cost_status="actual")] * 2] * 2
    conn = written(tmp_path, batches)
    assert hourly(conn) == expected(conn)
    conn.close()
    rolled = ledger_mod.rolled
    monkeypatch.setattr(ledger_mod, "rolled", lambda rows: rolled([*rows, rows[0]]))
    conn = written(tmp_path, batches)
    assert hourly(conn) != expected(conn)
    assert hourly(conn)[(int(NOW // 3600), "openrouter", "or0001", "", "", "actual")][1] == 6     # 4 rows, 6 counted


def test_control_the_hour_and_the_latest_fingerprint_are_checked(tmp_path, monkeypatch) -> None:
    """Negative controls of the comparison itself: a roll-up that keeps a group's first
    fingerprint, or puts a row in the next hour, is seen."""
    batches = [[Spent(NOW + 10, "openrouter", "or0001", "sk-or-…a1B2", cost_status="unknown"),
                Spent(NOW + 20, "openrouter", "or0001", "sk-or-…c3D4", cost_status="unknown")]]
    rolled = ledger_mod.rolled
    first = lambda rows: [(*r[:3], "sk-or-…a1B2", *r[4:]) for r in rolled(rows)]       # noqa: E731
    later = lambda rows: [(r[0] + 1, *r[1:]) for r in rolled(rows)]                      # noqa: E731
    for wrong in (first, later):
        monkeypatch.setattr(ledger_mod, "rolled", wrong)
        conn = written(tmp_path, batches)
        assert hourly(conn) != expected(conn)
        conn.close()


def test_a_batch_fits_sqlites_limit_on_parameters(tmp_path, monkeypatch) -> None:
    """Where SQLite takes 999 parameters a statement (before 3.32), the INSERTs hold 64 rows
    (15 parameters each) and a batch of 300 is written whole; control: the 512-row INSERT
    without that bound is refused by SQLite."""
    conn = open_ledger(tmp_path / LEDGER_FILE, write=True)
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    assert chunk_of(conn) == 64
    batch = [Spent(NOW + i, "openrouter", "or0001", None, cost_status="unknown") for i in range(300)]
    write_batch(conn, batch)
    assert conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 300
    monkeypatch.setattr(ledger_mod, "chunk_of", lambda conn: 512)
    with pytest.raises(sqlite3.OperationalError, match="too many SQL variables"):
        write_batch(conn, batch)
    assert conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 300     # rolled back whole
