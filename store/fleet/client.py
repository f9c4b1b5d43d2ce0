"""The fleet's Redis/Valkey layer: atomic mark/clear, heartbeats, snapshots, pub/sub.

Every state change goes through one Lua script (``rules.lua``), so it is atomic and
ordered by the server's clock. What Redis holds, and nothing else: fleet fingerprints
(HMACs), statuses, server times, codes, reasons and redacted messages, host names and
per-host request counts.

Keys, under a namespace (default ``hermes-admin:fleet:``)::

    s:<fp>      hash: the key's fleet-wide state (FleetState)
    b:<fp>      zset: surviving benches by observed time   d:<fp>  hash: their details
    h:<fp>      hash: host -> request count (who holds the key)
    fps         set of fingerprints ever published         version  global change counter
    hosts       set of host names                          host:<name>  hash: heartbeat
    hk:<name>   set: fingerprints the host holds           events  pub/sub channel
"""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Any, Iterable, Mapping

import redis

from store.fleet.model import DEAD, FleetSnapshot, FleetState, HostInfo, KeyInfo

DEFAULT_NAMESPACE = "hermes-admin:fleet:"
# Two observations of the same bench that differ by less than this (clock offsets are
# re-measured, floats round) are one bench, so re-publishing is idempotent.
DUP_EPS = 0.25
SOCKET_TIMEOUT = 2.0
MESSAGE_LIMIT = 200

_RULES = resources.files(__package__).joinpath("rules.lua").read_text(encoding="utf-8")


def connect(url: str, *, timeout: float = SOCKET_TIMEOUT) -> redis.Redis:
    """A client for *url* (redis://, rediss:// for TLS, unix://); passwords and TLS
    options in the URL pass through to redis-py. Raises ValueError on a bad URL."""
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                decode_responses=True, health_check_interval=10)


