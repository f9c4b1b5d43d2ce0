"""The dashboard's spend column (#29): today's cost of each key from the usage ledger, in
words (``$0.42``, ``~$0.42``, ``<$0.01``, ``incl. 5h 42%``, ``—``, ``over budget``), read on a
thread worker with one aggregate query only when the ledger changed; a ledger that cannot be
read is a notice and every cell ``—``; hostile ledger values never crash the column."""

from __future__ import annotations

import math
import tempfile
import threading
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from screens.detail_usage import read_windows, usage_lines
from store.dialects.readings import Reading
from store.paths import Home
from store.usage import report
from store.usage.ledger import ledger_path
from tests.console.habits_helpers import seed_sidecar
from tests.console.spend_helpers import TODAY, raw_rows, seed_ledger, spend_read, spent
from tests.tui_sample import CANARY, NOW, key, make_app, notes, table_of, visible_text, write_sample
from tui.services import spend_feed
from tui.services.spend_feed import SpendReader
from tui.widgets import table_columns as TC
from tui.widgets.table_columns import columns_for
from tui.widgets.table_spend import fit, spend_text

FIVE_H = Reading("5h", "anthropic-unified", NOW - 2, utilization=0.42, reset_at=NOW + 3600)


def cell(app, pool: str, rid: str) -> str:
    return table_of(app).rows.cells.row(key(pool, rid))["spend"][0]


# -- the words -------------------------------------------------------------------------------

def test_words_per_status():
    assert spend_text(("actual", 0.4213, 3)) == "$0.42"
    assert spend_text(("estimated", 0.4213, 3)) == "~$0.42"
    assert spend_text(("actual", 0.0004, 1)) == "<$0.01"            # never $0.00
    assert spend_text(("estimated", 0.0004, 1)) == "~<$0.01"
    assert spend_text(("unknown", 0.42, 2)) == "≥$0.42"              # some priced: a floor
    assert spend_text(("unknown", None, 2)) == "—"
    assert spend_text(("included", None, 9)) == "incl."
    assert spend_text(("included", None, 9), [FIVE_H], NOW) == "incl. 5h 42%"
    assert spend_text(None) == "—"
    assert spend_text(("actual", 2.5, 9), over=True) == "$2.50 over budget"
    assert spend_text(("actual", 1e300, 1)) == ">$1e9"


def test_a_stale_window_is_not_shown_as_the_use():
    assert spend_text(("included", None, 9), [FIVE_H], NOW + 7200) == "incl."


# -- the layout ------------------------------------------------------------------------------

def test_column_joins_when_a_key_has_a_figure_and_not_at_80():
    natural = {"spend": len("~$0.42"), "label": 10}
    assert "spend" in {s.key for s in columns_for("auto", (), 140, natural)}
    assert "spend" not in {s.key for s in columns_for("auto", (), 140, {"spend": 1})}    # only dashes
    assert "spend" not in {s.key for s in columns_for("auto", (), 79, natural)}     # 80x24 as it was
    assert "spend" in {s.key for s in columns_for("wide", (), 200, natural)}


def test_spend_gives_way_before_the_code_and_reason():
    """Chosen at 80 columns, the spend column shrinks to 7 cells (a figure whole) before code/reason does."""
    natural = {"spend": len("~$0.42"), "label": len("backup-key")}
    specs = columns_for("custom", ("label", "status", "left", "spend", "error", "fingerprint"), 79, natural)
    got = dict(zip((s.key for s in specs), TC.widths(specs, 79, natural), strict=True))
    assert got["spend"] == 7 and got["error"] >= 12, got


