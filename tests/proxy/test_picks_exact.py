"""The proxy's kept list of usable rows and its picks, value by value (``store.proxy.routing.picks``).

``test_proxy_select.py`` keeps the fast path equal to ``policy.select`` for a request naming
no model; these tests pin what that comparison never reaches: a request for a model (rows
benched for another model serve it, a row benched for it does not), the eligibility filters
(*keep*) and the headroom gate's holds (*hold*), which path a pick takes (the kept list
itself, rotated in place, or a copy the caller must drop), and what each returns, exactly.
Every assertion names the row or the flag a plausible slip would change (``and``/``or``,
``<``/``<=``, a dropped argument). Negative control: the last test makes such a slip
(``tests/mutant.py``) and sees the model test fail.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from store.pools import generations, policy
from store.proxy.routing import picks
from store.proxy.routing.picks import Usable, candidates, choose, pick, usable_rows
from store.redaction.secret_ids import hash_secret
from tests.conftest import make_row
from tests.mutant import mutant

T0 = 1_700_000_000.0


def _key(rid: str) -> str:
    return f"sk-or-v1-picks-{rid}" + "0" * 24


def _row(rid: str, priority: int, **fields: object) -> dict:
    return make_row(rid, priority=priority, token=_key(rid), **fields)


def _usable(strategy: str, *rows: dict, benched: dict[str, dict[str, float]] | None = None) -> Usable:
    """A kept list by hand: *benched* maps a row id to its model benches (those rows are in
    ``every`` only)."""
    benched = benched or {}
    return Usable(7, math.inf, strategy, [r for r in rows if r["id"] not in benched], list(rows),
                  {id(r): benched[r["id"]] for r in rows if r["id"] in benched})


def _ids(rows: list[dict] | None) -> list[str] | None:
    return None if rows is None else [r["id"] for r in rows]


# --- usable_rows --------------------------------------------------------------------------------

def _pool() -> list[dict]:
    return [
        _row("a", 0, last_status="exhausted", last_status_at=T0 - 3580, last_error_code=429),  # until T0+20
        _row("b", 1),
        _row("c", 2, last_status="exhausted", last_status_at=T0, last_error_code=429,
             last_error_reset_at=T0 + 30),
        _row("d", 3, model_cooldowns={"m": T0 + 50}, model_cooldown_observed_at={"m": T0}),
        make_row("e", priority=4, source="env:PICKS_EXACT_BORROWED"),             # no secret yet
        _row("f", 5, last_status="dead"),
    ]


def test_usable_rows_lists_rows_benches_and_the_soonest_end():
    rows = _pool()
    got = usable_rows(rows, "  Round_Robin ", T0, policy.DEFAULT_TTLS, {}, 41)
    assert got.generation == 41
    assert got.strategy == "round_robin"
    assert got.until == T0 + 20                      # a's cooldown, before c's reset and d's model bench
    assert _ids(got.rows) == ["b"]                   # d has a model bench, e no secret, f is dead
    assert _ids(got.every) == ["b", "d"]
    assert got.benches == {id(rows[3]): {"m": T0 + 50}}


def test_usable_rows_until_is_a_model_bench_when_it_ends_first():
    rows = [_row("a", 0, model_cooldowns={"m": T0 + 5, "n": T0 + 9},
                 model_cooldown_observed_at={"m": T0, "n": T0}),
            _row("b", 1, last_status="exhausted", last_status_at=T0, last_error_code=429,
                 last_error_reset_at=T0 + 7)]
    got = usable_rows(rows, None, T0, policy.DEFAULT_TTLS, {}, 1)
    assert got.until == T0 + 5
    assert got.strategy == policy.DEFAULT_STRATEGY
    assert _ids(got.rows) == [] and _ids(got.every) == ["a"]


def test_usable_rows_with_nothing_ending_is_valid_forever():
    got = usable_rows([_row("a", 0), _row("b", 1)], "fill_first", T0, policy.DEFAULT_TTLS, {}, 1)
    assert got.until == math.inf and got.benches == {}
    assert _ids(got.rows) == _ids(got.every) == ["a", "b"]


def test_usable_rows_clears_elapsed_cooldowns_with_the_ttls_it_is_given():
    """A 429 bench 100 s old with a 60 s TTL has ended: the row is written back to ok, as
    ``policy.select`` does (the default TTL, 3600 s, would keep it)."""
    rows = [_row("a", 0, last_status="exhausted", last_status_at=T0 - 100, last_error_code=429,
                 last_error_message="rate limited"),
            _row("b", 1)]                 # not the only live row: no 60 s only-row cap
    ttls = dataclasses.replace(policy.DEFAULT_TTLS, rate_limit_429=60.0)
    got = usable_rows(rows, "fill_first", T0, ttls, {}, 1)
    assert _ids(got.rows) == ["a", "b"]
    assert rows[0]["last_status"] == policy.STATUS_OK
    assert rows[0]["last_status_at"] is None and rows[0]["last_error_code"] is None
    assert rows[0]["last_error_message"] is None


def test_usable_rows_judges_a_renewed_secret_with_the_env_given():
    """Admin era: a secret-less row whose .env key changed is a new credential and serves at
    once; its bench was the old key's. The judgement needs the env the caller passed."""
    old, new = "sk-or-v1-" + "1" * 32, "sk-or-v1-" + "2" * 32
    rows = [make_row("a", source="env:PICKS_EXACT_RENEWED", secret_fingerprint=hash_secret(old),
                     last_status="exhausted", last_status_at=T0 - 10, last_error_code=429)]
    admin = dataclasses.replace(policy.DEFAULT_TTLS, told=generations.Told("admin", "test"))
    env = {"PICKS_EXACT_RENEWED": new}
    assert _ids(usable_rows(rows, "fill_first", T0, admin, env, 1).rows) == ["a"]
    # the same key as the fingerprint: its bench holds
    assert _ids(usable_rows(rows, "fill_first", T0, admin, {"PICKS_EXACT_RENEWED": old}, 1).rows) == []


