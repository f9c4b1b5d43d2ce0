"""config.yaml sections other than strategies and the fallback chain, read the way Hermes reads them.

Each reader takes the parsed node (None when the key is absent) and a warnings
list it appends to, naming the key path, when the value has the wrong shape.
Values that may be credentials are kept only as fingerprints.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from store.config import hermes_code
from store.model import custom_pool_key
from store.pools import generations
from store.pools.policy import DEFAULT_TTLS, Ttls
from store.redaction.fingerprints import fingerprint

ROUTING_KEY = "provider_routing"
ROUTING_SORTS = ("price", "throughput", "latency")
ROUTING_LISTS = ("only", "ignore", "order")
DATA_COLLECTION = ("allow", "deny")
ROUTING_KEYS = ("sort", "only", "ignore", "order", "require_parameters", "data_collection")
# Keys whose values may be credentials; they are shown only as fingerprints.
_SECRETISH = re.compile(r"(api_?key|token|secret|password|authorization|cookie)", re.I)


def redacted(value: Any, key: str = "") -> Any:
    """*value* with every credential-like key's value replaced by its fingerprint."""
    if key and _SECRETISH.search(key) and not key.endswith("_env"):
        return fingerprint(str(value)) if isinstance(value, str) and value else "<set>"
    if isinstance(value, dict):
        return {str(k): redacted(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def read_auto_activate(node: Any, w: list[str]) -> bool | None:
    """``fallback.auto_activate``: True/False, or None when unset or not a boolean."""
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


def read_routing(node: Any, w: list[str]) -> dict[str, Any]:
    """``provider_routing`` as written (Hermes passes it on as is), with a warning per odd value."""
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


def read_custom_providers(node: Any, w: list[str]) -> list[dict[str, Any]]:
    """``custom_providers`` entries that have a name, redacted, each with its ``pool_key``."""
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
        shown = {str(k): redacted(v, str(k)) for k, v in item.items()}
        shown["pool_key"] = custom_pool_key(name)
        out.append(shown)
    return out


def read_auxiliary(node: Any, w: list[str]) -> dict[str, dict[str, Any]]:
    """``auxiliary.<task>``: provider, model and the usable entries of its fallback_chain."""
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


def read_ttls(node: Any, w: list[str], root: Path | None = None) -> Ttls:
    """``hermes_admin.cooldown_ttls`` (hermes-admin's own key; the default TTLs when unusable)
    and the generation of Hermes whose rules hold: ``hermes_admin.hermes_generation``, else
    told by the Hermes checkout of the home at *root* (:mod:`store.config.hermes_code`)."""
    ttls = _read_ttls(node, w)
    told = generations.UNTOLD
    value = node.get("hermes_generation") if isinstance(node, dict) else None
    if value is not None:
        try:
            told = generations.configured(value)
        except ValueError as exc:
            w.append(f"hermes_admin.hermes_generation: {exc} (telling it from the home instead)")
    if told is generations.UNTOLD and root is not None:
        told = hermes_code.detect(root)
    return ttls if told is generations.UNTOLD else dataclasses.replace(ttls, told=told)


def _read_ttls(node: Any, w: list[str]) -> Ttls:
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

