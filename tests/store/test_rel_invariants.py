"""Reliability bar, invariants of every write and read (RELIABILITY.md 10, 14, 15):
no network under the lock, unknown data survives every action, read paths never write."""

from __future__ import annotations

import copy
import importlib
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from store import authfile
from store.model import SECRET_FIELDS, STATUS_FIELDS, is_owned
from store.ops import actions, audit
from store.paths import Home
from store.pools import policy, view
from store.transaction import apply, transaction
from tests.helpers_proc import counter_doc, run_cli, write_doc

# store/__init__ re-exports the transaction() function under the submodule's name.
transaction_mod = importlib.import_module("store.transaction")
NOW = time.time()
CANARY_OWNED = "sk-or-v1-ownedcanary0000000000000000000000000001"


def hermes_doc() -> dict[str, Any]:
    """A store as a real, long-lived Hermes home looks: every kind of row, plus data
    hermes-admin does not know about."""
    st = {f: None for f in STATUS_FIELDS}
    return {
        "version": 1,
        "updated_at": "2026-05-01T10:00:00.123456+00:00",
        "active_provider": "openrouter",
        "future_feature": {"nested": [1, 2.5, {"deep": None}], "flag": True},
        "providers": {
            "nous": {"access_token": "nous-oauth-token-0000000000000000", "expires_at": "2026-06-01T00:00:00Z",
                     "unknown_provider_field": [1]},
        },
        "credential_pool": {
            "openrouter": [
                {"id": "a1b2c3", "label": "primary", "auth_type": "api_key", "priority": 0,
                 "source": "manual", "access_token": CANARY_OWNED, **st, "request_count": 41,
                 "x_operator_note": "do not remove", "model_cooldowns": {"gpt-5": NOW + 600},
                 "model_cooldown_observed_at": {"gpt-5": NOW - 10}},
                {"id": "d4e5f6", "label": "backup", "auth_type": "api_key", "priority": 1,
                 "source": "manual:team", "access_token": "sk-or-v1-" + "b" * 40,
                 "last_status": "exhausted", "last_status_at": int(NOW) - 100,
                 "last_error_code": 429, "last_error_reason": "rate_limit_exceeded",
                 "last_error_message": "slow down", "last_error_reset_at": None,
                 "failure_reason": "rate_limit", "request_count": 7, "base_url": "https://openrouter.ai/api/v1"},
                {"id": "0a0b0c", "label": "OPENROUTER_API_KEY", "auth_type": "api_key", "priority": 2,
                 "source": "env:OPENROUTER_API_KEY", "secret_fingerprint": "sha256:0123456789abcdef",
                 **st, "request_count": 3, "extra_from_newer_hermes": {"k": "v"}},
            ],
            "anthropic": [
                {"id": "aaaaaa", "label": "claude-code", "auth_type": "oauth", "priority": 0,
                 "source": "claude_code", "secret_fingerprint": "sha256:fedcba9876543210",
                 **st, "request_count": 0, "expires_at_ms": 1893456000000},
                {"id": "bbbbbb", "label": "pkce", "auth_type": "oauth", "priority": 1,
                 "source": "hermes_pkce", "access_token": "sk-ant-oat01-" + "p" * 30,
                 "refresh_token": "sk-ant-ort01-" + "r" * 30, **st, "request_count": 2},
            ],
            "custom:together.ai": [
                {"id": "cccccc", "label": "together", "auth_type": "api_key", "priority": 0,
                 "source": "config:together", "secret_fingerprint": "sha256:1111111111111111",
                 **st, "request_count": 0, "base_url": "https://api.together.ai/v1"},
            ],
        },
        "suppressed_sources": {"anthropic": ["env:ANTHROPIC_API_KEY"]},
        "zz_trailing_unknown": "kept",
    }


@pytest.fixture
def home(tmp_path: Path) -> Home:
    h = Home(tmp_path / "hermes")
    write_doc(h, hermes_doc())
    return h


def _read(home: Home) -> dict[str, Any]:
    doc = authfile.read_store(home).doc
    assert doc is not None
    return doc


# 10. No network under the lock -------------------------------------------------------------

