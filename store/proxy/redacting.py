"""What leaves the proxy shows keys only as fingerprints (RELIABILITY 18, 39).

The proxy's ways out are the client's answers (relayed error bodies and headers, its own
503s and errors), its log and its status file. :class:`ProxySecrets` knows every secret of
the home as the proxy last read it (the store in the chain's view, config.yaml, the .env
values rows borrow, and the password of every base URL written ``user:password@host``, which
:mod:`store.redaction.walk` collects and the redactor masks in any URL it sees), built
lazily when something must be redacted and rebuilt only when the store was read again;
:meth:`ProxySecrets.for_row` adds the row's own token. The log goes through
:class:`store.redaction.crash.LogRedaction` with :meth:`ProxySecrets.redactor`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from store.config.read import Config
from store.proxy.chain import Chain
from store.redaction.redact import HomeSecrets, Redactor, escape_controls


class ProxySecrets:
    """The home's secrets, from what the chain last read. Thread-safe."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self._lock = threading.Lock()
        self._secrets = HomeSecrets()
        self._doc: object = None
        self._redactor = Redactor()

    def redactor(self) -> Redactor:
        """The redactor for the store as the chain last read it."""
        doc = self.chain.last_doc
        with self._lock:
            if doc is not self._doc:
                cfg = self.chain.runtime.config.get()
                data = cfg.data if isinstance(cfg, Config) else {}
                self._redactor = self._secrets.redactor(doc, data, dict(self.chain.env))
                self._doc = doc
            return self._redactor

    def for_row(self, token: str | None) -> Callable[[str], str]:
        """Redaction of text that may echo *token* (the row's), any secret of the home or a
        base URL's password."""
        home = self.redactor()
        own = Redactor([token] if token else [])
        return lambda text: home.redact(own.redact(text))

    def text(self, value: object) -> str:
        """*value* as text fit for a log line or a terminal."""
        return escape_controls(self.redactor().redact(str(value)))
