"""Readers for the values of hermes-admin's own settings sections: each takes the value, the
dotted field it came from and the file, and gives the value or raises ConfigUnreadable
naming that field. Shared by every section parser (:mod:`store.config.settings`,
:mod:`store.config.budgets`, :mod:`store.config.proxy_settings`,
:mod:`store.config.usage_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from store import outside
from store.durations import seconds_in
from store.errors import ConfigUnreadable

MAX_NAME = 64


def section(value: Any, where: str, path: Any, known: tuple[str, ...]) -> Mapping[str, Any]:
    """A mapping whose keys are all in *known* (an empty value is an empty mapping)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigUnreadable(path, f"{where}: must be a mapping ({', '.join(known)})")
    for key in value:
        if key not in known:
            raise ConfigUnreadable(path, f"{where}.{key!s:.40}: not a setting (known: {', '.join(known)})")
    return value


def name(value: Any, where: str, path: Any) -> str:
    """A pool, model or row name: printable text of 1 to 64 characters."""
    if not isinstance(value, str) or not value or len(value) > MAX_NAME or not value.isprintable():
        raise ConfigUnreadable(path, f"{where}: must be a name of 1 to {MAX_NAME} printable characters")
    return value


def names(value: Any, where: str, path: Any) -> Mapping[str, Any]:
    """A mapping keyed by names (pools, models)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigUnreadable(path, f"{where}: must be a mapping keyed by name")
    for key in value:
        name(key, f"{where}.{key!s:.40}", path)
    return value


def usd(value: Any, where: str, path: Any) -> float:
    """An amount of US dollars from 0 to 1,000,000."""
    got = outside.number(value, where, lo=0.0, hi=1e6) if not isinstance(value, bool) else None
    if got is None:
        raise ConfigUnreadable(path, f"{where}: must be an amount of US dollars from 0 to 1000000")
    return got


def fraction(value: Any, where: str, path: Any, *, lo: float = 0.0, hi: float = 1.0) -> float:
    """A fraction written ``0.8`` or ``80%``, from *lo* to *hi*."""
    got: float | None = None
    if isinstance(value, str) and value.strip().endswith("%"):
        num = outside.number(value.strip()[:-1].strip() or "x", where, lo=lo * 100, hi=hi * 100)
        got = None if num is None else num / 100
    elif not isinstance(value, bool):
        got = outside.number(value, where, lo=lo, hi=hi)
    if got is None:
        raise ConfigUnreadable(path, f"{where}: must be a fraction from {lo:g} to {hi:g} (0.8 or 80%)")
    return got


def duration(value: Any, where: str, path: Any, *, hi: float) -> float:
    """A duration written ``90s``, ``5m``, ``1h`` (or a number of seconds), from 0 to *hi* seconds."""
    if isinstance(value, bool):
        got = None
    elif isinstance(value, int | float):
        got = outside.number(value, where, lo=0.0, hi=hi)
    elif isinstance(value, str):
        secs = seconds_in(value.strip()) if value.strip() not in ("0", "off") else 0.0
        got = secs if secs is not None and 0.0 <= secs <= hi else None
    else:
        got = None
    if got is None:
        top = f"{hi / 86400:g}d" if hi >= 86400 else f"{hi:g}s"
        raise ConfigUnreadable(path, f"{where}: must be a duration from 0s to {top} (90s, 5m, 1h)")
    return float(got)


def switch(value: Any, where: str, path: Any) -> bool:
    """true or false."""
    if not isinstance(value, bool):
        raise ConfigUnreadable(path, f"{where}: must be true or false")
    return value
