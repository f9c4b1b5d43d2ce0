"""Acting on a key everywhere is one operator action: one history id in every profile it
changed, undone together (store.profiles.everywhere, store.profiles.undo_all).

A reset everywhere on a root of three profiles, then ``undo`` in any one of them, brings every
bench back; the undo is one action too, so undoing it resets them all again. Negative
control: undo that looks only at its own home (no ``sharing``) brings back one bench of three.
restore-backup is in the history as well: its undo puts back the rows it replaced.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from store.ops import history, undo
from store.paths import Home
from store.profiles import undo_all
from store.profiles.root import Root
from tests.conftest import make_row, make_store, read_doc, write_store
from tui.cli import main

SHARED = "sk-or-v1-EVERYWHEREundo0123456789abcdef0001"
OWN = "sk-or-v1-EVERYWHEREown00123456789abcdef0002"
NAMES = ("default", "team-a", "team-b")


def benched(rid: str, label: str, token: str, **kw: object) -> dict:
    now = time.time()
    return make_row(rid, label=label, token=token, last_status="exhausted", last_status_at=now - 60,
                    last_error_code=429, last_error_reason="rate_limit_exceeded",
                    last_error_reset_at=now + 3600, **kw)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    """Three profiles, each holding SHARED benched; team-a also holds another key."""
    r = Root(tmp_path / "hermes")
    for i, name in enumerate(NAMES):
        rows = [benched(f"s{i}s{i}s{i}", f"shared-{name}", SHARED)]
        if name == "team-a":
            rows.append(make_row("o1o1o1", label="own", token=OWN, priority=1))
        write_store(r.profile(name).home, make_store({"openrouter": rows}))
    return r


def homes(root: Root) -> list[Home]:
    return [root.profile(n).home for n in NAMES]


def shared_status(home: Home) -> str | None:
    rows = read_doc(home)["credential_pool"]["openrouter"]
    return next(r for r in rows if r["access_token"] == SHARED)["last_status"]


def cli(capsys: pytest.CaptureFixture[str], home: Home, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--home", str(home.root)])
    out, err = capsys.readouterr()
    return code, out, err


def test_reset_everywhere_then_undo_brings_every_bench_back(capsys: pytest.CaptureFixture[str], root: Root) -> None:
    default, team_a, team_b = homes(root)
    code, out, err = cli(capsys, team_a, "reset", "openrouter", "shared-team-a", "--all-profiles")
    assert code == 0, err
    assert [shared_status(h) for h in homes(root)] == [None, None, None]
    ids = {h.root.name: undo.list_ids(h) for h in homes(root)}
    assert all(len(v) == 1 for v in ids.values()) and len({v[0] for v in ids.values()}) == 1, ids
    action_id = ids["team-a"][0]
    assert f"history {action_id}" in out
    for h in homes(root):        # each audit line carries the one id and the scope
        line = json.loads(h.audit.read_text().splitlines()[-1])
        assert line["history"] == action_id and line["scope"] == "all-profiles"
    code, out, err = cli(capsys, team_b, "undo", "--yes")
    assert code == 0, err
    assert "in 3 profiles" in out
    assert [shared_status(h) for h in homes(root)] == ["exhausted"] * 3
    # The undo is one action across the homes too: undoing it resets them all again.
    undo_ids = {undo.list_ids(h)[-1] for h in homes(root)}
    assert len(undo_ids) == 1 and action_id not in undo_ids
    assert cli(capsys, default, "undo", "--yes")[0] == 0
    assert [shared_status(h) for h in homes(root)] == [None, None, None]


def test_control_an_undo_of_one_home_only_brings_one_bench_back(
        capsys: pytest.CaptureFixture[str], root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    _, team_a, team_b = homes(root)
    assert cli(capsys, team_a, "reset", "openrouter", "shared-team-a", "--all-profiles")[0] == 0
    monkeypatch.setattr(undo_all, "sharing", lambda home, action_id, meta: [("", home)])
    assert cli(capsys, team_b, "undo", "--yes")[0] == 0
    assert [shared_status(h) for h in homes(root)] == [None, None, "exhausted"]


def test_a_record_cannot_send_undo_outside_its_root(capsys: pytest.CaptureFixture[str], root: Root,
                                                   tmp_path: Path) -> None:
    """Only the root's own profiles with a record of the same id are undone together."""
    _, team_a, _ = homes(root)
    assert cli(capsys, team_a, "reset", "openrouter", "shared-team-a", "--all-profiles")[0] == 0
    action_id = undo.list_ids(team_a)[0]
    stranger = Home(tmp_path / "stranger")
    write_store(stranger, make_store({"openrouter": [benched("x1x1x1", "x", SHARED)]}))
    path = history.folder(team_a) / f"{action_id}.json"
    meta = json.loads(path.read_text())
    meta["group"]["profiles"].append(str(stranger.root))
    path.write_text(json.dumps(meta))
    got = [h.root for _, h in undo_all.sharing(team_a, action_id, meta)]
    assert stranger.root not in got and len(got) == 3


def test_restore_backup_is_kept_in_the_history_and_undone(capsys: pytest.CaptureFixture[str], tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("r0", label="old", token=OWN)]}))
    old = tmp_home.auth.read_bytes()
    tmp_home.backup.write_bytes(old)
    write_store(tmp_home, make_store({"openrouter": [make_row("r0", label="old", token=OWN),
                                                     make_row("r1", label="new", token=SHARED, priority=1)]}))
    code, out, err = cli(capsys, tmp_home, "restore-backup", "--yes")
    assert code == 0, err
    assert [r["id"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]] == ["r0"]
    plan = undo.plan(tmp_home, undo.list_ids(tmp_home)[-1])
    assert plan.meta["actions"] == ["restore-backup"] and "new (id=r1): comes back" in plan.describe()[0]
    code, out, err = cli(capsys, tmp_home, "undo", "--yes")
    assert code == 0, err
    assert [r["id"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]] == ["r0", "r1"]


def test_restore_backup_over_a_broken_file_is_refused_by_undo(capsys: pytest.CaptureFixture[str],
                                                              tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("r0", label="old", token=OWN)]}))
    tmp_home.backup.write_bytes(tmp_home.auth.read_bytes())
    tmp_home.auth.write_bytes(b"garbage")
    assert cli(capsys, tmp_home, "restore-backup", "--yes")[0] == 0
    before = tmp_home.auth.read_bytes()
    code, out, err = cli(capsys, tmp_home, "undo", "--yes")
    assert code != 0 and "did not parse" in err and "undone" not in out
    assert tmp_home.auth.read_bytes() == before
