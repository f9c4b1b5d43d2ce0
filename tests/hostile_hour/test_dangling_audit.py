"""Hostile hour: an audit log linked to nothing is reported, not shown as no actions.

``hermes-admin audit`` on a home whose ``hermes-admin-audit.jsonl`` is a symlink to a file
that is not there printed nothing and exited 0, as if no operator had ever acted (a FIFO
or a directory there was already exit 3). It is now exit 3 naming the link and its target.
"""

from __future__ import annotations

import pytest

from store import safeio
from store.errors import StoreUnreadable
from store.ops import audit
from store.paths import Home
from tests.conftest import make_row, run_cli, write_store

MISSING = "/nonexistent-log-volume/hermes-admin-audit.jsonl"


@pytest.fixture
def linked(tmp_home: Home) -> Home:
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [make_row("aaaaaa")]}})
    tmp_home.audit.symlink_to(MISSING)
    return tmp_home


def test_audit_verb_reports_the_dangling_log(linked: Home) -> None:
    proc = run_cli(linked, "audit", ok=False, timeout=20)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert str(linked.audit) in proc.stderr and MISSING in proc.stderr


def test_tail_raises_and_a_missing_log_is_still_empty(linked: Home, tmp_path) -> None:
    with pytest.raises(StoreUnreadable, match="does not exist"):
        audit.tail(linked)
    assert audit.tail(Home(tmp_path / "fresh")) == []


def test_negative_control_without_the_check_it_reads_as_no_actions(
        linked: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safeio, "refuse_dangling", lambda *a, **k: None)
    assert audit.tail(linked) == []
