"""Live reload of a whole root: one recursive watch, however many profiles there are.

One watchfiles notifier covers ``<root>`` recursively; its events are filtered to the
files we read (``auth.json``, ``config.yaml``, ``.env``, ``cron/jobs.json`` of the
root and of each ``profiles/<name>``) and to profiles appearing or disappearing
(``profiles/<name>`` itself). Each profile keeps its own :class:`store.watch.home.HomeLoader`
(last good store and config, per-profile events), so a corrupt profile never
disturbs the others. Nothing here writes.

Cost note: a recursive watch also hears Hermes's own churn under the root (logs,
sessions); those events are dropped here in Python, after one wake-up per debounce
window. The filter runs in O(events), never O(profiles).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from store.config.profile_view import CRON_DIR, CRON_JOBS_FILE, CRON_JOBS_PATH, CronJob
from store.errors import StoreUnreadable
from store.paths import Home
from store.profiles import findings as findings_mod
from store.profiles.inventory import ProfileInventory, from_state, read_cron
from store.profiles.root import DEFAULT_PROFILE, PROFILES_DIR, Root, discover, is_profile_name
from store.watch.home import (
    DEBOUNCE_MS,
    IDLE_CHECK_MS,
    MISSING_HOME_POLL,
    SETTLES,
    STEP_MS,
    WATCHED,
    HomeLoader,
    HomeState,
    _dir_identity,
    backend,
    inotify,
    rust_notify,
    stop_check,
)
from store.watch.read_ahead import ReadAhead

ROOT_WATCHED = WATCHED | {CRON_JOBS_PATH}


@dataclass(frozen=True)
class RootChange:
    """What a burst of events touched: profile -> changed names, and whether to rediscover."""

    changed: dict[str, set[str]] = field(default_factory=dict)
    rescan: bool = False


def classify(root: Path, path: str) -> tuple[str | None, str | None, bool]:
    """(profile, watched name, rescan) for one event path under *root*.

    ``profile`` and ``name`` are None when the path is not a file we read; ``rescan``
    is True when the path is ``profiles/`` or a profile directory itself.
    """
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        return None, None, False
    if parts and parts[0] == PROFILES_DIR:
        if len(parts) <= 2:
            return None, None, len(parts) == 1 or is_profile_name(parts[1])
        if not is_profile_name(parts[1]):
            return None, None, False
        profile, rest = parts[1], parts[2:]
    else:
        profile, rest = DEFAULT_PROFILE, parts
    if len(rest) == 1 and rest[0] in WATCHED:
        return profile, rest[0], False
    if rest == (CRON_DIR, CRON_JOBS_FILE):
        return profile, CRON_JOBS_PATH, False
    if rest == (CRON_DIR,):
        return profile, CRON_JOBS_PATH, False   # cron/ replaced or removed wholesale
    return None, None, False


def watch_root(root: Root, stop: threading.Event, *, debounce_ms: int = DEBOUNCE_MS,
               step_ms: int = STEP_MS, missing_poll: float = MISSING_HOME_POLL,
               ahead: Callable[[RootChange], None] | None = None) -> Iterator[RootChange]:
    """Yield a :class:`RootChange` per burst until *stop*; the first one (once armed) rescans.

    On Linux one inotify descriptor watches the root, ``profiles/``, each profile and each
    ``cron/`` (no wake-up while idle, as for one home); elsewhere, or when forced as for
    one home (store.watch.home.backend), watchfiles watches the root recursively. *ahead*
    (inotify only) is told of a burst's changes as they arrive (:class:`RootReadAhead`).
    """
    if backend() == "inotify":
        yield from _watch_root_inotify(root, stop, debounce_ms, step_ms, missing_poll, ahead)
        return
    path = root.path
    while not stop.is_set():
        ident = _dir_identity(path)
        if ident is None:
            yield RootChange(rescan=True)  # "nothing there" is a state worth showing too
            _wait_for(path, stop, missing_poll)
            continue
        try:
            notify = rust_notify(path, recursive=True)
        except OSError:
            stop.wait(missing_poll)
            continue
        with notify:
            yield RootChange(rescan=True)
            while not stop.is_set():
                raw = notify.watch(debounce_ms, step_ms, IDLE_CHECK_MS, stop)
                if raw in ("stop", "signal"):
                    return
                gone = False
                if raw != "timeout":
                    # Any event on the root itself: it was deleted (its inode may be reused).
                    change, gone = _root_change(path, raw, lambda _kind, p: p == str(path))
                    if change.rescan or change.changed:
                        yield change
                if gone or _dir_identity(path) != ident:
                    break


def _wait_for(path: Path, stop: threading.Event, missing_poll: float) -> None:
    """Until the root exists again, or *stop* (bounded by *stop*, polled)."""
    while not stop.is_set() and _dir_identity(path) is None:
        stop.wait(missing_poll)


def _root_dirs(path: Path) -> list[str]:
    """The directories whose entries the root's readers depend on, as they are now."""
    dirs = [path, path / CRON_DIR, path / PROFILES_DIR]
    try:
        names = sorted(os.listdir(path / PROFILES_DIR))
    except OSError:
        names = []
    for name in names:
        if is_profile_name(name):
            dirs += [path / PROFILES_DIR / name, path / PROFILES_DIR / name / CRON_DIR]
    return [str(d) for d in dirs if d.is_dir()]


