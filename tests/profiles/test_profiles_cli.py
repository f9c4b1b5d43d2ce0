"""`cooldown`/`reset --all-profiles` and `inventory` through the installed CLI."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.paths import Home
from store.profiles.root import Root
from tests.conftest import cli_env, make_row, make_store, read_doc, write_store

HERMES_ADMIN = Path(sys.executable).parent / "hermes-admin"
SHARED = "sk-or-v1-SHAREDsharedSHAREDshared00001111"
OTHER = "sk-or-v1-OTHERotherOTHERotherOTHER0002222"


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HERMES_ADMIN), "--home", str(home), *args], capture_output=True,
                          text=True, env=cli_env(Home(home)), timeout=60, stdin=subprocess.DEVNULL)


@pytest.fixture
def root(tmp_path: Path) -> Root:
    """default and team hold SHARED (team borrows it from .env); solo holds another key."""
    r = Root(tmp_path / "hermes")
    write_store(Home(r.path), make_store({"openrouter": [make_row("aaaaaa", label="main", token=SHARED)]}))
    team = r.profile("team").home
    write_store(team, make_store({
        "openrouter": [make_row("bbbbbb", label="team-key", source="env:OPENROUTER_API_KEY"),
                       make_row("cccccc", label="spare", token=OTHER, priority=1)]}))
    team.env.write_text(f"OPENROUTER_API_KEY={SHARED}\n")
    write_store(r.profile("solo").home, make_store({"openrouter": [make_row("dddddd", token=OTHER)]}))
    return r


def status(home: Home, rid: str) -> str | None:
    rows = [r for rows in read_doc(home)["credential_pool"].values() for r in rows]
    return next(r for r in rows if r["id"] == rid)["last_status"]


def audit_lines(home: Home) -> list[dict]:
    if not home.audit.exists():
        return []
    return [json.loads(x) for x in home.audit.read_text().splitlines()]


def test_cooldown_all_profiles_benches_the_key_everywhere_it_is(root: Root) -> None:
    default, team, solo = (root.profile(n).home for n in ("default", "team", "solo"))
    solo_bytes = solo.auth.read_bytes()
    proc = run(root.path, "cooldown", "openrouter", "main", "--for", "1h", "--all-profiles")
    assert proc.returncode == 0, proc.stderr
    assert status(default, "aaaaaa") == "exhausted" and status(team, "bbbbbb") == "exhausted"
    assert status(team, "cccccc") is None                      # another key, untouched
    assert solo.auth.read_bytes() == solo_bytes and not solo.audit.exists()
    assert "changed: default, team" in proc.stdout
    for home, name in ((default, "default"), (team, "team")):
        [line] = audit_lines(home)
        assert line["profile"] == name and line["profiles"] == ["default", "team"]
        assert line["scope"] == "all-profiles" and line["action"] == "cooldown"
    assert SHARED not in proc.stdout + proc.stderr + team.audit.read_text()


def test_reset_all_profiles_from_a_named_profile(root: Root) -> None:
    team = root.profile("team").home
    assert run(root.path, "cooldown", "openrouter", "main", "--for", "1h", "--all-profiles").returncode == 0
    proc = run(team.root, "reset", "openrouter", "team-key", "--all-profiles")
    assert proc.returncode == 0, proc.stderr
    assert status(Home(root.path), "aaaaaa") is None and status(team, "bbbbbb") is None
    assert read_doc(team)["credential_pool"]["openrouter"][0].get("status_cleared_at")
    assert [x["action"] for x in audit_lines(team)] == ["cooldown", "reset"]


def test_origin_profile_by_name_under_an_explicit_root(root: Root, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    proc = run(elsewhere, "cooldown", "openrouter", "team-key", "--for", "1h", "--all-profiles",
               "--root", str(root.path), "--profile", "team")
    assert proc.returncode == 0, proc.stderr
    assert status(Home(root.path), "aaaaaa") == "exhausted" and not elsewhere.exists()


def test_without_all_profiles_only_the_home_changes(root: Root) -> None:
    """Negative control: the same verb without the flag leaves the other holders alone."""
    team_bytes = root.profile("team").home.auth.read_bytes()
    proc = run(root.path, "cooldown", "openrouter", "main", "--for", "1h")
    assert proc.returncode == 0, proc.stderr
    assert status(Home(root.path), "aaaaaa") == "exhausted"
    assert root.profile("team").home.auth.read_bytes() == team_bytes
    # Every audit line names its profile, the single-home verbs' too.
    assert run(root.profile("solo").home.root, "cooldown", "openrouter", "1", "--for", "1h").returncode == 0
    assert [x["profile"] for x in audit_lines(Home(root.path))] == ["default"]
    assert [x["profile"] for x in audit_lines(root.profile("solo").home)] == ["solo"]


def test_partial_failure_names_what_changed_and_what_did_not(root: Root) -> None:
    team = root.profile("team").home
    team_bytes = team.auth.read_bytes()
    fd = os.open(team.lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)          # a Hermes process refreshing a token in team
    try:
        t0 = time.monotonic()
        proc = run(root.path, "--lock-timeout", "0.3", "cooldown", "openrouter", "main",
                   "--for", "1h", "--all-profiles")
        assert time.monotonic() - t0 >= 0.3      # it waited out its lock timeout (run() bounds the rest)
    finally:
        os.close(fd)
    assert proc.returncode == 4, proc.stderr
    assert status(Home(root.path), "aaaaaa") == "exhausted"
    assert team.auth.read_bytes() == team_bytes and audit_lines(team) == []
    assert "changed: default" in proc.stdout and "not changed: team" in proc.stdout
    assert "team: NOT changed" in proc.stderr and str(team.lock) in proc.stderr


def test_all_profiles_bad_input_writes_nothing(root: Root, tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in root.path.rglob("auth.json")}
    for args, needle in (
        (("reset", "openrouter", "--all-profiles"), "TARGET"),
        (("cooldown", "openrouter", "nope", "--for", "1h", "--all-profiles"), "TARGET"),
        (("cooldown", "openrouter", "main", "--for", "1h", "--all-profiles", "--root",
          str(tmp_path / "elsewhere")), "--home"),
        (("reset", "openrouter", "main", "--root", str(root.path)), "--root"),
        (("reset", "openrouter", "main", "--profile", "team"), "--profile"),
        (("reset", "openrouter", "main", "--all-profiles", "--profile", "../x"), "--profile"),
    ):
        proc = run(root.path, *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert needle in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert {p: p.read_bytes() for p in root.path.rglob("auth.json")} == before


def test_a_dead_row_elsewhere_is_skipped_not_fatal(root: Root) -> None:
    team = root.profile("team").home
    doc = read_doc(team)
    doc["credential_pool"]["openrouter"][0].update(last_status="dead", last_error_code=401,
                                                   last_error_reason="invalid_token")
    write_store(team, doc)
    proc = run(root.path, "cooldown", "openrouter", "main", "--for", "1h", "--all-profiles")
    assert proc.returncode == 0, proc.stderr
    assert "team: skipped" in proc.stdout and "dead" in proc.stdout
    assert status(team, "bbbbbb") == "dead"


def test_inventory_text_shows_every_profile_and_a_corrupt_one(root: Root) -> None:
    bad = root.profile("broken").home
    bad.root.mkdir(parents=True)
    bad.auth.write_text("[1, 2")
    proc = run(root.path, "inventory")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for name in ("default:", "team:", "solo:"):
        assert name in out
    assert f"broken: ERROR {bad.auth}" in out
    assert "shared_key" in out and "sk-or-…" + SHARED[-4:] in out and SHARED not in out
    assert bad.auth.read_text() == "[1, 2"
    missing = run(root.path, "inventory", "--root", str(root.path / "nope"))
    assert missing.returncode == 3 and "nope" in missing.stderr


def test_all_profiles_with_a_corrupt_profile_leaves_it_alone(root: Root) -> None:
    bad = root.profile("broken").home
    bad.root.mkdir(parents=True)
    bad.auth.write_text('{"credential_pool": ')
    proc = run(root.path, "cooldown", "openrouter", "main", "--for", "1h", "--all-profiles")
    assert proc.returncode == 0, proc.stderr
    assert "broken: not searched" in proc.stderr and str(bad.auth) in proc.stderr
    assert bad.auth.read_text() == '{"credential_pool": ' and not bad.audit.exists()
    assert status(root.profile("team").home, "bbbbbb") == "exhausted"
