"""The real Hermes Agent 0.19.0, fetched once and driven as a partner process.

hermes-admin shares ``auth.json`` and ``auth.lock`` with live Hermes processes, so
the interop tests run Hermes's own pool code (``agent.credential_pool``) in a
separate process against the same temp home.

Fetching (spec section 9): :func:`hermes_dir` returns a folder holding the unpacked
``hermes-agent==0.19.0`` wheel, in this order of preference:

1. ``<repo>/.cache/hermes-agent-0.19.0/`` already unpacked;
2. ``<repo>/.cache/hermes_agent-0.19.0-py3-none-any.whl`` unzipped there;
3. ``python -m pip download hermes-agent==0.19.0 --no-deps -d <repo>/.cache``, then unzip.

Concurrent fetches are serialized with a filelock on ``.cache/hermes.lock`` and the
unzip lands under a temp name that is renamed into place, so a half-unpacked
folder is never used. When nothing can be fetched, :class:`HermesUnavailable` says
why (the ``hermes`` fixture turns that into a skip).

The partner (:class:`HermesPartner`): a long-lived process running
``tests/hermes_partner_main.py <home>`` that reads one JSON command per line on
stdin and answers one JSON line on stdout. Its environment is that of a clean
Hermes: ``HERMES_HOME=<home>`` set before Hermes is imported, ``HOME`` an empty temp
folder (no ``~/.claude`` credentials), every variable ending in ``API_KEY``,
``_TOKEN``, ``_SECRET`` or ``_KEY`` dropped (no ``env:`` rows seeded from our
environment), ``PYTHONPATH=<hermes_dir>``. Every command loads the pool afresh with
Hermes's ``load_pool`` (as a new agent process would) unless it says otherwise.

Driver API (every method waits at most ``timeout`` seconds, default 60, and
raises :class:`PartnerError` with the partner's message if Hermes raised):

``select(pool) -> {"id", "label"} | None``
    ``load_pool(pool).select()``.
``mark(pool, status_code, reason=None, message=None, reset_at=None, api_key_hint=None) -> dict``
    ``load_pool(pool).mark_exhausted_and_rotate(...)``. Returns the marked entry's
    fields (secrets dropped) plus ``exhausted_until`` (Hermes's own arithmetic for
    it) and ``next`` (the id rotated to, or None).
``reset_statuses(pool) -> int``
    ``load_pool(pool).reset_statuses()``: how many entries it cleared.
``exhausted_until(pool) -> {id: float | None}``
    Hermes's module-level ``_exhausted_until(entry)`` for every entry.
``entries(pool) -> [dict]``
    The entries of a fresh ``load_pool`` as Hermes sees them (secrets dropped).
``bump(pool, n, pause=0.0) -> {"first": int, "last": int, "started": t, "ended": t}``
    n times: inside Hermes's reentrant ``_auth_store_lock()``, ``load_pool`` fresh,
    ``select()``, increment that entry's ``request_count`` and persist with the
    pool's own ``_persist()`` (``write_credential_pool``); *pause* seconds between
    bumps, outside the lock (a request's duration; with 0 the loop re-takes the lock
    at once and starves other writers). ``start_bump`` then ``finish()`` do the same
    without waiting, so the test can write meanwhile.
``load_ok() -> {"pools": {key: {"disk": n, "loaded": m}}, "corrupt": bool}``
    ``load_pool`` for every pool in the file. ``corrupt`` is True when Hermes
    silently treated the file as unparseable (it then starts from an empty store).
``hold(pool)`` / ``persist_held(pool)``
    Keep a pool loaded in memory like a long-running agent, and later write it
    back with ``_persist()`` (the stale-cooldown write-back of 0.19.0).
``close()``
    End the partner (also on garbage collection of the fixture).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

from filelock import FileLock

HERMES_VERSION = "0.19.0"
REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache"
WHEEL_NAME = f"hermes_agent-{HERMES_VERSION}-py3-none-any.whl"
UNPACKED_NAME = f"hermes-agent-{HERMES_VERSION}"
PARTNER_MAIN = Path(__file__).resolve().parent / "hermes_partner_main.py"
DEFAULT_TIMEOUT = 60.0
_SECRET_ENV_SUFFIXES = ("API_KEY", "_TOKEN", "_SECRET", "_KEY")


class HermesUnavailable(RuntimeError):
    """The real Hermes could not be fetched (no network and no cached wheel)."""


class PartnerError(RuntimeError):
    """The partner process reported an error, died, or did not answer in time."""


def _marker(folder: Path) -> Path:
    return folder / "agent" / "credential_pool.py"


def _compiled(folder: Path) -> Path:
    return folder / ".hermes-admin-compiled"


def _compile(folder: Path) -> None:
    """Compile the unpacked wheel once, as pip does when it installs one: the partner runs
    with PYTHONDONTWRITEBYTECODE=1 (it must not write into the cache), so without this each
    partner process would compile every Hermes module it imports again."""
    import compileall

    compileall.compile_dir(str(folder), quiet=2, workers=1)
    _compiled(folder).touch()


def hermes_dir(cache: Path = CACHE) -> Path:
    """Folder with the unpacked (and compiled) hermes-agent 0.19.0 wheel, fetching it if needed."""
    target = cache / UNPACKED_NAME
    if _marker(target).is_file() and _compiled(target).is_file():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache / "hermes.lock"), timeout=600):
        if _marker(target).is_file():  # another process fetched it while we waited
            if not _compiled(target).is_file():     # a cache unpacked before the compile step
                _compile(target)
            return target
        wheel = cache / WHEEL_NAME
        if not wheel.is_file():
            _download(cache)
        if not wheel.is_file():
            raise HermesUnavailable(f"pip download did not produce {wheel}")
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache))
        try:
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(staging)
            if not _marker(staging).is_file():
                raise HermesUnavailable(f"{wheel} has no agent/credential_pool.py")
            _compile(staging)
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except zipfile.BadZipFile as exc:
            raise HermesUnavailable(f"{wheel} is not a valid wheel: {exc}") from None
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return target


def _download(cache: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", f"hermes-agent=={HERMES_VERSION}",
           "--no-deps", "--only-binary=:all:", "-d", str(cache), "--quiet"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HermesUnavailable(f"pip download hermes-agent=={HERMES_VERSION} failed: {exc}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise HermesUnavailable(
            f"pip download hermes-agent=={HERMES_VERSION} failed (exit {proc.returncode}): "
            + " | ".join(tail)
        )


def partner_env(home: Path, hermes: Path, fake_home: Path) -> dict[str, str]:
    """The environment of a clean Hermes process on *home* (spec section 9)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith(_SECRET_ENV_SUFFIXES)}
    for k in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "HERMES_PROFILE"):
        env.pop(k, None)
    env["HERMES_HOME"] = str(home)
    env["HOME"] = str(fake_home)
    env["PYTHONPATH"] = str(hermes)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


