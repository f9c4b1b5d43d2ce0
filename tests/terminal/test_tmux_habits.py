"""#28's habits in a real terminal (the installed `hermes-admin` in tmux at 80x24): the sort
and wide mode chosen in one session are the next session's; `:export json FILE` writes the
view, fingerprints only, 0600."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
import yaml

from store.paths import Home
from tests import tmux
from tests.conftest import cli_env
from tests.terminal.seeds import primary_and_benched_backup

pytestmark = [
    pytest.mark.slow,
    pytest.mark.tmux,
    pytest.mark.skipif(not tmux.available(), reason="tmux is not installed"),
]

KEY_A = "sk-or-v1-0123456789abcdefTMUXhab1"
KEY_B = "sk-or-v1-0123456789abcdefTMUXhab2"


def start(home: Home) -> tmux.Tmux:
    exe = tmux.installed_hermes_admin()
    if exe is None:
        pytest.skip("hermes-admin is not installed in this environment")
    return tmux.Tmux.start([exe, "--home", str(home.root)], size=(80, 24), env=cli_env(home))


def wait_path(pred, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def saved(home: Home) -> dict:
    path = home.root / "hermes-admin.yaml"
    try:
        return (yaml.safe_load(path.read_text()) or {}).get("console") or {}
    except OSError:
        return {}


def test_the_view_is_kept_and_export_writes_it(tmp_home: Home, tmp_path: Path) -> None:
    primary_and_benched_backup(tmp_home, KEY_A, KEY_B)
    out = tmp_path / "view.json"
    with start(tmp_home) as term:
        term.wait_for("backup", timeout=15)
        term.send("o")
        term.wait_for("sort status", timeout=5)
        wait_path(lambda: saved(tmp_home).get("sort") == "status", "the sort saved")
        term.send(":")
        term.wait_for("Tab: complete", timeout=5)
        term.type(f"export json {out}")
        term.send("Enter")
        term.wait_for("exported 2 rows", timeout=5)
    rows = json.loads(out.read_text())
    assert sorted(r["label"] for r in rows) == ["backup", "primary"]
    text = out.read_text()
    assert KEY_A not in text and KEY_B not in text and KEY_A[-4:] in text      # fingerprints only
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    with start(tmp_home) as term:
        screen = term.wait_for("backup", timeout=15)
        assert "sort status" in screen, screen                   # the next session's sort
