"""What the fleet knows, as plain values: one key's fleet-wide state, one host's heartbeat.

Times are Redis server epoch seconds. These are what ``fleet status`` and the console's
fleet view render; nothing here talks to Redis.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

OK = "ok"
EXHAUSTED = "exhausted"
DEAD = "dead"
# A host whose heartbeat is older than this many heartbeat intervals counts as gone.
STALE_HEARTBEATS = 3.0


def _f(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _i(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _s(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


@dataclass(frozen=True)
class FleetState:
    """One fleet fingerprint's fleet-wide state (the summary the Lua rules maintain).

    ``until`` is None for ``ok`` and ``dead`` (dead never expires); ``since`` and
    ``host`` say when and where the winning bench was observed.
    """

    fp: str
    status: str = OK
    until: float | None = None
    since: float | None = None
    host: str | None = None
    code: int | None = None
    reason: str | None = None
    message: str | None = None
    cleared_at: float | None = None
    cleared_by: str | None = None
    version: int = 0

    @classmethod
    def from_hash(cls, fp: str, h: Mapping[str, Any]) -> FleetState:
        return cls(fp=fp, status=_s(h.get("status")) or OK, until=_f(h.get("until")),
                   since=_f(h.get("since")), host=_s(h.get("host")), code=_i(h.get("code")),
                   reason=_s(h.get("reason")), message=_s(h.get("message")),
                   cleared_at=_f(h.get("cleared_at")), cleared_by=_s(h.get("cleared_by")),
                   version=_i(h.get("version")) or 0)

    def benched_at(self, server_now: float) -> bool:
        """True when a host should not use the key at *server_now*."""
        return self.status == DEAD or (self.status == EXHAUSTED and (self.until or 0) > server_now)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class HostInfo:
    """One sync daemon's last heartbeat."""

    name: str
    heartbeat_at: float | None
    interval: float
    started_at: float | None = None
    keys: int = 0
    seen_version: int = 0
    offset: float | None = None          # host clock minus server clock, seconds
    disconnected_since: float | None = None  # last partition the host reported (server time)

    def age(self, server_now: float) -> float | None:
        return None if self.heartbeat_at is None else max(0.0, server_now - self.heartbeat_at)

    def connected(self, server_now: float) -> bool:
        age = self.age(server_now)
        return age is not None and age <= STALE_HEARTBEATS * max(self.interval, 0.1)

    def to_json(self, server_now: float, version: int) -> dict[str, Any]:
        out = asdict(self)
        out.update(age=self.age(server_now), connected=self.connected(server_now),
                   lag_versions=max(0, version - self.seen_version))
        return out


@dataclass(frozen=True)
class KeyInfo:
    """A fleet fingerprint: its state and which hosts hold it (host -> request count)."""

    state: FleetState
    holders: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class FleetSnapshot:
    """Everything a fleet view shows, read at one server time."""

    server_time: float
    version: int
    hosts: list[HostInfo]
    keys: list[KeyInfo]

    def to_json(self) -> dict[str, Any]:
        return {
            "server_time": self.server_time, "version": self.version,
            "hosts": [h.to_json(self.server_time, self.version) for h in self.hosts],
            "keys": [dict(k.state.to_json(), holders=k.holders,
                          benched=k.state.benched_at(self.server_time)) for k in self.keys],
        }
