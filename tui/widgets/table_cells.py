"""The credential table's cells: per row key, its texts, its version and the lengths.

Every change to a row's cells bumps that row's version, and the painter's strip cache
is keyed by it, so setting a cell here is all it takes for that row, and only that row,
to be rendered again. A second version (the *frame* version) moves with every cell but
the countdown: a tick re-renders a line without rebuilding its other cells.

A credential row's text is built the first time the row is shown (or asked for): until
then it is *deferred*, and the longest raw text of its pool's deferred rows
(:func:`estimate`, one tight pass, no funnel) stands in for it in the column widths. A
10,000-row first fill so formats the forty rows on screen, not 10,000 (each through the
redacting text funnel).
"""

from __future__ import annotations

from itertools import count
from typing import Iterable

from store.model import as_int
from tui.widgets import cells as C
from tui.widgets.rows import Entry

GROWING = ("label", "message", "error", "fingerprint", "reason", "source")

Cells = dict[str, tuple[str, str]]   # column -> (text, style)


def estimate(rows: Iterable[Entry], fps: dict, notes: dict) -> dict[str, int]:
    """Longest raw text per growing column over credential *rows*.

    Raw: the funnel (redaction, escaping) rarely changes a length, and a row's exact
    lengths count as soon as it is shown. Header and banner rows are skipped.
    """
    null = len(C.NULL)
    label = message = error = reason = source = fp = null
    for e in rows:
        cv = e.cred
        if cv is None:
            continue
        r = cv.row
        get = r.get
        if (v := get("label")):
            label = max(label, len(str(v)))
        if (v := get("last_error_message")):
            message = max(message, len(str(v)))
        if (v := get("source")):
            source = max(source, len(str(v)))
        why = get("last_error_reason") or get("failure_reason")
        code = get("last_error_code")
        n_why = len(str(why)) if why else 0
        n_code = 0
        if code is not None and not isinstance(code, bool) and (n := as_int(code, -1)) >= 0:
            n_code = len(str(n))
        # As error_text and noted() join them: one space between parts that are there, and
        # "—" for none (a one-cell slip here moves a column when the row is first shown).
        n_err = n_code + n_why + (1 if n_code and n_why else 0)
        note = notes.get((e.pool.key, cv.id)) if notes else None
        if note:
            n_why = len(note) + (n_why + 1 if n_why else 0)
            n_err = len(note) + (n_err + 1 if n_err else 0)
        reason = max(reason, n_why)
        error = max(error, n_err)
        f = (fps.get(cv.key) if fps else None) or cv.fingerprint
        if f:
            fp = max(fp, len(f))
    return {"label": label, "message": message, "error": error, "reason": reason,
            "source": source, "fingerprint": max(fp, len("env unset"))}


class CellStore:
    """Formatted cells per row key (or the mark that a row is deferred), each row's
    signature and versions, and per growing column how many cells have each length.

    :attr:`versions` is public so a test can show what a lost version bump costs.
    """

    def __init__(self) -> None:
        self._data: dict[str, Cells] = {}
        self._deferred: set[str] = set()
        self._sigs: dict[str, tuple] = {}
        self.versions: dict[str, int] = {}
        self._frame_versions: dict[str, int] = {}   # every cell but the countdown
        self._seq = count(1)
        self._lengths: dict[str, dict[int, int]] = {k: {} for k in GROWING}
        self._estimates: dict[str, dict[str, int]] = {}   # per pool: its deferred rows'

    # ----------------------------------------------------------- queries
    def formatted(self, key: str) -> bool:
        return key in self._data

    def deferred(self, key: str) -> bool:
        return key in self._deferred

    def row(self, key: str) -> Cells:
        """The cells of a formatted row (KeyError for a deferred or unknown one)."""
        return self._data[key]

    def signature(self, key: str) -> tuple | None:
        return self._sigs.get(key)

    def version(self, key: str) -> int:
        """Moves with every change of the row's look: what its painted line is keyed by."""
        return self.versions.get(key, 0)

    def frame_version(self, key: str) -> int:
        """Moves with every change but the countdown's."""
        return self._frame_versions.get(key, 0)

    def natural(self) -> dict[str, int]:
        """Longest text per growing column: exact for formatted rows, estimated for the rest."""
        natural = {k: max(v, default=0) for k, v in self._lengths.items()}
        for est in self._estimates.values():
            for k, n in est.items():
                if n > natural[k]:
                    natural[k] = n
        return natural

    # ----------------------------------------------------------- changes
    def defer(self, key: str) -> None:
        """Keep the row unformatted until shown (its pool's estimate stands in for its lengths)."""
        self._deferred.add(key)
        self._sigs.pop(key, None)
        self._bump(key)

    def set_row(self, key: str, row: Cells, sig: tuple) -> None:
        """Take a row's cells whole (a first format, or a deferred row shown)."""
        self._deferred.discard(key)
        self._sigs[key] = sig
        old = self._data.get(key)
        self._data[key] = row
        for col in GROWING:
            if old is not None:
                self._count(col, old.get(col), -1)
            self._count(col, row.get(col), +1)
        self._bump(key)

    def set_signature(self, key: str, sig: tuple) -> None:
        self._sigs[key] = sig

    def drop_signature(self, key: str) -> None:
        """Make the next reconcile look at the row again (its mark or note moved)."""
        self._sigs.pop(key, None)

    def update_cell(self, key: str, column: str, value: tuple[str, str]) -> None:
        """Set one cell of a formatted row; the row re-renders on its next paint."""
        row = self._data[key]
        self._count(column, row.get(column), -1)
        row[column] = value
        self._count(column, value, +1)
        self._bump(key)

    def write_countdown(self, key: str, text: str) -> None:
        """Set a formatted row's countdown: its line re-renders, its frame stays."""
        self._data[key]["left"] = (text, "")
        self.versions[key] = next(self._seq)

    def touch(self, key: str) -> None:
        """A new version for a row whose look changed outside its cells (a pool header's
        counts or fold mark, poured in when painted)."""
        self._bump(key)

    def forget(self, key: str) -> None:
        self._deferred.discard(key)
        row = self._data.pop(key, {})
        for col in GROWING:
            self._count(col, row.get(col), -1)
        self._sigs.pop(key, None)
        self.versions.pop(key, None)
        self._frame_versions.pop(key, None)

    def clear(self) -> None:
        """Forget every row (the version sequence goes on: no line may reuse a version)."""
        for key in [*self._data, *self._deferred]:
            self.forget(key)
        self._estimates = {}

    # ----------------------------------------------------------- estimates
    def estimate_of(self, pool: str) -> dict[str, int] | None:
        """The longest raw text per growing column of the pool's deferred rows (read only)."""
        return self._estimates.get(pool)

    def set_estimate(self, pool: str, est: dict[str, int]) -> None:
        self._estimates[pool] = est

    def raise_estimate(self, pool: str, column: str, n: int) -> None:
        self._estimates[pool][column] = n

    def drop_estimate(self, pool: str) -> None:
        self._estimates.pop(pool, None)

    def _bump(self, key: str) -> None:
        self.versions[key] = self._frame_versions[key] = next(self._seq)

    def _count(self, col: str, value: tuple[str, str] | None, delta: int) -> None:
        lengths = self._lengths.get(col)
        if lengths is None or value is None:
            return
        n = len(value[0])
        left = lengths.get(n, 0) + delta
        if left > 0:
            lengths[n] = left
        else:
            lengths.pop(n, None)
