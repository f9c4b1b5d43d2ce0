"""RELIABILITY 29: a SIGKILL storm with a peer.

200 CLI writes (reset, cooldown, priority), a third of them SIGKILLed at a random
moment or mid-write, three at a time, against a peer process that bumps one row's
request_count through the transaction API for as long as the storm lasts. At the end
every bump is counted, the file parses, and once the next write has run no temp file
of ours is left.

Each write is a real process running hermes-admin's ``tui.cli.main``, forked from a
driver that imported the CLI once (tests/kill_storm.py): the storm pays ~50 ms a write
instead of ~0.5 s of interpreter start-up, so it is seconds, not 100 s.

Negative controls: the same storm with the transaction's lock switched off in the writers
loses the peer's bumps (below); the last write is killed mid-write, so the final write
must clear a temp copy that is there (asserted), and tests/store/test_hostile_writes.py shows
temp copies stay with the sweep off. More lost-update controls (no lock, stale read) are
in tests/store/test_rel_concurrency.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.paths import TEMP_PREFIX, Home
from tests.helpers_proc import ROOT, counter_doc, run_cli, write_doc

WRITES = 200
STORM = ROOT / "tests" / "kill_storm.py"

# Bumps until the stop file appears (the driver touches it before its last write), then
# touches STOP.done; "ready" after the first bump, so the storm starts on a live peer.
PEER = """
import json, sys, time
from pathlib import Path
from store.paths import Home
from store.transaction import transaction
home, stop, gap = Home(Path(sys.argv[1])), Path(sys.argv[2]), float(sys.argv[3])
n = 0
deadline = time.monotonic() + 150
while not stop.exists() and time.monotonic() < deadline:
    with transaction(home, lock_timeout=60) as doc:
        row = doc["credential_pool"]["openrouter"][0]
        row["request_count"] = int(row.get("request_count") or 0) + 1
    n += 1
    if n == 1:
        print("ready", flush=True)
    time.sleep(gap)
Path(str(stop) + ".done").touch()
print(json.dumps({"bumps": n}), flush=True)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("API_KEY", "_TOKEN", "_SECRET", "_KEY"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_HOME", None)
    return env


def _storm_with_peer(tmp_path: Path, mode: str, writes: int = WRITES) -> tuple[Home, dict, int]:
    """Run *writes* storm writes (MODE locked or nolock) against the peer; (home, counts, bumps)."""
    home = Home(tmp_path / "home")
    write_doc(home, counter_doc(rows=3))
    env = _env()
    stop = tmp_path / "stop-peer"
    peer = subprocess.Popen([sys.executable, "-c", PEER, str(home.root), str(stop), "0.003"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    storm = None
    try:
        assert peer.stdout is not None
        assert peer.stdout.readline().strip() == "ready", peer.stderr.read() if peer.stderr else ""
        storm = subprocess.Popen([sys.executable, str(STORM), str(home.root), str(writes), "29", mode, str(stop)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env, cwd=str(ROOT))
        out, err = storm.communicate(timeout=180)
        assert storm.returncode == 0, err[-2000:]
        counts = json.loads(out.strip().splitlines()[-1])
        out, err = peer.communicate(timeout=120)
        assert peer.returncode == 0, err[-2000:]
        bumps = json.loads(out.strip().splitlines()[-1])["bumps"]
    finally:
        stop.touch()
        for proc in (storm, peer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    return home, counts, bumps


def _count(home: Home) -> int:
    doc = json.loads(home.auth.read_bytes())
    return doc["credential_pool"]["openrouter"][0]["request_count"]


@pytest.mark.slow
def test_sigkill_storm_against_a_peer_loses_nothing_and_leaves_no_temp(tmp_path) -> None:
    started = time.monotonic()
    home, counts, bumps = _storm_with_peer(tmp_path, "locked")
    # The peer kept writing through the storm: its bumps raced the writers and the kills.
    assert bumps >= 100, (bumps, counts)
    assert _count(home) == bumps, (bumps, counts)
    assert counts["left_running"] == 0, counts
    # Every writer that was not killed finished its change.
    assert set(counts["codes"]) == {"0"}, counts
    left_before = [p.name for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX) and p.name.endswith(".tmp")]
    assert left_before, "the last writer died mid-write: its temp copy must be there to clear"
    # The next write clears it (a write that changes something: a reset of a key already ok
    # writes nothing, so it sweeps nothing either).
    proc = run_cli("cooldown", "openrouter", "r00001", "--for", "15m", home=home)
    assert proc.returncode == 0, proc.stderr
    left = [p.name for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX) and p.name.endswith(".tmp")]
    assert left == [], left
    # 34 die mid-write (every one: they wait to be killed); 33 at a random moment, of
    # which some come after a fast run ended: on a loaded machine (the rest of the suite
    # on the other core) it was 18 of 33 once, so the floor only says random kills landed.
    assert counts["midwrite_kills"] == WRITES // 6 + 1, counts
    assert WRITES // 25 <= counts["random_kills"] <= WRITES // 6, counts
    assert counts["killed"] == counts["midwrite_kills"] + counts["random_kills"], counts
    assert len(counts["orphans"]) >= counts["midwrite_kills"], "a writer died mid-write but left no temp copy"
    print(f"storm: {counts['finished']} CLI writes finished, {counts['killed']} SIGKILLed "
          f"({counts['midwrite_kills']} mid-write, {len(counts['orphans'])} temp copies seen), "
          f"{len(left_before)} temps before the final write, 0 after; {bumps} peer bumps all counted; "
          f"{time.monotonic() - started:.1f}s")


@pytest.mark.slow
def test_negative_control_the_storm_without_the_lock_loses_bumps(tmp_path) -> None:
    """The same storm, writers' lock switched off: the count above is what catches it.
    Half as long: it loses dozens of bumps in 100 writes (~80 in 200 measured)."""
    home, counts, bumps = _storm_with_peer(tmp_path, "nolock", writes=WRITES // 2)
    assert bumps >= 50, (bumps, counts)
    json.loads(home.auth.read_bytes())  # still atomic writes: the file parses
    assert _count(home) < bumps, f"no bump lost without the lock ({bumps} bumps, {counts})"
    print(f"without the lock: {bumps - _count(home)} of {bumps} peer bumps lost")
