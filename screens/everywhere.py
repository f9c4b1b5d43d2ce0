"""Bench or reset the key of a row in every profile that holds it (store.profiles.everywhere).

Runs :func:`store.profiles.everywhere.act_everywhere` on a thread worker: each profile is
changed in its own transaction under its own lock, and the toast names the profiles
changed and those NOT changed (with why). The profiles dashboard owns one
:class:`Everywhere` and binds ``R`` and ``C`` (:data:`EVERYWHERE_BINDINGS`) to it.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from textual.binding import Binding

from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from screens.explain import Refusals
from store.errors import HermesAdminError
from store.ops import actions
from store.pools.view import CredentialView
from store.profiles.everywhere import AllProfilesResult, act_everywhere
from store.profiles.findings import SHARED_KEY
from store.profiles.live import RootState
from tui.services.host import HasApp, RootHost, root_host
from tui.text.sentences import READ_ONLY
from tui.widgets import CredentialTable

EVERYWHERE = frozenset({"reset_everywhere", "bench_everywhere"})

EVERYWHERE_BINDINGS = [
    Binding("R", "reset_everywhere", "Reset everywhere", show=False,
            id="profiles.reset_everywhere",
            tooltip="Reset everywhere — this key, in every profile that holds it"),
    Binding("C", "bench_everywhere", "Bench everywhere", show=False,
            id="profiles.bench_everywhere",
            tooltip="Bench everywhere — cool this key down in every profile that holds it"),
]


def result_text(verb: str, result: AllProfilesResult) -> tuple[str, str]:
    """(toast text, severity): which profiles changed and which did not, and why."""
    changed = result.changed
    parts = [f"{verb} {result.fingerprint} everywhere: changed {', '.join(changed) or 'none'}"]
    untouched = [r.profile for r in result.results if r.error is None and not r.outcomes]
    if untouched:
        parts.append(f"nothing to change in {', '.join(untouched)}")
    for r in result.failed:
        parts.append(f"NOT changed {r.profile}: {r.error}")
    for name, why in result.unreadable:
        parts.append(f"not searched {name}: {why}")
    bad = result.failed or result.unreadable
    return "; ".join(parts), "error" if bad else "information"


class EverywhereBoard(HasApp, Protocol):
    """What acting everywhere needs of the profiles dashboard."""

    read_only: bool
    root_state: RootState | None     # the root on screen
    refusals: Refusals

    @property
    def table(self) -> CredentialTable: ...

    def run_worker(self, work: Callable[[], None], *, name: str, group: str, thread: bool,
                   exit_on_error: bool) -> object: ...


class Everywhere:
    """`R` / `C` on a credential row: reset / bench its key in every profile holding it."""

    def __init__(self, board: EverywhereBoard) -> None:
        self.board = board
        self.results: list[AllProfilesResult] = []   # every run that finished, newest last

    @property
    def host(self) -> RootHost:
        return root_host(self.board)

    def reason(self) -> str | None:
        """Why acting everywhere cannot run now (None: it can)."""
        if self.board.read_only:
            return READ_ONLY
        if self.board.table.cursor_credential is None:
            return "move the cursor to a credential row first"
        return None

    def holders(self, pool: str, rid: str) -> list[str]:
        """The profiles that hold the key of the acting profile's row (*pool*, *rid*)."""
        acting = self.host.acting
        rs = self.board.root_state
        for f in rs.findings if rs is not None else []:
            if f.kind == SHARED_KEY and (acting, pool, rid) in f.rows:
                return list(f.profiles)
        return [acting]

    def reset(self) -> None:
        if self.board.refusals.refuse("reset_everywhere"):
            return
        cv = self.board.table.cursor_credential
        holders = self.holders(cv.pool, cv.id)
        lines = [f"Reset key {cv.fingerprint or '—'} ({cv.pool} {cv.label or cv.id})",
                 f"in every profile that holds it: {', '.join(holders)}"]

        def answered(yes: bool | None) -> None:
            if yes:
                self._run("reset", cv, lambda doc, pool, rid, now: actions.reset(doc, pool, rid, now))

        self.host.push_screen(ConfirmScreen("Reset in every profile?", lines,
                                            ["Each profile is changed under its own lock."]), answered)

    def bench(self) -> None:
        if self.board.refusals.refuse("bench_everywhere"):
            return
        cv = self.board.table.cursor_credential
        holders = self.holders(cv.pool, cv.id)
        lines = [f"Bench key {cv.fingerprint or '—'} ({cv.pool} {cv.label or cv.id})",
                 f"in every profile that holds it: {', '.join(holders)}"]

        def chosen(value: tuple[float, str | None] | None) -> None:
            if value is None:
                return
            until, reason = value
            self._run("bench", cv, lambda doc, pool, rid, now:
                      actions.cooldown(doc, pool, rid, until, now, reason))

        self.host.push_screen(CooldownScreen(self.host.clock, lines,
                                             ["Each profile is changed under its own lock."]), chosen)

    def _run(self, verb: str, cv: CredentialView, change: Any) -> None:
        app = self.host
        origin = app.root.profile(app.acting)
        root, clock, timeout = app.root, app.clock, app.lock_timeout

        def work() -> None:
            try:
                result = act_everywhere(root, origin, cv.pool, cv.id, change, action=verb,
                                        now=clock(), lock_timeout=timeout, via=app.via, remote=app.remote)
            except HermesAdminError as exc:
                app.call_from_thread(app.notify, f"{verb} everywhere failed: {exc}. Nothing was written.",
                                     severity="error", timeout=10, markup=False)
                return
            app.call_from_thread(self._done, verb, result)

        self.board.run_worker(work, name=f"{verb}-everywhere", group="everywhere", thread=True,
                              exit_on_error=False)

    def _done(self, verb: str, result: AllProfilesResult) -> None:
        self.results.append(result)
        text, severity = result_text(verb, result)
        app = self.host
        app.notify(text, severity=severity, timeout=12, markup=False)
        # No race with the watcher: watch_enabled is fixed when the app is made, and with it
        # off no watcher thread ever starts (on_mount), so the loop is the loader's one owner.
        if not app.watch_enabled:
            app.reload()
