"""The fleet view's link to Redis/Valkey: a feed loop for a thread worker, and its messages.

:meth:`FleetLink.run` runs on a thread worker that the fleet view starts. Through the
fleet's one resubscribe loop (``store.fleet.channel.follow_channel``) it reads a snapshot
on subscribing, every ``interval`` seconds, and at once when an event arrives (the event
is only a hint: the snapshot is read and checked); it posts :class:`FleetUpdate`
(snapshot plus this host's local labels) or :class:`FleetDown` (since when the fleet is
unreachable, or that its answer could not be read) and never touches a widget.
Operator actions (:meth:`FleetLink.bench`, :meth:`FleetLink.reset`) are network calls
too, so the view runs them on thread workers as well.

The Redis URL's password never leaves this module except through ``safe_url`` and
``scrub``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from textual.message import Message

from store.fleet.channel import follow_channel
from store.paths import Home

if TYPE_CHECKING:
    from store.fleet.model import FleetSnapshot

DEFAULT_NAMESPACE = "hermes-admin:fleet:"   # store.fleet.client.DEFAULT_NAMESPACE, without importing redis
POLL_INTERVAL = 2.0


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
    """Redis is unreachable (or, with *reachable*, answered with something that could not
    be read); *since* is an epoch second, *error* is password-free."""

    def __init__(self, error: str, since: float, *, reachable: bool = False) -> None:
        super().__init__()
        self.error = error
        self.since = since
        self.reachable = reachable


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
        import redis

        from store.fleet import api, keys, state_file
        from store.fleet.client import FleetClient, connect

        self._api, self._keys, self._state_file = api, keys, state_file
        self._redis_error = redis.RedisError
        self._connection_errors = (redis.ConnectionError, redis.TimeoutError)
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
        state = self._state_file.read_state_file(self.home, now) or {}
        since = state.get("disconnected_since")   # checked: a finite epoch, or None
        return float(since) if isinstance(since, (int, float)) and since <= now else now

    def run(self, stop: threading.Event, post: Callable[[Message], Any]) -> None:
        """Post updates until *stop* is set. An error becomes FleetDown, then a retry."""
        down: list[float] = []           # since when, while it lasts

        def refresh(_batch: object = ()) -> None:
            post(FleetUpdate(self.client.snapshot(), self.local_keys()))
            down.clear()

        def failed(exc: BaseException) -> None:
            if not down:
                down.append(self.down_since(time.time()))
            lost = isinstance(exc, (self._connection_errors, OSError))
            # Anything but a Redis error is ours to fix: named by its type only, since its
            # text may quote a value read from Redis.
            said = f"{type(exc).__name__}: {exc}" if isinstance(exc, self._redis_error) else (
                f"could not read the fleet's answer ({type(exc).__name__})")
            post(FleetDown(self.scrub(said), down[0], reachable=not lost))

        interval = self.config.interval
        follow_channel(self.client.pubsub, stop, on_subscribed=refresh, on_batch=refresh, on_error=failed,
                       interval=interval, retry=(min(0.5, interval), interval))

    # ------------------------------------------------------------ actions (thread)
    def bench(self, fp: str, seconds: float, reason: str | None = None) -> FleetActionDone:
        what = f"bench {self.short(fp)} fleet-wide"
        return self._act(what, lambda: self._api.bench_fleet_wide(
            self.client, fp, seconds, reason=reason or "manual_cooldown", home=self.home,
            fleet_secret=self.config.secret))

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

