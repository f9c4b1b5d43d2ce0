"""Undo of a ``remove`` never brings back a second row with a key the pool holds again.

``remove openrouter backup`` then ``add`` of the same key (new id, same label): undoing the
remove used to put the old row back beside the new one, two rows with one key and one
label, which ``add`` refuses. Now it is refused (exit 2, naming the row that holds the key
by fingerprint, nothing written) unless ``--force``. Negative control: without the
``undo_dup.refuse_duplicate`` call in store/ops/undo.py the refusal test fails (exit 0, three
rows).
"""

from __future__ import annotations

from pathlib import Path

from store.ops import undo
from store.paths import Home
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, read_doc, write_store

MAIN, BACKUP = "sk-or-v1-undodup-" + "a" * 40, "sk-or-v1-undodup-" + "b" * 40


def _readded(root: Path) -> tuple[Home, list[str], str]:
    home = Home(root)
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", label="main", token=MAIN, priority=0),
                                                 make_row("bbbbbb", label="backup", token=BACKUP, priority=1)]}))
    h = ["--home", str(root)]
    assert run_main(["remove", "openrouter", "backup", "--yes", *h], b"")[0] == 0
    removal = undo.list_ids(home)[-1]
    assert run_main(["add", "openrouter", "--api-key", "-", "--label", "backup", *h], BACKUP.encode() + b"\n")[0] == 0
    return home, h, removal


def _tokens(home: Home) -> list[str]:
    return [r["access_token"] for r in read_doc(home)["credential_pool"]["openrouter"]]


def test_undo_of_a_remove_whose_key_was_added_again_is_refused(tmp_path: Path) -> None:
    home, h, removal = _readded(tmp_path / "h")
    auth, ids = home.auth.read_bytes(), undo.list_ids(home)
    code, out, err = run_main(["undo", "--yes", removal, *h], b"")
    assert code == 2, (out, err)
    assert "same key sk-or-…bbbb" in err and "--force" in err and "\nundone" not in "\n" + out
    assert BACKUP not in out + err
    assert home.auth.read_bytes() == auth and undo.list_ids(home) == ids


def test_force_brings_the_row_back_beside_its_twin(tmp_path: Path) -> None:
    home, h, removal = _readded(tmp_path / "h")
    code, out, err = run_main(["undo", "--yes", "--force", removal, *h], b"")
    assert code == 0 and "undone" in out, (out, err)
    assert sorted(_tokens(home)) == sorted([MAIN, BACKUP, BACKUP])


def test_undo_of_a_remove_with_no_twin_brings_it_back(tmp_path: Path) -> None:
    home = Home(tmp_path / "h")
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", label="main", token=MAIN, priority=0),
                                                 make_row("bbbbbb", label="backup", token=BACKUP, priority=1)]}))
    h = ["--home", str(home.root)]
    assert run_main(["remove", "openrouter", "backup", "--yes", *h], b"")[0] == 0
    code, out, err = run_main(["undo", "--yes", *h], b"")
    assert code == 0 and _tokens(home) == [MAIN, BACKUP], (out, err)
