"""A symlinked auth.json (operators link one file into several homes to share a pool).

Reads follow the link. Every write refuses with one error, exit 3, before any lock file,
backup or history copy exists: Hermes locks ``<home>/auth.lock`` beside the link and
replaces the link with a plain file on its next write, so the homes would silently stop
sharing. The home (and the link's target) stay byte-identical after every refused verb.

Negative controls: with the one check (:func:`store.authfile.refuse_linked`) switched off,
``reset`` leaves a backup, a history copy and a lock file behind (and dies on a chmod the
platform cannot do), and the in-process transaction writes through the link.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from screens.dashboard_chrome import problems
from store import authfile
from store.errors import EXIT_UNREADABLE, LinkedStore
from store.monitor import conditions, rules
from store.monitor.sample import ProfileSample, Sample
from store.paths import Home
from store.redaction import redact
from store.transaction import transaction
from store.watch.home import HomeLoader
from tests.conftest import make_row, make_store, run_cli
from tests.home_tree import tree
from tui.cli import entry

TOKEN = "sk-or-v1-" + "a" * 32


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Home, Path]:
    """A home whose auth.json is a relative symlink to a shared file in another folder."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o700)
    target = shared / "auth.json"
    doc = make_store({"openrouter": [
        make_row("aaaaaa", label="first", token=TOKEN, last_status="exhausted", last_status_at=1.0e9,
                 last_error_code=429, model_cooldowns={"m": 4.0e9}, failure_reason="rate_limit"),
        make_row("bbbbbb", label="second", priority=1, token="sk-or-v1-" + "b" * 32)]})
    target.write_text(json.dumps(doc, indent=2))
    os.chmod(target, 0o600)
    home = Home(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    (home.root / "config.yaml").write_text("model: x\n")
    home.auth.symlink_to(os.path.relpath(target, home.root))
    return home, target


WRITING_VERBS = [
    ("reset", "openrouter", "first", "--yes"),
    ("reset", "openrouter", "--yes"),
    ("add", "openrouter", "--api-key", "sk-or-v1-" + "c" * 32),
    ("remove", "openrouter", "second", "--yes"),
    ("cooldown", "openrouter", "second", "--for", "10m"),
    ("priority", "openrouter", "second", "0"),
    ("restore-backup", "--yes"),
]


@pytest.mark.parametrize("verb", WRITING_VERBS, ids=lambda v: " ".join(v[:2]))
def test_every_writing_verb_refuses_and_writes_nothing(linked: tuple[Home, Path], verb: tuple[str, ...]) -> None:
    home, target = linked
    if verb[0] == "restore-backup":   # a backup to restore, so only the link stops it
        home.backup.write_bytes(target.read_bytes())
    before = tree(home.root, target.parent)
    proc = run_cli(home, *verb, ok=False)
    assert proc.returncode == EXIT_UNREADABLE, proc.stderr
    err = proc.stderr
    assert str(home.auth) in err and "is a symlink to" in err and str(target) in err
    assert "replaces the link with a plain file" in err and "stop sharing" in err   # why
    assert "replace the link with a copy" in err                                        # what to do
    assert "internal error" not in err and "Traceback" not in err
    assert tree(home.root, target.parent) == before
    assert not home.lock.exists() and not (home.root / "hermes-admin-history").exists()


def test_undo_through_a_link_refuses_too(tmp_path: Path) -> None:
    """An action recorded while auth.json was a file, undone after it became a link."""
    home = Home(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    (home.root / "auth.json").write_text(json.dumps(make_store({"openrouter": [
        make_row("aaaaaa", token=TOKEN, last_status="exhausted", last_status_at=1.0e9)]})))
    run_cli(home, "reset", "openrouter", "--yes")
    shared = tmp_path / "shared.json"
    os.replace(home.auth, shared)
    home.auth.symlink_to(shared)
    before = tree(home.root, shared.parent)
    proc = run_cli(home, "undo", "--yes", ok=False)
    assert proc.returncode == EXIT_UNREADABLE and "is a symlink to" in proc.stderr, proc.stderr
    assert tree(home.root, shared.parent) == before


def test_reading_works_through_the_link(linked: tuple[Home, Path]) -> None:
    home, target = linked
    before = tree(home.root, target.parent)
    proc = run_cli(home, "list")
    assert "first" in proc.stdout and "second" in proc.stdout and "id=aaaaaa" in proc.stdout
    assert tree(home.root, target.parent) == before


def test_the_transaction_refuses_before_it_creates_anything(linked: tuple[Home, Path]) -> None:
    """Every writer (proxy counts and benches, agents, the fleet applier) shares this entry."""
    home, target = linked
    before = tree(home.root, target.parent)
    with pytest.raises(LinkedStore) as exc, transaction(home) as doc:
        doc["credential_pool"]["openrouter"][0]["request_count"] = 99
    assert exc.value.exit_code == EXIT_UNREADABLE and str(target.name) in str(exc.value)
    assert tree(home.root, target.parent) == before


def test_a_link_to_a_missing_target_is_refused_too(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    home.root.mkdir(mode=0o700)
    home.auth.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(LinkedStore), transaction(home):
        pass
    assert not (tmp_path / "nowhere.json").exists() and not home.lock.exists()


def test_a_plain_file_is_not_called_linked(tmp_home: Home) -> None:
    assert authfile.linked_store(tmp_home) is None
    tmp_home.auth.write_text(json.dumps(make_store({})))
    assert authfile.linked_store(tmp_home) is None


# --- negative controls ---------------------------------------------------------------------

def _run(home: Home, *argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = entry.main(["--home", str(home.root), *argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    redact.clear_registered()
    return code, err.getvalue()


def test_negative_control_without_the_check_reset_leaves_files_behind(
        linked: tuple[Home, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug the check fixes: a backup, a history copy and a lock file, then a crash or a
    write that the next Hermes save splits off."""
    home, target = linked
    before = tree(home.root, target.parent)
    monkeypatch.setattr(authfile, "refuse_linked", lambda home: None)
    code, err = _run(home, "reset", "openrouter", "first", "--yes")
    after = tree(home.root, target.parent)
    assert after != before
    # As first reported it also crashed ("internal error: NotImplementedError: chmod:
    # follow_symlinks unavailable on this platform"): the history linked the symlink itself.
    # It now keeps the file the link points at, and the write goes through: the backup, the
    # history copy and the lock file are left in the home all the same.
    assert code == 0, err
    assert home.lock.exists() and home.backup.exists() and os.listdir(home.root / "hermes-admin-history")
    monkeypatch.undo()
    code, err = _run(home, "reset", "openrouter", "first", "--yes")
    assert code == EXIT_UNREADABLE and "is a symlink to" in err


def test_negative_control_without_the_check_the_transaction_writes_through(
        linked: tuple[Home, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    home, target = linked
    monkeypatch.setattr(authfile, "refuse_linked", lambda home: None)
    with transaction(home) as doc:
        doc["credential_pool"]["openrouter"][0]["request_count"] = 99
    assert json.loads(target.read_text())["credential_pool"]["openrouter"][0]["request_count"] == 99


# --- the console, the proxy and the monitor say the same ------------------------------------

def test_console_banner_and_monitor_report_the_link(linked: tuple[Home, Path]) -> None:

    home, target = linked
    state = HomeLoader(home).load()
    assert state.store_error is None and state.pools       # it reads
    expected = str(authfile.linked_store(home))
    assert ("error", expected + ".") in problems(state)
    sample = Sample([ProfileSample("default", home, state.pools, None, state.read_at,
                                   store_linked=state.store_linked)])
    raised = [c for c in conditions.evaluate(sample, rules.defaults(), 0.0).conditions.values()
              if c.rule == rules.STORE_UNREADABLE]
    assert [c.text for c in raised] == [expected + "."]
    assert "is a symlink to" in expected and str(target) in expected


def test_a_plain_home_raises_no_link_condition(tmp_home: Home) -> None:

    tmp_home.auth.write_text(json.dumps(make_store({"openrouter": [make_row("aaaaaa", token=TOKEN)]})))
    state = HomeLoader(tmp_home).load()
    assert state.store_linked is None and not [p for p in problems(state) if "symlink" in p[1]]


def test_the_proxy_refuses_to_start_with_the_same_error(linked: tuple[Home, Path]) -> None:
    home, target = linked
    before = tree(home.root, target.parent)
    proc = run_cli(home, "proxy", "--pool", "openrouter", "--port", "0", ok=False, timeout=30)
    assert proc.returncode == EXIT_UNREADABLE, proc.stderr
    assert str(authfile.linked_store(home)) in proc.stderr
    assert tree(home.root, target.parent) == before
