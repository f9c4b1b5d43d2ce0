"""Which generation of Hermes writes a home, and which cooldown rules follow from it.

Hermes keeps changing its cooldown rules; the console must agree with the Hermes that runs.
Three generations are told apart (docs/compatibility.md has the table, with the test of
each rule):

- ``0.19``: the PyPI release 0.19.0 and its era. No only-row rule (a sole key is benched
  for the full TTL), no ``status_cleared_at``, no per-model benches.
- ``newer``: the spec's newer Hermes: the 60 s only-row cap, ``status_cleared_at``
  tombstones, ``model_cooldowns``.
- ``admin``: the admin-module era (``agent/credential_pool_admin.py``, September 2026),
  adding five rules: the reset time of a sole non-billing row is capped at
  ``last_status_at`` + its TTL (#119163); an entitlement bench lasts 2 days;
  ``clear_billing_benches`` stamps ``status_cleared_at`` (a billing bench older than the
  stamp is lifted); ``has_available(any_model=True)`` ignores per-model benches; a changed
  ``secret_fingerprint`` on a secret-less row is a new credential.

The generation is told by ``hermes_admin.hermes_generation`` in config.yaml (the
operator's word), else by the Hermes checkout the installer leaves in the home
(:mod:`store.config.hermes_code` reads it). Pure: no IO here.
When it cannot be told, the five admin-era rules stay off (the older and safer rule: a
bench is never shortened on a guess) and the newer rules hold as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from store.model import STATUS_FIELDS
from store.redaction.secret_ids import key_identity

OLDEST = "0.19"
NEWER = "newer"
ADMIN = "admin"
GENERATIONS = (OLDEST, NEWER, ADMIN)
ENTITLEMENT = "entitlement"          # the failure_reason of a subscription/entitlement failure
ENTITLEMENT_TTL = 2 * 86400.0


@dataclass(frozen=True)
class Told:
    """A home's Hermes generation and how it was told (None: it could not be)."""

    generation: str | None = None
    how: str = "not told (no hermes_admin.hermes_generation, no Hermes checkout in the home)"

    @property
    def admin(self) -> bool:
        """The admin-era rules hold."""
        return self.generation == ADMIN

    @property
    def only_row_rule(self) -> bool:
        """The 60 s only-row cap: every generation but 0.19 (and an untold one, as before)."""
        return self.generation != OLDEST

    @property
    def name(self) -> str:
        return self.generation or "not told"


UNTOLD = Told()


def check_name(value: object) -> str:
    """A configured generation name, or ValueError naming the known ones."""
    text = str(value).strip().lower() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    if text in ("0.19.0", "0.19", "older"):
        return OLDEST
    if text in GENERATIONS:
        return text
    raise ValueError(f"unknown Hermes generation {value!r} (known: {', '.join(GENERATIONS)})")


def configured(value: object) -> Told:
    """The operator's ``hermes_admin.hermes_generation`` (ValueError when unknown)."""
    return Told(check_name(value), "config.yaml hermes_admin.hermes_generation")


def renewed(row: Mapping[str, Any], env: Mapping[str, str] | None) -> bool:
    """A secret-less row whose live secret (its ``.env`` value) no longer matches its stored
    ``secret_fingerprint``: the admin era treats it as a new credential, so the bench stored
    on the row was the old key's."""
    token = row.get("access_token")
    fp = row.get("secret_fingerprint")
    if (isinstance(token, str) and token) or not (isinstance(fp, str) and fp.startswith("sha256:")):
        return False
    live = key_identity(dict(row), env)
    return live is not None and live != fp


def fresh(row: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of *row* as a new credential: no status, no failure reason, no model benches."""
    out = {k: v for k, v in row.items() if k not in ("failure_reason", "model_cooldowns", "model_cooldown_observed_at")}
    out.update(dict.fromkeys(STATUS_FIELDS))
    return out
