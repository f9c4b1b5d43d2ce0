"""The operator history: every operator write keeps the file as it was, under its own name.

An operator action (a CLI verb, a console write, a config edit) gets an id
(``20261201T204512123456Z-3f9a0c``). Before its write replaces auth.json or config.yaml, the file
as it was is kept in ``<home>/hermes-admin-history/auth.json.<id>`` (a hard link of the
old inode: no copy) or ``config.yaml.<id>``, and ``<id>.json`` records what the action
touched: for auth.json the rows it changed, as it left them, and for config.yaml the
top-level keys it wrote, each value only as a digest (the record holds no key and no value:
undo compares digests and takes the values back from the kept copy).
The audit line carries the id. Only operator writes keep copies: the proxy's count
flushes, the fleet daemon and agents write through :func:`store.transaction.transaction`
without one, so they never replace a kept copy.

The folder is 0700, every file 0600, created with O_EXCL and no link followed; a copy
holds only what the store held. Records and copies are read the same way: by their own name
inside the folder (a record naming any other file is refused), no link followed, the folder
itself not a link. Ids sort in the order the actions were written; an id whose time lies
ahead of the clock is refused (:func:`from_future`): it would shadow every real action.
One action may span several homes (acting on a key everywhere): each home keeps its own
record under the same id. Old copies are pruned by count and age.
:mod:`store.ops.undo` puts an action's rows and fields back.
"""

from __future__ import annotations

import calendar
import contextlib
import contextvars
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store import safeio
from store.config import yamlcas
from store.errors import StoreUnreadable, WriteFailed
from store.paths import Home

HISTORY_DIR = "hermes-admin-history"
KEEP_COUNT = 50
KEEP_DAYS = 14.0
META_CAP = 16 * 1024 * 1024
_ID_CHARS = frozenset("0123456789abcdefTZ-")


def new_id(now: float) -> str:
    """``20261201T204512123456Z-3f9a0c``: UTC to the microsecond, so ids sort in the order
    of the actions, plus a random tail for two actions in one microsecond."""
    whole = int(now)
    return (time.strftime("%Y%m%dT%H%M%S", time.gmtime(whole)) + f"{int((now - whole) * 1e6):06d}Z-"
            + secrets.token_hex(3))


def valid_id(text: str) -> bool:
    """Whether *text* has the shape of an action id (nothing else may name a history file)."""
    return 16 <= len(text) <= 32 and set(text) <= _ID_CHARS


FUTURE_SLACK = 300.0     # clocks of hosts sharing a home may differ a little; a record may not


def from_future(action_id: str, now: float, slack: float = FUTURE_SLACK) -> bool:
    """True when *action_id*'s time lies more than *slack* seconds after *now* (or is no time)."""
    try:
        stamp = time.strptime(action_id[:15], "%Y%m%dT%H%M%S")
    except ValueError:
        return True
    return calendar.timegm(stamp) > now + slack


def _id_of(name: str) -> str | None:
    """The action id a history file belongs to: ``<id>.json`` or ``<file>.<id>``."""
    if name.endswith(".json") and valid_id(name[:-5]):
        return name[:-5]
    tail = name.rsplit(".", 1)[-1]
    return tail if valid_id(tail) else None


def folder(home: Home) -> Path:
    return home.root / HISTORY_DIR


ABSENT = "absent"


