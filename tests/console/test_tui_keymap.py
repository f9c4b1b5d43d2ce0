"""Keys are remappable by binding id from the operator's keymap file."""

from __future__ import annotations

import pytest

from screens.confirm import ConfirmScreen
from screens.help import HelpScreen
from store.paths import Home
from tests.tui_sample import NOW, notes, write_sample
from tui.app.console import HermesAdminApp
from tui.app.keymap import keymap_path
from tui.services.clock import FakeClock


def test_keymap_path_prefers_the_env_var_then_xdg(tmp_path) -> None:
    assert keymap_path({"HERMES_ADMIN_KEYMAP": str(tmp_path / "k.yaml")}) == tmp_path / "k.yaml"
    assert keymap_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "hermes-admin" / "keymap.yaml"
    assert keymap_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "hermes-admin" / "keymap.yaml"


@pytest.mark.parametrize("remap", [True, False], ids=["remapped", "control-default-keys"])
async def test_a_remapped_reset_key_opens_the_confirmation(tmp_home: Home, tmp_path, remap: bool) -> None:
    write_sample(tmp_home)
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("dashboard.reset: R\nno.such.binding: x\n" if remap else "")
    app = HermesAdminApp(tmp_home, clock=FakeClock(NOW), watch=False, tick=False, keymap_file=keymap)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("R")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) is remap
        if remap:
            await pilot.press("escape")
            await pilot.pause()
            await pilot.press("r")  # the old key no longer resets
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen)
            assert any("no.such.binding" in n for n in notes(app))
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            table = app.screen.query_one("DataTable")
            rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
            reset = [r for r in rows if "dashboard.reset" in r]
            assert reset and reset[0][1] == "R", reset
