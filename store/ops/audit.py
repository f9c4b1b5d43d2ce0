"""Append-only JSON-lines record of operator actions (who, when, what, before, after).

Never holds a secret: the Outcome it records carries status fields only.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from store import safeio
from store.ops.actions import Outcome
from store.paths import Home, profile_name
from store.redaction import redact


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return str(os.getuid())


def record(home: Home, outcome: Outcome, *, via: str, extra: dict[str, Any] | None = None,
           now: float | None = None, redactor: redact.Redactor | None = None) -> dict[str, Any]:
    """Append one line for *outcome*; return the entry written.

    *redactor*: what the writer already knows of the home's secrets; without one, the
    home's files are read for them.
    """
    entry: dict[str, Any] = {
        "time": now if now is not None else time.time(),
        "user": _user(),
        "host": socket.gethostname(),
        "via": via,
        "action": outcome.action,
        "pool": outcome.pool,
        "changes": [asdict(c) for c in outcome.changes],
    }
    # Which profile of its root this home is, so one host's audit lines can be merged.
    entry["profile"] = profile_name(home.root)
    if outcome.notes:
        entry["notes"] = outcome.notes
    if extra:
        entry.update(extra)
    # Every string in the line passes the redactor: reasons, messages, notes and extras
    # can all carry a key a provider echoed or an operator typed in the wrong field.
    r = redactor if redactor is not None else redact.for_home(home)
    entry = r.redact_obj(json.loads(json.dumps(entry, default=str)))
    line = json.dumps(entry, ensure_ascii=False) + "\n"
    fd = safeio.open_checked(home.audit, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                             None)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    return entry


def tail(home: Home, limit: int = 200) -> list[dict[str, Any]]:
    """The latest *limit* entries, oldest first; unparseable lines are skipped."""
    path: Path = home.audit
    try:
        fd = safeio.open_checked(path, os.O_RDONLY, None)
    except FileNotFoundError:
        safeio.refuse_dangling(path)     # a log linked to nothing is said, not an empty log
        return []
    try:
        with os.fdopen(fd, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - safeio.AUDIT_TAIL))
            data = fh.read()
    except OSError:
        return []
    out = []
    for line in data.splitlines()[-limit:]:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # a corrupt or hostile line is skipped
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out
