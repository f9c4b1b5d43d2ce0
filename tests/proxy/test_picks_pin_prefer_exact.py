"""A pin's and ``proxy.prefer``'s picks, value by value (``store.proxy.routing.picks``, #30).

``test_picks_exact.py`` pins the strategy's picks and the kept lists; ``tests/affinity`` and
``tests/pacing/test_prefer.py`` check pins and prefer through a Chain, where a pick's count
and its "held" flag are never read exactly. These pin what a plausible slip there would
change: the row's request count (counted once, from its own count), the held flag (a row
left out by *keep*, or benched for the model asked for, and nothing else), the third flag
(a pin or a preference moves nothing: False), the first of repeated ids, the row lists a
filtered round-robin pick rotates (the model-benched list too), the sort a numbered pool
skips, and the fingerprint a preference reads a key's windows by. Negative controls: the last tests make such slips
(``tests/mutant.py``) and see these checks fail.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest

from store.dialects.readings import Reading
from store.pools import policy
from store.pools.view import row_fingerprint
from store.proxy.routing import picks
from store.proxy.routing.picks import Usable, choose
from tests.conftest import make_row
from tests.mutant import mutant

T0 = 1_700_000_000.0


def _row(rid: str, priority: int, **fields: object) -> dict:
    return make_row(rid, priority=priority, token=f"sk-or-v1-pinpref-{rid}" + "0" * 24, **fields)


def _usable(strategy: str, *rows: dict, benched: dict[str, dict[str, float]] | None = None,
            module=picks) -> Usable:
    """A kept list by hand: rows named in *benched* (id -> model benches) are in ``every`` only."""
    benched = benched or {}
    return module.Usable(7, math.inf, strategy, [r for r in rows if r["id"] not in benched], list(rows),
                         {id(r): benched[r["id"]] for r in rows if r["id"] in benched})


def _abc(**counts: int) -> tuple[dict, dict, dict]:
    return tuple(_row(x, i, request_count=counts.get(x, 0)) for i, x in enumerate("abc"))  # type: ignore[return-value]


def _last(rows: list[dict]) -> dict | None:
    return rows[-1] if rows else None


# --- the pin: counted from its own count, held only when a row was left out ------------------------

def test_a_pin_is_counted_once_from_its_own_count_and_moves_nothing():
    a, b, c = _abc(a=2, b=3, c=5)
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c)
    assert choose(usable, rows, random.Random(1), None, None, pin="b") == (b, False, False)
    assert (a["request_count"], b["request_count"], c["request_count"]) == (2, 4, 5)
    assert [r["id"] for r in rows] == ["a", "b", "c"] and [r["id"] for r in usable.rows] == ["a", "b", "c"]


def test_a_pin_says_held_when_keep_left_a_row_out():
    a, b, c = _abc()
    got = choose(_usable("fill_first", a, b, c), [a, b, c], random.Random(1), None, lambda r: r["id"] != "a", pin="c")
    assert got == (c, True, False)


@pytest.mark.parametrize(("model", "held"), [
    (None, False),     # no model asked: the model-benched row is no candidate, and nothing was held
    ("m3", False),     # a model no row is benched for: every usable row is a candidate
    ("m1", True),      # c is benched for m1: held back for this request
])
def test_a_pin_says_held_only_for_a_row_benched_for_the_model_asked(model, held):
    a, b, c = _abc()
    usable = _usable("fill_first", a, b, c, benched={"c": {"m1": T0 + 9}})
    assert choose(usable, [a, b, c], random.Random(1), model, None, pin="b") == (b, held, False)


def test_a_pin_among_repeated_ids_that_none_allowed_has_leaves_the_strategy_its_pick():
    b, a, a2 = _row("b", 0), _row("a", 1), _row("a", 2)
    usable = _usable("fill_first", b, a, a2)
    assert usable.row_of("a") is False
    assert choose(usable, [b, a, a2], random.Random(1), None, None, pin="zz") == (b, False, False)
    assert choose(usable, [b, a, a2], random.Random(1), None, lambda r: r["id"] != "a", pin="a") == (b, True, False)


# --- proxy.prefer: the same count and flags --------------------------------------------------------

def test_a_preference_is_counted_once_from_its_own_count_and_moves_nothing():
    a, b, c = _abc(a=2, b=3, c=5)
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c)
    given = []

    def prefer(allowed):
        given.append([r["id"] for r in allowed])
        return allowed[-1]

    assert choose(usable, rows, random.Random(1), None, None, prefer=prefer) == (c, False, False)
    assert given == [["a", "b", "c"]]
    assert (a["request_count"], b["request_count"], c["request_count"]) == (2, 3, 6)
    assert [r["id"] for r in rows] == ["a", "b", "c"] and [r["id"] for r in usable.rows] == ["a", "b", "c"]


def test_a_preference_says_held_when_keep_left_a_row_out():
    a, b, c = _abc()
    got = choose(_usable("fill_first", a, b, c), [a, b, c], random.Random(1), None, lambda r: r["id"] != "b",
                 prefer=_last)
    assert got == (c, True, False)


@pytest.mark.parametrize(("model", "held"), [(None, False), ("m3", False), ("m1", True)])
def test_a_preference_says_held_only_for_a_row_benched_for_the_model_asked(model, held):
    a, b, c = _abc()
    usable = _usable("fill_first", a, b, c, benched={"c": {"m1": T0 + 9}})
    assert choose(usable, [a, b, c], random.Random(1), model, None, prefer=lambda rs: rs[0]) == (a, held, False)


def test_a_preference_with_no_choice_leaves_the_strategy_its_pick():
    a, b, c = _abc()
    rows = [a, b, c]
    usable = _usable("round_robin", a, b, c)
    assert choose(usable, rows, random.Random(1), None, None, prefer=lambda rs: None) == (a, False, False)
    assert [r["id"] for r in usable.rows] == ["b", "c", "a"] and a["request_count"] == 1


# --- proxy.prefer's readings: by the key's own fingerprint -----------------------------------------

class _Room:
    def __init__(self, at: dict[tuple[str, str, str | None], list[Reading]]) -> None:
        self.at = at
        self.asked: list[tuple[str, str, str | None]] = []

    def readings(self, pool, rid, fp):
        self.asked.append((pool, rid, fp))
        return self.at.get((pool, rid, fp), [])


def _gate(prefer: dict[str, str], room: _Room) -> SimpleNamespace:
    return SimpleNamespace(settings=SimpleNamespace(proxy=SimpleNamespace(prefer=prefer)), room=room)


def test_preferred_reads_each_keys_windows_by_its_fingerprint_with_the_env():
    """A key borrowed from the environment has no stored secret: its fingerprint is the env
    value's, so the windows recorded against it are found only with the env passed on."""
    env = {"PINPREF_KEY": "sk-or-v1-pinpref-borrowed" + "7" * 20}
    a = _row("a", 0)
    e = make_row("e", priority=1, source="env:PINPREF_KEY")
    fp_e = row_fingerprint("openrouter", e, env)
    assert fp_e is not None and fp_e != row_fingerprint("openrouter", e, None)
    soon = Reading("5h", "anthropic-unified", T0, utilization=0.5, reset_at=T0 + 60)
    late = Reading("5h", "anthropic-unified", T0, utilization=0.5, reset_at=T0 + 6000)
    room = _Room({("openrouter", "e", fp_e): [soon], ("openrouter", "a", row_fingerprint("openrouter", a)): [late]})
    prefer = picks.preferred(_gate({"openrouter": "soonest_reset"}, room), "openrouter", env, T0)
    assert prefer([a, e]) is e
    assert room.asked == [("openrouter", "a", row_fingerprint("openrouter", a)), ("openrouter", "e", fp_e)]
    assert picks.preferred(_gate({"anthropic": "soonest_reset"}, room), "openrouter", env, T0) is None
    assert picks.preferred(_gate({}, room), "openrouter", env, T0) is None


