"""``fleet sync``: the per-host daemon that shares cooldowns through Redis/Valkey.

Three threads, one process:

- the **watcher** follows the home (store.watch.home) and, on every bench, reset or dead
  transition the events diff reports, publishes the rows whose status story moved;
- the **subscriber** receives other hosts' changes by pub/sub and applies them at once,
  each batch one ``store.transaction`` under the local auth.lock;
- the **main loop** heartbeats and, every ``interval`` seconds (and on every reconnect),
  reconciles: it publishes any local transition Redis lacks and applies any fleet
  state the file lacks, so a lost message, a partition or a SIGKILL loses nothing.

Echo: a row this daemon wrote from the fleet is remembered by its signature and is not
published back; should it be anyway (after a restart), the rules make it a duplicate.
No network call happens under the lock: fleet states are fetched first, then applied
to the transaction's fresh read.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import redis

from store import authfile
from store.config.envfile import read_env
from store.errors import HermesAdminError
from store.fleet.client import FleetClient, parse_event
from store.fleet.keys import safe_url
from store.fleet.local import LocalRow, apply_states, holders, local_rows, signature
from store.fleet.model import FleetState
from store.model import STATUS_DEAD, STATUS_EXHAUSTED, Doc
from store.ops.actions import Change, Outcome
from store.ops.audit import record
from store.paths import Home
from store.pools import events, policy
from store.transaction import skip_write, transaction
from store.watch.home import follow

STATE_FILE = "fleet-sync.json"
RECONCILE_INTERVAL = 5.0
HEARTBEAT_INTERVAL = 2.0
_TRIGGERS = {events.EXHAUSTED, events.DEAD, events.CLEARED, events.ADDED}
Log = Callable[[str], None]


@dataclass
class SyncStats:
    published: int = 0
    applied: int = 0
    reconciles: int = 0
    disconnects: int = 0
    errors: list[str] = field(default_factory=list)


def read_state_file(home: Home) -> dict[str, Any] | None:
    """The local daemon's last word on its connection (``fleet status`` shows it)."""
    try:
        data = json.loads((home.root / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


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
        self.stop = threading.Event()
        self.stats = SyncStats()
        self.connected = False
        self.disconnected_since: float | None = None   # host clock
        self.last_partition: float | None = None       # host clock, kept after reconnect
        self.offset = 0.0
        self.seen_version = 0
        self.started_at = clock()
        self._mu = threading.RLock()
        self._apply_mu = threading.Lock()
        self._wake = threading.Event()
        self._published: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._applied: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._fps: set[str] = set()
        self._versions: dict[str, int] = {}
        self._rows: list[LocalRow] = []
        self._env: Mapping[str, str] = {}
        self._ttls: policy.Ttls = policy.DEFAULT_TTLS
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ lifecycle
    def run(self) -> None:
        """Run until stopped: Redis being down is a state, never a reason to exit."""
        self._write_state()
        for target, name in ((self._watch_loop, "fleet-watch"), (self._sub_loop, "fleet-sub")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        next_reconcile = 0.0
        while not self.stop.is_set():
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
        for t in self._threads:
            t.join(timeout=5)

    def close(self) -> None:
        self.stop.set()
        self._wake.set()

    # ------------------------------------------------------------------ connection
    def _try_connect(self) -> None:
        try:
            self.offset = self.client.clock_offset(self.clock)
        except redis.RedisError as exc:
            self._lost(exc)
            return
        with self._mu:
            self.connected = True
            self.disconnected_since = None
        self.log("fleet: connected")
        self._write_state()
        self._wake.set()

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
            self._versions.clear()
            self.seen_version = 0
        if why:
            self.log(f"fleet: {why}")

    def _write_state(self) -> None:
        since = self.disconnected_since
        data = {"host": self.client.host, "redis": self.url, "pid": os.getpid(),
                "connected": self.connected, "disconnected_since": since,
                "updated_at": self.clock()}
        try:
            authfile.atomic_write_bytes(self.home.root / STATE_FILE, json.dumps(data).encode(), sync=False)
        except OSError:
            pass  # a missing home is reported by the watcher; the state file is a courtesy

    # ------------------------------------------------------------------ local -> fleet
    def _local(self, doc: Doc | None) -> list[LocalRow]:
        rows = local_rows(doc, self.secret, self._env, self.clock(), self._ttls)
        with self._mu:
            self._fps = {lr.fp for lr in rows}
            self._rows = rows
        return rows

    def publish(self, rows: list[LocalRow]) -> int:
        """Publish each row whose transition Redis has not seen from us; returns how many."""
        n = 0
        for lr in rows:
            key = (lr.pool, lr.id)
            with self._mu:
                if not self.connected or self._published.get(key) == lr.sig or self._applied.get(key) == lr.sig:
                    continue
            try:
                self._publish_one(lr)
            except redis.RedisError as exc:
                self._lost(exc)
                return n
            with self._mu:
                self._published[key] = lr.sig
            n += 1
        self.stats.published += n
        return n

    def _publish_one(self, lr: LocalRow) -> None:
        off = self.offset
        if lr.cleared_at is not None:
            self.client.clear(lr.fp, observed=lr.cleared_at - off)
        observed = None if lr.observed is None else lr.observed - off
        if lr.status == STATUS_DEAD:
            self.client.mark(lr.fp, status="dead", observed=observed, code=lr.code, reason=lr.reason,
                             message=lr.message)
        elif lr.status == STATUS_EXHAUSTED and lr.until is not None and lr.until > self.clock():
            self.client.mark(lr.fp, observed=observed, until=lr.until - off, code=lr.code,
                             reason=lr.reason, message=lr.message)

    # ------------------------------------------------------------------ fleet -> local
    def apply(self, states: Mapping[str, FleetState], *, precheck: Doc | None = None) -> int:
        """Apply fleet *states* to the local rows holding those keys, in one transaction."""
        with self._apply_mu:
            with self._mu:
                # A state older than one already applied for its key (a reconcile's fetch
                # racing a pub/sub message) must not undo the newer one. Checked under the
                # apply lock, so the two threads cannot pass it in one order and write in the other.
                states = {fp: fs for fp, fs in states.items() if fs.version >= self._versions.get(fp, 0)}
                for fp, fs in states.items():
                    self._versions[fp] = fs.version
            if not states:
                return 0
            if precheck is not None and not apply_states(copy.deepcopy(precheck), self.secret, self._env,
                                                         states, self.offset, self.clock(), self._ttls):
                return 0
            changed: list[Any] = []
            try:
                with transaction(self.home, lock_timeout=self.lock_timeout, create=False) as doc:
                    changed = apply_states(doc, self.secret, self._env, states, self.offset,
                                           self.clock(), self._ttls)
                    if not changed:
                        skip_write()
                    with self._mu:
                        for pool, row, _action in changed:
                            self._applied[(pool, str(row.get("id") or ""))] = signature(row)
            except HermesAdminError as exc:
                self._error(str(exc))
                return 0
        if changed:
            self.stats.applied += len(changed)
            self._audit(changed, states)
            for pool, row, action in changed:
                self.log(f"fleet: applied {action} to {pool} {row.get('label') or row.get('id')}"
                         f" (status {row.get('last_status') or 'ok'})")
        return len(changed)

    def _audit(self, changed: list[Any], states: Mapping[str, FleetState]) -> None:
        by_pool: dict[str, Outcome] = {}
        for pool, row, action in changed:
            out = by_pool.setdefault(pool, Outcome(f"fleet-{action}", pool))
            out.changes.append(Change(pool, str(row.get("id")), str(row.get("label") or ""), {},
                                      {"last_status": row.get("last_status"),
                                       "last_error_reset_at": row.get("last_error_reset_at"),
                                       "status_cleared_at": row.get("status_cleared_at")}))
        for out in by_pool.values():
            origins = sorted({s.host or s.cleared_by or "?" for s in states.values()})
            try:
                record(self.home, out, via="fleet-sync", extra={"fleet_origin": origins})
            except OSError as exc:
                self._error(f"audit: {exc}")

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
            self.offset = self.client.clock_offset(self.clock)
            version = self.client.version()
            if version < self.seen_version:
                self._forget("the fleet's version went back: Redis lost its data; publishing again")
            rows = self._local(snap.doc)
            self.publish(rows)
            if not self.connected:
                return
            states = self.client.states({lr.fp for lr in rows})
        except redis.RedisError as exc:
            self._lost(exc)
            return
        self.apply(states, precheck=snap.doc)
        with self._mu:
            self.seen_version = max(self.seen_version, version)
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
        except redis.RedisError as exc:
            self._lost(exc)

    def _watch_loop(self) -> None:
        for st in follow(self.home, self.stop, clock=self.clock):
            self._env = dict(st.env)
            self._ttls = st.ttls
            if st.store_error is not None:
                continue   # never publish from a stale view of an unreadable store
            if any(ev.kind in _TRIGGERS for ev in st.events):
                self.publish(self._local(st.doc))
                if any(ev.kind == events.ADDED for ev in st.events):
                    self._wake.set()   # a new row may hold a key benched fleet-wide

    def _sub_loop(self) -> None:
        while not self.stop.is_set():
            if not self.connected:
                self.stop.wait(0.1)
                continue
            ps = None
            try:
                ps = self.client.pubsub()
                self._wake.set()   # messages sent before the subscription: reconcile
                while not self.stop.is_set() and self.connected:
                    msg = ps.get_message(timeout=0.5)
                    if msg and msg.get("type") == "message":
                        self._on_message(msg.get("data"))
            except redis.RedisError as exc:
                self._lost(exc)
            finally:
                if ps is not None:
                    try:
                        ps.close()
                    except Exception:
                        pass

    def _on_message(self, data: Any) -> None:
        fs = parse_event(data) if isinstance(data, str) else None
        if fs is None:
            return
        with self._mu:
            self.seen_version = max(self.seen_version, fs.version)
            mine = fs.fp in self._fps
        if mine:
            self.apply({fs.fp: fs})

    def _error(self, message: str) -> None:
        self.stats.errors.append(message)
        del self.stats.errors[:-20]
        self.log(f"fleet: {message}")
