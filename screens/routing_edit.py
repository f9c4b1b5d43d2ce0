"""Edit one ``provider_routing`` setting (config screen, Routing tab, Enter or ``e``).

Each setting gets the input that can only hold its values: a choice for ``sort``
(price/throughput/latency), ``data_collection`` (allow/deny) and ``require_parameters``
(true/false), a comma list for ``only``/``ignore``/``order``. The value is checked by
store.config's own parser and written by its locked, comment-keeping edit.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from screens.form import FormScreen, field_message, form_footer
from store.config import edit as config_edit
from store.config.sections import DATA_COLLECTION, ROUTING_LISTS, ROUTING_SORTS
from store.errors import BadInput
from tui.services.host import host

CHOICES: dict[str, tuple[tuple[str, str], ...]] = {
    "sort": tuple((s, {"price": "cheapest sub-provider first",
                       "throughput": "fastest tokens per second first",
                       "latency": "quickest first token first"}[s]) for s in ROUTING_SORTS),
    "data_collection": tuple((d, {"allow": "sub-providers that may store or train on prompts are allowed",
                                  "deny": "only sub-providers that do not collect data"}[d])
                             for d in DATA_COLLECTION),
    "require_parameters": (("true", "only sub-providers that support every request parameter"),
                           ("false", "sub-providers may ignore parameters they do not support")),
}
LIST_HELP = dict(zip(ROUTING_LISTS, (
    "allow-list: use only these sub-providers",
    "deny-list: never use these sub-providers",
    "try these sub-providers first, in this order",
), strict=True))


def current_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


class RoutingEditScreen(FormScreen):
    """Dismisses with the ConfigChange written, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="routing_edit.cancel")]

    def __init__(self, key: str, current: Any) -> None:
        super().__init__(id="routing-edit")
        self.key = key
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="routing-edit-box"):
            yield Static(Text(f"provider_routing.{self.key}"), classes="modal-title")
            shown = current_text(self.current) or "not set"
            yield Static(Text(f"now: {shown}"), classes="modal-hint")
            if self.key in CHOICES:
                yield OptionList(*(Option(Text(f"{v:<11} {help_}"), id=v)
                                   for v, help_ in CHOICES[self.key]),
                                 id="routing-options", compact=True)
                keys = "Enter: choose"
            else:
                yield Static(Text(LIST_HELP.get(self.key, "comma-separated names")), classes="modal-hint")
                yield Input(value=current_text(self.current), placeholder="anthropic, google",
                            id="routing-value", compact=True)
                keys = "Enter: save (empty: an empty list)"
            yield from form_footer(f"{keys}   ·   Esc: cancel   (config.yaml comments are kept)")

    def on_mount(self) -> None:
        if self.key in CHOICES:
            options = self.query_one(OptionList)
            values = [v for v, _ in CHOICES[self.key]]
            now = current_text(self.current).lower()
            options.highlighted = values.index(now) if now in values else 0
            options.focus()
        else:
            self.query_one(Input).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.save(str(event.option.id))

    def entered(self, value: str) -> None:
        self.save(value)

    def save(self, text: str) -> None:
        try:
            config_edit.parse_routing_value(self.key, text)   # the store's own check, before any lock
        except BadInput as exc:
            self.show_error(field_message(exc.field, exc.problem))
            return
        app = host(self)
        home, timeout, key = app.home, app.lock_timeout, self.key
        self.submit_write(f"setting provider_routing.{key}",
                          lambda: config_edit.routing_set(home, key, text, lock_timeout=timeout),
                          lock=home.config_lock)
