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

import math
import time
from importlib import resources
from typing import Any, Callable, Iterable, Mapping

import redis

from store import outside
from store.fleet import inbound
from store.fleet.keys import short
from store.fleet.model import DEAD, FleetSnapshot, FleetState, KeyInfo
from store.fleet.outbound import TEXT_LIMIT, Outbound

DEFAULT_NAMESPACE = "hermes-admin:fleet:"
# Two observations of the same bench that differ by less than this (clock offsets are
# re-measured, floats round) are one bench, so re-publishing is idempotent.
DUP_EPS = 0.25
SOCKET_TIMEOUT = 2.0
MESSAGE_LIMIT = TEXT_LIMIT
Notice = Callable[[str], None]

_RULES = resources.files(__package__).joinpath("rules.lua").read_text(encoding="utf-8")


def connect(url: str, *, timeout: float = SOCKET_TIMEOUT) -> redis.Redis:
    """A client for *url* (redis://, rediss:// for TLS, unix://); passwords and TLS
    options in the URL pass through to redis-py. Raises ValueError on a bad URL. Bytes that
    are not UTF-8 (anyone who reaches the server can write them) decode with U+FFFD, so
    they meet the checks at the edge like any other bad value, never a decode error."""
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                decode_responses=True, encoding_errors="replace", health_check_interval=10)


def _quiet(_msg: str) -> None:
    return None


def _reply(exc: BaseException) -> str:
    """A Redis error reply, short (a script's error names its line, never our arguments)."""
    line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return line[:120]


