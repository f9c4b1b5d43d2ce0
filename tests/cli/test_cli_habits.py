"""The CLI's habits (issue 28): ``--version``, "did you mean" on ``list``, ``audit`` newest
first as ``history`` lists, and a reset that changes nothing writes nothing."""

from __future__ import annotations

import json
import os
import time
from importlib import metadata

import pytest

from store.ops import history
from store.paths import Home
from tests.conftest import make_row, make_store, run_cli, write_store
from tui.cli import main


def run(capsys: pytest.CaptureFixture[str], home: Home, *argv: str) -> tuple[int, str, str]:
    code = main(["--home", str(home.root), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def cooling(rid: str, label: str, **fields: object) -> dict:
    return make_row(rid, label=label, last_status="exhausted", last_status_at=time.time() - 30,
                    last_error_code=429, last_error_reason="rate_limit", **fields)


def files(home: Home) -> dict[str, bytes]:
    """Every file under the home (the history folder's too), by relative path."""
    out = {}
    for dirpath, _dirs, names in os.walk(home.root):
        for name in names:
            path = os.path.join(dirpath, name)
            if name.endswith(".lock"):
                continue   # taking the lock creates its file, as Hermes does; it holds nothing
            with open(path, "rb") as fh:
                out[os.path.relpath(path, home.root)] = fh.read()
    return out


def test_version_is_the_installed_distributions(tmp_home: Home) -> None:
    proc = run_cli(tmp_home, "--version")
    assert proc.stdout == f"hermes-admin {metadata.version('hermes-admin')}\n"
    assert proc.returncode == 0 and proc.stderr == ""


def test_list_of_a_mistyped_pool_offers_the_near_one(tmp_home: Home, capsys) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa")], "anthropic": [make_row("bbbbbb")]}))
    code, out, err = run(capsys, tmp_home, "list", "openruter")
    assert code == 2 and out == ""
    assert "no pool 'openruter'" in err and "did you mean openrouter?" in err
    # Control: a name near nothing gets no suggestion, only the list of pools.
    code, _, err = run(capsys, tmp_home, "list", "zzzz")
    assert code == 2 and "did you mean" not in err and "pools: anthropic, openrouter" in err


def test_audit_lists_newest_first_as_history_does(tmp_home: Home, capsys) -> None:
    write_store(tmp_home, make_store({"openrouter": [cooling("aaaaaa", "first"), cooling("bbbbbb", "second"),
                                                     cooling("cccccc", "third")]}))
    for label in ("first", "second", "third"):
        assert run(capsys, tmp_home, "reset", "openrouter", label)[0] == 0
    code, out, _ = run(capsys, tmp_home, "audit")
    assert code == 0
    order = [line.rsplit(" ", 1)[1] for line in out.splitlines()]
    assert order == ["third(cccccc)", "second(bbbbbb)", "first(aaaaaa)"]
    _, out, _ = run(capsys, tmp_home, "audit", "--json")
    entries = json.loads(out)
    assert [e["changes"][0]["label"] for e in entries] == ["third", "second", "first"]
    _, out, _ = run(capsys, tmp_home, "history", "--json")
    assert [h["id"] for h in json.loads(out)] == [e["history"] for e in entries]   # the same order
    _, out, _ = run(capsys, tmp_home, "audit", "-n", "1")
    assert out.splitlines()[0].endswith("third(cccccc)")   # -n keeps the newest, not the oldest


@pytest.mark.parametrize("argv", [("reset", "openrouter", "calm"), ("reset", "openrouter", "--yes")])
def test_a_reset_of_keys_already_ok_writes_nothing_and_says_so(tmp_home: Home, capsys, argv) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", label="calm"),
                                                     make_row("bbbbbb", label="also-calm", priority=1)]}))
    before = files(tmp_home)
    code, out, err = run(capsys, tmp_home, *argv)
    assert code == 0, err
    assert out.startswith("nothing changed: ") and "already ok" in out and "undo" not in out
    assert files(tmp_home) == before                       # no audit line, no history, no backup
    assert not history.folder(tmp_home).exists()


def test_control_a_reset_that_clears_a_bench_is_audited(tmp_home: Home, capsys) -> None:
    """The check above can see a write: the same reset of a benched key writes and audits."""
    write_store(tmp_home, make_store({"openrouter": [cooling("aaaaaa", "calm"),
                                                     make_row("bbbbbb", label="also-calm", priority=1)]}))
    before = files(tmp_home)
    code, out, _ = run(capsys, tmp_home, "reset", "openrouter", "calm")
    assert code == 0 and "nothing changed" not in out and "reset: openrouter calm" in out
    after = files(tmp_home)
    assert after != before and tmp_home.audit.name in after


def test_a_per_model_bench_alone_is_something_to_reset(tmp_home: Home, capsys) -> None:
    row = make_row("aaaaaa", label="calm", model_cooldowns={"m1": time.time() + 600})
    write_store(tmp_home, make_store({"openrouter": [row]}))
    code, out, _ = run(capsys, tmp_home, "reset", "openrouter", "calm")
    assert code == 0 and "nothing changed" not in out and tmp_home.audit.exists()


def test_a_missing_pool_or_row_is_still_refused(tmp_home: Home, capsys) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", label="calm")]}))
    assert run(capsys, tmp_home, "reset", "openruter", "calm")[0] == 2
    code, _, err = run(capsys, tmp_home, "reset", "openrouter", "nosuch")
    assert code == 2 and "nosuch" in err
    code, _, err = run(capsys, tmp_home, "reset", "openruter", "--yes")
    assert code == 2 and "did you mean openrouter" in err
