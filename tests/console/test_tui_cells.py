"""Pure parts of the dashboard: cell words, header layout, filter and sort, and the
the sample homes they read are in tests/tui_sample.py."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.pools.view import build_pools
from tests.conftest import make_row, make_store
from tests.tui_sample import NOW, sample_doc, write_sample
from tui.text import format as fmt
from tui.widgets import cells as C
from tui.widgets.rows import entries, split_key

# ---------------------------------------------------------------- tests


def test_countdown_words() -> None:
    assert fmt.countdown(3570) == "59m"        # ten minutes or more: no seconds (kubectl, k9s)
    assert fmt.countdown(599) == "9m 59s" and fmt.countdown(600) == "10m"
    assert fmt.countdown(3 * 3600 + 125) == "3h 2m"
    assert fmt.countdown(6 * 86400 + 23 * 3600 + 5) == "6d 23h"
    assert fmt.time_left("cooling", 0.2) == "1s"
    assert fmt.time_left("dead", None) == "never"
    assert fmt.time_left("ok", None) == fmt.NULL


def test_credential_cells_fit_their_columns_and_show_nulls(utc) -> None:
    pools = build_pools(sample_doc(), now=NOW)
    for pv in pools:
        for cv in pv.credentials:
            for spec in (C.NARROW, C.WIDE):
                cells = C.credential_cells(cv, NOW, spec)
                assert len(cells) == len(spec)
                for col, value in zip(spec, cells, strict=True):
                    text = value.plain if hasattr(value, "plain") else value
                    assert len(text) <= col.width, (col.key, text)
                    assert text != "" and text != "None", (col.key, cv.id)
    orr = {cv.id: cv for cv in pools[1].credentials}
    wide = {c.key: t.plain for c, t in zip(C.WIDE, C.credential_cells(orr["0f0f0f"], NOW, C.WIDE),
                                           strict=True)}
    # The reset time was stored in milliseconds; the countdown must read it as such.
    assert wide["left"] == "1m 35s"
    assert wide["resets"] == "00:01:35"
    assert wide["status"] == "◐ cooling"
    narrow_primary = [t.plain for t in C.credential_cells(orr["a1b2c3"], NOW, C.NARROW)]
    assert orr["a1b2c3"].next and narrow_primary[0] == "1←"
    assert narrow_primary[4] == fmt.NULL  # no error: a dash, never blank or "None"


def test_narrow_layout_fits_80_columns() -> None:
    # cell text + 2 padding per column + 1 scrollbar column
    assert sum(c.width + 2 for c in C.NARROW) + 1 <= 80


def test_header_words_flow_across_cells_without_splitting() -> None:
    pv = build_pools(sample_doc(), strategies={"openrouter": "round_robin"}, now=NOW)[1]
    words = C.flow(C.header_tokens(pv), [c.width for c in C.NARROW[1:]])
    assert " ".join(w for w in words if w).split() == \
        ["openrouter", "round_robin", "1", "ok", "2", "cooling", "0", "dead"]
    # The longest narrow header (a ready count, a long pool key) still fits every word.
    doc = sample_doc()
    doc["credential_pool"]["openai-codex"] = doc["credential_pool"].pop("openrouter")
    doc["credential_pool"]["openai-codex"][2]["last_error_reset_at"] = NOW - 1
    pv = build_pools(doc, strategies={"openai-codex": "round_robin"}, now=NOW)[1]
    words = C.flow(C.header_tokens(pv), [c.width for c in C.NARROW[1:]])
    assert " ".join(w for w in words if w).split() == \
        ["openai-codex", "round_robin", "1", "ok", "1", "cooling", "1", "ready", "0", "dead"]
    unknown = build_pools(sample_doc(), strategies={"openrouter": "quota_aware"}, now=NOW)[1]
    assert "quota_aware(unknown→fill_first)" in " ".join(C.header_tokens(unknown))


def test_filter_matches_label_id_source_pool_and_status() -> None:
    pools = build_pools(sample_doc(), now=NOW)

    def shown(text: str) -> set[str]:
        return {split_key(e.key)[1] for e in entries(pools, text) if not e.is_header}

    assert shown("") == {"a1b2c3", "d4e5f6", "0f0f0f", "aa11bb"}
    assert shown("backup") == {"d4e5f6"}
    assert shown("0F0F") == {"0f0f0f"}
    assert shown("claude_code") == {"aa11bb"}
    assert shown("anthropic") == {"aa11bb"}
    assert shown("cooling") == {"d4e5f6", "0f0f0f"}
    assert shown("openrouter cooling third") == {"0f0f0f"}
    assert shown("nothing-like-this") == set()
    # A filter hides pools with no match, headers included.
    assert [e.key for e in entries(pools, "claude") if e.is_header] == ["pool\x1fanthropic"]


def test_sort_orders_within_each_pool() -> None:
    pools = build_pools(sample_doc(), now=NOW)

    def ids(mode: str) -> list[str]:
        return [split_key(e.key)[1] for e in entries(pools, "", mode) if not e.is_header]

    assert ids("priority") == ["aa11bb", "a1b2c3", "d4e5f6", "0f0f0f"]
    assert ids("left") == ["aa11bb", "0f0f0f", "d4e5f6", "a1b2c3"]
    assert ids("requests") == ["aa11bb", "0f0f0f", "a1b2c3", "d4e5f6"]


def test_duplicate_ids_get_distinct_row_keys() -> None:
    doc = make_store({"openrouter": [make_row("same", priority=0), make_row("same", priority=1)]})
    keys = [e.key for e in entries(build_pools(doc, now=NOW)) if not e.is_header]
    assert len(set(keys)) == 2


def test_sample_home_is_private(tmp_home: Home) -> None:
    write_sample(tmp_home)
    assert oct(os.stat(tmp_home.auth).st_mode & 0o777) == "0o600"


@settings(max_examples=400, deadline=None)
@given(left=st.floats(min_value=0.01, max_value=10 * 86400, allow_nan=False))
def test_the_tick_sleeps_exactly_until_the_countdown_text_changes(left: float) -> None:
    """countdown_changes_in: the text stays the same until then, and differs just after."""
    wait = fmt.countdown_changes_in(left)
    assert 0 < wait <= 3600
    assert fmt.countdown(left - wait * 0.999) == fmt.countdown(left)
    assert fmt.countdown(left - wait - 1e-3) != fmt.countdown(left) or left - wait <= 1e-3


def test_naive_one_second_wait_is_caught() -> None:
    """Negative control: waking after a fixed second would leave '59m' unchanged (a wasted
    wake-up) - the property above tells a right wait from a wrong one."""
    assert fmt.countdown(3570 - 1) == fmt.countdown(3570)
    assert fmt.countdown_changes_in(3570) > 1
