"""The one Redis resubscribe loop, shared by the sync daemon and the console's fleet feed.

:func:`follow_channel` (re)subscribes, waits for a message or an interval, hands on what
came, backs off on errors and stops at once. What a caller does with a batch is its own:
the sync daemon reads the named keys' states from their hashes and applies them, the
console's feed reads a snapshot. A message is only ever a hint that something changed.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

# get_message blocks at most this long, so a stop request is seen within it.
STOP_CHECK = 0.1
# At most this many queued messages are handed on as one batch: a flood is read in bounded
# bites, and the handler runs between them.
BURST = 1000


def follow_channel(subscribe: Callable[[], Any], stop: threading.Event, *,
                   on_batch: Callable[[list[Any]], None],
                   on_error: Callable[[BaseException], None],
                   on_subscribed: Callable[[], None] | None = None,
                   interval: float | None = None,
                   retry: tuple[float, float] = (0.1, 2.0),
                   tick: float = STOP_CHECK, burst: int = BURST) -> None:
    """Hand on a channel's messages until *stop* is set.

    - ``subscribe()`` opens a subscribed ``redis.client.PubSub`` (a network call); then
      ``on_subscribed()`` runs: the caller catches up on what it may have missed.
    - It waits for a message, at most *interval* seconds (None: no limit), in slices of
      *tick*, so a stop is seen at once.
    - A message and what is queued behind it (at most *burst*) go to ``on_batch`` as one
      list of their data; *interval* without a message hands on an empty list.
    - Any error (Redis, the socket, or the caller's handler) goes to ``on_error``; the
      subscription is closed and opened again after a back-off that doubles from
      ``retry[0]`` to ``retry[1]`` and starts over after a good subscription.
    """
    delay = retry[0]
    while not stop.is_set():
        pubsub = None
        try:
            pubsub = subscribe()
            if on_subscribed is not None:
                on_subscribed()
            delay = retry[0]
            while not stop.is_set():
                batch = _wait(pubsub, stop, interval, tick, burst)
                if batch is None:
                    break                       # stopped while waiting
                on_batch(batch)
        except Exception as exc:  # the one place a subscription's failure is caught
            on_error(exc)
            _close(pubsub)
            pubsub = None
            stop.wait(delay)
            delay = min(retry[1], delay * 2)
        finally:
            _close(pubsub)


def _wait(pubsub: Any, stop: threading.Event, interval: float | None, tick: float,
          burst: int) -> list[Any] | None:
    """The next burst of message data; [] after *interval* without one; None when stopped."""
    deadline = None if interval is None else time.monotonic() + interval
    while not stop.is_set():
        left = tick if deadline is None else min(tick, deadline - time.monotonic())
        if left <= 0:
            return []
        first = _data(pubsub.get_message(timeout=left))
        if first is None:
            continue
        batch = [first[0]]
        while len(batch) < burst:
            more = pubsub.get_message(timeout=0)
            if more is None:
                break
            got = _data(more)
            if got is not None:
                batch.append(got[0])
        return batch
    return None


def _data(msg: Any) -> tuple[Any] | None:
    """(data,) of a published message; None for nothing or a subscription reply."""
    if isinstance(msg, dict) and msg.get("type") in ("message", "pmessage"):
        return (msg.get("data"),)
    return None


def _close(pubsub: Any) -> None:
    if pubsub is not None:
        try:
            pubsub.close()
        except Exception:  # closing a broken connection may fail again; nothing to keep
            pass
