"""hermes-admin's own settings: ``<home>/hermes-admin.yaml``, never Hermes's config.yaml.

What hermes-admin decides for itself and Hermes must not see: how a key's headroom is used
(#21) and how long the operator history is kept (#20)::

    headroom:
      threshold: 0.0            # a key yields when this fraction of a window or less is left
      pools:                    # per pool, over the default
        openrouter: 0.05
      least_used_weighs_headroom: false
    history:
      keep: 50                  # operator actions kept for undo
      days: 14
    console:                    # how the console was last left (store.config.console_view)
      sort: status
    budgets: ...                # per-key and per-pool spend, caps (store.config.budgets, #29)
    usage: ...                  # the usage ledger's bounds and prices (store.config.usage_settings, #29)
    proxy: ...                  # affinity, pacing, hold, prefer (store.config.proxy_settings, #30)

Read strictly (PyYAML safe_load after the alias/depth guard); a missing file is the
defaults; a file that cannot be used raises ConfigUnreadable naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from store import outside, safeio, yamlguard
from store.config import budgets, proxy_settings, usage_settings
from store.config.budgets import PoolBudget
from store.config.own_file import SETTINGS_CAP, SETTINGS_FILE
from store.config.proxy_settings import ProxySettings
from store.config.usage_settings import UsageSettings
from store.errors import ConfigUnreadable, StoreUnreadable
from store.paths import Home

# console: the console's own (store.config.console_view); budgets, usage, proxy: their modules
_TOP = ("headroom", "history", "console", "budgets", "usage", "proxy")


@dataclass(frozen=True)
class Settings:
    threshold: float = 0.0
    pool_thresholds: Mapping[str, float] = field(default_factory=dict)
    least_used_weighs_headroom: bool = False
    history_keep: int = 50
    history_days: float = 14.0
    budgets: Mapping[str, PoolBudget] = field(default_factory=dict)
    usage: UsageSettings = usage_settings.DEFAULTS
    proxy: ProxySettings = proxy_settings.DEFAULTS

    def threshold_for(self, pool: str) -> float:
        return self.pool_thresholds.get(pool, self.threshold)


DEFAULTS = Settings()


def _fraction(value: Any, where: str, path: Any) -> float:
    f = outside.number(value, where, lo=0.0, hi=0.99)
    if f is None:
        raise ConfigUnreadable(path, f"{where}: must be a fraction from 0 to 0.99 (0.05 = yield at 5% left)")
    return f


def parse(data: Any, path: Any) -> Settings:
    """Settings from a parsed document; ConfigUnreadable naming the field for anything else."""
    if data is None:
        return DEFAULTS
    if not isinstance(data, dict):
        raise ConfigUnreadable(path, "must be a mapping (headroom:, history:)")
    for key in data:
        if key not in _TOP:
            raise ConfigUnreadable(path, f"{key!s:.40}: not a setting (known: {', '.join(_TOP)})")
    head = data.get("headroom") or {}
    hist = data.get("history") or {}
    if not isinstance(head, dict) or not isinstance(hist, dict):
        raise ConfigUnreadable(path, "headroom: and history: must be mappings")
    for key in head:
        if key not in ("threshold", "pools", "least_used_weighs_headroom"):
            raise ConfigUnreadable(path, f"headroom.{key!s:.40}: not a setting")
    pools = head.get("pools") or {}
    if not isinstance(pools, dict) or not all(isinstance(k, str) and k.isprintable() for k in pools):
        raise ConfigUnreadable(path, "headroom.pools: must map pool names to fractions")
    weigh = head.get("least_used_weighs_headroom", False)
    if not isinstance(weigh, bool):
        raise ConfigUnreadable(path, "headroom.least_used_weighs_headroom: must be true or false")
    keep = outside.count(hist.get("keep", DEFAULTS.history_keep), "history.keep", hi=10_000)
    if keep is None or keep < 1:
        raise ConfigUnreadable(path, "history.keep: must be a whole number from 1 to 10000")
    days = outside.number(hist.get("days", DEFAULTS.history_days), "history.days", lo=0.01, hi=3660.0)
    if days is None:
        raise ConfigUnreadable(path, "history.days: must be a number of days from 0.01 to 3660")
    return Settings(
        threshold=_fraction(head.get("threshold", 0.0), "headroom.threshold", path),
        pool_thresholds={k: _fraction(v, f"headroom.pools.{k[:40]}", path) for k, v in pools.items()},
        least_used_weighs_headroom=weigh, history_keep=keep, history_days=days,
        budgets=budgets.parse(data.get("budgets"), path),
        usage=usage_settings.parse(data.get("usage"), path),
        proxy=proxy_settings.parse(data.get("proxy"), path))


def read(home: Home) -> Settings:
    """The home's settings (the defaults when there is no file)."""
    path = home.root / SETTINGS_FILE
    try:
        got = safeio.read_checked(path, SETTINGS_CAP, ConfigUnreadable)
    except StoreUnreadable as exc:
        raise ConfigUnreadable(path, exc.reason) from None
    if got is None:
        return DEFAULTS
    raw = got[0]
    yamlguard.check(raw, path)
    try:
        data = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError as exc:
        mark = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigUnreadable(path, f"not valid YAML{at}") from None
    except RecursionError:
        raise ConfigUnreadable(path, "nested too deeply") from None
    return parse(data, path)
