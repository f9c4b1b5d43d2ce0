"""One browser session's console: ``python -m tui.web.child``, started by :mod:`tui.web.server`.

The same console as ``hermes-admin`` with no verb (one home, or every profile of a root),
drawn through Textual's web driver (textual-serve sets ``TEXTUAL_DRIVER``), with every write
marked ``via: web`` and the browser's address (``--remote``) in the audit log and history.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Sequence

from store.paths import resolve_home
from store.profiles.root import DEFAULT_PROFILE, discover, home_profile, resolve_root
from tui.app import session_end
from tui.app.console import HermesAdminApp
from tui.app.keymap import keymap_path
from tui.app.root_console import RootApp
from tui.cli.verbs import add_common


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tui.web.child", description=__doc__)
    add_common(p, top=True)
    p.add_argument("--root", metavar="DIR")
    p.add_argument("--read-only", action="store_true")
    p.add_argument("--remote", required=True, help="the browser's address, for the audit log")
    return p


def build_app(args: argparse.Namespace) -> HermesAdminApp:
    """The console this session shows: the root's when it has profiles, as `hermes-admin` decides."""
    kw = dict(read_only=args.read_only, lock_timeout=args.lock_timeout, keymap_file=keymap_path(),
              freeze_heap=True, via="web", remote=args.remote[:100])
    home = resolve_home(args.home)
    root = resolve_root(args.root, args.home)
    if args.root or len(discover(root)) > 1:
        profile = None if args.root else home_profile(root, home)
        return RootApp(root, profile=None if profile == DEFAULT_PROFILE else profile, **kw)
    return HermesAdminApp(home, **kw)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    hear_hangups()
    watch = hang_up_with_server()
    app = build_app(args)
    try:
        app.run()
    finally:
        session_end.disarm()
        if watch is not None:
            watch.stop()
    return int(app.return_code or 0)


def hear_hangups() -> None:
    """SIGHUP back to its default action when this console inherited it ignored: a server
    started under ``nohup`` (or from a shell that ignores it) keeps running after its operator
    logs out, as asked, but its sessions' consoles end by SIGHUP (:func:`hang_up_with_server`),
    and inheriting the ignore made each one outlive its server and its browser tab."""
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def hang_up_with_server() -> session_end.HangupWatch | None:
    """The server's end of our stdin pipe closing (a SIGKILLed ``hermes-admin web``) is
    this session's terminal hanging up: it raises SIGHUP here, which ends the console
    through its session watch once mounted, and the process by default before then.
    Without it a killed server's consoles lived on as orphans."""
    fd = session_end.stdin_fd()
    if fd is None:
        return None
    return session_end.HangupWatch(fd, lambda: os.kill(os.getpid(), signal.SIGHUP)).start()


if __name__ == "__main__":
    sys.exit(main())
