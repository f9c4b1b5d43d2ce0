"""What every verb family shares: home resolution, argument helpers, warnings, confirmation,
and the one way a verb writes (store.ops.write.perform).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from store import envfile
from store.config.read import read_config
from store.errors import ConfigUnreadable
from store.model import Doc
from store.ops import write
from store.ops.actions import Outcome
from store.paths import Home, resolve_home
from store.pools.policy import DEFAULT_TTLS, Ttls
from store.redaction.fingerprints import fingerprint
from tui.services.write_feedback import DESTRUCTIVE, undo_hint
from tui.text.format import NULL
from tui.text.shown import shown

AddCommon = Callable[[argparse.ArgumentParser], None]


def home_of(args: argparse.Namespace) -> Home:
    return resolve_home(getattr(args, "home", None))


def warn(message: str) -> None:
    """One line on stderr: a path, pool or value inside *message* cannot break it."""
    sys.stderr.write(f"hermes-admin: warning: {shown(message)}\n")


def load_config(home: Home) -> tuple[Any | None, Ttls]:
    """The parsed config.yaml (None if it cannot be read, with a warning) and its TTLs."""
    try:
        cfg = read_config(home)
    except ConfigUnreadable as exc:
        warn(f"{exc}; using default strategies and TTLs")
        return None, DEFAULT_TTLS
    for w in cfg.warnings:
        warn(f"{home.config}: {w}")
    return cfg, cfg.ttls


def load_env(home: Home) -> dict[str, str]:
    return envfile.read_env(home)


def confirm(question: str, assume_yes: bool) -> bool:
    """Ask on a terminal; scripts (no tty) proceed, as they cannot answer."""
    if assume_yes or not sys.stdin.isatty():
        return True
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def fingerprint_of(key: str) -> str:
    return fingerprint(key) or NULL


def print_notes(outcomes: list[Outcome]) -> None:
    for outcome in outcomes:
        for c in outcome.changes:
            print(f"{outcome.action}: {shown(c.pool)} {shown(c.label)} (id={shown(c.id)})")
        for note in outcome.notes:
            print(f"note: {shown(note)}")


def change_store(args: argparse.Namespace, change: Callable[[Doc, float], Outcome], *,
                 create: bool = False) -> Outcome:
    """One auth.json change through store.ops.write, with a summary on stdout."""
    job = write.StoreChange(change, lock_timeout=args.lock_timeout, create=create)
    written = write.perform(home_of(args), job, via="cli", redactor=args.redactor)
    if written.unchanged is not None:
        print(f"nothing changed: {shown(written.unchanged)} (no audit line written)")
    print_notes(written.outcomes)
    if written.history_id and any(o.action in DESTRUCTIVE for o in written.outcomes):
        print(undo_hint(written.history_id))
    _warn_audit(written)
    return written.value


def edit(args: argparse.Namespace, fn: Callable[[], Any]) -> Any:
    """One edit that takes its own lock (config.yaml, probe) through store.ops.write."""
    written = write.perform(home_of(args), fn, via="cli", redactor=args.redactor)
    for note in getattr(written.value, "notes", ()):
        print(f"note: {shown(note)}")
    _warn_audit(written)
    return written.value


def _warn_audit(written: write.Written[Any]) -> None:
    # The write landed: exit 0, and say that only the audit line is missing.
    if written.audit_error:
        warn(f"the change was written, but {written.audit_error}")
