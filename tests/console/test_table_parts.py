"""The credential table's parts, each alone: no app, no terminal.

The table is one widget that owns helpers holding their own state (rows, cells,
countdowns, painter, layout, cursor). Each is checked here by what it promises, with a
control that a broken one is caught; the guard at the end keeps the helpers from
reaching into each other's private attributes, as the mixins they replaced did.
"""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from store.pools.view import build_pool
from tests.conftest import make_row
from tests.tui_sample import NOW
from tui.text.format import countdown
from tui.widgets.rows import entries
from tui.widgets.table_cells import GROWING, CellStore
from tui.widgets.table_clock import CountdownClock
from tui.widgets.table_cursor import Window
from tui.widgets.table_layout import ColumnLayout
from tui.widgets.table_rows import RowStore

ROOT = Path(__file__).resolve().parents[2]
TABLE_MODULES = sorted((ROOT / "tui" / "widgets").glob("table_*.py")) + [
    ROOT / "tui" / "widgets" / "credential_table.py"]


def cooling_pool(n: int, key: str = "p", *, cooling=lambda i: i % 2 == 0):
    rows = [make_row(f"r{i:02d}", priority=i, token=f"sk-or-v1-{i:040d}",
                     **(dict(last_status="exhausted", last_status_at=NOW - 3000 - i,
                             last_error_code=429) if cooling(i) else {}))
            for i in range(n)]
    return rows, build_pool(key, rows, strategy="fill_first", now=NOW)


# ---------------------------------------------------------------- the countdown clock
def test_clock_counts_a_pool_walked_whole_then_only_the_rows_patched() -> None:
    rows, pv = cooling_pool(6)
    store = RowStore(CellStore())
    clock = CountdownClock()
    intake = store.intake([pv], "", "priority")
    store.apply(intake, NOW)
    clock.take(intake)
    cooling = clock.cooling_keys()
    assert len(cooling) == 3 and clock.next_flip == min(cooling.values())
    # One row's cooldown cleared: a patch takes just that row out.
    fixed = list(rows)
    fixed[0] = dict(rows[0], last_status=None, last_status_at=None, last_error_code=None)
    pv2 = build_pool("p", fixed, strategy="fill_first", now=NOW, previous=pv)
    intake = store.intake([pv2], "", "priority")
    assert intake.patched and not intake.fresh
    store.apply(intake, NOW)
    clock.take(intake)
    assert set(clock.cooling_keys()) == set(cooling) - {"cred\x1fp\x1fr00"}
    # The pool gone: nothing cools.
    intake = store.intake([], "", "priority")
    store.apply(intake, NOW)
    clock.take(intake)
    assert not clock.any_cooling and clock.flip(NOW + 10**6) == []


def test_clock_flips_ended_cooldowns_and_names_only_changed_countdowns() -> None:
    _, pv = cooling_pool(4)
    clock = CountdownClock()
    store = RowStore(CellStore())
    intake = store.intake([pv], "", "priority")
    store.apply(intake, NOW)
    clock.take(intake)
    ends = clock.cooling_keys()
    keys = list(ends)
    shown = {k: countdown(t - NOW) for k, t in ends.items()}
    # Nothing moved yet: nothing to write.
    assert clock.stale(NOW, keys, shown.__getitem__) == []
    # A second later every sub-ten-minute countdown moves (control: the same call sees it).
    later = clock.stale(NOW + 1, keys, shown.__getitem__)
    assert {k for k, _ in later} == set(keys)
    assert clock.flip(NOW) == [] and clock.now == NOW
    last = max(ends.values())
    assert sorted(clock.flip(last)) == sorted(keys) and not clock.any_cooling


# ---------------------------------------------------------------- the cell store
OPS = st.lists(st.tuples(st.sampled_from(["set", "update", "forget"]), st.integers(0, 4),
                         st.sampled_from(GROWING), st.integers(0, 50)), max_size=30)


def run_cells(cells: CellStore, ops) -> dict[str, dict[str, int]]:
    """Apply *ops* to *cells* and to a plain model of the text lengths per row."""
    model: dict[str, dict[str, int]] = {}
    for op, i, col, n in ops:
        key = f"k{i}"
        if op == "set":
            cells.set_row(key, {c: ("x" * n, "") for c in GROWING}, ())
            model[key] = dict.fromkeys(GROWING, n)
        elif op == "update" and cells.formatted(key):
            cells.update_cell(key, col, ("y" * n, ""))
            model[key][col] = n
        elif op == "forget":
            cells.forget(key)
            model.pop(key, None)
    return model


