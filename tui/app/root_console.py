"""The console on a root of profiles: the app shell, fed by one root watcher.

Screens keep seeing one home through :class:`tui.services.host.Host`: ``home`` and ``state`` are
those of the *acting* profile, the profile of the row under the cursor (or the one the
view is narrowed to). Every action a screen starts therefore reads and writes that
profile's files, through the same writer and store transaction as a single home.
The whole root is published on ``root_signal`` as a :class:`store.profiles.live.RootState`.
"""

from __future__ import annotations

from dataclasses import replace

from textual import work
from textual.signal import Signal

from screens.profiles_view import ProfilesDashboard
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.paths import DEFAULT_PROFILE, Home
from store.pools import events as ev
from store.profiles.live import ROOT_WATCHED, RootChange, RootLoader, RootState
from store.profiles.root import Root, discover
from store.redaction import redact
from store.watch.home import HomeState
from tui.app.console import HermesAdminApp, session_end
from tui.app.keymap import keymap_path
from tui.services.root_feed import RootLoaded, follow_root_into
from tui.text import shown


class RootApp(HermesAdminApp):
    """HermesAdminApp over every profile of *root* (``context`` None: all of them)."""

    def __init__(self, root: Root, *, profile: str | None = None, **kwargs) -> None:
        super().__init__(Home(root.path), **kwargs)
        self.root = root
        self.root_loader = RootLoader(root, self.clock)
        self.root_state: RootState | None = None
        self.context: str | None = profile      # the switcher's choice; None = all profiles
        self.acting = profile or DEFAULT_PROFILE
        self.root_signal: Signal[RootState] = Signal(self, "root")
        self._secrets: dict[str, redact.HomeSecrets] = {}
        self._redactors: dict[str, tuple[HomeState, redact.Redactor]] = {}
        self._merged_from: tuple[redact.Redactor, ...] = ()
        self._merged = redact.Redactor()

    def get_default_screen(self) -> ProfilesDashboard:
        return ProfilesDashboard(self.clock, read_only=self.read_only, tick=self._tick)

    def reload(self):  # type: ignore[override]
        """Read the whole root now, on the event loop (tests, watcher-off mode)."""
        # Every profile re-read, not only the ones a watcher event would name.
        names = {p.name: set(ROOT_WATCHED) for p in discover(self.root)}
        state = self.root_loader.load(RootChange(names, rescan=True))
        self.accept_root(state)
        return self.state

    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def _watch(self) -> None:
        follow_root_into(self.root_loader, self._stop, self.post_message)

    def on_root_loaded(self, message: RootLoaded) -> None:
        self.accept_root(message.state)

    def accept_root(self, state: RootState) -> None:
        """Apply the newest root state; older reads overtaken by newer ones are dropped."""
        if self.root_state is not None and state.generation <= self.root_state.generation:
            return
        before = self.root_state.states if self.root_state is not None else {}
        self.root_state = state
        self.liveness.loaded()
        # A row of any profile may be on screen: the funnel knows every profile's secrets.
        # Each profile's redactor is the same object while its secrets are; the merged one
        # is rebuilt only when one of them changed.
        # A profile whose state is the same object as last time keeps its redactor.
        last, self._redactors = self._redactors, {}
        for name, s in state.states.items():
            hit = last.get(name)
            self._redactors[name] = hit if hit is not None and hit[0] is s else (
                s, shown.secrets_of(s, self._secrets.setdefault(name, redact.HomeSecrets())))
        parts = tuple(r for _, r in self._redactors.values())
        for gone in set(self._secrets) - set(state.states):
            del self._secrets[gone]
        if len(parts) != len(self._merged_from) or any(
                a is not b for a, b in zip(parts, self._merged_from, strict=True)):
            self._merged_from = parts
            self._merged = redact.merged(parts)
        shown.use(self._merged)
        now = state.read_at
        self.log_events([ev.notice(f"profile {n}", "appeared", now) for n in state.added
                         if self.root_state.generation > 1]
                        + [ev.notice(f"profile {n}", "disappeared", now) for n in state.removed]
                        # Each profile read again this time: its events, named by profile.
                        + [replace(e, pool=f"{name}/{e.pool}")
                           for name, s in state.states.items()
                           if before.get(name) is not s and name not in state.added
                           for e in s.events])
        self.use_profile(self.acting if state.profile(self.acting) else DEFAULT_PROFILE)
        self.root_signal.publish(state)

    def crash_redactor(self) -> redact.Redactor:
        """The console's, plus every profile's secrets as their files hold them now."""
        try:
            return redact.merged([super().crash_redactor(),
                                  *(redact.for_home(p.home) for p in discover(self.root))])
        except Exception:  # a crash report must come out; the screen's secrets still apply
            return shown.redactor()

    def use_profile(self, name: str) -> None:
        """Make *name* the acting profile: screens' ``home`` and ``state`` become its own."""
        rs = self.root_state
        inv = rs.profile(name) if rs is not None else None
        if inv is None:
            return
        state = rs.states.get(name)
        changed = name != self.acting or state is not self.state
        self.acting, self.home, self.state = name, inv.home, state
        if changed and state is not None:
            self.state_signal.publish(state)

    def set_context(self, name: str | None) -> None:
        """Narrow the console to profile *name* (None: every profile)."""
        self.context = name
        if name is not None:
            self.use_profile(name)
        self.sub_title = ("READ-ONLY · " if self.read_only else "") + f"profile: {name or 'all'}"
        if self.root_state is not None:
            self.root_signal.publish(self.root_state)


def run_root(root: Root, *, profile: str | None = None, read_only: bool = False,
             lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> int:
    """Entry point for `hermes-admin` on a root that has named profiles."""
    app = RootApp(root, profile=profile, read_only=read_only, lock_timeout=lock_timeout,
                  keymap_file=keymap_path(), freeze_heap=True)
    try:
        app.run()
    finally:
        session_end.disarm()  # the ordinary exit worked: no forced one
    return int(app.return_code or 0)