# --- candidates ---------------------------------------------------------------------------------

def test_candidates_for_a_model_skip_only_rows_benched_for_it():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    usable = _usable("fill_first", a, b, c, benched={"a": {"m1": T0 + 9}, "b": {"m2": T0 + 9}})
    assert _ids(candidates(usable, "m1")) == ["b", "c"]
    assert _ids(candidates(usable, "m2")) == ["a", "c"]
    assert _ids(candidates(usable, "m3")) == ["a", "b", "c"]
    assert candidates(usable, None) is usable.rows and _ids(usable.rows) == ["c"]


def test_candidates_without_model_benches_are_the_kept_list_itself():
    a, b = _row("a", 0), _row("b", 1)
    usable = _usable("fill_first", a, b)
    assert candidates(usable, "m1") is usable.rows
    assert candidates(usable, None) is usable.rows


# --- pick ---------------------------------------------------------------------------------------

def test_pick_from_nothing_is_none():
    assert pick(_usable("fill_first"), [], random.Random(1)) is None


def test_pick_fill_first_counts_the_first_row():
    a, b = _row("a", 0, request_count=4), _row("b", 1)
    usable = _usable("fill_first", a, b)
    rows = [a, b]
    assert pick(usable, rows, random.Random(1)) is a
    assert a["request_count"] == 5 and b["request_count"] == 0
    assert _ids(rows) == ["a", "b"] and _ids(usable.rows) == ["a", "b"]


def test_pick_least_used_weighs_headroom_when_asked():
    a, b = _row("a", 0, request_count=1), _row("b", 1, request_count=9)
    assert pick(_usable("least_used", a, b), [a, b], random.Random(1)) is a
    left = {"a": 0.1, "b": 0.8}
    assert pick(_usable("least_used", a, b), [a, b], random.Random(1), lambda r: left[r["id"]]) is b
    assert b["request_count"] == 10


def test_pick_random_draws_from_the_rng_given():
    rows = [_row(x, i) for i, x in enumerate("abcdef")]
    want = random.Random(3).choice(rows)["id"]
    assert pick(_usable("random", *rows), rows, random.Random(3))["id"] == want


def test_pick_round_robin_moves_the_row_to_the_end_renumbered():
    a, b, c = _row("a", 4), _row("b", 7), _row("c", 9)
    rows = [b, a, c]                      # not in priority order: renumbered first
    usable = _usable("round_robin", a, b, c)
    assert pick(usable, rows, random.Random(1)) is a
    assert _ids(rows) == ["b", "c", "a"]
    assert [r["priority"] for r in rows] == [0, 1, 2]
    assert _ids(usable.rows) == ["b", "c", "a"]


