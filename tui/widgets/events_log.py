"""The events timeline: one line per transition, newest at the bottom."""

from __future__ import annotations

from typing import Callable, Iterable

from rich.text import Text
from textual.widgets import RichLog

from store.pools.events import CLEARED, DEAD, EXHAUSTED, NOTICE, READY, RECOVERED, Event
from tui.text.shown import shown

_STYLE = {EXHAUSTED: "yellow", DEAD: "bold red", CLEARED: "cyan", RECOVERED: "green",
          READY: "cyan", NOTICE: "magenta"}


class EventsLog(RichLog):
    """A bounded log of :class:`store.pools.events.Event`, formatted with a local time."""

    def __init__(self, time_format: Callable[[float], str], **kwargs) -> None:
        super().__init__(max_lines=500, wrap=False, markup=False, auto_scroll=True, **kwargs)
        self._fmt = time_format
        self.lines_written: list[str] = []

    def add(self, events: Iterable[Event]) -> None:
        for ev in events:
            line = Text()
            line.append(self._fmt(ev.time) + " ", style="dim")
            line.append(shown(ev.text), style=_STYLE.get(ev.kind, ""))
            self.lines_written.append(line.plain)
            del self.lines_written[:-500]
            self.write(line)
