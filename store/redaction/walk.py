"""Where a home's secrets sit: the field names and references that make a value a secret.

A string is a secret of the home when its field's name says so (``access_token``,
``refresh_token``, ``agent_key``, ``api_key`` and any ``*_token``/``*_secret``/``*_password``,
at any depth of a row or of config.yaml), when it is the password of a ``*url`` field
(``base_url``, ``inference_base_url``: store.redaction.urls), or when it is a ``.env`` value
that a row (``source: env:VAR``) or config (``key_env: VAR``) borrows, or whose variable's
name says key/token/secret/password. :func:`walk_secrets` collects them from parsed JSON or
YAML; the redactors of store.redaction.redact are built from what it finds.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from store.redaction.urls import passwords as url_passwords

# Field names (store rows, config at any depth) whose string values are secrets.
_SECRET_NAME = re.compile(r"(?:^|_)(?:token|secret|password|api_?key|agent_key|access_key)$",
                          re.IGNORECASE)
_ENV_SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)

_SECRET, _ENV_REF, _SOURCE, _URL, _OTHER = range(5)


@functools.lru_cache(maxsize=4096)
def _field_kind(name: str) -> int:
    """What a string under field *name* is (field names repeat: one regex search each)."""
    if _SECRET_NAME.search(name):
        return _SECRET
    if name in ("key_env", "api_key_env"):
        return _ENV_REF
    if name.lower().endswith("url"):
        return _URL               # base_url, inference_base_url: a password in it is a secret
    return _SOURCE if name == "source" else _OTHER


def walk_secrets(node: Any, out: set[str], env_refs: set[str], depth: int = 0) -> None:
    """Add to *out* every secret under *node*, and to *env_refs* every ``.env`` variable it
    borrows (a walk stops 64 levels deep: nothing real nests that far)."""
    if depth > 64:
        return
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, str):
                kind = _field_kind(k if isinstance(k, str) else str(k))
                if kind == _SECRET:
                    out.add(v)
                elif kind == _ENV_REF:
                    env_refs.add(v)
                elif kind == _SOURCE and v.startswith("env:"):
                    env_refs.add(v[4:])
                elif kind == _URL:
                    out.update(url_passwords(v))
            elif isinstance(v, (dict, list)):
                walk_secrets(v, out, env_refs, depth + 1)
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, (dict, list)):
                walk_secrets(v, out, env_refs, depth + 1)


def env_borrowed(name: str, refs: set[str] | frozenset[str]) -> bool:
    """True when the ``.env`` variable *name* holds a secret: borrowed (*refs*) or named so."""
    return name in refs or bool(_ENV_SECRET_NAME.search(name))


def walked_row(row: Any) -> tuple[Any, frozenset[str], frozenset[str]]:
    """(row, its secrets, its env references), found at the depth a whole-document walk
    meets a pool's row."""
    f: set[str] = set()
    r: set[str] = set()
    walk_secrets(row, f, r, 3)
    return (row, frozenset(f), frozenset(r))