def test_spend_gives_way_negative_control(monkeypatch):
    """Without spend in the shrink order the code/reason column pays for it."""
    natural = {"spend": len("~$0.42"), "label": len("backup-key")}
    monkeypatch.setattr(TC, "SHRINK", tuple(("spend", 9) if p[0] == "spend" else p for p in TC.SHRINK))
    monkeypatch.setattr(TC, "FLOOR", {**TC.FLOOR, "spend": 9})
    specs = columns_for("custom", ("label", "status", "left", "spend", "error", "fingerprint"), 79, natural)
    got = dict(zip((s.key for s in specs), TC.widths(specs, 79, natural), strict=True))
    assert got["spend"] == 9 and got["error"] < 12, got


# -- the console -----------------------------------------------------------------------------

async def test_dashboard_shows_todays_spend(tmp_path):
    home = Home(tmp_path)
    seed_sidecar(home, {"a1b2c3": [FIVE_H]})
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.30, "actual"), spent("openrouter", "a1b2c3", 0.1213, "actual"),
                       spent("openrouter", "0f0f0f", 0.0004, "estimated"),
                       spent("openrouter", "d4e5f6", 9.0, "actual", at=NOW - 3600),     # yesterday
                       spent("anthropic", "aa11bb", None, "included")])
    app = make_app(home)
    async with app.run_test(size=(160, 40)) as pilot:
        await spend_read(app, pilot)
        assert cell(app, "openrouter", "a1b2c3") == "$0.42"
        assert cell(app, "openrouter", "0f0f0f") == "~<$0.01"
        assert cell(app, "openrouter", "d4e5f6") == "—"           # only yesterday's: not today's
        assert cell(app, "anthropic", "aa11bb") == "incl."
        screen = visible_text(app)
        assert "spend" in screen and "$0.42" in screen and "$0.00" not in screen


async def test_reader_patched_out_shows_no_figure(tmp_path, monkeypatch):
    """Negative control: the same home with the ledger query patched out shows no figure."""
    home = Home(tmp_path)
    write_sample(home)
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.42, "actual")])
    monkeypatch.setattr(report, "spend_today", lambda *a, **k: {})
    app = make_app(home)
    async with app.run_test(size=(160, 40)) as pilot:
        await spend_read(app, pilot)
        assert cell(app, "openrouter", "a1b2c3") == "—"
        assert "$0.42" not in visible_text(app)


async def test_over_budget_in_words(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    seed_ledger(home, [spent("openrouter", "a1b2c3", 2.5, "actual")])
    app = make_app(home)
    async with app.run_test(size=(200, 40)) as pilot:
        await spend_read(app, pilot)
        app.dashboard.spend.over_budget({("openrouter", "a1b2c3"): "$ over budget"})   # as the proxy watch says
        await pilot.pause()
        assert cell(app, "openrouter", "a1b2c3") == "$2.50 over budget"
        assert "over budget" in visible_text(app)


async def test_read_off_the_ui_thread(tmp_path, monkeypatch):
    home = Home(tmp_path)
    write_sample(home)
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.42, "actual")])
    threads = []
    real = report.spend_today
    monkeypatch.setattr(report, "spend_today", lambda *a, **k: (threads.append(threading.current_thread()),
                                                                 real(*a, **k))[1])
    app = make_app(home)
    async with app.run_test(size=(160, 40)) as pilot:
        await spend_read(app, pilot)
        assert threads and all(t is not threading.main_thread() for t in threads)
        assert cell(app, "openrouter", "a1b2c3") == "$0.42"


async def test_unreadable_ledger_is_a_notice_and_dashes(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    ledger_path(home.root).write_bytes(b"this is not a database" * 100)
    app = make_app(home)
    async with app.run_test(size=(160, 40)) as pilot:
        await spend_read(app, pilot)
        assert cell(app, "openrouter", "a1b2c3") == "—"
        said = notes(app)
        assert any("usage ledger unreadable" in m for m in said), said


def test_reads_only_when_the_ledger_changed(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.42, "actual")])
    clock = [TODAY]
    reader = SpendReader(home, lambda: clock[0])
    assert reader.read()[("openrouter", "a1b2c3")][1] == 0.42
    assert reader.read() is None and reader.reads == 1          # nothing moved: no query
    seed_ledger(home, [spent("openrouter", "a1b2c3", 0.08, "actual", at=TODAY + 5)])
    clock[0] = TODAY + 10
    assert reader.read()[("openrouter", "a1b2c3")][1] == 0.50 and reader.reads == 2
    clock[0] = TODAY + spend_feed.REREAD_SECONDS + 11
    assert reader.read() is not None and reader.reads == 3    # bounded: read again in a while


