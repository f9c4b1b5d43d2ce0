"""No crash report shows locals or a secret (RELIABILITY 36; issue 19).

A real crash: a console process (a single home, and a root of profiles) raises inside the
running app, from a frame whose local variable holds a secret of the store, with that
secret in the exception's message too. The process prints Textual's crash report on exit;
its stderr is searched for any slice of the canaries. The report still names the exception
and the frame, so it stays worth reporting.

Negative controls: with Textual's own crash report (``App._fatal_error``: a rich traceback
with ``show_locals=True``) the local's value is printed; with our report but the redactor
switched to identity, the message's secret is printed.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from store.paths import Home
from tests.conftest import cli_env, make_row, make_store, write_store

KEY = f"sk-or-v1-CANARYk{secrets.token_hex(16)}"      # key-shaped: caught by shape too
PLAIN = f"plainCANARYp{secrets.token_hex(12)}"        # no key shape: only the home's secrets know it
CANARIES = (KEY, PLAIN)

CRASHING = r'''
import os, sys
from pathlib import Path
from textual.app import App
from store.paths import Home
from store.profiles.root import Root
from store.redaction.redact import Redactor
from tui.app.console import HermesAdminApp
from tui.app.root_console import RootApp

mode, where, secret = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
if mode == "textual-report":
    HermesAdminApp._fatal_error = App._fatal_error        # Textual's own crash report
if mode == "identity-redactor":
    Redactor.redact = lambda self, text: str(text)

base = RootApp if os.environ.get("CRASH_ROOT") else HermesAdminApp


class Crashing(base):
    CSS_PATH = str(Path(sys.modules[HermesAdminApp.__module__].__file__).parent / "app.tcss")

    def on_mount(self) -> None:
        super().on_mount()
        self.set_timer(0.05, self.boom)

    def boom(self) -> None:
        access_token = secret                       # a local of the frame that raises
        row = {"id": "aaaaaa", "access_token": access_token}
        raise KeyError(f"no route for {row['access_token']}")


target = Root(where) if base is RootApp else Home(where)
app = Crashing(target, watch=False, tick=False)
app.run(headless=True, size=(100, 30))
sys.exit(app.return_code or 0)
'''


def plant(tmp_path: Path, root: bool) -> Path:
    where = tmp_path / "home"
    where.mkdir(mode=0o700)
    home = Home(where)
    if root:   # the secrets in a profile of the root, not in the root's own store
        write_store(home, make_store({"openrouter": [make_row("rootrw", token="sk-or-v1-" + "0" * 24)]}))
        home = Home(where / "profiles" / "work")
        home.root.mkdir(parents=True, mode=0o700)
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", token=PLAIN),
                                                 make_row("bbbbbb", priority=1, token=KEY)]}))
    return where


def crash(tmp_path: Path, mode: str, *, root: bool = False, secret: str = PLAIN) -> subprocess.CompletedProcess:
    where = plant(tmp_path, root)
    script = tmp_path / "crashing.py"
    script.write_text(CRASHING)
    env = cli_env(Home(where))
    env.pop("NO_COLOR", None)
    env.update(COLUMNS="100", LINES="30", **({"CRASH_ROOT": "1"} if root else {}))
    return subprocess.run([sys.executable, str(script), mode, str(where), secret], capture_output=True,
                          text=True, env=env, timeout=60, cwd=tmp_path)


def leaks(text: str) -> list[str]:
    return [c[:16] for c in CANARIES if c in text or c.split("CANARY", 1)[1][-10:] in text]


@pytest.mark.parametrize("root", [False, True], ids=["home", "root of profiles"])
@pytest.mark.parametrize("secret", [PLAIN, KEY], ids=["plain secret", "key-shaped secret"])
def test_a_console_crash_prints_no_locals_and_no_secret(tmp_path: Path, root: bool, secret: str) -> None:
    proc = crash(tmp_path, "ours", root=root, secret=secret)
    err = proc.stdout + proc.stderr
    assert proc.returncode == 1, err[-2000:]
    assert "KeyError" in err and "boom" in err and "Traceback" in err, err[-2000:]
    assert "no route for" in err           # the message stays, the secret in it does not
    assert not leaks(err), (leaks(err), err[-2000:])
    assert "access_token =" not in err and "row =" not in err   # no locals table


def test_negative_control_textuals_own_report_prints_the_local(tmp_path: Path) -> None:
    proc = crash(tmp_path, "textual-report")
    err = proc.stdout + proc.stderr
    assert proc.returncode == 1
    assert leaks(err), err[-2000:]


def test_negative_control_without_redaction_the_message_shows_the_secret(tmp_path: Path) -> None:
    proc = crash(tmp_path, "identity-redactor")
    err = proc.stdout + proc.stderr
    assert proc.returncode == 1 and leaks(err), err[-2000:]
    assert "access_token =" not in err    # still no locals: the two mechanisms are separate


def test_the_report_is_escaped(tmp_path: Path) -> None:
    proc = crash(tmp_path, "ours", secret=f"{PLAIN}\x1b]2;PWNED\x07")
    assert "\x1b]2;PWNED" not in proc.stderr and "\\x1b]2;PWNED" in proc.stderr, proc.stderr[-1500:]
    assert json.dumps(proc.stderr)  # text, whatever it held
    assert os.path.exists(tmp_path / "home" / "auth.json")
