"""A notification target's URL (an Apprise URL) as it may be shown, and the parts of it that are secret.

A target URL mixes secrets (a password, a webhook token, an API key in a path or a query
value) with what is not secret and must stay readable (the scheme, hosts, ports, addresses,
mail addresses, a user name). :func:`secret_parts` names the secrets only, so registering
them with :func:`store.redaction.redact.register` never turns a host such as ``127.0.0.1``
into a fingerprint everywhere else; :func:`shown` is the form printed or stored, every
secret part in it replaced by its fingerprint.

A part is secret when it is the userinfo password, when the plugin's privacy form (the
*privacy* argument, Apprise's ``url(privacy=True)``) hides it, when its query name says so
(``token``, ``key``, ``secret``, ``password``...), or when it is key-shaped
(a provider's key pattern, or :func:`store.redaction.redact.looks_like_key` for a long token).
A host name, an IP address or a mail address is never secret unless it holds a provider's
key pattern or the privacy form hides it. Pure functions.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse

from store.redaction.fingerprints import ELLIPSIS, fingerprint
from store.redaction.redact import KEY_PATTERNS, MIN_SECRET_LEN, looks_like_key
from store.redaction.urls import MASK, mask_userinfo

# Query names whose value is a credential whatever it looks like.
_SECRET_NAME = re.compile(r"(?i)(token|secret|pass|passwd|password|key|apikey|api_key|auth|sig|signature|webhook)")
_MAIL = re.compile(r"^[^@\s/]+@[A-Za-z0-9.-]+$")
_HOSTNAME = re.compile(r"^(?=.*[A-Za-z-])[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+\.?$")


def _host_like(value: str) -> bool:
    """An IP address, a dotted host name or a mail address: not a secret by itself."""
    v = value.strip().strip("[]")
    try:
        ipaddress.ip_address(v)
        return True
    except ValueError:
        pass
    return bool(_HOSTNAME.match(v) or _MAIL.match(v))


def _keyish(value: str) -> bool:
    """A provider's key shape anywhere in *value*, or one long token that is no host name."""
    return any(p.search(value) for p in KEY_PATTERNS) or (looks_like_key(value) and not _host_like(value))


def _split(url: str) -> urllib.parse.SplitResult | None:
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:
        return None


def secret_parts(url: str, privacy: str = "") -> list[str]:
    """The secret parts of *url* (as written and percent-decoded), longest first; *privacy* is
    the form of the URL that its plugin shows (empty: none known). A URL that does not parse
    is secret as a whole."""
    parts = _split(url)
    if parts is None:
        return [url] if len(url) >= MIN_SECRET_LEN else []
    open_text = urllib.parse.unquote(privacy) + "\n" + privacy

    def hidden(v: str) -> bool:
        return bool(privacy) and v not in open_text and urllib.parse.unquote(v) not in open_text

    found: list[str] = []
    if parts.password:
        found.append(parts.password)
    host = parts.hostname or ""
    netloc_host = parts.netloc.rsplit("@", 1)[-1]
    if netloc_host and (_keyish(netloc_host) or (hidden(netloc_host) and not _host_like(host))):
        found.append(netloc_host)   # discord://ID/TOKEN, tgram://TOKEN/...: the "host" is a token
    for seg in (s for s in parts.path.split("/") if s):
        if _keyish(seg) or _keyish(urllib.parse.unquote(seg)) or (hidden(seg) and not _host_like(
                urllib.parse.unquote(seg))):
            found.append(seg)
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=False):
        if _keyish(value) or (_SECRET_NAME.search(name) and not _host_like(value)) \
                or (hidden(value) and not _host_like(value) and f"{name}=" in privacy):
            found.append(value)
    out = {f for raw in found for f in (raw, urllib.parse.unquote(raw)) if len(f) >= MIN_SECRET_LEN
           and f != MASK and ELLIPSIS not in f}
    return sorted(out, key=len, reverse=True)


def shown(url: str, privacy: str) -> str:
    """The form of a target that is printed and stored: *privacy* (its plugin's privacy form)
    without its query of settings, its password masked and every secret part of *url* left in
    it replaced by its fingerprint."""
    text = mask_userinfo(privacy.split("?", 1)[0])
    for secret in secret_parts(url, privacy):
        for form in {secret, urllib.parse.quote(secret, safe="")}:
            if form in text:
                text = text.replace(form, fingerprint(secret) or ELLIPSIS)
    return text
