"""store/authfile.py to the value: which bytes are a store and which are refused (with the
reason the operator reads), what an atomic write leaves on disk (mode, no temp, the old file
on failure), the copies kept aside and the backup, and which temp files a sweep removes.

The hostile-file properties are in tests/store/test_hostile_files.py and test_hostile_shape.py;
these tests pin each decision, and the controls at the end make the mistake (tests/mutant.py).
"""

from __future__ import annotations

import json
import os
import stat
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from store import authfile
from store.authfile import (
    RECOVERY_HINT,
    atomic_write_bytes,
    ensure_home,
    keep_aside,
    keep_backup,
    linked_store,
    load_json_bytes,
    parse_store,
    permission_problems,
    read_store,
    refuse_linked,
    refuse_special,
    serialize,
    sweep_orphans,
)
from store.errors import LinkedStore, StoreUnreadable, WriteFailed
from store.paths import TEMP_PREFIX, Home
from tests.mutant import mutant

GOOD = b'{"providers": {}, "credential_pool": {}}'
DEAD_PID = 4_194_303          # above any pid this machine hands out in a test's lifetime


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _refused(raw: bytes, backup: Path | None = None) -> StoreUnreadable:
    with pytest.raises(StoreUnreadable) as got:
        parse_store(raw, Path("/h/auth.json"), backup)
    assert got.value.path == Path("/h/auth.json")
    return got.value


# --- parse_store -----------------------------------------------------------------------------