def test_missing_ledger_is_quiet_dashes(tmp_path):
    home = Home(tmp_path)
    write_sample(home)
    reader = SpendReader(home, lambda: TODAY)
    assert reader.read() == {} and reader.notice is None


# -- hostile ledgers -------------------------------------------------------------------------

_VALUE = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True, allow_infinity=True),
                   st.text(max_size=12), st.binary(max_size=8), st.just(CANARY))
_STATUS = st.one_of(st.sampled_from(["actual", "estimated", "included", "unknown"]), st.text(max_size=8),
                    st.integers(-2**63, 2**63 - 1), st.just(CANARY))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.sampled_from(["a1b2c3", "d4e5f6", CANARY]), _VALUE, _VALUE, _VALUE, _STATUS),
                     min_size=1, max_size=6))
def test_hostile_ledger_values_never_crash_nor_show_a_secret(rows):
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp))
        write_sample(home)
        raw_rows(home, [(TODAY, "openrouter", rid, CANARY, CANARY, "/chat", None, tokens, tokens, 1, 0, 0, cost,
                         status, 0 if partial is None or partial != partial else partial)   # NOT NULL: NaN is NULL
                        for rid, tokens, cost, partial, status in rows])
        reader = SpendReader(home, lambda: TODAY)
        found = reader.read()
        assert isinstance(found, dict)
        for (_pool, rid), s in found.items():
            _status, usd, requests = s
            assert requests > 0 and (usd is None or (math.isfinite(usd) and usd >= 0))
            text = spend_text(s, [], TODAY, over=rid == "a1b2c3")
            assert CANARY not in text and "$0.00" not in text and len(text) < 40
        if reader.notice is not None:
            assert CANARY not in reader.notice
        # The detail view's lines over the same ledger: no crash, no secret.
        got, why = read_windows(home, "openrouter", "a1b2c3", TODAY)
        for line in usage_lines(got, why):
            assert CANARY not in " ".join(line) and "nan" not in line[1].lower()


def test_a_narrow_cell_keeps_the_figure_whole():
    assert fit("~<$0.01 over budget", 7) == "~<$0.01"       # the reason column says it too
    assert fit("~<$0.01 over budget", 40) == "~<$0.01 over budget"
    assert fit("$1,234.56", 7) == "$1,234…"


def test_an_infinite_count_is_read_as_nothing(tmp_path, monkeypatch):
    """An infinite count (a REAL where an INTEGER belongs) reads as 0, the row still counted;
    negative control: with the ledger reader's checks patched off (the query's check of each
    stored value, and the sum's, a bare int()), it fails to read."""
    home = Home(tmp_path)
    write_sample(home)
    raw_rows(home, [(TODAY, "openrouter", "a1b2c3", "fp", "m", "/chat", None, math.inf, 5, 0, 0, 0, 0.42,
                     "actual", 0)])
    got = report.spend_today(ledger_path(home.root), TODAY, 7 * 86400.0)[("openrouter", "a1b2c3")]
    assert got.requests == 1 and got.tokens["input_tokens"] == 0 and got.known_usd == 0.42
    monkeypatch.setattr(report, "_believed", lambda column, hi, whole: "1")
    monkeypatch.setattr(report, "_count", int)
    try:
        report.spend_today(ledger_path(home.root), TODAY, 7 * 86400.0)
    except OverflowError:
        return
    raise AssertionError("the unchecked reader read an infinite count")