@contextmanager
def _network_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Record every outgoing connection attempted while store.transaction holds the lock."""
    held = {"now": False}
    made: list[Any] = []
    real_locked = transaction_mod.locked

    @contextmanager
    def tracking_locked(path: Path, timeout: float) -> Iterator[None]:
        with real_locked(path, timeout):
            held["now"] = True
            try:
                yield
            finally:
                held["now"] = False

    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create = socket.create_connection

    def connect(self: socket.socket, address: Any) -> Any:
        if held["now"]:
            made.append(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if held["now"]:
            made.append(address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *a: Any, **kw: Any) -> Any:
        if held["now"]:
            made.append(address)
        return real_create(address, *a, **kw)

    monkeypatch.setattr(transaction_mod, "locked", tracking_locked)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    yield made


ACTIONS: dict[str, Callable[[dict[str, Any]], actions.Outcome]] = {
    "add": lambda d: actions.add_key(d, "openrouter", "sk-or-v1-" + "n" * 40, NOW, label="new"),
    "remove": lambda d: actions.remove(d, "openrouter", "0a0b0c"),
    "reset-one": lambda d: actions.reset(d, "openrouter", "d4e5f6", NOW),
    "reset-pool": lambda d: actions.reset(d, "openrouter", None, NOW),
    "reset-borrowed": lambda d: actions.reset(d, "anthropic", "claude-code", NOW),
    "cooldown": lambda d: actions.cooldown(d, "openrouter", "primary", NOW + 900, NOW, "maint"),
    "cooldown-borrowed": lambda d: actions.cooldown(d, "custom:together.ai", "1", NOW + 900, NOW),
    "priority": lambda d: actions.set_priority(d, "openrouter", "0a0b0c", 0),
}


def test_no_network_while_the_lock_is_held(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    with _network_guard(monkeypatch) as made:
        for act in ACTIONS.values():
            write_doc(home, hermes_doc())
            outcome = apply(home, act, lock_timeout=2)
            audit.record(home, outcome, via="test")
        with transaction(home, lock_timeout=2) as doc:
            policy.select(doc["credential_pool"]["openrouter"], "round_robin", NOW, policy.DEFAULT_TTLS)
    assert made == []
    assert len(audit.tail(home)) == len(ACTIONS)


def test_no_network_under_the_lock_in_cli_writes(home: Home, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli import main

    argvs = [["reset", "openrouter", "--yes"], ["cooldown", "openrouter", "primary", "--for", "15m"],
             ["priority", "openrouter", "backup", "0"], ["remove", "openrouter", "backup", "--yes"]]
    with _network_guard(monkeypatch) as made:
        for argv in argvs:
            assert main(["--home", str(home.root), *argv, "--lock-timeout", "2"]) == 0, argv
    capsys.readouterr()
    assert made == []


def test_negative_control_network_guard_sees_a_connection_under_the_lock(
        home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    address = server.getsockname()
    try:
        with _network_guard(monkeypatch) as made:
            with transaction(home, lock_timeout=2):
                socket.create_connection(address, timeout=2).close()
            # Outside the lock the same call is fine and not recorded.
            socket.create_connection(address, timeout=2).close()
    finally:
        server.close()
    # create_connection and the socket.connect beneath it: both seen, nothing else.
    assert made, "a connection under the lock went unnoticed"
    assert {tuple(a)[:2] for a in made} == {address}


# 14. Unknown data survives -----------------------------------------------------------------

# What each action may legitimately change: rows it targets (by id) and which fields,
# and fields it may renumber on the pool's other rows.
RESET_FIELDS = set(STATUS_FIELDS) | {"failure_reason", "model_cooldowns",
                                     "model_cooldown_observed_at", "status_cleared_at"}
CONCERNS: dict[str, dict[str, Any]] = {
    "add": {"pool": "openrouter", "rows": set(), "fields": set(), "others": set(), "new": 1},
    "remove": {"pool": "openrouter", "rows": {"0a0b0c"}, "fields": set(), "others": {"priority"},
               "gone": {"0a0b0c"}, "suppress": "env:OPENROUTER_API_KEY"},
    "reset-one": {"pool": "openrouter", "rows": {"d4e5f6"}, "fields": RESET_FIELDS, "others": set()},
    "reset-pool": {"pool": "openrouter", "rows": {"a1b2c3", "d4e5f6", "0a0b0c"},
                   "fields": RESET_FIELDS, "others": set()},
    "reset-borrowed": {"pool": "anthropic", "rows": {"aaaaaa"}, "fields": RESET_FIELDS, "others": set()},
    "cooldown": {"pool": "openrouter", "rows": {"a1b2c3"}, "fields": set(STATUS_FIELDS), "others": set()},
    "cooldown-borrowed": {"pool": "custom:together.ai", "rows": {"cccccc"},
                          "fields": set(STATUS_FIELDS), "others": set()},
    "priority": {"pool": "openrouter", "rows": {"0a0b0c"}, "fields": {"priority"},
                 "others": {"priority"}},
}


def _exact(value: Any) -> str:
    """Equality that also sees int-vs-float and key order, which == on dicts does not."""
    return json.dumps(value, ensure_ascii=False)


def check_only_concerned_changed(before: dict[str, Any], after: dict[str, Any],
                                 concern: dict[str, Any]) -> None:
    pool = concern["pool"]
    skip_top = {"version", "updated_at", "credential_pool", "suppressed_sources"}
    assert [k for k in after if k != "suppressed_sources"] == \
           [k for k in before if k != "suppressed_sources"], "top-level keys or their order changed"
    for key in before:
        if key not in skip_top:
            assert _exact(after[key]) == _exact(before[key]), f"top-level {key!r} changed"
    assert list(after["credential_pool"]) == list(before["credential_pool"]), "pool order changed"
    for other, rows in before["credential_pool"].items():
        if other != pool:
            assert _exact(after["credential_pool"][other]) == _exact(rows), f"pool {other} changed"

    old = {r["id"]: r for r in before["credential_pool"][pool]}
    new = {r["id"]: r for r in after["credential_pool"][pool]}
    assert set(old) - set(new) == concern.get("gone", set()), "rows vanished"
    assert len(set(new) - set(old)) == concern.get("new", 0), "unexpected new rows"
    for rid, row in old.items():
        if rid not in new:
            continue
        allowed = set(concern["others"])
        if rid in concern["rows"]:
            allowed |= concern["fields"]
        after_row = new[rid]
        for field, value in row.items():
            if field not in allowed:
                assert field in after_row, f"{pool}/{rid}: field {field!r} dropped"
                assert _exact(after_row[field]) == _exact(value), f"{pool}/{rid}: {field!r} changed"
        for field in after_row.keys() - row.keys():
            assert field in allowed, f"{pool}/{rid}: field {field!r} appeared"
        kept = [f for f in row if f in after_row]
        assert [f for f in after_row if f in row] == kept, f"{pool}/{rid}: field order changed"

    sup_before = before.get("suppressed_sources", {})
    sup_after = after.get("suppressed_sources", {})
    for other in set(sup_before) | set(sup_after):
        if other != pool:
            assert sup_after.get(other) == sup_before.get(other), f"suppressed_sources.{other} changed"
    if concern.get("suppress"):
        assert concern["suppress"] in sup_after.get(pool, [])

    for key, rows in after["credential_pool"].items():
        for r in rows:
            if not is_owned(key, r):
                assert not set(SECRET_FIELDS) & r.keys(), f"borrowed row {key}/{r['id']} gained a secret"


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_unknown_data_survives(home: Home, name: str) -> None:
    before = _read(home)
    apply(home, ACTIONS[name], lock_timeout=2)
    after = _read(home)
    assert after != before, "the action changed nothing: the check below would prove nothing"
    check_only_concerned_changed(before, after, CONCERNS[name])


def test_unknown_data_survives_a_sequence_of_every_action(home: Home) -> None:
    """Run every action in turn; the rows and data none of them touched stay exact."""
    before = _read(home)
    for name in ("cooldown", "reset-one", "priority", "add", "reset-borrowed"):
        apply(home, ACTIONS[name], lock_timeout=2)
    after = _read(home)
    for key in ("future_feature", "providers", "zz_trailing_unknown", "active_provider"):
        assert _exact(after[key]) == _exact(before[key])
    assert _exact(after["credential_pool"]["custom:together.ai"]) == \
           _exact(before["credential_pool"]["custom:together.ai"])
    rows = {r["id"]: r for r in after["credential_pool"]["openrouter"]}
    assert rows["a1b2c3"]["x_operator_note"] == "do not remove"
    assert rows["0a0b0c"]["extra_from_newer_hermes"] == {"k": "v"}
    assert "access_token" not in rows["0a0b0c"]
    assert after["suppressed_sources"] == {"anthropic": ["env:ANTHROPIC_API_KEY"]}


def _rebuild_from_known_fields(doc: dict[str, Any]) -> actions.Outcome:
    """A plausible bug: an action that rebuilds the row from the fields it knows."""
    from store.model import Row

    rows = doc["credential_pool"]["openrouter"]
    rows[0] = {k: v for k, v in rows[0].items() if k in Row.__annotations__}
    return actions.reset(doc, "openrouter", "d4e5f6", NOW)


def _float_counts(doc: dict[str, Any]) -> actions.Outcome:
    """A subtler bug: values that compare equal in Python but not in the file (3 -> 3.0)."""
    doc["credential_pool"]["anthropic"][0]["request_count"] = 0.0
    return actions.reset(doc, "openrouter", "d4e5f6", NOW)


def _leaks_secret(doc: dict[str, Any]) -> actions.Outcome:
    doc["credential_pool"]["openrouter"][2]["access_token"] = "sk-or-v1-" + "z" * 40
    return actions.reset(doc, "openrouter", "d4e5f6", NOW)


@pytest.mark.parametrize("buggy", [_rebuild_from_known_fields, _float_counts, _leaks_secret])
def test_negative_control_survival_check_catches_damage(home: Home, buggy: Callable) -> None:
    before = _read(home)
    apply(home, buggy, lock_timeout=2)
    with pytest.raises(AssertionError):
        check_only_concerned_changed(before, _read(home), CONCERNS["reset-one"])


# 15. Read paths never write ----------------------------------------------------------------

def _elapsed_store(home: Home) -> None:
    doc = counter_doc(rows=3)
    rows = doc["credential_pool"]["openrouter"]
    # Cooldowns that have run out: a careless reader would "clear" them and save.
    rows[0].update(last_status="exhausted", last_status_at=NOW - 7200, last_error_code=429,
                   last_error_reason="rate_limit_exceeded")
    rows[1].update(last_status="exhausted", last_status_at=NOW - 9000, last_error_code=402,
                   last_error_reset_at=NOW - 60, model_cooldowns={"m": NOW - 5})
    write_doc(home, doc)
    home.config.write_text("credential_pool_strategies:\n  openrouter: round_robin\n")


def _fingerprint_dir(home: Home) -> dict[str, tuple[int, int]]:
    out = {}
    for p in sorted(home.root.iterdir()):
        st = os.lstat(p)
        out[p.name] = (st.st_mtime_ns, st.st_size)
    return out


def test_read_store_and_views_never_write(tmp_path: Path) -> None:
    home = Home(tmp_path / "hermes")
    _elapsed_store(home)
    raw, listing = home.auth.read_bytes(), _fingerprint_dir(home)
    snap = authfile.read_store(home)
    doc_copy = copy.deepcopy(snap.doc)
    for strategy in ("fill_first", "round_robin", "least_used", "random"):
        pools = view.build_pools(snap.doc, strategies={"openrouter": strategy}, now=NOW,
                                 env={"OPENROUTER_API_KEY": "x"})
        json.dumps(view.to_json(str(home.root), pools, NOW))
    statuses = [cv.effective.status for cv in pools[0].credentials]
    assert statuses[:2] == [policy.READY, policy.READY], statuses
    assert snap.doc == doc_copy, "building a view changed the document in memory"
    assert home.auth.read_bytes() == raw
    assert _fingerprint_dir(home) == listing, "a read created or touched a file in the home"


@pytest.mark.slow
def test_cli_list_never_writes(tmp_path: Path) -> None:
    home = Home(tmp_path / "hermes")
    _elapsed_store(home)
    raw, listing = home.auth.read_bytes(), _fingerprint_dir(home)
    for args in (["list"], ["list", "--json"], ["list", "openrouter"], ["list", "openrouter", "--json"]):
        proc = run_cli(*args, home=home)
        assert proc.returncode == 0, (args, proc.stderr)
        assert home.auth.read_bytes() == raw, args
        assert _fingerprint_dir(home) == listing, args
    listed = json.loads(run_cli("list", "--json", home=home).stdout)
    assert [c["status"] for c in listed["pools"]["openrouter"]["credentials"]][:2] == ["ready", "ready"]


def test_negative_control_a_no_op_write_is_detected(tmp_path: Path) -> None:
    """The checks above would see a write: even a transaction that changes nothing
    rewrites the file, and clearing elapsed cooldowns changes the document."""
    home = Home(tmp_path / "hermes")
    _elapsed_store(home)
    raw, listing = home.auth.read_bytes(), _fingerprint_dir(home)
    doc = authfile.read_store(home).doc
    doc_copy = copy.deepcopy(doc)
    policy.clear_elapsed(doc["credential_pool"]["openrouter"], NOW)
    assert doc != doc_copy
    time.sleep(0.01)    # mtime granularity
    with transaction(home, lock_timeout=2):
        pass
    assert home.auth.read_bytes() != raw
    assert _fingerprint_dir(home) != listing
