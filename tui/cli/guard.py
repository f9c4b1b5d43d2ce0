"""Arguments are checked once, after parsing and before any verb runs (exit 2, nothing written).

- Keys only where keys belong: a key-shaped label, reason, base URL, ``--key-env``, pool or
  provider name, or TARGET is refused with a hint that keys go in ``--api-key -``. The value
  is never echoed.
- Inert text: control, bidi and zero-width characters in any name or free text are refused.
- Names are checked: a pool ``add`` would create, a ``strategy`` pool and a ``fallback``
  provider must be a Hermes provider id (aliases are mapped to it) or ``custom:<name>``;
  ``add --new-pool`` says a name outside the registry is meant.
- An empty or blank TARGET is refused; ``reset POOL ""`` never means the whole pool.
- Only ``add`` (and the dashboard/demo) may start from a missing home.
- A home whose auth.json or .env Hermes encrypted (``hermes encrypt``) is refused, exit 3.
- A key is one line of printable ASCII (:func:`read_key`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from store import authfile, envelope, safeio
from store.config import providers
from store.errors import BadInput, StoreUnreadable
from store.ops import textcheck
from store.paths import resolve_home
from store.redaction import redact

# Namespace attribute -> the argument's name in messages. Free text and names alike.
TEXT_ARGS = {
    "pool": "POOL", "target": "TARGET", "label": "--label", "reason": "--reason",
    "base_url": "--base-url", "key_env": "--key-env", "provider": "PROVIDER", "model": "MODEL",
    "strategy": "STRATEGY", "name": "--name", "profile": "--profile", "key": "KEY",
    "value": "VALUE", "fp": "FP",
}
# Model names are long slash-and-dot tokens; only a provider-prefixed key is refused there.
_PREFIX_ONLY = {"model", "value"}


def check_text(field: str, text: str, *, key_check: str = "") -> None:
    textcheck.check_text(field, text, keys="prefix" if key_check in _PREFIX_ONLY else "any")


def _check_names(args: argparse.Namespace, verb: str) -> None:
    if verb == "add" and not getattr(args, "new_pool", False):
        args.pool = providers.checked("POOL", args.pool, "add --new-pool")
    elif verb == "strategy" and args.pool and args.strategy:
        args.pool = providers.checked("POOL", args.pool, None, accept=_store_pools(args))
    elif verb == "fallback" and getattr(args, "fallback_verb", None) == "add":
        args.provider = providers.checked("PROVIDER", args.provider, None)


def _store_pools(args: argparse.Namespace) -> frozenset[str]:
    try:
        snap = authfile.read_store(resolve_home(getattr(args, "home", None)))
    except StoreUnreadable:
        return frozenset()
    pools = (snap.doc or {}).get("credential_pool") if isinstance(snap.doc, dict) else None
    return frozenset(pools) if isinstance(pools, dict) else frozenset()


def check(args: argparse.Namespace, *, creates_home: bool = False) -> None:
    """Every argument check that needs no store; BadInput (exit 2) on the first failure."""
    verb = str(getattr(args, "verb", "") or "")
    for attr, field in TEXT_ARGS.items():
        value = getattr(args, attr, None)
        if isinstance(value, str):
            check_text(field, value, key_check=attr)
    target = getattr(args, "target", None)
    if isinstance(target, str) and not target.strip():
        raise BadInput("TARGET", "is empty; name a credential by id, label or #index "
                       "(leave TARGET out to mean the whole pool)")
    pool = getattr(args, "pool", None)
    if isinstance(pool, str) and not pool.strip():     # `list ""` never means every pool
        raise BadInput("POOL", "is empty; name a pool" + (" (leave POOL out to list every pool)"
                                                          if verb == "list" else ""))
    _check_names(args, verb)
    key = getattr(args, "api_key", None)
    if isinstance(key, str) and key != "-":
        check_key(key, "--api-key")
    # Only `add` (and the demo, and the console's empty-home screen) may start on a missing
    # home; a verb aimed at a mistyped --home exits 3 saying so, `list --json` included.
    # A root-wide verb given --root and no --home has no home to check.
    rooted = verb in ("inventory", "monitor", "web") and getattr(args, "root", None) and not getattr(args, "home", None)
    if not (creates_home or verb in ("add", "demo", "fleet", "") or rooted
            or getattr(args, "all_profiles", False)):
        home = resolve_home(getattr(args, "home", None))
        if not home.root.is_dir():
            raise StoreUnreadable(home.root, "no Hermes home here (only `add` creates one; "
                                  "check --home or $HERMES_HOME)")
    if not (creates_home or verb in ("demo", "fleet", "monitor", "") or rooted
            or getattr(args, "all_profiles", False)):
        # Hermes's encrypted envelope in auth.json or .env: every verb says so, exit 3.
        home = resolve_home(getattr(args, "home", None))
        envelope.refuse_encrypted([(home.auth, safeio.AUTH_CAP), (home.env, safeio.ENV_CAP)])


def check_key(key: str, field: str) -> str:
    """*key* if it is one run of printable ASCII; BadInput naming what is wrong otherwise."""
    if not key:
        raise BadInput(field, "the key is empty")
    for i, ch in enumerate(key):
        if ch.isspace():
            raise BadInput(field, f"the key holds whitespace at position {i + 1}; paste it on one line")
        if not 0x21 <= ord(ch) <= 0x7E:
            control = ord(ch) < 0x21 or ord(ch) == 0x7F
            what = "a control character" if control else "a non-ASCII character (zero-width, BOM or lookalike)"
            code = redact.escape_controls(ch) if control else f"U+{ord(ch):04X}"
            raise BadInput(field, f"the key holds {what} ({code} at position {i + 1}); nothing was stored")
    return key


def read_key(stream: Any = None, cap: int = 65536) -> str:
    """The key on stdin: exactly one line of printable ASCII (a final newline is fine)."""
    stream = sys.stdin if stream is None else stream
    raw = stream.buffer.read(cap + 1) if hasattr(stream, "buffer") else stream.read(cap + 1)
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("--api-key", "stdin is not UTF-8 text; nothing was stored") from None
    if len(raw) > cap:
        raise BadInput("--api-key", f"stdin held more than {cap} bytes; a key is one short line")
    body = raw[:-2] if raw.endswith("\r\n") else raw[:-1] if raw.endswith("\n") else raw
    lines = body.split("\n")
    if len(lines) > 1:
        raise BadInput("--api-key", f"stdin held {len(lines)} lines; a key is exactly one line")
    if not body:
        raise BadInput("--api-key", "nothing on stdin (expected the key on one line)")
    return check_key(body, "--api-key")
