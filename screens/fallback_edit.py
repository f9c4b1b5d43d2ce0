"""Add an entry to the fallback chain (config screen, Fallback tab, ``a``).

Provider and model are required; base URL and the env var holding the key are optional.
store.config refuses duplicates of the primary or of an entry already in the chain; its
message shows inline and the form stays open. Secrets are never typed here: a fallback
names the environment variable that holds its key.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Label, Static

from screens.form import FormScreen, field_message, form_footer
from store.config import edit as config_edit
from store.config import providers
from store.errors import BadInput
from store.ops import textcheck
from tui.services.host import host


class FallbackAddScreen(FormScreen):
    """Dismisses with the ConfigChange written, or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="fallback_add.cancel"),
        Binding("ctrl+s", "submit", "Add the entry", id="fallback_add.submit"),
    ]

    FIELDS = {"PROVIDER": "#fb-provider", "MODEL": "#fb-model", "--base-url": "#fb-base-url",
              "--key-env": "#fb-key-env"}

    def __init__(self) -> None:
        super().__init__(id="fallback-add")

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="fallback-add-box"):
            yield Static("Add a fallback (tried in order when a pool is out)", classes="modal-title")
            yield Label("Provider (required): openrouter, nous, anthropic, custom…")
            yield Input(id="fb-provider", compact=True)
            yield Label("Model (required): e.g. anthropic/claude-sonnet-4")
            yield Input(id="fb-model", compact=True)
            yield Label("Base URL (optional)")
            yield Input(placeholder="https://…", id="fb-base-url", compact=True)
            yield Label("Env var holding the key (optional)")
            yield Input(placeholder="MY_LOCAL_KEY", id="fb-key-env", compact=True)
            yield from form_footer("Enter or ctrl+s: add   ·   Tab: next field   ·   Esc: cancel")

    def on_mount(self) -> None:
        self.query_one("#fb-provider", Input).focus()

    def action_submit(self) -> None:
        if self.request is not None:
            return
        values = {k: self.query_one(f"#fb-{k}", Input).value.strip()
                  for k in ("provider", "model", "base-url", "key-env")}
        # The two required fields are checked here too, so Enter on an empty form
        # answers at once; everything else is store.config's to judge.
        for name, fld in (("provider", "PROVIDER"), ("model", "MODEL")):
            if not values[name]:
                self.show_error(field_message(fld, "is required"))
                self.query_one(f"#fb-{name}", Input).focus()
                return
        try:
            for name, fld, keys in (("provider", "PROVIDER", "any"), ("model", "MODEL", "prefix"),
                                    ("base-url", "--base-url", "any"), ("key-env", "--key-env", "any")):
                textcheck.check_text(fld, values[name], keys=keys)
            values["provider"] = providers.checked("PROVIDER", values["provider"])
        except BadInput as exc:
            self.show_error(field_message(exc.field, exc.problem), exc.field)
            return
        app = host(self)
        home, timeout = app.home, app.lock_timeout

        def write() -> Any:
            return config_edit.fallback_add(home, values["provider"], values["model"],
                                       base_url=values["base-url"] or None,
                                       key_env=values["key-env"] or None, lock_timeout=timeout)

        self.submit_write(f"adding fallback {values['model']} via {values['provider']}", write,
                          lock=home.config_lock)
