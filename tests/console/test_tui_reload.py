"""RELIABILITY 12: the console's own write causes at most one refresh (no reload loop)."""

from __future__ import annotations

import asyncio
import time

import pytest

from store.paths import Home
from store.transaction import transaction
from tests.conftest import read_doc
from tests.tui_sample import write_sample
from tui.app.console import HermesAdminApp
from tui.widgets import CredentialTable


async def _wait(pred, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        await asyncio.sleep(0.02)
    return pred()


@pytest.mark.slow
@pytest.mark.parametrize("refresh_writes", [False, True], ids=["as-built", "control-refresh-that-writes"])
async def test_own_write_causes_exactly_one_refresh(tmp_home: Home, refresh_writes: bool) -> None:
    """The control makes each refresh write the store (the bug this guards against): the
    same harness then counts a loop of refreshes, so the as-built count of 1 means something."""
    write_sample(tmp_home)
    app = HermesAdminApp(tmp_home, watch=True, tick=False)
    loads: list[int] = []
    async with app.run_test(size=(100, 30)) as pilot:
        assert await _wait(lambda: app.state is not None)
        real = app._accept

        def counting(state, events):
            loads.append(state.generation)
            real(state, events)
            if refresh_writes and len(loads) < 5:
                with transaction(tmp_home) as doc:
                    doc["touched_by_refresh"] = len(loads)

        app._accept = counting  # type: ignore[method-assign]
        table = app.dashboard.query_one(CredentialTable)
        rows = read_doc(tmp_home)["credential_pool"]["openrouter"]
        cooling = next(r for r in rows if r.get("last_status") == "exhausted")
        assert table.move_to_key(f"cred\x1fopenrouter\x1f{cooling['id']}")
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        # (not workers.wait_for_complete(): the watcher worker never completes)
        assert await _wait(lambda: read_doc(tmp_home)["credential_pool"]["openrouter"] != rows)
        # The write lands, then the watcher reports it once...
        assert await _wait(lambda: len(loads) >= 1)
        # ...and nothing more arrives: our own files (temp, backup link, audit log) are
        # not watched, and a refresh never writes.
        await asyncio.sleep(0.6)
        await pilot.pause()
    row = next(r for r in read_doc(tmp_home)["credential_pool"]["openrouter"] if r["id"] == cooling["id"])
    assert row["last_status"] is None and row.get("status_cleared_at")
    if refresh_writes:
        assert len(loads) > 1, "the harness failed to see a reload loop"
    else:
        assert len(loads) == 1, f"one write caused {len(loads)} refreshes"
