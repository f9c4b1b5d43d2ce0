"""Keys sent as one burst, as SSH delivers them, in a real terminal at 80x24.

The installed console in tmux: ``/ready``, ``/cool`` and ``:sort``, each written to the pane in
one ``send-keys``, land in the filter box or the command line and write nothing; ``r`` and ``y``
in one burst write nothing (the ``y`` came with the key that opened the question). Controls:
``r``, a look at the screen until the question is on it, then ``y`` resets the row; and the same
bursts with the mechanism off (``HERMES_ADMIN_KEY_ORDER=off``) do write.
"""

from __future__ import annotations

import json
import time

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env, make_row, make_store, write_store
from tui.app.key_order import ENV

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

KEY_A = "sk-or-v1-0123456789abcdefTMUXbur1"
KEY_B = "sk-or-v1-0123456789abcdefTMUXbur2"


def seed(home: Home) -> bytes:
    """Two benched keys: whichever row the cursor is on, a reset there writes."""
    now = time.time()
    bench = dict(last_status="exhausted", last_status_at=now - 60, last_error_code=429,
                 last_error_reason="rate_limit_exceeded", last_error_reset_at=now + 1800)
    write_store(home, make_store({"openrouter": [
        make_row("aaaaaa", label="first", priority=0, token=KEY_A, **bench),
        make_row("bbbbbb", label="second", priority=1, token=KEY_B, **bench),
    ]}))
    return home.auth.read_bytes()


def start(home: Home, *, order: bool = True) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    env = cli_env(home)
    env[ENV] = "on" if order else "off"
    term = tmux.Tmux.start([exe, "--home", str(home.root)], size=(80, 24), env=env)
    term.wait_for("second", timeout=20)
    return term


def reset_rows(home: Home) -> list[str]:
    doc = json.loads(home.auth.read_text(encoding="utf-8"))
    return [r["id"] for r in doc["credential_pool"]["openrouter"] if r.get("last_status") is None]


def audit_count(home: Home) -> int:
    return len(home.audit.read_text(encoding="utf-8").splitlines()) if home.audit.exists() else 0


def wait_written(home: Home, before: bytes, audited: int, timeout: float = 10.0) -> None:
    """Poll (bounded) until auth.json changed and the audit holds *audited* lines."""
    deadline = time.monotonic() + timeout
    while home.auth.read_bytes() == before or audit_count(home) < audited:
        if time.monotonic() > deadline:
            raise AssertionError(f"auth.json not written, or fewer than {audited} audit lines")
        time.sleep(0.02)


def burst(term: tmux.Tmux, text: str) -> None:
    term.type(text)               # one send-keys: the pane gets the bytes in one write


def back_to_table(term: tmux.Tmux) -> None:
    term.send("Escape")
    term.wait_gone("▔", timeout=5)


def test_bursts_land_in_their_input_and_write_nothing(tmp_home: Home) -> None:
    before = seed(tmp_home)
    with start(tmp_home) as term:
        burst(term, "/ready")
        term.wait_for("filter \u201cready\u201d", timeout=10)   # the header names the filter applied
        assert "quota back" not in term.capture()
        back_to_table(term)
        burst(term, "/cool")
        term.wait_for("filter \u201ccool\u201d", timeout=10)
        assert "cooldown by hand" not in term.capture() and "whole pool" not in term.capture()
        back_to_table(term)
        burst(term, ":sort")
        term.wait_for("\u258a  sort", timeout=10)                # typed into the command line
        back_to_table(term)
        # r and y together: the question opens, the y that came with r does nothing.
        burst(term, "ry")
        screen = term.wait_for("ignored", timeout=10)
        assert "quota back" in screen
        assert tmp_home.auth.read_bytes() == before and audit_count(tmp_home) == 0
        # Control: a deliberate y, once the question is on screen, resets the row.
        term.send("y")
        wait_written(tmp_home, before, 1)
        assert len(reset_rows(tmp_home)) == 1


def test_deliberate_r_then_y_resets(tmp_home: Home) -> None:
    before = seed(tmp_home)
    with start(tmp_home) as term:
        term.send("r")
        term.wait_for("quota back", timeout=10)     # the question is on the screen
        term.send("y")
        wait_written(tmp_home, before, 1)
        assert len(reset_rows(tmp_home)) == 1


def test_control_without_the_mechanism_the_bursts_write(tmp_home: Home) -> None:
    before = seed(tmp_home)
    with start(tmp_home, order=False) as term:
        burst(term, "ry")
        wait_written(tmp_home, before, 1)         # the y that came with r confirmed the reset
        assert len(reset_rows(tmp_home)) == 1 and audit_count(tmp_home) == 1


def test_control_without_the_mechanism_a_filter_burst_writes(tmp_home: Home) -> None:
    # A fresh home: a reset of a key already ok writes nothing, so the row must be benched.
    before = seed(tmp_home)
    with start(tmp_home, order=False) as term:
        burst(term, "/ready")                    # r, e, a, d, y reach the table: a reset
        wait_written(tmp_home, before, 1)
        assert len(reset_rows(tmp_home)) == 1


EDITS = [("xyz", "BSpace", "BSpace", "BSpace", "third"), ("tird", "Left", "Left", "Left", "h"),
         ("nope", "C-u", "third")]


def _filter_burst(term: tmux.Tmux, keys: tuple[str, ...]) -> None:
    """``/``, then the letters and edits in one send-keys (the pane gets them in one write)."""
    term.send("/")
    term.wait_for("\u258a\u2594", timeout=10)       # the filter box is open
    term.send(*keys)


def test_edits_in_a_burst_apply_where_they_were_typed(tmp_home: Home) -> None:
    """Backspace, Left and Ctrl+U in a burst edit the text typed before them, not after."""
    seed(tmp_home)
    with start(tmp_home) as term:
        for keys in EDITS:
            _filter_burst(term, keys)
            term.wait_for("filter \u201cthird\u201d", timeout=10)
            back_to_table(term)


def test_control_without_the_mechanism_edits_land_late(tmp_home: Home) -> None:
    """Textual's own dispatch: the Backspaces run after ``third`` (``xyzth``)."""
    seed(tmp_home)
    with start(tmp_home, order=False) as term:
        _filter_burst(term, EDITS[0])
        term.wait_for("filter \u201cxyzth\u201d", timeout=10)
