"""Bad times are data errors in the console, never crashes (issue 19).

A row whose ``last_error_reset_at`` is ``1e+287`` (a provider's ``Retry-After: 1e290`` as an
older proxy stored it) used to kill the console at start with ``OverflowError``. Now:

- every time the console shows passes ``tui.text.format`` (checked against
  ``datetime`` itself, in the time zones furthest east and west);
- the row stays visible, its "left" and "resets at" cells say ``⚠ bad`` / ``⚠ bad time``
  (a symbol and a word), the detail view gives the data error, the cooldown modal lists the
  row with ``⚠ bad time``, and ``list`` and ``list --json`` say the same data error;
- by property over stored values in every time field, the console (pilot, headless) never
  raises.

Negative control: with the calendar check switched off, the same console dies of the
same ``OverflowError``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from screens.cooldown import CooldownScreen
from screens.detail import DetailScreen
from store import shape
from store.paths import Home
from store.pools import view
from store.redaction import redact
from tests.conftest import make_row, make_store, write_store
from tests.time_values import ABSURD, FIELDS, NOW, STORED_TIME, hostile_row
from tests.tui_sample import app_for, key
from tests.tui_sample import visible_text as screen_text
from tui.cli import entry
from tui.text import format as fmt
from tui.widgets import CredentialTable
from tui.widgets.cells import WIDE, cell_texts

pytestmark = pytest.mark.usefixtures("utc")

CANARY = "sk-or-v1-CANARYt0123456789abcdef0123456789ab"
EXAMPLES = max(8, int(os.environ.get("HERMES_FUZZ_EXAMPLES", "300")) // 20)
ZONES = ("UTC", "Pacific/Kiritimati", "Etc/GMT+12")   # UTC, +14 h and -12 h


def fits_everywhere(t: float) -> bool:
    try:
        for hours in (14, -12):
            datetime.fromtimestamp(t, timezone(timedelta(hours=hours)))
    except (OverflowError, OSError, ValueError):
        return False
    return True


def plant(home: Home, row: dict[str, Any]) -> None:
    write_store(home, make_store({"openrouter": [row, make_row("bbbbbb", priority=1, token=CANARY + "b")]}))


def run_list(home: Home, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry.main(["--home", str(home.root), "list", *extra])
    redact.clear_registered()
    return code, out.getvalue(), err.getvalue()


# --- the one checked path ------------------------------------------------------------------------

@pytest.mark.parametrize("zone", ZONES)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(t=st.one_of(st.floats(allow_nan=False), st.integers(-(10**20), 10**20),
                   st.sampled_from([ABSURD, 1e284, -1e308, 2.5e11, -6.3e10])))
def test_every_time_form_shows_or_says_bad_time(zone: str, t: float) -> None:
    os.environ["TZ"] = zone          # restored by the utc fixture
    time.tzset()
    now = NOW
    shown = {fmt.local_time(t, now), fmt.full_time(t), fmt.relative(t, now), fmt.countdown_to(t, now)}
    if not fits_everywhere(t):
        assert shown == {fmt.BAD_TIME} or (t in (float("inf"), float("-inf")))
    span = fmt.countdown(t)
    assert (span == fmt.BAD_SPAN) == (abs(t) > fmt.LONGEST_SHOWN and abs(t) != float("inf"))
    assert fmt.remaining(t) == fmt.BAD_TIME if span == fmt.BAD_SPAN else fmt.remaining(t).endswith(" left")


def test_the_cells_of_an_absurd_reset_say_bad_time() -> None:
    row = hostile_row("last_error_reset_at", ABSURD, token=CANARY)
    (pv,) = view.build_pools({"credential_pool": {"openrouter": [row]}}, now=NOW)
    cells = dict(zip([c.key for c in WIDE], cell_texts(pv.credentials[0], NOW, WIDE), strict=True))
    assert cells["status"][0] == "◐ cooling"          # Hermes benches it: so do we
    assert cells["left"][0] == "⚠ bad" and cells["resets"][0] == "⚠ bad time"


# --- the console --------------------------------------------------------------------------------

async def tour(home: Home) -> dict[str, Any]:
    """Open the dashboard (narrow, wide), the row's detail and its cooldown modal."""
    seen: dict[str, Any] = {}
    app = app_for(home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        seen["narrow"] = screen_text(app)
        await pilot.resize_terminal(200, 24)
        await pilot.press("w")
        await pilot.pause()
        seen["wide"] = screen_text(app)
        table = app.dashboard.query_one(CredentialTable)
        table.move_to_key(key("openrouter", "aaaaaa"))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        seen["detail"] = screen_text(app)
        seen["detail lines"] = app.screen.lines
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("c")            # refused for a dead row: it has no cooldown to set
        await pilot.pause()
        if isinstance(app.screen, CooldownScreen):
            seen["cooldown"] = screen_text(app)
            seen["cooldown lines"] = app.screen.lines
            await pilot.press("escape")
            await pilot.pause()
        seen["state"] = app.state
    return seen


async def test_an_absurd_reset_is_a_data_error_everywhere_and_they_agree(tmp_home: Home) -> None:
    plant(tmp_home, hostile_row("last_error_reset_at", ABSURD, token=CANARY))
    seen = await tour(tmp_home)
    row_line = next(line for line in seen["wide"].splitlines() if "key-aaaaaa" in line)
    assert "◐ cooling" in row_line and "⚠ bad" in row_line and "⚠ bad time" in row_line
    assert "⚠ bad" in next(line for line in seen["narrow"].splitlines() if "key-aaaaaa" in line)
    error = seen["state"].pools[0].credentials[0].effective.data_error
    assert error and "last_error_reset_at 1e+287" in error
    assert ("data error", error) in [(n, v) for n, v, _ in seen["detail lines"]]
    assert ("available at", fmt.BAD_TIME) in [(n, v) for n, v, _ in seen["detail lines"]]
    assert any("⚠ bad time" in line and "aaaaaa" in line for line in seen["cooldown lines"])
    for text in (seen["narrow"], seen["wide"], seen["detail"], seen["cooldown"]):
        assert CANARY not in text and CANARY[-12:] not in text
    code, out, err = run_list(tmp_home)
    assert code == 0 and not err
    line = next(x for x in out.splitlines() if "key-aaaaaa" in x)
    assert "(⚠ bad time)" in line and f"[data error: {error}]" in line
    code, out, _ = run_list(tmp_home, "--json")
    creds = json.loads(out)["pools"]["openrouter"]["credentials"]
    assert code == 0 and creds[0]["data_error"] == error and creds[0]["status"] == "cooling"


async def test_negative_control_without_the_check_the_console_dies_of_it(tmp_home: Home,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def unchecked(epoch: float | None, now: float | None = None) -> str:   # local_time before the check
        return fmt.NULL if epoch is None else datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M")

    plant(tmp_home, hostile_row("last_error_reset_at", ABSURD, token=CANARY))
    monkeypatch.setattr("tui.widgets.cells.local_time", unchecked)
    with pytest.raises(OverflowError):
        await tour(tmp_home)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(FIELDS), value=STORED_TIME, status=st.sampled_from([None, "exhausted", "dead"]))
def test_any_stored_time_the_console_and_list_never_raise(tmp_path_factory: pytest.TempPathFactory,
                                                          field: str, value: Any, status: str | None) -> None:
    import asyncio

    root = tmp_path_factory.mktemp("home")
    root.chmod(0o700)
    home = Home(root)
    row = hostile_row(field, value, token=CANARY, status=status)
    plant(home, row)
    if not shape.row_ok(row):
        # A type hermes-admin would misread (a boolean, a list): the whole store is refused,
        # naming the field (store.shape), on screen and in `list`; still nothing raises.
        assert "cannot be read" in asyncio.run(opened(home))
        code, _, err = run_list(home)
        assert code == 3 and field in err and "Traceback" not in err, err[-400:]
        return
    seen = asyncio.run(tour(home))
    assert "key-aaaaaa" in seen["wide"]
    code, out, err = run_list(home)
    assert code == 0 and "Traceback" not in out + err and "key-aaaaaa" in out, err[-400:]
    code, out, _ = run_list(home, "--json")
    assert code == 0 and json.loads(out)["pools"]["openrouter"]["credentials"]


async def opened(home: Home) -> str:
    app = app_for(home)
    async with app.run_test(size=(120, 24)) as pilot:
        await pilot.pause()
        return screen_text(app)


async def test_a_cooldown_over_an_absurd_bench_asks_and_replaces_it(tmp_home: Home) -> None:
    """Replacing the bench is what an operator does next: the confirmation names the old
    bench as a bad time, and yes replaces it; the data error is gone."""
    plant(tmp_home, hostile_row("last_error_reset_at", ABSURD, token=CANARY))
    app = app_for(tmp_home)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        app.dashboard.query_one(CredentialTable).move_to_key(key("openrouter", "aaaaaa"))
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, CooldownScreen)
        await pilot.press("1", "5", "m", "enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        asked = screen_text(app)
        assert "Shorten 1 longer bench?" in asked and "(⚠ bad" in asked, asked   # "time)" wraps
        await pilot.press("y")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        after = screen_text(app)
        cv = app.state.pools[0].credentials[0]
    assert cv.effective.data_error is None and cv.effective.status == "cooling"
    row = next(line for line in after.splitlines() if "key-aaaaaa" in line)
    assert "⚠ bad" not in row and "15m" in row, after
    assert CANARY not in asked + after
