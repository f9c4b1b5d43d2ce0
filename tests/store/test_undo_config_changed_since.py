"""Undo of a config.yaml edit that was changed since says so and exits non-zero.

``strategy openrouter round_robin``, then a hand edit of config.yaml to ``least_used``;
``undo --yes`` used to print ``config.yaml: credential_pool_strategies put back`` and
``undone …`` with exit 0 while it changed nothing and wrote no record (its "kept … (changed
since)" note was never printed). Now the preview says the key stays, the note says why,
nothing is written and the exit is 2. The same for ``fallback add`` followed by an entry
added by hand. Negative control: with store/ops/undo.py and tui/cli/history_verbs.py of
before (``git stash``), the first two tests fail (exit 0, "undone").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from store.ops import undo
from store.paths import Home
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store

HAND = {
    "strategy": ["strategy", "openrouter", "round_robin"],
    "fallback": ["fallback", "add", "openrouter", "anthropic/claude-sonnet-4"],
}
HAND_EDIT = {
    "strategy": "credential_pool_strategies:\n  openrouter: least_used\n",
    "fallback": ("fallback_providers:\n  - provider: openrouter\n    model: anthropic/claude-sonnet-4\n"
                 "  - provider: nous\n    model: nous-hermes-3\n"),
}


def _home(root: Path) -> tuple[Home, list[str]]:
    home = Home(root)
    write_store(home, make_store({"openrouter": [make_row("aaaaaa", label="main", token="sk-or-v1-" + "c" * 48)]}))
    return home, ["--home", str(root)]


@pytest.mark.parametrize("verb", sorted(HAND))
def test_undo_of_a_config_edit_changed_by_hand_says_nothing_was_undone(tmp_path: Path, verb: str) -> None:
    home, h = _home(tmp_path / "h")
    assert run_main([*HAND[verb], *h], b"")[0] == 0
    home.config.write_text(HAND_EDIT[verb])           # the operator edits it by hand
    ids = undo.list_ids(home)
    code, out, err = run_main(["undo", "--yes", *h], b"")
    assert code == 2, (out, err)
    assert "put back" not in out.replace("not put back", "") and "\nundone" not in "\n" + out
    assert "nothing undone" in out and "changed since the action" in out and "nothing was undone" in err
    assert home.config.read_text() == HAND_EDIT[verb] and undo.list_ids(home) == ids


@pytest.mark.parametrize("verb", sorted(HAND))
def test_undo_of_a_config_edit_nobody_changed_since_still_goes_back(tmp_path: Path, verb: str) -> None:
    home, h = _home(tmp_path / "h")
    assert run_main([*HAND[verb], *h], b"")[0] == 0
    code, out, err = run_main(["undo", "--yes", *h], b"")
    assert code == 0 and "put back" in out and "\nundone" in "\n" + out, (out, err)
    assert "openrouter" not in (home.config.read_text() if home.config.exists() else "")


SECTION = {"strategy": "credential_pool_strategies", "fallback": "fallback_providers"}


@pytest.mark.parametrize("verb", sorted(HAND))
def test_the_preview_says_exactly_what_goes_back_and_what_stays(tmp_path: Path, verb: str) -> None:
    """The confirmation's words (``Plan.describe``), in process: read from the files as they are
    now, the kept copy of config.yaml before the action and the file after it."""
    home, h = _home(tmp_path / "h")
    assert run_main([*HAND[verb], *h], b"")[0] == 0
    action = undo.list_ids(home)[-1]
    assert undo.plan(home, action).describe() == [f"config.yaml: {SECTION[verb]} put back"]
    home.config.write_text(HAND_EDIT[verb])
    assert undo.plan(home, action).describe() == [
        f"config.yaml: {SECTION[verb]} changed since the action: kept as it is, not put back"]
    home.config.unlink()        # the file gone: the key reads as absent now, changed since the action
    assert undo.plan(home, action).describe() == [
        f"config.yaml: {SECTION[verb]} changed since the action: kept as it is, not put back"]
