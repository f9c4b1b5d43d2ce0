"""Live reload: watch a Hermes home and turn each change into a parsed snapshot.

The watch is on the home *directory*, never on the files: every writer (Hermes,
hermes-admin, an editor) replaces files atomically, which swaps the inode, and a
watch on the old inode goes deaf. Events are filtered to the three files that
matter, so temp files, locks and backups do not wake anybody.

Nothing here writes: the watcher only lists the directory and :class:`HomeLoader`
only reads. No UI import either; the TUI drives these from a thread worker.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from watchfiles._rust_notify import RustNotify

from store import authfile
from store.config import envfile
from store.config import read as config_read
from store.errors import ConfigUnreadable, StoreUnreadable
from store.paths import AUTH_FILE, CONFIG_FILE, ENV_FILE, Home
from store.pools import events
from store.pools.policy import DEFAULT_TTLS, Ttls
from store.pools.view import PoolView
from store.store_index import StoreReader
from store.watch import inotify
from store.watch.pool_cache import PoolCache, diff_changed
from store.watch.read_ahead import ReadAhead

WATCHED = frozenset({AUTH_FILE, CONFIG_FILE, ENV_FILE})

# A lone atomic replace is reported `STEP_MS` after it lands; a burst is grouped
# for at most `DEBOUNCE_MS`, so a writer hammering the file cannot starve the view.
DEBOUNCE_MS = 20
STEP_MS = 10
# How often the watch wakes with nothing to report, to notice that the home itself
# was removed or replaced (which silently kills an inotify watch).
IDLE_CHECK_MS = 1000
MISSING_HOME_POLL = 0.25
# The inotify path sleeps in poll() with this timeout: a bound on how late a stop is
# seen when the stop flag is a plain threading.Event (a StopFlag wakes the poll at once),
# and how often a home replaced without an inotify event is looked for. Five wake-ups a
# second were 0.08% of a core here, half the whole idle cost of a bare Textual app.
STOP_CHECK_MS = 200
IDLE_STOP_CHECK_MS = 5000


class StopFlag(threading.Event):
    """A stop flag a ``poll()`` can sleep on: :meth:`set` also makes :meth:`fileno` readable,
    so a watcher blocks without a timeout step and still stops at once."""

    def __init__(self) -> None:
        super().__init__()
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)

    def set(self) -> None:
        super().set()
        try:
            os.write(self._w, b"x")
        except OSError:
            pass

    def fileno(self) -> int:
        return self._r

    def __del__(self) -> None:
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


def stop_check(stop: threading.Event) -> tuple[int, int | None]:
    """(poll timeout in ms, descriptor that wakes the poll on stop) for *stop*."""
    fd = stop.fileno() if isinstance(stop, StopFlag) else None
    return (IDLE_STOP_CHECK_MS if fd is not None else STOP_CHECK_MS), fd


def _is_watched(_change: Any, path: str) -> bool:
    return os.path.basename(path) in WATCHED


def _dir_identity(root: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def watch_home(
    home: Home,
    stop: threading.Event,
    *,
    debounce_ms: int | None = None,
    step_ms: int | None = None,
    missing_poll: float = MISSING_HOME_POLL,
    ahead: Callable[[set[str]], None] | None = None,
) -> Iterator[set[str]]:
    """Yield the set of changed names (subset of WATCHED) until *stop* is set.

    The first yield is every watched name, made only once the watch is armed, so a
    consumer that loads on it cannot miss a write that lands in between. A missing
    home is polled for (bounded by *stop*) instead of failing; when the home
    appears, or is removed and recreated, everything is reported again.

    *ahead* (inotify only) is told of a burst's watched names as they arrive, before the
    burst is over and yielded (see :class:`ReadAhead`).
    """
    debounce_ms = DEBOUNCE_MS if debounce_ms is None else debounce_ms
    step_ms = STEP_MS if step_ms is None else step_ms
    if backend() == "inotify":
        yield from _watch_inotify(home, stop, debounce_ms, step_ms, missing_poll, ahead)
    else:
        yield from _watch_watchfiles(home, stop, debounce_ms, step_ms, missing_poll)


def backend() -> str:
    """``inotify`` on Linux (no wake-ups while idle), else ``watchfiles`` (portable).

    HERMES_ADMIN_WATCH=watchfiles forces the portable path; so does
    WATCHFILES_FORCE_POLLING (a network filesystem that inotify cannot see).
    """
    choice = os.environ.get("HERMES_ADMIN_WATCH", "").strip().lower()
    if choice == "watchfiles" or _force_polling() or not inotify.available():
        return "watchfiles"
    return "inotify"


def _wait_for_home(home: Home, stop: threading.Event, missing_poll: float) -> None:
    # Event.wait keeps this responsive to stop.
    while not stop.is_set() and _dir_identity(home.root) is None:
        stop.wait(missing_poll)


# The store lock closing ends a write: it does not start a new wait for quiet.
SETTLES = frozenset({Path(AUTH_FILE).with_suffix(".lock").name})


def _watch_inotify(
    home: Home, stop: threading.Event, debounce_ms: int, step_ms: int, missing_poll: float,
    ahead: Callable[[set[str]], None] | None = None,
) -> Iterator[set[str]]:
    while not stop.is_set():
        ident = _dir_identity(home.root)
        if ident is None:
            yield set(WATCHED)
            _wait_for_home(home, stop, missing_poll)
            continue
        try:
            watch = inotify.DirWatch(str(home.root))
        except OSError:
            stop.wait(missing_poll)  # removed between the stat and the watch
            continue
        with watch:
            yield set(WATCHED)  # armed first, so the initial load cannot miss a write
            while not stop.is_set():
                # Blocks in poll(); the timeout only bounds how late `stop` is seen.
                if not watch.wait(*stop_check(stop)) or stop.is_set():
                    if _dir_identity(home.root) != ident:
                        break
                    continue
                names, gone = watch.collect(WATCHED, step_ms, debounce_ms, ahead, SETTLES)
                if names:
                    yield names
                if gone or _dir_identity(home.root) != ident:
                    break  # the home was removed or swapped: re-arm on the new one


def _watch_watchfiles(
    home: Home, stop: threading.Event, debounce_ms: int, step_ms: int, missing_poll: float,
) -> Iterator[set[str]]:
    while not stop.is_set():
        ident = _dir_identity(home.root)
        if ident is None:
            yield set(WATCHED)  # "nothing there" is a state worth showing too
            _wait_for_home(home, stop, missing_poll)
            continue
        try:
            # RustNotify directly (not watchfiles.watch) so the watch is armed
            # before the initial load is requested.
            root = str(home.root)
            notify = rust_notify(home.root)
        except OSError:
            stop.wait(missing_poll)  # removed between the stat and the watch
            continue
        with notify:
            yield set(WATCHED)
            while not stop.is_set():
                raw = notify.watch(debounce_ms, step_ms, IDLE_CHECK_MS, stop)
                if raw == "stop" or raw == "signal":
                    return
                root_event = False
                if raw != "timeout":
                    names = {os.path.basename(p) for _, p in raw if _is_watched(None, p)}
                    # The home itself deleted (its inode may be reused by a new one, so
                    # the identity check below cannot be the only signal).
                    root_event = any(p == root for _, p in raw)
                    if names:
                        yield names
                if root_event or _dir_identity(home.root) != ident:
                    break  # the watched directory is gone or was swapped: re-arm


def rust_notify(path: Path, *, recursive: bool = False) -> RustNotify:
    """watchfiles' notifier on *path*, built here only: the one module using its private API.

    Built directly (not through ``watchfiles.watch``) so a watch is armed before the first
    load is requested; tests/project/test_private_api.py guards the constructor.
    """
    return RustNotify([str(path)], False, _force_polling(), 300, recursive, recursive)


def _force_polling() -> bool:
    """Honour WATCHFILES_FORCE_POLLING like watchfiles.watch does (network filesystems)."""
    value = os.environ.get("WATCHFILES_FORCE_POLLING")
    return bool(value) and value.lower() not in {"false", "disable", "disabled"}


def _read_config(home: Home) -> Any:
    """store.config.read.read_config(home); None when there is no config file."""
    if not home.config.exists():
        return None
    return config_read.read_config(home)


def _read_env(home: Home) -> tuple[dict[str, str], str | None]:
    values, problem = envfile.read_env_report(home)
    return dict(values), problem


@dataclass(frozen=True)
class HomeState:
    """Everything the dashboard shows, read at one moment (never written back).

    ``store`` is the last snapshot that parsed; when ``store_error`` is set the
    current file is unreadable and ``store`` is that older good view (stale).
    ``config`` likewise is the last good config when ``config_error`` is set.
    """

    generation: int
    home: Home
    read_at: float
    home_exists: bool
    store: authfile.Snapshot | None
    store_error: StoreUnreadable | None
    config: Any
    config_error: StoreUnreadable | None
    env: Mapping[str, str]
    pools: list[PoolView]
    store_read_at: float = 0.0       # clock time of the read that produced ``store``
    events: list[events.Event] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return (self.store_error is not None and self.store is not None
                and self.store.doc is not None)

    @property
    def doc(self) -> dict[str, Any] | None:
        return self.store.doc if self.store is not None else None

    @property
    def strategies(self) -> dict[str, str]:
        return dict(getattr(self.config, "strategies", None) or {})

    @property
    def ttls(self) -> Ttls:
        return getattr(self.config, "ttls", None) or DEFAULT_TTLS


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
        self._store_read_at = 0.0
        self._config: Any = None
        self._config_error: StoreUnreadable | None = None
        self._env: dict[str, str] = {}
        self._env_problem: str | None = None
        self._pools: list[PoolView] | None = None
        self._loaded: set[str] = set()
        self._cache = PoolCache()
        # Re-reads parse only the rows a write changed (a 10,000-row store is 4.8 MB).
        self._reader = StoreReader(home)

    def load(self, changed: set[str] | None = None) -> HomeState:
        """Re-read the files named in *changed* (all when None) and return the new state."""
        todo = set(WATCHED) if changed is None else (set(changed) | (WATCHED - self._loaded))
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
            try:
                snap = self._reader.read()
            except StoreUnreadable as exc:
                self._store_error = exc
            else:
                self._store_error = None
                self._store = snap
                self._store_read_at = now
        self._loaded |= todo
        store = self._store
        doc = store.doc if store is not None else None
        strategies = dict(getattr(self._config, "strategies", None) or {})
        ttls = getattr(self._config, "ttls", None) or DEFAULT_TTLS
        # Only the pools whose rows (or settings) changed are rebuilt and diffed.
        pools, changed = self._cache.build(doc, strategies=strategies, now=now, ttls=ttls,
                                           env=self._env)
        evs = diff_changed(self._pools, pools, changed, now)
        self._pools = pools
        self.generation += 1
        warnings = list(getattr(self._config, "warnings", None) or [])
        if self._env_problem:
            warnings.append(self._env_problem)
        if home_exists:
            warnings.extend(authfile.permission_problems(home))
        return HomeState(
            generation=self.generation, home=home, read_at=now, home_exists=home_exists,
            store=store, store_read_at=self._store_read_at, store_error=self._store_error,
            config=self._config,
            config_error=self._config_error, env=dict(self._env), pools=pools, events=evs,
            warnings=warnings,
        )


def follow(
    home: Home, stop: threading.Event, *, clock: Callable[[], float] = time.time,
    loader: HomeLoader | None = None,
) -> Iterator[HomeState]:
    """Watch *home* and yield a fresh :class:`HomeState` for every change, until *stop*.

    The console's watcher worker runs this loop; one thread owns the loader, so reads are
    serial and generations only grow.
    """
    loader = loader or HomeLoader(home, clock)
    ahead = ReadAhead(loader, DEBOUNCE_MS / 1000)
    for changed in watch_home(home, stop, ahead=ahead):
        if stop.is_set():
            return
        yield ahead.finish(changed)
