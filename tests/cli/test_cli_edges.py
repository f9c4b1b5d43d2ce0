"""The CLI's edges a script writer hits (#20): a mistyped --home, every subcommand in
--help, `list` padded to what it prints."""

from __future__ import annotations

import argparse
import json

import pytest

from store.paths import Home
from tests.conftest import make_row, make_store, run_cli, write_store
from tui.cli.entry import build_parser

VERBS = [
    ["list"], ["list", "--json"], ["remove", "openrouter", "x", "--yes"], ["reset", "openrouter", "x"],
    ["cooldown", "openrouter", "x", "--for", "1m"], ["priority", "openrouter", "x", "0"], ["audit"],
    ["restore-backup", "--yes"], ["history"], ["undo", "--yes"], ["strategy", "openrouter"],
    ["fallback", "list"], ["routing", "show"], ["probe", "openrouter"], ["inventory"],
]


@pytest.mark.parametrize("argv", VERBS, ids=[" ".join(v) for v in VERBS])
def test_a_home_that_does_not_exist_exits_3_for_every_verb(tmp_path, argv) -> None:
    home = Home(tmp_path / "typo-home")
    proc = run_cli(home, *argv, ok=False)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "typo-home" in proc.stderr and proc.stdout == ""      # no `{}` that reads as an empty store
    assert not home.root.exists()                  # nothing created


def test_control_add_creates_the_missing_home(tmp_path) -> None:
    home = Home(tmp_path / "new-home")
    run_cli(home, "add", "openrouter", "--api-key", "-", input="sk-or-v1-" + "e" * 48 + "\n")
    assert json.loads(run_cli(home, "list", "--json").stdout)["pools"]["openrouter"]


def _subcommand_parsers(parser: argparse.ArgumentParser, path: str = "hermes-admin"):
    for action in parser._actions:  # argparse keeps its sub-parsers here; no public accessor
        if isinstance(action, argparse._SubParsersAction):
            helped = {a.dest for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield f"{path} {name}", name in helped
                yield from _subcommand_parsers(sub, f"{path} {name}")


def test_every_subcommand_is_listed_in_its_parents_help() -> None:
    missing = [path for path, helped in _subcommand_parsers(build_parser()) if not helped]
    assert missing == []
    # Negative control: a sub-parser added without help= is caught.
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    sub.add_parser("shown", help="x")
    sub.add_parser("hidden")
    assert [path for path, helped in _subcommand_parsers(p, "p") if not helped] == ["p hidden"]


def test_list_pads_labels_to_what_it_prints(tmp_home: Home) -> None:
    keyish = "sk-or-v1-" + "q" * 48                # a key pasted as a label prints as its fingerprint
    write_store(tmp_home, make_store({"openrouter": [
        make_row("a1", label="short", token="sk-or-v1-" + "a" * 48),
        make_row("b2", label=keyish, token="sk-or-v1-" + "b" * 48, priority=1)]}))
    lines = [ln for ln in run_cli(tmp_home, "list").stdout.splitlines() if ln.startswith("  #")]
    assert keyish not in "".join(lines)
    cols = [ln.index("api_key") for ln in lines]
    assert len(set(cols)) == 1, lines             # one column, however the label printed
    assert cols[0] < 30                             # padded to the fingerprint, not to the key
