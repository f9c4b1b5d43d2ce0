"""Worker processes for the store reliability tests (tests/store/test_rel_*.py).

Each worker is a plain function run in a fresh interpreter:

    python tests/helpers_proc.py <command> <json-args>

so the tests exercise the store exactly as separate hermes-admin / Hermes
processes would (their own file descriptors, their own kernel locks). Workers
report on stdout: a line ``ready`` when they reach the point the test waits for,
and a final JSON line when they have a result. Every wait inside a worker is
bounded so a failing test can never hang the suite.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
if __name__ == "__main__":
    # Run as a script, Python put tests/ first on sys.path; its test folders are named
    # like Hermes's own packages (tests/agent, tests/cli), and would shadow them.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE.parent]
# A worker never outlives a forgotten test by more than this.
MAX_WORKER_SECONDS = 60.0


# --------------------------------------------------------------------------- parent side

def spawn(command: str, *, env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[str]:
    """Start a worker running *command* with keyword arguments passed as JSON.

    *env* replaces the environment (the real-Hermes workers need a clean one).
    """
    if env is None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, str(HERE), command, json.dumps(kwargs)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, cwd=str(ROOT),
    )


def wait_ready(proc: subprocess.Popen[str], timeout: float = 10.0) -> None:
    """Block until the worker prints ``ready`` (bounded; the worker's stderr on failure)."""
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                proc.kill()
                raise AssertionError(f"worker not ready after {timeout}s: {_stderr(proc)}")
            line = proc.stdout.readline()
            if line.strip() == "ready":
                return
            if not line:
                raise AssertionError(f"worker exited before ready: {_stderr(proc)}")
    finally:
        sel.close()


def _stderr(proc: subprocess.Popen[str]) -> str:
    try:
        _, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return (err or "")[-2000:]


def result(proc: subprocess.Popen[str], timeout: float = 30.0) -> Any:
    """Wait for the worker to finish and return its last stdout line parsed as JSON."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"worker still running after {timeout}s: {err[-2000:]}") from None
    lines = [ln for ln in out.splitlines() if ln.strip() and ln.strip() != "ready"]
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"worker failed (rc={proc.returncode}): {err[-2000:]}")
    return json.loads(lines[-1])


def stop(proc: subprocess.Popen[str]) -> None:
    """Kill a worker this test started (by its own handle) and reap it."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        pass


def write_doc(home: Any, doc: dict) -> bytes:
    """Write a store the way Hermes leaves it (0700 home, 0600 file); return its bytes."""
    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(home.root, 0o700)
    raw = json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8")
    home.auth.write_bytes(raw)
    os.chmod(home.auth, 0o600)
    return raw


def counter_doc(rows: int = 3, pad: int = 0) -> dict:
    """A store with one openrouter pool of *rows* rows; *pad* bytes of filler per row."""
    return {
        "version": 1,
        "providers": {},
        "credential_pool": {
            "openrouter": [
                {"id": f"r{i:05d}", "label": f"key-{i}", "auth_type": "api_key", "priority": i,
                 "source": "manual", "access_token": f"sk-or-v1-test{i:04d}" + "x" * 24,
                 "last_status": None, "last_status_at": None, "last_error_code": None,
                 "last_error_reason": None, "last_error_message": None,
                 "last_error_reset_at": None, "request_count": 0, "note": "n" * pad}
                for i in range(rows)
            ]
        },
    }


def cli_command() -> list[str]:
    """The installed console script when present, else the module (same code)."""
    script = Path(sys.executable).with_name("hermes-admin")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tui.cli"]


def run_cli(*args: str, home: Any, stdin: str | None = None, timeout: float = 30.0,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``hermes-admin --home HOME ARGS`` with a clean, key-free environment."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("API_KEY", "_TOKEN", "_SECRET", "_KEY")) and k != "HERMES_HOME"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["NO_COLOR"] = "1"
    env.pop("HERMES_ADMIN_DEBUG", None)
    env.update(extra_env or {})
    return subprocess.run(
        [*cli_command(), "--home", str(home.root), *args], input=stdin, capture_output=True,
        text=True, timeout=timeout, env=env, cwd=str(ROOT),
    )


# --------------------------------------------------------------------------- worker side

def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def _emit(value: Any) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def _wait_for_file(path: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"start file {path} never appeared")
        time.sleep(0.002)


def _linger() -> None:
    """Hold whatever we hold until the parent kills us (bounded)."""
    time.sleep(MAX_WORKER_SECONDS)


def _home(path: str):
    from store.paths import Home

    return Home(Path(path))


def _bump(doc: dict, pool: str, row_id: str) -> None:
    for row in doc["credential_pool"][pool]:
        if row.get("id") == row_id:
            row["request_count"] = int(row.get("request_count") or 0) + 1
            return
    raise KeyError(row_id)


def incr(home: str, pool: str, row_id: str, n: int, go: str, mode: str, gap: float = 0.0) -> None:
    """Increment one row's request_count *n* times, after the start file *go* appears.

    mode "transaction": the real API. The broken variants exist to prove the test
    catches lost updates: "nolock" reads, mutates and atomically writes without
    the lock; "stale" reads the document before taking the lock and writes that
    copy back under it. *gap* widens the race window of the broken variants.
    """
    from store import authfile
    from store.lock import locked
    from store.transaction import transaction

    h = _home(home)
    _ready()
    _wait_for_file(go)
    for _ in range(n):
        if mode == "transaction":
            with transaction(h) as doc:
                _bump(doc, pool, row_id)
        elif mode == "nolock":
            doc = authfile.read_store(h).doc
            _bump(doc, pool, row_id)
            time.sleep(gap)
            authfile.atomic_write_bytes(h.auth, authfile.serialize(doc))
        elif mode == "stale":
            doc = authfile.read_store(h).doc
            _bump(doc, pool, row_id)
            time.sleep(gap)
            with locked(h.lock):
                authfile.atomic_write_bytes(h.auth, authfile.serialize(doc))
        else:
            raise SystemExit(f"unknown mode {mode}")
    _emit({"done": n})


def hold(home: str, how: str) -> None:
    """Hold the store lock until killed.

    how "ours": store.lock.locked; "raw": fcntl.flock the way Hermes does;
    "transaction": inside a transaction whose document has been changed but not
    yet written (a crash here must leave auth.json as it was).
    """
    from store.lock import locked
    from store.transaction import transaction

    h = _home(home)
    if how == "ours":
        with locked(h.lock, timeout=5):
            _ready()
            _linger()
    elif how == "raw":
        fd = os.open(h.lock, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _ready()
        _linger()
    elif how == "transaction":
        with transaction(h, lock_timeout=5) as doc:
            doc["credential_pool"].clear()
            doc["half_done"] = True
            _ready()
            _linger()
    else:
        raise SystemExit(f"unknown hold mode {how}")


def try_flock(lock: str) -> None:
    """Try a non-blocking exclusive flock, as a second Hermes process would."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _emit({"acquired": False})
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        _emit({"acquired": True})
    finally:
        os.close(fd)


def crash_before_replace(home: str) -> None:
    """Run a real transaction but SIGKILL ourselves right before auth.json is replaced."""
    from store.transaction import transaction

    h = _home(home)
    real_replace = os.replace

    def replace(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        if Path(dst) == h.auth:
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst, *a, **kw)

    os.replace = replace  # type: ignore[assignment]
    with transaction(h) as doc:
        doc["credential_pool"]["openrouter"][0]["request_count"] = 999
        doc["written_by_crashed_process"] = True


def crash_in_place(home: str) -> None:
    """Negative control for crash_before_replace: a writer that rewrites auth.json in
    place (open 'w') and dies halfway leaves a damaged store behind."""
    h = _home(home)
    raw = h.auth.read_bytes()
    with open(h.auth, "wb") as fh:
        fh.write(raw[: len(raw) // 2])
        fh.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def reader(home: str, stop: str, max_seconds: float = 20.0) -> None:
    """Poll read_store without any lock until *stop* exists; count reads and failures."""
    from store import authfile
    from store.errors import StoreUnreadable

    h = _home(home)
    reads = errors = missing = 0
    samples: list[str] = []
    _ready()
    deadline = time.monotonic() + max_seconds
    while not os.path.exists(stop) and time.monotonic() < deadline:
        try:
            snap = authfile.read_store(h)
        except StoreUnreadable as exc:
            errors += 1
            if len(samples) < 3:
                samples.append(exc.reason)
        else:
            if snap.doc is None:
                missing += 1
            else:
                reads += 1
    _emit({"reads": reads, "errors": errors, "missing": missing, "samples": samples})


def permissions(home: str, umask: int) -> None:
    """Under *umask*, create a home and store through the real API; report every mode."""
    import stat

    from store.transaction import transaction

    os.umask(umask)
    h = _home(home)
    modes: dict[str, Any] = {"temp": []}
    real_replace = os.replace

    def replace(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        modes["temp"].append([os.path.basename(src), stat.S_IMODE(os.lstat(src).st_mode)])
        real_replace(src, dst, *a, **kw)

    os.replace = replace  # type: ignore[assignment]
    with transaction(h) as doc:
        doc["credential_pool"]["openrouter"] = []
    # The second write keeps a backup of the first.
    with transaction(h) as doc:
        doc["credential_pool"]["openrouter"].append({"id": "a1b2c3", "request_count": 0})
    os.replace = real_replace  # type: ignore[assignment]

    def mode(p: Path) -> int | None:
        try:
            return stat.S_IMODE(os.lstat(p).st_mode)
        except FileNotFoundError:
            return None

    modes.update(home=mode(h.root), auth=mode(h.auth), backup=mode(h.backup),
                 leftovers=sorted(p.name for p in h.root.iterdir() if p.name.endswith(".tmp")))
    _emit(modes)


def hermes_lock(action: str, timeout: float = 0.3) -> None:
    """Hermes 0.19.0's own ``_auth_store_lock`` (needs PYTHONPATH=<unpacked wheel> and
    HERMES_HOME set). action "hold": take it and keep it; "try": report whether it can
    be taken within *timeout* (Hermes waits at least 1 s)."""
    from hermes_cli import auth

    if action == "hold":
        with auth._auth_store_lock():
            _ready()
            _linger()
    else:
        started = time.monotonic()
        try:
            with auth._auth_store_lock(timeout_seconds=timeout):
                _emit({"acquired": True, "lock": str(auth._auth_lock_path())})
        except TimeoutError:
            _emit({"acquired": False, "waited": time.monotonic() - started,
                   "lock": str(auth._auth_lock_path())})


COMMANDS: dict[str, Callable[..., None]] = {
    "hermes_lock": hermes_lock,
    "incr": incr,
    "hold": hold,
    "try_flock": try_flock,
    "crash_before_replace": crash_before_replace,
    "crash_in_place": crash_in_place,
    "reader": reader,
    "permissions": permissions,
}


if __name__ == "__main__":
    name, raw_args = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "{}"
    COMMANDS[name](**json.loads(raw_args))
