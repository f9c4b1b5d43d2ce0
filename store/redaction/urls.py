"""URL userinfo is a secret (RELIABILITY 37): ``http://user:pw@host`` shows as ``http://user:***@host``.

A base URL in a row or in config.yaml may carry a password (``https://bob:hunter22@proxy/v1``).
:func:`mask_userinfo` hides it wherever a URL is shown (the redactor applies it to every
text it passes); :func:`passwords` gives the password, as written and decoded, so a home's
secret set holds it and an echo of it alone (an upstream's error message) is caught too.
The user name stays: it says which account, and is no secret. Pure functions.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

MASK = "***"

# scheme://[user]:password@ — the password runs to the '@' and holds no '/' or space (both
# are percent-encoded in a URL), so a port ("host:8080/") or a path never matches.
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*://[^\s/@:]*:)([^\s/@]+)@")


def mask_userinfo(text: str) -> str:
    """*text* with the password of every ``scheme://user:password@`` in it as ``***``."""
    if "://" not in text or "@" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)


def passwords(url: str) -> list[str]:
    """The password of *url*'s userinfo, as written and percent-decoded ([] when none)."""
    if "@" not in url or "://" not in url:
        return []
    found = [m.group(2) for m in _USERINFO.finditer(url) if m.group(2) != MASK]
    try:
        pw = urlsplit(url.strip()).password
    except ValueError:
        pw = None
    if pw and pw != MASK:
        found.append(pw)
    return sorted({p for raw in found for p in (raw, unquote(raw))}, key=len, reverse=True)
