"""The one way anything in hermes-admin writes auth.json.

    with transaction(home) as doc:
        mutate(doc)

takes the lock, reads the file afresh inside it, lets the caller change the
document, writes it atomically and releases the lock. Raising inside the block
writes nothing. A store that cannot be read is never written, and neither is a symlinked
auth.json (:func:`store.authfile.refuse_linked`: refused before anything is created).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from store import authfile
from store.errors import StoreUnreadable
from store.lock import DEFAULT_LOCK_TIMEOUT, locked
from store.model import Doc
from store.paths import Home

T = TypeVar("T")


class _NoChange(Exception):
    pass


def new_document() -> Doc:
    return {"version": authfile.STORE_VERSION, "providers": {}, "credential_pool": {}}


@contextmanager
def transaction(home: Home, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, create: bool = True,
                before_replace: Callable[[Path], None] | None = None) -> Iterator[Doc]:
    """Lock, read fresh, yield the document for mutation, write atomically, unlock.

    The yielded dict is this transaction's own fresh read; keeping it past the
    block and writing it later is exactly the lost-update bug this API exists to
    prevent. Call :func:`skip_write` inside the block to leave the file untouched.
    *before_replace* (an operator write keeping its history copy) is called with
    auth.json's path under the lock, after the change and before the file is replaced.
    """
    authfile.refuse_linked(home)   # before the lock file, the backup or a history copy
    if create:
        authfile.ensure_home(home)
    elif not home.root.is_dir():
        raise StoreUnreadable(home.root, "home directory does not exist")
    with locked(home.lock, lock_timeout):
        snap = authfile.read_store(home)
        doc = snap.doc if snap.doc is not None else new_document()
        try:
            yield doc
        except _NoChange:
            return
        data = authfile.serialize(doc)
        # A writer SIGKILLed mid-write left a temp copy of every key; the next write clears it.
        authfile.sweep_orphans(home)
        if snap.exists:
            authfile.keep_backup(home)
            if before_replace is not None:
                before_replace(home.auth)
        authfile.atomic_write_bytes(home.auth, data)


def skip_write() -> None:
    """Inside a transaction: end it without writing (e.g. the change was a no-op)."""
    raise _NoChange


def apply(home: Home, change: Callable[[Doc], T], *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> T:
    """Run ``change(doc)`` inside one transaction and return its result.

    This is the shape the TUI hands to a thread worker: a function, never a document.
    """
    with transaction(home, lock_timeout=lock_timeout) as doc:
        result = change(doc)
    return result
