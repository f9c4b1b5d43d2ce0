"""The header lines of the credential table: a pool's (name, strategy, health counts) laid
over the cells of its row, and a profile's banner, at any width without losing the counts.

A pool header is words poured into the row's cells, left to right; a word too long for a
cell spans the cells after it. A long pool name (``custom:together.ai-…``) may span
several; when the words do not all fit, the strategy goes first, then the name is
shortened, and the counts are the last thing cut (only when the whole line is narrower than
they are). Pure functions: the painter draws
what they return.
"""

from __future__ import annotations

import re
from typing import Sequence

from tui.text.format import ellipsize
from tui.widgets.table_columns import PAD

Run = tuple[str, int]   # a text and how many cells it spans
HEALTH = re.compile(r"^\d+ ok · ")   # a profile banner's counts: "2 ok · 7 cooling · …"
GAP = "  "                           # between a banner's parts


def fill(tokens: Sequence[str], widths: Sequence[int]) -> list[Run] | None:
    """Words laid across cells left to right, none split or cut: a word that does not fit
    after others starts the next cell, and one too long for an empty cell spans the cells
    after it too. None when some word does not fit by the last cell."""
    runs: list[Run] = []
    text, start, span = "", 0, 1
    n = len(widths)
    if n == 0:
        return [] if not tokens else None
    for tok in tokens:
        while True:
            joined = f"{text} {tok}" if text else tok
            if len(joined) <= span_width(widths[start:], span):
                text = joined
                break
            if start + span >= n:
                return None
            if text:
                runs.append((text, span))
                text, start, span = "", start + span, 1
            else:
                span += 1
    runs.append((text, span))
    return runs + [("", 1)] * (n - start - span)


def span_width(widths: Sequence[int], n: int) -> int:
    """Text width of the first *n* cells taken as one (their padding between included)."""
    return sum(widths[:n]) + 2 * PAD * (n - 1)


def pool_header(name: str, rest: Sequence[str], widths: Sequence[int],
                extra: Sequence[str] = ()) -> list[Run]:
    """A pool header's runs over cells of *widths* (the cells after the ``#`` cell): *name*
    first, then *rest* (the strategy, then the counts), each count whole, then one of *extra*
    (its forms, longest first: ``usable again at 14:05``, ``usable 14:05``) when one fits in
    what the line leaves: it never shortens the name nor cuts a count (the strategy goes first).

    The name takes as few cells as hold it; when the rest then does not fit, the strategy
    (rest[0]) is left out; when the counts still do not fit, the name is cut to leave them
    room; and the counts are cut only when the line is too narrow for them alone.
    """
    n = len(widths)
    if n == 0:
        return []
    base = _laid(name, [list(rest), list(rest[1:])], widths)
    if base is None:
        counts = " ".join(rest[1:])
        if n == 1:
            return [(ellipsize(f"{name} {counts}", widths[0]), 1)]
        return [(ellipsize(name, widths[0]), 1), (ellipsize(counts, span_width(widths[1:], n - 1)), n - 1)]
    tries = [[*rest, form] for form in extra] + [[*rest[1:], form] for form in extra]
    more = _laid(name, tries, widths, keep=base[0][1]) if tries else None
    return more or base


def _laid(name: str, tries: Sequence[Sequence[str]], widths: Sequence[int], keep: int = 1) -> list[Run] | None:
    """The first of *tries* (token lists) that fits after the name, the name spanning as few
    cells as hold it, or fewer down to *keep* only when none of *tries* fits after it whole
    (a later try, without the strategy, before a shortened name); None when none fits."""
    n = len(widths)
    whole = next((j for j in range(1, n + 1) if len(name) <= span_width(widths, j)), n)
    for j in range(whole, keep - 1, -1):     # the name whole before the strategy: the name says which pool
        for tokens in tries:
            runs = fill(tokens, widths[j:])
            if runs is not None:
                shown = name if len(name) <= span_width(widths, j) else ellipsize(name, span_width(widths, j))
                return [(shown, j), *runs]
    return None


def runs_to_cells(runs: Sequence[Run]) -> list[str]:
    """One text per cell: a run's text in its first cell, "" in the cells it spans."""
    out: list[str] = []
    for text, span in runs:
        out += [text] + [""] * (span - 1)
    return out


def runs_line(runs: Sequence[Run], widths: Sequence[int]) -> str:
    """The runs as painted over their cells, padding included."""
    pad = " " * PAD
    out, at = [], 0
    for text, span in runs:
        w = span_width(widths[at:], span)
        out.append(pad + text.ljust(w)[:w] + pad)
        at += span
    return "".join(out)


def banner_text(tokens: Sequence[str], width: int) -> str:
    """A profile's banner in *width* cells: its name and its counts whole, the parts between
    (primary, fallback chain) shortened first, the last of them first."""
    parts = list(tokens)
    over = len(GAP.join(parts)) - width
    keep = {0} | {i for i, t in enumerate(parts) if HEALTH.match(t)}
    for i in reversed(range(len(parts))):
        if over <= 0:
            break
        if i in keep:
            continue
        cut = len(parts[i]) - over
        if cut < 2:   # nothing readable left of it: the part goes, its gap too
            over -= len(parts[i]) + len(GAP)
            parts[i] = ""
        else:
            parts[i] = ellipsize(parts[i], cut)
            over = 0
    return ellipsize(GAP.join(p for p in parts if p), width)
