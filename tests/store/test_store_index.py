"""The console's incremental re-read of auth.json (store/store_index.py) and view reuse.

The reader must give exactly what a whole parse gives (document and errors) after any
edit, while parsing only the values that changed when only values changed.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import authfile, store_index
from store.errors import StoreUnreadable
from store.paths import Home
from store.pools import policy
from store.pools.view import build_pool

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_row = st.fixed_dictionaries(
    {"id": st.text("0123456789abcdef", min_size=6, max_size=6), "label": _text,
     "auth_type": st.sampled_from(["api_key", "oauth"]), "priority": st.integers(0, 9),
     "request_count": st.integers(0, 10**6)},
    optional={"last_status": st.sampled_from(["exhausted", "dead", None]),
              "last_status_at": st.floats(1.7e9, 1.8e9), "extra": st.recursive(
                  st.none() | st.integers() | _text, lambda c: st.lists(c, max_size=3), max_leaves=5)},
)
_pools = st.dictionaries(st.sampled_from(["openrouter", "anthropic", "xai", "custom:ünï"]),
                         st.lists(_row, max_size=5, unique_by=lambda r: r["id"]), min_size=1)


def _doc(pools: dict[str, Any], stamp: str) -> dict[str, Any]:
    return {"version": 1, "updated_at": stamp, "active_provider": None, "providers": {},
            "credential_pool": pools}


def _bytes(doc: Any, indent: int | None) -> bytes:
    return json.dumps(doc, indent=indent, ensure_ascii=False).encode("utf-8")


@st.composite
def edits(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(an edited deep copy of *doc*, whether only values changed)."""
    new = json.loads(json.dumps(doc))
    new["updated_at"] = draw(st.sampled_from(["2026-12-01T00:00:00.000001+00:00", "later"]))
    pools = new["credential_pool"]
    kind = draw(st.sampled_from(["field", "field", "add_row", "drop_row", "add_pool", "top"]))
    filled = [k for k in pools if pools[k]]
    if kind == "field" and filled:
        rows = pools[draw(st.sampled_from(filled))]
        row = rows[draw(st.integers(0, len(rows) - 1))]
        # Values of each field's own type: shape errors are tested below.
        field, value = draw(st.sampled_from(["label", "request_count", "last_status_at"]).flatmap(
            lambda f: st.tuples(st.just(f), {"label": _text, "request_count": st.integers(0, 10**9),
                                             "last_status_at": st.floats(1.7e9, 1.8e9)}[f])))
        row[field] = value
        return new, True
    if kind == "add_row":
        key = draw(st.sampled_from(sorted(pools)))
        pools[key].append({"id": "new999", "label": draw(_text)})
        return new, False
    if kind == "drop_row" and filled:
        pools[draw(st.sampled_from(filled))].pop(0)
        return new, False
    if kind == "add_pool":
        pools["zz-new"] = []
        return new, False
    new["active_provider"] = draw(st.none() | _text)
    return new, True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), pools=_pools, indent=st.sampled_from([2, None]))
def test_a_reread_equals_a_whole_parse(tmp_path, data, pools, indent) -> None:
    home = Home(tmp_path / "h")
    home.root.mkdir(exist_ok=True)
    old = _doc(pools, "2026-11-30T00:00:00.000000+00:00")
    home.auth.write_bytes(_bytes(old, indent))
    reader = store_index.StoreReader(home)
    assert reader.read().doc == old
    new, values_only = data.draw(edits(old))
    raw = _bytes(new, indent)
    home.auth.write_bytes(raw)
    last = reader._last
    assert last is not None
    patched = store_index.patch(last, raw)
    got = reader.read().doc
    assert got == json.loads(raw) == authfile.parse_store(raw, home.auth)
    if values_only:
        # The fast path is the one taken, so this test exercises it (not only the fallback).
        assert patched is not None and patched.doc == got


