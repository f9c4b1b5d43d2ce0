"""The monitor's rules: one small YAML file of hermes-admin's own, never Hermes's config.yaml.

::

    quiet_period: 5m        # a condition must stay clear this long before its recovery goes out
    retries: 3              # delivery attempts after the first, per target (0-10)
    rules:
      pool_empty: {}                          # a pool with no usable key
      key_dead: {severity: critical}          # a key that went dead
      long_cooldown: {longer_than: 2h}        # a cooldown longer than N
      proxy_fallback: {longer_than: 10m}      # a proxy on a fallback for longer than N
      low_headroom: {below: 10%}              # the tightest window under X% (issue #21)
      oauth_refresh_failed: {}                # an OAuth row benched by a 401 its refresh did not fix
      oauth_expiry: {within: 7d}              # a credential that expires within N, nothing to renew it
      findings: {kinds: [shared_key, shared_refresh_token]}   # a root's findings
      store_unreadable: {}                    # auth.json cannot be read
      burn_rate: {exhausts_within: 2h}        # a subscription window projected to run out within N
      budget: {at: 80%}                       # a key or pool at N% of a budget (hermes-admin.yaml)

Every rule is on with its defaults unless the file says ``enabled: false`` (or ``name: false``);
each also takes ``severity`` (info, warning, critical) and ``pools`` / ``profiles`` (the names
it applies to). Durations are seconds or ``90s``, ``15m``, ``2h``, ``7d``; a share is ``10%``
or ``0.1`` (``budget``'s ``at`` may be 100%). Any other key, type or value is refused with the
field's path, so a typo never switches a rule off silently. Parsing is pure; :func:`load` is the file edge.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from store import safeio, yamlguard
from store.durations import seconds_in
from store.errors import BadInput, StoreUnreadable
from store.profiles.findings import KINDS as FINDING_KINDS
from store.profiles.findings import SHARED_KEY, SHARED_REFRESH

POOL_EMPTY = "pool_empty"
KEY_DEAD = "key_dead"
LONG_COOLDOWN = "long_cooldown"
PROXY_FALLBACK = "proxy_fallback"
LOW_HEADROOM = "low_headroom"
OAUTH_REFRESH_FAILED = "oauth_refresh_failed"
OAUTH_EXPIRY = "oauth_expiry"
FINDINGS = "findings"
STORE_UNREADABLE = "store_unreadable"
BURN_RATE = "burn_rate"
BUDGET = "budget"

SEVERITIES = ("info", "warning", "critical")
RULES_CAP = 256 * 1024
MAX_SECONDS = 366 * 86400.0
MAX_RETRIES = 10
DEFAULT_QUIET = 300.0
DEFAULT_RETRIES = 3

# name -> (its threshold's key, its kind, default value, default severity)
_THRESHOLD: dict[str, tuple[str | None, str | None, Any, str]] = {
    POOL_EMPTY: (None, None, None, "critical"),
    KEY_DEAD: (None, None, None, "warning"),
    LONG_COOLDOWN: ("longer_than", "duration", 2 * 3600.0, "warning"),
    PROXY_FALLBACK: ("longer_than", "duration", 600.0, "warning"),
    LOW_HEADROOM: ("below", "share", 0.10, "warning"),
    OAUTH_REFRESH_FAILED: (None, None, None, "warning"),
    OAUTH_EXPIRY: ("within", "duration", 7 * 86400.0, "warning"),
    FINDINGS: ("kinds", "kinds", (SHARED_KEY, SHARED_REFRESH), "warning"),
    STORE_UNREADABLE: (None, None, None, "critical"),
    BURN_RATE: ("exhausts_within", "duration", 2 * 3600.0, "warning"),
    BUDGET: ("at", "percent", 0.80, "warning"),
}
NAMES = tuple(_THRESHOLD)
_COMMON = ("enabled", "severity", "pools", "profiles")
_TOP = ("quiet_period", "retries", "rules")


@dataclass(frozen=True)
class Rule:
    """One rule as configured: whether it is on, how loud, where it applies, its threshold."""

    name: str
    enabled: bool = True
    severity: str = "warning"
    threshold: float | None = None            # seconds, or a share 0..1 (low_headroom, budget)
    kinds: tuple[str, ...] = ()               # findings only
    pools: frozenset[str] | None = None       # None: every pool
    profiles: frozenset[str] | None = None    # None: every profile

    def applies(self, profile: str, pool: str | None = None) -> bool:
        """On, and not narrowed away from *profile* / *pool*."""
        if not self.enabled:
            return False
        if self.profiles is not None and profile not in self.profiles:
            return False
        return pool is None or self.pools is None or pool in self.pools


@dataclass(frozen=True)
class Rules:
    """Every rule, the quiet period and the delivery retries; ``source`` says where they came from."""

    rules: dict[str, Rule] = field(default_factory=dict)
    quiet_period: float = DEFAULT_QUIET
    retries: int = DEFAULT_RETRIES
    source: str = "built-in defaults"

    def __getitem__(self, name: str) -> Rule:
        return self.rules[name]


def _default(name: str) -> Rule:
    _key, kind, value, severity = _THRESHOLD[name]
    if kind == "kinds":
        return Rule(name, severity=severity, kinds=tuple(value))
    return Rule(name, severity=severity, threshold=value)


def defaults() -> Rules:
    """Every rule on, with its default threshold."""
    return Rules({n: _default(n) for n in NAMES})


class RulesError(BadInput):
    """The rules file is not usable (exit 2); the message names the file and the field."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(where, problem)


