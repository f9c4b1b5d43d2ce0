"""The usage ledger's NULLs: a None parameter is bound by the adapter the ledger registers
(one dictionary lookup, not the sqlite3 module's ``__conform__`` search whose AttributeError
it formats and drops, about 1 us a row), and reads back as None, as without it."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from store.usage import ledger as ledger_mod
from store.usage.ledger import open_ledger, row_of, write_rows
from store.usage.record import Spent

NOW = 1_800_000_000.0


def test_none_has_its_adapter_and_nothing_else_does() -> None:
    """Without the registration a None takes the slow search again: this fails."""
    adapter = sqlite3.adapters.get((type(None), sqlite3.PrepareProtocol))
    assert adapter is ledger_mod._null
    assert adapter(None) is None
    for basic in (int, float, str, bytes, bytearray):      # a basic type adapted slows every bind
        assert (basic, sqlite3.PrepareProtocol) not in sqlite3.adapters


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 10**9)), st.one_of(st.none(), st.integers(0, 10**9)),
                          st.one_of(st.none(), st.floats(0, 1e6, allow_nan=False)),
                          st.one_of(st.none(), st.text(max_size=20))), min_size=1, max_size=40))
def test_nulls_written_read_back_as_none(tmp_path_factory, values) -> None:
    path = tmp_path_factory.mktemp("ledger") / "usage.sqlite"
    conn = open_ledger(path, write=True)
    try:
        spents = [Spent(at=NOW + i, pool="openrouter", row_id=None if model is None else "or1", fingerprint=None,
                        model=model, input_tokens=inp, output_tokens=out, cost_usd=cost,
                        cost_status="estimated" if cost is not None else "unknown")
                  for i, (inp, out, cost, model) in enumerate(values)]
        write_rows(conn, [row_of(s) for s in spents])
        got = conn.execute("SELECT row_id, fingerprint, model, input_tokens, output_tokens, cost_usd, "
                           "cache_read_tokens FROM requests ORDER BY at").fetchall()
    finally:
        conn.close()
    assert got == [(s.row_id, None, s.model, s.input_tokens, s.output_tokens, s.cost_usd, None) for s in spents]
