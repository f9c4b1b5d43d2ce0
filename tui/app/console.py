"""The hermes-admin App: wires the watcher worker, the screens and the app-wide keys.

Reading happens in one thread worker (watch the home directory, read, build the
views, diff the events) that posts :class:`StoreLoaded`; the event loop only
applies the newest state and publishes it on ``state_signal``. Writing happens only
through :class:`tui.services.writer.Writer` (thread workers that post WriteWaiting / WriteDone back
here); a change in the pending writes is published on ``writes_signal``. Screens see the
app as a :class:`tui.services.host.Host` and subscribe to both signals on mount. The views
it opens, and how `q` leaves them, are its :class:`tui.app.registry.Views`.
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

from rich.text import Text
from textual import events, work
from textual.app import App
from textual.binding import Binding, Keymap
from textual.signal import Signal
from textual.worker import Worker

from screens import all_screens
from screens.dashboard import DashboardScreen
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.paths import Home
from store.pools import events as ev
from store.redaction import crash, redact
from store.watch.home import HomeLoader, HomeState, follow
from store.watch.loop import StopFlag
from tui.app import session_end
from tui.app.key_order import KeyOrder, KeySettled
from tui.app.keymap import apply_keymap, keymap_path, long_keymap
from tui.app.registry import Views
from tui.app.session_end import SessionEnd
from tui.services.clock import Clock, system_clock
from tui.services.fleet_feed import FleetConfig
from tui.services.liveness import Liveness
from tui.services.messages import StoreLoaded, WatchFailed
from tui.services.write_feedback import DISMISS_KEY, DONE_TIMEOUT, MESSAGES_KEY, Feedback
from tui.services.writer import WriteDone, Writer, WriteWaiting
from tui.text import shown
from tui.text.paths import tilde
from tui.widgets import CredentialTable
from tui.widgets.flash import FlashLine, MessageLog

if TYPE_CHECKING:
    from tui.app.command_runner import CommandRunner


def _console_commands() -> type:
    """The command palette's provider, imported when the palette first opens."""
    from screens.commands import ConsoleCommands

    return ConsoleCommands