def duration(value: Any, where: str, *, allow_zero: bool = False) -> float:
    """Seconds from a number or ``90s`` / ``15m`` / ``2h`` / ``7d`` / ``1h30m``; RulesError naming *where*."""
    if isinstance(value, bool):
        raise RulesError(where, "is true/false, not a duration like 90s, 15m, 2h or 7d")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (parsed := seconds_in(value)) is not None:
        seconds = parsed
    else:
        raise RulesError(where, f"{_shown(value)} is not a duration like 90s, 15m, 2h or 7d")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise RulesError(where, f"{_shown(value)} must be a {'' if allow_zero else 'positive '}duration")
    if seconds > MAX_SECONDS:
        raise RulesError(where, f"{_shown(value)} is longer than a year")
    return seconds


def share(value: Any, where: str, *, whole: bool = False) -> float:
    """A share of a window, 0..1, from ``10%`` or ``0.1`` (with *whole*, 100% too); RulesError
    naming *where*."""
    if isinstance(value, bool):
        raise RulesError(where, "is true/false, not a share like 10% or 0.1")
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            f = float(value.strip()[:-1]) / 100.0
        except ValueError:
            raise RulesError(where, f"{_shown(value)} is not a percentage like 10%") from None
    elif isinstance(value, (int, float)):
        f = float(value)
    else:
        raise RulesError(where, f"{_shown(value)} is not a share like 10% or 0.1")
    if not (math.isfinite(f) and f > 0.0 and (f <= 1.0 if whole else f < 1.0)):
        raise RulesError(where, f"{_shown(value)} must lie between 0% and 100% "
                                f"({'0% excluded' if whole else 'exclusive'})")
    return f


def _shown(value: Any) -> str:
    # A value is echoed only when short: a key pasted in the wrong field must not be printed.
    text = repr(value)
    return text if len(text) <= 24 else f"a {type(value).__name__} of {len(str(value))} characters"


def _unknown(key: Any, known: tuple[str, ...], where: str) -> RulesError:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.5) or \
        [k for k in known if str(key) and k.startswith(str(key))][:1]
    hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
    return RulesError(f"{where}.{key}" if where else str(key), f"unknown key{hint}")