# --- the kept lists a filtered round-robin pick rotates ---------------------------------------------

def test_rotated_moves_the_row_in_the_model_benched_list_too():
    a, b, c, d = (_row(x, i) for i, x in enumerate("abcd"))
    rows = [a, b, c, d]
    usable = _usable("round_robin", a, b, c, d, benched={"c": {"m1": T0 + 9}})
    chosen, held, reordered = choose(usable, rows, random.Random(1), None, lambda r: r["id"] != "a")
    assert chosen is b and held and reordered and usable.moved == 1
    picks.rotated(usable, chosen)
    assert [r["id"] for r in rows] == ["a", "c", "d", "b"]
    assert [r["id"] for r in usable.rows] == ["a", "d", "b"]
    assert [r["id"] for r in usable.every] == ["a", "c", "d", "b"]
    # the next request for m2 walks the rotated order: a first, then c (benched for m1 only)
    assert choose(usable, rows, random.Random(1), "m2", lambda r: r["id"] != "a")[0] is c


def test_a_pool_numbered_by_the_last_move_is_not_sorted_again(monkeypatch):
    """The speed-up this round's kept lists exist for: once a round-robin move numbered the
    pool's rows, later moves (on the kept list, or on a filtered pick's copy) skip the sort."""
    rows = [_row(x, i) for i, x in enumerate("abcd")]
    usable = _usable("round_robin", *rows)
    pool = list(rows)
    sorts = []
    real = policy.renumber
    monkeypatch.setattr(policy, "renumber", lambda rs: sorts.append(len(rs)) or real(rs))
    assert choose(usable, pool, random.Random(1), None, None)[0]["id"] == "a"
    assert sorts == [4] and usable.numbered
    assert choose(usable, pool, random.Random(1), None, None)[0]["id"] == "b"
    chosen, _held, reordered = choose(usable, pool, random.Random(1), None, lambda r: r["id"] != "c")
    assert chosen["id"] == "d" and reordered and usable.numbered
    picks.rotated(usable, chosen)
    assert [r["id"] for r in pool] == ["c", "a", "b", "d"] == [r["id"] for r in usable.rows]
    assert [r["priority"] for r in pool] == [0, 1, 2, 3]
    assert sorts == [4]                          # sorted once, by the first move only


