"""RELIABILITY 16: shapes we do not understand are never written over.

A credential_pool that is a list, string or null, a row that is not an object, a field
of the wrong type, or two rows with one id: every write verb exits 3 naming the path and
the JSON field, the bytes stay; read verbs show the error, never an empty store.
The negative control switches the shape check off and sees the store written over.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import authfile, shape
from store.errors import StoreUnreadable
from store.ops import actions
from store.paths import Home
from store.pools import policy
from store.transaction import apply
from tests.conftest import make_row, run_cli

KEY = "sk-or-v1-shapeCANARY000000000000000000000001"


def _good() -> dict[str, Any]:
    return {"version": 1, "providers": {}, "credential_pool": {
        "openrouter": [make_row("aaaaaa", token=KEY), make_row("bbbbbb", priority=1, label="two")]}}


def _set(path: str, value: Any) -> dict[str, Any]:
    doc = _good()
    node: Any = doc
    parts = path.split("/")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return doc


# (document, JSON path the error must name)
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "pool-is-list": ({"version": 1, "providers": {}, "credential_pool": []}, "credential_pool"),
    "pool-is-string": ({"version": 1, "providers": {}, "credential_pool": "x"}, "credential_pool"),
    "pool-is-null": ({"version": 1, "providers": {}, "credential_pool": None}, "credential_pool"),
    "rows-are-object": (_set("credential_pool/openrouter", {"a": 1}), "credential_pool.openrouter"),
    "row-is-string": (_set("credential_pool/openrouter/1", "oops"), "credential_pool.openrouter[1]"),
    "row-is-null": (_set("credential_pool/openrouter/0", None), "credential_pool.openrouter[0]"),
    "id-is-int": (_set("credential_pool/openrouter/1/id", 7), "credential_pool.openrouter[1].id"),
    "priority-is-string": (_set("credential_pool/openrouter/0/priority", "1"),
                           "credential_pool.openrouter[0].priority"),
    "count-is-bool": (_set("credential_pool/openrouter/0/request_count", True),
                      "credential_pool.openrouter[0].request_count"),
    "token-is-list": (_set("credential_pool/openrouter/0/access_token", ["x"]),
                      "credential_pool.openrouter[0].access_token"),
    "cooldowns-is-list": (_set("credential_pool/openrouter/0/model_cooldowns", [1]),
                          "credential_pool.openrouter[0].model_cooldowns"),
    "duplicate-id": (_set("credential_pool/openrouter/1/id", "aaaaaa"), "credential_pool.openrouter[1].id"),
    "suppressed-not-list": ({**_good(), "suppressed_sources": {"openrouter": "env:X"}},
                            "suppressed_sources.openrouter"),
    "providers-is-list": ({**_good(), "providers": []}, "providers"),
}

WRITE_VERBS = [
    ("add", "openrouter", "--api-key", "-", "--label", "new"),
    ("remove", "openrouter", "two"),
    ("reset", "openrouter", "two"),
    ("reset", "openrouter", "--yes"),
    ("cooldown", "openrouter", "two", "--for", "1h"),
    ("priority", "openrouter", "two", "0"),
]


def _write(home: Home, doc: Any) -> bytes:
    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    raw = json.dumps(doc, indent=2).encode()
    home.auth.write_bytes(raw)
    home.auth.chmod(0o600)
    return raw


@pytest.mark.parametrize("name", sorted(BAD))
def test_every_write_refuses_a_shape_it_does_not_understand(tmp_home: Home, name: str) -> None:
    doc, field = BAD[name]
    raw = _write(tmp_home, doc)
    # The store API (every writer goes through it) ...
    with pytest.raises(StoreUnreadable) as err:
        apply(tmp_home, lambda d: actions.reset(d, "openrouter", "two", 1.0), lock_timeout=2)
    assert str(tmp_home.auth) in str(err.value) and field in str(err.value)
    assert tmp_home.auth.read_bytes() == raw
    # ... and the read path shows the error (never an empty store).
    with pytest.raises(StoreUnreadable):
        authfile.read_store(tmp_home)


@pytest.mark.parametrize("verb", WRITE_VERBS, ids=lambda v: " ".join(v[:2]))
@pytest.mark.parametrize("name", ["pool-is-list", "row-is-string", "duplicate-id", "id-is-int"])
def test_cli_write_verbs_exit_3_naming_the_field(tmp_home: Home, name: str, verb: tuple[str, ...]) -> None:
    doc, field = BAD[name]
    raw = _write(tmp_home, doc)
    proc = run_cli(tmp_home, *verb, input=KEY.replace("shape", "added") + "\n", ok=False)
    assert proc.returncode == 3, proc.stderr
    assert field in proc.stderr and str(tmp_home.auth) in proc.stderr
    assert tmp_home.auth.read_bytes() == raw
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["pool-is-null", "duplicate-id"])
def test_cli_list_shows_the_error_not_an_empty_store(tmp_home: Home, name: str) -> None:
    doc, field = BAD[name]
    _write(tmp_home, doc)
    for args in (("list",), ("list", "--json")):
        proc = run_cli(tmp_home, *args, ok=False)
        assert proc.returncode == 3 and field in proc.stderr, proc.stderr
        assert "no credentials" not in proc.stdout.lower()


def test_negative_control_without_the_shape_check_a_write_replaces_the_pool(
        tmp_home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the check off, the old behaviour returns: a list-shaped pool is treated as
    empty, and add writes a fresh object over it."""
    doc, _ = BAD["pool-is-list"]
    doc["credential_pool"] = [{"id": "kept", "access_token": KEY}]
    raw = _write(tmp_home, doc)
    monkeypatch.setattr(shape, "check", lambda *a, **k: None)
    monkeypatch.setattr(authfile, "parse_store", _lenient_parse)
    apply(tmp_home, lambda d: actions.add_key(d, "openrouter", KEY[:-1] + "2", now=1.0), lock_timeout=2)
    assert tmp_home.auth.read_bytes() != raw
    assert "kept" not in tmp_home.auth.read_text()


def _lenient_parse(raw: bytes, path: Any, backup: Any = None) -> Any:
    return json.loads(raw)


def test_unknown_fields_are_not_checked_and_survive(tmp_home: Home) -> None:
    doc = _good()
    doc["credential_pool"]["openrouter"][0]["x_future"] = {"nested": [1, None, "z"]}
    doc["credential_pool"]["openrouter"][0]["last_error_reset_at"] = True  # Hermes tolerates it
    doc["x_top"] = [1, 2]
    _write(tmp_home, doc)
    apply(tmp_home, lambda d: actions.reset(d, "openrouter", "two", 1.0), lock_timeout=2)
    after = json.loads(tmp_home.auth.read_text())
    assert after["credential_pool"]["openrouter"][0]["x_future"] == {"nested": [1, None, "z"]}
    assert after["x_top"] == [1, 2]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                     max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pool=_json, field=st.sampled_from(sorted(shape.ROW_FIELDS)), value=_json)
def test_random_shapes_either_pass_the_check_or_name_a_field(pool: Any, field: str, value: Any) -> None:
    """Random pool values and random field values: the check never crashes, and whatever it
    accepts can be handled by the policy code without a TypeError."""
    for doc in ({"credential_pool": {"p": pool}},
                {"credential_pool": {"p": [{"id": "a", field: value}]}}):
        found = shape.problem(doc)
        if found is None:
            rows = [r for r in doc["credential_pool"]["p"]]
            for r in rows:
                policy.effective(r, rows, 1.8e9)
        else:
            assert found[0].startswith("credential_pool")
