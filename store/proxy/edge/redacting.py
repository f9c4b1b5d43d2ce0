"""What leaves the proxy shows keys only as fingerprints (RELIABILITY 18, 39).

The proxy's ways out are the client's answers (relayed error bodies and headers, its own
503s and errors), its log and its status file. :class:`ProxySecrets` knows every secret of
the home as the proxy last read it (the store in the chain's view, config.yaml, the .env
values rows borrow, and the password of every base URL written ``user:password@host``, which
:mod:`store.redaction.walk` collects and the redactor masks in any URL it sees), built
lazily when something must be redacted and rebuilt only when the store was read again;
:meth:`ProxySecrets.for_row` adds the row's own token.

It knows the proxy's own secrets too: the client keys of its keys file (on an exposed bind),
so a client key that a malformed request line carries, or a crash quotes, shows as a
fingerprint like any other; and, whatever the bind, the redactor masks the credential that
follows ``Authorization``/``Bearer``/``x-api-key`` in any text
(:func:`store.redaction.redact.mask_auth_values`). The logs (the proxy's own and aiohttp's
server log, which quotes a request line it refuses) go through
:class:`store.redaction.crash.LogRedaction` with :meth:`ProxySecrets.redactor`
(:meth:`ProxySecrets.redact_logs`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from store.config.read import Config
from store.proxy.edge.wire import bare_part
from store.redaction.crash import LogRedaction
from store.redaction.redact import HomeSecrets, Redactor, escape_controls

# Every log a request's text reaches: aiohttp's server log quotes a request line it refuses.
LOGGERS = (logging.getLogger("hermes_admin.proxy"), logging.getLogger("aiohttp.server"))


@dataclass(frozen=True)
class SecretsSource:
    """Where the proxy's secrets come from (the chain's view; the server ties them):
    *doc*, the store document last read (a new one, by identity, rebuilds the redactor);
    *config*, config.yaml as last read (a :class:`~store.config.read.Config`, or what
    reading it gave instead); *env*, the .env values rows borrow."""

    doc: Callable[[], object]
    config: Callable[[], object]
    env: Callable[[], Mapping[str, str]]


class ProxySecrets:
    """The home's secrets, from what the chain last read (*source*). Thread-safe."""

    def __init__(self, source: SecretsSource, client_keys: Iterable[bytes] | None = None) -> None:
        self.source = source
        self._clients = tuple(k.decode("utf-8", "replace") for k in client_keys or ())
        self._filter = LogRedaction(self.redactor)
        self._lock = threading.Lock()
        self._secrets = HomeSecrets()
        self._doc: object = None
        self._redactor = Redactor()

    def redactor(self) -> Redactor:
        """The redactor for the store as the chain last read it."""
        doc = self.source.doc()
        with self._lock:
            if doc is not self._doc:
                cfg = self.source.config()
                data = cfg.data if isinstance(cfg, Config) else {}
                home = self._secrets.redactor(doc, data, dict(self.source.env()))
                self._redactor = home.with_secrets(*self.client_keys())
                self._doc = doc
            return self._redactor

    def client_keys(self) -> tuple[str, ...]:
        """The proxy's client keys (none on loopback, where any bearer is let in)."""
        return self._clients

    def redact_logs(self, on: bool) -> None:
        """Put the redaction on every log of :data:`LOGGERS` (*on*), or take it off."""
        for logger in LOGGERS:
            (logger.addFilter if on else logger.removeFilter)(self._filter)

    def for_row(self, token: str | None) -> Callable[[str], str]:
        """Redaction of text that may echo *token* (the row's, with or without its provider
        prefix: :func:`~store.proxy.edge.wire.bare_part`), any secret of the home or a base
        URL's password."""
        home = self.redactor()
        bare = bare_part(token.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape") \
            if token else ""
        own = Redactor([token, bare] if token else [])     # the key, and its randomness alone
        return lambda text: home.redact(own.redact(text))

    def text(self, value: object) -> str:
        """*value* as text fit for a log line or a terminal."""
        return escape_controls(self.redactor().redact(str(value)))
