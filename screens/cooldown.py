"""``c``: bench the selected (or tagged) credentials by hand until a time.

One input takes a duration (``90s``, ``15m``, ``2h``, ``1d``, ``1h30m``) or an absolute time
(``18:30``, ``2026-11-29T18:30``); the end time is shown live as it is typed, and errors
inline. Enter applies. The screen only decides *until when*; the dashboard writes it.
"""

from __future__ import annotations

from typing import Callable, Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from screens.form import ErrorLine, forget_key, refused_key
from store.errors import BadInput
from store.ops import textcheck
from tui.text.durations import parse_duration_or_time
from tui.text.format import countdown, local_time
from tui.text.shown import shown
from tui.widgets.guarded import GuardedModal

DEFAULT_FOR = "15m"     # what the for/until field holds when the modal opens


def describe_until(until: float, now: float) -> str:
    """``until 18:42:10, in 15m 0s`` (the date too when it is not today)."""
    return f"until {local_time(until, now)}, in {countdown(until - now)}"


class CooldownScreen(GuardedModal["tuple[float, str | None] | None"]):
    """Dismisses with ``(until, reason)``, or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="cooldown.cancel"),
    ]

    def __init__(self, clock: Callable[[], float], lines: Sequence[str],
                 notes: Sequence[str] = ()) -> None:
        super().__init__(id="cooldown", classes="modal")
        self.clock = clock
        self.lines = list(lines)
        self.notes = list(notes)
        self.preview = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="cooldown-box"):
            yield Static("Set a cooldown by hand", classes="modal-title")
            yield Static(Text("\n".join(shown(x) for x in self.lines)), id="cooldown-lines")
            if self.notes:
                yield Static(Text("\n".join(f"⚠ {n}" for n in self.notes)), classes="modal-notes")
            yield Label("For (90s, 15m, 2h, 1d) or until (18:30, 2026-11-29T18:30)")
            # A real default, not a placeholder that looks filled in (#28): Enter benches for
            # 15m; typing replaces it (the value is selected on focus).
            yield Input(DEFAULT_FOR, placeholder="a duration or a time", id="cooldown-when",
                        compact=True, select_on_focus=True)
            yield Static(id="cooldown-preview")
            yield Label("Reason (optional, stored as last_error_reason)")
            yield Input(placeholder="(empty: manual_cooldown)", id="cooldown-reason", compact=True)
            yield ErrorLine(classes="form-error")
            yield Static("Enter: apply   ·   Tab: next field   ·   Esc: cancel", classes="modal-keys")

    def on_mount(self) -> None:
        when = self.query_one("#cooldown-when", Input)
        when.focus()
        self._show_preview(when.value)

    @property
    def error_text(self) -> str:
        return self.query_one(ErrorLine).text

    def _parse(self, text: str) -> float:
        now = self.clock()
        until = parse_duration_or_time(text, now)
        if until <= now:
            raise ValueError(f"{local_time(until, now)} is not in the future")
        return until

    @on(Input.Changed, "#cooldown-when")
    def _typed(self, event: Input.Changed) -> None:
        self._show_preview(event.value)
        self.query_one(ErrorLine).set_error(None)

    def _show_preview(self, value: str) -> None:
        text = value.strip()
        self.preview = ""
        if text:
            try:
                self.preview = describe_until(self._parse(text), self.clock())
            except ValueError as exc:
                self.preview = f"✖ {exc}"
        self.query_one("#cooldown-preview", Static).update(Text(self.preview))

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        text = self.query_one("#cooldown-when", Input).value.strip()
        if not text:
            self.query_one(ErrorLine).set_error("for/until: type a duration like 15m or a time like 18:30")
            self.query_one("#cooldown-when", Input).focus()
            return
        try:
            until = self._parse(text)
        except ValueError as exc:
            self.query_one(ErrorLine).set_error(f"for/until: {exc}")
            self.query_one("#cooldown-when", Input).focus()
            return
        reason = self.query_one("#cooldown-reason", Input).value.strip() or None
        try:
            textcheck.check_text("reason", reason or "")
        except BadInput as exc:
            self.query_one(ErrorLine).set_error(f"reason: {exc.problem}")
            field = self.query_one("#cooldown-reason", Input)
            if refused_key(exc.problem):
                forget_key(field)    # never left on screen under "it was not used or shown"
            field.focus()
            return
        self.dismiss((until, reason))

    def action_cancel(self) -> None:
        self.dismiss(None)
