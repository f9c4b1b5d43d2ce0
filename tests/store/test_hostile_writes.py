"""RELIABILITY 24, 25, 26, 30 and the fsync spy: the write path cleans up, never
overwrites what it keeps, never replaces a config.yaml that changed under it, fails
clearly on a full disk, and syncs both the file and its directory.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from store import authfile
from store.config import edit as cfg
from store.config import yamledit
from store.config.yamlcas import EDIT_ATTEMPTS, ConfigChanged
from store.errors import WriteFailed
from store.ops import actions, audit
from store.paths import TEMP_PREFIX, Home
from store.transaction import apply
from tests.conftest import make_row, run_cli, write_store

KEY = "sk-or-v1-writesCANARY0000000000000000000000001"


def _store(home: Home) -> bytes:
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa", token=KEY), make_row("bbbbbb", priority=1)]}})
    return home.auth.read_bytes()


def _bump(home: Home) -> None:
    def change(doc: dict) -> None:
        row = doc["credential_pool"]["openrouter"][0]
        row["request_count"] = int(row.get("request_count") or 0) + 1
    apply(home, change, lock_timeout=5)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _temps(home: Home) -> list[str]:
    return sorted(p.name for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX))


# --- 24. killed writers leave nothing behind ------------------------------------------------

def test_next_write_removes_our_stale_temps_and_only_ours(tmp_home: Home) -> None:
    _store(tmp_home)
    dead = _dead_pid()
    ours_dead = tmp_home.root / f"{TEMP_PREFIX}auth.json.{dead}.abcd1234.tmp"
    ours_old = tmp_home.root / f"{TEMP_PREFIX}auth.json.{os.getppid()}.old00000.tmp"
    ours_backup = tmp_home.root / f"{TEMP_PREFIX}backup.{dead}.123.tmp"
    live = tmp_home.root / f"{TEMP_PREFIX}auth.json.{os.getppid()}.live0000.tmp"
    hermes_tmp = tmp_home.root / f"auth.json.tmp.{dead}.beef"          # Hermes's, not ours
    other = tmp_home.root / f"{TEMP_PREFIX}notes.txt"                   # our prefix, not a temp
    for p in (ours_dead, ours_old, ours_backup, live, hermes_tmp, other):
        p.write_text(KEY)
    os.utime(ours_old, (time.time() - 3600,) * 2)
    _bump(tmp_home)
    assert not ours_dead.exists() and not ours_old.exists() and not ours_backup.exists()
    assert live.exists() and hermes_tmp.exists() and other.exists()


def test_a_temp_that_is_the_live_store_is_never_swept(tmp_home: Home) -> None:
    """auth.json symlinked into a name that looks like our temp: that file is the store."""
    raw = _store(tmp_home)
    real = tmp_home.root / f"{TEMP_PREFIX}auth.json.{_dead_pid()}.real0000.tmp"
    os.replace(tmp_home.auth, real)
    tmp_home.auth.symlink_to(real.name)
    os.utime(real, (time.time() - 3600,) * 2)
    assert authfile.sweep_orphans(tmp_home) == []
    assert real.read_bytes() == raw


def test_negative_control_without_the_sweep_the_orphan_stays(tmp_home: Home,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _store(tmp_home)
    orphan = tmp_home.root / f"{TEMP_PREFIX}auth.json.{_dead_pid()}.abcd1234.tmp"
    orphan.write_text(KEY)
    monkeypatch.setattr(authfile, "sweep_orphans", lambda home, older_than=60.0: [])
    _bump(tmp_home)
    assert orphan.exists()


# --- 25. what is kept aside is never overwritten ----------------------------------------------

def test_keep_aside_never_reuses_a_name(tmp_home: Home) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    paths = [authfile.keep_aside(tmp_home.root, "auth.json.replaced", f"copy {i}".encode())
             for i in range(5)]
    assert len(set(paths)) == 5
    assert [p.read_text() for p in paths] == [f"copy {i}" for i in range(5)]
    assert all(oct(p.stat().st_mode & 0o777) == "0o600" for p in paths)


def test_keep_aside_does_not_follow_a_planted_symlink(tmp_home: Home, tmp_path: Path) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    target = tmp_path / "victim"
    target.write_text("victim")
    when = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for n in ("", "-2"):
        (tmp_home.root / f"auth.json.replaced-{when}{n}").symlink_to(target)
    p = authfile.keep_aside(tmp_home.root, "auth.json.replaced", b"mine")
    assert target.read_text() == "victim" and p.read_bytes() == b"mine"


def test_two_restores_in_one_second_keep_both_copies(tmp_home: Home) -> None:
    first = _store(tmp_home)
    authfile.keep_backup(tmp_home)
    _bump(tmp_home)
    second = tmp_home.auth.read_bytes()
    run_cli(tmp_home, "restore-backup", "--yes")
    _bump(tmp_home)
    _bump(tmp_home)
    third = tmp_home.auth.read_bytes()
    run_cli(tmp_home, "restore-backup", "--yes")
    kept = sorted(p for p in tmp_home.root.iterdir() if p.name.startswith("auth.json.replaced-"))
    contents = {p.read_bytes() for p in kept}
    assert second in contents and third in contents, [p.name for p in kept]
    assert first != second != third


def test_negative_control_a_fixed_name_loses_the_first_copy(tmp_home: Home) -> None:
    """The old way (one name per second, atomic replace) loses the first kept copy."""
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    name = tmp_home.root / f"auth.json.replaced-{time.strftime('%Y%m%dT%H%M%S')}"
    authfile.atomic_write_bytes(name, b"first")
    authfile.atomic_write_bytes(name, b"second")
    assert [p.read_bytes() for p in tmp_home.root.iterdir() if p.name.startswith("auth.json.replaced")] \
        == [b"second"]


# --- 26. config.yaml's lock-free writers -------------------------------------------------------

HERMES_EDIT = "model: hermes-wrote-this\n"


def _hermes_writes_once(home: Home) -> Callable[[], None]:
    state = {"done": False}

    def hook() -> None:
        if not state["done"]:
            state["done"] = True
            text = home.config.read_text()
            tmp = home.config.with_name("config.yaml.hermes-tmp")
            tmp.write_text(text + HERMES_EDIT)
            os.replace(tmp, home.config)       # Hermes: temp + rename, no lock
    return hook


def test_edit_is_redone_on_the_fresh_file(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    tmp_home.config.write_text("# operator notes\ncredential_pool_strategies:\n  anthropic: random\n")
    monkeypatch.setattr(yamledit, "before_replace_hook", _hermes_writes_once(tmp_home))
    cfg.set_strategy(tmp_home, "openrouter", "round_robin")
    text = tmp_home.config.read_text()
    assert "hermes-wrote-this" in text and "openrouter: round_robin" in text
    assert "anthropic: random" in text and "# operator notes" in text


def test_negative_control_without_the_check_hermes_edit_is_lost(tmp_home: Home,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    tmp_home.config.write_text("credential_pool_strategies:\n  anthropic: random\n")
    monkeypatch.setattr(yamledit, "before_replace_hook", _hermes_writes_once(tmp_home))
    monkeypatch.setattr(yamledit, "unchanged_since", lambda path, got: True)
    cfg.set_strategy(tmp_home, "openrouter", "round_robin")
    assert "hermes-wrote-this" not in tmp_home.config.read_text()


def test_retries_are_bounded_and_the_failure_is_clear(tmp_home: Home,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    tmp_home.config.write_text("x: 0\n")
    calls = {"n": 0}

    def always() -> None:
        calls["n"] += 1
        tmp_home.config.write_text(f"x: {calls['n']}\n")
    monkeypatch.setattr(yamledit, "before_replace_hook", always)
    with pytest.raises(ConfigChanged, match="changed by another writer") as err:
        cfg.set_strategy(tmp_home, "openrouter", "round_robin")
    assert calls["n"] == EDIT_ATTEMPTS and str(tmp_home.config) in str(err.value)
    assert tmp_home.config.read_text() == f"x: {EDIT_ATTEMPTS}\n"      # the other writer's, intact


def test_a_file_created_or_deleted_under_the_edit_counts_as_changed(tmp_home: Home,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    state = {"done": False}

    def create() -> None:
        if not state["done"]:
            state["done"] = True
            tmp_home.config.write_text(HERMES_EDIT)
    monkeypatch.setattr(yamledit, "before_replace_hook", create)
    cfg.set_strategy(tmp_home, "openrouter", "round_robin")
    assert "hermes-wrote-this" in tmp_home.config.read_text()


# --- 30. disk full -----------------------------------------------------------------------------

def _enospc_on_temp(real: Callable[[int], None]) -> Callable[[int], None]:
    def fsync(fd: int) -> None:
        if TEMP_PREFIX in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)
    return fsync


def test_disk_full_at_fsync_is_a_clear_error_and_nothing_is_left(tmp_home: Home,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC simulated at fsync of the temp file (where delayed allocation reports it)."""
    raw = _store(tmp_home)
    monkeypatch.setattr(os, "fsync", _enospc_on_temp(os.fsync))
    with pytest.raises(WriteFailed) as err:
        _bump(tmp_home)
    assert str(tmp_home.auth) in str(err.value) and "No space left" in str(err.value)
    assert err.value.exit_code == 3
    assert tmp_home.auth.read_bytes() == raw
    assert [n for n in _temps(tmp_home) if n.endswith(".tmp")] == []


