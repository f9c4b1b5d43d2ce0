"""A real redis-server for the fleet tests, and in-process sync daemons around it.

``RedisServer`` starts ``redis-server --port P --bind 127.0.0.1 --save '' --appendonly no
--dir TMP`` on a free loopback port, and can be killed (SIGKILL) and restarted on the
same port to simulate a partition. Tests that need it skip with a clear reason only
when the binary is missing (.ci/run installs it, so in CI it is not).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis

from store.fleet.client import FleetClient, connect
from store.fleet.sync import SyncDaemon
from store.ops import actions
from store.paths import Home
from store.pools import policy
from store.transaction import transaction
from tests.conftest import make_row, make_store, read_doc, write_store
from tests.hermes_real import wait_for

SECRET = b"fleet-test-secret-0123456789abcdef"
KEY_1 = "sk-or-v1-fleetKEY1AAAAAAAAAAAAAAAAAAAA01"
KEY_2 = "sk-or-v1-fleetKEY2BBBBBBBBBBBBBBBBBBBB02"
POOL = "openrouter"
BOUND = 15.0   # generous: every wait is bounded by this, never a timed assertion


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, tmp: Path, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (.ci/run installs the distribution's package)")
        self.binary = binary
        self.dir = tmp
        self.port = free_port()
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", str(self.dir)]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = redis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1)
        assert wait_for(lambda: _pings(r), timeout=BOUND, interval=0.02), "redis-server did not start"

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=BOUND)
            self.proc = None

    def stop(self) -> None:
        self.kill()


def _pings(r: redis.Redis) -> bool:
    try:
        return bool(r.ping())
    except redis.RedisError:
        return False


def make_home(root: Path, name: str, rows: list[dict[str, Any]] | None = None) -> Home:
    home = Home(root / name)
    home.root.mkdir(mode=0o700, parents=True)
    write_store(home, make_store({POOL: rows if rows is not None else [
        make_row("aaaaaa", label="one", priority=0, token=KEY_1),
        make_row("bbbbbb", label="two", priority=1, token=KEY_2),
    ]}))
    return home


class Daemon:
    """A SyncDaemon on a thread, with short intervals so tests converge quickly."""

    def __init__(self, home: Home, url: str, host: str, *, interval: float = 1.0,
                 clock: Any = time.time) -> None:
        self.client = FleetClient(connect(url), host)
        self.sync = SyncDaemon(home, self.client, SECRET, url=url, interval=interval,
                               heartbeat=0.5, clock=clock)
        self.thread = threading.Thread(target=self.sync.run, daemon=True)
        self.thread.start()
        assert wait_for(lambda: self.sync.connected and self.sync.stats.reconciles > 0, timeout=BOUND), \
            f"sync daemon {host} did not connect"

    def close(self) -> None:
        self.sync.close()
        self.thread.join(timeout=BOUND)


def daemons(*ds: Daemon) -> Iterator[None]:
    try:
        yield
    finally:
        for d in ds:
            d.close()


def env_without_secrets() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.upper().endswith(("API_KEY", "_TOKEN", "_SECRET", "_KEY"))}


# What a reader of Redis must never find: a key, a secret, or a plain hash of one.
def forbidden(secret_values: list[str]) -> dict[str, str]:
    """Every plain form a key or secret could leak in: itself and its unkeyed hashes."""
    out: dict[str, str] = {}
    for v in secret_values:
        raw = v.encode()
        out[v] = "the value itself"
        for name in ("sha256", "sha1", "md5", "sha512", "blake2b"):
            h = hashlib.new(name, raw).hexdigest()
            out[h] = f"{name} of it"
            out[h[:16]] = f"{name} prefix of it"
        out[base64.b64encode(raw).decode()] = "base64 of it"
        out["sha256:" + hashlib.sha256(raw).hexdigest()[:16]] = "its secret_fingerprint"
    return out


def dump_redis(r: redis.Redis) -> str:
    """Every key name and every value of every type, as one text."""
    parts: list[str] = []
    for key in r.scan_iter(count=1000):
        parts.append(key)
        kind = r.type(key)
        if kind == "string":
            parts.append(r.get(key) or "")
        elif kind == "hash":
            for f, v in r.hgetall(key).items():
                parts += [f, v]
        elif kind == "set":
            parts += list(r.smembers(key))
        elif kind == "zset":
            parts += [m for m, _ in r.zrange(key, 0, -1, withscores=True)]
        elif kind == "list":
            parts += r.lrange(key, 0, -1)
    return "\n".join(parts)


def leaks(text: str, secret_values: list[str]) -> list[str]:
    low = text.lower()
    return [why for needle, why in forbidden(secret_values).items() if needle.lower() in low]


def server_now(url: str) -> float:
    sec, usec = connect(url).time()
    return sec + usec / 1e6


__all__ = ["BOUND", "KEY_1", "KEY_2", "POOL", "SECRET", "Daemon", "RedisServer", "make_home", "time"]


# What a Hermes agent and hermes-admin do to one row, shared by the fleet tests.
def row(home, rid="aaaaaa"):
    return next(r for r in read_doc(home)["credential_pool"][POOL] if r["id"] == rid)


def bench(home, until_at, rid="aaaaaa", code=429):
    """What a Hermes agent does on a 429 with a provider reset time."""
    with transaction(home) as doc:
        rows = doc["credential_pool"][POOL]
        target = next(r for r in rows if r["id"] == rid)
        policy.mark_exhausted(rows, target, time.time(), code=code, reason="rate_limit_exceeded",
                              message=f"quota hit for {KEY_1}", reset_at=until_at)


def reset(home, rid="aaaaaa"):
    with transaction(home) as doc:
        actions.reset(doc, POOL, rid, time.time())
