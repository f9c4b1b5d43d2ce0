"""The one watch loop: wait on a tree, keep what a classifier reads, hand each burst on.

A home (store.watch.home) and a root of homes (store.profiles.live) are followed by the same
loop, on either backend; what differs is their :class:`Classifier`: which paths matter and what
a burst of them means (a set of file names for a home; profile -> names, and whether to
list the profiles again, for a root). For either backend, :func:`watch_tree`:

- reports the classifier's ``everything`` once the watch is armed, so a consumer that loads on
  it cannot miss a write that lands in between;
- waits out a burst (until no event has come for ``STEP_MS``, for at most ``DEBOUNCE_MS``),
  keeps what the classifier reads and hands that on: an event nobody reads wakes nobody;
- re-arms when the watched directory is removed or replaced (a watch on the old inode is
  deaf), and polls for it while it is missing, reporting ``everything`` meanwhile ("nothing
  there" is a state worth showing too);
- ends at once when the stop flag is set.

Backends: :class:`InotifyTree` on Linux (it sleeps in ``poll()`` on the inotify descriptor
and on a :class:`StopFlag`'s pipe: no wake-up while idle, and it tells a read-ahead of a
burst while waiting it out), else :class:`WatchfilesTree` (portable: watchfiles' notifier,
which polls every step). watchfiles is imported by the first :class:`WatchfilesTree` (module
``__getattr__``): the inotify path never loads it, nor its anyio and multiprocessing (issue 28,
start-up). Nothing here writes.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from store.watch import inotify
from store.watch.read_ahead import ReadAhead

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

# A lone atomic replace is reported `STEP_MS` after it lands; a burst is grouped
# for at most `DEBOUNCE_MS`, so a writer hammering the file cannot starve the view.
DEBOUNCE_MS = 20
STEP_MS = 10
# A burst follows a quiet spell (and may be read ahead) when the last ended this long ago.
QUIET_S = DEBOUNCE_MS / 1000
# How often the watchfiles notifier wakes with nothing to report, to notice that the
# watched directory itself was removed or replaced.
IDLE_CHECK_MS = 1000
MISSING_POLL = 0.25
# The inotify path sleeps in poll() with this timeout: a bound on how late a stop is
# seen when the stop flag is a plain threading.Event (a StopFlag wakes the poll at once),
# and how often a directory replaced without an inotify event is looked for. Five wake-ups
# a second were 0.08% of a core here, half the whole idle cost of a bare Textual app.
STOP_CHECK_MS = 200
IDLE_STOP_CHECK_MS = 5000

C = TypeVar("C")   # what a burst changed, as a classifier says it
S = TypeVar("S")   # the state a loader reads for a change


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


class Classifier(Protocol[C]):
    """What a watch keeps of the events under its tree, and what it reports for them."""

    recursive: bool          # watchfiles: watch every directory under the root too
    settles: frozenset[str]  # names whose events end a write (a lock closing), not start one

    def everything(self) -> C:
        """The change that means "read it all" (reported when armed, and while missing)."""
        ...

    def classify(self, paths: Iterable[str]) -> C | None:
        """What the events on *paths* changed; None when it is nothing this classifier reads."""
        ...

    def dirs(self) -> Iterable[str]:
        """inotify: the directories to watch besides the root, as they are now."""
        ...

    def new_dirs(self, change: C) -> bool:
        """Whether *change* may have made a directory :meth:`dirs` would list."""
        ...


@dataclass(frozen=True)
class Burst(Generic[C]):
    """One wait of a backend: what the classifier kept of it, whether to re-arm or to end."""

    change: C | None = None
    gone: bool = False       # the watched directory itself went: re-arm
    ended: bool = False      # the backend saw the stop (or a signal): the watch is over


class Tree(Protocol[C]):
    """A backend's watch, armed on a tree (a context manager: leaving it disarms)."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> None: ...

    def track(self) -> None:
        """Watch what the classifier reads that is not watched yet (inotify: its dirs)."""
        ...

    def burst(self, stop: threading.Event, debounce_ms: int, step_ms: int,
              ahead: Callable[[C], None] | None = None) -> Burst[C]:
        """Wait for the next burst (or a timeout, or the stop) and say what it changed."""
        ...


class InotifyTree(Generic[C]):
    """The Linux backend: one inotify descriptor on the root and on the directories the
    classifier names, asleep in ``poll()`` until the kernel has an event or the stop comes."""

    def __init__(self, path: Path, classifier: Classifier[C], watch: inotify.TreeWatch | None = None) -> None:
        self.classifier = classifier
        self.watch = inotify.TreeWatch(str(path)) if watch is None else watch

    def __enter__(self) -> InotifyTree[C]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.watch.close()

    def track(self) -> None:
        """Watch the directories the classifier reads that are not watched yet."""
        for d in set(self.classifier.dirs()) - self.watch.watched():
            self.watch.add(d)

    def burst(self, stop: threading.Event, debounce_ms: int, step_ms: int,
              ahead: Callable[[C], None] | None = None) -> Burst[C]:
        """Sleep until an event, then wait its burst out. *ahead* is told what each batch of
        the burst changed while the wait goes on (see store.watch.read_ahead)."""
        # Blocks in poll(); the timeout only bounds how late a plain Event's stop is seen.
        if not self.watch.wait(*stop_check(stop)) or stop.is_set():
            return Burst()

        def early(paths: list[str]) -> None:
            change = self.classifier.classify(paths)
            if change is not None and ahead is not None:
                ahead(change)

        paths, gone = self.watch.collect(step_ms, debounce_ms, self.classifier.settles,
                                         early if ahead is not None else None)
        return Burst(self.classifier.classify(paths), gone)


