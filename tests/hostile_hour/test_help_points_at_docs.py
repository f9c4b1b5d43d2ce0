"""Newcomer trial: a ``--help`` that names a page names one that holds what it promises.

``list --help`` and ``inventory --help`` said the ``--json`` schema was "in README"; the
README (a short front door) holds no schema, docs/cli.md and docs/profiles.md do.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from store.paths import Home
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("verb", ["list", "inventory"])
def test_json_help_names_a_page_that_holds_the_schema(tmp_home: Home, verb: str) -> None:
    proc = run_cli(tmp_home, verb, "--help", ok=False, timeout=20)
    text = " ".join(proc.stdout.split())
    found = re.search(r"schema in (\S+?)\)", text)
    assert found, text
    page = ROOT / found.group(1)
    assert page.is_file(), f"{verb} --help names {found.group(1)}, which is not a file"
    assert '"schema": 1' in page.read_text(encoding="utf-8"), f"{page} holds no --json schema"
