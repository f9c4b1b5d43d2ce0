"""Row-level reloads: a pool rebuilt by the loader is patched row by row, never wrongly.

``patch_entries`` must give exactly what ``entries`` gives for the new view, or refuse
(None); the table's patched pool must show what a whole walk shows. Hypothesis drives
random writes over random filters and sorts.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.pools.view import build_pool
from store.transaction import transaction
from tests.conftest import make_row, make_store, write_store
from tests.tui_sample import NOW, app_for, key, table_of
from tui.widgets.rows import SORT_ORDER, entries, patch_entries

SIZE = (140, 45)


def pool_rows(n: int) -> list[dict]:
    rows = []
    for i in range(n):
        extra = {}
        if i % 3 == 0:
            extra = dict(last_status="exhausted", last_status_at=NOW - 60 * i,
                         last_error_code=429, last_error_reason="rate_limit_exceeded")
        rows.append(make_row(f"r{i:02d}", label=f"key-{i:02d}", priority=i,
                             token=f"sk-or-v1-{i:040d}", **extra))
    return rows


EDITS = st.sampled_from(["label", "long", "priority", "status", "id", "requests", "ok"])


def edit(row: dict, what: str, i: int) -> None:
    if what == "label":
        row["label"] = f"lab-{i}"
    elif what == "long":
        row["label"] = "x" * 60
    elif what == "priority":
        row["priority"] = -1 - i
    elif what == "status":
        row.update(last_status="exhausted", last_status_at=NOW - 5, last_error_code=402)
    elif what == "ok":
        row.update(last_status=None, last_status_at=None, last_error_code=None)
    elif what == "id":
        row["id"] = f"new{i}"
    else:
        row["request_count"] = i * 7


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 12), writes=st.lists(st.tuples(st.integers(0, 11), EDITS), max_size=4),
       filter_text=st.sampled_from(["", "key", "cool", "lab", "zzz"]), sort=st.sampled_from(SORT_ORDER))
def test_patch_entries_is_entries_or_refuses(n, writes, filter_text, sort) -> None:
    rows = pool_rows(n)
    old = build_pool("p", rows, strategy="fill_first", now=NOW)
    new_rows = list(rows)
    for i, what in writes:
        if i < n:
            new_rows[i] = copy.deepcopy(new_rows[i])
            edit(new_rows[i], what, i)
    new = build_pool("p", new_rows, strategy="fill_first", now=NOW, previous=old)
    old_rows = entries([old], filter_text, sort)
    got = patch_entries(old, new, old_rows, filter_text, sort)
    if got is None:
        return  # refusing is always allowed: the caller walks the pool whole
    patched, changed = got
    want = entries([new], filter_text, sort)
    assert [(e.key, e.cred) for e in patched] == [(e.key, e.cred) for e in want]
    assert changed[0].key == want[0].key and changed[0].pool is new
    # Every row whose credential view changed is listed, and only those.
    moved = {e.key for e, o in zip(patched, old_rows, strict=True) if e.cred is not o.cred}
    assert {e.key for e in changed[1:]} == moved


def test_patch_entries_refuses_what_can_move_a_row() -> None:
    rows = pool_rows(6)
    old = build_pool("p", rows, strategy="fill_first", now=NOW)
    for what in ("priority", "id"):
        new_rows = copy.deepcopy(rows)
        edit(new_rows[4], what, 4)
        new = build_pool("p", new_rows, strategy="fill_first", now=NOW, previous=old)
        assert patch_entries(old, new, entries([old])) is None, what
    # Under a filter, a row that stops matching is refused; one that still matches is patched.
    new_rows = list(rows)
    new_rows[2] = dict(rows[2], label="other")
    new = build_pool("p", new_rows, strategy="fill_first", now=NOW, previous=old)
    assert patch_entries(old, new, entries([old], "key-02"), "key-02") is None
    got = patch_entries(old, new, entries([old], "key"), "key")
    assert got is None  # "other" no longer contains "key"
    new_rows[2] = dict(rows[2], label="key-02b")
    new = build_pool("p", new_rows, strategy="fill_first", now=NOW, previous=old)
    got = patch_entries(old, new, entries([old], "key"), "key")
    assert got is not None and [e.cred.label for e in got[1][1:]] == ["key-02b"]


def wide_home(home: Home) -> None:
    cp = {f"pool{p}": [make_row(f"{p}{i:03d}", label=f"key-{p}{i:03d}", priority=i,
                                token=f"sk-or-v1-{p}{i:039d}") for i in range(200)]
          for p in range(2)}
    write_store(home, make_store(cp))
    with transaction(home):
        pass  # the writer's own layout, so later writes patch one row's bytes


async def test_patched_pool_shows_what_a_whole_walk_shows(tmp_home: Home) -> None:
    """Widths, cooldowns and cells after row-level reloads equal a fresh table's."""
    wide_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(app)
        far = key("pool1", "1150")    # never on screen: its row stays unformatted
        near = key("pool0", "0002")   # on screen

        async def write(change) -> None:
            with transaction(tmp_home) as doc:
                change(doc["credential_pool"])
            app.reload()
            await pilot.pause()

        def widths() -> dict[str, int]:
            return {c.value: c.width for c in table.columns}

        base = widths()
        # A long label far off screen widens the label column at once...
        await write(lambda cp: cp["pool1"][150].update(label="L" * 40))
        assert not table.cells.formatted(far)
        assert widths()["label"] > base["label"]
        # ...and giving it back its short label narrows it again (it was the longest).
        await write(lambda cp: cp["pool1"][150].update(label="key-1150"))
        assert widths() == base
        # A cooldown written to an unformatted row and to a shown row is counted as cooling,
        # and clearing one forgets it.
        await write(lambda cp: [cp[p][i].update(last_status="exhausted", last_status_at=NOW - 5,
                                                last_error_code=429)
                                for p, i in (("pool1", 150), ("pool0", 2))])
        assert {far, near} <= set(table.cooling_keys())
        assert "429" in table.line_text(near)
        # The pool header's counts move with the write (they used to stay as first drawn).
        assert "199 ok    1 cooling" in table.line_text("pool\x1fpool0")
        await write(lambda cp: cp["pool1"][150].update(last_status=None, last_status_at=None,
                                                       last_error_code=None))
        assert far not in table.cooling_keys() and near in table.cooling_keys()
        shown = {k: table.line_text(k) for k in table.order[:40]}
        cooling = table.cooling_keys()
        got_widths = widths()
    # Control: a fresh console on the same files, walked whole, shows the same.
    fresh = app_for(tmp_home)
    async with fresh.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = table_of(fresh)
        assert {c.value: c.width for c in table.columns} == got_widths
        assert table.cooling_keys() == cooling
        assert {k: table.line_text(k) for k in table.order[:40]} == shown
