"""Reading and writing auth.json: strict reads, atomic writes, a last-good backup.

Reads never lock and never write. A file that cannot be used as a store is an
error naming the path and the reason, never an empty store.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from store import envelope, safeio, shape
from store.errors import LinkedStore, StoreUnreadable, WriteFailed, unreadable_value
from store.model import Doc
from store.paths import TEMP_PREFIX, Home
from store.pids import process_exists

STORE_VERSION = 1
_BOM = b"\xef\xbb\xbf"
RECOVERY_HINT = "hermes-admin will not write until it is fixed; the last good copy is {backup}"


@dataclass(frozen=True)
class Snapshot:
    """One read of auth.json. ``doc`` is None when the file does not exist."""

    path: Path
    doc: Doc | None
    raw: bytes | None
    mtime_ns: int | None
    read_at: float

    @property
    def exists(self) -> bool:
        return self.raw is not None


def parse_store(raw: bytes, path: Path, backup: Path | None = None, *,
                loads: Callable[[str], Any] = json.loads) -> Doc:
    """Parse auth.json bytes strictly; raise StoreUnreadable naming *path* and the reason.

    *loads* parses the decoded text (store.store_index notes where each value sits as it
    parses); it must equal ``json.loads`` in result and errors.
    """
    hint = RECOVERY_HINT.format(backup=backup) if backup is not None and backup.exists() else None
    if not raw.strip():
        raise StoreUnreadable(path, "file is empty", hint)
    envelope.check(raw, path)
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreUnreadable(path, f"not UTF-8 (byte {exc.start})", hint) from None
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise StoreUnreadable(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", hint) from None
    except RecursionError:
        # 100,000 nested brackets overflow the parser: a hostile file, not an internal error.
        raise StoreUnreadable(path, "JSON nested too deeply to be a credential store", hint) from None
    except ValueError as exc:      # an integer past Python's 4,300 digits: a hostile file too
        raise StoreUnreadable(path, unreadable_value(exc), hint) from None
    if not isinstance(doc, dict):
        raise StoreUnreadable(path, f"top level is a JSON {type(doc).__name__}, not an object", hint)
    if not isinstance(doc.get("providers"), dict) and not isinstance(doc.get("credential_pool"), dict):
        raise StoreUnreadable(path, "neither 'providers' nor 'credential_pool' is an object", hint)
    shape.check(doc, path, hint)
    return doc


def read_store(home: Home) -> Snapshot:
    """Read auth.json without locking or writing. Missing file -> empty snapshot."""
    path = home.auth
    now = time.time()
    got = safeio.read_checked(path, safeio.AUTH_CAP)
    if got is None:
        safeio.refuse_dangling(path)
        return Snapshot(path, None, None, None, now)
    raw, st = got
    return Snapshot(path, parse_store(raw, path, home.backup), raw, st.st_mtime_ns, now)


def serialize(doc: Doc) -> bytes:
    """Stamp version/updated_at and render the way spec section 3 asks."""
    doc["version"] = STORE_VERSION
    doc["updated_at"] = datetime.now(timezone.utc).isoformat()
    return json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


LINKED_REASON = ("is a symlink to {target}; hermes-admin reads through it but will not write: Hermes "
                 "locks {lock} beside the link and replaces the link with a plain file on its next "
                 "write, so the homes sharing this file would silently stop sharing")
LINKED_HINT = ("nothing was written; to write here, replace the link with a copy of its target in each "
               "home (each home then keeps its own pool), or keep one home and point every agent's "
               "HERMES_HOME at it")


def linked_store(home: Home) -> LinkedStore | None:
    """The error every write to a symlinked auth.json gives (naming the link, its target, why
    and what to do), or None when auth.json is not a symlink. Reads follow the link."""
    try:
        if not stat.S_ISLNK(os.lstat(home.auth).st_mode):
            return None
        target = os.readlink(home.auth)
    except OSError:
        return None
    shown = target if os.path.isabs(target) else f"{target} ({os.path.realpath(home.auth)})"
    return LinkedStore(home.auth, LINKED_REASON.format(target=shown, lock=home.lock), LINKED_HINT)


def refuse_linked(home: Home) -> None:
    """Raise :func:`linked_store`'s error when auth.json is a symlink. Called once at the entry
    of the one write path (:func:`store.transaction.transaction`) and by the few writers
    that replace auth.json whole, before any lock file, backup or history copy is made."""
    problem = linked_store(home)
    if problem is None:
        return
    try:   # a link to a FIFO or a device: say what it points at, as a read would
        safeio.check_regular(os.stat(home.auth), home.auth, None)
    except OSError:
        pass   # a dangling link: the link is the problem
    raise problem


def _target(path: Path) -> Path:
    """A symlinked auth.json has its target replaced, so the link survives."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def atomic_write_bytes(path: Path, data: bytes, *, sync: bool = True, mode: int = 0o600,
                       owner: tuple[int, int] | None = None, follow_link: bool = True) -> None:
    """Write *data* to *path* by same-directory mkstemp + fsync + os.replace + fsync dir.

    The file gets *mode* (0600 for the store and anything holding secrets) and, when
    given, *owner* (uid, gid). A symlink at the temp name cannot exist because mkstemp
    creates with O_EXCL. A symlink at *path* is followed (its target is replaced, as
    auth.json's must be) only with *follow_link*; without it (hermes-admin's own files:
    status files, fleet state, the audit log), a symlink, directory, FIFO or device at
    *path* is refused with :class:`WriteFailed` and nothing is written anywhere.
    """
    if follow_link:
        target = _target(path)
    else:
        refuse_special(path)
        target = path
    directory = target.parent
    try:
        # The pid in the name lets the next writer tell a dead writer's temp from a live one.
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{target.name}.{os.getpid()}.", suffix=".tmp",
                                   dir=directory)
    except OSError as exc:
        raise WriteFailed(target, f"cannot create a temp file beside it ({exc.strerror}); "
                          "nothing was written") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            if owner is not None:
                try:
                    os.fchown(fh.fileno(), *owner)
                except OSError:
                    pass
            fh.write(data)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            # Disk full, quota, read-only: the old file is untouched and no temp is left.
            raise WriteFailed(target, f"write failed ({exc.strerror or exc}); the file was "
                              "not changed") from None
        raise
    os.chmod(target, mode)
    if sync:
        _fsync_dir(directory)


