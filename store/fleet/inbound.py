"""What the fleet reads from Redis, checked once at the edge (RELIABILITY 34, 35).

Everything Redis holds is data from outside: another host wrote it, or anyone who can
reach the server did. Each function here turns one Redis value into a model value:

- every number passes ``store.outside`` (finite; times no earlier than 2000 and at most a
  year ahead of the server's now, or a minute for times that are "now" when written;
  counts whole and bounded);
- every text is bounded (control characters stay: every screen shows them escaped, and
  ``store.fleet.local`` writes them inert); host names are host names, fingerprints 64 hex;
- a value that fails is None in the result, named in its ``problems`` and said through
  *notice*, and a state that loses a field it needs is not ``usable``;
- a pub/sub message is only a *hint*: the fingerprint it names, never its fields.

Pure functions; the server's clock is passed in.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from store import outside
from store.fleet.keys import HOST_RE, short
from store.fleet.model import DEAD, EXHAUSTED, OK, FleetState, HostInfo

Notice = Callable[[str], None]

FP_RE = re.compile(r"^[0-9a-f]{64}$")
TEXT_LIMIT = 200          # what the client publishes at most (reasons, messages)
HINT_LIMIT = 16 * 1024    # a pub/sub message of ours is well under 1 KB
# Times written as the server's "now" (a bench's since, a clear, a heartbeat) may lead
# the reader's server time only by a round trip; a minute is generous.
NOW_SLACK = 60.0
MAX_INTERVAL = 3600.0
STATUSES = (OK, EXHAUSTED, DEAD)


def _quiet(_msg: str) -> None:
    return None


def what_it_is(value: Any) -> str:
    """*value* named for a notice: a Redis error reply (a key of another type) as such."""
    if isinstance(value, Exception):
        return "a key of another type" if "WRONGTYPE" in str(value) else "an error reply"
    return outside.describe(value)


def is_fp(value: Any) -> bool:
    return isinstance(value, str) and FP_RE.match(value) is not None


def text(value: Any, what: str, say: Notice, *, limit: int = TEXT_LIMIT) -> str | None:
    """A short text, or None ('' is absent, not a problem)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        say(f"{what}: {outside.describe(value)} is not text; ignored")
        return None
    if len(value) > limit:
        say(f"{what}: {outside.describe(value)} is longer than {limit}; ignored")
        return None
    return value   # control characters are kept as sent: shown escaped, written inert


def host_name(value: Any, what: str, say: Notice) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and HOST_RE.match(value):
        return value
    say(f"{what}: {outside.describe(value)} is not a host name; ignored")
    return None


def _given(h: Mapping[str, Any], name: str) -> Any:
    value = h.get(name)
    return None if value == "" else value


def state(fp: str, h: Any, *, now: float, version_cap: int | None = None,
          notice: Notice | None = None) -> FleetState:
    """The key's fleet-wide state from its ``s:<fp>`` hash, checked field by field.

    *version_cap* is the fleet's global counter read at the same time: a state claiming a
    later version than the counter ever reached is forged, and would otherwise block
    every real update after it."""
    problems: list[str] = []
    say = problems.append
    usable = True
    if not isinstance(h, Mapping):
        say(f"state: {what_it_is(h)} is not a hash; ignored")
        return _done(FleetState(fp, usable=False, problems=tuple(problems)), notice)
    status = h.get("status") or OK
    if status not in STATUSES:
        say(f"status: {outside.describe(status)} is not a status; ignored")
        status, usable = OK, False
    until = since = None
    if status == EXHAUSTED:
        until = outside.epoch(_given(h, "until"), "until", now=now, notice=say)
        usable = usable and until is not None
    if status in (EXHAUSTED, DEAD):
        since = outside.epoch(_given(h, "since"), "since", now=now, ahead=NOW_SLACK, notice=say)
        usable = usable and since is not None
    cleared_at = None
    if _given(h, "cleared_at") is not None:
        cleared_at = outside.epoch(h["cleared_at"], "cleared_at", now=now, ahead=NOW_SLACK, notice=say)
    code = None
    if _given(h, "code") is not None:
        code = outside.count(h["code"], "code", hi=999, notice=say)
        if code is not None and code < 100:
            say(f"code: {code} is not an HTTP status; ignored")
            code = None
    version = 0
    if _given(h, "version") is not None:
        got = outside.count(h["version"], "version", notice=say)
        if got is None:
            usable = False
        elif version_cap is not None and got > version_cap:
            say(f"version: {got} is ahead of the fleet's counter ({version_cap}); ignored")
            usable = False
        else:
            version = got
    fs = FleetState(
        fp, status=status, until=until, since=since, host=host_name(_given(h, "host"), "host", say),
        code=code, reason=text(h.get("reason"), "reason", say), message=text(h.get("message"), "message", say),
        cleared_at=cleared_at, cleared_by=host_name(_given(h, "cleared_by"), "cleared_by", say),
        version=version, usable=usable, problems=tuple(problems))
    return _done(fs, notice)


