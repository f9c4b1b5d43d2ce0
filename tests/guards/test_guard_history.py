"""The history's two guards: a record names only its own kept copy, and pruning by age keeps
what is younger than the bound at the defaults. Each test also runs on the module with the
mistake made (tests/mutant.py) and must fail there."""

from __future__ import annotations

import json
import os
import types

import pytest

from store.errors import StoreUnreadable
from store.ops import history
from store.paths import Home
from tests.conftest import make_row, make_store, run_cli, write_store
from tests.mutant import mutant

KEY = "sk-or-v1-guardhist-" + "g" * 40
DAY = 86400.0


def two_actions(home: Home) -> tuple[str, str]:
    write_store(home, make_store({"openrouter": [make_row("r0", label="k0", token=KEY)]}))
    run_cli(home, "cooldown", "openrouter", "k0", "--for", "1h")
    run_cli(home, "reset", "openrouter", "k0")
    ids = sorted(n[:-5] for n in os.listdir(history.folder(home)) if n.endswith(".json"))
    assert len(ids) == 2
    return ids[0], ids[1]


def _refused(read) -> bool:
    """A forged copy name is refused: nothing read (None) or a StoreUnreadable naming it."""
    try:
        return read() is None
    except StoreUnreadable:
        return True


def check_record_may_name_only_its_own_copy(mod: types.ModuleType, home: Home, older: str, newer: str) -> None:
    meta = mod.load(home, newer)
    assert mod.kept_bytes(home, meta, "auth.json") is not None        # its own copy is read
    forged = dict(meta, kept={"auth.json": f"auth.json.{older}"})    # another action's copy
    assert _refused(lambda: mod.kept_bytes(home, forged, "auth.json"))
    outside = dict(meta, kept={"auth.json": "../auth.json"})
    assert _refused(lambda: mod.kept_bytes(home, outside, "auth.json"))


def test_a_record_names_only_its_own_kept_copy(tmp_home: Home) -> None:
    older, newer = two_actions(tmp_home)
    check_record_may_name_only_its_own_copy(history, tmp_home, older, newer)


def test_control_without_the_name_check_a_record_reads_any_copy(tmp_home: Home) -> None:
    older, newer = two_actions(tmp_home)
    wrong = mutant("store.ops.history", """or name != f"{file_name}.{meta['id']}\"""", "")
    with pytest.raises(AssertionError):
        check_record_may_name_only_its_own_copy(wrong, tmp_home, older, newer)


def check_keep_young_drop_old(mod: types.ModuleType, home: Home) -> None:
    """At the defaults (14 days), an action 13.9 days old stays and one 14.1 days old goes."""
    now = 2_000_000_000.0
    folder = history.folder(home)
    folder.mkdir(mode=0o700, exist_ok=True)
    young, old = history.new_id(now - 13.9 * DAY), history.new_id(now - 14.1 * DAY)
    for action in (young, old):
        (folder / f"{action}.json").write_text(json.dumps({"id": action, "kept": {}}))
        (folder / f"auth.json.{action}").write_text("{}")
    assert mod.prune(home, now) == 1
    left = sorted(os.listdir(folder))
    assert left == sorted([f"{young}.json", f"auth.json.{young}"]), left


def test_pruning_by_age_keeps_13_9_days_and_drops_14_1_at_the_defaults(tmp_home: Home) -> None:
    check_keep_young_drop_old(history, tmp_home)


@pytest.mark.parametrize("old,new", [
    ("now - days * 86400", "now - days * 8640"),       # a day of the wrong length
    ("{i for i in ids if i < cutoff}", "{i for i in ids if i > cutoff}"),   # the comparison turned
    ("KEEP_DAYS = 14.0", "KEEP_DAYS = 1.4"),            # the default bound
])
def test_control_each_pruning_mistake_is_seen(tmp_home: Home, old: str, new: str) -> None:
    with pytest.raises(AssertionError):
        check_keep_young_drop_old(mutant("store.ops.history", old, new), tmp_home)


SAME = "from __future__ import annotations"


def test_an_unchanged_copy_passes_both_checks(tmp_home: Home) -> None:
    """The controls above are worth something only if a copy WITHOUT the mistake passes."""
    copy = mutant("store.ops.history", SAME, SAME)
    older, newer = two_actions(tmp_home)
    check_record_may_name_only_its_own_copy(copy, tmp_home, older, newer)
    for name in os.listdir(history.folder(tmp_home)):
        os.unlink(history.folder(tmp_home) / name)
    check_keep_young_drop_old(copy, tmp_home)


def test_a_mistake_missing_from_the_source_is_an_error_not_a_passing_control() -> None:
    with pytest.raises(LookupError):
        mutant("store.ops.history", "this text is in no module", "")
