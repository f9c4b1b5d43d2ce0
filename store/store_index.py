"""Re-read auth.json at the cost of what changed: only the values whose bytes moved are parsed.

A write to one row of a 10,000-credential store rewrites the whole file (4.8 MB), but
only that row and ``updated_at`` differ. Parsing it all again costs about 40 ms and
checking its shape 20 ms more, on every write, for a view that changes one row.

:class:`Indexed` keeps the last good bytes, the document parsed from them, and the byte
span of every *value*: each credential row and each top-level value other than
``credential_pool``. Everything between values (keys, brackets, commas, whitespace) is
*structure*. :func:`patch` compares new bytes with the old ones in large chunks; where
they differ inside a value, that value alone is parsed again (``json``'s own scanner) and
must end exactly where the unchanged structure resumes. The new text is then the old
structure with some values replaced, and JSON is context-free, so parsing it whole would
give the old document with those values replaced: that is the document returned.

Anything else (structure changed: a row or pool added or removed, a key renamed; more
than :data:`MAX_CHANGED` values; text that is not UTF-8 or JSON; a changed value with a
shape problem) returns None, and the caller parses the file whole with
:func:`store.authfile.parse_store`, which also words every error. Nothing here writes.

Unchanged rows are the same objects in the old and the new document: a reader must treat
documents as read-only (the console does; every writer reads its own fresh copy).
"""

from __future__ import annotations

import json
import re
import time
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from typing import Any

from store import authfile, safeio, shape
from store.paths import Home

# More changed values than this is a bulk edit: parse whole, it is no slower.
MAX_CHANGED = 256
_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"
_WS = re.compile(r"[ \t\n\r]*")
_scan = json.JSONDecoder().scan_once
_string = json.decoder.scanstring  # type: ignore[attr-defined]

# Where a value sits: ("top", key) or (pool key, row index).
Place = tuple[str, Any]


class _NotIndexable(Exception):
    """The text has a layout the index does not follow (the caller parses it whole)."""


@dataclass(frozen=True)
class Indexed:
    """Bytes of a good read, its document, and the byte span of every value in it.

    ``starts``/``ends`` are the spans as some earlier read laid them out; ``moves`` says how
    values have grown since: (value index k, bytes), sorted by k, meaning k's end and every
    later value moved by that many bytes. A write that changes a value's length (a count
    going from 99 to 100) so costs a few entries here instead of a pass over every later
    value's offsets (10,000 at 10,000 keys); the lists are rebuilt once moves pile up.
    """

    raw: bytes
    doc: dict[str, Any]
    starts: list[int]
    ends: list[int]
    places: list[Place]
    moves: tuple[tuple[int, int], ...] = ()
    _keys: tuple[int, ...] = ()     # the k of each move
    _sums: tuple[int, ...] = (0,)   # _sums[i]: bytes moved by moves[:i]

    def _moved_before(self, k: int) -> int:
        """Bytes that values with an index below *k* have grown by."""
        return self._sums[bisect_left(self._keys, k)] if self._keys else 0

    def start(self, k: int) -> int:
        return self.starts[k] + self._moved_before(k)

    def end(self, k: int) -> int:
        return self.ends[k] + self._moved_before(k + 1)

    def find(self, x: int) -> int:
        """The index of the last value starting at or before byte *x* (-1: none)."""
        if not self._keys:
            return bisect_right(self.starts, x) - 1
        return bisect_right(range(len(self.starts)), x, key=self.start) - 1


def _ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _key(text: str, pos: int) -> tuple[str, int]:
    if text[pos:pos + 1] != '"':
        raise _NotIndexable
    key, pos = _string(text, pos + 1)
    pos = _ws(text, pos)
    if text[pos:pos + 1] != ":":
        raise _NotIndexable
    return key, _ws(text, pos + 1)


def _value(text: str, pos: int) -> tuple[Any, int]:
    try:
        return _scan(text, pos)
    except StopIteration:
        raise _NotIndexable from None


def _next(text: str, pos: int, close: str) -> tuple[bool, int]:
    """After a member: (another follows, position of it or past *close*)."""
    pos = _ws(text, pos)
    c = text[pos:pos + 1]
    if c == ",":
        return True, _ws(text, pos + 1)
    if c == close:
        return False, pos + 1
    raise _NotIndexable


def _rows(text: str, pos: int, pool: str, spans: list[tuple[int, int, Place]]) -> tuple[list[Any], int]:
    rows: list[Any] = []
    pos = _ws(text, pos + 1)
    if text[pos:pos + 1] == "]":
        return rows, pos + 1
    more = True
    while more:
        row, end = _value(text, pos)
        spans.append((pos, end, (pool, len(rows))))
        rows.append(row)
        more, pos = _next(text, end, "]")
    return rows, pos


