"""Live reload: watch a Hermes home and turn each change into a parsed snapshot.

The watch is on the home *directory*, never on the files: every writer (Hermes,
hermes-admin, an editor) replaces files atomically, which swaps the inode, and a
watch on the old inode goes deaf. Events are filtered to the files that matter
(auth.json, config.yaml, .env and hermes-admin's headroom sidecar, which the proxies and
agent runtimes on the home write behind once a second), so temp files, locks and
backups do not wake anybody. The loop itself is
store.watch.loop's, shared with the root's watcher; :class:`HomeClassifier` is what
a home keeps of it.

Nothing here writes: the watcher only lists the directory and :class:`HomeLoader`
only reads. No UI import either; the TUI drives these from a thread worker.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import authfile, envfile
from store.agent import headroom
from store.agent.headroom import RowKey, RowReadings
from store.config.read import Config, read_config
from store.errors import ConfigUnreadable, StoreUnreadable
from store.paths import AUTH_FILE, CONFIG_FILE, ENV_FILE, Home
from store.pools import events
from store.pools.policy import DEFAULT_TTLS, Ttls
from store.pools.view import PoolView
from store.store_index import StoreReader
from store.watch.loop import DEBOUNCE_MS, MISSING_POLL, QUIET_S, STEP_MS, follow_tree, watch_tree
from store.watch.pool_cache import PoolCache, diff_changed
from store.watch.read_ahead import ReadAhead

WATCHED = frozenset({AUTH_FILE, CONFIG_FILE, ENV_FILE})
# hermes-admin's own file beside them: read like them, but no store of Hermes's.
FOLLOWED = WATCHED | {headroom.SIDECAR}

# The store lock closing ends a write: it does not start a new wait for quiet.
SETTLES = frozenset({Path(AUTH_FILE).with_suffix(".lock").name})


class HomeClassifier:
    """What a home's watch keeps: the watched files of the home directory, by name."""

    recursive = False
    settles = SETTLES

    def everything(self) -> set[str]:
        return set(WATCHED)

    def classify(self, paths: Iterable[str]) -> set[str] | None:
        return {os.path.basename(p) for p in paths} & FOLLOWED or None

    def dirs(self) -> Iterable[str]:
        return ()   # the home directory alone

    def new_dirs(self, change: set[str]) -> bool:
        return False


HOME = HomeClassifier()


def watch_home(
    home: Home,
    stop: threading.Event,
    *,
    debounce_ms: int = DEBOUNCE_MS,
    step_ms: int = STEP_MS,
    missing_poll: float = MISSING_POLL,
    ahead: Callable[[set[str]], None] | None = None,
) -> Iterator[set[str]]:
    """Yield the set of changed names (subset of FOLLOWED) until *stop* is set.

    The first yield is every watched name, made only once the watch is armed, so a
    consumer that loads on it cannot miss a write that lands in between. A missing
    home is polled for (bounded by *stop*) instead of failing; when the home
    appears, or is removed and recreated, everything is reported again.

    *ahead* (inotify only) is told of a burst's watched names as they arrive, before the
    burst is over and yielded (see :class:`ReadAhead`).
    """
    return watch_tree(home.root, HOME, stop, debounce_ms=debounce_ms, step_ms=step_ms,
                      missing_poll=missing_poll, ahead=ahead)


def _read_config(home: Home) -> Config | None:
    """store.config.read.read_config(home); None when there is no config file."""
    if not home.config.exists():
        return None
    return read_config(home)


def _read_env(home: Home) -> tuple[dict[str, str], str | None]:
    values, problem = envfile.read_env_report(home)
    return dict(values), problem


