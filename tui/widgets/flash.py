"""The flash line and the message log behind it: feedback that does not cover the data.

As in k9s, a message is one line at the bottom of the screen, above the footer, instead of
a toast over the right half of the table. The app owns one :class:`MessageLog` (the last
:data:`LIMIT` messages, with their details on real lines) and every screen that shows a
:class:`FlashLine` follows it:

- the newest message stays on the line for its timeout, then the line hides;
- a failed write (``timeout`` None) stays until the operator dismisses it; a newer message
  may take the line meanwhile, and the failure comes back when that one times out, with a
  count at the line's start while it is not the one shown;
- the line names the keys for the details and for dismissing (the app sets them, keymap
  applied).

Text reaches the log already through the console's funnel (the app passes it there).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from rich.text import Text
from textual.dom import DOMNode
from textual.signal import Signal
from textual.widget import Widget

from tui.text.format import ellipsize

LIMIT = 100
SYMBOLS = {"information": "›", "warning": "⚠", "error": "✖"}
DONE = "✔"


@dataclass(frozen=True)
class Logged:
    """One message: when, how grave, a title, its details (lines) and its one-line form."""

    seq: int
    at: float
    severity: str                   # "information" | "warning" | "error"
    title: str
    lines: tuple[str, ...]
    line: str                       # what the flash line shows
    timeout: float | None           # seconds on the flash line; None: until dismissed
    done: bool = False              # a write that landed

    @property
    def sticky(self) -> bool:
        return self.timeout is None

    @property
    def symbol(self) -> str:
        return DONE if self.done else SYMBOLS.get(self.severity, "›")

    @property
    def more(self) -> bool:
        """Whether the log holds more than the flash line says."""
        return len(self.lines) > 1 or bool(self.title and self.lines and self.lines[0] not in self.line)


class MessageLog:
    """The app's messages, newest last, and what the flash lines show (see the module docstring)."""

    def __init__(self, owner: DOMNode, clock: Callable[[], float], limit: int = LIMIT) -> None:
        self.entries: deque[Logged] = deque(maxlen=limit)
        self.current: Logged | None = None       # the newest, until its timeout or a dismissal
        self.pending: list[Logged] = []          # failures not dismissed yet, oldest first
        self.keys = {"messages": "M", "dismiss": "ctrl+l"}
        self.changed: Signal[None] = Signal(owner, "messages")
        self._clock = clock
        self._seq = itertools.count(1)

    def __iter__(self) -> Iterator[Logged]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, *, title: str, lines: list[str] | tuple[str, ...], severity: str = "information",
            timeout: float | None, line: str = "", done: bool = False) -> Logged:
        lines = tuple(lines) or ("",)
        if not line:
            line = f"{title}: {lines[0]}" if title and lines[0] else (title or lines[0])
        entry = Logged(next(self._seq), self._clock(), severity, title, lines, line, timeout, done)
        self.entries.append(entry)
        self.current = entry
        if entry.sticky:
            self.pending.append(entry)
        self.changed.publish(None)
        return entry

    def shown(self) -> Logged | None:
        """What the flash line shows now: the newest message, else the newest failure not dismissed."""
        return self.current or (self.pending[-1] if self.pending else None)

    def failures_behind(self) -> int:
        """Failures not dismissed that the flash line does not show right now."""
        shown = self.shown()
        return sum(1 for e in self.pending if e is not shown)

    def expire(self, entry: Logged) -> None:
        """*entry*'s time on the flash line is over (a failure stays pending)."""
        if self.current is entry:
            self.current = None
            self.changed.publish(None)

    def dismiss(self) -> None:
        """The operator read them: the flash line clears, failures included (the log keeps all)."""
        if self.current is not None or self.pending:
            self.current = None
            self.pending.clear()
            self.changed.publish(None)


class HasMessages(Protocol):
    """The app, as a flash line sees it."""

    messages: MessageLog


def flash_text(entry: Logged, width: int, behind: int, keys: dict[str, str]) -> Text:
    """The flash line for *entry* within *width* cells; the keys to act on it at the right."""
    if entry.sticky:
        hint = f"{keys['dismiss']}: dismiss · {keys['messages']}: log"
    elif entry.more:
        hint = f"{keys['messages']}: details"
    else:
        hint = ""
    lead = f"✖ {behind} failed · " if behind else ""
    body = f"{lead}{entry.symbol} {entry.line}"
    # The message comes first: a hint that would cut it goes (a failure keeps its dismiss key).
    if hint and len(body) + 1 + len(hint) > width:
        hint = f"{keys['dismiss']}: dismiss" if entry.sticky else ""
    room = width - (len(hint) + 1 if hint else 0)
    if room < 20:                       # a very narrow line: the message before the keys
        hint, room = "", width
    style = {"error": "bold", "warning": "bold"}.get(entry.severity, "")
    t = Text(ellipsize(body, room), style=style, no_wrap=True, overflow="crop")
    if hint:
        t.append(" " * max(1, width - t.cell_len - len(hint)))
        t.append(hint, style="dim")
    return t


class FlashLine(Widget):
    """One line above the footer with the app's newest message; hidden when there is none."""

    DEFAULT_CSS = """
    FlashLine { height: 1; display: none; padding: 0 1; background: $panel; color: $text; }
    FlashLine.-shown { display: block; }
    FlashLine.-error { background: $error 35%; }
    FlashLine.-warning { background: $warning 25%; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry: Logged | None = None
        self.text = ""                  # the plain text shown (tests)

    @property
    def log(self) -> MessageLog:
        app: HasMessages = self.app
        return app.messages

    def on_mount(self) -> None:
        self.log.changed.subscribe(self, self._changed, immediate=True)
        self._changed(None)

    def _changed(self, _: None) -> None:
        log = self.log
        entry = log.shown()
        if entry is not None and entry is log.current and entry is not self.entry and not entry.sticky:
            self.set_timer(entry.timeout or 0.0, lambda: log.expire(entry), name="flash-expire")
        self.entry = entry
        self.set_class(entry is not None, "-shown")
        self.set_class(entry is not None and entry.severity == "error", "-error")
        self.set_class(entry is not None and entry.severity == "warning", "-warning")
        self.text = self._text().plain
        self.refresh()

    def _text(self) -> Text:
        entry = self.entry
        if entry is None:
            return Text("")
        width = self.content_size.width or max(20, self.app.size.width - 2)
        return flash_text(entry, width, self.log.failures_behind(), self.log.keys)

    def render(self) -> Text:
        return self._text()

    def on_resize(self) -> None:
        if self.entry is not None:
            self.text = self._text().plain
