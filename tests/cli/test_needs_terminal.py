"""The console (``hermes-admin`` with no verb, and ``demo``) refuses to start off a terminal.

Found in a hostile session: ``nohup hermes-admin`` from a terminal sent standard error (where
Textual draws) to ``nohup.out`` while keys still came from the terminal. The console drew its
frames into the file, unseen, and died at its exit with a traceback (``OSError: [Errno 9]``).
It now says on standard error what is missing, exits 2, and writes nothing, not even the home.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from store.errors import EXIT_BAD_INPUT
from store.paths import Home
from tests.conftest import HERMES_ADMIN, cli_env

CMD = [str(HERMES_ADMIN)] if HERMES_ADMIN.exists() else [sys.executable, "-m", "tui.cli"]
WAIT = 60


def _env(tmp: Path) -> dict[str, str]:
    return cli_env(Home(tmp / "unused"))


def _pty() -> tuple[int, int]:
    leader, follower = os.openpty()
    return leader, follower


@pytest.mark.parametrize("verb", [[], ["demo"]])
def test_standard_input_not_a_terminal(tmp_path: Path, verb: list[str]) -> None:
    home = tmp_path / "home"
    r = subprocess.run([*CMD, *verb, "--home", str(home)], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, env=_env(tmp_path), timeout=WAIT)
    assert r.returncode == EXIT_BAD_INPUT
    assert "the console needs a terminal, and standard input is not one" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not home.exists()         # nothing written


def test_under_nohup_it_says_so_in_nohup_out(tmp_path: Path) -> None:
    """``nohup`` with a terminal on stdin and stdout: it makes stdin unreadable and sends
    standard error to ``nohup.out``."""
    home = tmp_path / "home"
    leader, follower = _pty()
    try:
        r = subprocess.run(["nohup", *CMD, "--home", str(home)], stdin=follower, stdout=follower,
                           stderr=follower, cwd=tmp_path, env=_env(tmp_path), timeout=WAIT)
    finally:
        os.close(follower)
        os.close(leader)
    assert r.returncode == EXIT_BAD_INPUT
    text = (tmp_path / "nohup.out").read_text()
    assert "the console needs a terminal, and standard input is not one" in text
    assert "\x1b[" not in text and "Traceback" not in text      # no frames drawn into the file
    assert not home.exists()


def test_standard_error_to_a_file(tmp_path: Path) -> None:
    """Keys from a terminal, frames to a file (``2>file``): refused, the file says why."""
    home = tmp_path / "home"
    leader, follower = _pty()
    try:
        with open(tmp_path / "err.txt", "w") as err:
            r = subprocess.run([*CMD, "--home", str(home)], stdin=follower, stdout=follower, stderr=err,
                               env=_env(tmp_path), timeout=WAIT)
    finally:
        os.close(follower)
        os.close(leader)
    assert r.returncode == EXIT_BAD_INPUT
    text = (tmp_path / "err.txt").read_text()
    assert "the console needs a terminal, and standard error is not one (it draws there)" in text
    assert "\x1b[" not in text and "Traceback" not in text
    assert not home.exists()


def test_check_passes_with_terminals_and_for_the_web_driver(tmp_path: Path) -> None:
    """The control: with terminals on 0 and 2 (or a web driver named) the check lets it run."""
    probe = "from tui.cli.entry import no_terminal; print(no_terminal())"
    leader, follower = _pty()
    try:
        r = subprocess.run([sys.executable, "-c", probe], stdin=follower, stderr=follower,
                           stdout=subprocess.PIPE, text=True, env=_env(tmp_path), timeout=WAIT)
    finally:
        os.close(follower)
        os.close(leader)
    assert r.stdout.strip() == "None"
    r = subprocess.run([sys.executable, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env={**_env(tmp_path), "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"},
                       timeout=WAIT)
    assert r.stdout.strip() == "None"
    r = subprocess.run([sys.executable, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=_env(tmp_path), timeout=WAIT)
    assert "standard input is not one" in r.stdout


def test_a_verb_needs_no_terminal(tmp_path: Path) -> None:
    r = subprocess.run([*CMD, "--home", str(tmp_path / "home"), "list"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=_env(tmp_path), timeout=WAIT)
    assert "needs a terminal" not in r.stderr
