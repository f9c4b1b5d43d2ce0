"""What each cell of the credential table says: columns, widths and cell text.

Pure functions of a view and the clock, so the table widget only diffs and
applies, and tests can check the words without a terminal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from rich.text import Text

from store.model import as_int
from store.pools.view import CredentialView, PoolView
from tui.text.format import NULL, STATUS_STYLE, clock_time, ellipsize, local_time, status_word, time_left
from tui.text.shown import shown


@dataclass(frozen=True)
class ColumnSpec:
    key: str
    label: str
    width: int


# Widths are fixed: a column that re-measures itself on every countdown tick costs a
# scan of the whole column, and a jumping layout is hard to read.
# Narrow: 6 columns, 66 cells of text + 12 of padding + 1 scrollbar = 79 < 80.
NARROW: tuple[ColumnSpec, ...] = (
    ColumnSpec("pos", "#", 5),
    ColumnSpec("label", "label", 13),
    ColumnSpec("status", "status", 11),
    ColumnSpec("left", "left", 8),
    ColumnSpec("error", "code/reason", 17),
    ColumnSpec("fingerprint", "key", 12),
)
# Wide (``w``): every column, in the one order of tui.widgets.table_columns.ORDER; 179
# cells with padding, so at 200 columns the reason column still grows to hold every reason
# Hermes writes (table_columns.REASON_WANT) and the message takes the rest.
WIDE: tuple[ColumnSpec, ...] = (
    ColumnSpec("pos", "#", 5),
    ColumnSpec("label", "label", 16),
    ColumnSpec("auth", "auth", 7),
    ColumnSpec("source", "source", 12),
    ColumnSpec("status", "status", 11),
    ColumnSpec("left", "left", 8),
    ColumnSpec("resets", "resets at", 16),
    ColumnSpec("code", "code", 4),
    ColumnSpec("reason", "reason", 20),
    ColumnSpec("requests", "reqs", 6),
    ColumnSpec("priority", "prio", 4),
    ColumnSpec("id", "id", 8),
    ColumnSpec("message", "message", 20),
    ColumnSpec("fingerprint", "key", 14),
)

# The headroom column (#21): the tightest window a provider reported, as a small bar, a
# number and a word (tui.text.headroom); in the auto and wide layouts once a key has a reading.
HEADROOM = ColumnSpec("headroom", "headroom", 14)
# The spend column (#29): today's cost of each key (tui.widgets.table_spend); in the auto and
# wide layouts once a key has a figure.
SPEND = ColumnSpec("spend", "spend", 9)

# The # column alone, uncut: what a mark change re-renders.
POS = (ColumnSpec("pos", "#", 10**6),)
# The columns a finding's note leads (narrow "code/reason", wide "reason"), uncut.
NOTED = (ColumnSpec("error", "code/reason", 10**6), ColumnSpec("reason", "reason", 10**6))

NEXT_MARK = "←"
HEADER_MARK = "▾"
HEADER_STYLE = "bold"


def T(text: str, style: str = "") -> Text:
    """A cell. Always Text, never str: DataTable parses str cells as Rich markup, and a
    label like ``team[ops]`` or ``[/]`` from auth.json must show as written."""
    return Text(text, style=style, end="", no_wrap=True)


def _s(value: Any) -> str:
    # Store text passes the console's funnel before any column cuts it.
    return NULL if value is None or value == "" else shown(value)


def _code(row: dict[str, Any]) -> int | None:
    code = row.get("last_error_code")
    if code is None or isinstance(code, bool):
        return None
    n = as_int(code, -1)
    return n if n >= 0 else None


def _reason(row: dict[str, Any]) -> str | None:
    return row.get("last_error_reason") or row.get("failure_reason") or None


def error_text(row: dict[str, Any]) -> str:
    """``429 rate_limit_exceeded``, ``402``, ``—``: the narrow layout's error cell."""
    code, reason = _code(row), _reason(row)
    if code is None and not reason:
        return NULL
    return shown(" ".join(str(p) for p in (code, reason) if p not in (None, "")))


def key_text(cv: CredentialView) -> str:
    if cv.backed is False:
        # An env:VAR row whose variable is set nowhere the agent reads: it cannot work.
        return "env unset"
    return _s(cv.fingerprint)


def signature(cv: CredentialView) -> tuple[Any, ...]:
    """Everything a credential's cells depend on except the clock.

    Equal signatures mean equal cells (the countdown aside), so a reload of a
    10,000-row store only formats the rows that changed.
    """
    r = cv.row
    eff = cv.effective
    return (
        cv.index, cv.next, cv.fingerprint, cv.backed, eff.status, eff.available_at,
        r.get("label"), r.get("auth_type"), r.get("source"), r.get("last_error_code"),
        r.get("last_error_reason"), r.get("failure_reason"), r.get("last_error_message"),
        r.get("request_count"), r.get("priority"), r.get("id"),
    )


def countdown_text(cv: CredentialView, now: float) -> str:
    eff = cv.effective
    left = eff.available_at - now if eff.available_at is not None and math.isfinite(
        eff.available_at) else eff.seconds_left
    return time_left(eff.status, left)


