"""The controls of tests/guards are only worth something if a copy of a module WITHOUT a
mistake passes the same check: otherwise a control could pass because the copy is broken in
some other way (a class of another identity, a lost global). Each check runs here on an
unchanged copy and must pass; and a mistake that is not in the source is an error, never a
passing control."""

from __future__ import annotations

import pytest

from tests.conftest import make_row, make_store, write_store
from tests.guards import test_guard_alerts_steering as alerts_steering
from tests.guards import test_guard_fault_and_scope as fault_scope
from tests.guards import test_guard_history as hist
from tests.mutant import mutant

SAME = "from __future__ import annotations"


@pytest.mark.parametrize("module,check", [
    ("store.agent.outcomes", fault_scope.check_wrapped_fault_by_pool),
    ("store.proxy.model_benches", fault_scope.check_usage_limit_benches_the_row),
    ("store.monitor.alerts", alerts_steering.check_recovery_waits_from_the_last_clear),
    ("store.proxy.steering", alerts_steering.check_ran_out_is_not_a_lift),
])
def test_an_unchanged_copy_passes_the_check(module: str, check) -> None:
    check(mutant(module, SAME, SAME))


def test_an_unchanged_copy_of_the_history_passes_its_checks(tmp_home) -> None:
    copy = mutant("store.ops.history", SAME, SAME)
    older, newer = hist.two_actions(tmp_home)
    hist.check_record_may_name_only_its_own_copy(copy, tmp_home, older, newer)


def test_an_unchanged_copy_prunes_as_the_real_one(tmp_home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("r0")]}))
    hist.check_keep_young_drop_old(mutant("store.ops.history", SAME, SAME), tmp_home)


def test_a_mistake_missing_from_the_source_is_an_error_not_a_pass() -> None:
    with pytest.raises(LookupError):
        mutant("store.monitor.alerts", "this text is in no module", "")
