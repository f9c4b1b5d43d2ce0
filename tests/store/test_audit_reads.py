"""The audit uses what the write already has: no file of the home is read again for it.

The transaction reads auth.json once, fresh, under the lock. The audit line's redactor comes
from the caller (the CLI's boundary, the console's HomeSecrets) plus the secrets of the rows
just written (store.ops.write.perform). Counted here with a Python audit hook on every open of
the home's auth.json, config.yaml and .env, with the old path (no redactor: the audit reads
the home for its secrets) as the negative control.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from store.ops import actions, audit
from store.ops.write import StoreChange, perform
from store.paths import Home
from store.redaction import redact
from tests.conftest import make_row, make_store, write_store

_opened: list[str] | None = None


def _hook(event: str, args: tuple) -> None:
    if _opened is not None and event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_hook)


def _opens_during(home: Home, redactor: redact.Redactor | None) -> dict[str, int]:
    global _opened
    _opened = []
    try:
        perform(home, StoreChange(lambda doc, now: actions.reset(doc, "openrouter", None, now)),
                via="test", redactor=redactor)
    finally:
        seen, _opened = _opened, None
    watched = {"auth.json": home.auth, "config.yaml": home.config, ".env": home.env}
    return {name: sum(1 for p in seen if Path(p).name == path.name and Path(p).parent == path.parent)
            for name, path in watched.items()}


def _home(tmp_home: Home) -> Home:
    write_store(tmp_home, make_store({"openrouter": [make_row("a1", token="sk-or-v1-canaryAUDITreads0001")]}))
    tmp_home.config.write_text("model:\n  default: x\n")
    tmp_home.env.write_text("OPENROUTER_API_KEY=sk-or-v1-canaryAUDITenv000002\n")
    return tmp_home


def test_a_write_with_the_callers_redactor_reads_auth_json_once_and_nothing_else(tmp_home: Home) -> None:
    home = _home(tmp_home)
    opens = _opens_during(home, redact.for_home(home))
    assert opens == {"auth.json": 1, "config.yaml": 0, ".env": 0}
    line = audit.tail(home)[-1]
    assert "canary" not in str(line)


def test_negative_control_without_a_redactor_the_audit_reads_the_home_again(tmp_home: Home) -> None:
    home = _home(tmp_home)
    opens = _opens_during(home, None)
    assert opens["auth.json"] > 1 and opens["config.yaml"] >= 1 and opens[".env"] >= 1
