"""The writer side of the SIGKILL storm (tests/cli/test_hostile_kill.py), run as its own process:

    python tests/kill_storm.py HOME WRITES SEED MODE PEER_STOP     (with the repository on PYTHONPATH)

Imports hermes-admin's CLI once, then forks one child per write; each child runs the very
``tui.cli.main`` a ``hermes-admin`` process runs, on its own pid, file descriptors and kernel
lock, and is SIGKILLed (a real kill of a real process) at a random moment or while paused
inside ``os.replace`` of auth.json. Forking instead of starting an interpreter per write
makes a write cost ~20 ms instead of ~0.5 s of start-up, so the storm is hundreds of kills
in seconds; a kill during interpreter start-up touched no file anyway. The verbs' modules
are imported lazily (issue 28), so before the first fork the driver also imports what a
child would (:func:`warm`: each verb once, in a forked child on a scratch copy of the home,
names the modules it loaded): otherwise every child imports ~110 modules itself, 0.2-0.6 s
of each write spent where no file is touched.

MODE ``locked`` is the product; ``nolock`` (negative control) runs the same children with
the transaction's lock replaced by a no-op, so the test can show the storm loses a peer's
bumps when the lock is missing. Before the last write (killed mid-write) the driver touches
PEER_STOP and waits for the peer's PEER_STOP.done, so that temp copy is still there for the
test's final write to clear (the peer's own writes would sweep it). Prints one JSON line
with the counts.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

# Imported before the first fork so that no child pays for it (the point of forking).
from store.paths import TEMP_PREFIX
from tui.cli import main as cli_main

PARALLEL = 3
DEADLINE = 120.0  # seconds: no storm outlives a broken test by more


def _verb(i: int) -> list[str]:
    return [["reset", "openrouter", "r00001"],
            # --shorten: the storm replaces its own benches with shorter ones on purpose (#20
            # refuses a cooldown that would hide a longer one without it).
            ["cooldown", "openrouter", "r00002", "--for", f"{i % 50 + 1}m", "--reason", "storm", "--shorten"],
            ["priority", "openrouter", "r00002", str(i % 3)]][i % 3]


def _child(argv: list[str], marker: Path | None) -> None:
    """In the forked child: run the CLI once and exit with its code (never returns)."""
    code = 70
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if marker is not None:
            real = os.replace

            def replace(src, dst, *a, **k):  # paused mid-write: temp written, not renamed
                if str(dst).endswith("auth.json"):
                    marker.touch()
                    time.sleep(60)
                return real(src, dst, *a, **k)

            os.replace = replace
        code = cli_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 70
    os._exit(code)


def warm(home: Path) -> int:
    """Import in this process every module a storm child imports; returns how many.

    Each verb runs once in a forked child against a scratch copy of *home* (the storm's home
    is not touched) and writes the names of the modules it loaded to a pipe."""
    scratch = home.parent / "warm-home"
    scratch.mkdir(mode=0o700)
    # auth.json alone: the peer is writing, and its temp copies come and go.
    shutil.copy2(home / "auth.json", scratch / "auth.json")
    names: set[str] = set()
    for i in range(3):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            before = set(sys.modules)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            with contextlib.suppress(BaseException):
                cli_main(["--home", str(scratch), *_verb(i)])
            os.write(write_end, "\n".join(set(sys.modules) - before).encode())
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            names.update(pipe.read().decode().split())
        os.waitpid(pid, 0)
    shutil.rmtree(scratch, ignore_errors=True)
    for name in sorted(names):
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    return len(names)


def storm(home: Path, writes: int, seed: int, mode: str, peer_stop: Path) -> dict:
    warmed = warm(home)
    if mode == "nolock":
        # The module, not the package attribute (store re-exports the function by that name).
        txn = importlib.import_module("store.transaction")
        txn.locked = lambda *a, **k: contextlib.nullcontext()
    rng = random.Random(seed)
    running: dict[int, float | Path | None] = {}
    counts = {"finished": 0, "killed": 0, "random_kills": 0, "midwrite_kills": 0}
    codes: dict[str, int] = {}
    orphans: set[str] = set()

    def reap() -> None:
        now = time.monotonic()
        for pid, kill in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                if code == -signal.SIGKILL:
                    counts["killed"] += 1
                else:
                    counts["finished"] += 1
                    codes[str(code)] = codes.get(str(code), 0) + 1
                del running[pid]
                continue
            due = kill.exists() if isinstance(kill, Path) else kill is not None and now >= kill
            if due:
                # A writer that said it is mid-write holds the lock and has its temp copy in the
                # home: listed before the kill, since once it is reaped the next writer's sweep
                # may clear the copy before we look (it did, on a loaded machine).
                own = TEMP_PREFIX + f"auth.json.{pid}."
                mine = [p.name for p in home.iterdir() if p.name.startswith(own) and p.name.endswith(".tmp")] \
                    if isinstance(kill, Path) else []
                os.kill(pid, signal.SIGKILL)
                # Reaped at once: a zombie's pid still looks alive to the next writer's sweep.
                os.waitpid(pid, 0)
                counts["killed"] += 1
                del running[pid]
                if isinstance(kill, Path):  # died mid-write: its temp copy was in the home
                    counts["midwrite_kills"] += 1
                    orphans.update(mine)
                else:
                    counts["random_kills"] += 1

    deadline = time.monotonic() + DEADLINE
    for i in range(writes):
        while len(running) >= PARALLEL and time.monotonic() < deadline:
            reap()
            time.sleep(0.001)
        if i == writes - 1:
            while running and time.monotonic() < deadline:
                reap()
                time.sleep(0.001)
            peer_stop.touch()
            done = peer_stop.with_name(peer_stop.name + ".done")
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        argv = ["--home", str(home), *_verb(i)]
        # A third are killed: at a random moment of the run, or mid-write. The last write
        # is a mid-write kill, so the final write of the test always has a temp to clear.
        kill: float | Path | None = None
        marker = None
        if i % 6 == 4 or i == writes - 1:
            marker = kill = home.parent / f"in-replace-{i}"
        elif i % 6 == 1:
            kill = time.monotonic() + rng.uniform(0.0, 0.07)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(argv, marker)
        running[pid] = kill
    while running and time.monotonic() < deadline:
        reap()
        time.sleep(0.001)
    for pid in running:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return {**counts, "left_running": len(running), "codes": codes, "orphans": sorted(orphans), "warmed": warmed}


if __name__ == "__main__":
    home_arg, writes_arg, seed_arg, mode_arg, stop_arg = sys.argv[1:6]
    print(json.dumps(storm(Path(home_arg), int(writes_arg), int(seed_arg), mode_arg, Path(stop_arg))), flush=True)
