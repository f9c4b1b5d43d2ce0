"""What a screen may ask of the app: a typed protocol instead of ``Any`` and ``getattr``.

The app shell (``tui.app.console.HermesAdminApp``) implements :class:`Host`. Screens reach it
with :func:`host` and never import the app module (the layers contract in pyproject
forbids it). Changes reach screens as Textual signals they subscribe to on mount:

- ``state_signal``: a new :class:`store.watch.home.HomeState` (auth.json, config.yaml, .env);
- ``writes_signal``: the writer's set of pending or waiting writes changed.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from textual.dom import DOMNode
from textual.signal import Signal

from store.paths import Home
from store.pools import events as ev
from store.watch.home import HomeState
from tui.services.clock import Clock
from tui.services.writer import Writer


class Host(Protocol):
    """The app as screens see it."""

    home: Home
    read_only: bool
    lock_timeout: float
    clock: Clock
    state: HomeState | None
    writer: Writer
    state_signal: Signal[HomeState]
    writes_signal: Signal[None]

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...

    def log_events(self, events: Iterable[ev.Event]) -> None: ...

    def action_show_config(self, tab: str = "strategies") -> None: ...

    def dashboard_action(self, action: str) -> None: ...


def host(node: DOMNode) -> Host:
    """The running app of *node*, as a :class:`Host`."""
    app: Any = node.app
    return app


def disabled_reason(reason: str | None) -> bool | None:
    """``check_action``'s answer for an action whose unavailability has a *reason*.

    None (shown dimmed in the footer; pressing it says why) when there is a reason,
    else True. The one rule every screen's writing keys follow.
    """
    return None if reason else True
