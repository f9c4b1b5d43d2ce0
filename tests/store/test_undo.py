"""`hermes-admin history` and `undo` (store.ops.history, store.ops.undo): an operator action's
rows and fields go back, on the fresh file, and nothing else does."""

from __future__ import annotations

import json
import os

from store.ops import history
from store.paths import Home
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, run_cli, write_store

KEYS = ["sk-or-v1-undotest-" + c * 40 for c in "abc"]


def _home(home: Home) -> None:
    write_store(home, make_store({"openrouter": [make_row(f"r{i}", label=f"k{i}", token=KEYS[i], priority=i)
                                                 for i in range(3)]}))


def _row(home: Home, rid: str) -> dict | None:
    return next((r for r in read_doc(home)["credential_pool"]["openrouter"] if r["id"] == rid), None)


def _bump(home: Home, rid: str, n: int = 1) -> None:
    """An agent counting requests, as a proxy flush or a Hermes selection does."""
    with transaction(home) as doc:
        for r in doc["credential_pool"]["openrouter"]:
            if r["id"] == rid:
                r["request_count"] = r.get("request_count", 0) + n


def test_undo_of_a_remove_brings_the_row_back_as_it_was_and_keeps_later_agent_writes(tmp_home: Home) -> None:
    _home(tmp_home)
    _bump(tmp_home, "r1", 7)
    run_cli(tmp_home, "remove", "openrouter", "k1", "--yes")
    for _ in range(5):                 # agents keep writing: the single .bak is replaced each time
        _bump(tmp_home, "r0")
    assert "r1" not in tmp_home.backup.read_text()       # the old way back has lost the key
    run_cli(tmp_home, "undo", "--yes")
    back = _row(tmp_home, "r1")
    assert back is not None and back["access_token"] == KEYS[1] and back["request_count"] == 7
    assert back["priority"] == 1
    assert _row(tmp_home, "r0")["request_count"] == 5      # the agents' later writes survive


def test_undo_of_an_older_cooldown_keeps_a_newer_agent_write_to_the_same_row(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "1h", "--reason", "maintenance")
    _bump(tmp_home, "r0", 3)
    run_cli(tmp_home, "undo", "--yes")
    row = _row(tmp_home, "r0")
    assert row["last_status"] is None and row["last_error_reason"] is None
    assert row["request_count"] == 3


def test_a_field_changed_since_by_another_writer_is_kept_and_said(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "1h")
    with transaction(tmp_home) as doc:          # an agent benches it again, for its own reason
        doc["credential_pool"]["openrouter"][0]["last_error_reason"] = "rate_limit"
    proc = run_cli(tmp_home, "undo", "--yes", ok=False)     # all it changed is kept: nothing undone
    assert proc.returncode == 2 and "nothing was undone" in proc.stderr
    assert "kept its whole bench (last_error_reason changed)" in proc.stdout
    row = _row(tmp_home, "r0")      # the bench is one unit: never last_status null beside the agent's reason
    assert row["last_error_reason"] == "rate_limit" and row["last_status"] == "exhausted"


def test_a_later_operator_action_on_the_same_row_refuses_unless_forced(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "1h")
    run_cli(tmp_home, "reset", "openrouter", "k0")
    before = tmp_home.auth.read_bytes()
    proc = run_cli(tmp_home, "undo", "2", "--yes", ok=False)
    assert proc.returncode == 2 and "--force" in proc.stderr and "reset" in proc.stderr
    assert tmp_home.auth.read_bytes() == before
    proc = run_cli(tmp_home, "undo", "2", "--yes", "--force", ok=False)
    # --force passes the check; the reset's bench is then kept whole, so nothing goes back.
    assert proc.returncode == 2 and "--force" not in proc.stderr and "nothing was undone" in proc.stderr
    assert tmp_home.auth.read_bytes() == before


def test_undo_of_an_add_removes_the_row_and_undo_of_the_undo_brings_it_back(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "add", "openrouter", "--api-key", "-", "--label", "new",
            input="sk-or-v1-undotest-" + "d" * 40 + "\n")
    assert len(read_doc(tmp_home)["credential_pool"]["openrouter"]) == 4
    run_cli(tmp_home, "undo", "--yes")
    assert len(read_doc(tmp_home)["credential_pool"]["openrouter"]) == 3
    run_cli(tmp_home, "undo", "--yes")                       # the undo is an action too
    assert [r["label"] for r in read_doc(tmp_home)["credential_pool"]["openrouter"]][-1] == "new"


