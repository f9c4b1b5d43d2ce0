"""store.proxy.routing.steering to the value: which rows a store read lifts (one row skipped for each
reason before one that is lifted, the TTLs the chain passes, a sole-row cap that is the
clock's doing), and the Steering object's own answers (pin_index, saw_lifted, take,
back_to_primary). tests/proxy/test_operator_reset.py holds the rule's story through a proxy."""

from __future__ import annotations

from types import SimpleNamespace

from store.pools import policy
from store.proxy.routing.steering import OPERATOR_RESTORE, Steering, lifted_rows
from tests.conftest import make_row

NOW = 1_900_000_000.0
TTLS = policy.DEFAULT_TTLS


def _benched(rid: str, **kw) -> dict:
    fields = dict(last_status="exhausted", last_status_at=NOW - 10, last_error_code=429,
                  last_error_reset_at=NOW + 600)
    fields.update(kw)
    return make_row(rid, token=f"sk-or-v1-{rid}-" + "0" * 30, **fields)


def _reset(row: dict, at: float = NOW - 1) -> dict:
    out = dict(row)
    policy.reset(out, at)
    return out


def test_no_view_or_no_store_lifts_nothing() -> None:
    rows = [_benched("a1")]
    assert lifted_rows(None, [_reset(rows[0])], NOW, TTLS, None) == []
    assert lifted_rows(rows, None, NOW, TTLS, None) == []
    assert lifted_rows([], [_reset(rows[0])], NOW, TTLS, None) == []


def test_each_skipped_row_before_a_lifted_one_leaves_it_lifted() -> None:
    gate_at = NOW - 5
    skipped = {
        "not a row": (["not-a-row"], ["not-a-row"]),
        "new in the store": ([], [_benched("n0")]),
        "bench fields unchanged": ([_benched("u0")], [dict(_benched("u0"), request_count=3)]),
        "the proxy's own probe": ([_benched("p0")], [_reset(_benched("p0"), gate_at)]),
        "ran out in the view": ([_benched("o0", last_error_reset_at=NOW - 30)],
                                [_benched("o0", last_error_reset_at=None, last_status="ok")]),
    }
    for why, (view, store) in skipped.items():
        before = view + [_benched("a1")]
        after = store + [_reset(_benched("a1"))]
        assert lifted_rows(before, after, NOW, TTLS, own_stamp=gate_at) == ["a1"], why


def test_the_chains_ttls_decide_whether_a_ttl_bench_ran_out() -> None:
    short = policy.Ttls(rate_limit_429=50.0, default=50.0)
    row = _benched("a1", last_status_at=NOW - 100, last_error_reset_at=None)
    other = make_row("b2", token="sk-or-v1-b2-" + "0" * 30)
    before = [row, other]
    assert lifted_rows(before, [_reset(row), other], NOW, TTLS, None) == ["a1"]      # an hour: still benched
    assert lifted_rows(before, [_reset(row), other], NOW, short, None) == []         # 50 s: ran out already
    fresh = dict(row, last_status_at=NOW - 10)              # benched 10 s ago: cooling under both
    rewritten = dict(row, last_status_at=NOW - 60)          # the bench rewritten (an undo) to end by itself
    assert lifted_rows([fresh, other], [rewritten, other], NOW, short, None) == ["a1"]
    assert lifted_rows([fresh, other], [rewritten, other], NOW, TTLS, None) == []    # still cooling in the store


def test_a_sole_row_cap_is_the_clocks_doing_not_a_write() -> None:
    """The other key left the pool, so the benched one is its only live row and its 60 s cap
    applies: usable in the store, cooling in the view, but no bench field was written."""
    row = _benched("a1", last_status_at=NOW - 100, last_error_reset_at=None)
    other = make_row("b2", token="sk-or-v1-b2-" + "0" * 30)
    assert not policy.effective(row, [row, other], NOW, TTLS).usable
    assert policy.effective(row, [row], NOW, TTLS).usable
    assert lifted_rows([row, other], [row], NOW, TTLS, None) == []


def test_saw_lifted_says_which_rows_and_take_says_it_once() -> None:
    s = Steering()
    assert s.take() is None
    s.saw_lifted("openrouter", [])
    assert s.take() is None
    s.saw_lifted("openrouter", ["a1", "b2", "c3", "d4"])
    assert s.take() == "operator reset of openrouter a1, b2, c3, d4"
    assert s.take() is None
    s.saw_lifted("openrouter", ["a1", "b2", "c3", "d4", "e5"])
    assert s.take() == "operator reset of openrouter a1, b2, c3, d4 …"


def _runtime(active: int) -> SimpleNamespace:
    return SimpleNamespace(active=active, primary="openrouter", notices=[])


def test_back_to_primary_only_for_a_lift_off_the_primary_and_unpinned() -> None:
    s = Steering()
    rt = _runtime(1)
    assert s.back_to_primary(rt, NOW) is False and rt.active == 1 and rt.notices == []
    s.saw_lifted("openrouter", ["a1"])
    assert s.back_to_primary(_runtime(0), NOW) is False                 # on the primary already
    assert s.take() is None                                             # and the lift was used up
    s.saw_lifted("openrouter", ["a1"])
    s.pin = "fallback"
    pinned = _runtime(1)
    assert s.back_to_primary(pinned, NOW) is False and pinned.active == 1 and pinned.notices == []
    s.pin = None
    s.saw_lifted("openrouter", ["a1"])
    rt = _runtime(2)
    assert s.back_to_primary(rt, NOW) is True
    assert rt.active == 0
    (notice,) = rt.notices
    assert (notice.at, notice.kind) == (NOW, OPERATOR_RESTORE)
    assert notice.text == "operator reset of openrouter a1: back on primary openrouter"


def test_pin_index_finds_the_pinned_route_and_follows_a_new_chain() -> None:
    s = Steering()
    routes = [SimpleNamespace(name="openrouter"), SimpleNamespace(name="anthropic")]
    shown = str.upper
    assert s.pin_index(routes, shown) is None
    s.pin = "ANTHROPIC"
    assert s.pin_index(routes, shown) == 1
    assert s.pin_index(routes, shown) == 1                              # the same chain, remembered
    moved = [SimpleNamespace(name="anthropic"), SimpleNamespace(name="openrouter")]
    assert s.pin_index(moved, shown) == 0                               # a new chain is looked at again
    assert s.pin_index([SimpleNamespace(name="nous")], shown) is None   # the pinned route left
