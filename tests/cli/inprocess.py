"""The CLI run in-process with captured streams, for the generated-input tests: stdin is
never a terminal, argparse's SystemExit is the exit code, and the redactor's registrations
are cleared after each run."""

from __future__ import annotations

import contextlib
import io
import sys

from store.redaction import redact
from tui.cli import entry


class NoTerminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return False


def run_main(argv: list[str], stdin: bytes) -> tuple[int, str, str]:
    """main() in-process with captured streams; argparse's SystemExit is its exit code."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = NoTerminal(io.BytesIO(stdin), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = entry.main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdin = saved
        redact.clear_registered()
    return code, out.getvalue(), err.getvalue()
