"""Undo puts a row's bench back whole or not at all (store.ops.undo.UNITS).

An operator benches ``backup`` by hand; an agent then benches it again (a 402 with the
provider's reset time, a 429). ``undo`` of the cooldown must keep the agent's whole bench:
it used to reset ``last_status`` (its value happened to equal what the cooldown wrote) while
keeping the agent's code and reset time, so ``list`` showed the row ok and the agent's
quota bench was gone. Negative control: the per-field ``_put_back_fields`` of before
(``git stash`` of store/ops/undo.py) fails both tests below.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.model import STATUS_FIELDS
from store.paths import Home
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, read_doc, write_store

KEYS = ["sk-or-v1-undounits-" + c * 40 for c in "ab"]
BENCH = (*STATUS_FIELDS, "failure_reason")


def _home(root: Path) -> Home:
    home = Home(root)
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", label="main", token=KEYS[0], priority=0),
        make_row("bbbbbb", label="backup", token=KEYS[1], priority=1)]}))
    return home


def agent_writes(home: Home, rid: str, fields: dict[str, Any]) -> None:
    """What a Hermes agent does when it benches a key: raw flock on auth.lock, fresh read,
    its own temp file, atomic replace; it knows nothing of hermes-admin's history."""
    fd = os.open(home.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        doc = json.loads(home.auth.read_text(encoding="utf-8"))
        for r in doc["credential_pool"]["openrouter"]:
            if r["id"] == rid:
                r.update(fields)
        tmp = home.auth.with_name("auth.json.hermes-tmp")
        tmp.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        os.replace(tmp, home.auth)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _backup(home: Home) -> dict[str, Any]:
    return next(r for r in read_doc(home)["credential_pool"]["openrouter"] if r["id"] == "bbbbbb")


def _bench(row: dict[str, Any]) -> dict[str, Any]:
    return {f: row.get(f) for f in BENCH}


def _agent_bench(code: int, now: float) -> dict[str, Any]:
    reason = "insufficient_credits" if code == 402 else "rate_limit_exceeded"
    return {"last_status": "exhausted", "last_status_at": now, "last_error_code": code,
            "last_error_reason": reason, "last_error_message": f"{code} from the provider",
            "last_error_reset_at": now + 86400}


@pytest.mark.parametrize("code", [402, 429])
def test_undo_keeps_the_whole_bench_an_agent_wrote_since(tmp_path: Path, code: int) -> None:
    home = _home(tmp_path / "h")
    h = ["--home", str(home.root)]
    assert run_main(["cooldown", "openrouter", "backup", "--for", "2h", "--reason", "review", *h], b"")[0] == 0
    agent = _agent_bench(code, time.time())
    agent_writes(home, "bbbbbb", agent)
    code, out, err = run_main(["undo", "--yes", *h], b"")
    row = _backup(home)
    assert _bench(row) == {**agent, "failure_reason": None}, (out, err)   # all of it, last_status too
    assert "whole bench" in out + err and "another writer" in out + err
    assert code == 2 and "nothing was undone" in err and "undone 2" not in out     # nothing else went back


def test_undo_with_no_later_writer_puts_the_whole_bench_back(tmp_path: Path) -> None:
    home = _home(tmp_path / "h")
    h = ["--home", str(home.root)]
    before = _bench(_backup(home))
    assert run_main(["cooldown", "openrouter", "backup", "--for", "2h", *h], b"")[0] == 0
    code, out, err = run_main(["undo", "--yes", *h], b"")
    assert code == 0 and "undone" in out, (out, err)
    assert _bench(_backup(home)) == before


_FIELD_VALUES = {"last_status": "dead", "last_status_at": 1.5e9, "last_error_code": 401,
                 "last_error_reason": "invalid_grant", "last_error_message": "token revoked",
                 "last_error_reset_at": 2.5e9, "failure_reason": "auth"}


@settings(max_examples=25, deadline=None)
@given(changed=st.sets(st.sampled_from(sorted(_FIELD_VALUES))))
def test_bench_is_never_half_reverted(changed: set[str]) -> None:
    """For any subset of bench fields another writer changed after the action, the row's bench
    after undo is all the action's "before" or all the other writer's; never a mix."""
    with tempfile.TemporaryDirectory() as tmp:
        home = _home(Path(tmp) / "h")
        h = ["--home", str(home.root)]
        before = _bench(_backup(home))
        assert run_main(["cooldown", "openrouter", "backup", "--for", "2h", "--reason", "review", *h], b"")[0] == 0
        agent_writes(home, "bbbbbb", {f: _FIELD_VALUES[f] for f in changed})
        theirs = _bench(_backup(home))
        run_main(["undo", "--yes", *h], b"")
        got = _bench(_backup(home))
        assert got in (before, theirs)
        assert got == (theirs if changed else before)
