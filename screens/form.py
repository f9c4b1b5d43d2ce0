"""Pieces every editing modal shares: the inline error line, the in-flight status line,
Enter to submit and Esc to cancel.

A modal validates what it can itself (with the store's own functions), hands the write
to the app's writer, and stays open until the store answers: a BadInput then shows
inline, naming the field, focus moves to that field (a form maps the store's field
names to its widgets in ``FIELDS``), and the operator fixes it without retyping the rest.
"""

from __future__ import annotations

from typing import Any, Iterator

from rich.text import Text
from textual import on
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Input, Static

from store.ops.textcheck import KEY_HINT
from tui.services.host import host
from tui.services.writer import BAD_INPUT, WriteRequest, WriteResult
from tui.text.shown import shown_lines

# The CLI's argument names in BadInput messages, as the modal's fields are labelled.
FIELD_NAMES = {
    "--api-key": "key", "--label": "label", "--priority": "priority", "--base-url": "base URL",
    "POOL": "pool", "TARGET": "row", "PROVIDER": "provider", "MODEL": "model",
    "--key-env": "key env var", "--position": "position", "KEY": "setting", "VALUE": "value",
    "STRATEGY": "strategy", "INDEX": "entry", "NEW_INDEX": "position",
}


def field_message(field: str | None, problem: str) -> str:
    """``key: the key is empty``: the store's message under the modal's name for the field."""
    if not field:
        return problem
    return f"{FIELD_NAMES.get(field, field)}: {problem}"


def refused_key(message: str | None) -> bool:
    """*message* is textcheck's refusal of a key-shaped value (``looks like an API key``)."""
    return bool(message) and KEY_HINT in str(message)


def forget_key(widget: Widget | None) -> None:
    """Empty a text field whose value was refused as a key, so the key is never left on
    screen under a message saying it was not shown (a masked field already hides it)."""
    if isinstance(widget, Input) and not widget.password:
        widget.value = ""


class ErrorLine(Static):
    """One line of red text under a form; empty (and hidden) when there is nothing wrong."""

    text = ""

    def set_error(self, message: str | None) -> None:
        self.text = message or ""
        self.set_class(bool(message), "-shown")
        self.update(Text("✖ " + shown_lines(message) if message else ""))


def form_footer(keys: str) -> Iterator[Widget]:
    """The lines every form ends with: its ErrorLine, the ``#form-busy`` line, the key help."""
    yield ErrorLine(classes="form-error")
    yield Static(id="form-busy", classes="form-busy")
    yield Static(keys, classes="modal-keys")


class FormScreen(ModalScreen[Any]):
    """A modal that submits one write and waits for it (see the module docstring).

    Enter in any of its inputs calls :meth:`entered`, which submits the form; Esc (each
    form binds it, under its own id) runs :meth:`action_cancel`.
    """

    FIELDS: dict[str, str] = {}
    """A BadInput's field name (``--label``) -> the selector of the widget to fix it in."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(classes="modal", **kwargs)
        self.request: WriteRequest | None = None
        self.result: WriteResult | None = None

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        self.entered(event.value)

    def entered(self, value: str) -> None:
        """Enter in a field: submit the whole form (a form whose Enter means something else overrides it)."""
        self.action_submit()

    def action_submit(self) -> None:
        """Check the fields and hand the write to :meth:`submit_write`; each form has its own."""
        raise NotImplementedError

    def action_cancel(self) -> None:
        """Close without writing (a write already handed to the writer still lands)."""
        self.dismiss(None)

    @property
    def error_text(self) -> str:
        return self.query_one(ErrorLine).text

    def show_error(self, message: str | None, field: str | None = None) -> None:
        """Show *message* under the form (None clears it); focus goes to *field*'s widget.
        A value refused as a key is emptied from its field (:func:`forget_key`)."""
        self.query_one(ErrorLine).set_error(message)
        if refused_key(message):
            forget_key(self.field_widget(field))
        self.focus_field(field)

    def field_selector(self, field: str | None) -> str | None:
        """The widget the operator fixes *field* in (a form whose fields move overrides it)."""
        return self.FIELDS.get(field or "")

    def field_widget(self, field: str | None) -> Widget | None:
        selector = self.field_selector(field)
        if selector is None:
            return None
        try:
            return self.query_one(selector)
        except NoMatches:
            return None

    def focus_field(self, field: str | None) -> None:
        widget = self.field_widget(field)
        if widget is not None:
            widget.focus()

    def submit_write(self, what: str, fn: Any, **kwargs: Any) -> bool:
        """Hand *fn* to the writer; the result comes back to :meth:`write_done`."""
        if self.request is not None:
            return False  # one write at a time from one form
        self.show_error(None)
        req = host(self).writer.submit(what, fn, on_done=self._done, **kwargs)
        if req is None:
            self.show_error("read-only: started with --read-only")
            return False
        self.request = req
        self.writes_changed()
        return True

    def _done(self, result: WriteResult) -> bool:
        self.request = None
        self.result = result
        if not self.is_attached:
            return False   # the form was closed meanwhile: the writer notifies instead
        self.writes_changed()
        if result.ok:
            self.write_done(result)
            return True
        if result.kind == BAD_INPUT:
            self.show_error(field_message(result.field, result.problem or result.error or ""), result.field)
            return True
        self.show_error(result.error)
        return False   # lock timeout, unreadable file: on the flash line too

    def write_done(self, result: WriteResult) -> None:
        """Called on success; the default closes the form with the written value."""
        self.dismiss(result.value)

    def writes_changed(self) -> None:
        try:
            line = self.query_one("#form-busy", Static)
        except NoMatches:
            return
        text = ""
        if self.request is not None:
            waiting = host(self).writer.waiting_on.get(self.request.id)
            text = f"⟳ waiting for {waiting}… (Esc closes; the write still lands)" if waiting \
                else f"⟳ {self.request.what}…"
        line.set_class(bool(text), "-shown")
        line.update(Text(text))
