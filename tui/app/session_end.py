"""Every way a terminal session ends ends the console: SIGHUP, SIGTERM, SIGINT and a hung-up stdin.

Textual's Linux driver reads stdin in a thread that treats ``read() == 0`` as "piped input"
and loops on: when the terminal goes away (a dropped SSH session, a closed tmux pane) the
console would spin on ``read(0)`` forever. Rather than override that private loop, a
second thread waits in ``poll()`` on stdin with *no* requested events: the kernel then
reports only POLLHUP / POLLERR / POLLNVAL, so the thread sleeps until the terminal hangs
up, costs nothing meanwhile, and never steals a key from the driver. A self-pipe wakes it
on a normal exit.

The signals are caught by Python handlers that schedule the exit on the event loop, so the
app exits through its ordinary path and the caller's ``finally`` (the demo's children and
temp home) runs. The previous handlers are put back afterwards.

A session that has ended must not outlive it. Textual's shutdown writes its last escape
codes to the terminal through a bounded queue; with the terminal gone that can block the
event loop for good (seen: a console left sleeping in ``Queue.put`` after its tmux pane
was killed, deaf to SIGTERM, since a signal handled *on* the loop waits for the loop).
So the first SIGHUP/SIGTERM/SIGINT or hang-up also arms a watchdog thread: if the process
is still running :data:`GRACE_S` seconds later, it runs the callbacks registered with
:func:`at_forced_exit` (the demo's cleanup) and ends the process with the same status.
:func:`disarm` is called once the app's ``run()`` has returned.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import threading
from typing import Any, Callable

SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
HANGUP = select.POLLHUP | select.POLLERR | select.POLLNVAL
# How long an ended session may take to exit through its ordinary path.
GRACE_S = 5.0

_forced: list[Callable[[], Any]] = []
_watchdog: dict[str, threading.Timer | None] = {"timer": None}
_watchdog_lock = threading.Lock()


def at_forced_exit(callback: Callable[[], Any]) -> Callable[[], Any]:
    """Run *callback* if the watchdog has to end the process (it must be idempotent)."""
    _forced.append(callback)
    return callback


def forget_forced_exit(callback: Callable[[], Any]) -> None:
    if callback in _forced:
        _forced.remove(callback)


def arm(code: int, grace: float | None = None) -> None:
    """Start the watchdog (once): exit with *code* if still running after *grace* seconds."""
    with _watchdog_lock:
        if _watchdog["timer"] is not None:
            return
        timer = threading.Timer(GRACE_S if grace is None else grace, _force, args=(code,))
        timer.daemon = True
        timer.name = "session-end-watchdog"
        _watchdog["timer"] = timer
        timer.start()


def disarm() -> None:
    """The app's run() returned: the ordinary path worked, no forced exit."""
    with _watchdog_lock:
        timer, _watchdog["timer"] = _watchdog["timer"], None
    if timer is not None:
        timer.cancel()


def _force(code: int) -> None:
    for callback in list(_forced):
        try:
            callback()
        except Exception:  # noqa: BLE001 - the process ends next whatever happened here
            pass
    os._exit(code)


def stdin_fd() -> int | None:
    """The descriptor Textual reads keys from, when it is one we can watch."""
    try:
        return sys.__stdin__.fileno() if sys.__stdin__ is not None else None
    except (OSError, ValueError):
        return None


class HangupWatch:
    """Calls *on_hangup* once (from its own thread) when *fd* hangs up; ``stop()`` ends it."""

    def __init__(self, fd: int, on_hangup: Callable[[], Any]) -> None:
        self.fd = fd
        self.on_hangup = on_hangup
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="hangup-watch", daemon=True)

    def start(self) -> HangupWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, 0)              # 0: only hang-up and error conditions
        poller.register(self._wake_r, select.POLLIN)
        try:
            while True:
                for fd, mask in poller.poll():
                    if fd == self._wake_r:
                        return
                    if mask & HANGUP:
                        self.on_hangup()
                        return
        except OSError:
            return
        finally:
            for fd in (self._wake_r,):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def stop(self) -> None:
        try:
            os.write(self._wake_w, b"x")
            os.close(self._wake_w)
        except OSError:
            pass
        self._thread.join(timeout=1.0)


class SessionEnd:
    """Installs the signal handlers and the hang-up watch for one running app."""

    def __init__(self, exit_app: Callable[[int], Any]) -> None:
        self.exit_app = exit_app
        self._loop: asyncio.AbstractEventLoop | None = None
        self._old: dict[int, Any] = {}
        self._watch: HangupWatch | None = None
        self.reason: str | None = None          # what ended the session (tests, logs)

    def install(self) -> None:
        """Call on the event loop (the app's on_mount)."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        for sig in SIGNALS:
            try:
                # A Python handler, not loop.add_signal_handler: it runs even while the loop
                # is blocked, and arms the watchdog before asking the loop to exit.
                self._old[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, RuntimeError):
                pass     # not the main thread (run_test): no signals
        fd = stdin_fd()
        if fd is not None and os.isatty(fd):
            self._watch = HangupWatch(fd, self._hung_up).start()

    def _on_signal(self, signum: int, _frame: Any) -> None:
        arm(128 + signum)
        self._schedule(signal.Signals(signum).name, 128 + signum)

    def _schedule(self, reason: str, code: int) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._end, reason, code)
            except RuntimeError:
                pass

    def _hung_up(self) -> None:
        arm(128 + signal.SIGHUP)
        self._schedule("hangup", 128 + signal.SIGHUP)

    def _end(self, reason: str, code: int) -> None:
        if self.reason is None:
            self.reason = reason
        self.exit_app(code)     # the shell's convention: 128 + the signal

    def uninstall(self) -> None:
        """Put the previous handlers back (the caller's cleanup may still get a signal)."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        for sig, old in self._old.items():
            try:
                signal.signal(sig, old if old is not None else signal.SIG_DFL)
            except (ValueError, RuntimeError):
                pass
        self._old.clear()