def _pools(text: str, pos: int, spans: list[tuple[int, int, Place]]) -> tuple[dict[str, Any], int]:
    pools: dict[str, Any] = {}
    pos = _ws(text, pos + 1)
    if text[pos:pos + 1] == "}":
        return pools, pos + 1
    more = True
    while more:
        key, pos = _key(text, pos)
        if key in pools or text[pos:pos + 1] != "[":
            raise _NotIndexable  # a repeated pool key, or a pool that is not a list
        pools[key], pos = _rows(text, pos, key, spans)
        more, pos = _next(text, pos, "}")
    return pools, pos


def index_text(text: str) -> tuple[dict[str, Any], list[tuple[int, int, Place]]]:
    """Parse *text* (a JSON object) and note the character span of every value.

    Raises _NotIndexable for any layout it does not follow; the result, when there is
    one, equals ``json.loads(text)``.
    """
    spans: list[tuple[int, int, Place]] = []
    doc: dict[str, Any] = {}
    pos = _ws(text, 0)
    if text[pos:pos + 1] != "{":
        raise _NotIndexable
    pos = _ws(text, pos + 1)
    more = text[pos:pos + 1] != "}"
    pos = pos if more else pos + 1
    while more:
        key, pos = _key(text, pos)
        if key in doc:
            raise _NotIndexable  # json keeps the last of repeated keys; do not guess
        if key == "credential_pool" and text[pos:pos + 1] == "{":
            doc[key], pos = _pools(text, pos, spans)
        else:
            doc[key], end = _value(text, pos)
            spans.append((pos, end, ("top", key)))
            pos = end
        more, pos = _next(text, pos, "}")
    if _ws(text, pos) != len(text):
        raise _NotIndexable
    return doc, spans


def _byte_spans(raw: bytes, text: str, spans: list[tuple[int, int, Place]]) -> tuple[list[int], list[int]]:
    """Character spans of *text* as byte spans of *raw* (its UTF-8 bytes, maybe after a BOM)."""
    base = len(_BOM) if raw.startswith(_BOM) else 0
    if text.isascii():
        return [a + base for a, _, _ in spans], [b + base for _, b, _ in spans]
    starts, ends = [], []  # characters are not bytes: count bytes between span edges
    at_char, at_byte = 0, base
    for a, b, _ in spans:
        at_byte += len(text[at_char:a].encode("utf-8"))
        starts.append(at_byte)
        at_byte += len(text[a:b].encode("utf-8"))
        ends.append(at_byte)
        at_char = b
    return starts, ends


