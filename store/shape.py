"""The shape of auth.json that hermes-admin understands, checked before it is used.

A store whose ``credential_pool`` is a list, a string or null, a row that is not an
object, two rows with one id in a pool, or a field of a type we would misread is
refused as a whole, naming the JSON path of the first problem
(``credential_pool.openrouter[2].id``). Reading it as empty and then writing would
replace data we do not understand; so writes refuse (exit 3) and reads show the error.

Only fields hermes-admin reads or writes are checked, and only for the types it
handles; unknown fields are never looked at. ``last_error_reset_at`` is deliberately
not checked: Hermes tolerates any value there, and the view shows an unusable one as a
data error on its row instead (store.pools.times.reset_at_problem).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from store.errors import StoreUnreadable

_Check = Callable[[Any], bool]


def _opt(*types: type) -> _Check:
    return lambda v: v is None or (isinstance(v, types) and not isinstance(v, bool))


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_time(v: Any) -> bool:
    """Epoch seconds (finite number) or an ISO/numeric string, or null (spec section 2)."""
    if v is None or isinstance(v, str):
        return True
    if isinstance(v, bool):
        return False
    # Any integer is finite (and math.isfinite raises on one too large for a float): a huge
    # one is the view's data error to show (store.pools.times), not an unreadable store.
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def _opt_int(v: Any) -> bool:
    """An integer, or a float with an integral value (``3.0`` reads as 3), or null."""
    return v is None or _is_int(v) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def _map_of_times(v: Any) -> bool:
    return isinstance(v, dict) and all(_is_time(t) for t in v.values())


# field -> (check, what the field must be). Absent fields are always fine.
ROW_FIELDS: dict[str, tuple[_Check, str]] = {
    "id": (_is_str, "a string"),
    "label": (_opt(str), "a string or null"),
    "auth_type": (_opt(str), "a string or null"),
    "source": (_opt(str), "a string or null"),
    "priority": (_opt_int, "an integer"),
    "request_count": (_opt_int, "an integer"),
    "access_token": (_opt(str), "a string"),
    "refresh_token": (_opt(str), "a string"),
    "agent_key": (_opt(str), "a string"),
    "base_url": (_opt(str), "a string"),
    "secret_fingerprint": (_opt(str), "a string"),
    "last_status": (_opt(str), "a string or null"),
    "last_status_at": (_is_time, "epoch seconds, an ISO time or null"),
    "last_error_code": (_opt_int, "an integer HTTP status or null"),
    "last_error_reason": (_opt(str), "a string or null"),
    "last_error_message": (_opt(str), "a string or null"),
    "failure_reason": (_opt(str), "a string or null"),
    "status_cleared_at": (_is_time, "epoch seconds or null"),
    "model_cooldowns": (_map_of_times, "an object of model -> epoch seconds"),
    "model_cooldown_observed_at": (_map_of_times, "an object of model -> epoch seconds"),
}


# The exact JSON types that pass each field's check without calling it: a 10,000-row store
# is checked on every full read, and a set look-up is several times cheaper than the check.
# A value of any other type (a float time, a subclass) still goes through the check.
_NONE = type(None)
_PASS: dict[str, frozenset[type]] = {
    **{name: frozenset({str, _NONE}) for name in (
        "label", "auth_type", "source", "access_token", "refresh_token", "agent_key", "base_url",
        "secret_fingerprint", "last_status", "last_error_reason", "last_error_message",
        "failure_reason")},
    "id": frozenset({str}),
    "priority": frozenset({int, _NONE}),
    "request_count": frozenset({int, _NONE}),
    "last_error_code": frozenset({int, _NONE}),
    "last_status_at": frozenset({str, int, _NONE}),  # a float goes through _is_time
    "status_cleared_at": frozenset({str, int, _NONE}),
}


def row_ok(row: Any) -> bool:
    """True when *row* certainly has no shape problem (False: ask :func:`row_problem`)."""
    if type(row) is not dict:
        return False
    for name, value in row.items():
        passing = _PASS.get(name)
        if passing is not None and type(value) in passing:
            continue
        spec = ROW_FIELDS.get(name)
        if spec is not None and not spec[0](value):
            return False
    return True


def _type_name(v: Any) -> str:
    return "null" if v is None else {dict: "object", list: "list", str: "string", bool: "boolean",
                                     int: "integer", float: "number"}.get(type(v), type(v).__name__)


def _key(k: str) -> str:
    """A pool key as it reads in a JSON path (odd keys quoted so the path stays unambiguous)."""
    return k if k and all(c.isalnum() or c in "-_:." for c in k) else repr(k)


def row_problem(row: Any, at: str) -> tuple[str, str] | None:
    """(json path, what is wrong) for the first problem of one credential row, or None."""
    if not isinstance(row, dict):
        return at, f"is {_type_name(row)}, not a credential object"
    for name, (check, want) in ROW_FIELDS.items():
        if name in row and not check(row[name]):
            return f"{at}.{name}", f"is {_type_name(row[name])}, must be {want}"
    return None


def repeated_id(rows: list[Any], where: str) -> tuple[str, str] | None:
    """The first row of *rows* whose id repeats an earlier row's, as a shape problem."""
    ids: dict[str, int] = {}
    for i, row in enumerate(rows):
        rid = row.get("id") if isinstance(row, dict) else None
        if isinstance(rid, str):
            if rid in ids:
                return f"{where}[{i}].id", _repeats(where, ids[rid])
            ids[rid] = i
    return None