@pytest.mark.parametrize("raw, reason", [
    (b"", "file is empty"), (b" \n\t ", "file is empty"),
    (b"{\xff}", "not UTF-8 (byte 1)"), (b'{"a": "\xc3"}', "not UTF-8 (byte 7)"),
    (b'{"providers": {}', "invalid JSON at line 1 column 17: Expecting ',' delimiter"),
    (b'{"providers": {}}\n x', "invalid JSON at line 2 column 2: Extra data"),
    (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply to be a credential store"),
    (b"[]", "top level is a JSON list, not an object"), (b'"x"', "top level is a JSON str, not an object"),
    (b"{}", "neither 'providers' nor 'credential_pool' is an object"),
    (b'{"providers": [], "credential_pool": 1}', "neither 'providers' nor 'credential_pool' is an object"),
])
def test_parse_store_refuses_with_the_reason(raw: bytes, reason: str) -> None:
    err = _refused(raw)
    assert err.reason == reason and err.hint is None


@pytest.mark.parametrize("raw", [
    GOOD, b'{"providers": {}}', b'{"credential_pool": {}}', b"\xef\xbb\xbf" + GOOD, b"\n  " + GOOD + b"\n",
])
def test_parse_store_accepts_either_section(raw: bytes) -> None:
    assert parse_store(raw, Path("/h/auth.json")) == json.loads(raw.decode("utf-8-sig"))


def test_the_recovery_hint_names_the_backup_only_when_it_exists(tmp_path: Path) -> None:
    backup = tmp_path / "auth.json.bak"
    assert _refused(b"", backup).hint is None
    backup.write_bytes(GOOD)
    hint = RECOVERY_HINT.format(backup=backup)
    assert hint.endswith(f"the last good copy is {backup}")
    for raw in (b"", b"{\xff}", b"{", b"[" * 100_000, b"[]", b"{}", b'{"credential_pool": {"p": 1}}'):
        assert _refused(raw, backup).hint == hint, raw


def test_an_encrypted_store_is_refused_before_it_is_parsed() -> None:
    raw = b"HRMSENC\x01" + b"\x00" * 40
    err = _refused(raw)
    assert type(err).__name__ == "EncryptedStore" and "envelope version 1" in err.reason


def test_parse_store_parses_with_the_loads_it_is_given() -> None:
    seen: list[str] = []

    def loads(text: str) -> object:
        seen.append(text)
        return json.loads(text)
    assert parse_store(b"\xef\xbb\xbf" + GOOD, Path("a"), loads=loads) == {"providers": {}, "credential_pool": {}}
    assert seen == [GOOD.decode()]


def test_load_json_bytes_strips_a_bom() -> None:
    assert load_json_bytes(b"\xef\xbb\xbf[1]") == [1] and load_json_bytes(b"[2]") == [2]


# --- read_store, serialize -------------------------------------------------------------------

def test_read_store_of_a_missing_file_is_an_empty_snapshot(tmp_home: Home) -> None:
    before = time.time()
    snap = read_store(tmp_home)
    assert (snap.path, snap.doc, snap.raw, snap.mtime_ns, snap.exists) == (tmp_home.auth, None, None, None, False)
    assert before <= snap.read_at <= time.time()


def test_read_store_keeps_the_bytes_and_their_mtime(tmp_home: Home) -> None:
    tmp_home.auth.write_bytes(GOOD)
    before = time.time()
    snap = read_store(tmp_home)
    assert snap.path == tmp_home.auth and before <= snap.read_at <= time.time()
    assert snap.doc == {"providers": {}, "credential_pool": {}} and snap.raw == GOOD and snap.exists
    assert snap.mtime_ns == os.stat(tmp_home.auth).st_mtime_ns


def test_read_store_names_the_backup_of_this_home(tmp_home: Home) -> None:
    tmp_home.auth.write_bytes(b"{")
    tmp_home.backup.write_bytes(GOOD)
    with pytest.raises(StoreUnreadable) as got:
        read_store(tmp_home)
    assert got.value.hint == RECOVERY_HINT.format(backup=tmp_home.backup)
    assert tmp_home.auth.read_bytes() == b"{"          # reading never writes


def test_serialize_stamps_version_and_time_and_keeps_text_readable() -> None:
    doc: dict = {"providers": {}, "label": "caf\u00e9", "version": 9}
    before = datetime.now(timezone.utc)
    raw = serialize(doc)
    assert doc["version"] == 1
    stamped = datetime.fromisoformat(doc["updated_at"])
    assert stamped.tzinfo is not None and before <= stamped <= datetime.now(timezone.utc)
    assert raw == json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")
    assert "caf\u00e9".encode() in raw and b'\n  "providers": {}' in raw


# --- links -----------------------------------------------------------------------------------

def test_linked_store_is_none_for_a_file_or_nothing(tmp_home: Home) -> None:
    assert linked_store(tmp_home) is None
    tmp_home.auth.write_bytes(GOOD)
    assert linked_store(tmp_home) is None
    refuse_linked(tmp_home)           # no error


def test_a_linked_store_names_its_target_and_the_lock(tmp_home: Home, tmp_path: Path) -> None:
    target = tmp_path / "shared.json"
    target.write_bytes(GOOD)
    os.symlink(target, tmp_home.auth)
    err = linked_store(tmp_home)
    assert isinstance(err, LinkedStore) and err.path == tmp_home.auth
    assert err.reason == authfile.LINKED_REASON.format(target=str(target), lock=tmp_home.lock)
    assert err.hint == authfile.LINKED_HINT
    with pytest.raises(LinkedStore):
        refuse_linked(tmp_home)


def test_a_relative_link_is_shown_with_where_it_leads(tmp_home: Home) -> None:
    (tmp_home.root / "real.json").write_bytes(GOOD)
    os.symlink("real.json", tmp_home.auth)
    err = linked_store(tmp_home)
    assert err is not None
    assert err.reason.startswith(f"is a symlink to real.json ({tmp_home.root / 'real.json'});")


def test_a_link_to_a_fifo_says_what_it_points_at_and_a_dangling_one_is_the_link(tmp_home: Home) -> None:
    fifo = tmp_home.root / "pipe"
    os.mkfifo(fifo)
    os.symlink(fifo, tmp_home.auth)
    with pytest.raises(StoreUnreadable) as got:
        refuse_linked(tmp_home)
    assert not isinstance(got.value, LinkedStore) and "FIFO" in got.value.reason
    os.unlink(tmp_home.auth)
    os.symlink(tmp_home.root / "gone.json", tmp_home.auth)
    with pytest.raises(LinkedStore):
        refuse_linked(tmp_home)


# --- atomic_write_bytes, refuse_special ------------------------------------------------------

def _temps(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.startswith(TEMP_PREFIX))


def test_atomic_write_replaces_the_file_with_the_mode_asked(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"old")
    os.chmod(path, 0o644)
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new" and _mode(path) == 0o600 and _temps(tmp_path) == []
    atomic_write_bytes(path, b"newer", mode=0o640, sync=False)
    assert path.read_bytes() == b"newer" and _mode(path) == 0o640


def test_atomic_write_through_a_link_replaces_its_target_only_when_asked(tmp_path: Path) -> None:
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_bytes(b"old")
    os.symlink(target, link)
    atomic_write_bytes(link, b"new")
    assert os.path.islink(link) and target.read_bytes() == b"new"
    with pytest.raises(WriteFailed) as got:
        atomic_write_bytes(link, b"newer", follow_link=False)
    assert got.value.path == link and got.value.reason.startswith("is a symlink;")
    assert target.read_bytes() == b"new" and _temps(tmp_path) == []


def test_atomic_write_names_its_temp_for_the_file_and_this_process(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = os.replace

    def spy(src: str, dst: object) -> None:
        seen.append(os.path.basename(src))
        assert _mode(Path(src)) == 0o640            # the mode is set before the data is in place
        real(src, dst)
    monkeypatch.setattr(authfile.os, "replace", spy)
    atomic_write_bytes(tmp_path / "f.json", b"x", mode=0o640)
    assert len(seen) == 1 and seen[0].startswith(f"{TEMP_PREFIX}f.json.{os.getpid()}.")
    assert seen[0].endswith(".tmp")


def test_atomic_write_syncs_file_and_folder_unless_told_not_to(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(authfile.os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    atomic_write_bytes(tmp_path / "a", b"x")
    assert len(calls) == 2
    calls.clear()
    atomic_write_bytes(tmp_path / "b", b"x", sync=False)
    assert calls == []


def test_atomic_write_sets_the_owner_and_shrugs_off_a_refusal(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    owners: list[tuple[int, int]] = []
    real = os.fchown

    def spy(fd: int, uid: int, gid: int) -> None:
        real(fd, uid, gid)                  # the temp file's own descriptor, or this raises
        owners.append((uid, gid))
    monkeypatch.setattr(authfile.os, "fchown", spy)
    atomic_write_bytes(tmp_path / "a", b"x", owner=(os.getuid(), os.getgid()))
    assert owners == [(os.getuid(), os.getgid())]
    assert (os.stat(tmp_path / "a").st_uid, os.stat(tmp_path / "a").st_gid) == (os.getuid(), os.getgid())
    atomic_write_bytes(tmp_path / "b", b"x")
    assert len(owners) == 1

    def refuse(fd: int, uid: int, gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(authfile.os, "fchown", refuse)
    atomic_write_bytes(tmp_path / "c", b"y", owner=(12345, 12345))
    assert (tmp_path / "c").read_bytes() == b"y"


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"old")

    def full(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(authfile.os, "replace", full)
    with pytest.raises(WriteFailed) as got:
        atomic_write_bytes(path, b"new")
    assert got.value.reason == "write failed (No space left on device); the file was not changed"
    assert path.read_bytes() == b"old" and _temps(tmp_path) == []

    def interrupted(src: str, dst: object) -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(authfile.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old" and _temps(tmp_path) == []


def test_no_temp_can_be_made_in_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(WriteFailed) as got:
        atomic_write_bytes(tmp_path / "gone" / "f.json", b"x")
    assert got.value.path == tmp_path / "gone" / "f.json"
    assert got.value.reason == "cannot create a temp file beside it (No such file or directory); nothing was written"


def test_refuse_special(tmp_path: Path) -> None:
    refuse_special(tmp_path / "missing")
    (tmp_path / "plain").write_bytes(b"")
    refuse_special(tmp_path / "plain")
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "plain", tmp_path / "link")
    cases = {tmp_path / "fifo": "is a FIFO (named pipe), not a regular file; nothing was written",
             tmp_path: "is a directory, not a regular file; nothing was written",
             tmp_path / "link": "is a symlink; hermes-admin does not write through one here, nothing was written",
             tmp_path / "plain" / "x": "cannot be checked (Not a directory); nothing was written"}
    for path, reason in cases.items():
        with pytest.raises(WriteFailed) as got:
            refuse_special(path)
        assert (got.value.path, got.value.reason) == (path, reason)
    with pytest.raises(WriteFailed):
        atomic_write_bytes(tmp_path / "fifo", b"x", follow_link=False)
    assert _temps(tmp_path) == []


# --- keep_aside ------------------------------------------------------------------------------

@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> str:
    at = time.gmtime(1_800_000_000)
    monkeypatch.setattr(authfile.time, "gmtime", lambda *a: at)
    return "20270115T080000"


def test_keep_aside_names_each_copy_and_never_overwrites(tmp_path: Path, frozen: str) -> None:
    first = keep_aside(tmp_path, "auth.json.replaced", b"one")
    assert first == tmp_path / f"auth.json.replaced-{frozen}"
    second = keep_aside(tmp_path, "auth.json.replaced", b"two")
    third = keep_aside(tmp_path, "auth.json.replaced", b"three")
    assert (second.name, third.name) == (f"auth.json.replaced-{frozen}-2", f"auth.json.replaced-{frozen}-3")
    assert [p.read_bytes() for p in (first, second, third)] == [b"one", b"two", b"three"]
    assert {_mode(p) for p in (first, second, third)} == {0o600}


def test_keep_aside_creates_its_copy_private_from_the_first_instant(tmp_path: Path, frozen: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only chmod-ed after: a copy of every key is never open to others, even briefly."""
    monkeypatch.setattr(authfile.os, "fchmod", lambda fd, mode: None)
    old = os.umask(0o022)
    try:
        assert _mode(keep_aside(tmp_path, "s", b"x")) == 0o600
    finally:
        os.umask(old)


def test_keep_aside_steps_past_a_planted_link(tmp_path: Path, frozen: str) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim")
    os.symlink(victim, tmp_path / f"s-{frozen}")
    got = keep_aside(tmp_path, "s", b"data")
    assert got.name == f"s-{frozen}-2" and victim.read_bytes() == b"victim"


def test_keep_aside_writes_everything_even_in_short_writes(tmp_path: Path, frozen: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.write
    monkeypatch.setattr(authfile.os, "write", lambda fd, data: real(fd, bytes(data[:3])))
    data = bytes(range(256)) * 4
    assert keep_aside(tmp_path, "s", data).read_bytes() == data


def test_keep_aside_gives_up_after_999_copies_in_one_second(tmp_path: Path, frozen: str) -> None:
    (tmp_path / f"s-{frozen}").write_bytes(b"")
    for n in range(2, 999):
        (tmp_path / f"s-{frozen}-{n}").write_bytes(b"")
    assert keep_aside(tmp_path, "s", b"last").name == f"s-{frozen}-999"
    with pytest.raises(WriteFailed) as got:
        keep_aside(tmp_path, "s", b"one too many")
    assert got.value.path == tmp_path / "s"
    assert got.value.reason == "999 kept-aside copies already exist for this second"


def test_keep_aside_failures_leave_nothing(tmp_path: Path, frozen: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(WriteFailed) as got:
        keep_aside(tmp_path / "gone", "s", b"x")
    assert got.value.path == tmp_path / "gone" / f"s-{frozen}"
    assert got.value.reason == "cannot keep a copy aside (No such file or directory)"

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(authfile.os, "write", full)
    with pytest.raises(WriteFailed) as got:
        keep_aside(tmp_path, "s", b"x")
    assert got.value.reason == "cannot keep a copy aside (No space left on device)"
    assert os.listdir(tmp_path) == []


# --- keep_backup -----------------------------------------------------------------------------

def test_keep_backup_links_the_store_at_0600(tmp_home: Home) -> None:
    keep_backup(tmp_home)
    assert not tmp_home.backup.exists()
    tmp_home.auth.write_bytes(GOOD)
    os.chmod(tmp_home.auth, 0o644)
    keep_backup(tmp_home)
    assert os.stat(tmp_home.backup).st_ino == os.stat(tmp_home.auth).st_ino
    assert _mode(tmp_home.backup) == 0o600 and _temps(tmp_home.root) == []
    keep_backup(tmp_home)         # both names one inode already: nothing to do, nothing left
    assert _temps(tmp_home.root) == [] and tmp_home.backup.read_bytes() == GOOD


def test_keep_backup_replaces_a_planted_link_and_follows_a_linked_store(tmp_home: Home, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim")
    os.symlink(victim, tmp_home.backup)
    target = tmp_path / "shared.json"
    target.write_bytes(GOOD)
    os.symlink(target, tmp_home.auth)
    keep_backup(tmp_home)
    assert victim.read_bytes() == b"victim" and not os.path.islink(tmp_home.backup)
    assert os.stat(tmp_home.backup).st_ino == os.stat(target).st_ino
    assert _temps(tmp_home.root) == [] and _temps(tmp_path) == []


def test_keep_backup_copies_where_links_fail(tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_home.auth.write_bytes(GOOD)

    def no_links(*a: object, **kw: object) -> None:
        raise OSError(1, "Operation not permitted")
    monkeypatch.setattr(authfile.os, "link", no_links)
    keep_backup(tmp_home)
    assert tmp_home.backup.read_bytes() == GOOD and _mode(tmp_home.backup) == 0o600
    assert os.stat(tmp_home.backup).st_ino != os.stat(tmp_home.auth).st_ino and _temps(tmp_home.root) == []


# --- sweep_orphans ---------------------------------------------------------------------------

def _temp(home: Home, name: str, age: float = 0.0) -> Path:
    path = home.root / f"{TEMP_PREFIX}{name}"
    path.write_bytes(b"secret copy")
    if age:
        t = time.time() - age
        os.utime(path, (t, t))
    return path


def test_a_fresh_temp_goes_only_when_the_pid_in_its_name_is_gone(tmp_home: Home) -> None:
    """The pid is the first all-digit part before the suffix; no pid, ours, or a live one: kept."""
    gone = [_temp(tmp_home, f"auth.json.{DEAD_PID}.ab12.tmp"), _temp(tmp_home, f"backup.{DEAD_PID}.123.tmp"),
            _temp(tmp_home, f"auth.json.x.{DEAD_PID}.7.tmp")]
    kept = [_temp(tmp_home, f"auth.json.{os.getpid()}.ab12.tmp"), _temp(tmp_home, f"a.{os.getppid()}.ab12.tmp"),
            _temp(tmp_home, "auth.json.x.0.tmp"), _temp(tmp_home, "auth.json.tmp"),
            _temp(tmp_home, "auth.json.\u0664\u0662.x.tmp")]          # digits, but not ASCII ones
    assert sorted(sweep_orphans(tmp_home)) == sorted(gone)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in gone)


def test_sweep_removes_stale_and_dead_writers_temps_only(tmp_home: Home) -> None:
    stale = _temp(tmp_home, f"auth.json.{os.getpid()}.a.tmp", age=120)
    dead = _temp(tmp_home, f"auth.json.{DEAD_PID}.b.tmp")
    live = _temp(tmp_home, f"auth.json.{os.getpid()}.c.tmp", age=30)
    other = tmp_home.root / "notes.tmp"
    other.write_bytes(b"")
    not_tmp = _temp(tmp_home, f"auth.json.{DEAD_PID}.d.keep", age=120)
    (tmp_home.root / f"{TEMP_PREFIX}dir.tmp").mkdir()
    os.utime(tmp_home.root / f"{TEMP_PREFIX}dir.tmp", (0, 0))
    os.symlink("/nowhere", tmp_home.root / f"{TEMP_PREFIX}link.{DEAD_PID}.tmp")
    removed = sweep_orphans(tmp_home)
    assert sorted(removed) == sorted([stale, dead, tmp_home.root / f"{TEMP_PREFIX}link.{DEAD_PID}.tmp"])
    assert live.exists() and other.exists() and not_tmp.exists()
    assert (tmp_home.root / f"{TEMP_PREFIX}dir.tmp").is_dir()
    assert sweep_orphans(tmp_home, older_than=10) == [live]


def test_sweep_never_removes_the_live_store_or_backup(tmp_home: Home) -> None:
    store = _temp(tmp_home, f"auth.json.{DEAD_PID}.a.tmp", age=120)
    backup = _temp(tmp_home, f"backup.{DEAD_PID}.b.tmp", age=120)
    os.symlink(store, tmp_home.auth)
    os.symlink(backup, tmp_home.backup)
    assert sweep_orphans(tmp_home) == [] and store.exists() and backup.exists()


def test_sweep_by_age_defaults_to_a_minute(tmp_home: Home) -> None:
    old = _temp(tmp_home, f"auth.json.{os.getpid()}.a.tmp", age=60.5)
    young = _temp(tmp_home, f"auth.json.{os.getpid()}.b.tmp", age=59.5)
    assert sweep_orphans(tmp_home) == [old] and young.exists()


def test_sweep_goes_on_past_the_live_store(tmp_home: Home) -> None:
    temps = [_temp(tmp_home, f"auth.json.{DEAD_PID}.{n}.tmp", age=120) for n in range(8)]
    os.symlink(temps[0], tmp_home.auth)
    first = next(e.path for e in os.scandir(tmp_home.root) if e.name.startswith(TEMP_PREFIX))
    os.unlink(tmp_home.auth)
    os.symlink(first, tmp_home.auth)        # the live store is the first temp the sweep meets
    assert sorted(sweep_orphans(tmp_home)) == sorted(t for t in temps if str(t) != first)
    assert Path(first).exists()


def test_sweep_of_a_missing_home_removes_nothing(tmp_path: Path) -> None:
    assert sweep_orphans(Home(tmp_path / "nope")) == []


# --- ensure_home, permission_problems --------------------------------------------------------

def test_ensure_home_makes_it_0700_and_leaves_an_existing_one(tmp_path: Path) -> None:
    home = Home(tmp_path / "a" / "b")
    ensure_home(home)
    assert _mode(home.root) == 0o700
    os.chmod(home.root, 0o750)
    ensure_home(home)
    assert _mode(home.root) == 0o750


def test_permission_problems_name_each_file_others_can_read(tmp_home: Home) -> None:
    assert permission_problems(tmp_home) == []
    tmp_home.backup.write_bytes(GOOD)
    os.chmod(tmp_home.backup, 0o644)          # no auth.json: the backup is still looked at
    assert permission_problems(tmp_home) == [f"{tmp_home.backup}: mode 0644 lets other users read it (want 0600)"]
    tmp_home.auth.write_bytes(GOOD)
    tmp_home.backup.write_bytes(GOOD)
    os.chmod(tmp_home.auth, 0o600)
    os.chmod(tmp_home.backup, 0o604)
    os.chmod(tmp_home.root, 0o710)
    assert permission_problems(tmp_home) == [
        f"{tmp_home.root}: mode 0710 lets other users read it (want 0700)",
        f"{tmp_home.backup}: mode 0604 lets other users read it (want 0600)"]
    os.chmod(tmp_home.root, 0o700)
    os.chmod(tmp_home.backup, 0o600)
    os.chmod(tmp_home.auth, 0o640)
    assert permission_problems(tmp_home) == [f"{tmp_home.auth}: mode 0640 lets other users read it (want 0600)"]


# --- negative controls -----------------------------------------------------------------------

def test_control_a_store_with_one_section_refused() -> None:
    bad = mutant("store.authfile", "isinstance(doc.get(\"providers\"), dict) and not",
                 "isinstance(doc.get(\"providers\"), dict) or not")
    assert parse_store(b'{"providers": {}}', Path("a")) == {"providers": {}}
    with pytest.raises(StoreUnreadable):       # the mistake asks for both sections
        bad.parse_store(b'{"providers": {}}', Path("a"))


def test_control_keep_aside_overwriting_a_copy(tmp_path: Path, frozen: str) -> None:
    bad = mutant("store.authfile", "os.O_CREAT | os.O_EXCL |", "os.O_CREAT | os.O_TRUNC |")
    first = bad.keep_aside(tmp_path, "s", b"one")
    assert bad.keep_aside(tmp_path, "s", b"two") == first and first.read_bytes() == b"two"


def test_control_a_sweep_without_the_live_check_deletes_a_linked_store(tmp_home: Home) -> None:
    bad = mutant("store.authfile", "        if os.path.realpath(entry.path) in live:\n            continue\n", "")
    store = _temp(tmp_home, f"auth.json.{DEAD_PID}.a.tmp", age=120)
    os.symlink(store, tmp_home.auth)
    assert bad.sweep_orphans(tmp_home) == [store] and not store.exists()