def refuse_special(path: Path) -> None:
    """WriteFailed if anything but a regular file (or nothing) sits at *path*."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise WriteFailed(path, f"cannot be checked ({exc.strerror}); nothing was written") from None
    if stat.S_ISLNK(st.st_mode):
        raise WriteFailed(path, "is a symlink; hermes-admin does not write through one here, "
                          "nothing was written")
    if not stat.S_ISREG(st.st_mode):
        raise WriteFailed(path, f"is {safeio.kind(st.st_mode)}, not a regular file; nothing was written")


def keep_aside(directory: Path, stem: str, data: bytes) -> Path:
    """Save *data* as ``<stem>-<UTC time>[-n]`` in *directory* under a name that did not
    exist (O_EXCL): a kept copy is never overwritten, even by two runs in one second."""
    when = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for n in range(1, 1000):
        path = directory / (f"{stem}-{when}" + (f"-{n}" if n > 1 else ""))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise WriteFailed(path, f"cannot keep a copy aside ({exc.strerror})") from None
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            os.unlink(path)
            raise WriteFailed(path, f"cannot keep a copy aside ({exc.strerror})") from None
        os.close(fd)
        _fsync_dir(directory)
        return path
    raise WriteFailed(directory / stem, "999 kept-aside copies already exist for this second")


def keep_backup(home: Home) -> None:
    """Make the current auth.json the last-good backup, cheaply.

    The current inode is hard-linked under a temp name and renamed over the
    backup: no copy, no extra fsync of data that is already on disk, and a
    symlink planted at the backup name is replaced, never followed.
    """
    src = _target(home.auth)
    try:
        cur, bak = os.stat(src), os.lstat(home.backup)
        if (cur.st_dev, cur.st_ino) == (bak.st_dev, bak.st_ino):
            # A write died after the last backup: both names are one inode already.
            # Renaming a second link over it would be a no-op that leaves the temp
            # link (a copy of the store) behind.
            return
    except FileNotFoundError:
        if not src.exists():
            return
    tmp = src.parent / f"{TEMP_PREFIX}backup.{os.getpid()}.{time.monotonic_ns()}.tmp"
    try:
        os.link(src, tmp, follow_symlinks=False)
        os.chmod(tmp, 0o600)
        os.replace(tmp, home.backup)
        if os.path.lexists(tmp):
            os.unlink(tmp)
    except OSError:
        # A filesystem without hard links: copy instead.
        try:
            os.unlink(tmp)
        except OSError:
            pass
        atomic_write_bytes(home.backup, src.read_bytes(), sync=False)


def _writer_dead(name: str) -> bool:
    """True when the writer pid in our temp name is gone. The pid is the first all-digit
    part (``<prefix>auth.json.<pid>.<rand>.tmp``, ``<prefix>backup.<pid>.<ns>.tmp``)."""
    parts = name[len(TEMP_PREFIX):].split(".")
    pid = next((int(p) for p in parts[:-1] if p.isascii() and p.isdigit()), None)
    if pid is None or pid <= 0 or pid == os.getpid():
        return False
    return not process_exists(pid)


def sweep_orphans(home: Home, older_than: float = 60.0) -> list[Path]:
    """Delete our own temp files left by a writer killed mid-write: our prefix, never the
    live store or its backup (even if one is a symlink into such a name), and stale
    (older than *older_than* seconds, or its writer's pid is gone). Each holds a copy of
    every key, so they must not linger."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(home.root))
    except OSError:
        return removed
    live = {os.path.realpath(home.auth), os.path.realpath(home.backup)}
    cutoff = time.time() - older_than
    for entry in entries:
        if not (entry.name.startswith(TEMP_PREFIX) and entry.name.endswith(".tmp")):
            continue
        if os.path.realpath(entry.path) in live:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue
            if st.st_mtime < cutoff or _writer_dead(entry.name):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def ensure_home(home: Home) -> None:
    """Create the home 0700 if missing (Hermes does the same)."""
    if not home.root.exists():
        home.root.mkdir(parents=True, mode=0o700)
        os.chmod(home.root, 0o700)


def permission_problems(home: Home) -> list[str]:
    """Operator-facing warnings for a store others can read (nothing is changed)."""
    problems: list[str] = []
    for path, want in ((home.root, 0o700), (home.auth, 0o600), (home.backup, 0o600)):
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            continue
        if mode & 0o077:
            problems.append(f"{path}: mode {mode:04o} lets other users read it (want {want:04o})")
    return problems


def load_json_bytes(raw: bytes) -> Any:
    return json.loads(raw[len(_BOM):] if raw.startswith(_BOM) else raw)
