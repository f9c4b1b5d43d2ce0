"""``proxy:`` in hermes-admin.yaml: hermes-admin's own proxy behaviour (#30)::

    proxy:
      affinity: {ttl: 5m, max_share: 0.5}    # on by default for round_robin, least_used, random
      pace: {max_wait: 2s}
      hold: {max_wait: 0s}
      prefer: {anthropic: soonest_reset}

- ``affinity``: a conversation keeps to the key that served its last turn for ``ttl``
  (``long_ttl`` when the request asks for Anthropic's 1-hour cache), unless that key would
  take more than ``max_share`` of its pool's traffic over the last minute (``off``: no bound).
  ``enabled: false`` turns it off.
- ``pace``: a short rate limit on a pinned conversation waits on the same key up to
  ``max_wait`` and tries it again.
- ``hold``: when no key of any route is usable and the soonest reset is within ``max_wait``,
  the request waits for it (at most ``max_waiting`` requests at once) instead of a 503.
- ``prefer``: per pool, ``soonest_reset`` picks among usable keys the one whose tightest
  window resets soonest. Hermes's own four strategies are unchanged.

Parsed strictly; every error names the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store import outside
from store.config import fields
from store.errors import ConfigUnreadable

PREFERENCES = ("soonest_reset",)


@dataclass(frozen=True)
class Affinity:
    enabled: bool = True
    ttl: float = 300.0
    long_ttl: float = 3600.0
    max_share: float | None = 0.5     # None: no bound


@dataclass(frozen=True)
class ProxySettings:
    affinity: Affinity = field(default_factory=Affinity)
    pace_max_wait: float = 2.0
    hold_max_wait: float = 0.0
    hold_max_waiting: int = 64
    prefer: Mapping[str, str] = field(default_factory=dict)


DEFAULTS = ProxySettings()


def _affinity(value: Any, path: Any) -> Affinity:
    got = fields.section(value, "proxy.affinity", path, ("enabled", "ttl", "long_ttl", "max_share"))
    d = Affinity()
    share: float | None = d.max_share
    if "max_share" in got:
        raw = got["max_share"]
        share = None if raw in (False, "off", None) else fields.fraction(raw, "proxy.affinity.max_share", path,
                                                                       lo=0.01, hi=1.0)
    return Affinity(
        enabled=fields.switch(got.get("enabled", d.enabled), "proxy.affinity.enabled", path),
        ttl=fields.duration(got.get("ttl", d.ttl), "proxy.affinity.ttl", path, hi=86400.0),
        long_ttl=fields.duration(got.get("long_ttl", d.long_ttl), "proxy.affinity.long_ttl", path, hi=86400.0),
        max_share=share)


def parse(value: Any, path: Any) -> ProxySettings:
    """The ``proxy:`` section (the defaults when absent)."""
    got = fields.section(value, "proxy", path, ("affinity", "pace", "hold", "prefer"))
    pace = fields.section(got.get("pace"), "proxy.pace", path, ("max_wait",))
    hold = fields.section(got.get("hold"), "proxy.hold", path, ("max_wait", "max_waiting"))
    prefer = fields.names(got.get("prefer"), "proxy.prefer", path)
    for pool, how in prefer.items():
        if how not in PREFERENCES:
            raise ConfigUnreadable(path, f"proxy.prefer.{pool}: must be one of {', '.join(PREFERENCES)}")
    waiting = outside.count(hold.get("max_waiting", DEFAULTS.hold_max_waiting), "proxy.hold.max_waiting", hi=10_000)
    if waiting is None or isinstance(hold.get("max_waiting"), bool) or waiting < 1:
        raise ConfigUnreadable(path, "proxy.hold.max_waiting: must be a whole number from 1 to 10000")
    return ProxySettings(
        affinity=_affinity(got.get("affinity"), path),
        pace_max_wait=fields.duration(pace.get("max_wait", DEFAULTS.pace_max_wait), "proxy.pace.max_wait", path,
                                      hi=60.0),
        hold_max_wait=fields.duration(hold.get("max_wait", DEFAULTS.hold_max_wait), "proxy.hold.max_wait", path,
                                      hi=600.0),
        hold_max_waiting=waiting, prefer=dict(prefer))