class FleetClient:
    """One host's (or one console's) handle on the fleet."""

    def __init__(self, r: redis.Redis, host: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        self.r = r
        self.host = host
        self.ns = namespace
        self._rules = r.register_script(_RULES)

    # -- key names
    def k(self, *parts: str) -> str:
        return self.ns + ":".join(parts)

    @property
    def channel(self) -> str:
        return self.k("events")

    def _keys(self, fp: str) -> list[str]:
        return [self.k("b", fp), self.k("d", fp), self.k("s", fp), self.k("version"), self.k("fps")]

    # -- updates
    def mark(self, fp: str, *, status: str = "exhausted", observed: float | None = None,
             until: float | None = None, until_in: float | None = None, code: int | None = None,
             reason: str | None = None, message: str | None = None) -> tuple[str, bool]:
        """Bench *fp* fleet-wide (``dead`` never expires). Times are server epoch seconds;
        *observed* defaults to the server's now. Returns (result, changed) where result is
        ``applied``, ``duplicate``, ``stale`` (observed before the last clear) or ``expired``."""
        return self._run("mark", fp, observed, until, until_in, status, code, reason, message)

    def clear(self, fp: str, *, observed: float | None = None) -> tuple[str, bool]:
        """Reset *fp* fleet-wide as of *observed* (server time, default now): every bench
        observed before it is dropped."""
        return self._run("clear", fp, observed, None, None, "", None, None, None)

    def _run(self, op: str, fp: str, observed: float | None, until: float | None,
             until_in: float | None, status: str, code: int | None, reason: str | None,
             message: str | None) -> tuple[str, bool]:
        args = [op, fp, self.host, _num(observed), _num(until), _num(until_in), status,
                "" if code is None else str(code), (reason or "")[:MESSAGE_LIMIT],
                (message or "")[:MESSAGE_LIMIT], self.channel, str(DUP_EPS)]
        result, changed, _version, _now = self._rules(keys=self._keys(fp), args=args)
        return str(result), bool(int(changed))

    # -- reads
    def server_time(self) -> float:
        sec, usec = self.r.time()
        return sec + usec / 1e6

    def clock_offset(self, clock: Any = time.time) -> float:
        """This host's clock minus the server's, from one TIME round trip (midpoint)."""
        t0 = clock()
        server = self.server_time()
        t1 = clock()
        return (t0 + t1) / 2 - server

    def states(self, fps: Iterable[str]) -> dict[str, FleetState]:
        """Fleet state of each fingerprint that has one (one round trip)."""
        fps = list(fps)
        pipe = self.r.pipeline(transaction=False)
        for fp in fps:
            pipe.hgetall(self.k("s", fp))
        return {fp: FleetState.from_hash(fp, h) for fp, h in zip(fps, pipe.execute(), strict=True) if h}

    def version(self) -> int:
        return int(self.r.get(self.k("version")) or 0)

    def heartbeat(self, holders: Mapping[str, int], *, interval: float, started_at: float,
                  seen_version: int, offset: float, disconnected_since: float | None = None) -> None:
        """Say this host is alive, which fingerprints it holds, and their request counts."""
        now = self.server_time()
        hk = self.k("hk", self.host)
        gone = set(self.r.smembers(hk)) - set(holders)
        pipe = self.r.pipeline(transaction=True)
        pipe.sadd(self.k("hosts"), self.host)
        pipe.hset(self.k("host", self.host), mapping={
            "heartbeat_at": f"{now:.6f}", "interval": interval, "started_at": f"{started_at:.6f}",
            "keys": len(holders), "seen_version": seen_version, "offset": f"{offset:.6f}",
            "disconnected_since": "" if disconnected_since is None else f"{disconnected_since:.6f}",
        })
        for fp in gone:
            pipe.hdel(self.k("h", fp), self.host)
            pipe.srem(hk, fp)
        for fp, count in holders.items():
            pipe.hset(self.k("h", fp), self.host, int(count))
            pipe.sadd(hk, fp)
            pipe.sadd(self.k("fps"), fp)
        pipe.execute()

    def snapshot(self) -> FleetSnapshot:
        """Hosts, heartbeats and every fingerprint's fleet-wide state and holders."""
        now = self.server_time()
        version = self.version()
        names = sorted(self.r.smembers(self.k("hosts")))
        fps = sorted(self.r.smembers(self.k("fps")))
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.k("host", name))
        for fp in fps:
            pipe.hgetall(self.k("s", fp))
            pipe.hgetall(self.k("h", fp))
        out = pipe.execute()
        hosts = [_host(name, h) for name, h in zip(names, out[:len(names)], strict=True)]
        rest = out[len(names):]
        keys = [KeyInfo(FleetState.from_hash(fp, rest[2 * i]),
                        {h: int(c) for h, c in sorted(rest[2 * i + 1].items())})
                for i, fp in enumerate(fps)]
        return FleetSnapshot(now, version, hosts, keys)

    def pubsub(self) -> redis.client.PubSub:
        ps = self.r.pubsub(ignore_subscribe_messages=True)
        ps.subscribe(self.channel)
        return ps


def parse_event(data: str) -> FleetState | None:
    """A pub/sub message back into a FleetState (None when it is not one of ours)."""
    try:
        msg = json.loads(data)
        return FleetState.from_hash(str(msg["fp"]), msg)
    except (ValueError, KeyError, TypeError):
        return None


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _host(name: str, h: Mapping[str, Any]) -> HostInfo:
    def f(key: str) -> float | None:
        try:
            return float(h[key]) if h.get(key) not in (None, "") else None
        except ValueError:
            return None

    return HostInfo(name=name, heartbeat_at=f("heartbeat_at"), interval=f("interval") or 2.0,
                    started_at=f("started_at"), keys=int(h.get("keys") or 0),
                    seen_version=int(h.get("seen_version") or 0), offset=f("offset"),
                    disconnected_since=f("disconnected_since"))


__all__ = ["DEAD", "FleetClient", "connect", "parse_event"]
