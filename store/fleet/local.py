"""The local side of the fleet: which rows hold which fleet key, what they say, and how
a fleet-wide state lands on them.

Pure functions on a document. :func:`apply_states` is meant to run inside
``store.transaction`` on the transaction's own fresh read; nothing here does IO.
Host times and server times differ by the host's measured clock *offset*
(host minus server): ``local = server + offset``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from store import outside
from store.fleet.keys import row_fleet_fp
from store.fleet.model import DEAD, EXHAUSTED, OK, FleetState
from store.fleet.outbound import fingerprint_secrets
from store.model import STATUS_DEAD, STATUS_EXHAUSTED, Doc, Row, as_int, parse_epoch, pools, row_secrets
from store.pools import policy
from store.redaction.redact import escape_controls

# A local cooldown within this of the fleet's counts as the same one (no rewrite).
APPLY_EPS = 0.5
FLEET_MESSAGE = "fleet: benched on host {host}"


def signature(row: Row) -> tuple[Any, ...]:
    """The fields whose change is a fleet-relevant transition of *row*."""
    return (row.get("last_status"), row.get("last_status_at"), row.get("last_error_code"),
            row.get("last_error_reset_at"), row.get("status_cleared_at"))


@dataclass(frozen=True)
class LocalRow:
    """One local row as the fleet sees it: no secret, only its fleet fingerprint.

    ``observed``/``until``/``cleared_at`` are host-clock epoch seconds; ``until`` is
    None for dead rows and for rows not benched."""

    pool: str
    id: str
    fp: str
    sig: tuple[Any, ...]
    status: str | None
    observed: float | None
    until: float | None
    cleared_at: float | None
    code: int | None
    reason: str | None
    message: str | None
    request_count: int


def rows_by_pool(doc: Doc | None) -> list[tuple[str, list[Row]]]:
    """(pool, its dict rows) for every pool of *doc*, sorted by pool key."""
    if doc is None:
        return []
    return [(pool, [r for r in rows if isinstance(r, dict)])
            for pool, rows in sorted(pools(doc).items()) if isinstance(rows, list)]


def local_rows(doc: Doc | None, secret: bytes, env: Mapping[str, str] | None, now: float,
               ttls: policy.Ttls = policy.DEFAULT_TTLS) -> list[LocalRow]:
    """Every row of *doc* that has a fleet identity, as a :class:`LocalRow`."""
    out: list[LocalRow] = []
    for pool, rows in rows_by_pool(doc):
        for row in rows:
            fp = row_fleet_fp(secret, row, env)
            if fp is None:
                continue
            secrets = row_secrets(row, env)
            status = row.get("last_status")
            until = policy.until(row, rows, now, ttls)
            code = row.get("last_error_code")
            msg, reason = row.get("last_error_message"), row.get("last_error_reason")
            out.append(LocalRow(
                pool=pool, id=str(row.get("id") or ""), fp=fp, sig=signature(row), status=status,
                observed=parse_epoch(row.get("last_status_at")),
                until=None if until is None or math.isinf(until) else until,
                cleared_at=parse_epoch(row.get("status_cleared_at")),
                code=code if isinstance(code, int) and not isinstance(code, bool) else None,
                # The row's own key already as its fleet fingerprint; the home's other
                # secrets follow at the way out (store.fleet.outbound).
                reason=fingerprint_secrets(reason, secrets, secret) if isinstance(reason, str) else None,
                message=fingerprint_secrets(msg, secrets, secret) if isinstance(msg, str) else None,
                request_count=as_int(row.get("request_count"), 0),
            ))
    return out


def holders(rows: list[LocalRow]) -> dict[str, int]:
    """Fleet fingerprint -> request count summed over this host's rows holding it (each
    count inside the bound every reader checks: an absurd count in the file stays here)."""
    out: dict[str, int] = {}
    for lr in rows:
        out[lr.fp] = min(outside.MAX_COUNT, out.get(lr.fp, 0) + max(0, lr.request_count))
    return out


def plan(row: Row, rows: list[Row], fs: FleetState, offset: float, now: float,
         ttls: policy.Ttls = policy.DEFAULT_TTLS) -> str | None:
    """What *fs* asks of a local row at host time *now*: ``bench``, ``clear`` or None."""
    status = row.get("last_status")
    server_now = now - offset
    if fs.status in (EXHAUSTED, DEAD) and fs.benched_at(server_now):
        if status == STATUS_DEAD:
            return None                      # dead already outranks any cooldown
        cleared = parse_epoch(row.get("status_cleared_at"))
        if cleared is not None and fs.since is not None and cleared - offset > fs.since:
            return None                      # a local reset newer than the bench: it is published, it wins
        if fs.status == DEAD:
            return "bench"
        if status == STATUS_EXHAUSTED:
            local_until = policy.until(row, rows, now, ttls)
            if local_until is not None and local_until >= (fs.until or 0) + offset - APPLY_EPS:
                return None
        return "bench"
    if fs.status == OK and fs.cleared_at is not None and status in (STATUS_EXHAUSTED, STATUS_DEAD):
        observed = parse_epoch(row.get("last_status_at"))
        if observed is None or observed - offset < fs.cleared_at:
            return "clear"                   # a bench observed before the fleet reset never wins
    return None


def apply_bench(row: Row, fs: FleetState, offset: float) -> None:
    """Write *fs* onto *row* as the Hermes cooldown a live agent honours unchanged."""
    message = FLEET_MESSAGE.format(host=fs.host or "?")
    if fs.message:
        message += f": {escape_controls(fs.message)}"
    row["last_status"] = STATUS_DEAD if fs.status == DEAD else STATUS_EXHAUSTED
    row["last_status_at"] = (fs.since if fs.since is not None else 0.0) + offset
    row["last_error_code"] = fs.code
    # Text another host wrote lands inert: no escape sequence reaches a Hermes log or a terminal.
    row["last_error_reason"] = None if fs.reason is None else escape_controls(fs.reason)
    row["last_error_message"] = message
    row["last_error_reset_at"] = None if fs.status == DEAD or fs.until is None else fs.until + offset
    row.pop("failure_reason", None)


def apply_states(doc: Doc, secret: bytes, env: Mapping[str, str] | None, states: Mapping[str, FleetState],
                 offset: float, now: float, ttls: policy.Ttls = policy.DEFAULT_TTLS) -> list[tuple[str, Row, str]]:
    """Apply every fleet state in *states* to the rows of *doc* holding that key.

    Returns (pool, row, action) for each row changed; the caller audits and remembers
    them so they are not re-published as new local transitions."""
    changed: list[tuple[str, Row, str]] = []
    for pool, rows in rows_by_pool(doc):
        for row in rows:
            fp = row_fleet_fp(secret, row, env)
            fs = states.get(fp) if fp else None
            if fs is None:
                continue
            action = plan(row, rows, fs, offset, now, ttls)
            if action == "bench":
                apply_bench(row, fs, offset)
            elif action == "clear":
                policy.reset(row, (fs.cleared_at or now - offset) + offset)
            else:
                continue
            changed.append((pool, row, action))
    return changed
