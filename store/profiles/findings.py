"""Findings over every profile of a root: what an operator of a multi-profile host asks about.

Pure: computed from :class:`store.profiles.inventory.ProfileInventory` values, no IO.

- ``shared_key``: one key (compared by a hash of the full secret) in several profiles,
  with each holder's state side by side (benched in one, selected in another);
- ``shared_refresh_token``: one OAuth refresh token in several profiles. It is single
  use, so the first profile to refresh invalidates every other copy;
- ``primary_unusable``: a profile whose primary provider has no usable credential;
- ``env_missing``: an ``env:VAR`` row whose VAR is not in that profile's ``.env``;
- ``unknown_provider``: a strategy, fallback entry, delegation, cron job or auxiliary
  chain naming a provider Hermes does not know (with "did you mean").

Each finding names the rows it concerns (profile, pool, id) so a view can mark them.
Keys appear only as display fingerprints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from store.config import providers
from store.config.agent_view import pool_for
from store.pools.view import CredentialView
from store.profiles.inventory import ProfileInventory
from store.redaction.secret_ids import key_identity, refresh_identity

SHARED_KEY = "shared_key"
SHARED_REFRESH = "shared_refresh_token"
PRIMARY_UNUSABLE = "primary_unusable"
ENV_MISSING = "env_missing"
UNKNOWN_PROVIDER = "unknown_provider"
KINDS = (SHARED_KEY, SHARED_REFRESH, PRIMARY_UNUSABLE, ENV_MISSING, UNKNOWN_PROVIDER)

RowRef = tuple[str, str, str]   # (profile, pool, credential id)


@dataclass(frozen=True)
class Finding:
    """One thing worth an operator's attention, and the rows it is about."""

    kind: str
    severity: str                  # "warning" | "error"
    message: str
    profiles: tuple[str, ...]
    rows: tuple[RowRef, ...] = ()
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "message": self.message,
                "profiles": list(self.profiles),
                "rows": [{"profile": p, "pool": k, "id": i} for p, k, i in self.rows],
                "detail": self.detail}


def _holder(p: ProfileInventory, cv: CredentialView) -> dict[str, Any]:
    return {"profile": p.name, "pool": cv.pool, "id": cv.id, "label": cv.label,
            "status": cv.effective.status, "next": cv.next, "fingerprint": cv.fingerprint}


Ident = tuple[str, ProfileInventory, CredentialView]


def _identities(p: ProfileInventory, ident: Any) -> list[Ident]:
    """(identity, profile, view) for each of *p*'s credentials that *ident* identifies."""
    out = []
    for pv in p.pools:
        for cv in pv.credentials:
            key = ident(p, cv)
            if key:
                out.append((key, p, cv))
    return out


def _shared(idents: Iterable[list[Ident]], kind: str, what: str) -> list[Finding]:
    groups: dict[str, list[tuple[ProfileInventory, CredentialView]]] = {}
    for part in idents:
        for key, p, cv in part:
            groups.setdefault(key, []).append((p, cv))
    out = []
    for members in groups.values():
        names = tuple(dict.fromkeys(p.name for p, _ in members))
        if len(names) < 2:
            continue
        holders = [_holder(p, cv) for p, cv in members]
        fp = next((h["fingerprint"] for h in holders if h["fingerprint"]), None) or "—"
        states = ", ".join(f"{h['profile']}/{h['pool']}: {h['status']}" for h in holders)
        out.append(Finding(
            kind, "error" if kind == SHARED_REFRESH else "warning",
            f"{what} {fp} is in {len(names)} profiles ({states})",
            names, tuple((h["profile"], h["pool"], h["id"]) for h in holders),
            {"fingerprint": fp, "holders": holders}))
    return out


def _primary_unusable(p: ProfileInventory) -> Finding | None:
    provider = p.primary_provider
    if p.error is not None or not provider:
        return None
    canon = providers.canonical(provider)
    if canon is None or canon in providers.SPECIAL:
        return None     # unknown names are reported as unknown_provider
    base_url = p.primary.base_url if p.primary is not None else None
    pool = pool_for(canon, base_url, p.custom_providers)
    if pool is None:
        return None     # served by a key_env/base_url pair, not a pool: nothing to judge
    pv = next((pv for pv in p.pools if pv.key == pool), None)
    creds = pv.credentials if pv else []
    if any(cv.effective.usable and cv.backed is not False for cv in creds):
        return None
    states = ", ".join(f"{cv.label}: {cv.effective.status}" for cv in creds) or "no credentials"
    return Finding(PRIMARY_UNUSABLE, "error",
                   f"{p.name}: primary provider {provider} has no usable credential in pool {pool} ({states})",
                   (p.name,), tuple((p.name, cv.pool, cv.id) for cv in creds),
                   {"provider": provider, "pool": pool})


