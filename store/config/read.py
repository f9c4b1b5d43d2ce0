"""config.yaml: what Hermes reads from it (spec section 7).

Reading never writes and takes no lock. A file that does not parse is an error
naming the line; a value of the wrong shape is a warning naming its key path,
and is then treated the way Hermes treats it (usually: ignored).

Where the primary model lives (read from Hermes 0.19.0 hermes_cli/runtime_provider.py
``_get_model_config`` and hermes_cli/fallback_cmd.py): ``model`` is either a mapping
with ``provider`` and ``default`` (``model.model`` is accepted as an alias when
``default`` is empty; ``base_url`` optional), or a bare string naming the model, in
which case the provider comes from elsewhere (auth.json's active provider).
``hermes fallback add`` refuses an entry whose provider and model equal the primary's.

The other sections are read in :mod:`store.config.sections`. The locked edits
(``set_strategy``, ``fallback_*``, ``routing_*``) live in :mod:`store.config.edit`,
which imports this module; :mod:`store.config` offers both. Readers that must start
fast (the agents' runtime, the watcher) import this module and skip ruamel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.config import yamlread
from store.config.sections import (
    ROUTING_KEY,
    read_auto_activate,
    read_auxiliary,
    read_custom_providers,
    read_routing,
    read_ttls,
    redacted,
)
from store.errors import ConfigUnreadable
from store.model import DEFAULT_STRATEGY, STRATEGIES, validate_pool_key
from store.paths import Home
from store.pools.policy import DEFAULT_TTLS, Ttls

STRATEGIES_KEY = "credential_pool_strategies"
FALLBACK_LIST = "fallback_providers"
FALLBACK_LEGACY = "fallback_model"
_KNOWN_ENTRY_KEYS = {"provider", "model", "base_url", "key_env", "api_key_env", "api_key"}


def normalized_base_url(value: Any) -> str:
    """Hermes's form of a base URL for comparisons: stripped, no trailing ``/``."""
    return value.strip().rstrip("/") if isinstance(value, str) else ""


def route_identity(provider: Any, model: Any, base_url: Any) -> tuple[str, str, str]:
    """The key Hermes de-duplicates fallback entries by (lower-cased)."""
    return (str(provider or "").strip().lower(), str(model or "").strip().lower(),
            normalized_base_url(base_url).lower())


@dataclass(frozen=True)
class FallbackEntry:
    """One entry of the effective fallback chain. Never holds an inline api_key."""

    provider: str
    model: str
    base_url: str | None
    key_env: str | None
    has_api_key: bool
    origin: str            # "fallback_providers" | "fallback_model"
    origin_index: int      # 0-based index in that key's list (0 for a single mapping)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[str, str, str]:
        return route_identity(self.provider, self.model, self.base_url)

    def describe(self) -> str:
        return f"{self.model} via {self.provider}" + (f" [{self.base_url}]" if self.base_url else "")

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "key_env": self.key_env, "has_api_key": self.has_api_key,
                "origin": self.origin, "origin_index": self.origin_index, "extra": self.extra}


@dataclass(frozen=True)
class Primary:
    """The primary model from ``model`` (provider None when ``model`` is a bare string)."""

    provider: str | None
    model: str
    base_url: str | None = None


@dataclass(frozen=True)
class RawFallback:
    """One element of fallback_providers/fallback_model as written, usable or not."""

    origin: str
    index: int
    entry: FallbackEntry | None
    problem: str | None       # why Hermes ignores it (None when it is in the chain)

    @property
    def where(self) -> str:
        return f"{self.origin}[{self.index}]" if self.index >= 0 else self.origin


@dataclass(frozen=True)
class Config:
    """What config.yaml says, as Hermes would read it, plus hermes-admin's own keys."""

    path: Path
    exists: bool = False
    raw: bytes | None = field(default=None, repr=False)   # may hold inline api keys
    strategies: dict[str, str] = field(default_factory=dict)
    unknown_strategies: dict[str, str] = field(default_factory=dict)
    fallback_chain: list[FallbackEntry] = field(default_factory=list)
    fallback_auto_activate: bool | None = None
    routing: dict[str, Any] = field(default_factory=dict)
    custom_providers: list[dict[str, Any]] = field(default_factory=list)
    auxiliary_chains: dict[str, dict[str, Any]] = field(default_factory=dict)
    ttls: Ttls = DEFAULT_TTLS
    primary: Primary | None = None
    warnings: list[str] = field(default_factory=list)
    # The parsed mapping, for readers of other sections (store.config.profile_view); may hold keys.
    data: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def strategy_for(self, pool: str) -> str:
        """The strategy Hermes uses for *pool*: its lower-cased name if known, else fill_first."""
        name = str(self.strategies.get(pool) or "").strip().lower()
        return name if name in STRATEGIES else DEFAULT_STRATEGY

    @property
    def effective_strategies(self) -> dict[str, str]:
        """pool -> the strategy Hermes actually runs (for views that pass strategies on)."""
        return {pool: self.strategy_for(pool) for pool in self.strategies}


# --- reading -------------------------------------------------------------------------

def read_config(home: Home) -> Config:
    """Read ``<home>/config.yaml`` without locking or writing. Missing -> empty Config.

    Raises ConfigUnreadable when the file cannot be read, does not parse (with the
    1-based line and column) or its top level is not a mapping.
    """
    raw = yamlread.read_bytes(home.config)
    if raw is None:    # no config.yaml: the Hermes checkout may still tell the generation
        return Config(path=home.config, ttls=read_ttls(None, [], home.root))
    return parse_config(raw, home.config)


