"""The dashboard: every pool's credentials in one live table.

It shows what the app hands it (:meth:`DashboardScreen.show_state`), keeps the countdowns
honest with a one-second tick, and never reads or writes the store itself. It owns its operator
actions (screens.dashboard_actions.Operator, which hands writes to the app's writer), how its
table reads (screens.dashboard_view.ViewControls), the proxy's and the monitor's status-bar
summaries (ProxyWatch, MonitorWatch) and the one answer to why a key is disabled (Refusals).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input

from screens import screen
from screens.dashboard_actions import WRITING, Operator
from screens.dashboard_chrome import clock_time, empty_message, live_and_held, problems, ran_out
from screens.dashboard_events import EventsTimeline
from screens.dashboard_spend import SpendWatch
from screens.dashboard_view import VIEW_BINDINGS, ViewControls
from screens.explain import Refusals
from screens.status_watch import MonitorWatch, ProxyWatch
from screens.view_memory import ViewMemory
from store.paths import Home
from store.pools.view import PoolView
from store.watch.home import HomeState
from tui.services.heap import settle_heap
from tui.services.host import host
from tui.text.paths import tilde
from tui.widgets import Banner, CredentialTable, EmptyState, StatusBar
from tui.widgets.flash import FlashLine
from tui.widgets.footer import KeysFooter
from tui.widgets.rows import SORT_ORDER

if TYPE_CHECKING:
    from tui.widgets.events_log import EventsLog


class DashboardScreen(Screen):
    """The live table, its status lines, the events log and the filter box."""

    # The compact footer's palette key (docked right) had every key's right margin: the
    # last column showed a letter of whatever key lay under it.
    DEFAULT_CSS = "DashboardScreen Footer.-compact FooterKey.-command-palette { margin-right: 0; }"
    BINDINGS = [
        # The app binds ? too; repeated here, first, so a narrow footer cuts anything but help.
        Binding("question_mark", "app.help", "Help", key_display="?", id="dashboard.help"),
        Binding("enter", "detail", "Detail", id="dashboard.detail",
                tooltip="Credential detail — every field of the selected row"),
        Binding("slash", "filter", "Filter", key_display="/", id="dashboard.filter",
                tooltip="Filter credentials — label, id, source, pool or status"),
        # Before Clear filter: while a range mark is on, Esc ends it (and the footer says so).
        Binding("escape", "end_range", "End range", id="dashboard.end_range"),
        Binding("escape", "clear_filter", "Clear filter", id="dashboard.clear_filter"),
        Binding("a", "add", "Add", id="dashboard.add",
                tooltip="Add a key — new API key in a pool (masked input)"),
        Binding("r", "reset", "Reset", id="dashboard.reset",
                tooltip="Reset cooldown — selected or tagged rows, or a whole pool from its header; "
                        "stamps status_cleared_at"),
        Binding("c", "cooldown", "Cooldown", id="dashboard.cooldown",
                tooltip="Set a cooldown — bench the selected or tagged rows, or a whole pool, by hand"),
        Binding("d", "remove", "Remove", id="dashboard.remove",
                tooltip="Remove credential — the selected row, after confirmation"),
        Binding("K,shift+up", "move_up", "Move up", show=False, key_display="K",
                id="dashboard.move_up",
                tooltip="Move up in priority — the selected row, one place"),
        Binding("J,shift+down", "move_down", "Move down", show=False, key_display="J",
                id="dashboard.move_down",
                tooltip="Move down in priority — the selected row, one place"),
        Binding("space", "tag", "Tag / untag", show=False, id="dashboard.tag",
                tooltip="Tag / untag row — for bulk reset and cooldown; on a pool header, the whole pool"),
        Binding("u", "clear_tags", "Untag all", show=False, id="dashboard.clear_tags",
                tooltip="Clear all tags — untag every row"),
        Binding("s", "strategy", "Strategy", id="dashboard.strategy",
                tooltip="Strategy of this pool — fill_first, round_robin, random, least_used"),
        Binding("p", "probe", "Probe", id="dashboard.probe",
                tooltip="Probe this pool — ask the provider if benched keys reopened; lift those"),
        Binding("L", "audit", "Audit log", show=False, id="dashboard.audit",
                tooltip="Audit log — the latest operator actions"),
        Binding("z", "pause", "Pause", show=False, id="dashboard.pause",
                tooltip="Pause / resume live updates — hold store changes while reading"),
        Binding("e", "events", "Events", show=False, id="dashboard.events",
                tooltip="Toggle events timeline — transitions seen in the store"),
        Binding("escape", "close_events", "Close events", show=False, id="dashboard.close_events"),
        Binding("v", "config", "Config", id="dashboard.config"),
        Binding("l", "request_log", "Requests", show=False, id="dashboard.request_log",
                tooltip="Request log — the row's recent requests through any proxy on this home"),
        Binding("x", "proxy", "Proxy", show=False, id="dashboard.proxy",
                tooltip="Proxy panel — live traffic of the proxy running on this home"),
        Binding("A", "monitor", "Monitor", show=False, id="dashboard.monitor", tooltip="Monitor view — open alerts"),
        *VIEW_BINDINGS,
    ]

    def __init__(self, clock: Callable[[], float], *, read_only: bool = False,
                 tick: bool = True) -> None:
        super().__init__(id="dashboard")
        self.clock = clock
        self.read_only = read_only
        self.state: HomeState | None = None      # the state on screen
        self.latest: HomeState | None = None     # newest received (differs while paused)
        self.pools: list[PoolView] = []
        self.filter_text = ""
        self.sort = SORT_ORDER[0]
        self.paused = False
        self._tick_enabled = tick
        self._ready = False                      # children composed and mounted
        self.timeline = EventsTimeline(self)     # the events log, made when first shown
        self.refusals = Refusals(self, self.disabled_reason)
        self.operator = self.make_operator()     # the tags, the row just added, every write
        # the status bar's proxy summary, and its keys over budget noted in the table (#29)
        self.spend = SpendWatch(self, clock)     # the spend column: today's cost per key (#29)
        self.proxy = ProxyWatch(self, self._refresh_chrome, self.spend.over_budget)
        self.monitor = MonitorWatch(self, self._refresh_chrome, self.monitor_target)
        self.controls = ViewControls(self)       # sort, columns, range mark, n/N
        self.memory = ViewMemory(self)           # that view, kept between sessions

    def make_operator(self) -> Operator:
        return Operator(self)

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Banner(id="banner")
        yield EmptyState(id="empty")
        yield CredentialTable(id="table")
        yield Input(placeholder="filter: label, id, source, pool or status (Enter: go, Esc: clear)",
                    id="filter")
        yield FlashLine(id="flash")     # a write's result, one line (tui.widgets.flash)
        yield KeysFooter(compact=True)

    @property
    def table(self) -> CredentialTable:
        return self.query_one(CredentialTable)

    @property
    def events_log(self) -> EventsLog:
        """The events timeline, made when first asked for (screens.dashboard_events)."""
        return self.timeline.log()

    def on_mount(self) -> None:
        self._ready = True
        app = host(self)
        app.state_signal.subscribe(self, self.show_state, immediate=True)
        app.writes_signal.subscribe(self, self.writes_changed, immediate=True)
        if self.latest is None:
            # The first read can land before this screen is on the stack.
            self.latest = app.state
        if self._tick_enabled:
            # The table runs it only while a cooling row is on screen.
            self.table.start_ticking(self.tick, clock=self.clock)
            # The proxy's status file is not watched (a reload each second costs 3.5x a stat:
            # bench/bench_proxy_feed.py); a slow poll finds a proxy, then follows it each second.
            self.proxy.pace_poll()
        self.proxy.poll()
        self.monitor.start(follow=self._tick_enabled)
        self.spend.start(follow=self._tick_enabled)
        self.memory.restore()
        if self.latest is not None:
            self._apply(self.latest)
        else:
            self._refresh_chrome()

    def on_unmount(self) -> None:
        self.memory.save_now()          # the folds (sort and columns are saved as they change)

    # ------------------------------------------------------------ state in
    def show_state(self, state: HomeState) -> None:
        """Take a new state from the app; held back while paused."""
        self.latest = state
        if not self._ready:
            return
        if self.paused:
            self._refresh_chrome()
            return
        self._apply(state)

    def _apply(self, state: HomeState) -> None:
        self.state = state
        self.pools = list(state.pools)
        if self.operator.tags:
            # A tag follows its credential; a credential that left the store takes it along.
            self.operator.tags &= {cv.key for pv in self.pools for cv in pv.credentials}
        self.refresh_table()
        self.memory.fold_pending()
        self.operator.follow_pending_cursor()
        app = host(self)
        if state.pools and app.freeze_heap:
            app.freeze_heap = False
            # Once the first screen is written (the writer thread needs the GIL too).
            self.set_timer(1.0, settle_heap, name="settle-heap")

    def refresh_table(self) -> None:
        """Show the pools again under the current filter and sort (the view controls ask)."""
        now = self.clock()
        table = self.table
        table.set_marks(self.operator.marks())
        table.reconcile(self.pools, now, filter_text=self.filter_text, sort=self.sort)
        if self.state is not None:
            table.set_headroom(self.state.headroom)     # the sidecar's readings (#21)
        self._refresh_chrome()

    def writes_changed(self, _: None = None) -> None:
        """Tags or in-flight writes changed: redraw the marks, the status bar and the footer."""
        if not self._ready:
            return
        self.table.set_marks(self.operator.marks())
        self._refresh_chrome()
        self.refresh_bindings()

    def _refresh_chrome(self) -> None:
        state = self.state
        if not self._ready:
            return
        table = self.table
        msg = empty_message(state, self.filter_text, table.row_count)
        self.query_one(EmptyState).set_message(msg)
        table.display = msg is None
        # Problems show even while paused: pausing holds the table, not the warnings.
        self.query_one(Banner).set_problems(problems(self.latest or state))
        live, held = live_and_held(host(self).liveness, state, self.latest, self.paused)
        self.query_one(StatusBar).set_parts(
            home=str(state.home.root) if state else "", live=live,
            read_only=self.read_only, stale=bool(state and state.stale),
            sort=self.controls.sort_text, filter_text=self.filter_text,
            generation=state.generation if state else 0,
            updated=clock_time(state.read_at) if state else "",
            held=held, busy=host(self).writer.status_text(), tagged=len(self.operator.tags),
            proxy=self.proxy.summary, monitor=(self.monitor.summary, self.monitor.short),
        )

    # ------------------------------------------------------------ the tick
    def tick(self) -> None:
        """Once a second: countdown text, and cooldowns that ran out turn ``ready``.

        Nothing is written: ``ready`` is computed from the clock, exactly as the
        agent will see it on its next selection.
        """
        now = self.clock()
        flipped = self.table.tick(now)
        if flipped and self.state is not None:
            self.pools, elapsed = ran_out(self.state, self.pools, self.table, flipped, now)
            self.refresh_table()
            host(self).log_events(elapsed)

    # ------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in WRITING:
            # None: shown dimmed in the footer; pressing it says why (on_key below).
            return self.refusals.availability(action, parameters) if self._ready else None
        if action in ("detail", "request_log"):
            # None: shown but dimmed while the cursor is on a pool header.
            return True if self._ready and self.table.cursor_credential is not None else None
        if action == "end_range":
            return self._ready and self.table.range_active
        if action == "clear_filter":
            return self._ready and (bool(self.filter_text) or self.filter_box.has_class("-shown"))
        if action == "close_events":
            return self.timeline.shown
        return True

    def on_key(self, event: events.Key) -> None:
        """A key bound to an unavailable writing action says why, instead of nothing at all."""
        self.refusals.explain_key(event)

    def disabled_reason(self, action: str, parameters: tuple[object, ...] = ()) -> str | None:
        """The one reason behind check_action and the refusal notice: only writes are refused."""
        return self.operator.write_reason(action) if action in WRITING else None

    def attempt(self, action: str) -> None:
        """Run *action* if it is available now, else say why (command palette)."""
        if action in WRITING and self.refusals.refuse(action):
            return
        self.call_later(self.run_action, action)

    # The operator's actions, each one call to the Operator (the bindings see them here).
    def action_add(self) -> None:
        self.operator.add()

    def action_reset(self) -> None:
        self.operator.reset()

    def action_cooldown(self) -> None:
        self.operator.cooldown()

    def action_remove(self) -> None:
        self.operator.remove()

    def action_move_up(self) -> None:
        self.operator.move(-1)

    def action_move_down(self) -> None:
        self.operator.move(+1)

    def action_strategy(self) -> None:
        self.operator.strategy()

    def action_probe(self) -> None:
        self.operator.probe()

    def action_tag(self) -> None:
        self.operator.tag()

    def action_clear_tags(self) -> None:
        self.operator.clear_tags()

    def action_mark_range(self) -> None:
        self.controls.mark_range()

    def action_next_match(self) -> None:
        self.controls.step(+1)

    def action_previous_match(self) -> None:
        self.controls.step(-1)

    def action_reverse_sort(self) -> None:
        self.controls.reverse_sort()

    def action_columns(self) -> None:
        self.controls.choose_columns()

    def action_audit(self) -> None:
        self.operator.audit()

    def action_request_log(self) -> None:
        if (cv := self.table.cursor_credential) is not None:
            self.app.push_screen(screen("requests")(host(self).home, cv.pool, cv.id, cv.label or cv.id))

    def action_proxy(self) -> None:
        self.proxy.open_panel()

    def action_monitor(self) -> None:
        self.monitor.open_view()

    def monitor_target(self) -> tuple[Home, str]:
        """The home whose monitor the status bar and ``A`` follow, and how to start one there."""
        home = host(self).home
        return home, f"hermes-admin --home {tilde(home.root)} monitor"

    def action_detail(self) -> None:
        cv = self.table.cursor_credential
        if cv is None:
            return
        self.app.push_screen(screen("detail")(cv.key, self.clock))

    def on_credential_table_row_selected(self, event: CredentialTable.RowSelected) -> None:
        event.stop()
        self.action_detail()

    def on_credential_table_row_highlighted(self, event: CredentialTable.RowHighlighted) -> None:
        self.refresh_bindings()

    @property
    def filter_box(self) -> Input:
        return self.query_one("#filter", Input)

    def action_filter(self) -> None:
        self.controls.open_filter()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.controls.filter_changed(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.controls.filter_done()

    def action_clear_filter(self) -> None:
        self.controls.clear_filter()

    def action_end_range(self) -> None:
        self.controls.end_range()

    def action_sort(self) -> None:
        self.controls.next_sort()

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused and self.latest is not None and self.latest is not self.state:
            self._apply(self.latest)
        self._refresh_chrome()

    def action_wide(self) -> None:
        self.controls.toggle_wide()

    def action_events(self) -> None:
        self.timeline.toggle()

    def action_close_events(self) -> None:
        self.timeline.toggle()

    def action_config(self) -> None:
        self.app.push_screen(screen("config")())

    def add_events(self, events: list[Any]) -> None:
        self.timeline.add(events)         # kept until the log is first shown
