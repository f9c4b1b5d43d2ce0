"""The helpers that replaced copies: one row-by-id lookup (store.model.row_by_id), one
duration reader (store.durations), one process-liveness check (store.pids). Each is checked
against its specification, with hostile input, and where a copy it replaced was wrong, the
defect is shown too (a negative control: the old inline check fails where the helper holds).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import authfile
from store.durations import GO_UNITS, MAX_TEXT, OPERATOR_UNITS, UNIT_SECONDS, seconds_in
from store.model import row_by_id
from store.monitor import status
from store.paths import TEMP_PREFIX, Home
from store.pids import MAX_PID, process_exists
from tui.text.durations import parse_duration

# --- row_by_id ---------------------------------------------------------------------------------

ID = st.one_of(st.sampled_from(["aaaaaa", "bbbbbb", "1", "None"]), st.integers(0, 3), st.none())
ENTRY = st.one_of(st.builds(lambda i, n: {"id": i, "n": n}, ID, st.integers()),
                  st.builds(lambda n: {"n": n}, st.integers()),
                  st.integers(), st.text(max_size=3), st.none(), st.lists(st.integers(), max_size=1))


@given(st.lists(ENTRY, max_size=8), st.sampled_from(["aaaaaa", "bbbbbb", "1", "0", "None", "zzz"]))
def test_row_by_id_is_the_first_object_whose_id_reads_as_the_text(rows: list[Any], rid: str) -> None:
    got = row_by_id(rows, rid)
    hits = [i for i, r in enumerate(rows) if isinstance(r, dict) and "id" in r and str(r["id"]) == rid]
    if rid == "None":   # a row without an id is never found by one (get() gives None: "None")
        hits = [i for i, r in enumerate(rows) if isinstance(r, dict) and str(r.get("id")) == rid]
    if not hits:
        assert got is None
    else:
        assert got is rows[hits[0]]


def test_row_by_id_reads_a_generator_and_a_raw_pool_list() -> None:
    raw = ["junk", {"id": 7}, {"id": "7"}]
    assert row_by_id(raw, "7") is raw[1]
    assert row_by_id((r for r in raw), "8") is None


# --- durations ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, units, seconds", [
    ("90s", OPERATOR_UNITS, 90.0), ("15m", OPERATOR_UNITS, 900.0), ("2h", OPERATOR_UNITS, 7200.0),
    ("1d", OPERATOR_UNITS, 86400.0), ("1w", OPERATOR_UNITS, 604800.0), ("1h30m", OPERATOR_UNITS, 5400.0),
    (" 1H 30M ", OPERATOR_UNITS, 5400.0), ("1.5h", OPERATOR_UNITS, 5400.0), ("90 s", OPERATOR_UNITS, 90.0),
    ("6m0s", GO_UNITS, 360.0), ("1h2m3.5s", GO_UNITS, 3723.5), ("12ms", GO_UNITS, 0.012),
    ("5ms", GO_UNITS, 0.005), ("250us", GO_UNITS, 0.00025), ("3µs", GO_UNITS, 3e-6), ("7ns", GO_UNITS, 7e-9),
    ("0s", GO_UNITS, 0.0),
])
def test_a_duration_reads_as_its_seconds(text: str, units: frozenset[str], seconds: float) -> None:
    assert seconds_in(text, units) == pytest.approx(seconds)


@pytest.mark.parametrize("text, units", [
    ("", OPERATOR_UNITS), ("   ", OPERATOR_UNITS), ("90", OPERATOR_UNITS), ("1x", OPERATOR_UNITS),
    ("1h 30", OPERATOR_UNITS), ("h", OPERATOR_UNITS), ("-5m", OPERATOR_UNITS), ("5ms", OPERATOR_UNITS),
    ("1d", GO_UNITS), ("2w", GO_UNITS), ("1e3s", OPERATOR_UNITS), ("1" * 13 + "s", OPERATOR_UNITS),
    ("1s" * (MAX_TEXT // 2 + 1), OPERATOR_UNITS), ("1h\x1b[2J", OPERATOR_UNITS), ("nan s", OPERATOR_UNITS),
])
def test_what_is_not_a_duration_reads_as_none(text: str, units: frozenset[str]) -> None:
    assert seconds_in(text, units) is None


PART = st.tuples(st.integers(0, 999), st.sampled_from(sorted(UNIT_SECONDS)))


@given(st.lists(PART, min_size=1, max_size=6), st.sampled_from(["", " "]))
def test_parts_written_out_read_back_as_their_sum(parts: list[tuple[int, str]], sep: str) -> None:
    text = sep.join(f"{n}{u}" for n, u in parts)
    want = sum(n * UNIT_SECONDS[u] for n, u in parts)
    units = frozenset(UNIT_SECONDS)
    got = seconds_in(text, units)
    if len(text) > MAX_TEXT:
        assert got is None
    else:
        assert got == pytest.approx(want)


@given(st.text(max_size=200))
def test_hostile_text_never_raises_and_never_reads_negative(text: str) -> None:
    for units in (OPERATOR_UNITS, GO_UNITS):
        got = seconds_in(text, units)
        assert got is None or 0.0 <= got < 1e18


def test_the_operators_parser_keeps_its_own_bounds_and_wording() -> None:
    assert parse_duration("1h30m") == 5400.0
    with pytest.raises(ValueError, match="is not a duration like 90s"):
        parse_duration("5ms")
    with pytest.raises(ValueError, match="not a positive duration"):
        parse_duration("0s")
    with pytest.raises(ValueError, match="longer than a year"):
        parse_duration("400d")


# --- process_exists ----------------------------------------------------------------------------

def _a_gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    return proc.pid


def test_a_process_that_runs_exists_and_one_that_ended_does_not() -> None:
    assert process_exists(os.getpid())
    assert process_exists(os.getppid())
    assert not process_exists(_a_gone_pid())


@given(st.one_of(st.integers(max_value=0), st.integers(min_value=MAX_PID + 1), st.booleans(), st.none(),
                 st.floats(), st.text(max_size=20), st.lists(st.integers(), max_size=2)))
def test_a_value_that_is_no_pid_names_no_process_and_never_raises(value: Any) -> None:
    assert process_exists(value) is False


def test_negative_control_the_bare_signal_check_raises_on_a_huge_pid() -> None:
    """Why the bound: the check the copies made (os.kill(pid, 0) catching OS errors) raises
    on a pid a status file can hold, so `monitor status` fell over on it."""
    with pytest.raises(OverflowError):
        os.kill(2**63, 0)


@pytest.mark.parametrize("pid", [2**63, 10**30, -1, True, "123", 1.5])
def test_a_monitor_status_with_an_absurd_pid_is_not_running(pid: Any) -> None:
    assert status.is_running({"state": "running", "pid": pid}) is False
    assert status.is_running({"state": "running", "pid": os.getpid()}) is True
    assert status.is_running({"state": "stopped", "pid": os.getpid()}) is False


@pytest.mark.parametrize("pid, gone_at_once", [("99999999999999999999", True), (str(MAX_PID + 1), True),
                                               ("\u00b2", False), ("\u0663", False)])
def test_a_temp_name_with_an_absurd_pid_does_not_break_the_sweep(tmp_home: Home, pid: str,
                                                                  gone_at_once: bool) -> None:
    """The sweep runs before writes; a temp name under our prefix whose pid part is past any
    pid is an orphan at once (no writer can have that pid), and one whose pid part is a
    non-ASCII digit is no pid (swept by age): never an exception."""
    odd = tmp_home.root / f"{TEMP_PREFIX}auth.json.{pid}.x.tmp"
    odd.write_text("{}")
    alive = tmp_home.root / f"{TEMP_PREFIX}auth.json.{os.getppid()}.y.tmp"
    alive.write_text("{}")
    assert authfile.sweep_orphans(tmp_home) == ([odd] if gone_at_once else [])
    assert alive.exists()
    # Old enough, a live writer's temp goes too.
    old = time.time() - 3600
    for f in (alive, odd):
        if f.exists():
            os.utime(f, (old, old))
    assert sorted(authfile.sweep_orphans(tmp_home)) == sorted([alive] + ([] if gone_at_once else [odd]))
    assert not any(Path(tmp_home.root).glob(f"{TEMP_PREFIX}*"))
