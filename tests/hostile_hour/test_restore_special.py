"""Hostile hour: ``restore-backup`` with a special file at auth.json or auth.json.bak.

RELIABILITY 22: a FIFO, directory or device in place of a file we read is exit 3 within a
bound, the lock never held while waiting on it. ``restore-backup`` read both files with a
plain blocking ``read_bytes``: a FIFO at auth.json made it wait forever holding auth.lock
(every agent on the host stalled behind it), a FIFO at the backup hung it before the lock,
and ``/dev/zero`` behind either grew without bound. The subprocess timeout bounds each wait.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

import pytest

from store import authfile, safeio
from store.errors import StoreUnreadable
from store.ops import restore
from store.paths import Home
from tests.conftest import make_row, run_cli, write_store

KEY = "sk-or-v1-hostileHOUR000000000000000000000000001"


def _home_with_backup(home: Home) -> bytes:
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa", token=KEY)]}})
    raw = home.auth.read_bytes()
    home.backup.write_bytes(raw)
    os.chmod(home.backup, 0o600)
    return raw


def _special(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")


def _lock_is_free(home: Home) -> bool:
    fd = os.open(home.lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize("kind", ["fifo", "dir", "device"])
@pytest.mark.parametrize("which", ["auth", "backup"])
def test_restore_backup_refuses_a_special_file_at_once(tmp_home: Home, which: str, kind: str) -> None:
    _home_with_backup(tmp_home)
    target = tmp_home.auth if which == "auth" else tmp_home.backup
    _special(target, kind)
    try:
        proc = run_cli(tmp_home, "restore-backup", "--yes", ok=False, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"restore-backup hung on a {kind} at {target.name}")
    assert proc.returncode == 3, proc.stderr
    assert str(target) in proc.stderr and "not a regular file" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr
    assert _lock_is_free(tmp_home)
    # nothing written: the special file is still there, no copy was kept aside
    assert not target.is_file() or target.is_symlink()
    assert not list(tmp_home.root.glob("auth.json.replaced-*"))


def test_restore_backup_in_process_reads_the_current_file_checked(tmp_home: Home) -> None:
    raw = _home_with_backup(tmp_home)
    _special(tmp_home.auth, "fifo")
    with pytest.raises(StoreUnreadable, match="FIFO"):
        restore.restore_backup(tmp_home, raw, lock_timeout=1)
    assert _lock_is_free(tmp_home)


def test_negative_control_a_plain_read_would_block(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the checked read switched back to a plain one, the FIFO is opened blocking:
    seen here as the open being attempted on the FIFO (a real open would never return)."""
    raw = _home_with_backup(tmp_home)
    _special(tmp_home.auth, "fifo")
    opened: list[Path] = []

    def plain(path: Path, cap: int, *a: object, **k: object) -> tuple[bytes, os.stat_result]:
        opened.append(Path(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # non-blocking, or the test would hang
        try:
            return os.read(fd, cap), os.fstat(fd)
        finally:
            os.close(fd)

    monkeypatch.setattr(safeio, "read_checked", plain)
    restore.restore_backup(tmp_home, raw, lock_timeout=1)
    assert tmp_home.auth in opened           # the FIFO was read as if it were the store
    assert authfile.read_store(tmp_home).doc is not None   # and replaced: a write over a FIFO