def test_only_the_changed_row_is_a_new_object(tmp_path) -> None:
    home = Home(tmp_path / "h")
    home.root.mkdir()
    doc = _doc({"p": [{"id": f"{i:06x}", "label": f"k{i}"} for i in range(50)],
                "q": [{"id": "aaaaaa", "label": "q"}]}, "t0")
    home.auth.write_bytes(_bytes(doc, 2))
    reader = store_index.StoreReader(home)
    before = reader.read().doc
    doc["credential_pool"]["p"][7]["label"] = "a much longer label than before ✓"
    doc["updated_at"] = "t1"
    home.auth.write_bytes(_bytes(doc, 2))
    after = reader.read().doc
    assert after == doc
    rows_b, rows_a = before["credential_pool"]["p"], after["credential_pool"]["p"]
    assert [a is b for a, b in zip(rows_a, rows_b, strict=True)] == [i != 7 for i in range(50)]
    assert after["credential_pool"]["q"] is before["credential_pool"]["q"]
    # Spans moved by the longer label: a second edit after it still lands right.
    doc["credential_pool"]["p"][40]["label"] = "z"
    home.auth.write_bytes(_bytes(doc, 2))
    assert reader.read().doc == doc


@pytest.mark.parametrize("bad, reason", [
    (lambda d: d["credential_pool"]["p"][1].__setitem__("id", 5), "credential_pool.p[1].id is integer"),
    (lambda d: d["credential_pool"]["p"][1].__setitem__("id", "000000"), "repeats the id"),
    (lambda d: d["credential_pool"]["p"][1].__setitem__("priority", "high"), "priority is string"),
])
def test_a_bad_changed_row_is_reported_like_a_whole_parse(tmp_path, bad, reason) -> None:
    home = Home(tmp_path / "h")
    home.root.mkdir()
    doc = _doc({"p": [{"id": f"{i:06x}", "label": f"k{i}"} for i in range(3)]}, "t0")
    home.auth.write_bytes(_bytes(doc, 2))
    reader = store_index.StoreReader(home)
    reader.read()
    bad(doc)
    home.auth.write_bytes(_bytes(doc, 2))
    with pytest.raises(StoreUnreadable) as err:
        reader.read()
    assert reason in err.value.reason
    with pytest.raises(StoreUnreadable) as whole:
        authfile.parse_store(home.auth.read_bytes(), home.auth)
    assert whole.value.reason == err.value.reason


@pytest.mark.parametrize("damage", [
    lambda raw: raw[:-7],                                  # truncated mid-write
    lambda raw: raw.replace(b'"k1"', b'"k\xff"'),          # not UTF-8 inside a row
    lambda raw: raw.replace(b'"k1"', b'"k1'),              # a string left open
    lambda raw: raw.replace(b'"k1"', b'"k1"}, {"x": 1'),   # structure smuggled into a value
])
def test_damage_after_a_good_read_is_reported(tmp_path, damage) -> None:
    home = Home(tmp_path / "h")
    home.root.mkdir()
    raw = _bytes(_doc({"p": [{"id": f"{i:06x}", "label": f"k{i}"} for i in range(3)]}, "t0"), 2)
    home.auth.write_bytes(raw)
    reader = store_index.StoreReader(home)
    reader.read()
    home.auth.write_bytes(damage(raw))
    try:
        whole = authfile.parse_store(damage(raw), home.auth)
    except StoreUnreadable as exc:
        with pytest.raises(StoreUnreadable) as err:
            reader.read()
        assert err.value.reason == exc.reason
    else:  # still a good store (a smuggled row): then it must read as exactly that
        assert reader.read().doc == whole


def test_negative_control_a_patch_that_stops_at_the_first_change_is_caught(tmp_path, monkeypatch) -> None:
    """The equality check above catches a reader that misses a second change."""
    home = Home(tmp_path / "h")
    home.root.mkdir()
    doc = _doc({"p": [{"id": f"{i:06x}", "label": f"k{i}"} for i in range(5)]}, "t0")
    home.auth.write_bytes(_bytes(doc, 2))
    reader = store_index.StoreReader(home)
    reader.read()
    real = store_index.first_difference
    calls = {"n": 0}

    def stops_early(old: bytes, new: bytes, at: int, shift: int) -> int | None:
        calls["n"] += 1
        return real(old, new, at, shift) if calls["n"] == 1 else None

    monkeypatch.setattr(store_index, "first_difference", stops_early)
    doc["updated_at"] = "t1"
    doc["credential_pool"]["p"][3]["label"] = "changed"
    home.auth.write_bytes(_bytes(doc, 2))
    assert reader.read().doc != doc


