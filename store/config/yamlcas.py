"""config.yaml's lock-free writers: an edit never replaces a file that changed under it.

Hermes writes config.yaml by temp + rename and takes no lock, so hermes-admin's own
config lock cannot keep it out. Just before its replace, an edit checks that the file is
still the one it read (same inode, same bytes); if not, the whole edit runs again on the
fresh file, at most EDIT_ATTEMPTS times. What remains is the window between that check
and ``os.replace`` (microseconds): a Hermes write landing exactly there is still lost.

Just before that replace, the operator write in progress (if any) is told what is about to
go (:func:`keeping`, :func:`before_replace`): :mod:`store.ops.history` keeps the file as it
was. The hook is installed from above, so the config edits never import the operator layer.
"""

from __future__ import annotations

import contextvars
import functools
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, TypeVar

from store import safeio
from store.errors import ConfigUnreadable, HermesAdminError

T = TypeVar("T")
EDIT_ATTEMPTS = 3

# (path about to be replaced, whether it existed, the document written, the keys it touched)
Keeper = Callable[[Path, bool, Mapping[str, Any], frozenset[str]], None]
_keeper: contextvars.ContextVar[Keeper | None] = contextvars.ContextVar("hermes_admin_config_keeper",
                                                                        default=None)


class ConfigChanged(HermesAdminError):
    """config.yaml changed between our read and our replace (another writer, e.g. Hermes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"{path}: changed by another writer while hermes-admin was editing it, "
                         f"{EDIT_ATTEMPTS} times in a row; nothing was written, try again")


def unchanged_since(path: Path, got: tuple[bytes, os.stat_result] | None) -> bool:
    """True when *path* is still the file read as *got* (same inode and bytes; both missing)."""
    now = safeio.read_checked(path, safeio.CONFIG_CAP, ConfigUnreadable)
    if got is None or now is None:
        return got is None and now is None
    (raw, st), (raw_now, st_now) = got, now
    return (st.st_dev, st.st_ino) == (st_now.st_dev, st_now.st_ino) and raw == raw_now


def retry_on_change(fn: Callable[..., T]) -> Callable[..., T]:
    """Run a whole config edit again (fresh read, same change) when config.yaml changed
    under it; give up with ConfigChanged after EDIT_ATTEMPTS tries."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T:
        for attempt in range(EDIT_ATTEMPTS):
            try:
                return fn(*args, **kwargs)
            except ConfigChanged:
                if attempt == EDIT_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")
    return run


@contextmanager
def keeping(keeper: Keeper) -> Iterator[None]:
    """Around one operator write on this thread: *keeper* hears of every config file an edit
    is about to replace (:func:`before_replace`), before the replace."""
    token = _keeper.set(keeper)
    try:
        yield
    finally:
        _keeper.reset(token)


def before_replace(path: Path, existed: bool, written: Mapping[str, Any], touched: frozenset[str]) -> None:
    """Tell the operator write in progress, if any, that *path* is about to be replaced by
    *written* (the document as PyYAML reads it); a keeper that fails stops the edit."""
    keeper = _keeper.get()
    if keeper is not None:
        keeper(path, existed, written, touched)