def _env_missing(p: ProfileInventory) -> list[Finding]:
    out = []
    for pv in p.pools:
        for cv in pv.credentials:
            if cv.backed is False:
                var = str(cv.row.get("source"))[4:]
                out.append(Finding(ENV_MISSING, "warning",
                                   f"{p.name}: {pv.key} {cv.label} reads {var}, which is not in {p.home.env}",
                                   (p.name,), ((p.name, pv.key, cv.id),), {"variable": var}))
    return out


def _named_providers(p: ProfileInventory) -> Iterable[tuple[str, str]]:
    """(where, provider name) for every place the profile's config names a provider."""
    for pool in p.strategies:
        yield f"credential_pool_strategies.{pool}", pool
    for f in p.fallbacks:
        yield f"{f.origin}[{f.origin_index}]", f.provider
    if p.delegation.provider:
        yield "delegation.provider", p.delegation.provider
    for job in p.cron_jobs:
        if job.provider:
            yield f"cron job {job.name or job.id}", job.provider
    for task, aux in p.auxiliary.items():
        if isinstance(aux.get("provider"), str) and aux["provider"].strip():
            yield f"auxiliary.{task}.provider", aux["provider"]
        for i, entry in enumerate(aux.get("fallback_chain") or []):
            yield f"auxiliary.{task}.fallback_chain[{i}]", entry["provider"]


def _unknown_providers(p: ProfileInventory) -> list[Finding]:
    out = []
    for where, name in _named_providers(p):
        if providers.is_known(name):
            continue
        hints = providers.suggest(name)
        tail = f"; did you mean {', '.join(hints)}?" if hints else ""
        out.append(Finding(UNKNOWN_PROVIDER, "warning",
                           f"{p.name}: {where} names unknown provider {name!r}{tail}",
                           (p.name,), (), {"where": where, "provider": name, "suggestions": hints}))
    return out


def _key(p: ProfileInventory, cv: CredentialView) -> str | None:
    return key_identity(cv.row, p.env)


def _refresh(p: ProfileInventory, cv: CredentialView) -> str | None:
    return refresh_identity(cv.row)


@dataclass(frozen=True)
class _Part:
    """What one profile brings to the findings: its keys' and refresh tokens' identities,
    and its own findings."""

    keys: list[Ident]
    refresh: list[Ident]
    primary: Finding | None
    env_missing: list[Finding]
    unknown: list[Finding]


def _part(p: ProfileInventory) -> _Part:
    return _Part(_identities(p, _key), _identities(p, _refresh), _primary_unusable(p),
                 _env_missing(p), _unknown_providers(p))


def _assemble(parts: list[_Part]) -> list[Finding]:
    out = _shared((x.keys for x in parts), SHARED_KEY, "key")
    out += _shared((x.refresh for x in parts), SHARED_REFRESH, "OAuth refresh token of")
    out += [x.primary for x in parts if x.primary]
    for x in parts:
        out += x.env_missing
    for x in parts:
        out += x.unknown
    return out


def compute(profiles: list[ProfileInventory]) -> list[Finding]:
    """Every finding over *profiles*, grouped by kind in :data:`KINDS` order."""
    return _assemble([_part(p) for p in profiles])


class FindingsCache:
    """:func:`compute` over successive reads of one root, at the cost of what changed.

    A profile whose inventory is the very object of the last read (the root loader keeps
    the inventories of profiles nobody wrote to) brings what it brought then: a write to
    one profile of fifty walks that profile's rows, not every profile's.
    """

    def __init__(self) -> None:
        self._parts: dict[str, tuple[ProfileInventory, _Part]] = {}

    def compute(self, profiles: list[ProfileInventory]) -> list[Finding]:
        parts: dict[str, tuple[ProfileInventory, _Part]] = {}
        for p in profiles:
            hit = self._parts.get(p.name)
            parts[p.name] = hit if hit is not None and hit[0] is p else (p, _part(p))
        self._parts = parts
        return _assemble([parts[p.name][1] for p in profiles])


def marked_rows(findings: Iterable[Finding]) -> dict[RowRef, list[str]]:
    """(profile, pool, id) -> the kinds of finding that mention it: the console's row markers."""
    out: dict[RowRef, list[str]] = {}
    for f in findings:
        for ref in f.rows:
            kinds = out.setdefault(ref, [])
            if f.kind not in kinds:
                kinds.append(f.kind)
    return out
