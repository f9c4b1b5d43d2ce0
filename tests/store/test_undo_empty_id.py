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