def test_pick_round_robin_with_one_row_leaves_the_priorities_alone():
    a, b = _row("a", 3), _row("b", 8)
    rows = [a, b]
    usable = _usable("round_robin", a)
    assert pick(usable, rows, random.Random(1)) is a
    assert [r["priority"] for r in rows] == [3, 8] and _ids(rows) == ["a", "b"]


def test_pick_round_robin_with_two_rows_rotates():
    a, b = _row("a", 0), _row("b", 1)
    rows = [a, b]
    assert pick(_usable("round_robin", a, b), rows, random.Random(1)) is a
    assert _ids(rows) == ["b", "a"] and [r["priority"] for r in rows] == [0, 1]


# --- choose: the kept list itself ---------------------------------------------------------------

def test_choose_with_no_filter_rotates_the_kept_list_in_place():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    usable = _usable("round_robin", a, b, c)
    got = choose(usable, [a, b, c], random.Random(1), None, None)
    assert got[0] is a and got[1] is False and got[2] is False
    assert _ids(usable.rows) == ["b", "c", "a"]


def test_choose_with_a_keep_that_keeps_all_still_uses_the_kept_list():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c)
    got = choose(usable, rows, random.Random(1), None, lambda r: True, hold=lambda rs: ())
    assert got[0] is a and got[1] is False and got[2] is False
    assert _ids(usable.rows) == ["b", "c", "a"] and _ids(rows) == ["b", "c", "a"]
    assert [r["priority"] for r in rows] == [0, 1, 2]


@pytest.mark.parametrize("keep", [None, lambda r: True])
def test_choose_passes_weigh_and_rng_on_the_kept_list(keep):
    a, b = _row("a", 0, request_count=0), _row("b", 1, request_count=5)
    left = {"a": 0.05, "b": 0.9}
    got = choose(_usable("least_used", a, b), [a, b], random.Random(1), None, keep,
                 weigh=lambda r: left[r["id"]])
    assert got == (b, False, False)
    rows = [_row(x, i) for i, x in enumerate("abcdef")]
    want = random.Random(5).choice(rows)["id"]
    got = choose(_usable("random", *rows), rows, random.Random(5), None, keep)
    assert got[0]["id"] == want and got[1:] == (False, False)


# --- choose: filters ----------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", ["fill_first", "round_robin"])
def test_choose_keep_leaves_rows_out_and_says_so(strategy):
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    rows = [a, b, c]
    usable = _usable(strategy, a, b, c)
    seen = []

    def keep(r):
        seen.append(r["id"])
        return r["id"] != "a"

    got = choose(usable, rows, random.Random(1), None, keep)
    assert seen == ["a", "b", "c"]
    assert got[0] is b and got[1] is True
    assert got[2] is (strategy == "round_robin")      # a copy was rotated: the kept list is stale
    assert _ids(usable.rows) == ["a", "b", "c"]       # the kept list is untouched
    assert b["request_count"] == 1 and a["request_count"] == 0
    if strategy == "round_robin":
        assert _ids(rows) == ["a", "c", "b"] and [r["priority"] for r in rows] == [0, 1, 2]


def test_choose_hold_takes_the_held_ids_out_and_says_so():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    asked = []

    def hold(rs):
        asked.append(_ids(rs))
        return {"a"}

    got = choose(_usable("fill_first", a, b, c), [a, b, c], random.Random(1), None, None, hold=hold)
    assert got == (b, True, False)
    assert asked == [["a", "b", "c"]]


def test_choose_hold_is_asked_about_the_rows_keep_allowed_only():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    asked = []

    def hold(rs):
        asked.append(_ids(rs))
        return {"c"}

    got = choose(_usable("fill_first", a, b, c), [a, b, c], random.Random(1), None,
                 lambda r: r["id"] != "a", hold=hold)
    assert got == (b, True, False)
    assert asked == [["b", "c"]]


def test_choose_hold_is_not_asked_when_nothing_is_left():
    a, b = _row("a", 0), _row("b", 1)
    asked = []
    got = choose(_usable("round_robin", a, b), [a, b], random.Random(1), None, lambda r: False,
                 hold=lambda rs: asked.append(rs) or {"a"})
    assert got == (None, True, False)                 # nothing chosen: the kept order still holds
    assert asked == []


