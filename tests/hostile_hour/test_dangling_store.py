"""Hostile hour: a dangling symlink at auth.json is reported, never read as no store.

RELIABILITY 59 and "a store we cannot read is reported, never treated as empty": an
auth.json linked to a file that is not there (a shared store on a volume that is not
mounted, a moved dotfiles folder) was read as a missing store: ``list`` printed "No
credential store" with exit 0, ``list --json`` an empty document, the console's reader an
empty home. Writes already refused the link; reads now say what it is, exit 3.
"""

from __future__ import annotations

import json
import os

import pytest

from store import authfile, safeio
from store.errors import StoreUnreadable
from store.paths import Home
from store.store_index import StoreReader
from tests.conftest import run_cli

MISSING = "/nonexistent-hermes-volume/auth.json"


@pytest.fixture
def dangling(tmp_home: Home) -> Home:
    tmp_home.auth.symlink_to(MISSING)
    return tmp_home


@pytest.mark.parametrize("verb", [("list",), ("list", "--json"), ("probe", "openrouter"),
                                  ("remove", "openrouter", "a", "--yes"), ("strategy",)])
def test_every_read_verb_reports_the_dangling_link(dangling: Home, verb: tuple[str, ...]) -> None:
    proc = run_cli(dangling, *verb, ok=False, timeout=20)
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert str(dangling.auth) in proc.stderr and MISSING in proc.stderr
    assert "does not exist" in proc.stderr
    assert "No credential store" not in proc.stdout and '"pools": {}' not in proc.stdout
    assert os.readlink(dangling.auth) == MISSING        # nothing written, the link kept


def test_inventory_names_the_profile_in_error(dangling: Home) -> None:
    proc = run_cli(dangling, "inventory", "--json", ok=False, timeout=20)
    assert MISSING in proc.stdout + proc.stderr
    assert "ok 0" not in proc.stdout


def test_both_readers_raise(dangling: Home) -> None:
    with pytest.raises(StoreUnreadable, match="does not exist"):
        authfile.read_store(dangling)
    with pytest.raises(StoreUnreadable, match="does not exist"):
        StoreReader(dangling).read()


def test_a_missing_store_is_still_no_store(tmp_home: Home) -> None:
    """The check is the link's, not every missing file's: a fresh home reads as empty."""
    assert authfile.read_store(tmp_home).doc is None
    assert StoreReader(tmp_home).read().doc is None
    proc = run_cli(tmp_home, "list", "--json", ok=False, timeout=20)
    assert proc.returncode == 0 and json.loads(proc.stdout)["pools"] == {}


def test_negative_control_without_the_check_it_reads_as_empty(
        dangling: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safeio, "refuse_dangling", lambda *a, **k: None)
    assert authfile.read_store(dangling).doc is None       # the link read as "no store"
    assert StoreReader(dangling).read().doc is None
