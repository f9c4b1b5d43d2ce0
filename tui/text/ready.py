"""The line a long-running verb prints once it serves: web's link, the proxy's and the monitor's address.

A server whose ready line cannot be printed serves nobody who could find it (``web``'s
one-time link is the only way in). When stdout refuses the line (a full disk, a closed
pipe, a closed stream), :func:`say_ready` raises :class:`CannotAnnounce`, exit 1, naming
stdout and the OS error; the caller stops what it started before letting it pass.
"""

from __future__ import annotations

import sys
from typing import TextIO

from store.errors import EXIT_FAILURE, HermesAdminError


class CannotAnnounce(HermesAdminError):
    """stdout did not take a server's ready line: the server stops, exit 1."""

    exit_code = EXIT_FAILURE


def say_ready(text: str, what: str, out: TextIO | None = None) -> None:
    """Write *text* and a newline to *out* (default: stdout) and flush it; when that fails,
    :class:`CannotAnnounce` saying *what* could not be printed, on stdout, and why."""
    stream = sys.stdout if out is None else out
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError) as exc:   # ValueError: the stream was closed
        raise CannotAnnounce(f"could not print {what} on stdout ({exc}); stopped") from None
