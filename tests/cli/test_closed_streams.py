"""A stream closed before hermes-admin starts (``>&-``, ``2>&-``; Python gives None for it).

Found by a hostile session: every verb with stdout or stderr closed died in the redaction
boundary with a raw traceback (``AttributeError: 'NoneType' object has no attribute 'flush'``),
exit 120. Now a closed stdout fails the verb with exit 1 and says so on stderr, as other Unix
tools report a write error; a server verb stops as for a full disk (tests/cli/test_ready_line.py);
a closed stderr is nowhere to say anything, so its writes are dropped and the exit code tells.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import EXIT_FAILURE
from store.paths import Home
from store.proxy.observing.stats import read_statuses
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tui.cli import boundary
from tui.cli.entry import main

TOKEN = "sk-or-v1-0123456789abcdefCLOSEDx1"
CMD = [str(HERMES_ADMIN)] if HERMES_ADMIN.exists() else [sys.executable, "-m", "tui.cli"]


def _closing(fd: int):
    return lambda: os.close(fd)


def _run(home: Home, fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    """hermes-admin with *fd* (1 or 2) closed before it starts; the other one captured."""
    out = {"stdout": subprocess.PIPE} if fd == 2 else {"stderr": subprocess.PIPE}
    return subprocess.run([*CMD, "--home", str(home.root), *args], stdin=subprocess.DEVNULL, text=True,
                          env=cli_env(home), timeout=60, preexec_fn=_closing(fd), **out)


@pytest.fixture
def home(tmp_home: Home) -> Home:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", token=TOKEN)]}))
    return tmp_home


@pytest.mark.parametrize("args", [("list",), ("--version",), ("usage",), ("history",)])
def test_a_closed_stdout_fails_the_verb_and_says_so(home: Home, args: tuple[str, ...]) -> None:
    proc = _run(home, 1, *args)
    assert proc.returncode == EXIT_FAILURE, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("hermes-admin: error: stdout is closed"), proc.stderr


def test_a_closed_stderr_leaves_the_verb_its_output_and_its_exit_code(home: Home) -> None:
    ok = _run(home, 2, "list")
    assert ok.returncode == 0 and "openrouter" in ok.stdout and TOKEN not in ok.stdout
    bad = _run(home, 2, "remove", "openrouter", "no-such-row", "--yes")
    assert bad.returncode not in (0, 120), bad.returncode      # the failure still tells, no crash


def test_the_proxy_with_a_closed_stdout_stops_and_says_so(home: Home) -> None:
    proc = _run(home, 1, "proxy", "--port", "0", "--pool", "openrouter", "--drain-timeout", "0")
    assert proc.returncode == EXIT_FAILURE, proc.stderr
    assert "could not print the proxy's address on stdout ([Errno 9] stdout is closed)" in proc.stderr
    assert [s.get("state") for s in read_statuses(home)] == ["stopped"]


@settings(max_examples=25, deadline=None)
@given(verb=st.sampled_from(["list", "usage", "history", "audit", "--version", "--help", "nonsense"]),
       closed=st.sampled_from(["stdout", "stderr", "both"]))
def test_generated_verbs_with_closed_streams_never_crash(tmp_path_factory, verb: str, closed: str) -> None:
    root = tmp_path_factory.mktemp("closed")
    h = Home(root / "home")
    h.root.mkdir()
    write_store(h, make_store({"openrouter": [make_row("aaaaaa", token=TOKEN)]}))
    saved = sys.stdout, sys.stderr
    printed = io.StringIO()
    try:
        sys.stdout = printed           # what the verb prints with stdout open
        try:
            main(["--home", str(h.root), verb])
        except SystemExit:
            pass
        if closed in ("stdout", "both"):
            sys.stdout = None          # what Python sets for a stream closed at start
        if closed in ("stderr", "both"):
            sys.stderr = None
        try:
            rc = main(["--home", str(h.root), verb])
        except SystemExit as exc:      # --help, a usage error: argparse's own exit
            rc = exc.code
    finally:
        sys.stdout, sys.stderr = saved
    assert rc in (0, 1, 2), rc
    if closed != "stderr" and printed.getvalue() and verb != "--help":   # argparse drops its own write errors
        assert rc == EXIT_FAILURE        # output that had nowhere to go is a failure, said on stderr


def test_control_without_the_stand_in_a_closed_stdout_is_a_crash(home: Home, monkeypatch) -> None:
    monkeypatch.setattr(boundary, "ClosedStream", lambda name: None)
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(AttributeError):
        main(["--home", str(home.root), "list"])


def test_a_closed_stdin_reads_as_empty(home: Home) -> None:
    add = _run(home, 0, "add", "openrouter", "--api-key", "-")
    assert add.returncode == 2 and "--api-key: nothing on stdin" in add.stderr, add.stderr
    assert "internal error" not in add.stderr
    gone = _run(home, 0, "remove", "openrouter", "aaaaaa")      # as with < /dev/null: no prompt to ask
    assert gone.returncode == 0 and "internal error" not in gone.stderr, gone.stderr


FILL = """
import os, sys
sys.path.insert(0, {root!r})
from tui.cli import boundary
os.close(0); os.close(1)
if {fill}:
    boundary.fill_closed_fds()
f = os.open({path!r}, os.O_WRONLY | os.O_CREAT, 0o600)
null = os.stat(os.devnull).st_rdev
os.write(2, f"{{f}} {{int(os.fstat(0).st_rdev == null)}}".encode() if {fill} else str(f).encode())
"""


@pytest.mark.parametrize("fill", [True, False])
def test_closed_descriptors_are_filled_so_no_file_takes_their_number(tmp_path, fill: bool) -> None:
    root = str(Path(__file__).resolve().parents[2])
    code = FILL.format(root=root, fill=fill, path=str(tmp_path / "auth.json"))
    out = subprocess.run([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, timeout=60)
    if fill:
        fd, stdin_null = out.stderr.split()
        assert int(fd) > 2 and stdin_null == "1", out.stderr
    else:                        # the control: unfilled, the next file opened is descriptor 0
        assert out.stderr.strip() == "0", out.stderr


STDIN = """
import os, sys
sys.path.insert(0, {root!r})
from tui.cli import boundary
if {fill}:
    boundary.fill_closed_fds()
driver = sys.__stdin__        # what the console's terminal driver reads (Textual: its fileno())
os.write(2, repr((driver is sys.stdin, driver.fileno(), driver.read())).encode() if driver else b"None")
"""


@pytest.mark.parametrize("fill", [True, False])
def test_a_closed_stdin_becomes_an_empty_one_for_the_consoles_terminal_driver(fill: bool) -> None:
    code = STDIN.format(root=str(Path(__file__).resolve().parents[2]), fill=fill)
    out = subprocess.run([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, timeout=60,
                         preexec_fn=_closing(0))
    # filled: fd 0 is /dev/null, read empty; the control: Python's None, what crashed the console
    assert out.stderr == ("(True, 0, '')" if fill else "None"), out.stderr
