"""hermes-admin proxy's budget options refused with the field or option named, exit non-zero,
nothing written: a bad ``budgets:`` section (a budget that silently did not apply would
spend what the operator meant to keep) and a bad ``--fleet`` URL (its password never echoed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.budgets.conftest import budgets
from tests.cli.inprocess import run_main
from tests.proxy_helpers import edge_seed
from tui.services import proxy_feed


def test_proxy_fleet_with_a_bad_url_is_refused_naming_the_option(tmp_home):
    edge_seed(tmp_home, "http://127.0.0.1:9", keys=1, fallback=False)
    code, _out, err = run_main(["proxy", "--home", str(tmp_home.root), "--port", "0",
                                "--fleet", "gopher://user:hunter2@127.0.0.1/0"], b"")
    assert code == 2 and "--fleet" in err and "hunter2" not in err


@pytest.mark.parametrize("text", ["openrouter:\n  key: {day: -1}", "openrouter:\n  key: {week: 2}",
                                  "openrouter:\n  cap: {5h: 150%}", "openrouter:\n  reserve: or0edg"])
def test_proxy_with_a_bad_budget_does_not_start_and_names_the_field(tmp_home, text):
    """A budget that silently did not apply would spend what the operator meant to keep."""
    edge_seed(tmp_home, "http://127.0.0.1:9", keys=1, fallback=False)
    budgets(tmp_home, text)
    before = tmp_home.auth.read_bytes()
    code, _out, err = run_main(["proxy", "--home", str(tmp_home.root), "--port", "0"], b"")
    assert code == 3 and "hermes-admin.yaml" in err and "budgets.openrouter." in err
    assert tmp_home.auth.read_bytes() == before and not list(tmp_home.root.glob("hermes-admin-proxy-*.json"))


JSON = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=200),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["chain", "credentials", "budget", "rows_over", "pool"]), JSON, max_size=3),
       st.lists(st.fixed_dictionaries({"pool": JSON, "budget": st.one_of(JSON, st.fixed_dictionaries(
           {"over": JSON, "rows_over": st.dictionaries(st.text(max_size=10), JSON, max_size=3)}))}), max_size=3))
def test_hostile_status_files_never_break_the_budget_words(top, chain):
    """The status file is another process's output: whatever it holds, the words are short
    strings or nothing, and every reader of them keeps going."""
    st_ = {**top, "chain": chain}
    got = proxy_feed.over_budget(st_)
    assert all(isinstance(w, str) and 0 < len(w) <= proxy_feed.MAX_WORDS for w in got.values())
    for r in chain:
        w = proxy_feed.pool_over(r)
        assert w is None or (isinstance(w, str) and len(w) <= proxy_feed.MAX_WORDS)
    proxy_feed.summary({**st_, "credentials": []})
    assert proxy_feed.over_budget({**top, "chain": top.get("chain", 7)}) is not None    # not a list: nothing
