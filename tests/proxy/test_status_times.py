"""``proxy status`` over a status file with absurd times: it prints ``⚠ bad time``, never dies.

The status file is another process's file: a time in it (``started_at: 1e300``) is data, and
the CLI shows it through ``tui.text.format.clock_time``, the checked path every screen uses.
Negative control: the formatter ``proxy status`` used before (``time.localtime`` unguarded)
raises on the same value.
"""

from __future__ import annotations

import os
import time

import pytest

from store.paths import Home
from store.pools.times import BAD_TIME
from store.proxy.observing.stats import write_status
from tests.conftest import run_cli

ABSURD = 1e300


def _status(now: float) -> dict:
    return {"pid": os.getpid(), "host": "127.0.0.1", "port": 8645, "url": "http://127.0.0.1:8645/v1",
            "state": "running", "started_at": ABSURD, "updated_at": now, "primary": "openrouter",
            "active": "nous", "on_fallback_since": ABSURD, "next_restore_check": -ABSURD,
            "chain": [], "upstreams": [{"upstream": "http://127.0.0.1:9/v1", "state": "closed", "strikes": 1,
                                        "down_since": ABSURD, "last_error": "refused"}],
            "in_flight": 0, "credentials": [], "pools": {}, "requests_total": 0}


def test_proxy_status_shows_an_absurd_time_as_a_bad_time(tmp_home: Home) -> None:
    write_status(tmp_home, _status(time.time()))
    r = run_cli(tmp_home, "proxy", "status")
    assert r.stdout.count(BAD_TIME) >= 3, r.stdout
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


def test_negative_control_the_unguarded_formatter_dies_on_it() -> None:
    with pytest.raises((OverflowError, OSError, ValueError)):
        time.strftime("%H:%M:%S", time.localtime(ABSURD))
