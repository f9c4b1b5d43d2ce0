"""config.yaml: what Hermes reads from it (spec section 7), and hermes-admin's edits of it.

Reading never writes and takes no lock. A file that does not parse is an error
naming the line; a value of the wrong shape is a warning naming its key path,
and is then treated the way Hermes treats it (usually: ignored).

Where the primary model lives (read from Hermes 0.19.0 hermes_cli/runtime_provider.py
``_get_model_config`` and hermes_cli/fallback_cmd.py): ``model`` is either a mapping
with ``provider`` and ``default`` (``model.model`` is accepted as an alias when
``default`` is empty; ``base_url`` optional), or a bare string naming the model, in
which case the provider comes from elsewhere (auth.json's active provider).
``hermes fallback add`` refuses an entry whose provider and model equal the primary's.

Edits go through :func:`store.yamledit.locked_edit`: our config lock, a fresh read,
a round-trip edit that keeps comments, order and quoting, a check that nothing
else changed meaning, and an atomic write that keeps the file's mode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from . import yamledit as ye
from .actions import Change, Outcome
from .authfile import ensure_home
from .errors import BadInput, ConfigUnreadable
from .lock import DEFAULT_LOCK_TIMEOUT
from .model import DEFAULT_STRATEGY, STRATEGIES, custom_pool_key, validate_pool_key
from .paths import Home
from .policy import DEFAULT_TTLS, Ttls
from .secrets import fingerprint

STRATEGIES_KEY = "credential_pool_strategies"
FALLBACK_LIST = "fallback_providers"
FALLBACK_LEGACY = "fallback_model"
ROUTING_KEY = "provider_routing"
ROUTING_SORTS = ("price", "throughput", "latency")
ROUTING_LISTS = ("only", "ignore", "order")
DATA_COLLECTION = ("allow", "deny")
ROUTING_KEYS = ("sort", "only", "ignore", "order", "require_parameters", "data_collection")
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Keys whose values may be credentials; they are shown only as fingerprints.
_SECRETISH = re.compile(r"(api_?key|token|secret|password|authorization|cookie)", re.I)
_KNOWN_ENTRY_KEYS = {"provider", "model", "base_url", "key_env", "api_key_env", "api_key"}


def normalized_base_url(value: Any) -> str:
    """Hermes's form of a base URL for comparisons: stripped, no trailing ``/``."""
    return value.strip().rstrip("/") if isinstance(value, str) else ""


def route_identity(provider: Any, model: Any, base_url: Any) -> tuple[str, str, str]:
    """The key Hermes de-duplicates fallback entries by (lower-cased)."""
    return (str(provider or "").strip().lower(), str(model or "").strip().lower(),
            normalized_base_url(base_url).lower())


