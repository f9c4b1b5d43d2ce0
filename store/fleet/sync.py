"""``fleet sync``: the per-host daemon that shares cooldowns through Redis/Valkey.

Three threads, one process:

- the **watcher** follows the home (store.watch.home) and, on every bench, reset or dead
  transition the events diff reports, publishes the rows whose status story moved;
- the **subscriber** (``store.fleet.channel.follow_channel``) takes other hosts' pub/sub
  messages as *hints*: it reads the named keys' states from their hashes, checked
  (``store.fleet.inbound``), and applies those at once, each batch one
  ``store.transaction`` under the local auth.lock. A message's own fields are never applied;
- the **main loop** heartbeats and, every ``interval`` seconds (and on every reconnect),
  reconciles: it publishes any local transition Redis lacks and applies any fleet
  state the file lacks, so a lost message, a partition or a SIGKILL loses nothing.

Data from Redis that is not what it should be (a forged hash, a key of another type, a
non-finite time) is a notice (``SyncDaemon.notices``: logged, counted), never a crash and
never a write. What goes to Redis passes the client's ``outbound`` (the home's secrets as
fleet fingerprints). Echo: a row this daemon wrote from the fleet is remembered by its
signature and is not published back; should it be anyway (after a restart), the rules
make it a duplicate. No network call happens under the lock: fleet states are fetched
first, then applied to the transaction's fresh read.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import redis

from store import authfile, outside
from store.envfile import read_env
from store.errors import HermesAdminError
from store.fleet import inbound
from store.fleet.applier import FleetApplier
from store.fleet.channel import follow_channel
from store.fleet.client import FleetClient
from store.fleet.keys import safe_url
from store.fleet.local import LocalRow, holders, local_rows, rows_by_pool
from store.fleet.model import FleetState
from store.fleet.notices import Notices
from store.fleet.outbound import Outbound
from store.fleet.state_file import write_state_file
from store.model import STATUS_DEAD, STATUS_EXHAUSTED, Doc, row_secrets
from store.paths import Home
from store.pools import events, policy
from store.redaction.redact import HomeSecrets
from store.watch.home import follow

RECONCILE_INTERVAL = 5.0
HEARTBEAT_INTERVAL = 2.0
_TRIGGERS = {events.EXHAUSTED, events.DEAD, events.CLEARED, events.ADDED}
# A lost connection, as opposed to a reply the server gave (a data problem: a notice).
_LOST = (redis.ConnectionError, redis.TimeoutError, OSError)
_REDIS = (redis.RedisError, OSError)
Log = Callable[[str], None]


@dataclass
class SyncStats:
    published: int = 0
    applied: int = 0
    reconciles: int = 0
    disconnects: int = 0
    internal: int = 0          # unexpected exceptions caught by a loop (a bug: tests expect 0)
    errors: list[str] = field(default_factory=list)


class SyncDaemon:
    """One host's sync. ``run()`` blocks until :meth:`close` (or ``stop`` is set)."""

    def __init__(self, home: Home, client: FleetClient, secret: bytes, *, url: str = "",
                 interval: float = RECONCILE_INTERVAL, heartbeat: float = HEARTBEAT_INTERVAL,
                 lock_timeout: float = 30.0, clock: Callable[[], float] = time.time,
                 log: Log | None = None) -> None:
        self.home = home
        self.client = client
        self.secret = secret
        self.url = safe_url(url) if url else ""
        self.interval = interval
        self.heartbeat_interval = heartbeat
        self.lock_timeout = lock_timeout
        self.clock = clock
        self.log = log or (lambda _msg: None)
        self.notices = Notices(self.log)
        client.notice = self.notices
        self.stop = threading.Event()
        self.stats = SyncStats()
        self.connected = False
        self.disconnected_since: float | None = None   # host clock
        self.last_partition: float | None = None       # host clock, kept after reconnect
        self.offset = 0.0
        self.seen_version = 0
        self.started_at = clock()
        self._mu = threading.RLock()
        self._wake = threading.Event()
        self._published: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._fps: set[str] = set()
        self._rows: list[LocalRow] = []
        self._doc: Doc | None = None
        self._env: Mapping[str, str] = {}
        self._ttls: policy.Ttls = policy.DEFAULT_TTLS
        self._known = HomeSecrets()   # the home's secrets from what the watcher read, kept walked
        self._threads: list[threading.Thread] = []
        self.applier = FleetApplier(home, secret, lock_timeout=lock_timeout, clock=clock, log=self.log,
                                    error=self._error)

    # ------------------------------------------------------------------ lifecycle
    def run(self) -> None:
        """Run until stopped: Redis being down is a state, never a reason to exit, and no
        value from Redis ends a loop (an unexpected exception is counted and said)."""
        self._write_state()
        for target, name in ((self._watch_loop, "fleet-watch"), (self._sub_loop, "fleet-sub")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        next_reconcile = 0.0
        while not self.stop.is_set():
            try:
                next_reconcile = self._step(next_reconcile)
            except Exception as exc:  # the main loop's last word: said, counted, carried on
                self._internal("main loop", exc)
                self.stop.wait(0.5)
        for t in self._threads:
            t.join(timeout=5)

    def _step(self, next_reconcile: float) -> float:
        now = time.monotonic()
        if not self.connected:
            self._try_connect()
        if self.connected and (now >= next_reconcile or self._wake.is_set()):
            self._wake.clear()
            self.reconcile()
            next_reconcile = time.monotonic() + self.interval
        elif self.connected:
            self._heartbeat()
        self._wake.wait(min(self.heartbeat_interval, max(0.05, next_reconcile - time.monotonic()))
                        if self.connected else 0.25)
        return next_reconcile

    def close(self) -> None:
        self.stop.set()
        self._wake.set()

    def alive(self) -> bool:
        """True while the watcher and the subscriber threads run (the main loop is ``run``)."""
        return bool(self._threads) and all(t.is_alive() for t in self._threads)

    # ------------------------------------------------------------------ connection
    def _try_connect(self) -> None:
        try:
            self.offset = self._offset()
        except _REDIS as exc:
            self._failed(exc)
            return
        with self._mu:
            self.connected = True
            self.disconnected_since = None
        self.log("fleet: connected")
        self._write_state()
        self._wake.set()

    def _offset(self) -> float:
        """This host's clock minus the server's; the last good one when the server's
        TIME is not a time (a clock a year off would move every bench by a year)."""
        got = outside.number(self.client.clock_offset(self.clock), "clock offset", lo=-outside.MAX_AHEAD,
                             hi=outside.MAX_AHEAD, notice=self.notices)
        return self.offset if got is None else got

    def _failed(self, exc: BaseException) -> None:
        """A Redis call failed: a lost connection is a partition; any other error reply
        (a refused command, an ACL) is a notice, and the connection stands."""
        if isinstance(exc, _LOST):
            self._lost(exc)
        else:
            self.notices(f"the server refused a command ({type(exc).__name__})")

    def _lost(self, exc: BaseException) -> None:
        with self._mu:
            was = self.connected or self.disconnected_since is None
            self.connected = False
            if self.disconnected_since is None:
                self.disconnected_since = self.clock()
                self.last_partition = self.disconnected_since
        self._forget(None)
        if was:
            self.stats.disconnects += 1
            self.log(f"fleet: disconnected ({type(exc).__name__}); working on the local file")
            self._write_state()

    def _forget(self, why: str | None) -> None:
        """Publish everything again, and accept any version: after a partition Redis may
        have restarted empty. The rules make the repeats no-ops."""
        with self._mu:
            self._published.clear()
            self.seen_version = 0
        self.applier.forget_versions()
        if why:
            self.log(f"fleet: {why}")

    def _write_state(self) -> None:
        since = self.disconnected_since
        data = {"host": self.client.host, "redis": self.url, "pid": os.getpid(),
                "connected": self.connected, "disconnected_since": since,
                "updated_at": self.clock()}
        try:
            write_state_file(self.home, data)
        except HermesAdminError as exc:
            self._error(f"state file: {exc}")
        except OSError:
            pass  # a missing home is reported by the watcher; the state file is a courtesy

    # ------------------------------------------------------------------ local -> fleet
    def _local(self, doc: Doc | None) -> list[LocalRow]:
        rows = local_rows(doc, self.secret, self._env, self.clock(), self._ttls)
        with self._mu:
            self._fps = {lr.fp for lr in rows}
            self._rows = rows
            self._doc = doc
        return rows

    def publish(self, rows: list[LocalRow]) -> int:
        """Publish each row whose transition Redis has not seen from us; returns how many."""
        with self._mu:
            pending = [lr for lr in rows if self.connected and self._published.get((lr.pool, lr.id)) != lr.sig
                       and not self.applier.wrote((lr.pool, lr.id), lr.sig)]
            doc, env = self._doc, self._env
        if not pending:
            return 0
        # The home's secrets as they are now, plus those of the rows being published: any
        # of them in a reason or message goes out as its fleet fingerprint. From the store
        # just read (not read again); the kept walk is one thread's at a time.
        with self._mu:
            self.client.outbound = Outbound.for_home(self.home, self.secret, doc=doc, env=env, known=self._known,
                                                     extra=[s for _pool, rws in rows_by_pool(doc) for r in rws
                                                            for s in row_secrets(r, env)])
        n = 0
        for lr in pending:
            try:
                self._publish_one(lr)
            except _REDIS as exc:
                self._failed(exc)
                break
            with self._mu:
                self._published[(lr.pool, lr.id)] = lr.sig
            n += 1
        self.stats.published += n
        return n

    def _publish_one(self, lr: LocalRow) -> None:
        off, now = self.offset, self.clock()
        where = f"{lr.pool} {lr.id}"
        # The local file is outside data too (a proxy or agent may have stored an absurd
        # time): checked before it becomes every host's cooldown.
        cleared = _when(lr.cleared_at, f"{where} status_cleared_at", now, inbound.NOW_SLACK, self.notices)
        observed = _when(lr.observed, f"{where} last_status_at", now, inbound.NOW_SLACK, self.notices)
        if cleared is not None:
            self.client.clear(lr.fp, observed=cleared - off)
        observed = None if observed is None else observed - off
        if lr.status == STATUS_DEAD:
            self.client.mark(lr.fp, status="dead", observed=observed, code=lr.code, reason=lr.reason,
                             message=lr.message)
        elif lr.status == STATUS_EXHAUSTED and lr.until is not None and lr.until > now:
            until = _when(lr.until, f"{where} reset time", now, outside.MAX_AHEAD, self.notices)
            if until is not None:
                self.client.mark(lr.fp, observed=observed, until=until - off, code=lr.code,
                                 reason=lr.reason, message=lr.message)

    # ------------------------------------------------------------------ fleet -> local
    def apply(self, states: Mapping[str, FleetState], *, precheck: Doc | None = None,
              newer_only: bool = False) -> int:
        """Apply the checked fleet *states* to this host's file (``FleetApplier.apply``)."""
        n = self.applier.apply(states, env=self._env, ttls=self._ttls, offset=self.offset,
                               precheck=precheck, newer_only=newer_only)
        self.stats.applied += n
        return n

    # ------------------------------------------------------------------ loops
    def reconcile(self) -> None:
        """Publish what Redis lacks, apply what the file lacks, heartbeat."""
        try:
            snap = authfile.read_store(self.home)
        except HermesAdminError as exc:
            self._error(str(exc))
            self._heartbeat()
            return
        try:
            self._env = read_env(self.home)
            self.offset = self._offset()
            version = self.client.version()
            if version is not None and version < self.seen_version:
                self._forget("the fleet's version went back: Redis lost its data; publishing again")
            rows = self._local(snap.doc)
            self.publish(rows)
            if not self.connected:
                return
            states = self.client.states({lr.fp for lr in rows})
        except _REDIS as exc:
            self._failed(exc)
            return
        self.apply(states, precheck=snap.doc)
        with self._mu:
            self.seen_version = max(self.seen_version, version or 0)
        self.stats.reconciles += 1
        self._heartbeat(rows)

    def _heartbeat(self, rows: list[LocalRow] | None = None) -> None:
        if rows is None:
            rows = self._rows   # the last read (watcher or reconcile): a heartbeat reads no file
        part = self.last_partition
        try:
            self.client.heartbeat(holders(rows), interval=self.heartbeat_interval,
                                  started_at=self.started_at - self.offset, seen_version=self.seen_version,
                                  offset=self.offset,
                                  disconnected_since=None if part is None else part - self.offset)
        except _REDIS as exc:
            self._failed(exc)

    def _watch_loop(self) -> None:
        for st in follow(self.home, self.stop, clock=self.clock):
            try:
                self._on_home(st)
            except Exception as exc:  # the watcher's last word: said, counted, carried on
                self._internal("watcher", exc)

    def _on_home(self, st: Any) -> None:
        self._env = dict(st.env)
        self._ttls = st.ttls
        if st.store_error is not None:
            return   # never publish from a stale view of an unreadable store
        if any(ev.kind in _TRIGGERS for ev in st.events):
            self.publish(self._local(st.doc))
            if any(ev.kind == events.ADDED for ev in st.events):
                self._wake.set()   # a new row may hold a key benched fleet-wide

    def _sub_loop(self) -> None:
        # On every (re)subscription the main loop reconciles: messages sent before it are
        # not lost, only late.
        follow_channel(self.client.pubsub, self.stop, on_batch=self._on_hints, on_error=self._sub_error,
                       on_subscribed=self._wake.set, retry=(0.1, 1.0))

    def _sub_error(self, exc: BaseException) -> None:
        if isinstance(exc, _REDIS):
            self._failed(exc)
        else:
            self._internal("subscriber", exc)

    def _on_hints(self, batch: list[Any]) -> None:
        """A burst of pub/sub messages: the keys they name (ours only) are read from their
        hashes, checked, and applied; what the messages say is never used."""
        named = {fp for data in batch if (fp := inbound.hint(data, notice=self.notices)) is not None}
        with self._mu:
            mine = sorted(named & self._fps)
        if not mine:
            return
        states = self.client.states(mine)   # a lost connection: on to _sub_error, then resubscribe
        with self._mu:
            self.seen_version = max([self.seen_version, *(fs.version for fs in states.values() if fs.usable)])
        self.apply(states, newer_only=True)

    def _error(self, message: str) -> None:
        self.stats.errors.append(message)
        del self.stats.errors[:-20]
        self.log(f"fleet: {message}")

    def _internal(self, where: str, exc: BaseException) -> None:
        # The type only: an exception's text may quote a value from outside.
        self.stats.internal += 1
        self._error(f"internal error in the {where} ({type(exc).__name__}); carrying on")


def _when(value: float | None, what: str, now: float, ahead: float, notice: Callable[[str], None]) -> float | None:
    return None if value is None else outside.epoch(value, what, now=now, ahead=ahead, notice=notice)