def test_undo_of_a_config_edit_puts_the_key_back_with_its_comments(tmp_home: Home) -> None:
    _home(tmp_home)
    tmp_home.config.write_text("# operator notes\ncredential_pool_strategies:\n  openrouter: fill_first  # keep\n")
    run_cli(tmp_home, "strategy", "openrouter", "round_robin")
    assert "round_robin" in tmp_home.config.read_text()
    run_cli(tmp_home, "undo", "--yes")
    text = tmp_home.config.read_text()
    assert "fill_first" in text and "# keep" in text and "# operator notes" in text


def test_history_lists_ids_and_the_toast_line_names_undo(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "cooldown", "openrouter", "k2", "--for", "15m")
    run_cli(tmp_home, "reset", "openrouter", "k2")   # a reset with something to clear
    got = json.loads(run_cli(tmp_home, "history", "--json").stdout)
    assert got[0]["action"] == "reset" and history.valid_id(got[0]["id"])
    entry = [json.loads(line) for line in tmp_home.audit.read_text().splitlines()][-1]
    assert entry["history"] == got[0]["id"]


def test_history_keeps_no_key_outside_the_copy_and_every_file_is_private(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "remove", "openrouter", "k1", "--yes")
    d = history.folder(tmp_home)
    assert os.stat(d).st_mode & 0o777 == 0o700
    for p in d.iterdir():
        assert p.stat().st_mode & 0o777 == 0o600
        if p.name.endswith(".json"):
            assert not any(k in p.read_text() for k in KEYS)


def test_the_history_is_pruned_by_count(tmp_home: Home) -> None:
    _home(tmp_home)
    for _ in range(2):   # four writes (a reset of a key already ok writes nothing)
        run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "15m")
        run_cli(tmp_home, "reset", "openrouter", "k0")
    assert history.prune(tmp_home, 2e9, keep=2, days=10_000) == 2
    assert len([p for p in history.folder(tmp_home).iterdir() if p.name.endswith(".json")]) == 2


def test_a_symlinked_history_folder_is_refused_and_nothing_is_written(tmp_home: Home, tmp_path) -> None:
    """The way back is part of the write: without its copy, the write does not land."""
    _home(tmp_home)
    before = tmp_home.auth.read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    history.folder(tmp_home).symlink_to(elsewhere)
    proc = run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "15m", ok=False)
    assert proc.returncode == 3 and "symlink" in proc.stderr
    assert tmp_home.auth.read_bytes() == before and list(elsewhere.iterdir()) == []
    # Control: the same write with a real folder lands.
    history.folder(tmp_home).unlink()
    run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "15m")
    assert tmp_home.auth.read_bytes() != before


def test_no_proxy_count_flush_or_agent_write_adds_a_copy(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "cooldown", "openrouter", "k0", "--for", "15m")
    names = sorted(p.name for p in history.folder(tmp_home).iterdir())
    for _ in range(3):
        _bump(tmp_home, "r0")
    assert sorted(p.name for p in history.folder(tmp_home).iterdir()) == names


def test_a_bad_n_or_id_is_exit_2_naming_it(tmp_home: Home) -> None:
    _home(tmp_home)
    run_cli(tmp_home, "reset", "openrouter", "k0")
    for which, field in (("9" * 5000, "N"), ("0", "N"), ("²", "ID"), ("../../etc/passwd", "ID"),
                         ("20991231T000000000000Z-abcdef", "ID")):
        proc = run_cli(tmp_home, "undo", which, "--yes", ok=False)
        assert proc.returncode == 2 and f"{field}:" in proc.stderr, (which, proc.stderr)


def test_the_history_record_holds_no_value_only_digests(tmp_home: Home) -> None:
    """A key, a URL's password or a key-shaped label never sits in <id>.json: undo compares
    digests and takes values back from the kept copy."""
    _home(tmp_home)
    label = "sk-or-v1-undolabel-" + "f" * 40
    with transaction(tmp_home) as doc:
        doc["credential_pool"]["openrouter"][0].update(label=label, base_url="http://u:pw-undo-CANARY1@h/v1")
    tmp_home.config.write_text("fallback_providers:\n- provider: nous\n  api_key: sk-nous-undo-CANARY-000000000001\n")
    run_cli(tmp_home, "cooldown", "openrouter", "r0", "--for", "15m")
    run_cli(tmp_home, "fallback", "clear")
    for p in history.folder(tmp_home).glob("*.json"):
        text = p.read_text()
        for secret in (KEYS[0], label, "pw-undo-CANARY1", "sk-nous-undo-CANARY"):
            assert secret not in text, (p.name, secret)
    run_cli(tmp_home, "undo", "--yes")                 # the config edit still undoes from digests
    assert "sk-nous-undo-CANARY-000000000001" in tmp_home.config.read_text()
