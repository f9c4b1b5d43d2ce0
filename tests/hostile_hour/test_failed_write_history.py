"""Hostile hour: a write that fails (disk full) keeps no history copy behind.

RELIABILITY 53 (every operator write keeps a way back) and 24 (nothing left behind that
holds keys). On a full disk every write fails cleanly, but each one had already kept its
"before" copy of auth.json in the history folder, with no record beside it. The pruning
counts ids, orphans included: after 50 failed attempts, the next write that landed (space
freed) pruned every real record, so ``undo`` had nothing left to put back. Now a write
that does not land leaves no copy.
"""

from __future__ import annotations

import os

import pytest

from store import authfile
from store.errors import WriteFailed
from store.ops import actions, history
from store.ops.write import StoreChange, perform
from store.paths import Home
from tests.conftest import make_row, write_store

KEY = "sk-or-v1-hostileHOURhistory0000000000000000001"


def _cooldown(home: Home, n: int) -> None:
    perform(home, StoreChange(lambda doc, now: actions.cooldown(doc, "openrouter", "aaaaaa", now + 60 + n, now,
                                                                shorten=True)), via="cli")


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = authfile.atomic_write_bytes

    def full(path: os.PathLike[str], data: bytes, **kw: object) -> None:
        if os.path.basename(path) == "auth.json":
            raise WriteFailed(path, "write failed (No space left on device); the file was not changed")
        real(path, data, **kw)   # type: ignore[arg-type]

    monkeypatch.setattr(authfile, "atomic_write_bytes", full)


def _orphans(home: Home) -> list[str]:
    names = os.listdir(history.folder(home))
    records = {n[:-5] for n in names if n.endswith(".json")}
    return [n for n in names if not n.endswith(".json") and n.rsplit(".", 1)[-1] not in records]


@pytest.fixture
def home(tmp_home: Home) -> Home:
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa", token=KEY)]}})
    return tmp_home


def test_a_failed_write_keeps_no_copy(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    _cooldown(home, 0)
    with monkeypatch.context() as m:
        _full_disk(m)
        for n in range(3):
            with pytest.raises(WriteFailed):
                _cooldown(home, n + 1)
    assert _orphans(home) == []


def test_failed_writes_on_a_full_disk_do_not_prune_the_way_back(home: Home,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _cooldown(home, 0)
    first = history.prune(home, 0.0, keep=10**6, days=10**6)   # nothing dropped: just to list
    assert first == 0
    real_ids = sorted(n[:-5] for n in os.listdir(history.folder(home)) if n.endswith(".json"))
    with monkeypatch.context() as m:
        _full_disk(m)
        for n in range(history.KEEP_COUNT + 2):
            with pytest.raises(WriteFailed):
                _cooldown(home, n + 1)
    _cooldown(home, 999)                                      # space freed: a write lands
    left = {n[:-5] for n in os.listdir(history.folder(home)) if n.endswith(".json")}
    assert set(real_ids) <= left, "the earlier action's record was pruned by failed writes"


def test_negative_control_without_the_discard_the_copies_stay(home: Home,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "discard", lambda pending: None)
    _cooldown(home, 0)
    with monkeypatch.context() as m:
        _full_disk(m)
        with pytest.raises(WriteFailed):
            _cooldown(home, 1)
    assert len(_orphans(home)) == 1
