"""The parts of config.yaml an agent process needs: strategies, TTLs and the fallback chain.

:class:`ConfigView` re-reads config.yaml when it changes and keeps the last good one when
it cannot be read; :class:`Route` is one entry of an agent's chain; :func:`pool_for` maps a
fallback entry to the pool it draws from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from store.config.read import read_config
from store.paths import Home
from store.pools import policy


@dataclass(frozen=True)
class Route:
    """One entry of the agent's chain: a pool (or a key taken from the environment)."""

    pool: str | None
    model: str | None = None
    base_url: str | None = None
    key_env: str | None = None
    provider: str | None = None

    @property
    def name(self) -> str:
        return self.pool or f"{self.provider or 'custom'}:{self.base_url or self.key_env}"


class ConfigView:
    """The parts of config.yaml the runtime needs, re-read when the file changes.

    A config that cannot be read keeps the last good one (or defaults): an agent keeps
    working on a half-written config.yaml, as Hermes does.
    """

    def __init__(self, home: Home, loader: Callable[[Home], Any] | None = None) -> None:
        self.home = home
        self.loader = loader or _read_config
        self._cfg: Any = None
        self._stamp: tuple[int, int] | None = None
        self.error: str | None = None

    def get(self) -> Any:
        try:
            st = self.home.config.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = (0, 0)
        if stamp != self._stamp or self._cfg is None:
            try:
                self._cfg = self.loader(self.home)
                self.error = None
            except Exception as exc:
                self.error = str(exc)
            self._stamp = stamp
        return self._cfg

    def strategy_for(self, pool: str) -> str:
        cfg = self.get()
        try:
            return str(cfg.strategy_for(pool)) if cfg is not None else policy.DEFAULT_STRATEGY
        except Exception:
            return policy.DEFAULT_STRATEGY

    @property
    def ttls(self) -> policy.Ttls:
        cfg = self.get()
        ttls = getattr(cfg, "ttls", None)
        return ttls if isinstance(ttls, policy.Ttls) else policy.DEFAULT_TTLS

    def fallback_routes(self) -> list[Route]:
        cfg = self.get()
        chain = list(getattr(cfg, "fallback_chain", None) or [])
        customs = list(getattr(cfg, "custom_providers", None) or [])
        routes = []
        for entry in chain:
            provider = str(_field(entry, "provider") or "").strip().lower()
            model = _field(entry, "model")
            if not provider or not model:
                continue
            base_url = _field(entry, "base_url")
            pool = pool_for(provider, base_url, customs)
            routes.append(Route(pool, str(model), base_url, _field(entry, "key_env"), provider))
        return routes


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def pool_for(provider: str, base_url: str | None, custom_providers: list[Any]) -> str | None:
    """The pool key a fallback entry draws from: the provider id, or for ``custom`` the
    ``custom:<name>`` whose base_url matches; None when only a key_env can serve it."""
    if provider.startswith("custom:"):
        return provider
    if provider != "custom":
        return provider
    want = (base_url or "").rstrip("/").lower()
    for cp in custom_providers:
        name, url = _field(cp, "name"), _field(cp, "base_url")
        if name and want and str(url or "").rstrip("/").lower() == want:
            return "custom:" + str(name).strip().lower().replace(" ", "-")
    return None


def _read_config(home: Home) -> Any:
    return read_config(home)
