"""What leaves the proxy shows keys only as fingerprints (RELIABILITY 18, 39).

The proxy's ways out are the client's answers (relayed error bodies and headers, its own
503s and errors), its log and its status file. :class:`ProxySecrets` knows every secret of
the home as the proxy last read it (the store in the chain's view, config.yaml, the .env
values rows borrow, the password of any base URL written ``user:password@host``), built
lazily when something must be redacted and rebuilt only when the store was read again;
:meth:`ProxySecrets.for_row` adds the row's own token.
:class:`RedactingFilter` puts every record of the proxy's log through it, traceback
included (never the locals), with control characters made inert.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from store.config.read import Config
from store.proxy.chain import Chain
from store.redaction.redact import HomeSecrets, Redactor, escape_controls


def url_passwords(node: Any, depth: int = 0) -> set[str]:
    """The passwords of every ``scheme://user:password@host`` URL in a JSON-like *node*
    (rows' and config's base URLs): secrets too, whatever field holds them."""
    found: set[str] = set()
    if depth > 32:
        return found
    if isinstance(node, str):
        if "://" in node and "@" in node:
            try:
                password = urlsplit(node).password
            except ValueError:
                password = None
            if password:
                found.add(unquote(password))
                found.add(password)
    elif isinstance(node, dict):
        for v in node.values():
            found |= url_passwords(v, depth + 1)
    elif isinstance(node, list):
        for v in node:
            found |= url_passwords(v, depth + 1)
    return found


class ProxySecrets:
    """The home's secrets, from what the chain last read. Thread-safe."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self._lock = threading.Lock()
        self._secrets = HomeSecrets()
        self._doc: object = None
        self._redactor = Redactor()
        self._passwords = Redactor()

    def redactor(self) -> Redactor:
        """The redactor for the store as the chain last read it."""
        return self._current()[0]

    def _current(self) -> tuple[Redactor, Redactor]:
        doc = self.chain.last_doc
        with self._lock:
            if doc is not self._doc:
                cfg = self.chain.runtime.config.get()
                data = cfg.data if isinstance(cfg, Config) else {}
                self._redactor = self._secrets.redactor(doc, data, dict(self.chain.env))
                self._passwords = Redactor(url_passwords(doc) | url_passwords(data))
                self._doc = doc
            return self._redactor, self._passwords

    def for_row(self, token: str | None) -> Callable[[str], str]:
        """Redaction of text that may echo *token* (the row's), any secret of the home or a
        base URL's password."""
        home, passwords = self._current()
        own = Redactor([token] if token else [])
        return lambda text: home.redact(passwords.redact(own.redact(text)))

    def text(self, value: object) -> str:
        """*value* as text fit for a log line or a terminal."""
        home, passwords = self._current()
        return escape_controls(home.redact(passwords.redact(str(value))))


class RedactingFilter(logging.Filter):
    """Redacts each record of the logger it is added to: message, arguments, traceback."""

    def __init__(self, secrets: ProxySecrets) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:      # a bad format string must not lose the record
            message = f"{record.msg!r} {record.args!r}"
        if record.exc_info:
            # The traceback's text (frames, lines, the exception's message), never its locals.
            message += "\n" + "".join(traceback.format_exception(*record.exc_info))
            record.exc_info = None
            record.exc_text = None
        record.msg = "\n".join(self.secrets.text(line) for line in message.split("\n"))
        record.args = ()
        return True