class WatchfilesTree(Generic[C]):
    """The portable backend: watchfiles' notifier on the root (recursive when the classifier
    asks), which groups a burst itself. It does not read ahead."""

    def __init__(self, path: Path, classifier: Classifier[C]) -> None:
        self.root = str(path)
        self.classifier = classifier
        self.notify = rust_notify(path, recursive=classifier.recursive)

    def __enter__(self) -> WatchfilesTree[C]:
        self.notify.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.notify.__exit__(*exc)

    def track(self) -> None:
        """Nothing to add: the notifier already covers what the classifier reads."""

    def burst(self, stop: threading.Event, debounce_ms: int, step_ms: int,
              ahead: Callable[[C], None] | None = None) -> Burst[C]:
        raw = self.notify.watch(debounce_ms, step_ms, IDLE_CHECK_MS, stop)
        if raw == "stop" or raw == "signal":
            return Burst(ended=True)
        if raw == "timeout":
            return Burst()
        # Any event on the root itself: it was deleted (its inode may be reused by a new
        # one, so the identity check of the loop cannot be the only signal).
        gone = any(p == self.root for _, p in raw)
        return Burst(self.classifier.classify(p for _, p in raw if p != self.root), gone)


def watch_tree(path: Path, classifier: Classifier[C], stop: threading.Event, *,
               debounce_ms: int = DEBOUNCE_MS, step_ms: int = STEP_MS,
               missing_poll: float = MISSING_POLL,
               ahead: Callable[[C], None] | None = None,
               arm: Callable[[Path, Classifier[C]], Tree[C]] | None = None) -> Iterator[C]:
    """Yield what each burst of events under *path* changed, as *classifier* says, until *stop*.

    The first yield is ``classifier.everything()``, made once the watch is armed. *ahead*
    (inotify only) is told of a burst's changes as they arrive, before the burst is over
    and yielded. *arm* builds the backend's watch (default: :func:`backend`'s choice).
    """
    if arm is None:
        arm = InotifyTree if backend() == "inotify" else WatchfilesTree
    while not stop.is_set():
        ident = dir_identity(path)
        if ident is None:
            yield classifier.everything()
            wait_for(path, stop, missing_poll)
            continue
        try:
            tree = arm(path, classifier)
        except OSError:
            stop.wait(missing_poll)  # removed between the stat and the watch
            continue
        with tree:
            tree.track()
            yield classifier.everything()  # armed first, so the initial load cannot miss a write
            while not stop.is_set():
                burst = tree.burst(stop, debounce_ms, step_ms, ahead)
                if burst.ended:
                    return
                if burst.change is not None:
                    if classifier.new_dirs(burst.change):
                        tree.track()  # a directory may have come: watch what exists now
                    yield burst.change
                if burst.gone or dir_identity(path) != ident:
                    break  # the watched directory is gone or was swapped: re-arm on the new one


def follow_tree(path: Path, classifier: Classifier[C], stop: threading.Event,
                ahead: ReadAhead[C, S]) -> Iterator[S]:
    """:func:`watch_tree`, each burst turned into a state by *ahead*'s loader (a lone write
    is read while its burst is waited out), until *stop*."""
    for change in watch_tree(path, classifier, stop, ahead=ahead):
        if stop.is_set():
            return
        yield ahead.finish(change)


def backend() -> str:
    """``inotify`` on Linux (no wake-ups while idle), else ``watchfiles`` (portable).

    HERMES_ADMIN_WATCH=watchfiles forces the portable path; so does
    WATCHFILES_FORCE_POLLING (a network filesystem that inotify cannot see).
    """
    choice = os.environ.get("HERMES_ADMIN_WATCH", "").strip().lower()
    if choice == "watchfiles" or _force_polling() or not inotify.available():
        return "watchfiles"
    return "inotify"


def rust_notify(path: Path, *, recursive: bool = False) -> RustNotify:
    """watchfiles' notifier on *path*, built here only: the one module using its private API.

    Built directly (not through ``watchfiles.watch``) so a watch is armed before the first
    load is requested; tests/project/test_private_api.py guards the constructor.
    """
    notifier = sys.modules[__name__].RustNotify     # imported on first use (__getattr__)
    return notifier([str(path)], False, _force_polling(), 300, recursive, recursive)


def __getattr__(name: str) -> Any:
    # ``RustNotify``: watchfiles' notifier, imported (and kept as a module global) when first asked.
    if name == "RustNotify":
        from watchfiles._rust_notify import RustNotify

        globals()["RustNotify"] = RustNotify
        return RustNotify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _force_polling() -> bool:
    """Honour WATCHFILES_FORCE_POLLING like watchfiles.watch does (network filesystems)."""
    value = os.environ.get("WATCHFILES_FORCE_POLLING")
    return bool(value) and value.lower() not in {"false", "disable", "disabled"}


def dir_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the directory at *path*, None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def wait_for(path: Path, stop: threading.Event, missing_poll: float) -> None:
    """Until something is at *path* again, or *stop* (polled; Event.wait keeps it responsive)."""
    while not stop.is_set() and dir_identity(path) is None:
        stop.wait(missing_poll)
