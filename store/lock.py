"""The Hermes store lock: an exclusive flock on ``<home>/auth.lock``.

filelock's FileLock on that path takes the same kernel lock Hermes takes with
``fcntl.flock``. We never fall back to a soft lock (Hermes would not see it) and
never delete the lock file (a deleted lock file splits the lock in two). filelock is imported
by the first lock taken: a console that only reads never loads it (issue 28, start-up).
"""

from __future__ import annotations

import fcntl
import inspect
import os
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from store.errors import LockTimeout, StoreUnreadable

if TYPE_CHECKING:
    from filelock import FileLock

DEFAULT_LOCK_TIMEOUT = 30.0
POLL_INTERVAL = 0.01


@cache
def _extra() -> dict[str, Any]:
    from filelock import FileLock

    supported = set(inspect.signature(FileLock.__init__).parameters)
    # filelock 4.x: keep the pathname on release and refuse the soft fallback. 3.30+ lacks
    # these switches but also neither unlinks on release nor falls back.
    return {k: v for k, v in (("fallback_to_soft", False), ("preserve_lock_file", True)) if k in supported}


def make_lock(path: Path, timeout: float) -> FileLock:
    """filelock's exclusive lock on *path*, never soft, never unlinking its file."""
    from filelock import FileLock

    return FileLock(str(path), timeout=timeout, thread_local=False, **_extra())


@contextmanager
def locked(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the exclusive lock on *path*; raise LockTimeout after *timeout* seconds."""
    if path.is_symlink():
        raise StoreUnreadable(path, "lock file is a symlink; refusing to follow it (remove it)")
    if timeout < 0:
        timeout = 0
    from filelock import Timeout

    lock = make_lock(path, timeout)
    try:
        lock.acquire(timeout=timeout, poll_interval=POLL_INTERVAL)
    except Timeout:
        raise LockTimeout(path, timeout) from None
    except OSError as exc:
        raise StoreUnreadable(path, f"cannot open lock file: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        lock.release()


def lock_is_free(path: Path) -> bool:
    """Non-blocking probe used by the UI to say "store busy" (takes and drops the lock)."""
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)
