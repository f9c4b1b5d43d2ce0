"""Locked edits of config.yaml: strategies, the fallback chain, provider routing.

Each edit goes through :func:`store.config.yamledit.locked_edit`: our config lock, a
fresh read, a round-trip edit that keeps comments, order and quoting, a check
that nothing else changed meaning, and an atomic write that keeps the file's mode.
Everything here is also importable from :mod:`store.config`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from store.authfile import ensure_home
from store.config import yamledit as ye
from store.config.providers import check_base_url, plaintext_note
from store.config.read import (
    FALLBACK_LEGACY,
    FALLBACK_LIST,
    STRATEGIES_KEY,
    FallbackEntry,
    Primary,
    effective_chain,
    primary_of,
    raw_fallbacks,
    route_identity,
)
from store.config.sections import DATA_COLLECTION, ROUTING_KEY, ROUTING_KEYS, ROUTING_LISTS, ROUTING_SORTS
from store.config.yamlcas import retry_on_change
from store.errors import BadInput
from store.lock import DEFAULT_LOCK_TIMEOUT
from store.model import STRATEGIES, validate_pool_key
from store.paths import Home

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


@retry_on_change
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


@retry_on_change
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
    base_url = check_base_url(base_url) if (base_url or "").strip() else None
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
    plain = plaintext_note(base_url)
    return ConfigChange("fallback.add", f"{FALLBACK_LIST}", None, after,
                        notes=(f"now #{new_pos} in the fallback chain",) + ((plain,) if plain else ()))


def _chain_or_index_error(plain: dict[str, Any], index: int, name: str) -> list[FallbackEntry]:
    chain = effective_chain(plain)
    if isinstance(index, bool) or not 1 <= index <= len(chain):
        raise BadInput(name, f"no fallback #{index} (the chain has {len(chain)} "
                       f"entr{'y' if len(chain) == 1 else 'ies'})")
    return chain


@retry_on_change
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


@retry_on_change
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


@retry_on_change
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


@retry_on_change
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


@retry_on_change
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
