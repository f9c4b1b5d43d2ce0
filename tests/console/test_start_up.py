"""The console's first paint loads only what it shows (issue 28).

- No screen or modal other than the dashboard is imported until it is opened: the registry
  (``screens.screen``) imports each on first use, and the keymap's check of binding ids (which
  imports them all) runs only when a keymap file has entries. Checked in a fresh interpreter
  through the first paint, with negative controls: one eager import of a modal is seen, and so
  is a keymap file with an entry (every screen imported to check its id).
- Each name of the registry gives the class it names, and opening one imports it.
- sqlite3 (the usage ledger's reader) is not loaded before the first paint (issue 29).
- The footer rebuilds once for a burst of binding changes (tui.widgets.footer.KeysFooter);
  negative control: Textual's own Footer rebuilds once per change.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

import screens
from tui.widgets.footer import KeysFooter

ROOT = Path(__file__).resolve().parents[2]

# What the console imports until its first rows are on screen: its entry, the app (with the
# keymap file of the operator's config folder, absent here), then the first paint itself.
PROBE = """
import asyncio, sys, tempfile
from pathlib import Path
{extra}
import tui.cli.entry, tui.app.console, tui.cli.fleet
from store.paths import Home
from tests.conftest import make_row, make_store, write_store
from tui.app.console import HermesAdminApp
from tui.widgets import CredentialTable

root = Path(tempfile.mkdtemp())
root.chmod(0o700)
home = Home(root)
write_store(home, make_store({{"openrouter": [make_row("aaaaaa", label="one")]}}))

async def main():
    app = HermesAdminApp(home, watch=False, tick=False, keymap_file=root / "no-keymap.yaml")
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(200):           # bounded: until the first row is drawn
            if app.screen.query_one(CredentialTable).row_count:
                break
            await pilot.pause()
        assert app.screen.query_one(CredentialTable).row_count

asyncio.run(main())
print(" ".join(sorted(m for m in sys.modules if m.startswith("screens."))))
"""
FIRST_PAINT = {"screens.dashboard", "screens.dashboard_actions", "screens.dashboard_changes",
               "screens.dashboard_chrome", "screens.dashboard_events", "screens.dashboard_spend",
               "screens.dashboard_view", "screens.explain", "screens.status_watch", "screens.view_memory"}


def _loaded(extra: str = "") -> set[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(extra=extra)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    return set(out.stdout.split())


def test_start_up_imports_the_dashboard_and_no_other_screen() -> None:
    assert _loaded() == FIRST_PAINT
    # Negative control: one eager import of a modal (as the dashboard had) is seen.
    assert "screens.confirm" in _loaded("import screens.confirm") - FIRST_PAINT


def test_first_paint_imports_no_sqlite3() -> None:
    """The spend column (issue 29) reads its ledger after the first paint: sqlite3 is not
    loaded before it; negative control: an eager import is seen."""
    code = PROBE.replace('print(" ".join(sorted(m for m in sys.modules if m.startswith("screens."))))',
                         'print("sqlite3" in sys.modules)')

    def loaded(extra: str) -> str:
        return subprocess.run([sys.executable, "-c", code.format(extra=extra)], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, check=True).stdout.strip()

    assert loaded("") == "False"
    assert loaded("import sqlite3") == "True"


def test_control_a_keymap_with_entries_imports_every_screen_to_check_them(tmp_path: Path) -> None:
    keymap = tmp_path / "keymap.yaml"
    keymap.write_text("dashboard.reset: R\n")
    code = PROBE.replace('root / "no-keymap.yaml"', f"Path({str(keymap)!r})")
    out = subprocess.run([sys.executable, "-c", code.format(extra="")], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    assert {"screens.confirm", "screens.help", "screens.config_view"} <= set(out.stdout.split())


def test_the_registry_names_each_class_and_imports_it_on_first_use() -> None:
    for name, where in screens.WHERE:
        cls = screens.screen(name)
        module, _, attr = where.partition(":")
        assert cls.__module__ == module and cls.__name__ == attr
        assert module in sys.modules
    assert [name for name, _cls in screens.SCOPES] == [name for name, _ in screens.WHERE]
    with pytest.raises(KeyError):
        screens.screen("no such screen")


class _Keys(App[None]):
    BINDINGS = [Binding("a", "noop", "A"), Binding("b", "noop", "B")]

    def __init__(self, footer: type[Footer]) -> None:
        super().__init__()
        self.footer_class = footer
        self.rebuilt = 0

    def compose(self) -> ComposeResult:
        yield self.footer_class()

    def action_noop(self) -> None:
        pass


async def _rebuilds(footer: type[Footer]) -> int:
    app = _Keys(footer)
    async with app.run_test() as pilot:
        await pilot.pause()
        shown = app.query_one(Footer)
        original = type(shown).recompose

        async def counted(self: Footer) -> None:
            app.rebuilt += 1
            await original(self)

        type(shown).recompose = counted          # type: ignore[method-assign]
        try:
            for _ in range(5):                    # one burst: five changes before a refresh
                app.screen.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
        finally:
            type(shown).recompose = original      # type: ignore[method-assign]
        assert len(app.query("FooterKey")) == 2   # the keys are shown after the rebuild
    return app.rebuilt


async def test_the_footer_rebuilds_once_for_a_burst_of_binding_changes() -> None:
    assert await _rebuilds(KeysFooter) == 1
    # Negative control: Textual's Footer rebuilds for every change of the burst.
    assert await _rebuilds(Footer) == 5
