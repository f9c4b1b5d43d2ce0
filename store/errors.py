"""Errors the store layer raises, each with the CLI exit code it maps to.

Every message names the file, field or argument at fault and never contains a
secret: callers pass fingerprints, not keys.
"""

from __future__ import annotations

from pathlib import Path

# Exit codes, documented in the README. argparse already uses 2 for usage errors,
# so bad input shares it.
EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_UNREADABLE = 3
EXIT_LOCK_TIMEOUT = 4
EXIT_PROBE = 5


class HermesAdminError(Exception):
    """Base class: an expected failure with an operator-facing message."""

    exit_code = EXIT_FAILURE


class BadInput(HermesAdminError):
    """An argument, field or target the operator gave is wrong."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class StoreUnreadable(HermesAdminError):
    """auth.json (or another store file) exists but cannot be used as a store.

    It is never treated as empty and never written over.
    """

    exit_code = EXIT_UNREADABLE

    def __init__(self, path: Path | str, reason: str, hint: str | None = None) -> None:
        self.path = Path(path)
        self.reason = reason
        self.hint = hint
        msg = f"{self.path}: {reason}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class EncryptedStore(StoreUnreadable):
    """auth.json or .env is Hermes's encrypted envelope (``hermes encrypt``): hermes-admin
    holds no key for it, so it is neither read nor written (exit 3)."""


class LinkedStore(StoreUnreadable):
    """auth.json is a symlink: reads follow it, every write is refused before anything is
    written (no backup, history copy or lock file), exit 3. Hermes replaces the link with a
    file on its next write, so writing through it here would only hide that split."""


class WriteFailed(StoreUnreadable):
    """Writing a store file failed (disk full, read-only, quota): nothing was replaced."""


class ConfigUnreadable(StoreUnreadable):
    """config.yaml exists but does not parse or has the wrong shape."""


class LockTimeout(HermesAdminError):
    """The store lock was not acquired in time (a Hermes process may hold it)."""

    exit_code = EXIT_LOCK_TIMEOUT

    def __init__(self, lock_path: Path | str, timeout: float) -> None:
        self.lock_path = Path(lock_path)
        self.timeout = timeout
        super().__init__(
            f"{self.lock_path}: lock still held by another process after {timeout:g}s "
            "(a Hermes agent refreshing an OAuth token can hold it ~25s; retry, or raise "
            "--lock-timeout)"
        )


def unreadable_value(exc: ValueError) -> str:
    """What a parser's ValueError that is not a syntax error says of the file."""
    if "digits" in str(exc):
        return "holds a number of more than 4,300 digits (no store or setting has one)"
    return f"holds a value that cannot be read ({str(exc)[:120]})"