def digest(value: Any) -> str:
    """A value as ``sha256:<hex>`` of its canonical JSON: undo compares what an action left
    with what is there now without the record holding the value (a key, a URL's password)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str, allow_nan=True)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def digests(mapping: Mapping[str, Any]) -> dict[str, str]:
    """Every field of a row (or key of a config) as its digest."""
    return {str(k): digest(v) for k, v in mapping.items()}


@dataclass
class Pending:
    """What one operator write is keeping, filled in by the write paths as they go."""

    home: Home
    id: str
    at: float
    kept: dict[str, str] = field(default_factory=dict)     # file name -> kept copy's name
    meta: dict[str, Any] = field(default_factory=dict)
    named: bool = False     # the id is final: given (an action on several homes) or stamped under the lock


def stamp(pending: Pending) -> None:
    """Name *pending* by the time its write holds the lock (once; an id given is kept). Ids
    sort as actions landed: two console writes started together wait for the lock in either
    order, and an id taken before the wait named the second to land as the older, so undo's
    "newest" was not the action that came last."""
    if not pending.named:
        pending.at = time.time()
        pending.id = new_id(pending.at)
        pending.named = True


_current: contextvars.ContextVar[Pending | None] = contextvars.ContextVar("hermes_admin_history", default=None)


@contextmanager
def recording(home: Home, now: float, action_id: str | None = None) -> Iterator[Pending]:
    """Around one operator write: the write paths keep their before-copies for it.
    *action_id*: the id an action spanning several homes shares (default: a new one)."""
    pending = Pending(home, action_id or new_id(now), now, named=action_id is not None)
    token = _current.set(pending)
    try:
        with yamlcas.keeping(keep_config):   # a config edit's replace tells us first
            yield pending
    except BaseException:
        discard(pending)
        raise
    finally:
        _current.reset(token)


def discard(pending: Pending) -> None:
    """Remove the copies a write kept of files it then did not replace (it failed: a full
    disk, say). Left there, with no record beside them, they held keys and counted as
    actions in :func:`prune`: a run of failed retries pruned every real record away."""
    d = folder(pending.home)
    for file_name, name in list(pending.kept.items()):
        try:
            unchanged = os.path.samefile(d / name, pending.home.root / file_name) or (
                _bytes(d / name, follow=False) == _bytes(pending.home.root / file_name))
        except (OSError, StoreUnreadable):
            continue          # cannot tell: the copy stays, as any kept copy
        if unchanged:
            with contextlib.suppress(OSError):
                os.unlink(d / name)
            del pending.kept[file_name]


def _bytes(path: Path, *, follow: bool = True) -> bytes | None:
    got = safeio.read_checked(path, META_CAP * 8, follow=follow)
    return None if got is None else got[0]


def current(home: Home) -> Pending | None:
    """The operator write in progress on *home* on this thread, if any."""
    p = _current.get()
    return p if p is not None and p.home.root == home.root else None


def keep_config(path: Path, existed: bool, written: Mapping[str, Any], touched: frozenset[str]) -> None:
    """A config file an operator write is about to replace (:func:`store.config.yamlcas.before_replace`):
    keep it as it was, and record the digests of the top-level keys the edit wrote."""
    pending = current(Home(path.parent))
    if pending is None:
        return
    stamp(pending)          # under the config edit's own lock
    if existed:
        keep_before(pending, path, path.name)
    pending.meta["config"] = {"file": path.name, "touched": sorted(touched), "after": {
        k: digest(written.get(k, ABSENT)) for k in sorted(touched)}}


def _ensure_folder(home: Home) -> Path:
    d = folder(home)
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        st = os.lstat(d)
        if stat.S_ISLNK(st.st_mode):
            raise WriteFailed(d, "is a symlink; hermes-admin keeps no history through one, so "
                              "nothing was written (remove it)") from None
        if not stat.S_ISDIR(st.st_mode):
            what = "a regular file" if stat.S_ISREG(st.st_mode) else safeio.kind(st.st_mode)
            raise WriteFailed(d, f"is {what}, not a folder; nothing was written (remove it)") from None
    return d


def keep_before(pending: Pending, src: Path, file_name: str) -> None:
    """Keep *src* (about to be replaced) as ``<file_name>.<id>``: a hard link, else a copy."""
    d = _ensure_folder(pending.home)
    dst = d / f"{file_name}.{pending.id}"
    try:
        os.unlink(dst)          # an edit retried on a changed file keeps the latest "before"
    except FileNotFoundError:
        pass
    try:
        # os.link's follow_symlinks is not honoured on Linux (it links the symlink itself, and
        # the chmod below then refuses it): a config.yaml linked from a dotfiles folder is kept
        # by linking the file it points at.
        os.link(os.path.realpath(src), dst)
        os.chmod(dst, 0o600, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError:
        data = safeio.read_checked(src, META_CAP * 8)
        if data is None:
            return
        _write_new(dst, data[0])
    pending.kept[file_name] = dst.name


def _write_new(path: Path, data: bytes) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise WriteFailed(path, f"cannot keep the history copy ({exc.strerror})") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def save(pending: Pending, entry: dict[str, Any]) -> str | None:
    """Write ``<id>.json`` for an action that kept a copy; its id, or None if nothing was kept."""
    if not pending.kept and not pending.meta:
        return None
    meta = {"version": 1, "id": pending.id, "at": pending.at, "kept": pending.kept, **pending.meta, **entry}
    _write_new(_ensure_folder(pending.home) / f"{pending.id}.json",
               json.dumps(meta, ensure_ascii=False, allow_nan=False, default=str).encode())
    return pending.id


def _read(home: Home, name: str, cap: int) -> bytes | None:
    """A history file by its own *name*, inside the folder, no link followed; None: missing."""
    d = folder(home)
    if "/" in name or name in ("", ".", ".."):
        raise StoreUnreadable(d / name, "is not a file of the history folder; refused")
    try:
        if stat.S_ISLNK(os.lstat(d).st_mode):
            raise StoreUnreadable(d, "is a symlink; hermes-admin reads no history through one")
    except FileNotFoundError:
        return None
    got = safeio.read_checked(d / name, cap, follow=False)
    return None if got is None else got[0]


def load(home: Home, action_id: str) -> dict[str, Any]:
    """An action's record; StoreUnreadable naming the file when it is gone or broken."""
    if not valid_id(action_id):
        raise StoreUnreadable(folder(home) / action_id, "is not a history id")
    path = folder(home) / f"{action_id}.json"
    got = _read(home, path.name, META_CAP)
    if got is None:
        raise StoreUnreadable(path, "is not kept any more (pruned, or never written)")
    try:
        meta = json.loads(got)
    except (ValueError, RecursionError):
        raise StoreUnreadable(path, "is not valid JSON") from None
    if not isinstance(meta, dict) or meta.get("id") != action_id or not isinstance(meta.get("kept"), dict):
        raise StoreUnreadable(path, "is not a history record")
    return meta


