"""History ids sort in the order writes land, not the order they were asked for.

Found in an operator trial: two console writes of one burst (``K K``, two priority moves) run
on two workers. The id was taken before the wait for the lock, so the move that landed second
could carry the older id. ``undo`` (the newest id) then picked the move that landed first,
found its row changed since "by another writer" (the console's own second move), kept it, and
still said "put back".

The test makes the order explicit: write A starts first and is held before it takes the lock;
write B starts later and lands; then A lands. A landed last, so A is the newest action.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

from store.ops import actions, undo, write
from store.ops.write import StoreChange, perform
from store.paths import Home
from store.transaction import transaction as real_transaction
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, read_doc, write_store

WAIT = 30.0


def _priority(home: Home, target: str, n: int) -> Any:
    return perform(home, StoreChange(lambda doc, now: actions.set_priority(doc, "openrouter", target, n)), via="cli")


def _run_a_held_then_b(home: Home, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    go, a_waiting = threading.Event(), threading.Event()
    first = [True]

    @contextmanager
    def held_once(*args: Any, **kwargs: Any) -> Iterator[Any]:
        if first[0] and threading.current_thread().name == "write-a":
            first[0] = False
            a_waiting.set()
            assert go.wait(WAIT)          # A asked first, and waits here, before the lock
        with real_transaction(*args, **kwargs) as doc:
            yield doc

    monkeypatch.setattr(write, "transaction", held_once)
    got: dict[str, Any] = {}
    a = threading.Thread(target=lambda: got.setdefault("a", _priority(home, "k1", 2)), name="write-a")
    a.start()
    assert a_waiting.wait(WAIT)
    got["b"] = _priority(home, "k3", 0)          # asked after A, lands first
    go.set()
    a.join(WAIT)
    assert not a.is_alive()
    return got["a"], got["b"]


def test_the_write_that_landed_last_is_the_newest(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("k1", priority=0), make_row("k2", priority=1),
                                                     make_row("k3", priority=2)]}))
    a, b = _run_a_held_then_b(tmp_home, monkeypatch)
    assert a.history_id and b.history_id
    assert a.history_id > b.history_id            # A landed last
    assert undo.resolve(tmp_home, None) == a.history_id
    assert {r["id"]: r["priority"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]}["k1"] == 2
    code, out, err = run_main(["--home", str(tmp_home.root), "undo", "--yes"], b"")
    assert code == 0 and a.history_id in out, err
    assert {r["id"]: r["priority"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]}["k1"] != 2


def test_an_id_is_stamped_once_and_a_given_id_is_kept(tmp_home: Home) -> None:
    """A config edit retried on a changed file keeps its before-copy again: the id its copy is
    named by must not move between the two (nor a shared id of an action on several homes)."""
    from store.ops import history

    with history.recording(tmp_home, 1.0) as pending:
        history.stamp(pending)
        first = (pending.id, pending.at)
        assert first[1] > 1.0 and pending.named is True
        history.stamp(pending)
        assert (pending.id, pending.at) == first
    with history.recording(tmp_home, 1.0, "20261204T000000000001Z-abcdef") as given:
        history.stamp(given)
        assert (given.id, given.at) == ("20261204T000000000001Z-abcdef", 1.0)
