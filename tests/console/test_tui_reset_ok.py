"""A reset of keys that are already ok writes nothing and no audit line, in the console as in
the CLI: one decision (store.ops.actions.reset_rows, raised inside store.ops.write.perform's
lock as NothingToChange), not one per front end (issue 28).

Negative control: with that decision switched off (``actions.needs_reset`` says every row
needs a reset), the same console reset and the same CLI reset both write and audit: the
check sees a write when there is one, and both front ends go through the one decision.
"""

from __future__ import annotations

import os

import pytest

from screens.confirm import ConfirmScreen
from store.ops import actions, history
from store.paths import Home
from tests.tui_sample import app_for, audit_lines, notes, on_row, settle, write_sample
from tui.cli import main

pytestmark = pytest.mark.usefixtures("utc")


def _files(home: Home) -> dict[str, bytes]:
    """Every file under the home but lock files (taking a lock creates its file; it holds nothing)."""
    out = {}
    for dirpath, _dirs, names in os.walk(home.root):
        for name in names:
            if not name.endswith(".lock"):
                path = os.path.join(dirpath, name)
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, home.root)] = fh.read()
    return out


async def _console_reset(home: Home, rid: str) -> list[str]:
    app = app_for(home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", rid)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(app, pilot)
        return notes(app)


def _cli_reset(home: Home, capsys: pytest.CaptureFixture[str], label: str) -> str:
    assert main(["--home", str(home.root), "reset", "openrouter", label]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("decision_on", [True, False], ids=["decision", "control-decision-off"])
async def test_a_reset_of_a_key_already_ok_writes_nothing_in_console_and_cli(
        tmp_home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        decision_on: bool) -> None:
    write_sample(tmp_home)          # openrouter "primary" (a1b2c3) is ok
    if not decision_on:
        monkeypatch.setattr(actions, "needs_reset", lambda row: True)
    before = _files(tmp_home)
    said = "\n".join(await _console_reset(tmp_home, "a1b2c3"))
    if decision_on:
        assert _files(tmp_home) == before               # no write, no audit line, no history copy
        assert not history.folder(tmp_home).exists()
        assert "nothing to change" in said and "already ok" in said and "no audit line" in said
    else:
        assert _files(tmp_home) != before
        assert [e["action"] for e in audit_lines(tmp_home)] == ["reset"]
    before = _files(tmp_home)
    out = _cli_reset(tmp_home, capsys, "primary")
    if decision_on:
        assert out.startswith("nothing changed: ") and "already ok" in out
        assert _files(tmp_home) == before and audit_lines(tmp_home) == []
    else:
        assert "nothing changed" not in out
        assert [e["action"] for e in audit_lines(tmp_home)] == ["reset", "reset"]


async def test_a_console_reset_of_an_ok_key_and_a_benched_one_resets_and_audits(tmp_home: Home) -> None:
    """Tagged rows of which one needs it: the reset writes, one audit line, as before."""
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await on_row(app, pilot, "openrouter", "a1b2c3")
        await pilot.press("space")
        await on_row(app, pilot, "openrouter", "d4e5f6")
        await pilot.press("space")
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(app, pilot)
    lines = audit_lines(tmp_home)
    assert len(lines) == 1 and lines[0]["action"] == "reset"
    assert {c["id"] for c in lines[0]["changes"]} == {"a1b2c3", "d4e5f6"}
