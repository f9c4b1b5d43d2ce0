"""store.pools.events: the timeline is the diff of successive snapshots' stored fields."""

from __future__ import annotations

import copy

from store.pools import events as ev
from store.pools import policy
from store.pools.view import build_pools
from tests.conftest import make_row, make_store

NOW = 1_767_225_600.0


def doc0() -> dict:
    return make_store({"openrouter": [
        make_row("aaaaaa", label="first", priority=0, token="sk-or-v1-0123456789abcdefAAA1"),
        make_row("bbbbbb", label="backup", priority=1, token="sk-or-v1-0123456789abcdefBBB2"),
    ]})


def diff(a: dict | None, b: dict, at: float = NOW) -> list[ev.Event]:
    old = build_pools(a, now=at) if a is not None else None
    return ev.diff(old, build_pools(b, now=at), at)


def rows(doc: dict) -> list[dict]:
    return doc["credential_pool"]["openrouter"]


def test_first_snapshot_has_no_events_and_identical_ones_none() -> None:
    assert diff(None, doc0()) == []
    assert diff(doc0(), doc0()) == []


def test_bench_by_an_agent_reads_like_the_spec_example() -> None:
    before = doc0()
    after = copy.deepcopy(before)
    policy.mark_exhausted(rows(after), rows(after)[1], NOW, code=429, reason="rate_limit_exceeded")
    (e,) = diff(before, after)
    assert (e.kind, e.pool, e.id, e.index, e.code, e.reason) == \
        ("exhausted", "openrouter", "bbbbbb", 2, 429, "rate_limit_exceeded")
    assert (e.old_status, e.new_status) == (None, "exhausted")
    assert e.text == "openrouter #2 backup exhausted 429 rate_limit_exceeded"
    # Benched again later (same status, new time): still an event.
    again = copy.deepcopy(after)
    rows(again)[1]["last_status_at"] = NOW + 60
    assert [x.kind for x in diff(after, again)] == ["exhausted"]


def test_terminal_401_is_dead() -> None:
    before = doc0()
    after = copy.deepcopy(before)
    policy.mark_exhausted(rows(after), rows(after)[0], NOW, code=401, reason="invalid_grant")
    (e,) = diff(before, after)
    assert e.kind == "dead" and e.text.endswith("dead 401 invalid_grant")


def test_operator_reset_is_cleared_and_agent_recovery_is_recovered() -> None:
    benched = doc0()
    policy.mark_exhausted(rows(benched), rows(benched)[0], NOW, code=429)
    reset = copy.deepcopy(benched)
    policy.reset(rows(reset)[0], NOW + 5)
    (e,) = diff(benched, reset)
    assert e.kind == "cleared" and "cooldown cleared by operator" in e.text
    recovered = copy.deepcopy(benched)
    policy.clear_elapsed(rows(recovered), NOW + 7200)
    (r,) = diff(benched, recovered)
    assert r.kind == "recovered" and (r.old_status, r.new_status) == ("exhausted", "ok")


def test_added_and_removed() -> None:
    before = doc0()
    after = copy.deepcopy(before)
    removed = rows(after).pop(0)
    rows(after).append(make_row("cccccc", label="new", priority=2))
    kinds = {(e.kind, e.id) for e in diff(before, after)}
    assert kinds == {("added", "cccccc"), ("removed", removed["id"])}


def test_round_robin_renumbering_and_counting_are_not_events() -> None:
    before = doc0()
    after = copy.deepcopy(before)
    policy.select(rows(after), "round_robin", NOW)
    assert [r["id"] for r in policy.sorted_rows(rows(after))] != \
        [r["id"] for r in policy.sorted_rows(rows(before))]
    assert diff(before, after) == []


def test_elapsed_reports_only_the_window() -> None:
    avail = {("openrouter", "a"): NOW + 10, ("openrouter", "b"): NOW + 30}
    labels = {("openrouter", "a"): "first"}
    assert ev.elapsed(avail, labels, NOW, NOW + 5) == []
    (e,) = ev.elapsed(avail, labels, NOW, NOW + 10)
    assert (e.kind, e.id, e.time) == ("ready", "a", NOW + 10)
    assert e.text == "openrouter first cooldown elapsed, ready"
    assert [x.id for x in ev.elapsed(avail, labels, NOW, NOW + 60)] == ["a", "b"]


def test_notice_text() -> None:
    n = ev.notice("auth.json", "unreadable: file is empty", NOW)
    assert n.text == "auth.json: unreadable: file is empty"