def test_negative_control_disk_full_without_cleanup_leaves_a_temp(tmp_home: Home,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _store(tmp_home)
    monkeypatch.setattr(os, "fsync", _enospc_on_temp(os.fsync))
    monkeypatch.setattr(os, "unlink", lambda *a, **k: None)     # the cleanup switched off
    with pytest.raises(WriteFailed):
        _bump(tmp_home)
    assert [n for n in _temps(tmp_home) if n.endswith(".tmp")]


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Any:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); the monkeypatched ENOSPC test covers it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_real_full_tmpfs_cli_write_fails_naming_the_file(tiny_fs: Path) -> None:
    home = Home(tiny_fs / "home")
    home.root.mkdir(mode=0o700)
    rows = [make_row(f"{i:06x}", token=f"sk-or-v1-{i:040d}", priority=i) for i in range(15)]
    write_store(home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": rows}})
    raw = home.auth.read_bytes()
    filler = tiny_fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)   # fill the rest of the 64 KiB
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    # A write that changes something (a reset of a key already ok writes nothing at all).
    proc = run_cli(home, "cooldown", "openrouter", "000001", "--for", "15m", ok=False)
    assert proc.returncode in (1, 3), proc.stderr
    assert "No space left" in proc.stderr and str(home.root) in proc.stderr
    assert "internal error" not in proc.stderr
    assert home.auth.read_bytes() == raw
    assert not [p for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX)]


