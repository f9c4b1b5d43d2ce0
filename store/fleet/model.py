"""What the fleet knows, as plain values: one key's fleet-wide state, one host's heartbeat.

Times are Redis server epoch seconds. These are what ``fleet status`` and the console's
fleet view render; nothing here talks to Redis, and nothing here parses what Redis holds
(``store.fleet.inbound`` does, once, checked). A value that did not pass the check is
None here and named in ``problems``; a state that lost a field it needs to be acted on
is not ``usable`` (shown, never applied).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from store.fleet.keys import FP_PREFIX

OK = "ok"
EXHAUSTED = "exhausted"
DEAD = "dead"
# A host whose heartbeat is older than this many heartbeat intervals counts as gone.
STALE_HEARTBEATS = 3.0


@dataclass(frozen=True)
class FleetState:
    """One fleet fingerprint's fleet-wide state (the summary the Lua rules maintain).

    ``until`` is None for ``ok`` and ``dead`` (dead never expires); ``since`` and
    ``host`` say when and where the winning bench was observed. ``usable`` is False when
    a field the state needs (status, until, since, version) did not pass the check.
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
    usable: bool = True
    problems: tuple[str, ...] = ()

    def benched_at(self, server_now: float) -> bool:
        """True when a host should not use the key at *server_now* (never for an unusable state)."""
        return self.usable and (self.status == DEAD or (self.status == EXHAUSTED and (self.until or 0) > server_now))

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
    problems: tuple[str, ...] = ()

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
    problems: tuple[str, ...] = ()       # holders that did not pass the check


@dataclass(frozen=True)
class FleetSnapshot:
    """Everything a fleet view shows, read at one server time."""

    server_time: float
    version: int
    hosts: list[HostInfo]
    keys: list[KeyInfo]
    problems: tuple[str, ...] = ()       # fleet-wide keys (version, hosts, fps) that did not pass

    def unreadable(self) -> list[str]:
        """Every problem of the snapshot, each naming where it is (for ``fleet status``)."""
        out = list(self.problems)
        out += [f"host {h.name}: {p}" for h in self.hosts for p in h.problems]
        out += [f"key {FP_PREFIX}{k.state.fp[:12]}: {p}" for k in self.keys
                for p in (*k.state.problems, *k.problems)]
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``fleet status --json`` form: fingerprints as ``fl:`` + 64 hex, the form
        ``fleet bench`` and ``fleet reset`` take."""
        return {
            "server_time": self.server_time, "version": self.version,
            "hosts": [h.to_json(self.server_time, self.version) for h in self.hosts],
            "keys": [dict(k.state.to_json(), fp=FP_PREFIX + k.state.fp, holders=k.holders,
                          problems=[*k.state.problems, *k.problems],
                          benched=k.state.benched_at(self.server_time)) for k in self.keys],
            "problems": self.unreadable(),
        }
