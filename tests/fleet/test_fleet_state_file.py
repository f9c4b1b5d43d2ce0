"""The sync daemon's state file (store.fleet.state_file) is one of hermes-admin's own files
(RELIABILITY 40): a symlink to auth.json at its name leaves auth.json byte-identical, and
what is read back from it is checked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from store.authfile import atomic_write_bytes
from store.fleet import state_file
from store.fleet.state_file import STATE_FILE, read_state_file, write_state_file
from tests.fleet_helpers import BOUND, Daemon, make_home
from tests.hermes_real import wait_for

pytestmark = pytest.mark.slow


def test_a_link_to_auth_json_at_the_state_files_name_leaves_auth_json_byte_identical(
        tmp_path: Path, redis_server: Any) -> None:
    home = make_home(tmp_path, "a")
    before = home.auth.read_bytes()
    (home.root / STATE_FILE).symlink_to(home.auth)
    d = Daemon(home, redis_server.url, "host-a")       # connects: writes its state at once
    try:
        assert wait_for(lambda: any("state file" in e for e in d.sync.stats.errors), timeout=BOUND)
        assert d.sync.connected and d.sync.alive()       # refused, said, and the daemon works on
    finally:
        d.close()
    assert home.auth.read_bytes() == before
    assert (home.root / STATE_FILE).is_symlink()
    assert [p.name for p in home.root.iterdir() if p.name.endswith(".tmp")] == []


def test_negative_control_following_the_link_replaces_auth_json(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = make_home(tmp_path, "a")
    before = home.auth.read_bytes()
    (home.root / STATE_FILE).symlink_to(home.auth)
    # The writer as it was: auth.json's own mode, which follows a link at the name.
    monkeypatch.setattr(state_file.authfile, "atomic_write_bytes",
                        lambda path, data, **kw: atomic_write_bytes(path, data, sync=False))
    write_state_file(home, {"connected": True})
    assert home.auth.read_bytes() != before
    assert json.loads(home.auth.read_bytes()) == {"connected": True}   # every key gone


@pytest.mark.parametrize("content, since", [
    ('{"connected": true, "disconnected_since": 1e300}', None),
    ('{"connected": "yes", "disconnected_since": NaN}', None),
    ('{"connected": false, "disconnected_since": 1700000000}', 1700000000),
    ('[' * 100_000, "unreadable"),
    ('"not an object"', "unreadable"),
])
def test_what_the_state_file_says_is_checked(tmp_path: Path, content: str, since: Any) -> None:
    home = make_home(tmp_path, "a")
    (home.root / STATE_FILE).write_text(content)
    got = read_state_file(home, now=1_800_000_000)
    if since == "unreadable":
        assert got is None
    else:
        assert got is not None and got["disconnected_since"] == since
        assert got["connected"] is (content.startswith('{"connected": true'))


def test_a_fifo_at_the_state_files_name_is_read_as_nothing_without_blocking(tmp_path: Path) -> None:
    home = make_home(tmp_path, "a")
    os.mkfifo(home.root / STATE_FILE)
    assert read_state_file(home) is None
