"""``a``: add an API key to a pool (an existing one, or a new provider id / custom:<name>).

The key is typed (or pasted) into a masked input and leaves this screen only inside the
write function; every message about it shows its fingerprint. Fields are checked with the
store's own rules (``validate_pool_key``, and ``actions.add_key`` run on a copy of the
store as last read), so most mistakes show inline before any lock is taken; the real
write re-checks everything against the fresh file.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Select, Static

from screens.form import FormScreen, field_message, form_footer
from store.config import providers
from store.errors import BadInput
from store.model import validate_pool_key
from store.ops import actions, textcheck
from store.ops.write import StoreChange
from store.redaction.fingerprints import fingerprint
from tui.services.host import host
from tui.services.writer import WriteResult
from tui.text.sentences import POOL_KEY_GUIDE

NEW_POOL = "\x00new"


@dataclass(frozen=True)
class AddKeyForm:
    """What the operator typed, checked. ``key`` is the secret: never print this object."""

    pool: str
    label: str | None
    key: str
    base_url: str | None
    priority: int | None

    def __repr__(self) -> str:
        return f"AddKeyForm(pool={self.pool!r}, key={fingerprint(self.key)!r})"


class AddKeyScreen(FormScreen):
    """Dismisses with ``(pool, id)`` of the added row, or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="add_key.cancel"),
        Binding("ctrl+s", "submit", "Add the key", id="add_key.submit"),
    ]

    def __init__(self, pools: list[str], *, pool: str | None = None,
                 doc: dict[str, Any] | None = None) -> None:
        super().__init__(id="add-key")
        self.pools = sorted(pools)
        self.initial_pool = pool if pool in self.pools else (self.pools[0] if self.pools else NEW_POOL)
        # A copy of the store as last read, to check the form against (never written).
        self.doc = copy.deepcopy(doc) if doc is not None else None

    FIELDS = {"POOL": "#add-pool", "--api-key": "#add-key-value", "--label": "#add-label",
              "--base-url": "#add-base-url", "--priority": "#add-priority"}

    def compose(self) -> ComposeResult:
        options = [(p, p) for p in self.pools] + [("new pool…", NEW_POOL)]
        # Each field is a box with its label: the focused one is marked by a bar at its left
        # and a bold label (app.tcss ``.field:focus-within``), not by a cursor cell alone.
        with Vertical(classes="modal-box", id="add-key-box"):
            yield Static("Add an API key", classes="modal-title")
            with Vertical(classes="field"):
                yield Label("Pool")
                yield Select(options, value=self.initial_pool, allow_blank=False, id="add-pool",
                             compact=True)
                yield Input(placeholder="new pool: openrouter, custom:my-server…", id="add-new-pool",
                            compact=True)
                yield Static(Text(POOL_KEY_GUIDE), id="add-pool-guide", classes="modal-hint")
            with Vertical(classes="field"):
                yield Label("Key (hidden as you type; paste works)")
                yield Input(password=True, placeholder="sk-…", id="add-key-value", compact=True)
            with Vertical(classes="field"):
                yield Label("Label (optional)")
                yield Input(placeholder="api-key-<n> by default", id="add-label", compact=True)
            with Vertical(classes="field"):
                yield Label("Base URL (optional)")
                yield Input(placeholder="https://…", id="add-base-url", compact=True)
            with Vertical(classes="field"):
                yield Label("Priority (optional, 0 = tried first; default: last)")
                yield Input(placeholder="last", type="integer", id="add-priority", compact=True)
            yield from form_footer("Enter in a field or ctrl+s: add   ·   Tab: next field   ·   Esc: cancel")

    def on_mount(self) -> None:
        self._show_new_pool(self.initial_pool == NEW_POOL)
        # The form reads top to bottom: the pool first (a new pool: its name).
        self.focus_field("POOL")

    def field_selector(self, field: str | None) -> str | None:
        if field == "POOL" and self.query_one("#add-pool", Select).value == NEW_POOL:
            return "#add-new-pool"
        return super().field_selector(field)

    def _show_new_pool(self, shown: bool) -> None:
        self.query_one("#add-new-pool").display = shown
        self.query_one("#add-pool-guide").display = shown

    @on(Input.Changed, "#add-label")
    def _label_typed(self, event: Input.Changed) -> None:
        # A key pasted into the wrong field is hidden at once and refused inline.
        label = event.input
        if textcheck.keyish(event.value):
            label.password = True
            self.show_error(field_message("--label", "looks like an API key; it is hidden and will "
                                          "not be saved (paste keys in the Key field)"))
        elif label.password:
            label.password = False
            self.show_error(None)

    @on(Select.Changed, "#add-pool")
    def _pool_changed(self, event: Select.Changed) -> None:
        self._show_new_pool(event.value == NEW_POOL)
        if event.value == NEW_POOL and self.is_mounted:
            self.query_one("#add-new-pool", Input).focus()     # type its name next

    # ------------------------------------------------------------ checking
    def read_form(self) -> AddKeyForm:
        """The fields, checked; BadInput names the first field that is wrong."""
        choice = self.query_one("#add-pool", Select).value
        if choice == NEW_POOL:
            pool = self.query_one("#add-new-pool", Input).value.strip()
            if not pool:
                raise BadInput("POOL", "type the new pool's name (" + POOL_KEY_GUIDE + ")")
        else:
            pool = str(choice)
        textcheck.check_text("POOL", pool)
        try:
            validate_pool_key(pool)
        except ValueError as exc:
            raise BadInput("POOL", str(exc)) from None
        if choice == NEW_POOL and not providers.is_known(pool):
            close = providers.suggest(pool)
            raise BadInput("POOL", "is not a Hermes provider id or custom:<name>"
                           + (f"; did you mean {' or '.join(close)}?" if close else ""))
        key = self.query_one("#add-key-value", Input).value.strip()
        if not key:
            raise BadInput("--api-key", "is empty: type or paste the key")
        label = self.query_one("#add-label", Input).value.strip() or None
        base_url = self.query_one("#add-base-url", Input).value.strip() or None
        for fld, text in (("--label", label), ("--base-url", base_url)):
            if text is not None:
                textcheck.check_text(fld, text)
        prio_text = self.query_one("#add-priority", Input).value.strip()
        priority = None
        if prio_text:
            try:
                priority = int(prio_text)
            except ValueError:
                raise BadInput("--priority", f"{prio_text!r} is not a whole number") from None
        form = AddKeyForm(pool, label, key, base_url, priority)
        # The store's own rules, on a throwaway copy: duplicate key or label, priority range...
        trial = copy.deepcopy(self.doc) if self.doc is not None else {}
        actions.add_key(trial, pool, key, host(self).clock(), label=label,
                        priority=priority, base_url=base_url)
        return form

    def action_submit(self) -> None:
        if self.request is not None:
            return
        try:
            form = self.read_form()
        except BadInput as exc:
            self.show_error(field_message(exc.field, exc.problem), exc.field)
            return
        app = host(self)

        def add(doc: dict, now: float) -> actions.Outcome:
            return actions.add_key(doc, form.pool, form.key, now, label=form.label,
                                   priority=form.priority, base_url=form.base_url)

        write = StoreChange(add, lock_timeout=app.lock_timeout, create=True)

        self.submit_write(f"adding {fingerprint(form.key)} to {form.pool}", write,
                          secrets=[form.key])

    def write_done(self, result: WriteResult) -> None:
        change = result.value.changes[0]   # the writer's flash line says what was added
        self.dismiss((change.pool, change.id))