def kept_bytes(home: Home, meta: dict[str, Any], file_name: str) -> bytes | None:
    """The copy of *file_name* the action kept; None when it kept none (the file did not
    exist). StoreUnreadable when the record names any other file, or the copy is gone."""
    name = meta["kept"].get(file_name)
    if name is None:
        return None
    record = folder(home) / f"{meta['id']}.json"
    if not isinstance(name, str) or name != f"{file_name}.{meta['id']}":
        raise StoreUnreadable(record, f"names {str(name)[:80]!r} as its copy of {file_name}, "
                              "not a file of its own; a forged or broken record is not used")
    got = _read(home, name, META_CAP * 8)
    if got is None:
        raise StoreUnreadable(folder(home) / name, f"is gone: the copy of {file_name} that {record.name} "
                              "needs to undo it (pruned, or removed by hand)")
    return got


def names(home: Home) -> list[str]:
    """The file names in the history folder; [] when there is no folder yet.

    StoreUnreadable naming the folder when something else stands at its path (a FIFO, a
    file, a symlink, dangling or not) or it cannot be listed: a history that cannot be read
    is reported, never shown as one with no action. Nothing is opened, so a FIFO never blocks.
    """
    d = folder(home)
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreUnreadable(d, f"cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(st.st_mode):
        safeio.refuse_dangling(d)
        raise StoreUnreadable(d, "is a symlink; hermes-admin reads no history through one")
    if not stat.S_ISDIR(st.st_mode):
        what = "a regular file" if stat.S_ISREG(st.st_mode) else safeio.kind(st.st_mode)
        raise StoreUnreadable(d, f"is {what}, not the history folder; hermes-admin will not read it")
    try:
        return os.listdir(d)
    except OSError as exc:
        raise StoreUnreadable(d, f"cannot be listed ({exc.strerror or exc})") from None


def prune(home: Home, now: float, keep: int = KEEP_COUNT, days: float = KEEP_DAYS) -> int:
    """Drop the oldest actions beyond *keep*, and any older than *days*; the number dropped."""
    try:   # the folder itself, never through a link: files elsewhere are not ours to drop
        fd = os.open(folder(home), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:                 # none, not a folder, or a link (ELOOP): nothing to prune
        return 0
    try:
        names = os.listdir(fd)
        ids = sorted({i for n in names if (i := _id_of(n)) is not None})
        cutoff = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now - days * 86400))
        drop = set(ids[:max(0, len(ids) - keep)]) | {i for i in ids if i < cutoff}
        for n in names:
            if _id_of(n) in drop:
                with contextlib.suppress(OSError):
                    os.unlink(n, dir_fd=fd)
        return len(drop)
    finally:
        os.close(fd)
