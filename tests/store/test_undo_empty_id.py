"""``undo ""`` and ``undo "   "`` are refused (exit 2, ``ID: is empty``), never the newest action.

A script running ``hermes-admin undo --yes "$ID"`` with ID unset used to undo the newest
action, one it never named (``reset POOL ""`` is refused for the same reason). Negative
control: without the check in store.ops.undo.resolve the tests below fail (the cooldown is
undone, exit 0).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from store.ops import undo
from store.paths import Home
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store


@pytest.mark.parametrize("which", ["", "   ", "\t"])
def test_an_empty_id_is_refused_and_nothing_is_written(tmp_path: Path, which: str) -> None:
    home = Home(tmp_path / "h")
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", label="main", token="sk-or-v1-" + "e" * 48)]}))
    h = ["--home", str(home.root)]
    assert run_main(["cooldown", "openrouter", "main", "--for", "2h", *h], b"")[0] == 0
    auth, ids = home.auth.read_bytes(), undo.list_ids(home)
    code, out, err = run_main(["undo", "--yes", which, *h], b"")
    assert code == 2, (out, err)
    assert "ID: is empty" in err and "undone" not in out
    assert home.auth.read_bytes() == auth and undo.list_ids(home) == ids


def test_resolve_words_exactly(tmp_path) -> None:
    """``resolve``'s refusals as the operator reads them, and ``"1"`` (with spaces) as the newest."""
    from store.errors import BadInput
    from store.ops import undo as undo_mod
    from store.paths import Home
    from tests.conftest import make_row, make_store, write_store

    home = Home(tmp_path / "words")
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", label="main")]}))
    with pytest.raises(BadInput) as exc:
        undo_mod.resolve(home, " ")
    assert str(exc.value) == ("ID: is empty; name an action by its id or N from `hermes-admin history` "
                              "(leave ID out to mean the newest); nothing was undone")
    with pytest.raises(BadInput) as exc:
        undo_mod.resolve(home, None)
    assert str(exc.value) == "ID: no operator action is kept in the history of this home"
    with pytest.raises(BadInput) as exc:
        undo_mod.resolve(home, "nonsense")
    assert str(exc.value) == "ID: is not a history id (see `hermes-admin history`)"
    from tests.cli.inprocess import run_main
    assert run_main(["--home", str(home.root), "cooldown", "openrouter", "main", "--for", "1h"], b"")[0] == 0
    newest = undo_mod.list_ids(home)[-1]
    assert undo_mod.resolve(home, " 1 ") == undo_mod.resolve(home, None) == newest