def _inotify_gone(path: Path) -> Callable[[int, str], bool]:
    return lambda mask, p: p == str(path) and bool(mask & inotify.SELF_GONE)


def _root_change(path: Path, events: Iterable[tuple[Any, str]],
                 is_gone: Callable[[Any, str], bool]) -> tuple[RootChange, bool]:
    """(what *events* under the root *path* touched, whether the root itself went)."""
    change = RootChange()
    rescan = gone = False
    for kind, p in events:
        if is_gone(kind, p):
            gone = True
            continue
        profile, name, again = classify(path, p)
        rescan = rescan or again
        if profile is not None and name is not None:
            change.changed.setdefault(profile, set()).add(name)
    return RootChange(change.changed, rescan), gone


def _watch_root_inotify(root: Root, stop: threading.Event, debounce_ms: int, step_ms: int,
                        missing_poll: float, ahead: Callable[[RootChange], None] | None = None,
                        ) -> Iterator[RootChange]:
    path = root.path
    gone_event = _inotify_gone(path)

    def early(events: list[tuple[int, str]]) -> None:
        assert ahead is not None
        change, gone = _root_change(path, events, gone_event)
        if change.changed or change.rescan or gone:
            ahead(RootChange(change.changed, change.rescan or gone))

    while not stop.is_set():
        ident = _dir_identity(path)
        if ident is None:
            yield RootChange(rescan=True)  # "nothing there" is a state worth showing too
            _wait_for(path, stop, missing_poll)
            continue
        try:
            watch = inotify.TreeWatch(str(path))
        except OSError:
            stop.wait(missing_poll)
            continue
        with watch:
            for d in _root_dirs(path):
                watch.add(d)
            yield RootChange(rescan=True)  # armed first, so the first load cannot miss a write
            while not stop.is_set():
                if not watch.wait(*stop_check(stop)) or stop.is_set():
                    if _dir_identity(path) != ident:
                        break
                    continue
                change, gone = _root_change(path, watch.collect_paths(
                    step_ms, debounce_ms, SETTLES, early if ahead is not None else None), gone_event)
                rescan = change.rescan
                if rescan or change.changed:
                    if rescan or any(CRON_JOBS_PATH in names for names in change.changed.values()):
                        # A profile or a cron/ directory may have come: watch what exists
                        # now (a listing of every profile: not for a plain file write).
                        for d in set(_root_dirs(path)) - watch.watched():
                            watch.add(d)
                    yield RootChange(change.changed, rescan)
                if gone or _dir_identity(path) != ident:
                    break


