"""The fleet's checked edges, without Redis: what is read (store.fleet.inbound) and what is
sent (store.fleet.outbound), by property over hostile values.

- Any hash Redis could hold becomes a state whose every time is finite and inside its
  bound, or None; a state that lost a field it needs is not usable; applying a usable
  one leaves auth.json strict JSON. Negative control: the loose parser the fleet had
  (``float()`` of whatever came) lets NaN and 1e300 through and NaN into auth.json.
- A pub/sub message names a fingerprint or nothing, whatever it holds.
- Any secret of the home, anywhere in a published text, leaves only as its fleet
  fingerprint. Negative control: redacting only the row's own secret leaks the others.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import outside
from store.authfile import serialize
from store.fleet import inbound
from store.fleet.keys import fleet_fingerprint, short
from store.fleet.local import apply_states
from store.fleet.model import FleetState
from store.fleet.outbound import Outbound
from store.redaction.fingerprints import redact
from tests.conftest import make_row, make_store

EXAMPLES = int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300"))
NOW = 1_800_000_000.0
SECRET = b"inbound-test-secret-0123456789"
KEY = "sk-or-v1-inboundKEY000000000000000000001"
FP = fleet_fingerprint(SECRET, "token:" + KEY)
FIELDS = ("status", "until", "since", "host", "code", "reason", "message", "cleared_at", "cleared_by",
          "version", "updated_at")

NUMBERS = st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e300", "-1e300", "1e18", "1e999", "0",
                           "-1", "abc", "", " ", "0x10", "1_000", "9" * 400, "1800000600", "1800000000.5",
                           "1800000000000", "2026-01-01T00:00:00Z", "2099-01-01", "True", "None", "\x00",
                           "1e-300", "429", "99", "1000", "42.5", "-0"])
TEXTS = st.one_of(st.text(max_size=40), st.text(min_size=190, max_size=400),
                  st.sampled_from(["ok", "exhausted", "dead", "host-b", "bad host", "h" * 64, "\x1b]0;x\x07"]))
VALUES = st.one_of(NUMBERS, TEXTS, st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.integers(min_value=-10**30, max_value=10**30).map(str))
HASHES = st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=len(FIELDS))


def refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not strict JSON")


def strict(data: bytes) -> Any:
    return json.loads(data, parse_constant=refuse_constant)


def in_bounds(fs: FleetState, now: float) -> list[str]:
    """What is wrong with *fs* by the checked edge's promise ([] when nothing)."""
    bad = []
    for name, ahead in (("until", outside.MAX_AHEAD), ("since", inbound.NOW_SLACK),
                        ("cleared_at", inbound.NOW_SLACK)):
        v = getattr(fs, name)
        if v is not None and not (math.isfinite(v) and outside.EARLIEST <= v <= now + ahead):
            bad.append(f"{name}={v!r}")
    if fs.code is not None and not 100 <= fs.code <= 999:
        bad.append(f"code={fs.code!r}")
    if not (isinstance(fs.version, int) and 0 <= fs.version <= outside.MAX_COUNT):
        bad.append(f"version={fs.version!r}")
    for name in ("reason", "message"):
        v = getattr(fs, name)
        if v is not None and len(v) > inbound.TEXT_LIMIT:
            bad.append(f"{name} of {len(v)}")
    if fs.usable and fs.status == "exhausted" and (fs.until is None or fs.since is None):
        bad.append("usable without until/since")
    return bad


def loose_state(fp: str, h: dict[str, str]) -> FleetState:
    """The parser the fleet had: whatever float() and int() make of it."""
    def f(v: Any) -> float | None:
        try:
            return float(v) if v not in (None, "") else None
        except ValueError:
            return None

    def i(v: Any) -> int | None:
        try:
            return int(v) if v not in (None, "") else None
        except ValueError:
            return None

    return FleetState(fp, status=h.get("status") or "ok", until=f(h.get("until")), since=f(h.get("since")),
                      host=h.get("host") or None, code=i(h.get("code")), reason=h.get("reason") or None,
                      message=h.get("message") or None, cleared_at=f(h.get("cleared_at")),
                      version=i(h.get("version")) or 0)


def applied_bytes(fs: FleetState) -> bytes:
    doc = make_store({"openrouter": [make_row("aaaaaa", token=KEY)]})
    apply_states(doc, SECRET, {}, {FP: fs}, 0.0, NOW)
    return serialize(doc)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(h=HASHES, cap=st.one_of(st.none(), st.integers(min_value=0, max_value=10**6)))
def test_any_state_hash_is_checked_and_never_makes_auth_json_lax(h: dict[str, str], cap: int | None) -> None:
    said: list[str] = []
    fs = inbound.state(FP, h, now=NOW, version_cap=cap, notice=said.append)
    assert in_bounds(fs, NOW) == []
    assert len(said) == len(fs.problems)             # every problem is said, once
    if fs.usable:
        strict(applied_bytes(fs))                   # whatever lands is strict JSON


