"""``s``: choose how a pool picks its next key. Only the four strategies Hermes implements
(and "default", which removes the setting) can be chosen, so an unknown name is never written."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from store.config import edit as config_edit
from store.model import DEFAULT_STRATEGY, STRATEGIES
from tui.services.host import Host
from tui.text.sentences import STRATEGY_HELP
from tui.widgets.guarded import GuardedModal

DEFAULT_CHOICE = "default"


def strategy_choices(current: str | None) -> list[tuple[str, str]]:
    """(value, line) for each choice; the configured one is marked ``● current``."""
    configured = (current or "").strip().lower()
    out = []
    for name in STRATEGIES:
        mark = "●" if configured == name else " "
        out.append((name, f"{mark} {name:<12} {STRATEGY_HELP[name]}"))
    mark = "●" if current is None else " "
    out.append((DEFAULT_CHOICE, f"{mark} {'default':<12} remove the setting: Hermes uses "
                                f"{DEFAULT_STRATEGY}"))
    return out


class StrategyScreen(GuardedModal["str | None"]):
    """Dismisses with a strategy name, ``"default"``, or None when cancelled. Its answer is
    written to config.yaml: it takes no key of the burst that opened it (GuardedModal)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="strategy.cancel")]

    def __init__(self, pool: str, current: str | None) -> None:
        super().__init__(id="strategy", classes="modal")
        self.pool = pool
        self.current = current
        self.choices = strategy_choices(current)

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="strategy-box"):
            yield Static(Text(f"Strategy for {self.pool}"), classes="modal-title")
            note = "● marks the configured strategy"
            if self.current is not None and self.current.strip().lower() not in STRATEGIES:
                note = (f"configured: {self.current!r}, unknown to Hermes, which uses "
                        f"{DEFAULT_STRATEGY}; pick one it knows")
            yield Static(Text(note), classes="modal-hint")
            yield OptionList(*(Option(Text(line), id=value) for value, line in self.choices),
                             id="strategy-options", compact=True)
            yield Static("Enter: choose   ·   Esc: cancel   (written to config.yaml, comments kept)",
                         classes="modal-keys")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        configured = (self.current or "").strip().lower()
        values = [v for v, _ in self.choices]
        options.highlighted = values.index(configured) if configured in values else \
            (values.index(DEFAULT_CHOICE) if self.current is None else 0)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


def open_strategy_picker(app: Host, pool: str, current: str | None) -> None:
    """Show the picker for *pool*; write the choice through the app's writer (config lock)."""

    def chosen(name: str | None) -> None:
        if name is None:
            return
        strategy = None if name == DEFAULT_CHOICE else name
        home, timeout = app.home, app.lock_timeout

        def write() -> Any:
            return config_edit.set_strategy(home, pool, strategy, lock_timeout=timeout)

        # The writer's toast says what changed (or that nothing needed to).
        app.writer.submit(f"setting the strategy of {pool}", write, lock=home.config_lock)

    app.push_screen(StrategyScreen(pool, current), chosen)
