"""Hostile hour: an operator history folder that cannot be read is reported, not empty.

A FIFO, a regular file, a dangling symlink or a folder that cannot be listed at
``hermes-admin-history``: ``hermes-admin history`` printed "no operator action is kept"
and exited 0, and ``:undo`` in the console offered no action, as if none had been kept.
The verb now exits 3 naming the folder (nothing written, a FIFO never opened), and the
console's command line says so in a message.
"""

from __future__ import annotations

import os

import pytest

from store.errors import StoreUnreadable
from store.ops import history, undo
from store.paths import Home
from tests.conftest import make_row, run_cli, write_store
from tests.tui_sample import app_for, notes, write_sample

MISSING = "/nonexistent-history-volume/hermes-admin-history"


def _plant(home: Home, kind: str) -> None:
    d = history.folder(home)
    if kind == "fifo":
        os.mkfifo(d)
    elif kind == "file":
        d.write_text("not a folder\n")
    elif kind == "dangling":
        d.symlink_to(MISSING)
    else:
        d.mkdir(mode=0o700)
        (d / "x.json").write_text("{}")
        d.chmod(0)


def _skip_unlistable_as_root(kind: str) -> None:
    if kind == "unlistable" and os.geteuid() == 0:
        pytest.skip("root lists a 000 folder")


KINDS = ["fifo", "file", "dangling", "unlistable"]


@pytest.fixture
def home(tmp_home: Home):
    write_store(tmp_home, {"version": 1, "providers": {}, "credential_pool": {"openrouter": [make_row("aaaaaa")]}})
    yield tmp_home
    d = history.folder(tmp_home)
    if d.is_dir() and not d.is_symlink():
        d.chmod(0o700)


def _snapshot(home: Home) -> dict[str, tuple[int, int]]:
    return {p.name: (p.lstat().st_mtime_ns, p.lstat().st_size) for p in home.root.iterdir()}


@pytest.mark.parametrize("kind", KINDS)
def test_history_verb_reports_the_folder(home: Home, kind: str) -> None:
    _skip_unlistable_as_root(kind)
    _plant(home, kind)
    before = _snapshot(home)
    for argv in (("history",), ("history", "--json"), ("undo", "--yes")):
        proc = run_cli(home, *argv, ok=False, timeout=20)
        assert proc.returncode == 3, (argv, proc.stdout, proc.stderr)
        assert str(history.folder(home)) in proc.stderr, proc.stderr
        assert "no operator action" not in proc.stdout + proc.stderr
    assert _snapshot(home) == before
    if kind == "dangling":
        assert MISSING in proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_list_ids_raises_and_no_folder_is_still_empty(home: Home, kind: str, tmp_path) -> None:
    _skip_unlistable_as_root(kind)
    _plant(home, kind)
    with pytest.raises(StoreUnreadable) as got:
        undo.list_ids(home)
    assert got.value.path == history.folder(home)
    assert undo.list_ids(Home(tmp_path / "fresh")) == []


def test_a_link_to_a_real_folder_is_refused_too(home: Home, tmp_path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    history.folder(home).symlink_to(real)
    with pytest.raises(StoreUnreadable, match="symlink"):
        history.names(home)


def test_negative_control_the_old_listing_reads_as_no_actions(home: Home,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing as it was (errors read as no folder): the FIFO is shown as no action."""
    _plant(home, "fifo")

    def old_names(h: Home) -> list[str]:
        try:
            return os.listdir(history.folder(h))
        except (FileNotFoundError, NotADirectoryError):
            return []

    monkeypatch.setattr(history, "names", old_names)
    assert undo.list_ids(home) == []


@pytest.mark.parametrize("kind", ["fifo", "dangling"])
async def test_console_command_line_says_so(tmp_home: Home, kind: str) -> None:
    write_sample(tmp_home)
    _plant(tmp_home, kind)
    app = app_for(tmp_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press(":")
        await pilot.pause()
        assert app.is_running and app.return_code is None
        assert any(str(history.folder(tmp_home)) in n for n in notes(app)), notes(app)
        await pilot.press("escape")
        await pilot.press("q")