def test_choose_hold_naming_no_row_keeps_them_all():
    a, b = _row("a", 0), _row("b", 1)
    got = choose(_usable("fill_first", a, b), [a, b], random.Random(1), None, lambda r: r["id"] == "b",
                 hold=lambda rs: set())
    assert got == (b, True, False)


def test_choose_hold_names_ids_as_text():
    a, b = make_row(11, priority=0, token=_key("a")), make_row(12, priority=1, token=_key("b"))
    got = choose(_usable("fill_first", a, b), [a, b], random.Random(1), None, None, hold=lambda rs: {"11"})
    assert got == (b, True, False)


@pytest.mark.parametrize("strategy", ["least_used", "random", "round_robin"])
def test_choose_filtered_copy_keeps_the_strategy_weigh_and_rng(strategy):
    rows = [_row(x, i, request_count=5 - i) for i, x in enumerate("abcdef")]
    left = {"a": 0.0, "b": 0.9, "c": 0.1, "d": 0.5, "e": 0.2, "f": 0.3}
    keep = lambda r: r["id"] != "f"            # noqa: E731
    got = choose(_usable(strategy, *rows), list(rows), random.Random(11), None, keep,
                 weigh=lambda r: left[r["id"]])
    want = {"least_used": "b",                                # the most headroom, not the least used (e)
            "random": random.Random(11).choice(rows[:5])["id"],
            "round_robin": "a"}[strategy]
    assert got[0]["id"] == want and got[1] is True and got[2] is (strategy == "round_robin")


# --- choose: a request for a model --------------------------------------------------------------

def test_choose_for_a_model_serves_rows_benched_for_another():
    """a is benched for m1 only: a request for m2 may use it, and it comes first."""
    a, b = _row("a", 0), _row("b", 1)
    usable = _usable("fill_first", a, b, benched={"a": {"m1": T0 + 9}})
    assert choose(usable, [a, b], random.Random(1), "m2", None) == (a, False, False)
    assert choose(usable, [a, b], random.Random(1), None, None) == (b, False, False)


def test_choose_for_a_model_says_when_a_row_is_benched_for_it():
    a, b = _row("a", 0), _row("b", 1)
    usable = _usable("fill_first", a, b, benched={"a": {"m1": T0 + 9}})
    assert choose(usable, [a, b], random.Random(1), "m1", None) == (b, True, False)
    assert choose(usable, [a, b], random.Random(1), "m1", lambda r: True) == (b, True, False)


def test_choose_for_a_model_benched_on_every_row_finds_none():
    a, b = _row("a", 0), _row("b", 1)
    usable = _usable("round_robin", a, b, benched={"a": {"m1": T0 + 9}, "b": {"m1": T0 + 9}})
    assert choose(usable, [a, b], random.Random(1), "m1", None) == (None, True, False)


def test_choose_for_a_model_round_robin_rotates_a_copy():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c, benched={"b": {"m1": T0 + 9}})
    assert choose(usable, rows, random.Random(1), "m2", None) == (a, False, True)
    assert _ids(usable.rows) == ["a", "c"]            # the kept list is not rotated: the caller drops it
    assert _ids(rows) == ["b", "c", "a"]


# --- negative control ---------------------------------------------------------------------------

def test_control_a_model_request_given_the_no_model_list_is_caught():
    """``candidates`` answering a model request with the rows that have no model bench at
    all (``not usable.benches`` made ``usable.benches``) sends a request for m2 past a, which
    only m1 benched; the model test above must see it."""
    broken = mutant("store.proxy.routing.picks", "if model is None or not usable.benches:",
                    "if model is None or usable.benches:")
    a, b = _row("a", 0), _row("b", 1)
    usable = broken.Usable(1, math.inf, "fill_first", [b], [a, b], {id(a): {"m1": T0 + 9}})
    assert broken.choose(usable, [a, b], random.Random(1), "m2", None) == (b, False, False)
    assert picks.choose(_usable("fill_first", a, b, benched={"a": {"m1": T0 + 9}}), [a, b],
                        random.Random(1), "m2", None)[0] is a


# --- the kept lists between picks: numbered rows, rotation in place, the cut, the pin by id -------

def _prios(rows: list[dict]) -> list[tuple[str, int]]:
    return [(r["id"], r["priority"]) for r in rows]


