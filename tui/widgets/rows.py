"""Which rows the dashboard shows, in which order: grouping, filter and sort.

Pure functions, so the order can be tested and compared cheaply: the table only
reorders itself when this list changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from store.model import as_int
from store.pools.view import CredentialView, PoolView

SEP = "\x1f"  # cannot appear in a pool key, safe inside a row key
HEADER_PREFIX = "pool" + SEP

SORTS: dict[str, str] = {
    "priority": "Hermes order (priority)",
    "status": "status: dead, cooling, ready, ok",
    "left": "time left, soonest first",
    "label": "label A-Z",
    "requests": "requests, most first",
}
SORT_ORDER = tuple(SORTS)
# The same orders turned round (``O``).
REVERSED: dict[str, str] = {
    "priority": "Hermes order turned round (last pick first)",
    "status": "status: ok, ready, cooling, dead",
    "left": "time left, latest first",
    "label": "label Z-A",
    "requests": "requests, fewest first",
}
# The direction of each order as named in SORTS (requests: most first, so descending).
DESCENDING = frozenset({"requests"})


def sort_arrow(sort: str, reverse: bool) -> str:
    """``↑`` (ascending) or ``↓`` (descending): the direction *sort* runs in, turned round or not."""
    return "↓" if (sort in DESCENDING) != reverse else "↑"

_STATUS_RANK = {"dead": 0, "cooling": 1, "ready": 2, "ok": 3}


@dataclass(frozen=True)
class ProfileBanner:
    """A profile's header line in the all-profiles view: placed among the pools it heads.

    Duck-types the parts of a :class:`PoolView` the table reads (``key``, ``credentials``),
    so grouping needs no second table; ``tokens`` are the words poured into its cells.
    """

    key: str
    profile: str
    tokens: tuple[str, ...]
    error: bool = False
    credentials: tuple = ()

    @property
    def text(self) -> str:
        return "  ".join(self.tokens)


@dataclass(frozen=True)
class Entry:
    """One table row: a pool header (``cred`` is None) or a credential."""

    key: str
    pool: PoolView
    cred: CredentialView | None = None

    @property
    def is_header(self) -> bool:
        return self.cred is None


def header_key(pool: str) -> str:
    return HEADER_PREFIX + pool


def cred_key(cv: CredentialView, occurrence: int = 0, pool: str | None = None) -> str:
    # Ids are unique in files Hermes wrote, but "accept any string" includes
    # duplicates and blanks; a suffix keeps the table from refusing the row.
    # *pool* is the view's key: in the all-profiles view it names the profile too.
    base = "cred" + SEP + (pool if pool is not None else cv.pool) + SEP + cv.id
    return base if occurrence == 0 else f"{base}{SEP}{occurrence}"


def split_key(row_key: str) -> tuple[str, str] | None:
    """(pool, id) of a credential row key; None for a pool header."""
    parts = row_key.split(SEP)
    if parts[0] != "cred" or len(parts) < 3:
        return None
    return parts[1], parts[2]


def mark_key(e: Entry) -> tuple[str, str]:
    """The key a row's marks and notes are stored under: (view's pool key, id)."""
    assert e.cred is not None
    return (e.pool.key, e.cred.id)


def matches(cv: CredentialView, terms: Sequence[str]) -> bool:
    """Every term must appear in the label, id, source, pool or status (any case)."""
    if not terms:
        return True
    hay = " ".join((cv.label, cv.id, str(cv.row.get("source") or ""), cv.pool,
                    cv.effective.status)).lower()
    return all(t in hay for t in terms)


def _sort_key(mode: str) -> Callable[[CredentialView], tuple]:
    if mode == "status":
        return lambda cv: (_STATUS_RANK.get(cv.effective.status, 9), cv.index)
    if mode == "left":
        def left(cv: CredentialView) -> tuple:
            at = cv.effective.available_at
            if cv.effective.status != "cooling" or at is None or not math.isfinite(at):
                at = math.inf
            return (at, cv.index)
        return left
    if mode == "label":
        return lambda cv: (cv.label.lower(), cv.index)
    if mode == "requests":
        return lambda cv: (-as_int(cv.row.get("request_count")), cv.index)
    return lambda cv: cv.index


def entries(
    pools: Sequence[PoolView], filter_text: str = "", sort: str = "priority", reverse: bool = False,
) -> list[Entry]:
    """Header + credentials per pool, filtered and sorted within each pool (*reverse*: the
    order turned round).

    A pool with no matching credential disappears while a filter is active; an
    empty pool (no rows at all) still shows its header when there is no filter.
    """
    terms = filter_text.lower().split()
    key_fn = _sort_key(sort)
    out: list[Entry] = []
    for pv in pools:
        if isinstance(pv, ProfileBanner):
            out.append(Entry(header_key(pv.key), pv))  # type: ignore[arg-type]
            continue
        creds = [cv for cv in pv.credentials if matches(cv, terms)]
        if terms and not creds:
            continue
        if sort != "priority":
            creds.sort(key=key_fn)
        if reverse:
            creds.reverse()
        out.append(Entry(header_key(pv.key), pv))
        seen: dict[str, int] = {}
        for cv in creds:
            n = seen.get(cv.id, 0)
            seen[cv.id] = n + 1
            out.append(Entry(cred_key(cv, n, pv.key), pv, cv))
    return out


PATCH_MAX = 64
"""More changed credentials than this in one pool: rebuild its entries whole."""


def patch_entries(
    old_pv: PoolView, new_pv: PoolView, old_rows: list[Entry], filter_text: str = "",
    sort: str = "priority",
) -> tuple[list[Entry], list[Entry]] | None:
    """``entries([new_pv], ...)`` made from *old_rows* (``entries([old_pv], ...)`` under the
    same filter and sort) by swapping in the credentials that changed.

    Returns (rows, changed), *changed* being the new header then the changed credential
    rows, or None when a change could add, hide or move a row (another id, a filter match
    that flipped, a sort key that moved, or another fingerprint, which can decide another
    row's distinguishing tail) or touched too many rows: the caller then rebuilds.
    Unchanged rows keep their Entry objects, whose ``pool`` is then the older view of the
    same pool: for a credential row only its key is ever read.
    """
    if isinstance(old_pv, ProfileBanner) or isinstance(new_pv, ProfileBanner):
        return None
    old_c, new_c = old_pv.credentials, new_pv.credentials
    if len(old_c) != len(new_c) or not old_rows or old_rows[0].key != header_key(new_pv.key):
        return None
    pairs = [(a, b) for a, b in zip(old_c, new_c, strict=True) if a is not b]
    if len(pairs) > PATCH_MAX:
        return None
    terms = filter_text.lower().split()
    # Turned round or not (the caller patches only under the same view), the priority
    # order moves a row when its index does, which a changed id already refuses; any
    # other order, when its sort key does.
    key_fn = _sort_key(sort) if sort != "priority" else None
    rows = list(old_rows)
    header = Entry(old_rows[0].key, new_pv)
    rows[0] = header
    changed = [header]
    where: dict[int, int] | None = None
    for a, b in pairs:
        if a.id != b.id or a.fingerprint != b.fingerprint:
            return None
        if terms and (shown := matches(a, terms)) != matches(b, terms):
            return None
        if terms and not shown:
            continue  # filtered out before and after
        if key_fn is not None and key_fn(a) != key_fn(b):
            return None
        i = a.index  # unsorted and unfiltered, credential i is row i (the header is row 0)
        if not (i < len(rows) and rows[i].cred is a):
            if where is None:
                where = {id(e.cred): n for n, e in enumerate(old_rows) if e.cred is not None}
            i = where.get(id(a), -1)
            if i < 0:
                return None
        e = Entry(rows[i].key, new_pv, b)
        rows[i] = e
        changed.append(e)
    return rows, changed
