"""``x``: the proxy panel, live traffic of the proxy running on this home, and its steering.

It reads only the proxy's status file (``tui.services.proxy_feed``), once a second while it is
open: per credential the in-flight requests and requests per minute, per pool a
sparkline of requests and one of 429s over the last 10 minutes, the chain state
(on primary, or on fallback since when and the next restore check, or pinned), each failing
upstream's circuit breaker, and the last 50 requests (time, route, credential, status,
latencies, outcome: the status file holds no body, header or query). When no proxy is live
(never started, stopped, or a stale file) it says so and shows no figures.

``r`` (back to the primary now), ``p`` (pin a route) and ``u`` (unpin) steer the proxy after a
confirmation, through its control file (``store.proxy.control.ask``, in a thread: the proxy
answers within a second), audited like any operator action; the answer shows on the panel's
feedback line and as a notice. Dimmed, and saying why, when read-only or nothing would change.
The route chooser is a guarded modal: it takes no key of the burst that opened it. The status
bar's summary and ``x`` are the dashboard's :class:`screens.status_watch.ProxyWatch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, OptionList, Sparkline, Static
from textual.widgets.option_list import Option

from screens.confirm import ConfirmScreen
from screens.explain import Refusals
from screens.status_watch import PROXY_POLL_SECONDS
from store.errors import HermesAdminError
from store.paths import Home
from store.redaction.fingerprints import redact
from tui.services import proxy_feed as feed
from tui.services.host import host
from tui.text.paths import tilde
from tui.text.sentences import READ_ONLY
from tui.text.shown import shown
from tui.widgets.flash import FlashLine
from tui.widgets.footer import KeysFooter
from tui.widgets.guarded import GuardedModal
from tui.widgets.plain_table import PlainTable

POLL_SECONDS = PROXY_POLL_SECONDS   # the proxy rewrites its status file every second


class PoolSparks(Horizontal):
    """One line: a label with the 10-minute total, then a sparkline of the 10 s buckets."""

    DEFAULT_CSS = """
    PoolSparks { height: 1; }
    PoolSparks > Static { width: 33; height: 1; }
    PoolSparks > Sparkline { width: 1fr; height: 1; }
    """

    def __init__(self, pool: str, kind: str, data: list[int]) -> None:
        super().__init__(classes=f"-{kind}")
        self.pool, self.kind = pool, kind
        self.label = Static(self._label(data), classes="spark-label")
        self.spark = Sparkline(data, summary_function=max)

    def _label(self, data: list[int]) -> Text:
        # The figure in words beside the bars: the bars' colour is never the only signal.
        name = self.pool if self.kind == "requests" else ""
        word = "requests" if self.kind == "requests" else "429s"
        return Text(f"{name:<14.14} {word:>8} {sum(data):>4}/10m", no_wrap=True, overflow="ellipsis")

    def compose(self) -> ComposeResult:
        yield self.label
        yield self.spark

    def set_data(self, data: list[int]) -> None:
        self.label.update(self._label(data))
        self.spark.data = data


@dataclass
class Steered(Message):
    """The proxy's answer to ``r``/``p``/``u`` (or why none came), from the worker thread."""

    command: str
    ok: bool
    text: str


