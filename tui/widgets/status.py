"""The lines around the table: the status bar, the problem banner and the empty state.

Each is a Static that only re-renders when its text changes, so a one-second
tick or a burst of reloads costs nothing here when nothing moved. Paths under ``$HOME``
show as ``~/…`` (tui.text.paths); the status bar fits its width by dropping its least
important parts first, so the acting profile and READ-ONLY are never the part cut.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui.text.paths import left_cut, tilde
from tui.text.shown import shown, shown_lines


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


# One part of the status bar: its text, its style, how soon it goes when the line is too
# narrow (the highest rank goes first; rank 0 never goes) and a shorter form ("" if none).
Part = tuple[str, str, int, str]
HOME_RANK = 9          # the home's path: shortened from the left first, then dropped
MIN_HOME = 16          # a path cut shorter than this says nothing: it goes instead
DETAIL_RANK = 6        # parts from this rank up (generation, sort) go before any is shortened


def _line(items: list[Part]) -> Text:
    t = Text(no_wrap=True, overflow="crop")
    for i, (text, style, _rank, _short) in enumerate(items):
        if i:                       # after a badge (reversed) a space, else a dot
            t.append(" " if "reverse" in items[i - 1][1] else " · ")
        t.append(text, style=style)
    return t


def _reduce(keep: list[Part], over: int) -> bool:
    """One step towards *over* fewer cells; False when nothing is left to give."""
    at = next((i for i, p in enumerate(keep) if p[2] == HOME_RANK), None)
    if at is not None:
        text, style, rank, short = keep[at]
        if len(text) - over >= MIN_HOME:
            keep[at] = (left_cut(text, len(text) - over), style, rank, short)
        else:
            del keep[at]
        return True
    by_rank = sorted(range(len(keep)), key=lambda i: (-keep[i][2], -i))
    details = [i for i in by_rank if keep[i][2] >= DETAIL_RANK]
    shorter = [i for i in by_rank if keep[i][3] and keep[i][3] != keep[i][0]]
    rest = [i for i in by_rank if keep[i][2] > 0]
    if details:
        del keep[details[0]]
    elif shorter:
        text, style, rank, short = keep[shorter[0]]
        keep[shorter[0]] = (short, style, rank, short)
    elif rest:
        del keep[rest[0]]
    else:
        return False
    return True


def fit_parts(parts: list[Part], width: int) -> Text:
    """The status line from *parts* (in display order) within *width* cells: the home's path
    is cut from the left, then dropped; then the details (generation, sort) go; then parts
    take their short forms, highest rank first; then the parts of highest rank go."""
    keep = [p if len(p) == 4 else (*p, "") for p in parts]
    while True:
        t = _line(keep)
        over = t.cell_len - width
        if over <= 0:
            return t
        if not _reduce(keep, over):
            t.truncate(width)       # nothing left to give: crop (a 20-column terminal)
            return t


def short_proxy(summary: str) -> str:
    """``proxy :8645 · 13 req/min · ▶ fallback nous`` → ``proxy :8645 · ▶ fallback nous``."""
    pieces = summary.split(" · ")
    return " · ".join([pieces[0], pieces[-1]]) if len(pieces) > 2 else summary


class StatusBar(_Quiet):
    """One line: READ-ONLY, STALE, live/paused, the acting profile, the write in flight,
    tags, filter, monitor, proxy, generation, sort, home; what matters most is never the part cut."""

    FIXED_SIZE = True  # ``#status { height: 1 }``: every reload changes "gen N"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.parts: list[Part] = []

    def set_parts(
        self, *, home: str, live: str, read_only: bool, stale: bool, sort: str,
        filter_text: str, generation: int, updated: str, held: int = 0, busy: str = "",
        tagged: int = 0, proxy: str = "", profile: str = "", acting: str = "",
        monitor: tuple[str, str] = ("", ""),
    ) -> None:
        """*home* is shown ``~/…`` under ``$HOME``; *profile* and *acting* (a root of profiles)
        are the view's context and the profile whose files actions write; *monitor* the words
        of a monitor running there and their short form (("", "") when none runs)."""
        parts: list[Part] = [(" hermes-admin ", "bold reverse", 0, "")]
        if read_only:
            parts.append((" READ-ONLY ", "bold reverse", 0, ""))
        if stale:
            parts.append((" STALE ", "bold reverse red", 0, ""))
        parts.append((live + (f" ({held} held)" if held else ""), "bold", 0, ""))
        if profile or acting:
            parts.append((f"profile: {profile or 'all'} · acting: {acting}", "bold", 1, f"acting: {acting}"))
        if busy:
            # A write in flight (or waiting for a lock held elsewhere): say so up front.
            parts.append((f"⟳ {busy}", "bold", 2, ""))
        if tagged:
            parts.append((f"✓ {tagged} tagged", "", 3, ""))
        if filter_text:
            parts.append((f"filter “{filter_text}”", "", 4, ""))
        if monitor[0]:
            # Before the proxy, at its rank: a narrow line cuts the proxy's summary first.
            parts.append((f"{monitor[0]} (A)", "", 5, f"{monitor[1]} (A)" if monitor[1] else ""))
        if proxy:
            parts.append((f"{proxy} (x)", "", 5, f"{short_proxy(proxy)} (x)"))
        parts.append(((f"{updated} " if updated else "") + f"gen {generation}", "", 7, ""))
        parts.append((f"sort {sort}", "", 8, ""))
        if home:
            parts.append((tilde(home), "", HOME_RANK, ""))
        # Labels (in "removing <label>…"), the typed filter and paths pass the console's funnel.
        self.parts = [(text, style, rank, short) if rank == 0 else (shown(text), style, rank, shown(short))
                      for text, style, rank, short in parts]
        self._fit()

    def on_resize(self) -> None:
        if self.parts:
            self._fit()

    def _fit(self) -> None:
        width = self.size.width or 10_000     # not laid out yet: everything, cut by the first resize
        self.show(fit_parts(self.parts, width))


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
            t.append(shown_lines(tilde(text)))
        self.show(t)


class EmptyState(_Quiet):
    """Shown instead of the table when there is nothing to list, saying why."""

    def set_message(self, text: str | None) -> None:
        self.set_class(bool(text), "-shown")
        self.show(tilde(text or ""))