# --- fsync spy ---------------------------------------------------------------------------------

def _fsynced_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)
    monkeypatch.setattr(os, "fsync", spy)
    return synced


def _assert_file_and_dir_synced(home: Home, synced: list[str]) -> None:
    root = os.path.realpath(home.root)
    assert any(Path(p).name.startswith(TEMP_PREFIX + "auth.json") for p in synced), synced
    assert root in synced, synced


def test_fsync_spy_file_and_directory_are_synced(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    _store(tmp_home)
    synced = _fsynced_paths(monkeypatch)
    _bump(tmp_home)
    _assert_file_and_dir_synced(tmp_home, synced)


@pytest.mark.parametrize("remove", ["file", "dir"])
def test_negative_control_the_spy_sees_a_missing_fsync(tmp_home: Home, monkeypatch: pytest.MonkeyPatch,
                                                        remove: str) -> None:
    _store(tmp_home)
    synced = _fsynced_paths(monkeypatch)
    if remove == "dir":
        monkeypatch.setattr(authfile, "_fsync_dir", lambda directory: None)
    else:
        real_write, real_dir = authfile.atomic_write_bytes, authfile._fsync_dir

        def no_file_sync(path: Path, data: bytes, **k: Any) -> None:
            real_write(path, data, **{**k, "sync": False})
            real_dir(Path(path).parent)
        monkeypatch.setattr(authfile, "atomic_write_bytes", no_file_sync)
    _bump(tmp_home)
    with pytest.raises(AssertionError):
        _assert_file_and_dir_synced(tmp_home, synced)


def test_audit_line_is_json_and_redacted_after_a_write(tmp_home: Home) -> None:
    """The write path's audit companion: reasons and messages pass the redactor."""
    _store(tmp_home)
    out = apply(tmp_home, lambda d: actions.cooldown(d, "openrouter", "aaaaaa", 2e9, 1.9e9,
                                                     reason=f"leaked {KEY} here"), lock_timeout=5)
    audit.record(tmp_home, out, via="test", extra={"note": KEY})
    text = tmp_home.audit.read_text()
    assert KEY not in text and json.loads(text.splitlines()[-1])["via"] == "test"


def test_a_config_edit_also_sweeps_a_dead_writers_temp(tmp_home: Home) -> None:
    tmp_home.root.mkdir(mode=0o700, exist_ok=True)
    orphan = tmp_home.root / f"{TEMP_PREFIX}config.yaml.{_dead_pid()}.abcd1234.tmp"
    orphan.write_text(f"api_key: {KEY}\n")
    cfg.set_strategy(tmp_home, "openrouter", "round_robin")
    assert not orphan.exists()
