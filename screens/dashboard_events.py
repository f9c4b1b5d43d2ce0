"""The dashboard's events timeline (``e``), made when first shown.

The timeline is hidden until the operator asks for it, and its widget (a Textual ``RichLog``)
imports ``rich.pretty`` and ``attrs`` (about 20 ms) when its module loads. So the first paint
builds none of it: :class:`EventsTimeline` keeps the transitions seen meanwhile (the last
:data:`KEEP`, as many as the log holds) and mounts :class:`tui.widgets.events_log.EventsLog`
under the table the first time it is shown or asked for, with those transitions in it.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Iterable

from textual.screen import Screen

from screens.dashboard_chrome import clock_time

if TYPE_CHECKING:
    from tui.widgets.events_log import EventsLog

KEEP = 500          # EventsLog's max_lines: the backlog holds no more than the log would


class EventsTimeline:
    """The transitions seen, and the events log once it is made."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.backlog: deque[Any] = deque(maxlen=KEEP)
        self.widget: EventsLog | None = None

    @property
    def made(self) -> bool:
        return self.widget is not None

    def log(self) -> EventsLog:
        """The events log, mounted under the table with every transition seen so far."""
        if self.widget is None:
            from tui.widgets.events_log import EventsLog  # rich.pretty: only once it is wanted

            self.widget = EventsLog(clock_time, id="events")
            self.screen.mount(self.widget, before="#filter")
            self.widget.add(self.backlog)
            self.backlog.clear()
        return self.widget

    def add(self, events: Iterable[Any]) -> None:
        """New transitions: into the log when it exists, else kept until it does."""
        if self.widget is None:
            self.backlog.extend(events)
        else:
            self.widget.add(events)

    @property
    def shown(self) -> bool:
        """Whether the log is on screen (Esc then closes it, as ``e`` does)."""
        return self.widget is not None and self.widget.has_class("-shown")

    def toggle(self) -> None:
        self.log().toggle_class("-shown")
        self.screen.refresh_bindings()