TAG_MARK = "✓"
PENDING_MARK = "⟳"


def credential_cells(
    cv: CredentialView, now: float, columns: Sequence[ColumnSpec], mark: str = "",
) -> list[Text]:
    """The cells of one credential row, each cut to its column's width.

    *mark* leads the ``#`` cell: ``✓`` for a row tagged for a bulk action, ``⟳`` while
    a write to it is in flight. A symbol, not a colour, so it reads in any terminal.
    """
    return [T(ellipsize(text, col.width), style)
            for col, (text, style) in zip(columns, cell_texts(cv, now, columns, mark), strict=True)]


def cell_texts(
    cv: CredentialView, now: float, columns: Sequence[ColumnSpec], mark: str = "",
) -> list[tuple[str, str]]:
    """(text, style) per column, uncut: what credential_cells shows, without building Text
    (the table cuts at paint time, and 10,000 rows x 15 Text objects is most of a first fill)."""
    r = cv.row
    eff = cv.effective
    out: list[tuple[str, str]] = []
    for col in columns:
        k = col.key
        style = ""
        if k == "pos":
            text = mark + (f"{cv.index}{NEXT_MARK}" if cv.next else str(cv.index))
        elif k == "label":
            text = _s(r.get("label"))
        elif k == "status":
            text, style = status_word(eff.status), STATUS_STYLE.get(eff.status, "")
        elif k == "left":
            text = countdown_text(cv, now)
        elif k == "error":
            text = error_text(r)
        elif k == "fingerprint":
            text = key_text(cv)
        elif k == "auth":
            text = _s(r.get("auth_type"))
        elif k == "source":
            text = _s(r.get("source"))
        elif k == "resets":
            at = eff.available_at
            text = local_time(at, now) if at is not None and math.isfinite(at) else NULL
        elif k == "code":
            text = _s(_code(r))
        elif k == "reason":
            text = _s(_reason(r))
        elif k == "message":
            text = _s(r.get("last_error_message"))
        elif k == "requests":
            text = str(as_int(r.get("request_count")))
        elif k == "priority":
            text = _s(r.get("priority"))
        elif k == "id":
            text = _s(r.get("id"))
        else:
            text = NULL
        out.append((text, style))
    return out


def header_tokens(pv: PoolView, counts: dict[str, int] | None = None) -> list[str]:
    """``openrouter round_robin 2 ok 1 cooling 0 dead`` as words to lay out.

    No separators: the cells already separate the words, and at 80 columns every
    character is needed for the counts.
    """
    c = counts if counts is not None else pv.counts
    strategy = pv.strategy if pv.strategy_known else f"{pv.strategy}(unknown→fill_first)"
    tokens = [shown(pv.key), shown(strategy), f"{c['ok']} ok", f"{c['cooling']} cooling"]
    if c.get("ready"):
        tokens.append(f"{c['ready']} ready")
    tokens.append(f"{c['dead']} dead")
    return tokens


def usable_again(pv: PoolView) -> list[str]:
    """``usable again at 14:05`` (and its shorter form, ``usable 14:05``) when no row of the pool
    is usable now and one cools down (the local time the first one is usable again); nothing
    otherwise."""
    at = pv.next_available_at
    if at is None:
        return []
    hhmm = clock_time(at)
    hhmm = hhmm[:5] if hhmm[:2].isdigit() else hhmm
    return [f"usable again at {hhmm}", f"usable {hhmm}"]


def flow(tokens: Sequence[str], widths: Sequence[int]) -> list[str]:
    """Lay words out across fixed-width cells, left to right, without splitting a word.

    A table has no column spans, so a pool's header line is poured into the cells of
    its row. A word too long for an empty cell goes to the next cell wide enough
    (leaving a gap), and is only cut with ``…`` when no later cell can hold it.
    """
    cells = [""] * len(widths)
    col = 0
    for tok in tokens:
        while col < len(widths):
            cur = cells[col]
            joined = f"{cur} {tok}" if cur else tok
            if len(joined) <= widths[col]:
                cells[col] = joined
                break
            if cur:
                col += 1
                continue
            fits = next((j for j in range(col + 1, len(widths)) if widths[j] >= len(tok)), None)
            if fits is None:
                cells[col] = ellipsize(tok, widths[col])
                col += 1
                break
            col = fits
        else:
            break
    return cells


def header_cells(pv: PoolView, columns: Sequence[ColumnSpec]) -> list[str | Text]:
    """A pool's header row: a marker in the first cell, then the header words."""
    words = flow(header_tokens(pv), [c.width for c in columns[1:]])
    return [T(HEADER_MARK, HEADER_STYLE)] + [T(w, HEADER_STYLE) for w in words]


def noted(cells: dict[str, tuple[str, str]], note: str) -> dict[str, tuple[str, str]]:
    """The reason cells with *note* (a symbol and a word, never colour alone) in front."""
    out = {}
    for spec in NOTED:
        text, style = cells.get(spec.key, (NULL, ""))
        out[spec.key] = (note if text in ("", NULL) else f"{note} {text}", style)
    return out
