"""Guards for the two places hermes-admin uses a library's private API.

- tui/widgets/versioned_rows.py reaches into Textual's DataTable (its render caches,
  ``_data``, ``_row_locations``, ``_update_count``) to repaint one countdown cell per tick.
- store/watch.py builds ``watchfiles._rust_notify.RustNotify`` directly, so the watch is
  armed before the first load.

When an upgrade renames or reshapes any of these, these tests fail first, naming what
changed, instead of the console drawing stale rows or the watcher dying at run time.
The pins in pyproject (textual <9, watchfiles <2) keep such an upgrade deliberate.
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from tests.import_graph import modules

ROOT = Path(__file__).resolve().parent.parent
PRIVATE_IMPORTS = ("textual._", "watchfiles._")


def _params(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


def test_datatable_private_methods_keep_their_signatures() -> None:
    assert _params(DataTable._render_line_in_row) == ["row_key", "line_no", "base_style", "cursor_location",
                                                      "hover_location"]
    assert _params(DataTable._render_line) == ["y", "x1", "x2", "base_style"]
    assert _params(DataTable._render_cell)[:6] == ["row_index", "column_index", "base_style", "width", "cursor",
                                                   "hover"]
    for name in ("_get_offsets", "_get_row_style", "_should_highlight"):
        assert callable(getattr(DataTable, name, None)), f"DataTable.{name} is gone"
    from textual._two_way_dict import TwoWayDict

    assert TwoWayDict({1: 0}).get(1) == 0


async def test_datatable_private_state_is_still_there() -> None:
    class One(App):
        def compose(self) -> ComposeResult:
            yield DataTable()

    async with One().run_test() as pilot:
        table = pilot.app.query_one(DataTable)
        table.add_column("c", key="c")
        table.add_row("x", key="r")
        await pilot.pause()
        for name in ("_data", "_row_locations", "_update_count", "_updated_cells", "_new_rows",
                     "_require_update_dimensions", "_row_render_cache", "_line_cache",
                     "_pseudo_class_state", "_show_hover_cursor"):
            assert hasattr(table, name), f"DataTable instance has no {name}"
        assert isinstance(table._update_count, int)
        assert set(table._data) == {next(iter(table.rows))}


def test_rust_notify_keeps_its_constructor_and_watch(tmp_path: Path) -> None:
    from watchfiles._rust_notify import RustNotify

    notify = RustNotify([str(tmp_path)], False, False, 300, False, False)
    stop = threading.Event()
    stop.set()
    with notify:
        assert notify.watch(10, 5, 10, stop) in ("stop", "timeout", set())


def test_private_api_is_used_in_one_module_each() -> None:
    users: dict[str, set[str]] = {p: set() for p in PRIVATE_IMPORTS}
    for name, path in modules(ROOT).items():
        text = path.read_text(encoding="utf-8")
        for prefix in PRIVATE_IMPORTS:
            if f"from {prefix}" in text or f"import {prefix}" in text:
                users[prefix].add(name)
    assert users == {"textual._": {"tui.widgets.versioned_rows"}, "watchfiles._": {"store.watch"}}
