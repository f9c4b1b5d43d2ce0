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


@pytest.fixture
def snap_compare(snap_compare):  # noqa: F811 - pytest-textual-snapshot's own, wrapped
    """pytest-textual-snapshot's ``snap_compare``, with every capture taken only once the screen is
    :func:`tests.tui_sample.ready` (after the test's own ``run_before``): a busy machine must not
    capture a worker's result before it lands, a table before its refit, or a cursor mid-blink."""
    import inspect

    from tests.tui_sample import ready

    def compare(app, *args, run_before=None, **kwargs):
        async def before(pilot) -> None:
            if run_before is not None:
                done = run_before(pilot)
                if inspect.isawaitable(done):
                    await done
            await ready(pilot)
        return snap_compare(app, *args, run_before=before, **kwargs)
    return compare
