"""Reliability bar, file-level part (RELIABILITY.md 4, 6, 7, 8): crashes mid-write,
permissions under any umask, planted symlinks, and corrupt stores that must never
be "fixed" by a write."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Callable

import pytest

from store import authfile
from store.errors import LinkedStore, StoreUnreadable
from store.ops import actions
from store.paths import TEMP_PREFIX, Home
from store.transaction import apply, transaction
from tests.helpers_proc import counter_doc, result, spawn, write_doc


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def _orphans(home: Home) -> list[Path]:
    return sorted(p for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX))


@pytest.fixture
def home(tmp_path: Path) -> Home:
    h = Home(tmp_path / "hermes")
    write_doc(h, counter_doc())
    return h


def _bump(home: Home) -> None:
    with transaction(home, lock_timeout=2) as doc:
        doc["credential_pool"]["openrouter"][0]["request_count"] += 1


# 4. Crash mid-write ------------------------------------------------------------------------

@pytest.mark.slow
def test_crash_between_temp_write_and_replace(home: Home) -> None:
    before = home.auth.read_bytes()
    proc = spawn("crash_before_replace", home=str(home.root))
    proc.communicate(timeout=30)
    assert proc.returncode == -9, "the worker was meant to die by SIGKILL right before the replace"

    assert home.auth.read_bytes() == before
    orphans = _orphans(home)
    assert len(orphans) == 1, orphans
    # The orphan holds the crashed process's new document, which nobody must pick up.
    assert json.loads(orphans[0].read_bytes())["written_by_crashed_process"] is True
    assert _mode(orphans[0]) == 0o600
    snap = authfile.read_store(home)
    assert snap.raw == before and "written_by_crashed_process" not in snap.doc

    # A fresh temp whose writer is alive survives a sweep with the default age (it may be
    # mid-write); the crashed writer's is removed at once, its pid being gone...
    live = home.root / f"{TEMP_PREFIX}auth.json.{os.getppid()}.live0000.tmp"
    live.write_bytes(b"{}")
    assert authfile.sweep_orphans(home) == orphans
    assert live.exists()
    # ...and a live writer's is removed once it is old enough.
    assert authfile.sweep_orphans(home, older_than=0) == [live]
    assert _orphans(home) == []
    assert home.lock.exists() and home.auth.exists()
    # The next write is not disturbed by the crash.
    _bump(home)
    doc = authfile.read_store(home).doc
    assert "written_by_crashed_process" not in doc
    assert doc["credential_pool"]["openrouter"][0]["request_count"] == 1


def test_backup_of_an_unchanged_store_leaves_no_temp_link(home: Home) -> None:
    """After a write that died past keep_backup (crash, full disk), auth.json.bak and
    auth.json are the same inode; renaming a second link of that inode over the backup
    is a no-op in POSIX, so the temp link must not be left behind."""
    authfile.keep_backup(home)
    authfile.keep_backup(home)
    assert _orphans(home) == []
    assert home.backup.read_bytes() == home.auth.read_bytes()


@pytest.mark.slow
def test_negative_control_in_place_writer_killed_damages_the_store(home: Home) -> None:
    """The same crash with an in-place rewrite (what atomic replace prevents) loses data."""
    before = home.auth.read_bytes()
    proc = spawn("crash_in_place", home=str(home.root))
    proc.communicate(timeout=30)
    assert proc.returncode == -9
    assert home.auth.read_bytes() != before
    with pytest.raises(StoreUnreadable):
        authfile.read_store(home)


def test_sweeper_only_touches_our_temp_names(home: Home) -> None:
    theirs = home.root / "auth.json.tmp.1234.abcdef"     # Hermes's own temp name
    ours = home.root / f"{TEMP_PREFIX}auth.json.x.tmp"
    theirs.write_text("{}")
    ours.write_text("{}")
    assert authfile.sweep_orphans(home, older_than=0) == [ours]
    assert theirs.exists() and home.auth.exists()


# 6. Permissions ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_modes_under_umask(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "new-home"
    modes = result(spawn("permissions", home=str(home), umask=umask))
    assert modes["home"] == 0o700
    assert modes["auth"] == 0o600
    assert modes["backup"] == 0o600
    # Every temp file (the store's and the backup's) was 0600 at the moment it was renamed.
    assert len(modes["temp"]) >= 3, modes["temp"]
    assert {m for _, m in modes["temp"]} == {0o600}, modes["temp"]
    assert modes["leftovers"] == []


def test_readable_store_is_reported(home: Home) -> None:
    assert authfile.permission_problems(home) == []     # control: a tidy home is quiet
    os.chmod(home.auth, 0o640)
    os.chmod(home.root, 0o755)
    problems = authfile.permission_problems(home)
    assert any(str(home.auth) in p and "0640" in p for p in problems), problems
    assert any(str(home.root) in p for p in problems), problems
    # Reporting is all it does: nothing was chmod-ed behind the operator's back.
    assert _mode(home.auth) == 0o640


# 7. Symlinks -------------------------------------------------------------------------------

def test_symlink_at_backup_name_is_replaced_not_followed(home: Home, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.chmod(victim, 0o644)
    home.backup.symlink_to(victim)
    _bump(home)
    _bump(home)
    assert victim.read_bytes() == b"precious"
    assert _mode(victim) == 0o644
    assert not home.backup.is_symlink()
    assert authfile.parse_store(home.backup.read_bytes(), home.backup)["credential_pool"]
    assert _mode(home.backup) == 0o600


def test_symlink_at_predictable_backup_temp_name(home: Home, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The backup's temp name is guessable (pid + clock); pin the clock, plant a link there."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    monkeypatch.setattr(authfile.time, "monotonic_ns", lambda: 42)
    planted = home.root / f"{TEMP_PREFIX}backup.{os.getpid()}.42.tmp"
    planted.symlink_to(victim)
    _bump(home)
    assert victim.read_bytes() == b"precious"
    assert not home.backup.is_symlink()
    assert authfile.read_store(home).doc["credential_pool"]["openrouter"][0]["request_count"] == 1


@pytest.mark.parametrize("where", ["same-dir", "other-dir"])
def test_symlinked_store_is_read_but_never_written(tmp_path: Path, where: str) -> None:
    """Hermes replaces a linked auth.json with a file on its next write (the homes stop
    sharing), so every write is refused before anything is created (tests/store/test_linked_store.py)."""
    home = Home(tmp_path / "hermes")
    home.root.mkdir(mode=0o700)
    real_dir = home.root if where == "same-dir" else tmp_path / "elsewhere"
    real_dir.mkdir(mode=0o700, exist_ok=True)
    real = real_dir / "auth-real.json"
    real.write_bytes(json.dumps(counter_doc()).encode())
    home.auth.symlink_to(real)
    raw = real.read_bytes()

    assert authfile.read_store(home).doc["credential_pool"]["openrouter"][0]["request_count"] == 0
    with pytest.raises(LinkedStore):
        _bump(home)
    assert home.auth.is_symlink() and os.readlink(home.auth) == str(real)
    assert real.read_bytes() == raw
    assert not home.lock.exists() and not home.backup.exists()
    assert not [p for p in real_dir.iterdir() if p.name.endswith(".tmp")]


def test_symlink_at_lock_name_is_refused(home: Home, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    before_store = home.auth.read_bytes()
    home.lock.symlink_to(victim)
    victim_stat = victim.stat()
    with pytest.raises(StoreUnreadable) as exc:
        _bump(home)
    assert str(home.lock) in str(exc.value) and "symlink" in str(exc.value)
    assert victim.read_bytes() == b"precious"
    assert victim.stat().st_mtime_ns == victim_stat.st_mtime_ns
    assert home.auth.read_bytes() == before_store


# 8. Corruption is never fixed silently -----------------------------------------------------

CORRUPT: dict[str, tuple[bytes, str]] = {
    "empty": (b"", "empty"),
    "whitespace": (b"  \n", "empty"),
    "truncated": (json.dumps(counter_doc()).encode()[:-40], "invalid JSON"),
    "invalid-utf8": (b'{"credential_pool": {"openrouter": []}, "x": "\xff\xfe"}', "UTF-8"),
    "array": (b"[1, 2, 3]", "list"),
    "no-pools": (b'{"version": 1, "active_provider": null}', "credential_pool"),
    "pool-not-list": (b'{"credential_pool": {"openrouter": {"id": "x"}}}', "not a list"),
}

WRITES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "transaction": lambda doc: doc.setdefault("touched", True),
    "add": lambda doc: actions.add_key(doc, "openrouter", "sk-or-v1-" + "c" * 40, 1.0e9),
    "remove": lambda doc: actions.remove(doc, "openrouter", "1"),
    "reset": lambda doc: actions.reset(doc, "openrouter", None, 1.0e9),
    "cooldown": lambda doc: actions.cooldown(doc, "openrouter", "1", 2.0e9, 1.0e9),
    "priority": lambda doc: actions.set_priority(doc, "openrouter", "1", 1),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_store_is_reported_and_never_written(home: Home, case: str) -> None:
    raw, reason = CORRUPT[case]
    home.backup.write_bytes(home.auth.read_bytes())     # a last-good copy exists
    home.auth.write_bytes(raw)
    mtime = home.auth.stat().st_mtime_ns
    backup_before = home.backup.read_bytes()

    with pytest.raises(StoreUnreadable) as exc:
        authfile.read_store(home)
    msg = str(exc.value)
    assert str(home.auth) in msg and reason in msg, msg
    assert str(home.backup) in msg, f"no recovery hint naming the backup: {msg}"

    for name, write in WRITES.items():
        with pytest.raises(StoreUnreadable) as wexc:
            apply(home, write, lock_timeout=2)
        assert str(home.auth) in str(wexc.value), name
        assert home.auth.read_bytes() == raw, f"{name} changed a corrupt store"
        assert home.auth.stat().st_mtime_ns == mtime, name
        assert home.backup.read_bytes() == backup_before, f"{name} replaced the last good copy"
    assert not _orphans(home)


def test_corrupt_store_without_backup_still_names_path_and_reason(home: Home) -> None:
    home.auth.write_bytes(b"{")
    with pytest.raises(StoreUnreadable) as exc:
        authfile.read_store(home)
    assert exc.value.path == home.auth and "invalid JSON" in exc.value.reason
    assert exc.value.exit_code == 3


@pytest.mark.parametrize("name", sorted(WRITES))
def test_negative_control_same_writes_change_a_valid_store(home: Home, name: str) -> None:
    """The harness above would notice a write: on a valid store each one does write."""
    before = home.auth.read_bytes()
    apply(home, WRITES[name], lock_timeout=2)
    assert home.auth.read_bytes() != before
