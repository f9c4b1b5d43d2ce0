"""config.yaml, the public face: what Hermes reads from it and the locked edits of it.

Reading lives in :mod:`store.config_read` (no lock, never writes); the comment-keeping
edits under the config lock live in :mod:`store.config_edit`, which builds on the reader.
This module only gathers both, so callers need one name and neither module imports the
other both ways. Code that must start fast and only reads (the agents' runtime, the
watcher) imports :mod:`store.config_read` and skips ruamel.
"""

from __future__ import annotations

from .config_edit import (
    ConfigChange,
    fallback_add,
    fallback_clear,
    fallback_move,
    fallback_remove,
    parse_routing_value,
    routing_set,
    routing_unset,
    set_strategy,
)
from .config_read import (
    DATA_COLLECTION,
    FALLBACK_LEGACY,
    FALLBACK_LIST,
    ROUTING_KEY,
    ROUTING_KEYS,
    ROUTING_LISTS,
    ROUTING_SORTS,
    STRATEGIES_KEY,
    Config,
    FallbackEntry,
    Primary,
    RawFallback,
    config_from_data,
    effective_chain,
    normalized_base_url,
    parse_config,
    primary_of,
    raw_fallbacks,
    read_config,
    route_identity,
)

__all__ = [
    "DATA_COLLECTION", "FALLBACK_LEGACY", "FALLBACK_LIST", "ROUTING_KEY", "ROUTING_KEYS", "ROUTING_LISTS",
    "ROUTING_SORTS", "STRATEGIES_KEY", "Config", "ConfigChange", "FallbackEntry", "Primary", "RawFallback",
    "config_from_data", "effective_chain", "fallback_add", "fallback_clear", "fallback_move",
    "fallback_remove", "normalized_base_url", "parse_config", "parse_routing_value", "primary_of",
    "raw_fallbacks", "read_config", "route_identity", "routing_set", "routing_unset", "set_strategy",
]
