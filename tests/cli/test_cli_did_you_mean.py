"""A mistyped pool or credential on a writing verb: exit 2, a suggestion, nothing written."""

from __future__ import annotations

import pytest

from tests.conftest import make_row, make_store, write_store


@pytest.mark.parametrize("args, expect", [
    (("reset", "openruter", "aaaaaa"), "no pool 'openruter' in the store (did you mean openrouter?"),
    (("remove", "anthropc", "bbbbbb", "--yes"), "did you mean anthropic?"),
    (("priority", "openrouter", "aaaaab", "1"),
     "no credential with id, label or index 'aaaaab' (did you mean aaaaaa?)"),
    (("reset", "openrouter", "ops-kee"), "(did you mean ops-key?)"),
])
def test_a_near_miss_is_named_and_nothing_is_written(tmp_home, cli, args, expect) -> None:
    write_store(tmp_home, make_store({
        "openrouter": [make_row("aaaaaa", label="ops-key")],
        "anthropic": [make_row("bbbbbb", label="claude")]}))
    before = tmp_home.auth.read_bytes()
    proc = cli(*args, ok=False)
    assert proc.returncode == 2, proc.stderr
    assert expect in proc.stderr
    assert tmp_home.auth.read_bytes() == before


def test_no_suggestion_for_a_name_far_from_every_pool(tmp_home, cli) -> None:
    # Control: the suggestion is made from what is close, not always the first pool.
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa")]}))
    proc = cli("reset", "zzz", "aaaaaa", ok=False)
    assert proc.returncode == 2
    assert "did you mean" not in proc.stderr and "pools: openrouter" in proc.stderr
