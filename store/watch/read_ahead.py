"""Reading a write while the watcher waits out its burst (store.watch.loop.follow_tree, for
a home and a root): a lone write's read costs no time on the way to the screen."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

C = TypeVar("C")   # what a burst changed (a set of file names for a home)
S = TypeVar("S")   # the state read for it (a HomeState for a home)


class Loader(Protocol[C, S]):
    def load(self, change: C | None = None) -> S: ...


class ReadAhead(Generic[C, S]):
    """Reads a lone write while the watcher waits out its burst.

    The watcher reports a burst once no event has come for ``STEP_MS`` (store.watch.loop). A write that
    comes after a quiet spell is most often alone: its files are read as soon as its
    event arrives, during that wait, and if nothing else arrives the state is ready when
    the burst is reported (a 10,000-credential store takes ~3 ms to re-read; the wait
    is 10). If more arrives, the burst is read again at its end, and the state given
    carries the events of both reads, so no transition is lost. Inside a run of bursts
    (a writer hammering the file) nothing is read ahead: one read per burst, as before.
    A burst follows a quiet spell when the last one ended *quiet_s* or more ago.

    A change here is a set of file names and a state a :class:`HomeState`; the root's
    watcher uses the same rule with its own (:class:`store.profiles.live.RootReadAhead`).
    """

    def __init__(self, loader: Loader[C, S], quiet_s: float) -> None:
        self.loader = loader
        self.quiet_s = quiet_s
        self._early: S | None = None
        self._early_change: C | None = None
        self._after: C | None = None
        self._began = False
        self._last_done = -math.inf

    def __call__(self, change: C) -> None:
        """The watcher saw *change* (the burst is not over yet)."""
        if self._began:
            self._after = self._union(self._after, change)
            return
        self._began = True
        if self._may_start(change) and time.monotonic() - self._last_done >= self.quiet_s:
            self._early, self._early_change = self.loader.load(change), change
        else:
            self._after = self._union(self._after, change)

    def finish(self, change: C) -> S:
        """The burst (all of it: *change*) is over: the state to show for it."""
        early, early_change, after = self._early, self._early_change, self._after
        self._early = self._early_change = self._after = None
        self._began = False
        try:
            if early is None:
                return self.loader.load(change)
            if after is None:
                return early
            return self._combine(early, early_change, self.loader.load(after))
        finally:
            self._last_done = time.monotonic()

    # -- what a change and a state are (a home's here) --

    def _union(self, a: Any, b: Any) -> Any:
        return set(b) if a is None else a | b

    def _may_start(self, change: C) -> bool:
        return True

    def _combine(self, early: Any, early_change: C, final: Any) -> Any:
        return replace(final, events=list(early.events) + list(final.events))
