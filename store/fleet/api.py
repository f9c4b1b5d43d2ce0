"""Fleet-wide operator actions and the local labels a fleet view puts on fingerprints.

A fleet-wide bench or reset is published once; every host's sync daemon applies it to
its own file under its own lock. With a *home*, it is audited there, and the reason an
operator typed passes the home's redaction on its way to Redis (``store.fleet.outbound``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from store import authfile
from store.envfile import read_env
from store.fleet.client import FleetClient
from store.fleet.keys import row_fleet_fp, short
from store.fleet.local import rows_by_pool
from store.fleet.outbound import Outbound
from store.ops.actions import Change, Outcome
from store.ops.audit import record
from store.paths import Home


@dataclass(frozen=True)
class LocalKey:
    """A local row holding a fleet key (no secret): where it is and what it is called."""

    pool: str
    id: str
    label: str


def local_keys(home: Home, secret: bytes) -> dict[str, list[LocalKey]]:
    """Fleet fingerprint -> this host's rows holding that key (read only, no lock)."""
    doc = authfile.read_store(home).doc
    env = read_env(home)
    out: dict[str, list[LocalKey]] = {}
    for pool, rows in rows_by_pool(doc):
        for row in rows:
            fp = row_fleet_fp(secret, row, env)
            if fp:
                out.setdefault(fp, []).append(LocalKey(pool, str(row.get("id") or ""), str(row.get("label") or "")))
    return out


def bench_fleet_wide(client: FleetClient, fp: str, seconds: float, *, reason: str = "manual_cooldown",
                     home: Home | None = None, fleet_secret: bytes | None = None) -> tuple[str, bool]:
    """Bench *fp* on every host for *seconds* from the server's now (or dead when inf).
    A key of *home* in *reason* reaches Redis only as its fleet fingerprint (under
    *fleet_secret*; ``fl:…`` without one)."""
    if home is not None:
        client.outbound = Outbound.for_home(home, fleet_secret)
    if seconds == float("inf"):
        res = client.mark(fp, status="dead", reason=reason, message="benched fleet-wide by operator")
    else:
        res = client.mark(fp, until_in=seconds, reason=reason, message="benched fleet-wide by operator")
    if home is not None:
        _audit(home, "fleet-bench", fp, client.host, {"seconds": seconds, "result": res[0]})
    return res


def reset_fleet_wide(client: FleetClient, fp: str, *, home: Home | None = None) -> tuple[str, bool]:
    """Reset *fp* on every host as of the server's now (drops every earlier bench)."""
    res = client.clear(fp)
    if home is not None:
        _audit(home, "fleet-reset", fp, client.host, {"result": res[0]})
    return res


def _audit(home: Home, action: str, fp: str, host: str, extra: dict[str, object]) -> None:
    out = Outcome(action, "fleet")
    out.changes.append(Change("fleet", short(fp), "", {}, dict(extra)))
    record(home, out, via="fleet", extra={"fleet_host": host}, now=time.time())