def test_a_reused_pool_view_equals_a_fresh_one() -> None:
    now = time.time()
    rows = [{"id": f"{i:06x}", "label": f"k{i}", "priority": i, "access_token": f"sk-test-{i:030d}",
             "last_status": "exhausted", "last_status_at": now - 10} for i in range(4)]
    first = build_pool("p", rows, strategy="fill_first", now=now)
    # Row 0 dies and row 1 is replaced: rows 2 and 3 are the same objects.
    rows2 = [dict(rows[0], last_status="dead"), dict(rows[1], label="renamed"), rows[2], rows[3]]
    again = build_pool("p", rows2, strategy="fill_first", now=now + 1, previous=first)
    fresh = build_pool("p", rows2, strategy="fill_first", now=now + 1)
    assert [cv.to_json() for cv in again.credentials] == [cv.to_json() for cv in fresh.credentials] or \
        _same_but_seconds(again, fresh)
    # Two rows dead of four: the live count changed, so nothing was reused (a row's TTL
    # can depend on whether it is the only live row).
    assert not any(a is b for a, b in zip(again.credentials, first.credentials, strict=True))
    rows3 = [rows2[0], dict(rows2[1], label="again"), rows2[2], rows2[3]]
    third = build_pool("p", rows3, strategy="fill_first", now=now + 2, previous=again)
    assert [a is b for a, b in zip(third.credentials, again.credentials, strict=True)] == [True, False, True, True]
    assert third.credentials[1].effective == policy.effective(rows3[1], rows3, now + 2)


def _same_but_seconds(a, b) -> bool:
    strip = lambda pv: [{k: v for k, v in cv.to_json().items() if k != "seconds_left"}  # noqa: E731
                        for cv in pv.credentials]
    return strip(a) == strip(b)


ROW_EDITS = st.sampled_from(["label", "priority", "cool", "ok", "dead", "requests", "token", "drop"])


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 10), edits=st.lists(st.tuples(st.integers(0, 9), ROW_EDITS), max_size=4),
       strategy=st.sampled_from(["fill_first", "round_robin", "least_used", "random", "odd"]))
def test_a_view_patched_in_place_equals_a_whole_build(n, edits, strategy) -> None:
    """build_pool(previous=...) swaps written rows into the last view when they stay in
    place; whatever path it takes, the view is the one a whole build gives."""
    now = time.time()
    rows = [{"id": f"{i:06x}", "label": f"k{i}", "priority": i, "access_token": f"sk-test-{i:030d}",
             "request_count": (i * 7) % 5,
             **({"last_status": "exhausted", "last_status_at": now - 10} if i % 3 == 0 else {})}
            for i in range(n)]
    first = build_pool("p", rows, strategy=strategy, now=now)
    new = list(rows)
    for i, what in edits:
        if i >= len(new):
            continue
        if what == "drop":
            del new[i]
            continue
        row = dict(new[i])
        if what == "label":
            row["label"] = f"renamed{i}"
        elif what == "priority":
            row["priority"] = -i - 1
        elif what == "cool":
            row.update(last_status="exhausted", last_status_at=now - 1, last_error_code=429)
        elif what == "ok":
            row.update(last_status=None, last_status_at=None)
        elif what == "dead":
            row["last_status"] = "dead"
        elif what == "requests":
            row["request_count"] = 99 - i
        else:
            row["access_token"] = f"sk-test-{i:029d}x"
        new[i] = row
    again = build_pool("p", new, strategy=strategy, now=now, previous=first)
    fresh = build_pool("p", new, strategy=strategy, now=now)
    assert [cv.to_json() for cv in again.credentials] == [cv.to_json() for cv in fresh.credentials]


