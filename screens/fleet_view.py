"""``F``: the fleet view: every shared key's fleet-wide state across hosts, and each host.

Grouped by key (its fleet fingerprint, plus this host's label when a local row holds it):
fleet-wide status with a countdown, since when and by which host it is benched, which
hosts hold it (with request counts). Below, each host's heartbeat, connected or not, lag.

The screen never talks to Redis: a thread worker runs :meth:`tui.services.fleet_feed.FleetLink.run`
and posts FleetUpdate / FleetDown here; fleet-wide bench (``b``) and reset (``r``) run on
thread workers too and come back as FleetActionDone, shown as a toast. When Redis is
unreachable the view says since when and keeps the last snapshot; the console keeps
working on the local file. What another host (or anyone who reaches Redis) wrote that
does not pass the feed's check is shown as unreadable, and named, never trusted.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.explain import Refusals
from store.pools.times import on_calendar
from tui.services.fleet_feed import FleetActionDone, FleetDown, FleetLink, FleetUpdate
from tui.services.host import host
from tui.text.format import BAD_TIME, NULL, countdown, ellipsize, local_time
from tui.text.sentences import READ_ONLY, RESET_WARNING
from tui.text.shown import shown_lines
from tui.widgets.footer import KeysFooter
from tui.widgets.plain_table import PlainTable

if TYPE_CHECKING:
    from store.fleet.model import FleetSnapshot, HostInfo, KeyInfo

# Fixed widths (cells) so the table fits 80 columns and countdowns never re-measure it.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("key", "Key", 21), ("status", "Status", 9), ("left", "Left", 7), ("since", "Since", 8),
    ("by", "By", 8), ("holders", "Held by", 15),
)
ACTIONS = ("bench", "reset")


def key_label(fp_short: str, local: Sequence[Any]) -> str:
    """``fl:0123abcd primary`` (the first local row's label; ``+N`` when more rows hold it)."""
    head = fp_short[:11]
    if not local:
        return head
    first = local[0]
    name = first.label or first.id
    more = f" +{len(local) - 1}" if len(local) > 1 else ""
    return f"{head} {name}{more}"


def key_cells(info: KeyInfo, now: float, label: str) -> dict[str, str]:
    """One key's row: symbol and word for the status, ``—`` for every null."""
    s = info.state
    benched = s.benched_at(now)
    if not s.usable:
        status, left = "⚠ unread", NULL
    elif benched and s.status == "dead":
        status, left = "✖ dead", "never"
    elif benched:
        status, left = "◐ benched", countdown((s.until or now) - now)
    else:
        status, left = "● ok", NULL
    holders = ", ".join(f"{h} {n}" for h, n in info.holders.items()) or NULL
    return {
        "key": label, "status": status, "left": left,
        "since": local_time(s.since, now) if benched else NULL,
        "by": (s.host or NULL) if benched else NULL,
        "holders": holders,
    }


def key_detail(info: KeyInfo, now: float, fp_short: str, label: str) -> str:
    """The selected key in full: reason, until, every holder with its request count."""
    s = info.state
    parts = [f"{fp_short} {label}".strip()]
    if s.benched_at(now):
        end = "never ends" if s.status == "dead" else f"until {local_time(s.until, now)}"
        parts.append(f"benched {end}, since {local_time(s.since, now)} by {s.host or NULL}")
        parts.append(" ".join(str(x) for x in (s.code, s.reason) if x is not None) or NULL)
    elif s.cleared_at is not None:
        parts.append(f"reset {local_time(s.cleared_at, now)} by {s.cleared_by or NULL}")
    held = ", ".join(f"{h} ({n} req)" for h, n in info.holders.items()) or NULL
    parts.append(f"held by {held}")
    problems = [*s.problems, *info.problems]
    if problems:
        parts.append("unreadable: " + "; ".join(problems))
    return " · ".join(parts)


def host_line(h: HostInfo, now: float, version: int, me: str) -> str:
    """``● host-a (this console)  heartbeat 1s ago  connected  lag 0  2 keys``."""
    age = h.age(now)
    connected = h.connected(now)
    mark = "●" if connected else "✖"
    beat = f"{countdown(age)} ago" if age is not None else NULL
    word = "connected" if connected else "gone"
    me_note = " (this console)" if h.name == me else ""
    line = (f"{mark} {h.name}{me_note}  heartbeat {beat}  {word}  "
            f"lag {max(0, version - h.seen_version)}  {h.keys} keys")
    if h.disconnected_since is not None and not connected:
        line += f"  (lost Redis {hhmm(h.disconnected_since)})"
    if h.problems:
        line += "  ⚠ unreadable: " + "; ".join(h.problems)
    return line


def hhmm(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M") if on_calendar(epoch) else BAD_TIME


class FleetScreen(Screen):
    """The fleet view (pushed over the dashboard). Esc or q backs out."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="fleet.back"),
        Binding("q", "back", "Back", show=False, id="fleet.back_q",
                tooltip="Back to the dashboard (q quits only from the dashboard)"),
        Binding("b", "bench", "Bench fleet-wide", id="fleet.bench",
                tooltip="Bench the selected key on every host (duration, published once)"),
        Binding("r", "reset", "Reset fleet-wide", id="fleet.reset",
                tooltip="Reset the selected key on every host, after confirmation"),
    ]

    def __init__(self, link: FleetLink, *, tick: bool = True) -> None:
        super().__init__(id="fleet")
        self.link = link
        self.snapshot: FleetSnapshot | None = None
        self.local: dict[str, list[Any]] = {}
        self.received = 0.0            # monotonic time the snapshot arrived
        self.down: FleetDown | None = None
        self._cells: dict[str, dict[str, str]] = {}
        self._stop = threading.Event()
        self._tick = tick
        self.refusals = Refusals(self, self.disabled_reason)

    def compose(self) -> ComposeResult:
        yield Static(Text(f"fleet: connecting to {self.link.safe_url}…"), id="fleet-status")
        table: PlainTable = PlainTable(id="fleet-keys", cursor_type="row", zebra_stripes=False)
        yield table
        yield Static(Text(NULL), id="fleet-detail")
        yield Static(Text("hosts: " + NULL), id="fleet-hosts")
        yield KeysFooter()

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one("#fleet-keys", DataTable)

    def on_mount(self) -> None:
        for key, title, width in COLUMNS:
            self.table.add_column(title, key=key, width=width)
        self.table.focus()
        self.run_worker(lambda: self.link.run(self._stop, self.post_message), name="fleet-feed",
                        group="fleet-feed", thread=True, exit_on_error=False)
        if self._tick:
            self.set_interval(1, self._render_all)

    def on_unmount(self) -> None:
        self._stop.set()

    # ------------------------------------------------------------ feed messages
    def on_fleet_update(self, message: FleetUpdate) -> None:
        self.snapshot = message.snapshot
        self.local = message.local
        self.received = message.received
        self.down = None
        self._render_all()

    def on_fleet_down(self, message: FleetDown) -> None:
        self.down = message
        self._render_all()

    def on_fleet_action_done(self, message: FleetActionDone) -> None:
        host(self).notify(message.text, severity="information" if message.ok else "error",
                          timeout=6 if message.ok else 10, markup=False)

    # ------------------------------------------------------------ rendering
    def server_now(self) -> float:
        """The server's clock now, from the last snapshot's time and how long ago it came."""
        if self.snapshot is None:
            return time.time()
        return self.snapshot.server_time + (time.monotonic() - self.received)

    @property
    def status_text(self) -> str:
        url = self.link.safe_url
        if self.down is not None:
            last = " Showing the last fleet view." if self.snapshot is not None else ""
            what = ("cannot read the fleet's answer" if self.down.reachable
                    else f"disconnected since {hhmm(self.down.since)}")
            return (f"✖ fleet: {what} ({url}: {self.down.error})."
                    f"{last} The console keeps working on the local file.")
        snap = self.snapshot
        if snap is None:
            return f"fleet: connecting to {url}…"
        ro = " · READ-ONLY" if host(self).read_only else ""
        bad = snap.unreadable()
        unread = f" · ⚠ {len(bad)} unreadable" if bad else ""
        return (f"● fleet: {url} · as {self.link.config.host} · version {snap.version} · "
                f"{len(snap.hosts)} hosts · {len(snap.keys)} keys{unread}{ro}")

    def _render_all(self) -> None:
        self.query_one("#fleet-status", Static).update(Text(inert(self.status_text)))
        snap = self.snapshot
        if snap is None:
            return
        now = self.server_now()
        self._reconcile(snap, now)
        lines = [host_line(h, now, snap.version, self.link.config.host) for h in snap.hosts]
        lines += [f"⚠ unreadable: {p}" for p in snap.problems]
        self.query_one("#fleet-hosts", Static).update(Text(inert("\n".join(lines)) or f"hosts: {NULL}"))
        self._render_detail()
        self.refresh_bindings()

    def _render_detail(self) -> None:
        fp = self.selected_fp()
        info = next((k for k in self.snapshot.keys if k.state.fp == fp), None) if self.snapshot else None
        text = NULL if info is None else key_detail(
            info, self.server_now(), self.link.short(info.state.fp),
            key_label("", self.local.get(info.state.fp, ())).strip())
        self.query_one("#fleet-detail", Static).update(Text(inert(text)))

    def _reconcile(self, snap: FleetSnapshot, now: float) -> None:
        """Rows by fingerprint: drop vanished, update changed cells, add new (cursor stays)."""
        table = self.table
        seen = set()
        for info in snap.keys:
            fp = info.state.fp
            seen.add(fp)
            cells = key_cells(info, now, key_label(self.link.short(fp), self.local.get(fp, ())))
            old = self._cells.get(fp)
            if old is None:
                table.add_row(*(_cell(cells[k], w) for k, _t, w in COLUMNS), key=fp)
            else:
                for k, _t, w in COLUMNS:
                    if old[k] != cells[k]:
                        table.update_cell(fp, k, _cell(cells[k], w))
            self._cells[fp] = cells
        for fp in [fp for fp in self._cells if fp not in seen]:
            table.remove_row(fp)
            del self._cells[fp]

    @property
    def text(self) -> str:
        """Everything the view says, as plain text (tests: canaries, states)."""
        rows = [" | ".join(c[k] for k, _t, _w in COLUMNS) for c in self._cells.values()]
        detail = self.query_one("#fleet-detail", Static).render()
        hosts = self.query_one("#fleet-hosts", Static).render()
        return "\n".join([self.status_text, *rows, str(detail), str(hosts)])

    # ------------------------------------------------------------ actions
    def selected_fp(self) -> str | None:
        table = self.table
        if not self._cells or table.row_count == 0:
            return None
        try:
            return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        except Exception:  # no valid cursor (empty or shrinking table)
            return None

    def disabled_reason(self, action: str, parameters: tuple[object, ...] = ()) -> str | None:
        if action not in ACTIONS:
            return None
        if host(self).read_only:
            return READ_ONLY
        if self.down is not None:
            return "fleet: disconnected; fleet-wide actions wait for Redis"
        if self.selected_fp() is None:
            return "no fleet key selected"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.refusals.availability(action, parameters) if action in ACTIONS else True

    def on_key(self, event: events.Key) -> None:
        self.refusals.explain_key(event)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._render_detail()
        self.refresh_bindings()

    def action_back(self) -> None:
        self.dismiss()

    def _describe(self, fp: str) -> str:
        return key_label(self.link.short(fp), self.local.get(fp, ()))

    def action_bench(self) -> None:
        fp = self.selected_fp()
        if self.refusals.refuse("bench") or fp is None:
            return
        clock = host(self).clock
        lines = [f"Fleet-wide: {self._describe(fp)} on every host.",
                 "Published once; each host's sync daemon benches its own rows holding this key."]

        def chosen(value: tuple[float, str | None] | None) -> None:
            if value is None:
                return
            until, reason = value
            if reason is not None and not reason.isprintable():
                host(self).notify("reason: only printable text", severity="error", markup=False)
                return
            seconds = until - clock()
            self.run_worker(lambda: self.post_message(self.link.bench(fp, seconds, reason)),
                            name="fleet-bench", group="fleet-action", thread=True, exit_on_error=False)

        host(self).push_screen(CooldownScreen(clock, lines), chosen)

    def action_reset(self) -> None:
        fp = self.selected_fp()
        if self.refusals.refuse("reset") or fp is None:
            return
        lines = [f"Reset {self._describe(fp)} on every host?",
                 "Each host's sync daemon clears its rows holding this key, as of the server's now."]

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(lambda: self.post_message(self.link.reset(fp)), name="fleet-reset",
                                group="fleet-action", thread=True, exit_on_error=False)

        host(self).push_screen(ConfirmScreen("Reset fleet-wide", lines, [RESET_WARNING]), answered)


def inert(text: str) -> str:
    """Host names, reasons and errors come from other machines: through the console's one
    funnel (redacted, control characters escaped), line by line."""
    return shown_lines(text)


def _cell(text: str, width: int) -> Text:
    # Text, never markup: reasons, labels and host names come from other machines.
    return Text(ellipsize(inert(text), width), no_wrap=True)
