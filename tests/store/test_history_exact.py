"""The operator history (``store.ops.history``) in process, value by value.

``test_undo.py`` drives the history through the CLI (a subprocess, which no mutant of this
module reaches); these call its functions directly: the id's shape and its bounds, the
future bound to the second, digests of exact canonical JSON, what one recording keeps (a
hard link of the old file, 0600, the latest "before" on a retry, a copy when no link can be
made), the record as written, each refusal of load and kept_bytes, and pruning by count and
age to the second. Negative control: the last test drops the floor of pruning's count and
sees an action dropped from a history under the count.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from pathlib import Path

import pytest

from store.config.edit import set_strategy
from store.errors import StoreUnreadable, WriteFailed
from store.ops import history
from store.ops.write import perform
from store.paths import Home
from tests.mutant import mutant

T = 1_700_000_000.0              # 2023-11-14T22:13:20Z
DAY = 86400.0


def _stamp(t: float) -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(t))


def _id(t: float, tail: str = "abc123") -> str:
    return f"{_stamp(t)}000000Z-{tail}"


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


# --- ids --------------------------------------------------------------------------------------------

def test_new_id_is_utc_to_the_microsecond_and_a_random_tail():
    got = history.new_id(T + 0.25)
    assert re.fullmatch(r"20231114T221320250000Z-[0-9a-f]{6}", got), got
    assert history.new_id(T).startswith("20231114T221320000000Z-")
    assert re.fullmatch(r"20231114T221320999999Z-[0-9a-f]{6}", history.new_id(T + 0.9999995))   # never 7 digits
    assert history.valid_id(got)
    assert len({history.new_id(T)[-6:] for _ in range(8)}) > 1


@pytest.mark.parametrize("text,ok", [
    ("2" * 16, True), ("2" * 15, False), ("2" * 32, True), ("2" * 33, False),
    ("20231114T221320000000Z-abc123", True), ("20231114T221320000000Z-ABC123", False),
    ("20231114T221320000000Z-ab/123", False), ("20231114T221320000000Z-abc12g", False),
])
def test_valid_id_bounds_and_characters(text, ok):
    assert history.valid_id(text) is ok


def test_from_future_to_the_second():
    at = _id(T)
    assert history.from_future(at, T - 300) is False         # exactly the slack ahead: allowed
    assert history.from_future(at, T - 301) is True
    assert history.from_future(at, T) is False
    assert history.from_future(at, T - 10, slack=9) is True
    assert history.from_future(at, T - 10, slack=10) is False
    assert history.from_future("not-a-time-at-all", T) is True
    assert history.FUTURE_SLACK == 300.0


def test_folder_is_inside_the_home(tmp_home):
    assert history.folder(tmp_home) == tmp_home.root / "hermes-admin-history"


# --- digests ----------------------------------------------------------------------------------------

def test_digest_is_sha256_of_canonical_json():
    want = "sha256:" + hashlib.sha256('{"a": "é", "b": [1, 2.5, null]}'.encode()).hexdigest()
    assert history.digest({"b": [1, 2.5, None], "a": "é"}) == want
    assert history.digest(Path("/x")) == "sha256:" + hashlib.sha256(b'"/x"').hexdigest()
    assert history.digest(float("nan")) == "sha256:" + hashlib.sha256(b"NaN").hexdigest()
    assert history.digest("\udcff").startswith("sha256:")     # a lone surrogate still digests


def test_digests_of_every_field():
    assert history.digests({"a": 1, 2: "x"}) == {"a": history.digest(1), "2": history.digest("x")}


# --- recording, keeping ---------------------------------------------------------------------------

def test_recording_is_current_on_its_home_only(tmp_home, tmp_path):
    other = Home(tmp_path / "other")
    assert history.current(tmp_home) is None
    with history.recording(tmp_home, T + 0.5) as p:
        assert history.current(tmp_home) is p and history.current(other) is None
        assert p.at == T + 0.5 and p.id.startswith("20231114T221320500000Z-") and p.kept == {} and p.meta == {}
    assert history.current(tmp_home) is None
    with history.recording(tmp_home, T, "20231114T221320000000Z-shared") as p:
        assert p.id == "20231114T221320000000Z-shared"


def test_keep_before_links_the_old_file_0600(tmp_home):
    src = tmp_home.root / "auth.json"
    src.write_text("old")
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, src, "auth.json")
    d = history.folder(tmp_home)
    dst = d / f"auth.json.{p.id}"
    assert p.kept == {"auth.json": dst.name}
    assert os.stat(dst).st_ino == os.stat(src).st_ino
    assert _mode(dst) == 0o600 and _mode(d) == 0o700


def test_keep_before_a_retry_keeps_the_latest_before(tmp_home):
    src = tmp_home.root / "auth.json"
    src.write_text("first")
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, src, "auth.json")
        src.unlink()
        src.write_text("second")
        history.keep_before(p, src, "auth.json")
    assert (history.folder(tmp_home) / f"auth.json.{p.id}").read_text() == "second"


def test_keep_before_a_missing_file_keeps_nothing(tmp_home):
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, tmp_home.root / "auth.json", "auth.json")
    assert p.kept == {}


def test_keep_before_copies_when_no_link_can_be_made(tmp_home, monkeypatch):
    src = tmp_home.root / "auth.json"
    src.write_text("old bytes")

    def no_link(*a, **kw):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, src, "auth.json")
        history.keep_before(p, tmp_home.root / "gone.yaml", "config.yaml")
    dst = history.folder(tmp_home) / f"auth.json.{p.id}"
    assert p.kept == {"auth.json": dst.name}
    assert dst.read_text() == "old bytes" and _mode(dst) == 0o600
    assert os.stat(dst).st_ino != os.stat(src).st_ino


def test_the_folder_may_not_be_a_link_or_a_file(tmp_home, tmp_path):
    src = tmp_home.root / "auth.json"
    src.write_text("old")
    d = history.folder(tmp_home)
    (tmp_path / "elsewhere").mkdir()
    d.symlink_to(tmp_path / "elsewhere")
    with history.recording(tmp_home, T) as p, pytest.raises(WriteFailed) as err:
        history.keep_before(p, src, "auth.json")
    assert (err.value.path, err.value.reason) == (d, "is a symlink; hermes-admin keeps no history through one, so "
                                                     "nothing was written (remove it)")
    assert os.listdir(tmp_path / "elsewhere") == []
    d.unlink()
    d.write_text("")
    with history.recording(tmp_home, T) as p, pytest.raises(WriteFailed) as err:
        history.keep_before(p, src, "auth.json")
    assert err.value.reason == "is a regular file, not a folder; nothing was written (remove it)"
    d.unlink()
    os.mkfifo(d)
    with history.recording(tmp_home, T) as p, pytest.raises(WriteFailed) as err:
        history.keep_before(p, src, "auth.json")
    assert err.value.reason == "is a FIFO (named pipe), not a folder; nothing was written (remove it)"


def test_keep_before_keeps_the_file_a_link_points_at(tmp_home, tmp_path):
    real = tmp_path / "config-real.yaml"
    real.write_text("model: x\n")
    src = tmp_home.root / "config.yaml"
    src.symlink_to(real)
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, src, "config.yaml")
    dst = history.folder(tmp_home) / f"config.yaml.{p.id}"
    assert not dst.is_symlink() and os.stat(dst).st_ino == os.stat(real).st_ino


def test_an_edit_of_a_linked_config_is_kept_not_a_crash(tmp_home, tmp_path):
    """The bug a surviving mutant (``follow_symlinks=False``) pointed at: os.link does not
    follow a symlink on Linux, so the history linked config.yaml's symlink itself and the
    chmod that follows raised NotImplementedError: any config edit of a home whose
    config.yaml is linked from a dotfiles folder crashed."""
    real = tmp_path / "dotfiles-config.yaml"
    real.write_text("model:\n  provider: openrouter\n")
    (tmp_home.root / "config.yaml").symlink_to(real)
    w = perform(tmp_home, lambda: set_strategy(tmp_home, "openrouter", "round_robin"), via="cli")
    assert w.history_id is not None and "round_robin" in real.read_text()
    kept = history.kept_bytes(tmp_home, history.load(tmp_home, w.history_id), "config.yaml")
    assert kept == b"model:\n  provider: openrouter\n"


def test_keep_before_copies_a_large_file_when_no_link_can_be_made(tmp_home, monkeypatch):
    src = tmp_home.root / "auth.json"
    src.write_bytes(b"x" * (3 * 1024 * 1024))        # past a 2 MiB cap, under the 128 MiB one
    monkeypatch.setattr(os, "link", lambda *a, **kw: (_ for _ in ()).throw(PermissionError(1, "no")))
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, src, "auth.json")
    assert (history.folder(tmp_home) / f"auth.json.{p.id}").stat().st_size == 3 * 1024 * 1024


def test_keep_config_records_the_digests_of_the_keys_written(tmp_home):
    cfg = tmp_home.root / "config.yaml"
    cfg.write_text("model: x\n")
    with history.recording(tmp_home, T) as p:
        history.keep_config(cfg, True, {"model": {"provider": "x"}}, frozenset({"model", "gone"}))
    assert p.kept == {"config.yaml": f"config.yaml.{p.id}"}
    assert p.meta == {"config": {"file": "config.yaml", "touched": ["gone", "model"], "after": {
        "gone": history.digest("absent"), "model": history.digest({"provider": "x"})}}}
    with history.recording(tmp_home, T) as q:
        history.keep_config(cfg, False, {"a": 1}, frozenset({"a"}))
    assert q.kept == {} and q.meta["config"]["after"] == {"a": history.digest(1)}


def test_keep_config_outside_a_recording_keeps_nothing(tmp_home):
    cfg = tmp_home.root / "config.yaml"
    cfg.write_text("model: x\n")
    history.keep_config(cfg, True, {"a": 1}, frozenset({"a"}))
    assert not history.folder(tmp_home).exists()


# --- save, load, kept_bytes -------------------------------------------------------------------------

def _saved(home: Home, entry: dict | None = None) -> history.Pending:
    src = home.root / "auth.json"
    src.write_text('{"old": true}')
    with history.recording(home, T) as p:
        history.keep_before(p, src, "auth.json")
        p.meta["rows"] = {"or": {"r0": {"x": "sha256:0"}}}
        assert history.save(p, entry or {"verb": "reset"}) == p.id
    return p


def test_save_nothing_kept_writes_nothing(tmp_home):
    with history.recording(tmp_home, T) as p:
        assert history.save(p, {"verb": "reset"}) is None
    assert not history.folder(tmp_home).exists()
    with history.recording(tmp_home, T) as p:
        p.meta["config"] = {}
        assert history.save(p, {}) == p.id


def test_save_writes_the_record_0600(tmp_home):
    p = _saved(tmp_home, {"verb": "reset", "rows": "entry wins"})
    path = history.folder(tmp_home) / f"{p.id}.json"
    assert json.loads(path.read_text()) == {"version": 1, "id": p.id, "at": T,
                                            "kept": {"auth.json": f"auth.json.{p.id}"},
                                            "rows": "entry wins", "verb": "reset"}
    assert _mode(path) == 0o600
    assert history.load(tmp_home, p.id) == json.loads(path.read_text())
    assert history.kept_bytes(tmp_home, history.load(tmp_home, p.id), "auth.json") == b'{"old": true}'
    assert history.kept_bytes(tmp_home, history.load(tmp_home, p.id), "config.yaml") is None


def test_save_writes_text_as_utf8_and_odd_values_as_text(tmp_home):
    p = _saved(tmp_home, {"verb": "réinitialiser", "where": Path("/x")})
    raw = (history.folder(tmp_home) / f"{p.id}.json").read_bytes()
    assert "réinitialiser".encode() in raw and b'"where": "/x"' in raw


def test_save_refuses_a_value_that_is_no_json(tmp_home):
    src = tmp_home.root / "auth.json"
    src.write_text("{}")
    with history.recording(tmp_home, T) as p:
        history.keep_before(p, src, "auth.json")
        with pytest.raises(ValueError):
            history.save(p, {"n": float("nan")})
    assert not (history.folder(tmp_home) / f"{p.id}.json").exists()


def test_save_never_writes_over_a_record(tmp_home):
    p = _saved(tmp_home)
    with pytest.raises(WriteFailed, match="cannot keep the history copy"):
        history.save(p, {"verb": "again"})


@pytest.mark.parametrize("text,why", [
    ("not json", "is not valid JSON"),
    ("[1]", "is not a history record"),
    ('{"id": "20231114T221320000000Z-other0", "kept": {}}', "is not a history record"),
    ('{"id": "20231114T221320000000Z-abc123", "kept": []}', "is not a history record"),
    ('{"id": "20231114T221320000000Z-abc123"}', "is not a history record"),
])
def test_load_refuses_a_broken_record(tmp_home, text, why):
    d = history.folder(tmp_home)
    d.mkdir(mode=0o700)
    (d / "20231114T221320000000Z-abc123.json").write_text(text)
    with pytest.raises(StoreUnreadable, match=why):
        history.load(tmp_home, "20231114T221320000000Z-abc123")


def test_load_refuses_what_is_no_id_or_not_kept(tmp_home, tmp_path):
    with pytest.raises(StoreUnreadable, match="is not a history id"):
        history.load(tmp_home, "../auth")
    with pytest.raises(StoreUnreadable, match="is not kept any more"):
        history.load(tmp_home, _id(T))                  # no folder at all
    p = _saved(tmp_home)
    d = history.folder(tmp_home)
    os.rename(d, tmp_path / "real-history")
    d.symlink_to(tmp_path / "real-history")
    with pytest.raises(StoreUnreadable, match="is a symlink"):
        history.load(tmp_home, p.id)


def test_load_follows_no_link_to_a_record(tmp_home, tmp_path):
    p = _saved(tmp_home)
    rec = history.folder(tmp_home) / f"{p.id}.json"
    (tmp_path / "forged.json").write_text(rec.read_text())
    rec.unlink()
    rec.symlink_to(tmp_path / "forged.json")
    with pytest.raises(StoreUnreadable):
        history.load(tmp_home, p.id)


def test_kept_bytes_refuses_another_name_and_a_missing_copy(tmp_home):
    p = _saved(tmp_home)
    meta = history.load(tmp_home, p.id)
    record = history.folder(tmp_home) / f"{p.id}.json"
    for forged in ("auth.json.20231114T221320000000Z-other0", 7, f"config.yaml.{p.id}"):
        with pytest.raises(StoreUnreadable) as err:
            history.kept_bytes(tmp_home, {**meta, "kept": {"auth.json": forged}}, "auth.json")
        assert err.value.path == record
        assert err.value.reason == (f"names {str(forged)!r} as its copy of auth.json, not a file of its own; "
                                    "a forged or broken record is not used")
    long = "z" * 100
    with pytest.raises(StoreUnreadable) as err:
        history.kept_bytes(tmp_home, {**meta, "kept": {"auth.json": long}}, "auth.json")
    assert err.value.reason.startswith(f"names {'z' * 80!r} as its copy")
    (history.folder(tmp_home) / f"auth.json.{p.id}").unlink()
    with pytest.raises(StoreUnreadable) as err:
        history.kept_bytes(tmp_home, meta, "auth.json")
    assert err.value.path == history.folder(tmp_home) / f"auth.json.{p.id}"
    assert err.value.reason == (f"is gone: the copy of auth.json that {p.id}.json needs to undo it "
                                "(pruned, or removed by hand)")


def test_kept_bytes_never_reads_outside_the_folder(tmp_home):
    p = _saved(tmp_home)
    meta = history.load(tmp_home, p.id)
    (tmp_home.root / f"auth.json.{p.id}").write_text("outside")       # what ../auth.json.<id> names
    forged = {**meta, "kept": {"../auth.json": f"../auth.json.{p.id}"}}
    with pytest.raises(StoreUnreadable) as err:
        history.kept_bytes(tmp_home, forged, "../auth.json")
    assert err.value.path == history.folder(tmp_home) / f"../auth.json.{p.id}"
    assert err.value.reason == "is not a file of the history folder; refused"


# --- prune ------------------------------------------------------------------------------------------

def _actions(home: Home, times: list[float]) -> list[str]:
    d = history.folder(home)
    d.mkdir(mode=0o700, exist_ok=True)
    ids = []
    for i, t in enumerate(times):
        aid = _id(t, f"{i:06x}")
        (d / f"{aid}.json").write_text("{}")
        (d / f"auth.json.{aid}").write_text("{}")
        ids.append(aid)
    return ids


def _left(home: Home) -> list[str]:
    return sorted(os.listdir(history.folder(home)))


def test_prune_by_count_drops_the_oldest(tmp_home):
    ids = _actions(tmp_home, [T - 50, T - 40, T - 30, T - 20, T - 10])
    (history.folder(tmp_home) / "notes.txt").write_text("mine")
    assert history.prune(tmp_home, T, keep=3) == 2
    assert _left(tmp_home) == sorted([f"{i}.json" for i in ids[2:]] + [f"auth.json.{i}" for i in ids[2:]]
                                     + ["notes.txt"])
    assert history.prune(tmp_home, T, keep=3) == 0
    assert history.prune(tmp_home, T, keep=10) == 0


def test_prune_keep_zero_drops_every_action_and_nothing_else(tmp_home):
    _actions(tmp_home, [T - 20, T - 10])
    d = history.folder(tmp_home)
    for other in ("notes.json", "README", "auth.json.not-an-id"):
        (d / other).write_text("")
    (d / "20231114T221320Z.json").write_text("{}")            # the shortest id there is (16 characters)
    assert history.prune(tmp_home, T, keep=0) == 3
    assert _left(tmp_home) == ["README", "auth.json.not-an-id", "notes.json"]


def test_prune_by_age_at_the_second(tmp_home):
    ids = _actions(tmp_home, [T - 2 * DAY - 1, T - 2 * DAY, T - 2 * DAY + 1])
    assert history.prune(tmp_home, T, days=2) == 1
    assert _left(tmp_home) == sorted([f"{i}.json" for i in ids[1:]] + [f"auth.json.{i}" for i in ids[1:]])


def test_prune_defaults_are_50_actions_and_14_days(tmp_home):
    assert (history.KEEP_COUNT, history.KEEP_DAYS) == (50, 14.0)
    _actions(tmp_home, [T - 14 * DAY - 1] + [T - i for i in range(51)])
    assert history.prune(tmp_home, T) == 2          # the one too old, then the oldest beyond 50
    assert len(_left(tmp_home)) == 100


def test_prune_without_a_folder_is_nothing(tmp_home):
    assert history.prune(tmp_home, T) == 0
    history.folder(tmp_home).write_text("")
    assert history.prune(tmp_home, T) == 0


# --- negative control -------------------------------------------------------------------------------

def test_control_pruning_by_count_without_its_floor_is_caught(tmp_home):
    """``max(0, len(ids) - keep)`` without the ``max``: fewer actions than *keep* make a
    negative slice, and the oldest goes although nothing is over the count."""
    broken = mutant("store.ops.history", "ids[:max(0, len(ids) - keep)]", "ids[:len(ids) - keep]")
    _actions(tmp_home, [T - 20, T - 10])
    assert broken.prune(tmp_home, T, keep=3) == 1        # the slip: an action dropped
    assert history.prune(tmp_home, T, keep=3) == 0
    assert len(_left(tmp_home)) == 2
