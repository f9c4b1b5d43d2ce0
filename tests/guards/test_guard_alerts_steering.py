"""Two clocks that must not be mistaken, each with the mistake as its negative control:

- an alert condition that comes back clears its recovery clock: a flapping alert sends its
  recovery only after it has stayed clear for the whole quiet period since it LAST cleared
  (the existing quiet-period test jumps straight past the point where the two differ);
- in the proxy's steering, a cooldown that ran out in the proxy's own view is not the
  operator's reset, even when a later write touches the bench fields: no jump back to the
  primary past the restore gate.
"""

from __future__ import annotations

import types

import pytest

from store.monitor import alerts
from store.monitor.conditions import Condition
from store.pools import policy
from store.proxy.routing import steering
from tests.conftest import make_row
from tests.mutant import mutant

COND = Condition("pool_empty/default/openrouter", "pool_empty", "critical", "default", "no key", "no key")


def check_recovery_waits_from_the_last_clear(mod: types.ModuleType) -> None:
    book = mod.AlertBook(quiet_period=10.0)
    active = {COND.key: COND}
    assert [n.kind for n in book.update(active, 0.0)] == [mod.FIRING]
    assert book.update({}, 1.0) == []           # clears at 1
    assert book.update(active, 2.0) == []       # comes back at 2: the clock must start again
    assert book.update({}, 3.0) == []           # clears again at 3
    assert book.update({}, 11.5) == []          # 10.5 s after the first clear, 8.5 after the last
    assert book.next_due() == pytest.approx(13.0)
    assert [n.kind for n in book.update({}, 13.0)] == [mod.RESOLVED]


def test_a_condition_that_comes_back_restarts_its_recovery_clock() -> None:
    check_recovery_waits_from_the_last_clear(alerts)


def test_control_without_the_restart_the_recovery_goes_out_too_early() -> None:
    wrong = mutant("store.monitor.alerts", "                alert.clear_since = None\n", "")
    with pytest.raises(AssertionError):
        check_recovery_waits_from_the_last_clear(wrong)


NOW = 1_900_000_000.0


def check_ran_out_is_not_a_lift(mod: types.ModuleType) -> None:
    benched = make_row("a1", token="sk-or-v1-a1-" + "0" * 30, last_status="exhausted", last_status_at=NOW - 10,
                       last_error_code=429, last_error_reset_at=NOW + 600)
    later = NOW + 700                                        # the bench ran out at NOW + 600
    # an agent's write after the bench ran out touches the bench fields (a success stamp)
    written = dict(benched, last_status="ok", last_status_at=later - 5, last_error_code=None,
                   last_error_reset_at=None)
    assert mod.lifted_rows([benched], [written], later, policy.DEFAULT_TTLS, None) == []
    # and an operator's reset while it is still benched in the view is a lift
    reset = dict(benched)
    policy.reset(reset, NOW - 1)
    assert mod.lifted_rows([benched], [reset], NOW, policy.DEFAULT_TTLS, None) == ["a1"]


def test_a_cooldown_that_ran_out_in_the_view_is_not_the_operators_reset() -> None:
    check_ran_out_is_not_a_lift(steering)


def test_control_without_the_check_a_ran_out_cooldown_jumps_back_to_the_primary() -> None:
    wrong = mutant("store.proxy.routing.steering", "if policy.effective(prev, list(before), now, ttls).usable:",
                   "if False:")
    with pytest.raises(AssertionError):
        check_ran_out_is_not_a_lift(wrong)


def test_unchanged_copies_pass_both_checks() -> None:
    """The controls above are worth something only if a copy WITHOUT the mistake passes."""
    same = "from __future__ import annotations"
    check_recovery_waits_from_the_last_clear(mutant("store.monitor.alerts", same, same))
    check_ran_out_is_not_a_lift(mutant("store.proxy.routing.steering", same, same))