def _repeats(where: str, first: int) -> str:
    return f"repeats the id of {where}[{first}] (ids must be unique in a pool)"


def pool_where(pool: Any) -> str:
    """The JSON path of a pool (``credential_pool.openrouter``)."""
    return f"credential_pool.{_key(str(pool))}"


def top_problem(doc: Any) -> tuple[str, str] | None:
    """The first problem outside the credential rows: the top level, its maps, pools not lists."""
    if not isinstance(doc, dict):
        return "(top level)", f"is a JSON {_type_name(doc)}, not an object"
    if "credential_pool" in doc and not isinstance(doc["credential_pool"], dict):
        return "credential_pool", f"is {_type_name(doc['credential_pool'])}, not an object of pools"
    if "providers" in doc and not isinstance(doc["providers"], dict):
        return "providers", f"is {_type_name(doc['providers'])}, not an object"
    sup = doc.get("suppressed_sources")
    if sup is not None:
        if not isinstance(sup, dict):
            return "suppressed_sources", f"is {_type_name(sup)}, not an object"
        for key, val in sup.items():
            if not isinstance(val, list) or not all(isinstance(s, str) for s in val):
                return f"suppressed_sources.{_key(key)}", "is not a list of strings"
    return None


def problem(doc: Any) -> tuple[str, str] | None:
    """(json path, what is wrong) for the first shape problem in *doc*, or None."""
    found = top_problem(doc)
    if found is not None:
        return found
    for pool, rows in (doc.get("credential_pool") or {}).items():
        where = pool_where(pool)
        if not isinstance(rows, list):
            return where, f"is {_type_name(rows)}, not a list of credentials"
        ids: dict[str, int] = {}
        for i, row in enumerate(rows):
            if not row_ok(row):
                found = row_problem(row, f"{where}[{i}]")
                if found is not None:
                    return found
            rid = row.get("id")
            if isinstance(rid, str):
                if rid in ids:
                    return f"{where}[{i}].id", _repeats(where, ids[rid])
                ids[rid] = i
    return None


def check(doc: Any, path: Path, hint: str | None = None) -> None:
    """Raise StoreUnreadable naming *path* and the JSON path of the first shape problem."""
    found = problem(doc)
    if found is not None:
        field, what = found
        raise StoreUnreadable(path, f"{field} {what}", hint)