class HermesAdminApp(App):
    """The operator console. ``read_only`` disables every writing action (issue 4)."""

    CSS_PATH = "app.tcss"
    TITLE = "hermes-admin"
    COMMANDS: ClassVar = App.COMMANDS | {_console_commands}
    BINDINGS = [
        # q quits from the dashboard only; on any other screen or modal it backs out (Esc).
        Binding("q", "back_or_quit", "Quit", id="app.quit",
                tooltip="Quit — leave hermes-admin (elsewhere: back, like Esc)"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit_ctrl_q"),
        # ^Z as in any terminal program (raw mode makes it a key; a no-op in the browser)
        Binding("ctrl+z", "suspend_process", "Suspend", show=False, id="app.suspend",
                tooltip="Suspend — back to the shell; `fg` brings the console back"),
        Binding("question_mark", "help", "Help", key_display="?", id="app.help",
                tooltip="Help: keys — every key binding"),
        Binding(DISMISS_KEY, "dismiss_notifications", "Dismiss messages", show=False,
                id="app.dismiss_notifications",
                tooltip="Dismiss messages — clear the flash line, failed writes included"),
        Binding(MESSAGES_KEY, "messages", "Messages", show=False, id="app.messages",
                tooltip="Messages — the last 100, each with all its lines"),
        Binding("ctrl+p", "command_palette", "Commands", show=False, priority=True,
                id="app.command_palette"),
        Binding("colon", "command_line", "Command", key_display=":", show=False, id="app.command_line",
                tooltip="Command line — :reset POOL [ROW], :sort status, :undo, :profile NAME…"),
        Binding("F", "fleet", "Fleet", show=False, id="app.fleet",
                tooltip="Fleet view — each shared key's state across hosts (needs --fleet URL)"),
    ]

    def __init__(
        self, home: Home, *, read_only: bool = False, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        clock: Clock = system_clock, watch: bool = True, tick: bool = True,
        keymap_file: Path | None = None, fleet: FleetConfig | None = None,
        freeze_heap: bool = False, via: str = "tui", remote: str | None = None,
    ) -> None:
        super().__init__()
        # How the operator reaches this console: every write's audit line and history say it
        # ("web" and the browser's address for a console served by `hermes-admin web`).
        self.via = via
        self.remote = remote
        # The console's own run: once the first home is on screen, its long-lived objects
        # leave the cyclic GC's walk (tui.services.heap.settle_heap). Off in tests, which
        # run many apps in one process.
        self.freeze_heap = freeze_heap
        self._keymap_file = keymap_file
        self.keymap: dict[str, str] = {}    # binding id -> keys, as set (`?` help applies it)
        self.home = home
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.watch_enabled = watch
        self.state: HomeState | None = None
        self.events: deque[ev.Event] = deque(maxlen=1000)
        self.loader = HomeLoader(home, clock)
        self._stop = StopFlag()  # wakes the watcher's poll at once on quit
        self._tick = tick
        self._store_was_bad = False
        self._secrets = redact.HomeSecrets()  # the home's secrets, walked again only where changed
        self.state_signal: Signal[HomeState] = Signal(self, "state")
        self.writes_signal: Signal[None] = Signal(self, "writes")
        self.writer = Writer(self)
        self.liveness = Liveness()               # the status bar's LIVE, or why not
        self.messages = MessageLog(self, clock)   # the flash line's messages, the last 100
        # SIGHUP/SIGTERM/SIGINT and a hung-up terminal end the app through its normal exit.
        self.session_end = SessionEnd(lambda code: self.exit(return_code=code))
        self.views = Views(self, fleet=fleet, tick=tick)
        self._commands: CommandRunner | None = None                # `:` and its history, made when first opened
        self.key_order = KeyOrder(self, super().on_event)   # each key to the widget it was typed for

    # ------------------------------------------------------------ lifecycle
    def get_default_screen(self) -> DashboardScreen:
        return DashboardScreen(self.clock, read_only=self.read_only, tick=self._tick)

    def on_mount(self) -> None:
        self.session_end.install()
        if self._keymap_file is not None:
            # The screens are imported (to know every binding id) only when a keymap file has entries.
            apply_keymap(self, self._keymap_file, lambda: [type(self), CredentialTable, *all_screens()])
        self._message_keys()
        if self.read_only:
            self.sub_title = "READ-ONLY"
        if self.watch_enabled:
            self._watch()
        else:
            self.reload()
        if self.views.fleet is not None:
            self.action_fleet()
        self.app_resume_signal.subscribe(self, self._repaint)

    def _repaint(self, _app: App) -> None:
        """Back from ^Z (``fg``): all drawn again (Textual's resume draws nothing by itself)."""
        self.refresh(layout=True, repaint=True)

    def on_unmount(self) -> None:
        self._stop.set()
        self.session_end.uninstall()

    def on_app_blur(self, event: events.AppBlur) -> None:
        # Served to a browser, the console keeps its focus: Textual's web driver posts a blur
        # at start, and a blurred app drops its focused widget, so `Down` moved nothing while
        # `r` acted on a row the operator never chose (tui/web/server.py). A terminal's blur
        # is honoured as before.
        if self.via == "web":
            event.prevent_default()

    async def action_quit(self) -> None:
        self._stop.set()
        await super().action_quit()

    def action_dismiss_notifications(self) -> None:
        self.messages.dismiss()
        self.clear_notifications()

    def action_messages(self) -> None:
        self.views.messages(self.messages)

    def set_keymap(self, keymap: Keymap) -> None:
        """Textual's, keeping the keymap where `?` help reads it (in Textual's key names)."""
        self.keymap = long_keymap(keymap)
        super().set_keymap(keymap)
        self._message_keys()

    def update_keymap(self, keymap: Keymap) -> None:
        self.keymap = {**self.keymap, **long_keymap(keymap)}
        super().update_keymap(keymap)
        self._message_keys()

    def key_of(self, binding_id: str, default: str) -> str:
        """The key *binding_id* answers to now (the operator's keymap applied), as shown."""
        keys = self.keymap.get(binding_id, default).split(",")[0]
        return self.get_key_display(Binding(keys, ""))

    def _message_keys(self) -> None:
        # The flash line names the keys that act on it: the operator's, if remapped.
        self.messages.keys = {"messages": self.key_of("app.messages", MESSAGES_KEY),
                              "dismiss": self.key_of("app.dismiss_notifications", DISMISS_KEY)}

    # ------------------------------------------------------------ views (tui.app.registry)
    @property
    def dashboard(self) -> DashboardScreen:
        return self.views.dashboard

    async def action_back_or_quit(self) -> None:
        await self.views.back_or_quit()

    async def on_event(self, event: events.Event) -> None:
        # Keys from the terminal go one at a time, each once the previous one settled
        # (tui.app.key_order); everything else, and every forwarded key, as Textual does.
        if isinstance(event, events.Key) and not event.is_forwarded and self.key_order.enabled:
            await self.key_order.arrive(event)
            return
        await super().on_event(event)

    def on_key_settled(self, message: KeySettled) -> None:
        self.key_order.settled(message)

    async def on_key(self, event: events.Key) -> None:
        # A modal's binding chain leaves out the app's keys, so its unhandled `q` lands here
        # (a focused text field has already taken it as a letter): back out, as Esc does.
        if event.is_forwarded and self.screen.is_modal and any(
                b.action == "back_or_quit" for b in self._bindings.key_to_bindings.get(event.key, ())):
            event.stop()
            event.prevent_default()      # or the app's own binding would run next, on the dashboard
            await self.action_back_or_quit()

    @property
    def commands(self) -> CommandRunner:
        """The `:` command line's runner (and its history), its modules imported on first use."""
        if self._commands is None:
            from tui.app.command_runner import CommandRunner

            self._commands = CommandRunner(self)
        return self._commands

    def action_command_line(self) -> None:
        self.commands.open()

    def action_help(self) -> None:
        self.views.help(self.keymap)

    def action_show_dashboard(self) -> None:
        self.views.show_dashboard()

    def action_show_config(self, tab: str = "strategies") -> None:
        self.views.show_config(tab)

    def action_fleet(self) -> None:
        self.views.show_fleet(self.home)

    def dashboard_action(self, action: str) -> None:
        self.views.dashboard_action(action)

    def reload(self) -> HomeState:
        """Read the home now, on the event loop (tests, and the watcher-off mode)."""
        state = self.loader.load(None)
        self._accept(state, list(state.events))
        return state

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def _watch(self) -> None:
        # One thread owns the loader: reads are serial, so generations only grow.
        while not self._stop.is_set():
            try:
                for state in follow(self.home, self._stop, loader=self.loader):
                    self.post_message(StoreLoaded(state))
                return
            except Exception as exc:  # the one place watcher failures surface
                self.post_message(WatchFailed(f"{type(exc).__name__}: {exc}"))
                self._stop.wait(1.0)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The watcher's worker ending while the app runs leaves nothing following the files.
        if event.worker.group == "watch" and event.worker.is_finished and not self._stop.is_set():
            self.liveness.stopped(str(event.worker.error or "ended"), self.clock())
            self.notify("the watcher stopped: the screen no longer follows the files "
                        "(restart the console)", severity="error", timeout=10)
            self.writes_signal.publish(None)            # the chrome redraws: NOT LIVE

    def on_watch_failed(self, message: WatchFailed) -> None:
        self.liveness.failed(message.error, self.clock())
        self.writes_signal.publish(None)                # the chrome redraws: NOT LIVE
        text = f"live reload failed ({message.error}); retrying"
        self.notify(text, severity="error", timeout=5)
        self.log_events([ev.notice("watcher", text, self.clock())])

    def on_store_loaded(self, message: StoreLoaded) -> None:
        self._accept(message.state, message.events)

    def _accept(self, state: HomeState, events: list[ev.Event]) -> None:
        if self.state is not None and state.generation <= self.state.generation:
            return  # an older read overtaken by a newer one: the last generation wins
        bad = state.store_error is not None
        if bad != self._store_was_bad:
            events = list(events) + [ev.notice(
                "auth.json",
                f"unreadable: {state.store_error.reason}" if bad else "readable again",
                state.read_at)]
            self._store_was_bad = bad
        self.state = state
        self.liveness.loaded()
        # Every screen shows store text through tui.text.shown: teach it this generation's secrets.
        shown.use(shown.secrets_of(state, self._secrets))
        self.log_events(events)
        self.state_signal.publish(state)

    # ------------------------------------------------------------ crash report
    def _fatal_error(self) -> None:
        # Textual has no public hook for its crash report: App._handle_exception calls this
        # method, whose own version prints a rich Traceback with show_locals=True (every local
        # of every frame, a row's access_token included) straight to the terminal. Kept: the
        # bell, and panic(), Textual's public way to print on exit. Replaced: what is printed,
        # the traceback through the redaction boundary with no locals (store.redaction.crash).
        # tests/project/test_private_api.py pins the method this relies on (textual <9).
        self.bell()
        error = sys.exc_info()[1]
        self.panic(crash_report(error, self.crash_redactor()))

    def crash_redactor(self) -> redact.Redactor:
        """What a crash report is redacted with: every secret on screen so far, and the
        home's as its files hold them now (the crash may come before the first read)."""
        try:
            return redact.merged([shown.redactor(), redact.for_home(self.home)])
        except Exception:  # a crash report must come out; the screen's secrets still apply
            return shown.redactor()

    def notify(self, message: str, *, title: str = "", severity: Any = "information",  # type: ignore[override]
               timeout: float | None = None, markup: bool = True) -> None:
        """Every message goes to the flash line and the message log, through the console's
        text funnel (redacted, controls escaped, line breaks kept); a toast only where no
        flash line is on screen (a view of its own, such as the fleet view, or before the
        dashboard is up)."""
        text, head = shown.shown_lines(tilde(message)), shown.shown(title)
        self.messages.add(title=head, lines=text.split("\n"), severity=str(severity),
                          timeout=timeout if timeout is not None else self.NOTIFICATION_TIMEOUT)
        if not self.flash_on_screen():
            super().notify(text, title=head, severity=severity, timeout=timeout, markup=False)

    def show_feedback(self, feedback: Feedback) -> None:
        """A write's result (tui.services.write_feedback): one line on the flash line, the
        details in the log; a failure stays until dismissed."""
        text, head = shown.shown_lines(tilde(feedback.message)), shown.shown(feedback.title)
        self.messages.add(title=head, lines=text.split("\n"), line=shown.shown(tilde(feedback.flash)),
                          severity=feedback.severity, done=feedback.severity == "information",
                          timeout=None if feedback.sticky else DONE_TIMEOUT)
        if not self.flash_on_screen():
            super().notify(text, title=head, severity=feedback.severity,  # type: ignore[arg-type]
                           timeout=24 * 3600.0 if feedback.sticky else DONE_TIMEOUT, markup=False)

    def flash_on_screen(self) -> bool:
        """Whether a flash line is visible: on the current screen, or under the modals over it."""
        if not self.screen_stack:
            return True         # before the dashboard: its flash line shows the log's last on mount
        for screen in reversed(self.screen_stack):
            if screen.query(FlashLine) or (isinstance(screen, DashboardScreen) and not screen.is_mounted):
                return True     # a dashboard not composed yet (a keymap warning at start) will
            if not screen.is_modal:
                return False
        return False

    # ------------------------------------------------------------ writes
    def on_write_waiting(self, message: WriteWaiting) -> None:
        self.writer.waiting(message.request)

    def on_write_done(self, message: WriteDone) -> None:
        if message.result.ok and not self.watch_enabled:
            # No watcher to notice our own write: read it now, before callbacks look.
            self.reload()
        self.writer.finish(message.result)

    def writes_changed(self) -> None:
        """The writer's pending set changed: every screen that shows it redraws."""
        self.writes_signal.publish(None)

    def log_events(self, events: Iterable[ev.Event]) -> None:
        events = list(events)
        if not events:
            return
        self.events.extend(events)
        if self.screen_stack:
            self.dashboard.add_events(events)



def crash_report(error: BaseException | None, redactor: redact.Redactor) -> Text:
    """What the console prints when it dies: a sentence, then the redacted traceback."""
    head = "hermes-admin stopped on an internal error (keys are shown as fingerprints, no values of variables)"
    body = crash.report(error, redactor) if error is not None else "no traceback was available"
    return Text(f"{head}:\n{body}", no_wrap=False)


def run(home: Home, *, read_only: bool = False, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        fleet: FleetConfig | None = None) -> int:
    """Entry point for `hermes-admin` with no verb (``fleet``: open the fleet view too)."""
    app = HermesAdminApp(home, read_only=read_only, lock_timeout=lock_timeout, keymap_file=keymap_path(),
                         fleet=fleet, freeze_heap=True)
    try:
        app.run()
    finally:
        session_end.disarm()  # the ordinary exit worked: no forced one
    return int(app.return_code or 0)
