"""What the dashboard says around its table: the time of a read, why the table is empty,
the banner's problems and the status bar's live word (pure functions of a
:class:`store.watch.home.HomeState`)."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Iterable

from store.pools import events as ev
from store.pools.view import PoolView, build_pools
from store.watch.home import HomeState
from tui.services.liveness import Liveness
from tui.widgets import CredentialTable


def clock_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


def add_key_hint(root: str) -> str:
    return (f"Add a key:  hermes-admin --home {root} add openrouter --api-key -\n"
            "       or:  hermes auth add openrouter --api-key <key>   (Hermes's own CLI)")


def empty_message(state: HomeState | None, filter_text: str, shown_rows: int) -> str | None:
    """Why the table is empty, with where we looked and what to do; None if it is not."""
    if state is None:
        return "Loading…"
    home = state.home
    if not state.home_exists:
        return (f"No Hermes home at {home.root}\n"
                "hermes-admin looks at --home, then $HERMES_HOME, then ~/.hermes.\n"
                f"{add_key_hint(str(home.root))}\n"
                "This screen fills in by itself when the home appears.")
    if state.store is None or not state.store.exists:
        if state.store_error is not None:
            return f"Nothing to show: {home.auth} cannot be read (see the banner above)."
        return (f"No credential store yet: {home.auth} does not exist.\n"
                f"{add_key_hint(str(home.root))}")
    if not state.pools:
        return f"{home.auth} has no credential pools yet.\n{add_key_hint(str(home.root))}"
    if filter_text and shown_rows == 0:
        return f"No credential matches “{filter_text}”. Escape clears the filter."
    return None


def problems(state: HomeState | None) -> list[tuple[str, str]]:
    """The banner lines for *state*: unreadable store (error), config and permission warnings."""
    if state is None:
        return []
    out: list[tuple[str, str]] = []
    err = state.store_error
    if err is not None:
        msg = f"{err.path}: {err.reason}. Nothing will be written until it is fixed."
        if state.stale:
            msg += f" Showing the last good view from {clock_time(state.store_read_at)} (STALE)."
        if err.hint:
            msg += f" {err.hint}."
        out.append(("error", msg))
    if state.store_linked is not None:   # it reads; every write is refused, and why
        out.append(("error", f"{state.store_linked}."))
    cerr = state.config_error
    if cerr is not None:
        keep = ("keeping the last good config" if state.config is not None
                else "using Hermes defaults")
        out.append(("warning", f"{cerr.path}: {cerr.reason}; {keep} until it parses."))
    for w in state.warnings:
        out.append(("warning", str(w)))
    return out


def live_and_held(liveness: Liveness, state: HomeState | None, latest: HomeState | None,
                  paused: bool) -> tuple[str, int]:
    """The status bar's live word (never LIVE over an unreadable store or a stopped watcher)
    and how many reads a pause holds back."""
    held = latest.generation - state.generation if paused and latest and state else 0
    newest = latest or state
    live = liveness.badge(paused=paused, unreadable=bool(newest and newest.store_error),
                          seen=state.read_at if state else None)
    return live, held


def ran_out(state: HomeState, pools: list[PoolView], table: CredentialTable, flipped: Iterable[str],
            now: float) -> tuple[list[PoolView], list[ev.Event]]:
    """The tick's rows whose cooldown ran out (*flipped*): their pools built again at *now*
    (only those), and the events that say so. Nothing is written: ``ready`` is computed from
    the clock, exactly as the agent will see it on its next selection."""
    views = [e.cred for e in map(table.entry, flipped) if e is not None and e.cred]
    fresh = {pv.key: pv for pool in {cv.pool for cv in views}
             for pv in build_pools(state.doc, strategies=state.strategies, now=now,
                                   ttls=state.ttls, env=state.env, only=pool)}
    avail = {cv.key: cv.effective.available_at or now for cv in views}
    labels = {cv.key: cv.label for cv in views}
    return [fresh.get(pv.key, pv) for pv in pools], ev.elapsed(avail, labels, -math.inf, now)
