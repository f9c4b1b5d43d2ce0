"""hermes-admin against the real Hermes 0.19.0 pool code, on one shared home.

Each test runs Hermes's own ``agent.credential_pool`` in a partner process
(tests/hermes_real.py) and checks that the two programs agree on the file, the
lock and the cooldown arithmetic, and that neither loses the other's writes.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from store import authfile
from store.lock import locked
from store.ops import actions
from store.paths import Home
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, run_cli, write_store
from tests.hermes_real import wait_for

pytestmark = pytest.mark.hermes

POOL = "openrouter"
KEY_A = "sk-or-v1-interopAAAAAAAAAAAAAAAA0001"
KEY_B = "sk-or-v1-interopBBBBBBBBBBBBBBBB0002"
KEY_C = "sk-or-v1-interopCCCCCCCCCCCCCCCC0003"
ONLY_ROW_GAP = 3600.0 - 60.0  # what the only-row rule takes off a 429's hour


def two_rows(**a_fields) -> dict:
    return make_store({POOL: [
        make_row("aaaaaa", label="alpha", priority=0, token=KEY_A, **a_fields),
        make_row("bbbbbb", label="bravo", priority=1, token=KEY_B),
    ]})


def listed(home: Home, pool: str = POOL) -> dict[str, dict]:
    """`hermes-admin list --json`, as {id: credential}."""
    out = json.loads(run_cli(home, "list", pool, "--json").stdout)
    return {c["id"]: c for c in out["pools"][pool]["credentials"]}


def write_config(home: Home, text: str) -> None:
    home.config.write_text(text, encoding="utf-8")


# --- rows we add are rows Hermes uses ----------------------------------------------------------

def test_row_added_through_transaction_is_selected_by_hermes(tmp_home, hermes):
    # A dead row first in line: if Hermes could not read our row it would select nothing.
    write_store(tmp_home, make_store({POOL: [
        make_row("deadde", label="revoked", token=KEY_C, last_status="dead",
                 last_status_at=time.time(), last_error_code=401, last_error_reason="token_revoked"),
    ]}))
    assert hermes.select(POOL) is None
    with transaction(tmp_home) as doc:
        out = actions.add_key(doc, POOL, KEY_A, time.time(), label="ours")
    new_id = out.changes[0].id
    assert hermes.select(POOL) == {"id": new_id, "label": "ours"}


def test_row_added_by_cli_is_selected_by_hermes(tmp_home, hermes):
    assert not tmp_home.auth.exists()
    proc = run_cli(tmp_home, "add", POOL, "--api-key", "-", "--label", "from-cli", input=KEY_A + "\n")
    assert KEY_A not in proc.stdout + proc.stderr
    picked = hermes.select(POOL)
    assert picked is not None and picked["label"] == "from-cli"
    assert [e["access_token"] for e in hermes.entries(POOL)] == ["<set>"]


# --- Hermes's cooldowns, shown by hermes-admin with Hermes's own arithmetic --------------------

def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat().replace("+00:00", "Z")


RESETS = {
    "none": lambda now: None,
    "epoch-s": lambda now: now + 1234.5,
    "epoch-ms": lambda now: int((now + 777) * 1000),
    "iso": lambda now: _iso(now + 5000),
}


@pytest.mark.parametrize("code,reason", [(429, "rate_limit_exceeded"), (402, "insufficient_credits")])
@pytest.mark.parametrize("reset", list(RESETS))
def test_cooldown_written_by_hermes_matches_its_arithmetic(tmp_home, hermes, code, reason, reset):
    write_store(tmp_home, two_rows())
    now = time.time()
    marked = hermes.mark(POOL, code, reason=reason, message="upstream said no",
                         reset_at=RESETS[reset](now), api_key_hint=KEY_A)
    assert marked["id"] == "aaaaaa" and marked["last_status"] == "exhausted"
    assert marked["next"] == "bbbbbb"
    theirs = hermes.exhausted_until(POOL)["aaaaaa"]
    assert theirs == pytest.approx(marked["exhausted_until"], abs=1e-6)
    ours = listed(tmp_home)["aaaaaa"]
    assert ours["status"] == "cooling"
    assert ours["last_error_code"] == code
    assert ours["available_at"] == pytest.approx(theirs, abs=1e-3)
    if reset == "none":
        assert theirs == pytest.approx(marked["last_status_at"] + 3600, abs=1e-6)


@pytest.mark.parametrize("form", ["ms", "iso", "numeric-string"])
def test_reset_times_written_in_other_forms_parse_alike(tmp_home, hermes, form):
    """Older files hold reset times in ms or ISO; both programs must read the same instant."""
    now = time.time()
    at = round(now + 4321.25, 3)
    raw = {"ms": int(at * 1000), "iso": _iso(at), "numeric-string": repr(at)}[form]
    write_store(tmp_home, two_rows(last_status="exhausted", last_status_at=now, last_error_code=429,
                                   last_error_reset_at=raw))
    theirs = hermes.exhausted_until(POOL)["aaaaaa"]
    assert theirs == pytest.approx(at, abs=1e-3)
    assert listed(tmp_home)["aaaaaa"]["available_at"] == pytest.approx(theirs, abs=1e-3)


def test_sole_key_differs_exactly_by_the_only_row_rule(tmp_home, hermes):
    """0.19.0 benches a sole key for the full hour; hermes-admin (newer Hermes) for 60 s,
    unless the operator sets hermes_admin.cooldown_ttls.only_row to 3600."""
    write_store(tmp_home, make_store({POOL: [make_row("aaaaaa", label="only", token=KEY_A)]}))
    marked = hermes.mark(POOL, 429, reason="rate_limit_exceeded", api_key_hint=KEY_A)
    assert marked["next"] is None
    theirs = hermes.exhausted_until(POOL)["aaaaaa"]
    ours = listed(tmp_home)["aaaaaa"]["available_at"]
    assert theirs - ours == pytest.approx(ONLY_ROW_GAP, abs=1e-3)

    write_config(tmp_home, "hermes_admin:\n  cooldown_ttls:\n    only_row: 3600\n")
    assert listed(tmp_home)["aaaaaa"]["available_at"] == pytest.approx(theirs, abs=1e-3)


def test_sole_key_billing_keeps_the_full_ttl(tmp_home, hermes):
    write_store(tmp_home, make_store({POOL: [make_row("aaaaaa", label="only", token=KEY_A)]}))
    hermes.mark(POOL, 402, reason="insufficient_credits", api_key_hint=KEY_A)
    theirs = hermes.exhausted_until(POOL)["aaaaaa"]
    assert listed(tmp_home)["aaaaaa"]["available_at"] == pytest.approx(theirs, abs=1e-3)


# --- an operator reset is seen by a freshly loaded Hermes -------------------------------------

@pytest.mark.parametrize("via", ["cli", "transaction"])
def test_reset_lets_a_fresh_hermes_select_the_row(tmp_home, hermes, via):
    write_store(tmp_home, make_store({POOL: [make_row("aaaaaa", label="only", token=KEY_A)]}))
    hermes.mark(POOL, 429, reason="rate_limit_exceeded", api_key_hint=KEY_A)
    assert hermes.select(POOL) is None  # benched: the check below can fail
    if via == "cli":
        run_cli(tmp_home, "reset", POOL, "only")
    else:
        with transaction(tmp_home) as doc:
            actions.reset(doc, POOL, "aaaaaa", time.time())
    row = read_doc(tmp_home)["credential_pool"][POOL][0]
    assert row["last_status"] is None and isinstance(row["status_cleared_at"], float)
    assert hermes.select(POOL) == {"id": "aaaaaa", "label": "only"}


# --- a seeded row removed by the operator stays removed -----------------------------------------

def test_removed_env_row_is_not_reseeded_by_hermes(tmp_home, hermes):
    """Hermes seeds env:VAR rows from <home>/.env; `remove` must suppress the source."""
    env_key = "sk-or-v1-interopFROMDOTENV00000007"
    tmp_home.env.write_text(f"OPENROUTER_API_KEY={env_key}\n", encoding="utf-8")
    write_store(tmp_home, make_store({POOL: [make_row("aaaaaa", label="alpha", token=KEY_A)]}))
    seeded = [e for e in hermes.entries(POOL) if e["source"] == "env:OPENROUTER_API_KEY"]
    assert len(seeded) == 1 and "access_token" not in read_doc(tmp_home)["credential_pool"][POOL][1]
    shown = listed(tmp_home)[seeded[0]["id"]]
    assert shown["has_secret"] is True and env_key not in json.dumps(shown)

    run_cli(tmp_home, "remove", POOL, "OPENROUTER_API_KEY", "--yes")
    assert [e["id"] for e in hermes.entries(POOL)] == ["aaaaaa"]
    assert read_doc(tmp_home)["suppressed_sources"] == {POOL: ["env:OPENROUTER_API_KEY"]}


# --- every file we write loads cleanly in Hermes ----------------------------------------------

def rich_store(now: float) -> dict:
    return make_store({
        POOL: [
            make_row("or0001", label="main", priority=0, token=KEY_A, request_count=12,
                     x_unknown={"kept": [1, 2]}),
            make_row("or0002", label="OPENROUTER_API_KEY", priority=1, source="env:OPENROUTER_API_KEY",
                     secret_fingerprint="sha256:0123456789abcdef"),
            make_row("or0003", label="benched", priority=2, token=KEY_B, last_status="exhausted",
                     last_status_at=now - 10, last_error_code=429, last_error_reason="rate_limit_exceeded",
                     last_error_reset_at=now + 900),
            make_row("or0004", label="gone", priority=3, token=KEY_C, last_status="dead",
                     last_status_at=now - 5, last_error_code=401, last_error_reason="token_revoked"),
        ],
        "custom:together.ai": [
            make_row("cu0001", label="together", token="tg-interop-key-00000000000001",
                     base_url="https://api.together.ai/v1"),
        ],
    }, active_provider=POOL, x_top_level={"note": "kept"},
        suppressed_sources={"anthropic": ["claude_code"]})


def _assert_loads(hermes, home: Home, after: str) -> None:
    report = hermes.load_ok()
    assert not report["corrupt"], f"after {after}: Hermes found the file corrupt: {report}"
    disk = read_doc(home)["credential_pool"]
    for key, rows in disk.items():
        assert report["pools"][key] == {"disk": len(rows), "loaded": len(rows)}, (after, key, report)


@pytest.mark.slow
def test_every_file_we_write_loads_in_hermes(tmp_home, hermes):
    write_store(tmp_home, rich_store(time.time()))
    _assert_loads(hermes, tmp_home, "setup")
    until = _iso(time.time() + 7200).replace("Z", "+00:00")
    verbs = [
        ("add", POOL, "--api-key", "-", "--label", "added"),
        ("cooldown", POOL, "main", "--for", "15m", "--reason", "maintenance"),
        ("cooldown", POOL, "added", "--until", until),
        ("priority", POOL, "added", "0"),
        ("reset", POOL, "benched"),
        ("reset", POOL, "--yes"),
        ("remove", POOL, "OPENROUTER_API_KEY", "--yes"),
        ("remove", "custom:together.ai", "together", "--yes"),
        ("add", "custom:together.ai", "--api-key", "-", "--base-url", "https://api.together.ai/v1"),
        ("strategy", POOL, "round_robin"),
    ]
    for verb in verbs:
        before = tmp_home.auth.read_bytes()
        run_cli(tmp_home, *verb, input="sk-or-v1-interopADDED0000000000000009\n"
                if verb[0] == "add" else None)
        if verb[0] != "strategy":
            assert tmp_home.auth.read_bytes() != before, f"{verb} wrote nothing"
        _assert_loads(hermes, tmp_home, " ".join(verb))
    assert read_doc(tmp_home)["suppressed_sources"][POOL] == ["env:OPENROUTER_API_KEY"]


def test_load_check_catches_a_file_hermes_would_discard(tmp_home, hermes):
    """Negative control for the check above: Hermes silently empties a corrupt store."""
    write_store(tmp_home, two_rows())
    tmp_home.auth.write_text(tmp_home.auth.read_text()[:-40], encoding="utf-8")
    assert hermes.load_ok()["corrupt"] is True


# --- concurrent writers: nothing lost on either side ------------------------------------------

def _count(home: Home, rid: str = "aaaaaa") -> int:
    return next(r for r in read_doc(home)["credential_pool"][POOL] if r["id"] == rid)["request_count"]


@pytest.mark.slow
def test_hermes_bumps_and_our_transactions_lose_nothing(tmp_home, hermes):
    bumps, ours = 200, 100
    write_store(tmp_home, two_rows(request_count=7))
    hermes.start_bump(POOL, bumps, pause=0.004)
    # Start once Hermes is writing, so the two really interleave.
    assert wait_for(lambda: _count(tmp_home) > 7)

    expected: dict | None = None
    lost: list[tuple[int, dict, dict]] = []
    counts_seen: list[int] = []
    stamps_written: list[float] = []
    stamps_seen: list[float | None] = []
    last_until = None
    for i in range(ours):
        now = time.time()
        with transaction(tmp_home) as doc:
            rows = {r["id"]: r for r in doc["credential_pool"][POOL]}
            found = {f: rows["bbbbbb"].get(f) for f in
                     ("last_status", "last_error_reason", "last_error_reset_at")}
            if expected is not None and found != expected:
                lost.append((i, expected, found))
            counts_seen.append(rows["aaaaaa"]["request_count"])
            stamps_seen.append(rows["bbbbbb"].get("status_cleared_at"))
            if i % 2:
                last_until = now + 3600 + i
                actions.cooldown(doc, POOL, "bbbbbb", last_until, now, f"op-{i}")
            else:
                actions.reset(doc, POOL, "bbbbbb", now)
                stamps_written.append(now)
            expected = {f: rows["bbbbbb"].get(f) for f in found}
        # Hermes polls its lock every 50 ms while we poll every 10 ms: back-to-back
        # transactions would starve it. Let it in between ours (bounded wait).
        seen = counts_seen[-1]
        if seen < 7 + bumps:
            wait_for(lambda seen=seen: _count(tmp_home) != seen, timeout=1.0)
    result = hermes.finish(timeout=120)

    final = {r["id"]: r for r in read_doc(tmp_home)["credential_pool"][POOL]}
    assert final["aaaaaa"]["request_count"] == 7 + bumps, "Hermes lost request counts"
    assert result["last"] == 7 + bumps
    assert lost == [], "a hermes-admin change was overwritten"
    assert final["bbbbbb"]["last_error_reason"] == f"op-{ours - 1}"
    assert final["bbbbbb"]["last_error_reset_at"] == last_until
    assert len({c for c in counts_seen if 7 < c < 7 + bumps}) >= ours // 2, "writers did not interleave"
    assert stamps_written == sorted(stamps_written)
    # 0.19.0 does not know status_cleared_at and drops it when it persists the pool; a stamp
    # that survives must be the one we wrote last, never an older or foreign one.
    written = set(stamps_written)
    assert all(s is None or s in written for s in stamps_seen)
    present = [s for s in stamps_seen if s is not None]
    assert present == sorted(present)


@pytest.mark.slow
def test_negative_control_a_stale_read_loses_hermes_counts(tmp_home, hermes):
    """The same harness with the document read before taking the lock must lose counts."""
    bumps = 50
    write_store(tmp_home, two_rows(request_count=7))
    stale = authfile.read_store(tmp_home).doc
    hermes.start_bump(POOL, bumps)
    assert wait_for(lambda: _count(tmp_home) >= 12)
    with locked(tmp_home.lock):
        actions.reset(stale, POOL, "bbbbbb", time.time())
        authfile.atomic_write_bytes(tmp_home.auth, authfile.serialize(stale))
    hermes.finish(timeout=60)
    assert _count(tmp_home) < 7 + bumps


# --- known limit of 0.19.0, asserted so the README claim is backed ----------------------------

def test_known_limit_a_live_0_19_process_writes_a_stale_cooldown_back(tmp_home, hermes):
    write_store(tmp_home, two_rows())
    hermes.mark(POOL, 429, reason="rate_limit_exceeded", api_key_hint=KEY_A)
    held = {e["id"]: e for e in hermes.hold(POOL)}
    assert held["aaaaaa"]["last_status"] == "exhausted"

    run_cli(tmp_home, "reset", POOL, "alpha")
    assert listed(tmp_home)["aaaaaa"]["status"] == "ok"

    hermes.persist_held(POOL)  # any save by the long-running agent, e.g. a rotation
    row = listed(tmp_home)["aaaaaa"]
    assert row["status"] == "cooling", "0.19.0 no longer writes stale cooldowns back: update README"
    assert row["status_cleared_at"] is None  # it does not know the tombstone and drops it


def test_known_limit_0_19_drops_unknown_row_fields_when_it_saves_a_pool(tmp_home, hermes):
    """hermes-admin keeps unknown row fields and the tombstone; 0.19.0 keeps only the
    fields it knows for every row of a pool it saves (other pools and top-level keys survive)."""
    write_store(tmp_home, make_store(
        {POOL: [make_row("aaaaaa", label="alpha", token=KEY_A, x_unknown=1, status_cleared_at=5.0),
                make_row("bbbbbb", label="bravo", priority=1, token=KEY_B, x_unknown=2)],
         "custom:other": [make_row("cccccc", label="other", token=KEY_C, x_unknown=3)]},
        x_top_level={"kept": True}))
    hermes.mark(POOL, 429, reason="rate_limit_exceeded", api_key_hint=KEY_B)
    doc = read_doc(tmp_home)
    saved = {r["id"]: r for r in doc["credential_pool"][POOL]}
    assert "x_unknown" not in saved["aaaaaa"] and "status_cleared_at" not in saved["aaaaaa"]
    assert "x_unknown" not in saved["bbbbbb"]
    assert doc["credential_pool"]["custom:other"][0]["x_unknown"] == 3
    assert doc["x_top_level"] == {"kept": True}

