"""Undo never brings back a second row holding a key the pool already has.

``remove`` then ``add`` of the same key (a new id, often the same label) leaves a pool
where undoing the remove would put the old row back beside the new one: two rows with one
key, which ``add`` refuses (the key is counted twice, benched twice, and a label may then
match two rows). :func:`refuse_duplicate` refuses it, naming the row that holds the key by
its fingerprint, unless the operator gives ``--force``; it runs inside the undo's locked
transaction, on the fresh file, so nothing is written when it refuses.
"""

from __future__ import annotations

from store.errors import BadInput
from store.model import Doc, Row, pool_rows
from store.redaction.fingerprints import fingerprint


def _same_key(a: Row, b: Row) -> bool:
    token = a.get("access_token")
    if isinstance(token, str) and token:
        return b.get("access_token") == token
    fp = a.get("secret_fingerprint")          # a borrowed row holds no key, only its fingerprint
    return isinstance(fp, str) and bool(fp) and b.get("secret_fingerprint") == fp


def refuse_duplicate(doc: Doc, pool: str, row: Row, force: bool) -> None:
    """BadInput (exit 2, nothing written) when a row of *pool* in *doc* holds *row*'s key."""
    if force:
        return
    twin = next((r for r in pool_rows(doc, pool) if isinstance(r, dict) and _same_key(row, r)), None)
    if twin is None:
        return
    shown = fingerprint(row.get("access_token")) or str(row.get("secret_fingerprint"))
    raise BadInput("--force", f"{pool}: {row.get('label') or row.get('id')!s} (id={row.get('id')}) would come back "
                   f"beside {twin.get('label') or twin.get('id')!s} (id={twin.get('id')}), which holds the same key "
                   f"{shown} (added since); two rows with one key are refused, as add refuses them. Remove that "
                   "one first, or give --force; nothing was written")
