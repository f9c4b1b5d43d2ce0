"""Reading the usage ledger writes nothing, and its path is the home's, whatever its name.

Found by a hostile session:
- ``hermes-admin usage`` left SQLite's ``-wal`` and ``-shm`` files beside a ledger no writer
  had open (reading wrote into the home; a home the reader cannot write failed with
  "attempt to write a readonly database");
- the ledger was opened as the URI ``file:{path}``, unescaped: a home named ``u#1`` or ``w?x``
  opened (and created) ``u`` or ``w`` beside it, outside the home, and ``p%41`` another file.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.usage.ledger import ledger_path, open_ledger, write_batch
from store.usage.record import Spent
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store

NOW = time.time()


def _spent(tokens: int) -> Spent:
    return Spent(at=NOW - 60, pool="openrouter", row_id="or1", fingerprint="sk-or-…a1B2", model="x/y",
                 input_tokens=tokens, output_tokens=1, cost_usd=0.001, cost_status="actual")


def _home(root: Path) -> Home:
    home = Home(root)
    write_store(home, make_store({"openrouter": [make_row("or1")]}))
    return home


def _input_tokens(home: Home) -> int:
    code, out, err = run_main(["usage", "--home", str(home.root), "--json"], b"")
    assert code == 0, err
    return json.loads(out)["pools"]["openrouter"]["totals"]["input_tokens"]


def test_reading_a_ledger_no_writer_has_open_makes_no_file(tmp_path: Path) -> None:
    home = _home(tmp_path / "home")
    conn = open_ledger(ledger_path(home.root), write=True)
    write_batch(conn, [_spent(7), _spent(5)])
    conn.close()                        # the writer's close folds its -wal in and removes it
    before = sorted(os.listdir(home.root))
    assert _input_tokens(home) == 12
    assert sorted(os.listdir(home.root)) == before


def test_while_a_writer_has_it_open_its_rows_are_read(tmp_path: Path) -> None:
    """The control for reading as immutable only without a -wal: rows still in the writer's
    -wal are read, not missed."""
    home = _home(tmp_path / "home")
    conn = open_ledger(ledger_path(home.root), write=True)
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")
        write_batch(conn, [_spent(3)])
        assert os.path.getsize(f"{ledger_path(home.root)}-wal") > 0
        assert _input_tokens(home) == 3
        write_batch(conn, [_spent(4)])
        assert _input_tokens(home) == 7
    finally:
        conn.close()


NAME = st.text(st.sampled_from("ab#?%&=;+ 41é"), min_size=1, max_size=8).filter(lambda t: t.strip() == t)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAME, n=st.integers(1, 50))
def test_any_folder_name_is_the_ledgers_own(tmp_path_factory, name: str, n: int) -> None:
    parent = tmp_path_factory.mktemp("parent")
    home = _home(parent / name)
    conn = open_ledger(ledger_path(home.root), write=True)
    write_batch(conn, [_spent(n)])
    conn.close()
    assert sorted(os.listdir(parent)) == [name]           # nothing made outside the home
    assert _input_tokens(home) == n
    assert sorted(os.listdir(parent)) == [name]
