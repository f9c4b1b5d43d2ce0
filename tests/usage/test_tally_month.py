"""The tally's month with the fleet's earlier days (#29, store.usage.tally.settle_month):
whatever this host spent, what the fleet's counters said for today and for the month's
earlier days, a key's month is never below its day, never below what this host knows it
spent this month, and counts the fleet's earlier days once the read is for today."""

from __future__ import annotations

import calendar

from hypothesis import given, settings
from hypothesis import strategies as st

from store.usage.record import ACTUAL, Spent
from store.usage.tally import DAY, MONTH, Tally, day_of, starts

NOW = float(calendar.timegm((2026, 3, 20, 12, 0, 0)))
TODAY = day_of(NOW)
FIRST = day_of(starts(MONTH, NOW))
ROWS = ("r0", "r1")
USD = st.floats(0.0, 100.0, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(local=st.lists(st.tuples(st.sampled_from(ROWS), st.integers(FIRST - 3, TODAY), USD), max_size=8),
       today=st.dictionaries(st.sampled_from(ROWS), USD, max_size=2),
       earlier=st.lists(st.tuples(st.sampled_from(ROWS), st.integers(FIRST - 3, TODAY), USD), max_size=8),
       read_today=st.booleans())
def test_a_month_is_never_below_its_day_nor_this_hosts_own(local, today, earlier, read_today) -> None:
    t = Tally(clock=lambda: NOW)
    for row, day, usd in local:
        t(Spent(at=day * 86400.0 + 3600, pool="p", row_id=row, fingerprint=None, cost_usd=usd, cost_status=ACTUAL))
    own = {r: sum(u for row, d, u in local if row == r and FIRST <= d <= TODAY) for r in ROWS}
    t.settle_month((FIRST, TODAY if read_today else TODAY - 1), [(("p", r, d), u) for r, d, u in earlier])
    t.settle({}, [(("p", r, TODAY), u) for r, u in today.items()])
    fleet_before = {r: sum(u for row, d, u in earlier if row == r and FIRST <= d < TODAY) for r in ROWS}
    for r in ROWS:
        d, m = t.key("p", r, DAY, NOW), t.key("p", r, MONTH, NOW)
        assert m >= d - 1e-9 and m >= own[r] - 1e-6
        if read_today and fleet_before[r] > 0:
            assert m >= fleet_before[r] + d - 1e-6
    assert t.pool("p", MONTH, NOW) >= max(t.key("p", r, MONTH, NOW) for r in ROWS) - 1e-6


def test_a_read_of_another_day_is_not_used() -> None:
    """The earlier days read yesterday miss yesterday itself: until they are read again for
    today, the month is this host's own and the fleet's today (as before #29's month read)."""
    t = Tally(clock=lambda: NOW)
    t.settle_month((FIRST, TODAY - 1), [(("p", "r0", FIRST), 5.0)])
    assert t.key("p", "r0", MONTH, NOW) == 0.0
    t.settle_month((FIRST, TODAY), [(("p", "r0", FIRST), 5.0)])
    assert t.key("p", "r0", MONTH, NOW) == 5.0 and t.pool("p", MONTH, NOW) == 5.0
