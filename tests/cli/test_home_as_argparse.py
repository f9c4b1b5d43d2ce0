"""The redaction boundary learns the home's secrets from the home argparse will use.

Found by a hostile session: the boundary reads ``--home`` off the command line before argparse
parses it. It took the first ``--home`` where argparse takes the last, and it did not know
argparse's abbreviations (``--hom``). A key with no provider prefix (a custom provider's,
config.yaml's ``api_key``) then printed in full, from an agent's error text kept in the row:
``hermes-admin --hom H list`` and ``hermes-admin --home A --home H list``. Now the boundary
takes the last, and the CLI takes no abbreviated option.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.paths import Home
from tests.cli.inprocess import run_main
from tests.conftest import make_row, make_store, write_store
from tui.cli import boundary

BARE = "Zq7CANARYbare0123456789XyZwvut"       # no provider prefix: only the home's redactor knows it


def _secret_home(root: Path) -> Home:
    home = Home(root)
    root.mkdir(mode=0o700, exist_ok=True)
    row = make_row("aaaaaa", token=BARE, label="main", last_status="exhausted", last_status_at=time.time(),
                   last_error_code=401, last_error_reason=f"rejected {BARE}", last_error_reset_at=time.time() + 3600)
    write_store(home, make_store({"custom:acme": [row]}))
    return home


def _decoy(root: Path) -> Home:
    home = Home(root)
    root.mkdir(mode=0o700, exist_ok=True)
    write_store(home, make_store({"openrouter": [make_row("bbbbbb")]}))
    return home


def _home_args(homes: list[str], eq: list[bool]) -> list[str]:
    out: list[str] = []
    for h, e in zip(homes, eq, strict=True):
        out += [f"--home={h}"] if e else ["--home", h]
    return out


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    base = tmp_path_factory.mktemp("homes")
    return str(_secret_home(base / "secret").root), str(_decoy(base / "decoy").root)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.lists(st.booleans(), min_size=1, max_size=4), eq=st.data(),
       verb=st.sampled_from([["list"], ["list", "--json"], ["inventory", "--json"], ["history"]]))
def test_the_home_argparse_uses_is_the_one_redacted(homes: tuple[str, str], order: list[bool], eq: st.DataObject,
                                                    verb: list[str]) -> None:
    secret, decoy = homes
    chosen = [secret if o else decoy for o in order]
    forms = eq.draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    code, out, err = run_main([*_home_args(chosen, forms), *verb], b"")
    assert BARE not in out + err
    if chosen[-1] == secret and verb == ["list"]:
        assert code == 0 and "…wvut" in out      # it did read the secret home: the key as a fingerprint


@pytest.mark.parametrize("abbrev", ["--hom", "--ho", "--hom=", "--lock-t"])
def test_abbreviated_options_are_refused(homes: tuple[str, str], abbrev: str) -> None:
    secret, _ = homes
    argv = [abbrev + secret, "list"] if abbrev.endswith("=") else [abbrev, secret, "list"]
    if abbrev == "--lock-t":
        argv = ["--home", secret, "--lock-t", "5", "list"]
    code, out, err = run_main(argv, b"")
    assert code == 2
    assert BARE not in out + err
    assert "unrecognized arguments" in err or "invalid choice" in err


def test_negative_control_first_home_leaks(homes: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the boundary taking the first ``--home`` (the old rule), the key prints in full."""
    secret, decoy = homes

    def first(argv: list[str], name: str) -> str | None:
        for i, token in enumerate(argv):
            if token == name and i + 1 < len(argv):
                return argv[i + 1]
        return None

    monkeypatch.setattr(boundary, "_opt", first)
    code, out, err = run_main(["--home", decoy, "--home", secret, "list"], b"")
    assert code == 0 and BARE in out


def test_secret_home_file_is_as_planted(homes: tuple[str, str]) -> None:
    doc = json.loads((Path(homes[0]) / "auth.json").read_text())
    assert doc["credential_pool"]["custom:acme"][0]["access_token"] == BARE
