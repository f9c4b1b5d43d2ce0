"""A small driver for real-terminal tests: a command in a detached tmux session.

    with Tmux.start([exe, "--home", str(home)], size=(100, 30)) as term:
        term.wait_for("openrouter", timeout=5)
        term.send("/")            # keys as tmux names them: "Enter", "Escape", "C-p"
        text = term.capture()

Every wait is bounded; a failed wait raises with the last screen in the message.
Each session gets its own tmux server socket, so tests never see each other.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable, Mapping, Sequence

TMUX = shutil.which("tmux")


def available() -> bool:
    return TMUX is not None


class TmuxTimeout(AssertionError):
    pass


class Tmux:
    """One detached tmux session running one command."""

    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    # ------------------------------------------------------------ lifecycle
    @classmethod
    def start(
        cls, argv: Sequence[str], *, size: tuple[int, int] = (100, 30),
        env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
    ) -> Tmux:
        if TMUX is None:
            raise RuntimeError("tmux is not installed")
        name = "ha-" + uuid.uuid4().hex[:10]
        self = cls(socket=name, session=name)
        full_env = dict(os.environ if env is None else env)
        full_env.setdefault("TERM", "xterm-256color")
        full_env.pop("TMUX", None)
        # The pane's size is the terminal's: pytest-xdist workers export COLUMNS=80 LINES=24,
        # which Textual would take over the real 140x45 pane (rows cut, header words lost).
        full_env.pop("COLUMNS", None)
        full_env.pop("LINES", None)
        # `exec` so the pane's pid is the program's pid (CPU measurements read it).
        command = "exec " + " ".join(shlex.quote(a) for a in argv)
        w, h = size
        subprocess.run(
            [TMUX, "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", self.session,
             "-x", str(w), "-y", str(h), command],
            check=True, env=full_env, cwd=cwd, timeout=10,
        )
        # Keep the pane after the program exits so a crash stays readable.
        self._tmux("set-option", "-t", self.session, "remain-on-exit", "on")
        return self

    def __enter__(self) -> Tmux:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    def kill(self) -> None:
        subprocess.run([TMUX or "tmux", "-L", self.socket, "kill-server"],
                       capture_output=True, timeout=10)

    # ------------------------------------------------------------ io
    def _tmux(self, *args: str) -> str:
        out = subprocess.run([TMUX or "tmux", "-L", self.socket, *args], capture_output=True,
                             text=True, timeout=10)
        return out.stdout

    def send(self, *keys: str, literal: bool = False) -> None:
        """Send keys (tmux names: "Enter", "Escape", "C-c"); literal=True types text as is."""
        args = ["send-keys", "-t", self.session]
        if literal:
            args.append("-l")
        self._tmux(*args, *keys)

    def type(self, text: str) -> None:
        self.send(text, literal=True)

    def capture(self) -> str:
        """The visible screen as text (no colours)."""
        return self._tmux("capture-pane", "-p", "-t", self.session)

    def scrollback(self) -> str:
        """The pane with its scroll-back (a crash report may be longer than the screen)."""
        return self._tmux("capture-pane", "-p", "-S", "-", "-t", self.session)

    def pane_title(self) -> str:
        """The pane's title (what an escape sequence in the output may have set)."""
        return self._tmux("display-message", "-p", "-t", self.session, "#{pane_title}").strip()

    def pane_pid(self) -> int | None:
        out = self._tmux("display-message", "-p", "-t", self.session, "#{pane_pid}").strip()
        return int(out) if out.isdigit() else None

    def pane_dead(self) -> bool:
        out = self._tmux("display-message", "-p", "-t", self.session, "#{pane_dead}")
        return out.strip() == "1"

    # ------------------------------------------------------------ waiting
    def wait_until(self, predicate: Callable[[str], bool], timeout: float = 5.0,
                   interval: float = 0.02, what: str = "condition") -> str:
        """Poll capture-pane until *predicate(screen)*; return that screen or raise."""
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            screen = self.capture()
            if predicate(screen):
                return screen
            if time.monotonic() >= deadline:
                raise TmuxTimeout(
                    f"timed out after {timeout}s waiting for {what}; screen:\n{screen}")
            time.sleep(interval)

    def wait_for(self, text: str, timeout: float = 5.0, interval: float = 0.02) -> str:
        return self.wait_until(lambda s: text in s, timeout, interval, what=repr(text))

    def wait_gone(self, text: str, timeout: float = 5.0, interval: float = 0.02) -> str:
        return self.wait_until(lambda s: text not in s, timeout, interval, what=f"{text!r} to go")


def installed_hermes_admin() -> str | None:
    """The installed console script next to the running interpreter (the venv's bin)."""
    import sys

    exe = Path(sys.executable).parent / "hermes-admin"
    return str(exe) if exe.exists() else shutil.which("hermes-admin")
