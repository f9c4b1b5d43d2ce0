"""``list`` and ``list --json`` carry each key's readings from the headroom sidecar (#21): the
tightest fresh window in words, every window in the JSON, stale said as stale, bound to the
key's secret, never a secret; a broken sidecar is a warning, not a failed list."""

from __future__ import annotations

import json
import time

from store.agent.headroom import SIDECAR, Headroom
from store.dialects.readings import Reading
from store.paths import Home
from store.pools.view import row_fingerprint
from tests.conftest import make_row, make_store, write_store
from tui.cli import main

KEY_A = "sk-or-v1-CANARYaaaaaaaaaaaaaaaaaaaa1111"
KEY_B = "sk-or-v1-CANARYbbbbbbbbbbbbbbbbbbbb2222"


def run(capsys, home: Home, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--home", str(home.root)])
    out, err = capsys.readouterr()
    return code, out, err


def seeded(tmp_path, *, fp_a: str | None = None) -> tuple[Home, float]:
    home = Home(tmp_path)
    rows = [make_row("aaa111", label="main", token=KEY_A), make_row("bbb222", label="backup", priority=1, token=KEY_B)]
    write_store(home, make_store({"openrouter": rows}))
    now = time.time()
    room = Headroom(home, clock=lambda: now)
    room.record("openrouter", "aaa111", fp_a or row_fingerprint("openrouter", rows[0]), [
        Reading("requests", "openai", now, limit=500, remaining=12, reset_at=now + 600),
        Reading("tokens", "openai", now, limit=200_000, remaining=150_000, reset_at=now + 60)])
    room.record("openrouter", "bbb222", row_fingerprint("openrouter", rows[1]), [
        Reading("5h", "anthropic-unified", now - 9000, utilization=0.9, reset_at=now - 5)])
    assert room.flush(force=True)
    return home, now


def test_list_says_the_tightest_window_and_stale_in_words(tmp_path, capsys):
    home, _ = seeded(tmp_path)
    code, out, err = run(capsys, home, "list")
    assert code == 0, err
    main_line = next(line for line in out.splitlines() if " main " in line)
    backup_line = next(line for line in out.splitlines() if " backup " in line)
    assert "headroom 12/500 rpm (resets in 10m" in main_line
    assert "headroom stale (10% 5h when read)" in backup_line
    assert "CANARY" not in out + err


def test_list_json_carries_every_window(tmp_path, capsys):
    home, now = seeded(tmp_path)
    code, out, err = run(capsys, home, "list", "--json")
    assert code == 0, err
    creds = {c["id"]: c for c in json.loads(out)["pools"]["openrouter"]["credentials"]}
    a = creds["aaa111"]["headroom"]
    assert a["tightest"]["window"] == "requests" and a["tightest"]["remaining"] == 12
    assert {w["window"] for w in a["windows"]} == {"requests", "tokens"}
    assert a["tightest"]["reset_at"] == now + 600 and a["tightest"]["stale"] is False
    b = creds["bbb222"]["headroom"]
    assert b["tightest"] is None and b["windows"][0]["stale"] is True
    assert "CANARY" not in out


def test_readings_of_an_old_secret_are_not_listed(tmp_path, capsys):
    """Negative control for the binding: the sidecar's readings for key #1 were taken with
    another secret; they must not be listed against the secret it holds now."""
    home, _ = seeded(tmp_path, fp_a="sk-or-…OLD1")
    out = run(capsys, home, "list")[1]
    assert "12/500" not in out
    doc = json.loads(run(capsys, home, "list", "--json")[1])
    creds = {c["id"]: c for c in doc["pools"]["openrouter"]["credentials"]}
    assert creds["aaa111"]["headroom"] is None


def test_broken_sidecar_is_a_warning(tmp_path, capsys):
    home, _ = seeded(tmp_path)
    (tmp_path / SIDECAR).write_text("{not json")
    code, out, err = run(capsys, home, "list")
    assert code == 0 and "main" in out and "headroom" in err and "headroom 12" not in out
    code, out, _ = run(capsys, home, "list", "--json")
    assert code == 0 and json.loads(out)["pools"]["openrouter"]["credentials"][0]["headroom"] is None
