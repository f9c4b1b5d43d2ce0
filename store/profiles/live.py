"""Live reload of a whole root: one watch, however many profiles there are.

One watch covers ``<root>`` (the loop of store.watch.loop: one inotify descriptor, or one
recursive watchfiles notifier); :class:`RootClassifier` keeps of its events the files we
read (``auth.json``, ``config.yaml``, ``.env``, ``cron/jobs.json`` of the root and of each
``profiles/<name>``) and profiles appearing or disappearing (``profiles/<name>`` itself).
Each profile keeps its own :class:`store.watch.home.HomeLoader` (last good store and
config, per-profile events), so a corrupt profile never disturbs the others. Nothing
here writes.

Cost note: a recursive watch also hears Hermes's own churn under the root (logs,
sessions); those events are dropped here in Python, after one wake-up per debounce
window. The filter runs in O(events), never O(profiles).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from store.config.profile_view import CRON_DIR, CRON_JOBS_FILE, CRON_JOBS_PATH, CronJob
from store.errors import StoreUnreadable
from store.paths import Home
from store.profiles import findings as findings_mod
from store.profiles.inventory import ProfileInventory, from_state, read_cron
from store.profiles.root import DEFAULT_PROFILE, PROFILES_DIR, Root, discover, is_profile_name
from store.watch.home import FOLLOWED, SETTLES, WATCHED, HomeLoader, HomeState
from store.watch.loop import DEBOUNCE_MS, MISSING_POLL, QUIET_S, STEP_MS, follow_tree, watch_tree
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
    if len(rest) == 1 and rest[0] in FOLLOWED:
        return profile, rest[0], False
    if rest == (CRON_DIR, CRON_JOBS_FILE):
        return profile, CRON_JOBS_PATH, False
    if rest == (CRON_DIR,):
        return profile, CRON_JOBS_PATH, False   # cron/ replaced or removed wholesale
    return None, None, False


class RootClassifier:
    """What a root's watch keeps: the files each profile's readers read, and profiles coming
    or going. On inotify it watches the root, ``profiles/``, each profile and each ``cron/``
    (one descriptor, listed again only when a profile or a ``cron/`` may have come); on
    watchfiles the root recursively."""

    recursive = True
    settles = SETTLES

    def __init__(self, path: Path) -> None:
        self.path = path

    def everything(self) -> RootChange:
        return RootChange(rescan=True)

    def classify(self, paths: Iterable[str]) -> RootChange | None:
        """What events on *paths* touched, in O(events), never O(profiles)."""
        changed: dict[str, set[str]] = {}
        rescan = False
        for p in paths:
            profile, name, again = classify(self.path, p)
            rescan = rescan or again
            if profile is not None and name is not None:
                changed.setdefault(profile, set()).add(name)
        return RootChange(changed, rescan) if rescan or changed else None

    def dirs(self) -> list[str]:
        return _root_dirs(self.path)

    def new_dirs(self, change: RootChange) -> bool:
        # A listing of every profile: not for a plain file write.
        return change.rescan or any(CRON_JOBS_PATH in names for names in change.changed.values())


def watch_root(root: Root, stop: threading.Event, *, debounce_ms: int = DEBOUNCE_MS,
               step_ms: int = STEP_MS, missing_poll: float = MISSING_POLL,
               ahead: Callable[[RootChange], None] | None = None) -> Iterator[RootChange]:
    """Yield a :class:`RootChange` per burst until *stop*; the first one (once armed) rescans.

    The loop is store.watch.loop's (inotify on Linux: no wake-up while idle, as for one
    home; watchfiles elsewhere or when forced). *ahead* (inotify only) is told of a burst's
    changes as they arrive (:class:`RootReadAhead`).
    """
    return watch_tree(root.path, RootClassifier(root.path), stop, debounce_ms=debounce_ms,
                      step_ms=step_ms, missing_poll=missing_poll, ahead=ahead)


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
            home_names = names & FOLLOWED
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
    ahead = RootReadAhead(loader or RootLoader(root, clock), QUIET_S)
    return follow_tree(root.path, RootClassifier(root.path), stop, ahead)


class RootReadAhead(ReadAhead[RootChange, RootState]):
    """:class:`store.watch.read_ahead.ReadAhead` for a root: a lone write to a profile is read while
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