@pytest.mark.parametrize("numbered", [False, True])
def test_to_end_renumbered_is_hermes_move(numbered):
    rows = [_row(x, i) for i, x in enumerate("abcde")]
    assert picks.to_end_renumbered(rows, rows[2], numbered) == 2
    assert _prios(rows) == [("a", 0), ("b", 1), ("d", 2), ("e", 3), ("c", 4)]


def test_to_end_renumbered_sorts_rows_not_known_to_be_numbered():
    a, b, c = _row("a", 7), _row("b", 3), _row("c", 5)
    rows = [a, b, c]
    assert picks.to_end_renumbered(rows, c) == 1                  # sorted: b, c, a; c was second
    assert _prios(rows) == [("b", 0), ("a", 1), ("c", 2)]


def test_to_end_renumbered_numbered_finds_a_row_its_priority_does_not_place():
    """*numbered* trusts a row's priority as its place only when the row is there."""
    rows = [_row(x, i) for i, x in enumerate("abcd")]
    rows[3]["priority"] = 0                                        # d says 0, but sits at 3
    assert picks.to_end_renumbered(rows, rows[3], True) == 3
    assert [r["id"] for r in rows] == ["a", "b", "c", "d"] and rows[3]["priority"] == 3


def test_to_end_renumbered_refuses_a_row_not_in_the_pool():
    rows = [_row("a", 0), _row("b", 1)]
    with pytest.raises(ValueError):
        picks.to_end_renumbered(rows, _row("z", 0), True)


def test_to_end_moves_by_bisection_and_by_walk():
    rows = [_row(x, i) for i, x in enumerate("abcdef")]
    a, c = rows[0], rows[2]
    kept = [a, c, rows[3], rows[5]]                                # a, c, d, f
    picks.to_end_renumbered(rows, c, True)                        # c: 2 -> 5; d 2, e 3, f 4
    picks._to_end(kept, c, 2)
    assert [r["id"] for r in kept] == ["a", "d", "f", "c"]
    picks._to_end(kept, a, None)                                  # no place known: walked
    assert [r["id"] for r in kept] == ["d", "f", "c", "a"]
    picks._to_end(kept, a, 0)                                     # already last: nothing moves
    assert [r["id"] for r in kept] == ["d", "f", "c", "a"]
    picks._to_end(kept, _row("z", 0), 0)                          # not in it: nothing moves
    assert [r["id"] for r in kept] == ["d", "f", "c", "a"]


def test_a_round_robin_pick_numbers_the_rows_and_says_where_it_moved_from():
    rows = [_row(x, i) for i, x in enumerate("abc")]
    usable = _usable("round_robin", *rows)
    assert not usable.numbered and usable.moved is None
    pick(usable, list(rows), random.Random(1))
    assert usable.numbered and usable.moved == 0
    one = _usable("round_robin", rows[1])
    pick(one, list(rows), random.Random(1))
    assert one.moved is None and not one.numbered                 # one row: nothing moved


def test_a_round_robin_pick_rotates_every_row_list_it_keeps():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c, benched={"b": {"m": T0 + 9}})
    usable.cut = (frozenset({"zz"}), [a, c])
    assert pick(usable, rows, random.Random(1)) is a
    assert _ids(usable.rows) == ["c", "a"] and _ids(usable.every) == ["b", "c", "a"]
    assert _ids(usable.cut[1]) == ["c", "a"]


def test_rotated_moves_the_row_in_every_kept_list_after_a_filtered_pick():
    a, b, c, d = (_row(x, i) for i, x in enumerate("abcd"))
    rows = [a, b, c, d]
    usable = _usable("round_robin", a, b, c, d)
    chosen, held, reordered = choose(usable, rows, random.Random(1), None, lambda r: r["id"] != "a")
    assert chosen is b and held and reordered and usable.moved == 1 and usable.numbered
    picks.rotated(usable, chosen)
    assert _ids(usable.rows) == ["a", "c", "d", "b"] == _ids(rows)


def test_rotated_moves_nothing_when_the_pick_moved_nothing():
    a, b = _row("a", 0), _row("b", 1)
    usable = _usable("round_robin", a, b)
    chosen, _held, reordered = choose(usable, [a, b], random.Random(1), None, lambda r: r["id"] == "b")
    assert chosen is b and reordered and usable.moved is None
    picks.rotated(usable, chosen)
    assert _ids(usable.rows) == ["a", "b"]