# --- Hermes's move: a priority that does not place the row --------------------------------------------

def test_to_end_renumbered_walks_for_a_row_whose_priority_is_past_the_end():
    rows = [_row(x, i) for i, x in enumerate("abc")]
    rows[2]["priority"] = 3                     # one past the end: not a place
    assert picks.to_end_renumbered(rows, rows[2], True) == 2
    assert [(r["id"], r["priority"]) for r in rows] == [("a", 0), ("b", 1), ("c", 2)]


def test_to_end_renumbered_names_what_went_wrong():
    rows = [_row("a", 0), _row("b", 1)]
    with pytest.raises(ValueError) as got:
        picks.to_end_renumbered(rows, _row("z", 0), True)
    assert str(got.value) == "the row chosen is not one of the pool's rows"


# --- negative controls ----------------------------------------------------------------------------

def test_control_a_pin_counted_from_nothing_is_caught():
    """The pinned row's count restarted (``as_int(chosen.get("request_count"))`` read as
    ``as_int(None)``): the pin's count test above must see it."""
    broken = mutant("store.proxy.routing.picks",
                    'pin)):\n        chosen["request_count"] = as_int(chosen.get("request_count")) + 1',
                    'pin)):\n        chosen["request_count"] = as_int(None) + 1')
    a, b, c = _abc(b=3)
    got = broken.choose(_usable("round_robin", a, b, c, module=broken), [a, b, c], random.Random(1), None, None,
                        pin="b")
    assert got[0] is b and b["request_count"] == 1          # the slip: 3 requests forgotten


def test_control_a_rotation_that_skips_the_model_benched_list_is_caught():
    """``rotated`` leaving ``every`` unrotated (``is not`` made ``is``): the next request for
    a model walks a stale order; the rotation test above must see it."""
    broken = mutant("store.proxy.routing.picks", "    if usable.every is not usable.rows:\n",
                    "    if usable.every is usable.rows:\n")
    a, b, c, d = (_row(x, i) for i, x in enumerate("abcd"))
    usable = _usable("round_robin", a, b, c, d, benched={"c": {"m1": T0 + 9}}, module=broken)
    chosen = broken.choose(usable, [a, b, c, d], random.Random(1), None, lambda r: r["id"] != "a")[0]
    broken.rotated(usable, chosen)
    assert [r["id"] for r in usable.every] == ["a", "b", "c", "d"]     # the slip: b not moved