class StoreReader:
    """Reads one auth.json again and again, each time at the cost of what changed.

    Not thread-safe: one reader (the console's watcher thread) owns it.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self._last: Indexed | None = None
        self._spans: list[tuple[int, int, Place]] | None = None

    def read(self) -> authfile.Snapshot:
        """Like :func:`store.authfile.read_store`; raises StoreUnreadable the same way."""
        path = self.home.auth
        now = time.time()
        got = safeio.read_checked(path, safeio.AUTH_CAP)
        if got is None:
            safeio.refuse_dangling(path)
            self._last = None
            return authfile.Snapshot(path, None, None, None, now)
        raw, st = got
        fresh = patch(self._last, raw) if self._last is not None else None
        doc = fresh.doc if fresh is not None else None
        if fresh is None:
            self._last = None  # a file that does not parse leaves no index behind
            self._spans = None
            doc = authfile.parse_store(raw, path, self.home.backup, loads=self._loads)
            spans, self._spans = self._spans, None
            if spans is not None:
                text = (raw[len(_BOM):] if raw.startswith(_BOM) else raw).decode("utf-8")
                starts, ends = _byte_spans(raw, text, spans)
                fresh = Indexed(raw, doc, starts, ends, [p for _, _, p in spans])
        self._last = fresh
        return authfile.Snapshot(path, doc, raw, st.st_mtime_ns, now)

    def _loads(self, text: str) -> Any:
        try:
            doc, self._spans = index_text(text)
            return doc
        except (_NotIndexable, ValueError, RecursionError):
            return json.loads(text)  # words the error, or parses a layout we do not index


def first_difference(old: bytes, new: bytes, at: int, shift: int) -> int | None:
    """The first position >= *at* where ``old[p] != new[p + shift]`` (or one text ends
    before the other), else None.

    ``new.startswith(view of old, start)`` is one memcmp with no copy of either side, and
    memcmp stops at the first difference: a write near the top costs a few bytes, and the
    rest of the file is one pass at memory speed. The difference is then narrowed by
    halving the same way.
    """
    n = len(old)
    if at >= n:
        return None if n + shift == len(new) else n
    view = memoryview(old)
    if at + shift >= 0 and new.startswith(view[at:], at + shift):
        return None if n + shift == len(new) else n
    lo, hi = at, n  # old[at:lo] matches; somewhere in old[lo:hi] is the difference
    while hi - lo > 32:
        mid = (lo + hi) // 2
        if lo + shift >= 0 and new.startswith(view[lo:mid], lo + shift):
            lo = mid
        else:
            hi = mid
    for p in range(lo, hi):
        if not 0 <= p + shift < len(new) or old[p] != new[p + shift]:
            return p
    return hi  # pragma: no cover - old[lo:hi] differs from new, so some position does


def _decode_at(new: bytes, pos: int, hint: int) -> tuple[Any, int]:
    """Parse the JSON value starting at byte *pos* of *new*; (value, byte end)."""
    size = max(2 * hint, hint + _CHUNK)
    while True:
        end = min(len(new), pos + size)
        while end < len(new) and (new[end] & 0xC0) == 0x80:
            end -= 1  # never cut a UTF-8 character in two
        text = new[pos:end].decode("utf-8")
        try:
            value, stop = _scan(text, 0)
        except StopIteration:
            value, stop = None, -1
        # A value that runs to the end of a cut window may continue past it (a number).
        if stop != -1 and (stop < len(text) or end == len(new)):
            return value, pos + (stop if text.isascii() else len(text[:stop].encode("utf-8")))
        if end == len(new):
            raise _NotIndexable
        size *= 4


def patch(old: Indexed, new: bytes) -> Indexed | None:
    """*old* brought up to *new* by re-parsing only the values that changed, or None."""
    places = old.places
    changed: dict[int, tuple[Any, int]] = {}  # value index -> (new value, byte delta)
    shift, at = 0, 0
    try:
        while (x := first_difference(old.raw, new, at, shift)) is not None:
            k = old.find(x)
            # A difference at a value's end byte is that value growing (``12`` -> ``123``).
            if k < 0 or x > old.end(k) or k in changed or len(changed) >= MAX_CHANGED:
                return None  # structure changed
            start, stop = old.start(k), old.end(k)
            value, end = _decode_at(new, start + shift, stop - start)
            new_shift = end - stop
            changed[k] = (value, new_shift - shift)
            shift, at = new_shift, stop
    except (_NotIndexable, ValueError, RecursionError):
        return None
    if not changed:
        return replace(old, raw=new)
    doc = _patched_doc(old.doc, {places[k]: v for k, (v, _) in changed.items()})
    if doc is None:
        return None
    return _moved(replace(old, raw=new, doc=doc), changed)


def _patched_doc(doc: dict[str, Any], values: dict[Place, Any]) -> dict[str, Any] | None:
    """A copy of *doc* with *values* put in place (only the containers on the way are
    copied), or None when a changed value has a shape problem."""
    out = dict(doc)
    pools: dict[str, Any] | None = None
    for (where, key), value in values.items():
        if where == "top":
            out[key] = value
            continue
        if pools is None:
            pools = out["credential_pool"] = dict(out["credential_pool"])
        if pools[where] is doc["credential_pool"][where]:
            pools[where] = list(pools[where])
        if not shape.row_ok(value) and shape.row_problem(value, "") is not None:
            return None
        pools[where][key] = value
    if shape.top_problem(out) is not None:
        return None
    if not isinstance(out.get("providers"), dict) and not isinstance(out.get("credential_pool"), dict):
        return None
    # A pool whose written rows all kept their ids (as they were in a good read) cannot
    # have gained a repeat: only the others are checked again.
    renamed = {w for (w, k), v in values.items() if w != "top"
               and not (isinstance(v, dict) and _id_of(doc["credential_pool"][w][k]) == _id_of(v))}
    for where in renamed:
        if shape.repeated_id(pools[where], where) is not None:
            return None
    return out


def _id_of(row: Any) -> Any:
    return row.get("id") if isinstance(row, dict) else None


MOVES_KEPT = 64
"""Moves noted before the span lists are rebuilt (one pass over them)."""


def _moved(idx: Indexed, changed: dict[int, tuple[Any, int]]) -> Indexed:
    """*idx* with the changed values' growth noted; the lists are rebuilt only when more
    than :data:`MOVES_KEPT` moves have piled up."""
    grown = {k: delta for k, (_, delta) in changed.items() if delta}
    if not grown:
        return idx
    moves: dict[int, int] = dict(idx.moves)
    for k, delta in grown.items():
        moves[k] = moves.get(k, 0) + delta
    keys = tuple(sorted(k for k, d in moves.items() if d))
    if len(keys) <= MOVES_KEPT:
        sums = [0]
        for k in keys:
            sums.append(sums[-1] + moves[k])
        return replace(idx, moves=tuple((k, moves[k]) for k in keys), _keys=keys, _sums=tuple(sums))
    starts, ends = list(idx.starts), list(idx.ends)
    total = 0
    for i, k in enumerate(keys):  # from each move to the next, everything moved by the total so far
        ends[k] += moves[k]
        total += moves[k]
        stop = keys[i + 1] + 1 if i + 1 < len(keys) else len(starts)
        starts[k + 1:stop] = [s + total for s in starts[k + 1:stop]]
        ends[k + 1:stop] = [e + total for e in ends[k + 1:stop]]
    return replace(idx, starts=starts, ends=ends, moves=(), _keys=(), _sums=(0,))
