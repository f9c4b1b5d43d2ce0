"""The fleet view's link to Redis/Valkey: a feed loop for a thread worker, and its messages.

:meth:`FleetLink.run` runs on a thread worker that the fleet view starts. It subscribes to
the fleet's pub/sub channel and reads a snapshot every ``interval`` seconds, or at once
when an event arrives; it posts :class:`FleetUpdate` (snapshot plus this host's local
labels) or :class:`FleetDown` (since when the fleet is unreachable) and never touches a
widget. Operator actions (:meth:`FleetLink.bench`, :meth:`FleetLink.reset`) are network
calls too, so the view runs them on thread workers as well.

The Redis URL's password never leaves this module except through ``safe_url`` and
``scrub``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from textual.message import Message

from store.paths import Home

if TYPE_CHECKING:
    from store.fleet.model import FleetSnapshot

DEFAULT_NAMESPACE = "hermes-admin:fleet:"   # store.fleet.client.DEFAULT_NAMESPACE, without importing redis
POLL_INTERVAL = 2.0
# get_message blocks at most this long, so a stop request is seen quickly.
STOP_CHECK = 0.25


@dataclass(frozen=True)
class FleetConfig:
    """What ``--fleet URL`` gave the console."""

    url: str
    host: str
    secret: bytes | None = None     # labels fingerprints with local rows; None: fingerprints only
    namespace: str = DEFAULT_NAMESPACE
    interval: float = POLL_INTERVAL


class FleetUpdate(Message):
    """A fresh snapshot of the fleet, and this host's rows by fleet fingerprint."""

    def __init__(self, snapshot: FleetSnapshot, local: dict[str, list[Any]]) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.local = local
        self.received = time.monotonic()

    def can_replace(self, message: Message) -> bool:
        # A queued snapshot is superseded by any newer one.
        return isinstance(message, FleetUpdate)


class FleetDown(Message):
    """Redis is unreachable; *since* is an epoch second, *error* is password-free."""

    def __init__(self, error: str, since: float) -> None:
        super().__init__()
        self.error = error
        self.since = since


class FleetActionDone(Message):
    """A fleet-wide bench or reset finished (*ok* False: *text* says why it failed)."""

    def __init__(self, text: str, ok: bool) -> None:
        super().__init__()
        self.text = text
        self.ok = ok


class FleetLink:
    """The console's handle on the fleet (no network call until used)."""

    def __init__(self, config: FleetConfig, home: Home) -> None:
        # Imported here, not at the top: redis-py and store.fleet add ~125 ms to every
        # console start (python -X importtime), and only a console with --fleet needs them.
        from redis import RedisError

        from store.fleet import api, keys, sync
        from store.fleet.client import FleetClient, connect

        self._api, self._keys, self._sync, self._redis_error = api, keys, sync, RedisError
        self.config = config
        self.home = home
        self.client = FleetClient(connect(config.url), config.host, namespace=config.namespace)

    @property
    def safe_url(self) -> str:
        return str(self._keys.safe_url(self.config.url))

    def short(self, fp: str) -> str:
        return str(self._keys.short(fp))

    def scrub(self, text: str) -> str:
        return str(self._keys.scrub(text, self.config.url))

    # ------------------------------------------------------------ feed (thread)
    def local_keys(self) -> dict[str, list[Any]]:
        """This host's rows by fleet fingerprint; {} without a secret or a readable store."""
        if self.config.secret is None:
            return {}
        try:
            return dict(self._api.local_keys(self.home, self.config.secret))
        except Exception:  # an unreadable store only costs the labels; the dashboard reports it
            return {}

    def down_since(self, now: float) -> float:
        """When the fleet became unreachable: the local sync daemon's word if it has one."""
        state = self._sync.read_state_file(self.home) or {}
        since = state.get("disconnected_since")
        return float(since) if isinstance(since, (int, float)) and since <= now else now

    def run(self, stop: threading.Event, post: Callable[[Message], Any]) -> None:
        """Post updates until *stop* is set. Redis errors become FleetDown, then a retry."""
        pubsub = None
        down: float | None = None
        while not stop.is_set():
            try:
                if pubsub is None:
                    pubsub = self.client.pubsub()
                snap = self.client.snapshot()
                post(FleetUpdate(snap, self.local_keys()))
                down = None
                self._wait_event(pubsub, stop)
            except (self._redis_error, OSError) as exc:
                pubsub = _close(pubsub)
                if down is None:
                    down = self.down_since(time.time())
                post(FleetDown(self.scrub(f"{type(exc).__name__}: {exc}"), down))
                stop.wait(self.config.interval)
        _close(pubsub)

    def _wait_event(self, pubsub: Any, stop: threading.Event) -> None:
        """Return at the next fleet event (after draining a burst) or after one interval."""
        deadline = time.monotonic() + self.config.interval
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if pubsub.get_message(timeout=min(left, STOP_CHECK)) is not None:
                while pubsub.get_message(timeout=0) is not None:
                    pass
                return

    # ------------------------------------------------------------ actions (thread)
    def bench(self, fp: str, seconds: float, reason: str | None = None) -> FleetActionDone:
        what = f"bench {self.short(fp)} fleet-wide"
        return self._act(what, lambda: self._api.bench_fleet_wide(
            self.client, fp, seconds, reason=reason or "manual_cooldown", home=self.home))

    def reset(self, fp: str) -> FleetActionDone:
        what = f"reset {self.short(fp)} fleet-wide"
        return self._act(what, lambda: self._api.reset_fleet_wide(self.client, fp, home=self.home))

    def _act(self, what: str, job: Callable[[], tuple[str, bool]]) -> FleetActionDone:
        try:
            result, changed = job()
        except Exception as exc:  # the one place a fleet action's failure is caught
            return FleetActionDone(f"{what} failed: {self.scrub(f'{type(exc).__name__}: {exc}')}", False)
        note = "" if changed else " (no change)"
        return FleetActionDone(f"{what}: {result}{note}; every host's sync applies it", True)


def _close(pubsub: Any) -> None:
    if pubsub is not None:
        try:
            pubsub.close()
        except Exception:  # closing a broken connection may fail again; nothing to keep
            pass
    return None
