"""What the console and ``proxy status`` show of affinity: the conversations each key holds,
read from the status file (``—`` where the pool does not pin, and for a value that is not a
count: the file is another process's)."""

from __future__ import annotations

import os
import time

import pytest

from store.proxy.observing.stats import write_status
from tests.cli.inprocess import run_main
from tests.tui_sample import proxy_status
from tui.services.proxy_feed import CREDENTIAL_COLUMNS, conversations, credential_rows


def test_the_credential_table_counts_conversations_per_key():
    st = proxy_status()
    rows = {(r[0], r[1]): r for r in credential_rows(st)}
    col = CREDENTIAL_COLUMNS.index("convs")
    assert rows[("openrouter", "a1b2c3")][col] == "3"
    assert rows[("nous", "ns0aaa")][col] == "—"          # its pool does not pin


def test_a_pinning_pool_s_key_with_no_conversation_holds_zero():
    st = proxy_status()
    st["credentials"].append({"pool": "openrouter", "id": "zz9", "label": None, "in_flight": 0,
                              "requests_per_minute": 0})
    assert conversations(st, "openrouter", "zz9") == 0


@pytest.mark.parametrize("bad", [None, "x", [], {"openrouter": "3"}, {"openrouter": {"a1b2c3": True}},
                                 {"openrouter": {"a1b2c3": "3"}}, {"openrouter": None}])
def test_a_status_file_with_odd_values_shows_a_null(bad):
    st = proxy_status()
    st["affinity"] = {"conversations": bad}
    assert conversations(st, "openrouter", "a1b2c3") is None
    assert credential_rows(st)  # never raises


def test_an_old_status_file_without_affinity_shows_nulls():
    st = proxy_status()
    del st["affinity"]
    assert all(r[-1] == "—" for r in credential_rows(st))


def test_proxy_status_prints_the_conversations_of_pinning_pools_only(tmp_home):
    write_status(tmp_home, proxy_status(now=time.time(), pid=os.getpid()))      # a live proxy: this process
    code, out, err = run_main(["proxy", "status", "--home", str(tmp_home.root)], b"")
    assert code == 0, err
    (line,) = [x for x in out.splitlines() if "openrouter/a1b2c3" in x]
    assert line.endswith("conversations 3")
    (nous,) = [x for x in out.splitlines() if "nous/ns0aaa" in x]
    assert "conversations" not in nous