def test_patching_a_view_judges_only_the_written_row(monkeypatch) -> None:
    from store.pools import view
    now = time.time()
    rows = [{"id": f"{i:06x}", "label": f"k{i}", "priority": i, "access_token": f"sk-test-{i:030d}"}
            for i in range(300)]
    first = build_pool("p", rows, strategy="fill_first", now=now)
    judged: list[str] = []
    sorts: list[int] = []
    real, real_sort = policy.effective, view.sorted_rows
    monkeypatch.setattr(policy, "effective", lambda row, *a, **k: (judged.append(row["id"]), real(row, *a, **k))[1])
    monkeypatch.setattr(view, "sorted_rows", lambda rows: (sorts.append(1), real_sort(rows))[1])
    new = list(rows)
    new[200] = dict(rows[200], label="renamed")
    again = build_pool("p", new, strategy="fill_first", now=now, previous=first)
    # One row judged, nothing sorted, 299 views kept.
    assert judged == [f"{200:06x}"] and sorts == []
    assert sum(a is b for a, b in zip(again.credentials, first.credentials, strict=True)) == 299
    # Control: a write that moves the row (a new priority) sorts the pool again.
    new[200] = dict(rows[200], priority=-1)
    build_pool("p", new, strategy="fill_first", now=now, previous=first)
    assert sorts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), pools=_pools, indent=st.sampled_from([2, None]), steps=st.integers(2, 12))
def test_successive_rereads_equal_whole_parses(tmp_path, data, pools, indent, steps, monkeypatch) -> None:
    """Writes that change values' lengths one after another: the moves the index notes pile
    up (and are folded into its lists past a few, forced small here), and every read still
    equals a whole parse."""
    monkeypatch.setattr(store_index, "MOVES_KEPT", 3)
    home = Home(tmp_path / "h")
    home.root.mkdir(exist_ok=True)
    doc = _doc(pools, "2026-11-30T00:00:00.000000+00:00")
    home.auth.write_bytes(_bytes(doc, indent))
    reader = store_index.StoreReader(home)
    assert reader.read().doc == doc
    for _ in range(steps):
        doc, values_only = data.draw(edits(doc))
        raw = _bytes(doc, indent)
        home.auth.write_bytes(raw)
        if values_only and reader._last is not None:
            # The index kept up: the fast path is taken (a whole parse would hide a wrong span).
            patched = store_index.patch(reader._last, raw)
            assert patched is not None and patched.doc == json.loads(raw)
        try:
            want = authfile.parse_store(raw, home.auth)
        except StoreUnreadable as exc:   # e.g. a second row added with the same id
            with pytest.raises(StoreUnreadable) as got:
                reader.read()
            assert got.value.reason == exc.reason
            continue
        assert reader.read().doc == want == json.loads(raw)


def test_a_growing_value_notes_a_move_instead_of_rewriting_every_offset(tmp_path) -> None:
    home = Home(tmp_path / "h")
    home.root.mkdir()
    doc = _doc({"p": [{"id": f"{i:06x}", "label": "k", "request_count": 9} for i in range(300)]}, "t0")
    home.auth.write_bytes(_bytes(doc, 2))
    reader = store_index.StoreReader(home)
    reader.read()
    base = reader._last.starts
    doc["credential_pool"]["p"][10]["request_count"] = 10        # one byte longer
    home.auth.write_bytes(_bytes(doc, 2))
    assert reader.read().doc == doc
    last = reader._last
    k = last.places.index(("p", 10))
    assert last.starts is base and last.moves == ((k, 1),)
    assert last.start(k + 1) == base[k + 1] + 1 and last.start(k) == base[k]
    assert last.end(k) == last.ends[k] + 1
    # The next write, past the moved value, is still found where it is.
    doc["credential_pool"]["p"][200]["label"] = "renamed"
    home.auth.write_bytes(_bytes(doc, 2))
    assert reader.read().doc == doc
