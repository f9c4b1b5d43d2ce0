"""Undo never does harm (store.ops.undo, store.ops.history): each case with its negative control.

- a row whose key another writer rotated since the action (a Hermes-style writer: raw flock
  on auth.lock, fresh read, atomic replace) is kept whole, and the output says so;
- a kept copy that is a symlink to outside the history folder is refused, not read;
- a record naming another file as its copy (``../../forged.json``), one whose copy is
  gone, and one that records nothing (a restore-backup of an older version) are refused
  with a clear error and a non-zero exit, never "undone" with exit 0;
- ids sort in the order they were written, and an id from the future is refused (it
  must not shadow the real newest action).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import safeio
from store.errors import EXIT_BAD_INPUT, EXIT_UNREADABLE, BadInput, HermesAdminError, StoreUnreadable
from store.ops import history, undo
from store.paths import Home
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.cli import main

KEYS = ["sk-or-v1-undoharm-" + c * 40 for c in "abc"]
NEW_KEY = "sk-or-v1-undoharm-rotated" + "z" * 33


def _home(home: Home) -> None:
    """Two keys, k0 benched: a reset of it is a write (a reset of an ok key writes nothing)."""
    now = time.time()
    bench = {"last_status": "exhausted", "last_status_at": now - 10, "last_error_code": 429,
             "last_error_reset_at": now + 3600}
    write_store(home, make_store({"openrouter": [make_row(f"r{i}", label=f"k{i}", token=KEYS[i], priority=i,
                                                          **(bench if i == 0 else {})) for i in range(2)]}))


def _row(home: Home, rid: str) -> dict | None:
    return next((r for r in read_doc(home)["credential_pool"]["openrouter"] if r["id"] == rid), None)


def cli(capsys: pytest.CaptureFixture[str], home: Home, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--home", str(home.root)])
    out, err = capsys.readouterr()
    return code, out, err


def hermes_rotates(home: Home, rid: str, key: str) -> None:
    """What Hermes does when it refreshes a key: raw flock on auth.lock, fresh read, its own
    temp file, atomic replace; it knows nothing of hermes-admin's history."""
    fd = os.open(home.lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        doc = json.loads(home.auth.read_text(encoding="utf-8"))
        for r in doc["credential_pool"]["openrouter"]:
            if r["id"] == rid:
                r["access_token"] = key
        tmp = home.auth.with_name("auth.json.hermes-tmp")
        tmp.write_text(json.dumps(doc, indent=2), encoding="utf-8")
        os.replace(tmp, home.auth)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def newest(home: Home) -> str:
    return undo.list_ids(home)[-1]


# ------------------------------------------------------------------ a rotated key is kept

@pytest.mark.parametrize("guard", [True, False])
def test_undo_of_an_add_keeps_the_row_an_agent_put_a_new_key_in(
        capsys: pytest.CaptureFixture[str], tmp_home: Home, monkeypatch: pytest.MonkeyPatch, guard: bool) -> None:
    _home(tmp_home)
    code, _, err = cli(capsys, tmp_home, "add", "openrouter", "--api-key", KEYS[2], "--label", "fresh")
    assert code == 0, err
    rid = next(r["id"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"] if r["label"] == "fresh")
    hermes_rotates(tmp_home, rid, NEW_KEY)
    if not guard:           # negative control: without the key check undo removes the agent's key
        monkeypatch.setattr(undo, "_key_changed", lambda after, fresh: False)
    code, out, err = cli(capsys, tmp_home, "undo", "--yes")
    assert code == (2 if guard else 0), err     # the row kept whole: nothing undone, never "undone"
    row = _row(tmp_home, rid)
    if guard:
        assert "nothing was undone" in err and "undone" not in out.replace("nothing undone", "")
        assert row is not None and row["access_token"] == NEW_KEY
        assert "its key changed since the action" in out
    else:
        assert row is None


@pytest.mark.parametrize("guard", [True, False])
def test_undo_of_a_cooldown_does_not_bench_the_rotated_key(
        capsys: pytest.CaptureFixture[str], tmp_home: Home, monkeypatch: pytest.MonkeyPatch, guard: bool) -> None:
    _home(tmp_home)
    assert cli(capsys, tmp_home, "reset", "openrouter", "k0", "--yes")[0] == 0
    assert cli(capsys, tmp_home, "cooldown", "openrouter", "k0", "--for", "1h")[0] == 0
    hermes_rotates(tmp_home, "r0", NEW_KEY)     # a new key: the old key's bench is not its own
    before = read_doc(tmp_home)
    if not guard:
        monkeypatch.setattr(undo, "_key_changed", lambda after, fresh: False)
    code, out, err = cli(capsys, tmp_home, "undo", "--yes")
    assert code == (2 if guard else 0), err     # the row kept whole: nothing undone, never "undone"
    if guard:
        assert read_doc(tmp_home)["credential_pool"] == before["credential_pool"]
        assert "k0: kept as it is: its key changed since the action" in out
    else:
        assert _row(tmp_home, "r0")["last_status"] != "exhausted"


# ------------------------------------------------------------------ records and copies

def _link_copy_outside(home: Home, tmp_path: Path) -> tuple[str, Path]:
    """The newest action's kept auth.json replaced by a link to a file outside the folder."""
    action_id = newest(home)
    outside = tmp_path / "outside.json"
    write_store(Home(tmp_path / "elsewhere"), make_store({"openrouter": [
        make_row("r0", label="planted", token="sk-or-v1-planted" + "p" * 40),
        make_row("r1", label="planted-too", token="sk-or-v1-planted" + "q" * 40)]}))
    outside.write_bytes((tmp_path / "elsewhere" / "auth.json").read_bytes())
    copy = history.folder(home) / f"auth.json.{action_id}"
    copy.unlink()
    copy.symlink_to(outside)
    return action_id, outside


@pytest.mark.parametrize("guard", [True, False])
def test_a_kept_copy_linked_outside_the_folder_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_home: Home, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, guard: bool) -> None:
    _home(tmp_home)
    assert cli(capsys, tmp_home, "remove", "openrouter", "k1", "--yes")[0] == 0
    _link_copy_outside(tmp_home, tmp_path)
    before = tmp_home.auth.read_bytes()
    if not guard:           # negative control: reading through the link plants its rows
        real = safeio.read_checked
        monkeypatch.setattr(safeio, "read_checked", lambda p, cap, error=StoreUnreadable, follow=True:
                            real(p, cap, error))
    code, out, err = cli(capsys, tmp_home, "undo", "--yes")
    if guard:
        assert code == EXIT_UNREADABLE and "symlink" in err and "undone" not in out
        assert tmp_home.auth.read_bytes() == before
    else:
        assert code == 0 and _row(tmp_home, "r1")["label"] == "planted-too"


def test_a_history_folder_that_is_a_link_is_refused(tmp_home: Home, tmp_path: Path) -> None:
    _home(tmp_home)
    main(["reset", "openrouter", "k0", "--yes", "--home", str(tmp_home.root)])
    action_id = newest(tmp_home)
    moved = tmp_path / "moved-history"
    history.folder(tmp_home).rename(moved)
    history.folder(tmp_home).symlink_to(moved)
    with pytest.raises(StoreUnreadable, match="symlink"):
        undo.plan(tmp_home, action_id)


def _forge(home: Home, **fields: object) -> str:
    """Rewrite the newest record with *fields*; its id."""
    action_id = newest(home)
    path = history.folder(home) / f"{action_id}.json"
    meta = json.loads(path.read_text())
    meta.update(fields)
    path.write_text(json.dumps(meta))
    return action_id


@pytest.mark.parametrize("case", ["forged-name", "copy-gone", "restore-backup-era", "rows-not-rows"])
def test_a_record_that_cannot_be_used_is_refused_with_a_non_zero_exit(
        capsys: pytest.CaptureFixture[str], tmp_home: Home, case: str) -> None:
    _home(tmp_home)
    assert cli(capsys, tmp_home, "reset", "openrouter", "k0", "--yes")[0] == 0
    if case == "forged-name":
        _forge(tmp_home, kept={"auth.json": "../../forged.json"})
    elif case == "copy-gone":
        (history.folder(tmp_home) / f"auth.json.{newest(tmp_home)}").unlink()
    elif case == "restore-backup-era":
        _forge(tmp_home, rows=None, actions=["restore-backup"])
    else:
        _forge(tmp_home, rows=[{"pool": ["x"], "id": 1}])
    before = tmp_home.auth.read_bytes()
    code, out, err = cli(capsys, tmp_home, "undo", "--yes")
    assert code == EXIT_UNREADABLE, (out, err)
    assert "undone" not in out and tmp_home.auth.read_bytes() == before
    assert {"forged-name": "forged.json", "copy-gone": "is gone", "restore-backup-era": "nothing can be put back",
            "rows-not-rows": "not rows"}[case] in err


def test_control_the_old_reading_of_a_forged_record_removes_rows(tmp_home: Home,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control of the forged-name case: a copy that reads as "none kept" (as before)
    makes every row look added by the action, and undo would remove them."""
    _home(tmp_home)
    main(["reset", "openrouter", "k0", "--yes", "--home", str(tmp_home.root)])
    _forge(tmp_home, kept={"auth.json": "../../forged.json"}, created=True)
    monkeypatch.setattr(history, "kept_bytes", lambda home, meta, name: None)
    plan = undo.plan(tmp_home, newest(tmp_home))
    assert "is removed again" in plan.describe()[0]


# ------------------------------------------------------------------ ids and time

def test_ids_sort_in_the_order_written_and_a_future_id_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    _home(tmp_home)
    assert cli(capsys, tmp_home, "reset", "openrouter", "k0", "--yes")[0] == 0
    assert cli(capsys, tmp_home, "cooldown", "openrouter", "k1", "--for", "1h")[0] == 0
    real = undo.list_ids(tmp_home)
    assert real == sorted(real, key=lambda i: os.stat(history.folder(tmp_home) / f"{i}.json").st_mtime_ns)
    future = "29991231T235959000000Z-abcdef"
    meta = json.loads((history.folder(tmp_home) / f"{real[0]}.json").read_text())
    (history.folder(tmp_home) / f"{future}.json").write_text(json.dumps({**meta, "id": future}))
    assert undo.resolve(tmp_home, None) == real[-1]          # the real newest, not the forged one
    code, out, err = cli(capsys, tmp_home, "undo", future, "--yes")
    assert code == EXIT_BAD_INPUT and "future" in err
    # Negative control: without the check, the future id shadows the real newest action.
    monkeypatch.setattr(history, "from_future", lambda action_id, now, slack=0.0: False)
    assert undo.resolve(tmp_home, None) == future


# ------------------------------------------------------------------ hostile records

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda inner: (st.lists(inner, max_size=4)
                                    | st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                     max_leaves=12)
_names = (st.sampled_from(["../../forged.json", "/etc/passwd", "auth.json", "", ".", "..", "auth.json.x"])
          | st.text(max_size=30))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kept=st.dictionaries(st.sampled_from(["auth.json", "config.yaml"]), _names | _json, max_size=2),
       rows=_json | st.lists(st.fixed_dictionaries({"pool": _json, "id": _json, "after": _json}), max_size=3),
       config=_json)
def test_a_hostile_record_is_refused_or_undone_never_anything_else(
        tmp_path_factory: pytest.TempPathFactory, kept: object, rows: object, config: object) -> None:
    home = Home(tmp_path_factory.mktemp("h"))
    _home(home)
    main(["reset", "openrouter", "k0", "--yes", "--home", str(home.root)])
    action_id = _forge(home, kept=kept, rows=rows, config=config)
    outside = home.root.parent / "forged.json"
    try:
        plan = undo.plan(home, action_id)
    except (StoreUnreadable, BadInput):
        return                                  # refused, with the file named
    assert plan.before_doc is None or isinstance(plan.before_doc, dict)
    assert not outside.exists()
    try:
        undo.store_change(plan)(read_doc(home), 0.0)
        undo.config_edit(home, plan, 1.0)
    except HermesAdminError:               # refused with a named file or argument, never a crash
        pass
    assert not outside.exists()
