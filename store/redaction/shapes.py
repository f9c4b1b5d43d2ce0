"""What a key looks like (store.redaction.redact's key-shaped patterns): by provider prefix
and minimum length, so a key nobody told hermes-admin about is still caught in output
(:class:`store.redaction.redact.Redactor`) and refused where keys do not belong
(:func:`looks_like_key`). Both are re-exported by :mod:`store.redaction.redact`.
"""

from __future__ import annotations

import re
from typing import Any

# A key starts a token ("task-..." never matches "sk-..."): the boundary is checked by a
# lookbehind *after* the key's literal start (``sk-(?<![A-Za-z0-9]sk-)``, the same test), so the
# regex engine searches for the literal; a lookbehind first made it try every position.
_B = "(?<![A-Za-z0-9]"


def _shape(starts: str, rest: str) -> re.Pattern[str]:
    """A key pattern: one of *starts* (``|``-separated literals), checked to begin a token, then *rest*."""
    alts = starts.split("|")
    head = alts[0] if len(alts) == 1 else f"(?:{starts})"
    return re.compile(head + "".join(f"{_B}{start})" for start in alts) + rest)


KEY_PATTERNS: tuple[re.Pattern[str], ...] = tuple(_shape(starts, rest) for starts, rest in (
    ("sk-", r"[A-Za-z0-9_\-]{16,}"),              # OpenAI, OpenRouter (sk-or-), Anthropic (sk-ant-)
    ("xai-", r"[A-Za-z0-9_\-]{16,}"),             # xAI
    ("gsk_", r"[A-Za-z0-9]{16,}"),                # Groq
    ("AIza", r"[0-9A-Za-z_\-]{30,}"),             # Google API keys (AIza + 35)
    ("gh[pousr]_", r"[A-Za-z0-9]{20,}"),          # GitHub tokens
    ("github_pat_", r"[A-Za-z0-9_]{20,}"),
    ("hf_", r"[A-Za-z0-9]{20,}"),                 # Hugging Face
    ("nvapi-|pplx-|fw-", r"[A-Za-z0-9_\-]{16,}"),  # NVIDIA, Perplexity, Fireworks
    ("r8_", r"[A-Za-z0-9]{20,}"),                 # Replicate
    ("eyJ", r"[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*){0,2}"),  # JWT-ish (OAuth tokens)
))
# A single long token mixing letters and digits: key-like for *refusing input*, but not
# redacted from output (UUIDs, hashes and long ids would be garbled).
_LONG_TOKEN = re.compile(r"^[A-Za-z0-9_\-.+/=]{32,}$")


def looks_like_key(text: Any) -> bool:
    """True when *text* holds something key-shaped (a provider prefix, a JWT, or one long
    token mixing letters and digits). Used to refuse keys outside ``--api-key``."""
    if not isinstance(text, str) or not text:
        return False
    if any(p.search(text) for p in KEY_PATTERNS):
        return True
    s = text.strip()
    return bool(_LONG_TOKEN.match(s)) and any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
