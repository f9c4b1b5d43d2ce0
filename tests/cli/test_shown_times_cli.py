"""Times the CLI shows from files other programs wrote are checked, never raised on (issue 19).

``list`` and ``list --json`` over a stored ``1e+287`` (and, by property, any JSON value in
any time field); ``audit`` and ``history`` over an audit log whose times are absurd;
``monitor status`` over a status file with absurd times. Each used to end in
``OverflowError`` ("internal error", exit 1). And ``list --json`` stays valid JSON whatever
characters a stored string holds: the CLI's stream escapes DEL, C1 and format characters
in JSON's own escape form. Negative control: the unchecked forms raise on the same values.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import shape
from store.monitor import status as monitor_status
from store.paths import Home
from store.redaction import redact
from tests.conftest import make_row, make_store, write_store
from tests.time_values import ABSURD, FIELDS, NOW, STORED_TIME, hostile_row
from tui.cli import entry

pytestmark = pytest.mark.usefixtures("utc")


def run(home: Home, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = entry.main(["--home", str(home.root), *argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    redact.clear_registered()
    return code, out.getvalue(), err.getvalue()


def test_list_shows_an_absurd_reset_as_a_data_error(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [hostile_row("last_error_reset_at", ABSURD),
                                                     make_row("bbbbbb", priority=1)]}))
    code, out, err = run(tmp_home, "list")
    assert code == 0 and not err
    assert "exhausted rate_limit_exceeded (429) (⚠ bad time) [data error: last_error_reset_at 1e+287" in out
    code, out, err = run(tmp_home, "list", "--json")
    row = json.loads(out)["pools"]["openrouter"]["credentials"][0]
    assert code == 0 and row["status"] == "cooling" and "1e+287" in row["data_error"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(FIELDS), value=STORED_TIME, status=st.sampled_from([None, "exhausted", "dead"]),
       label=st.text(max_size=12))
def test_list_never_raises_and_json_stays_json(tmp_path_factory: pytest.TempPathFactory, field: str,
                                               value: Any, status: str | None, label: str) -> None:
    root = tmp_path_factory.mktemp("home")
    root.chmod(0o700)
    home = Home(root)
    row = hostile_row(field, value, status=status, label=label or None)
    write_store(home, make_store({"openrouter": [row]}))
    refused = not shape.row_ok(row)
    for argv in (("list",), ("list", "--json")):
        code, out, err = run(home, *argv)
        assert "Traceback" not in out + err and "internal error" not in err, (argv, err[-500:])
        assert code == (3 if refused else 0), (argv, code, err[-300:])
        if code == 0 and "--json" in argv:
            assert json.loads(out)["pools"]["openrouter"]["credentials"][0]["id"] == "aaaaaa"


def test_json_output_is_valid_with_any_control_or_format_character(tmp_home: Home) -> None:
    label = "del\x7f c1\x85\x9b bidi\u202e zw\u200b sep\u2028 tag\U000e0001 nul\x00 esc\x1b"
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", label=label)]}))
    code, out, _ = run(tmp_home, "list", "--json")
    assert code == 0
    assert json.loads(out)["pools"]["openrouter"]["credentials"][0]["label"] == label   # JSON's own escapes
    assert not any(c in out for c in "\x7f\x85\x9b\u202e\u200b\u2028\U000e0001\x00\x1b")


@pytest.mark.parametrize("when", [1e300, -1e300, 10**30, "1e300", "soon", None])
def test_audit_and_history_with_absurd_times(tmp_home: Home, when: Any) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa")]}))
    entry_line = {"time": when, "user": "u", "host": "h", "via": "other-tool", "action": "reset",
                  "pool": "openrouter", "changes": [{"label": "key-aaaaaa", "id": "aaaaaa"}]}
    tmp_home.audit.write_text(json.dumps(entry_line) + "\n")
    for argv in (("audit",), ("history",)):
        code, out, err = run(tmp_home, *argv)
        assert code == 0 and "internal error" not in err, (argv, err)
    code, out, _ = run(tmp_home, "audit")
    assert "reset openrouter" in out and ("1970-01-01" if when is None else "⚠ bad time") in out, out


def test_monitor_status_with_absurd_times(tmp_home: Home) -> None:
    doc = {"version": monitor_status.VERSION, "pid": os.getpid(), "state": "running", "started_at": 1e300,
           "updated_at": time.time(), "path": str(tmp_home.root), "metrics": None,
           "open_alerts": [{"severity": "warning", "title": "t", "since": -1e300}],
           "last_deliveries": [{"time": 1e300, "kind": "alert", "result": "sent", "target": "x", "attempts": 1}]}
    monitor_status.write(tmp_home, doc)
    code, out, err = run(tmp_home, "monitor", "status")
    assert code == 0 and "internal error" not in err, err
    assert out.count("⚠ bad time") == 3, out


def test_negative_control_the_unchecked_forms_raise() -> None:
    from datetime import datetime

    with pytest.raises(OverflowError):
        datetime.fromtimestamp(ABSURD / 1000)
    with pytest.raises(OverflowError):
        time.localtime(1e300)
    with pytest.raises(json.JSONDecodeError):   # the old escape of a C1 character inside JSON text
        json.loads('"c1 \\x85"')
    assert NOW   # the fixtures' clock, so the property's rows are benched "a moment ago"


def test_cooldown_over_an_absurd_bench_names_it_and_shorten_replaces_it(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [hostile_row("last_error_reset_at", ABSURD)]}))
    code, _, err = run(tmp_home, "cooldown", "openrouter", "aaaaaa", "--for", "15m")
    assert code == 2 and "already benched until ⚠ bad time" in err and "internal error" not in err, err
    code, out, err = run(tmp_home, "cooldown", "openrouter", "aaaaaa", "--for", "15m", "--shorten")
    assert code == 0 and "benched until" in out, err
    code, out, _ = run(tmp_home, "list", "--json")
    assert json.loads(out)["pools"]["openrouter"]["credentials"][0]["data_error"] is None