@dataclass(frozen=True)
class RootState:
    """Every profile at one moment, with the findings over them."""

    generation: int
    root: Root
    profiles: list[ProfileInventory]
    states: dict[str, HomeState] = field(repr=False)
    findings: list[findings_mod.Finding]
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    read_at: float = 0.0

    def profile(self, name: str) -> ProfileInventory | None:
        return next((p for p in self.profiles if p.name == name), None)


class RootLoader:
    """Keeps one HomeLoader per profile and re-reads only what a change names.

    Not thread-safe: one consumer (the watcher thread) owns it.
    """

    def __init__(self, root: Root, clock: Callable[[], float] = time.time) -> None:
        self.root = root
        self.clock = clock
        self.generation = 0
        self._loaders: dict[str, HomeLoader] = {}
        self._homes: dict[str, Home] = {}
        self._states: dict[str, HomeState] = {}
        self._inv: dict[str, ProfileInventory] = {}
        self._cron: dict[str, tuple[list[CronJob], StoreUnreadable | None]] = {}
        self._findings = findings_mod.FindingsCache()

    def load(self, change: RootChange | None = None) -> RootState:
        """Apply *change* (everything when None) and return the new :class:`RootState`."""
        change = change or RootChange(rescan=True)
        added: list[str] = []
        removed: list[str] = []
        todo = {k: set(v) for k, v in change.changed.items()}
        if change.rescan or not self._loaders:
            found = {p.name: p.home for p in discover(self.root)}
            for name in list(self._loaders):
                if name not in found or found[name] != self._homes[name]:
                    removed.append(name)
                    for d in (self._loaders, self._homes, self._states, self._inv, self._cron):
                        d.pop(name, None)
            for name, home in found.items():
                if name not in self._loaders:
                    added.append(name)
                    self._loaders[name] = HomeLoader(home, self.clock)
                    self._homes[name] = home
                    todo[name] = set(ROOT_WATCHED)
        for name, names in todo.items():
            loader = self._loaders.get(name)
            if loader is None:
                continue
            if CRON_JOBS_PATH in names or name not in self._cron:
                self._cron[name] = read_cron(loader.home)
            home_names = names & WATCHED
            if home_names or name not in self._states:
                self._states[name] = loader.load(home_names or None)
            jobs, err = self._cron[name]
            self._inv[name] = from_state(name, self._states[name], jobs, err)
        order = sorted(self._inv, key=lambda n: (n != DEFAULT_PROFILE, n))
        profiles = [self._inv[n] for n in order]
        self.generation += 1
        return RootState(self.generation, self.root, profiles, dict(self._states),
                         self._findings.compute(profiles), added, removed, self.clock())


def follow_root(root: Root, stop: threading.Event, *, clock: Callable[[], float] = time.time,
                loader: RootLoader | None = None) -> Iterator[RootState]:
    """Watch *root* and yield a fresh :class:`RootState` for every relevant change, until *stop*."""
    loader = loader or RootLoader(root, clock)
    ahead = RootReadAhead(loader, DEBOUNCE_MS / 1000)
    for change in watch_root(root, stop, ahead=ahead):
        if stop.is_set():
            return
        yield ahead.finish(change)


class RootReadAhead(ReadAhead):
    """:class:`store.watch.home.ReadAhead` for a root: a lone write to a profile is read while
    the watcher waits out its burst. Only file changes are read ahead (a profile that came
    or went waits for the burst's end); a profile read twice keeps both reads' events."""

    def _union(self, a: RootChange | None, b: RootChange) -> RootChange:
        if a is None:
            return RootChange({k: set(v) for k, v in b.changed.items()}, b.rescan)
        for k, v in b.changed.items():
            a.changed.setdefault(k, set()).update(v)
        return RootChange(a.changed, a.rescan or b.rescan)

    def _may_start(self, change: RootChange) -> bool:
        return not change.rescan

    def _combine(self, early: RootState, early_change: RootChange, final: RootState) -> RootState:
        states = dict(final.states)
        for name in early_change.changed:
            first, again = early.states.get(name), states.get(name)
            if first is not None and again is not None and again is not first:
                states[name] = replace(again, events=list(first.events) + list(again.events))
        return replace(final, states=states)

