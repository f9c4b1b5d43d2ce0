"""The dashboard's status-bar watchers: a proxy or a monitor running on the home.

Split from the proxy panel and the monitor view so the dashboard's first paint imports
neither: each watcher reads its status file on a slow timer and opens its view (through the
screen registry, :func:`screens.screen`) only when the operator asks for it. The status-file
readers (``tui.services.proxy_feed``: the proxy's stats and its outcome vocabulary;
``tui.services.monitor_feed``) are imported by the first look, which runs once the first
frame is drawn (issue 28): until then the status bar says nothing of a proxy or a monitor,
as it does when none runs, and never something false. A look finds no status file (no
proxy or monitor has run on the home) with a listing alone: the readers load with the first
file.
"""

from __future__ import annotations

from typing import Callable

from textual.screen import Screen
from textual.timer import Timer

from screens import screen
from store.monitor import STATUS_FILE as MONITOR_STATUS_FILE
from store.paths import Home
from store.proxy import STATUS_PREFIX as PROXY_STATUS_PREFIX
from tui.services.host import host

PROXY_POLL_SECONDS = 1.0     # the proxy rewrites its status file every second
PROXY_FIND_SECONDS = 5.0     # the dashboard's look for a proxy while none is live
MONITOR_FIND_SECONDS = 5.0   # the status bar's look, open or not: the file changes only on events


OVER_NOTE = "$ over budget"       # before a row's reason in the table: a symbol and words


class ProxyWatch:
    """The status-bar summary of a proxy live on the screen's home, and `x` to open its panel.

    Owned by the dashboard. The proxy's status file is not watched (a reload each second
    costs 3.5x a stat: bench/bench_proxy_feed.py); a slow poll (every PROXY_FIND_SECONDS) finds a
    proxy, then follows it each second while it stays live.
    """

    def __init__(self, screen: Screen, changed: Callable[[], None],
                 notes: Callable[[dict[tuple[str, str], str]], None] | None = None) -> None:
        self.screen = screen
        self.changed = changed          # the summary changed: the screen redraws its status bar
        self.notes = notes              # the rows the proxy holds over budget changed (#29)
        self.over: dict[tuple[str, str], str] = {}
        self.summary = ""               # "proxy :8645 · 12 req/min · primary", "" if none
        self.timer: Timer | None = None
        self.pace = 0.0
        self.first = _AfterFirstFrame(screen)

    def pace_poll(self) -> None:
        """Start (or re-pace) the poll: each second while a proxy is live, else slowly."""
        # With no proxy live a console wakes for it only every PROXY_FIND_SECONDS: idle stays idle.
        pace = PROXY_POLL_SECONDS if self.summary else PROXY_FIND_SECONDS
        if self.timer is not None:
            if pace == self.pace:
                return
            self.timer.stop()
        self.pace = pace
        self.timer = self.screen.set_interval(pace, self.poll, name="proxy-status")

    def poll(self) -> None:
        """The status-bar summary of a proxy live on this home (its status file only).

        Before the screen's first frame, the look is put off until that frame is drawn."""
        if self.first.wait(self.poll):
            return
        home = host(self.screen).home
        if not (self.summary or self.over) and not any(home.root.glob(f"{PROXY_STATUS_PREFIX}*.json")):
            return              # no proxy ever wrote here: its reader is not even loaded
        from tui.services import proxy_feed

        st = proxy_feed.live_status(home)
        line = proxy_feed.summary(st)
        over = {k: OVER_NOTE for k in proxy_feed.over_budget(st)}
        if over != self.over and self.notes is not None:
            self.over = over
            self.notes(over)
        if line != self.summary:
            self.summary = line
            self.changed()
        if self.timer is not None:
            self.pace_poll()

    def open_panel(self) -> None:
        from tui.services import proxy_feed

        home = host(self.screen).home
        if proxy_feed.live_status(home) is None:
            self.screen.notify(f"No proxy is running on this home. Start one: hermes-admin --home {home.root} proxy",
                               timeout=4)
            return
        host(self.screen).push_screen(screen("proxy")(home))


class MonitorWatch:
    """The status-bar words of a monitor running on the screen's home, and ``A`` to open its view.

    Owned by the dashboard; *where* names the home whose status file counts (the acting home
    on one home, the root's own home on a root). The status file is not watched: the monitor
    writes it only on events, and a look every MONITOR_FIND_SECONDS is one stat-and-parse,
    cheaper than waking the store watcher (which re-reads the home).
    """

    def __init__(self, screen: Screen, changed: Callable[[], None], where: Callable[[], tuple[Home, str]]) -> None:
        self.screen = screen
        self.changed = changed          # the words changed: the screen redraws its status bar
        self.where = where              # (the home of the status file, the command that starts one)
        self.summary = ""               # "monitor · 2 alerts, 1 critical", "" if none runs
        self.short = ""                 # "monitor · 2 alerts" (a narrow status bar)
        self.timer: Timer | None = None
        self.first = _AfterFirstFrame(screen)

    def start(self, *, follow: bool = True) -> None:
        """Look now and, with *follow*, every MONITOR_FIND_SECONDS from now on."""
        if follow and self.timer is None:
            self.timer = self.screen.set_interval(MONITOR_FIND_SECONDS, self.poll, name="monitor-status")
        self.poll()

    def poll(self) -> None:
        """The status-bar words of a monitor on the home (put off until the first frame)."""
        if self.first.wait(self.poll):
            return
        home = self.where()[0]
        if not self.summary and not (home.root / MONITOR_STATUS_FILE).exists():
            return              # no monitor has written here: its reader is not even loaded
        from tui.services import monitor_feed

        summary, short = monitor_feed.summary(monitor_feed.live_status(home))
        if (summary, short) != (self.summary, self.short):
            self.summary, self.short = summary, short
            self.changed()

    def open_view(self) -> None:
        home, hint = self.where()
        host(self.screen).push_screen(screen("monitor")(home, start_hint=hint))



class _AfterFirstFrame:
    """The first look of a watcher waits for its screen's next refresh (the first frame, as
    the dashboard asks on mount): a status file's reader is not worth holding the table for."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.waited = False

    def wait(self, look: Callable[[], None]) -> bool:
        """True (and *look* scheduled after the next refresh) the first time only."""
        if self.waited:
            return False
        self.waited = True
        self.screen.call_after_refresh(look)
        return True