def test_the_cut_is_kept_while_the_hold_answers_with_the_same_set():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    rows = [a, b, c]
    usable = _usable("fill_first", a, b, c)
    same = frozenset({"a"})
    assert choose(usable, rows, random.Random(1), None, None, hold=lambda rs: same) == (b, True, False)
    kept = usable.cut
    assert kept is not None and kept[0] is same and _ids(kept[1]) == ["b", "c"]
    kept[1].reverse()                                              # the kept cut itself is what the next pick uses
    assert choose(usable, rows, random.Random(1), None, None, hold=lambda rs: same)[0] is c
    other = frozenset({"a"})                                       # equal, but another answer: cut afresh
    assert choose(usable, rows, random.Random(1), None, None, hold=lambda rs: other)[0] is b
    assert usable.cut[0] is other


def test_no_cut_is_kept_for_a_filtered_or_model_pick():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    usable = _usable("fill_first", a, b, c)
    choose(usable, [a, b, c], random.Random(1), None, lambda r: True, hold=lambda rs: {"a"})
    assert usable.cut is None
    benched = _usable("fill_first", a, b, c, benched={"c": {"m1": T0}})
    choose(benched, [a, b, c], random.Random(1), "m2", None, hold=lambda rs: {"a"})
    assert benched.cut is None


def test_a_pin_is_found_by_id_among_the_allowed_rows_only():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c, benched={"c": {"m1": T0 + 9}})
    assert choose(usable, rows, random.Random(1), None, None, pin="b")[0] is b
    assert choose(usable, rows, random.Random(1), None, None, pin="c")[0] is a       # benched: not for no model
    assert choose(usable, rows, random.Random(1), "m2", None, pin="c")[0] is c        # another model: it serves
    assert choose(usable, rows, random.Random(1), "m1", None, pin="c")[0] is not c
    assert choose(usable, rows, random.Random(1), None, lambda r: r["id"] != "b", pin="b")[0] is not b
    assert choose(usable, rows, random.Random(1), None, None, hold=lambda rs: {"b"}, pin="b")[0] is not b
    assert choose(usable, rows, random.Random(1), None, None, pin="zz")[0] is not None
    assert usable.row_of("b") is b and usable.row_of("zz") is None


def test_a_pin_among_repeated_ids_is_the_first_allowed_in_order():
    b, a, a2 = _row("b", 0), _row("a", 1), _row("a", 2)
    usable = _usable("fill_first", b, a, a2)
    assert usable.row_of("a") is False
    assert choose(usable, [b, a, a2], random.Random(1), None, lambda r: r is not a, pin="a")[0] is a2
    assert choose(usable, [b, a, a2], random.Random(1), None, None, pin="a")[0] is a


def test_a_pin_a_hold_does_not_name_serves_and_a_model_request_finds_unbenched_pins():
    a, b, c = _row("a", 0), _row("b", 1), _row("c", 2)
    usable = _usable("fill_first", a, b, c, benched={"c": {"m1": T0 + 9}})
    assert choose(usable, [a, b, c], random.Random(1), None, None, hold=lambda rs: {"zz"}, pin="b")[0] is b
    assert choose(usable, [a, b, c], random.Random(1), "m2", None, pin="b")[0] is b     # b has no bench at all


def test_rotated_also_rotates_a_cut_kept_from_an_earlier_pick():
    """A pick filtered by *keep* (a row this request tried) rotates a copy; the cut kept from
    the last held pick must follow, or the next held pick walks a stale order."""
    a, b, c, d = (_row(x, i) for i, x in enumerate("abcd"))
    rows = [a, b, c, d]
    usable = _usable("round_robin", a, b, c, d)
    same = frozenset({"a"})
    assert choose(usable, rows, random.Random(1), None, None, hold=lambda rs: same)[0] is b
    picks.rotated(usable, b)
    assert _ids(usable.cut[1]) == ["c", "d", "b"]
    chosen, _held, reordered = choose(usable, rows, random.Random(1), None, lambda r: r["id"] not in "ac")
    assert chosen is d and reordered
    picks.rotated(usable, chosen)
    assert _ids(usable.rows) == ["a", "c", "b", "d"] == _ids(rows)
    assert _ids(usable.cut[1]) == ["c", "b", "d"]
    assert choose(usable, rows, random.Random(1), None, None, hold=lambda rs: same)[0] is c
