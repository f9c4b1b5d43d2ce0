"""The headless CLI: verbs, exit codes, error messages, output shapes. In-process via tui.cli.main."""

from __future__ import annotations

import json
import os
import time

import pytest

from store import authfile
from store.errors import EXIT_BAD_INPUT, EXIT_LOCK_TIMEOUT, EXIT_UNREADABLE
from store.lock import locked
from store.paths import Home
from tui.cli import main

KEY_A = "sk-or-v1-CANARYaaaaaaaaaaaaaaaaaaaa1111"
KEY_B = "sk-or-v1-CANARYbbbbbbbbbbbbbbbbbbbb2222"


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path / "hermes")


def run(capsys, home: Home, *argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main([*argv, "--home", str(home.root)])
    out, err = capsys.readouterr()
    return code, out, err


def listing(capsys, home):
    code, out, err = run(capsys, home, "list", "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def two_keys(capsys, home, monkeypatch):
    assert run(capsys, home, "add", "openrouter", "--api-key", "-", "--label", "main",
               stdin=KEY_A + "\n", monkeypatch=monkeypatch)[0] == 0
    assert run(capsys, home, "add", "openrouter", "--api-key", "-", "--label", "backup",
               stdin=KEY_B + "\n", monkeypatch=monkeypatch)[0] == 0
    return home


def test_missing_store_lists_as_empty_and_says_where_it_looked(capsys, home):
    # #20: a home that does not exist is a mistyped --home: exit 3 naming it, created nothing.
    code, out, err = run(capsys, home, "list")
    assert code == 3
    assert str(home.root) in err and "only `add` creates one" in err
    assert not home.root.exists()  # reading created nothing
    # A home without a store yet lists as empty and says where it looked.
    home.root.mkdir(mode=0o700)
    code, out, err = run(capsys, home, "list")
    assert code == 0
    assert str(home.auth) in out and "hermes-admin add" in out
    assert not home.auth.exists()


def test_add_then_list_json_has_the_documented_shape(capsys, two_keys):
    doc = listing(capsys, two_keys)
    assert set(doc) >= {"home", "generated_at", "pools"}
    pool = doc["pools"]["openrouter"]
    assert pool["strategy"] == "fill_first"
    creds = pool["credentials"]
    assert [c["label"] for c in creds] == ["main", "backup"]
    required = {"id", "label", "auth_type", "source", "priority", "status", "available_at", "seconds_left",
                "last_status", "last_status_at", "last_error_code", "last_error_reason", "last_error_message",
                "last_error_reset_at", "request_count", "fingerprint", "next"}
    assert required <= set(creds[0])
    assert creds[0]["next"] is True and creds[1]["next"] is False
    assert creds[0]["fingerprint"] == "sk-or-…1111"
    assert KEY_A not in json.dumps(doc)


def test_text_list_reads_like_hermes_auth_list(capsys, two_keys):
    code, out, _ = run(capsys, two_keys, "cooldown", "openrouter", "backup", "--for", "15m")
    assert code == 0
    code, out, _ = run(capsys, two_keys, "list")
    lines = out.splitlines()
    assert lines[0] == "openrouter (2 credentials, fill_first):"
    assert lines[1].startswith("  #1 ") and "id=" in lines[1] and "priority=0" in lines[1] and lines[1].endswith("←")
    assert "exhausted manual_cooldown" in lines[2] and ("15m left" in lines[2] or "14m left" in lines[2])
    assert "key=sk-or-…2222" in lines[2]


def test_cooldown_then_reset_clears_and_stamps(capsys, two_keys):
    assert run(capsys, two_keys, "cooldown", "openrouter", "2", "--for", "2h", "--reason", "maint")[0] == 0
    c = listing(capsys, two_keys)["pools"]["openrouter"]["credentials"][1]
    assert c["status"] == "cooling" and c["last_error_reason"] == "maint"
    assert 7190 < c["seconds_left"] <= 7200
    code, out, _ = run(capsys, two_keys, "reset", "openrouter", "backup")
    assert code == 0 and "does not give the provider's quota back" in out
    c = listing(capsys, two_keys)["pools"]["openrouter"]["credentials"][1]
    assert c["status"] == "ok" and c["status_cleared_at"] is not None


def test_priority_moves_and_renumbers(capsys, two_keys):
    assert run(capsys, two_keys, "priority", "openrouter", "backup", "0")[0] == 0
    creds = listing(capsys, two_keys)["pools"]["openrouter"]["credentials"]
    assert [(c["label"], c["priority"]) for c in creds] == [("backup", 0), ("main", 1)]


def test_remove_renumbers_and_records_audit(capsys, two_keys):
    code, out, _ = run(capsys, two_keys, "remove", "openrouter", "main")
    assert code == 0 and "may write it back" in out
    creds = listing(capsys, two_keys)["pools"]["openrouter"]["credentials"]
    assert [(c["label"], c["priority"]) for c in creds] == [("backup", 0)]
    entries = [json.loads(line) for line in two_keys.audit.read_text().splitlines()]
    assert [e["action"] for e in entries] == ["add", "add", "remove"]
    assert entries[-1]["changes"][0]["label"] == "main"
    assert KEY_A not in two_keys.audit.read_text()


@pytest.mark.parametrize("argv, field", [
    (["reset", "no such pool"], "POOL"),
    (["reset", "openrouter", "nobody"], "TARGET"),
    (["reset", "openrouter", "9"], "TARGET"),
    (["priority", "openrouter", "main", "7"], "N"),
    (["cooldown", "openrouter", "main", "--for", "soon"], "--for"),
    (["cooldown", "openrouter", "main", "--until", "yesterday-ish"], "--until"),
    (["cooldown", "openrouter", "main", "--until", "2001-01-01T00:00"], "--until"),
    (["add", "openrouter", "--api-key", KEY_A], "--api-key"),  # duplicate
    (["add", "Open Router", "--api-key", "sk-x-abcdefghijklmnop"], "POOL"),
    (["add", "openrouter", "--api-key", "sk-x-abcdefghijklmnop", "--base-url", "ftp://x"], "--base-url"),
    (["strategy", "openrouter", "quota_aware"], "STRATEGY"),
    (["list", ""], "POOL: is empty"),            # never "no credential pools yet" for a full store
    (["list", "   ", "--json"], "POOL: is empty"),
    (["reset", "", "main"], "POOL: is empty"),
])
def test_bad_input_names_the_argument_exits_2_and_writes_nothing(capsys, two_keys, argv, field):
    before = two_keys.auth.read_bytes()
    code, out, err = run(capsys, two_keys, *argv)
    assert code == EXIT_BAD_INPUT
    assert err.startswith("hermes-admin: error: ") and field in err
    assert "Traceback" not in err and KEY_A not in err + out
    assert two_keys.auth.read_bytes() == before


def test_argparse_errors_fingerprint_a_stray_key(capsys, home):
    with pytest.raises(SystemExit) as exc:
        main(["add", "openrouter", "--api-key", "-", KEY_A, "--home", str(home.root)])
    assert exc.value.code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err
    assert KEY_A not in err and "sk-or-…1111" in err


def test_corrupt_store_exits_3_names_path_and_is_left_alone(capsys, two_keys):
    two_keys.auth.write_bytes(b'{"credential_pool": {"openrouter": [')
    before = two_keys.auth.read_bytes()
    for argv in (["list"], ["reset", "openrouter", "--yes"],
                 ["add", "openrouter", "--api-key", "sk-zz-abcdefghijklmnopq"]):
        code, out, err = run(capsys, two_keys, *argv)
        assert code == EXIT_UNREADABLE, argv
        assert str(two_keys.auth) in err and "invalid JSON" in err
        assert "auth.json.bak" in err  # the recovery hint names the backup
    assert two_keys.auth.read_bytes() == before


def test_restore_backup_brings_back_the_last_good_file(capsys, two_keys):
    two_keys.auth.write_bytes(b"garbage")
    code, out, err = run(capsys, two_keys, "restore-backup", "--yes")
    assert code == 0, err
    assert [c["label"] for c in listing(capsys, two_keys)["pools"]["openrouter"]["credentials"]] == ["main"]
    assert any(p.name.startswith("auth.json.replaced-") for p in two_keys.root.iterdir())


def test_lock_timeout_exits_4_and_names_the_lock(capsys, two_keys):
    before = two_keys.auth.read_bytes()
    with locked(two_keys.lock, 1):
        t0 = time.monotonic()
        code, out, err = run(capsys, two_keys, "reset", "openrouter", "--yes", "--lock-timeout", "0.3")
        elapsed = time.monotonic() - t0
    assert code == EXIT_LOCK_TIMEOUT
    assert str(two_keys.lock) in err and elapsed >= 0.29   # gave up after its timeout, not before
    assert two_keys.auth.read_bytes() == before


def test_list_never_writes_even_when_a_cooldown_has_elapsed(capsys, two_keys):
    from store.transaction import transaction

    with transaction(two_keys) as doc:
        row = doc["credential_pool"]["openrouter"][1]
        row.update(last_status="exhausted", last_status_at=time.time() - 7200, last_error_code=429)
    st = os.stat(two_keys.auth)
    before = two_keys.auth.read_bytes()
    creds = listing(capsys, two_keys)["pools"]["openrouter"]["credentials"]
    assert creds[1]["status"] == "ready"
    run(capsys, two_keys, "list")
    assert two_keys.auth.read_bytes() == before and os.stat(two_keys.auth).st_mtime_ns == st.st_mtime_ns


def test_remove_of_a_seeded_row_suppresses_its_source(capsys, home):
    from store.transaction import transaction

    with transaction(home) as doc:
        doc["credential_pool"]["openrouter"] = [{
            "id": "e1", "label": "OPENROUTER_API_KEY", "auth_type": "api_key", "priority": 0,
            "source": "env:OPENROUTER_API_KEY", "secret_fingerprint": "sha256:0123456789abcdef",
            "last_status": None, "last_status_at": None, "last_error_code": None, "last_error_reason": None,
            "last_error_message": None, "last_error_reset_at": None, "request_count": 3}]
    assert run(capsys, home, "remove", "openrouter", "e1")[0] == 0
    doc = authfile.read_store(home).doc
    assert doc["suppressed_sources"] == {"openrouter": ["env:OPENROUTER_API_KEY"]}
    # Adding a key to the pool lifts the suppression, as Hermes's `auth add` does.
    assert run(capsys, home, "add", "openrouter", "--api-key", "sk-or-v1-zzzzzzzzzzzzzzzzzz")[0] == 0
    assert "suppressed_sources" not in authfile.read_store(home).doc


def test_fallback_verbs_edit_the_chain_and_keep_comments(capsys, home):
    home.root.mkdir(parents=True)
    home.config.write_text("# operator note: keep me\nfallback_providers: []  # chain\n")
    assert run(capsys, home, "fallback", "add", "openrouter", "m1")[0] == 0
    assert run(capsys, home, "fallback", "add", "nous", "m2", "--base-url", "http://localhost:8000/v1/")[0] == 0
    code, out, err = run(capsys, home, "fallback", "add", "NOUS", "m2", "--base-url", "http://localhost:8000/v1")
    assert code == EXIT_BAD_INPUT and "already" in err  # same route after lower-casing and the trailing /
    assert run(capsys, home, "fallback", "move", "2", "1")[0] == 0
    code, out, _ = run(capsys, home, "fallback", "list", "--json")
    assert [(e["provider"], e["model"]) for e in json.loads(out)] == [("nous", "m2"), ("openrouter", "m1")]
    assert "# operator note: keep me" in home.config.read_text()
    assert run(capsys, home, "fallback", "remove", "1")[0] == 0
    code, out, err = run(capsys, home, "fallback", "remove", "5")
    assert code == EXIT_BAD_INPUT
    assert run(capsys, home, "fallback", "clear")[0] == 0
    assert "no fallback chain" in run(capsys, home, "fallback", "list")[1]
    actions = [json.loads(line)["action"] for line in home.audit.read_text().splitlines()]
    assert actions == ["config.fallback.add", "config.fallback.add", "config.fallback.move",
                       "config.fallback.remove", "config.fallback.clear"]


def test_routing_verbs_validate_values(capsys, home):
    home.root.mkdir()  # only `add` creates a missing home
    assert run(capsys, home, "routing", "set", "sort", "price")[0] == 0
    assert run(capsys, home, "routing", "set", "ignore", "together,deepinfra")[0] == 0
    before = home.config.read_bytes()
    for argv, field in ((["routing", "set", "sort", "cheapest"], "VALUE"),
                        (["routing", "set", "colour", "blue"], "KEY"),
                        (["routing", "set", "require_parameters", "maybe"], "VALUE")):
        code, _, err = run(capsys, home, *argv)
        assert code == EXIT_BAD_INPUT and field in err, err
    assert home.config.read_bytes() == before
    code, out, _ = run(capsys, home, "routing", "show", "--json")
    assert json.loads(out) == {"sort": "price", "ignore": ["together", "deepinfra"]}
    assert run(capsys, home, "routing", "unset", "sort")[0] == 0
    assert "sort" not in json.loads(run(capsys, home, "routing", "show", "--json")[1])


def test_a_verb_on_a_missing_home_creates_nothing(capsys, home):
    for argv in (["reset", "openrouter", "--yes"], ["cooldown", "openrouter", "1", "--for", "1m"],
                 ["priority", "openrouter", "1", "0"], ["remove", "openrouter", "1"]):
        code, _, err = run(capsys, home, *argv)
        assert code in (EXIT_BAD_INPUT, EXIT_UNREADABLE) and str(home.root) in err, (argv, err)
    assert not home.root.exists()
    assert run(capsys, home, "add", "openrouter", "--api-key", "sk-or-v1-zzzzzzzzzzzzzzzzzz")[0] == 0
    assert home.auth.exists() and oct(home.root.stat().st_mode & 0o777) == "0o700"
