"""``:export csv FILE`` and ``:export json FILE``: the dashboard's current view, written to a file.

The current view is what the table shows: the credential rows the filter keeps, in the table's
order (the rows of folded pools too), and the columns on screen, each cell's whole text (never
cut to the column's width). Keys appear only as the table shows them, as fingerprints, and every
text passes the console's one funnel (:func:`tui.text.shown.shown`: redacted, then escaped), so
no secret and no control character reaches the file. A null (``—`` on screen) is an empty CSV
cell and a JSON ``null``; a CSV cell that a spreadsheet would run as a formula (``=``, ``+``,
``-``, ``@``) starts with ``'``.

The file is written 0600 by ``atomic_write_bytes(follow_link=False)``: a symlink at its name is
refused, never written through; a folder that does not exist or cannot be written is a clear error
naming the file, and nothing is written.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from store.authfile import atomic_write_bytes
from store.errors import BadInput, StoreUnreadable, WriteFailed
from tui.text.format import NULL
from tui.text.shown import shown
from tui.widgets import CredentialTable

FORMATS = ("csv", "json")
FORMULA = ("=", "+", "-", "@")


def view_rows(table: CredentialTable) -> tuple[list[str], list[dict[str, Any]]]:
    """The column titles (pool first) and one mapping per credential row of the current view."""
    columns = [c for c in table.columns if c.value != "pos"]
    titles = ["pool", *(c.label for c in columns)]
    out: list[dict[str, Any]] = []
    for key in table.rows.every_key():
        entry = table.entry(key)
        if entry is None or entry.cred is None:
            continue
        table.row_texts(key)                        # formats the row if it never was on screen
        cells = table.rows.cells.row(key)
        row: dict[str, Any] = {"pool": shown(entry.cred.pool)}
        for c in columns:
            text = shown(cells.get(c.value, (NULL, ""))[0])
            row[c.label] = None if text == NULL else text
        out.append(row)
    return titles, out


def _csv_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA) else text


def render(fmt: str, titles: list[str], rows: list[dict[str, Any]]) -> bytes:
    """*rows* as CSV (a header line, then one line per row) or as a JSON list of objects."""
    if fmt == "json":
        return (json.dumps(rows, ensure_ascii=False, indent=1) + "\n").encode()
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(titles)
    writer.writerows([[_csv_cell(r.get(t)) for t in titles] for r in rows])
    return buf.getvalue().encode()


def export_view(table: CredentialTable, fmt: str, file: str, cwd: Path | None = None) -> tuple[Path, int]:
    """Write the current view of *table* as *fmt* to *file*; (the path written, rows).
    BadInput for a format we do not write; StoreUnreadable (WriteFailed) naming the file when it
    cannot be written (a symlink at its name, no such folder, no permission)."""
    if fmt not in FORMATS:
        raise BadInput("FORMAT", f"{fmt!r}: export writes csv or json")
    path = Path(file).expanduser()
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    if path.name in ("", ".", "..") or path.is_dir():
        raise BadInput("FILE", f"{file}: a file name, not a folder")
    titles, rows = view_rows(table)
    data = render(fmt, titles, rows)
    try:
        atomic_write_bytes(path, data, mode=0o600, follow_link=False)
    except StoreUnreadable:
        raise
    except OSError as exc:
        raise WriteFailed(path, f"cannot write it ({exc.strerror or exc})") from None
    return path, len(rows)
