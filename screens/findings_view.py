"""``!``: the findings over every profile (store.profiles.findings), one line each.

Shared keys, copied OAuth refresh tokens, primaries with no usable credential, missing
``env:`` variables, unknown provider names. Keys show only as fingerprints (the
findings carry nothing else); text is never parsed as markup. The finding wraps within
the width (80 columns included) instead of being cut.
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from screens.profile_rows import FLAG, NOTE_WORDS
from store.profiles.findings import Finding
from tui.widgets.plain_table import FittedTable, fill_fitted

COLUMNS = ("severity", "kind", "profiles", "finding")


def finding_row(f: Finding) -> tuple[str, ...]:
    sev = "✖ error" if f.severity == "error" else "⚠ warning"
    return (sev, f"{FLAG} {NOTE_WORDS.get(f.kind, f.kind)}", ", ".join(f.profiles), f.message)


class FindingsScreen(ModalScreen[None]):
    """Every finding; Esc closes."""

    BINDINGS = [Binding("escape,q", "close", "Close", id="findings.close")]

    def __init__(self, findings: Sequence[Finding]) -> None:
        super().__init__(classes="modal")
        self.findings = list(findings)

    @property
    def text(self) -> str:
        return "\n".join("  ".join(finding_row(f)) for f in self.findings) or "No findings."

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="findings-box"):
            yield Static(Text(f"Findings across profiles: {len(self.findings)}  (Esc: close)"),
                         classes="modal-title")
            if not self.findings:
                yield Static(Text("No findings: no shared key, no copied OAuth grant, "
                                  "every primary has a usable credential."), id="findings-none")
            yield FittedTable(id="findings", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self._fill()
        self.query_one(DataTable).focus()

    def on_fitted_table_width_changed(self, event: FittedTable.WidthChanged) -> None:
        self._fill()                             # fitted to the table's width, once it has one

    def _fill(self) -> None:
        # The finding wraps rather than being cut: its fingerprint and profiles are the point.
        fill_fitted(self.query_one(FittedTable), COLUMNS, [finding_row(f) for f in self.findings],
                    "finding", caps={"profiles": 24})

    def action_close(self) -> None:
        self.dismiss(None)
