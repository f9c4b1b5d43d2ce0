"""Output on a stdout that refuses it: what argparse prints itself (``--help``,
``--version``), and a verb's output on a full disk.

Found by a hostile session: argparse drops a failed write of its help without a word, so
``--help`` with stdout closed or on a full disk (``/dev/full``) exited 0 having printed
nothing; and ``--version`` on a full disk was a raw traceback. Now each exits 1 and says on
stderr that stdout took none of it; a reader that left (a closed pipe) is a quiet exit 0, as
for a verb's output; ``/dev/null`` is a success. A verb's output on a full disk was reported as "internal error:
OSError"; it is the stream's fault, and the message now says so (and where a change made is).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from store.errors import EXIT_FAILURE
from store.paths import Home
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store

CMD = [str(HERMES_ADMIN)] if HERMES_ADMIN.exists() else [sys.executable, "-m", "tui.cli"]
ARGS = [("--help",), ("--version",), ("list", "--help"), ("proxy", "--help")]
pytestmark = pytest.mark.timeout(120)


def _run(home: Home, args: tuple[str, ...], stdout: str) -> subprocess.CompletedProcess[str]:
    """hermes-admin with stdout ``closed``, on ``/dev/full``, ``/dev/null``, or a ``pipe`` whose reader left."""
    env = cli_env(home)
    if stdout == "closed":
        return subprocess.run([*CMD, *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env, timeout=60, preexec_fn=lambda: os.close(1))
    if stdout == "pipe":
        r, w = os.pipe()
        os.close(r)
        try:
            return subprocess.run([*CMD, *args], stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.PIPE,
                                  text=True, env=env, timeout=60)
        finally:
            os.close(w)
    with open(stdout, "w") as out:
        return subprocess.run([*CMD, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.PIPE,
                              text=True, env=env, timeout=60)


@pytest.mark.parametrize("args", ARGS, ids=" ".join)
@pytest.mark.parametrize("stdout", ["closed", "/dev/full"])
def test_a_refused_help_or_version_fails_and_says_so(tmp_home: Home, args: tuple[str, ...], stdout: str) -> None:
    if stdout == "/dev/full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    proc = _run(tmp_home, args, stdout)
    assert proc.returncode == EXIT_FAILURE, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("hermes-admin: error: ") and "stdout" in last, proc.stderr


@pytest.mark.parametrize("args", ARGS, ids=" ".join)
@pytest.mark.parametrize("stdout", ["/dev/null", "pipe"])
def test_help_to_a_sink_or_a_reader_that_left_is_a_quiet_success(tmp_home: Home, args: tuple[str, ...],
                                                                 stdout: str) -> None:
    proc = _run(tmp_home, args, stdout)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stderr == "", proc.stderr


@pytest.mark.parametrize("args", [("list",), ("list", "--json"), ("history",), ("usage",),
                                  ("proxy", "status", "--json")], ids=" ".join)
def test_a_verb_on_a_full_disk_blames_stdout_not_itself(tmp_home: Home, args: tuple[str, ...]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa")]}))
    proc = _run(tmp_home, ("--home", str(tmp_home.root), *args), "/dev/full")
    assert proc.returncode == EXIT_FAILURE, (proc.returncode, proc.stderr)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "could not be printed on stdout" in proc.stderr and "No space left" in proc.stderr, proc.stderr