class RouteScreen(GuardedModal["str | None"]):
    """``p``: choose the route to pin; dismisses with its name, or None when cancelled. The pin
    steers a live proxy: it takes no key of the burst that opened it (GuardedModal)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="proxy_pin.cancel")]

    def __init__(self, choices: list[tuple[str, str]], port: Any) -> None:
        super().__init__(id="proxy-pin", classes="modal")
        self.choices = choices
        self.port = port

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="proxy-pin-box"):
            yield Static(Text(f"Pin the proxy on :{shown(str(self.port))} to a route"), classes="modal-title")
            yield Static(Text("It stays there: no fallback, no restore check, until u (unpin). ▶ active."),
                         classes="modal-hint")
            yield OptionList(*(Option(Text(shown(line)), id=name) for name, line in self.choices),
                             id="proxy-pin-options", compact=True)
            yield Static("Enter: choose   ·   Esc: cancel", classes="modal-keys")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


STEER_ACTIONS = ("restore", "pin", "unpin")


class ProxyScreen(Screen[None]):
    """The proxy panel; Escape, q or x closes it. Focus starts on the credentials table."""

    DEFAULT_CSS = """
    ProxyScreen > .proxy-line { height: auto; padding: 0 1; }
    ProxyScreen > #proxy-header { text-style: bold; }
    ProxyScreen > #proxy-breakers { color: $warning; }
    ProxyScreen > #proxy-feedback { color: $accent; }
    ProxyScreen > #proxy-none { height: auto; padding: 1 1; }
    ProxyScreen > #proxy-creds { height: auto; max-height: 9; }
    ProxyScreen > #proxy-sparks { height: auto; max-height: 8; min-height: 2; padding: 0 1; }
    ProxyScreen > #proxy-requests { height: 1fr; min-height: 3; }
    ProxyScreen .-rate_limited > Sparkline > .sparkline--max-color { color: $error; }
    """

    BINDINGS = [
        Binding("escape", "close", "Back", id="proxy.close"),
        Binding("q", "close", "Back", show=False, id="proxy.close_q"),
        Binding("x", "close", "Back", show=False, id="proxy.close_x"),
        Binding("r", "restore", "Restore primary", id="proxy.restore"),
        Binding("p", "pin", "Pin route", id="proxy.pin"),
        Binding("u", "unpin", "Unpin", id="proxy.unpin"),
    ]

    def __init__(self, home: Home) -> None:
        super().__init__(id="proxy")
        self.home = home
        self.status: dict[str, Any] | None = None
        self._pools: list[str] = []
        self.asking: str | None = None       # the command waiting for the proxy's answer
        self.feedback = ""                   # the last answer, in words
        self.refusals = Refusals(self, self.disabled_reason)
        # Imported here: the proxy's control module brings its chain and probe (urllib),
        # which the console's first paint has no use for.
        from store.proxy import control

        self.answer_wait = control.ANSWER_WAIT   # the bound on the proxy's answer (a test shortens it)

    def compose(self) -> ComposeResult:
        yield Static(id="proxy-header", classes="proxy-line")
        yield Static(id="proxy-chain", classes="proxy-line")
        yield Static(id="proxy-routes", classes="proxy-line")
        yield Static(id="proxy-breakers", classes="proxy-line")
        yield Static(id="proxy-feedback", classes="proxy-line")
        yield Static(id="proxy-none")
        yield PlainTable(id="proxy-creds", cursor_type="row", zebra_stripes=True)
        yield VerticalScroll(id="proxy-sparks")
        yield PlainTable(id="proxy-requests", cursor_type="row", zebra_stripes=True)
        yield FlashLine(id="flash")     # messages on one line below the tables, never over them
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#proxy-creds", DataTable)
        for c in feed.CREDENTIAL_COLUMNS:
            table.add_column(c, key=c)
        log = self.query_one("#proxy-requests", DataTable)
        for c in feed.REQUEST_COLUMNS:
            log.add_column(c, key=c)
        self.poll()
        self.set_interval(POLL_SECONDS, self.poll, name="proxy-poll")
        table.focus()

    def poll(self) -> None:
        """Read the status file and show it (or that no proxy runs here)."""
        self.show(feed.live_status(self.home))

    def show(self, st: dict[str, Any] | None) -> None:
        self.status = st
        live = st is not None
        for wid in ("#proxy-header", "#proxy-chain", "#proxy-routes", "#proxy-creds", "#proxy-sparks",
                    "#proxy-requests"):
            self.query_one(wid).display = live
        none = self.query_one("#proxy-none", Static)
        none.display = not live
        breakers = feed.breaker_lines(st) if st is not None else []
        self.query_one("#proxy-breakers").display = bool(breakers)
        self.query_one("#proxy-breakers", Static).update(Text("\n".join(shown(b) for b in breakers)))
        self.query_one("#proxy-feedback").display = bool(self.feedback)
        self.query_one("#proxy-feedback", Static).update(Text(shown(self.feedback)))
        self.refresh_bindings()
        if st is None:
            root = tilde(self.home.root)
            none.update(Text(f"No proxy is running on {root}.\n"
                             f"Start one with: hermes-admin --home {root} proxy\n"
                             "This panel fills in by itself when it starts. Esc: back.", no_wrap=False))
            return
        self.query_one("#proxy-header", Static).update(Text(shown(feed.header_line(st))))
        self.query_one("#proxy-chain", Static).update(Text(shown(feed.chain_line(st)), no_wrap=True,
                                                           overflow="ellipsis"))
        self.query_one("#proxy-routes", Static).update(Text(shown(feed.routes_line(st))))
        self._fill_table(feed.credential_rows(st))
        self._fill_sparks(feed.pool_series(st))
        self._fill_table(feed.request_rows(st), "#proxy-requests")

    def _fill_table(self, rows: list[tuple[str, ...]], wid: str = "#proxy-creds") -> None:
        table = self.query_one(wid, DataTable)
        cursor = table.cursor_row
        table.clear()
        for i, row in enumerate(rows):
            key = "/".join(row[:2]) if wid == "#proxy-creds" else str(i)
            table.add_row(*(Text(shown(c), no_wrap=True) for c in row), key=key)
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1), animate=False)

    def _fill_sparks(self, series: list[tuple[str, list[int], list[int]]]) -> None:
        box = self.query_one("#proxy-sparks", VerticalScroll)
        names = [name for name, _r, _l in series]
        if names != self._pools:
            box.remove_children()
            box.mount_all([PoolSparks(name, kind, data) for name, requests, limited in series
                           for kind, data in (("requests", requests), ("rate_limited", limited))])
            self._pools = names
            return
        by_key = {(s.pool, s.kind): s for s in box.query(PoolSparks)}
        for name, requests, limited in series:
            for kind, data in (("requests", requests), ("rate_limited", limited)):
                spark = by_key.get((name, kind))
                if spark is not None:
                    spark.set_data(data)

    def action_close(self) -> None:
        self.dismiss()

    # ------------------------------------------------------------ steering
    def disabled_reason(self, action: str, parameters: tuple[object, ...] = ()) -> str | None:
        if action not in STEER_ACTIONS:
            return None
        if host(self).read_only:
            return READ_ONLY
        st = self.status
        if st is None:
            return "no proxy is running on this home"
        if self.asking is not None:
            return f"waiting for the proxy's answer to {self.asking}"
        if action == "restore" and feed.on_primary(st) and feed.pinned(st) is None:
            return f"the proxy is on its primary {feed.text(st.get('primary'))} already"
        if action == "unpin" and feed.pinned(st) is None:
            return "the proxy is not pinned"
        if action == "pin" and not feed.route_choices(st):
            return "the proxy's status names no route"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.refusals.availability(action, parameters) if action in STEER_ACTIONS else True

    def on_key(self, event: events.Key) -> None:
        self.refusals.explain_key(event)

    def _port(self) -> Any:
        return (self.status or {}).get("port")

    def action_restore(self) -> None:
        if self.refusals.refuse("restore") or self.status is None:
            return
        st = self.status
        lines = [f"Send the proxy on :{self._port()} back to its primary {feed.text(st.get('primary'))} now?",
                 f"It is on {feed.text(st.get('active'))}"
                 + (f", pinned to {feed.pinned(st)} (the pin is lifted)." if feed.pinned(st) else "."),
                 "The next request goes to the primary; should it fail there, the chain falls back again."]
        self._confirm("Restore the primary", lines, "restore", None)

    def action_pin(self) -> None:
        if self.refusals.refuse("pin") or self.status is None:
            return
        st = self.status

        def chosen(route: str | None) -> None:
            if route is None:
                return
            lines = [f"Pin the proxy on :{self._port()} to {route}?",
                     f"It is on {feed.text(st.get('active'))}. Pinned, it neither falls back nor restores "
                     "until u (unpin); requests fail there rather than move."]
            self._confirm(f"Pin {route}", lines, "pin", route)

        host(self).push_screen(RouteScreen(feed.route_choices(st), self._port()), chosen)

    def action_unpin(self) -> None:
        if self.refusals.refuse("unpin") or self.status is None:
            return
        lines = [f"Unpin the proxy on :{self._port()} from {feed.pinned(self.status)}?",
                 "It follows its chain again: falls back on failures, and the restore check resumes."]
        self._confirm("Unpin", lines, "unpin", None)

    def _confirm(self, title: str, lines: list[str], command: str, route: str | None) -> None:
        port = self._port()

        def answered(yes: bool | None) -> None:
            if yes and isinstance(port, int):
                self.ask(port, command, route)

        host(self).push_screen(ConfirmScreen(title, lines), answered)

    def ask(self, port: int, command: str, route: str | None) -> None:
        """Send *command* to the proxy on *port* in a thread; :class:`Steered` brings the answer."""
        self.asking = command + (f" {route}" if route else "")
        self.feedback = f"asking the proxy on :{port}: {self.asking} …"
        self.show(self.status)
        home, wait = self.home, self.answer_wait

        def work() -> None:
            from store.proxy import control

            try:
                a = control.ask(home, port, command, route, "console", wait=wait)
                self.post_message(Steered(command, a.ok, f"proxy :{port}: {a.message}"))
            except HermesAdminError as exc:
                self.post_message(Steered(command, False, f"proxy :{port}: {exc}"))
            except Exception as exc:  # anything else: said, never a crash of the console
                self.post_message(Steered(command, False, f"proxy :{port}: {type(exc).__name__}: {redact(str(exc))}"))

        self.run_worker(work, name=f"proxy-{command}", group="proxy-steer", thread=True, exit_on_error=False)

    def on_steered(self, message: Steered) -> None:
        self.asking = None
        self.feedback = ("✓ " if message.ok else "✗ ") + message.text
        host(self).notify(shown(message.text), severity="information" if message.ok else "error",
                          timeout=6, markup=False)
        self.poll()