class HermesPartner:
    """A live Hermes 0.19.0 pool process on one home (see the module docstring)."""

    def __init__(self, home: Path, hermes: Path | None = None, *, timeout: float = DEFAULT_TIMEOUT):
        self.home = Path(home)
        self.timeout = timeout
        self._fake_home = Path(tempfile.mkdtemp(prefix="hermes-partner-home-"))
        self._stderr_path = self._fake_home.parent / (self._fake_home.name + ".stderr")
        # Lives as long as the partner; closed in close().
        self._stderr = open(self._stderr_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, str(PARTNER_MAIN), str(self.home)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=partner_env(self.home, hermes or hermes_dir(), self._fake_home),
            text=True, bufsize=1,
        )
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._pending = 0
        try:
            hello = self._receive(self.timeout)
            if not hello.get("ready"):
                raise PartnerError(f"partner did not start: {hello}")
        except BaseException:
            self.close()
            raise

    # --- plumbing ------------------------------------------------------------------------------

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def stderr_text(self) -> str:
        try:
            return self._stderr_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def _receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise PartnerError(f"no answer from the Hermes partner in {timeout:g}s\n{self.stderr_text()}") from None
        if line is None:
            raise PartnerError(f"the Hermes partner exited ({self.proc.poll()})\n{self.stderr_text()}")
        answer = json.loads(line)
        if "error" in answer:
            raise PartnerError(f"Hermes raised: {answer['error']}\n{answer.get('traceback', '')}")
        return answer

    def send(self, op: str, **args: Any) -> None:
        """Send a command without waiting; collect its answer with :meth:`finish`."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        self._pending += 1

    def finish(self, timeout: float | None = None) -> Any:
        """The answer to the oldest command sent and not yet answered."""
        if self._pending <= 0:
            raise PartnerError("no command is waiting for an answer")
        self._pending -= 1
        return self._receive(self.timeout if timeout is None else timeout)["result"]

    def call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        self.send(op, **args)
        return self.finish(timeout)

    # --- commands ------------------------------------------------------------------------------

    def select(self, pool: str) -> dict[str, Any] | None:
        return self.call("select", pool=pool)

    def mark(self, pool: str, status_code: int | None, reason: str | None = None,
             message: str | None = None, reset_at: Any = None,
             api_key_hint: str | None = None) -> dict[str, Any]:
        return self.call("mark", pool=pool, status_code=status_code, reason=reason,
                         message=message, reset_at=reset_at, api_key_hint=api_key_hint)

    def reset_statuses(self, pool: str) -> int:
        return self.call("reset_statuses", pool=pool)

    def exhausted_until(self, pool: str) -> dict[str, float | None]:
        return self.call("exhausted_until", pool=pool)

    def entries(self, pool: str) -> list[dict[str, Any]]:
        return self.call("entries", pool=pool)

    def bump(self, pool: str, n: int, pause: float = 0.0, timeout: float | None = None) -> dict[str, Any]:
        return self.call("bump", pool=pool, n=n, pause=pause, timeout=timeout)

    def start_bump(self, pool: str, n: int, pause: float = 0.0) -> None:
        self.send("bump", pool=pool, n=n, pause=pause)

    def load_ok(self) -> dict[str, Any]:
        return self.call("load_ok")

    def hold(self, pool: str) -> list[dict[str, Any]]:
        return self.call("hold", pool=pool)

    def persist_held(self, pool: str) -> None:
        return self.call("persist_held", pool=pool)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._stderr.close()
        shutil.rmtree(self._fake_home, ignore_errors=True)
        try:
            self._stderr_path.unlink()
        except OSError:
            pass

    def __enter__(self) -> HermesPartner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.005) -> bool:
    """Poll *predicate* until it is true or *timeout* passes (bounded by design)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def judge(partner: HermesPartner, pool: str, *, status: int | None = None, headers: dict[str, str] | None = None,
          body: str | None = None, transport: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    """Hermes's judgement of one failed request on *pool* (partner command ``judge``):
    ``{"reason": FailoverReason value, "rotate_hint": bool, "benched": [ids], "swapped": [ids],
    "calls": n}``. *transport* (``"timeout"`` or ``"connection"``) instead of a status: the
    request got no answer. Benches land in the partner's home, as a live agent's would."""
    return partner.call("judge", timeout=timeout, pool=pool, status=status, headers=headers, body=body,
                        transport=transport)
