"""The proxy's in-memory view never goes back in time.

``Chain.load`` runs from more than one thread (the store watcher, the restore gate after a
restore, an outcome that refreshed a token). A snapshot read before a bench was written
must not be applied after a newer one that showed it: the newer snapshot has already
retired the in-memory overlay, so the older one would reopen the benched row in the view,
and the proxy would send to a cooling key until the store next changed.
"""

from __future__ import annotations

import threading

from store.agent.outcomes import Result
from store.paths import Home
from store.proxy.routing import chain as chain_mod
from store.proxy.routing.chain import Chain
from tests.conftest import make_row, make_store, write_store

KEYS = [f"sk-or-v1-viewtest-{i:030d}" for i in range(2)]


def _chain(home: Home) -> Chain:
    write_store(home, make_store({"openrouter": [
        make_row(f"or{i}aaa", token=KEYS[i], priority=i, base_url="http://127.0.0.1:9/api/v1")
        for i in range(2)]}))
    home.config.write_text("model:\n  provider: openrouter\n")
    chain = Chain(home, "openrouter", env={})
    chain.load()
    return chain


def test_a_snapshot_read_before_a_bench_never_reopens_it(tmp_home, monkeypatch):
    chain = _chain(tmp_home)
    read_old, release = threading.Event(), threading.Event()
    real_read = chain_mod.read_store

    def read_store(home):
        snap = real_read(home)
        if threading.current_thread().name == "stale-load":   # read, then stall before applying
            read_old.set()
            release.wait(10)
        return snap

    monkeypatch.setattr(chain_mod, "read_store", read_store)
    stale = threading.Thread(target=chain.load, name="stale-load", daemon=True)
    stale.start()
    assert read_old.wait(10), "the stale load never read the store"

    attempt = chain.select()
    assert attempt is not None and attempt.selection.row_id == "or0aaa"
    for _ in range(2):                      # 429: retry once on the same key, then bench
        chain.outcome(attempt, Result(429, message="rate limited"))
    chain.load()                            # the watcher: the file shows the bench
    assert not chain.usable(attempt.selection)

    release.set()                           # the snapshot read before the bench arrives last
    stale.join(10)
    assert not stale.is_alive()
    assert not chain.usable(attempt.selection)
    again = chain.select()
    assert again is not None and again.selection.row_id == "or1aaa"
