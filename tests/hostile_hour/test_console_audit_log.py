"""Hostile hour: the console's audit view (``L``) on an audit log it cannot read.

A FIFO, a directory or a dangling link at ``hermes-admin-audit.jsonl``: ``hermes-admin
audit`` exits 3 saying so, but ``L`` in the console raised the same error out of the key
binding, and Textual's crash screen ended the session. It is now a message naming the file,
and the console goes on.
"""

from __future__ import annotations

import os

import pytest

from screens.dashboard_actions import Operator
from store.errors import StoreUnreadable
from store.ops import audit
from store.paths import Home
from tests.tui_sample import app_for, notes, write_sample


def _plant(home: Home, kind: str) -> None:
    if home.audit.exists() or home.audit.is_symlink():
        home.audit.unlink()
    if kind == "fifo":
        os.mkfifo(home.audit)
    elif kind == "dir":
        home.audit.mkdir()
    else:
        home.audit.symlink_to("/nonexistent-log-volume/audit.jsonl")


@pytest.mark.parametrize("kind", ["fifo", "dir", "dangling"])
async def test_L_on_an_unreadable_audit_log_is_a_message(tmp_home: Home, kind: str) -> None:
    write_sample(tmp_home)
    _plant(tmp_home, kind)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("L")
        await pilot.pause()
        assert app.is_running and app.return_code is None
        assert any(str(tmp_home.audit) in n for n in notes(app)), notes(app)
        await pilot.press("q")


async def test_negative_control_without_the_catch_the_key_crashes(tmp_home: Home,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The binding as it was: the error leaves the key handler and ends the app."""
    write_sample(tmp_home)
    _plant(tmp_home, "fifo")

    def unguarded(self: Operator) -> None:
        audit.tail(self.host.home, 200)

    monkeypatch.setattr(Operator, "audit", unguarded)
    app = app_for(tmp_home)
    with pytest.raises(StoreUnreadable, match="FIFO"):     # Textual re-raises what ended the app
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("L")
            await pilot.pause()
    assert app.return_code not in (None, 0)
