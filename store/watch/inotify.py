"""An inotify watch on a home or a root of homes, for Linux: no wake-up while nothing changes.

watchfiles polls its Rust notifier every 10 ms even when idle (about 0.5% of a core
measured here, see bench/bench_tui.py), which is more than a whole idle Textual
app. An inotify descriptor blocks in ``poll()`` until the kernel has an event.

ctypes on libc only: no new dependency, and :func:`available` says False anywhere
this does not work (other OS, no libc symbol, inotify limits reached) so the caller
falls back to watchfiles. The watch loop that drives it is store.watch.loop's.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
import sys
import time
from typing import Callable, Iterator

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

# What an atomic replace, an in-place save, a delete or the home's own removal raise.
MASK = (IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
SELF_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_HEADER = struct.Struct("iIII")

_libc: ctypes.CDLL | None = None


def _load() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            lib.inotify_init1.argtypes = [ctypes.c_int]
            lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            _libc = lib
        except (OSError, AttributeError):
            return None
    return _libc


def available() -> bool:
    """True when this process can use inotify (Linux with a libc that has it)."""
    return _load() is not None


class TreeWatch:
    """One inotify descriptor on a directory, and on any directory under it that is
    :meth:`add`-ed (a root's ``profiles/`` and each profile): one descriptor whatever their
    number, and still no wake-up while nothing changes. Not recursive by itself."""

    def __init__(self, root: str) -> None:
        lib = _load()
        if lib is None:
            raise OSError(errno.ENOSYS, "inotify is not available here")
        fd = lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        wd = lib.inotify_add_watch(fd, os.fsencode(root), MASK)
        if wd < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise OSError(err, f"{root}: {os.strerror(err)}")
        self.fd = fd
        self.root = root
        self._dirs: dict[int, str] = {wd: root}
        self._wds: dict[str, int] = {root: wd}
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> TreeWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, path: str) -> bool:
        """Watch *path* too (again is harmless); False when it cannot be watched (gone)."""
        lib = _load()
        wd = lib.inotify_add_watch(self.fd, os.fsencode(path), MASK) if lib is not None else -1
        if wd < 0:
            return False
        self._dirs[wd] = path
        self._wds[path] = wd
        return True

    def watched(self) -> set[str]:
        return set(self._wds)

    def wait(self, timeout_ms: int, wake_fd: int | None = None) -> bool:
        """Block until an event is readable, *wake_fd* is, or *timeout_ms* passed; True if
        an inotify event is readable."""
        if wake_fd is None:
            return bool(self._poll.poll(timeout_ms))
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.register(wake_fd, select.POLLIN)
        return any(fd == self.fd for fd, _ in poller.poll(timeout_ms))

    def events(self) -> Iterator[tuple[int, int, str]]:
        """Every pending (watch descriptor, mask, name); name is '' for the directory itself."""
        try:
            buf = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return
        pos = 0
        while pos + _HEADER.size <= len(buf):
            wd, mask, _cookie, length = _HEADER.unpack_from(buf, pos)
            raw = buf[pos + _HEADER.size: pos + _HEADER.size + length]
            pos += _HEADER.size + length
            yield wd, mask, os.fsdecode(raw.rstrip(b"\0"))

    def read_paths(self) -> Iterator[tuple[int, str]]:
        """Every pending (mask, full path); a directory's own events give its path."""
        for wd, mask, name in self.events():
            base = self._dirs.get(wd)
            if base is None:
                continue
            if mask & IN_IGNORED:  # the kernel dropped this watch (its directory went)
                self._dirs.pop(wd, None)
                self._wds.pop(base, None)
            yield mask, os.path.join(base, name) if name else base

    def collect(self, step_ms: int, debounce_ms: int, settles: frozenset[str] = frozenset(),
                ahead: Callable[[list[str]], None] | None = None) -> tuple[list[str], bool]:
        """Drain a burst: (the paths its events named, whether the root itself went).

        After the first event, keep reading until no event has come for *step_ms*, for at
        most *debounce_ms*, so a burst of writes is one reload of its last state; the root
        removed or moved ends the burst at once (its watch is dead).

        *ahead*, if given, is called with each batch of paths as it arrives, while the burst
        goes on: the caller can start reading during the wait, and the wait does not grow
        by the time *ahead* took. An event on a name in *settles* (a writer closing its
        lock: the end of a write, not a new one) does not restart the wait.
        """
        paths: list[str] = []
        gone = False
        start = time.monotonic()
        deadline = start + debounce_ms / 1000
        last = start
        while True:
            batch: list[str] = []
            for mask, path in self.read_paths():
                if os.path.basename(path) not in settles:
                    last = time.monotonic()
                if path == self.root and mask & SELF_GONE:
                    gone = True
                else:
                    batch.append(path)
            paths += batch
            if batch and ahead is not None and not gone:
                ahead(batch)
            left = min(deadline, last + step_ms / 1000) - time.monotonic()
            if gone or left <= 0 or not self.wait(int(left * 1000) or 1):
                return paths, gone
