"""The dashboard on a root of profiles: every profile's pools in one live table.

Rows are grouped by profile (a banner: primary, fallback chain, health), then pool. The
app's ``home``/``state`` follow the cursor (the *acting* profile, tui.app.root_console), so
every inherited action (reset, cooldown, remove, move, add, strategy, probe, detail,
config) reads and writes the row's own profile through the one writer. A profile whose
auth.json cannot be read is a banner with its path and reason, and every writing action
is refused while the cursor is on it. Findings mark their rows (``⚑ shared``).

The screen owns a :class:`ProfileOperator` (the dashboard's operator actions, with tags
named by profile) and a :class:`screens.everywhere.Everywhere` (``R``/``C``), and asks the
app as a :class:`tui.services.host.RootHost`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Protocol

from textual.binding import Binding

from screens.dashboard import DashboardScreen
from screens.dashboard_actions import WRITING, Board, Key, Operator
from screens.dashboard_chrome import clock_time
from screens.everywhere import EVERYWHERE, EVERYWHERE_BINDINGS, Everywhere
from screens.findings_view import FindingsScreen
from screens.profile_config_view import ProfileConfigScreen
from screens.profile_picker import ProfilePicker
from screens.profile_rows import GroupCache, notes, split_view_key, view_key
from store.paths import DEFAULT_PROFILE, Home
from store.pools.view import CredentialView, build_pools
from store.profiles.inventory import ProfileInventory
from store.profiles.live import RootState
from tui.services.heap import settle_heap
from tui.services.host import root_host
from tui.text.paths import tilde
from tui.widgets import Banner, EmptyState, StatusBar
from tui.widgets.cells import PENDING_MARK, TAG_MARK
from tui.widgets.rows import ProfileBanner
from tui.widgets.table_notes import FINDINGS


class ProfileBoard(Board, Protocol):
    """What the operator's actions need of the profiles dashboard, besides a dashboard's."""

    root_state: RootState | None

    def acting_inventory(self) -> ProfileInventory | None: ...


class ProfileOperator(Operator):
    """The operator's actions on a root: a tag names its row's profile; every write goes to
    the acting profile, and a profile whose auth.json cannot be read refuses them."""

    board: ProfileBoard

    def cursor_pool(self) -> str | None:
        entry = self.table.cursor_entry
        if entry is None or isinstance(entry.pool, ProfileBanner):
            return None
        return split_view_key(entry.pool.key)[1]

    def unreadable(self) -> str | None:
        """Why nothing is written to the acting profile (its auth.json cannot be read); else None."""
        inv = self.board.acting_inventory()
        if inv is not None and inv.error is not None and not self.board.read_only:
            return (f"profile {inv.name}: {inv.error.path} cannot be read ({inv.error.reason}); "
                    "nothing is written to it")
        return None

    def write_reason(self, action: str) -> str | None:
        if action in WRITING:
            reason = self.unreadable()
            if reason:
                return reason
        if action in ("reset", "cooldown") and self.tags and not self.board.read_only:
            reason = self._tags_elsewhere()
            if reason:
                return reason
        return super().write_reason(action)

    def _tags_elsewhere(self) -> str | None:
        """Refuse a bulk action whose tags are (also) in a profile other than the cursor's:
        the write goes to one profile, and acting on the cursor's row instead of the tagged
        ones, or on only part of them, is what an operator would not expect."""
        acting = root_host(self.board).acting
        others = sorted({split_view_key(key)[0] for key, _ in self.tags} - {acting})
        if not others:
            return None
        return (f"tagged rows are in profile {', '.join(others)}; a bulk action acts on one "
                f"profile, the cursor's ({acting}): move the cursor to a tagged row's profile, "
                "or clear the tags with u")

    def tagged(self) -> list[CredentialView]:
        if not self.tags:
            return []
        acting = root_host(self.board).acting
        return [cv for pv in self.board.pools for cv in pv.credentials
                if (view_key(acting, cv.pool), cv.id) in self.tags]

    def tag_key(self) -> Key | None:
        entry = self.table.cursor_entry
        if entry is None or entry.cred is None:
            return None
        return (entry.pool.key, entry.cred.id)

    def marks(self) -> dict[Key, str]:
        out = {key: TAG_MARK for key in self.tags}
        app = root_host(self.board)
        acting = app.acting
        for pool, rid in app.writer.pending_rows():
            out[(view_key(acting, pool), rid)] = PENDING_MARK
        return out


class ProfilesDashboard(DashboardScreen):
    """DashboardScreen over a :class:`store.profiles.live.RootState`."""

    operator: ProfileOperator

    BINDINGS = [
        Binding("P", "pick_profile", "Profile", id="profiles.pick",
                tooltip="Switch profile — narrow the console to one profile, or all"),
        Binding("exclamation_mark", "findings", "Findings", key_display="!", id="profiles.findings",
                tooltip="Findings — shared keys, copied OAuth grants, unusable primaries"),
        Binding("V", "profile_config", "Profile config", show=False, id="profiles.config",
                tooltip="Profile config — delegation, cron overrides, gateway, auxiliary"),
        *EVERYWHERE_BINDINGS,
    ]

    def __init__(self, clock: Callable[[], float], **kwargs: Any) -> None:
        super().__init__(clock, **kwargs)
        self.root_state: RootState | None = None
        self.view_pools: list[Any] = []
        self.row_notes: dict[Key, str] = {}
        self.groups = GroupCache()
        self.everywhere = Everywhere(self)
        self.spend.homes = self.spend_homes     # each profile's usage ledger, under the view's keys (#29)

    def make_operator(self) -> ProfileOperator:
        return ProfileOperator(self)

    def on_mount(self) -> None:
        app = root_host(self)
        self.latest = app.root_state
        super().on_mount()
        app.root_signal.subscribe(self, self.show_state, immediate=True)

    # ------------------------------------------------------------ state in
    def show_state(self, state: Any) -> None:
        if isinstance(state, RootState):   # the acting profile's HomeState is for other screens
            super().show_state(state)

    def _apply(self, state: Any) -> None:
        if not isinstance(state, RootState):
            return
        self.state = self.root_state = state
        context = root_host(self).context
        shown = [p for p in state.profiles if context is None or p.name == context]
        self.view_pools = self.groups.pools(shown)
        self.row_notes = notes(state.findings)
        if self.operator.tags:
            self.operator.tags &= {(pv.key, cv.id) for pv in self.view_pools for cv in pv.credentials}
        self.refresh_table()
        self.operator.follow_pending_cursor()
        app = root_host(self)
        if self.view_pools and app.freeze_heap:
            app.freeze_heap = False  # as the single-home dashboard does, once the first root shows
            self.set_timer(1.0, settle_heap, name="settle-heap")

    def refresh_table(self) -> None:
        table = self.table
        table.set_marks(self.operator.marks())
        table.set_notes(self.row_notes, kind=FINDINGS)     # a proxy's budget notes stay
        table.reconcile(self.view_pools, self.clock(), filter_text=self.filter_text, sort=self.sort)
        if self.root_state is not None:     # each profile's headroom sidecar (#21)
            shown = (inv.name for inv in self.root_state.profiles)
            table.set_headroom(self.groups.headroom(self.root_state.states, shown))
        self.sync_acting()
        self._refresh_chrome()

    def spend_homes(self) -> list[tuple[Home, Callable[[str], str]]]:
        """The home of every profile shown, and how its pools are keyed in the view."""
        rs, context = self.root_state, root_host(self).context
        return [(rs.states[p.name].home, functools.partial(view_key, p.name)) for p in rs.profiles
                if p.name in rs.states and context in (None, p.name)] if rs is not None else []

    # ------------------------------------------------------------ the acting profile
    def cursor_profile(self) -> str:
        entry = self.table.cursor_entry if self._ready else None
        if entry is not None:
            return split_view_key(entry.pool.key)[0]
        return root_host(self).context or DEFAULT_PROFILE

    def sync_acting(self) -> None:
        """The cursor's profile becomes the app's home/state; its pools are what actions see."""
        app = root_host(self)
        name = self.cursor_profile()
        app.use_profile(name)
        inv = self.root_state.profile(name) if self.root_state is not None else None
        self.pools = list(inv.pools) if inv is not None else []

    def acting_inventory(self) -> ProfileInventory | None:
        rs = self.root_state
        return rs.profile(root_host(self).acting) if rs is not None else None

    def on_credential_table_row_highlighted(self, event: Any) -> None:
        self.sync_acting()
        super().on_credential_table_row_highlighted(event)

    def disabled_reason(self, action: str, parameters: tuple[object, ...] = ()) -> str | None:
        if action in EVERYWHERE:
            return self.operator.unreadable() or self.everywhere.reason()
        return self.operator.write_reason(action) if action in WRITING else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in EVERYWHERE:
            return self.refusals.availability(action, parameters) if self._ready else None
        return super().check_action(action, parameters)

    # ------------------------------------------------------------ switching and acting everywhere
    def _profiles(self) -> list[ProfileInventory]:
        rs = self.root_state
        return list(rs.profiles) if rs is not None else []

    def switch_profile(self, context: str | None) -> None:
        """Narrow the view to profile *context* ("": every profile; None: leave it as it is)."""
        if context is None:
            return
        root_host(self).set_context(context or None)
        self.table.move_cursor(row=0, animate=False)
        self.sync_acting()

    def action_pick_profile(self) -> None:
        app = root_host(self)
        app.push_screen(ProfilePicker(self._profiles(), app.context), self.switch_profile)

    def action_findings(self) -> None:
        rs = self.root_state
        root_host(self).push_screen(FindingsScreen(rs.findings if rs is not None else []))

    def action_profile_config(self) -> None:
        inv = self.acting_inventory()
        if inv is not None:
            root_host(self).push_screen(ProfileConfigScreen(inv))

    def action_reset_everywhere(self) -> None:
        self.everywhere.reset()

    def action_bench_everywhere(self) -> None:
        self.everywhere.bench()

    # ------------------------------------------------------------ the tick
    def tick(self) -> None:
        now = self.clock()
        table = self.table
        flipped = table.tick(now)
        rs = self.root_state
        if not flipped or rs is None:
            return
        touched = {e.pool.key for e in map(table.entry, flipped) if e is not None and e.cred}
        fresh: dict[str, Any] = {}
        for key in touched:
            profile, pool = split_view_key(key)
            st = rs.states.get(profile)
            if st is None or st.doc is None:
                continue
            for pv in build_pools(st.doc, strategies=st.strategies, now=now, ttls=st.ttls,
                                  env=st.env, only=pool):
                fresh[key] = self.groups.replace(key, pv)
        self.view_pools = [fresh.get(pv.key, pv) for pv in self.view_pools]
        self.refresh_table()

    # ------------------------------------------------------------ chrome
    def monitor_target(self) -> tuple[Home, str]:
        """``monitor --root`` keeps its status file in the root's own home."""
        path = root_host(self).root.path
        return Home(path), f"hermes-admin monitor --root {tilde(path)}"

    def _refresh_chrome(self) -> None:
        if not self._ready:
            return
        rs = self.root_state
        app = root_host(self)
        table = self.table
        msg = None
        if rs is None:
            msg = "Loading…"
        elif table.row_count == 0:
            msg = (f"No credential matches “{self.filter_text}”. Escape clears the filter."
                   if self.filter_text else f"No profile to show under {app.root.path}")
        self.query_one(EmptyState).set_message(msg)
        table.display = msg is None
        self.query_one(Banner).set_problems(self.root_problems())
        held = 0
        if self.paused and isinstance(self.latest, RootState) and rs is not None:
            held = self.latest.generation - rs.generation
        self.query_one(StatusBar).set_parts(
            # The acting profile is never the part a narrow line cuts; the root's path is.
            home=str(app.root.path), profile=app.context or "all", acting=app.acting,
            live=app.liveness.badge(paused=self.paused, unreadable=False,
                                    seen=rs.read_at if rs else None),
            read_only=self.read_only, stale=False, sort=self.controls.sort_text, filter_text=self.filter_text,
            generation=rs.generation if rs else 0,
            updated=clock_time(rs.read_at) if rs else "",
            held=held, busy=app.writer.status_text(), tagged=len(self.operator.tags),
            proxy=self.proxy.summary,     # the acting profile's proxy, as on a single home
            monitor=(self.monitor.summary, self.monitor.short),    # the root's monitor
        )

    def root_problems(self) -> list[tuple[str, str]]:
        rs = self.root_state
        if rs is None:
            return []
        out: list[tuple[str, str]] = []
        for p in rs.profiles:
            if p.error is not None:
                out.append(("error", f"profile {p.name}: {p.error.path}: {p.error.reason}. "
                                     "Nothing will be written to it until it is fixed."))
            if p.config_error is not None:
                out.append(("warning", f"profile {p.name}: {p.config_error.path}: {p.config_error.reason}"))
        if rs.findings:
            out.append(("warning", f"{len(rs.findings)} finding(s) across profiles: press ! to list them"))
        return out

