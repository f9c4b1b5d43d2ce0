"""Messages the watcher worker posts to the app shell (from its thread to the event loop)."""

from __future__ import annotations

from textual.message import Message

from store.pools import events as ev
from store.watch.home import HomeState


class StoreLoaded(Message):
    """A new state of the home, read off the event loop.

    Bursts coalesce: a queued StoreLoaded is replaced by a newer one, which takes
    over the older one's events so the timeline loses nothing.
    """

    def __init__(self, state: HomeState) -> None:
        super().__init__()
        self.state = state
        self.events: list[ev.Event] = list(state.events)

    def can_replace(self, message: Message) -> bool:
        # Textual asks the older queued message whether *message* (newer) supersedes it.
        if isinstance(message, StoreLoaded) and message.state.generation > self.state.generation:
            message.events = self.events + message.events
            return True
        return False


class WatchFailed(Message):
    """The watcher worker hit an unexpected error; it retries after a pause."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
