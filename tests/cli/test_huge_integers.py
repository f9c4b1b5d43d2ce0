"""A number of more than 4,300 digits in auth.json, config.yaml or auth.json.bak is an
unreadable file (exit 3 naming it), not an internal error.

Found by a hostile session: Python refuses to convert such an integer (``ValueError: Exceeds
the limit (4300 digits)``); the parsers let it through as a ValueError that is not a syntax
error, and every verb died with ``internal error`` (exit 1) without naming the file.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.errors import EXIT_UNREADABLE
from store.paths import Home
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store

DIGITS = st.integers(4301, 12_000)


def _store_with(n: int) -> str:
    text = json.dumps(make_store({"openrouter": [make_row("aaaaaa", request_count=1234567)]}), indent=2)
    return text.replace("1234567", "9" * n)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=DIGITS, verb=st.sampled_from([["list"], ["list", "--json"], ["reset", "openrouter", "aaaaaa"],
                                      ["cooldown", "openrouter", "aaaaaa", "--for", "1h"]]))
def test_in_auth_json(tmp_path_factory, n: int, verb: list[str]) -> None:
    home = Home(tmp_path_factory.mktemp("h"))
    write_store(home, make_store({}))
    home.auth.write_text(_store_with(n))
    before = home.auth.read_bytes()
    code, out, err = run_main(["--home", str(home.root), *verb], b"")
    assert code == EXIT_UNREADABLE, (code, err)
    assert str(home.auth) in err and "more than 4,300 digits" in err and "internal error" not in err
    assert home.auth.read_bytes() == before


def test_inventory_reports_it_for_the_profile(tmp_path) -> None:
    """``inventory`` reports each profile's unreadable store in its listing, as for bad JSON."""
    home = Home(tmp_path / "h")
    write_store(home, make_store({}))
    home.auth.write_text(_store_with(4301))
    code, out, err = run_main(["--home", str(home.root), "inventory"], b"")
    assert f"ERROR {home.auth}: holds a number of more than 4,300 digits" in out and "internal error" not in err


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=DIGITS, verb=st.sampled_from([["fallback", "list"], ["strategy", "openrouter", "round_robin"],
                                      ["routing", "show"]]))
def test_in_config_yaml(tmp_path_factory, n: int, verb: list[str]) -> None:
    home = Home(tmp_path_factory.mktemp("h"))
    write_store(home, make_store({"openrouter": [make_row("aaaaaa")]}))
    home.config.write_text(f"model:\n  default: x/y\nsomething: {'7' * n}\n")
    before = home.config.read_bytes()
    code, out, err = run_main(["--home", str(home.root), *verb], b"")
    assert code == EXIT_UNREADABLE, (code, err)
    assert str(home.config) in err and "more than 4,300 digits" in err and "internal error" not in err
    assert home.config.read_bytes() == before


def test_in_the_backup(tmp_path) -> None:
    home = Home(tmp_path / "h")
    write_store(home, make_store({"openrouter": [make_row("aaaaaa")]}))
    home.backup.write_text(_store_with(5000))
    before = home.auth.read_bytes()
    code, out, err = run_main(["--home", str(home.root), "restore-backup", "--yes"], b"")
    assert code == EXIT_UNREADABLE, (code, err)
    assert str(home.backup) in err and "more than 4,300 digits" in err
    assert home.auth.read_bytes() == before
