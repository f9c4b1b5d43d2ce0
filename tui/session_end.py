"""Every way a terminal session ends ends the console: SIGHUP, SIGTERM, SIGINT and a hung-up stdin.

Textual's Linux driver reads stdin in a thread that treats ``read() == 0`` as "piped input"
and loops on: when the terminal goes away (a dropped SSH session, a closed tmux pane) the
console would spin on ``read(0)`` forever. Rather than override that private loop, a
second thread waits in ``poll()`` on stdin with *no* requested events: the kernel then
reports only POLLHUP / POLLERR / POLLNVAL, so the thread sleeps until the terminal hangs
up, costs nothing meanwhile, and never steals a key from the driver. A self-pipe wakes it
on a normal exit.

The signals are handled on the event loop (``loop.add_signal_handler``), so the app exits
through its ordinary path and the caller's ``finally`` (the demo's children and temp
home) runs. The previous Python handlers are put back afterwards.
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
                self._old[sig] = signal.getsignal(sig)
                loop.add_signal_handler(sig, self._end, signal.Signals(sig).name, 128 + sig)
            except (ValueError, RuntimeError, NotImplementedError):
                self._old.pop(sig, None)     # not the main thread (run_test): no signals
        fd = stdin_fd()
        if fd is not None and os.isatty(fd):
            self._watch = HangupWatch(fd, self._hung_up).start()

    def _hung_up(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._end, "hangup", 128 + signal.SIGHUP)
            except RuntimeError:
                pass

    def _end(self, reason: str, code: int) -> None:
        if self.reason is None:
            self.reason = reason
        self.exit_app(code)     # the shell's convention: 128 + the signal

    def uninstall(self) -> None:
        """Put the previous handlers back (the caller's cleanup may still get a signal)."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        loop = self._loop
        for sig, old in self._old.items():
            try:
                if loop is not None:
                    loop.remove_signal_handler(sig)
                signal.signal(sig, old if old is not None else signal.SIG_DFL)
            except (ValueError, RuntimeError):
                pass
        self._old.clear()
