"""Paths as the console shows them: a path under the operator's ``$HOME`` as ``~/…``.

Shorter at 80 columns, and the same on every machine for the same layout under ``$HOME``
(the snapshot tests rely on it: their homes live in a per-run folder that is ``$HOME``).
Only the display changes: what the console opens, reads and writes keeps the full path,
and a command shown with ``~/…`` still works when pasted into a shell.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# The home folder starts a path: at the start, or after a space, a quote, "(" or "=".
_BEFORE = r"(?<![^\s'\"(=])"


def user_home() -> str | None:
    """``$HOME`` without its trailing slash; None when unset or ``/`` (nothing to shorten)."""
    home = os.environ.get("HOME", "").rstrip("/")
    return home or None


def tilde(text: str | Path) -> str:
    """*text* with every path under ``$HOME`` written ``~/…`` (``$HOME`` itself as ``~``)."""
    text = str(text)
    home = user_home()
    if home is None or home not in text:
        return text
    return re.sub(_BEFORE + re.escape(home) + r"(?=/|$|[\s'\")])", "~", text)


def left_cut(text: str, width: int) -> str:
    """*text* cut to *width* cells from the left (``…/profiles/team-a``): a path's end is
    what tells two homes apart."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1:] if width > 1 else "…"