def _names(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise RulesError(where, "must be a non-empty list of names")
    if any(len(v) > 200 or not v.isprintable() for v in value):
        raise RulesError(where, "holds a name that is too long or not printable")
    return frozenset(v.strip() for v in value)


def _rule(name: str, body: Any, where: str) -> Rule:
    base = _default(name)
    if body is None or body is True:
        return base
    if body is False:
        return Rule(name, enabled=False, severity=base.severity, threshold=base.threshold, kinds=base.kinds)
    if not isinstance(body, dict):
        raise RulesError(where, "must be a mapping of settings, true or false")
    key, kind, _value, _sev = _THRESHOLD[name]
    known = _COMMON + ((key,) if key else ())
    for k in body:
        if k not in known:
            raise _unknown(k, known, where)
    enabled = body.get("enabled", True)
    if not isinstance(enabled, bool):
        raise RulesError(f"{where}.enabled", "must be true or false")
    severity = body.get("severity", base.severity)
    if severity not in SEVERITIES:
        raise RulesError(f"{where}.severity", f"{_shown(severity)} is not one of {', '.join(SEVERITIES)}")
    threshold, kinds = base.threshold, base.kinds
    if key is not None and key in body:
        at = f"{where}.{key}"
        if kind == "duration":
            threshold = duration(body[key], at)
        elif kind in ("share", "percent"):
            threshold = share(body[key], at, whole=kind == "percent")
        else:
            got = _names(body[key], at)
            for k in sorted(got):
                if k not in FINDING_KINDS:
                    raise _unknown(k, FINDING_KINDS, at)
            kinds = tuple(k for k in FINDING_KINDS if k in got)
    pools = _names(body["pools"], f"{where}.pools") if "pools" in body else None
    profiles = _names(body["profiles"], f"{where}.profiles") if "profiles" in body else None
    return Rule(name, enabled, severity, threshold, kinds, pools, profiles)


def parse(data: Any, source: str = "rules") -> Rules:
    """Rules from a parsed YAML document (None or empty: the defaults); RulesError naming the field."""
    if data is None:
        return Rules({n: _default(n) for n in NAMES}, source=source)
    if not isinstance(data, dict):
        raise RulesError(source, "must be a mapping with quiet_period, retries and rules")
    for k in data:
        if k not in _TOP:
            raise _unknown(k, _TOP, "")
    quiet = duration(data["quiet_period"], "quiet_period", allow_zero=True) \
        if "quiet_period" in data else DEFAULT_QUIET
    retries = data.get("retries", DEFAULT_RETRIES)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise RulesError("retries", f"must be a whole number from 0 to {MAX_RETRIES}")
    body = data.get("rules") or {}
    if not isinstance(body, dict):
        raise RulesError("rules", "must be a mapping of rule name to settings")
    for k in body:
        if k not in NAMES:
            raise _unknown(k, NAMES, "rules")
    return Rules({n: _rule(n, body[n], f"rules.{n}") if n in body else _default(n) for n in NAMES},
                 quiet, retries, source)


def load(path: Path) -> Rules:
    """The rules in *path*: BadInput (exit 2) naming the file and field for anything unusable."""
    try:
        got = safeio.read_checked(path, RULES_CAP)
    except StoreUnreadable as exc:
        raise BadInput("--rules", f"{path}: {exc.reason}") from None
    if got is None:
        raise BadInput("--rules", f"{path}: no such file")
    raw = got[0]
    try:
        yamlguard.check(raw, path)
        data = yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except StoreUnreadable as exc:
        raise BadInput("--rules", f"{path}: {exc.reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise BadInput("--rules", f"{path}: not valid YAML{at}") from None
    except RecursionError:
        raise BadInput("--rules", f"{path}: nested too deeply") from None
    try:
        return parse(data, str(path))
    except RulesError as exc:
        raise BadInput("--rules", f"{path}: {exc.field}: {exc.problem}") from None
