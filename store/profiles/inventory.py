"""Every profile of a root, read once: pools, credentials and the config around them.

A :class:`ProfileInventory` is built from a :class:`store.watch.home.HomeState` (what the
console's loader already holds) plus the profile's cron jobs, so the CLI's one-shot
``inventory`` and a live view share one shape. A profile whose ``auth.json`` cannot be
read is an entry with ``error`` set (path + reason) and no pools: its rows are never
guessed and it is never written.

:func:`to_json` is the ``hermes-admin inventory --json`` document (schema in the
README). It carries fingerprints only; secrets stay in the rows, which are never
serialized whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from store.config.profile_view import (
    CronJob,
    Delegation,
    Gateway,
    read_cron_jobs,
    read_delegation,
    read_gateway,
)
from store.config.read import Config, FallbackEntry, Primary
from store.errors import StoreUnreadable
from store.paths import Home
from store.pools.view import PoolView
from store.profiles.root import Profile, Root, discover
from store.watch.home import HomeLoader, HomeState

INVENTORY_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ProfileInventory:
    """One profile as read at one moment (never written back)."""

    name: str
    home: Home
    error: StoreUnreadable | None             # auth.json unreadable: no pools shown
    pools: list[PoolView]
    env: Mapping[str, str] = field(repr=False)   # .env values: secrets
    active_provider: str | None = None
    primary: Primary | None = None
    fallbacks: list[FallbackEntry] = field(default_factory=list)
    strategies: dict[str, str] = field(default_factory=dict)
    custom_providers: list[dict[str, Any]] = field(default_factory=list)
    auxiliary: dict[str, dict[str, Any]] = field(default_factory=dict)
    delegation: Delegation = field(default_factory=Delegation)
    gateway: Gateway = field(default_factory=Gateway)
    cron_jobs: list[CronJob] = field(default_factory=list)
    config_error: StoreUnreadable | None = None
    cron_error: StoreUnreadable | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def primary_provider(self) -> str | None:
        """config's ``model.provider``, else auth.json's ``active_provider`` (as Hermes)."""
        if self.primary is not None and self.primary.provider:
            return self.primary.provider
        return self.active_provider

    def health(self) -> dict[str, int]:
        """ok / cooling / ready / dead counts over every pool."""
        out = {"ok": 0, "cooling": 0, "ready": 0, "dead": 0}
        for pv in self.pools:
            for k, v in pv.counts.items():
                out[k] += v
        return out


def _config_extras(cfg: Config | None, w: list[str]) -> tuple[Delegation, Gateway]:
    # The mapping read_config already parsed: parsing config.yaml twice per profile
    # was a third of a 50-profile load (bench/bench_profiles.py).
    if cfg is None:
        return Delegation(), Gateway()
    return read_delegation(cfg.data, w), read_gateway(cfg.data, w)


def from_state(name: str, state: HomeState, cron_jobs: list[CronJob] | None = None,
               cron_error: StoreUnreadable | None = None) -> ProfileInventory:
    """The inventory entry for profile *name* from its loaded :class:`HomeState`."""
    cfg = state.config
    w = list(state.warnings)
    delegation, gateway = _config_extras(cfg, w)
    error = state.store_error
    doc = state.doc if error is None else None
    active = doc.get("active_provider") if isinstance(doc, dict) else None
    # No config (no config.yaml, or none that ever parsed): the defaults.
    return ProfileInventory(
        name=name, home=state.home, error=error, pools=[] if error else state.pools,
        env=state.env, active_provider=active if isinstance(active, str) and active else None,
        primary=cfg.primary if cfg is not None else None,
        fallbacks=list(cfg.fallback_chain) if cfg is not None else [],
        strategies=dict(cfg.strategies) if cfg is not None else {},
        custom_providers=list(cfg.custom_providers) if cfg is not None else [],
        auxiliary=dict(cfg.auxiliary_chains) if cfg is not None else {},
        delegation=delegation, gateway=gateway, cron_jobs=list(cron_jobs or []),
        config_error=state.config_error, cron_error=cron_error, warnings=w,
    )


def read_cron(home: Home) -> tuple[list[CronJob], StoreUnreadable | None]:
    """The profile's cron overrides, or the reason its job store cannot be read."""
    try:
        return read_cron_jobs(home), None
    except StoreUnreadable as exc:
        return [], exc


def read_profile(profile: Profile, clock: Any = None) -> ProfileInventory:
    """Read one profile from disk (no lock, no write)."""
    loader = HomeLoader(profile.home) if clock is None else HomeLoader(profile.home, clock)
    jobs, cron_error = read_cron(profile.home)
    return from_state(profile.name, loader.load(), jobs, cron_error)


def read_root(root: Root, clock: Any = None) -> list[ProfileInventory]:
    """Every profile of *root*, default first. One corrupt profile never hides the others."""
    return [read_profile(p, clock) for p in discover(root)]


def _err(exc: StoreUnreadable | None) -> dict[str, str] | None:
    return None if exc is None else {"path": str(exc.path), "reason": exc.reason}


def profile_to_json(p: ProfileInventory) -> dict[str, Any]:
    """One profile of the ``inventory --json`` document."""
    primary = p.primary
    return {
        "name": p.name,
        "home": str(p.home.root),
        "error": _err(p.error),
        "config_error": _err(p.config_error),
        "primary": None if primary is None else {
            "provider": p.primary_provider, "model": primary.model, "base_url": primary.base_url},
        "active_provider": p.active_provider,
        "fallbacks": [{"provider": f.provider, "model": f.model, "base_url": f.base_url}
                      for f in p.fallbacks],
        "health": p.health(),
        "pools": [{
            "pool": pv.key,
            "strategy": pv.strategy,
            "credentials": [{
                "id": cv.id, "label": cv.label, "auth_type": cv.row.get("auth_type"),
                "source": cv.row.get("source"), "status": cv.effective.status,
                "seconds_left": (round(cv.effective.seconds_left, 3)
                                 if cv.effective.seconds_left is not None else None),
                "fingerprint": cv.fingerprint, "request_count": cv.to_json()["request_count"],
                "env_backed": cv.backed,
            } for cv in pv.credentials],
        } for pv in p.pools],
        "delegation": p.delegation.to_json(),
        "cron_jobs": [j.to_json() for j in p.cron_jobs],
        "cron_error": _err(p.cron_error),
        "gateway": p.gateway.to_json(),
        "auxiliary": p.auxiliary,
        "warnings": p.warnings,
    }


def to_json(root: Root, profiles: list[ProfileInventory], findings: list[Any], now: float) -> dict[str, Any]:
    """The ``hermes-admin inventory --json`` document (schema in the README)."""
    return {
        "schema": INVENTORY_SCHEMA_VERSION,
        "root": str(root.path),
        "generated_at": now,
        "profiles": [profile_to_json(p) for p in profiles],
        "findings": [f.to_json() for f in findings],
    }
