"""Whether the console still follows its files: the status bar's ``● LIVE`` and what replaces it.

The app owns one :class:`Liveness` and tells it what its watcher does (a change read, a failure
it retries after, the worker ending while the app runs); the dashboards ask :meth:`Liveness.badge`
for the status bar's word. ``● LIVE`` is said only while the watcher follows the home *and* the
store on screen is the file as it is: a corrupt auth.json (the banner's) or a watcher that
stopped says so instead, with the time the last change was seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

LIVE = "● LIVE"
PAUSED = "⏸ PAUSED"


def hhmmss(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


@dataclass
class Liveness:
    """The watcher's health as the app last heard it."""

    following: bool = True      # False once the watcher failed (retrying) or ended
    ended: bool = False         # the watcher's worker ended while the app runs: no retry
    since: float | None = None  # when it failed or ended
    why: str = ""

    def failed(self, why: str, now: float) -> None:
        """The watcher hit an error; it retries after a pause."""
        if self.following:
            self.since = now
        self.following, self.why = False, why

    def stopped(self, why: str, now: float) -> None:
        """The watcher's worker ended (not on quit): nothing follows the files any more."""
        self.failed(why, now)
        self.ended = True

    def loaded(self) -> None:
        """A read reached the app: the watcher follows again (unless its worker ended)."""
        if not self.ended:
            self.following, self.since, self.why = True, None, ""

    def badge(self, *, paused: bool, unreadable: bool, seen: float | None) -> str:
        """The status bar's word: LIVE, PAUSED, or why the screen is not the files as they are.
        *seen*: when the last change was read (epoch seconds), None before the first."""
        if paused:
            return PAUSED
        if not self.following:
            what = "watcher stopped" if self.ended else "watcher failing, retrying"
            return f"✖ NOT LIVE: {what}" + (f", last change {hhmmss(seen)}" if seen is not None else "")
        if unreadable:
            return "✖ NOT LIVE: auth.json unreadable"    # the banner says since when
        return LIVE
