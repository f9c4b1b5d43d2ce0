"""Per-profile settings beyond the pools: delegation overrides, cron jobs, gateway multiplexing.

Read the way Hermes 0.19.0 reads them; reading never writes and takes no lock. An
``api_key`` is only ever kept as its fingerprint.

- ``delegation:`` (``hermes_cli/config.py`` DEFAULT_CONFIG): ``provider``, ``model``,
  ``base_url``, ``api_key``, ``api_mode``; an empty value means "inherit the parent's".
- Cron jobs (``cron/jobs.py``): ``<home>/cron/jobs.json`` holding
  ``{"jobs": [...], "updated_at": ...}`` (a bare list is accepted, as Hermes's
  ``load_jobs`` does); each job may pin ``provider``, ``model`` and ``base_url``
  (strings; blank = follow the profile's config at fire time).
- Gateway multiplexing (``gateway/config.py``): ``multiplex_profiles`` (top level wins
  over ``gateway.multiplex_profiles``), ``profile_routes`` (same precedence; entries
  need ``platform`` and ``profile``), ``gateway.max_concurrent_sessions``.
  ``$GATEWAY_MULTIPLEX_PROFILES`` overrides the flag at run time; we report the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.config.sections import redacted
from store.errors import StoreUnreadable
from store.paths import Home
from store.redaction.fingerprints import fingerprint

CRON_DIR = "cron"
CRON_JOBS_FILE = "jobs.json"
CRON_JOBS_PATH = f"{CRON_DIR}/{CRON_JOBS_FILE}"
# A jobs file larger than this is refused rather than parsed (hostile input bound).
CRON_MAX_BYTES = 8 * 1024 * 1024


def _text(value: Any, *, strip_slash: bool = False) -> str | None:
    """Hermes's ``_normalize_job_optional_text``: a stripped non-empty string, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if strip_slash:
        text = text.rstrip("/")
    return text or None


@dataclass(frozen=True)
class Delegation:
    """``delegation:`` overrides for sub-agents (None = inherit the parent's)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None          # fingerprint only
    api_mode: str | None = None

    @property
    def overrides(self) -> bool:
        return any((self.provider, self.model, self.base_url, self.api_key))

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "api_key": self.api_key, "api_mode": self.api_mode}


def read_delegation(data: Any, w: list[str]) -> Delegation:
    """The ``delegation`` section of a parsed config mapping."""
    node = data.get("delegation") if isinstance(data, dict) else None
    if node is None:
        return Delegation()
    if not isinstance(node, dict):
        w.append(f"delegation: is a {type(node).__name__}, not a mapping (ignored)")
        return Delegation()
    key = _text(node.get("api_key"))
    return Delegation(provider=_text(node.get("provider")), model=_text(node.get("model")),
                      base_url=_text(node.get("base_url"), strip_slash=True),
                      api_key=fingerprint(key) if key else None,
                      api_mode=_text(node.get("api_mode")))


@dataclass(frozen=True)
class Gateway:
    """The gateway's multiplex settings as config.yaml writes them."""

    multiplex_profiles: bool | None = None
    profile_routes: list[dict[str, Any]] = field(default_factory=list)
    max_concurrent_sessions: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"multiplex_profiles": self.multiplex_profiles, "profile_routes": self.profile_routes,
                "max_concurrent_sessions": self.max_concurrent_sessions}


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool) or value is None:
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    return None


def read_gateway(data: Any, w: list[str]) -> Gateway:
    """Multiplex flag, profile routes and session cap, with Hermes's key precedence."""
    if not isinstance(data, dict):
        return Gateway()
    nested = data.get("gateway") if isinstance(data.get("gateway"), dict) else {}
    flag = data.get("multiplex_profiles")
    if flag is None:
        flag = nested.get("multiplex_profiles")
    multiplex = _bool(flag)
    if flag is not None and multiplex is None:
        w.append(f"multiplex_profiles: {flag!r} is not true or false (Hermes treats it as false)")
    routes_node = data.get("profile_routes")
    if routes_node is None:
        routes_node = nested.get("profile_routes")
    routes: list[dict[str, Any]] = []
    for i, entry in enumerate(routes_node if isinstance(routes_node, list) else []):
        if not isinstance(entry, dict) or not entry.get("platform") or not entry.get("profile"):
            w.append(f"profile_routes[{i}]: missing platform or profile (skipped, as Hermes does)")
            continue
        routes.append({str(k): redacted(v, str(k)) for k, v in entry.items()})
    cap = data.get("max_concurrent_sessions", nested.get("max_concurrent_sessions"))
    cap_i = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None
    return Gateway(multiplex, routes, cap_i)


@dataclass(frozen=True)
class CronJob:
    """A cron job that pins its own provider, model or base URL."""

    id: str
    name: str
    provider: str | None
    model: str | None
    base_url: str | None
    enabled: bool
    no_agent: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "provider": self.provider, "model": self.model,
                "base_url": self.base_url, "enabled": self.enabled, "no_agent": self.no_agent}


def cron_path(home: Home) -> Path:
    return home.root / CRON_DIR / CRON_JOBS_FILE


def read_cron_jobs(home: Home) -> list[CronJob]:
    """Jobs of ``<home>/cron/jobs.json`` that override provider, model or base URL.

    Missing file: []. Unreadable or not Hermes's shape: StoreUnreadable with the path.
    """
    path = cron_path(home)
    try:
        if path.stat().st_size > CRON_MAX_BYTES:
            raise StoreUnreadable(path, f"larger than {CRON_MAX_BYTES} bytes")
        if not path.is_file():
            raise StoreUnreadable(path, "not a regular file")
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreUnreadable(path, exc.strerror or "cannot be read") from None
    try:
        # strict=False: Hermes's own fallback for bare control characters in prompts.
        data = json.loads(raw.decode("utf-8-sig"), strict=False)
    except (ValueError, RecursionError) as exc:
        raise StoreUnreadable(path, f"not valid JSON ({type(exc).__name__})") from None
    if isinstance(data, dict):
        jobs = data.get("jobs", [])
    elif isinstance(data, list):
        jobs = data
    else:
        raise StoreUnreadable(path, f"expected {{'jobs': [...]}}, got {type(data).__name__}")
    if not isinstance(jobs, list):
        raise StoreUnreadable(path, "'jobs' is not a list")
    out = []
    for job in jobs:
        if not isinstance(job, dict):
            continue
        provider, model = _text(job.get("provider")), _text(job.get("model"))
        base_url = _text(job.get("base_url"), strip_slash=True)
        if not (provider or model or base_url):
            continue
        out.append(CronJob(id=str(job.get("id") or ""), name=str(job.get("name") or ""),
                           provider=provider, model=model, base_url=base_url,
                           enabled=job.get("enabled", True) is not False,
                           no_agent=bool(job.get("no_agent"))))
    return out
