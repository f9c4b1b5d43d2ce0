"""The parts of config.yaml an agent process needs: strategies, TTLs and the fallback chain.

:class:`ConfigView` re-reads config.yaml when it changes and keeps the last good one when
it cannot be read; :class:`Route` is one entry of an agent's chain; :func:`pool_for` maps a
fallback entry to the pool it draws from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store.config.read import Config, read_config
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

    def __init__(self, home: Home, loader: Callable[[Home], Config] | None = None) -> None:
        self.home = home
        self.loader = loader or read_config
        self._cfg: Config | None = None
        self._stamp: tuple[int, int] | None = None
        self.error: str | None = None

    def get(self) -> Config | None:
        """The config as last read (re-read when the file changed); None until one parses."""
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
        return cfg.strategy_for(pool) if cfg is not None else policy.DEFAULT_STRATEGY

    @property
    def ttls(self) -> policy.Ttls:
        cfg = self.get()
        return cfg.ttls if cfg is not None else policy.DEFAULT_TTLS

    def fallback_routes(self) -> list[Route]:
        cfg = self.get()
        if cfg is None:
            return []
        routes = []
        for entry in cfg.fallback_chain:
            provider = entry.provider.strip().lower()
            if not provider or not entry.model:
                continue
            pool = pool_for(provider, entry.base_url, cfg.custom_providers)
            routes.append(Route(pool, entry.model, entry.base_url, entry.key_env, provider))
        return routes


def pool_for(provider: str, base_url: str | None, custom_providers: list[dict[str, Any]]) -> str | None:
    """The pool key a fallback entry draws from: the provider id, or for ``custom`` the
    ``custom:<name>`` whose base_url matches; None when only a key_env can serve it."""
    if provider.startswith("custom:"):
        return provider
    if provider != "custom":
        return provider
    want = (base_url or "").rstrip("/").lower()
    for cp in custom_providers:
        name, url = cp.get("name"), cp.get("base_url")
        if name and want and str(url or "").rstrip("/").lower() == want:
            return "custom:" + str(name).strip().lower().replace(" ", "-")
    return None
