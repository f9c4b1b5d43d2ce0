"""The lines around the table: the status bar, the problem banner and the empty state.

Each is a Static that only re-renders when its text changes, so a one-second
tick or a burst of reloads costs nothing here when nothing moved.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.text.shown import shown_lines


class _Quiet(Static):
    """A Static that skips updates which would not change what it shows."""

    _shown: object = None
    text: str = ""
    """Plain text currently shown (for tests)."""
    FIXED_SIZE = False
    """True when CSS fixes the widget's size: a new text then repaints its own lines
    without a screen layout (which would repaint every widget on the screen)."""

    def show(self, content: Text | str) -> None:
        if isinstance(content, str):
            content = Text(shown_lines(content))  # never markup; through the console's funnel
        key = content.markup
        if key != self._shown:
            self._shown = key
            self.text = content.plain
            self.update(content, layout=not self.FIXED_SIZE)


class StatusBar(_Quiet):
    """One line: home, live/paused, READ-ONLY, STALE, sort, filter, generation."""

    FIXED_SIZE = True  # ``#status { height: 1 }``: every reload changes "gen N"

    def set_parts(
        self, *, home: str, live: str, read_only: bool, stale: bool, sort: str,
        filter_text: str, generation: int, updated: str, held: int = 0, busy: str = "",
        tagged: int = 0, proxy: str = "",
    ) -> None:
        t = Text()
        t.append(" hermes-admin ", style="bold reverse")
        t.append(" ")
        # Most important first: on a narrow terminal the end of the line is cut.
        if read_only:
            t.append(" READ-ONLY ", style="bold reverse")
            t.append(" ")
        if stale:
            t.append(" STALE ", style="bold reverse red")
            t.append(" ")
        t.append(live, style="bold")
        if held:
            t.append(f" ({held} held)")
        if busy:
            # A write in flight (or waiting for a lock held elsewhere): say so up front.
            t.append(" · ")
            t.append(f"⟳ {busy}", style="bold")
        if tagged:
            t.append(f" · ✓ {tagged} tagged")
        if filter_text:
            t.append(f" · filter “{filter_text}”")
        if proxy:
            t.append(f" · {proxy} (x)")
        t.append(f" · {updated} gen {generation} · sort {sort} · {home}")
        self.show(t)


class Banner(_Quiet):
    """Problems the operator must know about; hidden when there are none."""

    def set_problems(self, lines: list[tuple[str, str]]) -> None:
        """*lines*: (severity, text) with severity ``error`` or ``warning``."""
        self.set_class(bool(lines), "-shown")
        self.set_class(any(sev == "error" for sev, _ in lines), "-error")
        t = Text()
        for i, (sev, text) in enumerate(lines):
            if i:
                t.append("\n")
            t.append("✖ " if sev == "error" else "⚠ ", style="bold")
            t.append(text)
        self.show(t)


class EmptyState(_Quiet):
    """Shown instead of the table when there is nothing to list, saying why."""

    def set_message(self, text: str | None) -> None:
        self.set_class(bool(text), "-shown")
        self.show(text or "")
