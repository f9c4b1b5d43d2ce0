"""The proxy and the dialects use the store's one helper for each of these, and so inherit
its bounds: a status file naming an absurd pid, and Go-style durations."""

from __future__ import annotations

import os

import pytest

from store.dialects.readings import go_duration
from store.proxy.observing.stats import is_live

NOW = 1_900_000_000.0


@pytest.mark.parametrize("pid", [2**63, 10**20, -1, 0, True, "123", None])
def test_a_status_file_with_an_absurd_or_odd_pid_is_answered_not_raised(pid) -> None:
    status = {"state": "running", "updated_at": NOW, "pid": pid}
    # no pid said: judged by freshness alone; a pid that names no process here: not live
    assert is_live(status, NOW) is (not isinstance(pid, int))


def test_a_running_pid_is_live_and_a_stale_or_stopped_file_is_not() -> None:
    assert is_live({"state": "running", "updated_at": NOW, "pid": os.getpid()}, NOW)
    assert not is_live({"state": "stopped", "updated_at": NOW, "pid": os.getpid()}, NOW)
    assert not is_live({"state": "running", "updated_at": NOW - 3600, "pid": os.getpid()}, NOW)


@pytest.mark.parametrize("text,seconds", [("12ms", 0.012), ("6m0s", 360.0), ("1h2m3.5s", 3723.5), ("6M0S", 360.0),
                                          ("1.5s", 1.5), ("250us", 0.00025)])
def test_go_durations_read_through_the_one_reader(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "6", "1d", "5x", "-1s", "1h" * 40, "nan s", "1e400s"])
def test_what_is_no_go_duration_is_none(text: str) -> None:
    assert go_duration(text) is None