def parse_config(raw: bytes, path: Path) -> Config:
    """Build a Config from config.yaml bytes (strict on syntax, lenient on shapes)."""
    data, duplicates = yamlread.load_plain(raw, path)
    problem = yamlread.top_level_problem(data)
    if problem:
        raise ConfigUnreadable(path, problem)
    warnings = list(duplicates)
    if data is None:
        warnings.append("config.yaml is empty")
    return config_from_data(data or {}, path, raw, warnings)


def config_from_data(data: dict[str, Any], path: Path, raw: bytes | None = None,
                     warnings: list[str] | None = None) -> Config:
    """Interpret an already-parsed config mapping."""
    w: list[str] = list(warnings or [])
    strategies, unknown = _strategies(data.get(STRATEGIES_KEY), w)
    raws = raw_fallbacks(data, w)
    return Config(
        path=path, exists=raw is not None, raw=raw,
        strategies=strategies, unknown_strategies=unknown,
        fallback_chain=[r.entry for r in raws if r.entry is not None and r.problem is None],
        fallback_auto_activate=read_auto_activate(data.get("fallback"), w),
        routing=read_routing(data.get(ROUTING_KEY), w),
        custom_providers=read_custom_providers(data.get("custom_providers"), w),
        auxiliary_chains=read_auxiliary(data.get("auxiliary"), w),
        ttls=read_ttls(data.get("hermes_admin"), w, path.parent),
        primary=primary_of(data),
        warnings=w,
        data=data,
    )


def _strategies(node: Any, w: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    if node is None:
        return {}, {}
    if not isinstance(node, dict):
        w.append(f"{STRATEGIES_KEY}: is a {type(node).__name__}, not a mapping (ignored, "
                 "every pool uses fill_first)")
        return {}, {}
    out: dict[str, str] = {}
    unknown: dict[str, str] = {}
    for key, value in node.items():
        pool = str(key)
        if value is None:
            continue
        written = value if isinstance(value, str) else str(value)
        out[pool] = written
        try:
            validate_pool_key(pool)
        except ValueError as exc:
            w.append(f"{STRATEGIES_KEY}.{pool}: {exc}; Hermes will never apply this entry")
        if written.strip().lower() not in STRATEGIES:
            unknown[pool] = written
            w.append(f"{STRATEGIES_KEY}.{pool}: unknown strategy {written!r} (Hermes uses "
                     f"fill_first; known: {', '.join(STRATEGIES)})")
    return out, unknown


def raw_fallbacks(data: dict[str, Any], w: list[str] | None = None) -> list[RawFallback]:
    """Every fallback element as written, in Hermes's merge order, with why it is ignored."""
    out: list[RawFallback] = []
    seen: dict[tuple[str, str, str], str] = {}
    for origin in (FALLBACK_LIST, FALLBACK_LEGACY):
        node = data.get(origin)
        if node is None:
            continue
        if isinstance(node, dict):
            elements: list[tuple[int, Any]] = [(-1, node)]
        elif isinstance(node, list):
            elements = list(enumerate(node))
        else:
            if w is not None:
                w.append(f"{origin}: is a {type(node).__name__}, not a list (ignored, as Hermes does)")
            continue
        for index, element in elements:
            item = _raw_entry(origin, index, element, seen)
            if item.problem and w is not None:
                w.append(f"{item.where}: {item.problem}")
            if item.entry is not None and item.problem is None:
                seen[item.entry.identity] = item.where
            out.append(item)
    return out


def _raw_entry(origin: str, index: int, element: Any,
               seen: dict[tuple[str, str, str], str]) -> RawFallback:
    if not isinstance(element, dict):
        return RawFallback(origin, index, None,
                           f"is a {type(element).__name__}, not a mapping (ignored, as Hermes does)")
    provider = str(element.get("provider") or "").strip()
    model = str(element.get("model") or "").strip()
    missing = [k for k, v in (("provider", provider), ("model", model)) if not v]
    if missing:
        names = " and ".join(repr(k) for k in missing)
        return RawFallback(origin, index, None, f"missing {names} (ignored, as Hermes does)")
    key_env = str(element.get("key_env") or element.get("api_key_env") or "").strip() or None
    entry = FallbackEntry(
        provider=provider, model=model,
        base_url=normalized_base_url(element.get("base_url")) or None,
        key_env=key_env, has_api_key=bool(str(element.get("api_key") or "").strip()),
        origin=origin, origin_index=max(index, 0),
        extra={str(k): redacted(v, str(k)) for k, v in element.items()
               if str(k) not in _KNOWN_ENTRY_KEYS},
    )
    if entry.identity in seen:
        return RawFallback(origin, index, entry,
                           f"duplicate of {seen[entry.identity]} (ignored, as Hermes does)")
    return RawFallback(origin, index, entry, None)


def effective_chain(data: dict[str, Any]) -> list[FallbackEntry]:
    """The chain Hermes tries: fallback_providers then fallback_model, de-duplicated."""
    return [r.entry for r in raw_fallbacks(data) if r.entry is not None and r.problem is None]


def primary_of(data: dict[str, Any]) -> Primary | None:
    """The primary model as Hermes 0.19 reads it (see the module docstring)."""
    node = data.get("model")
    if isinstance(node, dict):
        model = str(node.get("default") or node.get("model") or "").strip()
        if not model:
            return None
        provider = str(node.get("provider") or "").strip() or None
        return Primary(provider, model, normalized_base_url(node.get("base_url")) or None)
    if isinstance(node, str) and node.strip():
        return Primary(None, node.strip())
    return None