def _done(fs: FleetState, notice: Notice | None) -> FleetState:
    for p in fs.problems:
        (notice or _quiet)(f"key {short(fs.fp)}: {p}")
    return fs


def host(name: str, h: Any, *, now: float, notice: Notice | None = None) -> HostInfo:
    """One host's heartbeat from its ``host:<name>`` hash, checked field by field."""
    problems: list[str] = []
    say = problems.append
    if not HOST_RE.match(name):
        say(f"name: {outside.describe(name)} is not a host name")
    if not isinstance(h, Mapping):
        say(f"heartbeat: {what_it_is(h)} is not a hash; ignored")
        h = {}

    def when(field: str, ahead: float = NOW_SLACK) -> float | None:
        value = _given(h, field)
        return None if value is None else outside.epoch(value, field, now=now, ahead=ahead, notice=say)

    interval = None
    if _given(h, "interval") is not None:
        interval = outside.number(h["interval"], "interval", lo=0.05, hi=MAX_INTERVAL, notice=say)
    offset = None
    if _given(h, "offset") is not None:
        offset = outside.number(h["offset"], "offset", lo=-outside.MAX_AHEAD, hi=outside.MAX_AHEAD, notice=say)
    keys = outside.count(h["keys"], "keys", notice=say) if _given(h, "keys") is not None else None
    seen = outside.count(h["seen_version"], "seen_version", notice=say) if _given(h, "seen_version") is not None \
        else None
    info = HostInfo(name=name, heartbeat_at=when("heartbeat_at"), interval=interval or 2.0,
                    started_at=when("started_at"), keys=keys or 0, seen_version=seen or 0, offset=offset,
                    disconnected_since=when("disconnected_since"), problems=tuple(problems))
    for p in problems:
        (notice or _quiet)(f"host {outside.describe(name) if not HOST_RE.match(name) else name}: {p}")
    return info


def holders(fp: str, h: Any, *, notice: Notice | None = None) -> tuple[dict[str, int], tuple[str, ...]]:
    """Which hosts hold the key (host -> request count) from its ``h:<fp>`` hash."""
    problems: list[str] = []
    say = problems.append
    out: dict[str, int] = {}
    if not isinstance(h, Mapping):
        say(f"holders: {what_it_is(h)} is not a hash; ignored")
        h = {}
    for name, value in sorted(h.items()):
        who = host_name(name, "holder", say)
        if who is None:
            continue
        n = outside.count(value, f"holder {who}", notice=say)
        if n is not None:
            out[who] = n
    for p in problems:
        (notice or _quiet)(f"key {short(fp)}: {p}")
    return out, tuple(problems)


def version(value: Any, *, notice: Notice | None = None) -> int | None:
    """The fleet's change counter (absent is 0; anything but a whole number is None)."""
    if value is None:
        return 0
    if isinstance(value, Exception):
        (notice or _quiet)(f"version: {what_it_is(value)} is not a counter; ignored")
        return None
    return outside.count(value, "version", notice=notice)


def fingerprints(values: Any, what: str, *, notice: Notice | None = None) -> list[str]:
    """The members of a set of fingerprints that are fingerprints, sorted."""
    if not isinstance(values, (set, frozenset, list, tuple)):
        (notice or _quiet)(f"{what}: {what_it_is(values)} is not a set; ignored")
        return []
    good = sorted(v for v in values if is_fp(v))
    if len(good) != len(values):
        (notice or _quiet)(f"{what}: {len(values) - len(good)} members are not fingerprints; ignored")
    return good


def host_names(values: Any, *, notice: Notice | None = None) -> list[str]:
    """The members of the ``hosts`` set, sorted (odd names kept: shown escaped, named)."""
    if not isinstance(values, (set, frozenset, list, tuple)):
        (notice or _quiet)(f"hosts: {what_it_is(values)} is not a set; ignored")
        return []
    return sorted(v for v in values if isinstance(v, str) and len(v) <= 255)


def hint(data: Any, *, notice: Notice | None = None) -> str | None:
    """The fingerprint a pub/sub message names, or None. Nothing else of it is used: the
    state is read from the hash and checked (a message can be forged far more easily)."""
    say = notice or _quiet
    if not isinstance(data, str) or len(data) > HINT_LIMIT:
        say(f"message: {outside.describe(data)} is not a fleet event; ignored")
        return None
    try:
        msg = json.loads(data)
    except (ValueError, RecursionError):
        say(f"message: {outside.describe(data)} is not JSON; ignored")
        return None
    fp = msg.get("fp") if isinstance(msg, dict) else None
    if not is_fp(fp):
        say(f"message: {outside.describe(fp)} is not a fingerprint; ignored")
        return None
    return fp

