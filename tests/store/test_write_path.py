"""store.ops.write.perform: the one write-and-audit path of the CLI, the console and the probe.

The timestamp of a write is read inside the lock, after the wait for it: a write that
waited a second for another process's lock is audited (and its rows stamped) when it
happened, not when it was asked for.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from store.errors import BadInput
from store.ops import actions, audit
from store.ops.write import StoreChange, perform
from store.paths import Home
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.helpers_proc import spawn, stop, wait_ready
from tui.cli import main

HOLD = 1.0


def _home(tmp_home: Home) -> Home:
    write_store(tmp_home, make_store({"openrouter": [make_row("a1", last_status="exhausted",
                                                             last_error_reset_at=time.time() + 600)]}))
    return tmp_home


def _release_later(holder, released: list[float]) -> threading.Thread:
    """Let the holder keep the lock HOLD seconds, note the time, then end it (the kernel frees the lock)."""
    def release() -> None:
        time.sleep(HOLD)   # the other process's hold, not a wait for a result
        released.append(time.time())
        stop(holder)
    t = threading.Thread(target=release)
    t.start()
    return t


def _audited_time(home: Home) -> float:
    return float(audit.tail(home)[-1]["time"])


def test_now_is_read_after_the_lock_wait(tmp_home: Home) -> None:
    home = _home(tmp_home)
    holder = spawn("hold", home=str(home.root), how="raw")
    released: list[float] = []
    try:
        wait_ready(holder)
        releaser = _release_later(holder, released)
        written = perform(home, StoreChange(lambda doc, now: actions.reset(doc, "openrouter", None, now),
                                            lock_timeout=30), via="test")
        releaser.join(timeout=30)
    finally:
        stop(holder)
    assert written.at >= released[0]
    assert _audited_time(home) == written.at
    assert read_doc(home)["credential_pool"]["openrouter"][0]["status_cleared_at"] == written.at


def test_negative_control_a_stamp_taken_before_the_lock_is_older_than_the_release(tmp_home: Home) -> None:
    """The old way (now read before the transaction) fails the check above: the check can fail."""
    home = _home(tmp_home)
    holder = spawn("hold", home=str(home.root), how="raw")
    released: list[float] = []
    try:
        wait_ready(holder)
        now = time.time()                       # before the lock wait, as the CLI used to
        releaser = _release_later(holder, released)
        with transaction(home, lock_timeout=30) as doc:
            outcome = actions.reset(doc, "openrouter", None, now)
        audit.record(home, outcome, via="test", now=now)
        releaser.join(timeout=30)
    finally:
        stop(holder)
    assert not _audited_time(home) >= released[0]


def test_bad_input_writes_and_audits_nothing(tmp_home: Home) -> None:
    home = _home(tmp_home)
    before = home.auth.read_bytes()
    with pytest.raises(BadInput):
        perform(home, StoreChange(lambda doc, now: actions.reset(doc, "nope", None, now)), via="test")
    assert home.auth.read_bytes() == before
    assert not home.audit.exists()


def test_an_edit_with_its_own_lock_is_audited_when_it_returns(tmp_home: Home) -> None:
    home = _home(tmp_home)
    ticks = iter([100.0, 200.0])
    written = perform(home, lambda: actions.Outcome("probe-lift", "openrouter"), via="test",
                      clock=lambda: next(ticks))
    assert written.at == 100.0 and _audited_time(home) == 100.0


def test_an_unwritable_audit_log_is_reported_or_raised(tmp_home: Home) -> None:
    home = _home(tmp_home)
    Path(home.audit).mkdir()      # a directory where the log should be: appending fails
    change = StoreChange(lambda doc, now: actions.reset(doc, "openrouter", None, now))
    written = perform(home, change, via="test")
    assert written.audit_error and str(home.audit) in written.audit_error
    assert json.loads(home.auth.read_text())["credential_pool"]["openrouter"][0]["status_cleared_at"]


def test_cli_write_that_landed_exits_0_when_only_the_audit_fails(tmp_home: Home, capsys) -> None:
    """RELIABILITY 28: an honest exit code. The reset landed, so exit 0 with a warning."""
    home = _home(tmp_home)
    Path(home.audit).mkdir()
    code = main(["reset", "openrouter", "--yes", "--home", str(home.root)])
    err = capsys.readouterr().err
    assert code == 0 and "was written" in err and "audit log" in err
    assert read_doc(home)["credential_pool"]["openrouter"][0].get("status_cleared_at")
    # Control: with a usable audit log there is no warning, and the line is there (a write
    # that changes something: a second reset of keys now ok writes nothing).
    Path(home.audit).rmdir()
    assert main(["cooldown", "openrouter", "1", "--for", "15m", "--home", str(home.root)]) == 0
    assert "audit log" not in capsys.readouterr().err and audit.tail(home, 5)
