"""Bench or reset the key of a row in every profile that holds it (store.profiles.everywhere).

Runs :func:`store.profiles.everywhere.act_everywhere` on a thread worker: each profile is
changed in its own transaction under its own lock, and the toast names the profiles
changed and those NOT changed (with why). Mixed into the profiles dashboard.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding

from screens.confirm import ConfirmScreen
from screens.cooldown import CooldownScreen
from store.errors import HermesAdminError
from store.ops import actions
from store.profiles.everywhere import AllProfilesResult, act_everywhere
from store.profiles.findings import SHARED_KEY
from tui.text.sentences import READ_ONLY

EVERYWHERE = frozenset({"reset_everywhere", "bench_everywhere"})


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


class EverywhereActions:
    """`R` / `C` on a credential row: reset / bench its key in every profile holding it."""

    EVERYWHERE_BINDINGS = [
        Binding("R", "reset_everywhere", "Reset everywhere", show=False,
                id="profiles.reset_everywhere",
                tooltip="Reset everywhere — this key, in every profile that holds it"),
        Binding("C", "bench_everywhere", "Bench everywhere", show=False,
                id="profiles.bench_everywhere",
                tooltip="Bench everywhere — cool this key down in every profile that holds it"),
    ]
    everywhere_results: list[AllProfilesResult]

    def everywhere_reason(self, action: str) -> str | None:
        self_: Any = self
        if self_.read_only:
            return READ_ONLY
        if self_.table.cursor_credential is None:
            return "move the cursor to a credential row first"
        return None

    def _holders(self, pool: str, rid: str) -> list[str]:
        self_: Any = self
        acting = self_.app.acting
        for f in getattr(self_.root_state, "findings", []):
            if f.kind == SHARED_KEY and (acting, pool, rid) in f.rows:
                return list(f.profiles)
        return [acting]

    def action_reset_everywhere(self) -> None:
        self_: Any = self
        if self_.refuse("reset_everywhere"):
            return
        cv = self_.table.cursor_credential
        holders = self._holders(cv.pool, cv.id)
        lines = [f"Reset key {cv.fingerprint or '—'} ({cv.pool} {cv.label or cv.id})",
                 f"in every profile that holds it: {', '.join(holders)}"]

        def answered(yes: bool | None) -> None:
            if yes:
                self._run_everywhere("reset", cv, lambda doc, pool, rid, now: actions.reset(doc, pool, rid, now))

        self_.app.push_screen(ConfirmScreen("Reset in every profile?", lines,
                                            ["Each profile is changed under its own lock."]), answered)

    def action_bench_everywhere(self) -> None:
        self_: Any = self
        if self_.refuse("bench_everywhere"):
            return
        cv = self_.table.cursor_credential
        holders = self._holders(cv.pool, cv.id)
        lines = [f"Bench key {cv.fingerprint or '—'} ({cv.pool} {cv.label or cv.id})",
                 f"in every profile that holds it: {', '.join(holders)}"]

        def chosen(value: tuple[float, str | None] | None) -> None:
            if value is None:
                return
            until, reason = value
            self._run_everywhere("bench", cv, lambda doc, pool, rid, now:
                                 actions.cooldown(doc, pool, rid, until, now, reason))

        self_.app.push_screen(CooldownScreen(self_.app.clock, lines,
                                             ["Each profile is changed under its own lock."]), chosen)

    def _run_everywhere(self, verb: str, cv: Any, change: Any) -> None:
        self_: Any = self
        app = self_.app
        origin = app.root.profile(app.acting)
        root, clock, timeout = app.root, app.clock, app.lock_timeout

        def work() -> None:
            try:
                result = act_everywhere(root, origin, cv.pool, cv.id, change, action=verb,
                                        now=clock(), lock_timeout=timeout, via="tui")
            except HermesAdminError as exc:
                app.call_from_thread(app.notify, f"{verb} everywhere failed: {exc}. Nothing was written.",
                                     severity="error", timeout=10, markup=False)
                return
            app.call_from_thread(self._everywhere_done, verb, result)

        self_.run_worker(work, name=f"{verb}-everywhere", group="everywhere", thread=True,
                         exit_on_error=False)

    def _everywhere_done(self, verb: str, result: AllProfilesResult) -> None:
        self_: Any = self
        if not hasattr(self, "everywhere_results"):
            self.everywhere_results = []
        self.everywhere_results.append(result)
        text, severity = result_text(verb, result)
        self_.app.notify(text, severity=severity, timeout=12, markup=False)
        if not self_.app.watch_enabled:
            self_.app.reload()