@pytest.mark.parametrize("h", [
    {"status": "exhausted", "until": str(NOW + 600), "since": "nan"},
    {"status": "exhausted", "until": "1e300", "since": "1800000000"},
    {"status": "exhausted", "until": "inf", "since": "1800000000"},
])
def test_negative_control_the_loose_parser_lets_nan_and_giants_into_auth_json(h: dict[str, str]) -> None:
    loose = loose_state(FP, h)
    assert in_bounds(loose, NOW) != []               # the property catches it
    checked = inbound.state(FP, h, now=NOW)
    assert not checked.usable
    if h["since"] == "nan":
        with pytest.raises(ValueError, match="not strict JSON"):
            strict(applied_bytes(loose))             # NaN written where Hermes cannot read it
    else:
        assert json.loads(applied_bytes(loose))["credential_pool"]["openrouter"][0]["last_error_reset_at"] > 1e299


def test_a_state_needs_its_fields_and_a_version_the_fleet_reached() -> None:
    good = {"status": "exhausted", "until": str(NOW + 600), "since": str(NOW - 1), "version": "7"}
    assert inbound.state(FP, good, now=NOW, version_cap=9).usable
    assert not inbound.state(FP, good, now=NOW, version_cap=3).usable      # a forged, blocking version
    assert not inbound.state(FP, {**good, "since": ""}, now=NOW).usable
    assert not inbound.state(FP, {**good, "status": "exhaustedx"}, now=NOW).usable
    code = inbound.state(FP, {**good, "code": "abc", "host": "bad host"}, now=NOW)
    assert code.usable and code.code is None and code.host is None and len(code.problems) == 2
    assert not inbound.state(FP, ValueError("WRONGTYPE x"), now=NOW).usable
    dead = inbound.state(FP, {"status": "dead", "until": "nan", "since": str(NOW)}, now=NOW)
    assert dead.usable and dead.until is None                              # dead has no until to check


HOST_FIELDS = ("heartbeat_at", "interval", "started_at", "keys", "seen_version", "offset", "disconnected_since")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(h=st.dictionaries(st.sampled_from(HOST_FIELDS), VALUES), name=TEXTS,
       held=st.dictionaries(TEXTS, VALUES, max_size=4))
def test_any_heartbeat_and_holders_hash_is_checked(h: dict[str, str], name: str, held: dict[str, str]) -> None:
    info = inbound.host(name, h, now=NOW)
    for v in (info.heartbeat_at, info.started_at, info.disconnected_since, info.offset, info.interval):
        assert v is None or math.isfinite(v)
    assert 0.05 <= info.interval <= inbound.MAX_INTERVAL
    assert 0 <= info.keys <= outside.MAX_COUNT and 0 <= info.seen_version <= outside.MAX_COUNT
    info.to_json(NOW, 10)                                                 # what fleet status prints
    counts, _problems = inbound.holders(FP, held)
    assert all(0 <= n <= outside.MAX_COUNT for n in counts.values())


def test_negative_control_the_loose_heartbeat_parse_raises() -> None:
    with pytest.raises(ValueError):
        int({"keys": "abc"}.get("keys") or 0)       # what `fleet status` died of
    assert inbound.host("host-b", {"keys": "abc"}, now=NOW).problems


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.one_of(st.text(max_size=200), st.binary(max_size=100), st.integers(), st.none(),
                      st.dictionaries(st.text(max_size=5), st.text(max_size=80)).map(json.dumps),
                      st.sampled_from(["[" * 100_000, '{"fp": "' + "a" * 64 + '"}', '{"fp": 1}', "x" * 70_000,
                                       '{"fp": "' + "A" * 64 + '"}', '"fp"', "null"])))
def test_a_message_names_a_fingerprint_or_nothing(data: Any) -> None:
    fp = inbound.hint(data)
    assert fp is None or inbound.is_fp(fp)


# --- what is sent ---------------------------------------------------------------------------------

OTHERS = ["sk-or-v1-otherROWkey0000000000000000000002", "plainCONFIGsecret0123456789",
          "envVALUEsecret0123456789abc", "eyJhbGciOiJIUzI1NiJ9.payload.sig"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.one_of(st.text(max_size=12), st.sampled_from([KEY, *OTHERS])), max_size=12))
def test_no_secret_of_the_home_leaves_except_as_its_fleet_fingerprint(parts: list[str]) -> None:
    text = "".join(parts)
    out = Outbound([KEY, *OTHERS], SECRET).text(text, limit=10_000)
    for secret in (KEY, *OTHERS):
        assert secret not in out
    for secret in (KEY, *OTHERS):
        if secret in text and all(secret not in other for other in (KEY, *OTHERS) if other != secret):
            assert short(fleet_fingerprint(SECRET, "token:" + secret)) in out or len(out) >= 10_000


def test_the_cut_comes_after_the_redaction() -> None:
    text = "x" * 190 + OTHERS[1]
    assert OTHERS[1][:10] not in Outbound([OTHERS[1]], SECRET).text(text)
    assert OTHERS[1][:10] in text[:200]                                    # cut first, half a secret left


def test_negative_control_the_rows_own_secret_only_leaks_the_others() -> None:
    text = f"limit for {KEY}; also saw {OTHERS[1]}"
    assert OTHERS[1] in redact(text, [KEY])                               # what the fleet did
    assert OTHERS[1] not in Outbound([KEY, *OTHERS], SECRET).text(text)
    assert Outbound([KEY], None).text(text).startswith("limit for fl:…")  # no fleet secret: nothing kept
