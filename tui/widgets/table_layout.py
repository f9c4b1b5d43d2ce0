"""Column widths that follow the terminal, and fingerprints that stay tellable apart.

:class:`ColumnLayout` is the credential table's layout: which columns it shows and how
wide each is, changed only when the terminal, the layout or a longest text did. The
arithmetic under it is pure (tui.widgets.table_columns), so tests can check it alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from store.pools.view import CredentialView
from store.redaction.fingerprints import fingerprint
from tui.text.format import ellipsize
from tui.widgets.cells import NARROW, WIDE, ColumnSpec
from tui.widgets.table_columns import AUTO, CUSTOM, ORDER, PAD, WIDE_MODE, columns_for, widths

ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    """A column as shown: its key (named like DataTable's ``ColumnKey.value``), title, width."""

    value: str
    label: str
    width: int


class ColumnLayout:
    """The table's layout (auto, wide or the operator's own columns; see
    tui.widgets.table_columns) and its columns' widths, worked out again only when the
    terminal, the layout or a longest text changed: only a real change of the columns or
    their widths bumps :attr:`version`, which every cached line is keyed by."""

    def __init__(self, wide: bool = False) -> None:
        self.mode = WIDE_MODE if wide else AUTO
        self.chosen: tuple[str, ...] = ()   # the custom layout's columns
        self.back = AUTO                    # the layout `w` goes back to
        self.specs: tuple[ColumnSpec, ...] = WIDE if wide else NARROW
        self.widths: tuple[int, ...] = ()
        self.full = 0      # painted width of a line: the terminal's, or the columns' if wider
        self.version = 0

    @property
    def wide(self) -> bool:
        return self.mode == WIDE_MODE

    @property
    def fitted(self) -> bool:
        return bool(self.widths)

    @property
    def columns(self) -> list[Column]:
        return [Column(s.key, s.label, w) for s, w in zip(self.specs, self.widths, strict=True)]

    @property
    def keys(self) -> tuple[str, ...]:
        """The columns shown, in order."""
        return tuple(s.key for s in self.specs)

    @property
    def used(self) -> int:
        """Cells the columns take, padding included."""
        return sum(w + 2 * PAD for w in self.widths)

    def set_wide(self, wide: bool) -> bool:
        """Switch to every column (True) or back to the layout before; True if that changed
        anything."""
        if wide == self.wide:
            return False
        if wide:
            self.back, self.mode = self.mode, WIDE_MODE
        else:
            self.mode = self.back
        self._unfit()
        return True

    def choose(self, keys: Sequence[str] | None) -> bool:
        """Show the columns *keys* (in the one order; ``#`` always), or the automatic layout
        (None); True if that changed anything."""
        mode, chosen = (AUTO, ()) if keys is None else (CUSTOM, tuple(k for k in ORDER if k in keys))
        if (mode, chosen) == (self.mode, self.chosen):
            return False
        self.mode, self.chosen, self.back = mode, chosen, mode
        self._unfit()
        return True

    def _unfit(self) -> None:
        self.widths, self.full = (), 0   # to fit again: the old widths are another layout's
        self.version += 1

    def fit(self, total: int, natural: dict[str, int], fingerprint_need: int,
            line: int | None = None) -> bool:
        """Columns and widths for *total* cells whose longest texts are *natural*, on lines
        *line* cells wide (default *total*); True (and a new version) only when a column,
        a width or the line's width changed."""
        specs = columns_for(self.mode, self.chosen, total, natural)
        layout = widths(specs, total, natural, {"fingerprint": fingerprint_need})
        full = max(total if line is None else line, sum(w + 2 * PAD for w in layout))
        if specs == self.specs and layout == self.widths and full == self.full:
            return False
        self.specs, self.widths, self.full = specs, layout, full
        self.version += 1
        return True


def cut_fingerprint(text: str, width: int) -> str:
    """Cut a ``prefix…tail`` fingerprint to *width* from the prefix side: the tail is
    what tells two keys apart, so it is the last thing to go."""
    if len(text) <= width:
        return text
    prefix, sep, tail = text.partition(ELLIPSIS)
    if not sep:
        return ellipsize(text, width)
    if len(tail) + 1 >= width:
        return ELLIPSIS + tail[-(width - 1):] if width > 1 else ELLIPSIS
    return prefix[: width - 1 - len(tail)] + ELLIPSIS + tail


def _tail(fp: str) -> str:
    return fp.partition(ELLIPSIS)[2]


def shortest_distinct_tail(fps: Iterable[str]) -> int:
    """Fewest trailing characters that tell every fingerprint of *fps* apart (0 if < 2)."""
    tails = [_tail(f) for f in fps if f]
    if len(tails) < 2:
        return 0
    longest = max(map(len, tails))
    for k in range(1, longest + 1):
        if len({t[-k:] for t in tails}) == len(tails):
            return k
    return longest


def distinct_fingerprints(creds: Sequence[CredentialView]) -> dict[tuple[str, str], str]:
    """Fingerprints for credentials of ONE pool whose usual ``prefix…last4`` collide.

    Two keys of one pool can share vendor prefix and last four characters; for those
    (only), a longer tail of the stored secret is shown, just long enough to differ.
    Still a fingerprint: never more than a quarter of the secret.
    """
    counts = Counter(cv.fingerprint for cv in creds if cv.fingerprint)
    groups: dict[str, list[CredentialView]] = {}
    for cv in creds:
        if cv.fingerprint and counts[cv.fingerprint] > 1:
            groups.setdefault(cv.fingerprint, []).append(cv)
    out: dict[tuple[str, str], str] = {}
    for group in groups.values():
        secrets = [str(cv.row.get("access_token") or "").strip() for cv in group]
        if not all(secrets):
            continue  # env-backed or hash-only rows: nothing longer to show
        cap = min(16, min(len(s) for s in secrets) // 4)
        n = next((n for n in range(5, cap + 1) if len({s[-n:] for s in secrets}) == len(secrets)),
                 None)
        if n is None:
            continue
        for cv, secret in zip(group, secrets, strict=True):
            fp = fingerprint(secret, tail=n)
            if fp:
                out[cv.key] = fp
    return out
