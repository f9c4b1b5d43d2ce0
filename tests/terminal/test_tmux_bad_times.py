"""A bad time in a real terminal (issue 19): the installed console over an absurd reset time.

The store holds what an older proxy made of a provider's ``Retry-After: 1e290``:
``last_error_reset_at: 1e+287`` on a row whose key is a canary. The installed
``hermes-admin`` starts in tmux, shows the row (wide layout) with its countdown and reset
marked ``⚠ bad``/``⚠ bad time``, the detail view names the data error, and no canary is on
the screen at any point, nor after the console quits.

Negative control: the same console with the time check and the crash report as they were
(``datetime.fromtimestamp`` unguarded, Textual's own report with its locals) dies on the
same store, and its report on the terminal shows the canary.

Part two, the absurd ``Retry-After`` arriving through a running proxy
(:func:`bench_through_the_proxy`): the installed ``hermes-admin proxy`` in front of a scripted
upstream that answers the canary row ``429`` with ``Retry-After: 1e290`` (and its spare 200);
one request, the proxy stops. The store then holds a sane bench (the edge refused the value),
and the console shows the row cooling with a countdown and a reset time it can say, no
``⚠ bad``, no traceback, no canary (:func:`console_shows_a_sane_bench`). Its control: the
same proxy with the edge's checked parsers replaced by plain ``float`` leaves ``1e+287`` in
the store, which the console marks as the data error of part one: the sane-bench check would
fail on it.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tests.proxy.upstream import ScriptedUpstream, http
from tests.proxy_helpers import CONFIG

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

CANARY = f"plainCANARYt{secrets.token_hex(14)}"
ABSURD_RESET = 1e287       # what Retry-After: 1e290 became (seconds, then read as milliseconds)

UNGUARDED = """
import sys
from datetime import datetime
from textual.app import App
import tui.widgets.cells as cells
from tui.app.console import HermesAdminApp
from tui.cli.entry import main
cells.local_time = lambda epoch, now=None: datetime.fromtimestamp(epoch).strftime("%H:%M")
HermesAdminApp._fatal_error = App._fatal_error
sys.exit(main(sys.argv[1:]))
"""


def exe() -> str:
    path = tmux.installed_hermes_admin()
    if path is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return path


def store_with_absurd_reset(home: Home, reset_at: float = ABSURD_RESET) -> None:
    """The store as an older proxy left it: the row benched until *reset_at*, its key a canary
    (first in the row, so even a locals table cut to five items would show it)."""
    row = {"access_token": CANARY, **make_row("aaaaaa", label="benched-key", priority=0,
                                               last_status="exhausted", last_status_at=1_767_225_595.0,
                                               last_error_code=429, last_error_reason="rate_limit_exceeded",
                                               last_error_reset_at=reset_at)}
    write_store(home, make_store({"openrouter": [row, make_row("bbbbbb", label="spare", priority=1,
                                                                token=f"sk-or-v1-{secrets.token_hex(16)}")]}))


# The proxy as it was before its edge checked numbers (the control of part two).
UNCHECKED_PROXY = """
import sys
from store import outside
from store.model import parse_epoch
from tui.cli.entry import main
outside.seconds = lambda value, what, **kw: float(value)
outside.epoch = lambda value, what, *, now, **kw: parse_epoch(value)
sys.exit(main(sys.argv[1:]))
"""
SPARE = f"sk-or-v1-{secrets.token_hex(16)}"


def _start_proxy(argv: list[str], home: Home) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([*argv, "proxy", "--home", str(home.root), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli_env(home))
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(30)
    if not box or "http://" not in box[0]:
        proc.kill()
        raise AssertionError(f"proxy did not start: {box!r} {proc.stderr.read()[-2000:]!r}")
    return proc, box[0].split()[3]


def _row(home: Home) -> dict:
    return json.loads(home.auth.read_bytes())["credential_pool"]["openrouter"][0]


def bench_through_the_proxy(home: Home, retry_after: str, *, argv: list[str] | None = None) -> dict:
    """Start the proxy on *home* (the installed one, or *argv*) in front of a scripted upstream
    that answers the canary row 429 with ``Retry-After: <retry_after>`` and the spare 200; send
    one request (served by the spare), wait (bounded) for the bench in the store, stop the
    proxy. The benched row as the store holds it."""
    with ScriptedUpstream() as up:
        rows = [{"access_token": CANARY, **make_row("aaaaaa", label="benched-key", priority=0,
                                                    base_url=up.url + "/api/v1")},
                make_row("bbbbbb", label="spare", priority=1, token=SPARE, base_url=up.url + "/api/v1")]
        write_store(home, make_store({"openrouter": rows}))
        home.config.write_text(CONFIG.split("fallback_providers")[0])
        up.script(CANARY, http(429, {"Retry-After": retry_after},
                               {"error": {"message": f"slow down, {CANARY}", "code": 429}}))
        up.script(SPARE, http(200))
        proc, url = _start_proxy(argv or [str(HERMES_ADMIN)], home)
        try:
            r = httpx.post(url + "/chat/completions", timeout=30,
                           json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 200 and CANARY not in r.text, r.text[-500:]
            deadline = time.monotonic() + 20
            while _row(home).get("last_status") != "exhausted":
                assert time.monotonic() < deadline, f"no bench in the store: {_row(home)}"
                time.sleep(0.05)
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        err = proc.stderr.read()
        assert CANARY not in err and "Traceback" not in err, err[-2000:]
    return _row(home)


def console_shows_a_sane_bench(home: Home) -> str:
    """Start the installed console: the benched row cools with a countdown, no ``⚠ bad``; its
    detail names no data error; it quits clean; no canary on any screen."""
    def row(line: str, wide: str) -> None:
        assert "◐ cooling" in line and "⚠ bad" not in line, wide

    def detail(text: str) -> None:
        assert "data error" not in text and "⚠ bad" not in text, text
    return _console_tour(home, row, "last_error_reset_at", detail)


def console_shows_the_reset_as_a_data_error(home: Home) -> str:
    """Start the installed console, check the row, its detail, and quit; every screen seen."""
    def row(line: str, wide: str) -> None:
        assert "◐ cooling" in line and "⚠ bad" in line and "⚠ bad time" in line, wide

    def detail(text: str) -> None:
        assert "last_error_reset_at 1e+287" in text and "9999-12-30" in text, text
    return _console_tour(home, row, "data error", detail)


def _console_tour(home: Home, check_row: Any, detail_shows: str, check_detail: Any) -> str:
    """The installed console on *home*: the benched row at full width (*check_row*), its
    detail once *detail_shows* is on it (*check_detail*), back, quit; no traceback and no
    canary on any screen, the scroll-back included. Every screen seen, joined."""
    seen = []
    with tmux.Tmux.start([exe(), "--home", str(home.root)], size=(220, 30), env=cli_env(home)) as term:
        seen.append(term.wait_for("benched-key", timeout=30))
        term.send("w")
        wide = term.wait_for("resets at", timeout=10)
        seen.append(wide)
        check_row(next(x for x in wide.splitlines() if "benched-key" in x), wide)
        term.send("Enter")                       # the cursor starts on the first row: benched-key
        detail = term.wait_for(detail_shows, timeout=10)
        seen.append(detail)
        check_detail(detail)
        term.send("Escape")
        seen.append(term.wait_for("spare", timeout=10))
        term.send("q")
        term.wait_until(lambda _s: term.pane_dead(), timeout=15, what="the console to quit")
        after = term.scrollback()
        seen.append(after)
        assert "Traceback" not in after and "OverflowError" not in after, after[-2000:]
    text = "\n".join(seen)
    assert CANARY not in text and CANARY[-12:] not in text, text[-2000:]
    return text


def test_the_console_starts_over_an_absurd_reset_and_marks_it(tmp_home: Home) -> None:
    store_with_absurd_reset(tmp_home)
    console_shows_the_reset_as_a_data_error(tmp_home)


def test_negative_control_unguarded_the_console_dies_and_shows_the_canary(tmp_home: Home, tmp_path) -> None:
    store_with_absurd_reset(tmp_home)
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED)
    with tmux.Tmux.start([sys.executable, str(script), "--home", str(tmp_home.root)], size=(220, 60),
                         env=cli_env(tmp_home)) as term:
        term.wait_for("benched-key", timeout=30)
        term.send("w")
        term.wait_until(lambda _s: term.pane_dead(), timeout=20, what="the unguarded console to die")
        after = term.scrollback()
    assert "OverflowError" in after, after[-2000:]
    assert CANARY in after, after[-3000:]


def test_an_absurd_retry_after_through_the_proxy_leaves_a_sane_bench(tmp_home: Home) -> None:
    row = bench_through_the_proxy(tmp_home, "1e290")
    reset = row.get("last_error_reset_at")
    assert reset is None or reset < time.time() + 366 * 86400, row      # refused at the edge, or a sane time
    console_shows_a_sane_bench(tmp_home)


def test_negative_control_an_unchecked_edge_stores_the_absurd_reset(tmp_home: Home, tmp_path) -> None:
    script = tmp_path / "unchecked_proxy.py"
    script.write_text(UNCHECKED_PROXY)
    row = bench_through_the_proxy(tmp_home, "1e290", argv=[sys.executable, str(script)])
    assert row["last_error_reset_at"] > 1e280, row
    with pytest.raises(AssertionError, match="⚠ bad"):
        console_shows_a_sane_bench(tmp_home)