class FleetClient:
    """One host's (or one console's) handle on the fleet.

    Reads come back checked (``store.fleet.inbound``): a key of the wrong type or a value
    that is not what it should be is a *notice* (``notice``, a plain attribute the sync
    daemon sets), never an exception. Only a lost connection raises (``redis.RedisError``).
    Every text sent goes through ``outbound`` (the home's secrets as fleet fingerprints).
    """

    def __init__(self, r: redis.Redis, host: str, *, namespace: str = DEFAULT_NAMESPACE,
                 notice: Notice | None = None) -> None:
        self.r = r
        self.host = host
        self.ns = namespace
        self.notice: Notice = notice or _quiet
        self.outbound = Outbound()   # key shapes only, until a home's secrets are given
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
        ``applied``, ``duplicate``, ``stale`` (observed before the last clear), ``expired``,
        ``invalid`` (an until more than a year ahead) or ``refused`` (a notice says why)."""
        return self._run("mark", fp, observed, until, until_in, status, code, reason, message)

    def clear(self, fp: str, *, observed: float | None = None) -> tuple[str, bool]:
        """Reset *fp* fleet-wide as of *observed* (server time, default now): every bench
        observed before it is dropped."""
        return self._run("clear", fp, observed, None, None, "", None, None, None)

    def _run(self, op: str, fp: str, observed: float | None, until: float | None,
             until_in: float | None, status: str, code: int | None, reason: str | None,
             message: str | None) -> tuple[str, bool]:
        args = [op, fp, self.host, _num(observed), _num(until), _num(until_in), status,
                "" if code is None else str(int(code)), self.outbound.text(reason, MESSAGE_LIMIT),
                self.outbound.text(message, MESSAGE_LIMIT), self.channel, str(DUP_EPS),
                repr(outside.MAX_AHEAD)]
        try:
            result, changed, _version, _now = self._rules(keys=self._keys(fp), args=args)
        except redis.ResponseError as exc:
            # A key of the fleet's namespace the script could not repair: said, not raised.
            self.notice(f"key {short(fp)}: the fleet's rules refused the {op} ({_reply(exc)})")
            return "refused", False
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
        """Fleet state of each fingerprint that has one, checked (one round trip). A state
        that did not pass is there with ``usable`` False: shown, never applied."""
        fps = list(fps)
        pipe = self.r.pipeline(transaction=False)
        pipe.time()
        pipe.get(self.k("version"))
        for fp in fps:
            pipe.hgetall(self.k("s", fp))
        out = pipe.execute(raise_on_error=False)
        now = _time(out[0])
        cap = inbound.version(out[1], notice=self.notice)
        return {fp: inbound.state(fp, h, now=now, version_cap=cap, notice=self.notice)
                for fp, h in zip(fps, out[2:], strict=True) if h}

    def version(self) -> int | None:
        """The fleet's change counter; None (and a notice) when it is not one."""
        try:
            raw = self.r.get(self.k("version"))
        except redis.ResponseError as exc:
            return inbound.version(exc, notice=self.notice)
        return inbound.version(raw, notice=self.notice)

    def heartbeat(self, holders: Mapping[str, int], *, interval: float, started_at: float,
                  seen_version: int, offset: float, disconnected_since: float | None = None) -> None:
        """Say this host is alive, which fingerprints it holds, and their request counts."""
        now = self.server_time()
        hk = self.k("hk", self.host)
        try:
            held = self.r.smembers(hk)
        except redis.ResponseError as exc:
            self.notice(f"host {self.host}: {inbound.what_it_is(exc)} at {hk}; its holdings are rewritten")
            held = set()
            self.r.delete(hk)   # this host's own key: rebuilt below from the file
        gone = set(held) - set(holders)
        pipe = self.r.pipeline(transaction=True)
        written: list[str] = []          # the key each queued command writes, in order

        def queue(key: str, command: Callable[..., Any], *args: Any, **kw: Any) -> None:
            written.append(key)
            command(key, *args, **kw)

        queue(self.k("hosts"), pipe.sadd, self.host)
        queue(self.k("host", self.host), pipe.hset, mapping={
            "heartbeat_at": f"{now:.6f}", "interval": interval, "started_at": f"{started_at:.6f}",
            "keys": len(holders), "seen_version": seen_version, "offset": f"{offset:.6f}",
            "disconnected_since": "" if disconnected_since is None else f"{disconnected_since:.6f}",
        })
        for fp in gone:
            queue(self.k("h", fp), pipe.hdel, self.host)
            queue(hk, pipe.srem, fp)
        for fp, count in holders.items():
            queue(self.k("h", fp), pipe.hset, self.host, int(count))
            queue(hk, pipe.sadd, fp)
            queue(self.k("fps"), pipe.sadd, fp)
        replies = pipe.execute(raise_on_error=False)
        wrong = sorted({key for key, reply in zip(written, replies, strict=True)
                        if isinstance(reply, redis.ResponseError) and "WRONGTYPE" in str(reply)})
        refused = [r for r in replies if isinstance(r, redis.ResponseError)]
        if refused:
            self.notice(f"host {self.host}: {len(refused)} heartbeat writes refused ({_reply(refused[0])})")
        if wrong:
            # Every key a heartbeat writes is rebuilt by heartbeats (and fps by the rules):
            # one of another type is dropped, and the next beat writes it right.
            self.r.delete(*wrong)

    def snapshot(self) -> FleetSnapshot:
        """Hosts, heartbeats and every fingerprint's fleet-wide state and holders, each
        checked: what is readable is there, what is not is named in ``problems``."""
        problems: list[str] = []
        say = problems.append
        pipe = self.r.pipeline(transaction=False)
        pipe.time()
        pipe.get(self.k("version"))
        pipe.smembers(self.k("hosts"))
        pipe.smembers(self.k("fps"))
        raw_time, raw_version, raw_hosts, raw_fps = pipe.execute(raise_on_error=False)
        now = _time(raw_time)
        version = inbound.version(raw_version, notice=say)
        names = inbound.host_names(raw_hosts, notice=say)
        fps = inbound.fingerprints(raw_fps, "fps", notice=say)
        pipe = self.r.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.k("host", name))
        for fp in fps:
            pipe.hgetall(self.k("s", fp))
            pipe.hgetall(self.k("h", fp))
        out = pipe.execute(raise_on_error=False) if names or fps else []
        hosts = [inbound.host(name, h, now=now) for name, h in zip(names, out[:len(names)], strict=True)]
        rest = out[len(names):]
        keys = []
        for i, fp in enumerate(fps):
            held, bad = inbound.holders(fp, rest[2 * i + 1])
            keys.append(KeyInfo(inbound.state(fp, rest[2 * i], now=now, version_cap=version), held, bad))
        return FleetSnapshot(now, version or 0, hosts, keys, tuple(problems))

    def pubsub(self) -> redis.client.PubSub:
        ps = self.r.pubsub(ignore_subscribe_messages=True)
        ps.subscribe(self.channel)
        return ps


def _time(reply: Any) -> float:
    """The server's TIME reply as epoch seconds (an error reply is raised: no clock, no check)."""
    if isinstance(reply, Exception):
        raise reply
    sec, usec = reply
    return float(sec) + float(usec) / 1e6


def _num(value: float | None) -> str:
    """A number for the script ('' for none; a non-finite one is none, never sent)."""
    if value is None or not math.isfinite(float(value)):
        return ""
    return repr(float(value))


__all__ = ["DEAD", "FleetClient", "connect"]
