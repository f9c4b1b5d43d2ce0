"""Column widths that follow the terminal, and fingerprints that stay tellable apart.

:class:`ColumnLayout` is the credential table's layout: which columns it shows and how
wide each is, changed only when the terminal or the longest text did. The arithmetic
under it is pure functions, so tests can check it alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from store.pools.view import CredentialView
from store.redaction.fingerprints import fingerprint
from tui.text.format import ellipsize
from tui.widgets.cells import NARROW, WIDE, ColumnSpec

PAD = 1  # blank cells on each side of a column
# Which columns take spare width, in order, and how wide each may grow. Label and the
# error text first (what an operator reads), then the key's prefix, then the rest.
GROW: tuple[tuple[str, int], ...] = (
    ("label", 40), ("message", 80), ("error", 60), ("fingerprint", 24),
    ("reason", 32), ("source", 30),
)
# Below the spec widths (a terminal under 80 columns), these give way first, in order.
SHRINK: tuple[tuple[str, int], ...] = (
    ("message", 10), ("error", 9), ("source", 8), ("reason", 8), ("label", 8),
)
ELLIPSIS = "…"


def widths(specs: Sequence[ColumnSpec], total: int, natural: dict[str, int],
           minimum: dict[str, int] | None = None) -> tuple[int, ...]:
    """Each column's text width for a table *total* cells wide.

    Every column gets its spec width (or *minimum*, when larger); spare cells go to
    the GROW columns in order, each up to the longest text it holds (*natural*) and
    its cap, so a wide terminal shows whole labels and messages, not blank space.
    """
    minimum = minimum or {}
    out = {s.key: max(s.width, minimum.get(s.key, 0)) for s in specs}
    spare = total - sum(w + 2 * PAD for w in out.values())
    give = sum(max(0, out[k] - floor) for k, floor in SHRINK if k in out)
    for key, floor in SHRINK:
        # Too narrow for the spec widths: give up message text before the key's tail.
        # Only when that makes the table fit; otherwise it scrolls sideways at full widths.
        if spare >= 0 or give < -spare:
            break
        if key in out and out[key] > floor:
            take = min(out[key] - floor, -spare)
            out[key] -= take
            spare += take
    for key, cap in GROW:
        if spare <= 0:
            break
        if key not in out:
            continue
        want = min(cap, natural.get(key, 0)) - out[key]
        if want > 0:
            take = min(want, spare)
            out[key] += take
            spare -= take
    return tuple(out[s.key] for s in specs)


@dataclass(frozen=True)
class Column:
    """A column as shown: its key (named like DataTable's ``ColumnKey.value``), title, width."""

    value: str
    label: str
    width: int


class ColumnLayout:
    """The table's columns (narrow or wide) and their widths: fixed per spec, grown to the
    longest text, and stable: only a real change of width bumps :attr:`version`, which
    every cached line is keyed by."""

    def __init__(self, wide: bool = False) -> None:
        self.wide = wide
        self.specs: tuple[ColumnSpec, ...] = WIDE if wide else NARROW
        self.widths: tuple[int, ...] = ()
        self.full = 0      # painted width of a line: the terminal's, or the columns' if wider
        self.version = 0

    @property
    def fitted(self) -> bool:
        return bool(self.widths)

    @property
    def columns(self) -> list[Column]:
        return [Column(s.key, s.label, w) for s, w in zip(self.specs, self.widths, strict=True)]

    @property
    def used(self) -> int:
        """Cells the columns take, padding included."""
        return sum(w + 2 * PAD for w in self.widths)

    def set_wide(self, wide: bool) -> bool:
        """Switch between the narrow and the wide columns; True if that changed anything."""
        if wide == self.wide:
            return False
        self.wide = wide
        self.specs = WIDE if wide else NARROW
        self.widths, self.full = (), 0   # to fit again: the old widths are another layout's
        self.version += 1
        return True

    def fit(self, total: int, natural: dict[str, int], fingerprint_need: int) -> bool:
        """Widths for a table *total* cells wide whose longest texts are *natural*; True
        (and a new version) only when a width or the line's width changed."""
        layout = widths(self.specs, total, natural, {"fingerprint": fingerprint_need})
        full = max(total, sum(w + 2 * PAD for w in layout))
        if layout == self.widths and full == self.full:
            return False
        self.widths, self.full = layout, full
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
