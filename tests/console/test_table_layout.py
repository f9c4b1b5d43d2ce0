"""The credential table from 80 to 250 columns: which columns show, how wide, and what
stays whole (every Hermes reason at 200, a pool header's counts at any width), and that
no column moves when a value changes. Each protection has a control that shows the check
catches its absence."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer

from store.pools.view import build_pool
from store.transaction import transaction
from tests.conftest import make_row, make_store, write_store
from tests.layout_sample import LONG_POOL, LONGEST, write_layout_sample
from tests.tui_sample import NOW, app_for, key, table_of, write_sample
from tui.widgets import cells as C
from tui.widgets import table_columns as TC
from tui.widgets.rows import entries
from tui.widgets.table_cells import CellStore, estimate
from tui.widgets.table_headers import banner_text, pool_header, runs_line, span_width
from tui.widgets.table_layout import ColumnLayout
from tui.widgets.table_rows import RowStore

pytestmark = pytest.mark.usefixtures("utc")


# ---------------------------------------------------------------- Hermes's reasons
def wheel_reasons(root: Path) -> set[str]:
    """The reasons hermes-agent 0.19 can write to last_error_reason / failure_reason: the
    terminal OAuth reasons and billing codes (frozensets of agent/*), the classifier's
    verdicts (FailoverReason) and the literal reasons of credential_pool's error contexts."""
    found: set[str] = set()
    for name in ("credential_pool.py", "error_classifier.py"):
        tree = ast.parse((root / "agent" / name).read_text(encoding="utf-8"))
        consts = {n.targets[0].id: n.value.value for n in ast.walk(tree)
                  if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
                  and isinstance(n.value.value, str)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in ("_TERMINAL_AUTH_REASONS", "_BILLING_ERROR_CODES")):
                for elt in ast.walk(node.value):
                    if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                        found.add(elt.value)
                    elif isinstance(elt, ast.Name) and elt.id in consts:
                        found.add(consts[elt.id])
            if isinstance(node, ast.ClassDef) and node.name == "FailoverReason":
                found |= {s.value.value for s in node.body if isinstance(s, ast.Assign)
                          and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)}
            if name == "credential_pool.py" and isinstance(node, ast.Dict):
                found |= {v.value for k, v in zip(node.keys, node.values, strict=True)
                          if isinstance(k, ast.Constant) and k.value == "reason"
                          and isinstance(v, ast.Constant) and isinstance(v.value, str)}
            if name == "credential_pool.py" and isinstance(node, ast.keyword) and node.arg == "reason" \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                found.add(node.value.value)
    return found


@pytest.mark.hermes
def test_the_reason_list_holds_every_reason_the_hermes_wheel_writes(hermes_path: Path) -> None:
    found = wheel_reasons(hermes_path)
    assert found - set(TC.HERMES_REASONS) == set()
    # Control: the reading finds them (an empty or broken parse would pass the line above).
    assert len(found) >= 30
    assert {"invalid_grant", LONGEST, "multimodal_tool_content_unsupported",
            "credential_pool_refresh_failure"} <= found
    assert len(LONGEST) == TC.REASON_WANT


def reasons_home(home, reasons=TC.HERMES_REASONS) -> list[str]:
    rows = [make_row(f"r{i:03d}", label=f"k{i}", priority=i, token=f"sk-or-v1-{i:032d}",
                     last_status="exhausted", last_status_at=NOW - 10, last_error_code=429,
                     last_error_reason=reason, last_error_reset_at=NOW + 600)
            for i, reason in enumerate(reasons)]
    write_store(home, make_store({"openrouter": rows}))
    return [key("openrouter", r["id"]) for r in rows]


@pytest.mark.parametrize("wide", [False, True], ids=["auto", "wide"])
async def test_every_hermes_reason_is_whole_at_200_columns(tmp_home, wide: bool) -> None:
    keys = reasons_home(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        table = table_of(app)
        if wide:
            await pilot.press("w")
            await pilot.pause()
        column = "reason" if wide else "error"
        want = {k: r if wide else f"429 {r}" for k, r in zip(keys, TC.HERMES_REASONS, strict=True)}
        assert {k: table.cell_text(k, column) for k in keys} == want
        shown = [k for k in keys if table.line_text(k)]
        assert len(shown) > 30
        assert all(want[k] in table.line_text(k) for k in shown)


async def test_control_a_narrower_wide_table_does_cut_the_longest_reason(tmp_home) -> None:
    keys = reasons_home(tmp_home, [LONGEST])
    app = app_for(tmp_home)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("w")
        await pilot.pause()
        assert table_of(app).cell_text(keys[0], "reason").endswith("…")


# ---------------------------------------------------------------- which columns, how wide
def test_the_auto_layout_only_adds_columns_as_the_terminal_widens() -> None:
    natural = {"label": 27, "error": 40, "fingerprint": 16, "source": 11}
    seen = [s.key for s in C.NARROW]
    for total in range(60, 261):
        keys = [s.key for s in TC.columns_for(TC.AUTO, (), total, natural)]
        assert set(seen) <= set(keys), total
        assert keys == [k for k in TC.ORDER if k in keys]   # always the one order
        seen = keys
    assert [s.key for s in TC.columns_for(TC.AUTO, (), 80, natural)] == [s.key for s in C.NARROW]
    assert {"message", "requests", "resets", "source"} <= set(seen)


@pytest.mark.parametrize("total", [120, 160, 200, 250])
def test_the_message_takes_the_rest_and_the_reason_its_want(total: int) -> None:
    layout = ColumnLayout()
    natural = {"label": 10, "error": 24, "message": 30}
    layout.fit(total - 1, natural, 0, total)
    widths = dict(zip(layout.keys, layout.widths, strict=True))
    assert widths["error"] == TC.CODE_WIDTH + TC.REASON_WANT
    if "message" in widths and widths["message"] < 120:
        assert layout.used == total - 1     # the table fills the terminal (the scrollbar's cell aside)


def test_a_custom_layout_keeps_the_one_order_and_the_hash_column() -> None:
    layout = ColumnLayout()
    assert layout.choose(["fingerprint", "message", "label"])
    layout.fit(100, {}, 0)
    assert layout.keys == ("pos", "label", "message", "fingerprint")
    assert layout.set_wide(True) and layout.wide
    assert layout.set_wide(False) and layout.mode == TC.CUSTOM   # w goes back to the choice
    assert layout.choose(None) and layout.mode == TC.AUTO


# ---------------------------------------------------------------- stable widths
async def write_and_reload(app, pilot, home, change) -> None:
    with transaction(home) as doc:
        change(doc["credential_pool"])
    app.reload()
    await pilot.pause()


def reason_writes():
    """One cell shorter, gone, the longest Hermes writes (to a home whose reasons are short)."""
    return [lambda cp: cp["openrouter"][1].update(last_error_reason="insufficient_credit"),
            lambda cp: cp["openrouter"][2].update(last_error_reason=None),
            lambda cp: cp["anthropic"][0].update(last_error_code=403, last_error_reason=LONGEST)]


@pytest.mark.parametrize("size, wide", [((120, 40), False), ((200, 50), False), ((170, 40), True)],
                         ids=["auto-120", "auto-200", "wide-170"])
async def test_no_column_moves_when_a_reason_changes(tmp_home, size, wide: bool) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        table = table_of(app)
        if wide:
            await pilot.press("w")
            await pilot.pause()
        before = table.columns
        for write in reason_writes():
            await write_and_reload(app, pilot, tmp_home, write)
            assert table.columns == before
        if not wide:
            assert table.cell_text(key("anthropic", "aa11bb"), "error") == f"403 {LONGEST}"


async def test_control_widths_sized_by_the_texts_of_the_moment_do_move(tmp_home, monkeypatch) -> None:
    monkeypatch.setattr(TC, "REASON_WANT", 0)   # the reason column as wide as its longest text
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        table = table_of(app)
        before = table.columns
        for write in reason_writes():
            await write_and_reload(app, pilot, tmp_home, write)
        assert table.columns != before


async def test_no_column_moves_when_the_scrollbar_goes(tmp_home) -> None:
    rows = [make_row(f"{i:06x}", label=f"key-{i:03d}", priority=i, token=f"sk-or-v1-{i:032d}")
            for i in range(60)]
    write_store(tmp_home, make_store({"openrouter": rows}))
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        table = table_of(app)
        before, region = table.columns, table.scrollable_content_region.width
        await pilot.press("slash", *"key-007", "enter")
        await pilot.pause()
        assert table.row_count == 2
        # Control: the scrollbar did go (the lines got one cell wider)...
        assert table.scrollable_content_region.width == region + 1
        # ...and no column moved.
        assert table.columns == before


TEXT = st.text(alphabet=string.ascii_letters + string.digits + "_-:.", min_size=0, max_size=40)
ROWS = st.lists(st.fixed_dictionaries({
    "label": st.none() | TEXT, "code": st.none() | st.booleans() | st.integers(-5, 600)
    | st.sampled_from(["429", "x", ""]) | st.floats(0, 600, allow_nan=False),
    "reason": st.none() | TEXT, "failure": st.none() | TEXT, "message": st.none() | TEXT,
    "source": st.none() | TEXT, "note": st.none() | st.sampled_from(["⚑ shared", "⚑ copied+1"]),
}), min_size=1, max_size=6)


def exact_and_estimate(rows, estimate_fn):
    made = [make_row(f"r{i}", priority=i, label=r["label"], last_error_code=r["code"],
                     last_error_reason=r["reason"], failure_reason=r["failure"],
                     last_error_message=r["message"], source=r["source"])
            for i, r in enumerate(rows)]
    pv = build_pool("p", made, strategy="fill_first", now=NOW)
    creds = [e for e in entries([pv]) if e.cred is not None]
    notes = {("p", e.cred.id): r["note"] for e, r in zip(creds, rows, strict=True) if r["note"]}
    store = RowStore(CellStore())
    store.set_notes(notes, NOW)
    cells = [store.format_row(e, NOW, {}) for e in creds]
    cols = ("label", "message", "error", "reason", "source")
    exact = {c: max(len(row[c][0]) for row in cells) for c in cols}
    est = estimate_fn(creds, {}, notes)
    return exact, {c: est[c] for c in cols}


@settings(max_examples=300, deadline=None)
@given(rows=ROWS)
def test_a_deferred_rows_width_estimate_is_its_exact_width(rows) -> None:
    exact, est = exact_and_estimate(rows, estimate)
    assert est == exact


def test_control_an_estimate_one_cell_off_is_caught() -> None:
    def old(rows, fps, notes):   # the code's separator counted when there is no reason
        out = estimate(rows, fps, notes)
        codes = [e.cred.row.get("last_error_code") for e in rows]
        return {**out, "error": out["error"] + any(c is not None for c in codes)}

    rows = [{"label": "a", "code": 429, "reason": None, "failure": None, "message": None,
             "source": None, "note": None}]
    exact, est = exact_and_estimate(rows, old)
    assert est != exact


# ---------------------------------------------------------------- pool headers and banners
def layouts() -> list[tuple[int, ...]]:
    out = []
    for total in (80, 100, 120, 160, 200, 250):
        for wide in (False, True):
            layout = ColumnLayout(wide)
            layout.fit(total - 1, {}, 0, total)
            out.append(layout.widths[1:])
    return out


LAYOUTS = layouts()
NAMES = st.text(alphabet=string.ascii_lowercase + string.digits + ":.-_/", min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(name=NAMES, strategy=st.sampled_from(["fill_first", "round_robin", "least_used",
                                             "quota_aware(unknown→fill_first)"]),
       counts=st.lists(st.integers(0, 99999), min_size=4, max_size=4),
       ready=st.booleans(), at=st.integers(0, len(LAYOUTS) - 1))
def test_a_pool_header_keeps_every_count_whole_and_shortens_the_name(name, strategy, counts,
                                                                     ready, at) -> None:
    widths = LAYOUTS[at]
    ok, cooling, rd, dead = counts
    tally = [f"{ok} ok", f"{cooling} cooling", *([f"{rd} ready"] if ready else []), f"{dead} dead"]
    runs = pool_header(name, [strategy, *tally], widths)
    assert sum(span for _, span in runs) == len(widths)
    at_cell = 0
    for text, span in runs:
        assert len(text) <= span_width(widths[at_cell:], span)
        at_cell += span
    words = " ".join(text for text, _ in runs)
    for t in tally:
        assert f" {t} " in f" {words} ", (t, runs)
    shown = runs[0][0]
    assert shown == name or (shown.endswith("…") and name.startswith(shown[:-1]))
    assert len(runs_line(runs, widths)) == sum(w + 2 for w in widths)


def test_a_40_character_pool_name_keeps_its_counts_at_80_columns() -> None:
    widths = LAYOUTS[0]   # auto at 80
    tally = ["3 ok", "12 cooling", "10 ready", "4 dead"]
    runs = pool_header(LONG_POOL, ["round_robin", *tally], widths)
    words = " ".join(t for t, _ in runs)
    assert all(t in words for t in tally) and runs[0][0].startswith("custom:tog")
    # Control: pouring the words into the cells as before loses counts off the line.
    poured = " ".join(C.flow([LONG_POOL, "round_robin", *tally], list(widths)))
    assert not all(t in poured for t in tally)


def test_a_banner_keeps_its_name_and_health_and_shortens_the_chain() -> None:
    tokens = ("■ team-premium", "primary anthropic/claude-opus-4", "→ openrouter/anthropic/… → custom/llama-3.3",
              "2 ok · 10 cooling · 1 ready · 3 dead")
    text = banner_text(tokens, 70)
    assert len(text) <= 70 and text.startswith("■ team-premium") and text.endswith(tokens[-1])
    assert banner_text(tokens, 200) == "  ".join(tokens)
    # Control: cutting the line at its end loses the health counts.
    assert not C.ellipsize("  ".join(tokens), 70).endswith(tokens[-1])


async def test_header_and_banner_lines_in_the_table_keep_their_counts(tmp_home) -> None:
    write_layout_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        line = table_of(app).line_text("pool\x1f" + LONG_POOL)
        assert "0 ok" in line and "3 cooling" in line and "0 dead" in line
        assert "custom:" in line and LONG_POOL not in line   # shortened, not dropped


# ---------------------------------------------------------------- the footer's right edge
class BareFooter(App):
    BINDINGS = [Binding("x", "bell", "A key with a long description", id="x")]

    def compose(self) -> ComposeResult:
        yield Footer(compact=True)


async def palette_right(app: App, pilot) -> int:
    """Where the footer's palette key ends, once the footer is laid out (bounded wait)."""
    for _ in range(50):
        region = app.screen.query_one(Footer).query_one(".-command-palette").region
        if region.width:
            return region.right
        await pilot.pause()
    raise AssertionError("the footer was never laid out")


@pytest.mark.parametrize("width", [64, 76, 84, 120])
async def test_the_footers_palette_key_reaches_the_right_edge(tmp_home, width: int) -> None:
    write_sample(tmp_home)
    app = app_for(tmp_home)
    async with app.run_test(size=(width, 20)) as pilot:
        await pilot.pause()
        assert await palette_right(app, pilot) == width   # no column left to a letter of a key under it
    # Control: Textual's own compact footer leaves that column.
    async with BareFooter().run_test(size=(width, 10)) as pilot:
        await pilot.pause()
        assert await palette_right(pilot.app, pilot) == width - 1


async def test_wide_at_160_columns_keeps_the_reasons_the_issue_saw_cut(tmp_home) -> None:
    """`w` at 160x50 cut insufficie… and manual_coo…: the label's and the source's unused
    cells, then the message's, give way before a reason does."""
    write_sample(tmp_home)
    with transaction(tmp_home) as doc:
        doc["credential_pool"]["openrouter"][0].update(
            last_status="exhausted", last_status_at=NOW - 5, last_error_reason="manual_cooldown",
            last_error_reset_at=NOW + 600)
    app = app_for(tmp_home)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("w")
        await pilot.pause()
        table = table_of(app)
        assert table.cell_text(key("openrouter", "a1b2c3"), "reason") == "manual_cooldown"
        assert table.cell_text(key("openrouter", "d4e5f6"), "reason") == "insufficient_credits"
        assert table.cell_text(key("openrouter", "d4e5f6"), "message").endswith("…")  # it gave way


@pytest.mark.parametrize("old", [False, True], ids=["label-before-reason", "control-old-order"])
def test_labels_as_long_as_their_column_give_way_before_the_reason(monkeypatch, old: bool) -> None:
    if old:   # the order before: the reason gave way before the label
        shrink = (("message", 10), ("error", 9), ("source", 8), ("reason", 8), ("label", 8))
        monkeypatch.setattr(TC, "SHRINK", shrink)
        monkeypatch.setattr(TC, "FLOOR", dict(shrink))
    layout = ColumnLayout(wide=True)
    layout.fit(159, {"label": 16, "reason": 20, "message": 30, "source": 12}, 0, 160)
    reason = dict(zip(layout.keys, layout.widths, strict=True))["reason"]
    assert (reason < 20) is old
