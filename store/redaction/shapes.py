"""What a key looks like (store.redaction.redact's key-shaped patterns): by provider prefix
and minimum length, so a key nobody told hermes-admin about is still caught in output
(:class:`store.redaction.redact.Redactor`) and refused where keys do not belong
(:func:`looks_like_key`). Both are re-exported by :mod:`store.redaction.redact`.
"""

from __future__ import annotations

import re
from typing import Any

# A key starts a token ("task-..." never matches "sk-..."). The boundary is checked by a
# lookbehind *after* the key's literal start (``sk-(?<![A-Za-z0-9]sk-)``: the same test as a
# ``(?<![A-Za-z0-9])`` before it), so the regex engine searches for the literal; a lookbehind
# first made it try every position of the text.
KEY_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"sk-(?<![A-Za-z0-9]sk-)[A-Za-z0-9_\-]{16,}",            # OpenAI, OpenRouter (sk-or-), Anthropic (sk-ant-)
    r"xai-(?<![A-Za-z0-9]xai-)[A-Za-z0-9_\-]{16,}",          # xAI
    r"gsk_(?<![A-Za-z0-9]gsk_)[A-Za-z0-9]{16,}",             # Groq
    r"AIza(?<![A-Za-z0-9]AIza)[0-9A-Za-z_\-]{30,}",          # Google API keys (AIza + 35)
    r"gh[pousr]_(?<![A-Za-z0-9]gh[pousr]_)[A-Za-z0-9]{20,}",  # GitHub tokens
    r"github_pat_(?<![A-Za-z0-9]github_pat_)[A-Za-z0-9_]{20,}",
    r"hf_(?<![A-Za-z0-9]hf_)[A-Za-z0-9]{20,}",               # Hugging Face
    r"(?:nvapi-|pplx-|fw-)(?<![A-Za-z0-9]nvapi-)(?<![A-Za-z0-9]pplx-)(?<![A-Za-z0-9]fw-)"
    r"[A-Za-z0-9_\-]{16,}",                                  # NVIDIA, Perplexity, Fireworks
    r"r8_(?<![A-Za-z0-9]r8_)[A-Za-z0-9]{20,}",               # Replicate
    r"eyJ(?<![A-Za-z0-9]eyJ)[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*){0,2}",  # JWT-ish (OAuth tokens)
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
