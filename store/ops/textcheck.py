"""Checks on text an operator types (labels, reasons, names, URLs), shared by the CLI and
the console so both refuse the same input with the same words (exit 2, never echoed).

- Inert text: control, bidi, zero-width and separator characters are refused.
- Keys only where keys belong: a key-shaped value outside the key field is refused with a
  hint that keys go in ``--api-key -`` (stdin).
"""

from __future__ import annotations

import unicodedata

from store.errors import BadInput
from store.redaction.redact import KEY_PATTERNS, escape_controls, looks_like_key

KEY_HINT = "a key goes only in --api-key - (read from stdin)"
_CONTROL = ("Cc", "Cf", "Zl", "Zp", "Cs")


def control_at(text: str) -> int | None:
    """Index of the first control, bidi, zero-width or separator character, or None."""
    for i, ch in enumerate(text):
        if unicodedata.category(ch) in _CONTROL:
            return i
    return None


def prefixed_key(text: str) -> bool:
    """A provider-prefixed key (``sk-…``, ``xai-…``, a JWT) anywhere in *text*."""
    return any(p.search(text) for p in KEY_PATTERNS)


def keyish(text: str) -> bool:
    """Key-shaped: a prefixed key, or one long letters-and-digits token that is not a path,
    URL or model name (those hold ``/``)."""
    return prefixed_key(text) or ("/" not in text and looks_like_key(text))


def check_text(field: str, text: str, *, keys: str = "any") -> str:
    """*text* if it is plain and holds no key; BadInput naming *field* otherwise.

    *keys* is ``"any"`` (refuse every key shape), ``"prefix"`` (only provider-prefixed
    keys: model names are long tokens) or ``""`` (no key check).
    """
    at = control_at(text)
    if at is not None:
        raise BadInput(field, f"holds a control character ({escape_controls(text[at])} at position "
                       f"{at + 1}); labels, reasons and names are plain text")
    if (keys == "any" and keyish(text)) or (keys == "prefix" and prefixed_key(text)):
        raise BadInput(field, f"looks like an API key; it was not used or shown ({KEY_HINT})")
    return text
