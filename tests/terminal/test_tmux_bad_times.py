"""A bad time in a real terminal (issue 19): the installed console over an absurd reset time.

The store holds what an older proxy made of a provider's ``Retry-After: 1e290``:
``last_error_reset_at: 1e+287`` on a row whose key is a canary. The installed
``hermes-admin`` starts in tmux, shows the row (wide layout) with its countdown and reset
marked ``⚠ bad``/``⚠ bad time``, the detail view names the data error, and no canary is on
the screen at any point, nor after the console quits.

Negative control: the same console with the time check and the crash report as they were
(``datetime.fromtimestamp`` unguarded, Textual's own report with its locals) dies on the
same store, and its report on the terminal shows the canary.

The second part of this scenario, the absurd ``Retry-After`` arriving through the proxy,
is one more step: :func:`bench_through_the_proxy` is the place for it once the proxy's
edge is in (it must leave the store as :func:`store_with_absurd_reset` does, or better,
with the value refused at the edge), then :func:`console_shows_the_reset_as_a_data_error`.
"""

from __future__ import annotations

import secrets
import sys

import pytest

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env, make_row, make_store, write_store

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


def bench_through_the_proxy(home: Home, retry_after: str) -> None:
    """Part two, once the proxy's checked edge is merged: start the proxy on *home* in front
    of a scripted upstream (tests/proxy/upstream.py on that branch) that answers 429 with
    ``Retry-After: <retry_after>``, send one request, stop the proxy. The test is then
    ``bench_through_the_proxy(home, "1e290")`` followed by
    :func:`console_shows_the_reset_as_a_data_error` (whatever the edge stored, or refused)."""
    raise NotImplementedError("joins the proxy's edge tests when that branch is merged")


def whole_pane(term: tmux.Tmux) -> str:
    """The pane with its scroll-back: a crash report may be longer than the screen."""
    return term._tmux("capture-pane", "-p", "-S", "-", "-t", term.session)


def console_shows_the_reset_as_a_data_error(home: Home) -> str:
    """Start the installed console, check the row, its detail, and quit; every screen seen."""
    seen = []
    with tmux.Tmux.start([exe(), "--home", str(home.root)], size=(220, 30), env=cli_env(home)) as term:
        seen.append(term.wait_for("benched-key", timeout=30))
        term.send("w")
        wide = term.wait_for("resets at", timeout=10)
        seen.append(wide)
        line = next(x for x in wide.splitlines() if "benched-key" in x)
        assert "◐ cooling" in line and "⚠ bad" in line and "⚠ bad time" in line, wide
        term.send("Enter")                       # the cursor starts on the first row: benched-key
        detail = term.wait_for("data error", timeout=10)
        seen.append(detail)
        assert "last_error_reset_at 1e+287" in detail and "9999-12-30" in detail, detail
        term.send("Escape")
        seen.append(term.wait_for("spare", timeout=10))
        term.send("q")
        term.wait_until(lambda _s: term.pane_dead(), timeout=15, what="the console to quit")
        after = whole_pane(term)
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
        after = whole_pane(term)
    assert "OverflowError" in after, after[-2000:]
    assert CANARY in after, after[-3000:]