@settings(max_examples=200, deadline=None)
@given(ops=OPS)
def test_cell_lengths_follow_every_write_so_columns_also_narrow(ops) -> None:
    cells = CellStore()
    model = run_cells(cells, ops)
    want = {c: max((r[c] for r in model.values()), default=0) for c in GROWING}
    assert cells.natural() == want


def test_cell_lengths_control_a_store_that_never_forgets_is_caught() -> None:
    class Leaky(CellStore):
        def forget(self, key: str) -> None:   # keeps the row's lengths counted
            pass

    ops = [("set", 0, "label", 40), ("set", 1, "label", 5), ("forget", 0, "label", 0)]
    leaky = Leaky()
    model = run_cells(leaky, ops)
    assert leaky.natural()["label"] == 40 != max(r["label"] for r in model.values())
    good = CellStore()
    run_cells(good, ops)
    assert good.natural()["label"] == 5


def test_every_cell_change_bumps_the_row_version_a_countdown_leaves_the_frame() -> None:
    cells = CellStore()
    cells.set_row("k", {"label": ("a", ""), "left": ("9m", "")}, ())
    v, f = cells.version("k"), cells.frame_version("k")
    cells.write_countdown("k", "8m")
    assert cells.version("k") > v and cells.frame_version("k") == f
    cells.update_cell("k", "label", ("b", ""))
    assert cells.frame_version("k") > f


# ---------------------------------------------------------------- the layout
def test_layout_version_moves_only_when_a_width_does() -> None:
    layout = ColumnLayout()
    assert layout.fit(100, {"label": 20}, 0) and layout.version == 1
    assert not layout.fit(100, {"label": 20}, 0) and layout.version == 1
    assert layout.fit(100, {"label": 30}, 0) and layout.version == 2
    assert layout.set_wide(True) and not layout.set_wide(True) and layout.version == 3
    assert not layout.fitted and layout.fit(100, {}, 0) and layout.version == 4
    assert [c.value for c in layout.columns] == [s.key for s in layout.specs]


# ---------------------------------------------------------------- the window
WINDOWS = st.tuples(st.integers(0, 500), st.integers(2, 60), st.integers(0, 600))


@given(w=WINDOWS)
def test_scrolling_for_a_row_puts_it_on_a_line(w) -> None:
    top, height, row = w
    y = Window(top, height).scroll_for(row)
    shown = Window(top if y is None else y, height)
    line = shown.line_of(row)
    assert line is not None and shown.row_at(line) == row
    assert row in shown.rows(row + 1)


def test_window_control_an_off_by_one_scroll_is_caught() -> None:
    class OffByOne(Window):
        def scroll_for(self, row: int) -> int | None:
            return row - self.shown if row >= self.top + self.shown else super().scroll_for(row)

    y = OffByOne(0, 10).scroll_for(20)
    assert Window(y or 0, 10).line_of(20) is None


# ---------------------------------------------------------------- the row store
def test_rows_fold_under_their_header_and_unfold() -> None:
    _, pv = cooling_pool(3)
    store = RowStore(CellStore())
    store.apply(store.intake([pv], "", "priority"), NOW)
    assert store.order() == [e.key for e in entries([pv])]
    assert store.fold("p", True) and not store.fold("p", True)
    assert store.order() == ["pool\x1fp"] and store.is_folded("p")
    assert store.fold("p", False) and store.row_count == 4


# ---------------------------------------------------------------- the guard
def private_reaches(source: str) -> list[str]:
    """``x._name`` where x is not ``self`` or ``cls``: one object reading another's privates."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
            out.append(f"{ast.unparse(node)} (line {node.lineno})")
    return out


def test_no_table_part_reads_another_parts_private_attributes() -> None:
    found = {p.name: private_reaches(p.read_text(encoding="utf-8")) for p in TABLE_MODULES}
    assert {k: v for k, v in found.items() if v} == {}
    # Control: the way the mixins read each other is caught.
    assert private_reaches("def f(self):\n    return self.rows._order[0]\n")


def test_the_table_is_one_class_on_scroll_view() -> None:
    from textual.scroll_view import ScrollView

    from tui.widgets import CredentialTable
    assert CredentialTable.__bases__ == (ScrollView,)
