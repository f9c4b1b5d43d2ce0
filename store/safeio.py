"""Opening a home's files without trusting what sits at their names.

A FIFO, device or directory planted at ``auth.json`` (or config.yaml, .env, the audit
log) must never make hermes-admin block: a blocking ``open`` on a FIFO waits for a
writer forever, and a write verb would wait while holding ``auth.lock``, stalling every
agent on the host. So each file is opened with ``O_NONBLOCK`` and checked with
``fstat`` before a byte is read; anything but a regular file (or a symlink to one) is
refused at once. Each file also has a size cap, named in the error.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from store.errors import StoreUnreadable

MIB = 1024 * 1024
AUTH_CAP = 64 * MIB
CONFIG_CAP = 4 * MIB
ENV_CAP = 1 * MIB
# The audit log needs no cap: it is read only from its last AUDIT_TAIL bytes, and an
# append is never refused for the log's size (the write it records already happened).
AUDIT_TAIL = 256 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind(mode: int) -> str:
    """What a file of *mode* is, in words ("a FIFO (named pipe)", "a directory", ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _fmt_cap(cap: int) -> str:
    return f"{cap // MIB} MiB" if cap % MIB == 0 else f"{cap} bytes"


def check_regular(st: os.stat_result, path: Path, cap: int | None,
                  error: type[StoreUnreadable] = StoreUnreadable) -> None:
    """Raise *error* unless *st* is a regular file no larger than *cap* bytes."""
    if not stat.S_ISREG(st.st_mode):
        raise error(path, f"is {kind(st.st_mode)}, not a regular file; hermes-admin will not open it")
    if cap is not None and st.st_size > cap:
        raise error(path, f"is {st.st_size} bytes, over the {_fmt_cap(cap)} cap for this file")


def _os_error(path: Path, exc: OSError, error: type[StoreUnreadable]) -> StoreUnreadable:
    if isinstance(exc, IsADirectoryError):
        return error(path, "is a directory, not a regular file; hermes-admin will not open it")
    if isinstance(exc, PermissionError):
        return error(path, "permission denied")
    return error(path, exc.strerror or str(exc))


def open_checked(path: Path, flags: int, cap: int | None,
                 error: type[StoreUnreadable] = StoreUnreadable, mode: int = 0o600) -> int:
    """``os.open`` *path* non-blocking, refuse anything but a regular file, return a
    blocking fd. FileNotFoundError passes through (a missing file is the caller's call)."""
    try:
        # stat first (never blocks) so the error names the kind of file; fstat below
        # closes the race with a swap between the two.
        check_regular(os.stat(path), path, cap, error)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise error(path, exc.strerror or str(exc)) from None
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0), mode)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP and flags & getattr(os, "O_NOFOLLOW", 0):
            raise error(path, "is a symlink; hermes-admin does not follow one here") from None
        if exc.errno != errno.ELOOP:
            raise _os_error(path, exc, error) from None
        raise error(path, exc.strerror or str(exc)) from None
    try:
        check_regular(os.fstat(fd), path, cap, error)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_dangling(path: Path, error: type[StoreUnreadable] = StoreUnreadable) -> None:
    """Raise *error* when *path* is missing only because it is a symlink to nothing: a
    store on a volume that is not mounted is reported, never read as no store."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return
        target = os.readlink(path)
    except OSError:
        return
    raise error(path, f"is a symlink to {target}, which does not exist (a volume not mounted?); "
                "hermes-admin will not read it as a missing file")


def read_checked(path: Path, cap: int, error: type[StoreUnreadable] = StoreUnreadable,
                 *, follow: bool = True) -> tuple[bytes, os.stat_result] | None:
    """The bytes and stat of *path*, None when missing; *error* for a special file, an
    oversize file (also one that grew past the cap while read), or a read failure.
    ``follow=False``: a symlink at *path* is refused (*error*), never read through."""
    flags = os.O_RDONLY | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = open_checked(path, flags, cap, error)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        chunks: list[bytes] = []
        total = 0
        # First ask for the whole file in one read (a 10,000-row store is 4.8 MB, re-read on
        # every write); a file that grows while read is read on in 1 MiB steps.
        step = min(cap, st.st_size) + 1
        while True:
            chunk = os.read(fd, step)
            step = 1 << 20
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise error(path, f"grew past the {_fmt_cap(cap)} cap for this file while being read")
            chunks.append(chunk)
    except OSError as exc:
        raise error(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), st
