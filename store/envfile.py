"""``<home>/.env``: the ``KEY=value`` lines that seed Hermes's ``env:KEY`` pool rows.

Hermes loads this file with python-dotenv; the parser below follows the same
rules for the cases operators write: ``export KEY=value``, single quotes
(literal), double quotes (escapes, may span lines), unquoted values with a
`` #`` comment, blank and comment lines, ``${VAR}`` expansion.

Every value is a secret. Nothing here logs, prints or puts a value into an
error message; a problem names the file and the line only.
"""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from store import envelope, safeio
from store.errors import StoreUnreadable
from store.paths import Home

_KEY = re.compile(r"[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*=[ \t]*")
_EXPAND = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_DQ_ESCAPES = re.compile(r"\\[\\'\"abfnrtv]")


def read_env(home: Home) -> dict[str, str]:
    """``KEY -> value`` from ``<home>/.env``; {} when the file is missing or unreadable."""
    return read_env_report(home)[0]


def read_env_report(home: Home) -> tuple[dict[str, str], str | None]:
    """(values, problem): *problem* names the file and why it could not be used, else None.

    A missing file is not a problem (most homes have none).
    """
    path: Path = home.env
    try:
        got = safeio.read_checked(path, safeio.ENV_CAP)
    except StoreUnreadable as exc:  # a FIFO, device, directory, oversize or unreadable file
        return {}, str(exc)
    if got is None:
        return {}, None
    raw = got[0]
    version = envelope.version_of(raw)
    if version is not None:   # Hermes encrypted it: no value can be read, and none is guessed
        return {}, str(envelope.error(path, version))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Hermes retries as latin-1 when UTF-8 fails; do the same so fingerprints match.
        text = raw.decode("latin-1")
    return parse_env(text), None


def parse_env(text: str) -> dict[str, str]:
    """Parse .env text. Lines that are not assignments are skipped, like python-dotenv."""
    values: dict[str, str] = {}
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    pos, end = 0, len(text)
    while pos < end:
        line_end = text.find("\n", pos)
        line_end = end if line_end < 0 else line_end
        stripped = text[pos:line_end].strip()
        if not stripped or stripped.startswith("#"):
            pos = line_end + 1
            continue
        m = _KEY.match(text, pos, line_end)
        if not m:
            pos = line_end + 1
            continue
        key = m.group(1)
        value, pos = _value(text, m.end(), line_end)
        if value is None:
            continue
        values[key] = value[1] if value[0] else _expand(value[1], values)
    return values


def _value(text: str, start: int, line_end: int) -> tuple[tuple[bool, str] | None, int]:
    """((literal?, value) or None, position after the line)."""
    quote = text[start] if start < line_end else ""
    if quote in ("'", '"'):
        close = _closing_quote(text, start + 1, quote)
        if close < 0:
            # An unterminated quote: dotenv gives up on the line; so do we.
            return None, line_end + 1
        body = text[start + 1:close]
        after_end = text.find("\n", close)
        after_end = len(text) if after_end < 0 else after_end
        if quote == "'":
            return (True, body.replace("\\'", "'").replace("\\\\", "\\")), after_end + 1
        return (False, _DQ_ESCAPES.sub(_unescape, body)), after_end + 1
    raw = text[start:line_end]
    comment = re.search(r"[ \t]#", raw)
    if comment:
        raw = raw[:comment.start()]
    return (False, raw.strip()), line_end + 1


def _closing_quote(text: str, pos: int, quote: str) -> int:
    while pos < len(text):
        ch = text[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch == quote:
            return pos
        pos += 1
    return -1


def _unescape(m: re.Match[str]) -> str:
    return codecs.decode(m.group(0), "unicode_escape")


def _expand(value: str, known: dict[str, str]) -> str:
    """``${VAR}`` / ``${VAR:-default}`` from earlier lines of the file (never the process env)."""
    return _EXPAND.sub(lambda m: known.get(m.group(1)) or (m.group(2) or ""), value)
