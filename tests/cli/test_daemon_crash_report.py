"""A long-running verb's crash report shows no secret and no locals (RELIABILITY 36; issue 19).

``hermes-admin monitor`` is made to raise for real inside its event loop
(``HERMES_ADMIN_TEST_CRASH=monitor``, which only tests set: store.redaction.crash), from a
frame whose local holds a secret of the home, with the secret in the message too. First
with the key the home held at start, then with a secret with no key shape added to the
store while the monitor runs: the CLI's boundary knew only the first, so only the monitor's
own redactor (the homes as last read) can catch the second. The monitor keeps running and
says each crash with its traceback; stderr is searched for the canaries.

Negative control: the same run with the monitor's traceback path switched off
(``crash.loop_handler`` and ``boundary.follow_tracebacks`` made no-ops: asyncio's default
report through the start-time boundary) prints the added secret.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from store.paths import Home
from store.transaction import transaction
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tests.monitor.helpers import BOUND, wait_until

pytestmark = pytest.mark.slow

KEY = f"sk-or-v1-CANARYk{secrets.token_hex(16)}"          # in the store from the start
LATE = f"lateCANARYl{secrets.token_hex(12)}"              # added while it runs; no key shape

UNGUARDED = """
import sys
from store.redaction import crash
from tui.cli import boundary, entry
crash.loop_handler = lambda log, redactor_of: None            # asyncio's default handler
boundary.follow_tracebacks = lambda redactor_of: (lambda: None)
sys.exit(entry.main(sys.argv[1:]))
"""


class Stderr:
    """The process's stderr, read on a thread (waits on it are bounded)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.text = ""
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.text += line


def run_monitor(home: Home, tmp_path: Path, *, guarded: bool) -> str:
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", token=KEY)]}))
    if guarded:
        cmd = [str(HERMES_ADMIN)]
    else:
        (tmp_path / "unguarded.py").write_text(UNGUARDED)
        cmd = [sys.executable, str(tmp_path / "unguarded.py")]
    env = {**cli_env(home), "HERMES_ADMIN_TEST_CRASH": "monitor"}
    proc = subprocess.Popen([*cmd, "monitor", "--home", str(home.root), "--metrics", "none"], text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = Stderr(proc)
    try:
        wait_until(lambda: err.text.count("test crash in monitor") >= 1, what="the first crash report")
        with transaction(home) as doc:   # a secret the CLI's boundary never saw
            doc["credential_pool"]["openrouter"].append(make_row("bbbbbb", priority=1, token=LATE))
        wait_until(lambda: err.text.count("test crash in monitor") >= 2, what="the second crash report")
        assert proc.poll() is None, "a crash in a callback must not end the monitor"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=BOUND)
        err._thread.join(timeout=BOUND)
    return err.text


def leaks(text: str) -> list[str]:
    return [c[:16] for c in (KEY, LATE) if c in text or c.split("CANARY", 1)[1][-10:] in text]


def test_a_monitor_crash_says_what_failed_and_shows_no_secret(tmp_home: Home, tmp_path: Path) -> None:
    text = run_monitor(tmp_home, tmp_path, guarded=True)
    assert "Traceback" in text and "RuntimeError: test crash in monitor holding" in text, text[-2000:]
    assert "_evaluate" in text                      # the frame that failed is named
    assert not leaks(text), (leaks(text), text[-2000:])
    assert "access_token =" not in text


def test_negative_control_without_the_monitors_path_the_late_secret_shows(tmp_home: Home,
                                                                         tmp_path: Path) -> None:
    text = run_monitor(tmp_home, tmp_path, guarded=False)
    assert "test crash in monitor" in text
    assert leaks(text) == [LATE[:16]], (leaks(text), text[-2000:])   # the start-time key is still caught


def test_a_thread_that_dies_and_a_logged_traceback_pass_the_current_redactor(
        capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from store.redaction.redact import Redactor
    from tui.cli import boundary

    known = Redactor()
    saved = threading.excepthook
    undo = boundary.follow_tracebacks(lambda: known)
    try:
        known.add(LATE)        # learnt after the verb started, as a reload would

        def die() -> None:
            access_token = LATE
            raise RuntimeError(f"thread holding {access_token}")

        t = threading.Thread(target=die, name="fleet-sub")
        t.start()
        t.join(timeout=BOUND)
        try:
            raise ValueError(f"handler saw {LATE}")
        except ValueError:
            logging.getLogger("aiohttp.server").exception("Error handling request")
    finally:
        undo()
    err = capsys.readouterr().err
    assert "fleet-sub stopped" in err and "RuntimeError: thread holding" in err
    assert "Error handling request" in err and "ValueError: handler saw" in err
    assert not leaks(err), err
    assert threading.excepthook is saved
