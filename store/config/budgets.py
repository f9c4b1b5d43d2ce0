"""``budgets:`` in hermes-admin.yaml: what each pooled key may spend, and how close to a
subscription window's end it may go (#29)::

    budgets:
      openrouter:
        key: {day: 2.00, month: 40}     # USD, each key of the pool
        pool: {day: 10}                 # the pool as a whole
        reserve: [or0003]               # used only when every other key is out or over budget
      anthropic:
        cap: {5h: 80%, 7d: 90%}         # stop short of a subscription's window

hermes-admin's own rule for its own proxy and console: a budget writes nothing to auth.json,
Hermes agents keep their own rules. Amounts are US dollars of known cost (``actual`` and
``estimated``); a cap is the fraction of a window's use (its readings' utilization) past
which a key is held. Parsed strictly; every error names the field. A ``reserve:`` entry is
a row id or label: a key-shaped one (a provider-prefixed key, a JWT, one long token; the
same shapes a label refuses) is refused without echoing it, since a key pasted there would
be printed by every reader of the settings; so is a pool name holding a provider-prefixed
key (a long pool name is no key: only the prefixes count there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store.config import fields
from store.dialects.readings import LENGTHS
from store.errors import ConfigUnreadable
from store.redaction.redact import KEY_PATTERNS, looks_like_key

PERIODS = ("day", "month")
MAX_RESERVE = 64


@dataclass(frozen=True)
class Limits:
    """USD amounts per period (None: no limit for that period)."""

    day: float | None = None
    month: float | None = None

    def of(self, period: str) -> float | None:
        return self.day if period == "day" else self.month if period == "month" else None

    @property
    def any(self) -> bool:
        return self.day is not None or self.month is not None


@dataclass(frozen=True)
class PoolBudget:
    """One pool's budget: per key, for the pool, its reserve rows and its window caps."""

    key: Limits = field(default_factory=Limits)
    pool: Limits = field(default_factory=Limits)
    reserve: tuple[str, ...] = ()
    cap: Mapping[str, float] = field(default_factory=dict)   # window (5h, 7d, ...) -> fraction used


NONE: Mapping[str, PoolBudget] = {}


def _limits(value: Any, where: str, path: Any) -> Limits:
    got = fields.section(value, where, path, PERIODS)
    return Limits(**{p: fields.usd(got[p], f"{where}.{p}", path) for p in PERIODS if got.get(p) is not None})


def key_shaped(text: str) -> bool:
    """A key where a row id or label belongs: a provider-prefixed key or a JWT anywhere, or
    one long letters-and-digits token that holds no ``/`` (the shapes a row's label may not
    take either, so every label can be named as a reserve)."""
    return any(p.search(text) for p in KEY_PATTERNS) or ("/" not in text and looks_like_key(text))


def _reserve_entry(value: Any, where: str, path: Any) -> str:
    if isinstance(value, str) and key_shaped(value):
        raise ConfigUnreadable(path, f"{where}: looks like an API key, not a row id or label "
                               "(the value is not shown; keys belong in auth.json)")
    return fields.name(value, where, path)


def _reserve(value: Any, where: str, path: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_RESERVE:
        raise ConfigUnreadable(path, f"{where}: must be a list of at most {MAX_RESERVE} row ids or labels")
    return tuple(_reserve_entry(v, f"{where}[{i}]", path) for i, v in enumerate(value))


def _cap(value: Any, where: str, path: Any) -> Mapping[str, float]:
    got = fields.section(value, where, path, tuple(LENGTHS))
    return {w: fields.fraction(v, f"{where}.{w}", path, lo=0.01, hi=1.0) for w, v in got.items()}


def parse(value: Any, path: Any) -> Mapping[str, PoolBudget]:
    """The ``budgets:`` section: pool name -> :class:`PoolBudget`."""
    if isinstance(value, Mapping):      # before fields.names, whose errors show the name
        for i, pool in enumerate(value):
            if isinstance(pool, str) and any(p.search(pool) for p in KEY_PATTERNS):   # a prefixed key
                raise ConfigUnreadable(path, f"budgets: pool name #{i + 1} looks like an API key, not a pool "
                                       "(the value is not shown; keys belong in auth.json)")
    pools = fields.names(value, "budgets", path)
    out: dict[str, PoolBudget] = {}
    for pool, body in pools.items():
        where = f"budgets.{pool}"
        got = fields.section(body, where, path, ("key", "pool", "reserve", "cap"))
        out[pool] = PoolBudget(key=_limits(got.get("key"), f"{where}.key", path),
                               pool=_limits(got.get("pool"), f"{where}.pool", path),
                               reserve=_reserve(got.get("reserve"), f"{where}.reserve", path),
                               cap=_cap(got.get("cap"), f"{where}.cap", path))
    return out
