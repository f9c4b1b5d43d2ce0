"""``hermes-admin usage``: per pool, per credential, from the ledger; read-only; bad
arguments are exit 2 naming the argument."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.usage.ledger import Ledger, ledger_path, open_ledger, write_batch
from store.usage.record import Spent
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store

NOW = time.time()


def seed(home, spents) -> None:
    conn = open_ledger(ledger_path(home.root), write=True)
    write_batch(conn, spents)
    conn.close()


def s(ago: float, row: str = "or1", pool: str = "openrouter", **kw) -> Spent:
    base = dict(at=NOW - ago, pool=pool, row_id=row, fingerprint="sk-or-…a1B2", model="x/y", input_tokens=100,
                output_tokens=20, cache_read_tokens=10, reasoning_tokens=5, cost_usd=0.0004, cost_status="actual")
    base.update(kw)
    return Spent(**base)


def usage(home, *argv: str) -> tuple[int, str, str]:
    return run_main(["usage", "--home", str(home.root), *argv], b"")


def test_json_per_pool_per_credential_with_totals(tmp_home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("or1", label="main key"), make_row("or2")]}))
    seed(tmp_home, [s(60), s(120), s(180, "or2", cost_usd=None, cost_status="unknown"),
                    s(3 * 86400), s(60, "an1", "anthropic", cost_usd=None, cost_status="included")])
    code, out, _err = usage(tmp_home, "--json")
    assert code == 0
    doc = json.loads(out)["pools"]
    creds = {c["id"]: c for c in doc["openrouter"]["credentials"]}
    assert creds["or1"] == {"id": "or1", "label": "main key", "requests": 2, "input_tokens": 200, "output_tokens": 40,
                            "cache_read_tokens": 20, "cache_write_tokens": 0, "reasoning_tokens": 10,
                            "cost_usd": pytest.approx(0.0008), "cost_status": "actual",
                            "cost_known_usd": pytest.approx(0.0008), "partial": 0}
    assert creds["or2"]["cost_usd"] is None and creds["or2"]["cost_status"] == "unknown"
    total = doc["openrouter"]["totals"]
    assert total["requests"] == 3 and total["cost_usd"] is None and total["cost_known_usd"] == pytest.approx(0.0008)
    assert doc["anthropic"]["credentials"][0]["cost_status"] == "included"
    code, out, _ = usage(tmp_home, "openrouter", "--since", "7d", "--json")
    assert list(json.loads(out)["pools"]) == ["openrouter"]
    assert json.loads(out)["pools"]["openrouter"]["totals"]["requests"] == 4


def test_thirty_days_reach_back_into_the_hourly_rollups(tmp_home) -> None:
    led = Ledger(ledger_path(tmp_home.root), keep_requests=7 * 86400, keep_hourly=400 * 86400, clock=time.time)
    for ago in (60, 10 * 86400, 20 * 86400, 40 * 86400):
        led(s(ago))
    led.close()
    with sqlite3.connect(ledger_path(tmp_home.root)) as c:      # pruned: only the recent request row is left
        assert c.execute("SELECT count(*) FROM requests").fetchone()[0] == 1
    got = json.loads(usage(tmp_home, "--since", "30d", "--json")[1])["pools"]["openrouter"]["totals"]
    assert got["requests"] == 3
    by_day = json.loads(usage(tmp_home, "--since", "30d", "--by", "day", "--json")[1])["pools"]["openrouter"]
    assert len(by_day["by_day"]) == 3


def test_text_and_csv_show_sub_cent_costs_and_inert_labels(tmp_home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("or1", label="evil\x1b[31mred")]}))
    seed(tmp_home, [s(60)])
    code, out, _ = usage(tmp_home)
    assert code == 0 and "$0.0004000" in out and "$0.00 " not in out and "\x1b" not in out
    code, out, _ = usage(tmp_home, "--csv")
    assert out.splitlines()[1].startswith("openrouter,or1,") and "0.0004" in out


def test_no_ledger_yet_says_so_and_writes_nothing(tmp_home) -> None:
    before = sorted(os.listdir(tmp_home.root))
    code, out, _ = usage(tmp_home)
    assert code == 0 and "no usage recorded yet" in out
    assert sorted(os.listdir(tmp_home.root)) == before


def test_reading_never_writes(tmp_home) -> None:
    seed(tmp_home, [s(60)])
    # The data never changes: a WAL reader may only leave sqlite's empty -wal and its -shm
    # (its readers' shared-memory index), never a byte of data.
    def data() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in tmp_home.root.iterdir()
                if not p.name.endswith("-shm") and not (p.name.endswith("-wal") and p.stat().st_size == 0)}
    before = data()
    assert usage(tmp_home, "--json")[0] == 0
    assert data() == before


def test_a_corrupt_ledger_is_an_error_not_empty(tmp_home) -> None:
    ledger_path(tmp_home.root).write_bytes(b"garbage" * 1000)
    code, out, err = usage(tmp_home, "--json")
    assert code == 3 and "not a usable usage ledger" in err and out == ""


def test_a_symlinked_ledger_is_refused(tmp_home, tmp_path) -> None:
    seed(tmp_home, [s(60)])
    real = tmp_path / "real.sqlite"
    os.rename(ledger_path(tmp_home.root), real)
    os.symlink(real, ledger_path(tmp_home.root))
    code, _out, err = usage(tmp_home)
    assert code == 3 and "symlink" in err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flag=st.sampled_from(["--since", "--by"]), value=st.text(min_size=1, max_size=20))
def test_generated_bad_arguments_are_exit_2_naming_the_argument(tmp_home, flag, value) -> None:
    if value in ("24h", "7d", "30d", "key", "model", "day") or value.startswith("-"):
        return
    code, out, err = usage(tmp_home, flag, value)
    assert code == 2 and f"argument {flag}" in err and out == ""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pool=st.text(min_size=1, max_size=300).filter(lambda t: not t.isprintable() or len(t) > 200))
def test_generated_bad_pool_names_are_exit_2(tmp_home, pool) -> None:
    if pool.startswith("-"):
        return
    code, _out, err = usage(tmp_home, pool)
    assert code == 2 and "POOL" in err
