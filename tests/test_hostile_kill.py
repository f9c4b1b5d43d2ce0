"""RELIABILITY 29: a SIGKILL storm with a peer.

200 CLI writes (reset, cooldown, priority), a third of them SIGKILLed at a random
moment, run against a peer process that bumps one row's request_count 1,000 times
through the transaction API. At the end every bump is counted, the file parses, and
once the next write has run no temp file of ours is left.

The lost-update side has its negative controls in tests/test_rel_concurrency.py (no
lock, stale read); the temp-file side in tests/test_hostile_writes.py (sweep off).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from store.paths import TEMP_PREFIX, Home
from tests.helpers_proc import ROOT, cli_command, counter_doc, run_cli, write_doc

Kill = float | Path | None  # when to SIGKILL: a monotonic time, a marker file, or never
BUMPS = 1000
WRITES = 200
PARALLEL = 3

PEER = """
import sys, time
from pathlib import Path
from store.paths import Home
from store.transaction import transaction
home, n, gap = Home(Path(sys.argv[1])), int(sys.argv[2]), float(sys.argv[3])
for _ in range(n):
    with transaction(home, lock_timeout=60) as doc:
        row = doc["credential_pool"]["openrouter"][0]
        row["request_count"] = int(row.get("request_count") or 0) + 1
    time.sleep(gap)
print("done", flush=True)
"""


# Half of the killed writers are the same CLI (tui.cli.main) paused inside os.replace of
# auth.json, so a kill mid-write (temp written, not yet renamed) surely happens; the
# other half die at a random moment.
PAUSED_CLI = """
import os, sys, time
from pathlib import Path
real = os.replace
def replace(src, dst, *a, **k):
    if str(dst).endswith("auth.json"):
        Path(sys.argv[1]).touch()
        time.sleep(60)
    return real(src, dst, *a, **k)
os.replace = replace
from tui.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("API_KEY", "_TOKEN", "_SECRET", "_KEY"))}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("HERMES_HOME", None)
    return env


def _verb(i: int) -> list[str]:
    return [["reset", "openrouter", "r00001"],
            ["cooldown", "openrouter", "r00002", "--for", f"{i % 50 + 1}m", "--reason", "storm"],
            ["priority", "openrouter", "r00002", str(i % 3)]][i % 3]


@pytest.mark.slow
def test_sigkill_storm_against_a_peer_loses_nothing_and_leaves_no_temp(tmp_path) -> None:
    home = Home(tmp_path / "home")
    write_doc(home, counter_doc(rows=3))
    rng = random.Random(29)
    env = _env()
    # The peer's pace spreads its bumps over the storm (about as long as 200 CLI runs).
    peer = subprocess.Popen([sys.executable, "-c", PEER, str(home.root), str(BUMPS), "0.08"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    killed = finished = 0
    orphans: list[str] = []
    running: list[tuple[subprocess.Popen[str], Kill]] = []
    try:
        for i in range(WRITES):
            while len(running) >= PARALLEL:
                running, k, f = _reap(running, home, orphans)
                killed, finished = killed + k, finished + f
                time.sleep(0.005)
            args = ["--home", str(home.root), *_verb(i)]
            marker = tmp_path / f"in-replace-{i}"
            if i % 6 == 4:
                cmd = [sys.executable, "-c", PAUSED_CLI, str(marker), *args]
            else:
                cmd = [*cli_command(), *args]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, env=env, cwd=str(ROOT))
            # A third are killed: at a random moment (start-up to write), or mid-write.
            kill: Kill = None
            if i % 6 == 1:
                kill = time.monotonic() + rng.uniform(0.1, 0.6)
            elif i % 6 == 4:
                kill = marker
            running.append((proc, kill))
        deadline = time.monotonic() + 120
        while running and time.monotonic() < deadline:
            running, k, f = _reap(running, home, orphans)
            killed, finished = killed + k, finished + f
            time.sleep(0.005)
        assert not running, "CLI writers still running after 120 s"
        out, err = peer.communicate(timeout=300)
        assert peer.returncode == 0 and "done" in out, err[-2000:]
    finally:
        for proc, _ in running:
            proc.kill()
        if peer.poll() is None:
            peer.kill()

    doc = json.loads(home.auth.read_bytes())
    assert doc["credential_pool"]["openrouter"][0]["request_count"] == BUMPS
    left_before = [p.name for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX)]
    proc = run_cli("reset", "openrouter", "r00001", home=home)
    assert proc.returncode == 0, proc.stderr
    left = [p.name for p in home.root.iterdir() if p.name.startswith(TEMP_PREFIX) and p.name.endswith(".tmp")]
    assert left == [], left
    # 67 are meant to die; a random-moment kill can come after a fast run ended.
    assert WRITES // 4 <= killed <= WRITES // 3 + 1, (killed, finished)
    assert orphans, "no writer died mid-write: the sweep was not exercised"
    print(f"storm: {finished} CLI writes finished, {killed} SIGKILLed ({len(set(orphans))} temp copies "
          f"seen right after mid-write kills), {len(left_before)} temps before the final write, "
          f"0 after; {BUMPS} peer bumps all counted")


def _reap(running: list[tuple[subprocess.Popen[str], Kill]], home: Home,
          orphans: list[str]) -> tuple[list, int, int]:
    still, killed, finished = [], 0, 0
    now = time.monotonic()
    for proc, kill in running:
        if proc.poll() is not None:
            if proc.returncode == -signal.SIGKILL:
                killed += 1
            else:
                finished += 1
            continue
        due = kill.exists() if isinstance(kill, Path) else kill is not None and now >= kill
        if due:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            killed += 1
            if isinstance(kill, Path):  # died mid-write: its temp copy is in the home now
                orphans.extend(p.name for p in home.root.iterdir()
                               if p.name.startswith(TEMP_PREFIX + "auth.json.") and p.name.endswith(".tmp"))
            continue
        still.append((proc, kill))
    return still, killed, finished
