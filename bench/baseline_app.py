"""The idle-CPU baseline for bench_tui.py: a bare Textual app, one static 1,000-row table.

No timers, no watcher, nothing live: what Textual itself costs showing a table of
the same size in the same terminal. ``python bench/baseline_app.py``; ``python
bench/baseline_app.py 6`` shows 6 rows (the first-paint baseline of ``bench_tui.py startup``).
"""

from __future__ import annotations

import sys

from textual.app import App, ComposeResult
from textual.widgets import DataTable

ROWS = int(sys.argv[1]) if sys.argv[1:] else 1000


class Baseline(App):
    def compose(self) -> ComposeResult:
        yield DataTable(cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("#", "label", "status", "left", "code/reason", "key")
        table.add_rows(
            (str(i), f"key-{i:05d}", "◐ cooling" if i % 2 == 0 else "● ok",
             "59m 0s" if i % 2 == 0 else "—", "429 rate_limit_exceeded" if i % 2 == 0 else "—",
             f"sk-or-…{i:04d}")
            for i in range(ROWS)
        )


if __name__ == "__main__":
    Baseline().run()
