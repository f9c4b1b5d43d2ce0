"""The usage ledger (#29): written behind in batches, 0600, no link followed, no secret;
locked, corrupt and removed ledgers are notices."""

from __future__ import annotations

import os
import sqlite3
import stat
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.dialects.readings import Usage
from store.usage import ledger as ledger_mod
from store.usage.feed import UsageFeed
from store.usage.ledger import Ledger, LedgerUnreadable, open_ledger
from store.usage.record import LEDGER_FILE, Spent

NOW = 1_800_000_000.0
SECRET = "sk-or-v1-0123456789abcdef0123456789abcdefa1B2"


def wait_for(cond, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def spent(i: int = 0, **kw) -> Spent:
    base = dict(at=NOW + i, pool="openrouter", row_id="or0001", fingerprint="sk-or-…a1B2", model="m",
                input_tokens=10, output_tokens=5, cost_usd=0.001, cost_status="actual")
    base.update(kw)
    return Spent(**base)


def rows(path) -> list[tuple]:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT pool, row_id, input_tokens, output_tokens, cost_usd, cost_status, partial "
                         "FROM requests ORDER BY at").fetchall()


@pytest.fixture
def path(tmp_path):
    return tmp_path / LEDGER_FILE


def make(path, said=None, **kw) -> Ledger:
    return Ledger(path, keep_requests=7 * 86400, keep_hourly=400 * 86400,
                  notice=(said.append if said is not None else print), clock=lambda: NOW, **kw)


def test_rows_and_hourly_rollups_written_behind_0600_wal(path) -> None:
    led = make(path)
    for i in range(10):
        led(spent(i, partial=i == 9))
    led(spent(11, row_id="or0002", cost_usd=None, cost_status="unknown"))
    led.close()
    assert len(rows(path)) == 11 and rows(path)[-1] == ("openrouter", "or0002", 10, 5, None, "unknown", 0)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        hourly = c.execute("SELECT row_id, requests, input_tokens, cost_usd, partial FROM hourly ORDER BY row_id")
        assert hourly.fetchall() == [("or0001", 10, 100, pytest.approx(0.01), 1), ("or0002", 1, 10, None, 0)]
    assert SECRET.encode() not in path.read_bytes()


def test_a_symlink_at_the_ledgers_name_is_refused_never_followed(path, tmp_path) -> None:
    target = tmp_path / "elsewhere.sqlite"
    os.symlink(target, path)
    with pytest.raises(LedgerUnreadable, match="symlink"):
        open_ledger(path, write=True)
    said: list[str] = []
    led = make(path, said)
    led(spent())
    led.close()
    assert not target.exists() and any("symlink" in s for s in said) and led.dropped == 1


def test_a_corrupt_ledger_is_a_notice_and_nothing_raises(path) -> None:
    path.write_bytes(b"this is no database" * 100)
    said: list[str] = []
    led = make(path, said)
    led(spent())
    led.close()
    assert any("not a usable usage ledger" in s or "cannot be written" in s for s in said)
    assert path.read_bytes().startswith(b"this is no database")      # never written over


def test_a_locked_ledger_waits_and_then_writes(path) -> None:
    open_ledger(path, write=True).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    said: list[str] = []
    led = make(path, said)
    led(spent())
    assert wait_for(lambda: any("locked" in s for s in said))
    assert led.pending == 1
    holder.execute("ROLLBACK")
    holder.close()
    assert wait_for(lambda: led.written == 1)
    led.close()
    assert len(rows(path)) == 1 and any("recording again" in s for s in said)


def test_a_removed_ledger_is_started_anew(path) -> None:
    said: list[str] = []
    led = make(path, said)
    led(spent())
    assert wait_for(lambda: led.written == 1)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.unlink(f"{path}{suffix}")
    led(spent(1))
    assert wait_for(lambda: led.written == 2)
    led.close()
    assert any("removed" in s for s in said) and len(rows(path)) == 1


def test_prune_keeps_each_table_its_own_time(path) -> None:
    conn = open_ledger(path, write=True)
    ledger_mod.write_batch(conn, [spent(-8 * 86400), spent(-1), spent(-401 * 86400)])
    ledger_mod.prune(conn, NOW, 7 * 86400, 400 * 86400)
    assert conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM hourly").fetchone()[0] == 2


def test_the_feed_prices_and_hands_every_answer_to_every_listener(path) -> None:
    feed = UsageFeed(clock=lambda: NOW)
    got: list[Spent] = []
    said: list[str] = []
    feed.notice = said.append

    def broken(_s: Spent) -> None:
        raise RuntimeError("a listener's bug")

    feed.listen(broken)
    feed.listen(got.append)
    feed.answer("openrouter", "or0001", "sk-or-…a1B2", Usage(10, 5, cost_usd=0.002), model="x/y")
    feed.answer("openai-api", "oa1", "sk-…9f00", Usage(1000, 500, 200), model="gpt-4o")
    feed.answer("anthropic", "an1", "sk-ant-…0000", Usage(10, 5), model="claude-sonnet-4-5", oauth=True)
    feed.answer("custom:lab", "c1", None, None, model="mystery", partial=True)
    assert feed.wait_idle(10)
    feed.close()
    assert [(s.cost_status, s.prices_version) for s in got] == [
        ("actual", None), ("estimated", "0.2.3"), ("included", None), ("unknown", None)]
    assert got[3].partial and got[3].cost_usd is None and got[3].input_tokens is None
    assert len(said) == 1 and "a listener's bug" in said[0]          # told once, the others went on


_SPENT = st.builds(
    lambda ago, row, model, status, inp, out, cost, partial: Spent(
        NOW - ago, "p", row, "fp", model=model, input_tokens=inp, output_tokens=out,
        cost_usd=cost if status in ("actual", "estimated") else None, cost_status=status, partial=partial),
    st.floats(min_value=0, max_value=6 * 86400), st.sampled_from(["a", "b", None]), st.sampled_from(["m1", None]),
    st.sampled_from(["actual", "estimated", "included", "unknown"]), st.none() | st.integers(0, 10**9),
    st.none() | st.integers(0, 10**9), st.floats(min_value=0, max_value=100), st.booleans())


@settings(max_examples=40, deadline=None)
@given(st.lists(_SPENT, min_size=1, max_size=40), st.sampled_from(["key", "model", "day"]))
def test_the_hourly_rollups_sum_to_the_same_as_the_rows(spents, by) -> None:
    from store.usage import report

    conn = sqlite3.connect(":memory:", isolation_level=None)
    for ddl in (ledger_mod.REQUESTS_TABLE, ledger_mod.HOURLY_TABLE):
        conn.execute(ddl)
    ledger_mod.write_batch(conn, spents)
    by_rows = report.spent_by(conn, NOW - 30 * 86400, 0.0, by=by)             # every row from the requests
    by_hours = report.spent_by(conn, 0.0, NOW + 3600, by=by)                    # every row from the roll-ups
    for pool, groups in by_rows.items():
        for name, g in groups.items():
            h = by_hours[pool][name]
            assert (h.requests, h.tokens, h.partial, h.cost_status) == (g.requests, g.tokens, g.partial, g.cost_status)
            assert (h.known_usd is None) == (g.known_usd is None)
            if g.known_usd is not None:
                assert h.known_usd == pytest.approx(g.known_usd)
