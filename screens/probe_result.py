"""``p``'s answer: each credential of the pool with its reopen-probe verdict and what was done.

Words are those of ``hermes-admin probe`` (shared in store.ops.probe_report): reopened (and
lifted), still limited, unknown with the reason, or why a row was not probed. The result
wraps within the width (80 columns included) instead of being cut.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tui.text.format import NULL
from tui.widgets.plain_table import FittedTable, fill_fitted

if TYPE_CHECKING:   # the probe's modules (urllib, http.client) load when a probe runs
    from store.ops.probe_report import ProbeReport

COLUMNS = ("#", "label", "key", "verdict", "result")


def verdict_word(verdict: str | None) -> str:
    return {"reopened": "✔ reopened", "limited": "✖ still limited",
            "unknown": "? unknown", None: "· not probed"}.get(verdict, verdict or NULL)


class ProbeResultScreen(ModalScreen[None]):
    """Verdicts of one probe; Escape, q or Enter closes."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="probe_result.close"),
        Binding("q", "dismiss", "Close", show=False, id="probe_result.close_q"),
    ]

    def __init__(self, report: ProbeReport) -> None:
        super().__init__(id="probe-result", classes="modal")
        self.report = report

    @property
    def rows(self) -> list[tuple[str, ...]]:
        return [(str(r.index), r.label or NULL, r.fingerprint or NULL, verdict_word(r.verdict),
                 r.outcome_text()) for r in self.report.rows]

    def compose(self) -> ComposeResult:
        rep = self.report
        when = datetime.fromtimestamp(rep.checked_at).strftime("%H:%M:%S")
        with Vertical(classes="modal-box", id="probe-box"):
            yield Static(Text(f"Reopen probe of {rep.pool} at {when}"), classes="modal-title")
            yield FittedTable(id="probe-table", cursor_type="row")
            lifted = len(rep.lifted)
            summary = (f"{rep.summary()} · {lifted} cooldown{'s' if lifted != 1 else ''} lifted"
                       + (f" · {len(rep.undecided)} undecided" if rep.undecided else ""))
            yield Static(Text(summary), id="probe-summary")
            yield Static("Only rows a probe says reopened (or whose cooldown ran out) are lifted. "
                         "Esc: close", classes="modal-keys")

    def on_mount(self) -> None:
        self._fill()
        self.query_one(DataTable).focus()

    def on_fitted_table_width_changed(self, event: FittedTable.WidthChanged) -> None:
        self._fill()                             # fitted to the table's width, once it has one

    def _fill(self) -> None:
        # The result wraps rather than being cut ("unknown (usage endpoint answered HTTP 500)").
        fill_fitted(self.query_one(FittedTable), COLUMNS, self.rows, "result", caps={"label": 18})

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.dismiss(None)
