"""The console's feed of a root of profiles: one recursive watcher, one message per change.

:func:`follow_root_into` runs on a thread worker and posts :class:`RootLoaded` for every
:class:`store.profiles.live.RootState`; the event loop applies only the newest. One watch
covers the whole root (store.profiles.live: one inotify descriptor, or one watchfiles
notifier), never one per profile.
"""

from __future__ import annotations

import threading
from typing import Callable

from textual.message import Message

from store.profiles.live import RootLoader, RootState, follow_root
from tui.services.messages import WatchFailed


class RootLoaded(Message):
    """Every profile at one moment; a queued one is replaced by a newer one."""

    def __init__(self, state: RootState) -> None:
        super().__init__()
        self.state = state

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RootLoaded) and message.state.generation > self.state.generation


def follow_root_into(loader: RootLoader, stop: threading.Event,
                     post: Callable[[Message], object]) -> None:
    """Post a RootLoaded per change until *stop*; a failure is posted and retried."""
    while not stop.is_set():
        try:
            for state in follow_root(loader.root, stop, clock=loader.clock, loader=loader):
                post(RootLoaded(state))
            return
        except Exception as exc:  # the one place the root watcher's failures surface
            post(WatchFailed(f"{type(exc).__name__}: {exc}"))
            stop.wait(1.0)
