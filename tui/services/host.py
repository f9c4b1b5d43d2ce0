"""What a screen may ask of the app: a typed protocol instead of ``Any`` and ``getattr``.

The app shell (``tui.app.console.HermesAdminApp``) implements :class:`Host`; the console on a
root of profiles (``tui.app.root_console.RootApp``) implements :class:`RootHost` too.
Screens reach them with :func:`host` and :func:`root_host` and never import the app
modules (the layers contract in pyproject forbids it). Changes reach screens as Textual
signals they subscribe to on mount:

- ``state_signal``: a new :class:`store.watch.home.HomeState` (auth.json, config.yaml, .env);
- ``writes_signal``: the writer's set of pending or waiting writes changed, or the watcher's
  health (``liveness``): the chrome redraws;
- ``root_signal`` (a root only): a new :class:`store.profiles.live.RootState`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Protocol

from textual.signal import Signal

from store.paths import Home
from store.pools import events as ev
from store.watch.home import HomeState
from tui.services.clock import Clock
from tui.services.liveness import Liveness
from tui.services.writer import Writer

if TYPE_CHECKING:   # a root's types: the one-home console's start-up does not import them
    from store.profiles.live import RootState
    from store.profiles.root import Root


class Host(Protocol):
    """The app as screens see it."""

    home: Home
    read_only: bool
    lock_timeout: float
    clock: Clock
    via: str                # how the operator reaches the console: "tui", or "web"
    remote: str | None      # a web console's browser address (every write's audit says it)
    state: HomeState | None
    writer: Writer
    state_signal: Signal[HomeState]
    writes_signal: Signal[None]
    watch_enabled: bool     # False: no watcher, so a screen that wrote outside the writer reloads
    liveness: Liveness      # whether the watcher follows the files (tui.services.liveness)
    freeze_heap: bool       # True until the first home is on screen (tui.services.heap.settle_heap)

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...

    def call_from_thread(self, callback: Any, *args: Any, **kwargs: Any) -> Any: ...

    def run_worker(self, work: Any, name: str | None = "", group: str = "default", description: str = "",
                   exit_on_error: bool = True, start: bool = True, exclusive: bool = False,
                   thread: bool = False) -> Any: ...

    def reload(self) -> HomeState | None: ...

    def log_events(self, events: Iterable[ev.Event]) -> None: ...

    def action_show_config(self, tab: str = "strategies") -> None: ...

    def dashboard_action(self, action: str) -> None: ...


class RootHost(Host, Protocol):
    """The console on a root of profiles: ``home`` and ``state`` are the *acting* profile's."""

    root: Root
    root_state: RootState | None
    context: str | None     # the profile the view is narrowed to; None: every profile
    acting: str             # the profile whose files actions read and write
    root_signal: Signal[RootState]

    def set_context(self, name: str | None) -> None: ...

    def use_profile(self, name: str) -> None: ...


class HasApp(Protocol):
    """A node of the running app (a screen, a widget), or an object that stands for one."""

    @property
    def app(self) -> Any: ...


def host(node: HasApp) -> Host:
    """The running app of *node*, as a :class:`Host`."""
    app: Any = node.app
    return app


def root_host(node: HasApp) -> RootHost:
    """The running app of *node*, as a :class:`RootHost` (only the profiles screens ask)."""
    app: Any = node.app
    return app


def disabled_reason(reason: str | None) -> bool | None:
    """``check_action``'s answer for an action whose unavailability has a *reason*.

    None (shown dimmed in the footer; pressing it says why) when there is a reason,
    else True. The one rule every screen's writing keys follow.
    """
    return None if reason else True
