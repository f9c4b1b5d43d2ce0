"""The usage feed's per-answer work made cheaper without changing what it gives: the
:class:`Spent` constructor (store.frozen.quick_init), the Prometheus counters' sums per credential, the
tally's month asked once a day, the feed's listeners taken once a batch."""

from __future__ import annotations

import calendar
import dataclasses
import inspect

from hypothesis import given, settings
from hypothesis import strategies as st

from store.proxy.observing.metrics import UsageCounters
from store.usage.feed import UsageFeed
from store.usage.record import ACTUAL, ESTIMATED, INCLUDED, UNKNOWN, Spent
from store.usage.tally import DAY, MONTH, Tally


def test_the_spent_constructor_sets_every_field_from_its_own_parameter() -> None:
    fields = [f.name for f in dataclasses.fields(Spent)]
    params = list(inspect.signature(Spent.__init__).parameters)[1:]
    assert params == fields
    defaults = {f.name: f.default for f in dataclasses.fields(Spent) if f.default is not dataclasses.MISSING}
    sig = inspect.signature(Spent.__init__).parameters
    assert {n: sig[n].default for n in defaults} == defaults
    values = [object() for _ in fields]
    for s in (Spent(*values), Spent(**dict(zip(fields, values, strict=True)))):
        assert [getattr(s, n) for n in fields] == values
        assert vars(s) == dict(zip(fields, values, strict=True))       # nothing else held
    a = Spent(1.0, "p", "r", "f", input_tokens=3)
    assert a == Spent(1.0, "p", "r", "f", input_tokens=3) and hash(a) == hash(Spent(1.0, "p", "r", "f", None,
                                                                                     input_tokens=3))
    assert a != Spent(1.0, "p", "r", "f", input_tokens=4)            # control: a field that differs is seen
    assert dataclasses.replace(a, pool="q").pool == "q"
    try:
        a.pool = "x"                                                   # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("Spent is no longer frozen")


class _Before:
    """The counters as they were (one dict entry per pool, credential and kind)."""

    def __init__(self) -> None:
        self.tokens: dict = {}
        self.cost: dict = {}

    def __call__(self, spent: Spent) -> None:
        cred = spent.row_id or "-"
        for kind in ("input", "output", "cache_read", "cache_write", "reasoning"):
            n = getattr(spent, f"{kind}_tokens")
            if n:
                key = (spent.pool, cred, kind)
                self.tokens[key] = self.tokens.get(key, 0) + n
        if spent.cost_usd is not None:
            key = (spent.pool, cred, spent.cost_status)
            self.cost[key] = self.cost.get(key, 0.0) + spent.cost_usd

    def snapshot(self) -> dict:
        return {"tokens": [[*k, n] for k, n in self.tokens.items()],
                "cost_usd": [[*k, v] for k, v in self.cost.items()]}


_N = st.one_of(st.none(), st.integers(-5, 10**6))
_SPENT = st.builds(lambda pool, row, i, o, r, w, z, usd, status: Spent(
    1.0, pool, row, None, input_tokens=i, output_tokens=o, cache_read_tokens=r, cache_write_tokens=w,
    reasoning_tokens=z, cost_usd=usd, cost_status=status),
    st.sampled_from(["openrouter", "anthropic"]), st.sampled_from([None, "a", "b", "-"]), _N, _N, _N, _N, _N,
    st.one_of(st.none(), st.floats(0, 5, allow_nan=False)), st.sampled_from([ACTUAL, ESTIMATED, INCLUDED, UNKNOWN]))


@settings(max_examples=200)
@given(st.lists(_SPENT, max_size=40))
def test_the_counters_give_what_they_gave_entry_for_entry(spents) -> None:
    now, before = UsageCounters(), _Before()
    for s in spents:
        now(s)
        before(s)
    assert now.snapshot() == before.snapshot()          # the same entries, in the same order
    assert now.tokens == before.tokens and now.cost == before.cost


def test_the_counters_comparison_sees_a_difference() -> None:
    """Negative control: one more answer on one side, or another order of first counts, is seen."""
    a, b = UsageCounters(), _Before()
    s1 = Spent(1.0, "p", "a", None, input_tokens=5)
    s2 = Spent(1.0, "p", "b", None, output_tokens=2)
    for s in (s1, s2):
        a(s)
    for s in (s2, s1):
        b(s)
    assert a.snapshot() != b.snapshot()
    b2 = _Before()
    for s in (s1, s2, s1):
        b2(s)
    assert a.snapshot() != b2.snapshot()


def test_the_tally_counts_each_answer_in_its_own_day_and_month_across_midnights() -> None:
    """The month is asked of gmtime once a day: an answer past a month's end lands in the
    new month, one earlier the same day in its own (control: the month before differs)."""
    end_of_jan = calendar.timegm((2026, 1, 31, 23, 59, 0))
    jan, feb = 2026 * 12 + 0, 2026 * 12 + 1
    t = Tally()
    t.add("p", "r", 1.0, end_of_jan)
    t.add("p", "r", 2.0, end_of_jan + 120)           # February 1st
    assert t._spent[("p", "r")] == {(DAY, int((end_of_jan + 120) // 86400)): 2.0, (MONTH, feb): 2.0}  # noqa: SLF001
    same = Tally()
    same.add("p", "r", 1.0, end_of_jan - 60)
    same.add("p", "r", 2.0, end_of_jan)                # the same day, the same month
    assert same._spent[("p", "r")] == {(DAY, int(end_of_jan // 86400)): 3.0, (MONTH, jan): 3.0}  # noqa: SLF001
    assert jan != feb


def test_a_listener_that_listens_later_gets_every_later_answer() -> None:
    feed = UsageFeed()
    first: list[Spent] = []
    later: list[Spent] = []
    feed.listen(first.append)
    try:
        feed.answer("custom:x", "r", None, None, at=1.0)
        assert feed.wait_idle(10)
        feed.listen(later.append)
        feed.answer("custom:x", "r", None, None, at=2.0)
        assert feed.wait_idle(10)
    finally:
        feed.close()
    assert [s.at for s in first] == [1.0, 2.0] and [s.at for s in later] == [2.0]