def _redacted(value: Any, key: str = "") -> Any:
    if key and _SECRETISH.search(key) and not key.endswith("_env"):
        return fingerprint(str(value)) if isinstance(value, str) and value else "<set>"
    if isinstance(value, dict):
        return {str(k): _redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


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
    raw = ye.read_bytes(home.config)
    if raw is None:
        return Config(path=home.config)
    return parse_config(raw, home.config)


def parse_config(raw: bytes, path: Path) -> Config:
    """Build a Config from config.yaml bytes (strict on syntax, lenient on shapes)."""
    data, duplicates = ye.load_plain(raw, path)
    problem = ye.top_level_problem(data)
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
        fallback_auto_activate=_auto_activate(data.get("fallback"), w),
        routing=_routing(data.get(ROUTING_KEY), w),
        custom_providers=_custom_providers(data.get("custom_providers"), w),
        auxiliary_chains=_auxiliary(data.get("auxiliary"), w),
        ttls=_ttls(data.get("hermes_admin"), w),
        primary=primary_of(data),
        warnings=w,
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
        extra={str(k): _redacted(v, str(k)) for k, v in element.items()
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


def _auto_activate(node: Any, w: list[str]) -> bool | None:
    if node is None:
        return None
    if not isinstance(node, dict):
        w.append(f"fallback: is a {type(node).__name__}, not a mapping (ignored)")
        return None
    value = node.get("auto_activate")
    if value is None or isinstance(value, bool):
        return value
    w.append(f"fallback.auto_activate: {value!r} is not true or false")
    return None


def _routing(node: Any, w: list[str]) -> dict[str, Any]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        w.append(f"{ROUTING_KEY}: is a {type(node).__name__}, not a mapping (ignored)")
        return {}
    out = {str(k): v for k, v in node.items()}
    for key, value in out.items():
        where = f"{ROUTING_KEY}.{key}"
        if key not in ROUTING_KEYS:
            w.append(f"{where}: not a key Hermes reads (kept as is; known: {', '.join(ROUTING_KEYS)})")
        elif value is None:
            continue
        elif key == "sort" and value not in ROUTING_SORTS:
            w.append(f"{where}: {value!r} is not one of {', '.join(ROUTING_SORTS)} "
                     "(Hermes passes it to OpenRouter as is)")
        elif key in ROUTING_LISTS and not (isinstance(value, list)
                                           and all(isinstance(x, str) and x for x in value)):
            w.append(f"{where}: should be a list of provider names, got {value!r}")
        elif key == "require_parameters" and not isinstance(value, bool):
            w.append(f"{where}: {value!r} is not true or false")
        elif key == "data_collection" and value not in DATA_COLLECTION:
            w.append(f"{where}: {value!r} is not one of {', '.join(DATA_COLLECTION)}")
    return out


def _custom_providers(node: Any, w: list[str]) -> list[dict[str, Any]]:
    if node is None:
        return []
    if not isinstance(node, list):
        w.append(f"custom_providers: is a {type(node).__name__}, not a list (ignored)")
        return []
    out = []
    for i, item in enumerate(node):
        if not isinstance(item, dict):
            w.append(f"custom_providers[{i}]: is a {type(item).__name__}, not a mapping (ignored)")
            continue
        name = str(item.get("name") or "").strip()
        if not name:
            w.append(f"custom_providers[{i}]: missing 'name' (ignored)")
            continue
        shown = {str(k): _redacted(v, str(k)) for k, v in item.items()}
        shown["pool_key"] = custom_pool_key(name)
        out.append(shown)
    return out


def _auxiliary(node: Any, w: list[str]) -> dict[str, dict[str, Any]]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        w.append(f"auxiliary: is a {type(node).__name__}, not a mapping (ignored)")
        return {}
    out: dict[str, dict[str, Any]] = {}
    for task, cfg in node.items():
        where = f"auxiliary.{task}"
        if not isinstance(cfg, dict):
            w.append(f"{where}: is a {type(cfg).__name__}, not a mapping (ignored)")
            continue
        chain_node = cfg.get("fallback_chain")
        chain: list[dict[str, Any]] = []
        if chain_node is not None and not isinstance(chain_node, list):
            w.append(f"{where}.fallback_chain: is a {type(chain_node).__name__}, not a list (ignored)")
        for i, entry in enumerate(chain_node if isinstance(chain_node, list) else []):
            ew = f"{where}.fallback_chain[{i}]"
            if not isinstance(entry, dict) or not str(entry.get("provider") or "").strip():
                w.append(f"{ew}: needs at least a 'provider' (ignored, as Hermes does)")
                continue
            timeout = entry.get("timeout")
            if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                        or timeout <= 0):
                w.append(f"{ew}.timeout: {timeout!r} is not a positive number of seconds "
                         "(Hermes uses the task's timeout)")
                timeout = None
            chain.append({"provider": str(entry.get("provider")).strip(),
                          "model": str(entry.get("model") or "").strip() or None,
                          "timeout": timeout})
        out[str(task)] = {"provider": cfg.get("provider"), "model": cfg.get("model"),
                          "fallback_chain": chain}
    return out


def _ttls(node: Any, w: list[str]) -> Ttls:
    if node is None:
        return DEFAULT_TTLS
    if not isinstance(node, dict):
        w.append(f"hermes_admin: is a {type(node).__name__}, not a mapping (ignored)")
        return DEFAULT_TTLS
    ttls = node.get("cooldown_ttls")
    if ttls is not None and not isinstance(ttls, dict):
        w.append("hermes_admin.cooldown_ttls: not a mapping (using the default TTLs)")
        return DEFAULT_TTLS
    try:
        return Ttls.from_mapping(ttls)
    except ValueError as exc:
        w.append(f"hermes_admin.cooldown_ttls: {exc} (using the default TTLs)")
        return DEFAULT_TTLS



# --- edits ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigChange:
    """What one edit did, for the audit log and the operator. Never holds a secret."""

    action: str
    key: str                      # dotted key path edited
    before: Any
    after: Any
    written: bool = True          # False: nothing to do, the file was left alone
    pool: str = ""
    notes: tuple[str, ...] = ()

    def to_outcome(self) -> Outcome:
        """The change in the shape store.audit.record takes."""
        out = Outcome(f"config.{self.action}", self.pool or "config.yaml")
        out.changes.append(Change(self.pool or "config.yaml", self.key, "config.yaml",
                                  {"value": self.before}, {"value": self.after}))
        out.notes.extend(self.notes)
        return out


def _session(home: Home, touched: set[str], lock_timeout: float) -> Any:
    ensure_home(home)
    return ye.locked_edit(home.config, home.config_lock, touched=frozenset(touched),
                          lock_timeout=lock_timeout)


def _plain(value: Any) -> Any:
    """ruamel nodes -> plain Python for change records."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def _mapping_at(tree: CommentedMap, key: str, *, create: bool) -> CommentedMap | None:
    node = tree.get(key)
    if node is None:
        if not create:
            return None
        node = CommentedMap()
        ye.set_key(tree, key, node)
    if not isinstance(node, CommentedMap):
        raise BadInput("config.yaml", f"{key} is a {type(node).__name__}, not a mapping; "
                       "fix it by hand first")
    return ye.block(node)


def _delete_entry(tree: CommentedMap, top: str, key: str) -> None:
    """Delete ``top.key``; the last entry takes the whole mapping with it.

    Deleting the mapping itself (rather than emptying it first) lets the comment
    lines printed after it, which describe what follows, find their place.
    """
    node = tree[top]
    if len(node) == 1:
        ye.delete_key(tree, top)
    else:
        ye.delete_key(node, key)


def _check_pool(pool: str) -> str:
    try:
        return validate_pool_key(pool)
    except ValueError as exc:
        raise BadInput("POOL", str(exc)) from None


def set_strategy(home: Home, pool: str, strategy: str | None, *,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Set ``credential_pool_strategies.<pool>``; None removes it (and an emptied mapping).

    Only names Hermes implements are ever written.
    """
    _check_pool(pool)
    name = None
    if strategy is not None:
        name = str(strategy).strip().lower()
        if name not in STRATEGIES:
            raise BadInput("STRATEGY", f"{strategy!r} is not a strategy Hermes implements "
                           f"(one of: {', '.join(STRATEGIES)})")
    where = f"{STRATEGIES_KEY}.{pool}"
    with _session(home, {STRATEGIES_KEY}, lock_timeout) as s:
        node = _mapping_at(s.tree, STRATEGIES_KEY, create=name is not None)
        before = _plain(node.get(pool)) if node is not None else None
        if name is None:
            if node is None or pool not in node:
                return ConfigChange("strategy", where, None, None, False, pool,
                                    (f"no strategy was set for {pool}; it uses fill_first",))
            _delete_entry(s.tree, STRATEGIES_KEY, pool)
        else:
            if before == name:
                return ConfigChange("strategy", where, before, name, False, pool)
            ye.replace_value(node, pool, ye.plain_scalar(name))
        s.dirty = True
    return ConfigChange("strategy", where, before, name, True, pool)


def _fallback_seq(tree: CommentedMap) -> CommentedSeq:
    node = tree.get(FALLBACK_LIST)
    if node is None:
        seq = CommentedSeq()
        ye.set_key(tree, FALLBACK_LIST, seq)
        return seq
    if isinstance(node, CommentedMap):
        # Hermes also reads a single mapping here; make it the list it stands for.
        seq = CommentedSeq([node])
        ye.replace_value(tree, FALLBACK_LIST, seq)
        return seq
    if not isinstance(node, CommentedSeq):
        raise BadInput("config.yaml", f"{FALLBACK_LIST} is a {type(node).__name__}, not a "
                       "list; fix it by hand first")
    return ye.block(node)


def fallback_add(home: Home, provider: str, model: str, *, base_url: str | None = None,
                 key_env: str | None = None, position: int | None = None,
                 primary: tuple[str, str] | None = None,
                 lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Add a route to ``fallback_providers`` (appended, or at 1-based *position* of the chain).

    Refused: an empty provider/model, a route already in the effective chain
    (same provider, model and base URL, ignoring case and a trailing ``/``), and
    the primary model itself (*primary*, else the one config.yaml names).
    Secrets are never written here: name the env var holding the key with *key_env*.
    """
    provider = (provider or "").strip()
    model = (model or "").strip()
    if not provider:
        raise BadInput("PROVIDER", "is empty (Hermes ignores a fallback entry without a provider)")
    if not model:
        raise BadInput("MODEL", "is empty (Hermes ignores a fallback entry without a model)")
    base_url = (base_url or "").strip() or None
    if base_url is not None and not re.match(r"^https?://[^\s/]+", base_url):
        raise BadInput("--base-url", f"{base_url!r} is not an http(s) URL")
    key_env = (key_env or "").strip() or None
    if key_env is not None and not _ENV_NAME.match(key_env):
        raise BadInput("--key-env", f"{key_env!r} is not an environment variable name")
    if position is not None and (isinstance(position, bool) or position < 1):
        raise BadInput("--position", "must be 1 or more (1 = tried first)")
    ident = route_identity(provider, model, base_url)
    with _session(home, {FALLBACK_LIST}, lock_timeout) as s:
        chain = effective_chain(s.plain)
        for n, e in enumerate(chain, 1):
            if e.identity == ident:
                raise BadInput("MODEL", f"{e.describe()} is already #{n} in the fallback chain "
                               f"(from {e.origin})")
        prim = Primary(primary[0], primary[1]) if primary else primary_of(s.plain)
        if prim is not None and prim.provider and \
                (prim.provider.lower(), prim.model.lower()) == (provider.lower(), model.lower()):
            raise BadInput("MODEL", f"{model} via {provider} is the primary model; a provider "
                           "cannot be its own fallback")
        listed = [e for e in chain if e.origin == FALLBACK_LIST]
        if position is not None and position > len(listed) + 1:
            raise BadInput("--position", f"must be between 1 and {len(listed) + 1} "
                           "(fallback_model entries always come after fallback_providers)")
        seq = _fallback_seq(s.tree)
        at = listed[position - 1].origin_index if position and position <= len(listed) else len(seq)
        entry = CommentedMap()
        entry["provider"] = ye.plain_scalar(provider)
        entry["model"] = ye.plain_scalar(model)
        if base_url:
            entry["base_url"] = ye.plain_scalar(base_url)
        if key_env:
            entry["key_env"] = ye.plain_scalar(key_env)
        parts = ye.seq_parts(s.tree, FALLBACK_LIST)
        parts.items.insert(at, ye.SeqItem(entry))
        ye.rebuild_seq(parts)
        s.dirty = True
        new_pos = (position or len(listed) + 1)
    after = {k: v for k, v in (("provider", provider), ("model", model), ("base_url", base_url),
                               ("key_env", key_env)) if v}
    return ConfigChange("fallback.add", f"{FALLBACK_LIST}", None, after,
                        notes=(f"now #{new_pos} in the fallback chain",))


def _chain_or_index_error(plain: dict[str, Any], index: int, name: str) -> list[FallbackEntry]:
    chain = effective_chain(plain)
    if isinstance(index, bool) or not 1 <= index <= len(chain):
        raise BadInput(name, f"no fallback #{index} (the chain has {len(chain)} "
                       f"entr{'y' if len(chain) == 1 else 'ies'})")
    return chain


def fallback_remove(home: Home, index: int, *,
                    lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Remove entry #*index* (1-based) of the effective chain from the key it came from.

    Entries Hermes ignores as duplicates of it are removed too, or the route
    would come straight back into the chain from them.
    """
    with _session(home, {FALLBACK_LIST, FALLBACK_LEGACY}, lock_timeout) as s:
        chain = _chain_or_index_error(s.plain, index, "INDEX")
        gone = chain[index - 1]
        doomed = [r for r in raw_fallbacks(s.plain)
                  if r.entry is not None and r.entry.identity == gone.identity]
        for origin in (FALLBACK_LIST, FALLBACK_LEGACY):
            indexes = {r.index for r in doomed if r.origin == origin}
            if not indexes:
                continue
            node = s.tree[origin]
            if isinstance(node, CommentedSeq):
                parts = ye.seq_parts(s.tree, origin)
                for i in sorted(indexes, reverse=True):
                    parts.drop(i)
                ye.rebuild_seq(parts)
                if origin == FALLBACK_LEGACY and not parts.items:
                    ye.delete_key(s.tree, origin)
            else:
                ye.delete_key(s.tree, origin)
        s.dirty = True
    notes = [f"removed {gone.describe()} (was #{index})"]
    if len(doomed) > 1:
        notes.append(f"also removed {len(doomed) - 1} duplicate entr"
                     f"{'y' if len(doomed) == 2 else 'ies'} Hermes was ignoring")
    return ConfigChange("fallback.remove", gone.origin, _entry_record(gone), None,
                        notes=tuple(notes))


def _entry_record(e: FallbackEntry) -> dict[str, Any]:
    return {k: v for k, v in e.to_dict().items() if not (v is None or v == {})}


def fallback_move(home: Home, index: int, new_index: int, *,
                  lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Move chain entry #*index* to #*new_index* (1-based) within ``fallback_providers``."""
    with _session(home, {FALLBACK_LIST}, lock_timeout) as s:
        chain = _chain_or_index_error(s.plain, index, "INDEX")
        entry = chain[index - 1]
        if entry.origin != FALLBACK_LIST:
            raise BadInput("INDEX", f"#{index} comes from the legacy fallback_model key, which "
                           "Hermes always tries after fallback_providers; remove it and add it "
                           "again to place it")
        listed = [e for e in chain if e.origin == FALLBACK_LIST]
        if isinstance(new_index, bool) or not 1 <= new_index <= len(listed):
            raise BadInput("NEW_INDEX", f"must be between 1 and {len(listed)} (later positions "
                           "hold fallback_model entries, which always come last)")
        if new_index == index:
            return ConfigChange("fallback.move", FALLBACK_LIST, index, new_index, False)
        parts = ye.seq_parts(s.tree, FALLBACK_LIST)
        item = parts.items.pop(entry.origin_index)
        # After the pop, inserting at the target's original raw index lands before it
        # when moving up and after it when moving down, which is what a move means.
        parts.items.insert(listed[new_index - 1].origin_index, item)
        ye.rebuild_seq(parts)
        s.dirty = True
    return ConfigChange("fallback.move", FALLBACK_LIST, index, new_index,
                        notes=(f"moved {entry.describe()} from #{index} to #{new_index}",))


def fallback_clear(home: Home, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Remove ``fallback_providers`` and ``fallback_model`` entirely."""
    with _session(home, {FALLBACK_LIST, FALLBACK_LEGACY}, lock_timeout) as s:
        before = [_entry_record(e) for e in effective_chain(s.plain)]
        present = [k for k in (FALLBACK_LIST, FALLBACK_LEGACY) if k in s.tree]
        if not present:
            return ConfigChange("fallback.clear", FALLBACK_LIST, [], [], False)
        for key in present:
            ye.delete_key(s.tree, key)
        s.dirty = True
    return ConfigChange("fallback.clear", FALLBACK_LIST, before, [],
                        notes=(f"removed {len(before)} fallback entr"
                               f"{'y' if len(before) == 1 else 'ies'}",))


def parse_routing_value(key: str, value: str) -> Any:
    """Parse the CLI form of a provider_routing value (``only a,b,c``, ``sort price``...)."""
    key = str(key or "").strip()
    if key not in ROUTING_KEYS:
        raise BadInput("KEY", f"unknown routing key {key!r} (known: {', '.join(ROUTING_KEYS)})")
    text = str(value if value is not None else "").strip()
    if key == "sort":
        if text.lower() not in ROUTING_SORTS:
            raise BadInput("VALUE", f"sort must be one of {', '.join(ROUTING_SORTS)}, got {text!r}")
        return text.lower()
    if key in ROUTING_LISTS:
        names = [p.strip() for p in text.split(",") if p.strip()]
        for name in names:
            if any(c.isspace() for c in name):
                raise BadInput("VALUE", f"{key}: provider name {name!r} has a space; separate "
                               "names with commas")
        return names
    if key == "require_parameters":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise BadInput("VALUE", f"require_parameters must be true or false, got {text!r}")
    if text.lower() not in DATA_COLLECTION:
        raise BadInput("VALUE", f"data_collection must be allow or deny, got {text!r}")
    return text.lower()


def routing_set(home: Home, key: str, value: str, *,
                lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Set one ``provider_routing`` key from its CLI string form."""
    parsed = parse_routing_value(key, value)
    key = key.strip()
    where = f"{ROUTING_KEY}.{key}"
    with _session(home, {ROUTING_KEY}, lock_timeout) as s:
        node = _mapping_at(s.tree, ROUTING_KEY, create=True)
        assert node is not None
        old = node.get(key)
        before = _plain(old)
        if before == parsed and type(before) is type(parsed):
            return ConfigChange("routing.set", where, before, parsed, False)
        if isinstance(parsed, list):
            new: Any = CommentedSeq(ye.plain_scalar(p) for p in parsed)
            if not (isinstance(old, CommentedSeq) and old.fa.flow_style() is False and parsed):
                new.fa.set_flow_style()   # the compact `[a, b]` form the Hermes docs use
        elif isinstance(parsed, str):
            new = ye.plain_scalar(parsed)
        else:
            new = parsed
        ye.replace_value(node, key, new)
        s.dirty = True
    return ConfigChange("routing.set", where, before, parsed)


def routing_unset(home: Home, key: str, *,
                  lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> ConfigChange:
    """Remove one ``provider_routing`` key (an unknown key that is present may be removed)."""
    key = str(key or "").strip()
    where = f"{ROUTING_KEY}.{key}"
    with _session(home, {ROUTING_KEY}, lock_timeout) as s:
        node = _mapping_at(s.tree, ROUTING_KEY, create=False)
        if node is None or key not in node:
            if key not in ROUTING_KEYS:
                raise BadInput("KEY", f"unknown routing key {key!r} (known: "
                               f"{', '.join(ROUTING_KEYS)})")
            return ConfigChange("routing.unset", where, None, None, False,
                                notes=(f"{key} was not set",))
        before = _plain(node[key])
        _delete_entry(s.tree, ROUTING_KEY, key)
        s.dirty = True
    return ConfigChange("routing.unset", where, before, None)
