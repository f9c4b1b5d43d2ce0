"""store/ops/undo_dup.py exactly: which rows hold "the same key", and the refusal's words.

In process (a guard module's mutants die only in-process tests): each branch of the key
comparison (a token, a borrowed row's fingerprint, neither), ``--force``, no twin, and the
whole message the operator reads.
"""

from __future__ import annotations

import pytest

from store.errors import BadInput
from store.ops.undo_dup import _same_key, refuse_duplicate

KEY = "sk-or-v1-undodup-" + "b" * 40
OTHER = "sk-or-v1-undodup-" + "c" * 40


@pytest.mark.parametrize("a, b, same", [
    ({"access_token": KEY}, {"access_token": KEY}, True),
    ({"access_token": KEY}, {"access_token": OTHER}, False),
    ({"access_token": KEY}, {"secret_fingerprint": "fp1"}, False),
    ({"access_token": KEY, "secret_fingerprint": "fp1"}, {"secret_fingerprint": "fp1"}, False),   # the token decides
    ({"access_token": ""}, {"access_token": ""}, False),
    ({"secret_fingerprint": "fp1"}, {"secret_fingerprint": "fp1"}, True),        # borrowed rows: their fingerprints
    ({"secret_fingerprint": "fp1"}, {"secret_fingerprint": "fp2"}, False),
    ({"secret_fingerprint": ""}, {"secret_fingerprint": ""}, False),
    ({"secret_fingerprint": 5}, {"secret_fingerprint": 5}, False),
    ({"access_token": 7, "secret_fingerprint": "fp1"}, {"secret_fingerprint": "fp1"}, True),
    ({}, {}, False),
])
def test_same_key(a: dict, b: dict, same: bool) -> None:
    assert _same_key(a, b) is same


def _doc(*rows: dict) -> dict:
    return {"credential_pool": {"openrouter": list(rows)}}


BACK = {"id": "bbbbbb", "label": "backup", "access_token": KEY}
TWIN = {"id": "cccccc", "label": "again", "access_token": KEY}


def test_the_refusal_names_both_rows_and_the_key_by_fingerprint() -> None:
    with pytest.raises(BadInput) as exc:
        refuse_duplicate(_doc({"id": "aaaaaa", "access_token": OTHER}, "not a row", TWIN), "openrouter", BACK, False)
    assert exc.value.field == "--force"
    assert exc.value.problem == (
        "openrouter: backup (id=bbbbbb) would come back beside again (id=cccccc), which holds the same key "
        "sk-or-…bbbb (added since); two rows with one key are refused, as add refuses them. Remove that one "
        "first, or give --force; nothing was written")


def test_rows_without_labels_are_named_by_id_and_a_borrowed_row_by_its_fingerprint() -> None:
    back = {"id": "bbbbbb", "secret_fingerprint": "sk-or-…fp01"}
    twin = {"id": "cccccc", "secret_fingerprint": "sk-or-…fp01"}
    with pytest.raises(BadInput) as exc:
        refuse_duplicate(_doc(twin), "openrouter", back, False)
    assert exc.value.problem.startswith(
        "openrouter: bbbbbb (id=bbbbbb) would come back beside cccccc (id=cccccc), which holds the same key "
        "sk-or-…fp01 (added since)")


def test_force_and_no_twin_refuse_nothing() -> None:
    assert refuse_duplicate(_doc(TWIN), "openrouter", BACK, True) is None
    assert refuse_duplicate(_doc({"id": "aaaaaa", "access_token": OTHER}), "openrouter", BACK, False) is None
    assert refuse_duplicate(_doc(), "nosuch", BACK, False) is None
