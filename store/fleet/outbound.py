"""What the fleet sends to Redis, redacted like what goes to a screen (RELIABILITY 38).

Every text a host publishes (a bench's reason and message, whoever wrote them: a
provider's error, an agent, an operator) passes :meth:`Outbound.text`:

- every secret of the home (each row's tokens, config.yaml's keys, the ``.env`` values,
  URL passwords, as ``store.redaction.redact.HomeSecrets`` collects them from the store the
  daemon last read) becomes its **fleet
  fingerprint** ``fl:<12 hex>``, the HMAC under the fleet secret that ``fleet status``
  shows for that key, so a reader of Redis learns nothing of it, and an operator can
  still tell which key the message was about;
- then the home's :class:`~store.redaction.redact.Redactor` replaces anything else
  key-shaped (a key nobody told us about) by its display fingerprint;
- then it is cut to the length Redis keeps, after redaction, so a cut never leaves half
  a key behind.

Without a fleet secret (a console with ``--fleet`` but no secret), a secret of the home
becomes ``fl:…``: a key was there, and nothing of it is kept.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from store.envfile import read_env
from store.fleet.keys import FP_PREFIX, fleet_fingerprint, short
from store.model import Doc
from store.paths import Home
from store.redaction.fingerprints import ELLIPSIS
from store.redaction.redact import MIN_SECRET_LEN, HomeSecrets, Redactor, config_data, home_secrets

TEXT_LIMIT = 200


class Outbound:
    """One home's way out to Redis for text."""

    def __init__(self, secrets: Iterable[str | None] = (), fleet_secret: bytes | None = None) -> None:
        found = {s for v in secrets if isinstance(v, str) for s in (v, v.strip()) if len(s) >= MIN_SECRET_LEN}
        # Longest first: a secret that contains another is replaced whole.
        self._secrets = sorted(found, key=len, reverse=True)
        self._fleet_secret = fleet_secret
        self._redactor = Redactor()   # the known ones are gone by then: key shapes, registered keys

    @classmethod
    def for_home(cls, home: Home | None, fleet_secret: bytes | None = None,
                 extra: Iterable[str | None] = (), *, doc: Doc | None = None,
                 env: Mapping[str, str] | None = None, known: HomeSecrets | None = None) -> Outbound:
        """Every secret *home* holds or borrows now, plus *extra* (the rows just read).

        With *doc* (and *env*), the store and environment the caller read last: they are
        not read again (a second parse of a 5 MB store per publish), only config.yaml is;
        *known*, kept by the caller across publishes, walks again only what changed."""
        if home is None:
            secrets: set[str] = set()
        elif doc is None:
            secrets = set(home_secrets(home))
        else:
            secrets = set((known or HomeSecrets()).secrets(doc, config_data(home),
                                                           read_env(home) if env is None else env))
        secrets.update(v for v in extra if isinstance(v, str))
        return cls(secrets, fleet_secret)

    def text(self, value: str | None, limit: int = TEXT_LIMIT) -> str:
        """*value* with no secret of the home and nothing key-shaped left, cut to *limit*."""
        if not value:
            return ""
        return self._redactor.redact(fingerprint_secrets(value, self._secrets, self._fleet_secret))[:limit]


def fingerprint_secrets(text: str, secrets: Iterable[str], fleet_secret: bytes | None) -> str:
    """*text* with each of *secrets* (longest first) replaced by its fleet fingerprint."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LEN and secret in text:
            form = FP_PREFIX + ELLIPSIS if fleet_secret is None else short(
                fleet_fingerprint(fleet_secret, "token:" + secret))
            text = text.replace(secret, form)
    return text
