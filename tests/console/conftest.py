"""Fixtures of the console tests.

    home_at     ``home_at(name, create=True)``: a home at ``$HOME/<name>``, with ``$HOME`` set
                to this test's own tmp_path. Screens show paths under ``$HOME`` as ``~/…``, so
                a snapshot shows ``~/<name>``: stable across runs, and no two runs share a folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from store.paths import Home
from tests.tui_sample import snapshot_home


@pytest.fixture
def home_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Home]:
    base = tmp_path / "home"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(base))
    return lambda name, create=True: snapshot_home(base, name, create=create)