@dataclass(frozen=True)
class HomeState:
    """Everything the dashboard shows, read at one moment (never written back).

    ``store`` is the last snapshot that parsed; when ``store_error`` is set the
    current file is unreadable and ``store`` is that older good view (stale).
    ``config`` likewise is the last good config when ``config_error`` is set, and None
    when the home has no config.yaml (or none that ever parsed).
    """

    generation: int
    home: Home
    read_at: float
    home_exists: bool
    store: authfile.Snapshot | None
    store_error: StoreUnreadable | None
    config: Config | None
    config_error: StoreUnreadable | None
    env: Mapping[str, str]
    pools: list[PoolView]
    store_read_at: float = 0.0       # clock time of the read that produced ``store``
    events: list[events.Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Each row's rate-limit readings, from the headroom sidecar (checked; the last good
    # ones while it cannot be read). Bound to a secret: compare ``fp`` with the view's.
    headroom: Mapping[RowKey, RowReadings] = field(default_factory=dict)
    # auth.json is a symlink: it reads, but every write is refused (this is that error).
    store_linked: StoreUnreadable | None = None

    @property
    def stale(self) -> bool:
        return (self.store_error is not None and self.store is not None
                and self.store.doc is not None)

    @property
    def doc(self) -> dict[str, Any] | None:
        return self.store.doc if self.store is not None else None

    @property
    def strategies(self) -> dict[str, str]:
        return dict(self.config.strategies) if self.config is not None else {}

    @property
    def ttls(self) -> Ttls:
        return self.config.ttls if self.config is not None else DEFAULT_TTLS


class HomeLoader:
    """Reads a home into successive :class:`HomeState` values, keeping the last good ones.

    Not thread-safe: one consumer (the watcher thread) owns it. Each call to
    :meth:`load` makes a new generation, and its events are the diff against the
    previous state's views.
    """

    def __init__(self, home: Home, clock: Callable[[], float] = time.time) -> None:
        self.home = home
        self.clock = clock
        self.generation = 0
        self._store: authfile.Snapshot | None = None
        self._store_error: StoreUnreadable | None = None
        self._linked: StoreUnreadable | None = None
        self._store_read_at = 0.0
        self._config: Config | None = None
        self._config_error: StoreUnreadable | None = None
        self._env: dict[str, str] = {}
        self._env_problem: str | None = None
        self._pools: list[PoolView] | None = None
        self._headroom: Mapping[RowKey, RowReadings] = {}
        self._headroom_error: str | None = None
        self._loaded: set[str] = set()
        self._cache = PoolCache()
        # Re-reads parse only the rows a write changed (a 10,000-row store is 4.8 MB).
        self._reader = StoreReader(home)

    def load(self, changed: set[str] | None = None) -> HomeState:
        """Re-read the files named in *changed* (all when None) and return the new state."""
        todo = set(FOLLOWED) if changed is None else (set(changed) | (FOLLOWED - self._loaded))
        home = self.home
        home_exists = home.root.is_dir()
        if CONFIG_FILE in todo:
            try:
                self._config = _read_config(home)
                self._config_error = None
            except ConfigUnreadable as exc:
                # A half-written config.yaml (editor saving in place): keep the last good one.
                self._config_error = exc
            except StoreUnreadable as exc:
                self._config_error = ConfigUnreadable(exc.path, exc.reason, exc.hint)
        if ENV_FILE in todo:
            self._env, self._env_problem = _read_env(home)
        now = self.clock()
        if AUTH_FILE in todo:
            self._linked = authfile.linked_store(home)
            try:
                snap = self._reader.read()
            except StoreUnreadable as exc:
                self._store_error = exc
            else:
                self._store_error = None
                self._store = snap
                self._store_read_at = now
        if headroom.SIDECAR in todo:
            try:
                self._headroom, self._headroom_error = headroom.load(home, now), None
            except StoreUnreadable as exc:     # keep the last good readings, and say so
                self._headroom_error = f"{exc}; showing the last readings"
        self._loaded |= todo
        store = self._store
        doc = store.doc if store is not None else None
        config = self._config
        strategies = dict(config.strategies) if config is not None else {}
        ttls = config.ttls if config is not None else DEFAULT_TTLS
        # Only the pools whose rows (or settings) changed are rebuilt and diffed.
        pools, changed = self._cache.build(doc, strategies=strategies, now=now, ttls=ttls,
                                           env=self._env)
        evs = diff_changed(self._pools, pools, changed, now)
        self._pools = pools
        self.generation += 1
        warnings = list(config.warnings) if config is not None else []
        if self._env_problem:
            warnings.append(self._env_problem)
        if self._headroom_error:
            warnings.append(self._headroom_error)
        if home_exists:
            warnings.extend(authfile.permission_problems(home))
        return HomeState(
            generation=self.generation, home=home, read_at=now, home_exists=home_exists,
            store=store, store_read_at=self._store_read_at, store_error=self._store_error,
            config=config,
            config_error=self._config_error, env=dict(self._env), pools=pools, events=evs,
            warnings=warnings, headroom=self._headroom, store_linked=self._linked,
        )


def follow(
    home: Home, stop: threading.Event, *, clock: Callable[[], float] = time.time,
    loader: HomeLoader | None = None,
) -> Iterator[HomeState]:
    """Watch *home* and yield a fresh :class:`HomeState` for every change, until *stop*.

    The console's watcher worker runs this loop; one thread owns the loader, so reads are
    serial and generations only grow.
    """
    return follow_tree(home.root, HOME, stop, ReadAhead(loader or HomeLoader(home, clock), QUIET_S))
